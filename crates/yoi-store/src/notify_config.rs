//! `[[notify]]` in `.yoi/workspace.toml`: where a person is told that something waits on them
//! (docs/inbox.md). Each entry names a channel, the inbox reasons it wants and, for a secret,
//! the environment variable that holds it — never the secret itself, since the file is tracked.
//! This module only reads and checks the entries; which entries are sent when is the engine's
//! (`yoi_engine::notify`), and the sending is the server's.

use serde::{Deserialize, Serialize};
use yoi_core::inbox::InboxReason;

/// How a channel is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    /// A JSON body signed with HMAC-SHA-256 (docs/inbox.md has the schema).
    Webhook,
    /// Slack's incoming-webhook payload.
    Slack,
    /// ntfy's publish format.
    Ntfy,
    /// One message per entry over SMTP.
    Email,
    /// freedesktop notifications (`org.freedesktop.Notifications.Notify`) on the session bus
    /// of the machine `yoi serve` runs on.
    Desktop,
}

impl ChannelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Webhook => "webhook",
            ChannelKind::Slack => "slack",
            ChannelKind::Ntfy => "ntfy",
            ChannelKind::Email => "email",
            ChannelKind::Desktop => "desktop",
        }
    }
}

/// How SMTP is secured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SmtpTls {
    /// STARTTLS, required: a server that does not offer it gets nothing.
    #[default]
    Starttls,
    /// TLS from the first byte (port 465).
    Tls,
    /// Plain text. Allowed only to a loopback host.
    None,
}

/// One `[[notify]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyChannel {
    /// Unique among the entries; `yoi notify test NAME` and the delivery log use it.
    pub name: String,
    pub channel: ChannelKind,
    /// The inbox reasons to send (`circuit_open`, …); every reason when absent.
    #[serde(default)]
    pub reasons: Option<Vec<String>>,
    /// The receiver (webhook, slack, ntfy): an `http://` or `https://` URL.
    #[serde(default)]
    pub url: Option<String>,
    /// The environment variable holding the webhook's signing key.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// The server's base URL as people reach it, for links to the ticket page
    /// (default `http://` plus `[server] listen`).
    #[serde(default)]
    pub link_base: Option<String>,
    /// ntfy's priority, 1 to 5 (default 4); for desktop, the urgency (1–2 low, 3–4 normal,
    /// 5 critical).
    #[serde(default)]
    pub priority: Option<u8>,
    /// email: the SMTP server.
    #[serde(default)]
    pub smtp_host: Option<String>,
    /// email: its port (default 587, or 465 with `tls = "tls"`).
    #[serde(default)]
    pub smtp_port: Option<u16>,
    #[serde(default)]
    pub tls: SmtpTls,
    /// email: the sender address.
    #[serde(default)]
    pub from: Option<String>,
    /// email: the recipients.
    #[serde(default)]
    pub to: Vec<String>,
    /// email: environment variables holding the SMTP login, when the server wants one.
    #[serde(default)]
    pub username_env: Option<String>,
    #[serde(default)]
    pub password_env: Option<String>,
}

impl NotifyChannel {
    /// Whether this channel wants entries of `reason`: those it names, or when it names none,
    /// every inbox reason (`done`, which is no inbox entry, only when named).
    pub fn wants(&self, reason: InboxReason) -> bool {
        match &self.reasons {
            None => reason != InboxReason::Done,
            Some(rs) => rs.iter().any(|r| r == reason.as_str()),
        }
    }

    /// The SMTP port in effect.
    pub fn port(&self) -> u16 {
        self.smtp_port.unwrap_or(match self.tls {
            SmtpTls::Tls => 465,
            _ => 587,
        })
    }
}

/// Check every entry; the error is the line of the offending `[[notify]]` header in `text`
/// (when found) and what is wrong, naming the key.
pub fn validate(entries: &[NotifyChannel], text: &str) -> Result<(), (Option<usize>, String)> {
    let headers: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "[[notify]]")
        .map(|(i, _)| i + 1)
        .collect();
    for (i, c) in entries.iter().enumerate() {
        let line = headers.get(i).copied();
        let key = |k: &str| format!("notify[{}].{k}", i + 1);
        let bad = |reason: String| Err((line, reason));
        if c.name.is_empty()
            || !c
                .name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_')
        {
            return bad(format!(
                "`{}` must be letters, digits, `-` or `_`, got `{}`",
                key("name"),
                c.name
            ));
        }
        if entries[..i].iter().any(|o| o.name == c.name) {
            return bad(format!("`{}`: `{}` is used twice", key("name"), c.name));
        }
        for r in c.reasons.iter().flatten() {
            if InboxReason::parse(r).is_none() {
                let known: Vec<&str> = InboxReason::ALL.iter().map(|r| r.as_str()).collect();
                return bad(format!(
                    "`{}`: unknown reason `{r}`; known: {}",
                    key("reasons"),
                    known.join(", ")
                ));
            }
        }
        for (k, v) in [
            ("secret_env", &c.secret_env),
            ("username_env", &c.username_env),
            ("password_env", &c.password_env),
        ] {
            if let Some(v) = v {
                if v.is_empty() || !v.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_') {
                    return bad(format!(
                        "`{}` names an environment variable (letters, digits, `_`), got `{v}`; put the secret itself in the environment, never in this file",
                        key(k)
                    ));
                }
            }
        }
        let url_ok = |u: &Option<String>| {
            u.as_deref()
                .is_some_and(|u| u.starts_with("http://") || u.starts_with("https://"))
        };
        match c.channel {
            ChannelKind::Webhook | ChannelKind::Slack | ChannelKind::Ntfy => {
                if !url_ok(&c.url) {
                    return bad(format!(
                        "`{}` must be an http:// or https:// URL for a {} channel",
                        key("url"),
                        c.channel.as_str()
                    ));
                }
                if c.channel == ChannelKind::Webhook && c.secret_env.is_none() {
                    return bad(format!(
                        "`{}` is required: a webhook is always signed (HMAC-SHA-256 with the key in that environment variable)",
                        key("secret_env")
                    ));
                }
                if c.priority.is_some_and(|p| !(1..=5).contains(&p)) {
                    return bad(format!("`{}` must be 1 to 5", key("priority")));
                }
            }
            ChannelKind::Email => {
                if c.smtp_host.as_deref().is_none_or(str::is_empty) {
                    return bad(format!("`{}` is required for email", key("smtp_host")));
                }
                if c.from.as_deref().is_none_or(|f| !f.contains('@')) {
                    return bad(format!(
                        "`{}` must be an email address for email",
                        key("from")
                    ));
                }
                if c.to.is_empty() || c.to.iter().any(|t| !t.contains('@')) {
                    return bad(format!(
                        "`{}` must list one or more email addresses",
                        key("to")
                    ));
                }
                let host = c.smtp_host.as_deref().unwrap_or_default();
                let loopback = host == "localhost"
                    || host
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback());
                if c.tls == SmtpTls::None && !loopback {
                    return bad(format!(
                        "`{}` = \"none\" sends mail in plain text and is allowed to a loopback host only, not `{host}`",
                        key("tls")
                    ));
                }
                if c.username_env.is_some() != c.password_env.is_some() {
                    return bad(format!(
                        "`{}` and `{}` go together",
                        key("username_env"),
                        key("password_env")
                    ));
                }
            }
            ChannelKind::Desktop => {
                if c.priority.is_some_and(|p| !(1..=5).contains(&p)) {
                    return bad(format!("`{}` must be 1 to 5", key("priority")));
                }
                if c.url.is_some() || c.smtp_host.is_some() || c.secret_env.is_some() {
                    return bad(format!(
                        "`{}` = \"desktop\" goes to the session bus of the machine yoi serve runs on: it takes no url, smtp_host or secret_env",
                        key("channel")
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct File {
        notify: Vec<NotifyChannel>,
    }

    fn check(text: &str) -> Result<(), (Option<usize>, String)> {
        let f: File = toml::from_str(text).unwrap();
        validate(&f.notify, text)
    }

    #[test]
    fn done_is_sent_only_to_a_channel_that_names_it() {
        let text = "[[notify]]\nname = \"all\"\nchannel = \"slack\"\nurl = \"https://x\"\n\n[[notify]]\nname = \"done\"\nchannel = \"slack\"\nurl = \"https://x\"\nreasons = [\"done\"]\n";
        assert_eq!(check(text), Ok(()));
        let f: File = toml::from_str(text).unwrap();
        assert!(f.notify[0].wants(InboxReason::CircuitOpen));
        assert!(!f.notify[0].wants(InboxReason::Done));
        assert!(f.notify[1].wants(InboxReason::Done));
        assert!(!f.notify[1].wants(InboxReason::CircuitOpen));
    }

    #[test]
    fn good_entries_pass_and_each_bad_one_names_its_key_and_line() {
        let good = "[[notify]]\nname = \"me\"\nchannel = \"desktop\"\n\n[[notify]]\nname = \"hook\"\nchannel = \"webhook\"\nurl = \"https://example.com/h\"\nsecret_env = \"HOOK_KEY\"\nreasons = [\"circuit_open\"]\n\n[[notify]]\nname = \"mail\"\nchannel = \"email\"\nsmtp_host = \"127.0.0.1\"\ntls = \"none\"\nfrom = \"yoi@example.com\"\nto = [\"me@example.com\"]\n";
        assert_eq!(check(good), Ok(()));
        let cases = [
            ("[[notify]]\nname = \"h\"\nchannel = \"webhook\"\nurl = \"https://x\"\n", "notify[1].secret_env"),
            ("\n[[notify]]\nname = \"h\"\nchannel = \"webhook\"\nurl = \"ftp://x\"\nsecret_env = \"K\"\n", "notify[1].url"),
            ("[[notify]]\nname = \"h\"\nchannel = \"slack\"\nurl = \"https://x\"\nreasons = [\"nope\"]\n", "notify[1].reasons"),
            ("[[notify]]\nname = \"m\"\nchannel = \"email\"\nsmtp_host = \"mail.example.com\"\ntls = \"none\"\nfrom = \"a@b\"\nto = [\"c@d\"]\n", "notify[1].tls"),
            ("[[notify]]\nname = \"d\"\nchannel = \"desktop\"\nurl = \"https://x\"\n", "notify[1].channel"),
            ("[[notify]]\nname = \"d\"\nchannel = \"desktop\"\npriority = 9\n", "notify[1].priority"),
            ("[[notify]]\nname = \"h\"\nchannel = \"webhook\"\nurl = \"https://x\"\nsecret_env = \"hunter2 is my key\"\n", "notify[1].secret_env"),
        ];
        for (text, key) in cases {
            let (line, reason) = check(text).unwrap_err();
            assert!(reason.contains(key), "{reason}");
            let header = text.lines().position(|l| l == "[[notify]]").unwrap() + 1;
            assert_eq!(line, Some(header), "{reason}");
        }
        let twice = "[[notify]]\nname = \"a\"\nchannel = \"slack\"\nurl = \"https://x\"\n[[notify]]\nname = \"a\"\nchannel = \"slack\"\nurl = \"https://y\"\n";
        let (line, reason) = check(twice).unwrap_err();
        assert_eq!(line, Some(5));
        assert!(reason.contains("used twice"), "{reason}");
    }
}
