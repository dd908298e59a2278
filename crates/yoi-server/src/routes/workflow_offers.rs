//! `/api/v1/workflow-offers…`: the offers yoi makes from the tickets' history
//! (docs/workflows.md, "Offers") — the same answers as `yoi workflow offers | offer | accept |
//! reject`. Reading is open to every token that reads tickets; looking at the history now,
//! accepting and rejecting take a person's token (`DecideOffer`): no pod or agent scope can
//! write, accept or turn on a workflow.

use axum::extract::{Path, State};
use axum::Json;
use yoi_engine::skill_format::offer::Offer;
use yoi_engine::workflows::offers::{self, Detected, OfferList, OffersError};

use crate::auth::{now, Authed, DecideOffer, ReadTickets};
use crate::error::ApiError;
use crate::extract::Body;
use crate::routes::skills::RejectBody;
use crate::state::AppState;

impl From<OffersError> for ApiError {
    fn from(e: OffersError) -> Self {
        match e {
            OffersError::Store(inner) => inner.into(),
            other => ApiError::classified(other.class(), other.code(), &other, None),
        }
    }
}

#[utoipa::path(operation_id = "list_workflow_offers", get, path = "/api/v1/workflow-offers", responses((status = 200, body = OfferList)), security(("bearer" = [])), tag = "workflows")]
pub async fn list(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
) -> Result<Json<OfferList>, ApiError> {
    Ok(Json(s.blocking("workflow offers", offers::list).await??))
}

#[utoipa::path(operation_id = "show_workflow_offer", get, path = "/api/v1/workflow-offers/{id}", params(("id" = String, Path)), responses((status = 200, body = Offer)), security(("bearer" = [])), tag = "workflows")]
pub async fn show(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(id): Path<String>,
) -> Result<Json<Offer>, ApiError> {
    Ok(Json(
        s.blocking("workflow offer", move |ws| offers::show(ws, &id))
            .await??,
    ))
}

#[utoipa::path(operation_id = "detect_workflow_offers", post, path = "/api/v1/workflow-offers/detect", responses((status = 200, body = Detected)), security(("bearer" = [])), tag = "workflows")]
pub async fn detect(
    State(s): State<AppState>,
    _a: Authed<DecideOffer>,
) -> Result<Json<Detected>, ApiError> {
    let state = s.clone();
    let found = tokio::task::spawn_blocking(move || offers::detect(&state.ws, &state.index, now()))
        .await
        .map_err(|e| ApiError::internal("workflow offers", e))??;
    Ok(Json(found))
}

#[utoipa::path(operation_id = "accept_workflow_offer", post, path = "/api/v1/workflow-offers/{id}/accept", params(("id" = String, Path)), responses((status = 200, body = Offer)), security(("bearer" = [])), tag = "workflows")]
pub async fn accept(
    State(s): State<AppState>,
    Authed(c, ..): Authed<DecideOffer>,
    Path(id): Path<String>,
) -> Result<Json<Offer>, ApiError> {
    let approver = c.principal.author();
    let o = s
        .blocking("accept offer", move |ws| {
            offers::accept(ws, &id, &approver, now())
        })
        .await??;
    Ok(Json(o))
}

#[utoipa::path(operation_id = "reject_workflow_offer", post, path = "/api/v1/workflow-offers/{id}/reject", params(("id" = String, Path)), request_body = RejectBody, responses((status = 200, body = Offer)), security(("bearer" = [])), tag = "workflows")]
pub async fn reject(
    State(s): State<AppState>,
    Authed(c, ..): Authed<DecideOffer>,
    Path(id): Path<String>,
    Body(b): Body<RejectBody>,
) -> Result<Json<Offer>, ApiError> {
    let approver = c.principal.author();
    let o = s
        .blocking("reject offer", move |ws| {
            offers::reject(ws, &id, &approver, &b.reason, now())
        })
        .await??;
    Ok(Json(o))
}
