//! `GET /healthz` (the process answers) and `GET /readyz` (the database answers and the index
//! caught up with the files at start-up).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use crate::state::AppState;

#[utoipa::path(get, tag = "service", path = "/healthz", responses((status = 200, description = "the process answers", body = Object)))]
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

#[utoipa::path(get, tag = "service", path = "/readyz", responses(
    (status = 200, description = "the database answers; `indexed_tickets` counts the index", body = Object),
    (status = 503, description = "the database does not answer", body = Object),
))]
pub async fn readyz(State(s): State<AppState>) -> (StatusCode, Json<Value>) {
    match s.db().indexed_tickets_count().await {
        Ok(n) => (
            StatusCode::OK,
            Json(json!({ "status": "ready", "indexed_tickets": n })),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({ "status": "unavailable", "reason": "the database does not answer" })),
            )
        }
    }
}
