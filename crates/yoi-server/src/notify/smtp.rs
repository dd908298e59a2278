//! Email: one message per entry over SMTP (lettre), with STARTTLS required by default, TLS from
//! the first byte on request, and plain text only to a loopback host (the configuration refuses
//! it elsewhere). The idempotency key is the `Message-ID`, so a mail client or filter can drop
//! the duplicate of a crash between sending and recording.

use std::time::Duration;

use lettre::message::{header::ContentType, Mailbox};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{Message, SmtpTransport, Transport};
use yoi_engine::notify::Notification;
use yoi_store::notify_config::{NotifyChannel, SmtpTls};

use super::Secrets;

/// Send `n` by mail on channel `c`: the server's reply on success, the reason otherwise.
pub fn send(secrets: &Secrets, c: &NotifyChannel, n: &Notification) -> Result<String, String> {
    let host = c
        .smtp_host
        .as_deref()
        .ok_or("the channel has no smtp_host")?;
    let mailbox = |a: &str| {
        a.parse::<Mailbox>()
            .map_err(|e| format!("`{a}` is not an email address: {e}"))
    };
    let mut builder = Message::builder()
        .from(mailbox(c.from.as_deref().unwrap_or_default())?)
        .subject(format!("[yoi] {}", n.subject()))
        .message_id(Some(format!("<{}@yoi.invalid>", n.delivery)));
    for to in &c.to {
        builder = builder.to(mailbox(to)?);
    }
    let body = format!(
        "{}\n\n{}\n\nWhat to do: {}\nOpen: {}\n\nDelivery {} (reason {}, since {})\n",
        n.subject(),
        n.entry.detail,
        n.entry.command,
        n.link,
        n.delivery,
        n.entry.reason.as_str(),
        n.entry.since
    );
    let message = builder
        .header(ContentType::TEXT_PLAIN)
        .body(body)
        .map_err(|e| format!("building the message: {e}"))?;
    let transport = match c.tls {
        SmtpTls::Starttls => SmtpTransport::starttls_relay(host),
        SmtpTls::Tls => SmtpTransport::relay(host),
        SmtpTls::None => Ok(SmtpTransport::builder_dangerous(host)),
    }
    .map_err(|e| format!("SMTP server {host}: {e}"))?
    .port(c.port())
    .timeout(Some(Duration::from_secs(10)));
    let transport = match (&c.username_env, &c.password_env) {
        (Some(u), Some(p)) => {
            let user = secrets
                .get(u)
                .ok_or_else(|| format!("environment variable {u} (username_env) is not set"))?;
            let pass = secrets
                .get(p)
                .ok_or_else(|| format!("environment variable {p} (password_env) is not set"))?;
            transport.credentials(Credentials::new(user.into(), pass.into()))
        }
        _ => transport,
    };
    let reply = transport
        .build()
        .send(&message)
        .map_err(|e| format!("SMTP {host}:{}: {e}", c.port()))?;
    Ok(format!(
        "SMTP {}: {}",
        reply.code(),
        reply.message().collect::<Vec<_>>().join(" ")
    ))
}
