//! What the inbox reads from the index: for each ticket that may have an open entry, its title,
//! state and the thread events that open or close entries, in thread order. The rules that turn
//! them into entries are `yoi_engine::inbox`'s; this module only selects rows, and selects them
//! narrowly — tickets in a state where an entry can be open that hold an `attention` or
//! `question` event (or, for planning, a move the service made) — so the inbox of a large tree
//! reads a few rows, never every thread. Everything here is rebuilt from the files by a reindex.

use serde::Serialize;
use sqlx::Row;

use super::{db_err, Db};
use yoi_store::StoreError;

/// The event kinds that open or close an inbox entry.
pub const INBOX_EVENT_KINDS: [&str; 8] = [
    "attention",
    "question",
    "answer",
    "retry",
    "state_changed",
    "merge",
    "forge_pr",
    "budget",
];

/// One thread event as the inbox reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InboxEvent {
    pub id: String,
    pub kind: String,
    pub author: Option<String>,
    pub at: Option<String>,
    pub attrs: serde_json::Map<String, serde_json::Value>,
    pub body: String,
}

impl InboxEvent {
    /// The string value of attribute `key`.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).and_then(|v| v.as_str())
    }
}

/// A ticket that may have open inbox entries, with its events of [`INBOX_EVENT_KINDS`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InboxTicket {
    pub id: String,
    pub title: String,
    pub state: String,
    pub events: Vec<InboxEvent>,
}

impl Db {
    /// The tickets that may have an open inbox entry (all of them, or only `ticket`), in id
    /// order: queued or in-progress tickets with an `attention` or `question` event, and
    /// planning tickets that `service_author` moved (returned to planning). Each comes with its events that open
    /// or close entries, in thread order.
    pub async fn inbox_tickets(
        &self,
        service_author: &str,
        ticket: Option<&str>,
    ) -> Result<Vec<InboxTicket>, StoreError> {
        // One ticket's entries (its page, `show_ticket`) are looked up by its id: with the
        // filter written as `($2 = '' OR t.id = $2)` the planner scanned every ticket's events.
        // Every ticket has an id, so `<> ''` keeps them all (and types `$2` on PostgreSQL).
        let which = if ticket.is_some() {
            "t.id = $2"
        } else {
            "t.id <> $2"
        };
        let sql = format!(
            "SELECT t.id, t.title, t.state, e.id, e.kind, e.author, e.at, e.attrs, e.body \
               FROM tickets t JOIN events e ON e.ticket_id = t.id \
              WHERE {which} \
                AND e.kind IN ('attention', 'question', 'answer', 'retry', 'state_changed', 'merge', 'forge_pr', 'budget') \
                AND ((t.state IN ('queued', 'inprogress') AND EXISTS \
                       (SELECT 1 FROM events a WHERE a.ticket_id = t.id AND a.kind IN ('attention', 'question'))) \
                  OR (t.state = 'planning' AND EXISTS \
                       (SELECT 1 FROM events s WHERE s.ticket_id = t.id AND s.kind = 'state_changed' AND s.author = $1))) \
              ORDER BY t.id, e.position"
        );
        let rows = sqlx::query(&sql)
            .bind(service_author)
            .bind(ticket.unwrap_or(""))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        let mut out: Vec<InboxTicket> = Vec::new();
        for r in rows {
            let id: String = r.try_get(0).map_err(db_err)?;
            if out.last().is_none_or(|t| t.id != id) {
                out.push(InboxTicket {
                    id,
                    title: r.try_get(1).map_err(db_err)?,
                    state: r.try_get(2).map_err(db_err)?,
                    events: Vec::new(),
                });
            }
            let attrs: String = r.try_get(7).map_err(db_err)?;
            let attrs = match serde_json::from_str(&attrs) {
                Ok(serde_json::Value::Object(m)) => m,
                _ => serde_json::Map::new(),
            };
            let event = InboxEvent {
                id: r.try_get(3).map_err(db_err)?,
                kind: r.try_get(4).map_err(db_err)?,
                author: r.try_get(5).map_err(db_err)?,
                at: r.try_get(6).map_err(db_err)?,
                attrs,
                body: r.try_get(8).map_err(db_err)?,
            };
            if let Some(t) = out.last_mut() {
                t.events.push(event);
            }
        }
        Ok(out)
    }
}
