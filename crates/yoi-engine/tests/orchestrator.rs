//! The orchestrator driven step by step with a fake clock, on a real repository and database:
//! the catch-up after a (re)start, retry backoff, the circuit opening after three failures, a
//! person's retry, and a restart in the middle of a pass. Time moves only when the test moves
//! it; nothing sleeps.

mod common;

use std::cell::Cell;

use common::{now, Fixture, BRIEF};
use yoi_core::decision::read_decision;
use yoi_core::relation::RelationKind;
use yoi_core::thread::EventKind;
use yoi_core::{Principal, State, TicketId, Timestamp};
use yoi_engine::routing::{Orchestrator, PassHooks, RouteConfig, StepEnv, StepOutcome};
use yoi_store::ops::{self, CreateRequest, RelationRequest, TransitionRequest};
use yoi_store::Ctx;

const BACKOFF_MS: u64 = 2_000;

/// A clock the test sets.
struct FakeClock {
    ms: Cell<i64>,
}

impl FakeClock {
    fn new() -> FakeClock {
        FakeClock {
            ms: Cell::new(now().unix_millis()),
        }
    }

    fn at(&self, offset_ms: i64) -> Timestamp {
        self.ms.set(now().unix_millis() + offset_ms);
        self.now()
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_unix_millis(self.ms.get())
    }
}

/// One step at `offset_ms` after the fixture's time, never stopping.
fn step(f: &Fixture, o: &mut Orchestrator, clock: &FakeClock, offset_ms: i64) -> StepOutcome {
    step_until(f, o, clock, offset_ms, &|| false)
}

fn step_until(
    f: &Fixture,
    o: &mut Orchestrator,
    clock: &FakeClock,
    offset_ms: i64,
    stop: &dyn Fn() -> bool,
) -> StepOutcome {
    let at = clock.at(offset_ms);
    let turn = || -> Box<dyn std::any::Any> { Box::new(()) };
    let now = || clock.now();
    let env = StepEnv {
        ws: &f.ws,
        db: &f.db,
        hooks: PassHooks {
            turn: &turn,
            stop,
            clock: &now,
        },
    };
    o.step(&env, at)
}

fn orchestrator(f: &Fixture) -> Orchestrator {
    Orchestrator::new(RouteConfig::of(&f.ws), BACKOFF_MS)
}

/// The kinds of the orchestrator's decisions on `id`, in order.
fn kinds(f: &Fixture, id: &TicketId) -> Vec<String> {
    f.decisions(id)
        .iter()
        .filter_map(|b| read_decision(b).map(|r| r.kind))
        .collect()
}

fn attention_events(f: &Fixture, id: &TicketId) -> usize {
    f.ws.read_thread(id)
        .unwrap()
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Attention)
        .count()
}

/// Put a plain file where the ticket's worktree goes, so acceptance fails at `add_worktree`.
fn block_worktree_path(f: &Fixture, id: &TicketId, title: &str) -> std::path::PathBuf {
    let root = f.worktree_root();
    std::fs::create_dir_all(&root).unwrap();
    let path = root.join(yoi_engine::routing::work_name(id, title));
    std::fs::write(&path, "in the way\n").unwrap();
    path
}

#[test]
fn a_failed_acceptance_backs_off_doubling_and_three_in_a_row_open_the_circuit() {
    let f = Fixture::new();
    let id = f.queued("in the way", BRIEF, &[]);
    let blocker = block_worktree_path(&f, &id, "in the way");
    let clock = FakeClock::new();
    let mut o = orchestrator(&f);

    // The first step is the catch-up: it routes the queued ticket, which fails, and holds it.
    let out = step(&f, &mut o, &clock, 0);
    assert_eq!((out.routed, out.wrote), (1, true));
    assert_eq!(kinds(&f, &id), ["acceptance_failed"]);
    let due = now().unix_millis() + BACKOFF_MS as i64;
    assert_eq!(o.holds().get(&id), Some(&due));
    assert_eq!(out.next_due_ms, Some(due));

    // Until the backoff ends the ticket is left alone, whatever steps run.
    let out = step(&f, &mut o, &clock, 1_999);
    assert_eq!((out.routed, out.wrote), (0, false));
    assert_eq!(kinds(&f, &id).len(), 1);

    // Then it is routed again, fails again, and waits twice as long.
    let out = step(&f, &mut o, &clock, 2_000);
    assert_eq!(out.routed, 1);
    assert_eq!(kinds(&f, &id), ["acceptance_failed", "acceptance_failed"]);
    assert_eq!(
        o.holds().get(&id),
        Some(&(now().unix_millis() + 2_000 + 2 * BACKOFF_MS as i64))
    );
    assert_eq!(step(&f, &mut o, &clock, 5_999).routed, 0);

    // The third failure in a row opens the circuit: a decision, an attention event, no hold.
    let out = step(&f, &mut o, &clock, 6_000);
    assert_eq!(out.routed, 1);
    assert_eq!(
        kinds(&f, &id),
        [
            "acceptance_failed",
            "acceptance_failed",
            "acceptance_failed",
            "circuit_open"
        ]
    );
    assert_eq!(attention_events(&f, &id), 1);
    assert!(o.holds().is_empty());
    assert_eq!(o.status().acceptance_failures, 3);

    // An hour later nothing has been dispatched: the circuit waits for a person.
    for offset in [60_000, 3_600_000] {
        step(&f, &mut o, &clock, offset);
    }
    assert_eq!(kinds(&f, &id).len(), 4);
    assert_eq!(f.state(&id), State::Queued);

    // A person clears the cause and retries: the retry event wakes the ticket, which is accepted.
    std::fs::remove_file(&blocker).unwrap();
    let ctx = Ctx::new(Principal::human("alice"), clock.at(3_600_001));
    ops::retry(&f.ws, &ctx, id.as_str(), Some("moved the file away")).unwrap();
    let out = step(&f, &mut o, &clock, 3_600_002);
    assert_eq!(out.routed, 1);
    assert_eq!(f.state(&id), State::Inprogress);
    assert_eq!(
        kinds(&f, &id).last().map(String::as_str),
        Some("implementation_ready")
    );
    assert_eq!(o.status().accepted, 1);
}

#[test]
fn a_restart_in_the_middle_of_a_pass_routes_the_rest_once_and_repeats_nothing() {
    let f = Fixture::new();
    // Three queued tickets waiting on one that is still being planned.
    let ctx = f.human();
    let open = ops::create(
        &f.ws,
        &ctx,
        &CreateRequest {
            title: "still planning".into(),
            body: BRIEF.into(),
            depends_on: vec![],
        },
    )
    .unwrap()
    .ticket;
    let ids: Vec<TicketId> = (0..3)
        .map(|i| {
            let id = f.queued(&format!("waiting {i}"), BRIEF, &[]);
            let req = RelationRequest {
                kind: RelationKind::DependsOn,
                target: open.to_string(),
                note: None,
            };
            ops::add_relation(&f.ws, &ctx, id.as_str(), &req).unwrap();
            id
        })
        .collect();
    let clock = FakeClock::new();

    // The server is closing after the first ticket of the catch-up pass.
    let mut o = orchestrator(&f);
    let asked = Cell::new(0);
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() > 1
    };
    let out = step_until(&f, &mut o, &clock, 0, &stop);
    assert!(out.stopped);
    assert_eq!(out.acknowledged, 0, "a stopped pass leaves its events");
    let decided: usize = ids.iter().map(|id| kinds(&f, id).len()).sum();
    assert_eq!(decided, 1);

    // A new orchestrator is a restart: its catch-up routes every queued ticket, and the one
    // already decided is not announced again.
    let mut o = orchestrator(&f);
    let out = step(&f, &mut o, &clock, 1_000);
    assert!(
        out.events > 0,
        "the events left by the stopped pass are delivered"
    );
    assert_eq!(out.acknowledged, out.events);
    for id in &ids {
        assert_eq!(kinds(&f, id), ["blocked_by_dependency"], "{id}");
    }
    // Its own decisions come back as events and route nothing; then it is at a fixed point.
    let out = step(&f, &mut o, &clock, 2_000);
    assert!(!out.wrote);
    assert_eq!(step(&f, &mut o, &clock, 3_000).events, 0);

    // Closing the blocker is an event that routes every queued ticket: all three start.
    ops::cancel(
        &f.ws,
        &ctx,
        open.as_str(),
        &TransitionRequest {
            resolution: Some("not needed".into()),
            ..TransitionRequest::default()
        },
    )
    .unwrap();
    let out = step(&f, &mut o, &clock, 4_000);
    assert_eq!(out.routed, 3);
    for id in &ids {
        assert_eq!(f.state(id), State::Inprogress, "{id}");
        assert_eq!(
            kinds(&f, id),
            ["blocked_by_dependency", "implementation_ready"]
        );
    }
}

/// Work on the ticket's branch, as the server records a coder's result: a commit made in the
/// worktree of its latest acceptance, and the branch moved to it. Returns the commit.
fn work_on_branch(f: &Fixture, id: &TicketId, file: &str) -> String {
    let plan = f.ws.read_plan(id).unwrap();
    let accepted = yoi_store::latest_accepted(plan.iter()).unwrap();
    let branch = accepted.branch.clone().unwrap();
    let wt = f.repo.join(accepted.worktree.as_deref().unwrap());
    std::fs::write(wt.join(file), "work\n").unwrap();
    yoi_testkit::git(&wt, &["add", file]);
    yoi_testkit::git(&wt, &["commit", "-q", "-m", file]);
    let head = yoi_testkit::git(&wt, &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    yoi_testkit::git(
        &f.repo,
        &["update-ref", &format!("refs/heads/{branch}"), &head],
    );
    head
}

/// A person takes an in-progress ticket back to planning and queues it again.
fn return_and_requeue(f: &Fixture, id: &TicketId, at: Timestamp) {
    let ctx = Ctx::new(Principal::human("alice"), at);
    let back = TransitionRequest {
        reason: Some("rethink".into()),
        ..TransitionRequest::default()
    };
    ops::return_to_planning(&f.ws, &ctx, id.as_str(), &back).unwrap();
    let req = TransitionRequest::default();
    ops::mark_ready(&f.ws, &ctx, id.as_str(), &req).unwrap();
    ops::queue(&f.ws, &ctx, id.as_str(), &req).unwrap();
}

/// A ticket returned to planning with work on its branch and queued again is accepted again by
/// the running orchestrator's next step, and by a restarted one's catch-up, the same way: on
/// the branch it had, from that branch's head (docs/routing.md, "A ticket accepted again").
/// Before, the branch it had made failed every acceptance (`create_branch`: it exists at
/// another commit) until the circuit opened, live or restarted.
#[test]
fn a_ticket_queued_again_is_accepted_again_live_and_after_a_restart_alike() {
    let f = Fixture::new();
    let id = f.queued("Twice", BRIEF, &[]);
    let clock = FakeClock::new();
    let mut o = orchestrator(&f);
    step(&f, &mut o, &clock, 0);
    assert_eq!(f.state(&id), State::Inprogress);
    let first = work_on_branch(&f, &id, "one.txt");

    // Live: the same orchestrator, woken by the queue event.
    return_and_requeue(&f, &id, clock.at(1_000));
    let out = step(&f, &mut o, &clock, 1_001);
    assert_eq!(out.routed, 1, "{out:?}");
    assert_eq!(f.state(&id), State::Inprogress, "{:?}", kinds(&f, &id));
    let plan = f.ws.read_plan(&id).unwrap();
    let live = yoi_store::latest_accepted(plan.iter()).unwrap().clone();
    assert_eq!(live.base_commit.as_deref(), Some(first.as_str()));
    let second = work_on_branch(&f, &id, "two.txt");

    // Restarted: a new orchestrator's catch-up.
    return_and_requeue(&f, &id, clock.at(2_000));
    let mut o = orchestrator(&f);
    step(&f, &mut o, &clock, 2_001);
    assert_eq!(f.state(&id), State::Inprogress, "{:?}", kinds(&f, &id));
    let plan = f.ws.read_plan(&id).unwrap();
    let restarted = yoi_store::latest_accepted(plan.iter()).unwrap().clone();
    assert_eq!(restarted.branch, live.branch);
    assert_eq!(restarted.base_commit.as_deref(), Some(second.as_str()));
    assert!(!kinds(&f, &id).iter().any(|k| k == "acceptance_failed"));
}
