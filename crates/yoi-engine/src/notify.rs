//! Notifications: each open inbox entry told once to every `[[notify]]` channel that wants its
//! reason (docs/inbox.md), as step functions the server's loop calls with the time.
//!
//! - [`Notifier::promise`] writes one delivery row per (channel, entry) for the open entries —
//!   the primary key makes a second one impossible, across restarts and crashes — with the
//!   message frozen in it and an idempotency key derived from the pair.
//! - [`deliver_channel`] sends one channel's due rows through a [`Sender`]: each attempt is
//!   claimed by compare-and-swap (one sender per attempt), sent, and recorded with the
//!   receiver's answer. A failure is retried with exponential backoff and jitter for
//!   [`WINDOW_MS`] (24 hours), then given up; an entry that closed before it was delivered is
//!   skipped. A sender that dies between sending and recording leaves the row `sending`; it is
//!   sent again after [`RESEND_AFTER_MS`] with the same idempotency key, so the receiver can drop
//!   that one duplicate (the only one there can be).
//!
//! The engine decides what is sent and when; how a message travels (HTTP, SMTP, the secret of a
//! signature) is the server's [`Sender`].

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use yoi_core::Timestamp;
use yoi_db::notify::{AttemptEnd, DeliveryStatus, NotifyDelivery};
use yoi_db::DbIndex;
use yoi_store::notify_config::NotifyChannel;
use yoi_store::{StoreError, Workspace};

use crate::inbox::{self, InboxEntry};
use yoi_core::inbox::InboxReason;
use yoi_db::OutboxKind;

/// The version of the webhook body's schema ([`Notification`]).
pub const SCHEMA: &str = "yoi.notification.v1";
/// How long a delivery is retried before it is given up.
pub const WINDOW_MS: i64 = 24 * 60 * 60 * 1000;
/// A row left `sending` (its sender died before recording the attempt) is due again after this.
pub const RESEND_AFTER_MS: i64 = 2 * 60 * 1000;
/// The longest wait between two attempts.
pub const MAX_BACKOFF_MS: i64 = 30 * 60 * 1000;

/// What a channel is told: the body of a webhook, and what the other channels render.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Notification {
    /// [`SCHEMA`].
    pub schema: String,
    /// `inbox.entry_opened`, or `ticket.done` for a merged ticket.
    pub event: String,
    /// The idempotency key: the same for every attempt of this delivery; drop a repeat.
    pub delivery: String,
    /// The `[[notify]]` entry it was sent to.
    pub channel: String,
    pub entry: InboxEntry,
    /// The dashboard page to act on, absolute.
    pub link: String,
}

impl Notification {
    /// A one-line subject: `Circuit open: Fix login`.
    pub fn subject(&self) -> String {
        format!("{}: {}", self.entry.reason.label(), self.entry.title)
    }
}

/// The idempotency key of the delivery of `entry_key` to `channel`: derived, so a delivery
/// promised again (a deleted database) carries the same key.
pub fn delivery_key(channel: &str, entry_key: &str) -> String {
    let h = yoi_core::sha256_hex(format!("{channel}\n{entry_key}").as_bytes());
    format!("dlv_{}", &h[..32])
}

/// How one attempt went, as the sender saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub ok: bool,
    /// The receiver's answer (status and the start of the body, the SMTP reply) or the error.
    pub answer: String,
    pub duration_ms: i64,
}

/// Sends a message on a channel (the server's HTTP and SMTP adapters; tests' own).
pub trait Sender {
    fn send(&self, channel: &NotifyChannel, n: &Notification) -> Sent;
}

/// The outbox consumer through which merged tickets reach the channels that want `done`.
pub const DONE_CONSUMER: &str = "notify-done";

/// The promise step's memory: pairs already promised, so a sweep writes only new ones.
#[derive(Debug, Default)]
pub struct Notifier {
    promised: HashSet<(String, String)>,
    /// [`DONE_CONSUMER`] is registered.
    done_registered: bool,
}

impl Notifier {
    /// Promise a delivery to every channel that wants it for every open entry not yet
    /// promised; returns how many rows this call wrote. `link_base` is where people reach the
    /// dashboard, for channels that name none.
    pub fn promise(
        &mut self,
        ws: &Workspace,
        index: &DbIndex,
        channels: &[NotifyChannel],
        link_base: &str,
        now: Timestamp,
    ) -> Result<usize, StoreError> {
        if channels.is_empty() {
            return Ok(0);
        }
        let open = inbox::inbox(ws, index)?;
        let mut made = self.promise_done(ws, index, channels, link_base, now)?;
        for c in channels {
            for e in open.entries.iter().filter(|e| c.wants(e.reason)) {
                made += usize::from(self.promise_one(index, c, e, link_base, now)?);
            }
        }
        Ok(made)
    }
}

impl Notifier {
    /// Promise a `done` delivery to every channel that names `done`, for each ticket merged
    /// since the last call: read from the outbox as consumer [`DONE_CONSUMER`] (each event
    /// acknowledged after its promises, so a crash in between promises again, which the
    /// primary key makes harmless). A merge older than [`WINDOW_MS`] — history a new channel or
    /// a rebuilt database finds — is passed over, not announced late.
    fn promise_done(
        &mut self,
        ws: &Workspace,
        index: &DbIndex,
        channels: &[NotifyChannel],
        link_base: &str,
        now: Timestamp,
    ) -> Result<usize, StoreError> {
        let wanting: Vec<&NotifyChannel> = channels
            .iter()
            .filter(|c| c.wants(InboxReason::Done))
            .collect();
        if wanting.is_empty() {
            return Ok(0);
        }
        let now_ms = now.unix_millis();
        if !self.done_registered {
            index.register_consumer(DONE_CONSUMER, now_ms)?;
            self.done_registered = true;
        }
        const BATCH: i64 = 500;
        let mut made = 0;
        loop {
            let events = index.next_events(DONE_CONSUMER, now_ms, BATCH)?;
            for ev in &events {
                // When it merged, as the thread says: an outbox rebuilt from the files gets new
                // rows for old events.
                let at = ev.payload["at"]
                    .as_str()
                    .and_then(|a| Timestamp::parse(a).ok())
                    .map_or(ev.created_ms, |t| t.unix_millis());
                let merged =
                    ev.known_kind() == Some(OutboxKind::TicketMerged) && now_ms - at <= WINDOW_MS;
                if let Some(entry) = merged.then(|| done_entry(ws, ev)).flatten() {
                    for c in &wanting {
                        made += usize::from(self.promise_one(index, c, &entry, link_base, now)?);
                    }
                }
                index.ack(DONE_CONSUMER, ev.seq, now_ms)?;
            }
            if (events.len() as i64) < BATCH {
                return Ok(made);
            }
        }
    }

    /// Write the delivery row of `entry` to `c` unless this notifier already did; whether a
    /// row was written.
    fn promise_one(
        &mut self,
        index: &DbIndex,
        c: &NotifyChannel,
        entry: &InboxEntry,
        link_base: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let pair = (c.name.clone(), entry.key.clone());
        if self.promised.contains(&pair) {
            return Ok(false);
        }
        let n = notification(c, entry, link_base);
        let row = NotifyDelivery {
            channel: c.name.clone(),
            entry_key: entry.key.clone(),
            reason: entry.reason.as_str().to_string(),
            ticket: entry.ticket.clone(),
            payload: serde_json::to_string(&n).map_err(|e| StoreError::Database {
                reason: format!("encoding a notification: {e}"),
            })?,
            idempotency_key: n.delivery.clone(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            next_ms: now.unix_millis(),
            created_ms: now.unix_millis(),
            updated_ms: now.unix_millis(),
            last_answer: None,
        };
        let made = index.notify_promise(&row)?;
        self.promised.insert(pair);
        Ok(made)
    }
}

/// The `done` message of a merged ticket: keyed by its `merge` event, so one merge is told once.
fn done_entry(ws: &Workspace, ev: &yoi_db::OutboxEvent) -> Option<InboxEntry> {
    let id = yoi_core::TicketId::parse(&ev.ticket).ok()?;
    let title = ws.read_item(&id).map(|i| i.title).unwrap_or_default();
    let at = ev.payload["at"].as_str().unwrap_or_default().to_string();
    Some(InboxEntry {
        key: format!("{id}:done:{}", ev.event_id),
        reason: InboxReason::Done,
        ticket: Some(id.to_string()),
        title,
        since: at,
        detail: "The ticket merged and is done.".into(),
        command: format!("yoi ticket show {id}"),
        action: inbox::InboxAction {
            label: "Open the ticket".into(),
            href: format!("/tickets/{id}"),
        },
        event: Some(ev.event_id.clone()),
    })
}

/// The message for `entry` on channel `c`.
pub fn notification(c: &NotifyChannel, entry: &InboxEntry, link_base: &str) -> Notification {
    let base = c.link_base.as_deref().unwrap_or(link_base);
    Notification {
        schema: SCHEMA.into(),
        event: if entry.reason == InboxReason::Done {
            "ticket.done".into()
        } else {
            "inbox.entry_opened".into()
        },
        delivery: delivery_key(&c.name, &entry.key),
        channel: c.name.clone(),
        entry: entry.clone(),
        link: format!("{}{}", base.trim_end_matches('/'), entry.action.href),
    }
}

/// One delivery with every attempt it took, as `yoi notify log --json` and `GET
/// /api/v1/notify/log` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct LoggedDelivery {
    #[serde(flatten)]
    pub delivery: NotifyDelivery,
    /// Each attempt and what the receiver answered, oldest first.
    pub attempt_log: Vec<yoi_db::notify::NotifyAttempt>,
}

/// The delivery log: the newest deliveries first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct DeliveryLog {
    pub count: usize,
    pub deliveries: Vec<LoggedDelivery>,
}

/// The most recent `limit` deliveries (of `channel`, or of every channel), each with its
/// attempts.
pub fn log(index: &DbIndex, channel: Option<&str>, limit: i64) -> Result<DeliveryLog, StoreError> {
    let mut deliveries = Vec::new();
    for d in index.notify_deliveries(channel, limit.clamp(1, 10_000))? {
        let attempt_log = index.notify_attempts(&d.channel, &d.entry_key)?;
        deliveries.push(LoggedDelivery {
            delivery: d,
            attempt_log,
        });
    }
    Ok(DeliveryLog {
        count: deliveries.len(),
        deliveries,
    })
}

/// What one delivery sweep of a channel did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivered {
    pub delivered: usize,
    pub failed: usize,
    pub gave_up: usize,
    pub skipped: usize,
}

/// Send `channel`'s due deliveries (at most `limit`), one attempt each.
pub fn deliver_channel(
    ws: &Workspace,
    index: &DbIndex,
    channel: &NotifyChannel,
    sender: &dyn Sender,
    limit: i64,
    now: Timestamp,
) -> Result<Delivered, StoreError> {
    let now_ms = now.unix_millis();
    let due = index.notify_due(&channel.name, now_ms, limit)?;
    let mut out = Delivered::default();
    if due.is_empty() {
        return Ok(out);
    }
    let open: HashSet<String> = inbox::inbox(ws, index)?
        .entries
        .into_iter()
        .map(|e| e.key)
        .collect();
    for d in due {
        // A `done` is no inbox entry: it never closes, so it is never skipped.
        if d.reason != InboxReason::Done.as_str() && !open.contains(&d.entry_key) {
            index.notify_skip(
                &channel.name,
                &d.entry_key,
                "the entry closed before it was delivered",
                now_ms,
            )?;
            out.skipped += 1;
            continue;
        }
        if !index.notify_claim(
            &channel.name,
            &d.entry_key,
            d.attempts,
            now_ms + RESEND_AFTER_MS,
            now_ms,
        )? {
            continue;
        }
        let attempt = d.attempts + 1;
        let sent = match serde_json::from_str::<Notification>(&d.payload) {
            Ok(n) => sender.send(channel, &n),
            Err(e) => Sent {
                ok: false,
                answer: format!("the stored message cannot be read: {e}"),
                duration_ms: 0,
            },
        };
        let (status, next_ms) = if sent.ok {
            out.delivered += 1;
            (DeliveryStatus::Delivered, now_ms)
        } else if now_ms + backoff_ms(&d.idempotency_key, attempt) - d.created_ms > WINDOW_MS {
            out.gave_up += 1;
            (DeliveryStatus::GaveUp, now_ms)
        } else {
            out.failed += 1;
            (
                DeliveryStatus::Pending,
                now_ms + backoff_ms(&d.idempotency_key, attempt),
            )
        };
        let end = AttemptEnd {
            started_ms: now_ms,
            duration_ms: sent.duration_ms,
            ok: sent.ok,
            answer: sent.answer,
            status,
            next_ms,
        };
        index.notify_record(&channel.name, &d.entry_key, attempt, &end)?;
    }
    Ok(out)
}

/// The wait after failed attempt `attempt` (1-based): one second doubled each time, at most
/// [`MAX_BACKOFF_MS`], minus a jitter of up to half, drawn from the delivery key and the attempt
/// (deterministic, so a run can be replayed, and different per delivery, so a receiver that
/// comes back is not hit by every delivery at once).
pub fn backoff_ms(key: &str, attempt: i64) -> i64 {
    let full = 1000i64
        .saturating_mul(1i64 << (attempt - 1).clamp(0, 30))
        .min(MAX_BACKOFF_MS);
    let h = yoi_core::sha256_hex(format!("{key}#{attempt}").as_bytes());
    let fraction = i64::from_str_radix(&h[..4], 16).unwrap_or(0); // 0..65535
    full - (full / 2) * fraction / 65_536
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_a_bounded_jitter_and_stops_growing() {
        for attempt in 1..=20 {
            let full = (1000i64 << (attempt - 1)).min(MAX_BACKOFF_MS);
            let b = backoff_ms("dlv_x", attempt);
            assert!(
                b > full / 2 && b <= full,
                "attempt {attempt}: {b} of {full}"
            );
        }
        assert_ne!(backoff_ms("dlv_a", 3), backoff_ms("dlv_b", 3));
        assert_eq!(backoff_ms("dlv_a", 3), backoff_ms("dlv_a", 3));
    }

    #[test]
    fn the_delivery_key_is_the_same_for_the_same_pair_only() {
        assert_eq!(delivery_key("hook", "T:r:e"), delivery_key("hook", "T:r:e"));
        assert_ne!(delivery_key("hook", "T:r:e"), delivery_key("mail", "T:r:e"));
        assert!(delivery_key("hook", "x").starts_with("dlv_"));
    }
}
