//! Issue 38, item 7, for routing: a ticket whose item.md, relations.json or plan file cannot
//! be read stops neither the routing snapshot nor the queue view, is not routed itself, and as
//! a blocker it still blocks, finished or not.

use yoi_core::decision::RoutingDecision;
use yoi_engine::routing::{self as router, Snapshot};

mod common;

use common::{Fixture, BRIEF};

#[test]
fn a_broken_ticket_stops_neither_routing_nor_the_queue_view() {
    let f = Fixture::new();
    let ready = f.queued("Routable", BRIEF, &[]);
    let broken = f.queued("Broken later", BRIEF, &[]);
    let waiting = f.queued("Waits on the broken one", BRIEF, &[&broken]);
    let item = f.ws.path_of(&broken, "item.md");
    let text = std::fs::read_to_string(&item).unwrap();
    std::fs::write(&item, text.replace("state: queued", "state: [queued")).unwrap();

    let snap = Snapshot::load(&f.ws).expect("the snapshot skips the broken ticket");
    assert!(!snap.items.contains_key(&broken));
    assert!(snap.items.contains_key(&ready));

    let d = router::decide(&f.ws, &ready, 4).unwrap().unwrap();
    assert!(
        matches!(d, RoutingDecision::ImplementationReady { .. }),
        "{d:?}"
    );
    let d = router::decide(&f.ws, &waiting, 4).unwrap().unwrap();
    assert!(
        matches!(d, RoutingDecision::BlockedByDependency { .. }),
        "a broken blocker still blocks: {d:?}"
    );

    let q = router::view::queue_view(&f.ws, 4, 50).expect("the queue page's view is served");
    let listed: Vec<_> = q.queued.iter().map(|e| e.view.ticket.clone()).collect();
    assert_eq!(listed, [ready, waiting]);
}

/// Hand-edit ticket `id`'s item.md from queued to closed: a finished blocker.
fn finish_by_hand(f: &Fixture, id: &yoi_core::TicketId) {
    let item = f.ws.path_of(id, "item.md");
    let text = std::fs::read_to_string(&item).unwrap();
    std::fs::write(&item, text.replace("state: queued", "state: closed")).unwrap();
}

#[test]
fn a_damaged_relations_plan_or_thread_file_breaks_its_ticket_and_a_finished_blocker_blocks() {
    let f = Fixture::new();
    let ready = f.queued("Routable", BRIEF, &[]);
    let relations_blocker = f.queued("Relations damaged", BRIEF, &[]);
    let plan_blocker = f.queued("Plan torn", BRIEF, &[]);
    let waits_on_relations = f.queued("Waits on relations", BRIEF, &[&relations_blocker]);
    let waits_on_plan = f.queued("Waits on the plan", BRIEF, &[&plan_blocker]);
    let own_plan = f.queued("Own plan torn", BRIEF, &[]);
    let thread_blocker = f.queued("Thread not UTF-8", BRIEF, &[]);
    let waits_on_thread = f.queued("Waits on the thread", BRIEF, &[&thread_blocker]);
    finish_by_hand(&f, &relations_blocker);
    finish_by_hand(&f, &plan_blocker);
    finish_by_hand(&f, &thread_blocker);
    for waiter in [&waits_on_relations, &waits_on_plan, &waits_on_thread] {
        let d = router::decide(&f.ws, waiter, 8).unwrap().unwrap();
        assert!(
            matches!(d, RoutingDecision::ImplementationReady { .. }),
            "finished blockers block nothing yet: {d:?}"
        );
    }

    std::fs::write(
        f.ws.path_of(&relations_blocker, "artifacts/relations.json"),
        "{ \"version\": 1, oops",
    )
    .unwrap();
    let torn = "{\"id\":\"01JDX3V8Q4R5S6T7V8W9XAYB";
    for id in [&plan_blocker, &own_plan] {
        std::fs::write(f.ws.path_of(id, "artifacts/orchestration-plan.jsonl"), torn).unwrap();
    }
    let thread = f.ws.path_of(&thread_blocker, "thread.md");
    let mut bytes = std::fs::read(&thread).unwrap();
    bytes.extend_from_slice(b"bad \xff bytes\n");
    std::fs::write(&thread, bytes).unwrap();

    let snap = Snapshot::load(&f.ws).expect("a damaged relations.json stops no snapshot");
    assert!(!snap.items.contains_key(&relations_blocker));
    assert!(snap.items.contains_key(&ready));
    let d = router::decide(&f.ws, &ready, 8).unwrap().unwrap();
    assert!(
        matches!(d, RoutingDecision::ImplementationReady { .. }),
        "{d:?}"
    );
    for (waiter, blocker) in [
        (&waits_on_relations, &relations_blocker),
        (&waits_on_plan, &plan_blocker),
        (&waits_on_thread, &thread_blocker),
    ] {
        let d = router::decide(&f.ws, waiter, 8).unwrap().unwrap();
        match d {
            RoutingDecision::BlockedByDependency { blockers } => {
                assert_eq!(blockers.len(), 1, "{blockers:?}");
                assert_eq!(&blockers[0].ticket, blocker);
                assert_eq!(
                    blockers[0].state, None,
                    "a broken blocker has no known state"
                );
            }
            d => panic!("a broken blocker still blocks: {d:?}"),
        }
    }
    // A queued ticket whose own plan file is torn is broken: deciding names the file.
    let plan_path =
        f.ws.path_of(&own_plan, "artifacts/orchestration-plan.jsonl");
    match router::decide(&f.ws, &own_plan, 8) {
        Err(yoi_store::StoreError::Invalid { path, line, .. }) => {
            assert_eq!(path, plan_path);
            assert_eq!(line, Some(1));
        }
        other => panic!("{other:?}"),
    }
    let b = f.ws.diagnose(&own_plan).expect("it is broken");
    assert_eq!(b.check, "plan.parse");
    let b = f.ws.diagnose(&relations_blocker).expect("it is broken");
    assert_eq!(b.check, "relations.parse");

    let q = router::view::queue_view(&f.ws, 8, 50).expect("the queue page's view is served");
    let listed: Vec<_> = q.queued.iter().map(|e| e.view.ticket.clone()).collect();
    assert_eq!(
        listed,
        [ready, waits_on_relations, waits_on_plan, waits_on_thread]
    );
}
