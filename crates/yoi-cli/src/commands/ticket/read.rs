//! `list`, `show`, `blockers`.

use serde::Serialize;
use yoi_core::state::State;
use yoi_core::thread::ThreadIssue;
use yoi_store::query::{self, ListFilter, RelationView, TicketSummary};

use crate::cli::ListArgs;
use crate::context::Env;
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
}

/// Answered from the database index (caught up with the files when the command starts).
pub fn list(env: &Env, a: &ListArgs) -> Result<(), CliError> {
    let (ws, index) = env.workspace_with_index("yoi ticket list")?;
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
    let after = a.after.as_deref().map(|q| ws.resolve(q)).transpose()?;
    let limit = match a.limit {
        Some(0) => return Err(CliError::Usage("--limit must be at least 1".into())),
        Some(n) => n,
        None => 100_000,
    };
    let (tickets, next) = if a.limit.is_none() && after.is_none() {
        (index.block_on(index.db.list_all(&filter, &words))?, None)
    } else {
        let page = index.block_on(index.db.list(&filter, &words, after.as_ref(), limit))?;
        (page.tickets, page.next)
    };
    if a.json {
        output::json(&ListOutput {
            count: tickets.len(),
            tickets: &tickets,
            next,
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
        println!("more: --after {n}");
    }
    Ok(())
}

#[derive(Serialize)]
struct ShowOutput<'a> {
    id: &'a yoi_core::TicketId,
    title: &'a str,
    state: State,
    created_at: yoi_core::Timestamp,
    updated_at: yoi_core::Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    readiness: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    risk_flags: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    queued_by: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    queued_at: Option<yoi_core::Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<&'a str>,
    extra_keys: Vec<&'a str>,
    body: &'a str,
    missing_brief_sections: Vec<&'static str>,
    relations: &'a RelationView,
    plan: &'a [yoi_core::plan::PlanRecord],
    #[serde(skip_serializing_if = "Option::is_none")]
    resolution: Option<&'a str>,
    events: Vec<EventOut<'a>>,
    thread_issues: &'a [ThreadIssue],
}

#[derive(Serialize)]
struct EventOut<'a> {
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    author: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<&'a str>,
    attrs: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    heading: Option<&'a str>,
    body: &'a str,
}

pub fn show(env: &Env, id: &str, as_json: bool) -> Result<(), CliError> {
    let ws = env.workspace("yoi ticket show")?;
    let id = ws.resolve(id)?;
    let t = ws.read_ticket(&id)?;
    let view = query::relation_view(&ws, &id)?;
    let item = &t.item;
    let missing: Vec<&'static str> = yoi_core::brief::missing_required(item.body_text())
        .iter()
        .map(|s| s.heading())
        .collect();
    if as_json {
        let events = t
            .thread
            .events
            .iter()
            .map(|e| EventOut {
                kind: e.kind.as_str(),
                id: e.id(),
                author: e.author(),
                at: e.get("at"),
                attrs: e
                    .attrs
                    .iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "id" | "author" | "at"))
                    .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                    .collect(),
                heading: e.heading.as_deref(),
                body: &e.body,
            })
            .collect();
        output::json(&ShowOutput {
            id: &id,
            title: &item.title,
            state: item.state,
            created_at: item.created_at,
            updated_at: item.updated_at,
            readiness: item.readiness.as_deref(),
            risk_flags: item.risk_flags.as_deref(),
            queued_by: item.queued_by.as_deref(),
            queued_at: item.queued_at,
            target_ref: item.effective_target_ref(),
            flow: item.flow.as_deref(),
            priority: item.priority.as_deref(),
            extra_keys: item.extra.iter().map(|(k, _)| k.as_str()).collect(),
            body: item.body_text(),
            missing_brief_sections: missing,
            relations: &view,
            plan: &t.plan,
            resolution: t.resolution.as_deref(),
            events,
            thread_issues: &t.thread.issues,
        });
        return Ok(());
    }
    println!("{}  {}", id, item.title);
    println!("state:    {}", item.state);
    println!("created:  {}", item.created_at);
    println!("updated:  {}", item.updated_at);
    if let Some(q) = &item.queued_by {
        println!(
            "queued:   by {} at {}",
            q,
            item.queued_at.map(|t| t.to_string()).unwrap_or_default()
        );
    }
    if let Some(t) = item.effective_target_ref() {
        println!("target:   {t}");
    }
    if !missing.is_empty() {
        println!("brief:    missing {}", missing.join(", "));
    }
    if !item.body_text().is_empty() {
        println!("\n{}", item.body_text());
    }
    print_relations(&view);
    if let Some(r) = &t.resolution {
        println!("\nresolution:\n{r}");
    }
    let n = t.thread.events.len();
    println!("\nthread ({n} event{}):", if n == 1 { "" } else { "s" });
    for e in &t.thread.events {
        let extra: Vec<String> = e
            .attrs
            .iter()
            .filter(|(k, _)| {
                matches!(
                    k.as_str(),
                    "from" | "to" | "reason" | "action" | "kind" | "target"
                )
            })
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let line = format!(
            "  {}  {:<22} {}  {}",
            e.get("at").unwrap_or("?"),
            e.kind.as_str(),
            e.author().unwrap_or("?"),
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
    for issue in &t.thread.issues {
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
    let view = match index.block_on(index.db.relation_view(&id))? {
        Some(v) => v,
        // Not indexable (its item.md is unreadable): say why from the files.
        None => query::relation_view(&ws, &id)?,
    };
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
