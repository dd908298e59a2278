//! The seam between the file store and the database index.
//!
//! Files are the truth. After an operation has written its files — still under the workspace
//! lock — it tells the attached index which tickets changed, and the index brings itself up to
//! date from those files (rows, relations, events, outbox) in one transaction, recording the
//! operation id for replays. If that fails the operation still succeeded on disk; the outcome
//! carries the index error and the next start-up reindex heals the difference.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use yoi_core::TicketId;

use crate::error::StoreError;
use crate::ops::Outcome;
use crate::workspace::Workspace;

/// An operation as remembered for replays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpRecord {
    pub op_id: String,
    pub fingerprint: String,
    pub ticket: TicketId,
    pub operation: String,
    pub outcome: Outcome,
}

/// A thread.md a group commit appended to, with its size and mtime (nanoseconds) before the
/// group's first append, the fingerprint the index holds if it was up to date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendedThread {
    pub ticket: TicketId,
    pub size: i64,
    pub mtime_ns: i64,
}

pub trait IndexHook: Send + Sync {
    /// Re-read these tickets' files into the index; record `ops` in the same transaction.
    fn tickets_changed(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
        ops: &[OpRecord],
    ) -> Result<(), StoreError>;

    /// As [`IndexHook::tickets_changed`], after a group commit that only appended to the
    /// threads in `appended` (and left those tickets' other files alone): an index may add
    /// just the new events of those, when its rows provably hold everything before them.
    fn threads_appended(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
        appended: &[AppendedThread],
        ops: &[OpRecord],
    ) -> Result<(), StoreError> {
        let _ = appended;
        self.tickets_changed(ws, ids, ops)
    }

    /// The operation recorded under `op_id`, if any.
    fn find_operation(&self, op_id: &str) -> Result<Option<OpRecord>, StoreError>;
}

/// A shareable index handle stored on the workspace.
#[derive(Clone)]
pub struct IndexRef(pub Arc<dyn IndexHook>);

impl fmt::Debug for IndexRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IndexRef")
    }
}
