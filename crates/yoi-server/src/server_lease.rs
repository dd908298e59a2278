//! The heartbeat of this server's lease on its workspace (`yoi_db`'s `lease.rs`): renewed every
//! [`yoi_db::RENEW_EVERY`] with the address it serves at, so a server of another clone is
//! refused naming it. A lease lost (this server stalled past its life and another clone's
//! server took it) stops this one: two servers must never index one workspace.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::state::AppState;

/// Renew `nonce`'s lease until the server closes; notify `lost` if it is no longer ours.
pub fn spawn(
    state: AppState,
    nonce: Arc<str>,
    address: String,
    lost: Arc<Notify>,
) -> tokio::task::JoinHandle<()> {
    let mut closing = state.closing.subscribe();
    tokio::spawn(async move {
        let mut address = Some(address);
        loop {
            let now = yoi_core::time::unix_ms(std::time::SystemTime::now());
            match state
                .db()
                .renew_server_lease(&nonce, address.as_deref(), now)
                .await
            {
                Ok(true) => address = None,
                Ok(false) => {
                    tracing::error!(
                        "this server's lease on the workspace lapsed and another server holds it now; stopping"
                    );
                    lost.notify_one();
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "renewing the server lease failed; trying again")
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(yoi_db::RENEW_EVERY) => {}
                _ = closing.wait_for(|c| *c) => break,
            }
        }
        if let Err(e) = state.db().release_server_lease(&nonce).await {
            tracing::warn!(error = %e, "giving the server lease back failed; it lapses by itself");
        }
    })
}
