//! `route ID --dry-run` (what the router would decide now, and why) and `retry ID`.

use yoi_engine::routing::view::routing_view;

use crate::cli::{AnswerArgs, RetryArgs, RouteArgs};
use crate::context::Env;
use crate::error::CliError;
use crate::output;

/// Reads the files only (no lock, nothing written), so it answers the same with or without a
/// running server.
pub fn route(env: &Env, a: &RouteArgs) -> Result<(), CliError> {
    if !a.dry_run {
        return Err(CliError::Usage(
            "routing runs inside `yoi serve` (the orchestrator loop); `yoi ticket route ID --dry-run` shows what it would decide now, without writing".into(),
        ));
    }
    let ws = env.files_only("yoi ticket route")?;
    let view = routing_view(&ws, &a.id, ws.config.router.max_inprogress)?;
    if a.json {
        output::json(&view);
        return Ok(());
    }
    println!("{}: {}", view.ticket, view.state);
    match &view.would_decide {
        Some(w) => {
            println!("would decide (dry run, nothing written):");
            for line in w.rendered.lines() {
                println!("  {line}");
            }
        }
        None => println!(
            "would decide: nothing (only queued tickets are routed; this one is {})",
            view.state
        ),
    }
    match &view.latest_decision {
        Some(d) => println!(
            "latest decision: {} ({}{})",
            d.kind.as_deref().unwrap_or("unparsed"),
            d.event_id.as_deref().unwrap_or("no id"),
            d.at.as_deref()
                .map(|t| format!(" at {t}"))
                .unwrap_or_default()
        ),
        None => println!("latest decision: none"),
    }
    if view.blockers.is_empty() {
        println!("blockers: none");
    } else {
        println!("blockers:");
        for b in &view.blockers {
            println!("  - {b}");
        }
    }
    if view.packet.complete {
        println!("brief: complete");
    } else {
        println!(
            "brief: missing required sections: {}",
            view.packet.missing_required.join(", ")
        );
    }
    if !view.packet.missing_optional.is_empty() {
        println!(
            "brief: optional sections not written: {}",
            view.packet.missing_optional.join(", ")
        );
    }
    println!(
        "capacity: {} of {} in progress",
        view.capacity.in_progress, view.capacity.max
    );
    let c = &view.circuit;
    if c.open {
        println!(
            "circuit: OPEN after {} consecutive failures; run `yoi ticket retry {}` once the cause is fixed",
            c.consecutive_failures, view.ticket
        );
    } else {
        println!(
            "circuit: closed ({} consecutive failures; opens at {})",
            c.consecutive_failures, c.open_after
        );
    }
    Ok(())
}

pub fn answer(env: &Env, a: &AnswerArgs) -> Result<(), CliError> {
    let message = a.message.as_deref().or(a.text.as_deref()).unwrap_or("");
    let out = env.target("yoi ticket answer")?.answer(&a.id, message)?;
    output::outcome(&out, a.json);
    Ok(())
}

pub fn retry(env: &Env, a: &RetryArgs) -> Result<(), CliError> {
    let out = env
        .target("yoi ticket retry")?
        .retry(&a.id, a.reason.as_deref())?;
    output::outcome(&out, a.json);
    Ok(())
}
