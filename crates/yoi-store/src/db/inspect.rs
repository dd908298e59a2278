//! Raw reads for doctor's drift checks. Rows come back as stored — strings and numbers, not
//! parsed domain values — so a damaged row becomes a finding instead of failing the check.
//! Nothing here writes.

use serde::Serialize;
use sqlx::Row;

use super::{among, db_err, Db};
use crate::error::StoreError;

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

impl Db {
    /// Every `tickets` row, by id.
    pub async fn ticket_rows(&self) -> Result<Vec<TicketRow>, StoreError> {
        let rows = sqlx::query("SELECT id, title, state, updated_at FROM tickets ORDER BY id")
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(ticket_row).collect()
    }

    /// The `tickets` rows of these tickets, by id.
    pub async fn ticket_rows_of(&self, ids: &[&str]) -> Result<Vec<TicketRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT id, title, state, updated_at FROM tickets WHERE id IN ({}) ORDER BY id",
            super::placeholders(1, ids.len())
        );
        let rows = among(&sql, ids)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(ticket_row).collect()
    }

    /// Every indexed thread event as `(ticket, event key)`, by ticket and position.
    pub async fn event_keys(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows = sqlx::query("SELECT ticket_id, id FROM events ORDER BY ticket_id, position")
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(text_pair).collect()
    }

    /// The indexed thread events of these tickets as `(ticket, event key)`, by ticket and
    /// position.
    pub async fn event_keys_of(&self, ids: &[&str]) -> Result<Vec<(String, String)>, StoreError> {
        let mut out = Vec::new();
        for (ticket, list) in self
            .grouped("events", "CAST(position AS TEXT) || ':' || id", ids)
            .await?
        {
            let mut keyed: Vec<(i64, &str)> = list
                .split('\n')
                .filter_map(|l| l.split_once(':'))
                .map(|(p, k)| (p.parse().unwrap_or(i64::MAX), k))
                .collect();
            keyed.sort();
            out.extend(
                keyed
                    .into_iter()
                    .map(|(_, k)| (ticket.clone(), k.to_string())),
            );
        }
        Ok(out)
    }

    /// `(ticket, lines)` for these tickets' rows of `table`, `expr` of each row on its own line,
    /// by ticket. One row per ticket: a row costs far more to hand over than its bytes. (The
    /// keys hold no newline: thread header values and plan record ids are single-line.)
    async fn grouped(
        &self,
        table: &str,
        expr: &str,
        ids: &[&str],
    ) -> Result<Vec<(String, String)>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let agg = match self.dialect() {
            super::Dialect::Sqlite => format!("group_concat({expr}, char(10))"),
            super::Dialect::Postgres => format!("string_agg({expr}, chr(10))"),
        };
        let sql = format!(
            "SELECT ticket_id, {agg} FROM {table} WHERE ticket_id IN ({}) \
             GROUP BY ticket_id ORDER BY ticket_id",
            super::placeholders(1, ids.len())
        );
        let rows = among(&sql, ids)
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
        rows.iter()
            .map(|r| {
                Ok(OutboxKey {
                    seq: r.try_get(0).map_err(db_err)?,
                    event_id: r.try_get(1).map_err(db_err)?,
                    ticket: r.try_get(2).map_err(db_err)?,
                })
            })
            .collect()
    }

    /// The keys of these tickets' outbox rows, oldest first.
    pub async fn outbox_keys_of(&self, ids: &[&str]) -> Result<Vec<OutboxKey>, StoreError> {
        let mut out = Vec::new();
        for (ticket, list) in self
            .grouped("outbox", "CAST(seq AS TEXT) || ':' || event_id", ids)
            .await?
        {
            out.extend(list.split('\n').filter_map(|l| {
                let (seq, key) = l.split_once(':')?;
                Some(OutboxKey {
                    seq: seq.parse().ok()?,
                    event_id: key.to_string(),
                    ticket: ticket.clone(),
                })
            }));
        }
        out.sort_by_key(|k| k.seq);
        Ok(out)
    }

    /// Every ticket id the index holds rows for: tickets, thread events or outbox rows.
    pub async fn indexed_ticket_ids(&self) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(
            "SELECT id FROM tickets UNION SELECT ticket_id FROM events \
             UNION SELECT ticket_id FROM outbox",
        )
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(|r| r.try_get(0).map_err(db_err)).collect()
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
