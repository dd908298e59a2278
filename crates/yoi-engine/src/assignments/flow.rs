//! The built-in flow `coder-review` (docs/flows.md): `implement` (coder) → `verify` (verifier)
//! → `review` (reviewer) → `merge` (the service), with bounded fix rounds.
//!
//! [`advance`] is a step function over a ticket's records: it reads the ticket's attempts and,
//! when none is live, derives what comes next from the latest one that ended — so the same call
//! after a completion and after a crash gives the same answer, and the schema's one-live-row
//! rule makes a second call a no-op. A next step is never lost (the sweep calls [`advance`] for
//! every ticket in progress) and never doubled.
//!
//! - a completed `implement` or `integrate` → `verify` at the branch head;
//! - a `verify` whose commands all passed → `review` of that exact commit; one that failed →
//!   a new `implement` round, with the failing command and log in its prompt;
//! - `review` approve → `merge` of that exact commit; request_changes → a new round, with the
//!   review in its prompt;
//! - a completed `merge` → the ticket is done (the merge itself is [`super::merge`]).
//!
//! Verification failures and change requests count as rounds; past `max_rounds` the ticket gets
//! an `attention` event and waits for a person (`yoi ticket retry` grants one more round).

use yoi_core::report::{Report, Verdict};
use yoi_core::{Principal, TicketId, Timestamp};
use yoi_store::db::{Assignment, AssignmentStatus, DbIndex};
use yoi_store::ops;
use yoi_store::{Ctx, Workspace};

use super::{new_id, AssignmentError};

/// The flow every ticket follows today.
pub const FLOW: &str = "coder-review";

/// The `attention` reason when a ticket used its fix rounds.
pub const ROUNDS_EXHAUSTED: &str = "rounds_exhausted";

/// Fix rounds a ticket may use before a person decides.
pub fn max_rounds(ws: &Workspace) -> usize {
    ws.config.flow.max_rounds.max(1) as usize
}

/// What [`advance`] did for a ticket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advanced {
    /// A step is live, or the last one failed (its circuit decides), or nothing ended yet.
    Nothing,
    /// The next step was handed out.
    Next(Box<Assignment>),
    /// The rounds are used up; a person was told.
    Exhausted,
    /// The merge completed; the ticket is to be marked done with this evidence.
    Merged(ops::MergeEvidence),
}

/// The report an ended attempt left, if any.
pub fn report_of(a: &Assignment) -> Option<Report> {
    a.result
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
}

/// Whether a completed verify attempt's commands all passed.
fn verified(a: &Assignment) -> bool {
    report_of(a).is_some_and(|r| r.checks.iter().all(|c| c.passed()))
}

/// The rounds a ticket used: failed verifications and change requests.
pub fn rounds_used(rows: &[Assignment]) -> usize {
    rows.iter()
        .filter(|a| a.status == AssignmentStatus::Completed)
        .filter(|a| match a.step.as_str() {
            "verify" => !verified(a),
            "review" => report_of(a).and_then(|r| r.verdict) == Some(Verdict::RequestChanges),
            _ => false,
        })
        .count()
}

/// Rounds a person granted with `retry` after the rounds ran out: each one is an `implement`
/// attempt created while the rounds were already used up, marked in its `error` field.
fn rounds_granted(rows: &[Assignment]) -> usize {
    rows.iter()
        .filter(|a| a.error.as_deref() == Some(GRANTED))
        .count()
}

const GRANTED: &str = "round granted by a person's retry";

/// Decide and hand out what follows the latest ended attempt of `ticket`. Call with the results
/// lock held (the callers in this module do).
pub(crate) fn advance(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    now: Timestamp,
) -> Result<Advanced, AssignmentError> {
    let rows = index.block_on(index.db.assignments_of(ticket.as_str()))?;
    if rows.iter().any(|a| a.status.is_live()) {
        return Ok(Advanced::Nothing);
    }
    let Some(last) = rows
        .iter()
        .filter(|a| a.finished_ms.is_some() && a.status != AssignmentStatus::Cancelled)
        .max_by_key(|a| (a.finished_ms, a.created_ms))
    else {
        return Ok(Advanced::Nothing);
    };
    if last.status != AssignmentStatus::Completed {
        return Ok(Advanced::Nothing);
    }
    let place = super::work_place(ws, ticket)?;
    let next = match last.step.as_str() {
        "implement" | "integrate" => {
            let head = yoi_git::resolve_commit(ws.root(), &place.branch)?;
            Some(("verify", "verifier", head))
        }
        "verify" if verified(last) => Some(("review", "reviewer", head_of(last)?)),
        "review" if report_of(last).and_then(|r| r.verdict) == Some(Verdict::Approve) => {
            Some(("merge", "merge", head_of(last)?))
        }
        "verify" | "review" => None,
        "merge" => {
            let ev = last
                .result
                .as_deref()
                .and_then(|s| serde_json::from_str::<MergeRecord>(s).ok());
            return Ok(match ev {
                Some(m) => Advanced::Merged(ops::MergeEvidence {
                    target_ref: m.target_ref,
                    before: m.before,
                    after: m.after,
                    commit: m.commit,
                }),
                None => Advanced::Nothing,
            });
        }
        _ => return Ok(Advanced::Nothing),
    };
    let row = match next {
        Some((step, role, head)) => new_step(&rows, ticket, step, role, &head, None, now),
        None => {
            // A fix round.
            let used = rounds_used(&rows);
            if used > max_rounds(ws) + rounds_granted(&rows) {
                exhausted(ws, ticket, used, now)?;
                return Ok(Advanced::Exhausted);
            }
            let head = yoi_git::resolve_commit(ws.root(), &place.branch)?;
            new_step(&rows, ticket, "implement", "coder", &head, None, now)
        }
    };
    match index.block_on(index.db.create_assignment(&row)) {
        Ok(()) => Ok(Advanced::Next(Box::new(row))),
        // Someone else handed it out first (the one-live-row index): nothing to do.
        Err(_)
            if index
                .block_on(index.db.assignments_of(ticket.as_str()))?
                .iter()
                .any(|a| a.status.is_live()) =>
        {
            Ok(Advanced::Nothing)
        }
        Err(e) => Err(e.into()),
    }
}

/// After a person's `retry` of a ticket whose rounds ran out: one more `implement` round.
pub(crate) fn grant_round(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    now: Timestamp,
) -> Result<Option<Assignment>, AssignmentError> {
    let rows = index.block_on(index.db.assignments_of(ticket.as_str()))?;
    if rows.iter().any(|a| a.status.is_live())
        || rounds_used(&rows) <= max_rounds(ws) + rounds_granted(&rows)
    {
        return Ok(None);
    }
    let place = super::work_place(ws, ticket)?;
    let head = yoi_git::resolve_commit(ws.root(), &place.branch)?;
    let row = new_step(
        &rows,
        ticket,
        "implement",
        "coder",
        &head,
        Some(GRANTED),
        now,
    );
    index.block_on(index.db.create_assignment(&row))?;
    Ok(Some(row))
}

fn head_of(a: &Assignment) -> Result<String, AssignmentError> {
    a.head_commit
        .clone()
        .ok_or_else(|| AssignmentError::BadResult {
            id: a.id.clone(),
            reason: "the attempt recorded no commit".into(),
        })
}

/// The next attempt of `step`: attempt and fence one past that step's highest.
pub(crate) fn new_step(
    rows: &[Assignment],
    ticket: &TicketId,
    step: &str,
    role: &str,
    head: &str,
    note: Option<&str>,
    now: Timestamp,
) -> Assignment {
    let prior = rows.iter().filter(|a| a.step == step);
    let attempt = prior.clone().map(|a| a.attempt).max().unwrap_or(0) + 1;
    let fence = prior.map(|a| a.fence).max().unwrap_or(0) + 1;
    let now_ms = now.unix_millis();
    Assignment {
        id: new_id(now),
        ticket: ticket.to_string(),
        step: step.into(),
        role: role.into(),
        attempt,
        fence,
        status: AssignmentStatus::Pending,
        created_ms: now_ms,
        updated_ms: now_ms,
        head_commit: Some(head.to_string()),
        error: note.map(str::to_string),
        ..Assignment::default()
    }
}

fn exhausted(
    ws: &Workspace,
    ticket: &TicketId,
    used: usize,
    now: Timestamp,
) -> Result<(), AssignmentError> {
    let ctx = Ctx::new(Principal::orchestrator(), now);
    let body = format!(
        "The ticket used {used} fix rounds (verification failures and change requests; the limit is {}). \
         Nothing more is handed out. Read the attempts (`yoi assignment list --ticket {ticket}`), then \
         `yoi ticket retry {ticket}` for one more round, return it to planning, or cancel it.",
        max_rounds(ws)
    );
    match ops::attention(ws, &ctx, ticket.as_str(), ROUNDS_EXHAUSTED, &body) {
        Ok(_) | Err(yoi_store::StoreError::StaleState { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// What a completed merge step records (its result, JSON).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct MergeRecord {
    pub target_ref: String,
    pub before: String,
    pub after: String,
    pub commit: String,
}

/// What the next coder round should read first: the latest failed verification or change
/// request of the ticket, by reference (assignment, commit, log) with its findings.
pub fn feedback(rows: &[Assignment]) -> Option<String> {
    let last = rows
        .iter()
        .filter(|a| a.finished_ms.is_some())
        .filter(|a| matches!(a.step.as_str(), "verify" | "review" | "merge"))
        .max_by_key(|a| (a.finished_ms, a.created_ms))?;
    if last.step == "merge" && last.status == AssignmentStatus::Failed {
        return Some(format!(
            "The approved commit {} could not be merged: {} Bring the target's new commits into \
             this branch (merge it into your worktree and resolve any conflicts), then finish.\n",
            last.head_commit.as_deref().unwrap_or("?"),
            last.error.as_deref().unwrap_or("")
        ));
    }
    if last.status != AssignmentStatus::Completed {
        return None;
    }
    let r = report_of(last)?;
    let commit = last.head_commit.as_deref().unwrap_or("?");
    match last.step.as_str() {
        "verify" if !verified(last) => {
            let mut out = format!(
                "Verification of {commit} failed (assignment {}, log `{}`):\n",
                last.id,
                r.log.as_deref().unwrap_or("-")
            );
            for c in r.checks.iter().filter(|c| !c.passed()) {
                out.push_str(&format!(
                    "- `{}` {}\n",
                    c.command,
                    match (c.timed_out, c.exit_code) {
                        (true, _) => "timed out".to_string(),
                        (_, Some(code)) => format!("exited with {code}"),
                        (_, None) => "was killed".to_string(),
                    }
                ));
            }
            Some(out)
        }
        "review" if r.verdict == Some(Verdict::RequestChanges) => {
            let mut out = format!(
                "The review of {commit} requested changes (assignment {}): {}\n",
                last.id,
                r.summary.as_deref().unwrap_or("")
            );
            for f in &r.findings {
                out.push_str(&format!("- {f}\n"));
            }
            Some(out)
        }
        _ => None,
    }
}
