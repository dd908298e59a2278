//! The CLI with its database: reads come from the index, which every command start catches up
//! with the files; `yoi reindex`; the same commands against PostgreSQL via YOI_DATABASE_URL.

mod common;
use yoi_testkit::pg;

use common::{Repo, COMPLETE_BRIEF};

fn json(out: &common::Output) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

#[test]
fn list_search_and_pagination_come_from_the_index() {
    let repo = Repo::init();
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(repo.create(&format!("Ticket {i} about parsing"), COMPLETE_BRIEF));
    }
    repo.create("Unrelated", "");
    let out = repo
        .yoi(&["ticket", "list", "--search", "PARSING 3", "--json"])
        .ok();
    let v = json(&out);
    assert_eq!(v["count"], 1);
    assert_eq!(v["tickets"][0]["id"], ids[3].as_str());
    let page1 = json(
        &repo
            .yoi(&[
                "ticket", "list", "--search", "parsing", "--limit", "2", "--json",
            ])
            .ok(),
    );
    assert_eq!(page1["count"], 2);
    let next = page1["next"].as_str().unwrap().to_string();
    assert_eq!(next, ids[1]);
    let page2 = json(
        &repo
            .yoi(&[
                "ticket", "list", "--search", "parsing", "--limit", "2", "--after", &next, "--json",
            ])
            .ok(),
    );
    assert_eq!(page2["tickets"][0]["id"], ids[2].as_str());
    let last = json(
        &repo
            .yoi(&[
                "ticket", "list", "--search", "parsing", "--limit", "2", "--after", &ids[3],
                "--json",
            ])
            .ok(),
    );
    assert_eq!(last["count"], 1);
    assert!(last.get("next").is_none());
    let out = repo.yoi(&["ticket", "list", "--limit", "0"]);
    assert_eq!(out.code, 2);
}

#[test]
fn doctor_in_a_fresh_clone_checks_the_files_and_makes_no_database() {
    let repo = Repo::init();
    let a = repo.create("First", COMPLETE_BRIEF);
    let b = repo.create("Second", "");
    yoi_testkit::git(repo.path(), &["add", "-A", "."]);
    yoi_testkit::git(repo.path(), &["commit", "-qm", "tickets"]);
    let clones = tempfile::tempdir().unwrap();
    let clone = clones.path().join("clone");
    yoi_testkit::git(
        clones.path(),
        &[
            "clone",
            "-q",
            repo.path().to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let db = clone.join(".yoi/local/yoi.db");
    assert!(!db.exists(), "a clone has no database");
    let report = json(
        &repo
            .yoi_in(&clone, &["ticket", "doctor", "--json"], None)
            .ok(),
    );
    assert_eq!(report["ok"], true, "{report}");
    assert!(!db.exists(), "doctor made no database");
    // A broken file is still found without one.
    let item = clone.join(".yoi/tickets").join(&b).join("item.md");
    std::fs::write(&item, "no frontmatter here\n").unwrap();
    let out = repo.yoi_in(&clone, &["ticket", "doctor", "--json"], None);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains(&b), "{}", out.stdout);
    assert!(!db.exists());
    // The first command that reads the index builds it; doctor then checks it too.
    yoi_testkit::git(&clone, &["checkout", "--", "."]);
    let listed = json(
        &repo
            .yoi_in(&clone, &["ticket", "list", "--json"], None)
            .ok(),
    );
    assert_eq!(listed["count"], 2, "{listed}");
    assert_eq!(listed["tickets"][0]["id"], a.as_str());
    assert!(db.exists(), "the list built the index");
    let report = json(
        &repo
            .yoi_in(&clone, &["ticket", "doctor", "--json"], None)
            .ok(),
    );
    assert_eq!(report["ok"], true, "{report}");
}

#[test]
fn a_hand_edit_is_seen_by_the_next_command() {
    let repo = Repo::init();
    let id = repo.create("Before", "");
    repo.yoi(&["ticket", "list"]).ok();
    let item = repo.ticket_dir(&id).join("item.md");
    let text = std::fs::read_to_string(&item)
        .unwrap()
        .replace("title: Before", "title: After a git pull");
    std::fs::write(&item, text).unwrap();
    let v = json(
        &repo
            .yoi(&["ticket", "list", "--search", "pull", "--json"])
            .ok(),
    );
    assert_eq!(v["tickets"][0]["title"], "After a git pull");
}

#[test]
fn reindex_reports_what_it_did() {
    let repo = Repo::init();
    repo.create("One", "");
    repo.create("Two", "");
    let v = json(&repo.yoi(&["reindex", "--json"]).ok());
    assert_eq!(v["scanned"], 2);
    assert_eq!(
        v["reindexed"], 0,
        "already caught up by the create commands"
    );
    let v = json(&repo.yoi(&["reindex", "--full", "--json"]).ok());
    assert_eq!(
        (v["reindexed"].as_u64(), v["outbox_added"].as_u64()),
        (Some(2), Some(0))
    );
    let out = repo.yoi(&["reindex"]).ok();
    assert_eq!(
        out.stdout,
        "incremental reindex: 2 tickets scanned, 0 re-read, 0 removed, 0 outbox events added\n"
    );
    assert!(repo.path().join(".yoi/local/yoi.db").is_file());
}

#[test]
fn the_same_commands_work_on_postgres() {
    let repo = Repo::init();
    // `yoi init` made the default SQLite database; with Postgres configured it must stay unused.
    for f in ["yoi.db", "yoi.db-wal", "yoi.db-shm"] {
        let _ = std::fs::remove_file(repo.path().join(".yoi/local").join(f));
    }
    let url = pg::database();
    let run = |args: &[&str]| {
        let out = common::run_yoi_env(repo.path(), args, &[("YOI_DATABASE_URL", url.as_str())]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out
    };
    let dep = run(&["ticket", "create", "--title", "Dependency"])
        .stdout
        .trim()
        .to_string();
    let waiter = run(&[
        "ticket",
        "create",
        "--title",
        "Waiter",
        "--depends-on",
        &dep,
    ])
    .stdout
    .trim()
    .to_string();
    let v = json(&run(&["ticket", "list", "--blocked", "--json"]));
    assert_eq!(v["count"], 1);
    assert_eq!(v["tickets"][0]["id"], waiter.as_str());
    let v = json(&run(&["ticket", "blockers", &waiter, "--json"]));
    assert_eq!(v["blockers"][0]["ticket"], dep.as_str());
    assert_eq!(v["can_queue"], false);
    assert!(
        !repo.path().join(".yoi/local/yoi.db").exists(),
        "no SQLite file when Postgres is configured"
    );
    let out = common::run_yoi_env(
        repo.path(),
        &["ticket", "list"],
        &[("YOI_DATABASE_URL", "mysql://nope")],
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("neither sqlite: nor postgres://"),
        "{}",
        out.stderr
    );
}
