//! The lease and flow sweep's driver inside `yoi serve`: a tokio task that calls the engine's
//! [`expire_due`] and [`flow_tick`] step functions on a blocking thread once a second — and at
//! once when an attempt ends, so a due merge does not wait for the second — and wakes waiting claims
//! when it handed a step out again. A claim that outlived a server restart is simply still in
//! the database: its pod's next heartbeat re-attaches it with the same fence, or its lease runs
//! out and this sweep expires it.

use std::time::Duration;

use yoi_engine::assignments::{expire_due, flow_tick};

use crate::auth::now;
use crate::state::AppState;

/// How often the sweep runs: expiry is noticed at most this long after a lease ends.
const EVERY: Duration = Duration::from_secs(1);

pub fn spawn(state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(state))
}

async fn run(state: AppState) {
    let mut closing = state.closing.subscribe();
    loop {
        if *closing.borrow() {
            break;
        }
        let st = state.clone();
        let swept = tokio::task::spawn_blocking(move || expire_due(&st.ws, &st.index, now())).await;
        match swept {
            Ok(Ok(out)) if !out.expired.is_empty() => {
                state.changed.send_modify(|n| *n += 1);
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "the lease sweep failed; it runs again"),
            Err(e) => tracing::error!(error = %e, "the lease sweep panicked; it runs again"),
        }
        // The flows: next steps a crash left undecided, due merges, merged tickets to finish.
        let st = state.clone();
        let ticked = tokio::task::spawn_blocking(move || {
            let _turn = st.write_turn_blocking();
            flow_tick(&st.ws, &st.index, now())
        })
        .await;
        match ticked {
            Ok(Ok(t)) if t.changed() => state.changed.send_modify(|n| *n += 1),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "the flow sweep failed; it runs again"),
            Err(e) => tracing::error!(error = %e, "the flow sweep panicked; it runs again"),
        }
        state
            .flow_sweeps
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = state.flow_wake.notified() => {}
            _ = closing.changed() => {}
        }
    }
}
