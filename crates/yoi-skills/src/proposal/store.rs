//! The files of one proposal folder: `proposal.json` (rewritten atomically), `audit.md`
//! (append-only), and the `decide.lock` that serialises decisions.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use super::tree::io_error;
use super::{Proposal, ProposalError};

pub(crate) const PROPOSAL_FILE: &str = "proposal.json";
pub(crate) const AUDIT_FILE: &str = "audit.md";
const LOCK_FILE: &str = "decide.lock";

/// Checks an id from outside before it becomes a path component.
pub(crate) fn proposal_dir(root: &Path, id: &str) -> Result<PathBuf, ProposalError> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok {
        return Err(ProposalError::BadId { id: id.to_string() });
    }
    Ok(root.join(id))
}

pub(crate) fn read_proposal(dir: &Path, id: &str) -> Result<Proposal, ProposalError> {
    let path = dir.join(PROPOSAL_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(ProposalError::NotFound { id: id.to_string() })
        }
        Err(e) => return Err(io_error("read", &path, &e)),
    };
    serde_json::from_str(&text).map_err(|e| ProposalError::Corrupt {
        id: id.to_string(),
        reason: e.to_string(),
    })
}

/// Writes `proposal.json` through a synced temp file and a rename.
pub(crate) fn write_proposal(dir: &Path, proposal: &Proposal) -> Result<(), ProposalError> {
    let json = serde_json::to_string_pretty(proposal).map_err(|e| ProposalError::Corrupt {
        id: proposal.id.clone(),
        reason: e.to_string(),
    })?;
    let tmp = dir.join(".proposal.json.tmp");
    let target = dir.join(PROPOSAL_FILE);
    let mut file = File::create(&tmp).map_err(|e| io_error("write", &tmp, &e))?;
    file.write_all(json.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error("write", &tmp, &e))?;
    fs::rename(&tmp, &target).map_err(|e| io_error("rename", &target, &e))?;
    sync_dir(dir)
}

/// Appends one audit event and syncs it.
pub(crate) fn append_audit(dir: &Path, event: &str) -> Result<(), ProposalError> {
    let path = dir.join(AUDIT_FILE);
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| io_error("append", &path, &e))?;
    file.write_all(event.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error("append", &path, &e))
}

/// Makes renames inside `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), ProposalError> {
    #[cfg(unix)]
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error("sync", dir, &e))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Held while a decision is made; a second decider gets [`ProposalError::Busy`].
pub(crate) struct DecideLock {
    path: PathBuf,
}

impl DecideLock {
    pub(crate) fn acquire(dir: &Path, id: &str) -> Result<Self, ProposalError> {
        if !dir.is_dir() {
            return Err(ProposalError::NotFound { id: id.to_string() });
        }
        let path = dir.join(LOCK_FILE);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => Ok(Self { path }),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(ProposalError::Busy {
                id: id.to_string(),
                lock: LOCK_FILE,
            }),
            Err(e) => Err(io_error("lock", &path, &e)),
        }
    }
}

impl Drop for DecideLock {
    fn drop(&mut self) {
        // Nothing useful can be done if removal fails; the Busy error names the file to delete.
        let _ = fs::remove_file(&self.path);
    }
}

/// One thread-style audit event: header comment, heading, body, closing rule.
pub(crate) fn audit_event(kind: &str, attrs: &[(&str, &str)], heading: &str, body: &str) -> String {
    let mut header = format!("<!-- event: {kind}");
    for (key, value) in attrs {
        header.push_str(&format!(" {key}: {}", attr_value(value)));
    }
    header.push_str(" -->");
    let body: Vec<String> = body
        .lines()
        .map(|line| {
            if line.trim_end() == "---" || line.starts_with("<!-- event:") || line.starts_with('\\')
            {
                format!("\\{line}")
            } else {
                line.to_string()
            }
        })
        .collect();
    format!("{header}\n\n## {heading}\n\n{}\n\n---\n\n", body.join("\n"))
}

/// Bare when free of whitespace, quotes, backslashes and `-->`, otherwise double-quoted with
/// `\"` and `\\` escapes; newlines become `\n` and `-->` becomes `--\>` so the value can
/// neither end the header line nor the comment.
fn attr_value(value: &str) -> String {
    let bare = !value.is_empty()
        && !value.contains("-->")
        && !value
            .chars()
            .any(|c| c.is_whitespace() || c == '"' || c == '\\');
    if bare {
        value.to_string()
    } else {
        let escaped = value
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
            .replace('\r', "\\r")
            .replace("-->", "--\\>");
        format!("\"{escaped}\"")
    }
}
