//! The forge inside `yoi serve` (docs/forge.md): the credential read once at start (the token
//! file of `[forge]`, or `YOI_GITHUB_TOKEN` — this frontend reads the environment, the engine
//! never does), the driver that imports labelled issues and calls the engine's `forge_tick`
//! step function, and the webhook receiver `POST /forge/github/events`.
//!
//! The receiver checks `X-Hub-Signature-256` (HMAC-SHA-256 of the raw body with the webhook
//! secret) in constant time before it parses anything: a bad or missing signature is 401 and
//! nothing is recorded. A delivery id seen before — before or after a restart: the ids are kept
//! in the database (`forge_deliveries`) — is answered 200 and does nothing; an event yoi does
//! not use is acknowledged (202) and ignored; a body over 25 MiB (GitHub never sends more) is
//! 413. A `check_run` or `status` event's result is kept with the SHA it is for (`forge_checks`,
//! where an older result never overwrites a newer one, so reordered deliveries end as ordered
//! ones do), and only then is the delivery id recorded: a crash between the two loses nothing.
//! Otherwise the receiver only wakes the driver, which does the work after: a webhook is a hint
//! to look now, and the driver's polling every `[forge] poll_secs` is what makes sure nothing is
//! missed (GitHub does not redeliver a failed delivery by itself).
//!
//! The credential never reaches a pod: the supervisor starts pods with `YOI_GITHUB_TOKEN`
//! removed from their environment, and an agent's environment passes no `YOI_*` variable.

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
use yoi_db::Db;
use yoi_engine::assignments::{forge_tick, ForgeEnv, ForgeTick};
use yoi_forge::credential::{read_private_file, resolve};
use yoi_forge::github::GitHub;
use yoi_forge::Secret;

use crate::auth::now;
use crate::state::AppState;

/// GitHub caps a webhook payload at 25 MB; a body over 25 MiB is refused.
pub const MAX_WEBHOOK_BYTES: usize = 25 * 1024 * 1024;

/// How long a delivery id is remembered: GitHub lets a person redeliver only recent ones.
const REMEMBERED_MS: i64 = 30 * 24 * 3600 * 1000;

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
    webhook_secret: Option<Secret>,
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
    Ok(Some(Arc::new(ForgeRuntime {
        gh: GitHub::from_section(&section, credential, clock),
        section,
        webhook_secret,
        wake: tokio::sync::Notify::new(),
        accepted: AtomicU64::new(0),
        passes: AtomicU64::new(0),
        last: Mutex::new(None),
    })))
}

/// What the receiver needs: the forge and the database its facts are kept in.
#[derive(Clone)]
struct Receiver {
    rt: Arc<ForgeRuntime>,
    db: Db,
}

/// `POST /forge/github/events`, outside the API's token auth (the signature is the auth) and
/// with its own body limit.
pub fn routes(rt: Arc<ForgeRuntime>, db: Db) -> Router {
    Router::new()
        .route(
            "/forge/github/events",
            post(receive).layer(DefaultBodyLimit::max(MAX_WEBHOOK_BYTES)),
        )
        .with_state(Receiver { rt, db })
}

/// The check result a `check_run` or `status` payload carries (the simulation's webhooks are
/// read by the same function).
pub use yoi_core::forge::check_of;

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

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> Response {
    let rt = &r.rt;
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
    let event = header("x-github-event").unwrap_or_default();
    let now_ms = now().unix_millis();
    if matches!(event, "check_run" | "status") {
        // Kept before the delivery is recorded: a crash in between loses nothing, since a
        // redelivery is then taken again, and keeping a result twice changes nothing.
        let check = serde_json::from_slice(&body)
            .ok()
            .and_then(|p| check_of(event, &p));
        if let Some(c) = check {
            let kept =
                r.db.forge_checks_record(&[c], yoi_db::forge::FROM_WEBHOOK, now_ms)
                    .await;
            if let Err(e) = kept {
                tracing::warn!(error = %e, "a webhook's check result could not be kept; GitHub may redeliver it");
                return answer(StatusCode::SERVICE_UNAVAILABLE, "not_kept");
            }
        }
    }
    match r.db.forge_delivery_first(&delivery, event, now_ms).await {
        Ok(true) => {}
        Ok(false) => return answer(StatusCode::OK, "duplicate"),
        Err(e) => {
            tracing::warn!(error = %e, "a webhook delivery could not be recorded; GitHub may redeliver it");
            return answer(StatusCode::SERVICE_UNAVAILABLE, "not_kept");
        }
    }
    if !EVENTS.contains(&event) {
        return answer(StatusCode::ACCEPTED, "ignored");
    }
    rt.accepted.fetch_add(1, Ordering::AcqRel);
    rt.wake.notify_one();
    answer(StatusCode::ACCEPTED, "accepted")
}

/// Import the open issues carrying `[forge] import_label` that a person with write access
/// labelled (nothing when the section names no label). Blocking: the driver and `yoi forge
/// import` call it on a thread that may wait.
pub fn import(
    ws: &yoi_store::Workspace,
    rt: &ForgeRuntime,
    at: yoi_core::Timestamp,
) -> Result<yoi_engine::forge_import::Imported, yoi_engine::forge_import::ImportError> {
    match &rt.section.import_label {
        Some(label) => yoi_engine::forge_import::import_issues(ws, &rt.gh, label, at),
        None => Ok(Default::default()),
    }
}

/// Walk every pending `pr` step one step further (`forge_tick`). Blocking, like [`import`];
/// the driver and `yoi forge sync` call it.
pub fn walk(
    ws: &yoi_store::Workspace,
    index: &yoi_db::DbIndex,
    rt: &ForgeRuntime,
    at: yoi_core::Timestamp,
) -> Result<ForgeTick, PassError> {
    // A GitHub App's installation token is renewed here before it ends; git pushes with it.
    let token = rt.gh.current_token().map_err(PassError::Credential)?;
    let env = ForgeEnv {
        forge: &rt.gh,
        section: &rt.section,
        token: &token,
        scratch: ws.local_dir().join("forge"),
    };
    Ok(forge_tick(ws, index, &env, at)?)
}

/// What one pass asked for by a person did (`yoi forge sync` and `yoi forge import`, in the CLI
/// or through `POST /api/v1/forge/sync`): the issues imported, and the driver's pass unless
/// only the import was asked for.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct ForgeSynced {
    pub imported: yoi_engine::forge_import::Imported,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<ForgeTick>,
}

/// Why a pass a person asked for did not run. Every one is a refusal (422 through the API, exit
/// status 1 in the CLI), with the same words in both.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("no [forge] section in .yoi/workspace.toml: see docs/forge.md to set one up")]
    NotConfigured,
    #[error("[forge] names no import_label: set `import_label = \"yoi\"` to import the issues carrying it")]
    NoImportLabel,
    #[error("importing issues: {0}")]
    Import(yoi_engine::forge_import::ImportError),
    #[error("the forge pass: {0}")]
    Pass(PassError),
}

/// One pass now, as a person asks for it: labelled issues in as tickets, then (unless
/// `import_only`) every pending `pr` step one step further — the very functions the driver
/// runs. Blocking. Beside the driver this is safe: every step is idempotent.
pub fn sync(
    ws: &yoi_store::Workspace,
    index: &yoi_db::DbIndex,
    rt: Option<&ForgeRuntime>,
    import_only: bool,
    at: yoi_core::Timestamp,
) -> Result<ForgeSynced, SyncError> {
    let rt = rt.ok_or(SyncError::NotConfigured)?;
    if import_only && rt.section.import_label.is_none() {
        return Err(SyncError::NoImportLabel);
    }
    let imported = import(ws, rt, at).map_err(SyncError::Import)?;
    let pass = if import_only {
        None
    } else {
        Some(walk(ws, index, rt, at).map_err(SyncError::Pass)?)
    };
    Ok(ForgeSynced { imported, pass })
}

/// Why a pass of [`walk`] did not run: the credential (a GitHub App's installation token could
/// not be had), or the engine.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error("the forge credential: {0}")]
    Credential(yoi_forge::ForgeError),
    #[error(transparent)]
    Engine(#[from] yoi_engine::assignments::AssignmentError),
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
                match import(&st.ws, &r, now()) {
                    Ok(i) if !i.created.is_empty() => st.changed.send_modify(|n| *n += 1),
                    Ok(_) => {}
                    Err(e) => {
                        tracing::info!(error = %e, "importing issues failed; tried again next pass")
                    }
                }
                walk(&st.ws, &st.index, &r, now())
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
            let old = now().unix_millis() - REMEMBERED_MS;
            if let Err(e) = state.index.db.forge_deliveries_prune(old).await {
                tracing::info!(error = %e, "forgetting old webhook deliveries failed; tried again next pass");
            }
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = rt.wake.notified() => {}
                _ = closing.changed() => {}
            }
        }
    })
}
