//! Resources: progressive disclosure level 3, one bundled file read on demand.
//!
//! [`resource`] serves a file only if it is inside the skill folder, a regular file, and no
//! larger than the caller's limit. It refuses, each with its own error: absolute paths, any
//! `..` component, paths whose real location (after resolving symlinks) is outside the skill
//! folder, missing paths, directories and other non-files, and oversize files. The check is
//! made on the canonical path and the file is opened through that same path, then its size is
//! taken from the open handle, and reading stops one byte past the limit.

use std::fs::{self, File};
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::catalog::{Catalog, Origin};

/// The default size limit for one resource: 1 MiB.
pub const DEFAULT_MAX_RESOURCE_BYTES: u64 = 1024 * 1024;

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub skill: String,
    /// The path as normalised: relative to the skill root, `/`-separated.
    pub path: String,
    pub bytes: Vec<u8>,
}

/// Why a resource was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ResourceError {
    #[error("no skill named `{name}` in the catalog")]
    UnknownSkill { name: String },
    #[error("skill `{name}` has lint errors; its files are not served")]
    InvalidSkill { name: String },
    #[error("`{path}` is absolute; give a path relative to the skill folder")]
    AbsolutePath { path: String },
    #[error("`{path}` contains a `..` component; resources must stay inside the skill folder")]
    Traversal { path: String },
    #[error("`{path}` resolves outside the skill folder (through a symlink)")]
    OutsideSkill { path: String },
    #[error("`{path}` does not exist in the skill folder")]
    NotFound { path: String },
    #[error("`{path}` is not a regular file")]
    NotAFile { path: String },
    #[error("`{path}` has {size} bytes, more than the limit of {limit}")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("`{path}` cannot be read: {reason}")]
    Io { path: String, reason: String },
}

/// Reads `relative_path` from skill `name`, at most `max_bytes` long.
pub fn resource(
    catalog: &Catalog,
    name: &str,
    relative_path: &str,
    max_bytes: u64,
) -> Result<Resource, ResourceError> {
    let entry = catalog
        .get(name)
        .ok_or_else(|| ResourceError::UnknownSkill {
            name: name.to_string(),
        })?;
    if !entry.valid {
        return Err(ResourceError::InvalidSkill {
            name: name.to_string(),
        });
    }
    let path = normalise(relative_path)?;
    let bytes = match &entry.origin {
        Origin::Builtin(builtin) => match builtin.file(&path) {
            Some(file) => {
                check_size(&path, file.bytes.len() as u64, max_bytes)?;
                file.bytes.to_vec()
            }
            None if path.is_empty()
                || builtin
                    .files
                    .iter()
                    .any(|f| f.path.starts_with(&format!("{path}/"))) =>
            {
                return Err(ResourceError::NotAFile { path })
            }
            None => return Err(ResourceError::NotFound { path }),
        },
        Origin::Dir(dir) => read_confined(dir, &path, max_bytes)?,
    };
    Ok(Resource {
        skill: entry.name.clone(),
        path,
        bytes,
    })
}

/// Checks the requested path's shape and returns it `/`-joined without `.` or empty parts.
fn normalise(requested: &str) -> Result<String, ResourceError> {
    let owned = || requested.to_string();
    let bytes = requested.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if requested.starts_with(['/', '\\']) || drive || Path::new(requested).is_absolute() {
        return Err(ResourceError::AbsolutePath { path: owned() });
    }
    let mut parts = Vec::new();
    for part in requested.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => return Err(ResourceError::Traversal { path: owned() }),
            _ => parts.push(part),
        }
    }
    Ok(parts.join("/"))
}

fn check_size(path: &str, size: u64, limit: u64) -> Result<(), ResourceError> {
    if size > limit {
        return Err(ResourceError::TooLarge {
            path: path.to_string(),
            size,
            limit,
        });
    }
    Ok(())
}

fn read_confined(dir: &Path, path: &str, max_bytes: u64) -> Result<Vec<u8>, ResourceError> {
    let io = |e: std::io::Error| match e.kind() {
        ErrorKind::NotFound => ResourceError::NotFound {
            path: path.to_string(),
        },
        kind => ResourceError::Io {
            path: path.to_string(),
            reason: kind.to_string(),
        },
    };
    let root: PathBuf = dir.canonicalize().map_err(io)?;
    let real = root.join(path).canonicalize().map_err(io)?;
    if !real.starts_with(&root) {
        return Err(ResourceError::OutsideSkill {
            path: path.to_string(),
        });
    }
    if !fs::metadata(&real).map_err(io)?.is_file() {
        return Err(ResourceError::NotAFile {
            path: path.to_string(),
        });
    }
    let file = File::open(&real).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    check_size(path, size, max_bytes)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    check_size(path, bytes.len() as u64, max_bytes)?;
    Ok(bytes)
}

impl ResourceError {
    /// The class an entry point maps to an exit code and HTTP status.
    pub fn class(&self) -> yoi_core::ErrorClass {
        use yoi_core::ErrorClass as C;
        match self {
            ResourceError::UnknownSkill { .. } | ResourceError::NotFound { .. } => C::NotFound,
            ResourceError::InvalidSkill { .. } => C::Refused,
            ResourceError::AbsolutePath { .. }
            | ResourceError::Traversal { .. }
            | ResourceError::OutsideSkill { .. }
            | ResourceError::NotAFile { .. } => C::Invalid,
            ResourceError::TooLarge { .. } => C::TooLarge,
            ResourceError::Io { .. } => C::Internal,
        }
    }
}
