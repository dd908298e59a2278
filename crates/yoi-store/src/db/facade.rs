//! The synchronous face of the database for the file operations.
//!
//! Operations run on blocking threads (the CLI's main thread, or `spawn_blocking` in the
//! server) and hold the workspace lock while they call in here; each call runs the async
//! database code to completion on the given runtime. Never call these from inside an async
//! task — that would block the runtime.

use std::sync::Arc;

use tokio::runtime::Handle;
use yoi_core::TicketId;

use super::{Db, Footprint, IndexStats, ReindexMode};
use crate::error::StoreError;
use crate::index::{AppendedThread, IndexHook, IndexRef, OpRecord};
use crate::workspace::Workspace;

/// The database index with the runtime its blocking calls run on. That runtime must be a
/// multi-thread one: `Handle::block_on` drives no IO or timers on a current-thread runtime, so
/// the first query would wait forever.
#[derive(Debug, Clone)]
pub struct DbIndex {
    pub db: Db,
    rt: Handle,
}

/// Wall-clock milliseconds, for the entry points that have no clock passed in.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl DbIndex {
    pub fn new(db: Db, rt: Handle) -> Self {
        DbIndex { db, rt }
    }

    /// Open the workspace's database (config `database.url`, else the embedded SQLite file),
    /// migrate it, catch the index up with the files incrementally, and attach it to `ws`.
    pub fn attach(ws: &mut Workspace, rt: Handle) -> Result<(DbIndex, IndexStats), StoreError> {
        DbIndex::attach_with(ws, rt, ReindexMode::Incremental)
    }

    /// [`DbIndex::attach`] with the catch-up pass of `mode` (`Full` rebuilds every row: what
    /// `yoi reindex --full` asks for, without an incremental pass first).
    pub fn attach_with(
        ws: &mut Workspace,
        rt: Handle,
        mode: ReindexMode,
    ) -> Result<(DbIndex, IndexStats), StoreError> {
        DbIndex::attach_as(ws, rt, mode, Footprint::Service)
    }

    /// [`DbIndex::attach_with`] keeping the memory of `footprint` (a short command asks for
    /// [`Footprint::Command`]).
    pub fn attach_as(
        ws: &mut Workspace,
        rt: Handle,
        mode: ReindexMode,
        footprint: Footprint,
    ) -> Result<(DbIndex, IndexStats), StoreError> {
        let index = Self::open_for(ws, rt, footprint)?;
        let stats = index.reindex(ws, mode)?;
        ws.index = Some(IndexRef(Arc::new(index.clone())));
        Ok((index, stats))
    }

    /// Like [`DbIndex::attach_as`], without catching up with the files first: for doctor, which
    /// reads every file anyway and catches up only when it finds the index behind them.
    pub fn attach_behind(
        ws: &mut Workspace,
        rt: Handle,
        footprint: Footprint,
    ) -> Result<DbIndex, StoreError> {
        let index = Self::open_for(ws, rt, footprint)?;
        ws.index = Some(IndexRef(Arc::new(index.clone())));
        Ok(index)
    }

    fn open_for(ws: &Workspace, rt: Handle, footprint: Footprint) -> Result<DbIndex, StoreError> {
        let url = ws.database_url();
        if url.starts_with("sqlite:") {
            let dir = ws.local_dir();
            std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        }
        let db = rt.block_on(Db::open_as(&url, footprint))?;
        Ok(DbIndex::new(db, rt))
    }

    /// Reindex under the workspace lock, so no operation writes files meanwhile.
    pub fn reindex(&self, ws: &Workspace, mode: ReindexMode) -> Result<IndexStats, StoreError> {
        let _lock = ws.lock()?;
        self.rt.block_on(self.db.reindex(ws, mode, now_ms()))
    }

    /// Re-read these tickets into the index where their files changed ([`Db::refresh`]),
    /// under the workspace lock. Returns how many were re-read or removed.
    pub fn refresh(&self, ws: &Workspace, ids: &[TicketId]) -> Result<usize, StoreError> {
        let _lock = ws.lock()?;
        self.rt.block_on(self.db.refresh(ws, ids, now_ms()))
    }

    /// Run any database future to completion (blocking threads only).
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// Run a database future on the index's runtime while the caller goes on.
    pub fn spawn<F>(&self, f: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.rt.spawn(f)
    }
}

impl IndexHook for DbIndex {
    fn tickets_changed(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
        ops: &[OpRecord],
    ) -> Result<(), StoreError> {
        self.rt
            .block_on(self.db.sync_tickets(ws, ids, &[], ops, now_ms()))
            .map(|_| ())
    }

    fn threads_appended(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
        appended: &[AppendedThread],
        ops: &[OpRecord],
    ) -> Result<(), StoreError> {
        self.rt
            .block_on(self.db.sync_tickets(ws, ids, appended, ops, now_ms()))
            .map(|_| ())
    }

    fn find_operation(&self, op_id: &str) -> Result<Option<OpRecord>, StoreError> {
        self.rt.block_on(self.db.find_operation(op_id))
    }

    fn db_index(&self) -> Option<&DbIndex> {
        Some(self)
    }
}
