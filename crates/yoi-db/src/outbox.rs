//! The event outbox and its per-consumer deliveries.
//!
//! Every thread event (and plan record) has one outbox row with a gap-free, increasing `seq`.
//! A consumer takes the oldest rows it has not finished, then for each one acknowledges it,
//! defers it (not before a given time, with a reason) or fails it (with the error). Attempts are
//! bounded: the [`MAX_ATTEMPTS`]-th defer or fail parks the row as `dead`, visible to doctor.

use serde::{Deserialize, Serialize};
use sqlx::{AnyConnection, Row};
use yoi_core::plan::{PlanKind, PlanRecord};
use yoi_core::thread::{Event, EventKind};
use yoi_core::TicketId;

use super::{db_err, Db};
use yoi_store::StoreError;

pub const MAX_ATTEMPTS: i64 = 8;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutboxEvent {
    pub seq: i64,
    pub event_id: String,
    pub ticket: String,
    pub kind: String,
    pub payload: serde_json::Value,
    pub created_ms: i64,
    /// Attempts so far by this consumer (0 on first delivery).
    pub attempts: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Delivery {
    pub consumer: String,
    pub seq: i64,
    pub status: String,
    pub attempts: i64,
    pub visible_after_ms: i64,
    pub reason: Option<String>,
}

impl Db {
    /// Register a consumer (idempotent). Only registered consumers count for doctor's
    /// undelivered check.
    pub async fn register_consumer(&self, name: &str, now_ms: i64) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO consumers (name, registered_ms) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
            .bind(name)
            .bind(now_ms)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        Ok(())
    }

    /// Up to `limit` events the consumer has not acknowledged or given up on, oldest first,
    /// skipping deferred ones until their time.
    pub async fn next_events(
        &self,
        consumer: &str,
        now_ms: i64,
        limit: i64,
    ) -> Result<Vec<OutboxEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT o.seq, o.event_id, o.ticket_id, o.kind, o.payload, o.created_ms, COALESCE(d.attempts, 0) \
               FROM outbox o LEFT JOIN deliveries d ON d.consumer = $1 AND d.seq = o.seq \
              WHERE d.seq IS NULL OR (d.status = 'deferred' AND d.visible_after_ms <= $2) \
              ORDER BY o.seq LIMIT $3",
        )
        .bind(consumer)
        .bind(now_ms)
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(outbox_event).collect()
    }

    /// Events after `seq` (for live streams resuming from a Last-Event-ID), optionally for one
    /// ticket.
    pub async fn events_after(
        &self,
        seq: i64,
        ticket: Option<&str>,
        limit: i64,
    ) -> Result<Vec<OutboxEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, event_id, ticket_id, kind, payload, created_ms, CAST(0 AS BIGINT) FROM outbox \
              WHERE seq > $1 AND ($2 = '' OR ticket_id = $2) ORDER BY seq LIMIT $3",
        )
        .bind(seq)
        .bind(ticket.unwrap_or(""))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(outbox_event).collect()
    }

    /// The newest outbox seq (0 when the outbox is empty): where a live stream that asked for no
    /// history starts.
    pub async fn last_event_seq(&self) -> Result<i64, StoreError> {
        sqlx::query("SELECT COALESCE(MAX(seq), 0) FROM outbox")
            .fetch_one(self.pool())
            .await
            .and_then(|r| r.try_get::<i64, _>(0))
            .map_err(db_err)
    }

    pub async fn ack(&self, consumer: &str, seq: i64, now_ms: i64) -> Result<(), StoreError> {
        self.set_delivery(consumer, seq, "acked", now_ms, None, now_ms, false)
            .await
    }

    /// Try again not before `until_ms`; the reason is kept for people to read.
    pub async fn defer(
        &self,
        consumer: &str,
        seq: i64,
        until_ms: i64,
        reason: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.set_delivery(
            consumer,
            seq,
            "deferred",
            until_ms,
            Some(reason),
            now_ms,
            true,
        )
        .await
    }

    /// The consumer failed on this event; it is retried (with backoff) until attempts run out.
    pub async fn fail(
        &self,
        consumer: &str,
        seq: i64,
        error: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let attempts = self.attempts(consumer, seq).await? + 1;
        let backoff = 1000i64 << attempts.min(10);
        self.set_delivery(
            consumer,
            seq,
            "deferred",
            now_ms + backoff,
            Some(error),
            now_ms,
            true,
        )
        .await
    }

    async fn attempts(&self, consumer: &str, seq: i64) -> Result<i64, StoreError> {
        let row = sqlx::query("SELECT attempts FROM deliveries WHERE consumer = $1 AND seq = $2")
            .bind(consumer)
            .bind(seq)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
        row.map(|r| r.try_get(0).map_err(db_err))
            .transpose()
            .map(|a| a.unwrap_or(0))
    }

    #[allow(clippy::too_many_arguments)]
    async fn set_delivery(
        &self,
        consumer: &str,
        seq: i64,
        status: &str,
        visible_after_ms: i64,
        reason: Option<&str>,
        now_ms: i64,
        counts: bool,
    ) -> Result<(), StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        self.begin_write(&mut conn).await?;
        let result = async {
            let attempts: i64 = sqlx::query("SELECT attempts FROM deliveries WHERE consumer = $1 AND seq = $2")
                .bind(consumer)
                .bind(seq)
                .fetch_optional(&mut *conn)
                .await
                .map_err(db_err)?
                .map(|r| r.try_get(0))
                .transpose()
                .map_err(db_err)?
                .unwrap_or(0);
            let attempts = attempts + i64::from(counts);
            let status = if counts && attempts >= MAX_ATTEMPTS { "dead" } else { status };
            sqlx::query("DELETE FROM deliveries WHERE consumer = $1 AND seq = $2")
                .bind(consumer)
                .bind(seq)
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
            sqlx::query("INSERT INTO deliveries (consumer, seq, status, attempts, visible_after_ms, reason, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)")
                .bind(consumer)
                .bind(seq)
                .bind(status)
                .bind(attempts)
                .bind(visible_after_ms)
                .bind(reason.map(str::to_string))
                .bind(now_ms)
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
            Ok(())
        }
        .await;
        self.end_write(&mut conn, result).await
    }

    pub async fn delivery(&self, consumer: &str, seq: i64) -> Result<Option<Delivery>, StoreError> {
        let row = sqlx::query("SELECT consumer, seq, status, attempts, visible_after_ms, reason FROM deliveries WHERE consumer = $1 AND seq = $2")
            .bind(consumer)
            .bind(seq)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
        row.map(|r| {
            Ok(Delivery {
                consumer: r.try_get(0).map_err(db_err)?,
                seq: r.try_get(1).map_err(db_err)?,
                status: r.try_get(2).map_err(db_err)?,
                attempts: r.try_get(3).map_err(db_err)?,
                visible_after_ms: r.try_get(4).map_err(db_err)?,
                reason: r.try_get(5).map_err(db_err)?,
            })
        })
        .transpose()
    }

    /// Outbox rows, oldest first (for doctor and tests).
    pub async fn outbox(&self) -> Result<Vec<OutboxEvent>, StoreError> {
        self.events_after(0, None, i64::MAX).await
    }
}

/// An outbox row selected as `seq, event_id, ticket_id, kind, payload, created_ms, attempts`.
fn outbox_event(r: &sqlx::any::AnyRow) -> Result<OutboxEvent, StoreError> {
    let payload: String = r.try_get(4).map_err(db_err)?;
    Ok(OutboxEvent {
        seq: r.try_get(0).map_err(db_err)?,
        event_id: r.try_get(1).map_err(db_err)?,
        ticket: r.try_get(2).map_err(db_err)?,
        kind: r.try_get(3).map_err(db_err)?,
        payload: serde_json::from_str(&payload).unwrap_or(serde_json::Value::Null),
        created_ms: r.try_get(5).map_err(db_err)?,
        attempts: r.try_get(6).map_err(db_err)?,
    })
}

/// The orchestration events the outbox carries: what each thread event (and plan record)
/// becomes, and what routing and the live stream see. Stored and sent as its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutboxKind {
    TicketCreated,
    TicketReady,
    TicketQueued,
    TicketReturnedToPlanning,
    TicketStateChanged,
    RelationChanged,
    TicketEdited,
    TicketClosed,
    TicketMerged,
    TicketRetried,
    /// A person answered an agent's question: its step is handed out again.
    TicketAnswered,
    TicketAttention,
    TicketCommented,
    /// A thread event of another kind (an assignment, a verification, a kind this version
    /// does not know).
    TicketEvent,
    PlanRecordAdded,
}

impl OutboxKind {
    pub const ALL: [OutboxKind; 15] = [
        OutboxKind::TicketCreated,
        OutboxKind::TicketReady,
        OutboxKind::TicketQueued,
        OutboxKind::TicketReturnedToPlanning,
        OutboxKind::TicketStateChanged,
        OutboxKind::RelationChanged,
        OutboxKind::TicketEdited,
        OutboxKind::TicketClosed,
        OutboxKind::TicketMerged,
        OutboxKind::TicketRetried,
        OutboxKind::TicketAnswered,
        OutboxKind::TicketAttention,
        OutboxKind::TicketCommented,
        OutboxKind::TicketEvent,
        OutboxKind::PlanRecordAdded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OutboxKind::TicketCreated => "ticket_created",
            OutboxKind::TicketReady => "ticket_ready",
            OutboxKind::TicketQueued => "ticket_queued",
            OutboxKind::TicketReturnedToPlanning => "ticket_returned_to_planning",
            OutboxKind::TicketStateChanged => "ticket_state_changed",
            OutboxKind::RelationChanged => "relation_changed",
            OutboxKind::TicketEdited => "ticket_edited",
            OutboxKind::TicketClosed => "ticket_closed",
            OutboxKind::TicketMerged => "ticket_merged",
            OutboxKind::TicketRetried => "ticket_retried",
            OutboxKind::TicketAnswered => "ticket_answered",
            OutboxKind::TicketAttention => "ticket_attention",
            OutboxKind::TicketCommented => "ticket_commented",
            OutboxKind::TicketEvent => "ticket_event",
            OutboxKind::PlanRecordAdded => "plan_record_added",
        }
    }

    /// The kind a stored name stands for (`None`: written by another version of yoi).
    pub fn parse(name: &str) -> Option<OutboxKind> {
        OutboxKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl OutboxEvent {
    /// This row's kind, when this version knows it.
    pub fn known_kind(&self) -> Option<OutboxKind> {
        OutboxKind::parse(&self.kind)
    }
}

/// The orchestration event a thread event stands for.
pub fn outbox_kind(e: &Event) -> OutboxKind {
    match &e.kind {
        EventKind::Create => OutboxKind::TicketCreated,
        EventKind::StateChanged => match (e.get("from"), e.get("to")) {
            (_, Some("ready")) => OutboxKind::TicketReady,
            (_, Some("queued")) => OutboxKind::TicketQueued,
            (Some("ready" | "queued"), Some("planning")) => OutboxKind::TicketReturnedToPlanning,
            _ => OutboxKind::TicketStateChanged,
        },
        EventKind::RelationChanged => OutboxKind::RelationChanged,
        EventKind::ItemEdit => OutboxKind::TicketEdited,
        EventKind::Close => OutboxKind::TicketClosed,
        EventKind::Merge => OutboxKind::TicketMerged,
        EventKind::Retry => OutboxKind::TicketRetried,
        EventKind::Attention | EventKind::Question => OutboxKind::TicketAttention,
        EventKind::Answer => OutboxKind::TicketAnswered,
        EventKind::Comment
        | EventKind::Plan
        | EventKind::Decision
        | EventKind::ImplementationReport
        | EventKind::IntakeSummary => OutboxKind::TicketCommented,
        _ => OutboxKind::TicketEvent,
    }
}

/// The payload of an outbox row that stands for a thread event (every kind but
/// [`OutboxKind::PlanRecordAdded`]): the event's facts routing and the live stream read, each
/// attribute as the thread holds it. Every field is written, `null` when the event has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EventPayload {
    #[schema(value_type = TicketId)]
    pub ticket: String,
    /// The event's key: its `id`, or `legacy:<ticket>:<position>` for an event written without
    /// one.
    pub event_id: String,
    pub event_kind: EventKind,
    pub author: Option<String>,
    /// When it happened, as the event's `at` attribute holds it: an RFC 3339 time (doctor's
    /// `thread.event_at` reports one that is not).
    #[schema(format = DateTime)]
    pub at: Option<String>,
    /// A state change's states and reason, as written (an older thread may name an older state).
    pub from: Option<String>,
    pub to: Option<String>,
    pub reason: Option<String>,
}

/// The payload of a [`OutboxKind::PlanRecordAdded`] row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanPayload {
    #[schema(value_type = TicketId)]
    pub ticket: String,
    /// The plan record's id.
    pub record: String,
    pub kind: PlanKind,
    pub related: Option<TicketId>,
}

impl OutboxKind {
    /// The name of the payload schema rows of this kind carry in the API's document
    /// ([`EventPayload`] or [`PlanPayload`]).
    pub fn payload_schema(self) -> &'static str {
        match self {
            OutboxKind::PlanRecordAdded => "PlanPayload",
            _ => "EventPayload",
        }
    }
}

/// The outbox payload of a thread event.
pub(crate) fn outbox_payload(ticket: &str, key: &str, e: &Event) -> serde_json::Value {
    let attr = |name: &str| e.get(name).map(str::to_string);
    to_json(&EventPayload {
        ticket: ticket.to_string(),
        event_id: key.to_string(),
        event_kind: e.kind.clone(),
        author: e.author().map(str::to_string),
        at: attr("at"),
        from: attr("from"),
        to: attr("to"),
        reason: attr("reason"),
    })
}

/// The outbox payload of a plan record.
pub(crate) fn plan_payload(ticket: &str, p: &PlanRecord) -> serde_json::Value {
    to_json(&PlanPayload {
        ticket: ticket.to_string(),
        record: p.id.clone(),
        kind: p.kind,
        related: p.related_ticket.clone(),
    })
}

fn to_json(payload: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(payload).expect("a payload of strings serialises")
}

pub(crate) async fn add_outbox(
    conn: &mut AnyConnection,
    event_id: &str,
    ticket: &str,
    kind: OutboxKind,
    payload: &serde_json::Value,
    now_ms: i64,
) -> Result<usize, StoreError> {
    // The next sequence number is taken inside the write transaction; writers are serialised by
    // the workspace lock and the database's own write lock, so numbers never race.
    let done = sqlx::query(
        "INSERT INTO outbox (seq, event_id, ticket_id, kind, payload, created_ms) \
         SELECT (SELECT COALESCE(MAX(seq), 0) + 1 FROM outbox), $1, $2, $3, $4, $5 \
         WHERE NOT EXISTS (SELECT 1 FROM outbox WHERE event_id = $1)",
    )
    .bind(event_id)
    .bind(ticket)
    .bind(kind.as_str())
    .bind(payload.to_string())
    .bind(now_ms)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(done.rows_affected() as usize)
}

#[cfg(test)]
mod kind_tests {
    use super::OutboxKind;

    #[test]
    fn every_kind_reads_back_from_its_stored_name_and_serializes_as_it() {
        for k in OutboxKind::ALL {
            assert_eq!(OutboxKind::parse(k.as_str()), Some(k));
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::Value::String(k.as_str().into())
            );
        }
        assert_eq!(OutboxKind::parse("ticket_exploded"), None);
    }
}
