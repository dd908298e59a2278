//! `GET /inbox`: the dashboard's list of everything that waits on a person — what happened,
//! since when, and where to act — as `GET /api/v1/inbox` answers it (`yoi_engine::inbox`),
//! and below it the notification log: the latest deliveries and how their attempts went, as
//! `yoi notify log` prints them.

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use yoi_engine::inbox::{self, InboxEntry};

use super::page::{age, html, short, Chrome, LiveMark, UiError};
use super::session::Viewer;
use crate::auth::now;
use crate::state::AppState;

/// One entry as a row of the page.
pub struct Row {
    pub e: InboxEntry,
    pub label: &'static str,
    pub age: String,
    pub short_ticket: String,
}

/// One delivery as a row of the notification log.
pub struct DeliveryRow {
    pub d: yoi_engine::db::notify::NotifyDelivery,
    pub age: String,
}

#[derive(Template)]
#[template(path = "inbox.html")]
pub struct InboxPage {
    pub chrome: Chrome,
    pub rows: Vec<Row>,
    /// Whether any `[[notify]]` channel is configured.
    pub channels: usize,
    pub deliveries: Vec<DeliveryRow>,
}

/// The inbox as the API keeps it (`routes::inbox::kept`): from memory while nothing it reads
/// changed.
async fn kept(s: &AppState, v: &Viewer) -> Result<inbox::Inbox, UiError> {
    let bytes = crate::routes::inbox::kept(s, v.caller.view).await?;
    serde_json::from_slice(&bytes.0).map_err(|e| {
        UiError::from(crate::error::ApiError::internal(
            "reading the kept inbox",
            e,
        ))
    })
}

pub async fn page(State(s): State<AppState>, v: Viewer) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let found = kept(&s, &v).await?;
    let now_ms = now().unix_millis();
    let rows = found
        .entries
        .into_iter()
        .map(|e| Row {
            label: e.reason.label(),
            age: age(&e.since, now_ms),
            short_ticket: e.ticket.as_deref().map(short).unwrap_or_default(),
            e,
        })
        .collect();
    let deliveries = s
        .db()
        .notify_deliveries(None, 20)
        .await
        .map_err(UiError::from_store)?
        .into_iter()
        .map(|d| DeliveryRow {
            age: age_ms(d.updated_ms, now_ms),
            d,
        })
        .collect();
    let chrome = Chrome::new(&s, &v, mark, "Inbox", "inbox").await?;
    Ok(html(&InboxPage {
        chrome,
        rows,
        channels: s.ws.config.notify.len(),
        deliveries,
    }))
}

/// How long ago `ms` was, as [`age`] says it.
fn age_ms(ms: i64, now_ms: i64) -> String {
    age(
        &yoi_core::Timestamp::from_unix_millis(ms).to_string(),
        now_ms,
    )
}

/// How many entries are open, for the header of every page (0 when it cannot be read: the
/// header never fails a page).
pub async fn count(s: &AppState, v: &Viewer) -> usize {
    /// Only the count of the kept answer (its first field), the entries skipped unread.
    #[derive(serde::Deserialize)]
    struct Count {
        count: usize,
    }
    let counted = match crate::routes::inbox::kept(s, v.caller.view).await {
        Ok(bytes) => serde_json::from_slice::<Count>(&bytes.0).map_err(|e| e.to_string()),
        Err(e) => Err(e.message),
    };
    counted.map(|c| c.count).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "counting the inbox for the header");
        0
    })
}
