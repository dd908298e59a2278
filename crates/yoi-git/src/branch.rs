//! Work branches. A branch is created at an exact commit and is never moved here: an existing
//! branch is accepted only when it already points at the wanted commit and no worktree has it
//! checked out (so a retried start can reuse it); anything else is refused with what was found.
//! [`delete_branch`] undoes a creation: it removes a branch only while it still points at the
//! commit it was created at and no worktree has it checked out, so no later work is dropped.
//! [`branch_exists`] and [`list_branches`] only read. [`create_ref`], [`delete_ref`] and
//! [`delete_refs_under`] write refs the server alone owns (a ticket's attempt refs), never a
//! branch or a tag.

use std::path::{Path, PathBuf};

use gix::refs::transaction::PreviousValue;

use crate::{repo, GitError};

/// What [`create_branch`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchOutcome {
    /// The branch did not exist and now points at the commit.
    Created,
    /// The branch already pointed at the commit and was free; nothing was written.
    Reused,
}

/// Create `refs/heads/<name>` at `commit` (a full commit id in hex) in the repository at
/// `repo_root`.
pub fn create_branch(
    repo_root: &Path,
    name: &str,
    commit: &str,
) -> Result<BranchOutcome, GitError> {
    let repo = repo::open(repo_root)?;
    let wanted = repo::peel_to_commit(&repo, repo_root, commit)?;
    let full_name = branch_ref_name(name)?;

    if let Some(mut existing) = repo
        .try_find_reference(full_name.as_ref())
        .map_err(|e| GitError::git(repo_root, "read branches", e))?
    {
        let points_at = existing
            .peel_to_id()
            .map_err(|e| GitError::git(repo_root, "read branches", e))?
            .detach();
        if points_at != wanted {
            return Err(GitError::BranchExists {
                branch: name.to_string(),
                points_at: points_at.to_string(),
                wanted: wanted.to_string(),
            });
        }
        ensure_free(&repo, &full_name, name, points_at)?;
        return Ok(BranchOutcome::Reused);
    }

    repo.reference(
        full_name,
        wanted,
        PreviousValue::MustNotExist,
        format!("branch: Created from {wanted}"),
    )
    .map_err(|e| GitError::git(repo_root, "create the branch", e))?;
    Ok(BranchOutcome::Created)
}

/// Delete `refs/heads/<name>` in the repository at `repo_root`, provided it still points at
/// `expected` (a commit id or revision) and is not checked out in any worktree.
pub fn delete_branch(repo_root: &Path, name: &str, expected: &str) -> Result<(), GitError> {
    let repo = repo::open(repo_root)?;
    let wanted = repo::peel_to_commit(&repo, repo_root, expected)?;
    let full_name = branch_ref_name(name)?;
    let existing = branch_at(&repo, repo_root, name, &full_name, wanted)?;
    ensure_free(&repo, &full_name, name, wanted)?;
    existing
        .delete()
        .map_err(|e| GitError::git(repo_root, "delete the branch", e))
}

/// A local branch: its short name and the commit it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchInfo {
    /// Short name, e.g. `yoi/01J…-fix-login`.
    pub name: String,
    /// The commit it points at (hex).
    pub head: String,
}

/// Whether the local branch `name` (short name) exists in the repository at `repo_root`.
pub fn branch_exists(repo_root: &Path, name: &str) -> Result<bool, GitError> {
    let repo = repo::open(repo_root)?;
    let full_name = branch_ref_name(name)?;
    Ok(repo
        .try_find_reference(full_name.as_ref())
        .map_err(|e| GitError::git(repo_root, "read branches", e))?
        .is_some())
}

/// The local branches whose short name starts with `prefix` (`""` for all), sorted by name, like
/// `git branch --list '<prefix>*'`. A branch that does not point at a commit is left out.
pub fn list_branches(repo_root: &Path, prefix: &str) -> Result<Vec<BranchInfo>, GitError> {
    let repo = repo::open(repo_root)?;
    let fail = |e: &dyn std::fmt::Display| GitError::git(repo_root, "list branches", e);
    let platform = repo.references().map_err(|e| fail(&e))?;
    let mut out = Vec::new();
    for reference in platform.local_branches().map_err(|e| fail(&e))? {
        let mut reference = reference.map_err(|e| fail(&e))?;
        let name = reference.name().shorten().to_string();
        if !name.starts_with(prefix) {
            continue;
        }
        let Ok(commit) = reference.peel_to_commit() else {
            continue;
        };
        out.push(BranchInfo {
            name,
            head: commit.id.to_string(),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// `refs/heads/<name>`, validated like git validates branch names.
pub(crate) fn branch_ref_name(name: &str) -> Result<gix::refs::FullName, GitError> {
    let invalid = |reason: String| GitError::InvalidBranchName {
        name: name.to_string(),
        reason,
    };
    if name.is_empty() || name.starts_with('-') || name == "HEAD" {
        return Err(invalid("not allowed as a branch name".into()));
    }
    gix::refs::FullName::try_from(format!("refs/heads/{name}")).map_err(|e| invalid(e.to_string()))
}

/// The branch `name` (`full_name`), which must exist and point at `expected`: else
/// [`GitError::UnknownBranch`] or [`GitError::BranchMoved`] naming where it points.
pub(crate) fn branch_at<'r>(
    repo: &'r gix::Repository,
    repo_root: &Path,
    name: &str,
    full_name: &gix::refs::FullName,
    expected: gix::ObjectId,
) -> Result<gix::Reference<'r>, GitError> {
    let Some(mut existing) = repo
        .try_find_reference(full_name.as_ref())
        .map_err(|e| GitError::git(repo_root, "read branches", e))?
    else {
        return Err(GitError::UnknownBranch {
            repo: repo_root.to_path_buf(),
            branch: name.to_string(),
        });
    };
    let points_at = existing
        .peel_to_id()
        .map_err(|e| GitError::git(repo_root, "read branches", e))?
        .detach();
    if points_at != expected {
        return Err(GitError::BranchMoved {
            branch: name.to_string(),
            points_at: points_at.to_string(),
            expected: expected.to_string(),
        });
    }
    Ok(existing)
}

/// Refuse with [`GitError::BranchCheckedOut`] (naming where the branch points) when a working
/// tree has the branch `full_name` checked out: yoi never moves, deletes or re-checks-out such a
/// branch under it.
pub(crate) fn ensure_free(
    repo: &gix::Repository,
    full_name: &gix::refs::FullName,
    name: &str,
    points_at: gix::ObjectId,
) -> Result<(), GitError> {
    let worktrees = checked_out_in(repo, full_name)?;
    if worktrees.is_empty() {
        return Ok(());
    }
    Err(GitError::BranchCheckedOut {
        branch: name.to_string(),
        points_at: points_at.to_string(),
        worktrees,
    })
}

/// The working trees (main and linked) whose HEAD is the branch `full_name`.
pub(crate) fn checked_out_in(
    repo: &gix::Repository,
    full_name: &gix::refs::FullName,
) -> Result<Vec<PathBuf>, GitError> {
    let fail = |e: gix::Error| GitError::git(repo.git_dir(), "list worktrees", e);
    let mut found = Vec::new();
    let head_fail = |e| GitError::git(repo.git_dir(), "read a worktree HEAD", e);
    for (i, wt_repo) in repo.worktrees_including_main().map_err(fail)?.enumerate() {
        // A linked worktree being added or removed at this moment has no HEAD to read yet (or
        // any more); like git, take it as holding no branch. The main worktree's must be read.
        let read = wt_repo
            .map_err(fail)
            .and_then(|r| r.head_name().map(|h| (h, r)).map_err(head_fail));
        let (head, wt_repo) = match read {
            Ok(read) => read,
            Err(e) if i == 0 => return Err(e),
            Err(_) => continue,
        };
        if head.as_ref() == Some(full_name) {
            found.extend(wt_repo.workdir().map(Path::to_path_buf));
        }
    }
    Ok(found)
}

/// Whether `name` is a ref yoi may write or delete itself: below `refs/`, outside
/// `refs/heads/` and `refs/tags/`, and not a folder.
fn owned_ref(name: &str) -> bool {
    name.starts_with("refs/")
        && !name.starts_with("refs/heads/")
        && !name.starts_with("refs/tags/")
        && !name.ends_with('/')
}

/// Create the one reference `name` at `commit` (a full commit id) when it is missing; `name`
/// must lie below `refs/` and outside `refs/heads/` and `refs/tags/`
/// (`refs/yoi/attempts/<ticket>/<attempt>.<fence>`). Whether it was created: a ref that
/// exists is left as it is, wherever it points (a pod's push got there first).
pub fn create_ref(repo_root: &Path, name: &str, commit: &str) -> Result<bool, GitError> {
    let fail = |e: &dyn std::fmt::Display| GitError::git(repo_root, "create a ref", e);
    if !owned_ref(name) {
        return Err(fail(&format!("{name:?} is not a ref yoi owns")));
    }
    let repo = repo::open(repo_root)?;
    let wanted = repo::peel_to_commit(&repo, repo_root, commit)?;
    if repo
        .try_find_reference(name)
        .map_err(|e| fail(&e))?
        .is_some()
    {
        return Ok(false);
    }
    match repo.reference(
        name,
        wanted,
        PreviousValue::MustNotExist,
        format!("yoi: kept {wanted}"),
    ) {
        Ok(_) => Ok(true),
        // Another writer made it between the read and the write: left as it is.
        Err(_)
            if repo
                .try_find_reference(name)
                .map_err(|e| fail(&e))?
                .is_some() =>
        {
            Ok(false)
        }
        Err(e) => Err(fail(&e)),
    }
}

/// [`delete_ref`], only while the reference still names `at` (compare-and-swap against the
/// value a caller judged it by, from [`refs_under_at`]): whether it was deleted. A reference
/// moved since, or gone, is left as it is.
pub fn delete_ref_at(repo_root: &Path, name: &str, at: &str) -> Result<bool, GitError> {
    let fail = |e: &dyn std::fmt::Display| GitError::git(repo_root, "delete a ref", e);
    if !owned_ref(name) {
        return Err(fail(&format!("{name:?} is not a ref yoi owns")));
    }
    let Ok(at) = gix::ObjectId::from_hex(at.as_bytes()) else {
        return Ok(false);
    };
    let repo = repo::open(repo_root)?;
    let names = |r: &gix::Reference<'_>| r.target().try_id() == Some(at.as_ref());
    match repo.try_find_reference(name).map_err(|e| fail(&e))? {
        // `delete` itself requires the value it was found at, so a write between the two is
        // refused, not overwritten.
        Some(r) if names(&r) => match r.delete() {
            Ok(()) => Ok(true),
            Err(e) => match repo.try_find_reference(name).map_err(|e| fail(&e))? {
                Some(now) if names(&now) => Err(fail(&e)),
                _ => Ok(false),
            },
        },
        _ => Ok(false),
    }
}

/// Delete the one reference `name`, which must lie below `refs/` and outside `refs/heads/` and
/// `refs/tags/` (`refs/yoi/attempts/<ticket>/<attempt>.<fence>`); whether it was there.
pub fn delete_ref(repo_root: &Path, name: &str) -> Result<bool, GitError> {
    let fail = |e: &dyn std::fmt::Display| GitError::git(repo_root, "delete a ref", e);
    if !owned_ref(name) {
        return Err(fail(&format!("{name:?} is not a ref yoi owns")));
    }
    let repo = repo::open(repo_root)?;
    match repo.try_find_reference(name).map_err(|e| fail(&e))? {
        Some(r) => {
            r.delete().map_err(|e| fail(&e))?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// The full names of the references that start with `prefix`, which must lie below `refs/`
/// and end with `/` (`refs/yoi/attempts/`), sorted.
pub fn refs_under(repo_root: &Path, prefix: &str) -> Result<Vec<String>, GitError> {
    Ok(refs_under_at(repo_root, prefix)?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

/// [`refs_under`] with the object each names (empty for a symbolic one), as one look: what a
/// caller later deletes with [`delete_ref_at`] only while it still names that.
pub fn refs_under_at(repo_root: &Path, prefix: &str) -> Result<Vec<(String, String)>, GitError> {
    let fail = |e: &dyn std::fmt::Display| GitError::git(repo_root, "list refs", e);
    if !prefix.starts_with("refs/") || !prefix.ends_with('/') {
        return Err(fail(&format!("{prefix:?} is not a folder of refs")));
    }
    let repo = repo::open(repo_root)?;
    let platform = repo.references().map_err(|e| fail(&e))?;
    let mut refs = Vec::new();
    for reference in platform.all().map_err(|e| fail(&e))? {
        let reference = reference.map_err(|e| fail(&e))?;
        let name = reference.name().as_bstr().to_string();
        if name.starts_with(prefix) {
            let at = reference
                .target()
                .try_id()
                .map(|id| id.to_string())
                .unwrap_or_default();
            refs.push((name, at));
        }
    }
    refs.sort();
    Ok(refs)
}

/// Delete every reference whose full name starts with `prefix`, which must lie below `refs/`
/// and outside `refs/heads/` and `refs/tags/` (`refs/yoi/attempts/<ticket>/`); how many were
/// deleted.
pub fn delete_refs_under(repo_root: &Path, prefix: &str) -> Result<usize, GitError> {
    let fail = |e: &dyn std::fmt::Display| GitError::git(repo_root, "delete refs", e);
    if !prefix.starts_with("refs/")
        || prefix.starts_with("refs/heads/")
        || prefix.starts_with("refs/tags/")
        || !prefix.ends_with('/')
    {
        return Err(fail(&format!(
            "{prefix:?} is not a folder of refs yoi owns"
        )));
    }
    let names = refs_under(repo_root, prefix)?;
    let repo = repo::open(repo_root)?;
    for name in &names {
        if let Some(r) = repo
            .try_find_reference(name.as_str())
            .map_err(|e| fail(&e))?
        {
            r.delete().map_err(|e| fail(&e))?;
        }
    }
    Ok(names.len())
}
