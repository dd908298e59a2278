//! The router's decision read from the index's routing events (`decide_with`: the circuit's
//! window and the orchestrator's latest decision, `routing::window`) is the decision reading
//! the whole thread.md gives (`decide_in`), on generated threads of 0 to 10,000 events
//! (`yoi_tests::thread_life`: circuits opened and closed, failures per step, moves out of the
//! queue and back, people's decision comments, decisions without data, events without ids).
//! Also equal: the circuit and the latest decision each path reads, which recording a decision
//! and counting failures use. The index answers only when it is current: after a hand append
//! it does not (the file is read) until the ticket is re-read, and never for a thread that did
//! not parse cleanly. The windows a routing pass reads ahead for all its long threads at once
//! agree too, and one is not used once its ticket's files moved after it was read, also by a
//! pass that is running when a person's retry arrives. Runs on SQLite and on PostgreSQL.

use yoi_core::decision::RoutingDecision;
use yoi_core::thread::{EventKind, ParsedThread};
use yoi_core::{Principal, TicketId, Timestamp};
use yoi_db::DbIndex;
use yoi_engine::routing::circuit::Circuit;
use yoi_engine::routing::window::{
    long_threads_ahead, routing_thread, routing_thread_ahead, SMALL_THREAD,
};
use yoi_engine::routing::{
    decide_in, decide_with, run_pass, PassHooks, RouteConfig, Routed, Snapshot, Targets,
};
use yoi_store::ops::{self, CreateRequest, TransitionRequest};
use yoi_store::{Ctx, Workspace};
use yoi_tests::generate::Rng;
use yoi_tests::thread_life::{append, circuit_opened, life};

const SEED: u64 = 0x5EED_2026_1205;

/// Events appended to each generated ticket's thread: short, long and very long lives.
const SIZES: [usize; 16] = [
    0, 1, 2, 3, 5, 10, 30, 100, 300, 1000, 1000, 3000, 10_000, 10_000, 57, 200,
];

const BRIEF: &str =
    "## Intent\nDo it.\n\n## Acceptance criteria\n- done\n\n## Validation\n`true`\n";

/// The orchestrator's latest decision event's body, as recording a decision reads it.
fn last_decision(thread: &ParsedThread) -> Option<String> {
    let orchestrator = Principal::orchestrator().author();
    thread
        .events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::Decision && e.author() == Some(orchestrator.as_str()))
        .map(|e| e.body.clone())
}

/// Every ticket's decision, circuit and latest decision agree between the file and the index.
/// Also the windows a pass reads ahead for all of them at once.
fn agree(ws: &Workspace, index: &DbIndex, ids: &[TicketId], max: usize) -> Vec<RoutingDecision> {
    let snap = Snapshot::load(ws).unwrap();
    let mut ahead = long_threads_ahead(ws, index, ids);
    let mut out = Vec::new();
    for id in ids {
        let files = decide_in(ws, &snap, id, max).unwrap();
        let indexed = decide_with(ws, Some(index), &snap, id, max).unwrap();
        assert_eq!(indexed, files, "{id}, max_inprogress {max}");
        let whole = ws.read_thread(id).unwrap();
        let part = routing_thread(ws, Some(index), id).unwrap();
        assert_eq!(Circuit::of(&part), Circuit::of(&whole), "{id}");
        assert_eq!(last_decision(&part), last_decision(&whole), "{id}");
        let read_ahead = routing_thread_ahead(ws, Some(index), id, ahead.remove(id)).unwrap();
        assert_eq!(Circuit::of(&read_ahead), Circuit::of(&whole), "{id}");
        assert_eq!(last_decision(&read_ahead), last_decision(&whole), "{id}");
        out.extend(files);
    }
    out
}

/// A workspace in a folder of its own with its index attached (`url`: PostgreSQL, else the
/// embedded SQLite), dropped index first, runtime last.
struct Fixture {
    index: DbIndex,
    ws: Workspace,
    dir: tempfile::TempDir,
    _rt: tokio::runtime::Runtime,
}

impl Fixture {
    fn new(url: Option<String>) -> Fixture {
        let rt = yoi_tests::runtime();
        let dir = tempfile::tempdir().unwrap();
        yoi_testkit::git(dir.path(), &["init", "-q", "-b", "main"]);
        yoi_store::init(dir.path(), "main").unwrap();
        let mut ws = yoi_tests::open(dir.path());
        ws.config.database.url = url;
        let (index, _) = DbIndex::attach(
            &mut ws,
            yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
        )
        .unwrap();
        Fixture {
            index,
            ws,
            dir,
            _rt: rt,
        }
    }
}

/// A new ticket with a complete brief, marked ready and queued by `by`.
/// A person's retry of `id`, appended to its thread by hand (with its own event id `op`).
fn retry_by_hand(root: &std::path::Path, id: &TicketId, op: &str) {
    append(
        root,
        id.as_str(),
        &[
            yoi_core::thread::Event::new(EventKind::Retry, "Retry requested.")
                .with_attr("id", op)
                .with_attr("author", "alice"),
        ],
    );
}

fn queued(ws: &Workspace, by: &Ctx, title: &str) -> TicketId {
    let req = CreateRequest {
        title: title.into(),
        body: BRIEF.into(),
        depends_on: Vec::new(),
    };
    let id = ops::create(ws, by, &req).unwrap().ticket;
    let t = TransitionRequest::default();
    ops::mark_ready(ws, by, id.as_str(), &t).unwrap();
    ops::queue(ws, by, id.as_str(), &t).unwrap();
    id
}

fn index_and_files_agree(url: Option<String>) {
    let fx = Fixture::new(url);
    let (ws, index, root) = (&fx.ws, &fx.index, fx.dir.path());
    println!("seed {SEED:#x}");
    let mut rng = Rng(SEED);

    let alice = Ctx::new(
        Principal::human("alice"),
        Timestamp::parse("2026-03-01T10:00:00Z").unwrap(),
    );
    let sizes: Vec<usize> = SIZES
        .iter()
        .copied()
        .chain((0..24).map(|_| rng.below(400) as usize))
        .collect();
    let ids: Vec<TicketId> = (0..sizes.len())
        .map(|i| queued(ws, &alice, &format!("Generated {i}")))
        .collect();
    // Through the operations the index follows every write: it answers for every ticket.
    for id in &ids {
        assert!(index.fresh_routing_events(ws, id).unwrap().is_some());
    }

    // Long lives arrive by hand, as a pull brings them; some end with the circuit opened, and
    // some of those with a person's retry after it.
    let mut events = 0;
    let mut appended = std::collections::BTreeSet::new();
    for (i, (id, n)) in ids.iter().zip(&sizes).enumerate() {
        let tag = format!("g{i}");
        let mut more = life(&mut rng, &tag, *n, i * 20_000);
        if i % 4 == 1 {
            more.extend(circuit_opened(&tag, 0));
        }
        if i % 8 == 1 {
            more.push(
                yoi_core::thread::Event::new(EventKind::Retry, "Retry requested.")
                    .with_attr("id", format!("{tag}-retry"))
                    .with_attr("author", "alice"),
            );
        }
        events += more.len();
        if !more.is_empty() {
            appended.insert(id.clone());
        }
        append(root, id.as_str(), &more);
    }
    println!("{} tickets, {events} events appended", ids.len());
    // A thread whose last event is torn: the index never answers for it.
    let torn = ids[3].clone();
    let path = ws.path_of(&torn, yoi_store::tickets::THREAD);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}<!-- event: comment id: torn auth")).unwrap();
    appended.insert(torn.clone());

    // Before the index reads the appends it does not answer: deciding reads the files.
    for id in &ids {
        let answers = index.fresh_routing_events(ws, id).unwrap().is_some();
        assert_eq!(answers, !appended.contains(id), "{id}: the index answers");
    }
    assert!(
        appended.len() > 30,
        "{} threads appended to",
        appended.len()
    );
    // No commit yet: the target ref does not resolve, so a ticket whose circuit is closed
    // fails acceptance with an attempt number counted from its circuit.
    let stale = agree(ws, index, &ids, 100);

    index.refresh(ws, &ids).unwrap();
    for id in &ids {
        let answers = index.fresh_routing_events(ws, id).unwrap().is_some();
        assert_eq!(answers, *id != torn, "{id}: the index answers");
    }
    // Read ahead, the index answers for every long thread it holds as the files are.
    let long: Vec<&TicketId> = ids
        .iter()
        .filter(|id| {
            let path = ws.path_of(id, yoi_store::tickets::THREAD);
            std::fs::metadata(path).unwrap().len() > SMALL_THREAD
        })
        .collect();
    let ahead = long_threads_ahead(ws, index, &ids);
    assert!(long.len() >= 8, "{} long threads", long.len());
    for id in &long {
        assert_eq!(ahead.contains_key(*id), **id != torn, "{id}: read ahead");
    }
    let unresolved = agree(ws, index, &ids, 100);
    assert_eq!(unresolved, stale);
    // A window read ahead is not used once its ticket's files move: a person's retry arrives
    // by hand after it was read, and the circuit it closes is closed.
    let open = ids[13].clone();
    let window = long_threads_ahead(ws, index, std::slice::from_ref(&open))
        .remove(&open)
        .expect("a 10,000-event thread is read ahead");
    let before = routing_thread_ahead(ws, Some(index), &open, Some(window.clone())).unwrap();
    assert!(
        Circuit::of(&before).open,
        "ticket 13 ends with its circuit open"
    );
    retry_by_hand(root, &open, "late-retry");
    assert!(window.clone().current(ws, &open).is_none());
    let after = routing_thread_ahead(ws, Some(index), &open, Some(window)).unwrap();
    assert!(!Circuit::of(&after).open, "the stale window was used");
    index.refresh(ws, std::slice::from_ref(&open)).unwrap();
    let waiting = agree(ws, index, &ids, 0);
    yoi_testkit::git(root, &["add", "-A"]);
    yoi_testkit::git(root, &["commit", "-q", "-m", "generated"]);
    let ready = agree(ws, index, &ids, 100);

    // What the threads give covers every situation the circuit knows.
    let kinds = |ds: &[RoutingDecision]| {
        ds.iter()
            .map(|d| d.kind().to_string())
            .collect::<std::collections::BTreeSet<_>>()
    };
    for (ds, want) in [
        (&unresolved, ["circuit_open", "acceptance_failed"]),
        (&waiting, ["circuit_open", "waiting_capacity"]),
        (&ready, ["circuit_open", "implementation_ready"]),
    ] {
        for k in want {
            assert!(kinds(ds).contains(k), "{k} among {:?}", kinds(ds));
        }
    }
    let attempts: std::collections::BTreeSet<u32> = unresolved
        .iter()
        .filter_map(|d| match d {
            RoutingDecision::AcceptanceFailed { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert!(attempts.len() >= 2, "attempt numbers {attempts:?}");
}

#[test]
fn the_routing_decision_from_the_index_equals_the_whole_thread_on_sqlite() {
    index_and_files_agree(None);
}

#[test]
fn the_routing_decision_from_the_index_equals_the_whole_thread_on_postgres() {
    index_and_files_agree(Some(yoi_testkit::pg::database()));
}

/// A routing pass reads its long threads' windows ahead, at its start. A person's retry that
/// arrives by hand while the pass runs, before the pass reaches that ticket, is what the pass
/// decides on: the circuit it closes is closed.
fn a_pass_decides_on_what_arrived_after_it_read_ahead(url: Option<String>) {
    let fx = Fixture::new(url);
    let (ws, index, root) = (&fx.ws, &fx.index, fx.dir.path());
    let now = Timestamp::parse("2026-03-01T10:00:00Z").unwrap();
    let alice = Ctx::new(Principal::human("alice"), now);
    let mut rng = Rng(SEED);
    let mut ids = Vec::new();
    for i in 0..3 {
        let id = queued(ws, &alice, &format!("Long {i}"));
        let tag = format!("p{i}");
        let mut more = life(&mut rng, &tag, 1000, i * 20_000);
        more.extend(circuit_opened(&tag, 0));
        append(root, id.as_str(), &more);
        ids.push(id);
    }
    index.refresh(ws, &ids).unwrap();
    let order = Snapshot::load(ws).unwrap().queued();
    assert_eq!(order.len(), 3);
    let last = order[2].clone();
    for id in &order {
        let path = ws.path_of(id, yoi_store::tickets::THREAD);
        assert!(std::fs::metadata(path).unwrap().len() > SMALL_THREAD);
    }
    assert_eq!(
        long_threads_ahead(ws, index, &order).len(),
        3,
        "every window can be read ahead"
    );

    let mut cfg = RouteConfig::of(ws);
    cfg.max_inprogress = 0;
    let turns = std::cell::Cell::new(0);
    let turn = || -> Box<dyn std::any::Any> {
        turns.set(turns.get() + 1);
        if turns.get() == 1 {
            retry_by_hand(root, &last, "retry-mid-pass");
        }
        Box::new(())
    };
    let hooks = PassHooks {
        turn: &turn,
        stop: &|| false,
        clock: &|| now,
    };
    let results = run_pass(ws, index, &cfg, &Targets::All, &Default::default(), &hooks).unwrap();
    let kinds: Vec<(TicketId, String)> = results
        .into_iter()
        .map(|(id, routed)| match routed.unwrap() {
            Routed::Decided { kind, .. } => (id, kind),
            other => panic!("{id}: {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            (order[0].clone(), "circuit_open".to_string()),
            (order[1].clone(), "circuit_open".to_string()),
            (last.clone(), "waiting_capacity".to_string()),
        ]
    );
}

#[test]
fn a_pass_decides_on_what_arrived_after_it_read_ahead_on_sqlite() {
    a_pass_decides_on_what_arrived_after_it_read_ahead(None);
}

#[test]
fn a_pass_decides_on_what_arrived_after_it_read_ahead_on_postgres() {
    a_pass_decides_on_what_arrived_after_it_read_ahead(Some(yoi_testkit::pg::database()));
}
