//! The part of a ticket's thread that routing reads, from the index: the orchestrator's latest
//! decision, and every `state_changed`, `retry`, `attention` and `decision` event from the
//! ticket's latest move into `queued` on, in thread order. That is all the circuit
//! (`yoi-engine`'s `routing::circuit`, whose window starts at that move) and the latest decision
//! look at, so the queue page costs a few steps down the `events_ticket_kind_position` index per
//! ticket instead of a read of its whole thread — and two statements for a whole page of
//! tickets ([`Db::routing_events_of`]), not a few per ticket.
//!
//! When the latest `state_changed` is not a move into `queued` (a hand edit, or a ticket that is
//! not queued), the window cannot be found that way, and every routing event is returned: the
//! answer is the same as the whole thread's, only slower.

use std::collections::BTreeMap;

use sqlx::Row;
use yoi_core::thread::{Event, EventKind};
use yoi_core::TicketId;

use super::{among, db_err, placeholders, Db};
use yoi_store::StoreError;

/// The event kinds routing reads (see the module doc).
const KINDS: [&str; 4] = ["state_changed", "retry", "attention", "decision"];

/// Tickets at a time in one statement.
const CHUNK: usize = 400;

impl Db {
    /// The routing events of `id` (see the module doc), or `None` when the index holds no
    /// readable ticket of that id (the caller reads the files, which say why).
    pub async fn routing_events(&self, id: &TicketId) -> Result<Option<Vec<Event>>, StoreError> {
        Ok(self
            .routing_events_of(std::slice::from_ref(id))
            .await?
            .remove(id))
    }

    /// The routing events of each of `ids` the index holds a readable ticket of (see the
    /// module doc); the others are absent. Two statements per 400 tickets: where each window
    /// starts, then every window and the decision before it.
    pub async fn routing_events_of(
        &self,
        ids: &[TicketId],
    ) -> Result<BTreeMap<TicketId, Vec<Event>>, StoreError> {
        let mut out = BTreeMap::new();
        for chunk in ids.chunks(CHUNK) {
            self.routing_events_chunk(chunk, &mut out).await?;
        }
        Ok(out)
    }

    async fn routing_events_chunk(
        &self,
        chunk: &[TicketId],
        out: &mut BTreeMap<TicketId, Vec<Event>>,
    ) -> Result<(), StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        // Each ticket's latest `state_changed`: one step from the end of its range of the index.
        let latest = |col: &str| {
            format!(
                "(SELECT e.{col} FROM events e WHERE e.ticket_id = t.id \
                   AND e.kind = 'state_changed' ORDER BY e.position DESC LIMIT 1)"
            )
        };
        let sql = format!(
            "SELECT t.id, {}, {} FROM tickets t WHERE t.id IN ({})",
            latest("position"),
            latest("attrs"),
            placeholders(1, chunk.len())
        );
        let rows = among(&sql, chunk)
            .fetch_all(&mut *conn)
            .await
            .map_err(db_err)?;
        let mut starts: Vec<(TicketId, i64)> = Vec::with_capacity(rows.len());
        for r in &rows {
            let id = TicketId::parse(&r.try_get::<String, _>(0).map_err(db_err)?)?;
            let position: Option<i64> = r.try_get(1).map_err(db_err)?;
            let attrs: Option<String> = r.try_get(2).map_err(db_err)?;
            let to = attrs.and_then(|a| {
                serde_json::from_str::<serde_json::Value>(&a)
                    .ok()
                    .and_then(|a| a.get("to").and_then(|v| v.as_str()).map(str::to_string))
            });
            let start = match (position, to.as_deref()) {
                (Some(p), Some("queued")) => p,
                _ => 0,
            };
            out.insert(id.clone(), Vec::new());
            starts.push((id, start));
        }
        if starts.is_empty() {
            return Ok(());
        }
        // The orchestrator's latest decision before the window, then the window one range of
        // the index per kind (with `kind IN (…)` SQLite walks every event after the start
        // instead, comments included), in thread order per ticket. CROSS JOIN keeps SQLite
        // starting at the few tickets, not at the events.
        let values = (0..starts.len())
            .map(|i| format!("(${}, CAST(${} AS BIGINT))", 2 * i + 2, 2 * i + 3))
            .collect::<Vec<_>>()
            .join(", ");
        let columns = "s.ticket_id, e.position, e.kind, e.attrs, e.heading, e.body";
        let before = format!(
            "SELECT {columns} FROM s CROSS JOIN events e \
              WHERE e.ticket_id = s.ticket_id AND e.kind = 'decision' AND e.position = \
                (SELECT x.position FROM events x WHERE x.ticket_id = s.ticket_id \
                   AND x.kind = 'decision' AND x.author = $1 AND x.position < s.start \
                 ORDER BY x.position DESC LIMIT 1)"
        );
        let window = KINDS.iter().map(|k| {
            format!(
                "SELECT {columns} FROM s CROSS JOIN events e \
                  WHERE e.ticket_id = s.ticket_id AND e.kind = '{k}' AND e.position >= s.start"
            )
        });
        let sql = format!(
            "WITH s (ticket_id, start) AS (VALUES {values}) {} ORDER BY 1, 2",
            std::iter::once(before)
                .chain(window)
                .collect::<Vec<_>>()
                .join(" UNION ALL ")
        );
        let mut q = sqlx::query(&sql).bind(yoi_core::Principal::orchestrator().author());
        for (id, start) in &starts {
            q = q.bind(id.as_str()).bind(*start);
        }
        let rows = q.fetch_all(&mut *conn).await.map_err(db_err)?;
        for r in &rows {
            let id = TicketId::parse(&r.try_get::<String, _>(0).map_err(db_err)?)?;
            if let Some(events) = out.get_mut(&id) {
                events.push(event_of(r)?);
            }
        }
        Ok(())
    }
}

/// An event as the index holds it (`bulk::event_row`): the header's attributes as a JSON
/// object of strings, the heading and the body (columns 2 to 5 of `r`).
fn event_of(r: &sqlx::any::AnyRow) -> Result<Event, StoreError> {
    let kind: String = r.try_get(2).map_err(db_err)?;
    let attrs: String = r.try_get(3).map_err(db_err)?;
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
        heading: r.try_get(4).map_err(db_err)?,
        body: r.try_get(5).map_err(db_err)?,
    })
}
