//! Skill proposals: the only way a skill gets written, and only after a human approves it.
//!
//! Layout under the caller's proposals root (yoi uses `.yoi/skill-proposals`):
//!
//! ```text
//! <root>/<id>/proposal.json        id, name, kind, proposer, created_at, status, digests, lint
//! <root>/<id>/audit.md             append-only, thread-style events: proposed, approved/rejected
//! <root>/<id>/skill/<name>/...     the proposed folder, copied
//! <root>/<id>/previous/<name>/...  the workspace skill an approval replaced
//! ```
//!
//! [`propose`] copies a folder (bounded, no symlinks, nothing outside it) into a hidden staging
//! folder and renames it into place, so a proposal appears whole or not at all. [`approve`]
//! needs a [`HumanApprover`], re-checks the stored copy against the recorded tree digest, refuses
//! lint errors and decided proposals, and installs atomically (see `install`). [`reject`] records
//! a reason. Ids are derived from the content, proposer and time (no clock or randomness here),
//! and time is always the caller's RFC 3339 string, recorded verbatim.

mod decide;
mod install;
pub(crate) mod store;
mod tree;

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::diagnostic::{error_count, Diagnostic};
use crate::digest::sha256_hex;
use crate::lint::{is_valid_name, lint_skill_md};
use store::{append_audit, audit_event, proposal_dir, read_proposal, write_proposal};
pub(crate) use tree::io_error;
use tree::{read_tree, Tree};

#[cfg(test)]
use decide::approve_with_fault;
pub use decide::{approve, reject};
#[cfg(test)]
use install::Fault;

pub use tree::{MAX_DEPTH, MAX_PROPOSAL_BYTES, MAX_PROPOSAL_FILES};

/// New skill, or a change to one that exists in the workspace skills root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = SkillProposalKind)]
#[serde(rename_all = "snake_case")]
pub enum ProposalKind {
    New,
    Change,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = SkillProposalStatus)]
#[serde(rename_all = "snake_case")]
pub enum ProposalStatus {
    Pending,
    Approved,
    Rejected,
}

/// Who decided, when, and what the decision left behind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = SkillProposalDecision)]
pub struct Decision {
    pub by: String,
    pub at: String,
    /// The rejection reason.
    pub reason: Option<String>,
    /// Digest of the workspace `SKILL.md` an approval replaced.
    pub replaced_digest: Option<String>,
    /// Where the replaced folder is kept (`previous/<name>` in the proposal folder, or a hidden
    /// folder in the skills root if moving it failed).
    pub previous: Option<String>,
}

/// The content of `proposal.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = SkillProposal)]
pub struct Proposal {
    pub id: String,
    pub name: String,
    pub kind: ProposalKind,
    pub proposer: String,
    pub created_at: String,
    pub status: ProposalStatus,
    /// SHA-256 of the proposed `SKILL.md`, comparable with catalog digests.
    pub digest: String,
    /// SHA-256 over every proposed file; approval refuses a copy that no longer matches it.
    pub tree_digest: String,
    pub files: usize,
    pub bytes: u64,
    pub diagnostics: Vec<Diagnostic>,
    pub decision: Option<Decision>,
}

impl Proposal {
    pub fn error_count(&self) -> usize {
        error_count(&self.diagnostics)
    }
}

/// Proof that a human principal is deciding. Build it only after authenticating a human
/// (the dashboard's or CLI's human token); pods and services must never construct one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HumanApprover {
    name: String,
}

impl HumanApprover {
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into() }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProposalError {
    #[error("`{field}` must not be empty")]
    MissingField { field: &'static str },
    #[error("`{path}` contains a `..` component; give the skill folder itself")]
    ParentComponent { path: String },
    /// A proposed file's name that cannot be a file inside the skill folder.
    #[error("file name {path:?} {reason}; name each file by its relative path inside the skill folder, like `references/notes.md`")]
    BadFileName { path: String, reason: &'static str },
    #[error("`{path}` is not a directory")]
    NotADirectory { path: String },
    #[error(
        "folder name `{name}` is not a valid skill name (a-z, 0-9, single inner hyphens, 1-64)"
    )]
    InvalidName { name: String },
    #[error("the proposed folder has no SKILL.md")]
    MissingSkillFile,
    #[error("`{path}` is a symlink; proposals never follow symlinks")]
    Symlink { path: String },
    #[error("`{path}` is not a regular file or directory")]
    SpecialFile { path: String },
    #[error("`{path}` has a name that is not UTF-8")]
    NonUtf8Name { path: String },
    #[error("the proposed folder holds more than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("the proposed folder holds more than {limit} files")]
    TooManyFiles { limit: usize },
    #[error("`{path}` is nested deeper than {limit} levels")]
    TooDeep { path: String, limit: usize },
    #[error("`{id}` is not a proposal id")]
    BadId { id: String },
    #[error("no proposal `{id}`")]
    NotFound { id: String },
    #[error("proposal `{id}` cannot be read: {reason}")]
    Corrupt { id: String, reason: String },
    #[error("proposal `{id}` is being decided by someone else (remove `{lock}` in its folder if that process died)")]
    Busy { id: String, lock: &'static str },
    #[error("proposal `{id}` was already {status:?}")]
    AlreadyDecided { id: String, status: ProposalStatus },
    #[error("proposal `{id}` has {errors} lint error(s) and cannot be approved")]
    Invalid { id: String, errors: usize },
    #[error("the files of proposal `{id}` changed since it was proposed (tree digest {expected}, now {found})")]
    Tampered {
        id: String,
        expected: String,
        found: String,
    },
    #[error("installing failed and the previous skill could not be put back; it is kept at {kept_at}: {reason}")]
    RestoreFailed { kept_at: String, reason: String },
    #[error("cannot {action} `{path}`: {reason}")]
    Io {
        action: &'static str,
        path: String,
        reason: String,
    },
}

/// Copies the skill folder `source_dir` into a new pending proposal.
///
/// The folder's own name is the skill name. `kind` is `change` when the workspace skills root
/// already has a skill of that name. Lint errors do not stop a proposal; they stop approval.
pub fn propose(
    proposals_root: &Path,
    workspace_skills_root: &Path,
    source_dir: &Path,
    proposer: &str,
    now: &str,
) -> Result<Proposal, ProposalError> {
    require("proposer", proposer)?;
    require("now", now)?;
    let tree = read_tree(source_dir)?;
    let name = source_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    if !is_valid_name(&name) {
        return Err(ProposalError::InvalidName { name });
    }
    let skill_md = tree
        .file("SKILL.md")
        .ok_or(ProposalError::MissingSkillFile)?;
    let linted = lint_skill_md(&name, skill_md);
    let kind = if workspace_skills_root.join(&name).join("SKILL.md").is_file() {
        ProposalKind::Change
    } else {
        ProposalKind::New
    };
    let mut proposal = Proposal {
        id: String::new(),
        name: name.clone(),
        kind,
        proposer: proposer.to_string(),
        created_at: now.to_string(),
        status: ProposalStatus::Pending,
        digest: sha256_hex(skill_md),
        tree_digest: tree.digest(),
        files: tree.files.len(),
        bytes: tree.total_bytes(),
        diagnostics: linted.diagnostics,
        decision: None,
    };
    fs::create_dir_all(proposals_root).map_err(|e| io_error("create", proposals_root, &e))?;
    for attempt in 0u32..64 {
        proposal.id = proposal_id(&proposal, attempt);
        let dir = proposals_root.join(&proposal.id);
        if fs::symlink_metadata(&dir).is_ok() {
            continue;
        }
        let staging = proposals_root.join(format!(".staging-{}", proposal.id));
        if staging.exists() {
            fs::remove_dir_all(&staging).map_err(|e| io_error("clean", &staging, &e))?;
        }
        stage(&staging, &tree, &proposal)?;
        match fs::rename(&staging, &dir) {
            Ok(()) => {
                store::sync_dir(proposals_root)?;
                return Ok(proposal);
            }
            Err(_) if fs::symlink_metadata(&dir).is_ok() => {
                let _ = fs::remove_dir_all(&staging);
            }
            Err(e) => {
                let _ = fs::remove_dir_all(&staging);
                return Err(io_error("rename", &dir, &e));
            }
        }
    }
    Err(ProposalError::Io {
        action: "allocate an id in",
        path: proposals_root.display().to_string(),
        reason: "64 candidate ids are taken".to_string(),
    })
}

fn stage(staging: &Path, tree: &Tree, proposal: &Proposal) -> Result<(), ProposalError> {
    tree.write_to(&staging.join("skill").join(&proposal.name))?;
    write_proposal(staging, proposal)?;
    let kind = match proposal.kind {
        ProposalKind::New => "new",
        ProposalKind::Change => "change",
    };
    append_audit(
        staging,
        &audit_event(
            "skill_proposed",
            &[
                ("id", &format!("{}-proposed", proposal.id)),
                ("author", &proposal.proposer),
                ("at", &proposal.created_at),
                ("skill", &proposal.name),
                ("kind", kind),
                ("digest", &proposal.digest),
                ("tree_digest", &proposal.tree_digest),
            ],
            "Skill proposed",
            &format!(
                "{} proposed a {kind} skill `{}`: {} file(s), {} byte(s), {} lint error(s).",
                proposal.proposer,
                proposal.name,
                proposal.files,
                proposal.bytes,
                proposal.error_count()
            ),
        ),
    )
}

/// A content-derived id: `p` and 24 hex digits.
fn proposal_id(proposal: &Proposal, attempt: u32) -> String {
    let seed = format!(
        "{}\0{}\0{}\0{}\0{attempt}",
        proposal.name, proposal.proposer, proposal.created_at, proposal.tree_digest
    );
    format!("p{}", &sha256_hex(seed.as_bytes())[..24])
}

fn require(field: &'static str, value: &str) -> Result<(), ProposalError> {
    if value.trim().is_empty() {
        return Err(ProposalError::MissingField { field });
    }
    Ok(())
}

/// One proposal by id.
pub fn load(proposals_root: &Path, id: &str) -> Result<Proposal, ProposalError> {
    read_proposal(&proposal_dir(proposals_root, id)?, id)
}

/// Every proposal under the root, oldest first (by `created_at`, then id). A missing root is
/// an empty list; an unreadable `proposal.json` is an error naming its id.
pub fn list(proposals_root: &Path) -> Result<Vec<Proposal>, ProposalError> {
    let entries = match fs::read_dir(proposals_root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error("list", proposals_root, &e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error("list", proposals_root, &e))?;
        let name = entry.file_name();
        let Some(id) = name.to_str() else { continue };
        if id.starts_with('.') || !entry.path().join(store::PROPOSAL_FILE).is_file() {
            continue;
        }
        out.push(read_proposal(&entry.path(), id)?);
    }
    out.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    Ok(out)
}

impl ProposalError {
    /// The class an entry point maps to an exit code and HTTP status.
    pub fn class(&self) -> yoi_core::ErrorClass {
        use yoi_core::ErrorClass as C;
        match self {
            ProposalError::MissingField { .. }
            | ProposalError::ParentComponent { .. }
            | ProposalError::BadFileName { .. }
            | ProposalError::NotADirectory { .. }
            | ProposalError::InvalidName { .. }
            | ProposalError::MissingSkillFile
            | ProposalError::Symlink { .. }
            | ProposalError::SpecialFile { .. }
            | ProposalError::NonUtf8Name { .. }
            | ProposalError::BadId { .. } => C::Invalid,
            ProposalError::TooLarge { .. }
            | ProposalError::TooManyFiles { .. }
            | ProposalError::TooDeep { .. } => C::TooLarge,
            ProposalError::NotFound { .. } => C::NotFound,
            ProposalError::Corrupt { .. } => C::Corrupt,
            ProposalError::Busy { .. } => C::Busy,
            ProposalError::AlreadyDecided { .. } | ProposalError::Tampered { .. } => C::Conflict,
            ProposalError::Invalid { .. } => C::Refused,
            ProposalError::RestoreFailed { .. } | ProposalError::Io { .. } => C::Internal,
        }
    }
}

#[cfg(test)]
mod tests;
