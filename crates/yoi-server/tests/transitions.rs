//! The state operations through the API — mark-ready, queue, return-to-planning, close,
//! cancel, reopen — with their guards: an incomplete brief (422), an open blocker (409
//! `blocked`), a stale `expected_state` (409 `stale_state`), the wrong current state (409
//! `wrong_state`) and missing reasons or resolutions (400). Every refusal leaves the files as
//! they were.

mod common;

use common::{prepare_done_ticket, t, Backend, Server, COMPLETE_BRIEF};
use serde_json::{json, Value};

#[test]
fn mark_ready_refuses_an_incomplete_brief_with_422() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("Vague", "## Intent\nSomething.\n");
    let before = s.tree();
    let err = s
        .post(&t(&id, "/mark-ready"))
        .token(&s.tokens.human)
        .send()
        .expect_error(422, "brief_incomplete");
    assert_eq!(err["details"]["ticket"], id.as_str());
    assert_eq!(
        err["details"]["missing"],
        json!(["Acceptance criteria", "Validation"])
    );
    assert_eq!(s.tree(), before);
    s.patch(&t(&id, ""))
        .token(&s.tokens.human)
        .json(json!({ "body": COMPLETE_BRIEF }))
        .send()
        .expect(200);
    let out = s
        .post(&t(&id, "/mark-ready"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(
        (&out["from"], &out["to"]),
        (&json!("planning"), &json!("ready"))
    );
}

#[test]
fn queue_records_the_human_who_queued() {
    let s = Server::start(Backend::Sqlite);
    let id = s.ready_ticket("Queue me");
    let out = s
        .post(&t(&id, "/queue"))
        .token(&s.tokens.human)
        .json(json!({ "expected_state": "ready" }))
        .send()
        .expect(200);
    assert_eq!(
        (&out["from"], &out["to"]),
        (&json!("ready"), &json!("queued"))
    );
    let shown = s.show(&id);
    assert_eq!(shown["state"], "queued");
    assert_eq!(shown["queued_by"], "alice");
}

#[test]
fn queue_is_409_blocked_while_a_dependency_is_open() {
    let s = Server::start(Backend::Sqlite);
    let dep = s.create("Dependency", "");
    let id = s.ready_ticket("Dependent");
    s.post(&t(&id, "/relations"))
        .token(&s.tokens.human)
        .json(json!({ "kind": "depends_on", "target": dep }))
        .send()
        .expect(200);
    let before = s.tree();
    let err = s
        .post(&t(&id, "/queue"))
        .token(&s.tokens.human)
        .send()
        .expect_error(409, "blocked");
    assert_eq!(err["details"]["ticket"], id.as_str());
    assert_eq!(err["details"]["blockers"][0]["ticket"], dep.as_str());
    assert_eq!(err["details"]["blockers"][0]["state"], "planning");
    assert_eq!(s.tree(), before);
}

#[test]
fn expected_state_mismatch_is_409_stale_state_and_writes_nothing() {
    let s = Server::start(Backend::Sqlite);
    let id = s.ready_ticket("Raced");
    let before = s.tree();
    let err = s
        .post(&t(&id, "/queue"))
        .token(&s.tokens.human)
        .json(json!({ "expected_state": "planning" }))
        .send()
        .expect_error(409, "stale_state");
    assert_eq!(
        err["details"],
        json!({ "ticket": id, "expected": "planning", "found": "ready" })
    );
    s.post(&t(&id, "/queue"))
        .token(&s.tokens.human)
        .json(json!({ "expected_state": "someday" }))
        .send()
        .expect_error(400, "invalid");
    assert_eq!(s.tree(), before);
}

#[test]
fn a_transition_from_the_wrong_state_is_409_wrong_state() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("Still planning", COMPLETE_BRIEF);
    let before = s.tree();
    let err = s
        .post(&t(&id, "/queue"))
        .token(&s.tokens.human)
        .send()
        .expect_error(409, "wrong_state");
    assert_eq!(err["details"]["expected"], json!(["ready"]));
    assert_eq!(err["details"]["found"], "planning");
    s.post(&t(&id, "/reopen"))
        .token(&s.tokens.human)
        .json(json!({ "reason": "why not" }))
        .send()
        .expect_error(409, "wrong_state");
    assert_eq!(s.tree(), before);
}

#[test]
fn return_to_planning_needs_a_reason() {
    let s = Server::start(Backend::Sqlite);
    let id = s.ready_ticket("Unclear");
    let before = s.tree();
    s.post(&t(&id, "/return-to-planning"))
        .token(&s.tokens.human)
        .send()
        .expect_error(400, "invalid");
    assert_eq!(s.tree(), before);
    let out = s
        .post(&t(&id, "/return-to-planning"))
        .token(&s.tokens.human)
        .json(json!({ "reason": "which database?" }))
        .send()
        .expect(200);
    assert_eq!(
        (&out["from"], &out["to"]),
        (&json!("ready"), &json!("planning"))
    );
    let shown = s.show(&id);
    let last = shown["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["attrs"]["reason"], "which database?");
}

#[test]
fn close_takes_a_done_ticket_and_a_resolution() {
    let mut done = String::new();
    let s = Server::start_with(Backend::Sqlite, |ws| {
        done = prepare_done_ticket(ws, "Merged work");
    });
    let planning = s.create("Not done", "");
    let before = s.tree();
    s.post(&t(&done, "/close"))
        .token(&s.tokens.human)
        .send()
        .expect_error(400, "invalid");
    s.post(&t(&planning, "/close"))
        .token(&s.tokens.human)
        .json(json!({ "resolution": "Finished." }))
        .send()
        .expect_error(409, "wrong_state");
    assert_eq!(s.tree(), before);
    let out = s
        .post(&t(&done, "/close"))
        .token(&s.tokens.human)
        .json(json!({ "resolution": "Shipped in 1.2." }))
        .send()
        .expect(200);
    assert_eq!(
        (&out["from"], &out["to"]),
        (&json!("done"), &json!("closed"))
    );
    let shown = s.show(&done);
    assert_eq!(shown["state"], "closed");
    assert!(shown["resolution"]
        .as_str()
        .unwrap()
        .contains("Shipped in 1.2."));
}

#[test]
fn cancel_and_reopen_round_trip() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("Maybe", "");
    let before = s.tree();
    s.post(&t(&id, "/cancel"))
        .token(&s.tokens.human)
        .json(json!({ "resolution": "  " }))
        .send()
        .expect_error(400, "invalid");
    assert_eq!(s.tree(), before);
    let out = s
        .post(&t(&id, "/cancel"))
        .token(&s.tokens.human)
        .json(json!({ "resolution": "Not needed." }))
        .send()
        .expect(200);
    assert_eq!(
        (&out["from"], &out["to"]),
        (&json!("planning"), &json!("closed"))
    );
    assert!(s.show(&id)["resolution"]
        .as_str()
        .unwrap()
        .contains("Not needed."));
    s.post(&t(&id, "/reopen"))
        .token(&s.tokens.human)
        .send()
        .expect_error(400, "invalid");
    let out = s
        .post(&t(&id, "/reopen"))
        .token(&s.tokens.human)
        .json(json!({ "reason": "Needed after all." }))
        .send()
        .expect(200);
    assert_eq!(
        (&out["from"], &out["to"]),
        (&json!("closed"), &json!("planning"))
    );
    let shown = s.show(&id);
    assert_eq!(shown["state"], "planning");
    assert!(shown.get("resolution").is_none_or(Value::is_null));
}
