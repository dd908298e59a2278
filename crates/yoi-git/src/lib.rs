//! yoi's git layer, on gix. Everything yoi does to a repository goes through here; the rest of
//! yoi never shells out to git.
//!
//! For now: finding the repository that holds a folder and the branch checked out there.
//! Worktrees, branches and merges come with the routing work.

use std::path::{Path, PathBuf};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum GitError {
    #[error("{} is not inside a git repository ({reason})", path.display())]
    NotARepository { path: PathBuf, reason: String },
    #[error("{} is a bare repository; yoi needs a working tree", path.display())]
    Bare { path: PathBuf },
    #[error("could not read the repository at {}: {reason}", path.display())]
    Open { path: PathBuf, reason: String },
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn discover_finds_the_workdir_and_branch_from_a_subfolder() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "trunk"]);
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        let info = discover(&sub).unwrap();
        assert_eq!(
            info.workdir.canonicalize().unwrap(),
            dir.path().canonicalize().unwrap()
        );
        assert_eq!(info.branch.as_deref(), Some("trunk"));
    }

    #[test]
    fn discover_refuses_a_plain_folder() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            discover(dir.path()),
            Err(GitError::NotARepository { .. })
        ));
    }
}
