//! Library errors as HTTP answers: `{ "error": { "code": "stale_state", "message": "…",
//! "details": {…} } }`. The status always comes from the error's class through the one edge
//! table (`yoi_engine::edge`), shared with the CLI's exit codes; this module only adds the
//! machine-readable code and details of each variant. Internal errors are logged with their
//! cause and answered with a generic message.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use yoi_core::state::TransitionError;
use yoi_core::ErrorClass;
use yoi_engine::assignments::AssignmentError;
use yoi_engine::skills::SkillError;
use yoi_skills::{ActivateError, ProposalError, ResourceError};
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
        details: Value,
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

/// The code of an error class when the variant has no more precise one.
fn class_code(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::Invalid => "invalid",
        ErrorClass::NotFound => "not_found",
        ErrorClass::NotPermitted => "forbidden",
        ErrorClass::Conflict => "conflict",
        ErrorClass::Refused => "refused",
        ErrorClass::TooLarge => "too_large",
        ErrorClass::Corrupt => "corrupt_file",
        ErrorClass::Busy => "locked",
        ErrorClass::Setup | ErrorClass::Internal => "internal",
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        store_error(&e)
    }
}

fn store_error(e: &StoreError) -> ApiError {
    let (code, details) = match e {
        StoreError::Resolve(yoi_core::id::ResolveError::Ambiguous { matches, .. }) => {
            ("ambiguous_id", json!({ "matches": matches }))
        }
        StoreError::Transition { source, ticket } => match source {
            TransitionError::NotPermitted { allowed, .. } => {
                ("forbidden", json!({ "ticket": ticket, "allowed": allowed }))
            }
            TransitionError::WrongState {
                expected, found, ..
            } => (
                "wrong_state",
                json!({ "ticket": ticket, "expected": expected, "found": found }),
            ),
            TransitionError::NoEdge { .. } | TransitionError::Unchanged { .. } => {
                ("wrong_state", json!({ "ticket": ticket }))
            }
        },
        StoreError::StaleState {
            ticket,
            expected,
            found,
        } => (
            "stale_state",
            json!({ "ticket": ticket, "expected": expected, "found": found }),
        ),
        StoreError::Blocked { ticket, blockers } => {
            ("blocked", json!({ "ticket": ticket, "blockers": blockers }))
        }
        StoreError::ConflictingReplay { op, ticket } => (
            "conflicting_replay",
            json!({ "idempotency_key": op, "ticket": ticket }),
        ),
        StoreError::DuplicateRelation { .. } => ("duplicate_relation", Value::Null),
        StoreError::Cycle { cycle, .. } => ("cycle", json!({ "cycle": cycle })),
        StoreError::BriefIncomplete { ticket, missing } => (
            "brief_incomplete",
            json!({ "ticket": ticket, "missing": missing }),
        ),
        StoreError::SelfRelation { .. } => ("self_relation", Value::Null),
        StoreError::Invalid { path, line, .. } => {
            ("corrupt_file", json!({ "path": path, "line": line }))
        }
        StoreError::Refused { reason } => {
            (class_code(e.class()), json!({ "reason": reason.code() }))
        }
        StoreError::NotPermitted { reason } => {
            (class_code(e.class()), json!({ "reason": reason.code() }))
        }
        StoreError::BadId(_)
        | StoreError::BadInput { .. }
        | StoreError::Resolve(_)
        | StoreError::NoSuchRelation { .. }
        | StoreError::Locked { .. }
        | StoreError::Io { .. }
        | StoreError::Database { .. }
        | StoreError::DatabaseTooNew { .. }
        | StoreError::NotInitialized { .. }
        | StoreError::NotGit { .. } => (class_code(e.class()), Value::Null),
    };
    ApiError::classified(e.class(), code, e, details)
}

impl From<AssignmentError> for ApiError {
    fn from(e: AssignmentError) -> Self {
        let (code, details) = match &e {
            AssignmentError::Store(inner) => return store_error(inner),
            AssignmentError::StaleFence {
                id,
                fence,
                current,
                status,
            } => (
                "stale_fence",
                json!({ "assignment": id, "fence": fence, "current_fence": current, "status": status }),
            ),
            AssignmentError::TouchesTickets { paths, .. } => {
                ("touches_tickets", json!({ "paths": paths }))
            }
            AssignmentError::NotFound { .. }
            | AssignmentError::NotYours { .. }
            | AssignmentError::WrongRole { .. }
            | AssignmentError::UnknownPod { .. }
            | AssignmentError::BadResult { .. }
            | AssignmentError::Prepare { .. }
            | AssignmentError::Git(_) => (class_code(e.class()), Value::Null),
        };
        ApiError::classified(e.class(), code, &e, details)
    }
}

impl From<SkillError> for ApiError {
    fn from(e: SkillError) -> Self {
        let code = match &e {
            SkillError::Store(inner) => return store_error(inner),
            SkillError::Activate(ActivateError::InvalidSkill { .. })
            | SkillError::Proposal(ProposalError::Invalid { .. }) => "invalid_skill",
            SkillError::Proposal(ProposalError::AlreadyDecided { .. }) => "already_decided",
            SkillError::Resource(
                ResourceError::AbsolutePath { .. }
                | ResourceError::Traversal { .. }
                | ResourceError::OutsideSkill { .. },
            ) => "outside_skill",
            SkillError::Activate(_)
            | SkillError::Resource(_)
            | SkillError::Proposal(_)
            | SkillError::Unknown { .. } => class_code(e.class()),
        };
        ApiError::classified(e.class(), code, &e, Value::Null)
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
