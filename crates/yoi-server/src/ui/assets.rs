//! The dashboard's static files, embedded in the binary and served at content-hashed
//! addresses, so a browser caches each version for good and never runs a stale script: the
//! stylesheet, the live script every page loads, and the New ticket page's own script.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

pub const CSS: &str = include_str!("../../../../web/static/app.css");
pub const JS: &str = include_str!("../../../../web/static/live.js");
pub const BRIEF_JS: &str = include_str!("../../../../web/static/brief.js");

fn hashed(stem: &str, ext: &str, body: &str) -> String {
    let h = yoi_core::sha256_hex(body.as_bytes());
    format!("/static/{stem}.{}.{ext}", &h[..12])
}

pub static CSS_URL: LazyLock<String> = LazyLock::new(|| hashed("app", "css", CSS));
pub static JS_URL: LazyLock<String> = LazyLock::new(|| hashed("live", "js", JS));
pub static BRIEF_JS_URL: LazyLock<String> = LazyLock::new(|| hashed("brief", "js", BRIEF_JS));

/// `GET /static/{file}`: only the current versions exist.
pub async fn serve(Path(file): Path<String>) -> Response {
    let path = format!("/static/{file}");
    let (body, kind) = if path == *CSS_URL {
        (CSS, "text/css; charset=utf-8")
    } else if path == *JS_URL {
        (JS, "text/javascript; charset=utf-8")
    } else if path == *BRIEF_JS_URL {
        (BRIEF_JS, "text/javascript; charset=utf-8")
    } else {
        return (StatusCode::NOT_FOUND, "no such file").into_response();
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
        ],
        body,
    )
        .into_response()
}
