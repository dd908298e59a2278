//! `GET /workflows` and `GET /workflows/{slug}`: the workflows people write in
//! `.yoi/workflow/`, each with its flags, what it requires and how often people invoked it, the
//! files that are skipped, and the offers yoi made from the history, each with its diff and the
//! controls to accept or reject it. A workflow's page invokes it on a ticket.
//!
//! Every control calls what the API and the CLI call: invoking writes the person's `/<slug>`
//! comment through the comment action (`actions::comment_text`), deciding an offer calls
//! `yoi_engine::workflows::offers::{accept, reject}` with the session's person — a dashboard
//! session is always a person's, so no pod or agent reaches these forms.

use std::collections::BTreeMap;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use yoi_engine::skill_format::offer::{Offer, OfferStatus};
use yoi_engine::skill_format::workflow::{Workflow, WorkflowFile};
use yoi_engine::workflows::{self, offers, Usage};

use super::actions::{self, Form};
use super::page::{html, Chrome, Flash, LiveMark, UiError};
use super::pages::DiffLine;
use super::session::Viewer;
use crate::auth::now;
use crate::state::AppState;

/// One workflow as a row: the workflow and how often people invoked it.
pub struct Line {
    pub w: Workflow,
    pub usage: Usage,
}

/// One offer with its diff split into lines.
pub struct OfferView {
    pub o: Offer,
    pub diff: Vec<DiffLine>,
    pub pending: bool,
}

#[derive(Template)]
#[template(path = "workflows.html")]
pub struct WorkflowsPage {
    pub chrome: Chrome,
    pub lines: Vec<Line>,
    pub skipped: Vec<WorkflowFile>,
    pub offers: Vec<OfferView>,
    pub pending: usize,
}

/// The unified diff of an offer as lines: `+` added, `-` removed, ` ` the rest (headers and
/// hunk lines included, as they are).
fn diff_view(diff: &str) -> Vec<DiffLine> {
    diff.lines()
        .map(|l| {
            let sign = match l.chars().next() {
                Some('+') if !l.starts_with("+++") => '+',
                Some('-') if !l.starts_with("---") => '-',
                _ => ' ',
            };
            let text = if sign == ' ' {
                l.to_string()
            } else {
                l[1..].to_string()
            };
            DiffLine { sign, text }
        })
        .collect()
}

pub async fn page(State(s): State<AppState>, v: Viewer) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let usage = s.read_indexed(|_, index| workflows::usage(index)).await?;
    let (list, offers) = s
        .blocking("workflows page", |ws| {
            (workflows::list(ws), offers::list(ws).map(|l| l.offers))
        })
        .await?;
    let offers = offers.map_err(crate::error::ApiError::from)?;
    let lines = list
        .workflows
        .into_iter()
        .map(|w| Line {
            usage: usage.get(&w.slug).cloned().unwrap_or_default(),
            w,
        })
        .collect();
    // Pending offers first (oldest first: the longest-waiting on top), then decided ones,
    // newest first.
    let (mut pending, mut decided): (Vec<Offer>, Vec<Offer>) = offers
        .into_iter()
        .partition(|o| o.status == OfferStatus::Pending);
    decided.reverse();
    decided.truncate(20);
    let count = pending.len();
    pending.extend(decided);
    let offers = pending
        .into_iter()
        .map(|o| OfferView {
            diff: diff_view(&o.diff),
            pending: o.status == OfferStatus::Pending,
            o,
        })
        .collect();
    let chrome = Chrome::new(&s, &v, mark, "Workflows", "workflows").await?;
    Ok(html(&WorkflowsPage {
        chrome,
        lines,
        skipped: list.skipped,
        offers,
        pending: count,
    }))
}

#[derive(Template)]
#[template(path = "workflow.html")]
pub struct WorkflowPage {
    pub chrome: Chrome,
    pub w: Workflow,
    pub usage: Usage,
    pub op: String,
}

pub async fn show(
    State(s): State<AppState>,
    v: Viewer,
    Path(slug): Path<String>,
) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let usage: BTreeMap<String, Usage> = s.read_indexed(|_, index| workflows::usage(index)).await?;
    let w = s
        .blocking("workflow page", move |ws| workflows::lookup(ws, &slug))
        .await?
        .map_err(crate::error::ApiError::from)?;
    let chrome = Chrome::new(&s, &v, mark, format!("Workflow /{}", w.slug), "workflows").await?;
    Ok(html(&WorkflowPage {
        usage: usage.get(&w.slug).cloned().unwrap_or_default(),
        chrome,
        w,
        op: ulid::Ulid::new().to_string(),
    }))
}

/// `POST /workflows/{slug}/invoke` (`ticket`, `words`): the person's comment `/<slug> words` on
/// the ticket, exactly as if they had typed it in the ticket's comment form.
pub async fn invoke(
    State(s): State<AppState>,
    v: Viewer,
    Path(slug): Path<String>,
    body: Bytes,
) -> Result<Response, UiError> {
    let form = Form::parse(&body);
    v.check_csrf(form.get("csrf"))?;
    let ticket = form.get("ticket").unwrap_or("").trim().to_string();
    if ticket.is_empty() {
        return Ok(actions::done(
            &s,
            &v,
            Flash::error("name the ticket to invoke it on"),
            format!("/workflows/{slug}"),
        ));
    }
    let words = form.raw("words").unwrap_or("").trim().to_string();
    let text = if words.is_empty() {
        format!("/{slug}")
    } else {
        format!("/{slug} {words}")
    };
    let ctx = v.caller.ctx(form.get("op").map(str::to_string));
    actions::comment_text(&s, &v, ctx, ticket, text).await
}

/// `POST /workflows/offers/{id}/accept|reject` (`reason` for a rejection).
pub async fn decide_offer(
    State(s): State<AppState>,
    v: Viewer,
    Path((id, decision)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, UiError> {
    let form = Form::parse(&body);
    v.check_csrf(form.get("csrf"))?;
    let who = v.caller.principal.author();
    let reason = form.get("reason").unwrap_or("").to_string();
    let oid = id.clone();
    let result = match decision.as_str() {
        "accept" => {
            s.blocking("accept offer", move |ws| {
                offers::accept(ws, &oid, &who, now())
            })
            .await?
        }
        "reject" => {
            s.blocking("reject offer", move |ws| {
                offers::reject(ws, &oid, &who, &reason, now())
            })
            .await?
        }
        other => return Err(UiError::NotFound(format!("no decision `{other}`"))),
    };
    s.changed.send_modify(|n| *n += 1);
    let flash = match result {
        Ok(o) if decision == "accept" => {
            Flash::ok(format!("offer {id}: accepted; {} is written", o.target))
        }
        Ok(o) => Flash::ok(format!("offer {id}: rejected; {} is not written", o.target)),
        Err(e) => Flash::error(format!(
            "offer {id}: {}",
            crate::error::ApiError::from(e).message
        )),
    };
    Ok(actions::done(&s, &v, flash, format!("/workflows#o-{id}")))
}
