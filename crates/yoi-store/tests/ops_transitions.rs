//! The state operations that move work forward: mark-ready, queue, return-to-planning and
//! accept. Every success path with the events and files it writes, and every refusal (wrong
//! state, wrong principal, incomplete brief, blockers) with its error class and an untouched
//! ticket tree.

use yoi_testkit::store as common;

use common::*;
use yoi_core::plan::PlanKind;
use yoi_core::principal::PrincipalKind;
use yoi_core::relation::RelationKind;
use yoi_core::state::{Operation, State};
use yoi_core::thread::EventKind;
use yoi_store::ops::{self, EditRequest};
use yoi_store::{ErrorClass, StoreError};

#[test]
fn mark_ready_moves_planning_to_ready() {
    let fx = Fx::new();
    let id = fx.planning("T");
    let out = ops::mark_ready(&fx.ws, &alice(3), id.as_str(), &plain()).unwrap();
    assert_eq!(
        (out.from, out.to, out.operation.as_str(), out.replayed),
        (
            Some(State::Planning),
            Some(State::Ready),
            "mark-ready",
            false
        )
    );
    let e = change_of(&fx, &out);
    assert_eq!(e.get("from"), Some("planning"));
    assert_eq!(e.get("to"), Some("ready"));
    assert_eq!(e.get("reason"), Some("marked_ready"));
    assert_eq!(e.get("field"), Some("state"));
    assert_eq!(e.author(), Some("alice"));
    assert_eq!(e.at(), Some(ts(3)));
    let item = fx.item(&id);
    assert_eq!(item.state, State::Ready);
    assert_eq!(item.updated_at, ts(3));
}

#[test]
fn mark_ready_by_an_intake_pod_is_allowed_and_by_a_role_pod_forbidden() {
    let fx = Fx::new();
    let id = fx.planning("T");
    let before = fx.snapshot();
    let err = ops::mark_ready(&fx.ws, &coder(1), id.as_str(), &plain()).unwrap_err();
    assert_forbidden(err, Operation::MarkReady, PrincipalKind::Pod);
    fx.assert_unchanged(&before);
    let out = ops::mark_ready(&fx.ws, &intake(1), id.as_str(), &plain()).unwrap();
    assert_eq!(change_of(&fx, &out).author(), Some("intake:scout"));
}

#[test]
fn mark_ready_refuses_an_incomplete_brief_naming_the_missing_sections() {
    let fx = Fx::new();
    let id = fx.create("T", "## Intent\nDo it.\n\n## Acceptance criteria\n- TBD\n");
    let before = fx.snapshot();
    let err = ops::mark_ready(&fx.ws, &alice(1), id.as_str(), &plain()).unwrap_err();
    assert_eq!(err.class(), ErrorClass::Refused);
    let message = err.to_string();
    assert!(
        message.contains("the brief is missing Acceptance criteria, Validation"),
        "{message}"
    );
    match err {
        StoreError::BriefIncomplete { ticket, missing } => {
            assert_eq!(ticket, id);
            assert_eq!(missing, vec!["Acceptance criteria", "Validation"]);
        }
        other => panic!("expected BriefIncomplete, got {other:?}"),
    }
    fx.assert_unchanged(&before);

    let empty = fx.create("Empty", "");
    let err = ops::mark_ready(&fx.ws, &alice(1), empty.as_str(), &plain()).unwrap_err();
    assert!(
        matches!(err, StoreError::BriefIncomplete { ref missing, .. }
        if missing == &["Intent", "Acceptance criteria", "Validation"])
    );
}

#[test]
fn mark_ready_accepts_japanese_headings() {
    let fx = Fx::new();
    let id = fx.create(
        "ログイン",
        "## 意図\nログインできるようにする。\n\n## 受け入れ条件\n- フォームがある\n\n## 検証\n`cargo test`\n",
    );
    let out = ops::mark_ready(&fx.ws, &alice(1), id.as_str(), &plain()).unwrap();
    assert_eq!(out.to, Some(State::Ready));
    assert_eq!(fx.state(&id), State::Ready);
}

#[test]
fn queue_moves_ready_to_queued_and_records_who_queued() {
    let fx = Fx::new();
    let id = fx.ready("T");
    let out = ops::queue(&fx.ws, &alice(4), id.as_str(), &plain()).unwrap();
    assert_eq!(
        (out.from, out.to),
        (Some(State::Ready), Some(State::Queued))
    );
    let e = change_of(&fx, &out);
    assert_eq!(e.get("reason"), Some("queued"));
    assert_eq!(e.body, "Queued for routing by alice.");
    let item = fx.item(&id);
    assert_eq!(item.state, State::Queued);
    assert_eq!(item.queued_by.as_deref(), Some("alice"));
    assert_eq!(item.queued_at, Some(ts(4)));
    assert!(fx
        .read(&id, "item.md")
        .contains("queued_by: alice\nqueued_at: 2026-11-29T10:04:00Z\n"));
}

#[test]
fn queue_by_a_non_human_principal_is_forbidden() {
    let fx = Fx::new();
    let id = fx.ready("T");
    let before = fx.snapshot();
    for ctx in non_humans(5) {
        let kind = ctx.principal.kind;
        let err = ops::queue(&fx.ws, &ctx, id.as_str(), &plain()).unwrap_err();
        assert!(
            err.to_string().contains("may only be done by human"),
            "{err}"
        );
        assert_forbidden(err, Operation::Queue, kind);
    }
    fx.assert_unchanged(&before);
}

#[test]
fn queue_refuses_when_dependency_open() {
    for blocker_state in [State::Planning, State::Ready] {
        let fx = Fx::new();
        let blocker = fx.in_state(blocker_state, "blocker");
        let id = fx.ready("waiter");
        fx.relate(&id, RelationKind::DependsOn, &blocker);
        let before = fx.snapshot();
        let err = ops::queue(&fx.ws, &alice(5), id.as_str(), &plain()).unwrap_err();
        assert_blocked(err, &id, &[(&blocker, "depends_on", Some(blocker_state))]);
        fx.assert_unchanged(&before);
    }
}

#[test]
fn queue_allows_a_dependency_that_is_in_flight_or_finished() {
    for blocker_state in [State::Queued, State::Inprogress, State::Done, State::Closed] {
        let fx = Fx::new();
        let blocker = fx.in_state(blocker_state, "blocker");
        let id = fx.ready("waiter");
        fx.relate(&id, RelationKind::DependsOn, &blocker);
        let out = ops::queue(&fx.ws, &alice(6), id.as_str(), &plain()).unwrap();
        assert_eq!(out.to, Some(State::Queued), "blocker {blocker_state}");
        assert_eq!(fx.state(&id), State::Queued);
    }
}

#[test]
fn queue_counts_incoming_blocks() {
    let fx = Fx::new();
    let blocker = fx.planning("blocker");
    let id = fx.ready("waiter");
    fx.relate(&blocker, RelationKind::Blocks, &id);
    let before = fx.snapshot();
    let err = ops::queue(&fx.ws, &alice(5), id.as_str(), &plain()).unwrap_err();
    assert_blocked(err, &id, &[(&blocker, "blocked_by", Some(State::Planning))]);
    fx.assert_unchanged(&before);

    // Once the blocking ticket is in flight, the waiter may be queued behind it.
    ops::mark_ready(&fx.ws, &alice(6), blocker.as_str(), &plain()).unwrap();
    ops::queue(&fx.ws, &alice(6), blocker.as_str(), &plain()).unwrap();
    ops::queue(&fx.ws, &alice(7), id.as_str(), &plain()).unwrap();
    assert_eq!(fx.state(&id), State::Queued);
}

#[test]
fn queue_refuses_a_dependency_whose_ticket_is_missing() {
    let fx = Fx::new();
    let gone = fx.planning("gone");
    let id = fx.ready("waiter");
    fx.relate(&id, RelationKind::DependsOn, &gone);
    std::fs::remove_dir_all(fx.ws.ticket_dir(&gone)).unwrap();
    let err = ops::queue(&fx.ws, &alice(5), id.as_str(), &plain()).unwrap_err();
    assert!(err.to_string().contains("(missing or unreadable)"), "{err}");
    assert_blocked(err, &id, &[(&gone, "depends_on", None)]);
}

#[test]
fn return_to_planning_from_ready_and_from_queued_records_the_reason() {
    for start in [State::Ready, State::Queued] {
        let fx = Fx::new();
        let id = fx.in_state(start, "T");
        let out = ops::return_to_planning(
            &fx.ws,
            &orchestrator(8),
            id.as_str(),
            &reason("write scope is undecided"),
        )
        .unwrap();
        assert_eq!((out.from, out.to), (Some(start), Some(State::Planning)));
        let e = change_of(&fx, &out);
        assert_eq!(e.get("reason"), Some("write scope is undecided"));
        assert_eq!(e.body, "Returned to planning: write scope is undecided");
        assert_eq!(e.author(), Some("yoi-orchestrator"));
        let item = fx.item(&id);
        assert_eq!(item.state, State::Planning);
        assert_eq!((item.queued_by, item.queued_at), (None, None));
        assert!(!fx.read(&id, "item.md").contains("queued_"));
    }
}

#[test]
fn return_to_planning_needs_a_reason() {
    let fx = Fx::new();
    let id = fx.queued("T");
    let before = fx.snapshot();
    for req in [plain(), reason(""), reason("  ")] {
        let err = ops::return_to_planning(&fx.ws, &alice(8), id.as_str(), &req).unwrap_err();
        assert_eq!(err.class(), ErrorClass::Invalid);
        assert!(matches!(err, StoreError::BadInput { ref field, .. } if field == "reason"));
    }
    let err =
        ops::return_to_planning(&fx.ws, &alice(8), id.as_str(), &reason("two\nlines")).unwrap_err();
    assert!(matches!(err, StoreError::BadInput { ref field, .. } if field == "reason"));
    let err = ops::return_to_planning(&fx.ws, &coder(8), id.as_str(), &reason("why")).unwrap_err();
    assert_forbidden(err, Operation::ReturnToPlanning, PrincipalKind::Pod);
    fx.assert_unchanged(&before);
}

#[test]
fn accept_moves_queued_to_inprogress_with_decision_and_accepted_plan() {
    let fx = Fx::new();
    let id = fx.queued("T");
    let out = ops::accept(
        &fx.ws,
        &orchestrator(9),
        id.as_str(),
        &plain(),
        &accept_evidence(),
    )
    .unwrap();
    assert_eq!(
        (out.from, out.to),
        (Some(State::Queued), Some(State::Inprogress))
    );
    let events = fx.events(&id);
    let n = events.len();
    let decision = &events[n - 2];
    assert_eq!(decision.kind, EventKind::Decision);
    assert_eq!(decision.get("decision"), Some("implementation_ready"));
    assert_eq!(decision.body, "Routing decision: implementation_ready");
    assert_eq!(decision.author(), Some("yoi-orchestrator"));
    assert!(decision.id().is_some() && decision.id() != out.event_id.as_deref());
    let changed = &events[n - 1];
    assert_eq!(changed.id(), out.event_id.as_deref());
    assert_eq!(changed.get("reason"), Some("orchestrator_acceptance"));
    assert!(changed.body.contains("`yoi/login`"), "{}", changed.body);

    let plan = fx.ws.read_plan(&id).unwrap();
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0].kind, PlanKind::AcceptedPlan);
    assert_eq!(plan[0].author, "yoi-orchestrator");
    assert_eq!(plan[0].at, ts(9));
    let accepted = plan[0].accepted_plan.as_ref().unwrap();
    assert_eq!(accepted.branch.as_deref(), Some("yoi/login"));
    assert_eq!(accepted.worktree.as_deref(), Some(".worktree/login"));
    assert_eq!(accepted.base_commit.as_deref(), Some("0123abcd"));
    assert_eq!(fx.state(&id), State::Inprogress);
}

#[test]
fn accept_is_for_the_orchestrator_only_and_only_from_queued() {
    let fx = Fx::new();
    let id = fx.queued("T");
    let before = fx.snapshot();
    for ctx in [alice(9), service(9), intake(9), coder(9)] {
        let kind = ctx.principal.kind;
        let err = ops::accept(&fx.ws, &ctx, id.as_str(), &plain(), &accept_evidence()).unwrap_err();
        assert_forbidden(err, Operation::Accept, kind);
    }
    fx.assert_unchanged(&before);

    let ready = fx.ready("R");
    let before = fx.snapshot();
    let err = ops::accept(
        &fx.ws,
        &orchestrator(9),
        ready.as_str(),
        &plain(),
        &accept_evidence(),
    )
    .unwrap_err();
    assert_wrong_state(err, Operation::Accept, &[State::Queued], State::Ready);
    fx.assert_unchanged(&before);
}

#[test]
fn accept_refuses_any_unfinished_blocker() {
    // Even a blocker that is itself queued or in progress stops acceptance.
    for blocker_state in [
        State::Planning,
        State::Ready,
        State::Queued,
        State::Inprogress,
    ] {
        let fx = Fx::new();
        let blocker = fx.in_state(blocker_state, "blocker");
        let id = fx.queued("waiter");
        fx.relate(&blocker, RelationKind::Blocks, &id);
        let before = fx.snapshot();
        let err = ops::accept(
            &fx.ws,
            &orchestrator(9),
            id.as_str(),
            &plain(),
            &accept_evidence(),
        )
        .unwrap_err();
        assert_blocked(err, &id, &[(&blocker, "blocked_by", Some(blocker_state))]);
        fx.assert_unchanged(&before);
        assert!(!fx.path(&id, "artifacts/orchestration-plan.jsonl").exists());
        assert_eq!(fx.state(&id), State::Queued);
    }
}

#[test]
fn accept_refuses_an_in_flight_dependency_that_queue_allowed() {
    let fx = Fx::new();
    let blocker = fx.queued("blocker");
    let id = fx.ready("waiter");
    fx.relate(&id, RelationKind::DependsOn, &blocker);
    ops::queue(&fx.ws, &alice(6), id.as_str(), &plain()).unwrap();
    let err = ops::accept(
        &fx.ws,
        &orchestrator(9),
        id.as_str(),
        &plain(),
        &accept_evidence(),
    )
    .unwrap_err();
    assert_blocked(err, &id, &[(&blocker, "depends_on", Some(State::Queued))]);

    // Once the dependency is finished, acceptance goes through.
    ops::accept(
        &fx.ws,
        &orchestrator(9),
        blocker.as_str(),
        &plain(),
        &accept_evidence(),
    )
    .unwrap();
    ops::complete(
        &fx.ws,
        &service(10),
        blocker.as_str(),
        &plain(),
        &merge_evidence(),
    )
    .unwrap();
    let out = ops::accept(
        &fx.ws,
        &orchestrator(11),
        id.as_str(),
        &plain(),
        &accept_evidence(),
    )
    .unwrap();
    assert_eq!(out.to, Some(State::Inprogress));
}

#[test]
fn accept_refuses_a_brief_emptied_after_queueing() {
    let fx = Fx::new();
    let id = fx.queued("T");
    ops::edit(
        &fx.ws,
        &alice(8),
        id.as_str(),
        &EditRequest {
            title: None,
            body: Some("## Intent\nStill here.\n".into()),
        },
    )
    .unwrap();
    let before = fx.snapshot();
    let err = ops::accept(
        &fx.ws,
        &orchestrator(9),
        id.as_str(),
        &plain(),
        &accept_evidence(),
    )
    .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Refused);
    assert!(
        matches!(err, StoreError::BriefIncomplete { ref missing, .. }
        if missing == &["Acceptance criteria", "Validation"])
    );
    fx.assert_unchanged(&before);
}
