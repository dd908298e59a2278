//! The simulated world: a real git repository with a yoi workspace on tmpfs, its real SQLite
//! index, the real orchestrator, lease sweep and flow engine, and pods that are clients of the
//! same engine operations the API calls. The clock is simulated; everything else is real.
//!
//! This file holds the world's state, its clock and [`World::step`], the one way an action
//! runs: the clock moves 10 ms, the action runs, a simulated crash unwinds back here and the
//! world restarts, and then the checks that action can break run. A step answers with the
//! first invariant it found broken. The actions and the checks live in the modules below, one
//! seam each:
//!
//! - `setup`: a new world, its restarts and its teardown;
//! - `people`: what people do, held against the model as it happens;
//! - `engine_loops`: the router's step and the service's sweep;
//! - `pods`: the pods' claims, heartbeats and results, the stale-result check among them;
//! - `remote`: pods on other hosts, which fetch into a cache of their own and push their
//!   result to an attempt ref, with pushes and reports lost, late or in flight, and the checks
//!   that nothing acknowledged is lost and no attempt ref outlives its attempt;
//! - `faults`: git events on the target and crashes at write points;
//! - `forge`, `forge_hub` and `forge_invariants`: tickets that end in a pull request, driven
//!   by the engine's `forge_tick` against a simulated GitHub, with CI, people and webhooks,
//!   and the three invariants of the forge;
//! - `reference_model`: which actor an action is and the edges it may take;
//! - `invariants`: the checks after every step;
//! - `notifications`: each sweep's notifications to a simulated channel, and the checks that
//!   the inbox's open questions are the threads' and that nothing is told twice;
//! - `procedures`: workflows invoked, offered, accepted and rejected, and the check that no
//!   workflow or flow file changes without a person's approval;
//! - `settle`: the end of a schedule and the checks that hold only then.
//!
//! Everything that decides behaviour follows from the schedule: the clock, the order of
//! tickets, the picks of tickets and pods. Only the random bits of ids, the temporary paths and
//! the index's own stamps differ between two runs of a seed; `tests/sim.rs` checks that a seed
//! replays to the same counts.

mod engine_loops;
mod faults;
mod forge;
mod forge_hub;
mod forge_invariants;
mod invariants;
mod notifications;
mod people;
mod pods;
mod procedures;
mod reference_model;
mod remote;
mod settle;
mod setup;
mod spending;

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;

use yoi_core::{State, TicketId, Timestamp};
use yoi_engine::assignments::LeaseConfig;

use crate::schedule::Action;
use faults::{panic_text, Faults};
use pods::Pod;
use reference_model::{actor_of, touches_assignments};
use setup::Live;

pub use faults::SimCrash;
pub use remote::RemoteStats;
pub use setup::forget_base_repo;

/// Leases short enough that a few `advance` actions run one out.
const LEASE: LeaseConfig = LeaseConfig {
    lease_ms: 10_000,
    heartbeat_ms: 2_000,
};

/// The simulated clock starts here (unix milliseconds, 2026-03-01T10:00:00Z).
const EPOCH_MS: i64 = 1_772_359_200_000;

/// An invariant that did not hold: its kind (what shrinking keeps) and what was seen.
#[derive(Debug, Clone)]
pub struct Broken {
    pub kind: &'static str,
    pub what: String,
}

fn broken(kind: &'static str, what: impl Into<String>) -> Broken {
    Broken {
        kind,
        what: what.into(),
    }
}

/// Counts over one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub steps: usize,
    pub created: usize,
    pub accepted: usize,
    pub merged: usize,
    pub crashes: usize,
    pub restarts: usize,
    pub results_applied: usize,
    pub results_refused: usize,
    /// Coder results kept without their output contract (a lenient profile's).
    pub contract_missing: usize,
    /// Failed coder attempts whose commits the next attempt starts from.
    pub work_kept: usize,
    pub human_refusals: usize,
    /// Attempts that ended on their provider's rate limit.
    pub rate_limited: usize,
    /// Claims that found work for their role and got none while a ticket was held over its
    /// budget or an agent paused.
    pub limited_claims: usize,
    /// Budgets a person added to.
    pub grants: usize,
    /// The forge's side: pull requests, CI results, people's pushes and reviews, webhooks.
    pub forge: forge::ForgeStats,
    /// Results whose agent asked a person a question (the attempt ends `blocked`).
    pub questions: usize,
    /// Questions a person answered.
    pub answers: usize,
    /// Notifications the simulated channel received.
    pub notified: usize,
    /// The remote pods' pushes, refusals and lost reports.
    pub remote: RemoteStats,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        self.steps += o.steps;
        self.created += o.created;
        self.accepted += o.accepted;
        self.merged += o.merged;
        self.crashes += o.crashes;
        self.restarts += o.restarts;
        self.results_applied += o.results_applied;
        self.results_refused += o.results_refused;
        self.contract_missing += o.contract_missing;
        self.work_kept += o.work_kept;
        self.human_refusals += o.human_refusals;
        self.rate_limited += o.rate_limited;
        self.limited_claims += o.limited_claims;
        self.grants += o.grants;
        self.forge.add(&o.forge);
        self.questions += o.questions;
        self.answers += o.answers;
        self.notified += o.notified;
        self.remote.add(&o.remote);
    }
}

/// One simulated installation. Fields drop in order: the database before its runtime, both
/// before the folder.
pub struct World {
    live: Option<Live>,
    rt: tokio::runtime::Runtime,
    faults: Arc<Faults>,
    repo: PathBuf,
    clock_ms: i64,
    tickets: Vec<TicketId>,
    pods: Vec<Pod>,
    states: BTreeMap<TicketId, State>,
    /// Tickets a person queued that have not started or left the queue since.
    queued_by_human: BTreeSet<TicketId>,
    /// Coder commits whose result was refused: never to be on their ticket's branch.
    refused: Vec<(TicketId, String)>,
    /// Results of remote pods the server acknowledged: never to leave their branch.
    acked: Vec<remote::Acked>,
    /// Every outbox row seen: seq → event id.
    outbox: BTreeMap<i64, String>,
    /// The workflow and flow files a person put there, and the offers decided.
    procedures: procedures::Procedures,
    /// The simulated GitHub and what the forge's invariants remember.
    forge: forge::ForgeSide,
    /// The simulated notification channel's receiver.
    told: notifications::Told,
    pub stats: Stats,
    /// Print each line of the trace as it happens (`YOI_SIM_TRACE=1`).
    echo: bool,
    /// What happened, most recent last (printed with a failure).
    pub trace: Vec<String>,
    _dir: tempfile::TempDir,
}

impl World {
    fn live(&self) -> &Live {
        self.live.as_ref().expect("the world is running")
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_unix_millis(EPOCH_MS + self.clock_ms)
    }

    fn note(&mut self, line: impl Into<String>) {
        let line = line.into();
        if self.echo {
            eprintln!("{line}");
        }
        self.trace.push(line);
        if self.trace.len() > 400 {
            self.trace.drain(..200);
        }
    }

    /// Run one action, then check every invariant.
    pub fn step(&mut self, action: Action) -> Result<(), Broken> {
        self.stats.steps += 1;
        self.clock_ms += 10;
        let before = self.states.clone();
        let ran = panic::catch_unwind(AssertUnwindSafe(|| self.act(action)));
        let crashed = match ran {
            Ok(result) => {
                result?;
                false
            }
            Err(p) => match p.downcast_ref::<SimCrash>() {
                Some(c) => {
                    self.note(format!("  crashed at {}", c.0));
                    self.stats.crashes += 1;
                    true
                }
                None => return Err(broken("panic", panic_text(p.as_ref()))),
            },
        };
        if crashed {
            self.restart()?;
        }
        self.observe(&before, actor_of(action))?;
        // The assignment rows and worktrees change only through the router, the sweep, pods'
        // results and claims, a person's cancel, return, reopen or retry, a restart's reindex,
        // or a crash in any of them. (A lease's heartbeat moves `lease_until` alone.) The
        // check reads every row, so it runs after those.
        if crashed || touches_assignments(action) {
            // A sweep a crash cut short has not finished its work; the next one must.
            self.check_assignments(action == Action::Sweep && !crashed)?;
        }
        self.check_branches()?;
        self.check_acked()?;
        self.check_procedures()?;
        self.check_forge()?;
        self.check_inbox()?;
        if action == Action::Sweep {
            self.check_told()?;
        }
        if crashed || action == Action::Restart {
            self.check_outbox()?;
        }
        Ok(())
    }

    /// One action, each by the module of its actor.
    fn act(&mut self, action: Action) -> Result<(), Broken> {
        use Action::*;
        self.note(format!("{action}"));
        match action {
            Create { deps } => self.create(deps),
            Edit { t } => self.edit(t),
            MarkReady { t } => self.mark_ready(t),
            Queue { t } => self.queue(t),
            Return { t } => self.return_to_planning(t),
            Cancel { t } => self.cancel(t),
            Close { t } => self.close(t),
            Reopen { t } => self.reopen(t),
            Retry { t } => self.retry(t),
            Relate { t, u } => self.relate(t, u, true),
            Unrelate { t, u } => self.relate(t, u, false),
            Invoke { t, how } => self.say(t, how),
            Offers => self.look_for_offers(),
            Accept { o } => self.decide_offer(o, true),
            Reject { o } => self.decide_offer(o, false),
            Route => {
                self.route();
                Ok(())
            }
            Sweep => {
                self.sweep();
                Ok(())
            }
            Advance { ms } => self.advance(ms),
            Claim { p } => self.claim(p),
            Heartbeat { p } => {
                self.pod_heartbeats(p);
                Ok(())
            }
            Finish { p, how } => self.pod_finishes(p, how),
            Fail { p } => self.pod_fails(p),
            PodCrash { p } => self.pod_dies(p),
            Pause { p } => {
                self.pod_pauses(p);
                Ok(())
            }
            Resume { p } => self.pod_resumes(p),
            Duplicate { p } => self.pod_resends(p),
            OldFence { p } => self.pod_sends_old_fence(p),
            TargetCommit { conflict } => self.target_commit(conflict),
            Dirty => self.dirty_target(),
            Clean => self.clean_target(),
            RaceMerge => {
                self.race_next_merge();
                Ok(())
            }
            Restart => self.restart(),
            Crash { nth } => {
                self.arm_crash(nth);
                Ok(())
            }
            RateLimit { p } => self.pod_rate_limited(p),
            Grant { t } => self.grant(t),
            CreatePr { deps } => self.create_pr_ticket(deps),
            ForgePass => self.forge_pass(),
            Ci { p, how } => {
                self.ci_reports(p, how);
                Ok(())
            }
            PersonPush { p } => self.person_pushes(p),
            PrReview { p, how } => {
                self.person_reviews(p, how);
                Ok(())
            }
            Webhook { how } => self.webhook(how),
            ForgeFault { how } => {
                self.forge_fault(how);
                Ok(())
            }
            Ask { p } => self.pod_asks(p),
            Answer { t } => self.answer(t),
            RemoteClaim { p } => self.remote_claim(p),
            RemotePush { p, how } => self.remote_push(p, how),
            RemoteLand { p } => self.remote_land(p),
            RemoteReport { p, how } => self.remote_report(p, how),
            RemoteResume { p } => self.remote_resume(p),
        }
    }

    /// Time passes in heartbeat-long slices; every pod at work (not paused) heartbeats after
    /// each.
    fn advance(&mut self, ms: u32) -> Result<(), Broken> {
        let mut left = i64::from(ms);
        while left > 0 {
            let d = left.min(LEASE.heartbeat_ms);
            self.clock_ms += d;
            left -= d;
            for k in 0..self.pods.len() {
                if self.pods[k].held.as_ref().is_some_and(|h| !h.paused) {
                    self.heartbeat(k);
                }
            }
        }
        Ok(())
    }

    fn state_of(&self, id: &TicketId) -> Result<State, Broken> {
        self.live()
            .ws
            .read_item(id)
            .map(|i| i.state)
            .map_err(|e| broken("files", format!("{id}: item.md does not read: {e}")))
    }

    /// The ticket's branch from its latest accepted plan.
    fn branch_of(&self, id: &TicketId) -> Result<Option<String>, Broken> {
        let plan = self
            .live()
            .ws
            .read_plan(id)
            .map_err(|e| broken("files", format!("{id}: the plan does not read: {e}")))?;
        Ok(yoi_engine::store::latest_accepted(plan.iter()).and_then(|p| p.branch.clone()))
    }

    fn worktree_of(&self, id: &TicketId) -> Result<Option<PathBuf>, Broken> {
        let plan = self
            .live()
            .ws
            .read_plan(id)
            .map_err(|e| broken("files", format!("{id}: the plan does not read: {e}")))?;
        Ok(yoi_engine::store::latest_accepted(plan.iter())
            .and_then(|p| p.worktree.clone())
            .map(|w| self.repo.join(w)))
    }
}
