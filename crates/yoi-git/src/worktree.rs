//! Linked worktrees: add one for an existing branch, list them, tell whether one holds uncommitted
//! work, remove one, prune the records of those whose folder is gone.
//!
//! Never loses work: [`remove_worktree`] refuses a worktree with modified, staged or untracked
//! files unless forced, and names them. Only linked worktrees are ever removed, never the main
//! one. Branches are kept when a worktree goes.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use gix::progress::Discard;
use gix::worktree::add::Head;
use gix::worktree::remove::Force;

use crate::branch::{branch_ref_name, ensure_free};
use crate::{repo, GitError};

/// One working tree of a repository, main or linked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeInfo {
    /// Its folder, as recorded by git.
    pub path: PathBuf,
    /// The branch checked out (short name), `None` when detached or unreadable.
    pub branch: Option<String>,
    /// The commit checked out (hex), `None` when unborn or unreadable.
    pub head: Option<String>,
    /// Whether it holds uncommitted work; `None` when its folder is gone or unreadable.
    pub dirty: Option<bool>,
    /// Its folder is gone and it is not locked, so `git worktree prune` would drop its record.
    /// Always false for the main worktree.
    pub prunable: bool,
}

/// Create a linked worktree at `path` with `branch` (an existing local branch, short name)
/// checked out, like `git worktree add <path> <branch>`. `path` must not exist or be an empty
/// folder, and the branch must not be checked out anywhere. On failure nothing is left behind.
///
/// Files are written by one thread per core (gix's `parallel` feature), or by as many as the
/// repository's `checkout.workers` allows: creating thousands of files is bound by the kernel's
/// inode allocation, not by yoi, and that work splits across cores where git's default does not.
pub fn add_worktree(repo_root: &Path, path: &Path, branch: &str) -> Result<(), GitError> {
    let repo = repo::open(repo_root)?;
    let head = attached_head(&repo, repo_root, branch)?;
    checkout_new(&repo, path, head)
}

/// Create a linked worktree at `path` with a detached HEAD at `commit` (a commit id or
/// revision), like `git worktree add --detach <path> <commit>`. Commits made there move no
/// branch: yoi's pods work in detached worktrees and only the server moves a work branch (by
/// compare-and-swap, [`crate::move_branch`]). Same guarantees as [`add_worktree`].
pub fn add_worktree_detached(repo_root: &Path, path: &Path, commit: &str) -> Result<(), GitError> {
    let repo = repo::open(repo_root)?;
    let id = repo::peel_to_commit(&repo, repo_root, commit)?;
    checkout_new(&repo, path, Head::Detached(id))
}

/// The HEAD of a new worktree on `branch`, refusing a missing or checked-out branch.
fn attached_head(repo: &gix::Repository, repo_root: &Path, branch: &str) -> Result<Head, GitError> {
    let full_name = branch_ref_name(branch)?;
    if repo
        .try_find_reference(full_name.as_ref())
        .map_err(|e| GitError::git(repo_root, "read branches", e))?
        .is_none()
    {
        return Err(GitError::UnknownBranch {
            repo: repo_root.to_path_buf(),
            branch: branch.to_string(),
        });
    }
    let points_at =
        repo::peel_to_commit(repo, repo_root, full_name.as_bstr().to_string().as_str())?;
    ensure_free(repo, &full_name, branch, points_at)?;
    Ok(Head::Attached(full_name))
}

/// Add and check out a worktree at `path` (which must not exist or be empty) with `head`.
fn checkout_new(repo: &gix::Repository, path: &Path, head: Head) -> Result<(), GitError> {
    let occupied = path.exists()
        && std::fs::read_dir(path)
            .map(|mut entries| entries.next().is_some())
            .unwrap_or(true);
    if occupied {
        return Err(GitError::DestinationExists {
            path: path.to_path_buf(),
        });
    }
    let never = AtomicBool::new(false);
    let (_wt_repo, outcome) = repo
        .add_worktree(path, head, Discard, &never)
        .map_err(|e| GitError::git(path, "add the worktree", e))?;
    if !outcome.errors.is_empty() || !outcome.collisions.is_empty() {
        // The worktree is registered but incomplete; take it away again rather than hand out a
        // checkout that differs from the branch.
        let reason = format!(
            "checkout failed for {} paths ({} collisions)",
            outcome.errors.len(),
            outcome.collisions.len()
        );
        let _ = repo.remove_worktree(path, Force::DiscardChanges, Discard);
        return Err(GitError::Git {
            path: path.to_path_buf(),
            action: "check out the worktree",
            reason,
        });
    }
    Ok(())
}

/// Every working tree of the repository at `repo_root`: the main one first, then the linked ones.
pub fn list_worktrees(repo_root: &Path) -> Result<Vec<WorktreeInfo>, GitError> {
    let repo = repo::open(repo_root)?;
    let main = repo
        .main_repo()
        .map_err(|e| GitError::git(repo_root, "open the main worktree", e))?;
    let mut out = Vec::new();
    if let Some(workdir) = main.workdir() {
        out.push(info(workdir.to_path_buf(), Some(&main), false));
    }
    for proxy in repo
        .worktrees()
        .map_err(|e| GitError::git(repo_root, "list worktrees", e))?
    {
        let Ok(path) = proxy.base() else { continue };
        let prunable = proxy.is_prunable();
        let wt_repo = proxy.into_repo_with_possibly_inaccessible_worktree().ok();
        out.push(info(path, wt_repo.as_ref(), prunable));
    }
    Ok(out)
}

/// The worktree at `path` alone (its branch, head and dirtiness), without listing the others;
/// `GitError::NotAWorktree` when `path` is not a linked worktree of the repository at
/// `repo_root`.
pub fn worktree_info(repo_root: &Path, path: &Path) -> Result<WorktreeInfo, GitError> {
    let main = repo::open(repo_root)?;
    let not = || GitError::NotAWorktree {
        repo: repo_root.to_path_buf(),
        path: path.to_path_buf(),
    };
    let wt = gix::open(path).map_err(|_| not())?;
    let same_repo = wt.common_dir().canonicalize().ok() == main.common_dir().canonicalize().ok();
    if !same_repo || wt.workdir().is_none() || wt.git_dir() == main.git_dir() {
        return Err(not());
    }
    Ok(info(path.to_path_buf(), Some(&wt), false))
}

/// The HEAD of the worktree at `path` as `(branch, commit)`, read without a status (cheap):
/// `branch` is `None` when HEAD is detached. `GitError::NotAWorktree` when `path` is no
/// working tree of a repository.
pub fn worktree_head(path: &Path) -> Result<(Option<String>, Option<String>), GitError> {
    let wt = gix::open(path).map_err(|_| GitError::NotAWorktree {
        repo: path.to_path_buf(),
        path: path.to_path_buf(),
    })?;
    let branch = wt
        .head_name()
        .ok()
        .flatten()
        .map(|n| n.shorten().to_string());
    let head = wt.head_id().ok().map(|id| id.to_string());
    Ok((branch, head))
}

fn info(path: PathBuf, repo: Option<&gix::Repository>, prunable: bool) -> WorktreeInfo {
    let branch = repo
        .and_then(|r| r.head_name().ok().flatten())
        .map(|name| name.shorten().to_string());
    let head = repo.and_then(|r| r.head_id().ok()).map(|id| id.to_string());
    let dirty = path
        .is_dir()
        .then(|| {
            uncommitted_changes(&path)
                .ok()
                .map(|changes| !changes.is_empty())
        })
        .flatten();
    WorktreeInfo {
        path,
        branch,
        head,
        dirty,
        prunable,
    }
}

/// Whether the working tree at `worktree_path` has staged or unstaged changes to tracked files,
/// or untracked files that are not ignored.
pub fn is_dirty(worktree_path: &Path) -> Result<bool, GitError> {
    Ok(!uncommitted_changes(worktree_path)?.is_empty())
}

/// The paths `git status --porcelain` would report for `worktree_path` (modified, staged and
/// untracked files; an untracked folder counts once, named without its trailing `/`), sorted.
/// Empty when it is clean.
pub fn uncommitted_changes(worktree_path: &Path) -> Result<Vec<String>, GitError> {
    let repo = repo::open(worktree_path)?;
    let fail = |e: gix::Error| GitError::git(worktree_path, "read the status", e);
    let iter = repo
        .status(Discard)
        .map_err(fail)?
        .untracked_files(gix::status::UntrackedFiles::Collapsed)
        .into_iter(Vec::new())
        .map_err(fail)?;
    let mut paths = Vec::new();
    for item in iter {
        let item = item.map_err(fail)?;
        paths.push(item.location().to_string());
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Remove the linked worktree at `path` (its folder and its record under `<common>/worktrees/`).
/// Refuses with [`GitError::Dirty`] when it holds uncommitted work, unless `force`. The main
/// worktree is never removed. Its branch is kept.
pub fn remove_worktree(repo_root: &Path, path: &Path, force: bool) -> Result<(), GitError> {
    let repo = repo::open(repo_root)?;
    let target = repo
        .prepare_remove_worktree(path)
        .map_err(|_| GitError::NotAWorktree {
            repo: repo_root.to_path_buf(),
            path: path.to_path_buf(),
        })?;
    if !force && target.base().is_dir() {
        let changes = uncommitted_changes(target.base())?;
        if !changes.is_empty() {
            return Err(GitError::Dirty {
                path: path.to_path_buf(),
                changes,
            });
        }
    }
    let force = if force {
        Force::DiscardChanges
    } else {
        Force::Never
    };
    target
        .remove(force, Discard)
        .map_err(|e| GitError::git(path, "remove the worktree", e))
}

/// Remove the records of linked worktrees whose folder no longer exists (locked ones are kept),
/// like `git worktree prune --expire now`. Returns the folders they pointed at.
pub fn prune_worktrees(repo_root: &Path) -> Result<Vec<PathBuf>, GitError> {
    let repo = repo::open(repo_root)?;
    let mut pruned = Vec::new();
    for proxy in repo
        .worktrees()
        .map_err(|e| GitError::git(repo_root, "list worktrees", e))?
    {
        if !proxy.is_prunable() {
            continue;
        }
        let admin = proxy.git_dir().to_path_buf();
        let base = proxy.base().unwrap_or_else(|_| admin.clone());
        std::fs::remove_dir_all(&admin)
            .map_err(|e| GitError::git(&admin, "prune the worktree record", e))?;
        pruned.push(base);
    }
    Ok(pruned)
}
