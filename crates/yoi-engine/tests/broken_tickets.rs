//! Issue 38, item 7, for routing: a ticket whose item.md cannot be read stops neither the
//! routing snapshot nor the queue view, and as a blocker it still blocks.

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
