//! What `cancel` does with the worktree of an in-progress ticket (DESIGN §4): a clean worktree is
//! removed, a dirty one is kept and reported, a missing one is reported. The branch is always
//! kept: it holds the work.
//!
//! It happens in two steps around the state change. [`inspect`] runs inside the lock before
//! anything is written and decides; the decision goes into the close event (the `worktree`
//! attribute and a sentence of its body). [`Disposal::carry_out`] runs once the state change is
//! written, and only then removes a clean worktree — never forced, so a file written in the
//! meantime keeps it. The cancel is already recorded by then and is not undone: a removal that
//! fails becomes a note on the outcome, and doctor reports the leftover as `worktree.orphan`.
//!
//! Nothing happens without a git repository around the workspace or without an
//! `accepted_plan` record naming a worktree. A folder that is not a worktree of the repository
//! is never removed.

use std::path::PathBuf;

use yoi_core::TicketId;
use yoi_git::GitError;

use crate::error::StoreError;
use crate::git;
use crate::workspace::Workspace;

/// The close event attribute that says what happened to the worktree.
pub(super) const ATTR: &str = "worktree";

/// What cancel does with one ticket's worktree, decided before the state change is written.
#[derive(Debug)]
pub(super) struct Disposal {
    repo: PathBuf,
    /// As recorded in the accepted plan: relative to the repository root.
    worktree: String,
    path: PathBuf,
    /// The branch named in the accepted plan, and whether it exists.
    branch: Option<(String, bool)>,
    verdict: Verdict,
}

#[derive(Debug)]
enum Verdict {
    /// A clean, registered worktree: removed once the state change is written.
    Remove,
    KeptDirty {
        changes: Vec<String>,
    },
    /// Its status (or the repository's worktree list) could not be read; kept.
    KeptUnreadable {
        reason: String,
    },
    /// The folder exists but is not a worktree of this repository; left alone.
    KeptUnregistered,
    /// The folder is gone; `registered` when git still holds its record.
    Missing {
        registered: bool,
    },
}

/// Decide what to do with the worktree of ticket `id` (the caller holds the lock and has checked
/// that the ticket is in progress). `None` when there is nothing to do.
pub(super) fn inspect(ws: &Workspace, id: &TicketId) -> Result<Option<Disposal>, StoreError> {
    let Some(repo) = git::repo_root(ws.root()) else {
        return Ok(None);
    };
    let plan = ws.read_plan(id)?;
    let Some(accepted) = git::latest_accepted(plan.iter()) else {
        return Ok(None);
    };
    let Some(worktree) = accepted.worktree.clone() else {
        return Ok(None);
    };
    let path = ws.root().join(&worktree);
    let branch = accepted.branch.clone().map(|b| {
        // When the branch cannot be read it is still not deleted: say it is kept.
        let exists = yoi_git::branch_exists(&repo, &b).unwrap_or(true);
        (b, exists)
    });
    let verdict = verdict(&repo, &path);
    Ok(Some(Disposal {
        repo,
        worktree,
        path,
        branch,
        verdict,
    }))
}

fn verdict(repo: &std::path::Path, path: &std::path::Path) -> Verdict {
    // A link on the way could lead git to another folder: it is never inspected or removed.
    if let Some(link) = crate::beneath::link_on_path(repo, path) {
        return Verdict::KeptUnreadable {
            reason: format!(
                "{} is a symbolic link, and yoi follows no link in a worktree's path",
                link.display()
            ),
        };
    }
    let registered = match yoi_git::list_worktrees_with(repo, yoi_git::StatusOf::Nothing) {
        Ok(list) => {
            let wanted = git::canonical(path);
            list.iter()
                .skip(1)
                .any(|w| git::canonical(&w.path) == wanted)
        }
        Err(e) => {
            return Verdict::KeptUnreadable {
                reason: e.to_string(),
            }
        }
    };
    if !path.exists() {
        return Verdict::Missing { registered };
    }
    if !registered {
        return Verdict::KeptUnregistered;
    }
    match yoi_git::uncommitted_changes(path) {
        Ok(changes) if changes.is_empty() => Verdict::Remove,
        Ok(changes) => Verdict::KeptDirty { changes },
        Err(e) => Verdict::KeptUnreadable {
            reason: e.to_string(),
        },
    }
}

fn files(n: usize) -> String {
    if n == 1 {
        "1 file".into()
    } else {
        format!("{n} files")
    }
}

impl Disposal {
    /// The value of the close event's `worktree` attribute.
    pub(super) fn attr(&self) -> &'static str {
        match self.verdict {
            Verdict::Remove => "removed",
            Verdict::KeptDirty { .. } => "kept-dirty",
            Verdict::KeptUnreadable { .. } => "kept-unreadable",
            Verdict::KeptUnregistered => "kept-unregistered",
            Verdict::Missing { .. } => "missing",
        }
    }

    /// The sentence the close event's body ends with, naming the worktree and the branch.
    pub(super) fn sentence(&self) -> String {
        let w = &self.worktree;
        let what = match &self.verdict {
            Verdict::Remove => format!("The worktree `{w}` was clean and is removed."),
            Verdict::KeptDirty { changes } => format!(
                "The worktree `{w}` is kept: it has uncommitted changes ({}).",
                files(changes.len())
            ),
            Verdict::KeptUnreadable { reason } => {
                format!("The worktree `{w}` is kept: its status could not be read ({reason}).")
            }
            Verdict::KeptUnregistered => {
                format!("`{w}` is kept: it is not a worktree of this repository.")
            }
            Verdict::Missing { .. } => format!("The worktree `{w}` was already gone."),
        };
        match &self.branch {
            Some((b, true)) => format!("{what} The branch `{b}` is kept."),
            Some((b, false)) => format!("{what} The branch `{b}` no longer exists."),
            None => what,
        }
    }

    /// Act on the decision now that the state change is written; returns the notes for the
    /// outcome. Removes a clean worktree (never forced); everything else stays as it is.
    pub(super) fn carry_out(self) -> Vec<String> {
        let w = &self.worktree;
        let what = match &self.verdict {
            Verdict::Remove => match yoi_git::remove_worktree(&self.repo, &self.path, false) {
                Ok(()) => format!("removed the worktree {w} (it was clean)"),
                Err(GitError::Dirty { changes, .. }) => format!(
                    "kept the worktree {w}: it gained uncommitted changes while the ticket was cancelled ({})",
                    files(changes.len())
                ),
                Err(e) => format!(
                    "could not remove the clean worktree {w} ({e}); remove it with `git worktree remove {w}`"
                ),
            },
            Verdict::KeptDirty { changes } => format!(
                "kept the worktree {w}: it has uncommitted changes ({})",
                files(changes.len())
            ),
            Verdict::KeptUnreadable { reason } => {
                format!("kept the worktree {w}: its status could not be read ({reason})")
            }
            Verdict::KeptUnregistered => {
                format!("left {w} alone: it is not a worktree of this repository")
            }
            Verdict::Missing { registered: true } => format!(
                "the worktree {w} was already gone; `git worktree prune` drops its record"
            ),
            Verdict::Missing { registered: false } => {
                format!("the worktree {w} was already gone")
            }
        };
        let note = match &self.branch {
            Some((b, true)) => format!("{what}; the branch {b} is kept"),
            Some((b, false)) => format!("{what}; the branch {b} no longer exists"),
            None => what,
        };
        vec![note]
    }
}
