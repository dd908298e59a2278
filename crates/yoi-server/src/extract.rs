//! Request extractors with JSON errors: the body (an empty body means the default request; any
//! other body must be a JSON object), the query string, and the optional `Idempotency-Key`
//! header, which becomes the operation id. axum's own extractors answer plain text, so routes
//! use these instead.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

/// A JSON body; an empty body is `T::default()`.
pub struct Body<T>(pub T);

impl<T: DeserializeOwned + Default> FromRequest<AppState> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(e.status(), "too_large", "the request body is too large")
            } else {
                ApiError::bad_request(format!("could not read the body: {e}"))
            }
        })?;
        let Some(first) = bytes.iter().find(|b| !b.is_ascii_whitespace()) else {
            return Ok(Body(T::default()));
        };
        // serde would also accept a struct written as an array of its fields, in order; the API
        // takes named fields only.
        if *first != b'{' {
            return Err(ApiError::bad_request(
                "invalid JSON body: expected a JSON object",
            ));
        }
        serde_json::from_slice(&bytes)
            .map(Body)
            .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
    }
}

/// Query parameters; a parameter that does not parse, or one the route does not know, is 400.
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Params(q.0))
            .map_err(|e| ApiError::bad_request(e.body_text()))
    }
}

/// The `Idempotency-Key` header, if any.
pub struct IdempotencyKey(pub Option<String>);

impl FromRequestParts<AppState> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        match parts.headers.get("idempotency-key") {
            None => Ok(IdempotencyKey(None)),
            Some(v) => {
                let key = v
                    .to_str()
                    .map_err(|_| ApiError::bad_request("Idempotency-Key must be visible ASCII"))?
                    .trim()
                    .to_string();
                yoi_store::ops::validate_op(&key)
                    .map_err(|e| ApiError::bad_request(format!("Idempotency-Key: {e}")))?;
                Ok(IdempotencyKey(Some(key)))
            }
        }
    }
}

/// A `limit` query parameter: 1 to 1000, 100 when absent; anything else is refused (the
/// document states the same range).
pub fn page_size(limit: Option<i64>) -> Result<i64, crate::error::ApiError> {
    match limit {
        None => Ok(100),
        Some(n @ 1..=1000) => Ok(n),
        Some(n) => Err(crate::error::ApiError::bad_request(format!(
            "`limit` must be 1 to 1000, not {n}"
        ))),
    }
}
