//! `GET /healthz` (the process answers) and `GET /readyz` (the database answers and the index
//! caught up with the files at start-up).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::state::AppState;

/// `GET /healthz`: the process answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: HealthStatus,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    Ok,
}

/// `GET /readyz`: whether the database answers; `indexed_tickets` when it does, `reason` when
/// it does not.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    pub status: ReadyStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexed_tickets: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReadyStatus {
    Ready,
    Unavailable,
}

#[utoipa::path(get, tag = "service", path = "/healthz", responses((status = 200, description = "the process answers", body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: HealthStatus::Ok,
    })
}

#[utoipa::path(get, tag = "service", path = "/readyz", responses(
    (status = 200, description = "the database answers; `indexed_tickets` counts the index", body = Readiness),
    (status = 503, description = "the database does not answer", body = Readiness),
))]
pub async fn readyz(State(s): State<AppState>) -> (StatusCode, Json<Readiness>) {
    match s.db().indexed_tickets_count().await {
        Ok(n) => (
            StatusCode::OK,
            Json(Readiness {
                status: ReadyStatus::Ready,
                indexed_tickets: Some(n),
                reason: None,
            }),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(Readiness {
                    status: ReadyStatus::Unavailable,
                    indexed_tickets: None,
                    reason: Some("the database does not answer".into()),
                }),
            )
        }
    }
}
