//! `yoi serve`: the HTTP API over the domain layer, its authentication, and live events.
//!
//! The server owns no rules: every route calls one store or engine operation with the caller's
//! principal, so the CLI, the API and (later) pods and the dashboard share every guard. It keeps
//! axum, authentication, live events and the drivers of the engine's loops. It listens on
//! loopback unless told otherwise, writes `.yoi/local/server.json` while it runs, and shuts down
//! gracefully — in-flight requests finish — on SIGINT/SIGTERM or the given shutdown future.

pub mod auth;
pub mod claims;
pub mod error;
pub mod extract;
pub mod forge;
pub mod fresh;
pub mod leases;
pub mod listen;
pub mod memory;
pub mod notify;
mod offer_detector;
pub mod openapi;
pub mod orchestrator;
mod remote_refs;
pub mod routes;
mod server_lease;
pub mod state;
pub mod supervisor;
pub mod tls;
pub mod ui;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post};
use axum::Router;
use thiserror::Error;
use yoi_db::DbIndex;
use yoi_store::server_file;
use yoi_store::{StoreError, Workspace};

pub use state::AppState;

/// Largest request body accepted (bytes); larger bodies get 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

#[derive(Debug, Error)]
pub enum ServerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("another yoi server (pid {pid}) is already serving this workspace at {address}")]
    AlreadyRunning { pid: u32, address: String },
    #[error("cannot listen on {address}: {source}")]
    Listen {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("refusing to listen on {address}: it is not loopback and TLS is off, so tokens and dashboard sessions would cross the network in plain HTTP. Serve HTTPS (`yoi serve --tls-self-signed`, or `[server] tls_cert` and `tls_key`), listen on 127.0.0.1 (and reach it through an SSH tunnel), or set `[server] plain_http = true` in .yoi/workspace.toml to accept plain HTTP on a network you trust or behind a TLS proxy")]
    PlainHttp { address: String },
    #[error("TLS: {0}")]
    Tls(String),
    #[error("server: {0}")]
    Other(String),
}

pub fn router(state: AppState) -> Router {
    use routes::tickets as t;
    let api = Router::new()
        .route("/tickets", get(t::list).post(t::create))
        .route("/tickets/{id}", get(t::show).patch(t::edit))
        .route("/tickets/{id}/comments", post(t::comment))
        .route("/tickets/{id}/mark-ready", post(t::mark_ready))
        .route("/tickets/{id}/queue", post(t::queue))
        .route(
            "/tickets/{id}/return-to-planning",
            post(t::return_to_planning),
        )
        .route("/tickets/{id}/close", post(t::close))
        .route("/tickets/{id}/cancel", post(t::cancel))
        .route("/tickets/{id}/reopen", post(t::reopen))
        .route(
            "/tickets/{id}/relations",
            get(t::relations).post(t::add_relation),
        )
        .route(
            "/tickets/{id}/relations/{kind}/{target}",
            delete(t::remove_relation),
        )
        .route("/tickets/{id}/blockers", get(t::blockers))
        .route("/tickets/{id}/plan", get(t::plan).post(t::add_plan))
        .route(
            "/tickets/{id}/routing",
            get(routes::routing::ticket_routing),
        )
        .route("/tickets/{id}/retry", post(routes::routing::retry))
        .route("/tickets/{id}/cost", get(routes::pods::ticket_cost))
        .route("/tickets/{id}/forge", get(routes::forge_status::show))
        .route("/forge/sync", post(routes::forge_sync::sync))
        .route("/tickets/{id}/budget", post(routes::spend::add))
        .route("/tickets/{id}/answer", post(routes::routing::answer))
        .route("/costs", get(routes::spend::costs))
        .route("/limits", get(routes::spend::limits))
        .route(
            "/tickets/{id}/packet",
            get(routes::packet::show_packet).put(routes::packet::submit_packet),
        )
        .route("/router", get(routes::routing::router_status))
        .route(
            "/pods",
            get(routes::pods::list).post(routes::pods::register),
        )
        .route("/assignments", get(routes::pods::list_assignments))
        .route("/assignments/claim", post(routes::pods::claim))
        .route("/assignments/{id}/heartbeat", post(routes::pods::heartbeat))
        .route("/assignments/{id}/complete", post(routes::pods::complete))
        .route("/assignments/{id}/fail", post(routes::pods::fail))
        .route("/assignments/{id}/log", post(routes::pods::log))
        .route("/doctor", get(t::doctor))
        .route("/inbox", get(routes::inbox::list))
        .route("/notify/log", get(routes::inbox::notify_log))
        .route("/events", get(routes::events::stream))
        .route("/flows", get(routes::flows::list))
        .route("/flows/lint", get(routes::flows::lint))
        .route("/flows/{name}", get(routes::flows::show))
        .route("/workflows", get(routes::workflows::list))
        .route("/workflows/lint", get(routes::workflows::lint))
        .route("/workflows/{slug}", get(routes::workflows::show))
        .route("/workflows/{slug}/invoke", post(routes::workflows::invoke))
        .route("/workflow-offers", get(routes::workflow_offers::list))
        .route(
            "/workflow-offers/detect",
            post(routes::workflow_offers::detect),
        )
        .route("/workflow-offers/{id}", get(routes::workflow_offers::show))
        .route(
            "/workflow-offers/{id}/accept",
            post(routes::workflow_offers::accept),
        )
        .route(
            "/workflow-offers/{id}/reject",
            post(routes::workflow_offers::reject),
        )
        .route("/skills", get(routes::skills::list))
        .route(
            "/skills/proposals",
            get(routes::skills::proposals).post(routes::skills::propose),
        )
        .route(
            "/skills/proposals/{id}/approve",
            post(routes::skills::approve),
        )
        .route(
            "/skills/proposals/{id}/reject",
            post(routes::skills::reject),
        )
        .route("/skills/{name}", get(routes::skills::show))
        .route("/skills/{name}/activate", post(routes::skills::activate))
        .route(
            "/skills/{name}/resources/{*path}",
            get(routes::skills::resource),
        )
        .route("/dashboard/login", post(ui::session::mint_route))
        .route("/openapi.json", get(openapi::serve));
    Router::new()
        .route("/healthz", get(routes::health::healthz))
        .route("/readyz", get(routes::health::readyz))
        .route("/mcp", post(routes::mcp::post))
        .route("/git/info/refs", get(routes::git::info_refs))
        .route("/git/git-upload-pack", post(routes::git::upload_pack))
        .route("/git/git-receive-pack", post(routes::git::receive_pack))
        .nest("/api/v1", api)
        .merge(ui::routes())
        .fallback(|| async {
            error::ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                "not_found",
                "no such route",
            )
        })
        .method_not_allowed_fallback(|| async {
            error::ApiError::new(
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route does not answer that method",
            )
        })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(ui::guard::api_headers))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            ui::guard::hosts,
        ))
        .with_state(state)
}

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    /// Run the orchestrator loop (routing queued tickets). `yoi serve` follows
    /// `[router] enabled`; tests of other parts leave it off so their tickets stay put.
    pub orchestrate: bool,
    /// How to start pods; `None` runs no supervisor (pods may still join over the API).
    pub pods: Option<supervisor::PodLauncher>,
}

/// Open the database, bind, write server.json, serve until `shutdown` completes, clean up.
/// `on_ready` receives the bound address (useful with port 0) and the path of a one-time
/// dashboard login (`/login?code=…`, `None` if one could not be made).
pub async fn serve(
    ws: Workspace,
    opts: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_ready: impl FnOnce(SocketAddr, Option<String>) + Send,
) -> Result<(), ServerError> {
    serve_with_tls(ws, opts, None, shutdown, |addr, login, _| {
        on_ready(addr, login)
    })
    .await
}

/// [`serve`], over HTTPS when `tls` names a certificate or `[server] tls_cert` does (`tls`
/// first); `on_ready` also gets the certificate being served.
pub async fn serve_with_tls(
    ws: Workspace,
    opts: ServeOptions,
    tls: Option<tls::TlsSource>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_ready: impl FnOnce(SocketAddr, Option<String>, Option<&tls::Tls>) + Send,
) -> Result<(), ServerError> {
    let local = ws.local_dir();
    let tls_source = tls.or_else(|| {
        let c = &ws.config.server;
        let file = |p: &String| {
            let p = std::path::Path::new(p);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                ws.root().join(p)
            }
        };
        Some(tls::TlsSource::Files {
            cert: file(c.tls_cert.as_ref()?),
            key: file(c.tls_key.as_ref()?),
        })
    });
    let tls = match &tls_source {
        Some(source) => Some(
            tls::open(source, opts.listen, &ws.config.server.allowed_hosts)
                .map_err(ServerError::Tls)?,
        ),
        None => None,
    };
    // Plain HTTP beyond this machine only when the workspace says so (docs/security.md).
    if tls.is_none() && !opts.listen.ip().is_loopback() {
        if !ws.config.server.plain_http {
            return Err(ServerError::PlainHttp {
                address: opts.listen.to_string(),
            });
        }
        tracing::warn!(
            listen = %opts.listen,
            "serving plain HTTP beyond loopback ([server] plain_http = true): tokens and sessions cross the network unencrypted"
        );
    }
    let fd_limit = listen::raise_fd_limit();
    let limits = listen::Limits::from_config(&ws.config.server, fd_limit);
    if let Some(info) = server_file::live(&local) {
        if info.pid != std::process::id() {
            return Err(ServerError::AlreadyRunning {
                pid: info.pid,
                address: info.address,
            });
        }
    }
    let handle = tokio::runtime::Handle::current();
    let (ws, index, fresh) = tokio::task::spawn_blocking(move || {
        let mut ws = ws;
        // Watching starts before the catch-up, so a write during it is read afterwards.
        let fresh = fresh::Fresh::start(&ws);
        // The server is a frontend: it chooses the wall clock for the index's stamps.
        let bridge = yoi_db::Bridge::new(handle, || {
            yoi_core::time::unix_ms(std::time::SystemTime::now())
        });
        let (index, stats) = DbIndex::attach_as(
            &mut ws,
            bridge,
            yoi_db::ReindexMode::Incremental,
            yoi_db::Footprint::Server,
        )?;
        tracing::info!(
            scanned = stats.scanned,
            reindexed = stats.reindexed,
            removed = stats.removed,
            "index caught up with the files"
        );
        // A bad flow file is skipped with its problems and never stops the start.
        yoi_engine::flows::warn_invalid(&ws);
        // Likewise a bad workflow file.
        yoi_engine::workflows::warn_invalid(&ws);
        memory::give_back();
        Ok::<_, StoreError>((ws, index, fresh))
    })
    .await
    .map_err(|e| ServerError::Other(e.to_string()))??;
    // `[forge]` with a credential that cannot be read refuses to start, naming what to set.
    let forge =
        forge::from_workspace(&ws).map_err(|e| ServerError::Other(format!("[forge]: {e}")))?;
    // `[pods] transport = "remote"` naming a remote the repository lacks refuses to start,
    // naming the file, the key and its line.
    let pod_remote = yoi_engine::assignments::transport::pod_remote(&ws)?;
    if let Some(r) = &pod_remote {
        tracing::info!(remote = %r.name, url = %r.url, "pods move commits through a remote of the repository");
    }
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|source| ServerError::Listen {
            address: opts.listen.to_string(),
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| ServerError::Other(e.to_string()))?;
    server_file::write(
        &local,
        &server_file::ServerInfo {
            pid: std::process::id(),
            address: addr.to_string(),
            started_at: auth::now().to_string(),
            tls_fingerprint: tls.as_ref().map(|t| t.fingerprint.clone()),
        },
    )
    .map_err(|e| StoreError::io(&server_file::path(&local), e))?;
    tracing::info!(
        %addr,
        max_connections = limits.max_connections,
        fd_limit,
        "yoi server listening"
    );
    let lease = index.server_lease().map(Arc::<str>::from);
    let mut state = AppState::watched(ws, index, fresh);
    state.forge = forge.clone();
    let lost = Arc::new(tokio::sync::Notify::new());
    let heartbeat = lease
        .map(|nonce| server_lease::spawn(state.clone(), nonce, addr.to_string(), lost.clone()));
    let login = ui::session::startup_login(&state).await;
    on_ready(addr, login, tls.as_ref());
    let orchestrator = opts.orchestrate.then(|| orchestrator::spawn(state.clone()));
    let sweep = leases::spawn(state.clone());
    let remote_sweep = pod_remote.map(|r| remote_refs::spawn(state.clone(), r));
    let forge_driver = forge.clone().map(|rt| forge::spawn(state.clone(), rt));
    let full_checks = fresh::spawn_full_checks(state.clone());
    let trims = memory::spawn_trims(state.closing.subscribe());
    let checkpoints = spawn_checkpoints(state.clone());
    let notifications = notify::spawn(state.clone());
    let offer_detector = offer_detector::spawn(state.clone());
    let pods = opts.pods.map(|l| {
        let server = supervisor::Upstream {
            url: format!("{}://{addr}", if tls.is_some() { "https" } else { "http" }),
            pin: tls.as_ref().map(|t| t.fingerprint.clone()),
        };
        supervisor::spawn(state.clone(), l, server)
    });
    let closing = state.closing.clone();
    let shutdown = async move {
        tokio::select! {
            _ = shutdown => {}
            _ = lost.notified() => {}
        }
        tracing::info!("shutting down: finishing the requests in flight");
        // Live-event streams never end on their own; they end at this signal.
        closing.send_replace(true);
    };
    let app = match forge {
        Some(rt) => {
            let db = state.index.db.clone();
            router(state).merge(forge::routes(rt, db))
        }
        None => router(state),
    };
    listen::run(listener, app, limits, tls.map(|t| t.acceptor), shutdown).await;
    if let Some(task) = orchestrator {
        // It ends at the closing signal, after the pass in progress.
        if let Err(e) = task.await {
            tracing::error!(error = %e, "the orchestrator task ended abnormally");
        }
    }
    if let Some(task) = pods {
        if let Err(e) = task.await {
            tracing::error!(error = %e, "the pod supervisor ended abnormally");
        }
    }
    if let Err(e) = full_checks.await {
        tracing::error!(error = %e, "the periodic file check ended abnormally");
    }
    if let Err(e) = trims.await {
        tracing::error!(error = %e, "the memory trim task ended abnormally");
    }
    if let Err(e) = checkpoints.await {
        tracing::error!(error = %e, "the checkpoint task ended abnormally");
    }
    for task in notifications {
        if let Err(e) = task.await {
            tracing::error!(error = %e, "a notification task ended abnormally");
        }
    }
    if let Some(task) = offer_detector {
        if let Err(e) = task.await {
            tracing::error!(error = %e, "the workflow-offer detector ended abnormally");
        }
    }
    if let Some(task) = forge_driver {
        if let Err(e) = task.await {
            tracing::error!(error = %e, "the forge driver ended abnormally");
        }
    }
    if let Err(e) = sweep.await {
        tracing::error!(error = %e, "the lease sweep task ended abnormally");
    }
    if let Some(task) = remote_sweep {
        if let Err(e) = task.await {
            tracing::error!(error = %e, "the remote sweep task ended abnormally");
        }
    }
    if let Some(task) = heartbeat {
        if let Err(e) = task.await {
            tracing::error!(error = %e, "the server lease task ended abnormally");
        }
    }
    server_file::remove_if_ours(&local);
    tracing::info!("yoi server stopped");
    Ok(())
}

/// Completes on SIGINT or SIGTERM. The handlers are installed when this is called (inside a
/// runtime), not when the future is first polled, so a signal that arrives while the server is
/// still starting is not lost to the default action (which would kill the process without
/// cleaning up).
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    async move {
        let wait = |s: std::io::Result<tokio::signal::unix::Signal>| async move {
            match s {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = wait(term) => {},
            _ = wait(int) => {},
        }
    }
}

/// How often the server copies SQLite's write-ahead log into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Checkpoint the embedded database every [`CHECKPOINT_EVERY`] until the server closes, and
/// once more then (its connections make none in their commits, `Footprint::Server`).
fn spawn_checkpoints(state: AppState) -> tokio::task::JoinHandle<()> {
    let mut closing = state.closing.subscribe();
    tokio::spawn(async move {
        loop {
            let closed = tokio::select! {
                _ = tokio::time::sleep(CHECKPOINT_EVERY) => false,
                _ = closing.wait_for(|c| *c) => true,
            };
            if let Err(e) = state.db().checkpoint().await {
                tracing::warn!(error = %e, "checkpointing the database failed; trying again");
            }
            if closed {
                return;
            }
        }
    })
}
