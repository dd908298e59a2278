//! Reading history and moving a work branch by compare-and-swap.
//!
//! [`move_branch`] is the one way yoi moves a ticket branch after it was created: only from the
//! exact commit the caller read (`PreviousValue::MustExistAndMatch`), only forward (the new
//! commit descends from the old one), and only while no worktree has the branch checked out (a
//! checkout would be left behind its branch, looking dirty). Anything else is refused with what
//! was found and nothing is written. [`is_ancestor`] and [`changed_under`] only read.

use std::path::Path;

use gix::refs::transaction::PreviousValue;
use gix::refs::Target;

use crate::branch::{branch_at, branch_ref_name, ensure_free};
use crate::{repo, GitError};

/// Whether `ancestor` is `descendant` or one of its ancestors (both commit ids or revisions).
pub fn is_ancestor(repo_root: &Path, ancestor: &str, descendant: &str) -> Result<bool, GitError> {
    let repo = repo::open(repo_root)?;
    let a = repo::peel_to_commit(&repo, repo_root, ancestor)?;
    let d = repo::peel_to_commit(&repo, repo_root, descendant)?;
    if a == d {
        return Ok(true);
    }
    let walk = repo
        .rev_walk([d])
        .all()
        .map_err(|e| GitError::git(repo_root, "walk the history", e))?;
    for info in walk {
        let info = info.map_err(|e| GitError::git(repo_root, "walk the history", e))?;
        if info.id == a {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The entries directly under `dir` (a folder path inside the repository, e.g. `.yoi/tickets`)
/// whose content differs between commit `from` and commit `to`, sorted: added, removed or
/// changed files and folders, each as `dir/<name>`. Empty when the folder is the same in both.
pub fn changed_under(
    repo_root: &Path,
    from: &str,
    to: &str,
    dir: &str,
) -> Result<Vec<String>, GitError> {
    let repo = repo::open(repo_root)?;
    let entries = |rev: &str| -> Result<Vec<(String, gix::ObjectId)>, GitError> {
        let id = repo::peel_to_commit(&repo, repo_root, rev)?;
        let fail = |e: &dyn std::fmt::Display| GitError::git(repo_root, "read a tree", e);
        let commit = repo.find_commit(id).map_err(|e| fail(&e))?;
        let tree = commit.tree().map_err(|e| fail(&e))?;
        let Some(entry) = tree.lookup_entry_by_path(dir).map_err(|e| fail(&e))? else {
            return Ok(Vec::new());
        };
        if !entry.mode().is_tree() {
            return Ok(vec![(dir.to_string(), entry.object_id())]);
        }
        let sub = entry.object().map_err(|e| fail(&e))?.into_tree();
        let decoded = sub.decode().map_err(|e| fail(&e))?;
        Ok(decoded
            .entries
            .iter()
            .map(|e| (format!("{dir}/{}", e.filename), e.oid.to_owned()))
            .collect())
    };
    let before = entries(from)?;
    let after = entries(to)?;
    let mut changed: Vec<String> = before
        .iter()
        .filter(|b| !after.contains(b))
        .chain(after.iter().filter(|a| !before.contains(a)))
        .map(|(name, _)| name.clone())
        .collect();
    changed.sort();
    changed.dedup();
    Ok(changed)
}

/// Move `refs/heads/<name>` from `expected` to `new` (commit ids), refusing unless the branch
/// still points at `expected`, `new` descends from it, and no worktree has the branch checked
/// out. Moving to the commit it already points at is a no-op.
pub fn move_branch(
    repo_root: &Path,
    name: &str,
    expected: &str,
    new: &str,
) -> Result<(), GitError> {
    let repo = repo::open(repo_root)?;
    let full_name = branch_ref_name(name)?;
    let old = repo::peel_to_commit(&repo, repo_root, expected)?;
    let new_id = repo::peel_to_commit(&repo, repo_root, new)?;
    branch_at(&repo, repo_root, name, &full_name, old)?;
    if new_id == old {
        return Ok(());
    }
    if !is_ancestor(repo_root, &old.to_string(), &new_id.to_string())? {
        return Err(GitError::NotDescendant {
            branch: name.to_string(),
            head: old.to_string(),
            commit: new_id.to_string(),
        });
    }
    ensure_free(&repo, &full_name, name, old)?;
    repo.reference(
        full_name,
        new_id,
        PreviousValue::MustExistAndMatch(Target::Object(old)),
        format!("yoi: move {name} from {old} to {new_id}"),
    )
    .map_err(|e| GitError::git(repo_root, "move the branch", e))?;
    Ok(())
}

/// Put `refs/heads/<name>` back from `current` to `previous` (compare-and-swap, no ancestry
/// check): the undo of a [`move_branch`] whose result could not be recorded.
pub fn move_branch_back(
    repo_root: &Path,
    name: &str,
    current: &str,
    previous: &str,
) -> Result<(), GitError> {
    let repo = repo::open(repo_root)?;
    let full_name = branch_ref_name(name)?;
    let cur = repo::peel_to_commit(&repo, repo_root, current)?;
    let prev = repo::peel_to_commit(&repo, repo_root, previous)?;
    repo.reference(
        full_name,
        prev,
        PreviousValue::MustExistAndMatch(Target::Object(cur)),
        format!("yoi: put {name} back from {cur} to {prev}"),
    )
    .map_err(|e| GitError::git(repo_root, "move the branch back", e))?;
    Ok(())
}
