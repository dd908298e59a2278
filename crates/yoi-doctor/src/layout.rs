//! Layout checks: what lives in the tickets root and in each ticket folder. Ticket folders are
//! handed on to the per-ticket checks; everything else is reported here.

use std::fs;
use std::path::{Path, PathBuf};

use yoi_core::finding::{Finding, SafeFix};
use yoi_core::item::Item;
use yoi_core::relation::RelationsFile;
use yoi_core::thread::parse_thread;
use yoi_core::TicketId;

use yoi_store::fsutil::TEMP_MARKER;
use yoi_store::tickets::ITEM;
use yoi_store::workspace::Workspace;
use yoi_store::StoreError;

/// Lock file of the older system, kept in its tickets root.
const OLD_LOCK: &str = ".ticket-backend.lock";
/// Placeholder that keeps an otherwise empty folder in git.
pub(super) const GITKEEP: &str = ".gitkeep";

pub(super) struct RootScan {
    pub findings: Vec<Finding>,
    /// Folders named by a valid id, sorted; each is checked as a ticket.
    pub ticket_dirs: Vec<TicketId>,
}

pub(super) fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(TEMP_MARKER)
}

pub(super) fn scan_root(ws: &Workspace) -> Result<RootScan, StoreError> {
    let root = ws.tickets_dir();
    let entries = match yoi_store::dirfd::Dir::open(&root).and_then(|d| d.list()) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(RootScan {
                findings: Vec::new(),
                ticket_dirs: Vec::new(),
            })
        }
        Err(e) => return Err(StoreError::io(&root, e)),
    };
    let mut findings = Vec::new();
    let mut ticket_dirs = Vec::new();
    for e in &entries {
        let path = root.join(&e.name);
        let rel = ws.rel(&path);
        if e.is_link {
            findings.push(symlink_finding(
                ws,
                &path,
                TicketId::parse(&e.name).ok().as_ref(),
            ));
            continue;
        }
        if e.name == GITKEEP && !e.is_dir {
            continue;
        }
        if is_temp_name(&e.name) && !e.is_dir {
            findings.push(temp_finding(ws, &path, None));
            continue;
        }
        if let Some(staged) = e.name.strip_prefix(".new-").filter(|_| e.is_dir) {
            findings.push(staging_finding(ws, &path, staged));
            continue;
        }
        if e.name == OLD_LOCK && !e.is_dir {
            findings.push(
                Finding::warning(
                    "layout.stray_file",
                    format!("{rel}: the older system's lock file"),
                    "only ticket folders in the tickets root; yoi locks .yoi/local/workspace.lock",
                )
                .at(rel.clone(), None)
                .with_fix(format!(
                    "delete {rel} once no older yoi process uses this tree"
                )),
            );
            continue;
        }
        if e.is_dir {
            if let Ok(id) = TicketId::parse(&e.name) {
                ticket_dirs.push(id);
                continue;
            }
            if path.join(ITEM).is_file() {
                findings.push(dir_name_finding(&rel, &e.name));
                continue;
            }
        }
        let what = if e.is_dir { "folder" } else { "file" };
        findings.push(
            Finding::warning(
                "layout.stray_file",
                format!("{rel}: a {what} that is not a ticket folder"),
                "only ticket folders (named by their id, holding item.md) in the tickets root",
            )
            .at(rel.clone(), None)
            .with_fix(format!(
                "move {rel} out of {} (ticket evidence belongs in a ticket's artifacts/)",
                ws.rel(&root)
            )),
        );
    }
    findings.extend(skill_links(ws));
    findings.extend(worktree_links(ws));
    Ok(RootScan {
        findings,
        ticket_dirs,
    })
}

/// Every skill folder in `.yoi/skills/` that is a symbolic link (`layout.symlink`): the
/// catalog skips them, and a skill approved under that name replaces the link, never writes
/// through it.
fn skill_links(ws: &Workspace) -> Vec<Finding> {
    let root = ws.root().join(".yoi/skills");
    if fs::symlink_metadata(&root).is_ok_and(|m| m.file_type().is_symlink()) {
        return vec![symlink_finding(ws, &root, None)];
    }
    let Ok(entries) = yoi_store::dirfd::Dir::open(&root).and_then(|d| d.list()) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|e| e.is_link)
        .map(|e| symlink_finding(ws, &root.join(&e.name), None))
        .collect()
}

/// The worktree folder (`.worktree/`) when it is a symbolic link, else every entry in it that
/// is one (`layout.symlink`): yoi neither adds, inspects nor removes a worktree through a link.
fn worktree_links(ws: &Workspace) -> Vec<Finding> {
    let root = ws.config.worktree_dir(ws.root());
    if fs::symlink_metadata(&root).is_ok_and(|m| m.file_type().is_symlink()) {
        return vec![symlink_finding(ws, &root, None)];
    }
    let Ok(entries) = yoi_store::dirfd::Dir::open(&root).and_then(|d| d.list()) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|e| e.is_link)
        .map(|e| symlink_finding(ws, &root.join(&e.name), None))
        .collect()
}

/// A symbolic link where yoi reads and writes (`layout.symlink`): named with where it points,
/// never with anything read through it.
pub fn symlink_finding(ws: &Workspace, path: &Path, ticket: Option<&TicketId>) -> Finding {
    let rel = ws.rel(path);
    let target = fs::read_link(path)
        .map(|t| t.display().to_string())
        .unwrap_or_else(|e| format!("an unreadable target: {e}"));
    let f = Finding::error(
        "layout.symlink",
        format!("{rel} is a symbolic link (to {target}); yoi neither reads nor writes through it"),
        "real files and folders: yoi follows no symbolic link in the tickets folder, the skills folder or a ticket worktree's path",
    )
    .at(rel.clone(), None)
    .with_fix(format!(
        "replace {rel} with the real file or folder it should be (or remove it if it does not belong)"
    ));
    match ticket {
        Some(id) => f.with_ticket(id.as_str()),
        None => f,
    }
}

fn dir_name_finding(rel: &str, name: &str) -> Finding {
    let upper = name.to_ascii_uppercase();
    let reason = TicketId::parse(name)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let fix = if TicketId::parse(&upper).is_ok() {
        format!(
            "rename the folder to its upper-case id: mv {rel} {}",
            sibling(rel, &upper)
        )
    } else {
        format!(
            "rename {rel} to the ticket's id (26-char ULID or 13-char legacy id), or move it out of the tickets folder"
        )
    };
    Finding::error(
        "ticket.dir_name",
        format!("{rel} holds item.md, but {reason}; yoi does not see this ticket"),
        "a ticket folder is named by its id: 26 (ULID) or 13 (legacy) upper-case Crockford base32 characters",
    )
    .at(rel.to_string(), None)
    .with_fix(fix)
}

fn sibling(rel: &str, name: &str) -> String {
    match rel.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/{name}"),
        None => name.to_string(),
    }
}

fn staging_finding(ws: &Workspace, path: &Path, staged: &str) -> Finding {
    let rel = ws.rel(path);
    let title = fs::read_to_string(path.join(ITEM))
        .ok()
        .and_then(|t| Item::parse(&t).ok())
        .map(|i| format!(" (title “{}”)", i.title))
        .unwrap_or_default();
    let target = ws.tickets_dir().join(staged);
    let fix = if TicketId::parse(staged).is_ok() && !target.exists() {
        format!(
            "inspect it: to keep the ticket, rename it into place (mv {rel} {}); otherwise delete it. doctor --fix never removes it: it holds the only copy",
            ws.rel(&target)
        )
    } else {
        format!(
            "inspect it and compare with {}; delete it once nothing in it is needed. doctor --fix never removes it",
            ws.rel(&target)
        )
    };
    Finding::warning(
        "layout.staging_dir",
        format!("{rel}: an interrupted `yoi ticket create` left its staging folder{title}"),
        "no staging folders: create renames its folder into place as its last step",
    )
    .at(rel, None)
    .with_fix(fix)
}

/// The real file an atomic-write temporary file (`.<name>.tmp.<pid>.<n>`) was replacing.
pub(super) fn real_file_of(temp: &Path) -> Option<PathBuf> {
    let name = temp.file_name()?.to_str()?;
    let inner = name.strip_prefix('.')?;
    let at = inner.rfind(TEMP_MARKER)?;
    let real = &inner[..at];
    (!real.is_empty()).then(|| temp.with_file_name(real))
}

/// Whether a real file exists and parses as what its name says it is; `Err` says why not.
pub(super) fn intact(real: &Path) -> Result<(), String> {
    let bytes = fs::read(real).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "it does not exist".to_string(),
        _ => format!("it cannot be read ({e})"),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8".to_string())?;
    if text.trim().is_empty() {
        return Err("it is empty".into());
    }
    let name = real.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let owner = || {
        let dir = real.parent()?;
        let dir = if dir.file_name()? == "artifacts" {
            dir.parent()?
        } else {
            dir
        };
        TicketId::parse(dir.file_name()?.to_str()?).ok()
    };
    match name {
        "item.md" => Item::parse(&text)
            .map(|_| ())
            .map_err(|e| format!("it does not parse: {e}")),
        "thread.md" => {
            let t = parse_thread(&text);
            match t.issues.first() {
                Some(i) => Err(format!("it has a problem at line {}", i.line)),
                None if t.events.is_empty() => Err("it holds no event".into()),
                None => Ok(()),
            }
        }
        "relations.json" => match owner() {
            Some(id) => RelationsFile::parse(&text, &id)
                .map(|_| ())
                .map_err(|e| format!("it does not parse: {e}")),
            None => Err("it is not inside a ticket folder".into()),
        },
        n if n.ends_with(".json") => serde_json::from_str::<serde_json::Value>(&text)
            .map(|_| ())
            .map_err(|e| format!("it is not valid JSON: {e}")),
        n if n.ends_with(".jsonl") => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .try_for_each(|l| serde_json::from_str::<serde_json::Value>(l).map(|_| ()))
            .map_err(|e| format!("a line is not valid JSON: {e}")),
        _ => Ok(()),
    }
}

/// A leftover temporary file: safe to remove when its real file is intact, otherwise reported
/// with a manual instruction (it may hold the only good copy).
pub(super) fn temp_finding(ws: &Workspace, temp: &Path, ticket: Option<&TicketId>) -> Finding {
    let rel = ws.rel(temp);
    let real = real_file_of(temp);
    let verdict = match &real {
        Some(r) => intact(r),
        None => Err("no real file can be derived from its name".into()),
    };
    let real_rel = real.as_ref().map(|r| ws.rel(r)).unwrap_or_default();
    let f = match verdict {
        Ok(()) => Finding::warning(
            "layout.temp_file",
            format!("{rel}: temporary file of an interrupted write; {real_rel} is intact"),
            "no temporary files: atomic writes rename them into place",
        )
        .at(rel.clone(), None)
        .with_fix("yoi ticket doctor --fix")
        .with_safe_fix(SafeFix::RemoveTempFile { path: rel.clone() }),
        Err(why) => Finding::warning(
            "layout.temp_file",
            format!(
                "{rel}: temporary file of an interrupted write, and {} cannot replace it: {why}",
                if real_rel.is_empty() { "the real file" } else { &real_rel }
            ),
            "no temporary files: atomic writes rename them into place",
        )
        .at(rel.clone(), None)
        .with_fix(format!(
            "compare {rel} with {}: if it holds the version you want, rename it over the real file; otherwise delete it (doctor --fix leaves it: it may be the only copy)",
            if real_rel.is_empty() { "the file it was replacing" } else { &real_rel }
        )),
    };
    match ticket {
        Some(id) => f.with_ticket(id.as_str()),
        None => f,
    }
}
