//! The synchronous face of the database for the file operations: the one bridge across the
//! sync/async line.
//!
//! Operations run on blocking threads (the CLI's main thread, or `spawn_blocking` in the
//! server) and hold the workspace lock while they call in here; each call runs the async
//! database code to completion on the runtime of the [`Bridge`] the caller gave. Never call
//! these from inside an async task — that would block the runtime.
//!
//! The index never reads the clock: the time it stamps rows with (outbox rows, deliveries)
//! comes from the [`Bridge`]'s clock, which the frontend that opened the database chose (the
//! wall clock in `yoi` and `yoi serve`, a fake one in tests and the simulation).

use std::fmt;
use std::sync::Arc;

use tokio::runtime::Handle;
use yoi_core::TicketId;

use super::{Db, Footprint, IndexStats, ReindexMode};
use yoi_store::index_hook::{AppendedThread, IndexHook, IndexRef, OpRecord};
use yoi_store::workspace::Workspace;
use yoi_store::StoreError;

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

    pub fn handle(&self) -> &Handle {
        &self.rt
    }
}

/// The database index with the [`Bridge`] its blocking calls cross.
#[derive(Debug, Clone)]
pub struct DbIndex {
    pub db: Db,
    bridge: Bridge,
}

impl DbIndex {
    pub fn new(db: Db, bridge: Bridge) -> Self {
        DbIndex { db, bridge }
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
        if url.starts_with("sqlite:") {
            let dir = ws.local_dir();
            std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        }
        let db = bridge.rt.block_on(Db::open_as(&url, footprint))?;
        Ok(DbIndex::new(db, bridge))
    }

    /// Reindex under the workspace lock, so no operation writes files meanwhile.
    pub fn reindex(&self, ws: &Workspace, mode: ReindexMode) -> Result<IndexStats, StoreError> {
        let _lock = ws.lock()?;
        self.bridge
            .rt
            .block_on(self.db.reindex(ws, mode, self.now_ms()))
    }

    /// Re-read these tickets into the index where their files changed ([`Db::refresh`]),
    /// under the workspace lock. Returns how many were re-read or removed.
    pub fn refresh(&self, ws: &Workspace, ids: &[TicketId]) -> Result<usize, StoreError> {
        let _lock = ws.lock()?;
        self.bridge
            .rt
            .block_on(self.db.refresh(ws, ids, self.now_ms()))
    }

    /// Run any database future to completion (blocking threads only).
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.bridge.rt.block_on(f)
    }

    /// Run a database future on the index's runtime while the caller goes on.
    pub fn spawn<F>(&self, f: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
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
        self.bridge
            .rt
            .block_on(self.db.sync_tickets(ws, ids, &[], ops, self.now_ms()))
            .map(|_| ())
    }

    fn threads_appended(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
        appended: &[AppendedThread],
        ops: &[OpRecord],
    ) -> Result<(), StoreError> {
        self.bridge
            .rt
            .block_on(self.db.sync_tickets(ws, ids, appended, ops, self.now_ms()))
            .map(|_| ())
    }

    fn find_operation(&self, op_id: &str) -> Result<Option<OpRecord>, StoreError> {
        self.bridge.rt.block_on(self.db.find_operation(op_id))
    }
}
