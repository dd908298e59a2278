//! The part of a ticket's thread that routing reads, from the index: the orchestrator's latest
//! decision, and every `state_changed`, `retry`, `attention` and `decision` event from the
//! ticket's latest move into `queued` on, in thread order. That is all the circuit
//! (`yoi-engine`'s `routing::circuit`, whose window starts at that move) and the latest decision
//! look at, so the queue page costs a few steps down the `events_ticket_kind_position` index per
//! ticket instead of a read of its whole thread.
//!
//! When the latest `state_changed` is not a move into `queued` (a hand edit, or a ticket that is
//! not queued), the window cannot be found that way, and every routing event is returned: the
//! answer is the same as the whole thread's, only slower.

use sqlx::Row;
use yoi_core::thread::{Event, EventKind};
use yoi_core::TicketId;

use super::{db_err, Db};
use yoi_store::StoreError;

/// The event kinds routing reads (see the module doc).
const KINDS: [&str; 4] = ["state_changed", "retry", "attention", "decision"];

impl Db {
    /// The routing events of `id` (see the module doc), or `None` when the index holds no
    /// readable ticket of that id (the caller reads the files, which say why).
    pub async fn routing_events(&self, id: &TicketId) -> Result<Option<Vec<Event>>, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        let known = sqlx::query("SELECT 1 FROM tickets WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&mut *conn)
            .await
            .map_err(db_err)?;
        if known.is_none() {
            return Ok(None);
        }
        let latest = sqlx::query(
            "SELECT position, attrs FROM events WHERE ticket_id = $1 AND kind = 'state_changed' \
              ORDER BY position DESC LIMIT 1",
        )
        .bind(id.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?;
        let start: i64 = match latest {
            Some(r) => {
                let attrs: String = r.try_get(1).map_err(db_err)?;
                let to = serde_json::from_str::<serde_json::Value>(&attrs)
                    .ok()
                    .and_then(|a| a.get("to").and_then(|v| v.as_str()).map(str::to_string));
                if to.as_deref() == Some("queued") {
                    r.try_get(0).map_err(db_err)?
                } else {
                    0
                }
            }
            None => 0,
        };
        let columns = "position, kind, attrs, heading, body";
        let orchestrator = yoi_core::Principal::orchestrator().author();
        let before = sqlx::query(&format!(
            "SELECT {columns} FROM events WHERE ticket_id = $1 AND kind = 'decision' \
               AND author = $2 AND position < $3 ORDER BY position DESC LIMIT 1"
        ))
        .bind(id.as_str())
        .bind(orchestrator)
        .bind(start)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?;
        // One range of the index per kind, merged in thread order: with `kind IN (…)` SQLite
        // walks every event after the start instead, comments included.
        let window = KINDS
            .iter()
            .map(|k| {
                format!(
                    "SELECT {columns} FROM events WHERE ticket_id = $1 AND kind = '{k}' \
                       AND position >= $2"
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        let window = sqlx::query(&format!("{window} ORDER BY 1"))
            .bind(id.as_str())
            .bind(start)
            .fetch_all(&mut *conn)
            .await
            .map_err(db_err)?;
        before
            .iter()
            .chain(window.iter())
            .map(event_of)
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// An event as the index holds it (`bulk::event_row`): the header's attributes as a JSON
/// object of strings, the heading and the body.
fn event_of(r: &sqlx::any::AnyRow) -> Result<Event, StoreError> {
    let kind: String = r.try_get(1).map_err(db_err)?;
    let attrs: String = r.try_get(2).map_err(db_err)?;
    let attrs = match serde_json::from_str::<serde_json::Value>(&attrs) {
        Ok(serde_json::Value::Object(m)) => m
            .into_iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_string())))
            .collect(),
        _ => Vec::new(),
    };
    Ok(Event {
        kind: EventKind::parse(&kind),
        attrs,
        heading: r.try_get(3).map_err(db_err)?,
        body: r.try_get(4).map_err(db_err)?,
    })
}
