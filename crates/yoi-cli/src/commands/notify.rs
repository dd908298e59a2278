//! `yoi notify log [--channel NAME] [--limit N] [--json]`: every promised delivery and each of
//! its attempts with the receiver's answer. `yoi notify test NAME`: send a sample message on
//! one `[[notify]]` channel through the same adapter `yoi serve` uses, and say what the
//! receiver answered (nothing is recorded: it is a test of the channel, not an entry).

use crate::cli::NotifyCommand;
use crate::context::{now, Env};
use crate::error::CliError;
use crate::output;
use yoi_core::inbox::InboxReason;
use yoi_engine::inbox::{InboxAction, InboxEntry};
use yoi_engine::notify::{notification, Sender};
use yoi_server::notify::{Adapters, Secrets};

pub fn run(env: &Env, cmd: NotifyCommand) -> Result<(), CliError> {
    match cmd {
        NotifyCommand::Log {
            channel,
            limit,
            json,
        } => log(env, channel.as_deref(), limit, json),
        NotifyCommand::Test { name } => test(env, &name),
    }
}

fn log(env: &Env, channel: Option<&str>, limit: i64, json: bool) -> Result<(), CliError> {
    let (_ws, index) = env.workspace_with_index("yoi notify log")?;
    let log = yoi_engine::notify::log(&index, channel, limit)?;
    if json {
        output::json(&log);
        return Ok(());
    }
    let out: Vec<_> = log
        .deliveries
        .iter()
        .map(|d| (&d.delivery, &d.attempt_log))
        .collect();
    if out.is_empty() {
        println!("no notifications");
        return Ok(());
    }
    for (d, attempts) in &out {
        println!(
            "{} {} {} {} ({} attempt(s)) {}",
            d.channel,
            d.status.as_str(),
            d.reason,
            d.ticket.as_deref().unwrap_or("-"),
            d.attempts,
            d.idempotency_key
        );
        for a in attempts.iter() {
            println!(
                "  #{} {} {} ms: {}",
                a.attempt,
                if a.ok { "ok    " } else { "failed" },
                a.duration_ms,
                output::clip(&a.answer, 100)
            );
        }
    }
    Ok(())
}

fn test(env: &Env, name: &str) -> Result<(), CliError> {
    let ws = env.files_only("yoi notify test")?;
    let Some(channel) = ws.config.notify.iter().find(|c| c.name == name) else {
        let names: Vec<&str> = ws.config.notify.iter().map(|c| c.name.as_str()).collect();
        return Err(CliError::Refused(format!(
            "no [[notify]] channel is called `{name}` (configured: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    };
    let at = now();
    let entry = InboxEntry {
        key: format!("test:{}", at.unix_millis()),
        reason: InboxReason::Other,
        ticket: None,
        title: "A test from `yoi notify test`".into(),
        since: at.to_string(),
        detail: format!("If you read this, the `{name}` channel works."),
        command: format!("yoi notify test {name}"),
        action: InboxAction {
            label: "Open the inbox".into(),
            href: "/inbox".into(),
        },
        event: None,
    };
    let base = format!("http://{}", ws.config.server.listen);
    let n = notification(channel, &entry, &base);
    let sent = Adapters::new(Secrets::from_env(std::slice::from_ref(channel))).send(channel, &n);
    if sent.ok {
        println!("sent to {name} in {} ms: {}", sent.duration_ms, sent.answer);
        Ok(())
    } else {
        Err(CliError::Refused(format!(
            "the `{name}` channel did not take the test message: {}",
            sent.answer
        )))
    }
}
