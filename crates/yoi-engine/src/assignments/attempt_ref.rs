//! Attempt refs (docs/pods.md, "Pods on other hosts"): where a pod without a shared disk pushes
//! its result, `refs/yoi/attempts/<ticket>/<attempt>.<fence>`, and who may push there.
//!
//! A push is allowed only to the ref of a **live claim** — claimed, at that attempt and fence,
//! with an unexpired lease — **held by a pod registered with the pushing token**, and by the
//! incarnation the push names when it names one (`Yoi-Pod`, as yoi's pods do). Every other
//! ref (a branch, a tag, another claim's ref, an ended claim's), and every deletion, is refused
//! here, before git receives anything. The ref only carries objects: the ticket branch still
//! moves only through [`super::complete`], by compare-and-swap, with every check a local
//! result gets.

use yoi_core::{State, TicketId};
use yoi_db::{Assignment, AssignmentStatus, DbIndex};
use yoi_store::Workspace;

use super::{AssignmentError, PodCaller};

/// The folder of every attempt ref.
pub const PREFIX: &str = "refs/yoi/attempts/";

/// An attempt ref's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRef {
    pub ticket: String,
    pub attempt: i64,
    pub fence: i64,
}

impl AttemptRef {
    /// `refs/yoi/attempts/<ticket>/<attempt>.<fence>` parsed; `None` for any other name.
    pub fn parse(name: &str) -> Option<AttemptRef> {
        let (ticket, last) = name.strip_prefix(PREFIX)?.split_once('/')?;
        let (attempt, fence) = last.split_once('.')?;
        let number = |s: &str| {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<i64>().ok())
                .flatten()
        };
        let ticket_ok = !ticket.is_empty() && ticket.bytes().all(|b| b.is_ascii_alphanumeric());
        Some(AttemptRef {
            ticket: ticket_ok.then(|| ticket.to_string())?,
            attempt: number(attempt)?,
            fence: number(fence)?,
        })
    }

    /// The ref's full name.
    pub fn name(&self) -> String {
        format!("{PREFIX}{}/{}.{}", self.ticket, self.attempt, self.fence)
    }

    /// The ref of an assignment.
    pub fn of(a: &Assignment) -> AttemptRef {
        AttemptRef {
            ticket: a.ticket.clone(),
            attempt: a.attempt,
            fence: a.fence,
        }
    }
}

/// Why a ref update is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushRefusal {
    /// Not an attempt ref: branches, tags and everything else are the server's.
    NotAnAttemptRef { name: String },
    /// A deletion: attempt refs are removed by the server.
    Deletion { name: String },
    /// No live claim of a pod of this token has this ticket, attempt and fence (another pod's,
    /// an ended or expired one, or none).
    NotYourLiveClaim { name: String },
}

impl std::fmt::Display for PushRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PushRefusal::NotAnAttemptRef { name } => write!(
                f,
                "{name}: a pod pushes only to {PREFIX}<ticket>/<attempt>.<fence> of its own live claim"
            ),
            PushRefusal::Deletion { name } => {
                write!(f, "{name}: attempt refs are deleted by the server, not by pods")
            }
            PushRefusal::NotYourLiveClaim { name } => write!(
                f,
                "{name}: no live claim of this token's pods has that ticket, attempt and fence (ended, expired, or another pod's)"
            ),
        }
    }
}

/// Whether `caller` may set `name` (to a commit; `delete` when the update removes it) at
/// `now_ms`: the claim it belongs to, or why not. A push that names its pod incarnation
/// (`pod`, the `Yoi-Pod` header yoi's pods send) may set only that incarnation's claim's ref,
/// so two pods sharing a token (two under one name) cannot set each other's.
pub fn may_push(
    index: &DbIndex,
    caller: &PodCaller,
    pod: Option<&str>,
    name: &str,
    delete: bool,
    now_ms: i64,
) -> Result<Result<Assignment, PushRefusal>, AssignmentError> {
    let Some(wanted) = AttemptRef::parse(name) else {
        return Ok(Err(PushRefusal::NotAnAttemptRef { name: name.into() }));
    };
    if delete {
        return Ok(Err(PushRefusal::Deletion { name: name.into() }));
    }
    for a in index.assignments_of(&wanted.ticket)? {
        let live = a.attempt == wanted.attempt
            && a.fence == wanted.fence
            && a.status == AssignmentStatus::Claimed
            && a.lease_until_ms.is_some_and(|l| l >= now_ms)
            && caller.role.is(&a.role);
        if !live {
            continue;
        }
        let Some(holder) = a.claimed_by.as_deref() else {
            continue;
        };
        if pod.is_some_and(|p| p != holder) {
            continue;
        }
        if index
            .pod(holder)?
            .is_some_and(|p| p.token_id == caller.token_id)
        {
            return Ok(Ok(a));
        }
    }
    Ok(Err(PushRefusal::NotYourLiveClaim { name: name.into() }))
}

/// Delete the attempt refs no attempt needs any more ([`still_needed`]): the ref of an attempt
/// that expired or was cancelled, and every ref of a ticket that is not in progress (done,
/// closed, or returned to planning); how many went. The lease sweep runs it (`expire_due`),
/// because an attempt can end without the sweep that expires it deleting its ref: a person's
/// return or cancel cancels its claim in the index, a crash can fall between an expiry and its
/// deletion, and git may still be receiving a push the server checked while the claim was live
/// and write its ref after the claim ended (the simulation's `attempt-ref-left`,
/// docs/simulation.md). The ref of a live claim stays, and so does that of an attempt that
/// completed or failed while its ticket stays in progress: a failed attempt's kept work is what
/// the next attempt fetches.
pub fn collect(ws: &Workspace, index: &DbIndex) -> Result<usize, AssignmentError> {
    let repo = ws.root();
    let mut gone = 0;
    let mut rows_of: Option<(String, Vec<Assignment>)> = None;
    // Each ref with the commit it names now, before the rows are read: it is deleted only
    // while it still names that, so a push to its name after this look (a new acceptance's
    // attempt of the same name) is never taken with it.
    for (name, at) in yoi_git::refs_under_at(repo, PREFIX)? {
        let Some(r) = AttemptRef::parse(&name) else {
            continue;
        };
        let Ok(ticket) = TicketId::parse(&r.ticket) else {
            continue;
        };
        if rows_of.as_ref().is_none_or(|(t, _)| *t != r.ticket) {
            rows_of = Some((r.ticket.clone(), index.assignments_of(&r.ticket)?));
        }
        let rows = rows_of
            .as_ref()
            .map_or(&[][..], |(_, rows)| rows.as_slice());
        // The name is not one attempt's: every step numbers its attempts from 1.1, and so does
        // every acceptance. The ref goes once no attempt of that number needs it.
        let mut same = rows
            .iter()
            .filter(|a| a.attempt == r.attempt && a.fence == r.fence)
            .peekable();
        // A ref no attempt has was not pushed through `may_push`: not the sweep's.
        let ended = same.peek().is_some() && same.all(|a| !still_needed(ws, a, &ticket));
        if ended && yoi_git::delete_ref_at(repo, &name, &at)? {
            tracing::info!(reference = %name, "deleted the attempt ref of an ended attempt");
            gone += 1;
        }
    }
    Ok(gone)
}

/// Whether attempt `a`'s ref is needed no more (the rule of [`collect`], also for the remote's
/// refs, `transport::collect_remote`).
pub fn ended(ws: &Workspace, a: &Assignment) -> bool {
    TicketId::parse(&a.ticket).is_ok_and(|t| ended_at(ws, a, &t))
}

fn ended_at(ws: &Workspace, a: &Assignment, ticket: &TicketId) -> bool {
    !still_needed(ws, a, ticket)
}

/// Whether the ref of attempt `a` of `ticket` is still needed: for as long as the acceptance
/// it belongs to lasts. It is not once the attempt expired or was cancelled (nothing of it is
/// ever fetched), nor once the ticket is not in progress — merged, cancelled or closed, or
/// returned to planning (docs/pods.md, "Pods on other hosts"): leaving progress ends the
/// acceptance, and a later one starts again at attempt 1 from the branch head, keeps nothing of
/// an earlier acceptance's attempts and reuses their refs' names. A ticket whose item cannot be
/// read keeps its refs.
fn still_needed(ws: &Workspace, a: &Assignment, ticket: &TicketId) -> bool {
    !matches!(
        a.status,
        AssignmentStatus::Expired | AssignmentStatus::Cancelled
    ) && ws
        .read_item(ticket)
        .map_or(true, |item| item.state == State::Inprogress)
}

#[cfg(test)]
mod tests {
    use super::AttemptRef;

    #[test]
    fn only_the_attempt_ref_form_parses() {
        let r = AttemptRef::parse("refs/yoi/attempts/01JD0ABC/2.7").unwrap();
        assert_eq!((r.ticket.as_str(), r.attempt, r.fence), ("01JD0ABC", 2, 7));
        assert_eq!(r.name(), "refs/yoi/attempts/01JD0ABC/2.7");
        for bad in [
            "refs/heads/main",
            "refs/yoi/attempts/01JD0ABC/2",
            "refs/yoi/attempts/01JD0ABC/2.7/x",
            "refs/yoi/attempts/../2.7",
            "refs/yoi/attempts//2.7",
            "refs/yoi/attempts/T/+2.7",
            "refs/yoi/attempts/T/2.-7",
            "refs/yoi/attempts/T/2.7.1",
        ] {
            assert_eq!(AttemptRef::parse(bad), None, "{bad}");
        }
    }
}
