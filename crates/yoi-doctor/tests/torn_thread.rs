//! A torn append in thread.md (a header cut short, or an event never closed at the end of the
//! file) is a finding whose `--fix` sets the torn bytes aside in the ticket's artifacts/, byte
//! for byte, and leaves a thread that reads clean; any other broken event is left to a person.

use yoi_core::finding::SafeFix;
use yoi_store::ops::{self, CommentRequest};
use yoi_store::tickets::THREAD;
use yoi_testkit::store::*;

fn comment(fx: &Fx, id: &yoi_core::TicketId, text: &str) {
    let req = CommentRequest {
        kind: "comment".into(),
        body: text.into(),
    };
    ops::comment(&fx.ws, &alice(1), id.as_str(), &req).unwrap();
}

#[test]
fn fix_sets_a_torn_header_aside_and_keeps_the_events_after_it() {
    let fx = Fx::new();
    let id = fx.create("Torn", "## Intent\nx\n");
    let path = fx.ws.path_of(&id, THREAD);
    let torn = "<!-- event: comment id: 01M90QVAKJW58T6X0AXYTRE2B1 auth";
    let whole = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{whole}{torn}")).unwrap();
    let torn_line = whole.lines().count() + 1;
    comment(&fx, &id, "after the tear");

    let report = yoi_doctor::run(&fx.ws, false).unwrap();
    let f = report
        .findings
        .iter()
        .find(|f| f.check == "thread.malformed_header")
        .expect("the torn header is reported");
    assert_eq!(f.line, Some(torn_line));
    assert_eq!(
        f.safe_fix,
        Some(SafeFix::SetAsideTorn {
            ticket: id.to_string(),
            line: torn_line
        })
    );

    let fixed = yoi_doctor::run(&fx.ws, true).unwrap();
    assert_eq!(fixed.fixed.len(), 1, "{:?}", fixed.fixed);
    let side = fx
        .ws
        .ticket_dir(&id)
        .join(format!("artifacts/torn-thread-line-{torn_line}.md"));
    assert_eq!(std::fs::read_to_string(&side).unwrap(), format!("{torn}\n"));
    let thread = fx.ws.read_thread(&id).unwrap();
    assert!(thread.issues.is_empty(), "{:?}", thread.issues);
    let kinds: Vec<&str> = thread.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["create", "comment"]);
    assert_eq!(thread.events[1].body.trim(), "after the tear");
    assert!(!fixed
        .findings
        .iter()
        .any(|f| f.check.starts_with("thread.")));
}

#[test]
fn fix_sets_an_unclosed_event_at_the_end_aside_but_not_one_in_the_middle() {
    let fx = Fx::new();
    let id = fx.create("Cut", "## Intent\nx\n");
    let path = fx.ws.path_of(&id, THREAD);
    let whole = std::fs::read_to_string(&path).unwrap();
    let cut = "\n<!-- event: comment id: 01M90QVAKJW58T6X0AXYTRE2B2 author: a at: 2026-12-04T10:00:00Z -->\n\n## Comment\n\nhalf of a bo";
    std::fs::write(&path, format!("{whole}{cut}")).unwrap();
    let line = whole.lines().count() + 2;
    let fixed = yoi_doctor::run(&fx.ws, true).unwrap();
    assert_eq!(fixed.fixed.len(), 1, "{:?}", fixed.fixed);
    let side = fx
        .ws
        .ticket_dir(&id)
        .join(format!("artifacts/torn-thread-line-{line}.md"));
    assert_eq!(
        std::fs::read_to_string(&side).unwrap(),
        cut.trim_start_matches('\n')
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{whole}\n")
    );

    // An event left open in the middle (a hand edit, or an older tool's file) is not torn: it
    // is read as ended at the next header, a warning with no safe fix, and nothing changes.
    let other = fx.create("Middle", "## Intent\nx\n");
    let path = fx.ws.path_of(&other, THREAD);
    let text = std::fs::read_to_string(&path).unwrap();
    let opened = text.replacen("\n---\n", "\n", 1);
    std::fs::write(&path, &opened).unwrap();
    comment(&fx, &other, "later");
    let before = std::fs::read_to_string(&path).unwrap();
    let report = yoi_doctor::run(&fx.ws, true).unwrap();
    let f = report
        .findings
        .iter()
        .find(|f| {
            f.check == "thread.ended_by_next_header" && f.ticket.as_deref() == Some(other.as_str())
        })
        .expect("still reported");
    assert_eq!(f.severity, yoi_core::finding::Severity::Warning);
    assert_eq!(f.safe_fix, None);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}
