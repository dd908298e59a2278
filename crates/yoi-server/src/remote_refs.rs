//! The sweep of the pods' remote under `[pods] transport = "remote"` (docs/pods.md): a tokio
//! task that calls the engine's [`collect_remote`] on a blocking thread, deleting on the
//! remote the refs of attempts that ended and of claims that are over. The remote's own refs
//! are the list, so a deletion that failed (the remote was down) is simply found again.
//!
//! It asks the remote every few seconds while yoi's refs are there, and only every few
//! minutes once none are, unless a claim's commits were just pushed there (`remote_wake`):
//! listing a remote is a network round trip, not a file read.

use std::time::Duration;

use yoi_engine::assignments::transport::{collect_remote, PodRemote};

use crate::state::AppState;

/// Between two looks while yoi's refs are on the remote (or the last look failed).
const BUSY: Duration = Duration::from_secs(5);
/// Between two looks once none are.
const IDLE: Duration = Duration::from_secs(300);

pub fn spawn(state: AppState, remote: PodRemote) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(state, remote))
}

async fn run(state: AppState, remote: PodRemote) {
    let mut closing = state.closing.subscribe();
    loop {
        if *closing.borrow() {
            break;
        }
        let (st, r) = (state.clone(), remote.clone());
        let swept =
            tokio::task::spawn_blocking(move || collect_remote(&st.ws, &st.index, &r)).await;
        let wait = match swept {
            Ok(Ok(out)) if out.left == 0 => IDLE,
            Ok(Ok(_)) => BUSY,
            Ok(Err(e)) => {
                tracing::warn!(remote = %remote.name, error = %e, "could not tidy yoi's refs on the pods' remote; trying again");
                BUSY
            }
            Err(e) => {
                tracing::error!(error = %e, "the remote sweep panicked; it runs again");
                BUSY
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = state.remote_wake.notified() => {}
            _ = closing.changed() => {}
        }
    }
}
