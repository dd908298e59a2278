//! Reading one skills root from disk into catalog candidates.

use std::fs;
use std::io::{ErrorKind, Read};
use std::path::{Component, Path, PathBuf};

use super::{CatalogConfig, Origin, SkillEntry, SkillSource, SourceProblem};
use crate::diagnostic::{rules, Diagnostic};
use crate::parse::MAX_SKILL_MD_BYTES;

/// The file that makes a folder a skill; matched byte-exactly, also on case-insensitive disks.
pub(crate) const SKILL_FILE: &str = "SKILL.md";

pub(super) fn scan_root(
    config: &CatalogConfig,
    root: &Path,
    source: SkillSource,
    problems: &mut Vec<SourceProblem>,
) -> Vec<SkillEntry> {
    let absolute = if root.is_absolute() {
        root.to_path_buf()
    } else {
        config.repo_root.join(root)
    };
    let entries = match fs::read_dir(&absolute) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound && source == SkillSource::Workspace => {
            return Vec::new();
        }
        Err(e) => {
            problems.push(SourceProblem {
                source,
                message: format!("the {source} skills folder cannot be read: {}", e.kind()),
            });
            return Vec::new();
        }
    };
    let prefix = location_prefix(&config.repo_root, root, &absolute, source);
    let mut found = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                problems.push(SourceProblem {
                    source,
                    message: format!("listing the {source} skills folder failed: {}", e.kind()),
                });
                continue;
            }
        };
        let file_name = entry.file_name();
        let Some(name) = file_name.to_str() else {
            problems.push(SourceProblem {
                source,
                message: format!(
                    "skipped folder {:?} in the {source} skills folder: its name is not UTF-8",
                    file_name.to_string_lossy()
                ),
            });
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let dir = entry.path();
        if !fs::metadata(&dir).is_ok_and(|m| m.is_dir()) || !has_skill_file(&dir) {
            continue;
        }
        let location = format!("{prefix}{name}/{SKILL_FILE}");
        let entry = match read_bounded(&dir.join(SKILL_FILE)) {
            Ok(bytes) => {
                let oversize = bytes.len() > MAX_SKILL_MD_BYTES;
                let mut entry =
                    SkillEntry::new(name.to_string(), source, location, &bytes, Origin::Dir(dir));
                if oversize {
                    // Only a prefix was read; its digest would not identify the file.
                    entry.digest.clear();
                }
                entry
            }
            Err(e) => unreadable(name, source, location, dir, e.kind()),
        };
        found.push(entry);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// Reads at most one byte past the parser's limit, so an oversize file is reported as
/// `FILE-SIZE` without being loaded whole.
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    fs::File::open(path)?
        .take(MAX_SKILL_MD_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// True when `dir` holds an entry named exactly `SKILL.md` that is (or links to) a file.
fn has_skill_file(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries
        .flatten()
        .any(|e| e.file_name() == SKILL_FILE && fs::metadata(e.path()).is_ok_and(|m| m.is_file()))
}

fn unreadable(
    name: &str,
    source: SkillSource,
    location: String,
    dir: PathBuf,
    kind: ErrorKind,
) -> SkillEntry {
    SkillEntry {
        name: name.to_string(),
        description: None,
        source,
        location,
        digest: String::new(),
        valid: false,
        diagnostics: vec![Diagnostic::error(
            rules::FILE_READ,
            format!("SKILL.md cannot be read: {kind}"),
            None,
        )],
        shadows: Vec::new(),
        meta: Default::default(),
        body: None,
        origin: Origin::Dir(dir),
    }
}

/// The text put before `<name>/SKILL.md` in a location: the root relative to the repository
/// (`.yoi/skills/`) when it is inside it, otherwise an opaque tag (`extra:1:`) so that no host
/// path leaks into the catalog.
fn location_prefix(repo_root: &Path, root: &Path, absolute: &Path, source: SkillSource) -> String {
    let relative = if root.is_relative() {
        slash_path(root)
    } else {
        None
    };
    let relative = relative.or_else(|| {
        let repo = repo_root.canonicalize().ok()?;
        let abs = absolute.canonicalize().ok()?;
        slash_path(abs.strip_prefix(&repo).ok()?)
    });
    match (relative, source) {
        (Some(rel), _) if rel.is_empty() => String::new(),
        (Some(rel), _) => format!("{rel}/"),
        (None, SkillSource::Workspace) => "workspace:".to_string(),
        (None, SkillSource::Extra { index }) => format!("extra:{index}:"),
        (None, SkillSource::Builtin) => "builtin:".to_string(),
    }
}

/// A relative path with `/` separators; `None` for `..`, roots or non-UTF-8 components.
fn slash_path(path: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts.join("/"))
}
