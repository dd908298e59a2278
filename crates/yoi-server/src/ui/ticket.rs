//! The ticket page `/tickets/{id}` and its live fragment: the header with the actions valid now
//! (a disabled one says which rule blocks it and every one shows its CLI command), the brief,
//! the IntentPacket frozen at acceptance against the brief now, routing, relations with what
//! finishing the ticket unblocks, attempts, worktree and branch health, the cost ledger and the
//! thread. Everything is read through the same store and engine functions as the API.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Deserialize;
use yoi_core::state::{Operation, State as TicketState};
use yoi_core::{Principal, TicketId};
use yoi_db::ticket_detail::{AttemptDetail, TicketDetail};
use yoi_db::Waiting;
use yoi_engine::cost::CostReport;
use yoi_engine::person_ops::{Dashboard, Needs, PersonOp};
use yoi_engine::routing::view::RoutingView;
use yoi_store::worktrees::WorktreeRow;

use super::markdown;
use super::page::{age, html, state_label, Chrome, LiveMark, UiError};
use super::session::Viewer;
use crate::auth::now;
use crate::state::AppState;

/// Thread events per page.
pub const THREAD_PAGE: usize = 50;

/// One action button.
#[derive(Debug, Clone)]
pub struct Action {
    /// The form's `action` value (`mark-ready`, `queue`, …, `retry`).
    pub name: &'static str,
    pub label: &'static str,
    /// Why it cannot be used now; `None` when it can.
    pub blocked: Option<String>,
    pub cli: String,
    /// The form asks for a reason (`reason`) or a resolution (`resolution`).
    pub asks: Option<&'static str>,
    /// Blocked only because the ticket is in another state (listed apart, folded).
    pub other_state: bool,
}

/// The actions of a ticket in `state` for `who`, each with the rule that blocks it.
pub fn actions(d: &TicketDetail, routing: &RoutingView, who: &Principal) -> Vec<Action> {
    let id = d.id.as_str();
    let mut out = Vec::new();
    let state_ops = PersonOp::ALL
        .into_iter()
        .filter(|p| p.spec().dashboard != Dashboard::Absent)
        .filter_map(|p| Some((p, p.spec().transition?)));
    for (p, op) in state_ops {
        let spec = p.spec();
        let refusal = op.check(d.state, who).err();
        let other_state = matches!(
            refusal,
            Some(yoi_core::state::TransitionError::WrongState { .. })
        );
        let mut blocked = refusal.map(|e| e.to_string());
        if blocked.is_none() {
            blocked = match op {
                Operation::MarkReady if !d.missing_brief_sections.is_empty() => Some(format!(
                    "the brief is missing {}; add {} first",
                    d.missing_brief_sections.join(", "),
                    if d.missing_brief_sections.len() == 1 {
                        "it"
                    } else {
                        "them"
                    }
                )),
                Operation::Queue if !d.relations.can_queue => d
                    .relations
                    .queue_refusal
                    .clone()
                    .or_else(|| Some("an open blocker must finish first".into())),
                _ => None,
            };
        }
        out.push(Action {
            name: p.action(),
            label: spec.label,
            blocked,
            cli: cli_example(p, id),
            asks: asks(spec.needs),
            other_state,
        });
    }
    let retryable = yoi_store::ops::RETRY_STATES.contains(&d.state);
    let retry = PersonOp::Retry;
    out.push(Action {
        name: retry.action(),
        label: if d.state == TicketState::Inprogress {
            "Retry the step"
        } else {
            retry.spec().label
        },
        blocked: (!retryable).then(|| {
            format!(
                "retry tries a queued or in-progress ticket again (closing its circuit); this one is {}",
                d.state
            )
        }),
        cli: cli_example(retry, id),
        asks: asks(retry.spec().needs),
        other_state: !retryable,
    });
    // A queued ticket whose circuit is closed needs no retry; retrying just routes it again.
    if !routing.circuit.open && d.state == TicketState::Queued {
        if let Some(a) = out.last_mut() {
            a.label = "Route again";
        }
    }
    out
}

/// The command a person would type instead of the button (`yoi ticket close ID --resolution "…"`).
fn cli_example(op: PersonOp, id: &str) -> String {
    op.usage()
        .unwrap_or_default()
        .replace("ID", id)
        .replace(" R", " \"…\"")
}

/// The field a button's form asks for.
fn asks(needs: Needs) -> Option<&'static str> {
    match needs {
        Needs::Reason => Some("reason"),
        Needs::Resolution => Some("resolution"),
        Needs::Nothing | Needs::Body => None,
    }
}

/// One event of the thread, rendered.
pub struct ThreadEvent {
    pub anchor: String,
    pub kind: String,
    pub author: String,
    pub at: String,
    pub heading: String,
    pub html: String,
    pub facts: Vec<(String, String)>,
}

/// One commit of the ticket's branch.
pub struct Commit {
    pub id: String,
    pub summary: String,
    pub author: String,
}

/// An attempt with the end of its log.
pub struct AttemptView {
    pub a: AttemptDetail,
    /// The last lines of its log, when it has one.
    pub log: Option<String>,
    /// A pod holds its claim now.
    pub running: bool,
}

/// Bytes of an attempt log the page shows (its end).
const LOG_TAIL_BYTES: u64 = 8 * 1024;

/// The last [`LOG_TAIL_BYTES`] of a log, from a line start.
fn tail_of(path: &std::path::Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let start = len.saturating_sub(LOG_TAIL_BYTES);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    Some(match (start > 0, text.find('\n')) {
        (true, Some(i)) => text[i + 1..].to_string(),
        _ => text,
    })
}

/// One section of the brief whose frozen and current texts differ.
pub struct Drift {
    pub section: String,
    pub frozen: String,
    pub now: String,
}

pub struct Packet {
    pub hash: String,
    pub flow: Option<String>,
    pub html: String,
    pub drift: Vec<Drift>,
}

#[derive(Template)]
#[template(path = "ticket.html")]
pub struct TicketPage {
    pub chrome: Chrome,
    pub csrf: String,
    pub t: TicketView,
    pub op: String,
}

#[derive(Template)]
#[template(path = "fragments/ticket.html")]
pub struct TicketFragment {
    pub csrf: String,
    pub t: TicketView,
    pub op: String,
}

/// Everything the ticket page shows.
pub struct TicketView {
    pub d: TicketDetail,
    /// Actions blocked only by the state, folded away below the others.
    pub other_state_actions: usize,
    pub state_label: &'static str,
    pub age: String,
    pub brief_html: String,
    pub actions: Vec<Action>,
    pub routing: RoutingView,
    pub unblocks: Vec<Waiting>,
    pub packet: Option<Packet>,
    pub attempts: Vec<AttemptView>,
    pub worktrees: Vec<WorktreeRow>,
    /// The branch's commits since its base (newest first, at most 50), when accepted.
    pub commits: Vec<Commit>,
    /// Some attempt is running (the page follows its log).
    pub running: bool,
    pub cost: Option<CostReport>,
    pub events: Vec<ThreadEvent>,
    pub events_total: usize,
    pub events_from: usize,
    pub earlier: Option<usize>,
    pub later: Option<usize>,
    pub is_planning: bool,
    /// Open inbox entries of this ticket: the "needs you" banner.
    pub needs: Vec<yoi_engine::inbox::InboxEntry>,
    /// The pull request, when the ticket has one or is on its way to one (docs/forge.md).
    pub forge: Option<ForgeView>,
}

/// The ticket page's pull-request section: link, head, the checks table, reviews and why the
/// gate is or is not open. Links the forge reported are shown only when they are http(s).
pub struct ForgeView {
    pub number: Option<u64>,
    pub url: Option<String>,
    pub state: String,
    pub badge: &'static str,
    pub badge_class: &'static str,
    pub head: Option<String>,
    pub merged: Option<String>,
    /// (name, conclusion, SHA, link).
    pub checks: Vec<(String, &'static str, String, Option<String>)>,
    pub reviews: Vec<(String, String, String)>,
    /// `Some(open)` when the gate's answer for the head is recorded, with its reasons.
    pub gate: Option<bool>,
    pub gate_lines: Vec<String>,
}

fn web_link(u: &Option<String>) -> Option<String> {
    u.as_ref()
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
        .cloned()
}

fn forge_view(st: yoi_engine::assignments::pr::ForgeStatus) -> ForgeView {
    use yoi_core::forge::Badge as B;
    let mut gate_lines: Vec<String> = Vec::new();
    if let Some(g) = &st.gate {
        gate_lines.extend(
            g.blockers
                .iter()
                .map(yoi_engine::assignments::pr::blocker_text),
        );
        gate_lines.extend(g.notes.iter().map(|n| format!("note: {n}")));
    }
    ForgeView {
        number: st.number,
        url: web_link(&st.url),
        state: st.state.clone(),
        badge: st.badge.label(),
        badge_class: match st.badge {
            B::ChecksFailing | B::Closed => "bad",
            B::ChangesRequested => "warn",
            B::ReadyToMerge | B::Merged => "ok",
            _ => "info",
        },
        head: st.remote_head.clone(),
        merged: st.merged_sha.clone(),
        checks: st
            .checks
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    c.conclusion.as_str(),
                    c.sha.clone(),
                    web_link(&c.url),
                )
            })
            .collect(),
        reviews: st
            .reviews
            .iter()
            .map(|r| (r.user.clone(), r.state.clone(), r.commit.clone()))
            .collect(),
        gate: st.gate.as_ref().map(|g| g.open),
        gate_lines,
    }
}

impl TicketView {
    /// The latest decision's prose (without its data block), rendered.
    pub fn decision_html(&self) -> String {
        match &self.routing.latest_decision {
            Some(l) => markdown::render(
                l.body
                    .split(yoi_core::decision::DATA_FENCE)
                    .next()
                    .unwrap_or(""),
            ),
            None => String::new(),
        }
    }

    /// What the router would decide now, rendered.
    pub fn would_html(&self) -> String {
        self.routing
            .would_decide
            .as_ref()
            .map(|w| markdown::render(&w.rendered))
            .unwrap_or_default()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct TicketQuery {
    /// First thread event shown (0-based); default: the last page.
    pub from: Option<usize>,
}

/// Read everything the page shows (blocking: files and git).
fn load(
    s: &AppState,
    ws: &yoi_store::Workspace,
    query: &str,
    from: Option<usize>,
    who: &Principal,
    in_progress: usize,
) -> Result<TicketView, UiError> {
    let store = UiError::from_store;
    let d = yoi_db::ticket_detail::ticket_detail(ws, Some(&s.index), query).map_err(store)?;
    let max = s.ws.config.router.max_inprogress;
    let routing =
        yoi_engine::routing::view::routing_view_for(ws, &d.id, max, in_progress, &d.relations)
            .map_err(store)?;
    let packet = ws.read_frozen_packet(&d.id).map_err(store)?.map(|f| {
        let frozen = f.packet.render_markdown();
        let now = yoi_core::packet::IntentPacket::from_body(&d.body).render_markdown();
        Packet {
            hash: f.content_hash.clone(),
            flow: f.flow.as_ref().map(|f| f.name.clone()),
            html: markdown::render(&frozen),
            drift: drift(&frozen, &now),
        }
    });
    let worktrees = yoi_store::worktrees::ticket_worktree(ws, &d.id)
        .map_err(store)?
        .into_iter()
        .collect();
    let accepted = yoi_store::latest_accepted(d.plan.iter());
    let commits = match (
        yoi_git::discover(ws.root()).ok().map(|r| r.workdir),
        accepted.and_then(|a| Some((a.base_commit.clone()?, a.branch.clone()?))),
    ) {
        (Some(repo), Some((base, branch))) => {
            yoi_git::commit_log(&repo, &base, &format!("refs/heads/{branch}"), 50)
                .unwrap_or_default()
                .into_iter()
                .map(|c| Commit {
                    id: c.id,
                    summary: c.summary,
                    author: c.author,
                })
                .collect()
        }
        _ => Vec::new(),
    };
    let attempts: Vec<AttemptView> = d
        .attempts
        .iter()
        .map(|a| AttemptView {
            log: tail_of(&ws.attempt_log(d.id.as_str(), &a.assignment)),
            running: a.status == yoi_db::AssignmentStatus::Claimed,
            a: a.clone(),
        })
        .collect();
    let running = attempts.iter().any(|a| a.running);
    let cost = (!d.attempts.is_empty())
        .then(|| yoi_engine::cost::ticket_cost(ws, &s.index, d.id.as_str()).ok())
        .flatten();
    let total = d.events.len();
    let from = from.unwrap_or(total.saturating_sub(THREAD_PAGE)).min(total);
    let events = d.events[from..(from + THREAD_PAGE).min(total)]
        .iter()
        .enumerate()
        .map(|(i, e)| ThreadEvent {
            anchor: e
                .id
                .as_ref()
                .map(|id| format!("e-{id}"))
                .unwrap_or_else(|| format!("e-at-{}", from + i)),
            kind: e.kind.clone(),
            author: e.author.clone().unwrap_or_default(),
            at: e.at.clone().unwrap_or_default(),
            heading: e
                .heading
                .clone()
                .unwrap_or_else(|| e.kind.replace('_', " ")),
            html: markdown::render(&e.body),
            facts: e
                .attrs
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "id" | "author" | "at"))
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| v.to_string()),
                    )
                })
                .collect(),
        })
        .collect();
    let unblocks = s.index.waiting_on(&d.id, 50).map_err(store)?;
    let since = d
        .events
        .iter()
        .rev()
        .find(|e| e.kind == "state_changed")
        .and_then(|e| e.at.clone())
        .unwrap_or_else(|| d.created_at.to_string());
    let actions = actions(&d, &routing, who);
    let needs = yoi_engine::inbox::of_ticket(&s.index, &d.id).map_err(store)?;
    let forge = yoi_engine::assignments::pr::status(ws, &s.index, d.id.as_str())
        .ok()
        .filter(|st| !st.events.is_empty())
        .map(forge_view);
    Ok(TicketView {
        needs,
        forge,
        other_state_actions: actions.iter().filter(|a| a.other_state).count(),
        state_label: state_label(d.state),
        age: age(&since, now().unix_millis()),
        brief_html: markdown::render(&d.body),
        actions,
        attempts,
        is_planning: d.state == TicketState::Planning,
        routing,
        unblocks,
        packet,
        worktrees,
        commits,
        running,
        cost,
        events,
        events_total: total,
        events_from: from,
        earlier: (from > 0).then(|| from.saturating_sub(THREAD_PAGE)),
        later: (from + THREAD_PAGE < total).then_some(from + THREAD_PAGE),
        d,
    })
}

/// The sections (by `## ` heading) whose text differs between two packets.
fn drift(frozen: &str, now: &str) -> Vec<Drift> {
    fn sections(text: &str) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for line in text.lines() {
            if let Some(h) = line.strip_prefix("## ") {
                out.push((h.trim().to_string(), String::new()));
            } else if let Some(last) = out.last_mut() {
                last.1.push_str(line);
                last.1.push('\n');
            }
        }
        out
    }
    let a = sections(frozen);
    let b = sections(now);
    let mut names: Vec<&String> = a.iter().chain(b.iter()).map(|(h, _)| h).collect();
    names.dedup();
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for name in names {
        if !seen.insert(name.clone()) {
            continue;
        }
        let get = |v: &[(String, String)]| {
            v.iter()
                .find(|(h, _)| h == name)
                .map(|(_, t)| t.trim().to_string())
                .unwrap_or_default()
        };
        let (f, n) = (get(&a), get(&b));
        if f != n {
            out.push(Drift {
                section: name.clone(),
                frozen: f,
                now: n,
            });
        }
    }
    out
}

async fn view(
    s: &AppState,
    v: &Viewer,
    id: String,
    from: Option<usize>,
) -> Result<TicketView, UiError> {
    let in_progress = s
        .db()
        .count_by_state()
        .await
        .map_err(UiError::from_store)?
        .get(&TicketState::Inprogress)
        .copied()
        .unwrap_or(0);
    let who = v.caller.principal.clone();
    let st = s.clone();
    s.blocking("ticket page", move |ws| {
        load(
            &st,
            ws,
            &id,
            from,
            &who,
            usize::try_from(in_progress).unwrap_or(0),
        )
    })
    .await?
}

pub async fn page(
    State(s): State<AppState>,
    v: Viewer,
    Path(id): Path<String>,
    Query(q): Query<TicketQuery>,
) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let t = match view(&s, &v, id.clone(), q.from).await {
        Ok(t) => t,
        Err(e) => return broken_page(&s, &v, id).await?.ok_or(e),
    };
    let mut chrome =
        Chrome::new(&s, &v, mark, format!("{} {}", t.d.id, t.d.title), "tickets").await?;
    chrome.live_ticket = Some(t.d.id.to_string());
    Ok(html(&TicketPage {
        csrf: chrome.csrf.clone(),
        chrome,
        t,
        op: ulid::Ulid::new().to_string(),
    }))
}

#[derive(Template)]
#[template(path = "ticket_broken.html")]
pub struct BrokenTicketPage {
    pub chrome: Chrome,
    pub b: yoi_store::tickets::BrokenTicket,
    pub findings: Vec<yoi_core::finding::Finding>,
}

/// The page of a ticket yoi cannot read, when `id` names one: which file is broken, and what
/// doctor finds in its folder. `None` when the ticket is not broken (the caller's error
/// stands).
async fn broken_page(s: &AppState, v: &Viewer, id: String) -> Result<Option<Response>, UiError> {
    let mark = LiveMark::take(s).await?;
    let found = s
        .read(move |ws| {
            let Ok(id) = ws.resolve(&id) else {
                return Ok(None);
            };
            Ok(ws
                .diagnose(&id)
                .map(|b| (b, yoi_engine::doctor::ticket_findings(ws, &id))))
        })
        .await?;
    let Some((b, findings)) = found else {
        return Ok(None);
    };
    let chrome = Chrome::new(s, v, mark, format!("{} (broken)", b.id), "tickets").await?;
    Ok(Some(html(&BrokenTicketPage {
        chrome,
        b,
        findings,
    })))
}

/// `GET /fragments/ticket/{id}`: the page's live sections, as the page renders them.
pub async fn fragment(
    State(s): State<AppState>,
    v: Viewer,
    Path(id): Path<String>,
    Query(q): Query<TicketQuery>,
) -> Result<Response, UiError> {
    let t = view(&s, &v, id, q.from).await?;
    Ok(html(&TicketFragment {
        csrf: v.csrf.clone(),
        t,
        op: ulid::Ulid::new().to_string(),
    }))
}

/// The id a path names, resolved (for redirects after actions).
pub async fn resolve(s: &AppState, query: String) -> Result<TicketId, UiError> {
    s.read(move |ws| ws.resolve(&query))
        .await
        .map_err(UiError::from)
}
