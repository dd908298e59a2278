//! The synchronous face of the database: the one bridge across the sync/async line.
//!
//! [`Db`] is async; everything above the database that runs on a blocking thread — the file
//! operations' index hook, the engine, doctor, the CLI's commands — calls [`DbIndex`] instead,
//! whose methods are synchronous (the same-named `Db` calls are in `sync_calls.rs`, the doctor's
//! read-ahead in `read_ahead.rs`). Each runs its async call to completion on the runtime of the
//! [`Bridge`] the caller gave, through one crate-private helper (`DbIndex::run`, over
//! `Bridge::run`, the crate's only `block_on`); none is public, so a caller above the database
//! cannot run an arbitrary future and the line stays here. Never call these from inside an
//! async task — that would block the runtime; async code (the server's handlers) awaits
//! [`DbIndex::db`] directly.
//!
//! The index never reads the clock: the time it stamps rows with (outbox rows, deliveries)
//! comes from the [`Bridge`]'s clock, which the frontend that opened the database chose (the
//! wall clock in `yoi` and `yoi serve`, a fake one in tests and the simulation).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use tokio::runtime::Handle;
use yoi_core::TicketId;

use super::{Db, Footprint, IndexStats, LeaseHolder, ReindexMode};
use yoi_store::index_hook::{AppendedThread, IndexHook, IndexRef, OpRecord};
use yoi_store::lock::WorkspaceLock;
use yoi_store::workspace::Workspace;
use yoi_store::{DbSetup, StoreError};

/// What a blocking caller needs to reach the async database: the runtime its calls run on and
/// the clock (milliseconds since the Unix epoch) the index stamps rows with. The runtime must
/// be a multi-thread one: `Handle::block_on` drives no IO or timers on a current-thread
/// runtime, so the first query would wait forever.
#[derive(Clone)]
pub struct Bridge {
    rt: Handle,
    clock: Arc<dyn Fn() -> i64 + Send + Sync>,
}

impl fmt::Debug for Bridge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bridge").finish_non_exhaustive()
    }
}

impl Bridge {
    pub fn new(rt: Handle, clock: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        Bridge {
            rt,
            clock: Arc::new(clock),
        }
    }

    /// The bridge's clock, read now.
    pub fn now_ms(&self) -> i64 {
        (self.clock)()
    }

    /// Run one database future to completion on the bridge's runtime, blocking this thread:
    /// the one place the crate crosses from sync to async.
    fn run<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }
}

/// The database index with the [`Bridge`] its blocking calls cross.
#[derive(Debug, Clone)]
pub struct DbIndex {
    pub db: Db,
    bridge: Bridge,
    /// The server lease this index holds (its nonce), when it was opened to serve.
    lease: Option<Arc<str>>,
}

impl DbIndex {
    pub fn new(db: Db, bridge: Bridge) -> Self {
        DbIndex {
            db,
            bridge,
            lease: None,
        }
    }

    /// The nonce of the server lease this index took ([`Footprint::Server`]), for the server's
    /// heartbeat ([`Db::renew_server_lease`]) and its last act ([`Db::release_server_lease`]).
    pub fn server_lease(&self) -> Option<&str> {
        self.lease.as_deref()
    }

    /// The time the index stamps rows with, from the bridge's clock.
    pub fn now_ms(&self) -> i64 {
        self.bridge.now_ms()
    }

    /// The bridge this index's blocking calls cross.
    pub fn bridge(&self) -> &Bridge {
        &self.bridge
    }

    /// Open the workspace's database (config `database.url`, else the embedded SQLite file),
    /// migrate it, catch the index up with the files incrementally, and attach it to `ws`.
    pub fn attach(ws: &mut Workspace, bridge: Bridge) -> Result<(DbIndex, IndexStats), StoreError> {
        DbIndex::attach_with(ws, bridge, ReindexMode::Incremental)
    }

    /// [`DbIndex::attach`] with the catch-up pass of `mode` (`Full` rebuilds every row: what
    /// `yoi reindex --full` asks for, without an incremental pass first).
    pub fn attach_with(
        ws: &mut Workspace,
        bridge: Bridge,
        mode: ReindexMode,
    ) -> Result<(DbIndex, IndexStats), StoreError> {
        DbIndex::attach_as(ws, bridge, mode, Footprint::Service)
    }

    /// [`DbIndex::attach_with`] keeping the memory of `footprint` (a short command asks for
    /// [`Footprint::Command`]).
    pub fn attach_as(
        ws: &mut Workspace,
        bridge: Bridge,
        mode: ReindexMode,
        footprint: Footprint,
    ) -> Result<(DbIndex, IndexStats), StoreError> {
        let index = Self::open_for(ws, bridge, footprint)?;
        let stats = index.reindex(ws, mode)?;
        ws.index = Some(IndexRef(Arc::new(index.clone())));
        Ok((index, stats))
    }

    /// Like [`DbIndex::attach_as`], without catching up with the files first: for doctor, which
    /// reads every file anyway and catches up only when it finds the index behind them.
    pub fn attach_behind(
        ws: &mut Workspace,
        bridge: Bridge,
        footprint: Footprint,
    ) -> Result<DbIndex, StoreError> {
        let index = Self::open_for(ws, bridge, footprint)?;
        ws.index = Some(IndexRef(Arc::new(index.clone())));
        Ok(index)
    }

    fn open_for(
        ws: &Workspace,
        bridge: Bridge,
        footprint: Footprint,
    ) -> Result<DbIndex, StoreError> {
        let url = ws.database_url();
        let id = ws.config.workspace.id.as_deref();
        let embedded = crate::sqlite_url(&ws.local_dir().join("yoi.db"));
        if url.starts_with("sqlite:") {
            let dir = ws.local_dir();
            std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        } else if id.is_none() {
            return Err(StoreError::DatabaseSetup {
                problem: DbSetup::NoWorkspaceId {
                    url: crate::redact(&url),
                },
            });
        }
        let db = bridge.run(Db::open_workspace(&url, footprint, id))?;
        let mut index = DbIndex::new(db, bridge);
        if url != embedded {
            index.refuse_left_behind(ws, &url)?;
        }
        if let Some(id) = id {
            let me = LeaseHolder::this_process(ws.root());
            let now = index.now_ms();
            if footprint == Footprint::Server {
                let nonce = crate::new_secret()?;
                index.run(index.db.take_server_lease(id, &me, &nonce, now))?;
                index.lease = Some(nonce.into());
            } else {
                index.run(index.db.check_server_lease(id, &me, now))?;
            }
        }
        Ok(index)
    }

    /// Refuse a database without tokens while the workspace's embedded SQLite file still holds
    /// tokens, pods or assignments: its people's and pods' tokens would be answered 401 with
    /// nothing to say why (`yoi db copy` moves them).
    fn refuse_left_behind(&self, ws: &Workspace, url: &str) -> Result<(), StoreError> {
        let old = ws.local_dir().join("yoi.db");
        if !old.is_file() || self.run(self.db.runtime_rows())?.tokens > 0 {
            return Ok(());
        }
        match self.run(crate::workspace::left_in_sqlite(&old)) {
            Some(rows) => Err(StoreError::DatabaseSetup {
                problem: DbSetup::LeftBehind {
                    url: crate::redact(url),
                    old: ws.rel(&old),
                    tokens: rows.tokens,
                    pods: rows.pods,
                    assignments: rows.assignments,
                },
            }),
            None => Ok(()),
        }
    }

    /// Reindex under the workspace lock, so no operation writes files meanwhile.
    pub fn reindex(&self, ws: &Workspace, mode: ReindexMode) -> Result<IndexStats, StoreError> {
        let lock = ws.lock()?;
        self.reindex_locked(ws, &lock, mode)
    }

    /// [`DbIndex::reindex`] for a caller that already holds the workspace lock (`_held`, its
    /// guard): doctor's `--fix`, which rebuilds the index between two checks under one lock.
    pub fn reindex_locked(
        &self,
        ws: &Workspace,
        _held: &WorkspaceLock,
        mode: ReindexMode,
    ) -> Result<IndexStats, StoreError> {
        self.run(self.db.reindex(ws, mode, self.now_ms()))
    }

    /// Re-read these tickets into the index where their files changed ([`Db::refresh`]),
    /// under the workspace lock. Returns how many were re-read or removed.
    pub fn refresh(&self, ws: &Workspace, ids: &[TicketId]) -> Result<usize, StoreError> {
        let _lock = ws.lock()?;
        self.run(self.db.refresh(ws, ids, self.now_ms()))
    }

    /// Run one database future to completion on the index's runtime (blocking threads only).
    /// Crate-private on purpose: a caller above the database gets a named synchronous method
    /// (`sync_calls.rs`), not a general way back into async code.
    pub(crate) fn run<F: Future>(&self, f: F) -> F::Output {
        self.bridge.run(f)
    }

    /// Run a database future on the index's runtime while the caller goes on.
    pub(crate) fn spawn<F>(&self, f: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.bridge.rt.spawn(f)
    }
}

impl IndexHook for DbIndex {
    fn tickets_changed(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
        ops: &[OpRecord],
    ) -> Result<(), StoreError> {
        self.run(self.db.sync_tickets(ws, ids, &[], ops, self.now_ms()))
            .map(|_| ())
    }

    fn threads_appended(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
        appended: &[AppendedThread],
        ops: &[OpRecord],
    ) -> Result<(), StoreError> {
        self.run(self.db.sync_tickets(ws, ids, appended, ops, self.now_ms()))
            .map(|_| ())
    }

    fn find_operation(&self, op_id: &str) -> Result<Option<OpRecord>, StoreError> {
        self.run(self.db.find_operation(op_id))
    }
}
