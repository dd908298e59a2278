//! Dashboard sessions: one-time login codes, the session cookie, and the CSRF token of a
//! session.
//!
//! `yoi serve` prints, and `yoi dashboard` asks the API for, a login URL
//! `/login?code=<one-time code>`. Visiting it exchanges the code (valid [`LOGIN_TTL_MS`], once)
//! for a session: a human token in the token table, named `session-<ulid>` and bound to the
//! principal that minted the code, whose secret only the browser holds, in an `HttpOnly;
//! SameSite=Strict` cookie. The answer is a redirect, so the code leaves the address bar and the
//! history. Sessions outlive a restart of the server (they are tokens) and end at logout, at
//! `yoi token revoke`, after `[server] session_idle_secs` without a request, and
//! `[server] session_max_secs` after the login (the cookie's `Max-Age`); an ended session's
//! token is revoked. The idle clock is kept in memory, so a restart starts it again; the
//! absolute limit comes from the token's creation time and survives restarts.
//!
//! A session is for the dashboard only: its cookie does not authorize API calls and its secret
//! is not accepted as a bearer token (`auth.rs`); the cookie takes session tokens only. Failed
//! logins are counted per client address, and past `[server] login_failures_per_minute` in a
//! minute every login from that address is answered 429 with `Retry-After` until the oldest
//! failure is a minute old.
//!
//! Every form carries the session's CSRF token, a keyed hash of the session that a page on
//! another origin cannot read or compute; a POST without it is refused before anything runs.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Method};
use yoi_db::{hash_secret, new_secret, Scope, TokenInfo, SESSION_PREFIX};

use super::page::UiError;
use crate::auth::{now, Caller};
use crate::state::AppState;

/// The session cookie's name.
pub const COOKIE: &str = "yoi_session";
/// How long a login code stays valid.
pub const LOGIN_TTL_MS: i64 = 10 * 60 * 1000;
/// Login codes kept at most (older ones are dropped first).
const MAX_CODES: usize = 64;

/// Login codes not yet used, by hash: when each expires and whom it logs in.
#[derive(Default)]
pub struct Logins {
    codes: Mutex<HashMap<String, (i64, String)>>,
}

impl Logins {
    /// A new one-time code that logs in as `principal`.
    pub fn mint(&self, principal: &str, now_ms: i64) -> Result<String, yoi_store::StoreError> {
        let code = new_secret()?;
        let mut codes = self.codes.lock().unwrap_or_else(|p| p.into_inner());
        codes.retain(|_, (until, _)| *until > now_ms);
        while codes.len() >= MAX_CODES {
            let oldest = codes
                .iter()
                .min_by_key(|(_, (until, _))| *until)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => codes.remove(&k),
                None => break,
            };
        }
        codes.insert(
            hash_secret(&code),
            (now_ms + LOGIN_TTL_MS, principal.to_string()),
        );
        Ok(code)
    }

    /// Use a code: the principal it logs in, once; `None` for an unknown, used or expired code.
    pub fn redeem(&self, code: &str, now_ms: i64) -> Option<String> {
        let mut codes = self.codes.lock().unwrap_or_else(|p| p.into_inner());
        let (until, principal) = codes.remove(&hash_secret(code.trim()))?;
        (until > now_ms).then_some(principal)
    }
}

/// The human principal a login printed by `yoi serve` is for: the admin token's.
pub async fn local_human(s: &AppState) -> String {
    let tokens = s.db().list_tokens().await.unwrap_or_default();
    let mine = yoi_db::admin_token_name(&s.ws.local_dir());
    let live = |t: &&TokenInfo| t.revoked_ms.is_none();
    // This clone's admin token, else any (an older workspace's `admin`, another clone's).
    tokens
        .iter()
        .filter(live)
        .find(|t| t.name == mine)
        .or_else(|| {
            tokens
                .iter()
                .filter(live)
                .find(|t| yoi_db::is_admin_token_name(&t.name))
        })
        .map(|t| t.principal.clone())
        .or_else(|| s.ws.config.principal.name.clone())
        .unwrap_or_else(|| "human".into())
}

/// Whether `token` is a dashboard session's (not an API token).
pub fn is_session(token: &TokenInfo) -> bool {
    token.scope == Scope::Human && token.name.starts_with(SESSION_PREFIX)
}

/// Start a session for `principal`; returns the cookie's secret.
pub async fn start(s: &AppState, principal: &str) -> Result<String, yoi_store::StoreError> {
    let name = format!(
        "{SESSION_PREFIX}{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    let now_ms = now().unix_millis();
    let (_, secret) = s.db().create_session(&name, principal, now_ms).await?;
    s.ui.sessions.seen(&hash_secret(&secret), now_ms);
    Ok(secret)
}

/// The `Set-Cookie` value that stores `secret` for `max_age_secs` (or, with `None`, removes
/// the cookie).
pub fn cookie(secret: Option<&str>, max_age_secs: u64) -> String {
    match secret {
        Some(s) => {
            format!("{COOKIE}={s}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_secs}")
        }
        None => format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    }
}

/// When each session last made a request, by secret hash (this run of the server only);
/// `None` once it has ended, so a token read from a cache before its revocation is seen stays
/// ended.
#[derive(Default)]
pub struct Sessions {
    last: Mutex<HashMap<String, Option<i64>>>,
}

impl Sessions {
    fn seen(&self, hash: &str, now_ms: i64) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.insert(hash.to_string(), Some(now_ms));
    }

    /// Whether the session `token` (secret hash `hash`) is still live at `now_ms` under
    /// `[server]`'s limits; a live one is marked seen now.
    fn touch(&self, token: &TokenInfo, hash: &str, now_ms: i64, idle_ms: i64, max_ms: i64) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let entry = last.entry(hash.to_string()).or_insert(Some(now_ms));
        let Some(seen) = *entry else {
            return false;
        };
        let live = now_ms - token.created_ms < max_ms && now_ms - seen < idle_ms;
        *entry = live.then_some(now_ms);
        live
    }
}

/// Failed logins per client address in the last minute.
#[derive(Default)]
pub struct LoginFailures {
    by_addr: Mutex<HashMap<IpAddr, VecDeque<i64>>>,
}

/// The window failed logins are counted in.
const FAILURE_WINDOW_MS: i64 = 60_000;

impl LoginFailures {
    /// `Err(seconds to wait)` when `addr` has failed `max` times in the last minute.
    pub fn check(&self, addr: IpAddr, now_ms: i64, max: u32) -> Result<(), u64> {
        let mut by = self.by_addr.lock().unwrap_or_else(|p| p.into_inner());
        let Some(times) = by.get_mut(&addr) else {
            return Ok(());
        };
        while times
            .front()
            .is_some_and(|t| now_ms - t >= FAILURE_WINDOW_MS)
        {
            times.pop_front();
        }
        match times.front() {
            Some(oldest) if times.len() >= max as usize => {
                let wait_ms = FAILURE_WINDOW_MS - (now_ms - oldest);
                Err(u64::try_from(wait_ms.max(0))
                    .unwrap_or(0)
                    .div_ceil(1000)
                    .max(1))
            }
            _ => Ok(()),
        }
    }

    /// Count a failed login from `addr`.
    pub fn failed(&self, addr: IpAddr, now_ms: i64) {
        let mut by = self.by_addr.lock().unwrap_or_else(|p| p.into_inner());
        // Forget addresses whose failures are all older than the window, so the map stays
        // as small as the set of addresses failing now.
        by.retain(|_, times| times.back().is_some_and(|t| now_ms - t < FAILURE_WINDOW_MS));
        let times = by.entry(addr).or_default();
        times.push_back(now_ms);
        // More than the largest limit that can matter is never needed.
        while times.len() > 10_000 {
            times.pop_front();
        }
    }
}

/// The session secret the request's `Cookie` header carries.
pub fn secret_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The CSRF token of the session whose secret hashes to `session_hash`.
pub fn csrf_token(s: &AppState, session_hash: &str) -> String {
    let mut keyed = s.agent_key.as_ref().clone();
    keyed.extend_from_slice(b"\0dashboard-csrf\0");
    keyed.extend_from_slice(session_hash.as_bytes());
    yoi_core::sha256_hex(&keyed)[..32].to_string()
}

/// A logged-in person looking at the dashboard.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub caller: Caller,
    /// The token every form of this session must carry.
    pub csrf: String,
    /// The hash of the session secret (what the token table stores).
    pub session: String,
}

impl Viewer {
    /// Refuse a form whose CSRF token is missing or wrong.
    pub fn check_csrf(&self, token: Option<&str>) -> Result<(), UiError> {
        let ok = token.is_some_and(|t| {
            use subtle::ConstantTimeEq;
            bool::from(t.as_bytes().ct_eq(self.csrf.as_bytes()))
        });
        if ok {
            Ok(())
        } else {
            Err(UiError::Forbidden(
                "this form did not carry the session's CSRF token; reload the page and try again"
                    .into(),
            ))
        }
    }
}

/// The session of a request, if it has a live one.
pub async fn viewer_of(s: &AppState, headers: &HeaderMap) -> Result<Option<Viewer>, UiError> {
    let Some(secret) = secret_of(headers) else {
        return Ok(None);
    };
    let hash = hash_secret(&secret);
    let view = s.settle().await?;
    let Some(token) = s.token_by_hash(view, &hash).await?.filter(is_session) else {
        return Ok(None);
    };
    let limits = &s.ws.config.server;
    let to_ms = |secs: u64| i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    let now_ms = now().unix_millis();
    let live = s.ui.sessions.touch(
        &token,
        &hash,
        now_ms,
        to_ms(limits.session_idle_secs),
        to_ms(limits.session_max_secs),
    );
    if !live {
        // Ended for good: the token goes too, so no copy of the cookie works again.
        s.db()
            .revoke_token(&token.id, now_ms)
            .await
            .map_err(UiError::from_store)?;
        return Ok(None);
    }
    Ok(Some(token).map(|token| Viewer {
        csrf: csrf_token(s, &hash),
        caller: Caller {
            principal: yoi_core::Principal::human(token.principal.clone()),
            token,
            view,
        },
        session: hash,
    }))
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = UiError;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, UiError> {
        match viewer_of(s, &parts.headers).await? {
            Some(v) => {
                if parts.method != Method::GET && parts.method != Method::HEAD {
                    same_origin(&parts.headers)?;
                }
                Ok(v)
            }
            None if parts.method == Method::GET || parts.method == Method::HEAD => {
                Err(UiError::LoginNeeded)
            }
            None => Err(UiError::Forbidden(
                "no dashboard session: open the login link `yoi dashboard` prints".into(),
            )),
        }
    }
}

/// A browser marks a cross-site request; refuse one (the CSRF token refuses it too; the login
/// form, which has none, relies on this alone).
pub fn same_origin(headers: &HeaderMap) -> Result<(), UiError> {
    let site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if matches!(site, "cross-site" | "same-site") {
        return Err(UiError::Forbidden(
            "a request from another site may not act on the dashboard".into(),
        ));
    }
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    if let (Some(origin), Some(host)) = (origin, host) {
        let authority = origin.split_once("://").map(|(_, a)| a).unwrap_or(origin);
        if origin != "null" && !authority.eq_ignore_ascii_case(host) {
            return Err(UiError::Forbidden(format!(
                "a form from {origin} may not act on this dashboard"
            )));
        }
    }
    Ok(())
}

/// The answer of `POST /api/v1/dashboard/login`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct LoginLink {
    /// Path and query of the one-time login URL on this server.
    pub path: String,
    /// How long the link stays valid.
    pub expires_in_ms: i64,
}

#[utoipa::path(operation_id = "dashboard_login", post, tag = "service", path = "/api/v1/dashboard/login", responses((status = 200, body = LoginLink), (status = 401, description = "missing or unknown token"), (status = 403, description = "not a human token")), security(("bearer" = [])))]
/// A one-time dashboard login link for the calling person (what `yoi dashboard` opens).
pub async fn mint_route(
    axum::extract::State(s): axum::extract::State<AppState>,
    crate::auth::Authed(c, ..): crate::auth::Authed<crate::auth::OpenDashboard>,
) -> Result<axum::Json<LoginLink>, crate::error::ApiError> {
    let code =
        s.ui.logins
            .mint(&c.token.principal, now().unix_millis())
            .map_err(crate::error::ApiError::from)?;
    Ok(axum::Json(LoginLink {
        path: format!("/login?code={code}"),
        expires_in_ms: LOGIN_TTL_MS,
    }))
}

/// The login link `yoi serve` prints at start, for the workspace's own person.
pub async fn startup_login(s: &AppState) -> Option<String> {
    let who = local_human(s).await;
    match s.ui.logins.mint(&who, now().unix_millis()) {
        Ok(code) => Some(format!("/login?code={code}")),
        Err(e) => {
            tracing::warn!(error = %e, "no dashboard login link");
            None
        }
    }
}
