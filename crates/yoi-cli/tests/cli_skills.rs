//! `yoi skill …` end to end: the catalog with built-ins, lint exit codes, activation recorded
//! in the database before the body is printed, confined resources, proposals approved by a
//! human, and doctor's skill findings.

mod common;

use common::Repo;

fn json(out: &common::Output) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

fn write_skill(root: &std::path::Path, name: &str, front: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\n{front}---\nDo the steps.\n"),
    )
    .unwrap();
}

fn activations(repo: &Repo) -> Vec<(String, String, Option<String>)> {
    let url = format!(
        "sqlite://{}",
        repo.path().join(".yoi/local/yoi.db").display()
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use sqlx::{Connection, Row};
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("SELECT skill, who, ticket_id FROM skill_activations ORDER BY at_ms")
            .fetch_all(&mut conn)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    })
}

#[test]
fn list_shows_builtins_and_workspace_skills_with_provenance() {
    let repo = Repo::init();
    write_skill(
        &repo.path().join(".yoi/skills"),
        "deploy-notes",
        "name: deploy-notes\ndescription: How we deploy.\n",
    );
    let v = json(&repo.yoi(&["skill", "list", "--json"]).ok());
    let names: Vec<&str> = v["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec![
            "agent-skills-format",
            "deploy-notes",
            "yoi-review",
            "yoi-ticket-work"
        ]
    );
    let deploy = &v["skills"][1];
    assert_eq!(deploy["source"]["kind"], "workspace");
    assert!(
        !v.to_string().contains(repo.path().to_str().unwrap()),
        "no host paths in the catalog"
    );
}

#[test]
fn lint_a_folder_reports_each_skill_and_exits_1_on_errors() {
    let repo = Repo::init();
    let root = tempfile::tempdir().unwrap();
    write_skill(
        root.path(),
        "good-one",
        "name: good-one\ndescription: Fine.\n",
    );
    write_skill(
        root.path(),
        "bad-one",
        "name: Bad-One\ndescription: Upper case.\n",
    );
    let out = repo.yoi(&["skill", "lint", root.path().to_str().unwrap(), "--json"]);
    assert_eq!(out.code, 1);
    let v = json(&out);
    let by_name: Vec<(String, bool)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["valid"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by_name,
        vec![
            ("bad-one".to_string(), false),
            ("good-one".to_string(), true)
        ]
    );
    assert!(v[0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["rule"] == "NAME-CASE"));
    std::fs::remove_dir_all(root.path().join("bad-one")).unwrap();
    repo.yoi(&["skill", "lint", root.path().to_str().unwrap()])
        .ok();
}

#[test]
fn lint_reports_a_wrong_case_skill_file_and_a_folder_without_skill_md() {
    let repo = Repo::init();
    let root = tempfile::tempdir().unwrap();
    write_skill(
        root.path(),
        "good-one",
        "name: good-one\ndescription: Fine.\n",
    );
    let mixed = root.path().join("mixed-case");
    std::fs::create_dir_all(&mixed).unwrap();
    std::fs::write(
        mixed.join("Skill.md"),
        "---\nname: mixed-case\ndescription: d\n---\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.path().join("no-file")).unwrap();
    let out = repo.yoi(&["skill", "lint", root.path().to_str().unwrap(), "--json"]);
    assert_eq!(out.code, 1);
    let v = json(&out);
    let rows: Vec<(&str, bool, &str)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["valid"].as_bool().unwrap(),
                s["diagnostics"][0]["rule"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("good-one", true, ""),
            ("mixed-case", false, "FILE-NAME"),
            ("no-file", false, "FILE-MISSING")
        ]
    );
    assert_eq!(
        v[1]["diagnostics"][0]["message"],
        "`mixed-case/Skill.md` must be named exactly `SKILL.md` (the case matters), so the \
         folder `mixed-case` is not loaded as a skill; rename the file to `mixed-case/SKILL.md`"
    );

    std::fs::create_dir_all(repo.path().join(".yoi/skills/no-file")).unwrap();
    let list = json(&repo.yoi(&["skill", "list", "--json"]).ok());
    assert_eq!(list["skipped"][0]["name"], "no-file");
    assert_eq!(
        list["skipped"][0]["location"],
        ".yoi/skills/no-file/SKILL.md"
    );
    assert_eq!(list["skipped"][0]["diagnostic"]["rule"], "FILE-MISSING");
}

#[test]
fn activation_is_recorded_before_the_body_is_printed() {
    let repo = Repo::init();
    let id = repo.create("Uses a skill", "");
    let out = repo
        .yoi(&[
            "skill",
            "activate",
            "yoi-ticket-work",
            "--ticket",
            &id[22..],
        ])
        .ok();
    assert!(
        out.stdout
            .starts_with("<skill_content name=\"yoi-ticket-work\""),
        "{}",
        out.stdout
    );
    assert_eq!(
        activations(&repo),
        vec![(
            "yoi-ticket-work".to_string(),
            "tester".to_string(),
            Some(id.clone())
        )]
    );
    let out = repo.yoi(&["skill", "activate", "no-such-skill"]);
    assert_eq!(out.code, 1);
    write_skill(&repo.path().join(".yoi/skills"), "broken", "name: broken\n");
    let out = repo.yoi(&["skill", "activate", "broken"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("cannot be activated"), "{}", out.stderr);
    assert_eq!(
        activations(&repo).len(),
        1,
        "refused activations are not recorded"
    );
}

#[test]
fn resources_stay_inside_the_skill_folder() {
    let repo = Repo::init();
    let out = repo
        .yoi(&[
            "skill",
            "resource",
            "agent-skills-format",
            "references/frontmatter.md",
        ])
        .ok();
    assert!(out.stdout.contains("SKILL.md"));
    for bad in [
        "../yoi-review/SKILL.md",
        "/etc/passwd",
        "references/../../x",
    ] {
        // A path that leaves the skill is input to correct: exit 2, as the API answers 400.
        let out = repo.yoi(&["skill", "resource", "agent-skills-format", bad]);
        assert_eq!(out.code, 2, "{bad}");
    }
}

#[test]
fn proposals_wait_for_a_human_and_approval_writes_the_skill() {
    let repo = Repo::init();
    let src = tempfile::tempdir().unwrap();
    write_skill(
        src.path(),
        "release-check",
        "name: release-check\ndescription: Checks a release.\n",
    );
    let id = repo
        .yoi(&[
            "skill",
            "propose",
            src.path().join("release-check").to_str().unwrap(),
        ])
        .ok()
        .stdout
        .trim()
        .to_string();
    assert!(
        !repo.path().join(".yoi/skills/release-check").exists(),
        "nothing written before approval"
    );
    let v = json(&repo.yoi(&["skill", "proposals", "--json"]).ok());
    assert_eq!(v["proposals"][0]["status"], "pending");
    repo.yoi(&["skill", "approve", &id]).ok();
    assert!(repo
        .path()
        .join(".yoi/skills/release-check/SKILL.md")
        .is_file());
    let out = repo.yoi(&["skill", "approve", &id]);
    assert_eq!(out.code, 1, "a decided proposal cannot be decided again");
    write_skill(
        src.path(),
        "other-one",
        "name: other-one\ndescription: Another.\n",
    );
    let id2 = repo
        .yoi(&[
            "skill",
            "propose",
            src.path().join("other-one").to_str().unwrap(),
        ])
        .ok()
        .stdout
        .trim()
        .to_string();
    repo.yoi(&["skill", "reject", &id2, "--reason", "not needed"])
        .ok();
    assert!(!repo.path().join(".yoi/skills/other-one").exists());
}

#[test]
fn doctor_reports_invalid_and_shadowed_skills() {
    let repo = Repo::init();
    write_skill(
        &repo.path().join(".yoi/skills"),
        "yoi-review",
        "name: yoi-review\ndescription: Our own review rules.\n",
    );
    let v = json(&repo.yoi(&["ticket", "doctor", "--json"]).ok());
    let checks: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    assert_eq!(checks, vec!["skill.shadowed"]);
    write_skill(&repo.path().join(".yoi/skills"), "broken", "name: broken\n");
    let out = repo.yoi(&["ticket", "doctor", "--json"]);
    assert_eq!(out.code, 1);
    let v = json(&out);
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["check"] == "skill.invalid" && f["severity"] == "error"));
}
