//! The orchestrator's driver inside `yoi serve`: a tokio task that only sleeps and calls
//! [`Orchestrator::step`] on a blocking thread. Every decision — which tickets to route, the
//! backoff, acknowledging or failing events — is the engine's (`yoi_engine::routing::
//! orchestrator`); this task decides only when to step: at once after a full batch, when
//! something changed, when a backoff ends, at least every second (CLI `--local` writes do not
//! wake it), and never again once the server is closing.

use std::time::Duration;

use yoi_engine::routing::{Orchestrator, PassHooks, StepEnv};

use crate::auth::now;
use crate::state::AppState;

/// Longest sleep between steps.
const POLL: Duration = Duration::from_secs(1);

/// Start the loop on the current runtime; it ends when the server starts closing.
pub fn spawn(state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(state))
}

async fn run(state: AppState) {
    let mut orchestrator = Some(Orchestrator::of(&state.ws));
    publish(&state, orchestrator.as_ref(), false);
    let mut changed = state.changed.subscribe();
    let mut closing = state.closing.subscribe();
    tracing::info!(
        max_inprogress = state.ws.config.router.max_inprogress,
        "orchestrator started"
    );
    loop {
        if *closing.borrow() {
            break;
        }
        let mut orch = orchestrator
            .take()
            .unwrap_or_else(|| Orchestrator::of(&state.ws));
        publish(&state, Some(&orch), true);
        let st = state.clone();
        let stepped = tokio::task::spawn_blocking(move || {
            // Each ticket's work holds this server's writer turn; when it ends, claims waiting
            // for work look again at once (an acceptance just released an assignment).
            let turn = || -> Box<dyn std::any::Any> {
                Box::new(WakeOnDrop {
                    _turn: st.write_turn_blocking(),
                    changed: st.changed.clone(),
                })
            };
            let stop = || *st.closing.borrow();
            let env = StepEnv {
                ws: &st.ws,
                db: &st.index,
                hooks: PassHooks {
                    turn: &turn,
                    stop: &stop,
                    clock: &now,
                },
            };
            let started = std::time::Instant::now();
            let outcome = orch.step(&env, now());
            // A long step (a catch-up over the backlog) freed far more than a routine one.
            if started.elapsed() >= Duration::from_millis(500) {
                crate::memory::give_back();
            }
            (orch, outcome)
        })
        .await;
        let outcome = match stepped {
            Ok((orch, outcome)) => {
                publish(&state, Some(&orch), false);
                orchestrator = Some(orch);
                outcome
            }
            Err(e) => {
                // The step panicked: what it remembered is gone, so the next step starts
                // afresh with a catch-up pass, exactly as after a restart.
                tracing::error!(error = %e, "an orchestrator step panicked; starting afresh");
                {
                    let mut s = state.router.lock().unwrap_or_else(|p| p.into_inner());
                    s.busy = false;
                    s.last_error = Some(format!("a routing step panicked: {e}"));
                }
                tokio::select! {
                    _ = tokio::time::sleep(POLL) => {}
                    _ = closing.changed() => {}
                }
                continue;
            }
        };
        if outcome.wrote {
            state.changed.send_modify(|n| *n += 1);
        }
        if outcome.stopped || *closing.borrow() {
            break;
        }
        if outcome.more {
            continue;
        }
        let wait = outcome
            .next_due_ms
            .map(|due| Duration::from_millis(due.saturating_sub(now().unix_millis()).max(0) as u64))
            .map_or(POLL, |d| d.min(POLL));
        tokio::select! {
            _ = changed.changed() => {}
            _ = tokio::time::sleep(wait) => {}
            _ = closing.changed() => {}
        }
    }
    tracing::info!("orchestrator stopped");
}

struct WakeOnDrop {
    _turn: tokio::sync::OwnedMutexGuard<()>,
    changed: std::sync::Arc<tokio::sync::watch::Sender<u64>>,
}

impl Drop for WakeOnDrop {
    fn drop(&mut self) {
        self.changed.send_modify(|n| *n += 1);
    }
}

/// Copy the orchestrator's status into the shared one `GET /api/v1/router` reads.
fn publish(state: &AppState, orch: Option<&Orchestrator>, busy: bool) {
    let mut s = state.router.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(o) = orch {
        *s = o.status().clone();
    }
    s.busy = busy;
}
