//! A realistic tickets folder written by the older file-based tools (60 tickets from
//! `scripts/make-older-tree.py`, covering every pattern of the older-format reference and the
//! three found in a real 352-ticket history), read by today's `yoi`: every ticket lists and
//! shows with all its events, read-only commands leave the tree byte-identical, doctor reports
//! no error, and a comment appends after the old bytes.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::Repo;

const FIXTURE: &str = "tests/fixtures/older-tree";

/// Every file under `root` (relative path → bytes).
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// A workspace whose tickets folder is the fixture, committed as a team's would be.
fn older_workspace() -> Repo {
    let repo = Repo::init();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    let tickets = repo.path().join(".yoi/tickets");
    for (rel, bytes) in snapshot(&fixture) {
        let to = tickets.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, bytes).unwrap();
    }
    yoi_testkit::commit_all(repo.path(), "the older tree");
    repo
}

fn json(repo: &Repo, args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&repo.yoi(args).ok().stdout).unwrap()
}

#[test]
fn an_older_tree_lists_shows_and_passes_doctor_without_being_touched() {
    let repo = older_workspace();
    let tickets = repo.path().join(".yoi/tickets");
    let before = snapshot(&tickets);
    let fixture_ids: Vec<String> = std::fs::read_dir(&tickets)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert!(fixture_ids.len() >= 50, "{} tickets", fixture_ids.len());

    // Every ticket lists, in every state.
    let list = json(&repo, &["ticket", "list", "--state", "all", "--json"]);
    assert_eq!(list["count"], fixture_ids.len());
    let mut states = std::collections::BTreeSet::new();
    for t in list["tickets"].as_array().unwrap() {
        states.insert(t["state"].as_str().unwrap().to_string());
    }
    assert_eq!(
        states.into_iter().collect::<Vec<_>>(),
        [
            "closed",
            "done",
            "inprogress",
            "planning",
            "queued",
            "ready"
        ]
    );

    // Every ticket shows, with every event its thread holds and no thread issue.
    let mut unquoted = 0;
    let mut intake = 0;
    let mut embedded = 0;
    for id in &fixture_ids {
        let show = json(&repo, &["ticket", "show", id, "--json"]);
        let thread =
            String::from_utf8(before[&PathBuf::from(id).join("thread.md")].clone()).unwrap();
        let headers = thread
            .lines()
            .filter(|l| l.starts_with("<!-- event:"))
            .count();
        assert_eq!(show["events"].as_array().unwrap().len(), headers, "{id}");
        assert_eq!(show["thread_issues"], serde_json::json!([]), "{id}");
        for e in show["events"].as_array().unwrap() {
            let author = e["author"].as_str().unwrap_or_default();
            if author.contains(' ') && thread.contains(&format!("author: {author} ")) {
                unquoted += 1;
            }
            if e["attrs"]["from"] == "intake" {
                intake += 1;
            }
            if e["kind"] == "close" && e["body"].as_str().unwrap_or("").contains("\n---\ntitle: ") {
                embedded += 1;
            }
        }
        // Plain `show` works too.
        repo.yoi(&["ticket", "show", id]).ok();
    }
    assert!(
        unquoted >= 10,
        "{unquoted} events with unquoted spaced authors read whole"
    );
    assert!(
        intake >= 10,
        "{intake} events leaving the older intake state"
    );
    assert!(
        embedded >= 3,
        "{embedded} close events that embed a whole item.md"
    );

    // Doctor: no errors, the older patterns reported as warnings that ask for nothing.
    let report = json(&repo, &["ticket", "doctor", "--json"]);
    let findings = report["findings"].as_array().unwrap();
    let errors: Vec<&serde_json::Value> = findings
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert_eq!(report["errors"], 0, "{errors:#?}");
    let older_state: Vec<&serde_json::Value> = findings
        .iter()
        .filter(|f| f["check"] == "thread.older_state")
        .collect();
    assert!(!older_state.is_empty());
    for f in older_state {
        assert_eq!(f["severity"], "warning");
        assert_eq!(f["fix"], "nothing to do");
        assert!(f["path"].as_str().unwrap().ends_with("thread.md"), "{f}");
        assert!(f["line"].as_u64().unwrap() > 0, "{f}");
    }
    repo.yoi(&["ticket", "list", "--ready"]).ok();
    repo.yoi(&["ticket", "list", "--blocked"]).ok();

    // Nothing read-only wrote a byte.
    assert_eq!(
        snapshot(&tickets),
        before,
        "read-only commands changed the tree"
    );
}

#[test]
fn a_comment_on_an_older_ticket_appends_after_its_old_bytes() {
    let repo = older_workspace();
    let tickets = repo.path().join(".yoi/tickets");
    let before = snapshot(&tickets);
    // A ticket whose headers carry unquoted spaced values and an intake state.
    let (id, thread) = before
        .iter()
        .find(|(p, b)| {
            let text = String::from_utf8_lossy(b);
            p.ends_with("thread.md")
                && text.contains("author: yoi ticket at:")
                && text.contains("from: intake")
        })
        .map(|(p, b)| {
            (
                p.parent().unwrap().to_string_lossy().into_owned(),
                b.clone(),
            )
        })
        .expect("the fixture has such a ticket");
    repo.yoi(&["ticket", "comment", &id, "-m", "Picked up again in yoi."])
        .ok();
    let after = snapshot(&tickets);
    let new_thread = &after[&PathBuf::from(&id).join("thread.md")];
    assert!(
        new_thread.starts_with(&thread),
        "the old bytes are a prefix"
    );
    let added = String::from_utf8_lossy(&new_thread[thread.len()..]).into_owned();
    assert!(added.contains("Picked up again in yoi."), "{added}");
    assert_eq!(added.matches("<!-- event:").count(), 1, "{added}");
    // No other ticket's files changed.
    for (path, bytes) in &before {
        if !path.starts_with(&id) {
            assert_eq!(&after[path], bytes, "{}", path.display());
        }
    }
    let show = json(&repo, &["ticket", "show", &id, "--json"]);
    let events = show["events"].as_array().unwrap();
    assert_eq!(events.last().unwrap()["kind"], "comment");
    assert_eq!(events[0]["author"], "yoi ticket");
    let report = json(&repo, &["ticket", "doctor", "--json"]);
    assert_eq!(report["errors"], 0);
}
