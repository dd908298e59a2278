//! [`record`]: write a routing decision to the ticket's thread once per situation.

use yoi_core::decision::{self, RoutingDecision};
use yoi_core::thread::{Event, EventKind};
use yoi_core::{Principal, State, TicketId, Timestamp};
use yoi_store::ops::{self, CommentRequest, TransitionRequest};
use yoi_store::{Ctx, StoreError, Workspace};

/// The last `decision` event of the ticket's thread.
fn last_decision(ws: &Workspace, id: &TicketId) -> Result<Option<Event>, StoreError> {
    let thread = ws.read_thread(id)?;
    Ok(thread
        .events
        .into_iter()
        .rev()
        .find(|e| e.kind == EventKind::Decision))
}

/// Append `decision.render()` as a `decision` event by the orchestrator, unless the last
/// decision event of the thread has the same body; returns whether anything was written.
///
/// A `return_to_planning` decision also moves a ticket that is still `queued` back to planning
/// (compare-and-swap on `queued`), naming the missing sections in the reason; that counts as a
/// write.
pub fn record(
    ws: &Workspace,
    id: &TicketId,
    decision: &RoutingDecision,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let ctx = Ctx::new(Principal::orchestrator(), now);
    let body = decision.render();
    let same = last_decision(ws, id)?.is_some_and(|e| e.body.trim() == body.trim());
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
    if let RoutingDecision::ReturnToPlanning { missing } = decision {
        if ws.read_item(id)?.state == State::Queued {
            let names: Vec<&str> = missing.iter().map(|s| s.heading()).collect();
            ops::return_to_planning(
                ws,
                &ctx,
                id.as_str(),
                &TransitionRequest {
                    reason: Some(format!(
                        "the brief is missing required sections: {}",
                        names.join(", ")
                    )),
                    expected: Some(State::Queued),
                    ..TransitionRequest::default()
                },
            )?;
            moved = true;
        }
    }
    Ok(!same || moved)
}

/// The attempt number of the next acceptance failure: one more than the run of
/// `acceptance_failed` decisions at the end of the thread's decision events.
pub(super) fn next_attempt(ws: &Workspace, id: &TicketId) -> Result<u32, StoreError> {
    let thread = ws.read_thread(id)?;
    let run = thread
        .events
        .iter()
        .rev()
        .filter(|e| e.kind == EventKind::Decision)
        .take_while(|e| decision::parse_kind(&e.body).as_deref() == Some("acceptance_failed"))
        .count();
    Ok(u32::try_from(run).unwrap_or(u32::MAX).saturating_add(1))
}
