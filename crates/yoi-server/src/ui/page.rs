//! What every dashboard page shares: its frame (navigation, the live position, the session's
//! CSRF token, messages left by the last action), errors as pages, and small formatting helpers.

use std::collections::HashMap;
use std::sync::Mutex;

use askama::Template;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::session::Viewer;
use crate::error::ApiError;
use crate::state::AppState;

/// A message shown once on the next page the session sees.
#[derive(Debug, Clone)]
pub struct Flash {
    /// `ok` or `error`.
    pub kind: &'static str,
    pub text: String,
}

impl Flash {
    pub fn ok(text: impl Into<String>) -> Flash {
        Flash {
            kind: "ok",
            text: text.into(),
        }
    }

    pub fn error(text: impl Into<String>) -> Flash {
        Flash {
            kind: "error",
            text: text.into(),
        }
    }
}

/// Messages waiting for each session (by session hash), shown once.
#[derive(Default)]
pub struct Flashes(Mutex<HashMap<String, Vec<Flash>>>);

impl Flashes {
    pub fn push(&self, session: &str, f: Flash) {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() > 1024 {
            m.clear();
        }
        let v = m.entry(session.to_string()).or_default();
        v.push(f);
        let extra = v.len().saturating_sub(50);
        v.drain(..extra);
    }

    pub fn take(&self, session: &str) -> Vec<Flash> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session)
            .unwrap_or_default()
    }
}

/// The frame around every page.
pub struct Chrome {
    pub title: String,
    /// Which navigation entry is current (`board`, `queue`, `tickets`, …).
    pub nav: &'static str,
    /// The outbox position the page was rendered at; live updates resume after it.
    pub seq: i64,
    pub csrf: String,
    pub principal: String,
    pub flashes: Vec<Flash>,
    /// The ticket a ticket page follows (live updates for it only).
    pub live_ticket: Option<String>,
    pub css: &'static str,
    pub js: &'static str,
    pub router: String,
    /// Open inbox entries, shown in the navigation of every page.
    pub inbox: usize,
}

/// Where a page's live updates resume: the outbox position, read *before* the page reads what
/// it shows. An event that lands while the page is built is then sent again (the page applies
/// it twice, harmlessly) instead of being skipped: read after, a card the router moved in that
/// moment would stay in its old lane until the next reload.
pub struct LiveMark(i64);

impl LiveMark {
    pub async fn take(s: &AppState) -> Result<LiveMark, UiError> {
        Ok(LiveMark(
            s.db().last_event_seq().await.map_err(UiError::from_store)?,
        ))
    }
}

impl Chrome {
    pub async fn new(
        s: &AppState,
        v: &Viewer,
        mark: LiveMark,
        title: impl Into<String>,
        nav: &'static str,
    ) -> Result<Chrome, UiError> {
        let LiveMark(seq) = mark;
        let router = router_line(s);
        let inbox = super::inbox::count(s, v).await;
        Ok(Chrome {
            title: title.into(),
            nav,
            seq,
            csrf: v.csrf.clone(),
            principal: v.caller.principal.name.clone(),
            flashes: s.ui.flashes.take(&v.session),
            live_ticket: None,
            css: super::assets::CSS_URL.as_str(),
            js: super::assets::JS_URL.as_str(),
            router,
            inbox,
        })
    }
}

/// What the orchestrator is doing, in a few words.
pub fn router_line(s: &AppState) -> String {
    let r = s.router.lock().unwrap_or_else(|p| p.into_inner());
    if !r.enabled {
        return "router off".into();
    }
    let mut line = format!("router {}", if r.busy { "busy" } else { "idle" });
    if !r.holding.is_empty() {
        line.push_str(&format!(", {} waiting out a backoff", r.holding.len()));
    }
    line
}

/// An error answered with a page.
#[derive(Debug)]
pub enum UiError {
    /// No session: the browser is sent to the login page.
    LoginNeeded,
    Forbidden(String),
    NotFound(String),
    BadRequest(String),
    Internal(String),
}

impl UiError {
    pub fn from_store(e: yoi_store::StoreError) -> UiError {
        UiError::from(ApiError::from(e))
    }
}

impl From<ApiError> for UiError {
    fn from(e: ApiError) -> UiError {
        match e.status {
            StatusCode::NOT_FOUND => UiError::NotFound(e.message),
            StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED => UiError::Forbidden(e.message),
            s if s.is_server_error() => UiError::Internal(e.message),
            _ => UiError::BadRequest(e.message),
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    status: u16,
    reason: &'a str,
    message: &'a str,
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            UiError::LoginNeeded => return Redirect::to("/login").into_response(),
            UiError::Forbidden(m) => (StatusCode::FORBIDDEN, m),
            UiError::NotFound(m) => (StatusCode::NOT_FOUND, m),
            UiError::BadRequest(m) => (StatusCode::BAD_REQUEST, m),
            UiError::Internal(m) => {
                tracing::error!(cause = %m, "dashboard page");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal error; see the server log".to_string(),
                )
            }
        };
        let page = ErrorPage {
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or(""),
            message: &message,
        };
        (status, html(&page)).into_response()
    }
}

/// A rendered template as an HTML answer that is never cached.
pub fn html<T: Template>(t: &T) -> Response {
    match t.render() {
        Ok(body) => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            body,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "rendering a dashboard template");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error; see the server log",
            )
                .into_response()
        }
    }
}

/// How long ago `at` (RFC 3339) was, short: `40s`, `12m`, `5h`, `3d`.
pub fn age(at: &str, now_ms: i64) -> String {
    let Ok(t) = yoi_core::Timestamp::parse(at) else {
        return String::new();
    };
    let secs = ((now_ms - t.unix_millis()) / 1000).max(0);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// The last characters of an id, as cards show it.
pub fn short(id: &str) -> String {
    let n = id.chars().count();
    id.chars().skip(n.saturating_sub(6)).collect()
}

/// Where to go after a form: the form's `back` when it is a path on this site, else `fallback`.
/// Only visible ASCII counts: browsers drop tabs and newlines from a URL, so `/\t/host` would
/// otherwise become `//host`, another site.
pub fn back_to(back: Option<&str>, fallback: &str) -> String {
    match back {
        Some(b)
            if b.starts_with('/')
                && !b.starts_with("//")
                && b.chars().all(|c| c.is_ascii_graphic() && c != '\\') =>
        {
            b.into()
        }
        _ => fallback.into(),
    }
}

/// Labels of the lanes and states.
pub fn state_label(s: yoi_core::State) -> &'static str {
    match s {
        yoi_core::State::Planning => "Planning",
        yoi_core::State::Ready => "Ready",
        yoi_core::State::Queued => "Queued",
        yoi_core::State::Inprogress => "In progress",
        yoi_core::State::Done => "Done",
        yoi_core::State::Closed => "Closed",
    }
}

#[cfg(test)]
mod tests {
    use super::back_to;

    #[test]
    fn only_paths_of_this_site_are_followed_back() {
        for ok in [
            "/",
            "/queue",
            "/?q=a+b&state=ready#lane-ready",
            "/tickets/01J",
        ] {
            assert_eq!(back_to(Some(ok), "/x"), ok);
        }
        for bad in [
            "//evil.example",
            "/\t/evil.example",
            "/\n/evil.example",
            "/\\evil.example",
            "https://evil.example/",
            "evil",
            "/ /x",
        ] {
            assert_eq!(back_to(Some(bad), "/x"), "/x", "{bad:?}");
        }
        assert_eq!(back_to(None, "/x"), "/x");
    }
}
