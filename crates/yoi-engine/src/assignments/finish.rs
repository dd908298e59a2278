//! The end of an attempt: a pod's result ([`complete`]) or failure ([`fail`]), the one
//! `assignment` thread event it leaves, the next attempt or the circuit, and a person's retry of
//! a step whose circuit is open ([`resume_after_retry`]).

use std::path::Path;
use yoi_core::Role;

use serde::Serialize;
use yoi_core::{Principal, TicketId, Timestamp};
use yoi_db::{Assignment, AssignmentStatus, DbIndex, Finish, PodRow, PodState};
use yoi_store::config::WriteScopeRule;
use yoi_store::ops;
use yoi_store::{Ctx, Workspace};

use super::claim::{check_role, live_claim, pod_of, refusal, trailing_failures, PodCaller};
use super::{
    next_attempt, results_lock, retries_left, work_place, AssignmentError, Report, ReportOutcome,
    AGENT_BLOCKED, AGENT_UNUSABLE, STEP_CIRCUIT_OPEN,
};

/// What a completed attempt changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = CompletedAttempt)]
pub struct Completed {
    pub assignment: String,
    /// The ticket branch and where it points now.
    pub branch: String,
    pub branch_head: String,
    /// Whether the branch moved (false when the attempt reported no new commit).
    pub moved: bool,
}

/// Record pod `pod`'s result for `id` at `fence`. A `done` coder result with a commit moves the
/// ticket branch to it by compare-and-swap; the commit must exist, descend from the head the
/// claim was prepared at and leave the tickets folder alone. A `failed` or `blocked` outcome is
/// recorded as a failure (see [`fail`]). Nothing changes when the claim is not live.
#[allow(clippy::too_many_arguments)]
pub fn complete(
    ws: &Workspace,
    index: &DbIndex,
    caller: &PodCaller,
    pod: &str,
    id: &str,
    fence: i64,
    report: &Report,
    now: Timestamp,
) -> Result<Completed, AssignmentError> {
    // An agent that stopped to ask a person: not a failure, its step waits for the answer.
    // It asked in its trailer lines, or already through the MCP tool (docs/mcp.md): the
    // ticket's open question names this attempt.
    if report.outcome == ReportOutcome::Blocked
        && (report.questions.iter().any(|q| !q.trim().is_empty())
            || asked_through_mcp(ws, index, id))
    {
        return asked(ws, index, caller, (pod, id, fence), report, now);
    }
    if report.outcome != ReportOutcome::Done {
        let reason = format!(
            "the agent reported {}: {}",
            report.outcome.as_str(),
            report.summary.as_deref().unwrap_or("no summary")
        );
        let retryable = report.outcome == ReportOutcome::Failed;
        return failed_instead(
            ws,
            index,
            caller,
            (pod, id, fence),
            &reason,
            retryable,
            report,
            now,
        );
    }
    let pod_row = pod_of(index, caller, pod)?;
    // A verify counts only with a result for every validation command of the frozen brief:
    // whatever runs in the verifier role, the commands are what it vouches for.
    if let Some(missing) = unchecked_commands(ws, index, id, report)? {
        let reason = format!(
            "the verify reported no result for {} of the brief's validation commands ({}); the commands are run by yoi's verifier, never replaced",
            missing.len(),
            missing
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return failed_instead(
            ws,
            index,
            caller,
            (pod, id, fence),
            &reason,
            true,
            report,
            now,
        );
    }
    // Under `[pods] transport = "remote"` a commit the repository lacks is brought from the
    // claim's attempt ref on the remote, and must be exactly what that ref names. The network
    // is outside the results lock; a commit already here (a pod on the server's disk) needs
    // none. Every check below then runs as for any result.
    if let Some(c) = report.commit.as_deref() {
        if yoi_git::resolve_commit(ws.root(), c).is_err() {
            if let Some(remote) = super::transport::pod_remote(ws)? {
                let a = live_claim(index, pod, id, fence, now.unix_millis())?;
                check_role(caller, &a, "complete")?;
                super::transport::fetch_result(ws.root(), &remote, &a, c)?;
            }
        }
    }
    let _guard = results_lock();
    let now_ms = now.unix_millis();
    let a = live_claim(index, pod, id, fence, now_ms)?;
    check_role(caller, &a, "complete")?;
    let ticket = ticket_of(&a)?;
    let place = work_place(ws, &ticket)?;
    let repo = ws.root();
    let head = a
        .head_commit
        .clone()
        .ok_or_else(|| AssignmentError::BadResult {
            id: id.to_string(),
            reason: "the claim recorded no branch head; it cannot take a commit".into(),
        })?;
    let commit = match &report.commit {
        None => None,
        Some(c) => {
            let full =
                yoi_git::resolve_commit(repo, c).map_err(|e| AssignmentError::BadResult {
                    id: id.to_string(),
                    reason: format!("commit `{c}` is not in the repository: {e}"),
                })?;
            if full != *c {
                return Err(AssignmentError::BadResult {
                    id: id.to_string(),
                    reason: format!("`{c}` is not a full commit id"),
                });
            }
            Some(full)
        }
    };
    // A result kept without its contract (a lenient coder's, docs/pods.md) keeps a change; a
    // step of any other role is strict: its verdict or checks must be explicit.
    if report.contract_missing {
        let reason = if !Role::Coder.is(&a.role) {
            Some(format!(
                "a {} step never completes without its output contract",
                a.role
            ))
        } else if commit.as_deref().is_none_or(|c| c == head) {
            Some(format!(
                "a result without its output contract must carry the change it keeps (a commit past {head})"
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(AssignmentError::BadResult {
                id: id.to_string(),
                reason,
            });
        }
    }
    let mut scope_flag: Option<Vec<String>> = None;
    let moved_to = match commit.as_deref() {
        Some(c) if c != head && !Role::Coder.is(&a.role) => {
            return Err(AssignmentError::BadResult {
                id: id.to_string(),
                reason: format!(
                    "a {} works read-only at {head}; it cannot report the commit {c}",
                    a.role
                ),
            });
        }
        Some(c) if c != head => {
            if !yoi_git::is_ancestor(repo, &head, c)? {
                return Err(AssignmentError::BadResult {
                    id: id.to_string(),
                    reason: format!(
                        "commit {c} does not descend from {head}, where the attempt started"
                    ),
                });
            }
            let tickets_dir = ws
                .config
                .workspace
                .tickets_dir
                .trim_end_matches('/')
                .to_string();
            let touched = yoi_git::changed_under(repo, &head, c, &tickets_dir)?;
            if !touched.is_empty() {
                return Err(AssignmentError::TouchesTickets {
                    id: id.to_string(),
                    paths: touched,
                });
            }
            if let Some(outside) = outside_write_scope(ws, &a, &head, c)? {
                if ws.config.flow.write_scope == WriteScopeRule::Enforce {
                    drop(_guard);
                    return scope_round(
                        ws, index, caller, pod, id, fence, report, c, &outside, now,
                    );
                }
                scope_flag = Some(outside);
            }
            // The branch first, while the claim is still live and nothing else can end it (the
            // lock); the row after. Should the row fail to record, the branch is put back.
            yoi_git::move_branch(repo, &place.branch, &head, c)?;
            Some(c.to_string())
        }
        _ => None,
    };
    // `flag`: the attempt counts, and its result names the paths for the reviewer.
    let flagged;
    let report = match scope_flag {
        Some(outside) => {
            flagged = Report {
                outside_write_scope: outside,
                ..report.clone()
            };
            &flagged
        }
        None => report,
    };
    let how = Finish {
        status: AssignmentStatus::Completed,
        result: serde_json::to_string(report).ok(),
        usage: priced_usage(ws, Some(report)),
        error: None,
        log_path: report.log.clone(),
    };
    let finished = index.finish_assignment(id, fence, Some(pod), &how, None, now_ms);
    let finished = match finished {
        Ok(Some(row)) => row,
        other => {
            if let Some(c) = &moved_to {
                if let Err(e) = yoi_git::move_branch_back(repo, &place.branch, c, &head) {
                    tracing::error!(branch = %place.branch, error = %e, "could not put the branch back after a result failed to record");
                }
            }
            return match other {
                Err(e) => Err(e.into()),
                _ => Err(refusal(index, pod, id, fence)?),
            };
        }
    };
    index.touch_pod(pod, PodState::Idle, None, now_ms)?;
    spent(ws, index, &finished, Some(&pod_row), now);
    // Its agent got through: a rate limit's strikes are forgotten.
    if let Err(e) = crate::spend::got_through(index, &pod_row) {
        tracing::warn!(pod = %pod, error = %e, "could not clear a rate-limit pause");
    }
    let branch_head = moved_to.clone().unwrap_or(head);
    record(
        ws,
        &finished,
        "completed",
        Some(&branch_head),
        Some(report),
        None,
        now,
    )?;
    drop_attempt_worktree(ws, &finished);
    // A read-only step's worktree has done its job (a pod's own worktree is kept for its next
    // claim).
    if !Role::Coder.is(&finished.role) {
        if let Some(dir) = finished
            .workdir
            .as_deref()
            .filter(|d| !Path::new(d).starts_with(super::claim::pod_worktrees_dir(ws)))
        {
            if let Err(e) = yoi_git::remove_worktree(repo, Path::new(dir), false) {
                tracing::warn!(worktree = %dir, error = %e, "kept the worktree of a finished step");
            }
        }
    }
    // The flow's next step; should this fail, the flow sweep derives it again.
    if let Err(e) = super::flow::advance(ws, index, &ticket, now) {
        tracing::warn!(ticket = %ticket, error = %e, "could not hand out the next step yet");
    }
    Ok(Completed {
        assignment: id.to_string(),
        branch: place.branch,
        branch_head,
        moved: moved_to.is_some(),
    })
}

/// Record pod `pod`'s failure of `id` at `fence`: the row is failed and, when `retryable` and the
/// circuit allows, the step is handed out again in the same transaction; the third failure in a
/// row opens the ticket's circuit instead. Nothing changes when the claim is not live.
#[allow(clippy::too_many_arguments)]
pub fn fail(
    ws: &Workspace,
    index: &DbIndex,
    caller: &PodCaller,
    pod: &str,
    id: &str,
    fence: i64,
    reason: &str,
    retryable: bool,
    report: Option<&Report>,
    now: Timestamp,
) -> Result<Option<Assignment>, AssignmentError> {
    let pod_row = pod_of(index, caller, pod)?;
    let _guard = results_lock();
    let now_ms = now.unix_millis();
    let a = live_claim(index, pod, id, fence, now_ms)?;
    check_role(caller, &a, "fail")?;
    if let Some(rl) = report.and_then(|r| r.rate_limit.as_ref()) {
        return rate_limited(ws, index, &pod_row, &a, reason, rl, report, now);
    }
    let attempts = index.attempts_of(&a.ticket, &a.step)?;
    let in_a_row = 1 + trailing_failures(&attempts, &a.id);
    let next = (retryable && retries_left(ws, &a, in_a_row)).then(|| next_attempt(&a, now));
    let how = Finish {
        status: AssignmentStatus::Failed,
        result: report.and_then(|r| serde_json::to_string(r).ok()),
        usage: priced_usage(ws, report),
        error: Some(reason.to_string()),
        log_path: report.and_then(|r| r.log.clone()),
    };
    let Some(row) = index.finish_assignment(id, fence, Some(pod), &how, next.as_ref(), now_ms)?
    else {
        return Err(refusal(index, pod, id, fence)?);
    };
    index.touch_pod(pod, PodState::Idle, None, now_ms)?;
    spent(ws, index, &row, Some(&pod_row), now);
    record(ws, &row, "failed", None, report, Some(reason), now)?;
    if let Some(r) = report {
        super::kept::keep_under_ref(ws, &row, r);
    }
    drop_attempt_worktree(ws, &row);
    if next.is_none() {
        // Either the circuit opened or the pod said retrying is pointless: a person decides.
        let why = if retryable {
            format!("failed or timed out {in_a_row} times in a row")
        } else {
            format!("failed and its pod said retrying will not help ({reason})")
        };
        // An agent that reported `blocked` waits for a person's decision: the inbox tells that
        // apart from a step that keeps failing.
        let blocked = report.is_some_and(|r| r.outcome == ReportOutcome::Blocked);
        // An agent that cannot run is the pod's problem, not the step's: told apart too.
        let unusable = report.is_some_and(|r| r.agent_unusable);
        let attention = if blocked {
            AGENT_BLOCKED
        } else if unusable {
            AGENT_UNUSABLE
        } else {
            STEP_CIRCUIT_OPEN
        };
        open_circuit_as(ws, &row, &why, attention, now)?;
    }
    Ok(next)
}

/// An attempt whose agent asked a person (`YOI-RESULT: blocked` with `YOI-QUESTION:` lines):
/// it ends `blocked` — no failure, so no step circuit counts it — with nothing handed out
/// again, and its questions go into the thread as a `question` event, which the inbox shows as
/// `agent_question`. A person's answer (`yoi ticket answer`) hands the step out again, and the
/// next attempt's prompt begins with the questions and the answer. The branch does not move.
fn asked(
    ws: &Workspace,
    index: &DbIndex,
    caller: &PodCaller,
    (pod, id, fence): (&str, &str, i64),
    report: &Report,
    now: Timestamp,
) -> Result<Completed, AssignmentError> {
    let pod_row = pod_of(index, caller, pod)?;
    let guard = results_lock();
    let now_ms = now.unix_millis();
    let a = live_claim(index, pod, id, fence, now_ms)?;
    check_role(caller, &a, "complete")?;
    let reason = format!(
        "the agent asked a person {} and waits for the answer: {}",
        match report.questions.len() {
            0 => "through MCP".to_string(),
            n => format!("{n} question(s)"),
        },
        report.summary.as_deref().unwrap_or("no summary")
    );
    let how = Finish {
        status: AssignmentStatus::Blocked,
        result: serde_json::to_string(report).ok(),
        usage: priced_usage(ws, Some(report)),
        error: Some(reason.clone()),
        log_path: report.log.clone(),
    };
    let Some(row) = index.finish_assignment(id, fence, Some(pod), &how, None, now_ms)? else {
        return Err(refusal(index, pod, id, fence)?);
    };
    index.touch_pod(pod, PodState::Idle, None, now_ms)?;
    spent(ws, index, &row, Some(&pod_row), now);
    record(ws, &row, "blocked", None, Some(report), Some(&reason), now)?;
    drop_attempt_worktree(ws, &row);
    // Questions asked through the MCP tool are in the thread already. Should this server die
    // before the question is written, the flow sweep writes it (`recover_question`).
    super::questions::record_question(ws, &row, report, now)?;
    drop(guard);
    let place = work_place(ws, &ticket_of(&row)?)?;
    let head = yoi_git::resolve_commit(ws.root(), &place.branch)?;
    Ok(Completed {
        assignment: id.to_string(),
        branch: place.branch,
        branch_head: head,
        moved: false,
    })
}

/// Whether attempt `id` asked a person through the MCP tool (`ask_question`): its ticket's open
/// question is one this attempt recorded.
fn asked_through_mcp(ws: &Workspace, index: &DbIndex, id: &str) -> bool {
    let Ok(Some(a)) = index.assignment(id) else {
        return false;
    };
    let Ok(ticket) = ticket_of(&a) else {
        return false;
    };
    let Ok(item) = ws.read_item(&ticket) else {
        return false;
    };
    ws.read_thread(&ticket).is_ok_and(|thread| {
        ops::open_question(&thread, item.state).is_some_and(|q| q.get("assignment") == Some(id))
    })
}

/// The report's usage as recorded: with an estimated cost when its agent reported none.
fn priced_usage(ws: &Workspace, report: Option<&Report>) -> Option<String> {
    report
        .and_then(|r| r.usage.clone())
        .map(|u| crate::spend::priced(ws, u))
        .and_then(|u| serde_json::to_string(&u).ok())
}

/// Check the budgets after `row` ended; a failure to check is logged, never the attempt's.
fn spent(ws: &Workspace, index: &DbIndex, row: &Assignment, pod: Option<&PodRow>, now: Timestamp) {
    let agent = pod.and_then(|p| p.profile.as_deref());
    if let Err(e) = crate::spend::after_attempt(ws, index, row, agent, now) {
        tracing::warn!(assignment = %row.id, error = %e, "could not check the budgets after an attempt");
    }
}

/// An attempt its agent's provider refused for a rate limit or quota: it ends `rate_limited`,
/// counted as no failure; the pod's provider (or profile) pauses and the step is handed out
/// again at once, for a pod that is not paused (docs/budgets.md).
#[allow(clippy::too_many_arguments)]
fn rate_limited(
    ws: &Workspace,
    index: &DbIndex,
    pod: &PodRow,
    a: &Assignment,
    reason: &str,
    rl: &yoi_core::report::RateLimit,
    report: Option<&Report>,
    now: Timestamp,
) -> Result<Option<Assignment>, AssignmentError> {
    let now_ms = now.unix_millis();
    let next = next_attempt(a, now);
    let how = Finish {
        status: AssignmentStatus::RateLimited,
        result: report.and_then(|r| serde_json::to_string(r).ok()),
        usage: priced_usage(ws, report),
        error: Some(reason.to_string()),
        log_path: report.and_then(|r| r.log.clone()),
    };
    let Some(row) =
        index.finish_assignment(&a.id, a.fence, Some(&pod.id), &how, Some(&next), now_ms)?
    else {
        return Err(refusal(index, &pod.id, &a.id, a.fence)?);
    };
    index.touch_pod(&pod.id, PodState::Idle, None, now_ms)?;
    let pause = crate::spend::rate_limited(index, pod, rl, now_ms)?;
    let why = match &pause {
        Some(p) => format!(
            "{reason}; {} pauses until {}",
            p.subject,
            Timestamp::from_unix_millis(p.until_ms)
        ),
        None => reason.to_string(),
    };
    record(ws, &row, "rate_limited", None, report, Some(&why), now)?;
    drop_attempt_worktree(ws, &row);
    spent(ws, index, &row, Some(pod), now);
    Ok(Some(next))
}

/// After a person's `retry` of an in-progress ticket whose flow stopped, or their answer to an
/// agent's question: the step that stopped it — the latest attempt handed out, when it failed,
/// expired or ended `blocked` on a question — is handed out again
/// (attempt + 1); a ticket whose fix rounds ran out gets one more round. A ticket with a live
/// attempt has not stopped and gets nothing: its flow is still moving, and a second live step
/// would break the one-live-row rule (a merge sent back as `failed` to `merge-verify` is not a
/// step to hand out again — the simulation found that one). Returns the new attempts.
pub fn resume_after_retry(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    now: Timestamp,
) -> Result<Vec<Assignment>, AssignmentError> {
    let _guard = results_lock();
    let all = index.assignments_of(ticket.as_str())?;
    if all.iter().any(|a| a.status.is_live()) {
        return Ok(Vec::new());
    }
    // Ids are ULIDs of their creation time: the greatest is the flow's latest step.
    let latest = all
        .iter()
        .max_by(|a, b| (a.created_ms, a.id.as_str()).cmp(&(b.created_ms, b.id.as_str())));
    if let Some(last) = latest.filter(|a| {
        matches!(
            a.status,
            AssignmentStatus::Failed | AssignmentStatus::Expired | AssignmentStatus::Blocked
        )
    }) {
        let next = next_attempt(last, now);
        index.create_assignment(&next)?;
        return Ok(vec![next]);
    }
    Ok(super::flow::grant_round(ws, index, ticket, now)?
        .into_iter()
        .collect())
}

/// The validation commands of the frozen brief that a verifier's `report` has no result for
/// (`None` when the assignment is not a verifier's, or nothing is missing).
fn unchecked_commands(
    ws: &Workspace,
    index: &DbIndex,
    id: &str,
    report: &Report,
) -> Result<Option<Vec<String>>, AssignmentError> {
    let Some(a) = index.assignment(id)? else {
        return Ok(None);
    };
    if !Role::Verifier.is(&a.role) {
        return Ok(None);
    }
    let Some(packet) = super::packet(ws, &ticket_of(&a)?)? else {
        return Ok(None);
    };
    let missing: Vec<String> = packet
        .checks
        .commands
        .iter()
        .filter(|c| !report.checks.iter().any(|r| r.command == **c))
        .cloned()
        .collect();
    Ok((!missing.is_empty()).then_some(missing))
}

pub(crate) fn ticket_of(a: &Assignment) -> Result<TicketId, AssignmentError> {
    TicketId::parse(&a.ticket).map_err(|e| AssignmentError::Store(e.into()))
}

/// The paths the commits from `head` to `commit` change outside the frozen brief's write scope
/// (`None` when the brief names none, the role is not a coder's, or all are inside).
fn outside_write_scope(
    ws: &Workspace,
    a: &Assignment,
    head: &str,
    commit: &str,
) -> Result<Option<Vec<String>>, AssignmentError> {
    // An integrate step merges the target in: its diff holds everyone else's work too.
    if ws.config.flow.write_scope == WriteScopeRule::Off
        || !Role::Coder.is(&a.role)
        || yoi_core::ServiceStep::Integrate.is(&a.step)
    {
        return Ok(None);
    }
    let Some(packet) = super::packet(ws, &ticket_of(a)?)? else {
        return Ok(None);
    };
    let scope = &packet.packet.write_scope;
    if scope.is_empty() {
        return Ok(None);
    }
    let outside: Vec<String> = yoi_git::changed_paths(ws.root(), head, commit)?
        .into_iter()
        .filter(|p| !scope.iter().any(|s| yoi_core::scope::matches(s, p)))
        .collect();
    Ok((!outside.is_empty()).then_some(outside))
}

/// A coder's change that leaves the write scope (`[flow] write_scope = "enforce"`): the first
/// time, the attempt fails and the coder gets one round, starting from its own commit, with the
/// paths to move (or a reason to give); the second time in a row a person decides, told which
/// paths. The branch does not move either way.
#[allow(clippy::too_many_arguments)]
fn scope_round(
    ws: &Workspace,
    index: &DbIndex,
    caller: &PodCaller,
    pod: &str,
    id: &str,
    fence: i64,
    report: &Report,
    commit: &str,
    outside: &[String],
    now: Timestamp,
) -> Result<Completed, AssignmentError> {
    let a = index
        .assignment(id)?
        .ok_or_else(|| AssignmentError::NotFound { id: id.to_string() })?;
    let attempts = index.attempts_of(&a.ticket, &a.step)?;
    let again = attempts
        .iter()
        .filter(|p| p.attempt < a.attempt)
        .max_by_key(|p| p.attempt)
        .is_some_and(|p| {
            p.error
                .as_deref()
                .is_some_and(|e| e.starts_with(SCOPE_REASON))
        });
    let list = outside
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let reason = if again {
        format!("{SCOPE_REASON} again: {list}; a person decides whether the scope or the change is wrong")
    } else {
        format!(
            "{SCOPE_REASON}: {list}; the next attempt starts from this commit: move them inside the scope, or explain in the summary why they must change"
        )
    };
    // The first round starts from this commit (the work is kept); the second asks a person.
    let kept = Report {
        outcome: ReportOutcome::Failed,
        commit: Some(commit.to_string()),
        keep_work: true,
        outside_write_scope: outside.to_vec(),
        ..report.clone()
    };
    failed_instead(
        ws,
        index,
        caller,
        (pod, id, fence),
        &reason,
        !again,
        &kept,
        now,
    )
}

/// A result that `complete` takes as a failure (`fail` with `reason`), answered as a completion
/// that moved nothing: the branch where it is.
#[allow(clippy::too_many_arguments)]
fn failed_instead(
    ws: &Workspace,
    index: &DbIndex,
    caller: &PodCaller,
    (pod, id, fence): (&str, &str, i64),
    reason: &str,
    retryable: bool,
    report: &Report,
    now: Timestamp,
) -> Result<Completed, AssignmentError> {
    fail(
        ws,
        index,
        caller,
        pod,
        id,
        fence,
        reason,
        retryable,
        Some(report),
        now,
    )?;
    let a = index
        .assignment(id)?
        .ok_or_else(|| AssignmentError::NotFound { id: id.to_string() })?;
    let place = work_place(ws, &ticket_of(&a)?)?;
    let head = yoi_git::resolve_commit(ws.root(), &place.branch)?;
    Ok(Completed {
        assignment: id.to_string(),
        branch: place.branch,
        branch_head: head,
        moved: false,
    })
}

/// How a failure for a change outside the write scope begins.
const SCOPE_REASON: &str = "the change touches paths outside the brief's write scope";

/// Remove the worktree of an ended retry (`<ticket worktree>.attempt-N`): its commits are in
/// the repository (the pod commits what its agent left before it reports, and a kept result's
/// commit starts the next attempt), so nothing needs the folder. One with uncommitted changes
/// — a pod that died mid-run — is kept for a person (doctor names it); the ticket's own
/// worktree and pods' worktrees are never touched here.
pub(crate) fn drop_attempt_worktree(ws: &Workspace, a: &Assignment) {
    let Some(dir) = a.workdir.as_deref().map(Path::new) else {
        return;
    };
    let is_retry = dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.rsplit_once(".attempt-"))
        .is_some_and(|(_, n)| n.parse::<u32>().is_ok());
    if !is_retry || dir.starts_with(super::claim::pod_worktrees_dir(ws)) {
        return;
    }
    match yoi_git::remove_worktree(ws.root(), dir, false) {
        Ok(()) => tracing::debug!(worktree = %dir.display(), "removed an ended attempt's worktree"),
        Err(e) => {
            tracing::warn!(worktree = %dir.display(), error = %e, "kept an ended attempt's worktree")
        }
    }
}

/// Append the one `assignment` event of an ended attempt. A ticket that is no longer in
/// progress takes no event (its assignments were cancelled with it); that is not an error.
pub(crate) fn record(
    ws: &Workspace,
    a: &Assignment,
    outcome: &str,
    commit: Option<&str>,
    report: Option<&Report>,
    error: Option<&str>,
    now: Timestamp,
) -> Result<(), AssignmentError> {
    let mut attrs: Vec<(&str, String)> = vec![
        ("assignment", a.id.clone()),
        ("step", a.step.clone()),
        ("role", a.role.clone()),
        ("pod", a.claimed_by.clone().unwrap_or_else(|| "none".into())),
        ("attempt", a.attempt.to_string()),
        ("fence", a.fence.to_string()),
        ("outcome", outcome.to_string()),
    ];
    if let Some(c) = commit {
        attrs.push(("commit", c.to_string()));
    }
    if let Some(r) = report {
        attrs.push(("agent_commits", r.agent_commits.to_string()));
        if let Some(u) = &r.usage {
            attrs.push(("wall_ms", u.wall_ms.to_string()));
            attrs.push(("tokens_in", u.tokens_in.to_string()));
            attrs.push(("tokens_out", u.tokens_out.to_string()));
            if let Some(c) = u.cost_usd {
                attrs.push(("cost_usd", format!("{c:.6}")));
            }
        }
        if let Some(l) = &r.log {
            attrs.push(("log", l.clone()));
        }
        if let Some(s) = &r.sandbox {
            attrs.push(("sandbox", s.clone()));
        }
        if let Some(agent) = &r.agent {
            attrs.push(("agent", agent.clone()));
        }
        if !r.outside_write_scope.is_empty() {
            attrs.push(("outside_write_scope", r.outside_write_scope.join(" ")));
        }
        if r.follow_up {
            attrs.push(("follow_up", "true".into()));
        }
        if r.contract_missing {
            attrs.push(("contract_missing", "true".into()));
        }
        attrs.extend(super::decided::attrs(r));
    }
    let mut body = format!(
        "Attempt {} of `{}` ({}) {outcome}.",
        a.attempt, a.step, a.role
    );
    if let Some(c) = commit {
        body.push_str(&format!(" The branch is at {c}."));
    }
    if let Some(s) = report.and_then(|r| r.summary.as_deref()) {
        body.push_str(&format!("\n\nSummary: {s}"));
    }
    // The verdict, findings and validation results: the thread is the record.
    if let Some(r) = report {
        body.push_str(&super::decided::body(r));
    }
    if let Some(r) = report.filter(|r| r.contract_missing) {
        body.push_str(&format!(
            "\n\nContract missing: the agent's final message had no `YOI-RESULT` line{}; its \
             profile's lenient rule kept the change it made, and the summary is the last \
             paragraph of that message.",
            if r.follow_up {
                ", even after a follow-up turn asking for it"
            } else {
                ""
            }
        ));
    }
    if let Some(e) = error {
        body.push_str(&format!("\n\nReason: {e}"));
    }
    let ctx = Ctx::new(Principal::orchestrator(), now);
    match ops::record_attempt(ws, &ctx, &a.ticket, &attrs, &body) {
        Ok(_) => Ok(()),
        Err(yoi_store::StoreError::StaleState { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Stop handing a step out (the ticket's circuit for it) and say why in an `attention` event.
pub(crate) fn open_circuit(
    ws: &Workspace,
    a: &Assignment,
    why: &str,
    now: Timestamp,
) -> Result<(), AssignmentError> {
    open_circuit_as(ws, a, why, STEP_CIRCUIT_OPEN, now)
}

/// [`open_circuit`] with the `attention` reason to raise.
fn open_circuit_as(
    ws: &Workspace,
    a: &Assignment,
    why: &str,
    attention: &str,
    now: Timestamp,
) -> Result<(), AssignmentError> {
    let ctx = Ctx::new(Principal::orchestrator(), now);
    if super::on_failure(ws, a) == yoi_core::flow::OnFailure::ReturnToPlanning {
        // The flow says a failure of this step means the brief needs a person's decision.
        let req = ops::TransitionRequest {
            expected: Some(yoi_core::State::Inprogress),
            reason: Some(format!(
                "step `{}` {why} (attempt {}) and its flow says `on_failure: return_to_planning`; \
                 the branch and worktree are kept",
                a.step, a.attempt
            )),
            ..ops::TransitionRequest::default()
        };
        return match ops::return_to_planning(ws, &ctx, &a.ticket, &req) {
            Ok(_) | Err(yoi_store::StoreError::StaleState { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        };
    }
    let body = format!(
        "Step `{}` {why} (last: attempt {}); it is not handed out again. \
         Look at the attempts (`yoi assignment list --ticket {}`), fix the cause, then run `yoi ticket retry {}`.",
        a.step, a.attempt, a.ticket, a.ticket
    );
    match ops::attention(ws, &ctx, &a.ticket, attention, &body) {
        Ok(_) | Err(yoi_store::StoreError::StaleState { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
