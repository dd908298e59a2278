//! Operation ids: replaying the same request returns the first outcome and writes nothing;
//! reusing an id for a different request is refused and writes nothing.

use yoi_testkit::store as common;

use common::*;
use yoi_core::plan::{PlanKind, PlanRecord};
use yoi_core::relation::RelationKind;
use yoi_core::state::State;
use yoi_core::TicketId;
use yoi_store::ops::{self, CommentRequest, CreateRequest, EditRequest, PlanRequest};
use yoi_store::{ErrorClass, Outcome, StoreError};

fn replay_of(first: &Outcome) -> Outcome {
    Outcome {
        replayed: true,
        ..first.clone()
    }
}

fn assert_conflicting_replay(err: StoreError, op: &str) {
    assert_eq!(err.class(), ErrorClass::Conflict, "{err}");
    match err {
        StoreError::ConflictingReplay { op: got, .. } => assert_eq!(got, op),
        other => panic!("expected ConflictingReplay, got {other:?}"),
    }
}

fn create_req(title: &str) -> CreateRequest {
    CreateRequest {
        title: title.into(),
        body: BRIEF.into(),
        depends_on: Vec::new(),
    }
}

#[test]
fn replaying_a_transition_returns_the_first_outcome_and_writes_nothing() {
    let fx = Fx::new();
    let id = fx.ready("T");
    let first = ops::queue(&fx.ws, &with_op(alice(5), "q-1"), id.as_str(), &plain()).unwrap();
    assert!(!first.replayed);
    let event = fx.last_event(&id);
    assert_eq!(event.op(), Some("q-1"));
    assert!(event.get("fp").is_some());

    let before = fx.snapshot();
    // Later, and with the ticket no longer ready: the replay still answers with the first
    // result instead of a wrong-state error.
    let again = ops::queue(&fx.ws, &with_op(alice(30), "q-1"), id.as_str(), &plain()).unwrap();
    assert_eq!(again, replay_of(&first));
    fx.assert_unchanged(&before);
    assert_eq!(fx.state(&id), State::Queued);
}

#[test]
fn replay_ignores_a_compare_and_swap_that_no_longer_holds() {
    let fx = Fx::new();
    let id = fx.ready("T");
    let first = ops::queue(
        &fx.ws,
        &with_op(alice(5), "q-cas"),
        id.as_str(),
        &expecting(State::Ready),
    )
    .unwrap();
    let before = fx.snapshot();
    let again = ops::queue(
        &fx.ws,
        &with_op(alice(6), "q-cas"),
        id.as_str(),
        &expecting(State::Ready),
    )
    .unwrap();
    assert_eq!(again, replay_of(&first));
    fx.assert_unchanged(&before);
}

#[test]
fn replay_with_a_different_payload_is_refused_and_writes_nothing() {
    let fx = Fx::new();
    let id = fx.queued("T");
    ops::return_to_planning(
        &fx.ws,
        &with_op(alice(5), "back-1"),
        id.as_str(),
        &reason("scope unclear"),
    )
    .unwrap();
    let before = fx.snapshot();
    let err = ops::return_to_planning(
        &fx.ws,
        &with_op(alice(6), "back-1"),
        id.as_str(),
        &reason("a different reason"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("back-1"), "{err}");
    assert_conflicting_replay(err, "back-1");
    fx.assert_unchanged(&before);
}

#[test]
fn an_operation_id_reused_for_another_operation_is_refused() {
    let fx = Fx::new();
    let id = fx.planning("T");
    ops::comment(
        &fx.ws,
        &with_op(alice(1), "shared"),
        id.as_str(),
        &CommentRequest {
            kind: "comment".into(),
            body: "hello".into(),
        },
    )
    .unwrap();
    let before = fx.snapshot();
    let err =
        ops::mark_ready(&fx.ws, &with_op(alice(2), "shared"), id.as_str(), &plain()).unwrap_err();
    assert_conflicting_replay(err, "shared");
    let err = ops::edit(
        &fx.ws,
        &with_op(alice(2), "shared"),
        id.as_str(),
        &EditRequest {
            title: Some("x".into()),
            body: None,
        },
    )
    .unwrap_err();
    assert_conflicting_replay(err, "shared");
    fx.assert_unchanged(&before);
    assert_eq!(fx.state(&id), State::Planning);
}

#[test]
fn comment_and_edit_replays_return_the_first_outcome() {
    let fx = Fx::new();
    let id = fx.planning("T");
    let comment = CommentRequest {
        kind: "decision".into(),
        body: "Use OAuth.".into(),
    };
    let first = ops::comment(&fx.ws, &with_op(alice(1), "c-1"), id.as_str(), &comment).unwrap();
    let edit = EditRequest {
        title: Some("Renamed".into()),
        body: None,
    };
    let first_edit = ops::edit(&fx.ws, &with_op(alice(2), "e-1"), id.as_str(), &edit).unwrap();
    let before = fx.snapshot();
    let again = ops::comment(&fx.ws, &with_op(alice(3), "c-1"), id.as_str(), &comment).unwrap();
    assert_eq!(again, replay_of(&first));
    let again = ops::edit(&fx.ws, &with_op(alice(3), "e-1"), id.as_str(), &edit).unwrap();
    assert_eq!(again, replay_of(&first_edit));
    fx.assert_unchanged(&before);

    let err = ops::comment(
        &fx.ws,
        &with_op(alice(4), "c-1"),
        id.as_str(),
        &CommentRequest {
            kind: "comment".into(),
            body: "Use OAuth.".into(),
        },
    )
    .unwrap_err();
    assert_conflicting_replay(err, "c-1");
    fx.assert_unchanged(&before);
}

#[test]
fn close_replay_does_not_rewrite_the_resolution() {
    let fx = Fx::new();
    let id = fx.done("T");
    let first = ops::close(
        &fx.ws,
        &with_op(alice(6), "close-1"),
        id.as_str(),
        &resolution("Shipped."),
    )
    .unwrap();
    let before = fx.snapshot();
    let again = ops::close(
        &fx.ws,
        &with_op(service(7), "close-1"),
        id.as_str(),
        &resolution("Shipped."),
    )
    .unwrap();
    assert_eq!(again, replay_of(&first));
    fx.assert_unchanged(&before);
    let err = ops::close(
        &fx.ws,
        &with_op(alice(7), "close-1"),
        id.as_str(),
        &resolution("Something else."),
    )
    .unwrap_err();
    assert_conflicting_replay(err, "close-1");
    fx.assert_unchanged(&before);
}

#[test]
fn accept_replay_appends_no_second_plan_record() {
    let fx = Fx::new();
    let id = fx.queued("T");
    let ctx = with_op(orchestrator(3), "accept-1");
    let first = ops::accept(&fx.ws, &ctx, id.as_str(), &plain(), &accept_evidence()).unwrap();
    let before = fx.snapshot();
    let again = ops::accept(&fx.ws, &ctx, id.as_str(), &plain(), &accept_evidence()).unwrap();
    assert_eq!(again, replay_of(&first));
    fx.assert_unchanged(&before);
    assert_eq!(fx.ws.read_plan(&id).unwrap().len(), 1);

    let mut other = accept_evidence();
    other.branch = "yoi/other".into();
    let err = ops::accept(&fx.ws, &ctx, id.as_str(), &plain(), &other).unwrap_err();
    assert_conflicting_replay(err, "accept-1");
    fx.assert_unchanged(&before);
}

#[test]
fn create_replay_finds_the_ticket_created_under_that_op_id() {
    let fx = Fx::new();
    let first = ops::create(&fx.ws, &with_op(alice(0), "new-1"), &create_req("Login")).unwrap();
    assert!(!first.replayed);
    let before = fx.snapshot();
    let again = ops::create(&fx.ws, &with_op(alice(9), "new-1"), &create_req("Login")).unwrap();
    assert_eq!(again, replay_of(&first));
    fx.assert_unchanged(&before);
    assert_eq!(fx.ws.ticket_ids().unwrap(), vec![first.ticket.clone()]);

    // A different op id creates a second ticket.
    let other = ops::create(&fx.ws, &with_op(alice(9), "new-2"), &create_req("Login")).unwrap();
    assert_ne!(other.ticket, first.ticket);
    assert_eq!(fx.ws.ticket_ids().unwrap().len(), 2);
}

#[test]
fn create_replay_with_a_different_payload_is_refused_and_creates_nothing() {
    let fx = Fx::new();
    let dep = fx.planning("dep");
    let first = ops::create(&fx.ws, &with_op(alice(0), "new-1"), &create_req("Login")).unwrap();
    let before = fx.snapshot();
    let err = ops::create(&fx.ws, &with_op(alice(1), "new-1"), &create_req("Logout")).unwrap_err();
    assert_conflicting_replay(err, "new-1");
    let mut with_dep = create_req("Login");
    with_dep.depends_on = vec![dep.to_string()];
    let err = ops::create(&fx.ws, &with_op(alice(1), "new-1"), &with_dep).unwrap_err();
    assert_conflicting_replay(err, "new-1");
    fx.assert_unchanged(&before);
    let mut ids = vec![dep, first.ticket];
    ids.sort();
    assert_eq!(fx.ws.ticket_ids().unwrap(), ids);
}

#[test]
fn create_replay_finds_the_ticket_when_the_op_id_needs_quoting() {
    // Backslashes and `-->` are allowed in operation ids and are escaped in the thread
    // header; the replay must still recognise the ticket rather than create a second one.
    let fx = Fx::new();
    for op in [r"batch\7", "step-->1"] {
        let first = ops::create(&fx.ws, &with_op(alice(0), op), &create_req(op)).unwrap();
        let before = fx.snapshot();
        let again = ops::create(&fx.ws, &with_op(alice(1), op), &create_req(op)).unwrap();
        assert_eq!(again, replay_of(&first), "op {op}");
        fx.assert_unchanged(&before);
    }
    assert_eq!(fx.ws.ticket_ids().unwrap().len(), 2);
}

fn plan_req(kind: PlanKind, related: Option<&TicketId>, note: &str) -> PlanRequest {
    PlanRequest {
        kind,
        related: related.map(|t| t.to_string()),
        note: Some(note.into()),
        accepted_plan: None,
    }
}

#[test]
fn plan_record_replay_returns_the_first_record_and_appends_nothing() {
    let fx = Fx::new();
    let id = fx.queued("T");
    let other = fx.queued("U");
    let req = plan_req(PlanKind::After, Some(&other), "U touches the same module.");
    let (first, record) = ops::add_plan_record(
        &fx.ws,
        &with_op(orchestrator(4), "plan-1"),
        id.as_str(),
        &req,
    )
    .unwrap();
    assert!(!first.replayed);
    assert_eq!(first.operation, "plan_add");
    assert_eq!(record.related_ticket.as_ref(), Some(&other));
    let before = fx.snapshot();

    let (again, again_record) = ops::add_plan_record(
        &fx.ws,
        &with_op(orchestrator(8), "plan-1"),
        id.as_str(),
        &req,
    )
    .unwrap();
    assert_eq!(again, replay_of(&first));
    assert_eq!(again_record, record);
    fx.assert_unchanged(&before);
    let records: Vec<PlanRecord> = fx.ws.read_plan(&id).unwrap();
    assert_eq!(records, vec![record]);

    let err = ops::add_plan_record(
        &fx.ws,
        &with_op(orchestrator(8), "plan-1"),
        id.as_str(),
        &plan_req(PlanKind::After, Some(&other), "A different note."),
    )
    .unwrap_err();
    assert_conflicting_replay(err, "plan-1");
    fx.assert_unchanged(&before);
    // Plan records never move the state.
    assert_eq!(fx.state(&id), State::Queued);
}

#[test]
fn plan_records_without_an_op_id_append_each_time() {
    let fx = Fx::new();
    let id = fx.queued("T");
    let req = PlanRequest {
        kind: PlanKind::WaitingCapacity,
        related: None,
        note: Some("All coder slots are busy.".into()),
        accepted_plan: None,
    };
    ops::add_plan_record(&fx.ws, &orchestrator(4), id.as_str(), &req).unwrap();
    ops::add_plan_record(&fx.ws, &orchestrator(5), id.as_str(), &req).unwrap();
    let records = fx.ws.read_plan(&id).unwrap();
    assert_eq!(records.len(), 2);
    assert_ne!(records[0].id, records[1].id);
}

#[test]
fn relation_add_and_remove_replays_return_the_first_outcome() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    let add = relation(RelationKind::DependsOn, &b);
    let first = ops::add_relation(&fx.ws, &with_op(alice(1), "rel-1"), a.as_str(), &add).unwrap();
    let before = fx.snapshot();
    let again = ops::add_relation(&fx.ws, &with_op(alice(2), "rel-1"), a.as_str(), &add).unwrap();
    assert_eq!(again, replay_of(&first));
    fx.assert_unchanged(&before);
    let err = ops::add_relation(
        &fx.ws,
        &with_op(alice(2), "rel-1"),
        a.as_str(),
        &relation(RelationKind::Related, &b),
    )
    .unwrap_err();
    assert_conflicting_replay(err, "rel-1");
    fx.assert_unchanged(&before);

    let removed = ops::remove_relation(
        &fx.ws,
        &with_op(alice(3), "rel-rm-1"),
        a.as_str(),
        RelationKind::DependsOn,
        b.as_str(),
    )
    .unwrap();
    let before = fx.snapshot();
    let again = ops::remove_relation(
        &fx.ws,
        &with_op(alice(4), "rel-rm-1"),
        a.as_str(),
        RelationKind::DependsOn,
        b.as_str(),
    )
    .unwrap();
    assert_eq!(again, replay_of(&removed));
    fx.assert_unchanged(&before);
}

#[test]
fn concurrent_calls_with_one_operation_id_apply_it_once() {
    let fx = Fx::new();
    let id = fx.ready("T");
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    ops::queue(&fx.ws, &with_op(alice(5), "q-race"), id.as_str(), &plain()).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let firsts: Vec<&Outcome> = outcomes.iter().filter(|o| !o.replayed).collect();
    assert_eq!(firsts.len(), 1, "{outcomes:?}");
    for o in &outcomes {
        assert_eq!(
            o,
            &Outcome {
                replayed: o.replayed,
                ..firsts[0].clone()
            }
        );
    }
    let changes = state_changes(&fx.events(&id));
    assert_eq!(changes.len(), 2, "mark-ready and one queue: {changes:?}");
}

#[test]
fn concurrent_comments_are_all_kept_whole() {
    let fx = Fx::new();
    let id = fx.planning("T");
    std::thread::scope(|s| {
        for writer in 0..4 {
            let (fx, id) = (&fx, &id);
            s.spawn(move || {
                for n in 0..5 {
                    ops::comment(
                        &fx.ws,
                        &alice(1),
                        id.as_str(),
                        &CommentRequest {
                            kind: "comment".into(),
                            body: format!("writer {writer} note {n}\n\n---\n\nend"),
                        },
                    )
                    .unwrap();
                }
            });
        }
    });
    let thread = fx.thread(&id);
    assert!(thread.issues.is_empty(), "{:?}", thread.issues);
    assert_eq!(thread.events.len(), 21);
    let mut bodies: Vec<&str> = thread.events[1..].iter().map(|e| e.body.as_str()).collect();
    bodies.sort();
    let mut want: Vec<String> = (0..4)
        .flat_map(|w| (0..5).map(move |n| format!("writer {w} note {n}\n\n---\n\nend")))
        .collect();
    want.sort();
    assert_eq!(bodies, want);
    let mut ids: Vec<&str> = thread.events.iter().map(|e| e.id().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 21, "event ids are unique");
}

#[test]
fn a_held_lock_makes_operations_busy_naming_the_holder() {
    let fx = Fx::new();
    let id = fx.ready("T");
    let mut other_process = fx.ws.clone();
    other_process.holder = "pid 1: yoi ticket edit".into();
    let guard = other_process.lock().unwrap();
    let mut impatient = fx.ws.clone();
    impatient.config.workspace.lock_timeout_secs = 0;
    let before = fx.snapshot();
    let err = ops::queue(&impatient, &alice(5), id.as_str(), &plain()).unwrap_err();
    assert_eq!(err.class(), ErrorClass::Busy, "{err}");
    assert!(err.to_string().contains("pid 1: yoi ticket edit"), "{err}");
    assert!(matches!(err, StoreError::Locked { ref holder, .. }
        if holder.as_deref() == Some("pid 1: yoi ticket edit")));
    fx.assert_unchanged(&before);

    drop(guard);
    let out = ops::queue(&impatient, &alice(5), id.as_str(), &plain()).unwrap();
    assert_eq!(out.to, Some(State::Queued));
}
