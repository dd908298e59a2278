//! Putting an approved skill into the workspace skills root without ever losing the old one.
//!
//! The new folder is written to a hidden staging folder beside the target and renamed into
//! place. When a skill of that name exists it is first renamed aside to a hidden folder; if
//! putting the new one in place fails, the old one is renamed back. After success the old folder
//! is moved into the proposal (`previous/<name>`); if that move fails it stays in the hidden
//! aside folder, and the returned [`Installed::previous`] says where. Hidden folders are never
//! catalog entries, so a crash mid-way leaves at worst an extra hidden folder, never a missing
//! or half-written skill.

use std::fs;
use std::path::Path;

use super::tree::{io_error, Tree};
use super::ProposalError;
use crate::digest::sha256_hex;

/// Where a test wants the installation to fail; production passes [`Fault::None`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    None,
    /// After the old skill was moved aside, before the new one is renamed into place.
    #[cfg(test)]
    AfterMoveAside,
}

/// What replacing left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Installed {
    /// Digest of the replaced `SKILL.md`, if a skill was replaced.
    pub replaced_digest: Option<String>,
    /// Where the replaced folder was kept, relative to the proposal folder or the skills root.
    pub previous: Option<String>,
}

pub(crate) fn install(
    tree: &Tree,
    skills_root: &Path,
    name: &str,
    proposal_dir: &Path,
    tag: &str,
    fault: Fault,
) -> Result<Installed, ProposalError> {
    // A skills folder that is a symbolic link would have the skill written wherever it leads.
    if fs::symlink_metadata(skills_root).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(ProposalError::Symlink {
            path: skills_root.display().to_string(),
        });
    }
    fs::create_dir_all(skills_root).map_err(|e| io_error("create", skills_root, &e))?;
    let target = skills_root.join(name);
    let staging = skills_root.join(format!(".{name}.incoming-{tag}"));
    let aside_name = format!(".{name}.previous-{tag}");
    let aside = skills_root.join(&aside_name);

    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(|e| io_error("clean", &staging, &e))?;
    }
    tree.write_to(&staging)?;

    let existing = fs::symlink_metadata(&target).ok();
    let replacing = existing.is_some();
    // A link in the skill's place is moved aside like a folder, never read through.
    let replaced_digest = if existing.is_some_and(|m| m.is_dir()) {
        fs::read(target.join("SKILL.md"))
            .ok()
            .map(|b| sha256_hex(&b))
    } else {
        None
    };
    if replacing {
        if let Err(e) = fs::rename(&target, &aside) {
            let _ = fs::remove_dir_all(&staging);
            return Err(io_error("move aside", &target, &e));
        }
    }
    let placed = match fault {
        #[cfg(test)]
        Fault::AfterMoveAside => Err(std::io::Error::other("injected fault")),
        Fault::None => fs::rename(&staging, &target),
    };
    if let Err(e) = placed {
        if replacing {
            fs::rename(&aside, &target).map_err(|restore| ProposalError::RestoreFailed {
                kept_at: aside.display().to_string(),
                reason: format!("{e}; restoring failed too: {restore}"),
            })?;
        }
        let _ = fs::remove_dir_all(&staging);
        return Err(io_error("put in place", &target, &e));
    }
    super::store::sync_dir(skills_root)?;

    let previous = if replacing {
        let keep = proposal_dir.join("previous");
        let kept = fs::create_dir_all(&keep)
            .and_then(|()| fs::rename(&aside, keep.join(name)))
            .is_ok();
        Some(if kept {
            format!("previous/{name}")
        } else {
            aside_name
        })
    } else {
        None
    };
    Ok(Installed {
        replaced_digest,
        previous,
    })
}
