//! Every dashboard action: a POST form, checked for the session's CSRF token, run through the
//! same store and engine operation as the API and the CLI (so every guard holds), and answered
//! with `303 See Other` back to the page, where the outcome (or the guard's refusal) shows once.
//! Each form carries an operation id rendered into the page, so submitting it twice replays
//! the first result instead of acting twice.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};
use yoi_core::state::State as TicketState;
use yoi_engine::person_ops::PersonOp;
use yoi_store::ops::{self, CommentRequest, EditRequest, RelationRequest, TransitionRequest};
use yoi_store::Ctx;

use super::page::{back_to, Flash, UiError};
use super::session::{self, Viewer};
use crate::auth::now;
use crate::state::AppState;

/// A urlencoded form body, in order, with repeated names kept (bulk forms send `id` once per
/// selected ticket).
pub struct Form(Vec<(String, String)>);

impl Form {
    /// The pairs of `body`; a body that is not urlencoded reads as an empty form (its CSRF
    /// token is then missing, so it is refused). Forms write CRLF line ends; the store writes LF.
    pub fn parse(body: &[u8]) -> Form {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(body).unwrap_or_default();
        Form(
            pairs
                .into_iter()
                .map(|(k, v)| (k, v.replace("\r\n", "\n")))
                .collect(),
        )
    }

    /// The first value of `name`, trimmed; `None` when absent or empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// The first value of `name` exactly as sent (bodies keep their whitespace).
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
            .collect()
    }
}

/// The operation context of a form: its principal, now, and its operation id.
fn ctx(v: &Viewer, form: &Form) -> Ctx {
    v.caller.ctx(form.get("op").map(str::to_string))
}

/// A form posted about one ticket: parsed, its CSRF token checked, its ticket resolved.
struct TicketForm {
    form: Form,
    id: String,
    ctx: Ctx,
}

async fn ticket_form(
    s: &AppState,
    v: &Viewer,
    id: String,
    body: &[u8],
) -> Result<TicketForm, UiError> {
    let form = Form::parse(body);
    v.check_csrf(form.get("csrf"))?;
    let id = super::ticket::resolve(s, id).await?.to_string();
    Ok(TicketForm {
        ctx: ctx(v, &form),
        form,
        id,
    })
}

/// The message of an operation on ticket `id`: `ok` or the guard's refusal.
fn outcome<T>(id: &str, result: Result<T, crate::error::ApiError>, ok: &str) -> Flash {
    match result {
        Ok(_) => Flash::ok(format!("{id}: {ok}")),
        Err(e) => Flash::error(format!("{id}: {}", e.message)),
    }
}

/// Answer a form: remember the outcome for the next page and go back.
pub(super) fn done(s: &AppState, v: &Viewer, flash: Flash, to: String) -> Response {
    s.ui.flashes.push(&v.session, flash);
    Redirect::to(&to).into_response()
}

/// Run one state operation named by a form's `action` on ticket `id` (the actions are the
/// dashboard's entries of `yoi_engine::person_ops`).
async fn transition(
    s: &AppState,
    ctx: Ctx,
    id: String,
    action: &str,
    req: TransitionRequest,
) -> Result<String, String> {
    let Some(op) = PersonOp::from_action(action) else {
        return Err(format!("`{action}` is not an action"));
    };
    let verb = op.spec().done;
    let tid = id.clone();
    let result = match (op, op.transition_fn()) {
        (_, Some(f)) => s.op(move |ws| f(ws, &ctx, &tid, &req)).await,
        (PersonOp::Retry, None) => {
            s.op(move |ws| ops::retry(ws, &ctx, &tid, req.reason.as_deref()))
                .await
        }
        (other, None) => return Err(format!("`{}` has no button", other.action())),
    };
    match result {
        Ok(out) if out.replayed => Ok(format!("{id}: already {verb} (this form was sent before)")),
        Ok(out) => {
            let mut m = format!("{id}: {verb}");
            for n in out.notes {
                m.push_str(". ");
                m.push_str(&n);
            }
            Ok(m)
        }
        Err(e) => Err(format!("{id}: {}", e.message)),
    }
}

fn request(form: &Form) -> Result<TransitionRequest, UiError> {
    let expected = form
        .get("expected_state")
        .map(|s| {
            s.parse::<TicketState>()
                .map_err(|e| UiError::BadRequest(e.to_string()))
        })
        .transpose()?;
    Ok(TransitionRequest {
        reason: form.get("reason").map(str::to_string),
        resolution: form.get("resolution").map(str::to_string),
        expected,
    })
}

/// `POST /tickets/{id}/act`: one state operation.
pub async fn act(
    State(s): State<AppState>,
    v: Viewer,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, UiError> {
    let TicketForm { form, id, ctx } = ticket_form(&s, &v, id, &body).await?;
    let action = form.get("action").unwrap_or("").to_string();
    let req = request(&form)?;
    let back = back_to(form.get("back"), &format!("/tickets/{id}"));
    let flash = match transition(&s, ctx, id, &action, req).await {
        Ok(m) => Flash::ok(m),
        Err(m) => Flash::error(m),
    };
    Ok(done(&s, &v, flash, back))
}

/// `POST /tickets/bulk`: one state operation on every selected ticket, each with its own
/// result.
pub async fn bulk(State(s): State<AppState>, v: Viewer, body: Bytes) -> Result<Response, UiError> {
    let form = Form::parse(&body);
    v.check_csrf(form.get("csrf"))?;
    let action = form.get("action").unwrap_or("").to_string();
    if !PersonOp::bulk().any(|op| op.action() == action) {
        let offered: Vec<&str> = PersonOp::bulk().map(PersonOp::action).collect();
        return Err(UiError::BadRequest(format!(
            "`{action}` is not a bulk action ({})",
            offered.join(", ")
        )));
    }
    let back = back_to(form.get("back"), "/");
    let ids = form.all("id");
    if ids.is_empty() {
        return Ok(done(
            &s,
            &v,
            Flash::error("select at least one ticket first"),
            back,
        ));
    }
    let op = form.get("op").unwrap_or("").to_string();
    for id in ids.into_iter().take(500) {
        let mut ctx = v.caller.ctx(None);
        if !op.is_empty() {
            ctx = ctx.with_op(Some(format!("{op}-{id}")));
        }
        let req = TransitionRequest {
            reason: form.get("reason").map(str::to_string),
            resolution: form.get("resolution").map(str::to_string),
            expected: None,
        };
        let flash = match transition(&s, ctx, id.to_string(), &action, req).await {
            Ok(m) => Flash::ok(m),
            Err(m) => Flash::error(m),
        };
        s.ui.flashes.push(&v.session, flash);
    }
    Ok(Redirect::to(&back).into_response())
}

/// `POST /tickets/{id}/comment`.
pub async fn comment(
    State(s): State<AppState>,
    v: Viewer,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, UiError> {
    let TicketForm { form, id, ctx } = ticket_form(&s, &v, id, &body).await?;
    let text = form.raw("body").unwrap_or("").to_string();
    comment_text(&s, &v, ctx, id, text).await
}

/// Write the person's comment `text` on ticket `id` (resolved here when it is a suffix), as
/// the comment form does: a first line `/<slug>` invokes that workflow, or is refused with the
/// reason and nothing written. The workflows page's invoke form comes here too.
pub(super) async fn comment_text(
    s: &AppState,
    v: &Viewer,
    ctx: Ctx,
    id: String,
    text: String,
) -> Result<Response, UiError> {
    let id = super::ticket::resolve(s, id).await?.to_string();
    let req = CommentRequest {
        kind: "comment".into(),
        body: text,
    };
    let tid = id.clone();
    // A person's `/<slug>` comment invokes a workflow (docs/workflows.md).
    let who = ctx.principal.kind;
    let planned = s
        .blocking("workflows", move |ws| {
            yoi_engine::workflows::invoke::plan_comment(ws, who, &req)
        })
        .await
        .and_then(|p| p.map_err(crate::error::ApiError::from));
    let done_text = match &planned {
        Ok(yoi_engine::workflows::invoke::Planned::Invoke(r)) => {
            format!("workflow /{} invoked", r.slug)
        }
        _ => "comment added".to_string(),
    };
    let result = match planned {
        Ok(planned) => {
            s.grouped(move |ws| yoi_engine::workflows::invoke::write(ws, &ctx, &tid, &planned))
                .await
        }
        Err(e) => Err(e),
    };
    let flash = outcome(&id, result, &done_text);
    Ok(done(s, v, flash, format!("/tickets/{id}#thread")))
}

/// `POST /tickets/{id}/answer`: a person's answer to the question an agent asked (the store's
/// guard refuses it when no question is open).
pub async fn answer(
    State(s): State<AppState>,
    v: Viewer,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, UiError> {
    let TicketForm { form, id, ctx } = ticket_form(&s, &v, id, &body).await?;
    let message = form.raw("message").unwrap_or("").to_string();
    let tid = id.clone();
    let result = s.op(move |ws| ops::answer(ws, &ctx, &tid, &message)).await;
    let flash = outcome(&id, result, "answered; the step is handed out again");
    Ok(done(&s, &v, flash, format!("/tickets/{id}")))
}

/// `POST /tickets/{id}/budget`: add USD and/or tokens to the ticket's budget, with a note; a
/// ticket held over its budget goes on at once (docs/budgets.md).
pub async fn budget(
    State(s): State<AppState>,
    v: Viewer,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, UiError> {
    let TicketForm { form, id, ctx } = ticket_form(&s, &v, id, &body).await?;
    let usd = match form.get("add_usd") {
        None => None,
        Some(u) => Some(u.parse::<f64>().map_err(|_| {
            UiError::BadRequest(format!("`{u}` is not an amount of USD (such as 2.50)"))
        })?),
    };
    let tokens = match form.get("add_tokens") {
        None => None,
        Some(t) => Some(
            t.parse::<u64>()
                .map_err(|_| UiError::BadRequest(format!("`{t}` is not a number of tokens")))?,
        ),
    };
    let note = form.raw("note").map(str::to_string);
    let tid = id.clone();
    let result = s
        .op(move |ws| ops::add_budget(ws, &ctx, &tid, usd, tokens, note.as_deref()))
        .await;
    if result.is_ok() {
        // The hold lifts now, not at the next flow sweep.
        s.read_indexed(yoi_engine::spend::release_held).await?;
        s.flow_wake.notify_one();
    }
    let flash = outcome(&id, result, "budget raised");
    Ok(done(&s, &v, flash, format!("/tickets/{id}")))
}

/// `POST /tickets/{id}/edit`: title and body (planning only; the store's guard says so).
pub async fn edit(
    State(s): State<AppState>,
    v: Viewer,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, UiError> {
    let TicketForm { form, id, ctx } = ticket_form(&s, &v, id, &body).await?;
    let req = EditRequest {
        title: form.get("title").map(str::to_string),
        body: form.raw("body").map(str::to_string),
    };
    let tid = id.clone();
    let result = s.op(move |ws| ops::edit(ws, &ctx, &tid, &req)).await;
    let flash = outcome(&id, result, "saved");
    Ok(done(&s, &v, flash, format!("/tickets/{id}")))
}

/// `POST /tickets/{id}/relations`: add (`change=add`) or remove (`change=remove`) one.
pub async fn relation(
    State(s): State<AppState>,
    v: Viewer,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, UiError> {
    let TicketForm { form, id, ctx } = ticket_form(&s, &v, id, &body).await?;
    let kind_name = form.get("kind").unwrap_or("").to_string();
    let kind = yoi_core::relation::RelationKind::ALL
        .into_iter()
        .find(|k| k.as_str() == kind_name)
        .ok_or_else(|| UiError::BadRequest(format!("`{kind_name}` is not a relation kind")))?;
    let target = form.get("target").unwrap_or("").to_string();
    let tid = id.clone();
    let result = if form.get("change") == Some("remove") {
        let target = target.clone();
        s.op(move |ws| ops::remove_relation(ws, &ctx, &tid, kind, &target))
            .await
    } else {
        let req = RelationRequest {
            kind,
            target: target.clone(),
            note: form.get("note").map(str::to_string),
        };
        s.op(move |ws| ops::add_relation(ws, &ctx, &tid, &req))
            .await
    };
    let flash = outcome(&id, result, "relations updated");
    Ok(done(&s, &v, flash, format!("/tickets/{id}#relations")))
}

/// `POST /skills/proposals/{id}/{approve|reject}` (people only: a session is a human's).
pub async fn decide_proposal(
    State(s): State<AppState>,
    v: Viewer,
    Path((id, decision)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, UiError> {
    let form = Form::parse(&body);
    v.check_csrf(form.get("csrf"))?;
    let who = v.caller.principal.author();
    let reason = form.get("reason").unwrap_or("").to_string();
    let pid = id.clone();
    let result = match decision.as_str() {
        "approve" => {
            s.blocking("approve", move |ws| {
                yoi_engine::skills::approve(ws, &pid, &who, now())
            })
            .await?
        }
        "reject" => {
            s.blocking("reject", move |ws| {
                yoi_engine::skills::reject(ws, &pid, &who, &reason, now())
            })
            .await?
        }
        other => return Err(UiError::NotFound(format!("no decision `{other}`"))),
    };
    s.changed.send_modify(|n| *n += 1);
    let flash = match result {
        Ok(p) => Flash::ok(format!(
            "proposal {id} ({}): {}",
            p.name,
            if decision == "approve" {
                "approved; the skill is in the catalog"
            } else {
                "rejected"
            }
        )),
        Err(e) => Flash::error(format!(
            "proposal {id}: {}",
            crate::error::ApiError::from(e).message
        )),
    };
    Ok(done(&s, &v, flash, "/skills#proposals".into()))
}

/// `POST /logout`: end this session.
pub async fn logout(
    State(s): State<AppState>,
    v: Viewer,
    body: Bytes,
) -> Result<Response, UiError> {
    let form = Form::parse(&body);
    v.check_csrf(form.get("csrf"))?;
    s.db()
        .revoke_token(&v.caller.token.id, now().unix_millis())
        .await
        .map_err(UiError::from_store)?;
    Ok((
        [(header::SET_COOKIE, session::cookie(None, 0))],
        Redirect::to("/login"),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::Form;

    #[test]
    fn a_form_keeps_repeated_names_decodes_values_and_normalises_line_ends() {
        let f = Form::parse(b"id=A&id=B&body=two+words%0D%0Aand%20more&csrf=&note=%E2%9C%93");
        assert_eq!(f.all("id"), ["A", "B"]);
        assert_eq!(f.raw("body"), Some("two words\nand more"));
        assert_eq!(f.get("csrf"), None, "an empty value is absent");
        assert_eq!(f.get("note"), Some("✓"));
        assert_eq!(f.get("missing"), None);
    }
}
