//! A person invokes a workflow on a ticket: `yoi workflow run SLUG --ticket ID`, or a comment
//! whose first line is `/<slug>` (from the CLI, the API or the dashboard — all of them call
//! [`comment`], which is the one place a comment is read as an invocation).
//!
//! Only a person's comment is ever read as one: a pod's or the orchestrator's comment that
//! starts with `/` is kept as the text it is, so no agent and no text an agent copied can start
//! a workflow. A person's `/<slug>` that names no usable workflow is refused with the reason
//! and nothing is written, so a typo is never posted as a comment that silently did nothing.
//!
//! An agent invokes only `auto_invoke: true` workflows, only for its own live attempt, with the
//! token of its claim ([`for_agent`]); the answer is the workflow's text to follow at once, and
//! the invocation is recorded on the ticket.

use yoi_core::principal::PrincipalKind;
use yoi_store::ops::{self, CommentRequest, InvokeRequest};
use yoi_store::{Ctx, Outcome, StoreError, Workspace};

use super::{lookup, WorkflowError};

/// The invocation a comment's first line asks for: `(slug, arguments)`, when the line is `/`
/// followed by a slug-like word (lowercase letters, digits, hyphens) and then nothing or a space.
/// `/usr/bin` and `/ 42` are not invocations.
pub fn parse_invocation(text: &str) -> Option<(&str, &str)> {
    let first = text.trim_start_matches(['\n', '\r']).lines().next()?;
    let rest = first.strip_prefix('/')?;
    let end = rest.find([' ', '\t']).unwrap_or(rest.len());
    let (word, args) = rest.split_at(end);
    let slug_like = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    slug_like.then(|| (word, args.trim()))
}

/// What a comment will write, decided before anything is written: a plain comment, or an
/// invocation of a workflow that was found usable by this person. A frontend that writes in a
/// group (the server) decides with [`plan_comment`] and writes with [`write`]; [`comment`]
/// does both.
#[derive(Debug, Clone)]
pub enum Planned {
    Comment(CommentRequest),
    Invoke(InvokeRequest),
}

/// Check an invocation of `slug` by `who`: a person, a usable workflow, `user_invocable`.
/// `comment` is the person's words (built from `args` when `None`).
pub fn plan_invoke(
    ws: &Workspace,
    who: PrincipalKind,
    slug: &str,
    args: &str,
    comment: Option<&str>,
) -> Result<InvokeRequest, WorkflowError> {
    if who != PrincipalKind::Human {
        return Err(WorkflowError::PersonOnly { kind: who });
    }
    let wf = lookup(ws, slug)?;
    if !wf.user_invocable {
        return Err(WorkflowError::NotUserInvocable { slug: wf.slug });
    }
    let comment = match comment {
        Some(c) => c.to_string(),
        None if args.trim().is_empty() => format!("/{slug}"),
        None => format!("/{slug} {}", args.trim()),
    };
    Ok(InvokeRequest {
        slug: wf.slug,
        role: wf.role,
        comment,
    })
}

/// Decide what comment `req` by `who` writes: a person's `/<slug> …` comment is an invocation
/// (refused when the workflow cannot be invoked); everything else is the comment as written.
pub fn plan_comment(
    ws: &Workspace,
    who: PrincipalKind,
    req: &CommentRequest,
) -> Result<Planned, WorkflowError> {
    if req.kind == "comment" && who == PrincipalKind::Human {
        if let Some((slug, args)) = parse_invocation(&req.body) {
            return Ok(Planned::Invoke(plan_invoke(
                ws,
                who,
                slug,
                args,
                Some(&req.body),
            )?));
        }
    }
    Ok(Planned::Comment(req.clone()))
}

/// Write what [`plan_comment`] or [`plan_invoke`] decided.
pub fn write(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    planned: &Planned,
) -> Result<Outcome, StoreError> {
    match planned {
        Planned::Comment(req) => ops::comment(ws, ctx, query, req),
        Planned::Invoke(req) => ops::invoke_workflow(ws, ctx, query, req),
    }
}

/// A comment, read as an invocation when a person's `comment` starts with `/<slug>`.
pub fn comment(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &CommentRequest,
) -> Result<Outcome, WorkflowError> {
    let planned = plan_comment(ws, ctx.principal.kind, req)?;
    Ok(write(ws, ctx, query, &planned)?)
}

/// What an agent's invocation answers: the text to follow in its attempt.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct AgentInvoked {
    pub slug: String,
    /// The bodies of what the workflow requires, then its own body.
    pub text: String,
    /// The event recorded on the ticket.
    pub outcome: Outcome,
}

/// The agent of attempt `own` (its claim token's assignment) invokes workflow `slug`: refused
/// unless the workflow is valid and `auto_invoke: true` and the attempt is live. Skill bodies
/// it requires are activations recorded against the attempt.
pub fn for_agent(
    ws: &Workspace,
    index: &yoi_db::DbIndex,
    ctx: &Ctx,
    slug: &str,
    own: &str,
) -> Result<AgentInvoked, WorkflowError> {
    let set = super::set(ws);
    let wf = super::lookup_in(&set, slug)?;
    if !wf.auto_invoke {
        return Err(WorkflowError::NotAutoInvoke { slug: wf.slug });
    }
    let a = index
        .assignment(own)?
        .filter(|a| a.status == yoi_db::AssignmentStatus::Claimed)
        .ok_or_else(|| WorkflowError::AttemptOver { id: own.into() })?;
    let outcome = ops::record_agent_invocation(ws, ctx, &a.ticket, &wf.slug, &a.id)?;
    let text = super::carry::render_workflow(ws, index, &set, &wf, &a.ticket, &a.id, ctx.now);
    Ok(AgentInvoked {
        slug: wf.slug,
        text,
        outcome,
    })
}
