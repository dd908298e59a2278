//! yoi's forge client (docs/forge.md): one [`Forge`] trait — open, find and merge a change
//! request, read its checks and reviews, post a commit status or a comment, ask a person's
//! permission — and its GitHub implementation over REST ([`github::GitHub`]). Gitea/Forgejo and
//! GitLab can follow behind the same trait.
//!
//! What it guarantees: the credential ([`credential::Secret`]) is never formatted — its `Debug`
//! and `Display` print a placeholder, errors carry URLs and statuses but never a header — and
//! git receives it through a credential helper reading a private file ([`push`]), never in a
//! URL or argv. A rate limit is honoured by sending nothing until the time GitHub named
//! ([`ForgeError::RateLimited`]). What it refuses: deciding anything. Whether a pull request may
//! merge is the gate in `yoi_core::forge::gate`, applied by the engine; this crate only reports
//! what the forge says and carries out a call.
//!
//! Blocking, like the engine that calls it: no async runtime, and no clock of its own (the
//! caller hands one in, so tests and the simulation drive time).

pub mod credential;
pub mod github;
pub mod push;

use serde::{Deserialize, Serialize};
use thiserror::Error;
use yoi_core::forge::gate::{CheckResult, Required, Review};
use yoi_core::forge::MergeMethod;

pub use credential::{Credential, Secret};

/// Seconds since the Unix epoch, from whatever clock the caller uses.
pub type Clock = std::sync::Arc<dyn Fn() -> u64 + Send + Sync>;

/// What went wrong talking to the forge. No variant carries the credential.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ForgeError {
    #[error("the forge at {url} did not answer: {reason}")]
    Unreachable { url: String, reason: String },
    /// Nothing is sent before `until` (Unix seconds): the primary limit's reset, or now plus
    /// the secondary limit's `Retry-After`.
    #[error(
        "the forge's {kind} rate limit is reached; nothing is sent before {until} (Unix time)"
    )]
    RateLimited { kind: LimitKind, until: u64 },
    #[error("{method} {path} answered {status}: {message}")]
    Refused {
        method: String,
        path: String,
        status: u16,
        message: String,
    },
    #[error("{method} {path} answered something unreadable: {reason}")]
    Invalid {
        method: String,
        path: String,
        reason: String,
    },
    #[error("the forge credential is unusable: {reason}")]
    Credential { reason: String },
    #[error("git push to {remote} failed: {reason}")]
    Push { remote: String, reason: String },
}

impl ForgeError {
    /// Worth trying again later with the same call (the forge down, slow, limited or 5xx).
    pub fn is_transient(&self) -> bool {
        match self {
            ForgeError::Unreachable { .. } | ForgeError::RateLimited { .. } => true,
            ForgeError::Refused { status, .. } => *status >= 500,
            _ => false,
        }
    }
}

/// Which of GitHub's two rate limits answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    Primary,
    Secondary,
}

impl std::fmt::Display for LimitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LimitKind::Primary => "primary",
            LimitKind::Secondary => "secondary",
        })
    }
}

/// A pull request's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeState {
    Open,
    Closed,
    Merged,
}

/// A pull request as yoi keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeRequest {
    pub number: u64,
    /// The global id GraphQL names it by (GitHub's `node_id`).
    #[serde(default)]
    pub node_id: String,
    /// The page people open.
    pub url: String,
    pub head_ref: String,
    pub head_sha: String,
    pub base_ref: String,
    pub state: ChangeState,
    pub draft: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_sha: Option<String>,
}

/// What to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChange {
    pub title: String,
    /// The branch pushed (no `refs/heads/`).
    pub head: String,
    pub base: String,
    pub body: String,
    pub draft: bool,
    /// The pull request an earlier attempt of the same branch had, which ended (merged or
    /// closed) before the ticket was accepted again: it, and any older one, is never taken for
    /// this one (docs/forge.md, "A ticket returned to planning and accepted again").
    pub earlier: Option<u64>,
}

/// A commit status's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusState {
    Pending,
    Success,
    Failure,
    Error,
}

impl StatusState {
    pub fn as_str(self) -> &'static str {
        match self {
            StatusState::Pending => "pending",
            StatusState::Success => "success",
            StatusState::Failure => "failure",
            StatusState::Error => "error",
        }
    }
}

/// What a merge call with `sha` came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    Merged {
        sha: String,
    },
    /// 409: the head is no longer the SHA the gate opened for; evaluate again.
    HeadMoved {
        message: String,
    },
    /// 405 (or 422): conflicts or protection not satisfied.
    NotMergeable {
        message: String,
    },
}

/// A conversation comment on a change request (an issue comment, on GitHub).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub id: u64,
    pub user: String,
    pub body: String,
}

/// A review comment on one line of a change request's diff (GitHub: a pull request review
/// comment), with the file, line and commit it was written on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewComment {
    pub id: u64,
    pub user: String,
    pub body: String,
    pub path: String,
    /// The line of the diff's new side; `None` when the comment is on a file, or its line is
    /// gone from the current diff.
    pub line: Option<u64>,
    pub commit_id: String,
    pub url: String,
}

/// An open issue (not a pull request).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub url: String,
    pub author: String,
}

/// A person's permission on the repository, as GitHub answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    None,
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
}

impl Permission {
    pub fn parse(s: &str) -> Permission {
        match s {
            "admin" => Permission::Admin,
            "maintain" => Permission::Maintain,
            "write" => Permission::Write,
            "triage" => Permission::Triage,
            "read" => Permission::Read,
            _ => Permission::None,
        }
    }

    /// Whether this person may steer yoi from the forge (`/yoi fix`, a label that imports).
    pub fn can_push(self) -> bool {
        self >= Permission::Write
    }
}

/// The calls yoi makes of a forge.
pub trait Forge: Send + Sync {
    /// The open or closed change request whose head is `branch` of this repository, if any.
    fn find_change(&self, branch: &str) -> Result<Option<ChangeRequest>, ForgeError>;
    /// Open a change request, or return the one that already exists for the branch (a lost
    /// response or a restart must never open a second).
    fn open_change(&self, new: &NewChange) -> Result<ChangeRequest, ForgeError>;
    fn change(&self, number: u64) -> Result<ChangeRequest, ForgeError>;
    /// Mark a draft change request ready for review.
    fn mark_ready(&self, change: &ChangeRequest) -> Result<(), ForgeError>;
    /// Every check run and commit status reported for `sha`, each with that SHA.
    fn checks(&self, sha: &str) -> Result<Vec<CheckResult>, ForgeError>;
    fn reviews(&self, number: u64) -> Result<Vec<Review>, ForgeError>;
    /// The required checks of `branch`; degrades to `configured` (with a note) when the
    /// credential may read neither rulesets nor protection, never to "none".
    fn required_checks(&self, branch: &str, configured: &[String]) -> Result<Required, ForgeError>;
    fn set_status(
        &self,
        sha: &str,
        context: &str,
        state: StatusState,
        description: &str,
    ) -> Result<(), ForgeError>;
    /// Merge only if the head is exactly `sha`.
    fn merge(
        &self,
        number: u64,
        sha: &str,
        method: MergeMethod,
        title: &str,
    ) -> Result<MergeOutcome, ForgeError>;
    fn comment(&self, number: u64, body: &str) -> Result<(), ForgeError>;
    /// The conversation comments on change request `number`, oldest first.
    fn comments(&self, number: u64) -> Result<Vec<Comment>, ForgeError>;
    /// The review comments on lines of change request `number`'s diff, oldest first.
    fn review_comments(&self, number: u64) -> Result<Vec<ReviewComment>, ForgeError>;
    /// Close issue `number` as completed, after a comment saying why, unless it is closed
    /// already; whether this call closed it.
    fn close_issue(&self, number: u64, comment: &str) -> Result<bool, ForgeError>;
    fn permission(&self, user: &str) -> Result<Permission, ForgeError>;
    /// Open issues carrying `label` (pull requests left out).
    fn labeled_issues(&self, label: &str) -> Result<Vec<Issue>, ForgeError>;
    /// Who applied `label` to issue `number` last, from its `labeled` events.
    fn labeled_by(&self, number: u64, label: &str) -> Result<Option<String>, ForgeError>;
}
