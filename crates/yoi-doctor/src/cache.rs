//! What doctor found in each ticket folder, kept between runs as git keeps its index: a ticket
//! whose folders and files have not changed since the last run is not read and parsed again;
//! its findings and facts come from `.yoi/local/doctor-cache`.
//!
//! This module is the policy, [`Cache`]: which pass reads the file, which scan is looked up,
//! which is kept, and when the file is replaced. The parts beside it each own one layer:
//! `stamps` (the stat stamps an entry must match again, and the racy-timestamp rule),
//! `cache_file` (header, index, footer, reading the last file and renaming the next one into
//! place), `entry_codec` (one ticket's scan as bytes and back) and `fields` (the integer and
//! string encodings all of them use).
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
//! **Never an error.** A cache that cannot be read, written or trusted only makes the pass read
//! every file: nothing here returns an error to the checks.
//!
//! **Memory.** Entries are read one at a time at their offset, and the new file is written as
//! the chunks of the pass are handed over, so neither file is ever held whole.

mod cache_file;
mod entry_codec;
mod fields;
mod stamps;

#[cfg(test)]
mod cache_tests;

use std::fs::File;
use std::sync::Mutex;

use yoi_core::TicketId;

use super::ticket::TicketScan;
use cache_file::{identity, New, Old};
use yoi_store::dirfd::Dir;
use yoi_store::workspace::Workspace;

pub(super) use stamps::{Stamped, Stamps};

/// The file, under `.yoi/local/`.
pub(super) const FILE: &str = "doctor-cache";

/// A scan's entry for the next file: the last file's entry at this position of its index,
/// unchanged, or new bytes.
#[derive(Debug)]
pub(super) enum Entry {
    Reused(usize),
    New(Vec<u8>),
}

/// The cache of one pass: the last file, if it can be trusted, and the next one, if one can be
/// written.
pub(super) struct Cache {
    root: Option<Dir>,
    old: Option<Old>,
    new: Mutex<Option<New>>,
    /// The file system's clock when the pass began (see `stamps`); `None` when nothing can be
    /// written.
    started: Option<i64>,
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
        let mut r = entry_codec::open(&bytes, id)?;
        stamps::still_hold(&mut r, root, id)?;
        let mut scan = entry_codec::decode(&mut r, id)?;
        scan.cache = Some(Entry::Reused(at));
        Some(scan)
    }

    /// The entry of a freshly read scan, when it can be kept.
    pub fn entry(&self, scan: &TicketScan, stamps: &Stamps) -> Option<Entry> {
        let started = self.started?;
        if !stamps.keep
            || !scan.exists
            || scan.findings.iter().any(|f| f.safe_fix.is_some())
            || !stamps.all_before(started)
        {
            return None;
        }
        let mut w = entry_codec::begin(scan.id.as_str());
        stamps.put(&mut w);
        entry_codec::encode(&mut w, scan)?;
        Some(Entry::New(entry_codec::seal(w)))
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
        let Some(new) = self.new.into_inner().unwrap_or_else(|e| e.into_inner()) else {
            return;
        };
        let _ = new.finish(self.old.as_ref());
    }
}
