//! Listing the files bundled with a skill, for the activation response.
//!
//! The walk is sorted, skips hidden entries and the root `SKILL.md`, never follows symlinks
//! (so it cannot wander out of the folder or loop), stops descending past [`MAX_DEPTH`], and
//! stops collecting after `cap` files with `truncated` set. It lists names only; contents are
//! read on demand through [`crate::resource()`].

use std::fs;
use std::io;
use std::path::Path;

use serde::Serialize;

use crate::catalog::{Origin, SkillEntry};

/// How many files an activation lists at most.
pub const MAX_LISTED_FILES: usize = 200;
/// How deep the walk descends below the skill root.
pub const MAX_DEPTH: usize = 16;

/// Bundled files, relative to the skill root with `/` separators, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FileListing {
    pub files: Vec<String>,
    /// True when more files exist than were listed.
    pub truncated: bool,
}

/// Lists the bundled files of `entry`, at most `cap` of them.
pub fn list_files(entry: &SkillEntry, cap: usize) -> io::Result<FileListing> {
    let mut listing = FileListing::default();
    match &entry.origin {
        Origin::Builtin(builtin) => {
            for file in builtin.files {
                push(&mut listing, file.path.to_string(), cap);
            }
        }
        Origin::Dir(dir) => walk(dir, "", 0, cap, &mut listing)?,
    }
    Ok(listing)
}

fn push(listing: &mut FileListing, path: String, cap: usize) {
    if listing.files.len() < cap {
        listing.files.push(path);
    } else {
        listing.truncated = true;
    }
}

fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    cap: usize,
    listing: &mut FileListing,
) -> io::Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if listing.truncated {
            return Ok(());
        }
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') || (depth == 0 && name == "SKILL.md") {
            continue;
        }
        let path = format!("{prefix}{name}");
        let kind = entry.file_type()?;
        if kind.is_file() {
            push(listing, path, cap);
        } else if kind.is_dir() && depth < MAX_DEPTH {
            walk(&entry.path(), &format!("{path}/"), depth + 1, cap, listing)?;
        }
    }
    Ok(())
}
