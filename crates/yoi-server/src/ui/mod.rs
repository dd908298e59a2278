//! The web dashboard, served by `yoi serve` at the root (the API stays under `/api/v1`).
//!
//! Pages are askama templates from `web/templates`, rendered on the server; the one script
//! (`web/static/live.js`) only adds live updates and keys on top, so every page and every
//! action works without JavaScript. Every action is a POST form answered by a redirect, and
//! calls the same store or engine operation as the API and the CLI: there is no second path
//! around a guard. Reads need a session (a one-time login link makes one); forms need the
//! session's CSRF token. See docs/dashboard.md.

pub mod actions;
pub mod assets;
pub mod board;
mod costs;
pub mod guard;
pub mod inbox;
pub mod markdown;
pub mod new_ticket;
pub mod page;
pub mod pages;
pub mod session;
pub mod ticket;
pub mod workflows;

use axum::middleware;
use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// What the dashboard keeps in memory: unused login codes, one-shot messages, when each
/// session was last seen and the failed logins of the last minute.
#[derive(Default)]
pub struct UiState {
    pub logins: session::Logins,
    pub flashes: page::Flashes,
    pub sessions: session::Sessions,
    pub login_failures: session::LoginFailures,
}

/// The dashboard's routes (pages, fragments, forms, static files).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(board::board))
        .route("/queue", get(pages::queue))
        .route("/tickets", get(pages::tickets))
        .route("/tickets/bulk", post(actions::bulk))
        .route(
            "/tickets/new",
            get(new_ticket::page).post(new_ticket::submit),
        )
        .route("/tickets/new/preview", post(new_ticket::preview))
        .route("/tickets/{id}/check", post(new_ticket::check_edit))
        .route("/tickets/{id}", get(ticket::page))
        .route("/tickets/{id}/act", post(actions::act))
        .route("/tickets/{id}/comment", post(actions::comment))
        .route("/tickets/{id}/answer", post(actions::answer))
        .route("/tickets/{id}/budget", post(actions::budget))
        .route("/tickets/{id}/edit", post(actions::edit))
        .route("/tickets/{id}/relations", post(actions::relation))
        .route("/inbox", get(inbox::page))
        .route("/pods", get(pages::pods))
        .route("/costs", get(costs::page))
        .route("/skills", get(pages::skills))
        .route("/skills/{name}", get(pages::skill))
        .route(
            "/skills/proposals/{id}/{decision}",
            post(actions::decide_proposal),
        )
        .route("/workflows", get(workflows::page))
        .route("/workflows/{slug}", get(workflows::show))
        .route("/workflows/{slug}/invoke", post(workflows::invoke))
        .route(
            "/workflows/offers/{id}/{decision}",
            post(workflows::decide_offer),
        )
        .route("/doctor", get(pages::doctor))
        .route("/login", get(pages::login).post(pages::login_with_token))
        .route("/logout", post(actions::logout))
        .route("/fragments/cards", get(board::cards_fragment))
        .route("/fragments/counts", get(board::counts_fragment))
        .route("/fragments/ticket/{id}", get(ticket::fragment))
        .route("/fragments/ticket-picks", get(new_ticket::picks_fragment))
        .route("/live/events", get(live_events))
        .route("/static/{file}", get(assets::serve))
        .layer(middleware::from_fn(guard::headers))
}

/// `GET /live/events`: the API's event stream (`routes/events.rs`) for a dashboard session,
/// which the API itself does not accept; it counts against the session's stream cap.
async fn live_events(
    axum::extract::State(s): axum::extract::State<AppState>,
    v: session::Viewer,
    headers: axum::http::HeaderMap,
    crate::extract::Params(p): crate::extract::Params<crate::routes::events::EventsParams>,
) -> Result<axum::response::Response, crate::error::ApiError> {
    use axum::response::IntoResponse;
    let holder = v.caller.token.id.clone();
    Ok(crate::routes::events::open(s, &holder, &headers, p)
        .await?
        .into_response())
}
