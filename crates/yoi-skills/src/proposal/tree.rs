//! Reading a skill folder into memory for a proposal, and writing it back out.
//!
//! Reading refuses symlinks (none is followed, at any depth, including the folder itself),
//! special files, `..` in the given path, trees deeper than [`MAX_DEPTH`], and trees over
//! [`MAX_PROPOSAL_FILES`] files or [`MAX_PROPOSAL_BYTES`] bytes. Reads are bounded as they
//! happen, so a file that grows while being read cannot blow the limit.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Component, Path};

use sha2::{Digest, Sha256};

use super::ProposalError;
use crate::digest::sha256_hex;

/// Most bytes a proposed skill folder may hold.
pub const MAX_PROPOSAL_BYTES: u64 = 8 * 1024 * 1024;
/// Most files a proposed skill folder may hold.
pub const MAX_PROPOSAL_FILES: usize = 1000;
/// Deepest nesting below the skill root.
pub const MAX_DEPTH: usize = 16;

/// The files of a skill folder: `/`-separated relative paths and contents, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tree {
    pub files: Vec<(String, Vec<u8>)>,
}

impl Tree {
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|(_, b)| b.len() as u64).sum()
    }

    pub fn file(&self, path: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, b)| b.as_slice())
    }

    /// SHA-256 over every path, length and content digest, in path order.
    pub fn digest(&self) -> String {
        let mut hasher = Sha256::new();
        for (path, bytes) in &self.files {
            hasher.update(path.as_bytes());
            hasher.update([0]);
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(Sha256::digest(bytes));
        }
        let summary = hasher.finalize();
        sha256_hex(&summary)
    }

    /// Writes the files under `dest` (created), syncing each file.
    pub fn write_to(&self, dest: &Path) -> Result<(), ProposalError> {
        fs::create_dir_all(dest).map_err(|e| io_error("create", dest, &e))?;
        for (path, bytes) in &self.files {
            let target = dest.join(path);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).map_err(|e| io_error("create", parent, &e))?;
            }
            let mut file = File::create(&target).map_err(|e| io_error("write", &target, &e))?;
            file.write_all(bytes)
                .and_then(|()| file.sync_all())
                .map_err(|e| io_error("write", &target, &e))?;
        }
        Ok(())
    }
}

pub(crate) fn io_error(action: &'static str, path: &Path, error: &std::io::Error) -> ProposalError {
    ProposalError::Io {
        action,
        path: path.display().to_string(),
        reason: error.to_string(),
    }
}

/// Reads a skill folder, refusing anything a proposal must not carry.
pub(crate) fn read_tree(root: &Path) -> Result<Tree, ProposalError> {
    if root.components().any(|c| c == Component::ParentDir) {
        return Err(ProposalError::ParentComponent {
            path: root.display().to_string(),
        });
    }
    let meta = fs::symlink_metadata(root).map_err(|e| io_error("inspect", root, &e))?;
    if meta.file_type().is_symlink() {
        return Err(ProposalError::Symlink {
            path: ".".to_string(),
        });
    }
    if !meta.is_dir() {
        return Err(ProposalError::NotADirectory {
            path: root.display().to_string(),
        });
    }
    let mut tree = Tree { files: Vec::new() };
    let mut budget = MAX_PROPOSAL_BYTES;
    walk(root, "", 0, &mut tree, &mut budget)?;
    tree.files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(tree)
}

fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    tree: &mut Tree,
    budget: &mut u64,
) -> Result<(), ProposalError> {
    if depth > MAX_DEPTH {
        return Err(ProposalError::TooDeep {
            path: prefix.trim_end_matches('/').to_string(),
            limit: MAX_DEPTH,
        });
    }
    let entries = fs::read_dir(dir).map_err(|e| io_error("list", dir, &e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_error("list", dir, &e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            return Err(ProposalError::NonUtf8Name {
                path: format!("{prefix}{}", name.to_string_lossy()),
            });
        };
        let rel = format!("{prefix}{name}");
        let kind = entry
            .file_type()
            .map_err(|e| io_error("inspect", &entry.path(), &e))?;
        if kind.is_symlink() {
            return Err(ProposalError::Symlink { path: rel });
        } else if kind.is_dir() {
            walk(&entry.path(), &format!("{rel}/"), depth + 1, tree, budget)?;
        } else if kind.is_file() {
            if tree.files.len() >= MAX_PROPOSAL_FILES {
                return Err(ProposalError::TooManyFiles {
                    limit: MAX_PROPOSAL_FILES,
                });
            }
            let path = entry.path();
            let file = File::open(&path).map_err(|e| io_error("read", &path, &e))?;
            let mut bytes = Vec::new();
            file.take(budget.saturating_add(1))
                .read_to_end(&mut bytes)
                .map_err(|e| io_error("read", &path, &e))?;
            if bytes.len() as u64 > *budget {
                return Err(ProposalError::TooLarge {
                    limit: MAX_PROPOSAL_BYTES,
                });
            }
            *budget -= bytes.len() as u64;
            tree.files.push((rel, bytes));
        } else {
            return Err(ProposalError::SpecialFile { path: rel });
        }
    }
    Ok(())
}
