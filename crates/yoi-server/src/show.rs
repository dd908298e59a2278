//! The JSON of one ticket, shared with the CLI's `show --json` through the store.
//!
//! The ticket's own files are read as they are; its relation view comes from the database index
//! the server keeps in step (one query), not from reading every ticket's relations file, which
//! costs ~100 ms at 10,000 tickets. Without an index, or for a ticket the index does not know
//! yet, it falls back to the files.

use yoi_core::TicketId;
use yoi_store::query::{self, RelationView};
use yoi_store::{StoreError, Workspace};

pub fn ticket_json(ws: &Workspace, id: &str) -> Result<serde_json::Value, StoreError> {
    let detail = query::ticket_detail_with(ws, id, |id| relation_view(ws, id))?;
    Ok(serde_json::to_value(detail).unwrap_or_default())
}

/// Call from a blocking thread only (it waits on the database).
fn relation_view(ws: &Workspace, id: &TicketId) -> Result<RelationView, StoreError> {
    if let Some(index) = ws.index.as_ref().and_then(|i| i.0.db_index()) {
        if let Some(view) = index.block_on(index.db.relation_view(id))? {
            return Ok(view);
        }
    }
    query::relation_view(ws, id)
}
