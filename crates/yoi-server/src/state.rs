//! Shared server state: the workspace (with its database index attached) and the live-event
//! signals (something changed; the server is closing). File operations are synchronous and take
//! the workspace lock, so they run on blocking threads; index reads are async and run on the
//! runtime.

use std::sync::Arc;

use tokio::sync::{watch, Mutex};
use yoi_db::read_your_writes::View;
use yoi_db::{Db, DbIndex, TokenInfo};
use yoi_store::{Outcome, StoreError, Workspace};

use crate::error::ApiError;

#[derive(Clone)]
pub struct AppState {
    pub ws: Arc<Workspace>,
    pub index: DbIndex,
    /// Bumped after every mutation so live-event streams look for new outbox rows at once.
    pub changed: Arc<watch::Sender<u64>>,
    /// Set when the server starts shutting down, so live-event streams end and graceful
    /// shutdown does not wait on them forever.
    pub closing: Arc<watch::Sender<bool>>,
    /// Wakes the flow sweep before its second is up: an attempt ended, so a next step or a
    /// merge may be due.
    pub flow_wake: Arc<tokio::sync::Notify>,
    /// Wakes the sweep of the pods' remote (`remote_refs.rs`): a claim's commits were pushed
    /// there, so it has refs to look after again.
    pub remote_wake: Arc<tokio::sync::Notify>,
    /// Flow sweeps finished since the server started (`GET /api/v1/router`). The second one
    /// to finish after a reader saw the count began after it looked: a count two past it
    /// means a whole sweep has seen what the reader saw.
    pub flow_sweeps: Arc<std::sync::atomic::AtomicU64>,
    /// Mutations of this server queue here, first come first served, before they take the
    /// workspace lock. The lock itself is polled with backoff (it is shared with other
    /// processes), so without this queue concurrent requests would sleep past each other's
    /// release and the slowest could wait seconds.
    writers: Arc<Mutex<()>>,
    /// Mutations waiting to be made durable together ([`AppState::grouped`]).
    grouped: Arc<std::sync::Mutex<Vec<Grouped>>>,
    /// How many mutations the last group ran.
    last_group: Arc<std::sync::atomic::AtomicUsize>,
    /// Claims wait here and go to the database in groups (`claims.rs`).
    pub claims: Arc<crate::claims::ClaimQueue>,
    /// The key agent tokens are signed with (`.yoi/local/agent.key`).
    pub agent_key: Arc<Vec<u8>>,
    /// What the orchestrator loop is doing (disabled unless the server routes).
    pub router: Arc<std::sync::Mutex<yoi_engine::routing::RouterStatus>>,
    /// The dashboard's login codes and messages.
    pub ui: Arc<crate::ui::UiState>,
    /// The file watch that keeps the index fresh, and the caches it keeps exact.
    pub fresh: Arc<crate::fresh::Fresh>,
    /// Live-event streams open, per token (`[server] max_streams_per_token`).
    pub streams: Arc<crate::routes::events::Streams>,
    /// The forge of `[forge]`, its credential read at start (`None` without the section).
    pub forge: Option<Arc<crate::forge::ForgeRuntime>>,
}

/// The most mutations one group commit runs; the rest wait for the next turn, which each of
/// them has queued for.
const MAX_GROUP: usize = 256;

/// The longest a group waits for the mutations of the clients the last group answered.
const GATHER: std::time::Duration = std::time::Duration::from_millis(2);

/// A mutation waiting in [`AppState::grouped`], and where its answer goes.
type Grouped = (
    yoi_store::group::Job,
    tokio::sync::oneshot::Sender<Result<Outcome, ApiError>>,
);

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl AppState {
    /// State for a workspace whose index is attached; the file watch starts now.
    pub fn new(ws: Workspace, index: DbIndex) -> Self {
        let fresh = crate::fresh::Fresh::start(&ws);
        AppState::watched(ws, index, fresh)
    }

    /// State with a file watch that started before the index caught up with the files (so
    /// nothing written during the catch-up is missed).
    pub fn watched(ws: Workspace, index: DbIndex, fresh: crate::fresh::Fresh) -> Self {
        let agent_key = ws.agent_key().unwrap_or_else(|e| {
            // Agents still get tokens; they stop working when this server stops.
            tracing::warn!(error = %e, "no agent-token key on disk; using one for this run only");
            yoi_db::new_secret()
                .map(String::into_bytes)
                .unwrap_or_else(|_| {
                    let nanos = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_nanos())
                        .unwrap_or_default();
                    yoi_core::sha256_hex(format!("{nanos}.{}", std::process::id()).as_bytes())
                        .into_bytes()
                })
        });
        AppState {
            agent_key: Arc::new(agent_key),
            ws: Arc::new(ws),
            index,
            changed: Arc::new(watch::channel(0).0),
            closing: Arc::new(watch::channel(false).0),
            flow_wake: Arc::new(tokio::sync::Notify::new()),
            remote_wake: Arc::new(tokio::sync::Notify::new()),
            flow_sweeps: Arc::default(),
            writers: Arc::new(Mutex::new(())),
            grouped: Arc::default(),
            last_group: Arc::default(),
            claims: Arc::default(),
            router: Arc::default(),
            ui: Arc::default(),
            fresh: Arc::new(fresh),
            streams: Arc::default(),
            forge: None,
        }
    }

    /// Read every write that finished before now into the index (`yoi_db::read_your_writes`);
    /// what may be cached for this request.
    pub async fn settle(&self) -> Result<View, ApiError> {
        self.fresh
            .settle(&self.ws, self.db(), |tickets| {
                crate::fresh::write_index(self, tickets)
            })
            .await
            .map_err(|e| ApiError::internal("reading changed ticket files into the index", e))
    }

    /// The live token with this secret hash, as of `view` (from [`AppState::settle`]): from
    /// memory when the database has not changed since it was last looked up.
    pub async fn token_by_hash(
        &self,
        view: View,
        hash: &str,
    ) -> Result<Option<TokenInfo>, ApiError> {
        if let Some(t) = self.fresh.token(view, hash) {
            return Ok(Some(t));
        }
        let token = self
            .db()
            .token_by_hash(hash)
            .await
            .map_err(|e| ApiError::internal("token lookup", e))?;
        if let Some(t) = &token {
            self.fresh.keep_token(view, hash.to_string(), t.clone());
        }
        Ok(token)
    }

    pub fn db(&self) -> &Db {
        &self.index.db
    }

    /// Run a store operation on a blocking thread, in arrival order with this server's other
    /// mutations, then wake live-event streams.
    pub async fn op<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Workspace) -> Result<T, StoreError> + Send + 'static,
    {
        let ws = self.ws.clone();
        let turn = self.writers.clone().lock_owned().await;
        let result = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            f(&ws)
        })
        .await
        .map_err(|e| ApiError::internal("operation task", e))?;
        self.changed.send_modify(|n| *n += 1);
        Ok(result?)
    }

    /// Run a mutation in a group commit (`yoi_store::group`): it waits for this server's
    /// writer turn with the others queued, and whichever of them gets the turn first runs
    /// every mutation queued by then, made durable with one round of syncs. Each is answered
    /// once the whole group is on disk. For mutations that come in crowds (comments).
    pub async fn grouped<F>(&self, f: F) -> Result<Outcome, ApiError>
    where
        F: FnOnce(&Workspace) -> Result<Outcome, StoreError> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        lock(&self.grouped).push((Box::new(f), tx));
        // In a task of its own, so a caller that goes away does not take the others' group
        // with it.
        let st = self.clone();
        tokio::spawn(async move {
            let turn = st.writers.clone().lock_owned().await;
            st.gather().await;
            let queued: Vec<Grouped> = {
                let mut q = lock(&st.grouped);
                let n = q.len().min(MAX_GROUP);
                q.drain(..n).collect()
            };
            if queued.is_empty() {
                return; // an earlier turn ran this one's mutation
            }
            st.last_group
                .store(queued.len(), std::sync::atomic::Ordering::Relaxed);
            let ws = st.ws.clone();
            let (jobs, answers): (Vec<_>, Vec<_>) = queued.into_iter().unzip();
            let outcomes = tokio::task::spawn_blocking(move || {
                let _turn = turn;
                yoi_store::group::run(&ws, jobs)
            })
            .await;
            st.changed.send_modify(|n| *n += 1);
            match outcomes {
                Ok(outcomes) => {
                    for (answer, outcome) in answers.into_iter().zip(outcomes) {
                        let _ = answer.send(outcome.map_err(ApiError::from));
                    }
                }
                Err(e) => {
                    for answer in answers {
                        let _ = answer.send(Err(ApiError::internal("group commit task", &e)));
                    }
                }
            }
        });
        rx.await
            .map_err(|e| ApiError::internal("group commit task", e))?
    }

    /// With the writer turn: wait up to [`GATHER`] while fewer mutations are queued than the
    /// last group ran. Its clients were answered a moment ago and are sending their next ones;
    /// without the wait the first of those ran alone and the rest waited for it, so groups
    /// alternated between one mutation and all the others (each paying the fixed costs).
    async fn gather(&self) {
        let expected = self.last_group.load(std::sync::atomic::Ordering::Relaxed);
        let until = tokio::time::Instant::now() + GATHER;
        // An empty queue: an earlier turn ran this task's mutation, nothing to wait for.
        while (1..expected).contains(&lock(&self.grouped).len())
            && tokio::time::Instant::now() < until
        {
            tokio::time::sleep(GATHER / 4).await;
        }
    }

    /// Take this server's writer turn from a blocking thread (the orchestrator's writes queue
    /// with the API's); the turn ends when the returned guard drops.
    pub fn write_turn_blocking(&self) -> tokio::sync::OwnedMutexGuard<()> {
        self.writers.clone().blocking_lock_owned()
    }

    /// Run a synchronous read (files) on a blocking thread.
    pub async fn read<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Workspace) -> Result<T, StoreError> + Send + 'static,
    {
        self.blocking("read task", f).await?.map_err(ApiError::from)
    }

    /// [`AppState::read`] for a read that joins the files with the database index.
    pub async fn read_indexed<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Workspace, &DbIndex) -> Result<T, StoreError> + Send + 'static,
    {
        let index = self.index.clone();
        self.blocking("read task", move |ws| f(ws, &index))
            .await?
            .map_err(ApiError::from)
    }

    /// Run synchronous work on the workspace (files, git) on a blocking thread; `what` names
    /// it in the log should the thread die.
    pub async fn blocking<T, F>(&self, what: &'static str, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Workspace) -> T + Send + 'static,
    {
        let ws = self.ws.clone();
        tokio::task::spawn_blocking(move || f(&ws))
            .await
            .map_err(|e| ApiError::internal(what, e))
    }
}
