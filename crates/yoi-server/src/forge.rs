//! The forge inside `yoi serve` (docs/forge.md): the credential read once at start (the token
//! file of `[forge]`, or `YOI_GITHUB_TOKEN` — this frontend reads the environment, the engine
//! never does), the driver that imports labelled issues and calls the engine's `forge_tick`
//! step function, and the webhook receiver `POST /forge/github/events`.
//!
//! The receiver checks `X-Hub-Signature-256` (HMAC-SHA-256 of the raw body with the webhook
//! secret) in constant time before it parses anything: a bad or missing signature is 401 and
//! nothing is recorded. A delivery id seen before is answered 200 and does nothing; an event
//! yoi does not use is acknowledged (202) and ignored; a body over 25 MiB (GitHub never sends
//! more) is 413. It answers at once and only wakes the driver, which does the work after: a
//! webhook is a hint to look now, and the driver's polling every `[forge] poll_secs` is what
//! makes sure nothing is missed (GitHub does not redeliver a failed delivery by itself).
//!
//! The credential never reaches a pod: the supervisor starts pods with `YOI_GITHUB_TOKEN`
//! removed from their environment, and an agent's environment passes no `YOI_*` variable.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::json;
use subtle::ConstantTimeEq;
use yoi_core::forge::{ForgeSection, TOKEN_ENV};
use yoi_engine::assignments::{forge_tick, ForgeEnv, ForgeTick};
use yoi_forge::credential::{read_private_file, resolve};
use yoi_forge::github::GitHub;
use yoi_forge::Secret;

use crate::auth::now;
use crate::state::AppState;

/// GitHub caps a webhook payload at 25 MB; a body over 25 MiB is refused.
pub const MAX_WEBHOOK_BYTES: usize = 25 * 1024 * 1024;

/// Delivery ids remembered for redelivery checks.
const REMEMBERED: usize = 10_000;

/// The events that can change a pull request's gate or a ticket; any other is acknowledged
/// and ignored.
pub const EVENTS: [&str; 9] = [
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
    "check_run",
    "check_suite",
    "status",
    "issues",
    "issue_comment",
    "ping",
];

/// The forge of a running server.
pub struct ForgeRuntime {
    pub section: ForgeSection,
    gh: GitHub,
    token: Secret,
    webhook_secret: Option<Secret>,
    deliveries: Mutex<(VecDeque<String>, HashSet<String>)>,
    /// Woken by an accepted webhook: look now rather than at the next poll.
    pub wake: tokio::sync::Notify,
    /// Webhooks accepted (signature good, first delivery, an event yoi uses).
    pub accepted: AtomicU64,
    /// Driver passes finished.
    pub passes: AtomicU64,
    /// The last pass's outcome, for `yoi forge status`.
    pub last: Mutex<Option<ForgeTick>>,
}

/// The forge of `ws`, if `[forge]` is configured: its credential resolved now, so a missing or
/// unreadable one is an error at start naming what to set.
pub fn from_workspace(
    ws: &yoi_store::Workspace,
) -> Result<Option<Arc<ForgeRuntime>>, yoi_forge::ForgeError> {
    let Some(section) = ws.config.forge.clone() else {
        return Ok(None);
    };
    let credential = resolve(&section, ws.root(), std::env::var(TOKEN_ENV).ok())?;
    let webhook_secret = section
        .webhook_secret_file
        .as_ref()
        .map(|f| read_private_file(&ws.root().join(f)))
        .transpose()?;
    let clock: yoi_forge::Clock = Arc::new(|| now().unix_millis().max(0) as u64 / 1000);
    let token = credential.token().clone();
    Ok(Some(Arc::new(ForgeRuntime {
        gh: GitHub::from_section(&section, credential, clock),
        section,
        token,
        webhook_secret,
        deliveries: Mutex::default(),
        wake: tokio::sync::Notify::new(),
        accepted: AtomicU64::new(0),
        passes: AtomicU64::new(0),
        last: Mutex::new(None),
    })))
}

/// `POST /forge/github/events`, outside the API's token auth (the signature is the auth) and
/// with its own body limit.
pub fn routes(rt: Arc<ForgeRuntime>) -> Router {
    Router::new()
        .route(
            "/forge/github/events",
            post(receive).layer(DefaultBodyLimit::max(MAX_WEBHOOK_BYTES)),
        )
        .with_state(rt)
}

/// Whether `signature` (`sha256=<hex>`) is the HMAC of `body` under `secret`, compared in
/// constant time.
pub fn signature_ok(secret: &[u8], body: &[u8], signature: Option<&str>) -> bool {
    let Some(hex) = signature.and_then(|s| s.strip_prefix("sha256=")) else {
        return false;
    };
    let expected = yoi_core::hmac_sha256_hex(secret, body);
    let given = hex.trim().to_ascii_lowercase();
    expected.len() == given.len() && bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
}

fn answer(status: StatusCode, what: &str) -> Response {
    (status, Json(json!({ "status": what }))).into_response()
}

async fn receive(State(rt): State<Arc<ForgeRuntime>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    let Some(secret) = &rt.webhook_secret else {
        return answer(
            StatusCode::UNAUTHORIZED,
            "no webhook secret is configured ([forge] webhook_secret_file)",
        );
    };
    if !signature_ok(
        secret.expose().as_bytes(),
        &body,
        header("x-hub-signature-256"),
    ) {
        return answer(StatusCode::UNAUTHORIZED, "bad_signature");
    }
    let delivery = header("x-github-delivery").unwrap_or_default().to_string();
    if delivery.is_empty() || delivery.len() > 100 {
        return answer(
            StatusCode::BAD_REQUEST,
            "missing or overlong X-GitHub-Delivery",
        );
    }
    {
        let mut seen = rt.deliveries.lock().unwrap_or_else(|p| p.into_inner());
        if seen.1.contains(&delivery) {
            return answer(StatusCode::OK, "duplicate");
        }
        seen.0.push_back(delivery.clone());
        seen.1.insert(delivery);
        while seen.0.len() > REMEMBERED {
            if let Some(old) = seen.0.pop_front() {
                seen.1.remove(&old);
            }
        }
    }
    let event = header("x-github-event").unwrap_or_default();
    if !EVENTS.contains(&event) {
        return answer(StatusCode::ACCEPTED, "ignored");
    }
    rt.accepted.fetch_add(1, Ordering::AcqRel);
    rt.wake.notify_one();
    answer(StatusCode::ACCEPTED, "accepted")
}

/// The driver: a pass of `forge_tick` every `[forge] poll_secs`, and at once when a webhook
/// arrived. A rate limit or an outage only makes the pass report retries; the next one tries
/// again (the client itself sends nothing before a limit's time).
pub fn spawn(state: AppState, rt: Arc<ForgeRuntime>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut closing = state.closing.subscribe();
        let every = Duration::from_secs(rt.section.poll_secs.max(1));
        loop {
            if *closing.borrow() {
                break;
            }
            let (st, r) = (state.clone(), rt.clone());
            let pass = tokio::task::spawn_blocking(move || {
                let _turn = st.write_turn_blocking();
                // Issues in as tickets first, so a new one is on the board this pass.
                if let Some(label) = &r.section.import_label {
                    match yoi_engine::forge_import::import_issues(&st.ws, &r.gh, label, now()) {
                        Ok(i) if !i.created.is_empty() => st.changed.send_modify(|n| *n += 1),
                        Ok(_) => {}
                        Err(e) => tracing::info!(error = %e, "importing issues failed; tried again next pass"),
                    }
                }
                let env = ForgeEnv {
                    forge: &r.gh,
                    section: &r.section,
                    token: &r.token,
                    scratch: st.ws.local_dir().join("forge"),
                };
                forge_tick(&st.ws, &st.index, &env, now())
            })
            .await;
            match pass {
                Ok(Ok(t)) => {
                    if !(t.pushed.is_empty()
                        && t.opened.is_empty()
                        && t.merged.is_empty()
                        && t.sent_back.is_empty())
                    {
                        state.changed.send_modify(|n| *n += 1);
                        state.flow_wake.notify_one();
                    }
                    *rt.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(t);
                }
                Ok(Err(e)) => tracing::error!(error = %e, "the forge pass failed; it runs again"),
                Err(e) => tracing::error!(error = %e, "the forge pass panicked; it runs again"),
            }
            rt.passes.fetch_add(1, Ordering::AcqRel);
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = rt.wake.notified() => {}
                _ = closing.changed() => {}
            }
        }
    })
}
