//! Group commit: several mutations made durable together, with one round of syncs.
//!
//! Alone, a mutation makes itself durable as it goes: its thread append is synced, item.md is
//! written to a temporary file that is synced, renamed and its folder synced, and the index
//! follows in a transaction of its own: three fsyncs and a commit per comment. [`run`] runs
//! several mutations one after another on a copy of the workspace whose [`Writes`](crate::writes::Writes) names the
//! group, with that work deferred to the group's end:
//! - the workspace lock is taken once, for the whole group (the mutations' own requests for it
//!   are answered by the group's);
//! - appends are written, not synced;
//! - an atomic replacement writes and keeps its temporary file, and the rename waits. Reads of
//!   the target through the group's [`Writes`](crate::writes::Writes) see the waiting file, so a later mutation of
//!   the same ticket in the group builds on it;
//! - each mutation's index update is queued.
//!
//! At the end, in this order: every file written is synced (several at a time), the waiting
//! renames are made, each folder renamed into is synced, the index reads every changed ticket
//! in one transaction (adding just the new events of a thread the group only appended to, when
//! it provably holds the rest: `IndexHook::threads_appended`, which `yoi-db` implements), the lock is released, and only
//! then does anyone learn an outcome. The order within each file is the one a lone mutation keeps: a
//! temporary file is durable before it replaces anything, so a crash at any moment leaves each
//! item.md whole, old or new. A crash before the end loses only mutations nobody was told of
//! (their appends may be on disk, as when a lone mutation dies between its two files); the
//! start-up pass reads them into the index, and doctor removes leftover temporary files.
//!
//! If the end fails (a sync, a rename), every mutation of the group is answered with that
//! error, though some of their files may be in place: a caller that retries with its operation
//! id is answered from the thread, as for any interrupted mutation.

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use yoi_core::TicketId;

use crate::error::{Refusal, StoreError};
use crate::index_hook::{AppendedThread, OpRecord};
use crate::ops::Outcome;
use crate::tickets::THREAD;
use crate::workspace::Workspace;

/// One mutation of a group.
pub type Job = Box<dyn FnOnce(&Workspace) -> Result<Outcome, StoreError> + Send>;

/// What a group has written and queued so far; reached through the [`Writes`](crate::writes::Writes) of the
/// workspace copy its mutations run on.
#[derive(Default)]
pub(crate) struct Group {
    /// The lock file the group holds.
    pub(crate) lock: PathBuf,
    /// Files written and not yet synced: appended files, and temporary files.
    pub(crate) unsynced: Vec<File>,
    /// Waiting renames, in the order they were asked for: (temporary file, target).
    renames: Vec<(PathBuf, PathBuf)>,
    /// Files appended to, with their size and mtime before the group's first append to each.
    appends: Vec<(PathBuf, i64, i64)>,
    /// Tickets whose files changed, and the operations to record, for the index.
    pub(crate) tickets: Vec<TicketId>,
    pub(crate) records: Vec<OpRecord>,
}

/// Removes a group's waiting temporary files however `run` ends without making it durable
/// (also by a panic, which then loses the group as a crash would: nothing was answered).
struct Clear(Arc<Mutex<Group>>);

impl Drop for Clear {
    fn drop(&mut self) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for (tmp, _) in g.renames.drain(..) {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Run `jobs` as one group (see the module docs): their outcomes, in order,
/// each told only once the whole group is durable.
pub fn run(ws: &Workspace, jobs: Vec<Job>) -> Vec<Result<Outcome, StoreError>> {
    if ws.writes.grouped() {
        let e = StoreError::Refused {
            reason: Refusal::NestedGroup,
        };
        return jobs.iter().map(|_| Err(again(&e))).collect();
    }
    let lock = match ws.lock() {
        Ok(l) => l,
        Err(e) => return jobs.iter().map(|_| Err(again(&e))).collect(),
    };
    let shared = Arc::new(Mutex::new(Group {
        lock: lock.path().to_path_buf(),
        ..Group::default()
    }));
    let clear = Clear(shared.clone());
    let mut grouped = ws.clone();
    grouped.writes = ws.writes.in_group(shared.clone());
    let mut outcomes: Vec<Result<Outcome, StoreError>> =
        jobs.into_iter().map(|j| j(&grouped)).collect();
    drop(grouped);
    let group = std::mem::take(&mut *shared.lock().unwrap_or_else(|e| e.into_inner()));
    drop(clear);
    if let Err(e) = make_durable(&group) {
        for (tmp, _) in &group.renames {
            let _ = std::fs::remove_file(tmp);
        }
        let e = StoreError::io(&ws.tickets_dir(), e);
        return outcomes.iter().map(|_| Err(again(&e))).collect();
    }
    ws.writes.hit("group.durable");
    if let Some(index) = &ws.index {
        let mut ids = group.tickets.clone();
        ids.sort();
        ids.dedup();
        let appended = appended_threads(ws, &group);
        if let Err(e) = index
            .0
            .threads_appended(ws, &ids, &appended, &group.records)
        {
            for o in outcomes.iter_mut().flatten() {
                o.index_error = Some(e.to_string());
            }
        }
    }
    drop(lock);
    outcomes
}

/// The threads the group appended to in folders where it replaced no file: for those, the
/// index may add just the new events.
fn appended_threads(ws: &Workspace, group: &Group) -> Vec<AppendedThread> {
    let tickets = ws.tickets_dir();
    let replaced: BTreeSet<&Path> = group
        .renames
        .iter()
        .filter_map(|(_, target)| target.parent())
        .collect();
    group
        .appends
        .iter()
        .filter_map(|(path, size, mtime_ns)| {
            let dir = path.parent()?;
            if path.file_name()? != THREAD || dir.parent()? != tickets || replaced.contains(dir) {
                return None;
            }
            let ticket = TicketId::parse(dir.file_name()?.to_str()?).ok()?;
            Some(AppendedThread {
                ticket,
                size: *size,
                mtime_ns: *mtime_ns,
            })
        })
        .collect()
}

/// The same error once more, for each mutation of a group that shares it.
fn again(e: &StoreError) -> StoreError {
    match e {
        StoreError::Io { path, source } => {
            StoreError::io(path, io::Error::new(source.kind(), source.to_string()))
        }
        StoreError::Locked {
            path,
            holder,
            waited,
        } => StoreError::Locked {
            path: path.clone(),
            holder: holder.clone(),
            waited: *waited,
        },
        other => StoreError::Refused {
            reason: Refusal::GroupFailed {
                message: other.to_string(),
            },
        },
    }
}

fn make_durable(group: &Group) -> io::Result<()> {
    // Start writing every file's data first, so the blocks of all of them are allocated in
    // the journal's running transaction: the first sync below then commits it for all, and
    // each later one only waits for its own pages instead of committing a transaction of its
    // own (one commit per file was ~9 ms each under load).
    for f in &group.unsynced {
        start_writeback(f);
    }
    in_parallel(&group.unsynced, File::sync_data)?;
    let mut dirs = BTreeSet::new();
    for (tmp, target) in &group.renames {
        std::fs::rename(tmp, target)?;
        dirs.insert(target.parent().unwrap_or(Path::new(".")).to_path_buf());
    }
    let dirs: Vec<PathBuf> = dirs.into_iter().collect();
    in_parallel(&dirs, |d| crate::fsutil::sync_dir(d))
}

/// The most syncs a group has in flight at once.
const SYNC_THREADS: usize = 8;

/// Run `sync` on every item, several at a time: each sync waits for the disk (on a filesystem
/// without a journal, or a device with a queue, one after another they wait in turn: 49 files
/// took 7–18 ms one by one and ~5 ms eight at a time on the 2-core machine). Every item is
/// synced whatever another's result; the first error is returned.
fn in_parallel<T: Sync>(items: &[T], sync: impl Fn(&T) -> io::Result<()> + Sync) -> io::Result<()> {
    let threads = SYNC_THREADS.min(items.len());
    if threads <= 1 {
        return items.iter().try_for_each(&sync);
    }
    let sync = &sync;
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut first = Ok(());
                    for item in items.iter().skip(t).step_by(threads) {
                        let r = sync(item);
                        if first.is_ok() {
                            first = r;
                        }
                    }
                    first
                })
            })
            .collect();
        let mut first = Ok(());
        for w in workers {
            let r = w
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a sync thread panicked")));
            if first.is_ok() {
                first = r;
            }
        }
        first
    })
}

/// Ask the kernel to start writing `file`'s dirty pages (`sync_file_range`, no waiting). Only
/// a hint: the sync that follows is what makes the data durable, so a failure is ignored.
#[cfg(target_os = "linux")]
fn start_writeback(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid open descriptor, and flags the call documents; it touches no memory.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File) {}

impl Group {
    /// `path` is about to be appended to, and was `size` bytes with this mtime. Only the first
    /// append to each file in the group is kept.
    pub(crate) fn note_append(&mut self, path: &Path, size: i64, mtime_ns: i64) {
        if !self.appends.iter().any(|(p, _, _)| p == path) {
            self.appends.push((path.to_path_buf(), size, mtime_ns));
        }
    }

    /// The temporary file `tmp` (written, kept to be synced) replaces `target` at the end; an
    /// earlier waiting replacement of `target` is dropped.
    pub(crate) fn defer_rename(&mut self, tmp: &Path, target: &Path) {
        if let Some(i) = self.renames.iter().position(|(_, t)| t == target) {
            let (old, _) = self.renames.remove(i);
            let _ = std::fs::remove_file(old);
        }
        self.renames.push((tmp.to_path_buf(), target.to_path_buf()));
    }

    /// The file that holds what `path` will be at the end of the group: its waiting
    /// replacement, if any.
    pub(crate) fn pending(&self, path: &Path) -> Option<PathBuf> {
        self.renames
            .iter()
            .find(|(_, t)| t == path)
            .map(|(tmp, _)| tmp.clone())
    }

    /// The operation `op_id` queued earlier in the group, if any.
    pub(crate) fn queued_operation(&self, op_id: &str) -> Option<OpRecord> {
        self.records.iter().find(|r| r.op_id == op_id).cloned()
    }
}
