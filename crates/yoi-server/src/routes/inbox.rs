//! `GET /api/v1/inbox`: everything that waits on a person, as `yoi inbox` and the dashboard's
//! `/inbox` show it. The entries are derived by `yoi_engine::inbox`; this route only answers.

use axum::extract::State;
use axum::Json;
use yoi_engine::inbox::{self, Inbox};

use crate::auth::{Authed, ReadTickets};
use crate::error::ApiResult;
use crate::state::AppState;

#[utoipa::path(operation_id = "list_inbox", get, path = "/api/v1/inbox", responses((status = 200, body = Inbox)), security(("bearer" = [])), tag = "inbox")]
/// Every open inbox entry, the longest-waiting first.
pub async fn list(State(s): State<AppState>, _a: Authed<ReadTickets>) -> ApiResult<Inbox> {
    s.read_indexed(inbox::inbox).await.map(Json)
}
