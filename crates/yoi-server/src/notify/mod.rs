//! Notifications inside `yoi serve`: the tasks that call the engine's step functions
//! (`yoi_engine::notify`) — one that promises a delivery per (channel, open entry), and one per
//! channel that sends its due deliveries, so a slow or failing channel never delays the loop or
//! another channel — and the adapters that carry a message: HTTP for webhook, Slack and ntfy
//! ([`http`]), SMTP for email ([`smtp`]), the session D-Bus for desktop ([`dbus`]). Secrets are
//! read here, from the environment variables the configuration names, and never written
//! anywhere; so is the session bus's address.

pub mod dbus;
pub mod http;
pub mod smtp;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use yoi_engine::notify::{deliver_channel, Notification, Notifier, Sender, Sent};
use yoi_store::notify_config::{ChannelKind, NotifyChannel};

use crate::auth::now;
use crate::state::AppState;

/// How often the promise loop looks for new entries when nothing in this server woke it.
const LOOK_EVERY: Duration = Duration::from_millis(250);
/// How often a channel looks for retries that came due when no new promise woke it.
const EVERY: Duration = Duration::from_secs(1);
/// Deliveries one channel sends per sweep.
const PER_SWEEP: i64 = 20;

/// The secrets of the configured channels, and the session bus a desktop channel talks to,
/// read from the environment once.
#[derive(Clone, Default)]
pub struct Secrets {
    values: BTreeMap<String, String>,
    session_bus: Option<String>,
}

impl Secrets {
    /// Read every variable the channels name; a missing one is left out (and an attempt that
    /// needs it fails saying so, in the delivery log).
    pub fn from_env(channels: &[NotifyChannel]) -> Secrets {
        let mut values = BTreeMap::new();
        for c in channels {
            for v in [&c.secret_env, &c.username_env, &c.password_env]
                .into_iter()
                .flatten()
            {
                match std::env::var(v) {
                    Ok(s) if !s.is_empty() => {
                        values.insert(v.clone(), s);
                    }
                    _ => tracing::error!(
                        channel = %c.name,
                        variable = %v,
                        "a [[notify]] channel names an environment variable that is not set; its deliveries fail until it is"
                    ),
                }
            }
        }
        let mut session_bus = None;
        if channels.iter().any(|c| c.channel == ChannelKind::Desktop) {
            session_bus = dbus::session_bus_from_env();
            if session_bus.is_none() {
                tracing::error!(
                    "a desktop [[notify]] channel is configured but this process has no session bus (DBUS_SESSION_BUS_ADDRESS, $XDG_RUNTIME_DIR/bus); its deliveries fail until the server is started with one"
                );
            }
        }
        Secrets {
            values,
            session_bus,
        }
    }

    /// The value of variable `name` (`None` when it was not set).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    #[doc(hidden)]
    pub fn with(mut self, name: &str, value: &str) -> Secrets {
        self.values.insert(name.into(), value.into());
        self
    }

    /// The session bus's address (`DBUS_SESSION_BUS_ADDRESS`'s form), as a test's own bus.
    #[doc(hidden)]
    pub fn with_session_bus(mut self, address: &str) -> Secrets {
        self.session_bus = Some(address.into());
        self
    }
}

/// The real sender: HTTP, SMTP or D-Bus by channel kind, with the secrets it signs or logs in
/// with.
pub struct Adapters {
    pub secrets: Secrets,
    pub http: ureq::Agent,
}

impl Adapters {
    pub fn new(secrets: Secrets) -> Adapters {
        Adapters {
            secrets,
            http: http::agent(),
        }
    }
}

impl Sender for Adapters {
    fn send(&self, c: &NotifyChannel, n: &Notification) -> Sent {
        let start = Instant::now();
        let result = match c.channel {
            ChannelKind::Webhook | ChannelKind::Slack | ChannelKind::Ntfy => {
                http::send(&self.http, &self.secrets, c, n)
            }
            ChannelKind::Email => smtp::send(&self.secrets, c, n),
            ChannelKind::Desktop => dbus::send(self.secrets.session_bus.as_deref(), c, n),
        };
        let duration_ms = i64::try_from(start.elapsed().as_millis()).unwrap_or(i64::MAX);
        match result {
            Ok(answer) => Sent {
                ok: true,
                answer,
                duration_ms,
            },
            Err(answer) => Sent {
                ok: false,
                answer,
                duration_ms,
            },
        }
    }
}

/// Where people reach this server's dashboard, for links in messages: `https` when the running
/// server serves TLS (its server.json names a certificate), and an address a browser can open
/// for a wildcard listen (never `0.0.0.0`).
pub fn link_base(state: &AppState) -> String {
    let tls = yoi_store::server_file::read(&state.ws.local_dir())
        .is_some_and(|info| info.tls_fingerprint.is_some());
    let scheme = if tls { "https" } else { "http" };
    let listen = &state.ws.config.server.listen;
    let host = listen
        .parse()
        .map(|a| crate::listen::reachable(a).to_string())
        .unwrap_or_else(|_| listen.clone());
    format!("{scheme}://{host}")
}

/// Start the notification loops (none without `[[notify]]` entries).
pub fn spawn(state: AppState) -> Vec<tokio::task::JoinHandle<()>> {
    let channels = state.ws.config.notify.clone();
    if channels.is_empty() {
        return Vec::new();
    }
    let adapters = Arc::new(Adapters::new(Secrets::from_env(&channels)));
    // A new promise wakes every channel at once, so an entry is sent within one sweep.
    let promised = Arc::new(tokio::sync::Notify::new());
    let mut tasks = vec![tokio::spawn(promise_loop(state.clone(), promised.clone()))];
    for c in channels {
        let loop_of = channel_loop(state.clone(), c, adapters.clone(), promised.clone());
        tasks.push(tokio::spawn(loop_of));
    }
    tasks
}

/// Promise deliveries for new entries: when this server changed something, and every
/// [`LOOK_EVERY`] for writes by other processes (they reach the index through the file watch).
async fn promise_loop(state: AppState, promised: Arc<tokio::sync::Notify>) {
    let mut closing = state.closing.subscribe();
    let mut changed = state.changed.subscribe();
    let mut notifier = Arc::new(Mutex::new(Notifier::default()));
    let base = link_base(&state);
    loop {
        if *closing.borrow() {
            break;
        }
        changed.borrow_and_update();
        // Writes by other processes (a CLI, a hand edit) reach the index here first, as they
        // do before every request.
        if let Err(e) = state.settle().await {
            tracing::warn!(error = %e.message, "reading changed ticket files before promising notifications");
        }
        let st = state.clone();
        let n = notifier.clone();
        let b = base.clone();
        let done = tokio::task::spawn_blocking(move || {
            let mut n = n.lock().unwrap_or_else(|p| p.into_inner());
            n.promise(&st.ws, &st.index, &st.ws.config.notify, &b, now())
        })
        .await;
        match done {
            Ok(Ok(0)) => {}
            Ok(Ok(_)) => promised.notify_waiters(),
            Ok(Err(e)) => {
                tracing::error!(error = %e, "promising notifications failed; it runs again")
            }
            Err(e) => {
                tracing::error!(error = %e, "promising notifications panicked; it runs again");
                notifier = Default::default();
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(LOOK_EVERY) => {}
            _ = changed.changed() => {}
            _ = closing.changed() => {}
        }
    }
}

/// Send one channel's due deliveries: at once after a new promise, and every [`EVERY`] for
/// the retries that come due.
async fn channel_loop(
    state: AppState,
    channel: NotifyChannel,
    adapters: Arc<Adapters>,
    promised: Arc<tokio::sync::Notify>,
) {
    let mut closing = state.closing.subscribe();
    loop {
        if *closing.borrow() {
            break;
        }
        // Registered before the sweep, so a promise made during it wakes the next one.
        let woken = promised.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let st = state.clone();
        let c = channel.clone();
        let a = adapters.clone();
        let done = tokio::task::spawn_blocking(move || {
            deliver_channel(&st.ws, &st.index, &c, a.as_ref(), PER_SWEEP, now())
        })
        .await;
        match done {
            // A full batch: more may be due, so the next sweep runs at once.
            Ok(Ok(d)) if d.delivered + d.failed + d.gave_up + d.skipped >= PER_SWEEP as usize => {
                continue
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::error!(channel = %channel.name, error = %e, "a notification sweep failed; it runs again")
            }
            Err(e) => {
                tracing::error!(channel = %channel.name, error = %e, "a notification sweep panicked; it runs again")
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = woken => {}
            _ = closing.changed() => {}
        }
    }
}
