//! Issue 45: the queue page reads each queued ticket's routing events from the index (the
//! orchestrator's latest decision and the circuit's window) instead of its whole thread, and
//! shows exactly what reading the whole thread shows — the circuit, the latest decision, what
//! the router would decide — however long the thread, whoever else wrote a decision, and after
//! the ticket left the queue and came back.

mod common;

use common::{now, Fixture, BRIEF};
use yoi_core::decision::RoutingDecision;
use yoi_core::{Principal, TicketId};
use yoi_engine::routing::view::{queue_view, queue_view_indexed};
use yoi_store::ops::{self, CommentRequest, TransitionRequest};
use yoi_store::Ctx;

fn service() -> Ctx {
    Ctx::new(Principal::orchestrator(), now())
}

fn decide(f: &Fixture, by: &Ctx, id: &TicketId, d: &RoutingDecision) {
    let req = CommentRequest {
        kind: "decision".into(),
        body: d.render_event(),
    };
    ops::comment(&f.ws, by, id.as_str(), &req).unwrap();
}

fn failed(step: &str, attempt: u32) -> RoutingDecision {
    RoutingDecision::AcceptanceFailed {
        step: step.into(),
        error: "boom".into(),
        attempt,
    }
}

fn comments(f: &Fixture, id: &TicketId, n: usize) {
    for i in 0..n {
        let req = CommentRequest {
            kind: "comment".into(),
            body: format!("Note {i}."),
        };
        ops::comment(&f.ws, &f.human(), id.as_str(), &req).unwrap();
    }
}

#[test]
fn the_queue_from_the_index_shows_what_the_whole_threads_show() {
    let f = Fixture::new();
    let t = TransitionRequest::default();
    // An open circuit: three failures in a row and the attention event, under a long tail.
    let open = f.queued("Circuit open", BRIEF, &[]);
    for attempt in 1..=3 {
        decide(&f, &service(), &open, &failed("add_worktree", attempt));
    }
    ops::attention(&f.ws, &service(), open.as_str(), "circuit_open", "Stop.").unwrap();
    comments(&f, &open, 40);
    // Failures before the ticket left the queue do not count after it came back; the
    // orchestrator's decision from before stays its latest, a person's later one does not.
    let back = f.queued("Back in the queue", BRIEF, &[]);
    decide(&f, &service(), &back, &failed("add_worktree", 1));
    decide(&f, &service(), &back, &failed("add_worktree", 2));
    ops::return_to_planning(
        &f.ws,
        &f.human(),
        back.as_str(),
        &TransitionRequest {
            reason: Some("rethink".into()),
            ..TransitionRequest::default()
        },
    )
    .unwrap();
    decide(&f, &f.human(), &back, &failed("by_hand", 9));
    ops::mark_ready(&f.ws, &f.human(), back.as_str(), &t).unwrap();
    ops::queue(&f.ws, &f.human(), back.as_str(), &t).unwrap();
    comments(&f, &back, 20);
    // A retried circuit: the run ends, the step's total stands.
    let retried = f.queued("Retried", BRIEF, &[]);
    for attempt in 1..=3 {
        decide(
            &f,
            &service(),
            &retried,
            &failed("resolve_target_ref", attempt),
        );
    }
    ops::attention(&f.ws, &service(), retried.as_str(), "circuit_open", "Stop.").unwrap();
    ops::retry(&f.ws, &f.human(), retried.as_str(), Some("fixed")).unwrap();
    decide(&f, &service(), &retried, &failed("resolve_target_ref", 4));
    let quiet = f.queued("Never decided", BRIEF, &[]);
    comments(&f, &quiet, 5);

    let files = queue_view(&f.ws, 4, 50).unwrap();
    let indexed = queue_view_indexed(&f.ws, Some(&f.db), 4, 50).unwrap();
    let json = |v: &yoi_engine::routing::view::QueueView| serde_json::to_value(v).unwrap();
    assert_eq!(json(&indexed), json(&files));

    let by_id = |id: &TicketId| {
        indexed
            .queued
            .iter()
            .find(|e| &e.view.ticket == id)
            .unwrap()
            .view
            .clone()
    };
    let v = by_id(&open);
    assert!(v.circuit.open);
    assert_eq!(v.circuit.consecutive_failures, 3);
    let v = by_id(&back);
    assert_eq!(v.circuit.consecutive_failures, 0, "{:?}", v.circuit);
    assert_eq!(
        v.latest_decision.and_then(|d| d.kind).as_deref(),
        Some("acceptance_failed"),
        "the orchestrator's decision from before the ticket came back"
    );
    let v = by_id(&retried);
    assert!(!v.circuit.open);
    assert_eq!(v.circuit.consecutive_failures, 1);
    assert_eq!(v.circuit.step_failures["resolve_target_ref"], 4);
    assert!(by_id(&quiet).latest_decision.is_none());
}

#[test]
fn the_queue_from_the_index_decides_blockers_capacity_and_conflicts_as_the_files_do() {
    let f = Fixture::new();
    let scoped = format!("{BRIEF}\n## Write scope\n- src/**\n");
    let t = TransitionRequest::default();
    // In progress, with a write scope every other scoped ticket overlaps.
    let working = f.queued("Working", &scoped, &[]);
    f.accept(&working);
    let first = f.queued("First in the queue", BRIEF, &[]);
    let _overlaps = f.queued("Overlaps the work", &scoped, &[]);
    // Blocked by a queued ticket it depends on, and by a planning ticket that blocks it.
    let waits = f.queued("Waits", BRIEF, &[]);
    let relate = |from: &TicketId, kind, to: &TicketId| {
        let req = ops::RelationRequest {
            kind,
            target: to.to_string(),
            note: None,
        };
        ops::add_relation(&f.ws, &f.human(), from.as_str(), &req).unwrap();
    };
    relate(&waits, yoi_core::relation::RelationKind::DependsOn, &first);
    let planning = ops::create(
        &f.ws,
        &f.human(),
        &ops::CreateRequest {
            title: "Still planned".into(),
            body: BRIEF.into(),
            depends_on: vec![],
        },
    )
    .unwrap()
    .ticket;
    relate(&planning, yoi_core::relation::RelationKind::Blocks, &waits);
    for i in 0..3 {
        let id = ops::create(
            &f.ws,
            &f.human(),
            &ops::CreateRequest {
                title: format!("Ready {i}"),
                body: BRIEF.into(),
                depends_on: vec![],
            },
        )
        .unwrap()
        .ticket;
        ops::mark_ready(&f.ws, &f.human(), id.as_str(), &t).unwrap();
    }
    let last = f.queued("Beyond the page", BRIEF, &[]);
    let json = |v: &yoi_engine::routing::view::QueueView| serde_json::to_value(v).unwrap();
    // Room for more (conflicts are looked at) and none (capacity decides); a page of three.
    for max in [4, 1] {
        let files = queue_view(&f.ws, max, 3).unwrap();
        let indexed = queue_view_indexed(&f.ws, Some(&f.db), max, 3).unwrap();
        assert_eq!(json(&indexed), json(&files), "max_inprogress {max}");
        assert_eq!((indexed.queued_total, indexed.queued.len()), (4, 3));
        assert_eq!((indexed.ready_total, indexed.ready.len()), (3, 3));
        assert_eq!(indexed.capacity.in_progress, 1);
        assert!(indexed.queued.iter().all(|e| e.view.ticket != last));
        let kinds: Vec<String> = indexed
            .queued
            .iter()
            .map(|e| e.view.would_decide.as_ref().unwrap().kind.clone())
            .collect();
        let expected = match max {
            4 => [
                "implementation_ready",
                "waiting_conflict",
                "blocked_by_dependency",
            ],
            _ => [
                "waiting_capacity",
                "waiting_capacity",
                "blocked_by_dependency",
            ],
        };
        assert_eq!(kinds, expected, "max_inprogress {max}");
        let blockers: Vec<&TicketId> = indexed.queued[2]
            .view
            .blockers
            .iter()
            .map(|b| &b.ticket)
            .collect();
        assert_eq!(blockers.len(), 2);
        assert!(blockers.contains(&&first) && blockers.contains(&&planning));
    }
}
