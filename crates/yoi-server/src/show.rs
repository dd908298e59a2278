//! The JSON of one ticket, shared with the CLI's `show --json` through the store.

use yoi_store::{StoreError, Workspace};

pub fn ticket_json(ws: &Workspace, id: &str) -> Result<serde_json::Value, StoreError> {
    let detail = yoi_store::query::ticket_detail(ws, id)?;
    Ok(serde_json::to_value(detail).unwrap_or_default())
}
