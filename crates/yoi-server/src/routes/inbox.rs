//! `GET /api/v1/inbox`: everything that waits on a person, as `yoi inbox` and the dashboard's
//! `/inbox` show it, and `GET /api/v1/notify/log`: what the `[[notify]]` channels were sent,
//! as `yoi notify log` shows it. The entries are derived by `yoi_engine::inbox` and the log read
//! by `yoi_engine::notify`; these routes only answer.

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use yoi_engine::inbox::{self, Inbox};
use yoi_engine::notify::DeliveryLog;

use crate::auth::{Authed, ReadTickets};
use crate::error::{ApiError, ApiResult};
use crate::extract::Params;
use crate::fresh::JsonBytes;
use crate::state::AppState;
use yoi_db::read_your_writes::View;
use yoi_db::ticket_answers::Made;

#[utoipa::path(operation_id = "list_inbox", get, path = "/api/v1/inbox", responses((status = 200, body = Inbox)), security(("bearer" = [])), tag = "inbox")]
/// Every open inbox entry, the longest-waiting first. The answer is kept while nothing it reads
/// changed — the ticket files and their index rows (an answer about tickets made from them
/// alone, `Made::TicketFilesOnly`) and the proposal and offer folders
/// ([`inbox::unwatched_stamp`]) — so a large inbox is derived once per change, not once per
/// request, and the server's own writes that leave the tickets alone (heartbeats, lease sweeps,
/// claims, a router pass that decides what it decided before) keep it.
pub async fn list(
    State(s): State<AppState>,
    Authed(c, ..): Authed<ReadTickets>,
) -> Result<JsonBytes, ApiError> {
    kept(&s, c.view).await
}

/// The inbox's JSON, kept or computed now (see [`list`]); the dashboard's page and navigation
/// count read the same kept answer.
pub async fn kept(s: &AppState, view: View) -> Result<JsonBytes, ApiError> {
    let stamp = s.read(|ws| Ok(inbox::unwatched_stamp(ws))).await?;
    let state = s.clone();
    crate::fresh::answer_about_tickets(s, view, format!("inbox:{stamp}"), || async move {
        let inbox = JsonBytes::of(&state.read_indexed(inbox::inbox).await?)?;
        Ok((inbox, Made::TicketFilesOnly))
    })
    .await
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct LogQuery {
    /// Only this `[[notify]]` channel's deliveries.
    pub channel: Option<String>,
    /// At most this many deliveries, newest first (1 to 1000, default 100).
    pub limit: Option<i64>,
}

#[utoipa::path(operation_id = "notify_log", get, path = "/api/v1/notify/log", params(LogQuery), responses((status = 200, body = DeliveryLog)), security(("bearer" = [])), tag = "inbox")]
/// The delivery log: every promised notification, newest first, with each attempt and what the
/// receiver answered.
pub async fn notify_log(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Params(q): Params<LogQuery>,
) -> ApiResult<DeliveryLog> {
    let limit = crate::extract::page_size(q.limit)?;
    s.read_indexed(move |_, index| yoi_engine::notify::log(index, q.channel.as_deref(), limit))
        .await
        .map(Json)
}
