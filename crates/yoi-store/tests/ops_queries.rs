//! Read queries over a workspace built with the real operations: `list` and its filters, and
//! the relation view of one ticket (inverse names, blockers, notices, whether queue would pass).

use yoi_testkit::store as common;

use common::*;
use yoi_core::relation::{Blocker, RelationKind};
use yoi_core::state::State;
use yoi_core::TicketId;
use yoi_store::query::{list, relation_view, ListFilter};

fn ids(summaries: &[yoi_store::query::TicketSummary]) -> Vec<TicketId> {
    summaries.iter().map(|s| s.id.clone()).collect()
}

fn sorted(mut v: Vec<TicketId>) -> Vec<TicketId> {
    v.sort();
    v
}

fn blocker(ticket: &TicketId, why: &str, state: Option<State>) -> Blocker {
    Blocker {
        ticket: ticket.clone(),
        reason_kind: yoi_core::relation::BlockerReason::parse(why).unwrap(),
        state,
    }
}

/// One ticket in each state, keyed by state.
fn one_of_each(fx: &Fx) -> Vec<(State, TicketId)> {
    State::ALL
        .into_iter()
        .map(|s| (s, fx.in_state(s, s.as_str())))
        .collect()
}

#[test]
fn list_hides_closed_tickets_by_default() {
    let fx = Fx::new();
    let tickets = one_of_each(&fx);
    let all = list(&fx.ws, &ListFilter::default()).unwrap();
    let want: Vec<TicketId> = tickets
        .iter()
        .filter(|(s, _)| *s != State::Closed)
        .map(|(_, id)| id.clone())
        .collect();
    assert_eq!(ids(&all), sorted(want));
    for s in &all {
        let (state, _) = tickets.iter().find(|(_, id)| id == &s.id).unwrap();
        assert_eq!(s.state, *state);
        assert_eq!(s.title, state.as_str());
        assert_eq!(s.created_at, ts(0));
    }
}

#[test]
fn list_filters_by_state() {
    let fx = Fx::new();
    let tickets = one_of_each(&fx);
    let of = |s: State| tickets.iter().find(|(t, _)| *t == s).unwrap().1.clone();
    let closed = list(
        &fx.ws,
        &ListFilter {
            states: Some(vec![State::Closed]),
            ..ListFilter::default()
        },
    )
    .unwrap();
    assert_eq!(ids(&closed), vec![of(State::Closed)]);
    let some = list(
        &fx.ws,
        &ListFilter {
            states: Some(vec![State::Ready, State::Queued]),
            ..ListFilter::default()
        },
    )
    .unwrap();
    assert_eq!(
        ids(&some),
        sorted(vec![of(State::Ready), of(State::Queued)])
    );
    let everything = list(
        &fx.ws,
        &ListFilter {
            states: Some(State::ALL.to_vec()),
            ..ListFilter::default()
        },
    )
    .unwrap();
    assert_eq!(everything.len(), 6);
}

#[test]
fn ready_lists_unblocked_ready_and_queued_tickets() {
    let fx = Fx::new();
    let free_ready = fx.ready("free ready");
    let free_queued = fx.queued("free queued");
    let _planning = fx.planning("planning");
    let running = fx.inprogress("running");
    let finished = fx.done("finished");
    let open_dep = fx.planning("open dependency");

    let blocked_ready = fx.ready("blocked ready");
    fx.relate(&blocked_ready, RelationKind::DependsOn, &open_dep);
    // Queued behind in-flight work: queue allowed it, but it is not ready to start.
    let waiting_queued = fx.ready("waiting queued");
    fx.relate(&waiting_queued, RelationKind::DependsOn, &running);
    yoi_store::ops::queue(&fx.ws, &alice(5), waiting_queued.as_str(), &plain()).unwrap();
    // A finished dependency does not block.
    let after_done = fx.ready("after done");
    fx.relate(&after_done, RelationKind::DependsOn, &finished);

    let ready = list(
        &fx.ws,
        &ListFilter {
            ready: true,
            ..ListFilter::default()
        },
    )
    .unwrap();
    assert_eq!(
        ids(&ready),
        sorted(vec![free_ready, free_queued, after_done])
    );
    assert!(ready.iter().all(|s| s.blockers.is_empty()));
}

#[test]
fn blocked_lists_tickets_with_their_blockers() {
    let fx = Fx::new();
    let dep = fx.planning("dependency");
    let blocker_ticket = fx.queued("blocker");
    let waiter = fx.ready("waiter");
    fx.relate(&waiter, RelationKind::DependsOn, &dep);
    fx.relate(&blocker_ticket, RelationKind::Blocks, &waiter);
    let _free = fx.ready("free");
    // A closed ticket with an open dependency is not reported.
    let old = fx.planning("old");
    fx.relate(&old, RelationKind::DependsOn, &dep);
    yoi_store::ops::cancel(&fx.ws, &alice(6), old.as_str(), &resolution("Dropped.")).unwrap();

    let blocked = list(
        &fx.ws,
        &ListFilter {
            blocked: true,
            ..ListFilter::default()
        },
    )
    .unwrap();
    assert_eq!(ids(&blocked), vec![waiter.clone()]);
    let mut want = vec![
        blocker(&dep, "depends_on", Some(State::Planning)),
        blocker(&blocker_ticket, "blocked_by", Some(State::Queued)),
    ];
    want.sort();
    assert_eq!(blocked[0].blockers, want);
    let text: Vec<String> = blocked[0].blockers.iter().map(|b| b.to_string()).collect();
    assert!(text.contains(&format!("{dep} via depends_on (state: planning)")));
    assert!(text.contains(&format!("{blocker_ticket} via blocked_by (state: queued)")));
}

#[test]
fn relation_view_names_inverses_and_raises_notices() {
    let fx = Fx::new();
    let hub = fx.planning("hub");
    let dep = fx.planning("dep");
    let blocked = fx.planning("blocked");
    let related = fx.planning("related");
    let old = fx.planning("old");
    let original = fx.planning("original");
    fx.relate(&hub, RelationKind::DependsOn, &dep);
    fx.relate(&hub, RelationKind::Blocks, &blocked);
    fx.relate(&hub, RelationKind::Related, &related);
    fx.relate(&hub, RelationKind::Supersedes, &old);
    fx.relate(&hub, RelationKind::DuplicateOf, &original);

    let seen_from = |id: &TicketId| {
        let view = relation_view(&fx.ws, id).unwrap();
        assert_eq!(view.relations.len(), 1, "{:?}", view.relations);
        let r = &view.relations[0];
        assert_eq!(r.other, hub);
        assert_eq!(r.direction, "incoming");
        assert_eq!(r.other_state, Some(State::Planning));
        (r.name.clone(), view.notices)
    };
    assert_eq!(seen_from(&dep), ("dependency_of".to_string(), vec![]));
    assert_eq!(seen_from(&blocked), ("blocked_by".to_string(), vec![]));
    assert_eq!(seen_from(&related), ("related".to_string(), vec![]));
    assert_eq!(
        seen_from(&old),
        (
            "superseded_by".to_string(),
            vec![format!(
                "superseded by {hub}: verify the replacement before routing"
            )]
        )
    );
    assert_eq!(
        seen_from(&original),
        (
            "duplicated_by".to_string(),
            vec![format!(
                "duplicated by {hub}: avoid a duplicate implementation"
            )]
        )
    );

    let view = relation_view(&fx.ws, &hub).unwrap();
    assert_eq!(view.state, State::Planning);
    let mut names: Vec<&str> = view.relations.iter().map(|r| r.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "blocks",
            "depends_on",
            "duplicate_of",
            "related",
            "supersedes"
        ]
    );
    assert!(view.relations.iter().all(|r| r.direction == "outgoing"));
    let mut notices = view.notices.clone();
    notices.sort();
    assert_eq!(
        notices,
        vec![
            format!("duplicate of {original}: avoid a duplicate implementation"),
            format!("supersedes {old}: verify the replacement before routing"),
        ]
    );
    // Only the dependency blocks the hub; `blocks` blocks the other end.
    assert_eq!(
        view.blockers,
        vec![blocker(&dep, "depends_on", Some(State::Planning))]
    );
    let blocked_view = relation_view(&fx.ws, &blocked).unwrap();
    assert_eq!(
        blocked_view.blockers,
        vec![blocker(&hub, "blocked_by", Some(State::Planning))]
    );
}

#[test]
fn relation_view_says_whether_queue_would_pass() {
    let fx = Fx::new();
    let dep = fx.ready("dep");
    let waiter = fx.ready("waiter");
    fx.relate(&waiter, RelationKind::DependsOn, &dep);

    let view = relation_view(&fx.ws, &waiter).unwrap();
    assert!(!view.can_queue);
    assert_eq!(
        view.queue_refusal,
        Some(format!("blocked by {dep} via depends_on (state: ready)"))
    );
    let err = yoi_store::ops::queue(&fx.ws, &alice(5), waiter.as_str(), &plain()).unwrap_err();
    assert!(matches!(err, yoi_store::StoreError::Blocked { .. }));

    // In flight: queue passes, the blocker is still listed.
    yoi_store::ops::queue(&fx.ws, &alice(5), dep.as_str(), &plain()).unwrap();
    let view = relation_view(&fx.ws, &waiter).unwrap();
    assert!(view.can_queue);
    assert_eq!(view.queue_refusal, None);
    assert_eq!(
        view.blockers,
        vec![blocker(&dep, "depends_on", Some(State::Queued))]
    );
    yoi_store::ops::queue(&fx.ws, &alice(6), waiter.as_str(), &plain()).unwrap();

    // A ticket with nothing in its way.
    let lone = fx.planning("lone");
    let view = relation_view(&fx.ws, &lone).unwrap();
    assert!(view.can_queue && view.blockers.is_empty() && view.relations.is_empty());
}
