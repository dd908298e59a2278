//! The one table from domain error to HTTP status and JSON error body:
//! `{ "error": { "code": "stale_state", "message": "…", "details": {…} } }`.
//! Internal errors are logged with their cause and answered with a generic message.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use yoi_core::state::TransitionError;
use yoi_store::StoreError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Value,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            details: Value::Null,
        }
    }

    pub fn unauthorized(message: &str) -> Self {
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

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        use StatusCode as S;
        let message = e.to_string();
        let (status, code, details) = match &e {
            StoreError::BadId(_) | StoreError::BadInput { .. } => {
                (S::BAD_REQUEST, "invalid", Value::Null)
            }
            StoreError::Resolve(yoi_core::id::ResolveError::NotFound { .. }) => {
                (S::NOT_FOUND, "not_found", Value::Null)
            }
            StoreError::Resolve(yoi_core::id::ResolveError::Ambiguous { matches, .. }) => (
                S::BAD_REQUEST,
                "ambiguous_id",
                json!({ "matches": matches }),
            ),
            StoreError::Resolve(_) => (S::BAD_REQUEST, "invalid", Value::Null),
            StoreError::Transition { source, ticket } => match source {
                TransitionError::NotPermitted { allowed, .. } => (
                    S::FORBIDDEN,
                    "forbidden",
                    json!({ "ticket": ticket, "allowed": allowed }),
                ),
                TransitionError::WrongState {
                    expected, found, ..
                } => (
                    S::CONFLICT,
                    "wrong_state",
                    json!({ "ticket": ticket, "expected": expected, "found": found }),
                ),
                _ => (S::CONFLICT, "wrong_state", json!({ "ticket": ticket })),
            },
            StoreError::StaleState {
                ticket,
                expected,
                found,
            } => (
                S::CONFLICT,
                "stale_state",
                json!({ "ticket": ticket, "expected": expected, "found": found }),
            ),
            StoreError::Blocked { ticket, blockers } => (
                S::CONFLICT,
                "blocked",
                json!({ "ticket": ticket, "blockers": blockers }),
            ),
            StoreError::ConflictingReplay { op, ticket } => (
                S::CONFLICT,
                "conflicting_replay",
                json!({ "idempotency_key": op, "ticket": ticket }),
            ),
            StoreError::DuplicateRelation { .. } => {
                (S::CONFLICT, "duplicate_relation", Value::Null)
            }
            StoreError::Cycle { cycle, .. } => (S::CONFLICT, "cycle", json!({ "cycle": cycle })),
            StoreError::NoSuchRelation { .. } => (S::NOT_FOUND, "not_found", Value::Null),
            StoreError::BriefIncomplete { ticket, missing } => (
                S::UNPROCESSABLE_ENTITY,
                "brief_incomplete",
                json!({ "ticket": ticket, "missing": missing }),
            ),
            StoreError::Refused { .. } => (S::UNPROCESSABLE_ENTITY, "refused", Value::Null),
            StoreError::SelfRelation { .. } => {
                (S::UNPROCESSABLE_ENTITY, "self_relation", Value::Null)
            }
            StoreError::Locked { .. } => (S::SERVICE_UNAVAILABLE, "locked", Value::Null),
            StoreError::Invalid { path, line, .. } => (
                S::INTERNAL_SERVER_ERROR,
                "corrupt_file",
                json!({ "path": path, "line": line }),
            ),
            StoreError::Io { .. }
            | StoreError::Database { .. }
            | StoreError::DatabaseTooNew { .. }
            | StoreError::NotInitialized { .. }
            | StoreError::NotGit { .. } => return ApiError::internal("store error", &e),
        };
        ApiError {
            status,
            code,
            message,
            details,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({ "error": { "code": self.code, "message": self.message } });
        if !self.details.is_null() {
            body["error"]["details"] = self.details;
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
