//! Noticing every write to the ticket files and the index database, the moment it is made.
//!
//! A [`FileWatch`] holds one inotify instance with a watch on the tickets folder, on every
//! ticket folder and its `artifacts/`, and on the folder of the embedded SQLite database. The
//! kernel queues an event inside the very system call that writes, renames or removes a file,
//! so a reader that drains the queue ([`FileWatch::poll`]) before it answers has seen every
//! write that finished before its request arrived: a server can keep answers in memory and
//! still never serve one older than a write its caller already saw succeed.
//!
//! What a poll reports ([`Polled`]): a generation that moves whenever anything watched
//! changed, the tickets whose files changed (for the index to re-read), whether the watch lost
//! track (the kernel's queue overflowed) so that only a full look at the files can tell what
//! changed, and whether it is broken (the tickets folder or the database's folder was moved or
//! removed, a new folder could not be watched) and must be replaced. Reads by any process are never events (only writes, renames, removals and
//! attribute changes are watched), so a read-only load leaves the generation alone.
//!
//! inotify is not recursive and the kernel limits the watches of a user
//! (`fs.inotify.max_user_watches`, about 190,000 on a machine with 16 GiB), so a watch costs one
//! per folder: two per ticket ([`Coverage::Full`]). When that many do not fit (100,000 tickets
//! need 200,002), the watch takes one per ticket folder and leaves the `artifacts/` folders out
//! ([`Coverage::Folders`]): every write of `item.md`, `thread.md` and `resolution.md` (in place,
//! or a new file renamed over the old one, as editors and `git checkout` do), and a ticket's
//! `artifacts/` folder appearing or going, are still seen at once, and so are yoi's own writes
//! inside `artifacts/` (after each, yoi's store sets the folder's modification time: an
//! attribute change of `artifacts` in the ticket folder); another write inside `artifacts/` that
//! touches nothing else (a hand edit of `relations.json`, a pulled plan line) is left to the
//! caller's periodic full look at the files, which [`FileWatch::coverage`] tells it to make as
//! often as without a watch. Fewer watches than tickets: no watch ([`FileWatch::start`] fails).
//!
//! Linux only; elsewhere [`FileWatch::start`] says it cannot watch and callers check the files
//! as they would without it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use yoi_core::TicketId;

use yoi_store::tickets::ARTIFACTS;
use yoi_store::workspace::Workspace;

/// What a drain of the queue found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Polled {
    /// Moves whenever anything watched changed; equal generations mean nothing did between.
    pub generation: u64,
    /// Moves whenever the database changed (or the watch lost track).
    pub db_generation: u64,
    /// When a poll last found a write to the database (`None`: none since the start).
    pub last_db_write: Option<Instant>,
    /// Tickets whose folder saw a write since the last poll (each reported once).
    pub tickets: Vec<TicketId>,
    /// Since the last poll, a write that may change what is said about tickets other than
    /// the one it was made to: a relations file was written (relations are shown from both
    /// ends), or a ticket folder or an `artifacts/` folder appeared or went (what it held
    /// arrived or left unseen).
    pub relations: bool,
    /// The watch lost track since the last poll: look at every file.
    pub lost: bool,
    /// The watch can no longer see every write (the tickets folder or the database's folder
    /// was moved or removed, or the queue could not be read): stop relying on it and start
    /// a new one.
    pub broken: bool,
}

pub struct FileWatch {
    inner: Mutex<Inner>,
}

/// Which folders a [`FileWatch`] watches (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// The tickets folder, every ticket folder and its `artifacts/`: every write is seen.
    Full,
    /// The tickets folder and every ticket folder, not `artifacts/`: a write inside a ticket's
    /// `artifacts/` that touches nothing else is not seen.
    Folders,
}

impl Coverage {
    /// Watches for `tickets` ticket folders, the tickets folder and the database's folder.
    pub fn needs(self, tickets: usize) -> usize {
        match self {
            Coverage::Full => 2 * tickets + 2,
            Coverage::Folders => tickets + 2,
        }
    }
}

#[derive(Debug)]
enum Watched {
    TicketsDir,
    Ticket(TicketId),
    Artifacts(TicketId),
    DbDir,
}

struct Inner {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    tickets_dir: PathBuf,
    coverage: Coverage,
    watched: std::collections::HashMap<i32, Watched>,
    /// The database file's name in its folder; its `-wal` and `-journal` count too.
    db_name: Option<String>,
    generation: u64,
    db_generation: u64,
    dirty: BTreeSet<TicketId>,
    relations: bool,
    lost: bool,
    broken: bool,
    last_db_write: Option<Instant>,
    /// Where events are read into (kept, so a poll allocates nothing).
    #[cfg(target_os = "linux")]
    buf: Vec<u8>,
}

impl FileWatch {
    /// Watch the workspace's tickets and, when `db_file` is given, the database file in its
    /// folder: every folder when `fs.inotify.max_user_watches` allows, else the ticket folders
    /// without their `artifacts/` ([`Coverage`]). Fails when the platform has no inotify or
    /// the kernel refuses even one watch per ticket; callers then look at the files as they
    /// would without a watch.
    pub fn start(ws: &Workspace, db_file: Option<&Path>) -> std::io::Result<FileWatch> {
        imp::start(ws, db_file, imp::max_user_watches())
    }

    /// [`FileWatch::start`], taking at most `limit` watches (`None`: as many as the kernel
    /// gives). The kernel's own refusal (`ENOSPC`, other processes of the user hold watches
    /// too) is met the same way: the full watch gives way to the ticket folders alone.
    pub fn start_within(
        ws: &Workspace,
        db_file: Option<&Path>,
        limit: Option<usize>,
    ) -> std::io::Result<FileWatch> {
        imp::start(ws, db_file, limit)
    }

    /// Which folders are watched: with [`Coverage::Folders`] the caller must look at every
    /// file as often as it would without a watch, for the writes inside `artifacts/` alone.
    pub fn coverage(&self) -> Coverage {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.coverage
    }

    /// Drain what the kernel queued and report it.
    pub fn poll(&self) -> Polled {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        imp::drain(&mut inner);
        Polled {
            generation: inner.generation,
            db_generation: inner.db_generation,
            last_db_write: inner.last_db_write,
            tickets: std::mem::take(&mut inner.dirty).into_iter().collect(),
            relations: std::mem::take(&mut inner.relations),
            lost: std::mem::take(&mut inner.lost),
            broken: inner.broken,
        }
    }

    /// How many folders are watched (the tickets folder, each ticket and, with
    /// [`Coverage::Full`], its artifacts).
    pub fn watches(&self) -> usize {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.watched.len()
    }
}

impl Inner {
    /// The watch lost track of what changed (everything must be looked at, nothing kept may
    /// be trusted); `broken`: and it can no longer see every write.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn lose(&mut self, broken: bool) {
        self.lost = true;
        self.broken |= broken;
        self.db_generation += 1;
    }

    fn is_db_file(&self, name: &str) -> bool {
        self.db_name.as_deref().is_some_and(|db| {
            name.strip_prefix(db)
                .is_some_and(|rest| matches!(rest, "" | "-wal" | "-journal"))
        })
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::HashMap;
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::sync::Mutex;
    use std::time::Instant;

    use super::*;

    /// Every change to what a folder holds, and to its own place.
    const DIR_EVENTS: u32 = libc::IN_MODIFY
        | libc::IN_ATTRIB
        | libc::IN_CREATE
        | libc::IN_DELETE
        | libc::IN_MOVED_FROM
        | libc::IN_MOVED_TO
        | libc::IN_DELETE_SELF
        | libc::IN_MOVE_SELF
        | libc::IN_ONLYDIR;

    /// The most watches this user may hold: `fs.inotify.max_user_watches`, or the user
    /// namespace's own `user.max_inotify_watches` when lower (a container's limit), when
    /// either can be read.
    pub(super) fn max_user_watches() -> Option<usize> {
        [
            "/proc/sys/fs/inotify/max_user_watches",
            "/proc/sys/user/max_inotify_watches",
        ]
        .iter()
        .filter_map(|f| {
            std::fs::read_to_string(f)
                .ok()?
                .trim()
                .parse::<usize>()
                .ok()
        })
        .min()
    }

    pub(super) fn start(
        ws: &Workspace,
        db_file: Option<&Path>,
        limit: Option<usize>,
    ) -> std::io::Result<FileWatch> {
        let folders = ws.ticket_folders().map_err(std::io::Error::other)?;
        let fits = |c: Coverage| limit.is_none_or(|l| c.needs(folders.len()) <= l);
        if fits(Coverage::Full) {
            match start_covering(ws, db_file, &folders, Coverage::Full) {
                // Other processes of the user hold watches too: the kernel's limit is shared.
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {}
                done => return done,
            }
        }
        if !fits(Coverage::Folders) {
            let limit = limit.unwrap_or_default();
            return Err(std::io::Error::other(format!(
                "{} tickets need {} inotify watches (one per ticket folder) and at most {limit} may be taken (fs.inotify.max_user_watches)",
                folders.len(),
                Coverage::Folders.needs(folders.len()),
            )));
        }
        start_covering(ws, db_file, &folders, Coverage::Folders)
    }

    fn start_covering(
        ws: &Workspace,
        db_file: Option<&Path>,
        folders: &[TicketId],
        coverage: Coverage,
    ) -> std::io::Result<FileWatch> {
        let needed = coverage.needs(folders.len());
        // SAFETY: inotify_init1 takes flags only and returns a new descriptor or -1.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor this process just opened and owns alone.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut inner = Inner {
            fd,
            tickets_dir: ws.tickets_dir(),
            coverage,
            watched: HashMap::with_capacity(needed),
            db_name: None,
            generation: 0,
            db_generation: 0,
            dirty: BTreeSet::new(),
            relations: false,
            lost: false,
            broken: false,
            last_db_write: None,
            // Room for many events per read; names are at most NAME_MAX bytes.
            buf: vec![0u8; 64 * 1024],
        };
        std::fs::create_dir_all(&inner.tickets_dir)?;
        let dir = inner.tickets_dir.clone();
        add(&mut inner, &dir, Watched::TicketsDir)?;
        if let Some(db) = db_file {
            if let (Some(parent), Some(name)) = (db.parent(), db.file_name()) {
                add(&mut inner, parent, Watched::DbDir)?;
                inner.db_name = Some(name.to_string_lossy().into_owned());
            }
        }
        for id in folders {
            watch_ticket(&mut inner, id)?;
        }
        Ok(FileWatch {
            inner: Mutex::new(inner),
        })
    }

    fn add(inner: &mut Inner, path: &Path, what: Watched) -> std::io::Result<()> {
        let c = CString::new(path.as_os_str().as_bytes())?;
        // SAFETY: the descriptor is open and `c` is a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(inner.fd.as_raw_fd(), c.as_ptr(), DIR_EVENTS) };
        if wd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        inner.watched.insert(wd, what);
        Ok(())
    }

    /// Watch a ticket folder and (with [`Coverage::Full`]) its artifacts. A folder that is
    /// gone again, or an `artifacts/` not made yet, is no error: its parent's events say when
    /// it appears.
    fn watch_ticket(inner: &mut Inner, id: &TicketId) -> std::io::Result<()> {
        let dir = inner.tickets_dir.join(id.as_str());
        let artifacts = (inner.coverage == Coverage::Full)
            .then(|| (dir.join(ARTIFACTS), Watched::Artifacts(id.clone())));
        for (path, what) in artifacts
            .into_iter()
            .chain([(dir, Watched::Ticket(id.clone()))])
        {
            match add(inner, &path, what) {
                Ok(()) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    pub(super) fn drain(inner: &mut Inner) {
        let mut buf = std::mem::take(&mut inner.buf);
        let mut any = false;
        loop {
            // SAFETY: reads into a buffer this function owns, at most its length.
            let n = unsafe {
                libc::read(
                    inner.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    buf.len(),
                )
            };
            if n <= 0 {
                // EAGAIN: the queue is empty. Any other error loses track.
                if n < 0 {
                    let e = std::io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EAGAIN)
                        && e.raw_os_error() != Some(libc::EINTR)
                    {
                        inner.lose(true);
                        any = true;
                    }
                }
                break;
            }
            let mut at = 0usize;
            let n = n as usize;
            let header = std::mem::size_of::<libc::inotify_event>();
            while at + header <= n {
                // SAFETY: the kernel wrote whole events; the header may be unaligned in `buf`.
                let ev: libc::inotify_event = unsafe {
                    std::ptr::read_unaligned(buf[at..].as_ptr().cast::<libc::inotify_event>())
                };
                let name_at = at + header;
                let name_end = (name_at + ev.len as usize).min(n);
                let name = buf[name_at..name_end]
                    .split(|b| *b == 0)
                    .next()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .unwrap_or_default();
                any |= handle(inner, &ev, &name);
                at = name_end;
            }
        }
        inner.buf = buf;
        if any {
            inner.generation += 1;
        }
    }

    /// Note one event; whether it changed anything that counts.
    fn handle(inner: &mut Inner, ev: &libc::inotify_event, name: &str) -> bool {
        if ev.mask & libc::IN_Q_OVERFLOW != 0 {
            inner.lose(false);
            return true;
        }
        if ev.mask & libc::IN_IGNORED != 0 {
            // The watch is gone (its folder was removed); a removed ticket was already marked.
            if let Some(Watched::TicketsDir | Watched::DbDir) = inner.watched.remove(&ev.wd) {
                inner.lose(true);
                return true;
            }
            return false;
        }
        let is_dir = ev.mask & libc::IN_ISDIR != 0;
        let appeared = ev.mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0;
        match inner.watched.get(&ev.wd) {
            Some(Watched::TicketsDir) => {
                if ev.mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
                    inner.lose(true);
                    return true;
                }
                let Ok(id) = TicketId::parse(name) else {
                    return false;
                };
                // A folder that cannot be watched would go unseen from now on.
                if is_dir && appeared && watch_ticket(inner, &id).is_err() {
                    inner.lose(true);
                }
                inner.relations |= is_dir;
                inner.dirty.insert(id);
            }
            Some(Watched::Ticket(id)) => {
                let id = id.clone();
                if is_dir && appeared && name == ARTIFACTS && inner.coverage == Coverage::Full {
                    let path = inner.tickets_dir.join(id.as_str()).join(ARTIFACTS);
                    if add(inner, &path, Watched::Artifacts(id.clone())).is_err() {
                        inner.lose(true);
                    }
                }
                // The folder itself moved or went, or its `artifacts/` did.
                inner.relations |= (is_dir && name == ARTIFACTS)
                    || ev.mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0;
                inner.dirty.insert(id);
            }
            Some(Watched::Artifacts(id)) => {
                let id = id.clone();
                // `relations.json`, or the temporary file it is renamed from; or the
                // folder itself moved or went.
                inner.relations |= name.contains("relations")
                    || ev.mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0;
                inner.dirty.insert(id);
            }
            Some(Watched::DbDir) => {
                if ev.mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
                    inner.lose(true);
                    return true;
                }
                // The folder holds other files too (the workspace lock, server.json): only
                // the database's own count.
                if !inner.is_db_file(name) {
                    return false;
                }
                inner.last_db_write = Some(Instant::now());
                inner.db_generation += 1;
            }
            None => return false,
        }
        true
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;

    pub(super) fn max_user_watches() -> Option<usize> {
        None
    }

    pub(super) fn start(
        _: &Workspace,
        _: Option<&Path>,
        _: Option<usize>,
    ) -> std::io::Result<FileWatch> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "watching files needs inotify (Linux)",
        ))
    }

    pub(super) fn drain(_: &mut Inner) {}
}
