//! `list`, `show`, `blockers`.

use serde::Serialize;
use yoi_core::state::State;
use yoi_engine::store::query::{self, ListFilter, RelationView, TicketSummary};
use yoi_engine::store::tickets::BrokenTicket;

use crate::cli::ListArgs;
use crate::context::{Env, Reader};
use crate::error::CliError;
use crate::output;

fn parse_states(spec: Option<&str>) -> Result<Option<Vec<State>>, CliError> {
    query::parse_state_filter(spec).map_err(|e| CliError::Usage(e.to_string()))
}

#[derive(Serialize)]
struct ListOutput<'a> {
    count: usize,
    tickets: &'a [TicketSummary],
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<yoi_core::TicketId>,
    /// Tickets yoi cannot read, whatever the filter (a broken file never hides a ticket).
    #[serde(skip_serializing_if = "<[BrokenTicket]>::is_empty")]
    broken: &'a [BrokenTicket],
}

/// One line on standard error per broken ticket: its id, the file and line, what is wrong and
/// the doctor check that says more.
pub(super) fn report_broken(broken: &[BrokenTicket]) {
    for b in broken {
        let line = b.line.map(|l| format!(":{l}")).unwrap_or_default();
        eprintln!(
            "broken: {} ({}{line}): {}; see `yoi ticket doctor` ({})",
            b.id, b.path, b.reason, b.check
        );
    }
}

/// How many tickets `yoi ticket list` shows without `--limit` or `--all`: the first page a
/// person reads, and the API's default page. A workspace of years holds tens of thousands of
/// tickets; listing them all is asked for (`--all`), never the default.
pub const FIRST_PAGE: usize = 100;

/// Answered by the workspace's running server (whose index follows the files as they are
/// written), or from the database index caught up with the files when the command starts.
/// One page by default ([`FIRST_PAGE`], or `--limit`), its `next` cursor printed; `--all`
/// writes every ticket, each page as it arrives from the server.
pub fn list(env: &Env, a: &ListArgs) -> Result<(), CliError> {
    let filter = ListFilter {
        states: parse_states(a.state.as_deref())?,
        ready: a.ready,
        blocked: a.blocked,
    };
    let words: Vec<String> = a
        .search
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if a.limit == Some(0) {
        return Err(CliError::Usage("--limit must be at least 1".into()));
    }
    let limit = match a.all {
        true => None,
        false => Some(a.limit.unwrap_or(FIRST_PAGE)),
    };
    if a.all && a.json {
        return list_all_json(env, &filter, &words, a);
    }
    let mut tickets = Vec::new();
    let mut broken = Vec::new();
    let next = fetch(env, &filter, &words, a, limit, |page, b| {
        tickets.extend(page);
        broken.extend(b);
        Ok(())
    })?;
    report_broken(&broken);
    if a.json {
        output::json(&ListOutput {
            count: tickets.len(),
            tickets: &tickets,
            next,
            broken: &broken,
        });
        return Ok(());
    }
    if tickets.is_empty() {
        println!("no tickets");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = tickets
        .iter()
        .map(|t| {
            let blocked = match t.blockers.len() {
                0 => String::new(),
                n if a.blocked => {
                    t.blockers
                        .iter()
                        .map(|b| b.to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                        .to_string()
                        + &format!(" [{n}]")
                }
                n => format!("blocked by {n}"),
            };
            vec![
                t.id.to_string(),
                t.state.to_string(),
                t.updated_at.to_string(),
                output::clip(&t.title, 60),
                blocked,
            ]
        })
        .collect();
    output::table(&["ID", "STATE", "UPDATED", "TITLE", "BLOCKERS"], &rows);
    if let Some(n) = next {
        println!("more: --after {n} (or --all for every one)");
    }
    Ok(())
}

/// The tickets `limit` allows (`None`: all), page by page to `on_page` with the broken
/// tickets (named once, with the first page); where the next page starts, if the limit
/// stopped the reading.
fn fetch(
    env: &Env,
    filter: &ListFilter,
    words: &[String],
    a: &ListArgs,
    limit: Option<usize>,
    mut on_page: impl FnMut(Vec<TicketSummary>, Vec<BrokenTicket>) -> Result<(), CliError>,
) -> Result<Option<yoi_core::TicketId>, CliError> {
    match env.reader("yoi ticket list")? {
        Reader::Server(remote) => {
            remote.list_pages(filter, words, a.after.as_deref(), limit, on_page)
        }
        Reader::Files(local) => {
            let (ws, index) = (&local.0, &local.1);
            let after = a.after.as_deref().map(|q| ws.resolve(q)).transpose()?;
            let (tickets, next) = match (limit, &after) {
                (None, None) => (index.list_all(filter, words)?, None),
                _ => {
                    let page =
                        index.list(filter, words, after.as_ref(), limit.unwrap_or(usize::MAX))?;
                    (page.tickets, page.next)
                }
            };
            // Listed once, with the first page.
            let broken = match after {
                None => index.broken(ws)?,
                Some(_) => Vec::new(),
            };
            on_page(tickets, broken)?;
            Ok(next)
        }
    }
}

/// `--all --json`: every ticket written as its page arrives, never the whole list held at
/// once: `{"tickets": [...], "count": N, "broken": [...]}`, the object the paged list prints
/// (without `next`: there is no next page), its count after the tickets it counts.
fn list_all_json(
    env: &Env,
    filter: &ListFilter,
    words: &[String],
    a: &ListArgs,
) -> Result<(), CliError> {
    let mut failed = None;
    let mut broken = Vec::new();
    output::to_stdout(|out| {
        write!(out, "{{\n  \"tickets\": [")?;
        let mut count = 0usize;
        // A write that fails (a reader that stopped reading) ends the reading too.
        let mut write_error = None;
        let fetched = fetch(env, filter, words, a, None, |page, b| {
            broken.extend(b);
            for t in &page {
                let item = serde_json::to_string_pretty(t).expect("a ticket summary serializes");
                let sep = if count == 0 { "\n" } else { ",\n" };
                if let Err(e) = write!(out, "{sep}    {}", item.replace('\n', "\n    ")) {
                    write_error = Some(e);
                    return Err(CliError::Usage("the output was closed".into()));
                }
                count += 1;
            }
            Ok(())
        });
        if let Some(e) = write_error {
            return Err(e);
        }
        if let Err(e) = fetched {
            failed = Some(e);
            return Ok(());
        }
        let close = if count == 0 { "]" } else { "\n  ]" };
        write!(out, "{close},\n  \"count\": {count}")?;
        if !broken.is_empty() {
            let b = serde_json::to_string_pretty(&broken).expect("broken tickets serialize");
            write!(out, ",\n  \"broken\": {}", b.replace('\n', "\n  "))?;
        }
        writeln!(out, "\n}}")
    });
    if let Some(e) = failed {
        return Err(e);
    }
    report_broken(&broken);
    Ok(())
}

pub fn show(env: &Env, id: &str, as_json: bool) -> Result<(), CliError> {
    let (ws, index) = env.workspace_with_index("yoi ticket show")?;
    let t = yoi_engine::db::ticket_detail::ticket_detail(&ws, Some(&index), id)?;
    if as_json {
        output::json(&t);
        return Ok(());
    }
    println!("{}  {}", t.id, t.title);
    println!("state:    {}", t.state);
    println!("created:  {}", t.created_at);
    println!("updated:  {}", t.updated_at);
    if let Some(q) = &t.queued_by {
        println!(
            "queued:   by {} at {}",
            q,
            t.queued_at.map(|t| t.to_string()).unwrap_or_default()
        );
    }
    if let Some(target) = &t.target_ref {
        println!("target:   {target}");
    }
    if !t.missing_brief_sections.is_empty() {
        println!("brief:    missing {}", t.missing_brief_sections.join(", "));
    }
    if !t.body.is_empty() {
        println!("\n{}", t.body);
    }
    print_relations(&t.relations);
    if let Some(r) = &t.resolution {
        println!("\nresolution:\n{r}");
    }
    if !t.attempts.is_empty() {
        let rounds = t.attempts.iter().filter(|a| a.used_a_round()).count();
        let live = t
            .attempts
            .iter()
            .find(|a| a.status.is_live())
            .map(|a| a.step.as_str());
        let flow = t
            .running_flow
            .as_ref()
            .map(|f| format!("{} ({})", f.name, f.steps.join(" → ")))
            .unwrap_or_else(|| yoi_core::flow::BUILTIN.to_string());
        let limit = t
            .running_flow
            .as_ref()
            .map(|f| format!(" of {}", f.max_rounds))
            .unwrap_or_default();
        println!(
            "\nflow: {flow}; {}; fix rounds used: {rounds}{limit}",
            match live {
                Some(step) => format!("current step: {step}"),
                None => "no step live".to_string(),
            }
        );
        println!("attempts:");
        for a in &t.attempts {
            println!(
                "  {} {} #{} ({}, fence {}): {}{}",
                a.assignment,
                a.step,
                a.attempt,
                a.role,
                a.fence,
                a.status.as_str(),
                a.pod
                    .as_deref()
                    .map(|p| format!(" by {p}"))
                    .unwrap_or_default()
            );
            if let Some(c) = &a.commit {
                if a.step != "implement" {
                    println!("    at {}", &c[..c.len().min(12)]);
                }
            }
            for c in &a.checks {
                println!(
                    "    {} `{}` ({} ms)",
                    match (c.passed(), c.timed_out, c.exit_code) {
                        (true, _, _) => "passed".to_string(),
                        (_, true, _) => "timed out".to_string(),
                        (_, _, Some(code)) => format!("failed (exit {code})"),
                        _ => "killed".to_string(),
                    },
                    c.command,
                    c.duration_ms
                );
            }
            for m in &a.manual_checks {
                println!("    manual check: {m}");
            }
            if let Some(v) = a.verdict {
                println!("    verdict: {}", v.as_str());
            }
            for f in &a.findings {
                println!("    finding: {f}");
            }
            for x in &a.activations {
                println!(
                    "    skill {} ({})",
                    x.skill,
                    &x.digest[..x.digest.len().min(12)]
                );
            }
        }
    }
    let n = t.events.len();
    println!("\nthread ({n} event{}):", if n == 1 { "" } else { "s" });
    for e in &t.events {
        let extra: Vec<String> = e
            .attrs
            .iter()
            .filter(|(k, _)| {
                matches!(
                    k.as_str(),
                    "from" | "to" | "reason" | "action" | "kind" | "target"
                )
            })
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect();
        let line = format!(
            "  {}  {:<22} {}  {}",
            e.at.as_deref().unwrap_or("?"),
            e.kind,
            e.author.as_deref().unwrap_or("?"),
            extra.join(" ")
        );
        println!("{}", line.trim_end());
        if !e.body.is_empty()
            && !matches!(
                e.kind.as_str(),
                "state_changed" | "relation_changed" | "create"
            )
        {
            for line in e.body.lines() {
                println!("      {line}");
            }
        }
    }
    for issue in &t.thread_issues {
        println!("  warning: thread.md line {}: {:?}", issue.line, issue.kind);
    }
    Ok(())
}

fn print_relations(view: &RelationView) {
    if !view.relations.is_empty() {
        println!("\nrelations:");
        for r in &view.relations {
            let state = r
                .other_state
                .map(|s| s.to_string())
                .unwrap_or_else(|| "missing".into());
            println!("  {} {} ({state})", r.name, r.other);
        }
    }
    if !view.blockers.is_empty() {
        println!("\nblocked by:");
        for b in &view.blockers {
            println!("  {b}");
        }
    }
    for n in &view.notices {
        println!("notice: {n}");
    }
}

/// Answered from the database index.
pub fn blockers(env: &Env, id: &str, as_json: bool) -> Result<(), CliError> {
    let (ws, index) = env.workspace_with_index("yoi ticket blockers")?;
    let id = ws.resolve(id)?;
    let view = yoi_engine::db::ticket_detail::relation_view_indexed(&ws, Some(&index), &id)?;
    if as_json {
        output::json(&view);
        return Ok(());
    }
    if view.blockers.is_empty() {
        println!("{id} ({}) has no open blockers", view.state);
    } else {
        println!("{id} ({}) is blocked by:", view.state);
        for b in &view.blockers {
            println!("  {b}");
        }
    }
    match &view.queue_refusal {
        None => println!("queue guard: the blockers allow queueing"),
        Some(r) => println!("queue guard: refuses, {r}"),
    }
    for n in &view.notices {
        println!("notice: {n}");
    }
    Ok(())
}

/// `yoi ticket cost ID`: the ledger from the database (reported costs, estimates from
/// `[prices]`, and attempts that could be priced by neither).
pub fn cost(env: &Env, id: &str, as_json: bool) -> Result<(), CliError> {
    let (ws, index) = env.workspace_with_index("yoi ticket cost")?;
    let r = yoi_engine::cost::ticket_cost(&ws, &index, id)?;
    if as_json {
        output::json(&r);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = r
        .attempts
        .iter()
        .map(|a| {
            vec![
                format!("{} #{}", a.step, a.attempt),
                a.role.clone(),
                a.status.clone(),
                a.agent.clone().unwrap_or_else(|| "-".into()),
                format!("{:.1}s", a.wall_ms as f64 / 1000.0),
                format!("{}/{}/{}", a.tokens_in, a.tokens_out, a.tokens_cached),
                match a.cost_usd {
                    Some(c) => format!(
                        "${c:.4} ({})",
                        serde_json::to_value(a.cost_source)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default()
                    ),
                    None => "-".into(),
                },
            ]
        })
        .collect();
    if rows.is_empty() {
        println!("{}: no attempts with usage yet", r.ticket);
        return Ok(());
    }
    output::table(
        &[
            "ATTEMPT",
            "ROLE",
            "STATUS",
            "AGENT",
            "WALL",
            "TOKENS IN/OUT/CACHED",
            "COST",
        ],
        &rows,
    );
    println!(
        "total: {:.1}s, {} tokens in, {} out, {} cached, ${:.4} (${:.4} reported, ${:.4} estimated{})",
        r.wall_ms as f64 / 1000.0,
        r.tokens_in,
        r.tokens_out,
        r.tokens_cached,
        r.cost_usd,
        r.reported_usd,
        r.estimated_usd,
        if r.unpriced_attempts > 0 {
            format!("; {} attempt(s) unpriced: add [prices.\"MODEL\"] to .yoi/workspace.toml", r.unpriced_attempts)
        } else {
            String::new()
        }
    );
    Ok(())
}
