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

use yoi_core::thread::ParsedThread;
use yoi_core::TicketId;
use yoi_db::DbIndex;
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
    let path = ws.path_of(id, yoi_store::tickets::THREAD);
    let small = std::fs::symlink_metadata(&path).map_or(true, |m| m.len() <= SMALL_THREAD);
    if let Some(events) = index
        .filter(|_| !small)
        .map(|index| index.fresh_routing_events(ws, id))
        .transpose()?
        .flatten()
    {
        return Ok(ParsedThread {
            lines: vec![0; events.len()],
            events,
            issues: Vec::new(),
        });
    }
    ws.read_thread(id)
}
