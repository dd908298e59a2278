//! The OpenAPI 3 document, generated from the route annotations and request types.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::tickets as t;

#[derive(OpenApi)]
#[openapi(
    info(title = "yoi API", description = "Tickets, routing and live events of a yoi workspace."),
    paths(
        t::list, t::create, t::show, t::edit, t::comment, t::mark_ready, t::queue,
        t::return_to_planning, t::close, t::cancel, t::reopen, t::relations, t::blockers,
        t::add_relation, t::remove_relation, t::plan, t::add_plan, t::doctor
    ),
    components(schemas(t::CreateBody, t::EditBody, t::CommentBody, t::TransitionBody, t::RelationBody, t::PlanBody, t::ListResponse)),
    modifiers(&Bearer)
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

pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

pub async fn serve() -> Json<utoipa::openapi::OpenApi> {
    Json(document())
}
