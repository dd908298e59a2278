//! The one error type of yoi's git layer: a variant per outcome a caller can act on, each naming
//! the repository, branch, commit or path involved. gix errors never cross this boundary as types;
//! they are carried as text in [`GitError::Git`] together with the operation that failed.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum GitError {
    #[error("{} is not inside a git repository ({reason})", path.display())]
    NotARepository { path: PathBuf, reason: String },
    #[error("{} is a bare repository; yoi needs a working tree", path.display())]
    Bare { path: PathBuf },
    #[error("could not read the repository at {}: {reason}", path.display())]
    Open { path: PathBuf, reason: String },
    #[error("{rev:?} does not name a commit in {} ({reason})", repo.display())]
    UnknownRev {
        repo: PathBuf,
        rev: String,
        reason: String,
    },
    #[error("{name:?} is not a valid branch name ({reason})")]
    InvalidBranchName { name: String, reason: String },
    #[error("branch {branch} does not exist in {}", repo.display())]
    UnknownBranch { repo: PathBuf, branch: String },
    #[error("branch {branch} already exists and points at {points_at}, not {wanted}")]
    BranchExists {
        branch: String,
        points_at: String,
        wanted: String,
    },
    #[error("branch {branch} now points at {points_at}, not {expected}; it is kept")]
    BranchMoved {
        branch: String,
        points_at: String,
        expected: String,
    },
    #[error("commit {commit} does not descend from {head}, the head of branch {branch}; only work built on the branch can move it")]
    NotDescendant {
        branch: String,
        head: String,
        commit: String,
    },
    #[error("branch {branch} (at {points_at}) is checked out in {worktrees:?}")]
    BranchCheckedOut {
        branch: String,
        points_at: String,
        worktrees: Vec<PathBuf>,
    },
    #[error("{} already exists and is not an empty folder", path.display())]
    DestinationExists { path: PathBuf },
    #[error("{} is not a linked worktree of {}", path.display(), repo.display())]
    NotAWorktree { repo: PathBuf, path: PathBuf },
    #[error("worktree {} has uncommitted changes or untracked files: {changes:?}", path.display())]
    Dirty { path: PathBuf, changes: Vec<String> },
    #[error("could not {action} in {}: {reason}", path.display())]
    Git {
        path: PathBuf,
        action: &'static str,
        reason: String,
    },
}

impl GitError {
    /// The class an entry point maps to an exit code and HTTP status.
    pub fn class(&self) -> yoi_core::ErrorClass {
        use yoi_core::ErrorClass as C;
        match self {
            GitError::NotARepository { .. } | GitError::Bare { .. } => C::Setup,
            GitError::Open { .. } | GitError::Git { .. } => C::Internal,
            GitError::UnknownRev { .. } | GitError::UnknownBranch { .. } => C::NotFound,
            GitError::InvalidBranchName { .. } => C::Invalid,
            GitError::BranchExists { .. }
            | GitError::BranchMoved { .. }
            | GitError::NotDescendant { .. }
            | GitError::BranchCheckedOut { .. }
            | GitError::DestinationExists { .. }
            | GitError::Dirty { .. } => C::Conflict,
            GitError::NotAWorktree { .. } => C::NotFound,
        }
    }

    /// Wrap a gix failure of `action` at `path`.
    pub(crate) fn git(path: &std::path::Path, action: &'static str, err: impl ToString) -> Self {
        GitError::Git {
            path: path.to_path_buf(),
            action,
            reason: err.to_string(),
        }
    }
}
