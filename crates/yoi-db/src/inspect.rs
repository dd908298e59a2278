//! Raw reads for doctor's drift checks. Rows come back as stored — strings and numbers, not
//! parsed domain values — so a damaged row becomes a finding instead of failing the check.
//! Nothing here writes.

use serde::Serialize;
use sqlx::Row;

use super::{db_err, Db};
use yoi_store::StoreError;

/// A `tickets` row as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TicketRow {
    pub id: String,
    pub title: String,
    pub state: String,
    pub updated_at: String,
}

/// The key of one outbox row: which event it stands for and whose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutboxKey {
    pub seq: i64,
    pub event_id: String,
    pub ticket: String,
}

/// What one registered consumer has left unacknowledged (dead deliveries not counted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Undelivered {
    pub consumer: String,
    pub count: i64,
    pub oldest_seq: i64,
}

/// A delivery a consumer gave up on, with the outbox row it was for (absent when that row is
/// gone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeadDelivery {
    pub consumer: String,
    pub seq: i64,
    pub attempts: i64,
    pub reason: Option<String>,
    pub event_id: Option<String>,
    pub ticket: Option<String>,
    pub kind: Option<String>,
}

/// A row's first two columns as text.
fn text_pair(r: &sqlx::any::AnyRow) -> Result<(String, String), StoreError> {
    Ok((r.try_get(0).map_err(db_err)?, r.try_get(1).map_err(db_err)?))
}

fn ticket_row(r: &sqlx::any::AnyRow) -> Result<TicketRow, StoreError> {
    Ok(TicketRow {
        id: r.try_get(0).map_err(db_err)?,
        title: r.try_get(1).map_err(db_err)?,
        state: r.try_get(2).map_err(db_err)?,
        updated_at: r.try_get(3).map_err(db_err)?,
    })
}

fn outbox_key(r: &sqlx::any::AnyRow) -> Result<OutboxKey, StoreError> {
    Ok(OutboxKey {
        seq: r.try_get(0).map_err(db_err)?,
        event_id: r.try_get(1).map_err(db_err)?,
        ticket: r.try_get(2).map_err(db_err)?,
    })
}

/// The keys of one table for every ticket of a span, as the database handed them over: one
/// text, so a span costs one row however many tickets it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpanKeys(Option<String>);

/// One ticket's keys from one table, a line each, in no particular order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeysOf<'a> {
    pub ticket: &'a str,
    pub keys: &'a str,
}

impl SpanKeys {
    /// Each ticket's keys, by ticket. The text holds a block per ticket — its id on the first
    /// line, then a key per line — and a blank line between blocks; keys are never empty and
    /// hold no newline (thread header values and plan record ids are single-line).
    pub fn by_ticket(&self) -> Vec<KeysOf<'_>> {
        let Some(text) = self.0.as_deref() else {
            return Vec::new();
        };
        text.split("\n\n")
            .map(|block| {
                let (ticket, keys) = block.split_once('\n').unwrap_or((block, ""));
                KeysOf { ticket, keys }
            })
            .collect()
    }
}

impl KeysOf<'_> {
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.keys.split('\n').filter(|k| !k.is_empty())
    }
}

/// The tickets from `from` (inclusive) up to `until` (exclusive) in the database's own order of
/// ids; `None` leaves that end open. Spans that share their bounds and run from open to open
/// cover every row exactly once, whatever its ticket id, so a reader walking them misses no row
/// (rows of tickets with no folder fall in some span too). Doctor cuts the spans at folder
/// names sorted by bytes; ticket ids are upper-case Crockford base32, whose byte order is the
/// order of SQLite's `BINARY` collation and of PostgreSQL's `C` and usual language collations,
/// so each folder's rows fall in its own chunk's span.
#[derive(Debug, Clone, Copy, Default)]
pub struct Span<'a> {
    pub from: Option<&'a str>,
    pub until: Option<&'a str>,
}

impl<'a> Span<'a> {
    /// ` WHERE …` on `column` for this span (nothing when both ends are open).
    fn condition(&self, column: &str) -> String {
        match (self.from, self.until) {
            (None, None) => String::new(),
            (Some(_), None) => format!(" WHERE {column} >= $1"),
            (None, Some(_)) => format!(" WHERE {column} < $1"),
            (Some(_), Some(_)) => format!(" WHERE {column} >= $1 AND {column} < $2"),
        }
    }

    /// Bind the bounds [`Span::condition`] names, in its order.
    fn bind<'q>(
        &self,
        q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>
    where
        'a: 'q,
    {
        [self.from, self.until]
            .into_iter()
            .flatten()
            .fold(q, |q, id| q.bind(id))
    }
}

/// What the index holds for one [`Span`] of ticket ids: the rows doctor compares with the
/// files of that span's tickets.
#[derive(Debug)]
pub struct SpanRows {
    pub tickets: Vec<TicketRow>,
    pub events: SpanKeys,
    pub outbox: SpanKeys,
}

impl Db {
    /// The `tickets` rows, event keys and outbox keys of `span`.
    pub async fn span_rows(&self, span: Span<'_>) -> Result<SpanRows, StoreError> {
        Ok(SpanRows {
            tickets: self.ticket_rows_in(span).await?,
            events: self.event_keys_in(span).await?,
            outbox: self.outbox_keys_in(span).await?,
        })
    }

    /// Every `tickets` row, by id.
    pub async fn ticket_rows(&self) -> Result<Vec<TicketRow>, StoreError> {
        let rows = sqlx::query("SELECT id, title, state, updated_at FROM tickets ORDER BY id")
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(ticket_row).collect()
    }

    /// The `tickets` rows whose id is in `span`, by id. They come over as one JSON text (the
    /// database escapes whatever a title holds): a row costs far more to hand over than its
    /// bytes.
    pub async fn ticket_rows_in(&self, span: Span<'_>) -> Result<Vec<TicketRow>, StoreError> {
        let sql = match self.dialect() {
            super::Dialect::Sqlite => format!(
                "SELECT json_group_array(json_array(id, title, state, updated_at)) \
                 FROM (SELECT * FROM tickets{} ORDER BY id)",
                span.condition("id")
            ),
            super::Dialect::Postgres => format!(
                "SELECT CAST(json_agg(json_build_array(id, title, state, updated_at) \
                 ORDER BY id) AS TEXT) FROM tickets{}",
                span.condition("id")
            ),
        };
        let Some(json) = self.span_text(&sql, span).await? else {
            return Ok(Vec::new());
        };
        let rows: Vec<(String, String, String, String)> =
            serde_json::from_str(&json).map_err(|e| StoreError::Database {
                reason: format!("the tickets rows did not read back as JSON: {e}"),
            })?;
        Ok(rows
            .into_iter()
            .map(|(id, title, state, updated_at)| TicketRow {
                id,
                title,
                state,
                updated_at,
            })
            .collect())
    }

    /// The event keys the index holds for each ticket in `span`.
    pub async fn event_keys_in(&self, span: Span<'_>) -> Result<SpanKeys, StoreError> {
        self.grouped("events", "id", span).await
    }

    /// The event ids of the outbox rows of each ticket in `span`.
    pub async fn outbox_keys_in(&self, span: Span<'_>) -> Result<SpanKeys, StoreError> {
        self.grouped("outbox", "event_id", span).await
    }

    /// `column` of every row of `table` in `span`, grouped by ticket into one text (see
    /// [`SpanKeys`]): a row costs far more to hand over than its bytes.
    async fn grouped(
        &self,
        table: &str,
        column: &str,
        span: Span<'_>,
    ) -> Result<SpanKeys, StoreError> {
        let sql = match self.dialect() {
            super::Dialect::Sqlite => format!(
                "SELECT group_concat(ticket_id || char(10) || keys, char(10) || char(10)) \
                 FROM (SELECT ticket_id, group_concat({column}, char(10)) AS keys \
                 FROM {table}{} GROUP BY ticket_id ORDER BY ticket_id)",
                span.condition("ticket_id")
            ),
            super::Dialect::Postgres => format!(
                "SELECT string_agg(ticket_id || chr(10) || keys, chr(10) || chr(10) \
                 ORDER BY ticket_id) \
                 FROM (SELECT ticket_id, string_agg({column}, chr(10)) AS keys \
                 FROM {table}{} GROUP BY ticket_id) AS per_ticket",
                span.condition("ticket_id")
            ),
        };
        Ok(SpanKeys(self.span_text(&sql, span).await?))
    }

    /// The one text a span's aggregate query returns (`None` when the span has no rows).
    async fn span_text(&self, sql: &str, span: Span<'_>) -> Result<Option<String>, StoreError> {
        let row = span
            .bind(sqlx::query(sql))
            .fetch_one(self.pool())
            .await
            .map_err(db_err)?;
        row.try_get(0).map_err(db_err)
    }

    /// Every indexed thread event as `(ticket, event key)`, by ticket and position.
    pub async fn event_keys(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows = sqlx::query("SELECT ticket_id, id FROM events ORDER BY ticket_id, position")
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(text_pair).collect()
    }

    /// The key of every outbox row, oldest first.
    pub async fn outbox_keys(&self) -> Result<Vec<OutboxKey>, StoreError> {
        let rows = sqlx::query("SELECT seq, event_id, ticket_id FROM outbox ORDER BY seq")
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(outbox_key).collect()
    }

    /// The outbox rows of one ticket, oldest first.
    pub async fn outbox_keys_of(&self, ticket: &str) -> Result<Vec<OutboxKey>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, event_id, ticket_id FROM outbox WHERE ticket_id = $1 ORDER BY seq",
        )
        .bind(ticket)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(outbox_key).collect()
    }

    /// Per registered consumer, the outbox rows created before `before_ms` that it has neither
    /// acknowledged nor given up on (a dead delivery is reported on its own), by consumer name.
    /// Consumers with nothing pending are absent.
    pub async fn undelivered_by_consumer(
        &self,
        before_ms: i64,
    ) -> Result<Vec<Undelivered>, StoreError> {
        let rows = sqlx::query(
            "SELECT c.name, COUNT(*), MIN(o.seq) FROM consumers c CROSS JOIN outbox o \
               LEFT JOIN deliveries d ON d.consumer = c.name AND d.seq = o.seq \
              WHERE o.created_ms < $1 AND (d.seq IS NULL OR d.status NOT IN ('acked', 'dead')) \
              GROUP BY c.name ORDER BY c.name",
        )
        .bind(before_ms)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(Undelivered {
                    consumer: r.try_get(0).map_err(db_err)?,
                    count: r.try_get(1).map_err(db_err)?,
                    oldest_seq: r.try_get(2).map_err(db_err)?,
                })
            })
            .collect()
    }

    /// Every delivery parked as `dead`, by sequence number then consumer.
    pub async fn dead_deliveries(&self) -> Result<Vec<DeadDelivery>, StoreError> {
        let rows = sqlx::query(
            "SELECT d.consumer, d.seq, d.attempts, d.reason, o.event_id, o.ticket_id, o.kind \
               FROM deliveries d LEFT JOIN outbox o ON o.seq = d.seq \
              WHERE d.status = 'dead' ORDER BY d.seq, d.consumer",
        )
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(DeadDelivery {
                    consumer: r.try_get(0).map_err(db_err)?,
                    seq: r.try_get(1).map_err(db_err)?,
                    attempts: r.try_get(2).map_err(db_err)?,
                    reason: r.try_get(3).map_err(db_err)?,
                    event_id: r.try_get(4).map_err(db_err)?,
                    ticket: r.try_get(5).map_err(db_err)?,
                    kind: r.try_get(6).map_err(db_err)?,
                })
            })
            .collect()
    }
}
