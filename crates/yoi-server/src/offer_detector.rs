//! The workflow-offer detector's driver inside `yoi serve`: every `[workflows]
//! detect_every_secs` (600 by default; 0: never), the first time that long after the start, it
//! calls [`offers::detect`] on a blocking thread. The detector only offers — what it finds waits
//! in the inbox for a person — so a late or skipped look loses nothing; it is the next look's.

use std::time::Duration;

use yoi_engine::workflows::offers;

use crate::auth::now;
use crate::state::AppState;

/// `None` when `[workflows] detect_every_secs = 0`.
pub fn spawn(state: AppState) -> Option<tokio::task::JoinHandle<()>> {
    let every = state.ws.config.workflows.detect_every_secs;
    (every > 0).then(|| tokio::spawn(run(state, Duration::from_secs(every))))
}

async fn run(state: AppState, every: Duration) {
    let mut closing = state.closing.subscribe();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = closing.changed() => {}
        }
        if *closing.borrow() {
            break;
        }
        let st = state.clone();
        let found =
            tokio::task::spawn_blocking(move || offers::detect(&st.ws, &st.index, now())).await;
        match found {
            Ok(Ok(d)) if !d.offered.is_empty() => {
                tracing::info!(
                    offered = d.offered.len(),
                    pending = d.pending,
                    "offered workflow changes"
                );
                state.changed.send_modify(|n| *n += 1);
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, "looking for workflow offers failed; it runs again")
            }
            Err(e) => {
                tracing::error!(error = %e, "looking for workflow offers panicked; it runs again")
            }
        }
    }
}
