//! The two ways the store writes a ticket or configuration file: atomic replacement and synced
//! append. (The lock file and the secret keys under `.yoi/local/` are opened by `lock` and
//! `keys` with the flags they need: a lock that outlives no process, a key created 0600.)
//!
//! `atomic_write` writes a temporary file beside the target (`.<name>.tmp.<pid>.<n>`), fsyncs
//! it, renames it over the target and fsyncs the directory, so a reader — or a process killed
//! at any point — sees either the old file or the new one, never half of either. An interrupted
//! write can leave the temporary file behind; doctor reports it and `--fix` removes it.
//! `append_sync` opens with O_APPEND and fsyncs after writing the whole buffer in one call.
//!
//! These are the plain forms, durable when they return. A ticket write goes through the
//! workspace's [`crate::writes::Writes`], which uses these alone and defers the syncs and the
//! rename to the end of a group commit.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Prefix shared by every temporary file, so doctor can recognise leftovers.
pub const TEMP_MARKER: &str = ".tmp.";

/// The temporary file an atomic replacement of `path` writes first (unique in this process).
pub fn temp_path(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.join(format!(
        ".{name}{TEMP_MARKER}{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Replace `path` with `bytes`, durable when it returns.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Append `bytes` to `path` (created when missing), synced when it returns.
pub fn append_sync(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    f.write_all(bytes)?;
    f.sync_data()
}

/// A file's modification time in nanoseconds since the epoch (0 when unknown), as the index
/// fingerprints files.
pub fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// The length of the file at `path` (0 when there is none), as [`read_opt`] would read it.
pub fn len(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Read a file, mapping "not found" to `None`.
pub fn read_opt(path: &Path) -> io::Result<Option<String>> {
    match fs::read(path) {
        Ok(bytes) => crate::beneath::utf8(bytes).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Leftover temporary files from interrupted atomic writes in `dir`.
pub fn temp_leftovers(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with('.') && n.contains(TEMP_MARKER)
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("item.md");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        assert!(temp_leftovers(dir.path()).is_empty());
    }

    #[test]
    fn append_sync_appends() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("thread.md");
        append_sync(&p, b"a").unwrap();
        append_sync(&p, b"b").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "ab");
    }
}
