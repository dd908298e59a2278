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
use yoi_core::{Role, ServiceStep};
use yoi_db::{Assignment, AssignmentStatus, DbIndex};
use yoi_store::ops;
use yoi_store::{Ctx, Workspace};

use yoi_core::flow::{Flow, Output, Step};

use super::merge::MERGE_VERIFY;
use super::{new_id, AssignmentError};

/// The flow a ticket follows unless it or the workspace names another.
pub const FLOW: &str = yoi_core::flow::BUILTIN;

/// The `attention` reason when a ticket used its fix rounds.
pub const ROUNDS_EXHAUSTED: &str = "rounds_exhausted";

/// Fix rounds `flow` allows before a person decides.
pub fn max_rounds(flow: &Flow) -> usize {
    flow.max_rounds.max(1) as usize
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

/// Whether a completed checks attempt's commands all passed.
pub(crate) fn verified(a: &Assignment) -> bool {
    report_of(a).is_some_and(|r| r.checks.iter().all(|c| c.passed()))
}

/// The rounds a ticket used: completed attempts that found the work wanting — failed
/// verifications (of the branch or of a computed merge) and change requests.
pub fn rounds_used(rows: &[Assignment]) -> usize {
    let own = rows
        .iter()
        .filter(|a| a.status == AssignmentStatus::Completed)
        .filter(|a| report_of(a).is_some_and(|r| r.used_a_round()))
        .count();
    // A pull request's failing check, change request or `/yoi fix` is a round too.
    let forge = rows
        .iter()
        .filter(|a| is_service(a) && a.status == AssignmentStatus::Failed)
        .filter(|a| {
            a.error
                .as_deref()
                .is_some_and(|e| e.starts_with(super::pr::ROUND_PREFIX))
        })
        .count();
    own + forge
}

/// Rounds a person granted with `retry` after the rounds ran out: each one is an `implement`
/// attempt created while the rounds were already used up, marked in its `error` field.
pub(crate) fn rounds_granted(rows: &[Assignment]) -> usize {
    rows.iter()
        .filter(|a| a.error.as_deref() == Some(GRANTED))
        .count()
}

const GRANTED: &str = "round granted by a person's retry";

/// Decide and hand out what follows the latest ended attempt of `ticket` in its flow. Call
/// with the results lock held (the callers in this module do).
///
/// By what the ended step returns: a commit → the next step at the branch head; checks that
/// passed or an approval → the next step at that exact commit; failed checks or a change
/// request → a fix round from the first step (a failed `merge-verify` → `integrate`); a
/// passed `merge-verify` → the merge of the approved commit; the merge → done.
pub(crate) fn advance(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    now: Timestamp,
) -> Result<Advanced, AssignmentError> {
    let rows = index.assignments_of(ticket.as_str())?;
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
    let flow = crate::flows::of_ticket(ws, ticket)?;
    let place = super::work_place(ws, ticket)?;
    let branch_head = || yoi_git::resolve_commit(ws.root(), &place.branch);
    // `Some(step, commit)`: hand that out; `None`: a fix round.
    let next: Option<(&Step, String)> = match flow.output_of(&last.step) {
        Some(Output::Merge | Output::PullRequest) => {
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
        Some(Output::Checks) if last.step == MERGE_VERIFY => {
            if verified(last) {
                // The merge commit's second parent is the approved commit.
                let merge = head_of(last)?;
                let approved = yoi_git::parents_of(ws.root(), &merge)?
                    .get(1)
                    .cloned()
                    .ok_or_else(|| AssignmentError::BadResult {
                        id: last.id.clone(),
                        reason: format!("{merge} is not a merge commit"),
                    })?;
                Some((merge_step(&flow), approved))
            } else {
                None
            }
        }
        Some(Output::Commit) => {
            let after = if ServiceStep::Integrate.is(&last.step) {
                flow.after(&flow.first().id)
            } else {
                flow.after(&last.step)
            };
            after
                .map(|s| Ok::<_, yoi_git::GitError>((s, branch_head()?)))
                .transpose()?
        }
        Some(Output::Checks) if verified(last) => {
            flow.after(&last.step).map(|s| (s, String::new()))
        }
        Some(Output::Verdict)
            if report_of(last).and_then(|r| r.verdict) == Some(Verdict::Approve) =>
        {
            flow.after(&last.step).map(|s| (s, String::new()))
        }
        Some(Output::Checks | Output::Verdict) => None,
        // A step the flow does not have (the flow changed under an old row): nothing.
        None => return Ok(Advanced::Nothing),
    };
    let row = match next {
        Some((step, head)) => {
            let head = if head.is_empty() {
                head_of(last)?
            } else {
                head
            };
            new_step(&rows, ticket, &step.id, row_role(step), &head, None, now)
        }
        None => {
            let used = rounds_used(&rows);
            if used > max_rounds(&flow) + rounds_granted(&rows) {
                exhausted(ws, ticket, &flow, used, now)?;
                return Ok(Advanced::Exhausted);
            }
            let (step, role) = round_step(&flow, last);
            new_step(&rows, ticket, &step, role, &branch_head()?, None, now)
        }
    };
    match index.create_assignment(&row) {
        Ok(()) => Ok(Advanced::Next(Box::new(row))),
        // Someone else handed it out first (the one-live-row index): nothing to do.
        Err(_)
            if index
                .assignments_of(ticket.as_str())?
                .iter()
                .any(|a| a.status.is_live()) =>
        {
            Ok(Advanced::Nothing)
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether a row is the service's merge (rows before flows had the role `merge`).
pub(crate) fn is_service(a: &Assignment) -> bool {
    a.role == yoi_core::flow::SERVICE || a.role == "merge"
}

/// Whether a service row is its flow's pull-request step, which the forge driver runs
/// ([`super::pr`]) and the local merge never does.
pub(crate) fn is_pull_request(ws: &Workspace, a: &Assignment) -> bool {
    is_service(a)
        && TicketId::parse(&a.ticket)
            .ok()
            .and_then(|t| crate::flows::of_ticket(ws, &t).ok())
            .and_then(|f| f.output_of(&a.step))
            == Some(Output::PullRequest)
}

/// The step that verifies a head again when the branch moved after its approval: the one after
/// the first (unless that ends the flow), else the first.
pub(crate) fn reverify_step(flow: &Flow) -> &Step {
    flow.after(&flow.first().id)
        .filter(|s| !s.output.ends())
        .unwrap_or_else(|| flow.first())
}

/// The merge step of a flow (its last).
fn merge_step(flow: &Flow) -> &Step {
    flow.steps
        .iter()
        .find(|s| s.output.ends())
        .unwrap_or_else(|| flow.steps.last().expect("a flow has steps"))
}

/// The role written on a step's row: the merge is the service's.
pub(crate) fn row_role(step: &Step) -> Role {
    if step.output.ends() {
        Role::Service
    } else {
        step.role
    }
}

/// Where a fix round starts: the flow's first step, or `integrate` when a computed merge
/// failed its validation (the coder brings the target in by hand).
fn round_step(flow: &Flow, last: &Assignment) -> (String, Role) {
    let first = flow.first();
    if last.step == MERGE_VERIFY {
        (ServiceStep::Integrate.as_str().into(), first.role)
    } else {
        (first.id.clone(), first.role)
    }
}

/// After a person's `retry` of a ticket whose rounds ran out: one more round.
pub(crate) fn grant_round(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    now: Timestamp,
) -> Result<Option<Assignment>, AssignmentError> {
    let rows = index.assignments_of(ticket.as_str())?;
    let flow = crate::flows::of_ticket(ws, ticket)?;
    if rows.iter().any(|a| a.status.is_live())
        || rounds_used(&rows) <= max_rounds(&flow) + rounds_granted(&rows)
    {
        return Ok(None);
    }
    let place = super::work_place(ws, ticket)?;
    let head = yoi_git::resolve_commit(ws.root(), &place.branch)?;
    let last = rows
        .iter()
        .filter(|a| a.finished_ms.is_some())
        .max_by_key(|a| (a.finished_ms, a.created_ms));
    let (step, role) = match last {
        Some(l) => round_step(&flow, l),
        None => (flow.first().id.clone(), flow.first().role),
    };
    let row = new_step(&rows, ticket, &step, role, &head, Some(GRANTED), now);
    index.create_assignment(&row)?;
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
    role: Role,
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
        role: role.to_string(),
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

pub(crate) fn exhausted(
    ws: &Workspace,
    ticket: &TicketId,
    flow: &Flow,
    used: usize,
    now: Timestamp,
) -> Result<(), AssignmentError> {
    let ctx = Ctx::new(Principal::orchestrator(), now);
    let body = format!(
        "The ticket used {used} fix rounds (verification failures and change requests; the limit is {}). \
         Nothing more is handed out. Read the attempts (`yoi assignment list --ticket {ticket}`), then \
         `yoi ticket retry {ticket}` for one more round, return it to planning, or cancel it.",
        max_rounds(flow)
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
        .filter(|a| a.finished_ms.is_some() && !Role::Coder.is(&a.role))
        .max_by_key(|a| (a.finished_ms, a.created_ms))?;
    if is_service(last) && last.status == AssignmentStatus::Failed {
        if let Some(why) = last
            .error
            .as_deref()
            .and_then(|e| e.strip_prefix(super::pr::FEEDBACK_PREFIX))
        {
            let why = why.strip_prefix("round: ").unwrap_or(why);
            return Some(format!(
                "The pull request of {} needs another round: {why}\n",
                last.head_commit.as_deref().unwrap_or("?"),
            ));
        }
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
    let what = if last.step == MERGE_VERIFY {
        "Validation of the merge"
    } else {
        "Verification"
    };
    match () {
        _ if !verified(last) => {
            let mut out = format!(
                "{what} of {commit} failed (assignment {}, log `{}`):\n",
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
        _ if r.verdict == Some(Verdict::RequestChanges) => {
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
