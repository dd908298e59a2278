//! A deterministic simulation of yoi's whole loop (issue 15), after FoundationDB's and
//! TigerBeetle's: one seeded scheduler drives the real engine — the orchestrator step, the
//! lease sweep, the flow engine and merge, the store on real files and the real SQLite index —
//! with people, pods, git events, server restarts and crashes at every write point
//! (`yoi_store::testpoint`), under a simulated clock, and checks the invariants after every
//! step. A failing seed prints its schedule and a shrunk reproduction; `yoi-sim --seed N`
//! replays one run. docs/simulation.md says what is simulated and what is not.

pub mod schedule;
pub mod world;

use std::time::Instant;

pub use schedule::{generate, parse, render, Action};
pub use world::{Broken, Stats, World};

/// An invariant broken at a step of a schedule.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The step (0-based) after which the check failed; the schedule's length for the checks
    /// at its end.
    pub step: usize,
    pub action: Option<Action>,
    pub kind: &'static str,
    pub what: String,
    /// The last lines of what happened.
    pub trace: Vec<String>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.action {
            Some(a) => write!(
                f,
                "[{}] after step {} ({a}): {}",
                self.kind, self.step, self.what
            ),
            None => write!(f, "[{}] at the end: {}", self.kind, self.what),
        }
    }
}

/// Run `actions` in a new world, then settle it and run the final checks.
pub fn run(actions: &[Action]) -> Result<Stats, Violation> {
    let fail = |w: Option<&World>, step: usize, action: Option<Action>, b: Broken| Violation {
        step,
        action,
        kind: b.kind,
        what: b.what,
        trace: w
            .map(|w| w.trace.iter().rev().take(60).rev().cloned().collect())
            .unwrap_or_default(),
    };
    let mut w = World::new().map_err(|b| fail(None, 0, None, b))?;
    for (i, a) in actions.iter().enumerate() {
        if let Err(b) = w.step(*a) {
            return Err(fail(Some(&w), i, Some(*a), b));
        }
    }
    if let Err(b) = w.settle() {
        return Err(fail(Some(&w), actions.len(), None, b));
    }
    Ok(w.stats.clone())
}

/// A shorter schedule that breaks the same invariant (same kind): cut after the failing step,
/// then drop chunks of halving size while it still fails (delta debugging). `budget` bounds
/// the runs tried.
pub fn shrink(actions: &[Action], first: &Violation, budget: usize) -> (Vec<Action>, Violation) {
    let mut best: Vec<Action> = actions[..(first.step + 1).min(actions.len())].to_vec();
    let mut found = first.clone();
    let mut runs = 0;
    let mut chunk = best.len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        let mut progressed = false;
        while i < best.len() && runs < budget {
            let mut trial = best.clone();
            trial.drain(i..(i + chunk).min(trial.len()));
            runs += 1;
            match run(&trial) {
                Err(v) if v.kind == first.kind => {
                    trial.truncate((v.step + 1).min(trial.len()));
                    best = trial;
                    found = v;
                    progressed = true;
                }
                _ => i += chunk,
            }
        }
        if runs >= budget || (chunk == 1 && !progressed) {
            break;
        }
        if !progressed {
            chunk = (chunk / 2).max(1);
        }
    }
    (best, found)
}

/// What a batch of seeds did.
#[derive(Debug, Default)]
pub struct Batch {
    pub schedules: u64,
    pub stats: Stats,
    pub failures: Vec<(u64, Violation)>,
    pub seconds: f64,
}

/// Run the schedules of `seeds` (`steps` actions each) on `jobs` threads.
pub fn batch(seeds: std::ops::Range<u64>, steps: usize, jobs: usize) -> Batch {
    let started = Instant::now();
    let next = std::sync::atomic::AtomicU64::new(seeds.start);
    let out = std::sync::Mutex::new(Batch::default());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if seed >= seeds.end {
                    world::forget_base_repo();
                    break;
                }
                let result = run(&generate(seed, steps));
                let mut b = out.lock().unwrap_or_else(|p| p.into_inner());
                b.schedules += 1;
                match result {
                    Ok(st) => b.stats.add(&st),
                    Err(v) => b.failures.push((seed, v)),
                }
            });
        }
    });
    let mut b = out.into_inner().unwrap_or_else(|p| p.into_inner());
    b.failures.sort_by_key(|(s, _)| *s);
    b.seconds = started.elapsed().as_secs_f64();
    b
}
