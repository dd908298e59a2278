//! `forge_pr` events: what happened to a ticket's pull request — the branch pushed, the pull
//! request opened (number, URL, head), a person's commits found on its branch, its checks and
//! reviews as they came back, the merge (number, merged SHA, method) or a close without one.
//! Recorded by the orchestrator only (the forge driver), for a ticket not closed: an imported
//! issue's link is written while the ticket is still in planning. The caller names an operation id derived from what happened, so the same
//! fact seen twice (a webhook and the poll, a restart) is written once.
//!
//! Nothing here carries the forge credential: the attributes are numbers, SHAs, URLs and names.

use yoi_core::principal::PrincipalKind;
use yoi_core::thread::{Event, EventKind};
use yoi_core::State;

use super::signal::append_in;
use super::{Ctx, Outcome};
use crate::error::{Permission, StoreError};
use crate::workspace::Workspace;

/// Append one `forge_pr` event with `attrs` and `body` (the orchestrator only).
pub fn record_forge(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    attrs: &[(&str, String)],
    body: &str,
) -> Result<Outcome, StoreError> {
    if ctx.principal.kind != PrincipalKind::Orchestrator {
        return Err(StoreError::NotPermitted {
            reason: Permission::RecordAttempt {
                kind: ctx.principal.kind,
            },
        });
    }
    let mut event = Event::new(EventKind::from(yoi_core::forge::EVENT.to_string()), body);
    for (k, v) in attrs {
        event = event.with_attr(k, v.clone());
    }
    append_in(
        ws,
        ctx,
        query,
        "record_forge",
        event,
        &[
            State::Planning,
            State::Ready,
            State::Queued,
            State::Inprogress,
            State::Done,
        ],
    )
}
