//! `/api/v1/flows…`: the flows tickets may run (the built-in one and every valid
//! `.yoi/flows/*.flow.yaml`) and what is wrong with the files that are skipped — the same
//! answers as `yoi flow list | show | lint`.

use axum::extract::{Path, State};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use yoi_core::ErrorClass;
use yoi_engine::flows;

use crate::auth::{Authed, ReadTickets};
use crate::error::ApiError;
use crate::state::AppState;

/// The flows tickets may use, and the flow files that are skipped.
#[derive(Debug, Serialize, ToSchema)]
pub struct FlowList {
    pub count: usize,
    pub flows: Vec<flows::Listed>,
    pub skipped: Vec<flows::FlowFile>,
}

/// Every flow file checked, and the number of problems found.
#[derive(Debug, Serialize, ToSchema)]
pub struct FlowLint {
    pub files: Vec<flows::FlowFile>,
    pub errors: usize,
}

#[utoipa::path(operation_id = "list_flows", get, path = "/api/v1/flows", responses((status = 200, body = FlowList)), security(("bearer" = [])), tag = "flows")]
pub async fn list(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
) -> Result<Json<FlowList>, ApiError> {
    let (flows, skipped) = s.blocking("flows", flows::catalog).await?;
    Ok(Json(FlowList {
        count: flows.len(),
        flows,
        skipped,
    }))
}

#[utoipa::path(operation_id = "show_flow", get, path = "/api/v1/flows/{name}", params(("name" = String, Path)), responses((status = 200, body = flows::Listed)), security(("bearer" = [])), tag = "flows")]
pub async fn show(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(name): Path<String>,
) -> Result<Json<flows::Listed>, ApiError> {
    let found = s
        .blocking("flows", move |ws| match flows::lookup(ws, &name) {
            Ok(l) => Ok(l),
            Err(flows::NotUsable::Invalid(problems)) => Err(ApiError::classified(
                ErrorClass::Refused,
                "invalid_flow",
                format!("flow `{name}` is skipped: {}", problems.join("; ")),
                None,
            )),
            Err(flows::NotUsable::Unknown) => Err(ApiError::classified(
                ErrorClass::NotFound,
                "not_found",
                format!("no flow is called `{name}`"),
                None,
            )),
        })
        .await?;
    found.map(Json)
}

#[utoipa::path(operation_id = "lint_flows", get, path = "/api/v1/flows/lint", responses((status = 200, body = FlowLint)), security(("bearer" = [])), tag = "flows")]
pub async fn lint(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
) -> Result<Json<FlowLint>, ApiError> {
    let files = s.blocking("flows", flows::scan).await?;
    let errors: usize = files.iter().map(|f| f.problems.len()).sum();
    Ok(Json(FlowLint { files, errors }))
}
