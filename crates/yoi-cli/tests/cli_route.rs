//! `yoi ticket route ID --dry-run` (what the router would decide, without writing) and
//! `yoi ticket retry ID`, on the files.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::Repo;

/// Every file under `dir` with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn a_dry_run_says_what_the_router_would_decide_and_writes_nothing() {
    let repo = Repo::init();
    yoi_testkit::commit_all(repo.path(), "base");
    let dep = repo.ready_ticket("Dependency");
    let id = repo.ready_ticket("Dependent work");
    repo.yoi(&["ticket", "relation", "add", &id, "depends_on", &dep])
        .ok();
    repo.yoi(&["ticket", "queue", &dep]).ok();
    repo.yoi(&["ticket", "queue", &id]).ok();
    let before = files(&repo.path().join(".yoi/tickets"));

    let out = repo.yoi(&["ticket", "route", &id, "--dry-run"]).ok();
    assert!(
        out.stdout.starts_with(&format!("{id}: queued\n")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("  Routing decision: blocked_by_dependency\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains(&format!("  - {dep}")), "{}", out.stdout);
    assert!(
        out.stdout.contains("latest decision: none\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("capacity: 0 of 4 in progress\n"),
        "{}",
        out.stdout
    );
    assert!(out
        .stdout
        .contains("circuit: closed (0 consecutive failures; opens at 3)\n"));

    let out = repo
        .yoi(&["ticket", "route", &dep, "--dry-run", "--json"])
        .ok();
    let view: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(view["would_decide"]["kind"], "implementation_ready");
    assert_eq!(
        view["would_decide"]["decision"]["branch"],
        format!("yoi/{dep}-dependency")
    );
    assert_eq!(view["packet"]["complete"], true);
    assert_eq!(view["blockers"], serde_json::json!([]));

    // Routing itself belongs to `yoi serve`.
    let out = repo.yoi(&["ticket", "route", &dep]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--dry-run"), "{}", out.stderr);

    assert_eq!(
        files(&repo.path().join(".yoi/tickets")),
        before,
        "a dry run wrote files"
    );
    assert!(!repo.path().join(".worktree").exists());
}

#[test]
fn retry_writes_a_retry_event_on_a_queued_ticket_and_refuses_other_states() {
    let repo = Repo::init();
    let id = repo.ready_ticket("Try again");
    let out = repo.yoi(&["ticket", "retry", &id, "--reason", "moved the file"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("is ready, expected queued"),
        "{}",
        out.stderr
    );

    repo.yoi(&["ticket", "queue", &id]).ok();
    let out = repo
        .yoi(&[
            "ticket",
            "retry",
            &id,
            "--reason",
            "moved the file",
            "--json",
        ])
        .ok();
    let outcome: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(outcome["operation"], "retry");
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(
        thread.contains("Retry requested: moved the file"),
        "{thread}"
    );
}

#[test]
fn route_names_an_unknown_ticket() {
    let repo = Repo::init();
    let out = repo.yoi(&["ticket", "route", "01ZZZZZZZZZZZZZZZZZZZZZZZZ", "--dry-run"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("01ZZZZZZZZZZZZZZZZZZZZZZZZ"),
        "{}",
        out.stderr
    );
}

#[test]
fn nobody_may_write_under_the_orchestrators_name() {
    let repo = Repo::init();
    for name in ["yoi-orchestrator", "YOI", " yoi "] {
        let out = common::run_yoi_env(
            repo.path(),
            &["ticket", "create", "--title", "Spoof"],
            &[("YOI_USER", name)],
        );
        assert_eq!(out.code, 2, "{name}: {out:?}");
        assert!(
            out.stderr.contains("a name yoi itself writes under"),
            "{}",
            out.stderr
        );
    }
    let out = repo.yoi(&[
        "token",
        "create",
        "--name",
        "spoof",
        "--scope",
        "human",
        "--principal",
        "yoi-orchestrator",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("a name yoi itself writes under"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_dir(repo.path().join(".yoi/tickets"))
            .unwrap()
            .count(),
        0
    );
}
