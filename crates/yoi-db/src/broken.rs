//! Tickets whose files yoi cannot read, as the index lists them (`broken_tickets`, written
//! with every ticket's rows: see `snapshot::Snapshot`), each with what is wrong read from its
//! files ([`Workspace::diagnose`]). Lists show them beside the readable tickets, so a broken
//! file never hides a ticket; there are few, so reading their files per list costs little.

use yoi_core::TicketId;
use yoi_store::tickets::BrokenTicket;
use yoi_store::{StoreError, Workspace};

use super::{db_err, Db, DbIndex};

impl Db {
    /// The tickets the index holds as broken, by id.
    pub async fn broken_ids(&self) -> Result<Vec<TicketId>, StoreError> {
        let rows: Vec<(String,)> =
            sqlx::query_as("SELECT ticket_id FROM broken_tickets ORDER BY ticket_id")
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?;
        Ok(rows
            .into_iter()
            .filter_map(|(id,)| TicketId::parse(&id).ok())
            .collect())
    }
}

/// What is wrong with each of `ids`, read from the files; a ticket whose files read well now
/// (the index has not caught up yet) is left out. Blocking: it reads files.
pub fn diagnose(ws: &Workspace, ids: &[TicketId]) -> Vec<BrokenTicket> {
    ids.iter().filter_map(|id| ws.diagnose(id)).collect()
}

impl DbIndex {
    /// Every broken ticket the index knows, with what is wrong ([`diagnose`]).
    pub fn broken(&self, ws: &Workspace) -> Result<Vec<BrokenTicket>, StoreError> {
        let ids = self.run(self.db.broken_ids())?;
        Ok(diagnose(ws, &ids))
    }
}
