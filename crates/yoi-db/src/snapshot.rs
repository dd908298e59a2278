//! One ticket's files as the index sees them: the snapshot read once through the ticket's
//! folder handle (item, events with their index keys, relations, plan records, each file's
//! size, mtime and hash), the keys events and plan records are indexed under, and whether a
//! ticket's files moved since the index saw them (size and mtime, then content hash).
//!
//! Doctor derives what the index should hold with these same rules, so the two cannot
//! disagree about what the files hold. Nothing here writes: the reindex module does.

use std::fs;

use sqlx::Row;
use yoi_core::item::Item;
use yoi_core::plan::{parse_plan, PlanRecord};
use yoi_core::relation::{Relation, RelationsFile};
use yoi_core::thread::{parse_thread, Event};
use yoi_core::{sha256_hex, TicketId};

use super::db_err;
use yoi_store::dirfd::Dir;
use yoi_store::fsutil::mtime_ns;
use yoi_store::tickets::{ARTIFACTS, ITEM, PLAN, RELATIONS, RESOLUTION, THREAD};
use yoi_store::workspace::Workspace;
use yoi_store::StoreError;

pub(crate) const FILES: [&str; 5] = [ITEM, THREAD, RELATIONS, PLAN, RESOLUTION];
/// Where item.md and thread.md are in [`FILES`] (a folder is a ticket when it holds either).
pub(crate) const ITEM_AT: usize = 0;
pub(crate) const THREAD_AT: usize = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileStat {
    pub(crate) name: &'static str,
    pub(crate) size: i64,
    pub(crate) mtime_ns: i64,
    pub(crate) hash: Option<String>,
}

/// What one ticket's files say, read once. Doctor derives what the index should hold with the
/// same rules (`Item::parse`, [`event_key`], [`indexed_plan`] and [`plan_key`]), so it and the
/// indexer cannot disagree about what the files hold.
///
/// A folder is a ticket when item.md or thread.md is a regular file in it, or when it is
/// itself a symbolic link (a broken ticket, fingerprinted by the link alone: [`linked_folder`]).
/// Its item is `None` (no tickets row, and a broken_tickets row: [`Snapshot::broken`]) when
/// item.md is missing, a symbolic link, unreadable or does not parse, thread.md is there but a
/// link or not UTF-8, or relations.json or orchestration-plan.jsonl is there but does not read
/// or parse ([`Workspace::diagnose`] names which). Without a readable item.md, nothing else of the
/// folder is indexed but its files' fingerprints: doctor's index facts say the same
/// (`yoi-doctor`'s `IndexFacts`).
pub(crate) struct Snapshot {
    pub(crate) id: TicketId,
    pub(crate) item: Option<Item>,
    /// Thread events with their index keys (see [`event_key`]).
    pub(crate) events: Vec<(String, Event)>,
    pub(crate) relations: Vec<Relation>,
    pub(crate) plan: Vec<PlanRecord>,
    pub(crate) files: Vec<FileStat>,
    /// thread.md read and parsed without an issue (a torn or hand-broken event).
    pub(crate) thread_clean: bool,
}

/// Read one ticket's files through its folder, opened once: each file is opened by name
/// relative to it, measured with `fstat` on the open handle and read into the thread's buffer
/// ([`yoi_store::dirfd::with_buffer`]; a rebuild reads tens of thousands of folders).
pub(crate) fn snapshot(ws: &Workspace, id: &TicketId) -> Snapshot {
    read_snapshot(ws, id, false).expect("every folder is read when not only tickets are")
}

/// [`snapshot`]; with `only_ticket`, `None` for a folder that is not a ticket (no item.md that
/// is a file), as [`Workspace::ticket_ids`] tells them apart.
pub(crate) fn read_snapshot(ws: &Workspace, id: &TicketId, only_ticket: bool) -> Option<Snapshot> {
    let mut snap = Snapshot {
        id: id.clone(),
        item: None,
        events: Vec::new(),
        relations: Vec::new(),
        plan: Vec::new(),
        files: Vec::new(),
        thread_clean: false,
    };
    // A ticket folder that is a symbolic link is not opened (doctor reports it): it is a broken
    // ticket, fingerprinted by the link alone ([`linked_folder`]).
    let Ok(dir) = Dir::open_no_link(&ws.ticket_dir(id)) else {
        if let Some((size, mtime_ns)) = linked_folder(ws, id) {
            snap.files.push(FileStat {
                name: ITEM,
                size,
                mtime_ns,
                hash: Some(String::new()),
            });
            return Some(snap);
        }
        return (!only_ticket).then_some(snap);
    };
    let mut item_read = false;
    let mut thread_bad = false;
    // relations.json or orchestration-plan.jsonl there but unreadable or unparsable.
    let mut artifact_bad = false;
    yoi_store::dirfd::with_buffer(|buf| {
        for name in FILES {
            let meta = match dir.read_stat_into(name, buf) {
                Ok(meta) => meta,
                Err(e) => {
                    let there = e.kind() != std::io::ErrorKind::NotFound;
                    thread_bad |= name == THREAD && there;
                    artifact_bad |= matches!(name, RELATIONS | PLAN) && there;
                    continue;
                }
            };
            item_read |= name == ITEM;
            snap.files.push(FileStat {
                name,
                size: meta.size as i64,
                mtime_ns: meta.mtime_ns,
                hash: Some(sha256_hex(buf)),
            });
            let Ok(text) = std::str::from_utf8(buf) else {
                thread_bad |= name == THREAD;
                artifact_bad |= matches!(name, RELATIONS | PLAN);
                continue;
            };
            match name {
                ITEM => snap.item = Item::parse(text).ok(),
                THREAD => {
                    let parsed = parse_thread(text);
                    snap.thread_clean = parsed.issues.is_empty();
                    snap.events = parsed
                        .events
                        .into_iter()
                        .enumerate()
                        .map(|(i, e)| (event_key(id, i, &e), e))
                        .collect()
                }
                RELATIONS => match RelationsFile::parse(text, id) {
                    Ok(f) => snap.relations = f.relations,
                    Err(_) => artifact_bad = true,
                },
                PLAN => match parse_plan(text, id) {
                    Ok(plan) => snap.plan = plan,
                    Err(_) => artifact_bad = true,
                },
                _ => {}
            }
        }
    });
    if let Some((size, mtime_ns)) = linked_artifacts(ws, id) {
        artifact_bad = true;
        snap.files.retain(|f| !matches!(f.name, RELATIONS | PLAN));
        snap.files.push(FileStat {
            name: RELATIONS,
            size,
            mtime_ns,
            hash: Some(String::new()),
        });
    }
    let seen = |name: &str| snap.files.iter().any(|f| f.name == name);
    if only_ticket && !seen(ITEM) && !seen(THREAD) {
        return None;
    }
    if !item_read {
        snap.events.clear();
        snap.relations.clear();
        snap.plan.clear();
        snap.thread_clean = false;
    }
    if thread_bad || artifact_bad {
        snap.item = None;
    }
    // The index's `updated_at` is the ticket's last change, thread included.
    if let Some(item) = &mut snap.item {
        item.updated_at = item.last_changed(snap.events.iter().map(|(_, e)| e));
    }
    Some(snap)
}

impl Snapshot {
    /// A folder holding a ticket whose files yoi cannot read (see [`Snapshot`]).
    pub(crate) fn broken(&self) -> bool {
        self.item.is_none() && !self.files.is_empty()
    }

    /// The index's `thread_events`: how many events thread.md holds when it read without an
    /// issue, else -1 (`thread_page.rs` then reads the file).
    pub(crate) fn thread_events(&self) -> i64 {
        match self.thread_clean {
            true => i64::try_from(self.events.len()).unwrap_or(-1),
            false => -1,
        }
    }
}

/// Whether a folder, as [`look_at`] saw it, holds a ticket: item.md or thread.md is a file, or
/// the folder is a symbolic link ([`linked_folder`]).
pub(crate) fn is_ticket(seen: &Seen) -> bool {
    seen[ITEM_AT].is_some() || seen[THREAD_AT].is_some()
}

/// The plan records the index holds for a plan file: all of them, or none while a line is bad
/// (doctor reports the line; the index keeps no half of a plan).
pub fn indexed_plan(text: &str, ticket: &TicketId) -> Vec<PlanRecord> {
    parse_plan(text, ticket).unwrap_or_default()
}

/// The index key of a thread event: its id, or its position for events written without one.
pub fn event_key(ticket: &TicketId, position: usize, e: &Event) -> String {
    event_key_of(ticket, position, e.id()).into_owned()
}

/// [`event_key`] of an event at `position` whose header has this `id` attribute.
pub fn event_key_of<'a>(
    ticket: &TicketId,
    position: usize,
    id: Option<&'a str>,
) -> std::borrow::Cow<'a, str> {
    match id {
        Some(id) if !id.is_empty() => id.into(),
        _ => format!("legacy:{ticket}:{position}").into(),
    }
}

/// The outbox key of a plan record: `plan:<ticket>:<record id>`.
pub fn plan_key(ticket: &TicketId, record: &str) -> String {
    format!("plan:{ticket}:{record}")
}

/// The name of one of the [`FILES`] this yoi fingerprints, as its own `'static` name.
pub(crate) fn fingerprinted(name: &str) -> Option<&'static str> {
    FILES.iter().find(|f| **f == name).copied()
}

/// A `ticket_files` row's name, size, mtime and hash, from column `at` on (`None`: a file
/// this yoi does not fingerprint).
pub(crate) fn file_stat(r: &sqlx::any::AnyRow, at: usize) -> Result<Option<FileStat>, StoreError> {
    let name: String = r.try_get(at).map_err(db_err)?;
    let Some(name) = fingerprinted(&name) else {
        return Ok(None);
    };
    Ok(Some(FileStat {
        name,
        size: r.try_get(at + 1).map_err(db_err)?,
        mtime_ns: r.try_get(at + 2).map_err(db_err)?,
        hash: Some(r.try_get(at + 3).map_err(db_err)?),
    }))
}

/// The size and mtime of each of a ticket's [`FILES`] (`None`: not there, or not a file).
pub(crate) type Seen = [Option<(i64, i64)>; FILES.len()];

/// The size of the fingerprint that stands for a folder that is a symbolic link.
pub(crate) const LINKED_FOLDER: i64 = -1;

/// When the folder of `id` is a symbolic link: the fingerprint that stands for it, an item.md
/// of size [`LINKED_FOLDER`] with the link's own mtime. The folder is then a ticket, and a
/// broken one ([`Snapshot::broken`]: nothing else is read), so lists show it; the index
/// notices when the link goes or changes, and nothing is ever looked at through it.
pub(crate) fn linked_folder(ws: &Workspace, id: &TicketId) -> Option<(i64, i64)> {
    link_stamp(&ws.ticket_dir(id))
}

/// When the `artifacts/` folder of `id` is a symbolic link: the fingerprint that stands for
/// it, a relations.json of size [`LINKED_FOLDER`] with the link's own mtime (the ticket is
/// broken: its relations and plan are unknown).
pub(crate) fn linked_artifacts(ws: &Workspace, id: &TicketId) -> Option<(i64, i64)> {
    link_stamp(&ws.path_of(id, ARTIFACTS))
}

fn link_stamp(path: &std::path::Path) -> Option<(i64, i64)> {
    fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.file_type().is_symlink())
        .map(|m| (LINKED_FOLDER, mtime_ns(&m)))
}

/// A symbolic link is not a file here, as [`read_snapshot`] does not read one; a folder that
/// is one is seen as [`linked_folder`] and [`linked_artifacts`] say, and nothing below it is
/// looked at.
pub(crate) fn look_at(ws: &Workspace, id: &TicketId) -> Seen {
    debug_assert_eq!(FILES[ITEM_AT], ITEM);
    debug_assert_eq!(FILES[THREAD_AT], THREAD);
    if let Some(link) = linked_folder(ws, id) {
        let mut seen: Seen = [None; FILES.len()];
        seen[ITEM_AT] = Some(link);
        return seen;
    }
    let artifacts = linked_artifacts(ws, id);
    FILES.map(|name| {
        if artifacts.is_some() && matches!(name, RELATIONS | PLAN) {
            return artifacts.filter(|_| name == RELATIONS);
        }
        fs::symlink_metadata(ws.path_of(id, name))
            .ok()
            .filter(fs::Metadata::is_file)
            .map(|m| (m.len() as i64, mtime_ns(&m)))
    })
}

/// Whether any file of the ticket, as `seen`, differs from what the index saw: by size and
/// mtime first; when only the mtime moved, by content hash.
pub(crate) fn ticket_changed(
    ws: &Workspace,
    id: &TicketId,
    seen: &Seen,
    known: Option<&Vec<FileStat>>,
) -> bool {
    let Some(known) = known else { return true };
    for (name, now) in FILES.iter().zip(seen) {
        let old = known.iter().find(|f| f.name == *name);
        match (now, old) {
            (None, None) => {}
            (Some(_), None) | (None, Some(_)) => return true,
            (Some((len, mtime)), Some(o)) => {
                if *len != o.size {
                    return true;
                }
                // A linked folder's fingerprint is never compared by content.
                if *len == LINKED_FOLDER {
                    if *mtime != o.mtime_ns {
                        return true;
                    }
                    continue;
                }
                if *mtime != o.mtime_ns {
                    let path = ws.path_of(id, name);
                    let hash = fs::read(&path).ok().map(|b| sha256_hex(&b));
                    if hash != o.hash {
                        return true;
                    }
                }
            }
        }
    }
    false
}
