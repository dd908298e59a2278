//! Damaged and planted files at the store: an append after a torn event header starts on a
//! fresh line, and a group commit writes nothing through a symbolic link either.

use yoi_testkit::store as common;

use common::*;
use yoi_store::ops::{self, CommentRequest};
use yoi_store::tickets::THREAD;
use yoi_store::StoreError;

fn comment(text: &str) -> CommentRequest {
    CommentRequest {
        kind: "comment".into(),
        body: text.into(),
    }
}

#[test]
fn an_append_after_a_torn_event_header_starts_on_a_fresh_line() {
    let fx = Fx::new();
    let id = fx.create("Torn", "## Intent\nx\n");
    let path = fx.ws.path_of(&id, THREAD);
    let whole = std::fs::read_to_string(&path).unwrap();
    let torn = "<!-- event: comment id: 01M90QVAKJW58T6X0AXYTRE2B1 auth";
    std::fs::write(&path, format!("{whole}{torn}")).unwrap();
    let torn_line = whole.lines().count() + 1;

    ops::comment(&fx.ws, &alice(1), id.as_str(), &comment("after the tear")).unwrap();

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(&format!("{torn}\n<!-- event: comment ")),
        "the new header starts a line of its own:\n{text}"
    );
    let thread = fx.ws.read_thread(&id).unwrap();
    let last = thread.events.last().unwrap();
    assert_eq!(last.kind.as_str(), "comment");
    assert_eq!(last.body.trim(), "after the tear");
    assert_eq!(thread.events.len(), 2, "create and the new comment");
    let lines: Vec<usize> = thread.issues.iter().map(|i| i.line).collect();
    assert_eq!(lines, [torn_line], "only the torn header is an issue");
}

#[test]
fn a_group_commit_writes_nothing_through_a_linked_thread() {
    let fx = Fx::new();
    let id = fx.create("Linked", "## Intent\nx\n");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("thread.md");
    std::fs::write(&target, "outside\n").unwrap();
    let path = fx.ws.path_of(&id, THREAD);
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();

    let query = id.to_string();
    let outcomes = yoi_store::group::run(
        &fx.ws,
        vec![Box::new(move |ws| {
            ops::comment(ws, &alice(1), &query, &comment("through the link"))
        })],
    );
    let err = outcomes.into_iter().next().unwrap().unwrap_err();
    assert!(
        matches!(&err, StoreError::Invalid { path: p, .. } if p == &path),
        "{err}"
    );
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "outside\n");
}
