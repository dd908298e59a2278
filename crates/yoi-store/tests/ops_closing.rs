//! The state operations that finish work or bring it back: complete, close, cancel and
//! reopen; plus the rules every transition shares: a wrong-state call names what it expected
//! and found, and a stale compare-and-swap is refused before anything is written.

use yoi_testkit::store as common;

use common::*;
use yoi_core::principal::PrincipalKind;
use yoi_core::state::{Operation, State};
use yoi_core::thread::EventKind;
use yoi_store::ops;
use yoi_store::{ErrorClass, StoreError};

#[test]
fn complete_moves_inprogress_to_done_with_the_merge_recorded() {
    let fx = Fx::new();
    let id = fx.inprogress("T");
    let out = ops::complete(
        &fx.ws,
        &service(10),
        id.as_str(),
        &plain(),
        &merge_evidence(),
    )
    .unwrap();
    assert_eq!(
        (out.from, out.to),
        (Some(State::Inprogress), Some(State::Done))
    );
    let events = fx.events(&id);
    let merge = &events[events.len() - 2];
    assert_eq!(merge.kind, EventKind::Merge);
    assert_eq!(merge.get("target_ref"), Some("main"));
    assert_eq!(merge.get("before"), Some("0123abcd"));
    assert_eq!(merge.get("after"), Some("4567ef01"));
    assert_eq!(merge.get("commit"), Some("89abcdef"));
    assert_eq!(merge.author(), Some("yoi"));
    assert_eq!(change_of(&fx, &out).get("reason"), Some("merged"));
    assert_eq!(fx.state(&id), State::Done);
}

#[test]
fn complete_is_for_the_service_only() {
    let fx = Fx::new();
    let id = fx.inprogress("T");
    let queued = fx.queued("Q");
    let before = fx.snapshot();
    for ctx in [alice(10), orchestrator(10), intake(10), coder(10)] {
        let kind = ctx.principal.kind;
        let err =
            ops::complete(&fx.ws, &ctx, id.as_str(), &plain(), &merge_evidence()).unwrap_err();
        assert_forbidden(err, Operation::Complete, kind);
    }
    let err = ops::complete(
        &fx.ws,
        &service(10),
        queued.as_str(),
        &plain(),
        &merge_evidence(),
    )
    .unwrap_err();
    assert_wrong_state(
        err,
        Operation::Complete,
        &[State::Inprogress],
        State::Queued,
    );
    fx.assert_unchanged(&before);
}

#[test]
fn close_moves_done_to_closed_and_writes_the_resolution() {
    for ctx in [alice(11), service(11)] {
        let fx = Fx::new();
        let id = fx.done("T");
        let out = ops::close(
            &fx.ws,
            &ctx,
            id.as_str(),
            &resolution("Merged and verified.\r\n\n"),
        )
        .unwrap();
        assert_eq!((out.from, out.to), (Some(State::Done), Some(State::Closed)));
        assert_eq!(fx.read(&id, "resolution.md"), "Merged and verified.\n");
        assert_eq!(
            fx.ws.read_resolution(&id).unwrap().as_deref(),
            Some("Merged and verified.")
        );
        let events = fx.events(&id);
        let n = events.len();
        assert_eq!(events[n - 2].id(), out.event_id.as_deref());
        assert_eq!(events[n - 2].get("reason"), Some("closed"));
        let close = &events[n - 1];
        assert_eq!(close.kind, EventKind::Close);
        assert_eq!(close.get("status"), Some("closed"));
        assert_eq!(close.body, "Merged and verified.");
        assert_eq!(close.author(), Some(ctx.principal.author().as_str()));
        assert_eq!(fx.state(&id), State::Closed);
    }
}

#[test]
fn close_needs_done_and_a_resolution() {
    let fx = Fx::new();
    let done = fx.done("D");
    let running = fx.inprogress("R");
    let before = fx.snapshot();
    for req in [plain(), resolution(""), resolution(" \n ")] {
        let err = ops::close(&fx.ws, &alice(11), done.as_str(), &req).unwrap_err();
        assert_eq!(err.class(), ErrorClass::Invalid);
        assert!(matches!(err, StoreError::BadInput { ref field, .. } if field == "resolution"));
    }
    let err = ops::close(&fx.ws, &alice(11), running.as_str(), &resolution("x")).unwrap_err();
    assert_wrong_state(err, Operation::Close, &[State::Done], State::Inprogress);
    let err = ops::close(&fx.ws, &orchestrator(11), done.as_str(), &resolution("x")).unwrap_err();
    assert_forbidden(err, Operation::Close, PrincipalKind::Orchestrator);
    fx.assert_unchanged(&before);
    assert!(!fx.path(&done, "resolution.md").exists());
}

#[test]
fn cancel_closes_from_every_open_state() {
    for start in [
        State::Planning,
        State::Ready,
        State::Queued,
        State::Inprogress,
    ] {
        let fx = Fx::new();
        let id = fx.in_state(start, "T");
        let out = ops::cancel(&fx.ws, &alice(12), id.as_str(), &resolution("Not needed.")).unwrap();
        assert_eq!((out.from, out.to), (Some(start), Some(State::Closed)));
        assert_eq!(change_of(&fx, &out).get("reason"), Some("cancelled"));
        let close = fx.last_event(&id);
        assert_eq!(close.kind, EventKind::Close);
        assert_eq!(close.get("status"), Some("cancelled"));
        assert_eq!(close.body, "Not needed.");
        assert_eq!(fx.read(&id, "resolution.md"), "Not needed.\n");
        let item = fx.item(&id);
        assert_eq!(item.state, State::Closed);
        assert_eq!((item.queued_by, item.queued_at), (None, None));
    }
}

#[test]
fn cancel_is_for_humans_only_needs_a_resolution_and_an_open_ticket() {
    let fx = Fx::new();
    let open = fx.queued("Q");
    let done = fx.done("D");
    let closed = fx.closed("C");
    let before = fx.snapshot();
    for ctx in non_humans(12) {
        let kind = ctx.principal.kind;
        let err = ops::cancel(&fx.ws, &ctx, open.as_str(), &resolution("x")).unwrap_err();
        assert_forbidden(err, Operation::Cancel, kind);
    }
    let err = ops::cancel(&fx.ws, &alice(12), open.as_str(), &plain()).unwrap_err();
    assert!(matches!(err, StoreError::BadInput { ref field, .. } if field == "resolution"));
    let open_states = [
        State::Planning,
        State::Ready,
        State::Queued,
        State::Inprogress,
    ];
    for (id, found) in [(&done, State::Done), (&closed, State::Closed)] {
        let err = ops::cancel(&fx.ws, &alice(12), id.as_str(), &resolution("x")).unwrap_err();
        assert_wrong_state(err, Operation::Cancel, &open_states, found);
    }
    fx.assert_unchanged(&before);
}

#[test]
fn reopen_moves_closed_to_planning_and_keeps_the_resolution_in_the_thread() {
    let fx = Fx::new();
    let id = fx.closed("T");
    let out = ops::reopen(&fx.ws, &alice(13), id.as_str(), &reason("regression found")).unwrap();
    assert_eq!(
        (out.from, out.to),
        (Some(State::Closed), Some(State::Planning))
    );
    let e = change_of(&fx, &out);
    assert_eq!(e.get("reason"), Some("regression found"));
    assert_eq!(e.body, "Reopened: regression found");
    assert!(!fx.path(&id, "resolution.md").exists());
    assert_eq!(fx.ws.read_resolution(&id).unwrap(), None);
    let closes: Vec<_> = fx
        .events(&id)
        .into_iter()
        .filter(|e| e.kind == EventKind::Close)
        .collect();
    assert_eq!(closes.len(), 1);
    assert_eq!(closes[0].body, "Shipped.");
    let item = fx.item(&id);
    assert_eq!(item.state, State::Planning);
    // A ticket back in planning is no longer queued by anyone.
    assert_eq!((item.queued_by, item.queued_at), (None, None));
}

#[test]
fn reopen_needs_a_reason_a_human_and_a_closed_ticket() {
    let fx = Fx::new();
    let closed = fx.closed("C");
    let done = fx.done("D");
    let before = fx.snapshot();
    for req in [plain(), reason(" ")] {
        let err = ops::reopen(&fx.ws, &alice(13), closed.as_str(), &req).unwrap_err();
        assert_eq!(err.class(), ErrorClass::Invalid);
        assert!(matches!(err, StoreError::BadInput { ref field, .. } if field == "reason"));
    }
    for ctx in non_humans(13) {
        let kind = ctx.principal.kind;
        let err = ops::reopen(&fx.ws, &ctx, closed.as_str(), &reason("why")).unwrap_err();
        assert_forbidden(err, Operation::Reopen, kind);
    }
    let err = ops::reopen(&fx.ws, &alice(13), done.as_str(), &reason("why")).unwrap_err();
    assert_wrong_state(err, Operation::Reopen, &[State::Closed], State::Done);
    fx.assert_unchanged(&before);
    assert!(fx.path(&closed, "resolution.md").exists());
}

#[test]
fn wrong_state_calls_name_expected_and_found() {
    let fx = Fx::new();
    let planning = fx.planning("P");
    let ready = fx.ready("R");
    let closed = fx.closed("C");
    let before = fx.snapshot();
    let err = ops::mark_ready(&fx.ws, &alice(1), ready.as_str(), &plain()).unwrap_err();
    assert_wrong_state(err, Operation::MarkReady, &[State::Planning], State::Ready);
    let err = ops::queue(&fx.ws, &alice(1), planning.as_str(), &plain()).unwrap_err();
    assert_wrong_state(err, Operation::Queue, &[State::Ready], State::Planning);
    let err =
        ops::return_to_planning(&fx.ws, &alice(1), closed.as_str(), &reason("x")).unwrap_err();
    assert_wrong_state(
        err,
        Operation::ReturnToPlanning,
        &[State::Ready, State::Queued, State::Inprogress],
        State::Closed,
    );
    // The state is checked before the principal: a wrong state is reported even to a caller
    // who could never do the operation.
    let err = ops::queue(&fx.ws, &orchestrator(1), closed.as_str(), &plain()).unwrap_err();
    assert_wrong_state(err, Operation::Queue, &[State::Ready], State::Closed);
    fx.assert_unchanged(&before);
}

#[test]
fn expected_state_mismatch_is_stale_and_writes_nothing() {
    let fx = Fx::new();
    let id = fx.ready("T");
    let before = fx.snapshot();
    let err = ops::queue(&fx.ws, &alice(5), id.as_str(), &expecting(State::Planning)).unwrap_err();
    assert_eq!(err.class(), ErrorClass::Conflict);
    assert_eq!(
        err.to_string(),
        format!("ticket {id} is ready, expected planning: it changed since it was read")
    );
    match err {
        StoreError::StaleState {
            ticket,
            expected,
            found,
        } => {
            assert_eq!(ticket, id);
            assert_eq!((expected, found), (State::Planning, State::Ready));
        }
        other => panic!("expected StaleState, got {other:?}"),
    }
    // Compare-and-swap is checked before the operation's own rules.
    let err = ops::cancel(
        &fx.ws,
        &alice(5),
        id.as_str(),
        &yoi_store::ops::TransitionRequest {
            resolution: Some("x".into()),
            expected: Some(State::Queued),
            reason: None,
        },
    )
    .unwrap_err();
    assert!(matches!(
        err,
        StoreError::StaleState {
            found: State::Ready,
            ..
        }
    ));
    fx.assert_unchanged(&before);

    let out = ops::queue(&fx.ws, &alice(6), id.as_str(), &expecting(State::Ready)).unwrap();
    assert_eq!(out.to, Some(State::Queued));
}

#[test]
fn a_full_lifecycle_leaves_one_state_change_per_edge_in_the_thread() {
    let fx = Fx::new();
    let id = fx.closed("T");
    ops::reopen(&fx.ws, &alice(6), id.as_str(), &reason("again")).unwrap();
    let changes = state_changes(&fx.events(&id));
    let want = [
        ("planning", "ready", "marked_ready"),
        ("ready", "queued", "queued"),
        ("queued", "inprogress", "orchestrator_acceptance"),
        ("inprogress", "done", "merged"),
        ("done", "closed", "closed"),
        ("closed", "planning", "again"),
    ];
    let want: Vec<(String, String, String)> = want
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    assert_eq!(changes, want);
    assert_eq!(
        fx.kinds(&id),
        vec![
            "create",
            "state_changed",
            "state_changed",
            "decision",
            "state_changed",
            "merge",
            "state_changed",
            "state_changed",
            "close",
            "state_changed"
        ]
    );
    let events = fx.events(&id);
    let mut ids: Vec<&str> = events.iter().map(|e| e.id().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), events.len(), "every event has its own id");
    assert!(fx.thread(&id).issues.is_empty());
    let dir = fx.ws.ticket_dir(&id);
    assert!(yoi_store::fsutil::temp_leftovers(&dir).is_empty());
    assert!(yoi_store::fsutil::temp_leftovers(&dir.join("artifacts")).is_empty());
}
