//! What doctor found in each ticket folder, kept between runs as git keeps its index: a ticket
//! whose folders and files have not changed since the last run is not read and parsed again;
//! its findings and facts come from `.yoi/local/doctor-cache`.
//!
//! **When an entry is used.** An entry records, for each folder and file the checks read (the
//! ticket folder, item.md, thread.md, artifacts/ and the two files in it that exist), the
//! inode, size, modification time and change time it had *before* it was read (`fstat` on the
//! open handle). It is used only when `stat` gives all of them again now. A write to a file
//! moves its change time; a file created, removed or renamed in a folder moves the folder's;
//! nothing sets a change time back, and a copy of the tree gets new ones.
//!
//! **Racy entries.** A file changed twice within one tick of the file system's clock could show
//! the same times after both changes. So the file is created (unnamed, `O_TMPFILE`) before any
//! ticket is read, and its own modification time, `started`, is the file system's clock at the
//! start of the pass: an entry is only written when every time it records is older than that.
//! Any change after the pass began has a change time at or after `started`, so it can never
//! match an entry. A ticket changed within the last tick is simply read again next time.
//!
//! **What is never kept.** A ticket folder without item.md, one with a leftover temporary file
//! (its finding looks at another file), one with a file that could not be read, and one whose
//! findings carry a repair `--fix` may apply. The index comparison never uses this file: it
//! reads the database every time and compares it with the facts (kept or freshly read).
//!
//! **Trust.** The file names the format, the build of yoi (version and the executable's size,
//! times and inode) and the workspace it describes; any difference, a checksum that fails
//! (every entry carries a CRC-32, as does the index), or anything that does not decode, and
//! the entry or the whole file is ignored and rewritten. It is rewritten only when it would
//! change, through a rename, so a killed doctor leaves the last complete file (or none).
//!
//! **Memory.** Entries are read one at a time at their offset, and the new file is written as
//! the chunks of the pass are handed over, so neither file is ever held whole.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Mutex;

use yoi_core::finding::{Finding, Severity};
use yoi_core::plan::PlanRecord;
use yoi_core::relation::RelationsFile;
use yoi_core::state::State;
use yoi_core::TicketId;

use super::ticket::{IndexFacts, TicketScan};
use yoi_store::dirfd::{Dir, FileMeta};
use yoi_store::workspace::Workspace;

/// The file, under `.yoi/local/`.
pub(super) const FILE: &str = "doctor-cache";
const MAGIC: &[u8; 8] = b"yoidc\x00\x00\x01";
/// The footer: index offset (u64), entry count (u32), CRC-32 of the identity and index (u32),
/// and [`MAGIC`] again, so a file cut short is seen at once.
const FOOTER: usize = 8 + 4 + 4 + 8;

/// A scan's entry for the next file: the last file's entry at this position of its index,
/// unchanged, or new bytes.
#[derive(Debug)]
pub(super) enum Entry {
    Reused(usize),
    New(Vec<u8>),
}

/// What an entry's times are recorded for, one code each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stamped {
    Folder = 0,
    Item = 1,
    Thread = 2,
    Artifacts = 3,
    Relations = 4,
    Plan = 5,
}

impl Stamped {
    const ALL: [Stamped; 6] = [
        Stamped::Folder,
        Stamped::Item,
        Stamped::Thread,
        Stamped::Artifacts,
        Stamped::Relations,
        Stamped::Plan,
    ];

    /// The path inside the ticket folder.
    fn path(self) -> &'static str {
        use yoi_store::tickets::{ARTIFACTS, ITEM, PLAN, RELATIONS, THREAD};
        match self {
            Stamped::Folder => "",
            Stamped::Item => ITEM,
            Stamped::Thread => THREAD,
            Stamped::Artifacts => ARTIFACTS,
            Stamped::Relations => RELATIONS,
            Stamped::Plan => PLAN,
        }
    }
}

/// What one scan of a ticket folder saw of the folders and files it read, taken before each
/// was read; `keep` is false once something makes the scan unfit to keep.
#[derive(Debug)]
pub(super) struct Stamps {
    pub seen: Vec<(Stamped, FileMeta)>,
    pub keep: bool,
}

impl Default for Stamps {
    fn default() -> Self {
        Stamps {
            seen: Vec::with_capacity(6),
            keep: true,
        }
    }
}

impl Stamps {
    pub fn saw(&mut self, what: Stamped, meta: std::io::Result<FileMeta>) {
        match meta {
            Ok(m) => self.seen.push((what, m)),
            Err(_) => self.keep = false,
        }
    }
}

/// The cache of one pass: the last file, if it can be trusted, and the next one, if one can be
/// written.
pub(super) struct Cache {
    root: Option<Dir>,
    old: Option<Old>,
    new: Mutex<Option<New>>,
    /// The file system's clock when the pass began (see the module's notes); `None` when
    /// nothing can be written.
    started: Option<i64>,
}

struct Old {
    file: File,
    /// (ticket, offset, length), in ticket order.
    index: Vec<(String, u64, u32)>,
}

/// The next file. While every entry so far is the last file's, in the same order, nothing is
/// written: a pass over an unchanged tree writes nothing at all. At the first difference, the
/// entries so far are copied from the last file in one piece, and every entry after that is
/// written as it comes.
struct New {
    out: BufWriter<File>,
    /// Where the next entry goes.
    at: u64,
    index: Vec<u8>,
    count: u32,
    /// While nothing differs: how many of the last file's entries the pass has reused.
    same: Option<usize>,
    identity: Vec<u8>,
    path: PathBuf,
}

impl Cache {
    /// A pass without a cache (neither read nor written).
    pub fn none() -> Cache {
        Cache {
            root: None,
            old: None,
            new: Mutex::new(None),
            started: None,
        }
    }

    /// The cache of `ws`: the last file when it describes this workspace and this build, and
    /// a new unnamed file in `.yoi/local/` when one can be made; neither when the workspace's
    /// `[doctor] cache` is off. Nothing here is an error: a
    /// cache that cannot be read or written only makes the pass read every file.
    pub fn open(ws: &Workspace) -> Cache {
        if !ws.config.doctor.cache {
            return Cache::none();
        }
        let Ok(root) = Dir::open(&ws.tickets_dir()) else {
            return Cache::none();
        };
        let identity = identity(ws);
        let path = ws.local_dir().join(FILE);
        let old = File::open(&path).ok().and_then(|f| Old::read(f, &identity));
        let new = New::create(ws, identity, path);
        let started = new.as_ref().map(|(_, t)| *t);
        Cache {
            root: Some(root),
            old,
            new: Mutex::new(new.map(|(n, _)| n)),
            started,
        }
    }

    /// The kept scan of ticket `id`, when its entry is there, intact, and every folder and
    /// file it names is as it was. The scan carries the entry's place, for the next file.
    pub fn lookup(&self, id: &TicketId) -> Option<TicketScan> {
        let (root, old) = (self.root.as_ref()?, self.old.as_ref()?);
        let at = old
            .index
            .binary_search_by(|(t, _, _)| t.as_str().cmp(id.as_str()))
            .ok()?;
        let bytes = old.entry(at).ok()?;
        let mut r = Reader::new(&bytes);
        let crc = r.u32()?;
        if crc32fast::hash(r.rest()) != crc || r.str()? != id.as_str() {
            return None;
        }
        for _ in 0..r.u8()? {
            let what = *Stamped::ALL.get(r.u8()? as usize)?;
            let then = r.meta()?;
            let path = match what {
                Stamped::Folder => id.as_str().to_string(),
                _ => format!("{}/{}", id.as_str(), what.path()),
            };
            if root.meta_of(&path).ok()? != then {
                return None;
            }
        }
        let mut scan = decode(&mut r, id)?;
        scan.cache = Some(Entry::Reused(at));
        Some(scan)
    }

    /// The entry of a freshly read scan, when it can be kept.
    pub fn entry(&self, scan: &TicketScan, stamps: &Stamps) -> Option<Entry> {
        let started = self.started?;
        if !stamps.keep
            || !scan.exists
            || scan.findings.iter().any(|f| f.safe_fix.is_some())
            || stamps
                .seen
                .iter()
                .any(|(_, m)| m.mtime_ns >= started || m.ctime_ns >= started)
        {
            return None;
        }
        let mut w = Vec::with_capacity(1024);
        w.extend_from_slice(&[0; 4]);
        put_str(&mut w, scan.id.as_str());
        w.push(stamps.seen.len() as u8);
        for (what, m) in &stamps.seen {
            w.push(*what as u8);
            for n in [m.ino, m.size, m.mtime_ns as u64, m.ctime_ns as u64] {
                w.extend_from_slice(&n.to_le_bytes());
            }
        }
        encode(&mut w, scan)?;
        let crc = crc32fast::hash(&w[4..]);
        w[..4].copy_from_slice(&crc.to_le_bytes());
        Some(Entry::New(w))
    }

    /// Add a scan's entry to the new file, in ticket order: the caller hands the scans over
    /// in the order of their folders. A scan without one leaves its ticket out.
    pub fn keep(&self, scan: &mut TicketScan) {
        let entry = scan.cache.take();
        let mut guard = self.new.lock().unwrap_or_else(|e| e.into_inner());
        let Some(new) = guard.as_mut() else {
            return;
        };
        // A cache that cannot be written is only a slower next pass.
        if new.add(self.old.as_ref(), entry, scan.id.as_str()).is_err() {
            *guard = None;
        }
    }

    /// Put the new file in place of the old one, when it differs: an entry was added or
    /// replaced, or one of the old file's entries was left out.
    pub fn finish(self) {
        let Some(mut new) = self.new.into_inner().unwrap_or_else(|e| e.into_inner()) else {
            return;
        };
        let old = self.old.as_ref();
        if new.same.is_some() && new.same == old.map(|o| o.index.len()) {
            return;
        }
        let _ = new.diverge(old).and_then(|()| new.finish());
    }
}

impl Old {
    /// The bytes of the entry at position `at` of the index.
    fn entry(&self, at: usize) -> std::io::Result<Vec<u8>> {
        let (_, offset, len) = self.index[at];
        let mut bytes = vec![0; len as usize];
        self.file.read_exact_at(&mut bytes, offset)?;
        Ok(bytes)
    }

    fn read(file: File, identity: &[u8]) -> Option<Old> {
        let len = file.metadata().ok()?.len();
        let head = MAGIC.len() as u64 + 4 + identity.len() as u64;
        if len < head + FOOTER as u64 {
            return None;
        }
        let mut start = vec![0; head as usize];
        file.read_exact_at(&mut start, 0).ok()?;
        let mut r = Reader::new(&start);
        if r.take(MAGIC.len())? != MAGIC || r.bytes()? != identity {
            return None;
        }
        let mut foot = [0; FOOTER];
        file.read_exact_at(&mut foot, len - FOOTER as u64).ok()?;
        let mut r = Reader::new(&foot);
        let (index_at, count, crc) = (r.u64()?, r.u32()?, r.u32()?);
        if r.take(MAGIC.len())? != MAGIC || index_at < head || index_at > len - FOOTER as u64 {
            return None;
        }
        let mut bytes = vec![0; (len - FOOTER as u64 - index_at) as usize];
        file.read_exact_at(&mut bytes, index_at).ok()?;
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(identity);
        hasher.update(&bytes);
        if hasher.finalize() != crc {
            return None;
        }
        let mut r = Reader::new(&bytes);
        // The count is not under the checksum: no more room than the bytes can hold.
        let mut index = Vec::with_capacity((count as usize).min(bytes.len() / 16));
        for _ in 0..count {
            let id = r.str()?.to_string();
            let (offset, len) = (r.u64()?, r.u32()?);
            if offset < head || offset + len as u64 > index_at {
                return None;
            }
            index.push((id, offset, len));
        }
        if !r.rest().is_empty() || !index.is_sorted_by(|a, b| a.0 < b.0) {
            return None;
        }
        Some(Old { file, index })
    }
}

impl New {
    /// The entry of ticket `id`, next in ticket order (`None`: the ticket is left out).
    fn add(&mut self, old: Option<&Old>, entry: Option<Entry>, id: &str) -> std::io::Result<()> {
        if let (Some(same), Some(Entry::Reused(at))) = (self.same, &entry) {
            if *at == same {
                self.same = Some(same + 1);
                return Ok(());
            }
        }
        if entry.is_none() && self.same.is_some() {
            // Left out: a difference only if the last file had it, which the next reused
            // entry (or the end) shows.
            return Ok(());
        }
        self.diverge(old)?;
        let bytes = match entry {
            None => return Ok(()),
            Some(Entry::New(bytes)) => bytes,
            Some(Entry::Reused(at)) => old
                .ok_or_else(|| std::io::Error::other("no last file"))?
                .entry(at)?,
        };
        self.push(id, &bytes)
    }

    /// The first difference: copy the entries reused so far from the last file, in one piece.
    fn diverge(&mut self, old: Option<&Old>) -> std::io::Result<()> {
        let Some(same) = self.same.take() else {
            return Ok(());
        };
        let Some(old) = old.filter(|_| same > 0) else {
            return Ok(());
        };
        let first = old.index[0].1;
        let (_, last_at, last_len) = old.index[same - 1];
        let mut bytes = vec![0; (last_at + last_len as u64 - first) as usize];
        old.file.read_exact_at(&mut bytes, first)?;
        self.out.write_all(&bytes)?;
        for (id, offset, len) in &old.index[..same] {
            put_str(&mut self.index, id);
            self.index
                .extend_from_slice(&(self.at + offset - first).to_le_bytes());
            self.index.extend_from_slice(&len.to_le_bytes());
        }
        self.at += bytes.len() as u64;
        self.count += same as u32;
        Ok(())
    }

    fn push(&mut self, id: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.out.write_all(bytes)?;
        put_str(&mut self.index, id);
        self.index.extend_from_slice(&self.at.to_le_bytes());
        self.index
            .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.at += bytes.len() as u64;
        self.count += 1;
        Ok(())
    }

    /// An unnamed file in `.yoi/local/` (it vanishes if the pass stops before naming it), and
    /// its modification time: the file system's clock now.
    fn create(ws: &Workspace, identity: Vec<u8>, path: PathBuf) -> Option<(New, i64)> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            .mode(0o600)
            .open(ws.local_dir())
            .ok()?;
        let started = yoi_store::fsutil::mtime_ns(&file.metadata().ok()?);
        let mut out = BufWriter::with_capacity(256 * 1024, file);
        out.write_all(MAGIC).ok()?;
        out.write_all(&(identity.len() as u32).to_le_bytes()).ok()?;
        out.write_all(&identity).ok()?;
        let at = (MAGIC.len() + 4 + identity.len()) as u64;
        let new = New {
            out,
            at,
            index: Vec::new(),
            count: 0,
            same: Some(0),
            identity,
            path,
        };
        Some((new, started))
    }

    fn finish(mut self) -> std::io::Result<()> {
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&self.identity);
        hasher.update(&self.index);
        self.out.write_all(&self.index)?;
        self.out.write_all(&self.at.to_le_bytes())?;
        self.out.write_all(&self.count.to_le_bytes())?;
        self.out.write_all(&hasher.finalize().to_le_bytes())?;
        self.out.write_all(MAGIC)?;
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        // Named under a name of its own, then renamed over the last file in one step.
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        // Unique within the machine: a server may run two passes at once.
        static PASSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let pass = PASSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let named = self
            .path
            .with_extension(format!("tmp-{}-{pass}", std::process::id()));
        let _ = std::fs::remove_file(&named);
        let from = std::ffi::CString::new(format!("/proc/self/fd/{fd}"))?;
        let to = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(named.as_os_str()))?;
        // SAFETY: both are NUL-terminated strings that outlive the call.
        let r = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                from.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        std::fs::rename(&named, &self.path).inspect_err(|_| {
            let _ = std::fs::remove_file(&named);
        })
    }
}

/// The build and the workspace a file describes: any other and it is not read. The build is
/// the running executable's file (`/proc/self/exe` leads to it even once an upgrade has put
/// another file at its path).
fn identity(ws: &Workspace) -> Vec<u8> {
    use std::os::unix::fs::MetadataExt;
    let exe = std::fs::metadata("/proc/self/exe")
        .map(|m| format!("{} {} {} {}", m.len(), m.mtime(), m.mtime_nsec(), m.ino()))
        .unwrap_or_default();
    format!(
        "yoi {} exe {exe} root {} tickets {}",
        env!("CARGO_PKG_VERSION"),
        ws.root().display(),
        ws.tickets_dir().display()
    )
    .into_bytes()
}

fn put_str(w: &mut Vec<u8>, s: &str) {
    w.extend_from_slice(&(s.len() as u32).to_le_bytes());
    w.extend_from_slice(s.as_bytes());
}

fn put_opt(w: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => w.push(0),
        Some(s) => {
            w.push(1);
            put_str(w, s);
        }
    }
}

/// Text that is part of yoi (a `Cow::Borrowed`) is marked so it is shared again when read.
fn put_cow(w: &mut Vec<u8>, s: Option<&Cow<'static, str>>) {
    match s {
        None => w.push(0),
        Some(Cow::Borrowed(s)) => {
            w.push(1);
            put_str(w, s);
        }
        Some(Cow::Owned(s)) => {
            w.push(2);
            put_str(w, s);
        }
    }
}

/// The scan after the entry's stamps. `None` when something in it cannot be kept (a check id
/// doctor does not list).
fn encode(w: &mut Vec<u8>, scan: &TicketScan) -> Option<()> {
    w.push(scan.state.map_or(u8::MAX, |s| {
        State::ALL.iter().position(|x| *x == s).unwrap_or(0) as u8
    }));
    match &scan.facts.item {
        None => w.push(0),
        Some(item) => {
            w.push(1);
            item.iter().for_each(|s| put_str(w, s));
        }
    }
    put_str(w, scan.facts.events.text());
    w.extend_from_slice(&(scan.facts.plans.len() as u32).to_le_bytes());
    scan.facts.plans.iter().for_each(|p| put_str(w, p));
    put_opt(w, scan.relations.is_some().then_some(&*scan.relations_text));
    put_str(w, &serde_json::to_string(&scan.plan).ok()?);
    w.extend_from_slice(&(scan.findings.len() as u32).to_le_bytes());
    for f in &scan.findings {
        check_id(f.check)?;
        w.push(f.severity as u8);
        put_str(w, f.check);
        put_opt(w, f.ticket.as_deref());
        put_opt(w, f.path.as_deref());
        match f.line {
            None => w.push(0),
            Some(n) => {
                w.push(1);
                w.extend_from_slice(&(n as u64).to_le_bytes());
            }
        }
        put_str(w, &f.seen);
        put_cow(w, Some(&f.expected));
        put_cow(w, f.fix.as_ref());
    }
    Some(())
}

fn decode(r: &mut Reader<'_>, id: &TicketId) -> Option<TicketScan> {
    let state = match r.u8()? {
        u8::MAX => None,
        n => Some(*State::ALL.get(n as usize)?),
    };
    let item = match r.u8()? {
        0 => None,
        _ => Some([r.string()?, r.string()?, r.string()?]),
    };
    let events = super::thread::Keys::from_text(r.string()?);
    let plans = (0..r.u32()?)
        .map(|_| r.string())
        .collect::<Option<Vec<_>>>()?;
    let (relations, relations_text) = match r.opt()? {
        None => (None, String::new()),
        Some(text) => (Some(RelationsFile::parse(text, id).ok()?), text.to_string()),
    };
    let mut plan: Vec<(usize, PlanRecord)> = serde_json::from_str(r.str()?).ok()?;
    // Held for the whole pass: no room to spare.
    plan.shrink_to_fit();
    let n = r.u32()? as usize;
    let mut findings = Vec::with_capacity(n.min(r.rest().len()));
    for _ in 0..n {
        let severity = match r.u8()? {
            0 => Severity::Error,
            1 => Severity::Warning,
            _ => return None,
        };
        let check = check_id(r.str()?)?;
        let mut f = Finding::new(severity, check, String::new(), "");
        f.ticket = r.opt()?.map(str::to_string);
        f.path = r.opt()?.map(str::to_string);
        f.line = match r.u8()? {
            0 => None,
            _ => Some(usize::try_from(r.u64()?).ok()?),
        };
        f.seen = r.string()?;
        f.expected = r.cow()??;
        f.fix = r.cow()?;
        findings.push(f);
    }
    if !r.rest().is_empty() {
        return None;
    }
    Some(TicketScan {
        id: id.clone(),
        findings,
        exists: true,
        state,
        relations,
        relations_text,
        plan,
        facts: IndexFacts {
            item,
            events,
            plans,
        },
        cache: None,
    })
}

/// The check id doctor lists as `id`, if it lists one.
fn check_id(id: &str) -> Option<&'static str> {
    static IDS: std::sync::OnceLock<HashSet<&'static str>> = std::sync::OnceLock::new();
    IDS.get_or_init(|| super::CHECKS.iter().map(|c| c.id).collect())
        .get(id)
        .copied()
}

/// yoi's own texts read back from a file, each kept once for the life of the process so a
/// finding read back holds no copy of it (a report holds tens of thousands of findings, most
/// with the same fixed texts). Only texts written as yoi's own are kept here, so there are as
/// many as yoi has. Each thread looks in its own set first.
fn shared(s: &str) -> &'static str {
    static TEXTS: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    thread_local! {
        static SEEN: std::cell::RefCell<HashSet<&'static str>> = std::cell::RefCell::default();
    }
    SEEN.with_borrow_mut(|seen| {
        if let Some(t) = seen.get(s) {
            return *t;
        }
        let mut texts = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
        let texts = texts.get_or_insert_with(HashSet::new);
        let t = match texts.get(s) {
            Some(t) => *t,
            None => {
                let t: &'static str = Box::leak(s.to_string().into_boxed_str());
                texts.insert(t);
                t
            }
        };
        seen.insert(t);
        t
    })
}

/// Reads what the `put_*` functions wrote; `None` at any short or malformed field.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.bytes.len() {
            return None;
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }

    fn string(&mut self) -> Option<String> {
        self.str().map(str::to_string)
    }

    fn opt(&mut self) -> Option<Option<&'a str>> {
        match self.u8()? {
            0 => Some(None),
            1 => Some(Some(self.str()?)),
            _ => None,
        }
    }

    fn cow(&mut self) -> Option<Option<Cow<'static, str>>> {
        match self.u8()? {
            0 => Some(None),
            1 => Some(Some(Cow::Borrowed(shared(self.str()?)))),
            2 => Some(Some(Cow::Owned(self.string()?))),
            _ => None,
        }
    }

    fn meta(&mut self) -> Option<FileMeta> {
        let (ino, size, mtime, ctime) = (self.u64()?, self.u64()?, self.u64()?, self.u64()?);
        Some(FileMeta {
            size,
            mtime_ns: mtime as i64,
            ctime_ns: ctime as i64,
            ino,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yoi_core::finding::SafeFix;
    use yoi_core::principal::Principal;
    use yoi_core::relation::RelationKind;
    use yoi_core::Timestamp;
    use yoi_store::ops::{self, CommentRequest, CreateRequest, Ctx, PlanRequest, RelationRequest};
    use yoi_store::tickets::{ITEM, THREAD};

    use super::super::ticket::check_ticket;

    struct Fx {
        _dir: tempfile::TempDir,
        ws: Workspace,
        ids: Vec<TicketId>,
    }

    fn ctx() -> Ctx {
        Ctx::new(
            Principal::human("alice"),
            Timestamp::parse("2026-11-29T10:00:00Z").unwrap(),
        )
    }

    /// Seven tickets: relations, a plan record, an older-format key (a finding with fixed
    /// texts) and an older event (one with a made text), then a wait of a few clock ticks so
    /// every file is older than the next pass.
    fn fixture() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        yoi_store::init(dir.path(), "main").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let mut ids = Vec::new();
        for n in 0..7 {
            let req = CreateRequest {
                title: format!("ticket {n}"),
                body: "## Intent\nShip it.\n".into(),
                depends_on: ids
                    .first()
                    .map(|d: &TicketId| d.to_string())
                    .into_iter()
                    .collect(),
            };
            ids.push(ops::create(&ws, &ctx(), &req).unwrap().ticket);
        }
        let rel = RelationRequest {
            kind: RelationKind::Related,
            target: ids[2].to_string(),
            note: Some("see also".into()),
        };
        ops::add_relation(&ws, &ctx(), ids[1].as_str(), &rel).unwrap();
        let plan = PlanRequest {
            kind: yoi_core::plan::PlanKind::After,
            related: Some(ids[3].to_string()),
            note: Some("after 3".into()),
            accepted_plan: None,
        };
        ops::add_plan_record(&ws, &ctx(), ids[1].as_str(), &plan).unwrap();
        let item = ws.ticket_dir(&ids[1]).join(ITEM);
        let text = std::fs::read_to_string(&item).unwrap();
        std::fs::write(&item, text.replacen("\n", "\nassignee: null\n", 1)).unwrap();
        let thread = ws.ticket_dir(&ids[1]).join(THREAD);
        let mut text = std::fs::read_to_string(&thread).unwrap();
        text.push_str(
            "<!-- event: comment author: bob at: 2026-11-29T11:00:00Z -->\n## Note\nold\n\n---\n",
        );
        std::fs::write(&thread, text).unwrap();
        settle();
        Fx { _dir: dir, ws, ids }
    }

    /// Long enough for the file system's clock to move on (a tick is at most 10 ms).
    fn settle() {
        std::thread::sleep(std::time::Duration::from_millis(40));
    }

    /// One pass over every ticket through `cache`, as doctor makes it; returns the scans.
    fn pass(fx: &Fx) -> Vec<TicketScan> {
        let cache = Cache::open(&fx.ws);
        let scans: Vec<TicketScan> = fx
            .ids
            .iter()
            .map(|id| {
                let mut scan = check_ticket(&fx.ws, id, &cache);
                let kept = scan.cache.as_ref().map(|e| matches!(e, Entry::Reused(_)));
                cache.keep(&mut scan);
                scan.cache = kept.map(|reused| {
                    if reused {
                        Entry::Reused(0)
                    } else {
                        Entry::New(Vec::new())
                    }
                });
                scan
            })
            .collect();
        cache.finish();
        scans
    }

    fn reused(scans: &[TicketScan]) -> Vec<bool> {
        scans
            .iter()
            .map(|s| matches!(s.cache, Some(Entry::Reused(_))))
            .collect()
    }

    /// Everything a scan hands on, as text.
    fn shown(s: &TicketScan) -> String {
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            s.findings,
            s.exists,
            s.state,
            s.relations,
            s.relations_text,
            s.plan,
            s.facts.item,
            s.facts.events.text(),
            s.facts.plans
        )
    }

    fn fresh(fx: &Fx, id: &TicketId) -> TicketScan {
        check_ticket(&fx.ws, id, &Cache::none())
    }

    fn cache_file(fx: &Fx) -> PathBuf {
        fx.ws.local_dir().join(FILE)
    }

    #[test]
    fn an_unchanged_ticket_is_read_back_as_it_was_checked_and_nothing_is_rewritten() {
        let fx = fixture();
        let first = pass(&fx);
        assert_eq!(reused(&first), [false; 7]);
        assert!(
            first.iter().all(|s| s.cache.is_some()),
            "every ticket is kept"
        );
        let file = std::fs::metadata(cache_file(&fx)).unwrap();

        let second = pass(&fx);
        assert_eq!(reused(&second), [true; 7]);
        for (kept, id) in second.iter().zip(&fx.ids) {
            assert_eq!(shown(kept), shown(&fresh(&fx, id)));
        }
        // The kept scans hold what the checks found: findings with fixed and made texts,
        // relations, a plan record and the thread's keys.
        let one = &second[1];
        assert!(one.findings.iter().any(|f| f.check == "item.legacy_key"));
        assert!(one.findings.iter().any(|f| f.check == "thread.event_id"));
        assert!(one.relations.is_some() && !one.plan.is_empty());
        assert!(one.facts.events.iter().count() >= 2);
        // Nothing changed, so the file was not written again.
        use std::os::unix::fs::MetadataExt;
        let again = std::fs::metadata(cache_file(&fx)).unwrap();
        assert_eq!(
            (again.ino(), again.mtime_nsec()),
            (file.ino(), file.mtime_nsec())
        );
    }

    #[test]
    fn any_change_in_a_ticket_folder_has_it_read_again() {
        let fx = fixture();
        pass(&fx);
        let dir = |n: usize| fx.ws.ticket_dir(&fx.ids[n]);
        // A comment through the store (thread.md grows, item.md is rewritten).
        let req = CommentRequest {
            kind: "comment".into(),
            body: "more".into(),
        };
        ops::comment(&fx.ws, &ctx(), fx.ids[0].as_str(), &req).unwrap();
        // The same number of bytes, written in place: only the times tell.
        let item = dir(2).join(ITEM);
        let text = std::fs::read_to_string(&item).unwrap();
        std::fs::write(&item, text.replacen("ticket 2", "ticket X", 1)).unwrap();
        // A file added to the folder, and one to artifacts/.
        std::fs::write(dir(3).join("notes.txt"), "x").unwrap();
        std::fs::write(dir(4).join("artifacts/log.txt"), "x").unwrap();
        // Only the mode of thread.md.
        use std::os::unix::fs::PermissionsExt;
        let thread = dir(5).join(THREAD);
        std::fs::set_permissions(&thread, std::fs::Permissions::from_mode(0o600)).unwrap();

        let after = pass(&fx);
        assert_eq!(
            reused(&after),
            [false, true, false, false, false, false, true]
        );
        for (scan, id) in after.iter().zip(&fx.ids) {
            assert_eq!(shown(scan), shown(&fresh(&fx, id)));
        }
        assert_eq!(after[2].facts.item.as_ref().unwrap()[0], "ticket X");
        assert!(after[3]
            .findings
            .iter()
            .any(|f| f.check == "layout.stray_file" && f.seen.contains("notes.txt")));
        // The next pass reuses every entry that pass could keep: not those of files changed
        // within its first clock tick (racy), which it reads again and keeps.
        settle();
        let next = pass(&fx);
        let kept: Vec<bool> = after.iter().map(|s| s.cache.is_some()).collect();
        assert_eq!(reused(&next), kept);
        assert!(next.iter().all(|s| s.cache.is_some()));
        assert_eq!(reused(&pass(&fx)), [true; 7]);
    }

    #[test]
    fn a_damaged_or_foreign_file_is_not_believed() {
        let fx = fixture();
        pass(&fx);
        let path = cache_file(&fx);
        let good = std::fs::read(&path).unwrap();
        let cache = Cache::open(&fx.ws);
        let (_, offset, len) = cache.old.as_ref().unwrap().index[3].clone();
        drop(cache);

        // One flipped byte inside an entry: that ticket only is read again.
        let mut bad = good.clone();
        bad[(offset + len as u64 / 2) as usize] ^= 0x20;
        std::fs::write(&path, &bad).unwrap();
        let cache = Cache::open(&fx.ws);
        let found: Vec<bool> = fx.ids.iter().map(|id| cache.lookup(id).is_some()).collect();
        assert_eq!(found, [true, true, true, false, true, true, true]);

        // A flipped byte in the index, an impossible count, a file cut short, another format:
        // none of it is read.
        let mut bad = good.clone();
        let at = bad.len() - FOOTER - 5;
        bad[at] ^= 0x01;
        let mut count = good.clone();
        let at = count.len() - FOOTER + 8;
        count[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        for damaged in [
            bad,
            count,
            good[..good.len() - 3].to_vec(),
            b"yoidc\x00\x00\x02".to_vec(),
        ] {
            std::fs::write(&path, &damaged).unwrap();
            let cache = Cache::open(&fx.ws);
            assert!(cache.old.is_none());
            assert!(fx.ids.iter().all(|id| cache.lookup(id).is_none()));
        }

        // The file of another workspace with the same tickets describes other paths.
        let other = tempfile::tempdir().unwrap();
        copy_tree(fx.ws.root(), other.path());
        std::fs::write(other.path().join(".yoi/local").join(FILE), &good).unwrap();
        let ws = Workspace::open(other.path()).unwrap();
        assert!(Cache::open(&ws).old.is_none());
        // Where it belongs, it is read again.
        std::fs::write(&path, &good).unwrap();
        assert!(Cache::open(&fx.ws).lookup(&fx.ids[3]).is_some());
    }

    #[test]
    fn passes_at_the_same_time_leave_one_whole_file() {
        let fx = fixture();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| pass(&fx));
            }
        });
        assert_eq!(reused(&pass(&fx)), [true; 7]);
        let names: Vec<String> = std::fs::read_dir(fx.ws.local_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(FILE))
            .collect();
        assert_eq!(names, [FILE], "no temporary file is left behind");
    }

    #[test]
    fn only_a_scan_of_files_older_than_the_pass_is_kept() {
        let fx = fixture();
        let cache = Cache::open(&fx.ws);
        let started = cache.started.unwrap();
        let scan = fresh(&fx, &fx.ids[1]);
        let stamp = |ctime_ns: i64, mtime_ns: i64| Stamps {
            seen: vec![(
                Stamped::Item,
                FileMeta {
                    size: 1,
                    mtime_ns,
                    ctime_ns,
                    ino: 1,
                },
            )],
            keep: true,
        };
        assert!(cache
            .entry(&scan, &stamp(started - 1, started - 1))
            .is_some());
        assert!(cache.entry(&scan, &stamp(started, started - 1)).is_none());
        assert!(cache.entry(&scan, &stamp(started - 1, started)).is_none());
        let mut unfit = stamp(started - 1, started - 1);
        unfit.keep = false;
        assert!(cache.entry(&scan, &unfit).is_none());
        // A finding `--fix` may act on is never kept.
        let mut fixable = fresh(&fx, &fx.ids[1]);
        fixable.findings[0].safe_fix = Some(SafeFix::CreateFile { path: "x".into() });
        assert!(cache
            .entry(&fixable, &stamp(started - 1, started - 1))
            .is_none());
        // Nor is anything when the cache is off.
        assert!(Cache::none().entry(&scan, &stamp(0, 0)).is_none());
    }

    fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let dst = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_tree(&e.path(), &dst);
            } else {
                std::fs::copy(e.path(), dst).unwrap();
            }
        }
    }
}
