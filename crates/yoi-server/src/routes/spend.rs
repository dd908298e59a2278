//! Spending (docs/budgets.md): a person adds to a ticket's budget; everyone reads what was
//! spent and which limits hold what back.

use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use yoi_db::spend::SpentBy;
use yoi_engine::spend::{CostBreakdown, Limits};
use yoi_store::ops;
use yoi_store::Outcome;

use crate::auth::{AddBudget, Authed, ReadTickets};
use crate::error::ApiResult;
use crate::extract::{Body, IdempotencyKey, Params};
use crate::state::AppState;

/// What a person adds to a ticket's budget: USD, tokens or both.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetBody {
    /// USD added to the ticket's limit.
    #[schema(minimum = 0.01)]
    pub add_usd: Option<f64>,
    /// Tokens added to the ticket's limit.
    #[schema(minimum = 1)]
    pub add_tokens: Option<u64>,
    /// Why, written into the `budget` event.
    #[schema(max_length = 2000)]
    pub note: Option<String>,
}

#[utoipa::path(operation_id = "add_budget", post, tag = "tickets", path = "/api/v1/tickets/{id}/budget", params(("id" = String, Path)), request_body = BudgetBody, responses((status = 200, body = Outcome)), security(("bearer" = [])))]
/// Add to a ticket's budget (people only); a ticket held over it goes on.
pub async fn add(
    State(s): State<AppState>,
    Authed(c, ..): Authed<AddBudget>,
    IdempotencyKey(key): IdempotencyKey,
    Path(id): Path<String>,
    Body(b): Body<BudgetBody>,
) -> ApiResult<Outcome> {
    let ctx = c.ctx(key);
    let outcome = s
        .op(move |ws| ops::add_budget(ws, &ctx, &id, b.add_usd, b.add_tokens, b.note.as_deref()))
        .await?;
    // The hold lifts now, not at the next flow sweep.
    s.read_indexed(yoi_engine::spend::release_held).await?;
    s.flow_wake.notify_one();
    Ok(Json(outcome))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct CostQuery {
    /// How to group: by ticket, UTC day, agent profile or model (default: day).
    pub by: Option<SpentBy>,
    /// Only attempts finished at or after this time (milliseconds since the Unix epoch;
    /// default: 30 days ago).
    pub since_ms: Option<i64>,
}

#[utoipa::path(operation_id = "costs", get, tag = "tickets", path = "/api/v1/costs", params(CostQuery), responses((status = 200, body = CostBreakdown)), security(("bearer" = [])))]
/// What attempts cost, grouped by ticket, day, agent or model.
pub async fn costs(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Params(q): Params<CostQuery>,
) -> ApiResult<CostBreakdown> {
    let now = crate::auth::now().unix_millis();
    let since = q.since_ms.unwrap_or(now - 30 * 86_400_000);
    let by = q.by.unwrap_or(SpentBy::Day);
    s.read_indexed(move |_, index| yoi_engine::spend::breakdown(index, by, since))
        .await
        .map(Json)
}

#[utoipa::path(operation_id = "limits", get, tag = "pods", path = "/api/v1/limits", responses((status = 200, body = Limits)), security(("bearer" = [])))]
/// The budgets in force, what was spent today, the agents paused (a rate limit, a daily budget)
/// and until when, and the tickets held over their budget.
pub async fn limits(State(s): State<AppState>, _a: Authed<ReadTickets>) -> ApiResult<Limits> {
    let now = crate::auth::now().unix_millis();
    s.read_indexed(move |ws, index| yoi_engine::spend::limits(ws, index, now))
        .await
        .map(Json)
}
