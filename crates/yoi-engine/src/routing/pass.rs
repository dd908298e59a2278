//! One routing pass: route each queued ticket once, in queue order, against one [`Snapshot`]
//! that the pass keeps current as it accepts and returns tickets.
//!
//! [`route_ticket`] is the whole treatment of one ticket: decide, then record the decision (a
//! waiting decision once per situation; `return_to_planning` also moves the ticket), or accept,
//! and after a failed acceptance count the failures: [`OPEN_AFTER`] in a row open the circuit
//! (a `circuit_open` decision and an `attention` event), [`STOP_AFTER`] of one step in total
//! stop the ticket (a `stopped` decision and a return to planning labelled partial; the branch,
//! worktree and logs it produced are kept).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Serialize;
use yoi_core::decision::RoutingDecision;
use yoi_core::{Principal, TicketId, Timestamp};
use yoi_db::{DbIndex, RoutingWindow};
use yoi_store::ops::{self, CIRCUIT_OPEN};
use yoi_store::{Ctx, StoreError, Workspace};

use super::circuit::{Circuit, OPEN_AFTER, STOP_AFTER};
use super::decide::{decide_reading, Snapshot};
use super::record::record_on;
use super::window::{long_threads_ahead, routing_thread};
use super::{accept_ticket, record, AcceptError};

/// What routing needs from the configuration.
#[derive(Debug, Clone)]
pub struct RouteConfig {
    /// Tickets allowed in `inprogress` at once.
    pub max_inprogress: usize,
    /// Folder the ticket worktrees go in.
    pub worktree_root: PathBuf,
}

impl RouteConfig {
    pub fn of(ws: &Workspace) -> RouteConfig {
        RouteConfig {
            max_inprogress: ws.config.router.max_inprogress,
            worktree_root: ws.config.worktree_dir(ws.root()),
        }
    }
}

/// What routing did with one ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Routed {
    /// The ticket is not queued (any more); nothing to do.
    Skipped,
    /// A decision that leaves the ticket waiting (or returns it to planning); `written` is false
    /// when it repeated the last decision and nothing was written.
    Decided { kind: String, written: bool },
    /// Accepted: the ticket is `inprogress`.
    Accepted {
        branch: String,
        worktree: PathBuf,
        assignment: String,
    },
    /// An acceptance step failed (recorded); the ticket stays queued unless `stopped`.
    Failed {
        step: String,
        consecutive: u32,
        circuit_opened: bool,
        stopped: bool,
    },
}

impl Routed {
    /// Whether routing wrote anything to the ticket.
    pub fn wrote(&self) -> bool {
        !matches!(
            self,
            Routed::Skipped | Routed::Decided { written: false, .. }
        )
    }
}

/// Each routed ticket with what happened to it, in routing order.
pub type PassResults = Vec<(TicketId, Result<Routed, StoreError>)>;

/// Which queued tickets a pass routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    All,
    Some(BTreeSet<TicketId>),
}

impl Targets {
    pub fn none() -> Targets {
        Targets::Some(BTreeSet::new())
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, Targets::Some(s) if s.is_empty())
    }

    pub fn add(&mut self, id: TicketId) {
        if let Targets::Some(s) = self {
            s.insert(id);
        }
    }

    fn includes(&self, id: &TicketId) -> bool {
        match self {
            Targets::All => true,
            Targets::Some(s) => s.contains(id),
        }
    }
}

/// What a pass asks of whoever drives it.
pub struct PassHooks<'a> {
    /// Taken around each ticket's work so routing writes queue fairly with the server's other
    /// mutations (the guard is dropped when the ticket is done).
    pub turn: &'a dyn Fn() -> Box<dyn std::any::Any>,
    /// Asked before each ticket, so a shutting-down server does not wait for a long pass (the
    /// next start's catch-up pass routes the rest).
    pub stop: &'a dyn Fn() -> bool,
    /// The time each ticket is routed at (a test passes a fake clock).
    pub clock: &'a dyn Fn() -> Timestamp,
}

/// Route the targeted queued tickets once, in queue order, skipping `hold` (tickets waiting out
/// a retry backoff); see [`PassHooks`]. A ticket whose routing fails with a store error is
/// reported with the error and the pass goes on; a broken ticket (its files damaged) is
/// skipped; only failing to read the snapshot fails it.
pub fn run_pass(
    ws: &Workspace,
    db: &DbIndex,
    cfg: &RouteConfig,
    targets: &Targets,
    hold: &BTreeSet<TicketId>,
    hooks: &PassHooks<'_>,
) -> Result<PassResults, StoreError> {
    let PassHooks { turn, stop, clock } = *hooks;
    let mut snap = Snapshot::load(ws)?;
    let routed: Vec<TicketId> = snap
        .queued()
        .into_iter()
        .filter(|id| targets.includes(id) && !hold.contains(id))
        .collect();
    // Long threads' windows in a few statements for all of them, not a few per ticket; each
    // is used only while its ticket's files stay as they were.
    let mut ahead = long_threads_ahead(ws, db, &routed);
    let mut out = Vec::new();
    for id in routed {
        if stop() {
            break;
        }
        let _turn = turn();
        let window = ahead.remove(&id);
        let routed = route_ticket(ws, db, &mut snap, &id, cfg, window, clock());
        match &routed {
            Ok(Routed::Accepted { branch, .. }) => {
                tracing::info!(ticket = %id, %branch, "accepted")
            }
            Ok(Routed::Failed {
                step,
                consecutive,
                circuit_opened,
                stopped,
            }) => {
                tracing::warn!(ticket = %id, %step, consecutive, circuit_opened, stopped, "acceptance failed")
            }
            Ok(Routed::Decided {
                kind,
                written: true,
            }) => {
                tracing::info!(ticket = %id, %kind, "decided")
            }
            _ => {}
        }
        out.push((id, routed));
    }
    Ok(out)
}

/// Decide for `id` and act on the decision (see the module doc). `ahead` is the ticket's
/// routing window read ahead with others' ([`long_threads_ahead`]), used only while the
/// ticket's files are as they were then.
pub fn route_ticket(
    ws: &Workspace,
    db: &DbIndex,
    snap: &mut Snapshot,
    id: &TicketId,
    cfg: &RouteConfig,
    ahead: Option<RoutingWindow>,
    now: Timestamp,
) -> Result<Routed, StoreError> {
    // The thread is read once: recording the decision reads the routing part deciding read,
    // and the turn held around this ticket keeps the server from writing between.
    let decided = decide_reading(ws, Some(db), ahead, snap, id, cfg.max_inprogress);
    let decided = match decided {
        // Its own files are damaged (item.md, thread.md or its plan file): a broken ticket is
        // listed as such and not routed, and it is no error to retry; a pass after the repair
        // routes it.
        Err(StoreError::Invalid { path, .. }) => {
            tracing::debug!(ticket = %id, path = %path.display(), "broken ticket not routed");
            return Ok(Routed::Skipped);
        }
        decided => decided?,
    };
    let routed = match decided {
        None => Routed::Skipped,
        Some((d @ RoutingDecision::ImplementationReady { .. }, _)) => {
            match accept_ticket(ws, db, id, &d, &cfg.worktree_root, now) {
                Ok(a) => Routed::Accepted {
                    branch: a.branch,
                    worktree: a.worktree,
                    assignment: a.assignment,
                },
                Err(AcceptError::Failed { step, .. }) => after_failure(ws, db, id, step, now)?,
                Err(AcceptError::Store(e)) => return Err(e),
                Err(e @ AcceptError::NotReady { .. }) => {
                    return Err(StoreError::Refused {
                        reason: yoi_store::error::Refusal::NotReadyToAccept {
                            message: e.to_string(),
                        },
                    })
                }
            }
        }
        Some((d @ RoutingDecision::AcceptanceFailed { .. }, thread)) => {
            record_on(ws, id, &thread, &d, now)?;
            let RoutingDecision::AcceptanceFailed { step, .. } = &d else {
                unreachable!("matched above")
            };
            after_failure(ws, db, id, step, now)?
        }
        Some((d, thread)) => {
            let written = record_on(ws, id, &thread, &d, now)?;
            Routed::Decided {
                kind: d.kind().to_string(),
                written,
            }
        }
    };
    // Keep the snapshot current for the tickets routed after this one.
    if let Ok(item) = ws.read_item(id) {
        snap.items.insert(id.clone(), item);
    }
    Ok(routed)
}

/// Count the failures after a failed acceptance step: stop the ticket or open its circuit.
fn after_failure(
    ws: &Workspace,
    db: &DbIndex,
    id: &TicketId,
    step: &str,
    now: Timestamp,
) -> Result<Routed, StoreError> {
    let circuit = Circuit::of(&routing_thread(ws, Some(db), id)?);
    let failures = circuit.failures_of(step);
    let ctx = Ctx::new(Principal::orchestrator(), now);
    if failures >= STOP_AFTER {
        let stopped = RoutingDecision::Stopped {
            step: step.to_string(),
            failures,
        };
        record(ws, Some(db), id, &stopped, now)?;
        return Ok(Routed::Failed {
            step: step.to_string(),
            consecutive: circuit.consecutive,
            circuit_opened: false,
            stopped: true,
        });
    }
    let open = circuit.consecutive >= OPEN_AFTER && !circuit.open;
    if open {
        let decision = RoutingDecision::CircuitOpen {
            failures: circuit.consecutive,
        };
        record(ws, Some(db), id, &decision, now)?;
        ops::attention(
            ws,
            &ctx,
            id.as_str(),
            CIRCUIT_OPEN,
            &format!(
                "Routing stopped dispatching this ticket: {} acceptance attempts failed in a row (last at step `{step}`). \
                 Fix the cause, then run `yoi ticket retry {id}`.",
                circuit.consecutive
            ),
        )?;
    }
    Ok(Routed::Failed {
        step: step.to_string(),
        consecutive: circuit.consecutive,
        circuit_opened: open,
        stopped: false,
    })
}
