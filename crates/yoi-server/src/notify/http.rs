//! Webhook, Slack and ntfy: one HTTP POST per attempt, answered 2xx or failed.
//!
//! - webhook: the [`Notification`] as JSON (schema `yoi.notification.v1`, docs/inbox.md) with
//!   `Yoi-Delivery` (the idempotency key), `Yoi-Timestamp` (Unix seconds) and `Yoi-Signature:
//!   v1=<hex HMAC-SHA-256 of "<timestamp>.<body>" under the channel's secret>`;
//! - slack: Slack's incoming-webhook payload, `{"text", "blocks"}` with a link to the page;
//! - ntfy: ntfy's publish format, the detail as the body and `Title`, `Priority`, `Tags`,
//!   `Click` headers.

use std::time::Duration;

use yoi_engine::notify::Notification;
use yoi_store::notify_config::{ChannelKind, NotifyChannel};

use super::Secrets;

/// How long one attempt may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(TIMEOUT))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into()
}

/// `v1=<hex>`: the signature of a webhook body sent at `timestamp` (Unix seconds).
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut signed = format!("{timestamp}.").into_bytes();
    signed.extend_from_slice(body);
    format!(
        "v1={}",
        yoi_core::hmac_sha256_hex(secret.as_bytes(), &signed)
    )
}

/// Send `n` on HTTP channel `c`: the answer on a 2xx, the reason otherwise.
pub fn send(
    agent: &ureq::Agent,
    secrets: &Secrets,
    c: &NotifyChannel,
    n: &Notification,
) -> Result<String, String> {
    let url = c.url.as_deref().ok_or("the channel has no url")?;
    let request = agent
        .post(url)
        .header("User-Agent", concat!("yoi/", env!("CARGO_PKG_VERSION")));
    let sent = match c.channel {
        ChannelKind::Webhook => {
            let var = c.secret_env.as_deref().unwrap_or_default();
            let secret = secrets
                .get(var)
                .ok_or_else(|| format!("environment variable {var} (secret_env) is not set"))?;
            let body = serde_json::to_vec(n).map_err(|e| e.to_string())?;
            let ts = crate::auth::now().unix_millis() / 1000;
            request
                .header("Content-Type", "application/json")
                .header("Yoi-Delivery", &n.delivery)
                .header("Yoi-Timestamp", ts.to_string())
                .header("Yoi-Signature", signature(secret, ts, &body))
                .send(&body[..])
        }
        ChannelKind::Slack => {
            let body = serde_json::json!({
                "text": format!("{} — {}", n.subject(), n.link),
                "blocks": [
                    {"type": "section", "text": {"type": "mrkdwn",
                        "text": format!("*<{}|{}>*\n{}", n.link, slack_escape(&n.subject()), slack_escape(&n.entry.detail))}},
                    {"type": "context", "elements": [{"type": "mrkdwn",
                        "text": format!("`{}`", slack_escape(&n.entry.command))}]}
                ]
            });
            request
                .header("Content-Type", "application/json")
                .send(body.to_string().as_bytes())
        }
        ChannelKind::Ntfy => request
            .header("Title", header_safe(&n.subject()))
            .header("Priority", c.priority.unwrap_or(4).to_string())
            .header("Tags", format!("yoi,{}", n.entry.reason.as_str()))
            .header("Click", &n.link)
            .header("Content-Type", "text/plain; charset=utf-8")
            .send(format!("{}\n\n{}", n.entry.detail, n.entry.command).as_bytes()),
        ChannelKind::Email | ChannelKind::Desktop => {
            return Err(format!("{} is not an HTTP channel", c.channel.as_str()))
        }
    };
    let mut res = sent.map_err(|e| format!("no answer from {url}: {e}"))?;
    let status = res.status().as_u16();
    let text = res
        .body_mut()
        .with_config()
        .limit(4096)
        .read_to_string()
        .unwrap_or_default();
    let text: String = text.chars().take(200).collect();
    let answer = format!("HTTP {status}: {}", text.trim());
    if (200..300).contains(&status) {
        Ok(answer)
    } else {
        Err(answer)
    }
}

/// Slack's mrkdwn escapes: `&`, `<`, `>`.
fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A header value on one line, without control characters.
fn header_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
