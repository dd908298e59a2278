//! The orchestrator (DESIGN §5) as a step function: [`Orchestrator::step`] reads the outbox as
//! consumer [`CONSUMER`], routes the queued tickets the events concern, and acknowledges or
//! fails the events. It takes the time as an argument and keeps everything it remembers
//! between steps in [`Orchestrator`], so a test drives it step by step with a fake clock and
//! `yoi serve`'s tokio task only sleeps and calls it (docs/engine.md).
//!
//! - **Which tickets.** The first step of a new `Orchestrator` routes every queued ticket (the
//!   catch-up after a restart: whatever happened while no server ran). After that, an event
//!   about a state change, a relation, a plan record or an edit routes every queued ticket,
//!   because it can free or take a slot, unblock a dependent or end a conflict; a `retry`
//!   routes its own ticket; comments, decisions, attention events and creations route nothing
//!   (the loop's own decisions come back to it this way and end there).
//! - **At most once per situation.** Routing a ticket twice in the same situation writes
//!   nothing the second time (see `record`), so re-routing after a restart, or on an event that
//!   turned out not to matter, is harmless.
//! - **Acknowledgement.** Events are acknowledged after the pass that handled them. A pass that
//!   could not even read the tickets fails its events (the outbox retries them with backoff)
//!   and makes the next step a catch-up; a single ticket's error is logged, kept in the status
//!   and the ticket is retried after a backoff.
//! - **Shutdown.** A pass asks `stop` before each ticket; when it stopped, the step leaves its
//!   events unacknowledged and the next start's catch-up pass routes every queued ticket.
//! - **Backoff.** After a failed acceptance the ticket is held for `retry_backoff_ms`, doubled
//!   for each further failure in a row, then routed again. Holds live in this value only: the
//!   circuit (three in a row) and the stop (six of one step) are counted from the thread, so
//!   they survive restarts, and a restart routes a held ticket at once.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use yoi_core::{State, TicketId, Timestamp};
use yoi_db::{DbIndex, OutboxEvent, OutboxKind};
use yoi_store::Workspace;

use super::pass::{run_pass, PassHooks, PassResults, RouteConfig, Routed, Targets};

/// The loop's outbox consumer id.
pub const CONSUMER: &str = "orchestrator";
/// Events taken per step.
pub const BATCH: i64 = 500;

/// What the orchestrator has done, for `GET /api/v1/router` and for tests waiting on a fixed
/// point.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct RouterStatus {
    pub enabled: bool,
    pub max_inprogress: usize,
    /// A step is running (set by the driver around each step).
    pub busy: bool,
    pub passes: u64,
    /// Tickets routed (decided for), over all passes.
    pub routed: u64,
    /// Routings that wrote something (a decision, an acceptance, a failure).
    pub writes: u64,
    pub accepted: u64,
    pub acceptance_failures: u64,
    pub events_acknowledged: u64,
    /// Tickets waiting out a retry backoff, with milliseconds left at the end of the last step.
    pub holding: BTreeMap<String, u64>,
    pub last_error: Option<String>,
}

/// What a step works on.
pub struct StepEnv<'a> {
    pub ws: &'a Workspace,
    pub db: &'a DbIndex,
    pub hooks: PassHooks<'a>,
}

/// What one step did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepOutcome {
    /// Outbox events taken.
    pub events: usize,
    pub acknowledged: usize,
    pub failed: usize,
    /// Tickets routed by this step's pass (0 when no pass ran).
    pub routed: usize,
    /// Something was written to a ticket.
    pub wrote: bool,
    /// The batch was full: step again without waiting.
    pub more: bool,
    /// The pass stopped at `stop`; its events are left for the next start.
    pub stopped: bool,
    /// When the earliest retry backoff ends (unix milliseconds), if a ticket is held.
    pub next_due_ms: Option<i64>,
}

/// The orchestrator's memory between steps. A new one is a restart.
pub struct Orchestrator {
    cfg: RouteConfig,
    backoff_base_ms: i64,
    catch_up: bool,
    registered: bool,
    hold: BTreeMap<TicketId, i64>,
    status: RouterStatus,
}

impl Orchestrator {
    pub fn new(cfg: RouteConfig, backoff_base_ms: u64) -> Orchestrator {
        let status = RouterStatus {
            enabled: true,
            max_inprogress: cfg.max_inprogress,
            ..RouterStatus::default()
        };
        Orchestrator {
            cfg,
            backoff_base_ms: backoff_base_ms.min(i64::MAX as u64) as i64,
            catch_up: true,
            registered: false,
            hold: BTreeMap::new(),
            status,
        }
    }

    /// An orchestrator configured from the workspace (`[router]`).
    pub fn of(ws: &Workspace) -> Orchestrator {
        Orchestrator::new(RouteConfig::of(ws), ws.config.router.retry_backoff_ms)
    }

    pub fn status(&self) -> &RouterStatus {
        &self.status
    }

    /// Tickets waiting out a backoff, with when it ends (unix milliseconds).
    pub fn holds(&self) -> &BTreeMap<TicketId, i64> {
        &self.hold
    }

    /// Take the next batch of events, route what they concern (plus tickets whose backoff has
    /// ended by `now`), then acknowledge or fail the batch. Errors are kept in the status and
    /// logged, never returned: the next step tries again.
    pub fn step(&mut self, env: &StepEnv<'_>, now: Timestamp) -> StepOutcome {
        let now_ms = now.unix_millis();
        let db = env.db;
        if !self.registered {
            match db.register_consumer(CONSUMER, now_ms) {
                Ok(()) => self.registered = true,
                Err(e) => self.error(format!("registering the outbox consumer: {e}")),
            }
        }
        let events = match db.next_events(CONSUMER, now_ms, BATCH) {
            Ok(e) => e,
            Err(e) => {
                self.error(format!("reading the outbox: {e}"));
                Vec::new()
            }
        };
        let mut out = StepOutcome {
            events: events.len(),
            more: events.len() as i64 == BATCH,
            ..StepOutcome::default()
        };
        if self.catch_up {
            self.release_held(env, now_ms);
        }
        let mut targets = if self.catch_up {
            Targets::All
        } else {
            Targets::none()
        };
        for e in &events {
            if let Some(t) = wakes(e) {
                merge(&mut targets, t);
            }
        }
        // A person's retry of a ticket in progress hands its stalled step out again (the
        // assignment circuit), and so does their answer to an agent's question; a queued
        // ticket's retry is routed below.
        for e in events.iter().filter(|e| {
            matches!(
                e.known_kind(),
                Some(OutboxKind::TicketRetried | OutboxKind::TicketAnswered)
            )
        }) {
            let Ok(id) = TicketId::parse(&e.ticket) else {
                continue;
            };
            if env
                .ws
                .read_item(&id)
                .is_ok_and(|i| i.state == State::Inprogress)
            {
                match crate::assignments::resume_after_retry(env.ws, db, &id, now) {
                    Ok(made) => out.wrote |= !made.is_empty(),
                    Err(e) => self.error(format!("{id}: resuming after a retry or an answer: {e}")),
                }
            }
        }
        let due: Vec<TicketId> = self
            .hold
            .iter()
            .filter(|(_, until)| **until <= now_ms)
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            self.hold.remove(&id);
            targets.add(id);
        }

        let mut handled = true;
        if !targets.is_empty() {
            let held: BTreeSet<TicketId> = self.hold.keys().cloned().collect();
            let pass = run_pass(env.ws, db, &self.cfg, &targets, &held, &env.hooks);
            self.status.passes += 1;
            match pass {
                Ok(results) => {
                    self.catch_up = false;
                    out.routed = results.len();
                    out.wrote |= self.count(&results, (env.hooks.clock)().unix_millis());
                }
                Err(e) => {
                    handled = false;
                    // Route everything next time: this pass's targets (including tickets whose
                    // backoff just ended) were not routed.
                    self.catch_up = true;
                    tracing::error!(error = %e, "a routing pass failed; its events are retried");
                    self.error(e.to_string());
                    for ev in &events {
                        match db.fail(CONSUMER, ev.seq, &e.to_string(), now_ms) {
                            Ok(()) => out.failed += 1,
                            Err(e) => self.error(format!("recording a failed delivery: {e}")),
                        }
                    }
                }
            }
        }
        if (env.hooks.stop)() {
            // The pass may have stopped early: leave its events for the next start, whose
            // catch-up pass routes every queued ticket anyway.
            out.stopped = true;
            out.more = false;
        } else if handled {
            for ev in &events {
                match db.ack(CONSUMER, ev.seq, now_ms) {
                    Ok(()) => out.acknowledged += 1,
                    Err(e) => self.error(format!("acknowledging event {}: {e}", ev.seq)),
                }
            }
            self.status.events_acknowledged += out.acknowledged as u64;
        }
        let end_ms = (env.hooks.clock)().unix_millis();
        self.status.holding = self
            .hold
            .iter()
            .map(|(id, until)| (id.to_string(), until.saturating_sub(end_ms).max(0) as u64))
            .collect();
        out.next_due_ms = self.hold.values().min().copied();
        out
    }

    /// Count a pass's results into the status and hold failed tickets for their backoff,
    /// counted from `end_ms`; returns whether anything was written.
    fn count(&mut self, results: &PassResults, end_ms: i64) -> bool {
        let mut wrote = false;
        for (id, r) in results {
            self.status.routed += 1;
            match r {
                Ok(r) => {
                    if r.wrote() {
                        self.status.writes += 1;
                        wrote = true;
                    }
                    match r {
                        Routed::Accepted { .. } => self.status.accepted += 1,
                        Routed::Failed {
                            consecutive,
                            stopped,
                            circuit_opened,
                            ..
                        } => {
                            self.status.acceptance_failures += 1;
                            if !stopped && !circuit_opened {
                                let factor = 1i64 << consecutive.saturating_sub(1).min(10);
                                self.hold.insert(
                                    id.clone(),
                                    end_ms.saturating_add(
                                        self.backoff_base_ms.saturating_mul(factor),
                                    ),
                                );
                            }
                        }
                        _ => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(ticket = %id, error = %e, "routing a ticket failed; it is retried");
                    self.error(format!("{id}: {e}"));
                    self.hold
                        .insert(id.clone(), end_ms.saturating_add(self.backoff_base_ms));
                }
            }
        }
        wrote
    }

    /// Release the held first assignments of tickets that are in progress: an acceptance that
    /// died between moving its ticket and releasing the row left them.
    fn release_held(&mut self, env: &StepEnv<'_>, now_ms: i64) {
        let db = env.db;
        let tickets = match db.tickets_with_held() {
            Ok(t) => t,
            Err(e) => return self.error(format!("reading held assignments: {e}")),
        };
        for t in tickets {
            let Ok(id) = TicketId::parse(&t) else {
                continue;
            };
            if env
                .ws
                .read_item(&id)
                .is_ok_and(|i| i.state == State::Inprogress)
            {
                if let Err(e) = db.release_held(&t, now_ms) {
                    self.error(format!("{t}: releasing its held assignment: {e}"));
                }
            }
        }
    }

    fn error(&mut self, e: String) {
        tracing::error!(error = %e, "orchestrator");
        self.status.last_error = Some(e);
    }
}

/// What wakes routing for an outbox event: every kind is named, so a new kind must say
/// whether it wakes routing before this compiles. A kind written by another version of yoi
/// wakes every ticket, which is never wrong, only slower.
fn wakes(e: &OutboxEvent) -> Option<Targets> {
    let Some(kind) = e.known_kind() else {
        return Some(Targets::All);
    };
    match kind {
        OutboxKind::TicketCreated
        | OutboxKind::TicketCommented
        | OutboxKind::TicketAttention
        | OutboxKind::TicketAnswered
        | OutboxKind::TicketEvent => None,
        OutboxKind::TicketRetried => {
            let mut t = Targets::none();
            t.add(TicketId::parse(&e.ticket).ok()?);
            Some(t)
        }
        OutboxKind::TicketReady
        | OutboxKind::TicketQueued
        | OutboxKind::TicketReturnedToPlanning
        | OutboxKind::TicketStateChanged
        | OutboxKind::RelationChanged
        | OutboxKind::TicketEdited
        | OutboxKind::TicketClosed
        | OutboxKind::TicketMerged
        | OutboxKind::PlanRecordAdded => Some(Targets::All),
    }
}

fn merge(into: &mut Targets, more: Targets) {
    match more {
        Targets::All => *into = Targets::All,
        Targets::Some(ids) => {
            for id in ids {
                into.add(id);
            }
        }
    }
}
