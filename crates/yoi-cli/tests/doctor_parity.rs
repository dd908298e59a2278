//! `yoi ticket doctor --json` and `GET /api/v1/doctor` are one doctor: for the same workspace,
//! with skill, worktree and index findings all present, they report identical findings.

mod common;

use std::process::Command;

use common::server::Server;
use common::Repo;

fn git(repo: &Repo, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "maintenance.auto=false"])
        .args(args)
        .current_dir(repo.path())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
fn the_cli_and_the_api_report_the_same_findings() {
    let repo = Repo::init();
    let ticket = repo.create("Planned work", common::COMPLETE_BRIEF);
    git(&repo, &["add", "-A"]);
    git(
        &repo,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t.invalid",
            "commit",
            "-q",
            "-m",
            "base",
        ],
    );

    // A skill finding: a workspace skill without a description is invalid.
    let skill = repo.path().join(".yoi/skills/half-done");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(skill.join("SKILL.md"), "---\nname: half-done\n---\nBody.\n").unwrap();
    // A worktree finding: a work branch whose ticket does not exist.
    git(&repo, &["branch", "yoi/01ARZ3NDEKTSV4RRFFQ69G5FAV-ghost"]);
    // An index finding: an open assignment of a ticket that is still being planned.
    let db_url = format!("sqlite:{}", repo.path().join(".yoi/local/yoi.db").display());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let db = yoi_db::Db::open(&db_url).await.unwrap();
        db.create_assignment(&yoi_db::Assignment {
            id: "asg-parity".into(),
            ticket: ticket.clone(),
            step: "implement".into(),
            role: "coder".into(),
            attempt: 1,
            fence: 1,
            status: yoi_db::AssignmentStatus::Pending,
            lease_until_ms: None,
            created_ms: 1,
            updated_ms: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    });

    let server = Server::start(&repo);
    let (status, api) = server.get(&repo, "/doctor");
    assert_eq!(status, 200, "{api}");
    let out = repo.yoi(&["ticket", "doctor", "--json"]);
    assert_eq!(out.code, 1, "errors are present: {}", out.stderr);
    let cli: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();

    let checks = |report: &serde_json::Value| -> Vec<String> {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["check"].as_str().unwrap().to_string())
            .collect()
    };
    for wanted in ["skill.invalid", "branch.orphan", "assignment.stale"] {
        assert!(
            checks(&cli).iter().any(|c| c == wanted),
            "the CLI reports {wanted}: {:?}",
            checks(&cli)
        );
    }
    assert_eq!(api["findings"], cli["findings"]);
    for key in ["ok", "errors", "warnings"] {
        assert_eq!(api[key], cli[key], "{key}");
    }
}
