//! Notifications inside `yoi serve`: the tasks that call the engine's step functions
//! (`yoi_engine::notify`) — one that promises a delivery per (channel, open entry), and one per
//! channel that sends its due deliveries, so a slow or failing channel never delays the loop or
//! another channel — and the adapters that carry a message: HTTP for webhook, Slack and ntfy
//! ([`http`]), SMTP for email ([`smtp`]). Secrets are read here, from the environment
//! variables the configuration names, and never written anywhere.

pub mod http;
pub mod smtp;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use yoi_engine::notify::{deliver_channel, Notification, Notifier, Sender, Sent};
use yoi_store::notify_config::{ChannelKind, NotifyChannel};

use crate::auth::now;
use crate::state::AppState;

/// How often the loops look for new entries and due deliveries.
const EVERY: Duration = Duration::from_secs(1);
/// Deliveries one channel sends per sweep.
const PER_SWEEP: i64 = 20;

/// The secrets of the configured channels, read from the environment once.
#[derive(Clone, Default)]
pub struct Secrets {
    values: BTreeMap<String, String>,
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
        Secrets { values }
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
}

/// The real sender: HTTP or SMTP by channel kind, with the secrets it signs or logs in with.
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
            ChannelKind::Desktop => Err("desktop notifications are not built yet".to_string()),
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

/// Where people reach this server's dashboard, for links in messages.
pub fn link_base(state: &AppState) -> String {
    format!("http://{}", state.ws.config.server.listen)
}

/// Start the notification loops (none without `[[notify]]` entries).
pub fn spawn(state: AppState) -> Vec<tokio::task::JoinHandle<()>> {
    let channels = state.ws.config.notify.clone();
    if channels.is_empty() {
        return Vec::new();
    }
    let adapters = std::sync::Arc::new(Adapters::new(Secrets::from_env(&channels)));
    let mut tasks = vec![tokio::spawn(promise_loop(state.clone()))];
    for c in channels {
        tasks.push(tokio::spawn(channel_loop(
            state.clone(),
            c,
            adapters.clone(),
        )));
    }
    tasks
}

async fn promise_loop(state: AppState) {
    let mut closing = state.closing.subscribe();
    let mut notifier = std::sync::Arc::new(std::sync::Mutex::new(Notifier::default()));
    let base = link_base(&state);
    loop {
        if *closing.borrow() {
            break;
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
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, "promising notifications failed; it runs again")
            }
            Err(e) => {
                tracing::error!(error = %e, "promising notifications panicked; it runs again");
                notifier = Default::default();
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = closing.changed() => {}
        }
    }
}

async fn channel_loop(state: AppState, channel: NotifyChannel, adapters: std::sync::Arc<Adapters>) {
    let mut closing = state.closing.subscribe();
    loop {
        if *closing.borrow() {
            break;
        }
        let st = state.clone();
        let c = channel.clone();
        let a = adapters.clone();
        let done = tokio::task::spawn_blocking(move || {
            deliver_channel(&st.ws, &st.index, &c, a.as_ref(), PER_SWEEP, now())
        })
        .await;
        match done {
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
            _ = closing.changed() => {}
        }
    }
}
