//! The store under real concurrent processes: the workspace lock serialises writers across
//! processes, and a writer killed at an arbitrary moment never leaves a half-written file.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use yoi_core::thread::parse_thread;
use yoi_core::Item;
use yoi_store::ops::{self, CreateRequest};

fn workspace() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    yoi_store::init(dir.path(), "main").unwrap();
    let ws = yoi_tests::open(dir.path());
    let out = ops::create(
        &ws,
        &yoi_tests::ctx("alice"),
        &CreateRequest {
            title: "Shared ticket".into(),
            ..Default::default()
        },
    )
    .unwrap();
    (dir, out.ticket.to_string())
}

#[test]
fn eight_processes_appending_two_hundred_comments_each_lose_nothing() {
    let (dir, ticket) = workspace();
    let children: Vec<_> = (0..8)
        .map(|w| {
            Command::new(env!("CARGO_BIN_EXE_yoi-stress-append"))
                .args([dir.path().to_str().unwrap(), &ticket, &w.to_string(), "200"])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(dir.path().join(format!(".yoi/tickets/{ticket}/thread.md")))
        .unwrap();
    let thread = parse_thread(&text);
    assert!(thread.issues.is_empty(), "{:?}", thread.issues);
    assert_eq!(thread.events.len(), 1 + 8 * 200);
    let ids: BTreeSet<&str> = thread.events.iter().filter_map(|e| e.id()).collect();
    assert_eq!(ids.len(), 1 + 8 * 200, "every event keeps a unique id");
    let bodies: BTreeSet<&str> = thread.events[1..].iter().map(|e| e.body.as_str()).collect();
    for w in 0..8 {
        for n in 0..200 {
            let body =
                format!("writer {w} comment {n}\n\n---\n<!-- event: fake -->\nend of {w}/{n}");
            assert!(bodies.contains(body.as_str()), "missing or torn: {body:?}");
        }
    }
}

#[test]
fn writer_killed_mid_rewrite_leaves_a_whole_item_md() {
    killed_mid_rewrite(&[]);
}

#[test]
fn writer_killed_mid_group_commit_leaves_a_whole_item_md() {
    killed_mid_rewrite(&["4"]);
}

fn killed_mid_rewrite(group: &[&str]) {
    let (dir, ticket) = workspace();
    let item_path = dir.path().join(format!(".yoi/tickets/{ticket}/item.md"));
    for round in 0..6u32 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_yoi-rewrite-loop"))
            .args([dir.path().to_str().unwrap(), &ticket])
            .args(group)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        // Read concurrently while it rewrites: every read is one whole version. The number of
        // reads sets where the kill lands; it differs per round.
        for _ in 0..(20 * round + 3) {
            let text = std::fs::read_to_string(&item_path).unwrap();
            assert_whole_version(&text);
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let text = std::fs::read_to_string(&item_path).unwrap();
        assert_whole_version(&text);
        let thread =
            std::fs::read_to_string(dir.path().join(format!(".yoi/tickets/{ticket}/thread.md")))
                .unwrap();
        let parsed = parse_thread(&thread);
        // Each append is one write of one event, so even a kill leaves no torn event.
        assert!(parsed.issues.is_empty(), "{:?}", parsed.issues);
        assert!(parsed.events.len() > round as usize + 1);
    }
}

fn assert_whole_version(text: &str) {
    let item = Item::parse(text).expect("item.md is never half written");
    let body = item.body_text();
    let first = body.lines().next().unwrap_or("");
    let last = body.lines().last().unwrap_or("");
    assert!(first.starts_with("version "), "{first}");
    assert_eq!(last, format!("end of {first}"));
}
