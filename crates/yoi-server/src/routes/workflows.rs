//! `/api/v1/workflows…`: the workflows people write in `.yoi/workflow/<slug>.md` and what is
//! wrong with the files that are skipped — the same answers as `yoi workflow list | show |
//! lint`. A slug that is not one (`..%2Fx`) is refused before any file is looked at.
//!
//! `POST /api/v1/workflows/{slug}/invoke` is an agent's own invocation, with the token of its
//! claim and for that attempt only; a person invokes by commenting `/<slug>` on the ticket.

use axum::extract::{Path, State};
use axum::Json;
use yoi_engine::workflows::invoke::{self, AgentInvoked};
use yoi_engine::workflows::{self, WorkflowError, WorkflowLint, WorkflowList};
use yoi_skills::workflow::Workflow;

use crate::auth::{Authed, InvokeWorkflow, ReadTickets};
use crate::error::ApiError;
use crate::state::AppState;

impl From<WorkflowError> for ApiError {
    fn from(e: WorkflowError) -> Self {
        match e {
            WorkflowError::Store(inner) => inner.into(),
            other => ApiError::classified(other.class(), other.code(), &other, None),
        }
    }
}

#[utoipa::path(operation_id = "list_workflows", get, path = "/api/v1/workflows", responses((status = 200, body = WorkflowList)), security(("bearer" = [])), tag = "workflows")]
pub async fn list(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
) -> Result<Json<WorkflowList>, ApiError> {
    Ok(Json(s.blocking("workflows", workflows::list).await?))
}

#[utoipa::path(operation_id = "show_workflow", get, path = "/api/v1/workflows/{slug}", params(("slug" = String, Path)), responses((status = 200, body = Workflow)), security(("bearer" = [])), tag = "workflows")]
pub async fn show(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(slug): Path<String>,
) -> Result<Json<Workflow>, ApiError> {
    let found = s
        .blocking("workflows", move |ws| workflows::lookup(ws, &slug))
        .await?;
    Ok(Json(found?))
}

#[utoipa::path(operation_id = "lint_workflows", get, path = "/api/v1/workflows/lint", responses((status = 200, body = WorkflowLint)), security(("bearer" = [])), tag = "workflows")]
pub async fn lint(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
) -> Result<Json<WorkflowLint>, ApiError> {
    Ok(Json(
        s.blocking("workflows", |ws| workflows::lint(ws, None))
            .await?,
    ))
}

#[utoipa::path(operation_id = "invoke_workflow", post, path = "/api/v1/workflows/{slug}/invoke", params(("slug" = String, Path)), responses((status = 200, body = AgentInvoked)), security(("bearer" = [])), tag = "workflows")]
pub async fn invoke(
    State(s): State<AppState>,
    Authed(c, ..): Authed<InvokeWorkflow>,
    Path(slug): Path<String>,
) -> Result<Json<AgentInvoked>, ApiError> {
    let yoi_db::Scope::Agent(own) = c.token.scope.clone() else {
        return Err(ApiError::forbidden(
            "only an agent invokes a workflow here, with the token of its claim; a person comments `/<slug>` on the ticket",
        ));
    };
    let ctx = c.ctx(None);
    let state = s.clone();
    let answer = tokio::task::spawn_blocking(move || {
        invoke::for_agent(&state.ws, &state.index, &ctx, &slug, &own)
    })
    .await
    .map_err(|e| ApiError::internal("workflow invocation", e))??;
    Ok(Json(answer))
}
