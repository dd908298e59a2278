//! Workflow offers: what yoi drafts from the tickets' history, and the only way such a draft
//! reaches a workflow or flow file — a person accepting it (docs/workflows.md, "Offers").
//!
//! Layout under the caller's offers root (yoi uses `.yoi/workflow-offers`, tracked in git like
//! the skill proposals, so the trail of who accepted what lives in the repository):
//!
//! ```text
//! <root>/<id>/offer.json     kind, target, the whole proposed file, its diff, status, decision
//! <root>/<id>/audit.md       append-only, thread-style events: offered, accepted/rejected
//! <root>/<id>/previous       the file an acceptance replaced, as it was
//! ```
//!
//! The id is derived from the offer's *signature* (what pattern in the history it answers), so
//! a detector that runs again finds the folder and writes nothing: one pattern, one offer, ever
//! — a rejected offer is not offered again. [`offer`] stages the folder and renames it into
//! place, so an offer appears whole or not at all. [`accept`] needs a [`HumanApprover`] (the
//! same proof the skill proposals take), holds the decide lock, re-checks the stored content
//! against its digest and the target against the digest it had when offered (a file a person
//! edited since is never overwritten by a stale draft), writes the target atomically and
//! audits. [`reject`] records the reason. Checking that the content is a valid workflow or flow
//! is the caller's: this module knows files, not formats. Time is the caller's RFC 3339 string.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::digest::sha256_hex;
use crate::proposal::store::{append_audit, audit_event, sync_dir, DecideLock};
use crate::proposal::{HumanApprover, ProposalError};

const OFFER_FILE: &str = "offer.json";
const PREVIOUS_FILE: &str = "previous";

/// What an offer would change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = WorkflowOfferKind)]
#[serde(rename_all = "snake_case")]
pub enum OfferKind {
    /// A new workflow, from instructions or follow-ups that recur across tickets.
    NewWorkflow,
    /// A paragraph added to a workflow whose run failed and a person's next comment fixed.
    ImproveWorkflow,
    /// `auto_invoke: true` for a workflow people invoke often.
    AutoInvoke,
    /// A new flow, from the same workflows people invoked by hand in the same order.
    NewFlow,
}

impl OfferKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OfferKind::NewWorkflow => "new_workflow",
            OfferKind::ImproveWorkflow => "improve_workflow",
            OfferKind::AutoInvoke => "auto_invoke",
            OfferKind::NewFlow => "new_flow",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = WorkflowOfferStatus)]
#[serde(rename_all = "snake_case")]
pub enum OfferStatus {
    Pending,
    Accepted,
    Rejected,
}

/// Who decided, when, and (for a rejection) why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = WorkflowOfferDecision)]
pub struct OfferDecision {
    pub by: String,
    pub at: String,
    pub reason: Option<String>,
}

/// What a detector drafts: everything but the id, the time and the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferDraft {
    pub kind: OfferKind,
    /// The pattern this answers; equal signatures are one offer.
    pub signature: String,
    /// The workflow slug or flow name the file is for.
    pub name: String,
    /// The file to write, relative to the repository root (`.yoi/workflow/<slug>.md`).
    pub target: String,
    /// One line for lists and the inbox.
    pub title: String,
    /// Why it is offered, citing the tickets (Markdown).
    pub why: String,
    /// The tickets it came from.
    pub tickets: Vec<String>,
    /// The whole file as it would be written.
    pub content: String,
    /// SHA-256 of the target when the draft was made; `None`: the target must not exist.
    pub base_digest: Option<String>,
    /// The unified diff from the target as it is to `content`.
    pub diff: String,
}

/// The content of `offer.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = WorkflowOffer)]
pub struct Offer {
    pub id: String,
    pub kind: OfferKind,
    pub signature: String,
    pub name: String,
    pub target: String,
    pub title: String,
    pub why: String,
    pub tickets: Vec<String>,
    pub content: String,
    /// SHA-256 of `content`; acceptance refuses a stored copy that no longer matches it.
    pub digest: String,
    pub base_digest: Option<String>,
    pub diff: String,
    /// Who offered it (`yoi`: the detector).
    pub offered_by: String,
    pub created_at: String,
    pub status: OfferStatus,
    pub decision: Option<OfferDecision>,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OfferError {
    #[error("`{id}` is not an offer id")]
    BadId { id: String },
    #[error("no workflow offer `{id}` (`yoi workflow offers` lists them)")]
    NotFound { id: String },
    #[error("workflow offer `{id}` cannot be read: {reason}")]
    Corrupt { id: String, reason: String },
    #[error("`{field}` must not be empty")]
    MissingField { field: &'static str },
    #[error("target `{target}` is not a file under .yoi/workflow/ or .yoi/flows/")]
    BadTarget { target: String },
    #[error("workflow offer `{id}` was already {status:?}")]
    AlreadyDecided { id: String, status: OfferStatus },
    #[error("`{target}` changed since offer `{id}` was made (digest {expected}, now {found}); reject it — the next detection offers again from the file as it is")]
    Stale {
        id: String,
        target: String,
        expected: String,
        found: String,
    },
    #[error("the stored content of offer `{id}` changed since it was offered (digest {expected}, now {found})")]
    Tampered {
        id: String,
        expected: String,
        found: String,
    },
    #[error("`{target}` is a symbolic link; an offer never writes through one")]
    Symlink { target: String },
    #[error(transparent)]
    Proposal(#[from] ProposalError),
}

impl OfferError {
    /// The class an entry point maps to an exit code and HTTP status.
    pub fn class(&self) -> yoi_core::ErrorClass {
        use yoi_core::ErrorClass as C;
        match self {
            OfferError::BadId { .. }
            | OfferError::MissingField { .. }
            | OfferError::BadTarget { .. } => C::Invalid,
            OfferError::NotFound { .. } => C::NotFound,
            OfferError::Corrupt { .. } => C::Corrupt,
            OfferError::AlreadyDecided { .. }
            | OfferError::Stale { .. }
            | OfferError::Tampered { .. } => C::Conflict,
            OfferError::Symlink { .. } => C::Refused,
            OfferError::Proposal(e) => e.class(),
        }
    }
}

/// The id of the offer answering `signature`: `o` and 24 hex digits.
pub fn offer_id(signature: &str) -> String {
    format!("o{}", &sha256_hex(signature.as_bytes())[..24])
}

/// Whether an offer answering `signature` was ever made (pending or decided).
pub fn exists(root: &Path, signature: &str) -> bool {
    fs::symlink_metadata(root.join(offer_id(signature))).is_ok()
}

/// Records `draft` as a pending offer, or returns `None` when its signature was offered before
/// (whatever became of it).
pub fn offer(
    root: &Path,
    draft: OfferDraft,
    offered_by: &str,
    now: &str,
) -> Result<Option<Offer>, OfferError> {
    require("offered_by", offered_by)?;
    require("now", now)?;
    require("signature", &draft.signature)?;
    check_target(&draft.target)?;
    let id = offer_id(&draft.signature);
    let dir = root.join(&id);
    if fs::symlink_metadata(&dir).is_ok() {
        return Ok(None);
    }
    let o = Offer {
        id: id.clone(),
        kind: draft.kind,
        digest: sha256_hex(draft.content.as_bytes()),
        signature: draft.signature,
        name: draft.name,
        target: draft.target,
        title: draft.title,
        why: draft.why,
        tickets: draft.tickets,
        content: draft.content,
        base_digest: draft.base_digest,
        diff: draft.diff,
        offered_by: offered_by.to_string(),
        created_at: now.to_string(),
        status: OfferStatus::Pending,
        decision: None,
    };
    fs::create_dir_all(root).map_err(|e| io("create", root, &e))?;
    let staging = root.join(format!(".staging-{id}"));
    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(|e| io("clean", &staging, &e))?;
    }
    fs::create_dir(&staging).map_err(|e| io("create", &staging, &e))?;
    write_offer(&staging, &o)?;
    append_audit(
        &staging,
        &audit_event(
            "workflow_offered",
            &[
                ("id", &format!("{id}-offered")),
                ("author", offered_by),
                ("at", now),
                ("kind", o.kind.as_str()),
                ("target", &o.target),
                ("digest", &o.digest),
            ],
            "Workflow offered",
            &format!("{}\n\n{}", o.title, o.why),
        ),
    )?;
    match fs::rename(&staging, &dir) {
        Ok(()) => {
            sync_dir(root)?;
            Ok(Some(o))
        }
        // Another detector got there first: the same signature is the same offer.
        Err(_) if fs::symlink_metadata(&dir).is_ok() => {
            let _ = fs::remove_dir_all(&staging);
            Ok(None)
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&staging);
            Err(io("rename", &dir, &e))
        }
    }
}

/// One offer by id.
pub fn load(root: &Path, id: &str) -> Result<Offer, OfferError> {
    read_offer(&offer_dir(root, id)?, id)
}

/// Every offer under the root, oldest first (by `created_at`, then id). A missing root is an
/// empty list.
pub fn list(root: &Path) -> Result<Vec<Offer>, OfferError> {
    let entries = match fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("list", root, &e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io("list", root, &e))?;
        let name = entry.file_name();
        let Some(id) = name.to_str() else { continue };
        if id.starts_with('.') || !entry.path().join(OFFER_FILE).is_file() {
            continue;
        }
        out.push(read_offer(&entry.path(), id)?);
    }
    out.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    Ok(out)
}

/// A person accepts a pending offer: its file is written under `repo_root` and the decision
/// audited. The caller has checked that the content is a valid workflow or flow.
pub fn accept(
    root: &Path,
    id: &str,
    repo_root: &Path,
    approver: &HumanApprover,
    now: &str,
) -> Result<Offer, OfferError> {
    require("approver", approver.name())?;
    require("now", now)?;
    let dir = offer_dir(root, id)?;
    if !dir.join(OFFER_FILE).is_file() {
        return Err(OfferError::NotFound { id: id.into() });
    }
    let _lock = DecideLock::acquire(&dir, id)?;
    let mut o = pending(&dir, id)?;
    let found = sha256_hex(o.content.as_bytes());
    if found != o.digest {
        return Err(OfferError::Tampered {
            id: id.into(),
            expected: o.digest.clone(),
            found,
        });
    }
    check_target(&o.target)?;
    let target = repo_root.join(&o.target);
    let current = read_target(&target, &o.target)?;
    let now_digest = current.as_deref().map(sha256_hex);
    if now_digest != o.base_digest {
        return Err(OfferError::Stale {
            id: id.into(),
            target: o.target.clone(),
            expected: o.base_digest.clone().unwrap_or_else(|| "(no file)".into()),
            found: now_digest.unwrap_or_else(|| "(no file)".into()),
        });
    }
    if let Some(old) = &current {
        write_atomic(&dir.join(PREVIOUS_FILE), old)?;
    }
    write_atomic(&target, o.content.as_bytes())?;
    o.status = OfferStatus::Accepted;
    o.decision = Some(OfferDecision {
        by: approver.name().to_string(),
        at: now.to_string(),
        reason: None,
    });
    write_offer(&dir, &o)?;
    append_audit(
        &dir,
        &audit_event(
            "workflow_offer_accepted",
            &[
                ("id", &format!("{id}-accepted")),
                ("author", approver.name()),
                ("at", now),
                ("target", &o.target),
                ("digest", &o.digest),
            ],
            "Workflow offer accepted",
            &format!(
                "{} accepted the offer and wrote `{}`{}.",
                approver.name(),
                o.target,
                if current.is_some() {
                    " (the file it replaced is kept as `previous`)"
                } else {
                    ""
                }
            ),
        ),
    )?;
    Ok(o)
}

/// A person rejects a pending offer, with a reason; its pattern is never offered again.
pub fn reject(
    root: &Path,
    id: &str,
    approver: &HumanApprover,
    reason: &str,
    now: &str,
) -> Result<Offer, OfferError> {
    require("approver", approver.name())?;
    require("reason", reason)?;
    require("now", now)?;
    let dir = offer_dir(root, id)?;
    if !dir.join(OFFER_FILE).is_file() {
        return Err(OfferError::NotFound { id: id.into() });
    }
    let _lock = DecideLock::acquire(&dir, id)?;
    let mut o = pending(&dir, id)?;
    o.status = OfferStatus::Rejected;
    o.decision = Some(OfferDecision {
        by: approver.name().to_string(),
        at: now.to_string(),
        reason: Some(reason.to_string()),
    });
    write_offer(&dir, &o)?;
    append_audit(
        &dir,
        &audit_event(
            "workflow_offer_rejected",
            &[
                ("id", &format!("{id}-rejected")),
                ("author", approver.name()),
                ("at", now),
                ("target", &o.target),
            ],
            "Workflow offer rejected",
            reason,
        ),
    )?;
    Ok(o)
}

/// The targets an offer may write: a workflow file or a flow file, one path component below
/// their folder, never anything else.
fn check_target(target: &str) -> Result<(), OfferError> {
    let bad = || OfferError::BadTarget {
        target: target.to_string(),
    };
    let path = Path::new(target);
    if path
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(bad());
    }
    let ok = match (
        target.strip_prefix(".yoi/workflow/"),
        target.strip_prefix(".yoi/flows/"),
    ) {
        (Some(f), _) => f
            .strip_suffix(".md")
            .is_some_and(crate::workflow::is_valid_slug),
        (_, Some(f)) => f
            .strip_suffix(".flow.yaml")
            .is_some_and(crate::workflow::is_valid_slug),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(bad())
    }
}

/// The target's bytes, `None` when there is no file; a link is refused, never followed.
fn read_target(path: &Path, shown: &str) -> Result<Option<Vec<u8>>, OfferError> {
    let mut cur = PathBuf::new();
    for c in path.components() {
        cur.push(c);
        if fs::symlink_metadata(&cur).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(OfferError::Symlink {
                target: shown.to_string(),
            });
        }
    }
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("read", path, &e)),
    }
}

/// Temp file beside the target, fsync, rename, fsync the folder.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OfferError> {
    let parent = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(|e| io("create", parent, &e))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = parent.join(format!(".{name}.offer-tmp"));
    let mut file = File::create(&tmp).map_err(|e| io("write", &tmp, &e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| io("write", &tmp, &e))?;
    fs::rename(&tmp, path).map_err(|e| io("rename", path, &e))?;
    sync_dir(parent)?;
    Ok(())
}

fn offer_dir(root: &Path, id: &str) -> Result<PathBuf, OfferError> {
    let ok = id.len() == 25
        && id.starts_with('o')
        && id[1..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !ok {
        return Err(OfferError::BadId { id: id.to_string() });
    }
    Ok(root.join(id))
}

fn read_offer(dir: &Path, id: &str) -> Result<Offer, OfferError> {
    let path = dir.join(OFFER_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(OfferError::NotFound { id: id.into() })
        }
        Err(e) => return Err(io("read", &path, &e)),
    };
    serde_json::from_str(&text).map_err(|e| OfferError::Corrupt {
        id: id.into(),
        reason: e.to_string(),
    })
}

fn write_offer(dir: &Path, o: &Offer) -> Result<(), OfferError> {
    let json = serde_json::to_string_pretty(o).map_err(|e| OfferError::Corrupt {
        id: o.id.clone(),
        reason: e.to_string(),
    })?;
    write_atomic(&dir.join(OFFER_FILE), format!("{json}\n").as_bytes())
}

fn pending(dir: &Path, id: &str) -> Result<Offer, OfferError> {
    let o = read_offer(dir, id)?;
    if o.status != OfferStatus::Pending {
        return Err(OfferError::AlreadyDecided {
            id: id.into(),
            status: o.status,
        });
    }
    Ok(o)
}

fn require(field: &'static str, value: &str) -> Result<(), OfferError> {
    if value.trim().is_empty() {
        return Err(OfferError::MissingField { field });
    }
    Ok(())
}

fn io(action: &'static str, path: &Path, e: &std::io::Error) -> OfferError {
    OfferError::Proposal(crate::proposal::io_error(action, path, e))
}

#[cfg(test)]
mod tests;
