//! Doctor's index checks: the database against the files, plus the outbox's runtime health.
//!
//! Files are the truth, so each check reads the files and asks whether the database agrees: a
//! ticket or thread event the index lacks or holds in excess, a ticket row whose title, state or
//! updated_at differ from item.md, an event or plan record without its outbox row, an outbox row
//! naming nothing on disk. Two more look at runtime state only: events a registered consumer has
//! left unacknowledged past a threshold, and deliveries parked as dead.
//!
//! What the files say is read with the indexer's own rules (see `ticket::IndexFacts`), so doctor
//! and `reindex` cannot disagree about it. The index is compared chunk by chunk as the file
//! checks read the tickets, so each file is read once and only one chunk's rows are held.
//! Event-level findings come one per ticket (naming the first few events), so a deleted ticket
//! with hundreds of events is one line, not hundreds.
//!
//! **What `--fix` does here.** When a drift check fails ([`DRIFT`]), it rebuilds the index from
//! the files — a full reindex, under the workspace lock — and checks again. That re-creates rows
//! and restores missing outbox rows; it never deletes an outbox row or a delivery (an orphaned
//! row may be history a consumer already acted on), so `outbox.orphan`, `outbox.undelivered`
//! and `outbox.dead` stay until a person deals with them.

use std::collections::{BTreeMap, HashSet};

use yoi_core::finding::Finding;
use yoi_core::TicketId;

use super::ticket::TicketScan;
use super::{fix_files, Report};
use yoi_db::{DbIndex, KeysOf, ReindexMode, Span, SpanRows, TicketRow};
use yoi_store::tickets::{ITEM, THREAD};
use yoi_store::workspace::Workspace;
use yoi_store::StoreError;

/// How old an outbox row may grow before an unacknowledged delivery is reported: one hour.
pub const UNDELIVERED_AFTER_MS: i64 = 60 * 60 * 1000;

/// Checks whose findings a full reindex repairs.
pub const DRIFT: &[&str] = &[
    "index.missing_ticket",
    "index.extra_ticket",
    "index.stale_ticket",
    "index.missing_event",
    "index.extra_event",
    "outbox.missing",
    "assignment.stale",
];

/// How many event ids one finding names before it says "and N more".
const LISTED: usize = 5;

const FIX_REINDEX: &str =
    "yoi ticket doctor --fix (rebuilds the index from the files, as `yoi reindex --full` does)";

/// The index checks with the default threshold ([`UNDELIVERED_AFTER_MS`]). Hold the workspace
/// lock around this call for an exact answer: an operation landing between the file reads and
/// the database reads would otherwise look like drift.
pub fn index_findings(
    index: &DbIndex,
    ws: &Workspace,
    now_ms: i64,
) -> Result<Vec<Finding>, StoreError> {
    index_findings_with(index, ws, now_ms, UNDELIVERED_AFTER_MS)
}

/// The index checks, reporting deliveries older than `undelivered_after_ms` at `now_ms`.
/// Ticket findings come first, by ticket and check; then undelivered (by consumer) and dead
/// deliveries (by sequence number).
pub fn index_findings_with(
    index: &DbIndex,
    ws: &Workspace,
    now_ms: i64,
    undelivered_after_ms: i64,
) -> Result<Vec<Finding>, StoreError> {
    Ok(check_everything(index, ws, now_ms, undelivered_after_ms)?.1)
}

/// One pass over the tickets: the file checks, and the index compared with each chunk of
/// tickets as it is read. A thread reads and checks the files (itself on every core) while this
/// one reads the same chunk's rows, so each file is read once and only a chunk's texts and rows
/// are held at a time. Returns the file findings (sorted as [`check_all`](super::check_all)
/// sorts them) and the index findings.
fn check_everything(
    index: &DbIndex,
    ws: &Workspace,
    now_ms: i64,
    undelivered_after_ms: i64,
) -> Result<(Vec<Finding>, Vec<Finding>), StoreError> {
    let scan = super::layout::scan_root(ws)?;
    let folders = &scan.ticket_dirs;
    let mut out = Vec::new();
    let mut tickets = Vec::with_capacity(folders.len());
    if folders.is_empty() {
        // Every row is extra: compare the one span that covers them all with no folder.
        let rows = index.span_rows(Span::default())?;
        compare(&rows, index, ws, &[], &mut out)?;
    }
    let mut own = Vec::new();
    // The rows of each chunk's span are read while the folders are (a span depends on the
    // folder names alone), one span ahead of the chunk compared.
    let mut reader = index.read_ahead(spans(folders));
    let scanned = super::scan::in_chunks(ws, folders, |part| {
        let rows = reader.next().ok_or_else(|| {
            let why = std::io::Error::other("the index reader stopped");
            StoreError::io(&ws.tickets_dir(), why)
        })??;
        // Every row in the chunk's span of ids: rows of a folder without item.md (no ticket)
        // or of an id with no folder at all are extra.
        let on_disk: Vec<&TicketScan> = part.iter().filter(|t| t.exists).collect();
        compare(&rows, index, ws, &on_disk, &mut out)?;
        super::keep(part, &mut tickets, &mut own);
        Ok(())
    });
    reader.finish();
    scanned?;
    out.sort_by(|a, b| (&a.ticket, a.check, &a.seen).cmp(&(&b.ticket, b.check, &b.seen)));
    let states: BTreeMap<&str, Option<yoi_core::State>> = tickets
        .iter()
        .filter(|t| t.exists)
        .map(|t| (t.id.as_str(), t.state))
        .collect();
    runtime_findings(index, ws, now_ms, undelivered_after_ms, &states, &mut out)?;
    let more = out.len() + super::SLACK;
    Ok((
        super::file_findings(ws, scan.findings, &tickets, own, more),
        out,
    ))
}

/// The span of ids whose rows each chunk of ticket folders is compared with. The spans run
/// from open to open and meet at each chunk's first id, so together they cover every row.
fn spans(folders: &[TicketId]) -> impl Iterator<Item = Span<'_>> {
    let firsts: Vec<&str> = folders
        .chunks(super::scan::CHUNK)
        .map(|c| c[0].as_str())
        .collect();
    (0..firsts.len()).map(move |i| Span {
        from: (i > 0).then(|| firsts[i]),
        until: firsts.get(i + 1).copied(),
    })
}

/// One span's rows against the tickets on disk in that span.
fn compare(
    rows: &SpanRows,
    index: &DbIndex,
    ws: &Workspace,
    on_disk: &[&TicketScan],
    out: &mut Vec<Finding>,
) -> Result<(), StoreError> {
    check_tickets(ws, on_disk, &rows.tickets, out);
    check_events(ws, on_disk, &rows.events.by_ticket(), out);
    check_outbox(index, on_disk, &rows.outbox.by_ticket(), out)
}

/// The checks of runtime state: undelivered and dead deliveries, assignments, leases, pods
/// and attempt worktrees.
fn runtime_findings(
    index: &DbIndex,
    ws: &Workspace,
    now_ms: i64,
    undelivered_after_ms: i64,
    states: &BTreeMap<&str, Option<yoi_core::State>>,
    out: &mut Vec<Finding>,
) -> Result<(), StoreError> {
    let age = duration(undelivered_after_ms);
    for u in index.undelivered_by_consumer(now_ms.saturating_sub(undelivered_after_ms))? {
        out.push(
            Finding::warning(
                "outbox.undelivered",
                format!(
                    "consumer `{}` has not acknowledged {} older than {age} (oldest: seq {})",
                    u.consumer,
                    count(u.count as usize, "outbox event"),
                    u.oldest_seq
                ),
                format!("registered consumers acknowledge each event within {age}"),
            )
            .with_fix(format!(
                "check that consumer `{}` is running and acknowledging events; a consumer retired for good should be unregistered",
                u.consumer
            )),
        );
    }
    for d in index.dead_deliveries()? {
        let event = match (&d.event_id, &d.kind) {
            (Some(e), Some(k)) => format!("event {e}, {k}"),
            _ => "its outbox row is gone".to_string(),
        };
        let mut f = Finding::error(
            "outbox.dead",
            format!(
                "consumer `{}` gave up on outbox seq {} ({event}) after {}; last reason: {}",
                d.consumer,
                d.seq,
                count(d.attempts as usize, "attempt"),
                d.reason.as_deref().unwrap_or("none recorded")
            ),
            "every delivery acknowledged",
        )
        .with_fix(format!(
            "fix the cause the reason names, then have `{}` take seq {} again (no yoi command re-queues a dead delivery yet)",
            d.consumer, d.seq
        ));
        if let Some(t) = &d.ticket {
            f = f.with_ticket(t.as_str());
        }
        out.push(f);
    }
    let open = index.open_assignments()?;
    check_assignments(states, &open, out);
    check_leases(&open, &index.pods(now_ms, 0)?, now_ms, out);
    check_attempt_worktrees(ws, &open, out);
    Ok(())
}

/// Run the file checks and the index checks; with `fix`, apply the file repairs and, when the
/// index drifted from the files, rebuild it (full reindex), then check again. Each pass runs
/// under the workspace lock, so no operation lands between reading a file and reading its row.
///
/// The index need not have caught up with the files first (`DbIndex::attach_behind`): a drift
/// finding is then followed by the catch-up every other command makes when it opens the
/// workspace (an incremental reindex), and, if that changed anything, by a second pass. So the
/// report is the one a caught-up index gives, and a clean workspace costs one pass.
pub fn run_with_index(ws: &Workspace, index: &DbIndex, fix: bool) -> Result<Report, StoreError> {
    let report = checked(ws, index, fix)?;
    if fix || !report.findings.iter().any(|f| DRIFT.contains(&f.check)) {
        return Ok(report);
    }
    let caught_up = index.reindex(ws, ReindexMode::Incremental)?;
    if caught_up.reindexed + caught_up.removed + caught_up.outbox_added == 0 {
        return Ok(report);
    }
    checked(ws, index, false)
}

/// One pass of [`run_with_index`], under the lock.
fn checked(ws: &Workspace, index: &DbIndex, fix: bool) -> Result<Report, StoreError> {
    let lock = ws.lock()?;
    let now = index.now_ms();
    let mut fixed = Vec::new();
    if fix {
        fixed = fix_files(ws)?;
        let before = index_findings(index, ws, now)?;
        if before.iter().any(|f| DRIFT.contains(&f.check)) {
            let stats = index.reindex_locked(ws, &lock, ReindexMode::Full)?;
            fixed.push(format!(
                "rebuilt the database index from the files: {} re-read, {} restored",
                count(stats.reindexed, "ticket"),
                count(stats.outbox_added, "outbox row"),
            ));
        }
    }
    let (mut findings, drift) = check_everything(index, ws, now, UNDELIVERED_AFTER_MS)?;
    findings.extend(drift);
    Ok(Report::new(findings, fixed))
}

/// Doctor for a workspace as it was opened: with the index checks when the caller has the
/// database index, the file checks alone otherwise.
pub fn run_attached(
    ws: &Workspace,
    index: Option<&DbIndex>,
    fix: bool,
) -> Result<Report, StoreError> {
    match index {
        Some(index) => run_with_index(ws, index, fix),
        None => super::run(ws, fix),
    }
}

fn check_tickets(
    ws: &Workspace,
    snaps: &[&TicketScan],
    rows: &[TicketRow],
    out: &mut Vec<Finding>,
) {
    let by_id: BTreeMap<&str, &TicketRow> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let on_disk: BTreeMap<&str, &TicketScan> = snaps.iter().map(|s| (s.id.as_str(), *s)).collect();
    for s in snaps {
        let Some(item) = &s.facts.item else { continue };
        let id = s.id.as_str();
        let item_rel = ws.rel(&ws.path_of(&s.id, ITEM));
        let Some(row) = by_id.get(id) else {
            out.push(
                Finding::error(
                    "index.missing_ticket",
                    format!("ticket {id} (`{}`) has no row in the index", item[0]),
                    "a tickets row for every ticket whose item.md parses",
                )
                .with_ticket(id)
                .at(item_rel, None)
                .with_fix(FIX_REINDEX),
            );
            continue;
        };
        let file = [
            ("title", &item[0]),
            ("state", &item[1]),
            ("updated_at", &item[2]),
        ];
        let indexed = [&row.title, &row.state, &row.updated_at];
        let differ: Vec<(&str, &String, &String)> = file
            .iter()
            .zip(indexed)
            .filter(|((_, f), i)| f != i)
            .map(|((name, f), i)| (*name, i, *f))
            .collect();
        if differ.is_empty() {
            continue;
        }
        let list = |pick: fn(&(&str, &String, &String)) -> String| {
            differ.iter().map(pick).collect::<Vec<_>>().join(", ")
        };
        out.push(
            Finding::error(
                "index.stale_ticket",
                format!(
                    "the index row has {}",
                    list(|(n, i, _)| format!("{n} `{i}`"))
                ),
                format!(
                    "{}, as item.md says",
                    list(|(n, _, f)| format!("{n} `{f}`"))
                ),
            )
            .with_ticket(id)
            .at(item_rel, None)
            .with_fix(FIX_REINDEX),
        );
    }
    for row in rows {
        let why = match on_disk.get(row.id.as_str()) {
            Some(s) if s.facts.item.is_some() => continue,
            Some(_) => "its item.md does not parse",
            None => "there is no ticket folder with an item.md",
        };
        out.push(
            Finding::error(
                "index.extra_ticket",
                format!(
                    "the index has a row for {} (`{}`) but {why}",
                    row.id, row.title
                ),
                "index rows only for tickets whose item.md parses",
            )
            .with_ticket(row.id.as_str())
            .with_fix(FIX_REINDEX),
        );
    }
}

fn check_events(
    ws: &Workspace,
    snaps: &[&TicketScan],
    indexed: &[KeysOf<'_>],
    out: &mut Vec<Finding>,
) {
    let on_disk: BTreeMap<&str, Vec<&str>> = snaps
        .iter()
        .map(|s| (s.id.as_str(), sorted(s.facts.events.iter())))
        .collect();
    let in_db: BTreeMap<&str, Vec<&str>> = indexed
        .iter()
        .map(|k| (k.ticket, sorted(k.keys())))
        .collect();
    for (&ticket, keys) in &on_disk {
        let missing = absent(keys, in_db.get(ticket));
        if missing.is_empty() {
            continue;
        }
        let mut f = Finding::error(
            "index.missing_event",
            format!(
                "{} not in the index: {}",
                count(missing.len(), "thread event"),
                listed(&missing)
            ),
            "every event of thread.md in the index",
        )
        .with_ticket(ticket)
        .with_fix(FIX_REINDEX);
        if let Some(s) = snaps.iter().find(|s| s.id.as_str() == ticket) {
            f = f.at(ws.rel(&ws.path_of(&s.id, THREAD)), None);
        }
        out.push(f);
    }
    for (&ticket, keys) in &in_db {
        let extra = absent(keys, on_disk.get(ticket));
        if extra.is_empty() {
            continue;
        }
        out.push(
            Finding::error(
                "index.extra_event",
                format!(
                    "{} not in thread.md: {}",
                    count(extra.len(), "indexed event"),
                    listed(&extra)
                ),
                "only the events thread.md holds in the index",
            )
            .with_ticket(ticket)
            .with_fix(FIX_REINDEX),
        );
    }
}

/// The keys, sorted, each once.
fn sorted<'a>(keys: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut keys: Vec<&str> = keys.collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The keys of sorted `these` that sorted `other` lacks, in order.
fn absent<'a>(these: &[&'a str], other: Option<&Vec<&str>>) -> Vec<&'a str> {
    let other = other.map_or(&[][..], Vec::as_slice);
    if these == other {
        return Vec::new();
    }
    these
        .iter()
        .filter(|k| other.binary_search(k).is_err())
        .copied()
        .collect()
}

/// How long past its lease a claim may stay `claimed` before doctor says the sweep is not
/// running (the sweep of `yoi serve` runs every second).
const LEASE_SLACK_MS: i64 = 5_000;

/// Claims past their lease (no server is sweeping), and claims whose pod stopped heartbeating.
fn check_leases(
    open: &[yoi_db::Assignment],
    pods: &[yoi_db::PodRow],
    now_ms: i64,
    out: &mut Vec<Finding>,
) {
    for a in open
        .iter()
        .filter(|a| a.status == yoi_db::AssignmentStatus::Claimed)
    {
        let pod = a.claimed_by.as_deref().unwrap_or("none");
        if let Some(until) = a.lease_until_ms.filter(|u| *u + LEASE_SLACK_MS < now_ms) {
            out.push(
                Finding::warning(
                    "assignment.lease_past_due",
                    format!(
                        "assignment {} (attempt {} of {}) is still claimed by {pod}, {}s past its lease",
                        a.id,
                        a.attempt,
                        a.step,
                        (now_ms - until) / 1000
                    ),
                    "claims past their lease are expired within a second by `yoi serve`",
                )
                .with_ticket(a.ticket.as_str())
                .with_fix("start `yoi serve`: its lease sweep expires the claim and hands the step out again"),
            );
        }
        let heard = pods.iter().find(|p| p.id == pod).map(|p| p.heartbeat_ms);
        let silent = match (heard, a.lease_until_ms, a.heartbeat_ms) {
            (Some(h), Some(until), Some(beat)) => h.max(beat) + (until - beat) < now_ms,
            (None, _, _) => true,
            _ => false,
        };
        if silent {
            out.push(
                Finding::warning(
                    "pod.silent",
                    format!(
                        "assignment {} is held by pod {pod}, which has not been heard from within a lease",
                        a.id
                    ),
                    "the pod holding a claim heartbeats within every lease",
                )
                .with_ticket(a.ticket.as_str())
                .with_fix("`yoi pod list` shows the pod; restart it, or let its lease run out (the step is handed out again)"),
            );
        }
    }
}

/// Attempt worktrees (`<ticket worktree>.attempt-N`) no live attempt works in.
fn check_attempt_worktrees(ws: &Workspace, open: &[yoi_db::Assignment], out: &mut Vec<Finding>) {
    let Some(root) = yoi_store::git::repo_root(ws.root()) else {
        return;
    };
    let Ok(listed) = yoi_git::list_worktrees_with(&root, yoi_git::StatusOf::Nothing) else {
        return;
    };
    for w in listed {
        let name = w
            .path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let Some((_, n)) = name.rsplit_once(".attempt-") else {
            continue;
        };
        if n.parse::<u32>().is_err() {
            continue;
        }
        let path = w.path.display().to_string();
        if open
            .iter()
            .any(|a| a.workdir.as_deref() == Some(path.as_str()))
        {
            continue;
        }
        let dirty = w.dirty == Some(true);
        out.push(
            Finding::warning(
                "worktree.attempt_leftover",
                format!(
                    "attempt worktree {path} belongs to no live attempt{}",
                    if dirty {
                        " and has uncommitted changes"
                    } else {
                        ""
                    }
                ),
                "attempt worktrees only while their attempt runs",
            )
            .with_fix(if dirty {
                format!("look at it, then `yoi worktree remove --force {path}`")
            } else {
                format!("yoi worktree remove {path}")
            }),
        );
    }
}

/// Open assignments belong to in-progress tickets (and, while an acceptance makes the first one,
/// to a queued ticket: a `pending` row there is that, or what a killed acceptance left, which
/// the next acceptance discards).
fn check_assignments(
    states: &BTreeMap<&str, Option<yoi_core::State>>,
    open: &[yoi_db::Assignment],
    out: &mut Vec<Finding>,
) {
    use yoi_core::State;
    for a in open {
        let what = format!(
            "assignment {} ({} for {}, {})",
            a.id,
            a.step,
            a.role,
            a.status.as_str()
        );
        let f = match states.get(a.ticket.as_str()) {
            Some(Some(State::Inprogress)) => continue,
            Some(Some(State::Queued))
                if matches!(
                    a.status,
                    yoi_db::AssignmentStatus::Pending | yoi_db::AssignmentStatus::Held
                ) =>
            {
                continue
            }
            // item.md unreadable: other checks report it; the assignment is left alone.
            Some(None) => continue,
            Some(Some(state)) => Finding::warning(
                "assignment.stale",
                format!("{what} is open but its ticket is {state}"),
                "open assignments only for in-progress tickets",
            )
            .with_fix(FIX_REINDEX),
            None => Finding::warning(
                "assignment.stale",
                format!("{what} is open but its ticket is not in this checkout"),
                "open assignments only for in-progress tickets",
            )
            .with_fix(
                "restore the ticket's files (check out or pull the branch that has them); closing the ticket cancels its assignments",
            ),
        };
        out.push(f.with_ticket(a.ticket.as_str()));
    }
}

/// Outbox rows against the thread events and plan records of the tickets on disk. Only the
/// tickets with an orphaned row have their rows read again, with their sequence numbers.
fn check_outbox(
    index: &DbIndex,
    snaps: &[&TicketScan],
    outbox: &[KeysOf<'_>],
    out: &mut Vec<Finding>,
) -> Result<(), StoreError> {
    // Every key the files define, with its ticket, in file order.
    let mut known: Vec<(&str, &str)> = Vec::new();
    for s in snaps {
        let id = s.id.as_str();
        known.extend(s.facts.events.iter().map(|k| (id, k)));
        known.extend(s.facts.plans.iter().map(|k| (id, k.as_str())));
    }
    let known_keys: HashSet<&str> = known.iter().map(|(_, k)| *k).collect();
    let in_outbox: HashSet<&str> = outbox.iter().flat_map(KeysOf::keys).collect();
    let missing = known
        .iter()
        .filter(|(_, k)| !in_outbox.contains(k))
        .copied();
    for (ticket, keys) in group(missing) {
        out.push(
            Finding::error(
                "outbox.missing",
                format!(
                    "{} without an outbox row: {}",
                    count(keys.len(), "event"),
                    listed(&keys)
                ),
                "one outbox row per thread event and plan record, so consumers see every event",
            )
            .with_ticket(ticket)
            .with_fix(FIX_REINDEX),
        );
    }
    for row in outbox {
        if row.keys().all(|k| known_keys.contains(k)) {
            continue;
        }
        let ticket = row.ticket;
        let rows: Vec<String> = index
            .outbox_keys_of(ticket)?
            .into_iter()
            .filter(|o| !known_keys.contains(o.event_id.as_str()))
            .map(|o| format!("seq {} ({})", o.seq, o.event_id))
            .collect();
        if rows.is_empty() {
            // Written between the two reads; the next check sees it whole.
            continue;
        }
        let refs: Vec<&str> = rows.iter().map(String::as_str).collect();
        out.push(
            Finding::warning(
                "outbox.orphan",
                format!(
                    "{} naming no thread event or plan record on disk: {}",
                    count(rows.len(), "outbox row"),
                    listed(&refs)
                ),
                "every outbox row names an event or plan record in the files",
            )
            .with_ticket(ticket)
            .with_fix(format!(
                "if ticket {ticket}'s events were removed on purpose, nothing to do (the rows are delivery history); otherwise restore its files from git and run `yoi reindex`"
            )),
        );
    }
    Ok(())
}

/// `(ticket, key)` pairs grouped by ticket, keys in the order given.
fn group<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> BTreeMap<&'a str, Vec<&'a str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (t, k) in pairs {
        out.entry(t).or_default().push(k);
    }
    out
}

/// The first [`LISTED`] items, then how many more.
fn listed(items: &[&str]) -> String {
    let shown = items
        .iter()
        .take(LISTED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    match items.len().saturating_sub(LISTED) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// `1 event`, `2 events`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A threshold in the largest whole unit: `1h`, `90m`, `30s`, `250ms`.
fn duration(ms: i64) -> String {
    match ms {
        _ if ms != 0 && ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        _ if ms != 0 && ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        _ if ms != 0 && ms % 1000 == 0 => format!("{}s", ms / 1000),
        _ => format!("{ms}ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_and_lists_read_naturally() {
        assert_eq!(duration(3_600_000), "1h");
        assert_eq!(duration(90 * 60_000), "90m");
        assert_eq!(duration(30_000), "30s");
        assert_eq!(duration(250), "250ms");
        assert_eq!(count(1, "event"), "1 event");
        assert_eq!(count(3, "event"), "3 events");
        let keys = ["a", "b", "c", "d", "e", "f", "g"];
        assert_eq!(listed(&keys[..2]), "a, b");
        assert_eq!(listed(&keys), "a, b, c, d, e and 2 more");
    }
}
