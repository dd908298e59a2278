//! The server's side of reading its own writes (`yoi_db::read_your_writes`, which decides what
//! to read again and what may be kept): how the index is written when the watch saw a change,
//! the periodic full check, and answers sent with how they met the kept ones.
//!
//! The index is written as an operation would: in this server's writer turn and under the
//! workspace lock ([`write_index`]). Each cached answer says how it met the kept ones in its
//! `Cache-Status` header (RFC 9211): `yoi; hit` (from memory), `yoi; fwd=miss` (computed now)
//! or `yoi; fwd=bypass` (nothing may be kept now).

use std::future::Future;

use axum::body::Bytes;
use yoi_core::TicketId;
use yoi_db::read_your_writes::{Kept, ReadYourWrites, View};
use yoi_db::ticket_answers::Made;
use yoi_db::{IndexStats, ReindexMode};
use yoi_store::StoreError;

use crate::error::ApiError;
use crate::state::AppState;

/// The server's watch and caches; a kept answer is the JSON bytes sent.
pub type Fresh = ReadYourWrites<Bytes>;

/// An answer about tickets for `key` (`yoi_db::ticket_answers`): kept until what `compute`
/// says it was made from changes, else computed (once, however many requests ask for it
/// meanwhile) and kept when `view` allows.
pub async fn answer_about_tickets<F, Fut>(
    state: &AppState,
    view: View,
    key: String,
    compute: F,
) -> Result<JsonBytes, ApiError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(JsonBytes, Made), ApiError>>,
{
    let (bytes, kept) = state
        .fresh
        .answer_about_tickets(view, key, || async move {
            compute().await.map(|(b, made)| (b.0, made))
        })
        .await?;
    Ok(JsonBytes(bytes, kept))
}

/// A JSON answer already serialized (the bytes `axum::Json` would send), and how it met the
/// kept answers.
pub struct JsonBytes(pub Bytes, pub Kept);

impl JsonBytes {
    pub fn of<T: serde::Serialize>(value: &T) -> Result<JsonBytes, ApiError> {
        serde_json::to_vec(value)
            .map(|v| JsonBytes(Bytes::from(v), Kept::Miss))
            .map_err(|e| ApiError::internal("serializing the answer", e))
    }
}

impl axum::response::IntoResponse for JsonBytes {
    fn into_response(self) -> axum::response::Response {
        use axum::http::{header, HeaderName, HeaderValue};
        let status = match self.1 {
            Kept::Miss => "yoi; fwd=miss",
            Kept::Bypass => "yoi; fwd=bypass",
            Kept::Hit => "yoi; hit",
        };
        (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                ),
                (
                    HeaderName::from_static("cache-status"),
                    HeaderValue::from_static(status),
                ),
            ],
            self.0,
        )
            .into_response()
    }
}

/// Write the index from the files as an operation would: in this server's writer turn and
/// under the workspace lock (the index takes it; the outbox numbers its rows inside the
/// transaction, and another process's operation must not interleave). `Some(ids)` re-reads
/// those tickets, `None` runs the incremental pass over every file.
pub async fn write_index(
    state: &AppState,
    tickets: Option<Vec<TicketId>>,
) -> Result<IndexStats, StoreError> {
    let st = state.clone();
    tokio::task::spawn_blocking(move || {
        let _turn = st.write_turn_blocking();
        match tickets {
            None => {
                let stats = st.index.reindex(&st.ws, ReindexMode::Incremental);
                crate::memory::give_back();
                stats
            }
            Some(ids) => {
                let n = st.index.refresh(&st.ws, &ids)?;
                if n > 0 {
                    tracing::debug!(tickets = n, "read tickets changed on disk into the index");
                }
                Ok(IndexStats {
                    scanned: ids.len(),
                    reindexed: n,
                    ..IndexStats::default()
                })
            }
        }
    })
    .await
    .map_err(|e| StoreError::Database {
        reason: format!("the index writer stopped: {e}"),
    })?
}

/// Look at every file periodically until the server closes.
pub fn spawn_full_checks(state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut closing = state.closing.subscribe();
        let mut took = std::time::Duration::ZERO;
        loop {
            let every = state.fresh.full_check_every(took);
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = closing.wait_for(|c| *c) => return,
            }
            let started = std::time::Instant::now();
            let checked = state
                .fresh
                .full_check(&state.ws, |all| write_index(&state, all))
                .await;
            if let Err(e) = checked {
                tracing::warn!(error = %e, "the periodic look at the ticket files failed");
            }
            took = started.elapsed();
        }
    })
}
