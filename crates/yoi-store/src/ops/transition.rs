//! The state operations, one function per edge of the state machine (DESIGN §4):
//! `mark_ready`, `queue`, `return_to_planning`, `accept`, `complete`, `close`, `cancel`,
//! `reopen`. They share one compare-and-swap path ([`run`]): under the lock, re-read the item,
//! answer a replay, check the expected state, the edge and the principal, run the operation's
//! own guard, then append `state_changed` (plus any companion event) and rewrite item.md.
//! `cancel` of an in-progress ticket also deals with its worktree, after that write (see
//! [`super::worktree`]).

use serde_json::{json, Value};
use yoi_core::brief;
use yoi_core::item::Item;
use yoi_core::plan::{AcceptedPlan, PlanKind, PlanRecord};
use yoi_core::resolution::render_resolution;
use yoi_core::state::{Operation, State};
use yoi_core::thread::{Event, EventKind};
use yoi_core::TicketId;

use super::edit::fresh;
use super::worktree_disposal::{self, Disposal};
use super::{
    append_events, fingerprint, finish, one_line, replay_of, stamp, write_item, Ctx, Outcome,
};
use crate::error::StoreError;
use crate::tickets::{PLAN, RESOLUTION};
use crate::workspace::Workspace;

#[derive(Debug, Clone, Default)]
pub struct TransitionRequest {
    /// Why; required for return-to-planning and reopen.
    pub reason: Option<String>,
    /// Resolution text; required for close and cancel.
    pub resolution: Option<String>,
    /// Compare-and-swap: refuse unless the ticket is in this state.
    pub expected: Option<State>,
}

/// What the orchestrator made before it accepts a ticket.
#[derive(Debug, Clone)]
pub struct AcceptEvidence {
    pub branch: String,
    pub worktree: String,
    pub base_commit: String,
    pub assignment: String,
    /// The rendered routing decision (Markdown) recorded with the acceptance.
    pub decision: String,
}

/// What the service merged before it completes a ticket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeEvidence {
    pub target_ref: String,
    pub before: String,
    pub after: String,
    pub commit: String,
}

/// Extra effects of one operation, decided inside the lock.
#[derive(Default)]
struct Effects {
    before: Vec<Event>,
    after: Vec<Event>,
    resolution: Option<String>,
    remove_resolution: bool,
    plan: Option<PlanRecord>,
    body: String,
    /// Notes for the outcome, known before anything is written.
    notes: Vec<String>,
    /// What to do with the ticket's worktree once the state change is written.
    worktree: Option<Disposal>,
}

fn run(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    op: Operation,
    req: &TransitionRequest,
    payload: Value,
    apply: impl FnOnce(&Workspace, &TicketId, &mut Item) -> Result<Effects, StoreError>,
) -> Result<Outcome, StoreError> {
    let reason = req
        .reason
        .as_deref()
        .map(|r| one_line("reason", r, MAX_REASON_CHARS))
        .transpose()?;
    let _lock = ws.lock()?;
    let id = ws.resolve(query)?;
    let mut item = ws.read_item(&id)?;
    let thread = ws.read_thread(&id)?;
    let fp = fingerprint(
        op.as_str(),
        id.as_str(),
        &json!({ "reason": reason, "resolution": req.resolution, "payload": payload }),
    );
    if let Some(o) = replay_of(ws, &thread, ctx, &fp, &id, op.as_str())? {
        return Ok(o);
    }
    if let Some(expected) = req.expected {
        if expected != item.state {
            return Err(StoreError::StaleState {
                ticket: id,
                expected,
                found: item.state,
            });
        }
    }
    let from = item.state;
    let to = op
        .check(from, &ctx.principal)
        .map_err(|source| StoreError::Transition {
            ticket: id.clone(),
            source,
        })?;
    let effects = apply(ws, &id, &mut item)?;
    let reason = reason.unwrap_or_else(|| op.default_reason().to_string());
    let changed = Event::new(EventKind::StateChanged, &effects.body)
        .with_attr("from", from.as_str())
        .with_attr("to", to.as_str())
        .with_attr("reason", reason)
        .with_attr("field", "state");
    let changed = stamp(changed, ctx, &fp);
    let mut events: Vec<Event> = effects
        .before
        .into_iter()
        .map(|e| {
            stamp(
                e,
                &Ctx {
                    op: None,
                    ..ctx.clone()
                },
                "",
            )
        })
        .collect();
    events.push(changed.clone());
    events.extend(effects.after.into_iter().map(|e| {
        stamp(
            e,
            &Ctx {
                op: None,
                ..ctx.clone()
            },
            "",
        )
    }));
    append_events(ws, &id, &events)?;
    if let Some(rec) = &effects.plan {
        let path = ws.path_of(&id, PLAN);
        ws.writes
            .append_sync(&path, rec.render_line().as_bytes())
            .map_err(|e| StoreError::io(&path, e))?;
    }
    let res_path = ws.path_of(&id, RESOLUTION);
    if let Some(text) = &effects.resolution {
        ws.writes
            .atomic_write(&res_path, text.as_bytes())
            .map_err(|e| StoreError::io(&res_path, e))?;
    } else if effects.remove_resolution && res_path.exists() {
        std::fs::remove_file(&res_path).map_err(|e| StoreError::io(&res_path, e))?;
    }
    item.state = to;
    item.updated_at = ctx.now;
    write_item(ws, &id, &item)?;
    let mut outcome = fresh(&id, op.as_str(), &changed);
    outcome.notes = effects.notes;
    if let Some(disposal) = effects.worktree {
        outcome.notes.extend(disposal.carry_out());
    }
    Ok(finish(ws, ctx, &fp, outcome))
}

fn required(field: &str, value: &Option<String>) -> Result<String, StoreError> {
    match value.as_deref().map(str::trim) {
        Some(v) if !v.is_empty() => Ok(v.to_string()),
        _ => Err(StoreError::bad_input(
            field,
            "is required for this operation",
        )),
    }
}

/// Which blocker rule applies: queueing tolerates blockers already queued or in progress
/// (they run first, in order); accepting tolerates none.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Gate {
    Queue,
    Accept,
}

/// The one blocker gate. Every entry point that queues or accepts goes through here. With the
/// ticket's own relations.json damaged its blockers are unknown, so the gate refuses with the
/// file's error; a broken blocker ([`Workspace::diagnose`]) counts in no known state, which
/// blocks.
fn blocker_gate(ws: &Workspace, id: &TicketId, gate: Gate) -> Result<(), StoreError> {
    ws.read_relations(id)?;
    let graph = ws.read_graph()?;
    let waits: Vec<TicketId> = graph.waits_on(id).into_iter().map(|w| w.0).collect();
    let readable: Vec<&TicketId> = waits.iter().filter(|w| ws.diagnose(w).is_none()).collect();
    let states = ws.states_of(readable)?;
    let blockers: Vec<_> = graph
        .blockers(id, |t| states.get(t).copied())
        .into_iter()
        .filter(|b| gate == Gate::Accept || !b.state.is_some_and(State::is_in_flight))
        .collect();
    if blockers.is_empty() {
        Ok(())
    } else {
        Err(StoreError::Blocked {
            ticket: id.clone(),
            blockers,
        })
    }
}

fn brief_guard(id: &TicketId, item: &Item) -> Result<(), StoreError> {
    let missing = brief::missing_required(item.body_text());
    if missing.is_empty() {
        Ok(())
    } else {
        Err(StoreError::BriefIncomplete {
            ticket: id.clone(),
            missing: missing.iter().map(|s| s.heading().to_string()).collect(),
        })
    }
}

/// planning -> ready: the brief must have Intent, Acceptance criteria and Validation.
pub fn mark_ready(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &TransitionRequest,
) -> Result<Outcome, StoreError> {
    run(
        ws,
        ctx,
        query,
        Operation::MarkReady,
        req,
        Value::Null,
        |_, id, item| {
            brief_guard(id, item)?;
            Ok(Effects {
                body:
                    "Marked ready: the brief names its intent, acceptance criteria and validation."
                        .into(),
                ..Effects::default()
            })
        },
    )
}

/// ready -> queued (humans only): refused while a blocker is neither finished nor in flight.
pub fn queue(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &TransitionRequest,
) -> Result<Outcome, StoreError> {
    run(
        ws,
        ctx,
        query,
        Operation::Queue,
        req,
        Value::Null,
        |ws, id, item| {
            blocker_gate(ws, id, Gate::Queue)?;
            item.queued_by = Some(ctx.principal.author());
            item.queued_at = Some(ctx.now);
            Ok(Effects {
                body: format!("Queued for routing by {}.", ctx.principal.author()),
                ..Effects::default()
            })
        },
    )
}

/// ready/queued/inprogress -> planning, naming the missing decision. An in-progress ticket
/// keeps its branch and worktree (what it produced is never thrown away); its open assignments
/// are cancelled by the index when the state changes, so no pod result lands afterwards.
pub fn return_to_planning(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &TransitionRequest,
) -> Result<Outcome, StoreError> {
    let reason = required("reason", &req.reason)?;
    run(
        ws,
        ctx,
        query,
        Operation::ReturnToPlanning,
        req,
        Value::Null,
        |_, _, item| {
            item.queued_by = None;
            item.queued_at = None;
            Ok(Effects {
                body: format!("Returned to planning: {reason}"),
                ..Effects::default()
            })
        },
    )
}

/// queued -> inprogress (orchestrator only), after the worktree and first assignment exist.
pub fn accept(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &TransitionRequest,
    ev: &AcceptEvidence,
) -> Result<Outcome, StoreError> {
    let payload = json!({ "branch": ev.branch, "worktree": ev.worktree, "base": ev.base_commit, "assignment": ev.assignment });
    run(
        ws,
        ctx,
        query,
        Operation::Accept,
        req,
        payload,
        |ws, id, item| {
            brief_guard(id, item)?;
            blocker_gate(ws, id, Gate::Accept)?;
            let decision = Event::new(EventKind::Decision, &ev.decision)
                .with_attr("decision", "implementation_ready");
            let plan = PlanRecord {
                id: format!("plan-{}", super::new_ulid(ctx.precise)),
                ticket_id: id.clone(),
                kind: PlanKind::AcceptedPlan,
                related_ticket: None,
                note: None,
                accepted_plan: Some(AcceptedPlan {
                    summary: format!("Accepted on {} from {}", ev.branch, ev.base_commit),
                    branch: Some(ev.branch.clone()),
                    worktree: Some(ev.worktree.clone()),
                    role_plan: Some(format!("assignment {}", ev.assignment)),
                    base_commit: Some(ev.base_commit.clone()),
                }),
                author: ctx.principal.author(),
                at: ctx.now,
            };
            plan.validate(id, 0)
                .map_err(|e| StoreError::bad_input("accepted plan", e.to_string()))?;
            Ok(Effects {
                before: vec![decision],
                plan: Some(plan),
                body: format!(
                    "Accepted: branch `{}` at `{}`, worktree `{}`, assignment `{}`.",
                    ev.branch, ev.base_commit, ev.worktree, ev.assignment
                ),
                ..Effects::default()
            })
        },
    )
}

/// inprogress -> done (service only), with the merge recorded in the same append.
pub fn complete(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &TransitionRequest,
    ev: &MergeEvidence,
) -> Result<Outcome, StoreError> {
    let payload = json!({ "target": ev.target_ref, "before": ev.before, "after": ev.after, "commit": ev.commit });
    run(
        ws,
        ctx,
        query,
        Operation::Complete,
        req,
        payload,
        |_, _, _| {
            let merge = Event::new(
                EventKind::Merge,
                &format!(
                    "Merged `{}` into `{}`: {} -> {}.",
                    ev.commit, ev.target_ref, ev.before, ev.after
                ),
            )
            .with_attr("target_ref", ev.target_ref.clone())
            .with_attr("before", ev.before.clone())
            .with_attr("after", ev.after.clone())
            .with_attr("commit", ev.commit.clone());
            Ok(Effects {
                before: vec![merge],
                body: "Completed: the approved commit is merged.".into(),
                ..Effects::default()
            })
        },
    )
}

/// The close event and resolution.md; with a worktree disposal, the close event also says what
/// happens to the worktree (an attribute and a closing sentence), while resolution.md keeps the
/// resolution alone.
fn closing(
    resolution: &str,
    verb: &str,
    worktree: Option<Disposal>,
) -> Result<Effects, StoreError> {
    let text = render_resolution(resolution)
        .ok_or_else(|| StoreError::bad_input("resolution", "must not be empty"))?;
    let close = match &worktree {
        None => Event::new(EventKind::Close, &text).with_attr("status", verb),
        Some(d) => Event::new(
            EventKind::Close,
            &format!("{}\n\n{}", text.trim_end(), d.sentence()),
        )
        .with_attr("status", verb)
        .with_attr(worktree_disposal::ATTR, d.attr()),
    };
    Ok(Effects {
        after: vec![close],
        resolution: Some(text),
        body: format!("Ticket {verb}."),
        worktree,
        ..Effects::default()
    })
}

/// done -> closed with a resolution.
pub fn close(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &TransitionRequest,
) -> Result<Outcome, StoreError> {
    let resolution = required("resolution", &req.resolution)?;
    run(
        ws,
        ctx,
        query,
        Operation::Close,
        req,
        Value::Null,
        |_, _, _| closing(&resolution, "closed", None),
    )
}

/// planning/ready/queued/inprogress -> closed with a resolution (humans only). An in-progress
/// ticket's clean worktree is removed after the state change is written; a dirty or missing one
/// is reported; its branch is kept. What happened is in the close event and the outcome's notes.
pub fn cancel(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &TransitionRequest,
) -> Result<Outcome, StoreError> {
    let resolution = required("resolution", &req.resolution)?;
    run(
        ws,
        ctx,
        query,
        Operation::Cancel,
        req,
        Value::Null,
        |ws, id, item| {
            let mut notes = Vec::new();
            let disposal = if item.state == State::Inprogress {
                worktree_disposal::inspect(ws, id).unwrap_or_else(|e| {
                    notes.push(format!(
                        "left the worktree alone: the accepted plan could not be read ({e})"
                    ));
                    None
                })
            } else {
                None
            };
            item.queued_by = None;
            item.queued_at = None;
            let effects = closing(&resolution, "cancelled", disposal)?;
            Ok(Effects { notes, ..effects })
        },
    )
}

/// closed -> planning with a reason. The old resolution stays in the thread's close event.
/// Like return-to-planning, it clears `queued_by`/`queued_at`: a ticket in planning is queued
/// by nobody until a person queues it again.
pub fn reopen(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &TransitionRequest,
) -> Result<Outcome, StoreError> {
    let reason = required("reason", &req.reason)?;
    run(
        ws,
        ctx,
        query,
        Operation::Reopen,
        req,
        Value::Null,
        |_, _, item| {
            item.queued_by = None;
            item.queued_at = None;
            Ok(Effects {
                remove_resolution: true,
                body: format!("Reopened: {reason}"),
                ..Effects::default()
            })
        },
    )
}

/// The longest `reason` of a state operation, in characters: it is written into the event's
/// header, whose values hold at most 1024 bytes (four per character at most).
pub const MAX_REASON_CHARS: usize = yoi_core::thread::MAX_ATTR_BYTES / 4;
