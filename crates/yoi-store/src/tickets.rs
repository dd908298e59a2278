//! Reading ticket records. Reads take no lock: every file is replaced atomically or appended,
//! so a reader sees a consistent version of each file. Operations that decide on what they read
//! re-read it under the lock (see `ops`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use yoi_core::id::{self, TicketId};
use yoi_core::item::Item;
use yoi_core::plan::{parse_plan, PlanError, PlanRecord};
use yoi_core::relation::{RelationGraph, RelationsFile, RelationsFileError};
use yoi_core::resolution::parse_resolution;
use yoi_core::state::State;
use yoi_core::thread::{parse_thread, ParsedThread};

use serde::{Deserialize, Serialize};

use crate::error::{StoreError, LINK_REASON};
use crate::workspace::Workspace;
use crate::writes::Writes;

pub const ITEM: &str = "item.md";
pub const THREAD: &str = "thread.md";
pub const RESOLUTION: &str = "resolution.md";
pub const ARTIFACTS: &str = "artifacts";
pub const RELATIONS: &str = "artifacts/relations.json";
pub const PLAN: &str = "artifacts/orchestration-plan.jsonl";

/// A ticket yoi cannot read ([`Workspace::diagnose`]): which file, where, why, and the doctor
/// check whose finding says more. Listed beside the readable tickets, never instead of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BrokenTicket {
    pub id: TicketId,
    /// The broken file, or the ticket folder, relative to the repository root.
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    pub reason: String,
    /// The doctor check that reports it (`item.parse`, `file.unreadable`,
    /// `ticket.missing_item`, `layout.symlink`, `relations.parse`, `relations.invalid`,
    /// `plan.parse` or `plan.invalid`).
    pub check: String,
}

/// Everything recorded for one ticket.
#[derive(Debug, Clone)]
pub struct Ticket {
    pub id: TicketId,
    pub item: Item,
    pub thread: ParsedThread,
    pub relations: RelationsFile,
    pub plan: Vec<PlanRecord>,
    pub resolution: Option<String>,
}

impl Workspace {
    /// Ids of every ticket folder (valid id as name and an item.md inside), sorted. A folder
    /// that is a symbolic link is left out without a look through it (it is a broken ticket:
    /// [`Workspace::diagnose`]).
    pub fn ticket_ids(&self) -> Result<Vec<TicketId>, StoreError> {
        Ok(self
            .folders_named_as_tickets()?
            .into_iter()
            .filter(|(id, link)| !link && self.ticket_dir(id).join(ITEM).is_file())
            .map(|(id, _)| id)
            .collect())
    }

    /// Ids of every folder named as a ticket, sorted, without looking inside: a caller that
    /// stats the files anyway tells the tickets (an item.md inside) from the rest itself.
    pub fn ticket_folders(&self) -> Result<Vec<TicketId>, StoreError> {
        Ok(self
            .folders_named_as_tickets()?
            .into_iter()
            .map(|(id, _)| id)
            .collect())
    }

    /// [`Workspace::ticket_folders`], each with whether it is a symbolic link (as the folder
    /// listing says, without a look at it).
    fn folders_named_as_tickets(&self) -> Result<Vec<(TicketId, bool)>, StoreError> {
        let dir = self.tickets_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(&dir, e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(&dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') {
                continue;
            }
            if let Ok(id) = TicketId::parse(name) {
                let link = entry.file_type().is_ok_and(|t| t.is_symlink());
                ids.push((id, link));
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// Resolve a full id or a unique suffix of at least four characters. A broken ticket
    /// ([`Workspace::holds_ticket`]) resolves too, so reading it names what is broken instead
    /// of saying there is no such ticket.
    pub fn resolve(&self, query: &str) -> Result<TicketId, StoreError> {
        // Fast path: an exact id whose folder holds a ticket (looked at without following a
        // link: a linked folder is a broken ticket).
        if let Ok(id) = TicketId::parse(&query.trim().to_ascii_uppercase()) {
            if self.holds_ticket(&id) {
                return Ok(id);
            }
        }
        match id::resolve(query, &self.ticket_ids()?) {
            Ok(id) => Ok(id),
            // Only then look for a broken one: most lookups never pay for the extra looks.
            Err(first) => {
                let mut ids = self.ticket_folders()?;
                ids.retain(|id| self.holds_ticket(id));
                id::resolve(query, &ids).map_err(|_| first.into())
            }
        }
    }

    /// Whether the folder of `id` holds a ticket, readable or not: item.md or thread.md is
    /// there (as anything, a symbolic link too), or the folder itself is a link.
    pub fn holds_ticket(&self, id: &TicketId) -> bool {
        let dir = self.ticket_dir(id);
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_symlink() => true,
            Ok(m) if m.is_dir() => [ITEM, THREAD]
                .iter()
                .any(|f| fs::symlink_metadata(dir.join(f)).is_ok()),
            _ => false,
        }
    }

    /// What keeps yoi from reading ticket `id`, if anything: a symbolic link for its folder,
    /// an item.md that is missing, a link, not UTF-8 or not valid frontmatter, a thread.md
    /// that is a link or not UTF-8, or an `artifacts/relations.json` or
    /// `artifacts/orchestration-plan.jsonl` that does not read or parse (a torn last line
    /// too). The first problem found, named as doctor names it.
    pub fn diagnose(&self, id: &TicketId) -> Option<BrokenTicket> {
        let broken = |path: &Path, line: Option<usize>, reason: String, check: &str| {
            Some(BrokenTicket {
                id: id.clone(),
                path: self.rel(path),
                line,
                reason,
                check: check.to_string(),
            })
        };
        let dir = self.ticket_dir(id);
        if fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return broken(&dir, None, LINK_REASON.into(), "layout.symlink");
        }
        let unreadable = |path: &Path, e: std::io::Error| {
            if crate::beneath::is_link(&e) {
                return broken(path, None, LINK_REASON.into(), "layout.symlink");
            }
            match crate::beneath::not_utf8(&e) {
                Some(bad) => broken(
                    path,
                    Some(bad.line),
                    format!("not UTF-8 (byte {})", bad.byte),
                    "file.unreadable",
                ),
                None => broken(path, None, e.to_string(), "file.unreadable"),
            }
        };
        let item = self.path_of(id, ITEM);
        match self.writes.read_opt(&item) {
            Err(e) => return unreadable(&item, e),
            Ok(None) => {
                return broken(
                    &item,
                    None,
                    "item.md is missing".into(),
                    "ticket.missing_item",
                )
            }
            Ok(Some(text)) => {
                if let Err(e) = Item::parse(&text) {
                    return broken(&item, e.line, e.reason, "item.parse");
                }
            }
        }
        let thread = self.path_of(id, THREAD);
        if let Err(e) = self.writes.read_opt(&thread) {
            return unreadable(&thread, e);
        }
        let relations = self.path_of(id, RELATIONS);
        match self.writes.read_opt(&relations) {
            Err(e) => return unreadable(&relations, e),
            Ok(None) => {}
            Ok(Some(text)) => {
                if let Err(e) = RelationsFile::parse(&text, id) {
                    let (line, check) = relations_error_at(&e);
                    return broken(&relations, line, e.to_string(), check);
                }
            }
        }
        let plan = self.path_of(id, PLAN);
        match self.writes.read_opt(&plan) {
            Err(e) => unreadable(&plan, e),
            Ok(None) => None,
            Ok(Some(text)) => match parse_plan(&text, id) {
                Ok(_) => None,
                Err(e) => {
                    let (line, check) = plan_error_at(&e);
                    broken(&plan, Some(line), e.to_string(), check)
                }
            },
        }
    }

    pub fn path_of(&self, id: &TicketId, file: &str) -> PathBuf {
        self.ticket_dir(id).join(file)
    }

    pub fn read_item(&self, id: &TicketId) -> Result<Item, StoreError> {
        let path = self.path_of(id, ITEM);
        let text = read_required(&self.writes, &path)?;
        Item::parse(&text).map_err(|e| StoreError::invalid(&path, e.line, e.reason))
    }

    pub fn read_thread(&self, id: &TicketId) -> Result<ParsedThread, StoreError> {
        let path = self.path_of(id, THREAD);
        let text = self
            .writes
            .read_opt(&path)
            .map_err(|e| StoreError::io(&path, e))?
            .unwrap_or_default();
        Ok(parse_thread(&text))
    }

    pub fn read_relations(&self, id: &TicketId) -> Result<RelationsFile, StoreError> {
        let path = self.path_of(id, RELATIONS);
        match self
            .writes
            .read_opt(&path)
            .map_err(|e| StoreError::io(&path, e))?
        {
            None => Ok(RelationsFile::empty()),
            Some(text) => RelationsFile::parse(&text, id)
                .map_err(|e| StoreError::invalid(&path, relations_error_at(&e).0, e.to_string())),
        }
    }

    pub fn read_plan(&self, id: &TicketId) -> Result<Vec<PlanRecord>, StoreError> {
        let path = self.path_of(id, PLAN);
        match self
            .writes
            .read_opt(&path)
            .map_err(|e| StoreError::io(&path, e))?
        {
            None => Ok(Vec::new()),
            Some(text) => parse_plan(&text, id)
                .map_err(|e| StoreError::invalid(&path, Some(plan_error_at(&e).0), e.to_string())),
        }
    }

    pub fn read_resolution(&self, id: &TicketId) -> Result<Option<String>, StoreError> {
        let path = self.path_of(id, RESOLUTION);
        Ok(self
            .writes
            .read_opt(&path)
            .map_err(|e| StoreError::io(&path, e))?
            .map(|t| parse_resolution(&t)))
    }

    pub fn read_ticket(&self, id: &TicketId) -> Result<Ticket, StoreError> {
        Ok(Ticket {
            id: id.clone(),
            item: self.read_item(id)?,
            thread: self.read_thread(id)?,
            relations: self.read_relations(id)?,
            plan: self.read_plan(id)?,
            resolution: self.read_resolution(id)?,
        })
    }

    /// Every ticket's item that reads, in id order, skipping the tickets whose files are
    /// damaged (a [`StoreError::Invalid`]: see [`Workspace::diagnose`]), so one broken file
    /// never stops a pass over the others. Other errors (the machine's) fail the read.
    pub fn read_readable_items(&self) -> Result<Vec<(TicketId, Item)>, StoreError> {
        let ids = self.ticket_ids()?;
        let read = parallel_map(&ids, |id| match self.read_item(id) {
            Ok(item) => Ok(Some((id.clone(), item))),
            Err(StoreError::Invalid { .. }) => Ok(None),
            Err(e) => Err(e),
        })?;
        Ok(read.into_iter().flatten().collect())
    }

    /// Every ticket's item, in id order. Unreadable items are errors.
    pub fn read_all_items(&self) -> Result<Vec<(TicketId, Item)>, StoreError> {
        let ids = self.ticket_ids()?;
        parallel_map(&ids, |id| self.read_item(id).map(|item| (id.clone(), item)))
    }

    /// The relation graph of the whole workspace, from every relations.json that reads. A
    /// damaged one (a [`StoreError::Invalid`]: not JSON, not UTF-8, a link, a broken rule) adds
    /// no edges, so it stops no page and no routing pass; its ticket is broken
    /// ([`Workspace::diagnose`]) and [`Workspace::read_graph_noting_damage`] names it.
    pub fn read_graph(&self) -> Result<RelationGraph, StoreError> {
        Ok(self.read_graph_noting_damage()?.0)
    }

    /// [`Workspace::read_graph`], and the tickets whose relations.json is damaged (their
    /// edges are unknown: a caller that decides on them treats them as broken).
    pub fn read_graph_noting_damage(
        &self,
    ) -> Result<(RelationGraph, BTreeSet<TicketId>), StoreError> {
        let ids = self.ticket_ids()?;
        let files = parallel_map(&ids, |id| match self.read_relations(id) {
            Ok(f) => Ok(Ok(f)),
            Err(StoreError::Invalid { .. }) => Ok(Err(id.clone())),
            Err(e) => Err(e),
        })?;
        let mut damaged = BTreeSet::new();
        let mut relations = Vec::new();
        for f in files {
            match f {
                Ok(f) => relations.extend(f.relations),
                Err(id) => {
                    damaged.insert(id);
                }
            }
        }
        Ok((RelationGraph::from_owned(relations), damaged))
    }

    /// States of the given tickets. Missing tickets, and those whose item.md yoi cannot read
    /// (broken: [`Workspace::diagnose`]), are absent from the map: in no known state, which
    /// blocks, and which stops no view of the tickets related to them.
    pub fn states_of<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a TicketId>,
    ) -> Result<BTreeMap<TicketId, State>, StoreError> {
        let mut out = BTreeMap::new();
        for id in ids {
            match self.read_item(id) {
                Ok(item) => {
                    out.insert(id.clone(), item.state);
                }
                Err(StoreError::Invalid { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
}

/// The line a relations.json error is on, when it has one, and the doctor check that reports
/// it (`relations.parse` for JSON that does not parse, `relations.invalid` for a broken rule).
fn relations_error_at(e: &RelationsFileError) -> (Option<usize>, &'static str) {
    match e {
        RelationsFileError::Json { line, .. } => (Some(*line), "relations.parse"),
        _ => (None, "relations.invalid"),
    }
}

/// The line an orchestration-plan.jsonl error is on, and the doctor check that reports it
/// (`plan.parse` for a line that is no JSON record, a torn last line among them;
/// `plan.invalid` for a record that breaks its kind's rules).
fn plan_error_at(e: &PlanError) -> (usize, &'static str) {
    match e {
        PlanError::Json { line, .. } => (*line, "plan.parse"),
        PlanError::Invalid { line, .. } => (*line, "plan.invalid"),
    }
}

fn read_required(writes: &Writes, path: &Path) -> Result<String, StoreError> {
    writes
        .read_opt(path)
        .map_err(|e| StoreError::io(path, e))?
        .ok_or_else(|| StoreError::invalid(path, None, "the file is missing"))
}

/// Map over `items` on all cores, keeping order, stopping at the first error.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> Result<R, StoreError> + Sync,
) -> Result<Vec<R>, StoreError> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if workers <= 1 || items.len() < 256 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(workers);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| s.spawn(|| part.iter().map(&f).collect::<Result<Vec<R>, _>>()))
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for h in handles {
            out.extend(h.join().expect("reader thread panicked")?);
        }
        Ok(out)
    })
}
