//! A page of a ticket's thread from the index's `events` rows, for the API's ticket answer: the
//! latest events below a cursor, how many the thread holds, and the ticket's last change, in
//! one statement and a few steps down the `events_ticket` index, whatever the thread's length.
//!
//! The rows answer only when they are provably the thread file's events: the ticket's files are
//! those the index last read (size and mtime, then content hash: [`Db::stale_tickets`]), the
//! thread parsed then without an issue (`tickets.thread_events` holds its event count, -1
//! otherwise), and the page's positions are all there (an event whose id another row holds is
//! not indexed twice). Anything else is `None`, and the caller parses the file, which says
//! exactly what it holds.

use sqlx::Row;
use yoi_core::TicketId;
use yoi_store::{StoreError, Workspace};

use super::ticket_detail::EventDetail;
use super::{db_err, Db};

/// The page [`Db::thread_page`] read.
#[derive(Debug, Clone)]
pub struct ThreadPage {
    /// How many events the thread holds.
    pub total: usize,
    /// The thread position of the page's first event.
    pub start: usize,
    /// The page's events, oldest first.
    pub events: Vec<EventDetail>,
    /// The ticket's last change, thread included (the index's `updated_at`).
    pub updated_at: String,
}

impl Db {
    /// The latest `limit` events of `id`'s thread at positions below `before` (below its end
    /// when `None`), or `None` when the index cannot say exactly what the file holds (see the
    /// module doc).
    pub async fn thread_page(
        &self,
        ws: &Workspace,
        id: &TicketId,
        limit: usize,
        before: Option<usize>,
    ) -> Result<Option<ThreadPage>, StoreError> {
        let (changed, gone) = self.stale_tickets(ws, std::slice::from_ref(id)).await?;
        if !changed.is_empty() || !gone.is_empty() {
            return Ok(None);
        }
        let below = before.map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(i64::MAX));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // One statement, so the count and the page are of one state of the index on both
        // engines (a PostgreSQL read sees each statement's own snapshot).
        let rows = sqlx::query(
            "SELECT t.thread_events, t.updated_at, e.position, e.id, e.kind, e.author, e.at, \
                    e.attrs, e.heading, e.body \
               FROM tickets t LEFT JOIN \
                    (SELECT * FROM events WHERE ticket_id = $1 AND position < $2 \
                      ORDER BY position DESC LIMIT $3) e ON 1 = 1 \
              WHERE t.id = $1 ORDER BY e.position DESC",
        )
        .bind(id.as_str())
        .bind(below)
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        let total: i64 = first.try_get(0).map_err(db_err)?;
        let Ok(total) = usize::try_from(total) else {
            return Ok(None); // the thread did not parse cleanly: the file says how
        };
        let updated_at: String = first.try_get(1).map_err(db_err)?;
        let end = before.map_or(total, |b| b.min(total));
        let start = end.saturating_sub(usize::try_from(limit).unwrap_or(usize::MAX));
        let mut events = Vec::with_capacity(end - start);
        // Newest first: row `i` must be the event at position `end - 1 - i`.
        for (i, r) in rows.iter().enumerate() {
            let position: Option<i64> = r.try_get(2).map_err(db_err)?;
            let Some(position) = position else {
                break; // no events below the cursor
            };
            if usize::try_from(position).ok() != end.checked_sub(1 + i) {
                return Ok(None);
            }
            let Some(event) = event_detail(id, r)? else {
                return Ok(None);
            };
            events.push(event);
        }
        if events.len() != end - start {
            return Ok(None);
        }
        events.reverse();
        Ok(Some(ThreadPage {
            total,
            start,
            events,
            updated_at,
        }))
    }
}

/// An event row (columns 3 on: key, kind, author, at, attrs, heading, body) as
/// [`EventDetail::from`] makes it of the file's event; `None` when the row cannot tell (an
/// event without a usable id whose header repeats `id`, which the row keeps only the last of).
///
/// The row's `author` and `at` are the header's first (what `Event::get` reads); its attrs, a
/// JSON object in header order, keep each key's first place and last value, as collecting the
/// header into the answer's map does.
fn event_detail(
    ticket: &TicketId,
    r: &sqlx::any::AnyRow,
) -> Result<Option<EventDetail>, StoreError> {
    let key: String = r.try_get(3).map_err(db_err)?;
    let attrs: String = r.try_get(7).map_err(db_err)?;
    let mut attrs = match serde_json::from_str::<serde_json::Value>(&attrs) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => return Ok(None),
    };
    let named = attrs.remove("id");
    attrs.remove("author");
    attrs.remove("at");
    let legacy = key.starts_with(&format!("legacy:{ticket}:"));
    let id = match (legacy, named) {
        (false, _) => Some(key),
        (true, None) => None,
        // An empty id (the row is keyed by position); a repeated one cannot be told apart.
        (true, Some(serde_json::Value::String(v))) if v.is_empty() => Some(v),
        (true, Some(_)) => return Ok(None),
    };
    Ok(Some(EventDetail {
        kind: r.try_get(4).map_err(db_err)?,
        id,
        author: r.try_get(5).map_err(db_err)?,
        at: r.try_get(6).map_err(db_err)?,
        attrs,
        heading: r.try_get(8).map_err(db_err)?,
        body: r.try_get(9).map_err(db_err)?,
    }))
}
