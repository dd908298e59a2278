//! Library errors as HTTP answers: `{ "error": { "code": "stale_state", "message": "…",
//! "details": {…} } }`. The status always comes from the error's class through the one edge
//! table (`yoi_engine::edge`), shared with the CLI's exit codes, and the code from the error
//! itself (`StoreError::code`, the engine errors' `code`, a refusal's rule as `details.reason`);
//! this module only adds the details of each variant. Internal errors are logged with their
//! cause and answered with a generic message.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use yoi_core::state::TransitionError;
use yoi_core::ErrorClass;
use yoi_engine::assignments::AssignmentError;
use yoi_engine::skills::SkillError;
use yoi_store::StoreError;

pub mod details;

use details::*;

/// Every `error.code` an answer can carry, the enumeration the OpenAPI document gives
/// `ErrorDetail.code`. The codes come from the errors themselves (`StoreError::code`, the
/// engine errors' `code`, an [`ErrorClass`](yoi_core::ErrorClass)'s) and from the few answers
/// the server makes itself; the CLI's `error_edges` tests answer every error variant and check
/// its code is here, and a debug build refuses to answer a code that is not.
pub const CODES: &[&str] = &[
    "invalid",
    "ambiguous_id",
    "outside_skill",
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "stale_state",
    "wrong_state",
    "blocked",
    "conflicting_replay",
    "duplicate_relation",
    "cycle",
    "already_decided",
    "stale_fence",
    "conflict",
    "too_large",
    "brief_incomplete",
    "self_relation",
    "invalid_skill",
    "invalid_flow",
    "invalid_workflow",
    "touches_tickets",
    "refused",
    "too_many_streams",
    "locked",
    "remote_unreachable",
    "corrupt_file",
    "internal",
];

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Option<ErrorDetails>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            details: None,
        }
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid", message)
    }

    pub fn internal(context: &str, cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "{context}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; see the server log",
        )
    }
}

impl ApiError {
    /// The answer for an error of `class`: the status comes from the one edge table
    /// (`yoi_engine::edge`), never from the call site. Internal and setup errors are logged
    /// with their cause and answered with a generic message.
    pub fn classified(
        class: ErrorClass,
        code: &'static str,
        message: impl std::fmt::Display,
        details: Option<ErrorDetails>,
    ) -> Self {
        let edge = yoi_engine::edge::edge(class);
        let status =
            StatusCode::from_u16(edge.http_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if edge.hide_message {
            return ApiError::internal(code, message);
        }
        ApiError {
            status,
            code,
            message: message.to_string(),
            details,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        store_error(&e)
    }
}

/// The code comes from the error ([`StoreError::code`]; a refusal's rule from
/// [`StoreError::reason`]); this adds the facts a client can act on.
fn store_error(e: &StoreError) -> ApiError {
    let details = match e {
        StoreError::Resolve(yoi_core::id::ResolveError::Ambiguous { matches, .. }) => {
            Some(ErrorDetails::Ambiguous(AmbiguousDetails {
                matches: matches.clone(),
            }))
        }
        StoreError::Transition { source, ticket } => Some(match source {
            TransitionError::NotPermitted { allowed, .. } => {
                ErrorDetails::NotPermitted(NotPermittedDetails {
                    ticket: ticket.clone(),
                    allowed: allowed.clone(),
                })
            }
            TransitionError::WrongState {
                expected, found, ..
            } => ErrorDetails::WrongState(WrongStateDetails {
                ticket: ticket.clone(),
                expected: expected.clone(),
                found: *found,
            }),
            TransitionError::NoEdge { .. } | TransitionError::Unchanged { .. } => {
                ErrorDetails::Ticket(TicketDetails {
                    ticket: ticket.clone(),
                })
            }
        }),
        StoreError::StaleState {
            ticket,
            expected,
            found,
        } => Some(ErrorDetails::StaleState(StaleStateDetails {
            ticket: ticket.clone(),
            expected: *expected,
            found: *found,
        })),
        StoreError::Blocked { ticket, blockers } => Some(ErrorDetails::Blocked(BlockedDetails {
            ticket: ticket.clone(),
            blockers: blockers.clone(),
        })),
        StoreError::ConflictingReplay { op, ticket } => {
            Some(ErrorDetails::ConflictingReplay(ConflictingReplayDetails {
                idempotency_key: op.clone(),
                ticket: ticket.clone(),
            }))
        }
        StoreError::Cycle { cycle, .. } => Some(ErrorDetails::Cycle(CycleDetails {
            cycle: cycle.clone(),
        })),
        StoreError::BriefIncomplete { ticket, missing } => {
            Some(ErrorDetails::BriefIncomplete(BriefIncompleteDetails {
                ticket: ticket.clone(),
                missing: missing.clone(),
            }))
        }
        StoreError::Invalid { path, line, .. } => Some(ErrorDetails::File(FileDetails {
            path: path.display().to_string(),
            line: *line,
        })),
        // A refusal or permission rule names itself; the other errors add nothing.
        _ => e
            .reason()
            .map(|reason| ErrorDetails::Rule(RuleDetails { reason })),
    };
    ApiError::classified(e.class(), e.code(), e, details)
}

impl From<AssignmentError> for ApiError {
    fn from(e: AssignmentError) -> Self {
        let details = match &e {
            AssignmentError::Store(inner) => return store_error(inner),
            AssignmentError::StaleFence {
                id,
                fence,
                current,
                status,
            } => Some(ErrorDetails::StaleFence(StaleFenceDetails {
                assignment: id.clone(),
                fence: *fence,
                current_fence: *current,
                status: *status,
            })),
            AssignmentError::TouchesTickets { paths, .. } => {
                Some(ErrorDetails::Paths(PathsDetails {
                    paths: paths.clone(),
                }))
            }
            AssignmentError::NotFound { .. }
            | AssignmentError::NotYours { .. }
            | AssignmentError::WrongRole { .. }
            | AssignmentError::UnknownPod { .. }
            | AssignmentError::BadResult { .. }
            | AssignmentError::Prepare { .. }
            | AssignmentError::RemoteUnreachable { .. }
            | AssignmentError::Git(_) => None,
        };
        ApiError::classified(e.class(), e.code(), &e, details)
    }
}

impl From<SkillError> for ApiError {
    fn from(e: SkillError) -> Self {
        if let SkillError::Store(inner) = &e {
            return store_error(inner);
        }
        ApiError::classified(e.class(), e.code(), &e, None)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        debug_assert!(
            CODES.contains(&self.code),
            "the error code `{}` is not in yoi_server::error::CODES (nor in the document)",
            self.code
        );
        let mut body = json!({ "error": { "code": self.code, "message": self.message } });
        if let Some(details) = &self.details {
            body["error"]["details"] = serde_json::to_value(details).unwrap_or_default();
        }
        let mut resp = (self.status, axum::Json(body)).into_response();
        // A refusal may be decided before the request body is read (authentication, size,
        // unknown route); the server then closes the connection. Say so on every error, so
        // keep-alive clients never send their next request into a closing socket.
        {
            resp.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        }
        resp
    }
}

/// What a JSON route answers: its body, or the shared error body.
pub type ApiResult<T> = Result<axum::Json<T>, ApiError>;
