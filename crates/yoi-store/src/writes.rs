//! What a write needs, passed as a value: the group commit it belongs to, if any, and the
//! test points it reaches.
//!
//! Every workspace carries a [`Writes`] (`Workspace::writes`), and every write of a ticket file
//! goes through it: alone, an atomic replacement or an append is durable before it returns;
//! in a group commit ([`crate::group::run`] runs its mutations on a copy of the workspace whose
//! `Writes` names the group) the syncs and renames wait for the group's end and reads see the
//! waiting files. Nothing is kept per thread: two workspaces on one thread, or one group's
//! mutations on another thread, each see exactly what their own value says.
//!
//! The test points are the same: a deterministic simulation gives its workspace a hook
//! ([`Writes::with_points`]) and the named points of the store and the engine call it
//! ([`Writes::hit`]; the names are listed in [`crate::testpoint`]). Without a hook a point
//! costs one branch.

use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use yoi_core::TicketId;

use crate::beneath;
use crate::fsutil::{self, mtime_ns};
use crate::group::Group;
use crate::index_hook::OpRecord;

/// The hook of a workspace's test points: it may panic (a crash at that point) or act (another
/// writer at exactly that moment).
pub type Hook = dyn Fn(&'static str) + Send + Sync;

/// A test-point hook, and whether it is running (a point reached inside the hook does not call
/// it again, so a hook that writes through the store cannot re-enter itself).
struct Points {
    hook: Box<Hook>,
    running: AtomicBool,
}

/// How a workspace's writes are made; see the module docs.
#[derive(Clone, Default)]
pub struct Writes {
    group: Option<Arc<Mutex<Group>>>,
    points: Option<Arc<Points>>,
    /// The tickets folder: every file beneath it is read and written without following a
    /// symbolic link ([`crate::beneath`]).
    beneath: Option<Arc<PathBuf>>,
}

impl fmt::Debug for Writes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writes")
            .field("grouped", &self.group.is_some())
            .field("points", &self.points.is_some())
            .finish()
    }
}

/// Clears the running flag however the hook ends (a crash is a panic).
struct Running<'a>(&'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl Writes {
    /// These writes, reaching `hook` at every test point.
    pub fn with_points(&self, hook: impl Fn(&'static str) + Send + Sync + 'static) -> Writes {
        Writes {
            group: self.group.clone(),
            points: Some(Arc::new(Points {
                hook: Box::new(hook),
                running: AtomicBool::new(false),
            })),
            beneath: self.beneath.clone(),
        }
    }

    /// These writes, following no symbolic link beneath `tickets` ([`crate::beneath`]).
    pub fn beneath(&self, tickets: &Path) -> Writes {
        Writes {
            beneath: Some(Arc::new(tickets.to_path_buf())),
            ..self.clone()
        }
    }

    /// The folder `path` must be opened beneath without following links, when it lies in it.
    fn base_of(&self, path: &Path) -> Option<&Path> {
        self.beneath
            .as_deref()
            .map(PathBuf::as_path)
            .filter(|b| path.starts_with(b))
    }

    /// These writes, deferred to the end of `group`.
    pub(crate) fn in_group(&self, group: Arc<Mutex<Group>>) -> Writes {
        Writes {
            group: Some(group),
            points: self.points.clone(),
            beneath: self.beneath.clone(),
        }
    }

    /// Reach test point `name`: the hook, if any, runs (and may panic).
    pub fn hit(&self, name: &'static str) {
        let Some(p) = &self.points else { return };
        if p.running.swap(true, Ordering::SeqCst) {
            return;
        }
        let _running = Running(&p.running);
        (p.hook)(name);
    }

    /// Whether these writes belong to a group commit.
    pub fn grouped(&self) -> bool {
        self.group.is_some()
    }

    fn group(&self) -> Option<MutexGuard<'_, Group>> {
        // A mutation that panicked inside the group poisons nothing the group cannot use: its
        // lists only ever grow by whole entries.
        self.group
            .as_ref()
            .map(|g| g.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether these writes belong to a group holding the lock file at `path`.
    pub fn holds_lock(&self, path: &Path) -> bool {
        self.group().is_some_and(|g| g.lock == path)
    }

    /// Replace `path` with `bytes` atomically: durable on return alone; in a group, the sync
    /// and the rename wait for the group's end.
    pub fn atomic_write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let base = self.base_of(path);
        let Some(mut group) = self.group() else {
            return match base {
                Some(base) => beneath::atomic_write(base, path, bytes),
                None => fsutil::atomic_write(path, bytes),
            };
        };
        if let Some(base) = base {
            beneath::check_folders(base, path)?;
        }
        let tmp = fsutil::temp_path(path);
        let result = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)?;
            f.write_all(bytes)?;
            group.defer_rename(&tmp, path);
            group.unsynced.push(f);
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// Append `bytes` to `path` (created when missing): synced on return alone; in a group,
    /// the sync waits for the group's end.
    pub fn append_sync(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let base = self.base_of(path);
        let Some(mut group) = self.group() else {
            return match base {
                Some(base) => beneath::append_sync(base, path, bytes),
                None => fsutil::append_sync(path, bytes),
            };
        };
        let target = group.pending(path);
        let mut f = match (base, &target) {
            (Some(base), None) => beneath::open_append(base, path)?,
            _ => OpenOptions::new()
                .create(true)
                .append(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(target.as_deref().unwrap_or(path))?,
        };
        let before = f.metadata()?;
        group.note_append(path, before.len() as i64, mtime_ns(&before));
        f.write_all(bytes)?;
        group.unsynced.push(f);
        Ok(())
    }

    /// Read `path` as these writes left it (in a group: its waiting replacement, if any);
    /// "not found" is `None`.
    pub fn read_opt(&self, path: &Path) -> io::Result<Option<String>> {
        let target = self.pending(path);
        match (self.base_of(path), target) {
            (_, Some(t)) => fsutil::read_opt(&t),
            (Some(base), None) => beneath::read_opt(base, path),
            (None, None) => fsutil::read_opt(path),
        }
    }

    /// The length of `path` as [`Writes::read_opt`] would read it (0 when there is none).
    pub fn len(&self, path: &Path) -> u64 {
        let target = self.pending(path);
        fsutil::len(target.as_deref().unwrap_or(path))
    }

    fn pending(&self, path: &Path) -> Option<PathBuf> {
        self.group().and_then(|g| g.pending(path))
    }

    /// The operation `op_id` queued earlier in this group, if any.
    pub(crate) fn queued_operation(&self, op_id: &str) -> Option<OpRecord> {
        self.group().and_then(|g| g.queued_operation(op_id))
    }

    /// In a group: queue the index update of `ticket` (recording `op`) for the end, and say
    /// so; `false` alone, where the caller updates the index now.
    pub(crate) fn defer_index(&self, ticket: &TicketId, op: Option<OpRecord>) -> bool {
        match self.group() {
            Some(mut g) => {
                g.tickets.push(ticket.clone());
                g.records.extend(op);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[test]
    fn a_hook_sees_the_points_of_its_own_writes_only_and_does_not_reenter() {
        let seen = Arc::new(AtomicUsize::new(0));
        let s = seen.clone();
        let plain = Writes::default();
        let hooked = plain.with_points(move |name| {
            assert_eq!(name, "files.written");
            s.fetch_add(1, Ordering::SeqCst);
        });
        hooked.hit("files.written");
        plain.hit("files.written");
        let other = hooked.clone();
        std::thread::spawn(move || other.hit("files.written"))
            .join()
            .unwrap();
        // Its own points, on whatever thread; never another workspace's.
        assert_eq!(seen.load(Ordering::SeqCst), 2);
        // A point reached inside the hook does not call it again.
        let inner = Arc::new(Mutex::new(None::<Writes>));
        let (s, i) = (seen.clone(), inner.clone());
        let reentrant = Writes::default().with_points(move |_| {
            s.fetch_add(1, Ordering::SeqCst);
            if let Some(w) = i.lock().unwrap().clone() {
                w.hit("files.written");
            }
        });
        *inner.lock().unwrap() = Some(reentrant.clone());
        reentrant.hit("files.written");
        assert_eq!(seen.load(Ordering::SeqCst), 3);
        // A panicking hook runs again at the next point.
        let s = seen.clone();
        let crashing = Writes::default().with_points(move |_| {
            s.fetch_add(1, Ordering::SeqCst);
            panic!("crash");
        });
        let hit = |w: &Writes| {
            let w = std::panic::AssertUnwindSafe(w.clone());
            std::panic::catch_unwind(move || w.hit("merge.landed")).is_err()
        };
        assert!(hit(&crashing));
        assert!(hit(&crashing));
        assert_eq!(seen.load(Ordering::SeqCst), 5);
    }

    #[test]
    fn alone_a_write_is_in_place_when_it_returns() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let w = Writes::default();
        w.atomic_write(&p, b"one").unwrap();
        w.append_sync(&p, b"+").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one+");
        assert_eq!(w.read_opt(&p).unwrap().as_deref(), Some("one+"));
        assert_eq!(w.len(&p), 4);
        assert!(!w.grouped());
    }
}
