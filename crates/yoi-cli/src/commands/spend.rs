//! `yoi cost [--by …]` and `yoi ticket budget ID [--add USD]`: where the money went, and a
//! ticket's budget (docs/budgets.md).

use yoi_engine::db::spend::SpentBy;
use yoi_engine::spend;

use crate::cli::{BudgetArgs, CostArgs, CostBy};
use crate::context::{now, Env};
use crate::error::CliError;
use crate::output;

const DAY_MS: i64 = 86_400_000;

fn usd(micros: i64) -> String {
    format!("${:.2}", micros as f64 / 1e6)
}

/// The start of UTC day `YYYY-MM-DD`, in milliseconds since the Unix epoch.
fn day_ms(date: &str) -> Result<i64, CliError> {
    yoi_core::Timestamp::parse(&format!("{date}T00:00:00Z"))
        .map(|t| t.unix_millis())
        .map_err(|_| CliError::Usage(format!("--since must be a day as YYYY-MM-DD, got `{date}`")))
}

pub fn cost(env: &Env, a: &CostArgs) -> Result<(), CliError> {
    let (ws, index) = env.workspace_with_index("yoi cost")?;
    let now_ms = now().unix_millis();
    let since = match &a.since {
        Some(d) => day_ms(d)?,
        None => spend::day_start(now_ms) - 30 * DAY_MS,
    };
    let by = match a.by {
        CostBy::Ticket => SpentBy::Ticket,
        CostBy::Day => SpentBy::Day,
        CostBy::Agent => SpentBy::Agent,
        CostBy::Model => SpentBy::Model,
    };
    let report = spend::breakdown(&index, by, since)?;
    let limits = spend::limits(&ws, &index, now_ms)?;
    if a.json {
        output::json(&serde_json::json!({ "costs": report, "limits": limits }));
        return Ok(());
    }
    let rows: Vec<Vec<String>> = report
        .rows
        .iter()
        .map(|r| {
            vec![
                if r.key.is_empty() {
                    "-".into()
                } else {
                    r.key.clone()
                },
                usd(r.spent.cost_micros),
                r.spent.tokens.to_string(),
                r.spent.attempts.to_string(),
            ]
        })
        .collect();
    let head = match by {
        SpentBy::Ticket => "TICKET",
        SpentBy::Day => "DAY (UTC)",
        SpentBy::Agent => "AGENT",
        SpentBy::Model => "MODEL",
    };
    output::table(&[head, "COST", "TOKENS", "ATTEMPTS"], &rows);
    println!(
        "total since {}: {} in {} tokens over {} attempts",
        yoi_engine::db::spend::day_name(since.div_euclid(DAY_MS)),
        usd(report.total.cost_micros),
        report.total.tokens,
        report.total.attempts
    );
    let mut today = format!("today (UTC): {}", usd(limits.today.cost_micros));
    if let Some(l) = limits.day_usd {
        today.push_str(&format!(" of ${l:.2}"));
    }
    println!("{today}");
    for p in &limits.pauses {
        println!("{}", pause_line(p, now_ms));
    }
    for h in &limits.holds {
        println!("held over its budget: {} ({})", h.ticket, h.message);
    }
    Ok(())
}

/// `paused: provider:anthropic until 2026-12-04T18:00:00Z (rate_limited: 429 …)`.
pub fn pause_line(p: &yoi_engine::db::spend::Pause, now_ms: i64) -> String {
    if p.until_ms > now_ms {
        format!(
            "paused: {} until {} ({}: {})",
            p.subject,
            yoi_core::Timestamp::from_unix_millis(p.until_ms),
            p.reason,
            p.message
        )
    } else {
        format!(
            "{} ran into {} rate limit(s) in a row; the last pause ended {}",
            p.subject,
            p.strikes,
            yoi_core::Timestamp::from_unix_millis(p.until_ms)
        )
    }
}

pub fn budget(env: &Env, a: &BudgetArgs) -> Result<(), CliError> {
    if a.add.is_some() || a.add_tokens.is_some() {
        let out = env.target("yoi ticket budget")?.add_budget(
            &a.id,
            a.add,
            a.add_tokens,
            a.note.as_deref(),
        )?;
        output::outcome(&out, a.json);
        return Ok(());
    }
    let (ws, index) = env.workspace_with_index("yoi ticket budget")?;
    let id = ws.resolve(&a.id)?;
    let limit = spend::ticket_limit(&ws, &ws.read_thread(&id)?);
    let spent = index.spent_on_ticket(id.as_str())?;
    let held = index
        .budget_holds()?
        .into_iter()
        .find(|h| h.ticket == id.as_str());
    if a.json {
        output::json(&serde_json::json!({
            "ticket": id,
            "limit_usd": limit.usd,
            "limit_tokens": limit.tokens,
            "spent": spent,
            "held": held,
        }));
        return Ok(());
    }
    let of = |l: Option<String>| {
        l.map(|l| format!(" of {l}"))
            .unwrap_or_else(|| " (no limit)".into())
    };
    println!(
        "{id}: spent {}{} and {} tokens{} over {} attempts",
        usd(spent.cost_micros),
        of(limit.usd.map(|u| format!("${u:.2}"))),
        spent.tokens,
        of(limit.tokens.map(|t| t.to_string())),
        spent.attempts
    );
    match held {
        Some(h) => println!(
            "held: its next step waits ({}); add to it with `yoi ticket budget {id} --add USD`",
            h.message
        ),
        None => println!("not held"),
    }
    Ok(())
}
