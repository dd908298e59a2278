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
        if closes_within(&mut closing, every).await {
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

/// Wait `every`, or until the server closes: whether it closed. `wait_for` looks at the value
/// first: the task may first run after the server began closing, when a `changed()` would wait
/// for a change that had already happened — the whole `every`, ten minutes by default, at every
/// shutdown that came that early.
async fn closes_within(closing: &mut tokio::sync::watch::Receiver<bool>, every: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(every) => false,
        _ = closing.wait_for(|c| *c) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_close_signalled_before_the_detector_first_waits_ends_the_wait_at_once() {
        let (tx, _) = tokio::sync::watch::channel(false);
        tx.send_replace(true);
        // Subscribed after the close, as a task that first runs late is.
        let mut late = tx.subscribe();
        let waited = tokio::time::timeout(
            Duration::from_secs(30),
            closes_within(&mut late, Duration::from_secs(600)),
        )
        .await;
        assert_eq!(waited, Ok(true), "the wait outlived the close");
        // Not closing: the wait runs its length and says so.
        let (_open, mut rx) = tokio::sync::watch::channel(false);
        assert!(!closes_within(&mut rx, Duration::from_millis(10)).await);
    }
}
