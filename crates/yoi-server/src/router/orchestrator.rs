//! The orchestrator loop inside `yoi serve` (DESIGN §5): consume the outbox as consumer
//! [`CONSUMER`], route the queued tickets the events concern, acknowledge the events.
//!
//! - **Which tickets.** The first pass after start routes every queued ticket (the catch-up
//!   after a restart: whatever happened while no server ran). After that, an event about a state
//!   change, a relation, a plan record or an edit routes every queued ticket, because it can
//!   free or take a slot, unblock a dependent or end a conflict; a `retry` routes its own
//!   ticket; comments, decisions, attention events and creations route nothing (the loop's own
//!   decisions come back to it this way and end there).
//! - **At most once per situation.** Routing a ticket twice in the same situation writes
//!   nothing the second time (see `record`), so re-routing after a restart, or on an event that
//!   turned out not to matter, is harmless: the restart test checks there are no duplicates.
//! - **Acknowledgement.** Events are acknowledged after the pass that handled them. A pass that
//!   could not even read the tickets fails its events (the outbox retries them with backoff);
//!   a single ticket's error is logged, shown in the status and retried after a backoff.
//! - **Shutdown.** A pass checks the closing signal before each ticket and stops; the batch is
//!   then left unacknowledged and the next start's catch-up pass routes every queued ticket.
//! - **Retries.** After a failed acceptance the ticket is held for `retry_backoff_ms`, doubled
//!   for each further failure in a row, then routed again; the circuit (three in a row) and the
//!   stop (six of one step) are counted from the thread, not from memory, so they survive
//!   restarts.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde::Serialize;
use yoi_core::TicketId;
use yoi_store::db::OutboxEvent;

use super::pass::{run_pass, PassResults, RouteConfig, Routed, Targets};
use crate::state::AppState;

/// The loop's outbox consumer id.
pub const CONSUMER: &str = "orchestrator";
/// Events taken per round.
const BATCH: i64 = 500;
/// Longest sleep between looks at the outbox (CLI `--local` writes do not wake the loop).
const POLL: Duration = Duration::from_secs(1);

/// What the loop has done, for `GET /api/v1/router` and for tests waiting on a fixed point.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RouterStatus {
    pub enabled: bool,
    pub max_inprogress: usize,
    /// A pass is running.
    pub busy: bool,
    pub passes: u64,
    /// Tickets routed (decided for), over all passes.
    pub routed: u64,
    /// Routings that wrote something (a decision, an acceptance, a failure).
    pub writes: u64,
    pub accepted: u64,
    pub acceptance_failures: u64,
    pub events_acknowledged: u64,
    /// Tickets waiting out a retry backoff, with milliseconds left.
    pub holding: BTreeMap<String, u64>,
    pub last_error: Option<String>,
}

/// What wakes routing for an outbox event.
fn wakes(e: &OutboxEvent) -> Option<Targets> {
    match e.kind.as_str() {
        "ticket_created" | "ticket_commented" | "ticket_attention" | "ticket_event" => None,
        "ticket_retried" => {
            let mut t = Targets::none();
            t.add(TicketId::parse(&e.ticket).ok()?);
            Some(t)
        }
        _ => Some(Targets::All),
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

fn now_ms() -> i64 {
    crate::auth::now().unix_millis()
}

/// Start the loop on the current runtime; it ends when the server starts closing.
pub fn spawn(state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(state))
}

async fn run(state: AppState) {
    let cfg = RouteConfig::of(&state.ws);
    let backoff_base = Duration::from_millis(state.ws.config.router.retry_backoff_ms);
    {
        let mut s = state.router.lock().unwrap_or_else(|p| p.into_inner());
        s.enabled = true;
        s.max_inprogress = cfg.max_inprogress;
    }
    let db = state.db().clone();
    if let Err(e) = db.register_consumer(CONSUMER, now_ms()).await {
        tracing::error!(error = %e, "the orchestrator could not register its outbox consumer");
    }
    let mut changed = state.changed.subscribe();
    let mut closing = state.closing.subscribe();
    let mut catch_up = true;
    let mut hold: BTreeMap<TicketId, Instant> = BTreeMap::new();
    tracing::info!(max_inprogress = cfg.max_inprogress, "orchestrator started");
    loop {
        if *closing.borrow() {
            break;
        }
        let events = match db.next_events(CONSUMER, now_ms(), BATCH).await {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(error = %e, "the orchestrator could not read the outbox");
                set_error(&state, e.to_string());
                Vec::new()
            }
        };
        let mut targets = if catch_up {
            Targets::All
        } else {
            Targets::none()
        };
        for e in &events {
            if let Some(t) = wakes(e) {
                merge(&mut targets, t);
            }
        }
        let now = Instant::now();
        let due: Vec<TicketId> = hold
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            hold.remove(&id);
            targets.add(id);
        }

        let mut handled = true;
        if !targets.is_empty() {
            match pass(&state, &cfg, targets, &hold).await {
                Ok(results) => {
                    catch_up = false;
                    let mut wrote = false;
                    for (id, r) in results {
                        match r {
                            Ok(Routed::Failed {
                                consecutive,
                                stopped,
                                circuit_opened,
                                ..
                            }) => {
                                wrote = true;
                                if !stopped && !circuit_opened {
                                    let factor = 1u32 << consecutive.saturating_sub(1).min(10);
                                    hold.insert(id, Instant::now() + backoff_base * factor);
                                }
                            }
                            Ok(r) => wrote |= r.wrote(),
                            Err(e) => {
                                tracing::warn!(ticket = %id, error = %e, "routing a ticket failed; it is retried");
                                set_error(&state, format!("{id}: {e}"));
                                hold.insert(id, Instant::now() + backoff_base);
                            }
                        }
                    }
                    if wrote {
                        state.changed.send_modify(|n| *n += 1);
                    }
                }
                Err(e) => {
                    handled = false;
                    // Route everything next time: this pass's targets (including tickets whose
                    // backoff just ended) were not routed.
                    catch_up = true;
                    tracing::error!(error = %e, "a routing pass failed; its events are retried");
                    set_error(&state, e.to_string());
                    for ev in &events {
                        if let Err(e) = db.fail(CONSUMER, ev.seq, &e.to_string(), now_ms()).await {
                            tracing::error!(error = %e, seq = ev.seq, "could not record a failed delivery");
                        }
                    }
                }
            }
        }
        if *closing.borrow() {
            // The pass may have stopped early: leave its events for the next start, whose
            // catch-up pass routes every queued ticket anyway.
            break;
        }
        if handled {
            let mut acked = 0;
            for ev in &events {
                match db.ack(CONSUMER, ev.seq, now_ms()).await {
                    Ok(()) => acked += 1,
                    Err(e) => {
                        tracing::error!(error = %e, seq = ev.seq, "could not acknowledge an event")
                    }
                }
            }
            let mut s = state.router.lock().unwrap_or_else(|p| p.into_inner());
            s.events_acknowledged += acked;
        }
        publish_hold(&state, &hold);
        if events.len() as i64 == BATCH {
            continue;
        }
        let wait = hold
            .values()
            .map(|at| at.saturating_duration_since(Instant::now()))
            .min()
            .map_or(POLL, |d| d.min(POLL));
        tokio::select! {
            _ = changed.changed() => {}
            _ = tokio::time::sleep(wait) => {}
            _ = closing.changed() => {}
        }
    }
    tracing::info!("orchestrator stopped");
}

/// Run one pass on a blocking thread, keeping the status current.
async fn pass(
    state: &AppState,
    cfg: &RouteConfig,
    targets: Targets,
    hold: &BTreeMap<TicketId, Instant>,
) -> Result<PassResults, yoi_store::StoreError> {
    state.router.lock().unwrap_or_else(|p| p.into_inner()).busy = true;
    let held: BTreeSet<TicketId> = hold.keys().cloned().collect();
    let st = state.clone();
    let cfg = cfg.clone();
    let result = tokio::task::spawn_blocking(move || {
        let turn = || -> Box<dyn std::any::Any> { Box::new(st.write_turn_blocking()) };
        let stop = || *st.closing.borrow();
        run_pass(&st.ws, &st.index, &cfg, &targets, &held, &turn, &stop)
    })
    .await
    .unwrap_or_else(|e| {
        Err(yoi_store::StoreError::Refused {
            reason: format!("the routing pass panicked: {e}"),
        })
    });
    let mut s = state.router.lock().unwrap_or_else(|p| p.into_inner());
    s.busy = false;
    s.passes += 1;
    if let Ok(results) = &result {
        for (_, r) in results {
            s.routed += 1;
            match r {
                Ok(Routed::Accepted { .. }) => s.accepted += 1,
                Ok(Routed::Failed { .. }) => s.acceptance_failures += 1,
                _ => {}
            }
            if r.as_ref().is_ok_and(Routed::wrote) {
                s.writes += 1;
            }
        }
    }
    result
}

fn set_error(state: &AppState, e: String) {
    state
        .router
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .last_error = Some(e);
}

fn publish_hold(state: &AppState, hold: &BTreeMap<TicketId, Instant>) {
    let now = Instant::now();
    let mut s = state.router.lock().unwrap_or_else(|p| p.into_inner());
    s.holding = hold
        .iter()
        .map(|(id, at)| {
            (
                id.to_string(),
                at.saturating_duration_since(now).as_millis() as u64,
            )
        })
        .collect();
}
