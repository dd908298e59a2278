//! Opening a ticket file beneath the tickets folder without following a symbolic link.
//!
//! A ticket folder, `item.md`, `thread.md` or anything else under `.yoi/tickets/` that is a
//! symbolic link could point anywhere: a write through it would change a file outside the
//! workspace, a read would show another file's contents as a ticket's. So the walk from the
//! tickets folder opens each folder by name relative to the one before it with `O_NOFOLLOW`
//! (`openat`), and the file itself the same way: a link anywhere below the tickets folder
//! fails the open with `ELOOP`, which [`crate::StoreError::io`] turns into a `corrupt_file`
//! error naming the link. An atomic replacement writes its temporary file and renames it
//! relative to the same folder handle, so nothing between the walk and the write can move
//! the file elsewhere. The tickets folder itself is opened as configured.
//!
//! Text is UTF-8: a file that is not is an error carrying the line of the first bad byte
//! ([`NotUtf8`]), which becomes `corrupt_file` too.

use std::ffi::CString;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use crate::fsutil::temp_path;

/// A file that is not UTF-8: the line (from 1) and byte offset of the first bad byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotUtf8 {
    pub line: usize,
    pub byte: usize,
}

impl fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not UTF-8 (byte {}, line {})", self.byte, self.line)
    }
}

impl std::error::Error for NotUtf8 {}

/// `bytes` as text, or an `InvalidData` error holding a [`NotUtf8`].
pub fn utf8(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let byte = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..byte].iter().filter(|&&b| b == b'\n').count();
        io::Error::new(io::ErrorKind::InvalidData, NotUtf8 { line, byte })
    })
}

/// The [`NotUtf8`] an error carries, if any.
pub fn not_utf8(e: &io::Error) -> Option<NotUtf8> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<NotUtf8>())
        .copied()
}

/// Whether `e` is an open refused because a name was a symbolic link (`ELOOP` from
/// `O_NOFOLLOW`).
pub fn is_link(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn c_name(name: &[u8]) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in a name"))
}

/// `openat(dir, name, flags)`, where a folder asked for with `O_NOFOLLOW` that is a symbolic
/// link fails with `ELOOP` (the kernel says `ENOTDIR` then), as a file does.
pub(crate) fn open_at(
    dir: Option<&OwnedFd>,
    name: &[u8],
    flags: libc::c_int,
) -> io::Result<OwnedFd> {
    let c = c_name(name)?;
    let at = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `at` is an open folder (or AT_FDCWD) and `c` a NUL-terminated string.
    let fd = unsafe { libc::openat(at, c.as_ptr(), flags | libc::O_CLOEXEC, 0o666) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        let folder =
            flags & (libc::O_DIRECTORY | libc::O_NOFOLLOW) == libc::O_DIRECTORY | libc::O_NOFOLLOW;
        if folder && e.raw_os_error() == Some(libc::ENOTDIR) && is_symlink_at(at, &c) {
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
        }
        return Err(e);
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn is_symlink_at(at: libc::c_int, name: &CString) -> bool {
    // SAFETY: an all-zero `stat` is a valid value for the kernel to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `at` is an open folder or AT_FDCWD, `name` NUL-terminated, `st` writable.
    let r = unsafe { libc::fstatat(at, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

/// The folder holding `path`, opened by walking from `base` with `O_NOFOLLOW`, and the file's
/// own name. `path` must lie beneath `base` (no `..`).
fn parent_beneath<'p>(base: &Path, path: &'p Path) -> io::Result<(OwnedFd, &'p [u8])> {
    let rel = path.strip_prefix(base).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not inside {}", path.display(), base.display()),
        )
    })?;
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => parts.push(n.as_bytes()),
            Component::CurDir => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} leaves {}", path.display(), base.display()),
                ))
            }
        }
    }
    let Some(name) = parts.pop() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no file name below the tickets folder",
        ));
    };
    let dir_flags = libc::O_RDONLY | libc::O_DIRECTORY;
    let mut dir = open_at(None, base.as_os_str().as_bytes(), dir_flags)?;
    for part in parts {
        dir = open_at(Some(&dir), part, dir_flags | libc::O_NOFOLLOW)?;
    }
    Ok((dir, name))
}

/// The first of `path` and the folders between `base` and it that is a symbolic link, if
/// any (a worktree's path, before yoi adds, inspects or removes it). Names that do not exist
/// end the walk: nothing below them can be a link.
pub fn link_on_path(base: &Path, path: &Path) -> Option<std::path::PathBuf> {
    let rel = path.strip_prefix(base).ok()?;
    let mut at = base.to_path_buf();
    for c in rel.components() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Some(at),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Refuse `path` when a folder between `base` and it is a symbolic link (the file itself is
/// opened with `O_NOFOLLOW` by whoever opens it).
pub fn check_folders(base: &Path, path: &Path) -> io::Result<()> {
    parent_beneath(base, path).map(drop)
}

/// Open `path` beneath `base` with `flags` (plus `O_NOFOLLOW`).
pub fn open(base: &Path, path: &Path, flags: libc::c_int) -> io::Result<File> {
    let (dir, name) = parent_beneath(base, path)?;
    let fd = open_at(Some(&dir), name, flags | libc::O_NOFOLLOW)?;
    Ok(File::from(fd))
}

/// Read `path` beneath `base` as UTF-8 text; "not found" is `None`. Anything but a regular
/// file is an error (a named pipe does not block the open).
pub fn read_opt(base: &Path, path: &Path) -> io::Result<Option<String>> {
    let flags = libc::O_RDONLY | libc::O_NOCTTY | libc::O_NONBLOCK;
    let mut f = match open(base, path, flags) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.read_to_end(&mut bytes)?;
    utf8(bytes).map(Some)
}

/// Append `bytes` to `path` beneath `base` (created when missing), synced when it returns.
pub fn append_sync(base: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = open_append(base, path)?;
    f.write_all(bytes)?;
    f.sync_data()
}

/// `path` beneath `base` opened for appending (created when missing), not synced.
pub fn open_append(base: &Path, path: &Path) -> io::Result<File> {
    open(
        base,
        path,
        libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NOCTTY,
    )
}

/// Replace `path` beneath `base` with `bytes`, durable when it returns: the temporary file is
/// created, renamed and synced relative to the folder handle the walk opened.
pub fn atomic_write(base: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (dir, name) = parent_beneath(base, path)?;
    let tmp = temp_path(path);
    let tmp_name = tmp
        .file_name()
        .map(|n| n.as_bytes().to_vec())
        .unwrap_or_default();
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    let mut f = File::from(open_at(Some(&dir), &tmp_name, flags)?);
    let result = (|| {
        f.write_all(bytes)?;
        f.sync_all()?;
        let (from, to) = (c_name(&tmp_name)?, c_name(name)?);
        // SAFETY: `dir` is an open folder and both names are NUL-terminated strings.
        cvt(unsafe {
            libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr())
        })?;
        File::from(dir.try_clone()?).sync_all()
    })();
    if result.is_err() {
        if let Ok(c) = c_name(&tmp_name) {
            // SAFETY: `dir` is an open folder and `c` a NUL-terminated string.
            unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) };
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_below_the_base_is_neither_read_nor_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("tickets");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(base.join("T/artifacts")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("item.md"), "secret\n").unwrap();
        std::os::unix::fs::symlink(&outside, base.join("L")).unwrap();
        std::os::unix::fs::symlink(outside.join("item.md"), base.join("T/item.md")).unwrap();

        // Through a linked folder, and a linked file: refused, and nothing outside changes.
        for path in [base.join("L/item.md"), base.join("T/item.md")] {
            let e = read_opt(&base, &path).unwrap_err();
            assert!(is_link(&e), "{path:?}: {e}");
            let e = append_sync(&base, &path, b"more").unwrap_err();
            assert!(is_link(&e), "{path:?}: {e}");
        }
        let e = atomic_write(&base, &base.join("L/new.md"), b"x").unwrap_err();
        assert!(is_link(&e), "{e}");
        assert_eq!(std::fs::read(outside.join("item.md")).unwrap(), b"secret\n");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);

        // A real folder and file work, and `..` cannot leave the base.
        let p = base.join("T/artifacts/a.json");
        atomic_write(&base, &p, b"{}").unwrap();
        append_sync(&base, &p, b"\n").unwrap();
        assert_eq!(read_opt(&base, &p).unwrap().as_deref(), Some("{}\n"));
        assert_eq!(read_opt(&base, &base.join("T/none.md")).unwrap(), None);
        let up = base.join("T/../../outside/item.md");
        assert!(read_opt(&base, &up).is_err());
    }

    #[test]
    fn link_on_path_finds_the_first_link_below_the_base() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("repo");
        std::fs::create_dir_all(base.join(".worktree/real")).unwrap();
        std::os::unix::fs::symlink(tmp.path(), base.join(".worktree/planted")).unwrap();
        let wt = base.join(".worktree");
        assert_eq!(link_on_path(&base, &wt.join("real")), None);
        assert_eq!(link_on_path(&base, &wt.join("missing/below")), None);
        assert_eq!(
            link_on_path(&base, &wt.join("planted/x")),
            Some(wt.join("planted"))
        );
        std::fs::rename(&wt, tmp.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("moved"), &wt).unwrap();
        assert_eq!(link_on_path(&base, &wt.join("real")), Some(wt.clone()));
        assert_eq!(link_on_path(&base, tmp.path()), None, "outside the base");
    }

    #[test]
    fn text_that_is_not_utf8_names_its_line() {
        let e = utf8(b"one\ntwo\nthr\xffee\n".to_vec()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(not_utf8(&e), Some(NotUtf8 { line: 3, byte: 11 }));
    }
}
