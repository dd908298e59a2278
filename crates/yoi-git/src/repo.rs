//! Opening repositories and resolving revisions. Read-only: nothing here writes to a repository.

use std::path::{Path, PathBuf};

use crate::GitError;

/// The repository that holds a folder.
#[derive(Debug, Clone)]
pub struct RepoInfo {
    /// The top of the working tree.
    pub workdir: PathBuf,
    /// The branch checked out there (`None` when HEAD is detached or unborn-less).
    pub branch: Option<String>,
}

/// Find the repository containing `start` (walking up, like git).
pub fn discover(start: &Path) -> Result<RepoInfo, GitError> {
    if !start.is_dir() {
        return Err(GitError::Open {
            path: start.to_path_buf(),
            reason: "no such folder".into(),
        });
    }
    // gix reports "not found" and "unreadable" through one error type; both mean there is no
    // repository yoi can use here, and the message says which.
    let repo = gix::discover(start).map_err(|e| GitError::NotARepository {
        path: start.to_path_buf(),
        reason: e.to_string(),
    })?;
    let workdir = repo
        .workdir()
        .ok_or_else(|| GitError::Bare {
            path: start.to_path_buf(),
        })?
        .to_path_buf();
    let branch = repo
        .head_name()
        .ok()
        .flatten()
        .map(|name| name.shorten().to_string());
    Ok(RepoInfo { workdir, branch })
}

/// git's `user.name` as the repository at `root` sees it (its own configuration, then the
/// user's and the system's), when set and not blank.
pub fn user_name(root: &Path) -> Option<String> {
    let repo = open(root).ok()?;
    let name = repo.config_snapshot().string("user.name")?.to_string();
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// Open the repository whose working tree (main or linked) is exactly `root`.
pub(crate) fn open(root: &Path) -> Result<gix::Repository, GitError> {
    if !root.is_dir() {
        return Err(GitError::Open {
            path: root.to_path_buf(),
            reason: "no such folder".into(),
        });
    }
    gix::open(root).map_err(|e| GitError::NotARepository {
        path: root.to_path_buf(),
        reason: e.to_string(),
    })
}

/// The commit id (hex) that `rev` names in the repository at `repo_root`.
///
/// `rev` is a branch name (`main`), a full or partial ref name (`refs/heads/main`,
/// `origin/main`, `HEAD`), or a full commit id. Anything that does not end at a commit is
/// [`GitError::UnknownRev`].
pub fn resolve_commit(repo_root: &Path, rev: &str) -> Result<String, GitError> {
    let repo = open(repo_root)?;
    peel_to_commit(&repo, repo_root, rev).map(|id| id.to_string())
}

pub(crate) fn peel_to_commit(
    repo: &gix::Repository,
    repo_root: &Path,
    rev: &str,
) -> Result<gix::ObjectId, GitError> {
    let unknown = |reason: String| GitError::UnknownRev {
        repo: repo_root.to_path_buf(),
        rev: rev.to_string(),
        reason,
    };
    let full_id = (rev.len() == repo.object_hash().len_in_hex())
        .then(|| gix::ObjectId::from_hex(rev.as_bytes()).ok())
        .flatten();
    if let Some(id) = full_id {
        let object = repo.find_object(id).map_err(|e| unknown(e.to_string()))?;
        return object
            .try_into_commit()
            .map(|c| c.id)
            .map_err(|e| unknown(e.to_string()));
    }
    let mut reference = repo
        .find_reference(rev)
        .map_err(|e| unknown(e.to_string()))?;
    reference
        .peel_to_commit()
        .map(|c| c.id)
        .map_err(|e| unknown(e.to_string()))
}
