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
//!
//! The router itself asks [`Db::fresh_routing_events`], which answers only when the rows are
//! provably the thread file's, as the thread page does (`thread_page.rs`): the ticket's files
//! are those the index last read (size and mtime, then content hash), and thread.md parsed
//! then without an issue (`tickets.thread_events` is not -1). Otherwise it answers `None` and
//! the router reads the file, which says exactly what it holds.

use std::collections::BTreeMap;

use sqlx::Row;
use yoi_core::thread::{Event, EventKind};
use yoi_core::TicketId;

use super::reindex::Look;
use super::snapshot::{look_at, Seen};
use super::{among, db_err, placeholders, Db};
use yoi_store::{StoreError, Workspace};

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

    /// The routing events of `id` when the index provably holds what its thread.md holds now
    /// (see the module doc), else `None`: the caller reads the file. A few statements and a
    /// look at the ticket's files' sizes and times, whatever the thread's length.
    pub async fn fresh_routing_events(
        &self,
        ws: &Workspace,
        id: &TicketId,
    ) -> Result<Option<Vec<Event>>, StoreError> {
        let (changed, gone) = self.stale_tickets(ws, std::slice::from_ref(id)).await?;
        if !changed.is_empty() || !gone.is_empty() {
            return Ok(None);
        }
        let mut out = BTreeMap::new();
        self.routing_events_chunk(std::slice::from_ref(id), true, &mut out)
            .await?;
        Ok(out.remove(id))
    }

    /// [`Db::fresh_routing_events`] for many tickets at once, to be used a moment later: each
    /// answer keeps the fingerprints its ticket's files had when the index was found to hold
    /// them, and gives its events only while the files still have them
    /// ([`RoutingWindow::current`]). A ticket the index cannot answer for now is absent. One
    /// statement per few hundred tickets for the fingerprints, two for the windows.
    pub async fn routing_windows(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
    ) -> Result<BTreeMap<TicketId, RoutingWindow>, StoreError> {
        let mut seen = BTreeMap::new();
        for (id, look) in self.looked_at(ws, ids).await? {
            if let Look::Same(fingerprints) = look {
                seen.insert(id, fingerprints);
            }
        }
        let same: Vec<TicketId> = seen.keys().cloned().collect();
        let mut events = BTreeMap::new();
        for chunk in same.chunks(CHUNK) {
            self.routing_events_chunk(chunk, true, &mut events).await?;
        }
        Ok(events
            .into_iter()
            .filter_map(|(id, events)| {
                let seen = seen.remove(&id)?;
                Some((id, RoutingWindow { seen, events }))
            })
            .collect())
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
            self.routing_events_chunk(chunk, false, &mut out).await?;
        }
        Ok(out)
    }

    /// The routing events of `chunk` into `out`; with `clean_only`, a ticket whose thread.md
    /// did not parse cleanly when it was indexed is left out.
    async fn routing_events_chunk(
        &self,
        chunk: &[TicketId],
        clean_only: bool,
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
            "SELECT t.id, {}, {}, t.thread_events FROM tickets t WHERE t.id IN ({})",
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
            let thread_events: i64 = r.try_get(3).map_err(db_err)?;
            if clean_only && thread_events < 0 {
                continue;
            }
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
        let columns = "s.ticket_id, e.position, e.kind, e.attrs, e.heading, e.body, e.author";
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

/// A ticket's routing events read ahead ([`Db::routing_windows`]), with the fingerprints its
/// files had then.
#[derive(Debug, Clone)]
pub struct RoutingWindow {
    seen: Seen,
    events: Vec<Event>,
}

impl RoutingWindow {
    /// The events, when `id`'s files still have the sizes and times they had when the index
    /// was found to hold them: then the index's rows are still the thread file's, as
    /// [`Db::fresh_routing_events`] would find. Else `None`: anything written since (by the
    /// server, a person or a pull) sends the caller back to asking afresh.
    pub fn current(self, ws: &Workspace, id: &TicketId) -> Option<Vec<Event>> {
        (look_at(ws, id) == self.seen).then_some(self.events)
    }
}

/// An event as the index holds it (`bulk::event_row`): the header's attributes as a JSON
/// object of strings, the heading, the body and the author (columns 2 to 6 of `r`).
///
/// The JSON object keeps one value per key, the header's last; `Event::get` reads the first.
/// The `author` column holds the first, so the author routing trusts (only the orchestrator's
/// decisions count) is the one the file gives even when a header names two.
fn event_of(r: &sqlx::any::AnyRow) -> Result<Event, StoreError> {
    let kind: String = r.try_get(2).map_err(db_err)?;
    let attrs: String = r.try_get(3).map_err(db_err)?;
    let author: Option<String> = r.try_get(6).map_err(db_err)?;
    let mut attrs: Vec<(String, String)> = match serde_json::from_str::<serde_json::Value>(&attrs) {
        Ok(serde_json::Value::Object(m)) => m
            .into_iter()
            .filter(|(k, _)| k != "author")
            .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_string())))
            .collect(),
        _ => Vec::new(),
    };
    if let Some(author) = author {
        attrs.insert(0, ("author".to_string(), author));
    }
    Ok(Event {
        kind: EventKind::parse(&kind),
        attrs,
        heading: r.try_get(4).map_err(db_err)?,
        body: r.try_get(5).map_err(db_err)?,
    })
}
