//! The doctor cache file as a whole: its header, index and footer, reading the last one and
//! writing the next one beside it.
//!
//! **Layout.** [`MAGIC`], the identity (its length as a `u32`, then its bytes), the entries
//! one after another (each is `entry_codec`'s), the index — per entry, in ticket order, the
//! ticket id, the entry's offset (`u64`) and length (`u32`) — and the [`FOOTER`]: the index's
//! offset, the entry count, the CRC-32 of the identity and the index, and [`MAGIC`] again.
//!
//! **Trust.** [`Old::read`] gives the last file only when both magics, the identity (format,
//! build and workspace, see [`identity`]) and the index CRC are as expected, every entry lies
//! between the header and the index, and the ids are in strictly rising order; anything else
//! and the whole file is ignored. It reads the header, footer and index only: entries are read
//! one at a time at their offset ([`Old::entry`]), and each carries a CRC of its own.
//!
//! **Writing.** [`New::create`] opens an unnamed file (`O_TMPFILE`) in `.yoi/local/` before any
//! ticket is read; its modification time is the `started` the racy rule in `stamps` compares
//! with. Entries are written as the pass hands them over, so the new file is never held whole;
//! while they are the last file's, in the same order, nothing is written at all. A file that
//! would not differ is never named; one that does is linked under a name of its own and renamed
//! over the last one in one step, so a doctor killed at any point leaves the last complete file
//! (or none), and two passes at once leave one whole file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use yoi_store::workspace::Workspace;

use super::fields::{put_str, Reader};
use super::Entry;

const MAGIC: &[u8; 8] = b"yoidc\x00\x00\x01";
/// The footer: index offset (u64), entry count (u32), CRC-32 of the identity and index (u32),
/// and [`MAGIC`] again, so a file cut short is seen at once.
pub(super) const FOOTER: usize = 8 + 4 + 4 + 8;

/// The build and the workspace a file describes: any other and it is not read. The build is
/// the running executable's file (`/proc/self/exe` leads to it even once an upgrade has put
/// another file at its path).
pub(super) fn identity(ws: &Workspace) -> Vec<u8> {
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

/// The last file, once its header, footer and index have been checked.
pub(super) struct Old {
    file: File,
    /// (ticket, offset, length), in ticket order.
    pub(super) index: Vec<(String, u64, u32)>,
}

/// The next file. While every entry so far is the last file's, in the same order, nothing is
/// written: a pass over an unchanged tree writes nothing at all. At the first difference, the
/// entries so far are copied from the last file in one piece, and every entry after that is
/// written as it comes.
pub(super) struct New {
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

impl Old {
    /// The bytes of the entry at position `at` of the index.
    pub(super) fn entry(&self, at: usize) -> std::io::Result<Vec<u8>> {
        let (_, offset, len) = self.index[at];
        let mut bytes = vec![0; len as usize];
        self.file.read_exact_at(&mut bytes, offset)?;
        Ok(bytes)
    }

    pub(super) fn read(file: File, identity: &[u8]) -> Option<Old> {
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
    pub(super) fn add(
        &mut self,
        old: Option<&Old>,
        entry: Option<Entry>,
        id: &str,
    ) -> std::io::Result<()> {
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
    pub(super) fn create(ws: &Workspace, identity: Vec<u8>, path: PathBuf) -> Option<(New, i64)> {
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

    /// Put this file in place of `old` when it differs: an entry was added or replaced, or one
    /// of the old file's entries was left out. A file that would not differ is not named.
    pub(super) fn finish(mut self, old: Option<&Old>) -> std::io::Result<()> {
        if self.same.is_some() && self.same == old.map(|o| o.index.len()) {
            return Ok(());
        }
        self.diverge(old)?;
        self.name()
    }

    /// Write the index and footer, name the file and rename it over the last one.
    fn name(mut self) -> std::io::Result<()> {
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
