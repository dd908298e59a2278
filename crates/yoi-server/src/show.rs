//! The JSON of one ticket: the store's [`yoi_store::query::TicketDetail`], which the CLI's
//! `show --json` prints too. Its relation view comes from the database index the server keeps
//! in step (one query), not from reading every ticket's relations file.

use yoi_store::{StoreError, Workspace};

/// Call from a blocking thread only (it may wait on the database).
pub fn ticket_json(ws: &Workspace, id: &str) -> Result<serde_json::Value, StoreError> {
    let detail = yoi_store::query::ticket_detail(ws, id)?;
    Ok(serde_json::to_value(detail).unwrap_or_default())
}
