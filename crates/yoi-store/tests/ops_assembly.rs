//! `record_assembly` (docs/flows.md, "Assembly"): the one event that stacks a finished flow's
//! summaries, written by the service on a ticket in progress just before it is done. Sent again
//! with the same operation id — a completion tried again after a crash — it replays the first
//! event and writes nothing; on a ticket that is no longer in progress it is refused.

use yoi_testkit::store as common;

use common::*;
use yoi_store::ops;

#[test]
fn an_assembly_sent_again_after_a_crash_is_written_once() {
    let fx = Fx::new();
    let id = fx.inprogress("T");
    let ctx = with_op(service(5), "assembly-T-abc");
    let body = "### What changed\n\nAdded hello.txt.";
    let first = ops::record_assembly(&fx.ws, &ctx, id.as_str(), "quick", body).unwrap();
    assert!(!first.replayed);
    let again = ops::record_assembly(&fx.ws, &ctx, id.as_str(), "quick", body).unwrap();
    assert!(again.replayed, "{again:?}");
    assert_eq!(again.event_id, first.event_id);
    let events: Vec<_> = fx
        .thread(&id)
        .events
        .into_iter()
        .filter(|e| e.get(ops::ASSEMBLY) == Some("quick"))
        .collect();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].body.trim(), body);
    assert_eq!(events[0].author(), Some("yoi"));
}

#[test]
fn an_assembly_on_a_ticket_no_longer_in_progress_is_refused() {
    let fx = Fx::new();
    let id = fx.done("T");
    let before = fx.thread(&id).events.len();
    let err = ops::record_assembly(&fx.ws, &service(5), id.as_str(), "quick", "x").unwrap_err();
    assert_eq!(err.class(), yoi_store::ErrorClass::Conflict, "{err}");
    assert_eq!(fx.thread(&id).events.len(), before);
}
