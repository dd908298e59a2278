//! [`record`]: write a routing decision to the ticket's thread once per situation.

use yoi_core::decision::{prose, read_decision, RoutingDecision};
use yoi_core::thread::{Event, EventKind, ParsedThread};
use yoi_core::{Principal, State, TicketId, Timestamp};
use yoi_db::DbIndex;
use yoi_store::ops::{self, CommentRequest, TransitionRequest};
use yoi_store::{Ctx, StoreError, Workspace};

use super::window::routing_thread;

/// The last `decision` event the orchestrator wrote in a thread (a person's `decision` comment
/// is not a routing decision).
pub(super) fn last_decision(thread: &ParsedThread) -> Option<&Event> {
    let orchestrator = Principal::orchestrator().author();
    thread
        .events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::Decision && e.author() == Some(orchestrator.as_str()))
}

/// Append `decision.render_event()` (prose and data) as a `decision` event by the
/// orchestrator, unless the orchestrator's last decision says the same: the same data, or — for
/// a decision written before events carried data — the same prose. Returns whether anything
/// was written. The last decision is read as deciding reads the thread
/// ([`routing_thread`]: from `index` when it is provably current).
///
/// A `return_to_planning` or `stopped` decision also moves a ticket that is still `queued` back
/// to planning (compare-and-swap on `queued`) with the reason from [`planning_reason`]; that
/// counts as a write.
pub fn record(
    ws: &Workspace,
    index: Option<&DbIndex>,
    id: &TicketId,
    decision: &RoutingDecision,
    now: Timestamp,
) -> Result<bool, StoreError> {
    record_on(ws, id, &routing_thread(ws, index, id)?, decision, now)
}

/// [`record`] against the routing part of the thread the caller has just read for deciding
/// (the pass holds its turn from the read to the write, so the server wrote nothing between).
pub(super) fn record_on(
    ws: &Workspace,
    id: &TicketId,
    thread: &ParsedThread,
    decision: &RoutingDecision,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let ctx = Ctx::new(Principal::orchestrator(), now);
    let body = decision.render_event();
    let same = last_decision(thread).is_some_and(|e| says_the_same(&e.body, decision));
    if !same {
        ops::comment(
            ws,
            &ctx,
            id.as_str(),
            &CommentRequest {
                kind: "decision".into(),
                body,
            },
        )?;
    }
    let mut moved = false;
    if let Some(reason) = planning_reason(decision) {
        if ws.read_item(id)?.state == State::Queued {
            ops::return_to_planning(
                ws,
                &ctx,
                id.as_str(),
                &TransitionRequest {
                    reason: Some(reason),
                    expected: Some(State::Queued),
                    ..TransitionRequest::default()
                },
            )?;
            moved = true;
        }
    }
    Ok(!same || moved)
}

/// Whether an earlier decision event body records `decision`.
fn says_the_same(body: &str, decision: &RoutingDecision) -> bool {
    match read_decision(body).and_then(|r| r.data) {
        Some(data) => data == *decision,
        None => prose(body) == decision.render().trim_end(),
    }
}

/// Why a decision sends its ticket back to planning, if it does.
fn planning_reason(decision: &RoutingDecision) -> Option<String> {
    match decision {
        RoutingDecision::ReturnToPlanning { missing, flow } if missing.is_empty() => {
            Some(format!("the ticket's flow cannot run: {}", flow.join("; ")))
        }
        RoutingDecision::ReturnToPlanning { missing, .. } => {
            let names: Vec<&str> = missing.iter().map(|s| s.heading()).collect();
            Some(format!(
                "the brief is missing required sections: {}",
                names.join(", ")
            ))
        }
        RoutingDecision::Stopped { step, failures } => Some(format!(
            "partial: stopped after acceptance step `{step}` failed {failures} times; \
             anything it produced (branch, worktree, logs) is kept. Fix the cause, then mark it ready and queue it again."
        )),
        _ => None,
    }
}
