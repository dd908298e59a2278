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
    let repo = ws.root();
    if yoi_git::resolve_commit(repo, &commit).ok().as_deref() != Some(commit.as_str())
        || !yoi_git::is_ancestor(repo, head, &commit).unwrap_or(false)
    {
        return Ok(None);
    }
    let tickets = ws
        .config
        .workspace
        .tickets_dir
        .trim_end_matches('/')
        .to_string();
    if !yoi_git::changed_under(repo, head, &commit, &tickets)
        .map(|t| t.is_empty())
        .unwrap_or(false)
    {
        return Ok(None);
    }
    Ok(Some(KeptWork {
        attempt: prev.attempt,
        commit,
        reason: prev.error.clone(),
    }))
}
