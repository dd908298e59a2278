//! The part of a queued ticket's thread the router reads: the circuit's window (every
//! `state_changed`, `retry`, `attention` and `decision` event from the ticket's latest move
//! into `queued` on) and the orchestrator's latest decision. [`Circuit::of`](super::circuit)
//! and [`last_decision`](super::record) read nothing else, so deciding costs the same whatever
//! the thread's length.
//!
//! A thread.md of at most [`SMALL_THREAD`] bytes is read whole: reading and parsing it costs
//! less than asking the index. A longer one comes from the index (`yoi_db`'s
//! `fresh_routing_events`) when its rows are provably the thread file's — the ticket's files
//! are those it last read, and thread.md parsed then without an issue; otherwise, or without an
//! index, from the file itself. Either way the router concludes the same
//! (`tests/routing_window_generated.rs` compares the two on generated threads, on SQLite and
//! PostgreSQL), and deciding costs at most what a thread of [`SMALL_THREAD`] bytes costs.
//!
//! A routing pass asks the index once for the windows of all its long threads
//! ([`long_threads_ahead`]: a few statements, not a few per ticket) and takes each ticket's
//! while its files still have the sizes and times they had then; a ticket written to since
//! asks for itself.

use std::collections::BTreeMap;

use yoi_core::thread::ParsedThread;
use yoi_core::TicketId;
use yoi_db::{DbIndex, RoutingWindow};
use yoi_store::{StoreError, Workspace};

/// The size up to which a thread.md is read whole rather than asked of the index (about a
/// hundred events).
pub const SMALL_THREAD: u64 = 16 * 1024;

/// The routing part of `id`'s thread (see the module doc): the whole file when it is small,
/// else from `index` when it holds exactly what thread.md holds, else the whole file.
pub fn routing_thread(
    ws: &Workspace,
    index: Option<&DbIndex>,
    id: &TicketId,
) -> Result<ParsedThread, StoreError> {
    routing_thread_ahead(ws, index, id, None)
}

/// [`routing_thread`], taking the window from `ahead` (read for many tickets at once by
/// [`long_threads_ahead`]) while the ticket's files are as they were then.
pub fn routing_thread_ahead(
    ws: &Workspace,
    index: Option<&DbIndex>,
    id: &TicketId,
    ahead: Option<RoutingWindow>,
) -> Result<ParsedThread, StoreError> {
    let path = ws.path_of(id, yoi_store::tickets::THREAD);
    let small = std::fs::symlink_metadata(&path).map_or(true, |m| m.len() <= SMALL_THREAD);
    if small {
        return ws.read_thread(id);
    }
    let events = match (ahead.and_then(|w| w.current(ws, id)), index) {
        (Some(events), _) => Some(events),
        (None, Some(index)) => index.fresh_routing_events(ws, id)?,
        (None, None) => None,
    };
    match events {
        Some(events) => Ok(ParsedThread {
            lines: vec![0; events.len()],
            events,
            issues: Vec::new(),
        }),
        None => ws.read_thread(id),
    }
}

/// The windows of those of `ids` whose thread.md is longer than [`SMALL_THREAD`], read from
/// `index` in a few statements for all of them (`DbIndex::routing_windows`), for a routing
/// pass to take ticket by ticket. A failure to read them costs only speed: it is logged and
/// each ticket asks for itself.
pub fn long_threads_ahead(
    ws: &Workspace,
    index: &DbIndex,
    ids: &[TicketId],
) -> BTreeMap<TicketId, RoutingWindow> {
    let long: Vec<TicketId> = ids
        .iter()
        .filter(|id| {
            std::fs::symlink_metadata(ws.path_of(id, yoi_store::tickets::THREAD))
                .is_ok_and(|m| m.len() > SMALL_THREAD)
        })
        .cloned()
        .collect();
    if long.is_empty() {
        return BTreeMap::new();
    }
    index.routing_windows(ws, &long).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "routing windows not read ahead; each ticket asks for itself");
        BTreeMap::new()
    })
}
