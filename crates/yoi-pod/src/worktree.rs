//! What the pod checks and does in the git worktree the server handed out: the folder must be
//! detached at the attempt's head before an agent starts there ([`check_workdir`]); after a
//! coder, what it left uncommitted is committed under the pod's name and its own commits are
//! counted ([`settle_commits`]); after a reviewer, the folder must be exactly as it was read
//! ([`review_problem`]).
//!
//! The ticket branch is the server's to move, from the commit the attempt reports; starting the
//! agent on a detached head at the attempt's commit is what puts its work there and on nobody
//! else's. A folder that fails a check fails the attempt, and the step is handed out again in a
//! fresh worktree.

use std::path::Path;

use yoi_core::report::Verdict;

use crate::client::Work;

/// The folder the server handed out must be a worktree detached at the head the attempt
/// starts from: an agent never runs on a branch (only the server moves the ticket branch) nor
/// on top of someone else's commits. A folder that is not that fails the attempt, and the step
/// is handed out again in a fresh worktree.
pub(crate) fn check_workdir(work: &Work) -> Result<(), String> {
    let dir = Path::new(&work.workdir);
    match yoi_git::detached_at(dir, work.start()) {
        Ok(()) => Ok(()),
        Err(yoi_git::NotDetachedAt::Missing) => Err(format!(
            "the working directory {} is missing or not a git worktree (`yoi ticket doctor` says how to restore it)",
            dir.display()
        )),
        Err(yoi_git::NotDetachedAt::Elsewhere { branch, head }) => Err(format!(
            "the working directory {} is not detached at {} (branch {branch:?}, head {head:?}); only the server moves the ticket branch",
            dir.display(),
            work.start()
        )),
    }
}

/// Why a reviewer's verdict does not count, if it does not: it must name a verdict, and the
/// reviewer must have left the exact commit it read untouched (HEAD where it was, nothing
/// changed) — a verdict on anything else is void.
pub(crate) fn review_problem(work: &Work, verdict: Option<&str>) -> Option<String> {
    match verdict {
        None => {
            return Some(
                "the reviewer's final message has no `YOI-VERDICT: approve|request_changes` line"
                    .into(),
            )
        }
        Some(v) if Verdict::parse(v).is_none() => {
            return Some(format!(
                "`YOI-VERDICT: {v}` must be approve or request_changes"
            ))
        }
        Some(_) => {}
    }
    let dir = Path::new(&work.workdir);
    match yoi_git::head_of(dir) {
        Ok(h) if h == work.head_commit => {}
        Ok(h) => {
            return Some(format!(
                "the reviewer moved HEAD from {} to {h}; its verdict is void",
                work.head_commit
            ))
        }
        Err(e) => return Some(format!("reading the reviewed worktree: {e}")),
    }
    match yoi_git::uncommitted_changes(dir) {
        Ok(c) if c.is_empty() => None,
        Ok(c) => Some(format!(
            "the reviewer changed {} in a read-only review; its verdict is void",
            c.join(", ")
        )),
        Err(e) => Some(format!("reading the reviewed worktree: {e}")),
    }
}

/// Bring the commits the agent made in its own object folder into the repository (each object
/// checked against its id), so the pod and the server can read them; nothing when it made none.
pub(crate) fn bring_in_commits(work: &Work, objects: &Path) -> Result<(), String> {
    let dir = Path::new(&work.workdir);
    let head = yoi_git::head_unpeeled(dir).map_err(|e| e.to_string())?;
    if head == work.start() || !objects.is_dir() {
        return Ok(());
    }
    yoi_git::import_objects(dir, objects, &head)
        .map(|n| tracing::debug!(objects = n, "brought the agent's commits in"))
        .map_err(|e| format!("bringing the agent's commits in: {e}"))
}

/// Count the commits the agent made and commit what it left; the working directory's head,
/// when it is past the head the attempt's result must descend from (an attempt that keeps an
/// earlier one's work reports that work even when it adds nothing).
pub(crate) fn settle_commits(work: &Work, agent: &str) -> Result<(Option<String>, u32), String> {
    let dir = Path::new(&work.workdir);
    let head_now = yoi_git::head_of(dir).map_err(|e| e.to_string())?;
    let agent_commits = if head_now == work.start() {
        0
    } else {
        yoi_git::commits_between(dir, work.start(), &head_now).map_err(|e| e.to_string())?
    };
    let who = yoi_git::Identity {
        name: format!("yoi pod ({agent})"),
        email: "pod@yoi.invalid".into(),
        time_secs: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
    };
    let message = format!(
        "{}: {} (attempt {})\n\nYOI-Ticket: {}\nYOI-Assignment: {}\n",
        work.ticket, work.title, work.assignment.attempt, work.ticket, work.assignment.id
    );
    yoi_git::commit_all(dir, &message, &who).map_err(|e| e.to_string())?;
    let head = yoi_git::head_of(dir).map_err(|e| e.to_string())?;
    Ok(((head != work.head_commit).then_some(head), agent_commits))
}
