//! The inbox and its notifications in the simulation: every sweep also promises and sends
//! notifications to one simulated channel, as `yoi serve`'s loops do (`yoi_engine::notify`'s
//! step functions; the channel takes every message), and two invariants are held against them:
//!
//! - **`inbox-condition`** (after every step): an `agent_question` entry is open exactly while
//!   its ticket is queued or in progress and its thread has a question that waits for an
//!   answer — read from the files by the store's own rule (`open_question`, what the answer's
//!   guard reads), not from the index the inbox reads — and it names that question;
//! - **`notified-twice`** (after every sweep): no delivery reaches the channel twice, across
//!   restarts (the notifier's memory is the server's, and goes with it) and crashes. The sim's
//!   crash points are file writes; a delivery writes the database alone, so the one duplicate
//!   docs/inbox.md allows (a server killed between a receiver's answer and its record) cannot
//!   happen here, and any second delivery is a fault.
//!
//! At the end (`check_all_told`, after settling): every delivery was sent or skipped because
//! its entry closed first — none is left pending, since the channel never fails.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use yoi_core::inbox::InboxReason;
use yoi_core::State;
use yoi_engine::db::notify::DeliveryStatus;
use yoi_engine::notify::{deliver_channel, Notification, Sender, Sent};
use yoi_engine::store::notify_config::{ChannelKind, NotifyChannel};

use super::{broken, Broken, World};

/// The simulated channel: a signed webhook no network ever sees.
pub(super) fn channel() -> NotifyChannel {
    NotifyChannel {
        name: "sim".into(),
        channel: ChannelKind::Webhook,
        reasons: None,
        url: Some("http://sim.invalid/hook".into()),
        secret_env: Some("YOI_SIM_HOOK_KEY".into()),
        link_base: None,
        priority: None,
        smtp_host: None,
        smtp_port: None,
        tls: Default::default(),
        from: None,
        to: Vec::new(),
        username_env: None,
        password_env: None,
    }
}

/// The receiver: how often each delivery key arrived. It outlives restarts, as a receiver
/// outlives the server that sends to it.
#[derive(Default)]
pub(super) struct Told {
    seen: RefCell<BTreeMap<String, u32>>,
}

impl Sender for Told {
    fn send(&self, _channel: &NotifyChannel, n: &Notification) -> Sent {
        *self
            .seen
            .borrow_mut()
            .entry(n.delivery.clone())
            .or_default() += 1;
        Sent {
            ok: true,
            answer: "taken".into(),
            duration_ms: 0,
        }
    }
}

impl World {
    /// One notification sweep: promise a delivery per open entry, then send the due ones.
    pub(super) fn notify(&mut self) {
        let now = self.now();
        let c = channel();
        let World { live, told, .. } = self;
        let l = live.as_mut().expect("the world is running");
        let promised = l.notifier.promise(
            &l.ws,
            &l.db,
            std::slice::from_ref(&c),
            "http://sim.invalid",
            now,
        );
        let sent = deliver_channel(&l.ws, &l.db, &c, &*told, 50, now);
        match (promised, sent) {
            (Ok(0), Ok(d)) if d == Default::default() => {}
            (Ok(p), Ok(d)) => self.note(format!("  notifications: {p} promised, {d:?}")),
            (Err(e), _) | (_, Err(e)) => self.note(format!("  the notification sweep failed: {e}")),
        }
    }

    /// No delivery reached the channel twice.
    pub(super) fn check_told(&mut self) -> Result<(), Broken> {
        let seen = self.told.seen.borrow();
        self.stats.notified = seen.values().map(|n| *n as usize).sum();
        match seen.iter().find(|(_, n)| **n > 1) {
            Some((key, n)) => Err(broken(
                "notified-twice",
                format!("the delivery {key} reached the channel {n} times"),
            )),
            None => Ok(()),
        }
    }

    /// The open `agent_question` entries are exactly the questions the threads say wait.
    pub(super) fn check_inbox(&self) -> Result<(), Broken> {
        let mut want = BTreeSet::new();
        for id in &self.tickets {
            if !matches!(self.state_of(id)?, State::Queued | State::Inprogress) {
                continue;
            }
            if let Some(q) = self.open_question(id)? {
                want.insert((id.to_string(), q));
            }
        }
        let l = self.live();
        let inbox = yoi_engine::inbox::inbox(&l.ws, &l.db)
            .map_err(|e| broken("db", format!("reading the inbox: {e}")))?;
        let open: BTreeSet<(String, String)> = inbox
            .entries
            .iter()
            .filter(|e| e.reason == InboxReason::AgentQuestion)
            .map(|e| {
                (
                    e.ticket.clone().unwrap_or_default(),
                    e.event.clone().unwrap_or_default(),
                )
            })
            .collect();
        if open != want {
            return Err(broken(
                "inbox-condition",
                format!(
                    "the inbox's open questions {open:?} are not the ones the threads leave unanswered {want:?}"
                ),
            ));
        }
        Ok(())
    }

    /// Every delivery was sent, or skipped because its entry closed before it was due.
    pub(super) fn check_all_told(&self) -> Result<(), Broken> {
        let l = self.live();
        let rows =
            l.db.notify_deliveries(Some("sim"), 100_000)
                .map_err(|e| broken("db", e.to_string()))?;
        let seen = self.told.seen.borrow();
        for r in &rows {
            let fine = match r.status {
                DeliveryStatus::Delivered => seen.get(&r.idempotency_key) == Some(&1),
                DeliveryStatus::Skipped => !seen.contains_key(&r.idempotency_key),
                _ => false,
            };
            if !fine {
                return Err(broken(
                    "notification-lost",
                    format!(
                        "the delivery of {} is {:?} after settling, and the channel saw it {} time(s)",
                        r.entry_key,
                        r.status,
                        seen.get(&r.idempotency_key).copied().unwrap_or(0)
                    ),
                ));
            }
        }
        Ok(())
    }
}
