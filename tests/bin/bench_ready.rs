//! `cargo run --release -p yoi-tests --bin yoi-bench-ready [TICKETS] [RELATIONS] [RUNS]`
//!
//! In-process ready/blocked (issue 16 item 6): over TICKETS tickets (default 100,000) in a mix
//! of states and RELATIONS relations (default 300,000: depends_on on older tickets, some
//! blocks and related, grouped by source ticket as a read of every relations.json hands them
//! over), build the relation graph from the relations the read owns, then the blocked set
//! (an open blocker in the way) and the ready set (ready or queued, nothing open in the way) —
//! what `yoi ticket list --ready` and `--blocked` select — and checks the sets against asking
//! each ticket on its own. Prints the median and the spread of
//! RUNS runs (default 9) for the graph build, the derivation and both.

use std::time::Instant;

use yoi_core::relation::{IdMap, Relation, RelationGraph, RelationKind};
use yoi_core::{State, TicketId, Timestamp};

struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}

use yoi_tests::median;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers: TICKETS RELATIONS RUNS"))
        .collect();
    let tickets = args.first().copied().unwrap_or(100_000);
    let relations = args.get(1).copied().unwrap_or(300_000);
    let runs = args.get(2).copied().unwrap_or(9);
    let mut rng = Lcg(42);
    let base = Timestamp::parse("2026-01-01T00:00:00Z")
        .unwrap()
        .unix_millis();
    let ids: Vec<TicketId> = (0..tickets)
        .map(|i| {
            let t =
                std::time::UNIX_EPOCH + std::time::Duration::from_millis((base + i as i64) as u64);
            TicketId::from_ulid(ulid::Ulid::from_datetime(t))
        })
        .collect();
    // Older tickets are more often finished, as in a real backlog.
    let states: IdMap<State> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let old = i < tickets / 2;
            let s = match (old, rng.below(10)) {
                (true, 0..=6) => State::Done,
                (true, 7) => State::Closed,
                (_, 0..=1) => State::Planning,
                (_, 2..=4) => State::Ready,
                (_, 5..=6) => State::Queued,
                (_, 7) => State::Inprogress,
                (_, 8) => State::Done,
                _ => State::Closed,
            };
            (id.key(), s)
        })
        .collect::<IdMap<State>>();
    // The tickets as a read of every item.md hands them over: id and state together.
    let items: Vec<(TicketId, State)> = ids
        .iter()
        .map(|id| (id.clone(), states[&id.key()]))
        .collect();
    let at = Timestamp::parse("2026-01-02T00:00:00Z").unwrap();
    // Grouped by source ticket, in id order, as a read of every relations.json hands them over.
    let mut sources: Vec<usize> = (0..relations)
        .map(|_| 1 + rng.below(tickets as u64 - 1) as usize)
        .collect();
    sources.sort_unstable();
    let rels: Vec<Relation> = sources
        .into_iter()
        .map(|a| {
            // Mostly recent dependencies, some far back.
            let back = if rng.below(4) == 0 {
                rng.below(a as u64) as usize
            } else {
                rng.below(a.min(200) as u64) as usize
            };
            let b = a - 1 - back.min(a - 1);
            let (ticket_id, kind, target) = match rng.below(10) {
                0 => (ids[b].clone(), RelationKind::Blocks, ids[a].clone()),
                1 => (ids[a].clone(), RelationKind::Related, ids[b].clone()),
                _ => (ids[a].clone(), RelationKind::DependsOn, ids[b].clone()),
            };
            Relation {
                ticket_id,
                kind,
                target,
                note: None,
                author: "human:alice".into(),
                at,
            }
        })
        .collect();

    let (mut build, mut derive, mut total) = (Vec::new(), Vec::new(), Vec::new());
    let mut counts = (0, 0);
    for _ in 0..runs {
        // The relations as a read hands them over (owned); the copy is not timed.
        let owned = rels.clone();
        let t0 = Instant::now();
        let graph = RelationGraph::from_owned(owned);
        let t1 = Instant::now();
        let (mut ready, mut blocked) = (0usize, 0usize);
        let waiting = graph.blocked_set(|t| states.get(&t.key()).copied());
        for (id, state) in &items {
            let state = *state;
            if state.is_finished() {
                continue;
            }
            if waiting.contains(id) {
                blocked += 1;
            } else if matches!(state, State::Ready | State::Queued) {
                ready += 1;
            }
        }
        let t2 = Instant::now();
        counts = (ready, blocked);
        // The same answer as asking each ticket on its own (not timed).
        let one_by_one = items
            .iter()
            .filter(|(id, s)| {
                !s.is_finished() && graph.is_blocked(id, |t| states.get(&t.key()).copied())
            })
            .count();
        assert_eq!(
            one_by_one, blocked,
            "the blocked set disagrees with is_blocked"
        );
        build.push((t1 - t0).as_secs_f64() * 1e3);
        derive.push((t2 - t1).as_secs_f64() * 1e3);
        total.push((t2 - t0).as_secs_f64() * 1e3);
        drop(graph);
    }
    println!(
        "{tickets} tickets, {relations} relations: {} ready, {} blocked",
        counts.0, counts.1
    );
    for (name, v) in [
        ("graph build", build),
        ("blocked and ready sets", derive),
        ("both", total),
    ] {
        let (m, lo, hi) = median(v);
        println!("  {name}: median {m:.1} ms (min {lo:.1}, max {hi:.1}, {runs} runs)");
    }
}
