//! Request extractors with JSON errors: the body (an empty body means the default request) and
//! the optional `Idempotency-Key` header, which becomes the operation id.

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
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Body(T::default()));
        }
        serde_json::from_slice(&bytes)
            .map(Body)
            .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
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
