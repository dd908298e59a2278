//! The notification delivery records (migration 0010): one row per (channel, inbox entry) —
//! the promise to tell that channel about that entry once — and one row per attempt with what
//! the receiver answered. The primary key makes a second promise for the same pair impossible
//! across restarts and crashes, and [`Db::notify_claim`] hands an attempt to one sender only
//! (compare-and-swap on the attempt count). When and how often to try is the engine's
//! (`yoi_engine::notify`); this module only keeps the record.

use serde::Serialize;
use sqlx::Row;

use super::{db_err, Db};
use yoi_store::StoreError;

/// A delivery's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Due at `next_ms`.
    Pending,
    /// An attempt is out; a row a crash left here is due again at `next_ms`.
    Sending,
    Delivered,
    /// Retried for the whole window without success.
    GaveUp,
    /// The entry closed before it could be delivered.
    Skipped,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Sending => "sending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::GaveUp => "gave_up",
            DeliveryStatus::Skipped => "skipped",
        }
    }

    fn parse(s: &str) -> DeliveryStatus {
        match s {
            "sending" => DeliveryStatus::Sending,
            "delivered" => DeliveryStatus::Delivered,
            "gave_up" => DeliveryStatus::GaveUp,
            "skipped" => DeliveryStatus::Skipped,
            _ => DeliveryStatus::Pending,
        }
    }
}

/// One (channel, entry) delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct NotifyDelivery {
    pub channel: String,
    pub entry_key: String,
    pub reason: String,
    pub ticket: Option<String>,
    /// The message as frozen when the delivery was promised (JSON).
    pub payload: String,
    /// Sent with every attempt; receivers drop a second delivery with the same key.
    pub idempotency_key: String,
    pub status: DeliveryStatus,
    pub attempts: i64,
    pub next_ms: i64,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// The last answer (or error) from the receiver.
    pub last_answer: Option<String>,
}

/// One attempt and what the receiver answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct NotifyAttempt {
    pub channel: String,
    pub entry_key: String,
    pub attempt: i64,
    pub started_ms: i64,
    pub duration_ms: i64,
    pub ok: bool,
    pub answer: String,
}

/// What an attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptEnd {
    pub started_ms: i64,
    pub duration_ms: i64,
    pub ok: bool,
    pub answer: String,
    /// The row's status after it.
    pub status: DeliveryStatus,
    /// When a `pending` row is due again.
    pub next_ms: i64,
}

const COLUMNS: &str = "channel, entry_key, reason, ticket_id, payload, idempotency_key, status, attempts, next_ms, created_ms, updated_ms, last_answer";

fn delivery(r: &sqlx::any::AnyRow) -> Result<NotifyDelivery, StoreError> {
    let status: String = r.try_get(6).map_err(db_err)?;
    Ok(NotifyDelivery {
        channel: r.try_get(0).map_err(db_err)?,
        entry_key: r.try_get(1).map_err(db_err)?,
        reason: r.try_get(2).map_err(db_err)?,
        ticket: r.try_get(3).map_err(db_err)?,
        payload: r.try_get(4).map_err(db_err)?,
        idempotency_key: r.try_get(5).map_err(db_err)?,
        status: DeliveryStatus::parse(&status),
        attempts: r.try_get(7).map_err(db_err)?,
        next_ms: r.try_get(8).map_err(db_err)?,
        created_ms: r.try_get(9).map_err(db_err)?,
        updated_ms: r.try_get(10).map_err(db_err)?,
        last_answer: r.try_get(11).map_err(db_err)?,
    })
}

impl Db {
    /// Promise a delivery unless one exists for its (channel, entry): returns whether this call
    /// made it. The row starts `pending`, due at once.
    pub async fn notify_promise(&self, d: &NotifyDelivery) -> Result<bool, StoreError> {
        let done = sqlx::query(&format!(
            "INSERT INTO notify_deliveries ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $8, $8, NULL) \
             ON CONFLICT (channel, entry_key) DO NOTHING"
        ))
        .bind(&d.channel)
        .bind(&d.entry_key)
        .bind(&d.reason)
        .bind(d.ticket.clone())
        .bind(&d.payload)
        .bind(&d.idempotency_key)
        .bind(d.next_ms)
        .bind(d.created_ms)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        Ok(done.rows_affected() == 1)
    }

    /// Deliveries of `channel` that are due at `now_ms` (pending, or left sending by a crash),
    /// oldest first.
    pub async fn notify_due(
        &self,
        channel: &str,
        now_ms: i64,
        limit: i64,
    ) -> Result<Vec<NotifyDelivery>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM notify_deliveries \
              WHERE channel = $1 AND status IN ('pending', 'sending') AND next_ms <= $2 \
              ORDER BY created_ms, entry_key LIMIT $3"
        ))
        .bind(channel)
        .bind(now_ms)
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(delivery).collect()
    }

    /// Take attempt `attempts + 1` of a due delivery: only the caller that still sees
    /// `attempts` wins. A winner's row is `sending`, due again at `resend_ms` should the
    /// sender die before it records the attempt.
    pub async fn notify_claim(
        &self,
        channel: &str,
        entry_key: &str,
        attempts: i64,
        resend_ms: i64,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE notify_deliveries SET status = 'sending', attempts = attempts + 1, next_ms = $4, updated_ms = $5 \
              WHERE channel = $1 AND entry_key = $2 AND attempts = $3 AND status IN ('pending', 'sending')",
        )
        .bind(channel)
        .bind(entry_key)
        .bind(attempts)
        .bind(resend_ms)
        .bind(now_ms)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        Ok(done.rows_affected() == 1)
    }

    /// Record attempt `attempt` and the row's new state, in one transaction.
    pub async fn notify_record(
        &self,
        channel: &str,
        entry_key: &str,
        attempt: i64,
        end: &AttemptEnd,
    ) -> Result<(), StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        self.begin_write(&mut conn).await?;
        let result = async {
            sqlx::query(
                "INSERT INTO notify_attempts (channel, entry_key, attempt, started_ms, duration_ms, ok, answer) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (channel, entry_key, attempt) DO NOTHING",
            )
            .bind(channel)
            .bind(entry_key)
            .bind(attempt)
            .bind(end.started_ms)
            .bind(end.duration_ms)
            .bind(i64::from(end.ok))
            .bind(&end.answer)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
            sqlx::query(
                "UPDATE notify_deliveries SET status = $3, next_ms = $4, updated_ms = $5, last_answer = $6 \
                  WHERE channel = $1 AND entry_key = $2 AND attempts = $7",
            )
            .bind(channel)
            .bind(entry_key)
            .bind(end.status.as_str())
            .bind(end.next_ms)
            .bind(end.started_ms + end.duration_ms)
            .bind(&end.answer)
            .bind(attempt)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
            Ok(())
        }
        .await;
        self.end_write(&mut conn, result).await
    }

    /// Mark a delivery that never went out as skipped (its entry closed first).
    pub async fn notify_skip(
        &self,
        channel: &str,
        entry_key: &str,
        why: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE notify_deliveries SET status = 'skipped', updated_ms = $3, last_answer = $4 \
              WHERE channel = $1 AND entry_key = $2 AND status IN ('pending', 'sending')",
        )
        .bind(channel)
        .bind(entry_key)
        .bind(now_ms)
        .bind(why)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        Ok(())
    }

    /// The newest `limit` deliveries (all channels, or one), newest first.
    pub async fn notify_deliveries(
        &self,
        channel: Option<&str>,
        limit: i64,
    ) -> Result<Vec<NotifyDelivery>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM notify_deliveries WHERE ($1 = '' OR channel = $1) \
              ORDER BY created_ms DESC, entry_key DESC LIMIT $2"
        ))
        .bind(channel.unwrap_or(""))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(delivery).collect()
    }

    /// Every attempt of one delivery, in order.
    pub async fn notify_attempts(
        &self,
        channel: &str,
        entry_key: &str,
    ) -> Result<Vec<NotifyAttempt>, StoreError> {
        let rows = sqlx::query(
            "SELECT channel, entry_key, attempt, started_ms, duration_ms, ok, answer FROM notify_attempts \
              WHERE channel = $1 AND entry_key = $2 ORDER BY attempt",
        )
        .bind(channel)
        .bind(entry_key)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                let ok: i64 = r.try_get(5).map_err(db_err)?;
                Ok(NotifyAttempt {
                    channel: r.try_get(0).map_err(db_err)?,
                    entry_key: r.try_get(1).map_err(db_err)?,
                    attempt: r.try_get(2).map_err(db_err)?,
                    started_ms: r.try_get(3).map_err(db_err)?,
                    duration_ms: r.try_get(4).map_err(db_err)?,
                    ok: ok != 0,
                    answer: r.try_get(6).map_err(db_err)?,
                })
            })
            .collect()
    }
}
