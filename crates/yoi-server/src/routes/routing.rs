//! Routing: the routing view of a ticket, a person's `retry` and their answer to an agent's
//! question, and the orchestrator's status.

use axum::extract::{Path, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use yoi_store::ops;
use yoi_store::Outcome;

use crate::auth::*;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Body, IdempotencyKey};
use crate::state::AppState;
use yoi_engine::routing::view::{routing_view, RoutingView};
use yoi_engine::routing::{RouterStatus, CONSUMER};

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryBody {
    /// What was fixed; written into the retry event.
    pub reason: Option<String>,
}

#[utoipa::path(get, tag = "routing", path = "/api/v1/tickets/{id}/routing", params(("id" = String, Path)), responses((status = 200, body = RoutingView)), security(("bearer" = [])))]
/// The latest routing decision, what the router would decide now (not written), blockers,
/// brief completeness, capacity and the circuit.
pub async fn ticket_routing(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(id): Path<String>,
) -> ApiResult<RoutingView> {
    let max = s.ws.config.router.max_inprogress;
    s.read(move |ws| routing_view(ws, &id, max)).await.map(Json)
}

#[utoipa::path(post, tag = "routing", path = "/api/v1/tickets/{id}/retry", params(("id" = String, Path)), request_body = RetryBody, responses((status = 200, body = Outcome)), security(("bearer" = [])))]
/// Close the ticket's circuit and route it again (people only; the ticket must be queued).
pub async fn retry(
    State(s): State<AppState>,
    Authed(c, ..): Authed<Retry>,
    IdempotencyKey(key): IdempotencyKey,
    Path(id): Path<String>,
    Body(b): Body<RetryBody>,
) -> ApiResult<Outcome> {
    let ctx = c.ctx(key);
    s.op(move |ws| ops::retry(ws, &ctx, &id, b.reason.as_deref()))
        .await
        .map(Json)
}

/// A person's answer to the question an agent asked on a ticket.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerBody {
    /// The answer, written into the `answer` event and handed to the step's next attempt.
    #[schema(min_length = 1, max_length = 20000)]
    pub message: String,
}

#[utoipa::path(operation_id = "answer_question", post, tag = "tickets", path = "/api/v1/tickets/{id}/answer", params(("id" = String, Path)), request_body = AnswerBody, responses((status = 200, body = Outcome)), security(("bearer" = [])))]
/// Answer the question an agent asked (people only; the ticket must be in progress with a
/// question open): the step that asked is handed out again with the answer in its prompt.
pub async fn answer(
    State(s): State<AppState>,
    Authed(c, ..): Authed<AnswerQuestion>,
    IdempotencyKey(key): IdempotencyKey,
    Path(id): Path<String>,
    Body(b): Body<AnswerBody>,
) -> ApiResult<Outcome> {
    let ctx = c.ctx(key);
    s.op(move |ws| ops::answer(ws, &ctx, &id, &b.message))
        .await
        .map(Json)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RouterView {
    #[serde(flatten)]
    pub status: RouterStatus,
    /// Every outbox event has been handled by the orchestrator.
    pub caught_up: bool,
    /// Caught up, no pass running and no ticket waiting out a retry backoff: routing has reached
    /// a fixed point until something changes.
    pub settled: bool,
    /// Flow sweeps (expired leases, next steps, due merges) finished since the server
    /// started: once it is two past what a client read, a whole sweep ran after that read.
    pub flow_sweeps: u64,
}

#[utoipa::path(get, tag = "routing", path = "/api/v1/router", responses((status = 200, body = RouterView)), security(("bearer" = [])))]
/// What the orchestrator loop is doing, and how many flow sweeps have run.
pub async fn router_status(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
) -> ApiResult<RouterView> {
    let status = s.router.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let pending = s
        .db()
        .next_events(CONSUMER, crate::auth::now().unix_millis(), 1)
        .await
        .map_err(ApiError::from)?;
    let caught_up = status.enabled && pending.is_empty();
    Ok(Json(RouterView {
        settled: caught_up && !status.busy && status.holding.is_empty(),
        caught_up,
        status,
        flow_sweeps: s.flow_sweeps.load(std::sync::atomic::Ordering::Acquire),
    }))
}
