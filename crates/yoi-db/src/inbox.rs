//! What the inbox reads from the index: for each ticket that may have an open entry, its title,
//! state and the thread events that open or close entries, in thread order. The rules that turn
//! them into entries are `yoi_engine::inbox`'s; this module only selects rows, and selects them
//! narrowly — tickets in a state where an entry can be open that hold an `attention` or
//! `question` event (or, for planning, a move the service made into planning) — so the inbox of
//! a large tree reads a few rows, never every thread. Everything here is rebuilt from the files
//! by a reindex.
//!
//! The whole inbox starts from the events that can open an entry (the partial index
//! `events_inbox_openers`, migration 0019), not from the tickets: its cost follows the tickets
//! that ever needed a person, not every ticket in a working state (at 100,000 tickets, the walk
//! over the states took 180–440 ms on a loaded machine; `tests/inbox_generated.rs` holds the
//! narrowed read to the rule applied to every ticket's files).

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
    /// planning tickets that `service_author` moved (with `None`, only those moved into
    /// planning by someone: the others have no entry). Each comes with its events that open or
    /// close entries, in thread order.
    pub async fn inbox_tickets(
        &self,
        service_author: &str,
        ticket: Option<&str>,
    ) -> Result<Vec<InboxTicket>, StoreError> {
        // Which tickets may hold an open entry: the old rule, whatever the tickets are read from.
        const MAY_WAIT: &str = "e.kind IN ('attention', 'question', 'answer', 'retry', 'state_changed', 'merge', 'forge_pr', 'budget') \
                AND ((t.state IN ('queued', 'inprogress') AND EXISTS \
                       (SELECT 1 FROM events a WHERE a.ticket_id = t.id AND a.kind IN ('attention', 'question'))) \
                  OR (t.state = 'planning' AND EXISTS \
                       (SELECT 1 FROM events s WHERE s.ticket_id = t.id AND s.kind = 'state_changed' AND s.author = $1)))";
        let (sql, id) = match ticket {
            // One ticket's entries (its page, `show_ticket`), looked up by its id.
            Some(id) => (
                format!(
                    "SELECT t.id, t.title, t.state, e.id, e.kind, e.author, e.at, e.attrs, e.body \
                       FROM tickets t JOIN events e ON e.ticket_id = t.id \
                      WHERE t.id = $2 AND {MAY_WAIT} ORDER BY e.position"
                ),
                Some(id),
            ),
            // Every ticket's: from the events that can open an entry (the candidates' WHERE
            // is the partial index's, word for word, or the index is not used); a ticket in
            // planning whose service moves never went into planning can have no open entry,
            // so leaving it out changes no entry. `CROSS JOIN` keeps SQLite's planner on that
            // order (it would otherwise walk `tickets_state` for the OR); PostgreSQL, which
            // plans from statistics, treats it as an inner join.
            None => (
                format!(
                    "WITH candidates (id) AS ( \
                       SELECT DISTINCT ticket_id FROM events \
                        WHERE kind IN ('attention', 'question') \
                           OR (kind = 'state_changed' AND attrs LIKE '%\"to\":\"planning\"%')) \
                     SELECT t.id, t.title, t.state, e.id, e.kind, e.author, e.at, e.attrs, e.body \
                       FROM candidates c CROSS JOIN tickets t CROSS JOIN events e \
                      WHERE t.id = c.id AND e.ticket_id = t.id AND {MAY_WAIT} \
                      ORDER BY t.id, e.position"
                ),
                None,
            ),
        };
        let mut q = sqlx::query(&sql).bind(service_author);
        if let Some(id) = id {
            q = q.bind(id);
        }
        let rows = q.fetch_all(self.pool()).await.map_err(db_err)?;
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
