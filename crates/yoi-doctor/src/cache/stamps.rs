//! The stat stamps that decide whether a kept entry still describes its ticket folder, and the
//! racy-timestamp rule that decides whether a fresh scan may be kept at all.
//!
//! **When an entry is used.** An entry records, for each folder and file the checks read (the
//! ticket folder, item.md, thread.md, artifacts/ and the two files in it that exist), the
//! inode, size, modification time and change time it had *before* it was read (`fstat` on the
//! open handle). It is used only when `stat` gives all of them again now. A write to a file
//! moves its change time; a file created, removed or renamed in a folder moves the folder's;
//! nothing sets a change time back, and a copy of the tree gets new ones.
//!
//! **Racy entries.** A file changed twice within one tick of the file system's clock could show
//! the same times after both changes. So the cache file is created before any ticket is read,
//! and its own modification time, `started`, is the file system's clock at the start of the
//! pass: an entry is only written when every time it records is older than that
//! ([`Stamps::all_before`]). Any change after the pass began has a change time at or after
//! `started`, so it can never match an entry. A ticket changed within the last tick is simply
//! read again next time.
//!
//! This module only compares times; it never reads a ticket's contents, and it refuses (gives
//! `None`) a recorded stamp whose code it does not know rather than skipping it.

use yoi_core::TicketId;
use yoi_store::dirfd::{Dir, FileMeta};

use super::fields::Reader;

/// What an entry's times are recorded for, one code each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stamped {
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
pub(crate) struct Stamps {
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

    /// Every time recorded is older than `started`, the file system's clock when the pass
    /// began: no change after these stamps were taken can share them.
    pub(super) fn all_before(&self, started: i64) -> bool {
        !self
            .seen
            .iter()
            .any(|(_, m)| m.mtime_ns >= started || m.ctime_ns >= started)
    }

    /// The stamps as an entry records them: their count, then per stamp its code and the
    /// inode, size, modification and change time.
    pub(super) fn put(&self, w: &mut Vec<u8>) {
        w.push(self.seen.len() as u8);
        for (what, m) in &self.seen {
            w.push(*what as u8);
            for n in [m.ino, m.size, m.mtime_ns as u64, m.ctime_ns as u64] {
                w.extend_from_slice(&n.to_le_bytes());
            }
        }
    }
}

/// Read the stamps an entry of ticket `id` recorded and `stat` each folder and file again under
/// `root`; `Some` only when every one is as it was.
pub(super) fn still_hold(r: &mut Reader<'_>, root: &Dir, id: &TicketId) -> Option<()> {
    for _ in 0..r.u8()? {
        let what = *Stamped::ALL.get(r.u8()? as usize)?;
        let then = read_meta(r)?;
        let path = match what {
            Stamped::Folder => id.as_str().to_string(),
            _ => format!("{}/{}", id.as_str(), what.path()),
        };
        if root.meta_of(&path).ok()? != then {
            return None;
        }
    }
    Some(())
}

fn read_meta(r: &mut Reader<'_>) -> Option<FileMeta> {
    let (ino, size, mtime, ctime) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?);
    Some(FileMeta {
        size,
        mtime_ns: mtime as i64,
        ctime_ns: ctime as i64,
        ino,
    })
}
