//! Linked worktrees: add one for an existing branch, list them, tell whether one holds uncommitted
//! work, remove one, prune the records of those whose folder is gone.
//!
//! Never loses work: [`remove_worktree`] refuses a worktree with modified, staged or untracked
//! files unless forced, and names them. Only linked worktrees are ever removed, never the main
//! one. Branches are kept when a worktree goes.
//!
//! The worktrees yoi makes for its tickets leave folders out ([`add_worktree_sparse`]): no file
//! under `.yoi/tickets/` is written, and the index holds the folder as one entry, a sparse index
//! in git's own format (the crate's `sparse` module). Nothing here reads a tree under a left-out
//! folder — not to check a worktree out, not to read its status, not to move it
//! ([`reset_detached`]) — so a ticket worktree costs the same with 10,000 tickets committed as
//! with none. git reads such an index and expands it in memory; when git writes it back in full
//! form (skip-worktree files), yoi reads that too, and [`reset_detached`] folds it into one entry
//! again.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use gix::progress::Discard;
use gix::worktree::add::Head;
use gix::worktree::remove::Force;

use crate::branch::{branch_ref_name, ensure_free};
use crate::{repo, sparse, status, GitError};

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
    add_worktree_sparse(repo_root, path, commit, &[])
}

/// [`add_worktree_detached`] without the files under any of `leave_out` (folder paths such as
/// `.yoi/tickets/`), as a sparse checkout with a sparse index leaves them: each such folder is
/// one index entry (mode `040000`, the folder's tree id, path `.yoi/tickets/`, the skip-worktree
/// bit) and the index carries git's `sdir` extension. The folder's trees are never read, so the
/// cost of the worktree does not grow with what the folder holds. `git status`, `git add -A`,
/// [`crate::commit_all`] and yoi's own status all take the folder as unchanged, and a commit made
/// there (by yoi, or by git, which expands the entry into skip-worktree files) keeps its tree
/// exactly as it was. yoi leaves its ticket files out of the worktrees it makes: they are the
/// service's business, not the agent's, and checking thousands of them out for every step made
/// the cost of a worktree grow with the backlog.
pub fn add_worktree_sparse(
    repo_root: &Path,
    path: &Path,
    commit: &str,
    leave_out: &[&str],
) -> Result<(), GitError> {
    let repo = repo::open(repo_root)?;
    let id = repo::peel_to_commit(&repo, repo_root, commit)?;
    if leave_out.is_empty() {
        return checkout_new(&repo, path, Head::Detached(id));
    }
    ensure_vacant(path)?;
    let never = AtomicBool::new(false);
    let prepared = retry_busy(|| repo.prepare_add_worktree(path, Head::Detached(id), &never))
        .map_err(|e| GitError::git(path, "add the worktree", e))?;
    let made = check_out_sparse(prepared.repo(), id, leave_out)
        .and_then(|()| sparse::quiet_git(prepared.repo()));
    match made {
        Ok(()) => prepared
            .persist()
            .map(|_| ())
            .map_err(|e| GitError::git(path, "add the worktree", e)),
        Err(e) => {
            let _ = prepared.rollback();
            Err(e)
        }
    }
}

/// Write the tree of `commit` into the (new, empty) worktree of `wt`, except the folders
/// `leave_out`, and its sparse index: one folder entry per left-out folder, whose trees are never
/// read (module `sparse`).
fn check_out_sparse(
    wt: &gix::Repository,
    commit: gix::ObjectId,
    leave_out: &[&str],
) -> Result<(), GitError> {
    let dir = wt.workdir().unwrap_or(wt.git_dir()).to_path_buf();
    let fail = |e: &dyn std::fmt::Display| GitError::git(&dir, "check out the worktree", e);
    let tree = wt
        .find_commit(commit)
        .map_err(|e| fail(&e))?
        .tree_id()
        .map_err(|e| fail(&e))?
        .detach();
    let mut options = wt
        .checkout_options(gix::worktree::stack::state::attributes::Source::IdMapping)
        .map_err(|e| fail(&e))?;
    options.destination_is_initially_empty = true;
    let folders: Vec<String> = leave_out.iter().map(|p| sparse::folder(p)).collect();
    let folders: Vec<&str> = folders.iter().map(String::as_str).collect();
    let state = sparse::index_of_tree(wt, &dir, tree, &folders, Some(options.validate))?;
    let mut index = gix::index::File::from_state(state, wt.index_path());
    let objects = wt.objects.clone().into_arc().map_err(|e| fail(&e))?;
    let never = AtomicBool::new(false);
    let outcome = gix::worktree::state::checkout(
        &mut index,
        dir.clone(),
        objects,
        &Discard,
        &Discard,
        &never,
        options,
    )
    .map_err(|e| fail(&e))?;
    if !outcome.errors.is_empty() || !outcome.collisions.is_empty() {
        return Err(GitError::Git {
            path: dir.clone(),
            action: "check out the worktree",
            reason: format!(
                "checkout failed for {} paths ({} collisions)",
                outcome.errors.len(),
                outcome.collisions.len()
            ),
        });
    }
    index.write(Default::default()).map_err(|e| fail(&e))?;
    Ok(())
}

/// Run `add` again (up to five times, a few milliseconds apart) while it fails because another
/// worktree of the repository was being added or removed at the same moment: gix reads every
/// registered worktree's folder first and fails on one that is half there. Any other failure is
/// returned at once.
fn retry_busy<T>(mut add: impl FnMut() -> Result<T, gix::Error>) -> Result<T, gix::Error> {
    let mut tries = 0;
    loop {
        match add() {
            Err(e) if tries < 5 && e.to_string().contains("iterate worktree directories") => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(5 * tries));
            }
            other => return other,
        }
    }
}

/// What [`reset_detached`] did with a worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reset {
    /// It is now detached at the commit; `written` paths outside the left-out folders had to
    /// change (a left-out folder is one index entry, whatever changed under it).
    Moved { written: usize },
    /// Nothing was changed: it holds these untracked, ignored or modified paths, so it is not
    /// exactly any commit.
    NotPristine { paths: Vec<String> },
}

/// Move the linked worktree at `path` to a detached HEAD at `commit` in place, writing only
/// the paths that differ between its HEAD and `commit`; each folder of `leave_out` becomes the
/// one folder entry of `commit`'s folder, as in [`add_worktree_sparse`], without reading what is
/// under it (an index git wrote back in full form is folded into that entry again). Only a
/// pristine worktree is moved: one with any untracked, ignored or modified file is left exactly
/// as it is ([`Reset::NotPristine`]), so the result is always a worktree identical to a fresh
/// checkout of `commit`. yoi keeps one such worktree per read-only pod and moves it from commit
/// to commit instead of checking out the whole tree for every verification and review.
pub fn reset_detached(path: &Path, commit: &str, leave_out: &[&str]) -> Result<Reset, GitError> {
    let repo = repo::open(path)?;
    let look = status::Look {
        untracked: gix::status::UntrackedFiles::Collapsed,
        ignored: true,
    };
    let paths = status::paths(&repo, path, look)?;
    if !paths.is_empty() {
        return Ok(Reset::NotPristine { paths });
    }
    let head = repo
        .head_id()
        .map_err(|e| GitError::git(path, "read HEAD", e))?
        .detach();
    let target = repo::peel_to_commit(&repo, path, commit)?;
    if head == target {
        return Ok(Reset::Moved { written: 0 });
    }
    let folders: Vec<String> = leave_out.iter().map(|p| sparse::folder(p)).collect();
    let folders: Vec<&str> = folders.iter().map(String::as_str).collect();
    let changed = crate::merge::changed_outside(&repo, path, head, target, &folders)?;
    if !folders.is_empty() {
        sparse::quiet_git(&repo)?;
    }
    let refs: Vec<&String> = changed.iter().collect();
    crate::merge::update_worktree(path, target, &refs, leave_out)?;
    repo.reference(
        "HEAD",
        target,
        gix::refs::transaction::PreviousValue::MustExistAndMatch(gix::refs::Target::Object(head)),
        format!("yoi: move to {target}"),
    )
    .map_err(|e| GitError::git(path, "move HEAD", e))?;
    Ok(Reset::Moved {
        written: changed.len(),
    })
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
    ensure_vacant(path)?;
    let never = AtomicBool::new(false);
    let (_wt_repo, outcome) = retry_busy(|| repo.add_worktree(path, head.clone(), Discard, &never))
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

/// Refuse a destination that exists and is not an empty folder.
fn ensure_vacant(path: &Path) -> Result<(), GitError> {
    let occupied = path.exists()
        && std::fs::read_dir(path)
            .map(|mut entries| entries.next().is_some())
            .unwrap_or(true);
    if occupied {
        return Err(GitError::DestinationExists {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// Which worktrees a listing reads the status (dirtiness) of. A status walks the whole tree:
/// in the main worktree of a workspace with 10,000 tickets that is most of a listing's cost, so
/// callers that only need paths, branches and heads ask for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusOf {
    /// Every worktree, the main one included.
    All,
    /// The linked worktrees only; the main one's `dirty` is `None`.
    Linked,
    /// None: every `dirty` is `None`.
    Nothing,
}

/// Every working tree of the repository at `repo_root`: the main one first, then the linked ones.
pub fn list_worktrees(repo_root: &Path) -> Result<Vec<WorktreeInfo>, GitError> {
    list_worktrees_with(repo_root, StatusOf::All)
}

/// [`list_worktrees`], reading the status of the worktrees `status` names only.
pub fn list_worktrees_with(
    repo_root: &Path,
    status: StatusOf,
) -> Result<Vec<WorktreeInfo>, GitError> {
    let repo = repo::open(repo_root)?;
    let main = repo
        .main_repo()
        .map_err(|e| GitError::git(repo_root, "open the main worktree", e))?;
    let mut out = Vec::new();
    if let Some(workdir) = main.workdir() {
        let main_status = status == StatusOf::All;
        out.push(info(workdir.to_path_buf(), Some(&main), false, main_status));
    }
    for proxy in repo
        .worktrees()
        .map_err(|e| GitError::git(repo_root, "list worktrees", e))?
    {
        let Ok(path) = proxy.base() else { continue };
        let prunable = proxy.is_prunable();
        let wt_repo = proxy.into_repo_with_possibly_inaccessible_worktree().ok();
        out.push(info(
            path,
            wt_repo.as_ref(),
            prunable,
            status != StatusOf::Nothing,
        ));
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
    Ok(info(path.to_path_buf(), Some(&wt), false, true))
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

/// Why a worktree is not detached at the commit [`detached_at`] was asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotDetachedAt {
    /// No worktree of a repository is at the path.
    Missing,
    /// It is on `branch` (`None`: detached) at `head`.
    Elsewhere {
        branch: Option<String>,
        head: Option<String>,
    },
}

/// Whether the worktree at `path` is detached exactly at `commit` (its HEAD only, no status):
/// the folder a step is handed must be, so that its commits move no branch and sit on nobody
/// else's.
pub fn detached_at(path: &Path, commit: &str) -> Result<(), NotDetachedAt> {
    match worktree_head(path) {
        Err(_) => Err(NotDetachedAt::Missing),
        Ok((None, Some(head))) if head == commit => Ok(()),
        Ok((branch, head)) => Err(NotDetachedAt::Elsewhere { branch, head }),
    }
}

fn info(
    path: PathBuf,
    repo: Option<&gix::Repository>,
    prunable: bool,
    status: bool,
) -> WorktreeInfo {
    let branch = repo
        .and_then(|r| r.head_name().ok().flatten())
        .map(|name| name.shorten().to_string());
    let head = repo.and_then(|r| r.head_id().ok()).map(|id| id.to_string());
    let dirty = (status && path.is_dir())
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
    let look = status::Look {
        untracked: gix::status::UntrackedFiles::Collapsed,
        ignored: false,
    };
    status::paths(&repo, worktree_path, look)
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
    let mut checked_here = false;
    if !force && target.base().is_dir() {
        let changes = uncommitted_changes(target.base())?;
        if !changes.is_empty() {
            return Err(GitError::Dirty {
                path: path.to_path_buf(),
                changes,
            });
        }
        // gix checks the status again before it removes, in a way that fails on a sparse index.
        // For one, the status just read stands, and the one other thing gix's check refuses —
        // initialized submodules — is checked here.
        let wt = repo::open(target.base())?;
        let index = wt
            .index_or_empty()
            .map_err(|e| GitError::git(path, "read the index", e))?;
        if index.is_sparse() {
            let submodules = populated_submodules(&wt, &index);
            if !submodules.is_empty() {
                return Err(GitError::Dirty {
                    path: path.to_path_buf(),
                    changes: submodules,
                });
            }
            checked_here = true;
        }
    }
    let force = if force || checked_here {
        Force::DiscardChanges
    } else {
        Force::Never
    };
    target
        .remove(force, Discard)
        .map_err(|e| GitError::git(path, "remove the worktree", e))
}

/// The submodules initialized in the worktree of `wt`: the submodule entries of `index` whose
/// folder holds a `.git`, and the worktree's own `modules/` folder of submodule repositories.
fn populated_submodules(wt: &gix::Repository, index: &gix::index::State) -> Vec<String> {
    let mut found = Vec::new();
    if wt.git_dir().join("modules").is_dir() {
        found.push(wt.git_dir().join("modules").display().to_string());
    }
    if let Some(dir) = wt.workdir() {
        for entry in index.entries() {
            let path = entry.path(index).to_string();
            if entry.mode == gix::index::entry::Mode::COMMIT
                && dir.join(&path).join(".git").exists()
            {
                found.push(path);
            }
        }
    }
    found
}

/// Remove the linked worktree at `path` whatever state it is in — uncommitted files, a lock, a
/// checkout that a killed process left half made — together with git's record of it. Only for
/// folders yoi owns outright and whose contents are never work (a pod's worktree for read-only
/// steps); a person's worktree goes through [`remove_worktree`], which refuses all of that.
/// A `path` that is not a worktree is removed as a plain folder.
pub fn discard_worktree(repo_root: &Path, path: &Path) -> Result<(), GitError> {
    let repo = repo::open(repo_root)?;
    let fail = |e: &dyn std::fmt::Display| GitError::git(path, "discard the worktree", e);
    let wanted = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    for proxy in repo
        .worktrees()
        .map_err(|e| GitError::git(repo_root, "list worktrees", e))?
    {
        let Ok(base) = proxy.base() else { continue };
        let base = std::fs::canonicalize(&base).unwrap_or(base);
        if base == wanted {
            std::fs::remove_dir_all(proxy.git_dir()).map_err(|e| fail(&e))?;
        }
    }
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(fail(&e)),
        _ => Ok(()),
    }
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
