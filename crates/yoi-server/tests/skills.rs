//! `/api/v1/skills…` against a real server: the catalog, activation recorded in the database
//! before the body is returned, confined resources, and proposals that only a human decides.

mod common;

use common::{Backend, Server};
use serde_json::json;

fn write_skill(ws_root: &std::path::Path, name: &str, front: &str) {
    let dir = ws_root.join(".yoi/skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\n{front}---\nFollow these steps.\n"),
    )
    .unwrap();
}

#[test]
fn catalog_lists_builtins_and_workspace_skills_without_host_paths() {
    let s = Server::start(Backend::Sqlite);
    write_skill(
        s.root(),
        "house-style",
        "name: house-style\ndescription: Our conventions.\n",
    );
    let v = s
        .get("/api/v1/skills")
        .token(&s.tokens.read)
        .send()
        .expect(200);
    let names: Vec<&str> = v["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec![
            "agent-skills-format",
            "house-style",
            "yoi-review",
            "yoi-ticket-work"
        ]
    );
    assert!(
        v["skills"][1].get("body").is_none(),
        "the list never carries bodies"
    );
    assert!(!v.to_string().contains(s.root().to_str().unwrap()));
    let one = s
        .get("/api/v1/skills/house-style")
        .token(&s.tokens.coder)
        .send()
        .expect(200);
    assert_eq!(one["location"], ".yoi/skills/house-style/SKILL.md");
    s.get("/api/v1/skills/nope")
        .token(&s.tokens.read)
        .send()
        .expect_error(404, "not_found");
    s.get("/api/v1/skills")
        .send()
        .expect_error(401, "unauthorized");
}

#[test]
fn activation_records_who_and_for_which_ticket_before_returning_the_body() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("Needs the review skill", "");
    let v = s
        .post("/api/v1/skills/yoi-review/activate")
        .token(&s.tokens.coder)
        .json(json!({ "ticket": id, "assignment": "asg-1" }))
        .send()
        .expect(200);
    assert!(v["body"].as_str().unwrap().contains("IntentPacket"));
    let index = s.admin();
    let rows = index.activations();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].skill, "yoi-review");
    assert_eq!(rows[0].who, "pod:coder/c1");
    assert_eq!(rows[0].ticket.as_deref(), Some(id.as_str()));
    assert_eq!(rows[0].assignment.as_deref(), Some("asg-1"));
    write_skill(s.root(), "broken", "name: broken\n");
    s.post("/api/v1/skills/broken/activate")
        .token(&s.tokens.human)
        .send()
        .expect_error(422, "invalid_skill");
    s.post("/api/v1/skills/missing/activate")
        .token(&s.tokens.human)
        .send()
        .expect_error(404, "not_found");
    assert_eq!(index.activations().len(), 1, "refusals are not recorded");
}

#[test]
fn resources_are_confined_to_the_skill_folder() {
    let s = Server::start(Backend::Sqlite);
    let r = s
        .get("/api/v1/skills/agent-skills-format/resources/references/frontmatter.md")
        .token(&s.tokens.coder)
        .send();
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type, "application/octet-stream");
    assert!(r.text.contains("SKILL.md"), "{}", r.text);
    for bad in [
        "../yoi-review/SKILL.md",
        "references/../../yoi-review/SKILL.md",
        "%2Fetc%2Fpasswd",
    ] {
        let resp = s
            .get(&format!(
                "/api/v1/skills/agent-skills-format/resources/{bad}"
            ))
            .token(&s.tokens.coder)
            .send();
        assert!(matches!(resp.status, 400 | 404), "{bad}: {}", resp.status);
    }
}

#[test]
fn proposals_are_stored_pending_and_only_a_human_decides() {
    let s = Server::start(Backend::Sqlite);
    let files = json!({ "SKILL.md": "---\nname: release-check\ndescription: Check a release.\n---\nSteps.\n" });
    let p = s
        .post("/api/v1/skills/proposals")
        .token(&s.tokens.coder)
        .json(json!({ "name": "release-check", "files": files }))
        .send()
        .expect(201);
    let id = p["id"].as_str().unwrap().to_string();
    assert_eq!(p["status"], "pending");
    assert!(!s.root().join(".yoi/skills/release-check").exists());
    s.post(&format!("/api/v1/skills/proposals/{id}/approve"))
        .token(&s.tokens.coder)
        .send()
        .expect_error(403, "forbidden");
    s.post(&format!("/api/v1/skills/proposals/{id}/approve"))
        .token(&s.tokens.read)
        .send()
        .expect_error(403, "forbidden");
    assert!(!s.root().join(".yoi/skills/release-check").exists());
    s.post(&format!("/api/v1/skills/proposals/{id}/approve"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert!(s
        .root()
        .join(".yoi/skills/release-check/SKILL.md")
        .is_file());
    s.post(&format!("/api/v1/skills/proposals/{id}/reject"))
        .token(&s.tokens.human)
        .json(json!({ "reason": "late" }))
        .send()
        .expect_error(409, "already_decided");
    s.post("/api/v1/skills/proposals")
        .token(&s.tokens.coder)
        .json(json!({ "name": "evil", "files": { "../../escape.md": "x" } }))
        .send()
        .expect_error(400, "invalid");
    let list = s
        .get("/api/v1/skills/proposals")
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(list["count"], 1);
}

#[test]
fn a_proposal_with_a_bad_file_name_is_refused_naming_it_and_writes_nothing() {
    let s = Server::start(Backend::Sqlite);
    let skill = "---\nname: tidy\ndescription: Tidy up.\n---\nSteps.\n";
    let local = s.root().join(".yoi/local");
    let before: Vec<_> = std::fs::read_dir(&local)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    for (name, says) in [
        ("", "is empty"),
        ("a\u{0}b.md", "contains a NUL byte"),
        ("/etc/passwd", "is absolute"),
        ("../up.md", "`..`"),
        ("refs/../../up.md", "`..`"),
        ("references/", "names a folder"),
        ("a//b.md", "empty or `.` component"),
        ("./b.md", "empty or `.` component"),
        ("references", "also the folder of another proposed file"),
    ] {
        let mut files = serde_json::Map::new();
        files.insert("SKILL.md".into(), json!(skill));
        files.insert(name.into(), json!("text"));
        files.insert("references/notes.md".into(), json!("notes"));
        let v = s
            .post("/api/v1/skills/proposals")
            .token(&s.tokens.coder)
            .json(json!({ "name": "tidy", "files": files }))
            .send()
            .expect(400);
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{name:?}: {message}");
        assert!(
            message.contains(&format!("{name:?}")) || says == "`..`",
            "{name:?}: {message}"
        );
    }
    let list = s
        .get("/api/v1/skills/proposals")
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(list["count"], 0, "nothing was proposed");
    let after: Vec<_> = std::fs::read_dir(&local)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(after, before, "no staging folder left behind");
}
