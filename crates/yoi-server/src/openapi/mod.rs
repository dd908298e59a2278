//! The OpenAPI 3 document, generated from the route annotations and request types. Every
//! route of `crate::router` is listed here (the `openapi` test compares the two), and every
//! operation documents the shared error body as its `default` response.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::routes::tickets as t;

mod constraints;
pub mod events;

#[derive(OpenApi)]
#[openapi(
    info(title = "yoi API", description = "Tickets, routing and live events of a yoi workspace."),
    paths(
        t::list, t::create, t::show, t::edit, t::comment, t::mark_ready, t::queue,
        t::return_to_planning, t::close, t::cancel, t::reopen, t::relations, t::blockers,
        t::add_relation, t::remove_relation, t::plan, t::add_plan, t::doctor,
        crate::routes::events::stream,
        crate::routes::packet::show_packet, crate::routes::packet::submit_packet,
        crate::routes::routing::ticket_routing, crate::routes::routing::retry, crate::routes::routing::router_status,
        crate::routes::skills::list, crate::routes::skills::show, crate::routes::skills::activate,
        crate::routes::skills::resource, crate::routes::skills::proposals, crate::routes::skills::propose,
        crate::routes::skills::approve, crate::routes::skills::reject,
        crate::routes::flows::list, crate::routes::flows::show, crate::routes::flows::lint,
        crate::routes::workflows::list, crate::routes::workflows::show, crate::routes::workflows::lint,
        crate::routes::workflows::invoke,
        crate::routes::workflow_offers::list, crate::routes::workflow_offers::show,
        crate::routes::workflow_offers::detect, crate::routes::workflow_offers::accept,
        crate::routes::workflow_offers::reject,
        crate::routes::pods::register, crate::routes::pods::list, crate::routes::pods::claim,
        crate::routes::pods::heartbeat, crate::routes::pods::complete, crate::routes::pods::fail,
        crate::routes::pods::log, crate::routes::pods::list_assignments, crate::routes::pods::ticket_cost,
        crate::routes::forge_status::show, crate::routes::forge_sync::sync,
        crate::routes::inbox::list,
        crate::routes::inbox::notify_log,
        crate::routes::spend::add, crate::routes::routing::answer, crate::routes::spend::costs, crate::routes::spend::limits,
        crate::routes::health::healthz, crate::routes::health::readyz, crate::ui::session::mint_route, serve
    ),
    components(schemas(t::CreateBody, t::EditBody, t::CommentBody, t::TransitionBody, t::RelationBody, t::PlanBody, t::ListResponse, ErrorBody, ErrorDetail, yoi_db::EventPayload, yoi_db::PlanPayload, crate::routes::skills::ActivateBody, crate::routes::skills::ProposeBody, crate::routes::skills::RejectBody, crate::routes::routing::RetryBody, crate::routes::routing::AnswerBody, crate::routes::spend::BudgetBody, crate::routes::pods::RegisterBody, crate::routes::pods::ClaimBody, crate::routes::pods::HeartbeatBody, crate::routes::pods::CompleteBody, crate::routes::pods::FailBody, crate::routes::pods::LogBody, crate::ui::session::LoginLink)),
    tags(
        (name = "tickets", description = "Tickets: create, edit, comment, state operations, relations and plan records."),
        (name = "routing", description = "Routing: decisions, retry after an open circuit, the orchestrator's status."),
        (name = "skills", description = "Agent Skills: catalog, activation, resources and proposals."),
        (name = "flows", description = "Flows: the step chains tickets run, and the flow files that are skipped."),
        (name = "workflows", description = "Workflows: procedures people write in .yoi/workflow/ and invoke on a ticket, and the files that are skipped."),
        (name = "pods", description = "Pods: registration, claims with leases and fences, heartbeats, results and logs."),
        (name = "inbox", description = "The inbox: everything that waits on a person."),
        (name = "events", description = "Live events (server-sent events) from the outbox."),
        (name = "forge", description = "The forge: a pass of the pull-request driver on a person's request."),
        (name = "service", description = "Health, readiness, doctor and this document."),
    ),
    modifiers(&Bearer, &ErrorResponses)
)]
pub struct ApiDoc;

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The body of every error response: `{ "error": { "code", "message", "details" } }`.
#[derive(ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code, e.g. `stale_state`, `blocked`, `conflicting_replay`.
    pub code: String,
    /// What went wrong and how to fix it, for people.
    pub message: String,
    /// Structured facts about the refusal (ticket, expected and found state, blockers…), one
    /// shape per kind of refusal; absent when there are none.
    pub details: Option<crate::error::details::ErrorDetails>,
}

/// Adds the error body as the `default` response of every operation.
struct ErrorResponses;

impl Modify for ErrorResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let error = ResponseBuilder::new()
            .description("An error; `error.code` names it (see the status table in `error.rs`).")
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build();
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in operations.into_iter().flatten() {
                op.responses
                    .responses
                    .entry("default".to_string())
                    .or_insert_with(|| RefOr::T(error.clone()));
            }
        }
    }
}

/// The document as served: the annotations' shapes plus every enforced constraint
/// ([`constraints`]).
pub fn document() -> serde_json::Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the document serialises");
    constraints::apply(&mut doc);
    doc
}

#[utoipa::path(operation_id = "openapi_document", get, tag = "service", path = "/api/v1/openapi.json", responses((status = 200, description = "this document", body = Object)))]
pub async fn serve() -> Json<serde_json::Value> {
    Json(document())
}
