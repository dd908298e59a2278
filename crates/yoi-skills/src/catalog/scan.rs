//! Reading one skills root from disk into catalog candidates.
//!
//! Every non-hidden subdirectory ends up in exactly one place: a skill entry when it holds a
//! file named exactly `SKILL.md`, otherwise a [`SkippedFolder`] that says why (wrong case,
//! missing, not a file, unlistable). Loose files and dot-entries are ignored, as the
//! specification says.

use std::fs;
use std::io::{ErrorKind, Read};
use std::path::{Component, Path, PathBuf};

use super::{CatalogConfig, Origin, SkillEntry, SkillSource, SkippedFolder, SourceProblem};
use crate::diagnostic::{rules, Diagnostic};
use crate::parse::MAX_SKILL_MD_BYTES;

/// The file that makes a folder a skill; matched byte-exactly, also on case-insensitive disks.
pub(crate) const SKILL_FILE: &str = "SKILL.md";

/// What the scans of the roots found, in priority order.
#[derive(Default)]
pub(super) struct Found {
    pub skills: Vec<SkillEntry>,
    pub problems: Vec<SourceProblem>,
    pub skipped: Vec<SkippedFolder>,
}

/// Scans one root and appends its skills, sorted by name, and its skipped folders to `found`.
pub(super) fn scan_root(
    config: &CatalogConfig,
    root: &Path,
    source: SkillSource,
    found: &mut Found,
) {
    let problems = &mut found.problems;
    let absolute = if root.is_absolute() {
        root.to_path_buf()
    } else {
        config.repo_root.join(root)
    };
    if source == SkillSource::Workspace
        && fs::symlink_metadata(&absolute).is_ok_and(|m| m.file_type().is_symlink())
    {
        problems.push(SourceProblem {
            source,
            message: format!(
                "the {source} skills folder is a symbolic link, and yoi follows no link there; no skill is loaded from it"
            ),
        });
        return;
    }
    let entries = match fs::read_dir(&absolute) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound && source == SkillSource::Workspace => {
            return;
        }
        Err(e) => {
            problems.push(SourceProblem {
                source,
                message: format!("the {source} skills folder cannot be read: {}", e.kind()),
            });
            return;
        }
    };
    let prefix = location_prefix(&config.repo_root, root, &absolute, source);
    let root_is_skill = probe(&absolute).is_ok();
    let mut skills = Vec::new();
    let mut skipped = Vec::new();
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
        // A folder that is a symbolic link is never read through: its target could be any
        // folder on the machine, and its SKILL.md would reach agents as this repository's.
        if fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
            if fs::metadata(&dir).is_ok_and(|m| m.is_dir()) {
                let why = NotSkill::Link;
                skipped.push(skipped_folder(name, source, &prefix, why, root_is_skill));
            }
            continue;
        }
        if !fs::metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        if let Err(why) = probe(&dir) {
            skipped.push(skipped_folder(name, source, &prefix, why, root_is_skill));
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
        skills.push(entry);
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skipped.sort_by(|a, b| a.name.cmp(&b.name));
    found.skills.extend(skills);
    found.skipped.extend(skipped);
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

/// Why a subdirectory of a skills root is not a skill.
enum NotSkill {
    /// No `SKILL.md`, but a file whose name differs only in case, such as `Skill.md`.
    Misnamed(String),
    /// `SKILL.md` exists but is a folder, a broken link or another non-file.
    NotAFile,
    Missing,
    /// The folder cannot be listed.
    Unlistable(ErrorKind),
    /// The folder is a symbolic link, which yoi does not follow.
    Link,
}

/// `Ok` when `dir` holds an entry named exactly `SKILL.md` that is (or links to) a file.
/// Checked by listing, so the match is byte-exact also on case-insensitive disks, where
/// `dir.join("SKILL.md")` would open `skill.md`.
fn probe(dir: &Path) -> Result<(), NotSkill> {
    let entries = fs::read_dir(dir).map_err(|e| NotSkill::Unlistable(e.kind()))?;
    let is_file = |path: &Path| fs::metadata(path).is_ok_and(|m| m.is_file());
    let mut not_a_file = false;
    let mut misnamed: Option<String> = None;
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        if file_name == SKILL_FILE {
            if is_file(&entry.path()) {
                return Ok(());
            }
            not_a_file = true;
        } else if let Some(other) = file_name.to_str() {
            if other.eq_ignore_ascii_case(SKILL_FILE)
                && is_file(&entry.path())
                && misnamed.as_deref().is_none_or(|m| other < m)
            {
                misnamed = Some(other.to_string());
            }
        }
    }
    Err(match (not_a_file, misnamed) {
        (true, _) => NotSkill::NotAFile,
        (false, Some(found)) => NotSkill::Misnamed(found),
        (false, None) => NotSkill::Missing,
    })
}

/// The skipped-folder record for a subdirectory that is not a skill.
fn skipped_folder(
    name: &str,
    source: SkillSource,
    prefix: &str,
    why: NotSkill,
    root_is_skill: bool,
) -> SkippedFolder {
    let expected = format!("{prefix}{name}/{SKILL_FILE}");
    let (rule, location, message) = match why {
        NotSkill::Misnamed(found) => (
            rules::FILE_NAME,
            format!("{prefix}{name}/{found}"),
            format!(
                "`{name}/{found}` must be named exactly `{SKILL_FILE}` (the case matters), so \
                 the folder `{name}` is not loaded as a skill; rename the file to \
                 `{name}/{SKILL_FILE}`"
            ),
        ),
        NotSkill::NotAFile => (
            rules::FILE_MISSING,
            expected,
            format!(
                "`{name}/{SKILL_FILE}` is not a file (a folder or a broken link), so the folder \
                 `{name}` is not loaded as a skill"
            ),
        ),
        NotSkill::Missing => {
            let mut message = format!(
                "the folder `{name}` has no `{SKILL_FILE}`, so it is not a skill; add \
                 `{name}/{SKILL_FILE}` or move the folder out of the skills folder"
            );
            if root_is_skill {
                message.push_str(&format!(
                    "; the folder being scanned holds a `{SKILL_FILE}` itself: to check that \
                     skill, lint the folder that contains it"
                ));
            }
            (rules::FILE_MISSING, expected, message)
        }
        NotSkill::Unlistable(kind) => (
            rules::FILE_READ,
            expected,
            format!("the folder `{name}` cannot be listed: {kind}"),
        ),
        NotSkill::Link => (
            rules::FILE_READ,
            format!("{prefix}{name}"),
            format!(
                "`{name}` is a symbolic link, and yoi follows no link in a skills folder, so it \
                 is not loaded as a skill; put the skill's folder itself here"
            ),
        ),
    };
    SkippedFolder {
        name: name.to_string(),
        source,
        location,
        diagnostic: Diagnostic::error(rule, message, None),
    }
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
