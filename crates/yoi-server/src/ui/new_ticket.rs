//! Writing a brief in the dashboard: `GET /tickets/new` (a title, a brief prefilled with every
//! section's heading, dependencies picked from the open tickets), `POST /tickets/new` (preview
//! and check, create, or create and mark ready), and `POST /tickets/{id}/check` (the same
//! preview and check of an edit to a planning ticket before it is saved).
//!
//! Everything is server-rendered: the preview is the body rendered as the ticket page renders
//! it, and the lint is `yoi_core::brief::lint`, the rule `mark-ready` applies. With JavaScript
//! (`web/static/brief.js`) the same check follows typing (`POST /tickets/new/preview`, the
//! check's fragment alone) and the dependency field searches the open tickets
//! (`GET /fragments/ticket-picks?q=`); nothing is written by either. "Create and mark
//! ready" is offered only once a check showed every required section filled; the store's guard
//! still decides (a brief changed after its check is refused there, and says so). Creating runs
//! the same `ops::create` and `ops::mark_ready` as the API and the CLI, with the form's
//! operation id, so a form sent twice creates one ticket.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use yoi_core::brief::{self, Lint};
use yoi_core::state::State as TicketState;
use yoi_store::ops::{self, CreateRequest, TransitionRequest};
use yoi_store::query::ListFilter;

use super::actions::Form;
use super::page::{html, short, Chrome, Flash, LiveMark, UiError};
use super::session::Viewer;
use crate::state::AppState;

/// An open ticket a new one may depend on.
pub struct Pick {
    pub id: String,
    pub short: String,
    pub title: String,
}

#[derive(Template)]
#[template(path = "new_ticket.html")]
pub struct NewTicketPage {
    pub chrome: Chrome,
    pub d: Draft,
    pub picks: Vec<Pick>,
}

/// What the form holds.
pub struct Draft {
    /// The planning ticket whose edit is checked, or `None` for a new ticket.
    pub editing: Option<String>,
    pub title: String,
    pub body: String,
    /// Dependencies as typed: ids or unique suffixes, separated by spaces or commas.
    pub depends_on: String,
    /// The result of "Preview and check", once asked.
    pub checked: Option<Checked>,
    pub op: String,
}

/// A preview and the brief's lint.
pub struct Checked {
    pub lint: Lint,
    pub html: String,
}

impl Checked {
    fn of(body: &str) -> Checked {
        Checked {
            lint: brief::lint(body),
            html: super::markdown::render(body),
        }
    }
}

/// The check and the preview alone, for the page's script.
#[derive(Template)]
#[template(path = "fragments/brief_check.html")]
pub struct BriefCheckFragment {
    pub c: Checked,
}

impl BriefCheckFragment {
    pub fn headings(&self, sections: &[brief::Section]) -> String {
        headings(sections)
    }
}

/// Open tickets matching what was typed in the dependency field.
#[derive(Template)]
#[template(path = "fragments/picks.html")]
pub struct PicksFragment {
    pub picks: Vec<Pick>,
}

fn headings(sections: &[brief::Section]) -> String {
    sections
        .iter()
        .map(|s| s.heading())
        .collect::<Vec<_>>()
        .join(", ")
}

impl NewTicketPage {
    /// The address of the page's own script.
    pub fn brief_js(&self) -> &'static str {
        super::assets::BRIEF_JS_URL.as_str()
    }

    /// Headings, comma-separated, for the page.
    pub fn headings(&self, sections: &[brief::Section]) -> String {
        headings(sections)
    }
}

/// The open tickets (newest first, at most 200) offered as dependencies.
async fn picks(s: &AppState) -> Result<Vec<Pick>, UiError> {
    search(s, &[], 200).await
}

/// The open tickets whose title or brief holds every word of `words` (all of them when there
/// are none), newest first, at most `limit`.
async fn search(s: &AppState, words: &[String], limit: usize) -> Result<Vec<Pick>, UiError> {
    let filter = ListFilter {
        states: Some(vec![
            TicketState::Planning,
            TicketState::Ready,
            TicketState::Queued,
            TicketState::Inprogress,
        ]),
        ready: false,
        blocked: false,
    };
    let page = s
        .db()
        .list_ordered(&filter, words, None, limit, true)
        .await
        .map_err(UiError::from_store)?;
    Ok(page
        .tickets
        .into_iter()
        .map(|t| Pick {
            short: short(t.id.as_str()),
            id: t.id.to_string(),
            title: t.title,
        })
        .collect())
}

async fn render(s: &AppState, v: &Viewer, d: Draft, title: &str) -> Result<Response, UiError> {
    let mark = LiveMark::take(s).await?;
    let chrome = Chrome::new(s, v, mark, title, "tickets").await?;
    let picks = picks(s).await?;
    Ok(html(&NewTicketPage { chrome, d, picks }))
}

fn blank(editing: Option<String>, title: String, body: String) -> Draft {
    Draft {
        editing,
        title,
        body,
        depends_on: String::new(),
        checked: None,
        op: ulid::Ulid::new().to_string(),
    }
}

/// `GET /tickets/new`.
pub async fn page(State(s): State<AppState>, v: Viewer) -> Result<Response, UiError> {
    let page = blank(None, String::new(), brief::template());
    render(&s, &v, page, "New ticket").await
}

/// `POST /tickets/new`: `intent` is `check` (render the preview and the lint, keep what was
/// typed), `create` (a planning ticket) or `create_ready` (created, then marked ready).
pub async fn submit(
    State(s): State<AppState>,
    v: Viewer,
    body: Bytes,
) -> Result<Response, UiError> {
    let form = Form::parse(&body);
    v.check_csrf(form.get("csrf"))?;
    let title = form.raw("title").unwrap_or("").to_string();
    let text = form.raw("body").unwrap_or("").to_string();
    let depends_on = form.raw("depends_on").unwrap_or("").to_string();
    let op = form.get("op").map(str::to_string);
    let intent = form.get("intent").unwrap_or("check");
    if intent == "check" {
        let mut page = blank(None, title, text);
        page.checked = Some(Checked::of(&page.body));
        page.depends_on = depends_on;
        if let Some(op) = op {
            page.op = op;
        }
        return render(&s, &v, page, "New ticket").await;
    }
    let ready = intent == "create_ready";
    let req = CreateRequest {
        title,
        body: text,
        depends_on: depends_on
            .split([' ', ',', '\n'])
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string)
            .collect(),
    };
    let ctx = v.caller.ctx(op.clone());
    let created = s.op(move |ws| ops::create(ws, &ctx, &req)).await;
    let out = match created {
        Ok(out) => out,
        Err(e) => {
            // Nothing was written: the form again, as typed, with the reason.
            s.ui.flashes.push(&v.session, Flash::error(e.message));
            let mut page = blank(None, form.raw("title").unwrap_or("").into(), {
                form.raw("body").unwrap_or("").into()
            });
            page.depends_on = form.raw("depends_on").unwrap_or("").into();
            page.checked = Some(Checked::of(&page.body));
            return render(&s, &v, page, "New ticket").await;
        }
    };
    let id = out.ticket.to_string();
    let mut said = format!("{}: created in planning", short(&id));
    if ready {
        let ctx = v.caller.ctx(op.map(|o| format!("{o}-ready")));
        let tid = id.clone();
        let req = TransitionRequest::default();
        match s.op(move |ws| ops::mark_ready(ws, &ctx, &tid, &req)).await {
            Ok(_) => said = format!("{}: created and marked ready", short(&id)),
            Err(e) => {
                s.ui.flashes.push(
                    &v.session,
                    Flash::error(format!(
                        "{}: created, but not marked ready: {}",
                        short(&id),
                        e.message
                    )),
                );
                return Ok(Redirect::to(&format!("/tickets/{id}")).into_response());
            }
        }
    }
    s.ui.flashes.push(&v.session, Flash::ok(said));
    Ok(Redirect::to(&format!("/tickets/{id}")).into_response())
}

/// `POST /tickets/{id}/check`: the edit form of a planning ticket, previewed and checked
/// before it is saved (nothing is written).
pub async fn check_edit(
    State(s): State<AppState>,
    v: Viewer,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, UiError> {
    let form = Form::parse(&body);
    v.check_csrf(form.get("csrf"))?;
    let id = super::ticket::resolve(&s, id).await?.to_string();
    let mut page = blank(
        Some(id.clone()),
        form.raw("title").unwrap_or("").to_string(),
        form.raw("body").unwrap_or("").to_string(),
    );
    page.checked = Some(Checked::of(&page.body));
    if let Some(op) = form.get("op") {
        page.op = op.to_string();
    }
    render(&s, &v, page, &format!("Edit {}", short(&id))).await
}

/// `POST /tickets/new/preview`: the check and the preview of the form's `body`, as "Preview
/// and check" shows them (the fragment only; nothing is written).
pub async fn preview(
    State(_s): State<AppState>,
    v: Viewer,
    body: Bytes,
) -> Result<Response, UiError> {
    let form = Form::parse(&body);
    v.check_csrf(form.get("csrf"))?;
    let c = Checked::of(form.raw("body").unwrap_or(""));
    Ok(html(&BriefCheckFragment { c }))
}

/// The query of `GET /fragments/ticket-picks`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct PicksQuery {
    pub q: String,
}

/// `GET /fragments/ticket-picks?q=WORDS`: at most 20 open tickets whose title or brief holds
/// every word, newest first, each a button that adds its id to the dependency field.
pub async fn picks_fragment(
    State(s): State<AppState>,
    _v: Viewer,
    Query(q): Query<PicksQuery>,
) -> Result<Response, UiError> {
    let words: Vec<String> =
        q.q.split_whitespace()
            .take(8)
            .map(str::to_lowercase)
            .collect();
    let picks = if words.is_empty() {
        Vec::new()
    } else {
        search(&s, &words, 20).await?
    };
    Ok(html(&PicksFragment { picks }))
}
