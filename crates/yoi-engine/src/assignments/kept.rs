//! Retries keep the work (docs/pods.md): a coder's attempt after one that its own pod failed
//! for a reason that is not about its change — its contract, its timeout, an error its agent
//! reported, each after the pod killed the agent's process group (`Report::keep_work`) —
//! starts from that attempt's commit instead of the branch head.
//!
//! Only from a row that ended `failed` with such a report: an attempt that expired, was
//! cancelled or whose result was refused by fence never reaches this (an expired or cancelled
//! row records no result, and a refused one changes no row), so its commits stay off the
//! branch. The commit must be a full id in the repository, descend from the head the failed
//! attempt started at, which must still be the branch head, and leave the ticket files alone.
//! The new attempt's claim is still bound to the branch head: its result moves the branch by
//! compare-and-swap from there, exactly as any other.
//!
//! The kept commit is held under the failed attempt's own ref ([`keep_under_ref`]), so a pod
//! without the server's disk can fetch it as its start, and git's pruning cannot take it while
//! a person has yet to `retry`.

use serde::Serialize;
use yoi_core::report::Report;
use yoi_db::{Assignment, AssignmentStatus, DbIndex};
use yoi_store::Workspace;

/// What an attempt starts from when it keeps an earlier attempt's work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct KeptWork {
    /// The earlier attempt, its commit (where the new worktree is detached) and why it ended.
    pub attempt: i64,
    pub commit: String,
    pub reason: Option<String>,
}

/// The work attempt `a` (a coder's, not the first) keeps from the attempt before it, with the
/// ticket branch at `head`; `None` when there is none to keep.
pub(crate) fn kept_work(
    ws: &Workspace,
    index: &DbIndex,
    a: &Assignment,
    head: &str,
) -> Result<Option<KeptWork>, String> {
    if !yoi_core::Role::Coder.is(&a.role) || a.attempt <= 1 {
        return Ok(None);
    }
    let attempts = index
        .attempts_of(&a.ticket, &a.step)
        .map_err(|e| e.to_string())?;
    let Some(prev) = attempts
        .iter()
        .filter(|p| p.attempt < a.attempt)
        .max_by_key(|p| p.attempt)
    else {
        return Ok(None);
    };
    if prev.status != AssignmentStatus::Failed || prev.head_commit.as_deref() != Some(head) {
        return Ok(None);
    }
    let Some(report) = prev
        .result
        .as_deref()
        .and_then(|r| serde_json::from_str::<Report>(r).ok())
    else {
        return Ok(None);
    };
    let Some(commit) = report.commit.filter(|c| report.keep_work && c != head) else {
        return Ok(None);
    };
    if !keepable(ws, head, &commit) {
        return Ok(None);
    }
    Ok(Some(KeptWork {
        attempt: prev.attempt,
        commit,
        reason: prev.error.clone(),
    }))
}

/// Whether `commit` can be an attempt's start on top of `head`: a full commit id in the
/// repository that descends from `head` and leaves the ticket files alone.
pub(crate) fn keepable(ws: &Workspace, head: &str, commit: &str) -> bool {
    let repo = ws.root();
    if yoi_git::resolve_commit(repo, commit).ok().as_deref() != Some(commit)
        || !yoi_git::is_ancestor(repo, head, commit).unwrap_or(false)
    {
        return false;
    }
    let tickets = ws.config.workspace.tickets_dir.trim_end_matches('/');
    yoi_git::changed_under(repo, head, commit, tickets).is_ok_and(|t| t.is_empty())
}

/// Keep the commit of `row`, an attempt that just failed with `report` keeping its work, under
/// the attempt's own ref (`refs/yoi/attempts/<ticket>/<attempt>.<fence>`) when no push put it
/// there. A local pod's commit is otherwise under no ref at all (its worktree goes or moves on):
/// a pod without the server's disk could not fetch it as the next attempt's start — git's
/// upload-pack serves only what a ref reaches, under protocol v0 — and git's pruning could take
/// it before a person's `retry`. The ref goes as any failed attempt's does
/// ([`super::attempt_ref::collect`]). Failing to write it fails nothing: the next attempt of a
/// pod on the server's disk starts from the commit all the same.
pub(crate) fn keep_under_ref(ws: &Workspace, row: &Assignment, report: &Report) {
    let (Some(commit), Some(head)) = (report.commit.as_deref(), row.head_commit.as_deref()) else {
        return;
    };
    let coder = yoi_core::Role::Coder.is(&row.role);
    if !coder || !report.keep_work || commit == head || !keepable(ws, head, commit) {
        return;
    }
    let name = super::attempt_ref::AttemptRef::of(row).name();
    match yoi_git::create_ref(ws.root(), &name, commit) {
        Ok(true) => {
            tracing::info!(reference = %name, commit, "kept a failed attempt's work under its ref")
        }
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(reference = %name, error = %e, "could not keep a failed attempt's work under its ref")
        }
    }
}
