//! Doctor: structural checks over the ticket files, and the repairs that cannot lose anything.
//!
//! [`run`] reads every file under the tickets folder once (tickets in parallel), reports each
//! problem as a [`Finding`] — severity, stable check id, ticket, path relative to the repository
//! root, line when known, what was seen, what was expected, and the command or instruction that
//! fixes it — and returns a [`Report`]. It never prints and never decides an exit code.
//!
//! **What `--fix` does.** Only the repairs a finding marks with a [`SafeFix`]: removing the
//! temporary file of an interrupted atomic write when the real file beside it exists and parses,
//! creating a missing `thread.md` (empty) or `artifacts/` folder, and re-rendering a
//! `relations.json` whose only difference from the canonical rendering is its order, and
//! dropping git's record of a linked worktree whose folder is gone (`git worktree prune`). Fixing
//! takes the workspace lock, re-runs the checks inside it (so it acts on what is on disk now,
//! not on a report read before), applies those repairs, and runs the checks again for the
//! report. It never touches `item.md`, never rewrites `thread.md`, and never deletes anything
//! that may be the only copy of something: a `.new-<id>` staging folder left by an interrupted
//! `create` holds the only copy of that ticket, so it is reported with a manual instruction and
//! left alone; so is a temporary file whose real file is missing or broken.
//!
//! **Severity decisions.** An *error* is something yoi cannot read, a ticket it cannot see, or
//! a state its own operations can never produce (a cycle, an in-progress ticket with an open
//! blocker, a closed yoi ticket without its resolution). A *warning* is something that works but
//! deserves a look: older-format keys and events (they are read and mapped), unknown keys (kept),
//! leftovers of interrupted operations, and drift between the thread and item.md. A closed
//! ticket without `resolution.md` is an error for yoi tickets (ULID ids: `close` and `cancel`
//! always write it) and a warning for tickets with the older 13-character ids (the older
//! system did not always write one). A ticket tree written by the older system passes with
//! warnings only. A queued ticket is warned about only for blockers the queue guard would refuse
//! today (neither finished nor in flight); waiting on in-flight work is normal.
//!
//! The checks, by id, are listed in [`CHECKS`]. The `index.*` and `outbox.*` checks compare
//! the database with the files and need the caller's index: see [`run_with_index`] and the
//! `index_check` module. The `worktree.*` and `branch.*` checks compare the git repository around the
//! workspace with the tickets, and run only when there is one: see the `worktrees` module.

mod cache;
mod graph;
mod index_check;
mod item;
mod layout;
mod scan;
mod thread;
mod ticket;
mod worktrees;

use std::fs;
use std::path::Path;

use serde::Serialize;
use yoi_core::finding::{Finding, SafeFix, Severity};
use yoi_core::relation::RelationsFile;
use yoi_core::TicketId;

use yoi_store::fsutil;
use yoi_store::tickets::RELATIONS;
use yoi_store::workspace::Workspace;
use yoi_store::StoreError;
use Severity::{Error as E, Warning as W};

pub use index_check::{
    index_findings, index_findings_with, run_attached, run_with_index, DRIFT, UNDELIVERED_AFTER_MS,
};

/// What doctor found, and what `--fix` repaired. `ok` is true when no error remains.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = DoctorReport)]
pub struct Report {
    pub ok: bool,
    pub errors: usize,
    pub warnings: usize,
    pub findings: Vec<Finding>,
    /// One line per repair `--fix` applied.
    pub fixed: Vec<String>,
}

impl Report {
    pub fn new(findings: Vec<Finding>, fixed: Vec<String>) -> Self {
        let errors = findings.iter().filter(|f| f.is_error()).count();
        Report {
            ok: errors == 0,
            errors,
            warnings: findings.len() - errors,
            findings,
            fixed,
        }
    }
}

/// One documented check: its stable id, its usual severity and what it looks at.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CheckInfo {
    pub id: &'static str,
    pub severity: Severity,
    pub what: &'static str,
}

const fn check(id: &'static str, severity: Severity, what: &'static str) -> CheckInfo {
    CheckInfo { id, severity, what }
}

/// Every check doctor runs. Some ids carry either severity depending on the case (see `what`).
pub const CHECKS: &[CheckInfo] = &[
    check("ticket.dir_name", E, "a folder holding item.md whose name is not a ticket id (26-char ULID or 13-char legacy id, upper case)"),
    check("ticket.missing_item", E, "a ticket folder without item.md: yoi cannot see the ticket"),
    check("layout.symlink", E, "a symbolic link where yoi reads and writes: a ticket folder, a file or folder in one, a skill folder or a ticket worktree (never followed; its target's contents are never listed)"),
    check("layout.stray_file", W, "a file or folder that does not belong in the tickets root or a ticket folder"),
    check("layout.staging_dir", W, "a `.new-<id>` folder left by an interrupted create (never removed by --fix)"),
    check("layout.temp_file", W, "a temporary file left by an interrupted atomic write (removed by --fix when the real file is intact)"),
    check("layout.artifacts_missing", W, "a ticket without its artifacts/ folder (created by --fix)"),
    check("file.unreadable", E, "a ticket file that cannot be read or is not UTF-8"),
    check("item.parse", E, "item.md that does not parse"),
    check("item.required_key", E, "item.md without title, state, created_at or updated_at"),
    check("item.state", E, "item.md whose state is not a ticket state"),
    check("item.legacy_key", W, "an older-format key in item.md, and how yoi maps it"),
    check("item.unknown_key", W, "a key neither yoi nor the older format defines (kept on rewrite)"),
    check("item.queued_fields", W, "queued_by/queued_at missing on a queued or in-progress ticket, or left on a planning or ready one"),
    check("resolution.missing", E, "a closed ticket without resolution.md (warning for legacy 13-char ids)"),
    check("resolution.unexpected", W, "resolution.md on a ticket that is not closed"),
    check("thread.missing", W, "a ticket without thread.md (created empty by --fix)"),
    check("thread.malformed_header", E, "an event header comment that cannot be read"),
    check("thread.unterminated", E, "an event never closed by `---` that runs to the end of the file (usually a torn append)"),
    check("thread.ended_by_next_header", W, "an event not closed by `---` before the next event's header, read as ended there as the older tool read it"),
    check("thread.stray_text", W, "text outside any event"),
    check("thread.event_author", E, "an event without `author`"),
    check("thread.event_at", E, "an event without `at`, or with an `at` that is not a timestamp"),
    check("thread.event_id", W, "events without `id` (the older format; read as they are)"),
    check("thread.duplicate_id", E, "two events with the same id"),
    check("thread.state_changed_fields", E, "a state_changed event without valid from/to/reason"),
    check("thread.older_state", W, "a state_changed event naming an older state (`intake`), read as the current state it became"),
    check("thread.state_mismatch", W, "the last state change in the thread differs from item.md's state"),
    check("relations.parse", E, "relations.json that is not valid JSON of the expected shape"),
    check("relations.invalid", E, "relations.json that parses but breaks a rule (owner, self target, duplicate, version, note size)"),
    check("relations.dangling", E, "a relation whose target ticket does not exist (warning for related/supersedes/duplicate_of)"),
    check("relations.unsorted", W, "relations.json not in canonical order (sorted by --fix when nothing else differs)"),
    check("relations.cycle", E, "a depends_on/blocks cycle, shown as `A -> B -> A`"),
    check("relations.cycle_limit", W, "more cycles than doctor lists"),
    check("relations.superseded_active", W, "a ticket and the ticket it supersedes are both still unfinished"),
    check("relations.duplicate_active", W, "a ticket and the ticket it duplicates are both still unfinished"),
    check("ticket.blocked_queued", W, "a queued ticket with a blocker the queue guard would refuse"),
    check("ticket.blocked_inprogress", W, "an in-progress ticket with an open blocker (one reopened after it started; adding one is refused)"),
    check("plan.parse", E, "an orchestration-plan.jsonl line that is not a plan record"),
    check("plan.invalid", E, "a plan record that parses but breaks a rule"),
    check("plan.missing_related", W, "a plan record naming a ticket that does not exist"),
    check("index.missing_ticket", E, "a ticket whose item.md parses but that has no row in the database index"),
    check("index.extra_ticket", E, "an index row for a ticket with no folder on disk, or whose item.md does not parse"),
    check("index.stale_ticket", E, "an index row whose title, state or updated_at differ from item.md"),
    check("index.missing_event", E, "thread events missing from the index (one finding per ticket)"),
    check("index.extra_event", E, "indexed events that thread.md does not hold (one finding per ticket)"),
    check("outbox.missing", E, "thread events or plan records without their outbox row (one finding per ticket)"),
    check("outbox.orphan", W, "outbox rows naming no thread event or plan record on disk (kept by --fix: they are delivery history)"),
    check("outbox.undelivered", W, "outbox events older than the threshold (default one hour) a registered consumer has not acknowledged, one finding per consumer"),
    check("outbox.dead", E, "a delivery its consumer gave up on after running out of attempts, with the last reason"),
    check("assignment.stale", W, "an open assignment whose ticket is neither in progress nor (pending, first assignment) queued; --fix re-reads the tickets, which cancels it"),
    check("assignment.lease_past_due", W, "a claim still `claimed` more than five seconds past its lease: no `yoi serve` is sweeping leases"),
    check("pod.silent", W, "a claim whose pod has not been heard from within a lease (or is not registered)"),
    check("worktree.attempt_leftover", W, "an attempt worktree (`<ticket worktree>.attempt-N`) that no live attempt works in"),
    check("worktree.missing", E, "an in-progress ticket whose accepted worktree is not a worktree of the repository (gone, never added, or a plain folder)"),
    check("branch.missing", E, "an in-progress ticket whose accepted branch does not exist"),
    check("plan.older_workplace", W, "an in-progress ticket under an older tool's accepted plan (no base commit) whose branch or worktree is not in this repository"),
    check("worktree.orphan", W, "a clean yoi worktree (under the worktree folder or on a `yoi/` branch) whose ticket is missing or not in progress"),
    check("worktree.dirty_closed", W, "a yoi worktree with uncommitted changes whose ticket is done, closed or missing"),
    check("branch.orphan", W, "a `yoi/<id>-…` branch whose ticket does not exist"),
    check("worktree.prunable", W, "git's record of a linked worktree whose folder is gone (pruned by --fix)"),
    check("git.unreadable", W, "the repository's worktrees or branches could not be read, so the worktree checks did not run"),
];

/// What doctor's file checks find in one ticket's folder (as a full run reports them for it,
/// without the checks across tickets): what a page about a broken ticket shows. A folder that
/// is a symbolic link is reported as such and not read.
pub fn ticket_findings(ws: &Workspace, id: &yoi_core::TicketId) -> Vec<Finding> {
    let dir = ws.ticket_dir(id);
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return vec![layout::symlink_finding(ws, &dir, Some(id))];
    }
    let mut scan = ticket::scan_ticket(ws, id, &mut cache::Stamps::default());
    scan.findings.sort_unstable_by(order);
    scan.findings
}

/// Check the workspace; with `fix`, first apply the repairs that cannot lose information.
pub fn run(ws: &Workspace, fix: bool) -> Result<Report, StoreError> {
    if !fix {
        return Ok(Report::new(check_all(ws)?, Vec::new()));
    }
    let _lock = ws.lock()?;
    let fixed = fix_files(ws)?;
    Ok(Report::new(check_all(ws)?, fixed))
}

/// Check, then apply every safe repair the findings carry (the caller holds the lock).
fn fix_files(ws: &Workspace) -> Result<Vec<String>, StoreError> {
    let mut fixed = Vec::new();
    for f in &check_all(ws)? {
        if let Some(repair) = &f.safe_fix {
            if let Some(done) = apply(ws, repair)? {
                fixed.push(done);
            }
        }
    }
    Ok(fixed)
}

/// Room left in a report for the findings added after the file checks (the skill catalog's).
const SLACK: usize = 64;

/// Every finding, sorted by path, line and check.
fn check_all(ws: &Workspace) -> Result<Vec<Finding>, StoreError> {
    let scan = layout::scan_root(ws)?;
    let mut tickets = Vec::with_capacity(scan.ticket_dirs.len());
    let mut own = Vec::new();
    scan::in_chunks(ws, &scan.ticket_dirs, |part| {
        keep(part, &mut tickets, &mut own);
        Ok(())
    })?;
    Ok(file_findings(ws, scan.findings, &tickets, own, SLACK))
}

/// Keep what the cross-ticket checks need of a chunk's scans, and move their findings to
/// `own`, so the per-ticket lists are gone before the report is put together. Each ticket's
/// findings come sorted ([`order`]), and the chunks in folder order.
fn keep(
    part: Vec<ticket::TicketScan>,
    tickets: &mut Vec<ticket::TicketScan>,
    own: &mut Vec<Finding>,
) {
    for mut t in part {
        own.append(&mut t.findings);
        t.findings = Vec::new();
        t.facts = Default::default();
        tickets.push(t);
    }
}

/// The order of a report: by path, line and check, then by every other field shown, so
/// findings equal in that order are interchangeable.
pub(crate) fn order(a: &Finding, b: &Finding) -> std::cmp::Ordering {
    (
        a.path.as_deref(),
        a.line,
        a.check,
        &a.seen,
        &a.ticket,
        &a.expected,
        &a.fix,
    )
        .cmp(&(
            b.path.as_deref(),
            b.line,
            b.check,
            &b.seen,
            &b.ticket,
            &b.expected,
            &b.fix,
        ))
}

/// The cross-ticket checks over what the per-ticket checks kept, then every finding in
/// [`order`]. `own` holds the per-ticket findings as [`keep`] left them; the list has room for
/// `more` findings after these (a large tree's report is tens of thousands: growing it by
/// doubling would hold it twice).
///
/// Each ticket's findings lie in its own folder, and the folders come in the order of their
/// names, which is the order of their paths (`/` sorts before any character of an id), so
/// `own` is in order already: the few other findings are merged into it in place, instead of
/// sorting the whole report on one core. Should `own` not be in order after all, or the other
/// findings be many, the whole report is sorted.
fn file_findings(
    ws: &Workspace,
    root: Vec<Finding>,
    tickets: &[ticket::TicketScan],
    own: Vec<Finding>,
    more: usize,
) -> Vec<Finding> {
    let cross = graph::check_workspace(ws, tickets);
    let git = worktrees::check_workspace(ws, tickets);
    let mut other: Vec<Finding> = root.into_iter().chain(cross).chain(git).collect();
    other.sort_unstable_by(order);
    merged(own, other, more)
}

/// `own`, expected in [`order`], and `other`, in order, merged in place, with room for `more`.
fn merged(mut own: Vec<Finding>, other: Vec<Finding>, more: usize) -> Vec<Finding> {
    /// Beyond this many, merging (which moves the block of other findings once per finding)
    /// costs more than sorting.
    const FEW: usize = 64;
    let in_order = own.is_sorted_by(|a, b| order(a, b).is_le());
    let m = other.len();
    own.reserve_exact(m + more);
    // From the back: the other findings sit after the unplaced part of `own`, which ends at
    // `end`; each step moves the last of them, with those before it, in front of the part of
    // `own` that follows it, which is then in place.
    let mut end = own.len();
    own.extend(other);
    if !in_order || m > FEW {
        own.sort_unstable_by(order);
        return own;
    }
    for j in (0..m).rev() {
        let at = own[..end].partition_point(|f| order(f, &own[end + j]).is_le());
        own[at..end + j + 1].rotate_right(j + 1);
        end = at;
    }
    own
}

/// [`SafeFix::SetAsideTorn`]: re-read thread.md, and when `line` still starts a torn event,
/// write its bytes to the side file (a new file, synced) before rewriting thread.md without
/// them. Nothing is read or written through a symbolic link.
fn set_aside_torn(ws: &Workspace, ticket: &str, line: usize) -> Result<Option<String>, StoreError> {
    let id = TicketId::parse(ticket)?;
    let path = ws.path_of(&id, yoi_store::tickets::THREAD);
    let base = ws.tickets_dir();
    let Some(text) =
        yoi_store::beneath::read_opt(&base, &path).map_err(|e| StoreError::io(&path, e))?
    else {
        return Ok(None);
    };
    let parsed = yoi_core::thread::parse_thread_headers(&text);
    let Some(region) = parsed
        .issues
        .iter()
        .filter(|i| i.line == line)
        .find_map(|i| thread::torn_region(&text, i))
    else {
        return Ok(None);
    };
    let side = ws.ticket_dir(&id).join(thread::torn_side_file(line));
    if fs::symlink_metadata(&side).is_ok() {
        // An earlier repair's side file: never overwritten; a person decides.
        return Ok(None);
    }
    if let Some(dir) = side.parent() {
        yoi_store::beneath::check_folders(&base, &side)
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    fs::create_dir(dir)
                } else {
                    Err(e)
                }
            })
            .map_err(|e| StoreError::io(dir, e))?;
    }
    yoi_store::beneath::atomic_write(&base, &side, text[region.clone()].as_bytes())
        .map_err(|e| StoreError::io(&side, e))?;
    let mut kept = String::with_capacity(text.len() - region.len());
    kept.push_str(&text[..region.start]);
    kept.push_str(&text[region.end..]);
    yoi_store::beneath::atomic_write(&base, &path, kept.as_bytes())
        .map_err(|e| StoreError::io(&path, e))?;
    Ok(Some(format!(
        "set the torn event at {}:{line} aside in {}",
        ws.rel(&path),
        ws.rel(&side)
    )))
}

/// Apply one repair. Each re-checks, inside the lock, that it still loses nothing; `None` means
/// there was nothing left to do.
fn apply(ws: &Workspace, repair: &SafeFix) -> Result<Option<String>, StoreError> {
    match repair {
        SafeFix::RemoveTempFile { path } => {
            let temp = ws.root().join(path);
            let Some(real) = layout::real_file_of(&temp) else {
                return Ok(None);
            };
            if layout::intact(&real).is_err() || !temp.is_file() {
                return Ok(None);
            }
            fs::remove_file(&temp).map_err(|e| StoreError::io(&temp, e))?;
            Ok(Some(format!("removed leftover temporary file {path}")))
        }
        SafeFix::SortRelations { ticket } => {
            let id = TicketId::parse(ticket)?;
            let path = ws.path_of(&id, RELATIONS);
            let Some(text) = fsutil::read_opt(&path).map_err(|e| StoreError::io(&path, e))? else {
                return Ok(None);
            };
            let Ok(file) = RelationsFile::parse(&text, &id) else {
                return Ok(None);
            };
            if !graph::only_order_differs(&file, &text) {
                return Ok(None);
            }
            fsutil::atomic_write(&path, file.render().as_bytes())
                .map_err(|e| StoreError::io(&path, e))?;
            Ok(Some(format!("sorted {} by kind and target", ws.rel(&path))))
        }
        SafeFix::CreateFile { path } => {
            let p = ws.root().join(path);
            match fs::OpenOptions::new().write(true).create_new(true).open(&p) {
                Ok(f) => {
                    f.sync_all().map_err(|e| StoreError::io(&p, e))?;
                    sync_parent(&p)?;
                    Ok(Some(format!("created empty {path}")))
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
                Err(e) => Err(StoreError::io(&p, e)),
            }
        }
        SafeFix::CreateDir { path } => {
            let p = ws.root().join(path);
            match fs::create_dir(&p) {
                Ok(()) => {
                    sync_parent(&p)?;
                    Ok(Some(format!("created {path}/")))
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
                Err(e) => Err(StoreError::io(&p, e)),
            }
        }
        SafeFix::SetAsideTorn { ticket, line } => set_aside_torn(ws, ticket, *line),
        SafeFix::PruneWorktrees => {
            let Some(repo) = yoi_store::git::repo_root(ws.root()) else {
                return Ok(None);
            };
            let pruned = yoi_git::prune_worktrees(&repo)
                .map_err(|e| StoreError::io(&repo, std::io::Error::other(e.to_string())))?;
            if pruned.is_empty() {
                return Ok(None);
            }
            let folders: Vec<String> = pruned
                .iter()
                .map(|p| yoi_store::git::relative_to(&repo, p))
                .collect();
            Ok(Some(format!(
                "pruned the worktree records of {} (their folders were gone)",
                folders.join(", ")
            )))
        }
    }
}

fn sync_parent(p: &Path) -> Result<(), StoreError> {
    match p.parent() {
        Some(dir) => fsutil::sync_dir(dir).map_err(|e| StoreError::io(dir, e)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(path: &str, line: usize) -> Finding {
        Finding::warning("t.check", "seen", "expected").at(path, Some(line))
    }

    fn places(findings: &[Finding]) -> Vec<(String, usize)> {
        findings
            .iter()
            .map(|f| (f.path.clone().unwrap(), f.line.unwrap()))
            .collect()
    }

    #[test]
    fn other_findings_are_merged_in_order() {
        let own = vec![
            at("a/1", 1),
            at("a/1", 5),
            at("a/2", 1),
            at("b/1", 2),
            at("b/1", 3),
        ];
        let other = vec![
            at("0", 1),
            at("a/1", 2),
            at("a/1", 5),
            at("b/0", 9),
            at("c", 1),
        ];
        let all = merged(own, other, 4);
        assert_eq!(
            places(&all),
            [
                ("0", 1),
                ("a/1", 1),
                ("a/1", 2),
                ("a/1", 5),
                ("a/1", 5),
                ("a/2", 1),
                ("b/0", 9),
                ("b/1", 2),
                ("b/1", 3),
                ("c", 1),
            ]
            .map(|(p, l)| (p.to_string(), l))
        );
        assert!(
            all.capacity() >= all.len() + 4,
            "room for the findings after these"
        );
    }

    #[test]
    fn a_merge_gives_what_a_sort_gives() {
        // Every split of one sorted list into `own` and `other`, with equal places on both sides.
        let list: Vec<(&str, usize)> = (0..12).map(|i| (["a", "b", "c"][i % 3], i / 4)).collect();
        let mut want: Vec<Finding> = list.iter().map(|&(p, l)| at(p, l)).collect();
        want.sort_unstable_by(order);
        for mask in 0u32..(1 << list.len()) {
            let (mut own, mut other) = (Vec::new(), Vec::new());
            for (i, &(p, l)) in list.iter().enumerate() {
                if mask & (1 << i) == 0 {
                    own.push(at(p, l));
                } else {
                    other.push(at(p, l));
                }
            }
            own.sort_unstable_by(order);
            other.sort_unstable_by(order);
            assert_eq!(
                places(&merged(own, other, 0)),
                places(&want),
                "split {mask:b}"
            );
        }
    }

    #[test]
    fn own_out_of_order_is_sorted_whole() {
        let all = merged(
            vec![at("b", 1), at("a", 1), at("a", 2)],
            vec![at("a", 3)],
            0,
        );
        assert_eq!(
            places(&all),
            [("a", 1), ("a", 2), ("a", 3), ("b", 1)].map(|(p, l)| (p.to_string(), l))
        );
    }

    #[test]
    fn many_other_findings_are_sorted_in() {
        let own: Vec<Finding> = (0..10).map(|i| at("m", i * 100)).collect();
        let other: Vec<Finding> = (0..200).map(|i| at("m", i * 7)).collect();
        let mut want: Vec<Finding> = own.iter().chain(&other).cloned().collect();
        want.sort_unstable_by(order);
        assert_eq!(places(&merged(own, other, 0)), places(&want));
    }
}
