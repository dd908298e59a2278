//! A folder opened once, then listed and read through its handle: what a pass over every
//! ticket folder (doctor, a full reindex) does tens of thousands of times.
//!
//! Against `std::fs::read_dir` and `std::fs::read` with full paths, this saves per folder the
//! `fstat` that `opendir` makes and the copies of every entry's name and of the folder's path,
//! and per file the walk of the whole path from the root (`openat` resolves one name). The
//! listing reads `getdents64` into a buffer kept for the thread.
//!
//! Below the folder first opened, nothing follows a symbolic link: a folder or file is opened
//! with `O_NOFOLLOW` (a link fails with `ELOOP`), and a listing reports a link as a link,
//! never as the folder or file it leads to, so no pass reads or lists what a link points at
//! ([`crate::beneath`] says why).

use std::cell::RefCell;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// One entry of a folder listing. A name that is not UTF-8 is kept lossily (it can then only
/// be reported, not opened).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    /// A folder (a symbolic link is not one, whatever it leads to).
    pub is_dir: bool,
    /// A symbolic link, which nothing here follows.
    pub is_link: bool,
}

/// An open folder.
pub struct Dir {
    fd: OwnedFd,
}

fn c_name(name: &[u8]) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in a name"))
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

const OPEN_DIR: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
/// `O_NONBLOCK`: opening a named pipe where a file should be returns at once instead of
/// waiting for a writer (it does nothing to a regular file).
const OPEN_FILE: libc::c_int =
    libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_NOFOLLOW;

impl Dir {
    /// The folder at `path`, following links on the way as any path does.
    pub fn open(path: &Path) -> io::Result<Dir> {
        Dir::open_with(path, OPEN_DIR)
    }

    /// The folder at `path`, refused (`ELOOP`) when `path` itself is a symbolic link: a ticket
    /// folder, opened by its full path.
    pub fn open_no_link(path: &Path) -> io::Result<Dir> {
        Dir::open_with(path, OPEN_DIR | libc::O_NOFOLLOW)
    }

    fn open_with(path: &Path, flags: libc::c_int) -> io::Result<Dir> {
        Ok(Dir {
            fd: crate::beneath::open_at(None, path.as_os_str().as_bytes(), flags)?,
        })
    }

    fn open_at(&self, name: &str, flags: libc::c_int) -> io::Result<OwnedFd> {
        crate::beneath::open_at(Some(&self.fd), name.as_bytes(), flags)
    }

    /// The folder `name` inside this one (not a link to one).
    pub fn open_dir(&self, name: &str) -> io::Result<Dir> {
        Ok(Dir {
            fd: self.open_at(name, OPEN_DIR | libc::O_NOFOLLOW)?,
        })
    }

    /// The file `path` (names split by `/`) below this folder, each folder on the way and the
    /// file itself opened without following a link.
    fn open_file(&self, path: &str) -> io::Result<OwnedFd> {
        match path.rsplit_once('/') {
            None => self.open_at(path, OPEN_FILE),
            Some((dirs, name)) => {
                let mut dir = self.open_dir(dirs.split('/').next().unwrap_or(dirs))?;
                for part in dirs.split('/').skip(1) {
                    dir = dir.open_dir(part)?;
                }
                dir.open_at(name, OPEN_FILE)
            }
        }
    }

    /// Every entry but `.` and `..`, sorted by name. A symbolic link is marked as one and is
    /// neither a folder nor a file here.
    pub fn list(&self) -> io::Result<Vec<Entry>> {
        thread_local! {
            static BUF: RefCell<Vec<u8>> = RefCell::new(vec![0; 32 * 1024]);
        }
        let mut out = Vec::new();
        BUF.with_borrow_mut(|buf| loop {
            // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_getdents64,
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr(),
                    buf.len(),
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Ok(());
            }
            let mut at = 0;
            while at < n as usize {
                // struct linux_dirent64: u64 d_ino, i64 d_off, u16 d_reclen, u8 d_type, name.
                let rec = &buf[at..n as usize];
                let reclen = match rec.get(16..18) {
                    Some(&[lo, hi]) => u16::from_ne_bytes([lo, hi]) as usize,
                    _ => 0,
                };
                if reclen < 20 || reclen > rec.len() {
                    // The kernel never writes such a record; stop rather than loop or misread.
                    return Err(io::Error::other("a folder entry of impossible length"));
                }
                let kind = rec[18];
                let name = &rec[19..reclen];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                at += reclen;
                if name == b"." || name == b".." {
                    continue;
                }
                let (is_dir, is_link) = match kind {
                    libc::DT_DIR => (true, false),
                    libc::DT_LNK => (false, true),
                    libc::DT_UNKNOWN => {
                        let st = self.stat(name, false)?;
                        (is_dir(st), st.st_mode & libc::S_IFMT == libc::S_IFLNK)
                    }
                    _ => (false, false),
                };
                out.push(Entry {
                    name: String::from_utf8_lossy(name).into_owned(),
                    is_dir,
                    is_link,
                });
            }
        })?;
        out.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn stat(&self, name: &[u8], follow: bool) -> io::Result<libc::stat> {
        let c = c_name(name)?;
        let flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
        // SAFETY: an all-zero `stat` is a valid value for the kernel to overwrite.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `self.fd` is an open folder, `c` a NUL-terminated string, `st` writable.
        cvt(unsafe { libc::fstatat(self.fd.as_raw_fd(), c.as_ptr(), &mut st, flags) })?;
        Ok(st)
    }

    /// Read the regular file `name` into `buf` (replacing what it held) in as few system calls
    /// as the file allows — open, `fstat`, one read, close — and return what the open file was
    /// just before it was read (anything but a regular file is an error). The `fstat` is on the
    /// handle, not a second walk of the path. The read goes on until it has at least the size
    /// `fstat` gave, so a short read cannot cut a file the index then fingerprints; bytes
    /// appended meanwhile make the size disagree with the text, which the next check sees as
    /// a change.
    /// `name` may name a file in a subfolder (`artifacts/relations.json`); no link on the way
    /// is followed.
    pub fn read_stat_into(&self, name: &str, buf: &mut Vec<u8>) -> io::Result<FileMeta> {
        let fd = self.open_file(name)?;
        let st = fstat(&fd)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            let e = if is_dir(st) {
                io::Error::from_raw_os_error(libc::EISDIR)
            } else {
                io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")
            };
            return Err(e);
        }
        let meta = FileMeta::of(&st);
        read_fd(&fd, buf, meta.size as usize)?;
        Ok(meta)
    }

    /// What `fstat` says of this folder itself.
    pub fn meta(&self) -> io::Result<FileMeta> {
        fstat(&self.fd).map(|st| FileMeta::of(&st))
    }

    /// What `stat` says of `path` (relative to this folder), of a symbolic link itself, as
    /// opening it (which refuses it) sees it.
    pub fn meta_of(&self, path: &str) -> io::Result<FileMeta> {
        self.stat(path.as_bytes(), false)
            .map(|st| FileMeta::of(&st))
    }
}

fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value for the kernel to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` writable.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

/// Run `f` with this thread's file buffer, for [`Dir::read_stat_into`]:
/// a pass over every ticket then allocates for its largest file, not for each. One very large
/// file is not held for the rest of the pass.
pub fn with_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    thread_local! {
        static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    BUF.with_borrow_mut(|buf| {
        let out = f(buf);
        if buf.capacity() > 4 << 20 {
            *buf = Vec::new();
        }
        out
    })
}

/// What [`Dir::read_stat_into`] saw of a file besides its bytes (or [`Dir::meta`] of a folder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMeta {
    pub size: u64,
    /// Nanoseconds since the epoch, as `crate::fsutil::mtime_ns` gives them.
    pub mtime_ns: i64,
    /// The inode's change time, in nanoseconds since the epoch: any write, rename onto it or
    /// change of owner or mode moves it, and nothing sets it back.
    pub ctime_ns: i64,
    pub ino: u64,
}

impl FileMeta {
    fn of(st: &libc::stat) -> FileMeta {
        // As `std::fs::Metadata::modified` measured from the epoch; a time before it is 0.
        let ns = |s: i64, n: i64| if s >= 0 { s * 1_000_000_000 + n } else { 0 };
        FileMeta {
            size: st.st_size.max(0) as u64,
            mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
            ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
            ino: st.st_ino,
        }
    }
}

/// Read `fd` to its end into `buf` (replacing what it held). A read that returns less than was
/// asked for is taken as the end once at least `at_least` bytes are in.
fn read_fd(fd: &OwnedFd, buf: &mut Vec<u8>, at_least: usize) -> io::Result<()> {
    const STEP: usize = 64 * 1024;
    buf.clear();
    buf.reserve(at_least + 1);
    loop {
        buf.reserve(STEP);
        let spare = buf.capacity() - buf.len();
        // SAFETY: the kernel writes at most `spare` bytes after the initialized part, all
        // inside the allocation; `set_len` below covers exactly what it wrote.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf.as_mut_ptr().add(buf.len()).cast(),
                spare,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // SAFETY: the kernel initialized these `n` bytes.
        unsafe { buf.set_len(buf.len() + n as usize) };
        if n == 0 || ((n as usize) < spare && buf.len() >= at_least) {
            return Ok(());
        }
    }
}

fn is_dir(st: libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFDIR
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_what_read_dir_lists_and_reads_what_fs_read_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("b.md"), "bee\n").unwrap();
        std::fs::write(root.join("a.md"), "").unwrap();
        std::os::unix::fs::symlink(root.join("sub"), root.join("to-sub")).unwrap();
        std::os::unix::fs::symlink(root.join("gone"), root.join("dangling")).unwrap();
        // More names than one getdents64 buffer holds.
        for i in 0..1500 {
            std::fs::write(root.join(format!("file-with-a-long-name-{i:05}.txt")), "").unwrap();
        }
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(root.join("big"), &big).unwrap();

        let dir = Dir::open(root).unwrap();
        let listed = dir.list().unwrap();
        let mut want: Vec<Entry> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let t = e.file_type().unwrap();
                Entry {
                    name: e.file_name().to_string_lossy().into_owned(),
                    is_dir: t.is_dir(),
                    is_link: t.is_symlink(),
                }
            })
            .collect();
        want.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(listed.len(), 1500 + 6);
        assert_eq!(listed, want);
        assert!(listed
            .iter()
            .any(|e| e.name == "to-sub" && !e.is_dir && e.is_link));
        assert!(listed
            .iter()
            .any(|e| e.name == "dangling" && !e.is_dir && e.is_link));

        use std::os::unix::fs::MetadataExt;
        let mut buf = b"left over".to_vec();
        dir.read_stat_into("big", &mut buf).unwrap();
        assert_eq!(buf, big);
        dir.read_stat_into("a.md", &mut buf).unwrap();
        assert!(buf.is_empty());
        // With the size and time `std::fs::metadata` reports.
        std::os::unix::fs::symlink(root.join("big"), root.join("to-big")).unwrap();
        for name in ["big", "b.md"] {
            let meta = dir.read_stat_into(name, &mut buf).unwrap();
            let want = std::fs::metadata(root.join(name)).unwrap();
            assert_eq!(buf, std::fs::read(root.join(name)).unwrap());
            assert_eq!(meta.size, want.len());
            assert_eq!(meta.mtime_ns, crate::fsutil::mtime_ns(&want));
            assert_eq!(meta.ino, want.ino());
            assert_eq!(
                meta.ctime_ns,
                want.ctime() * 1_000_000_000 + want.ctime_nsec()
            );
            // `stat` through the folder, and `fstat` of a folder, say the same.
            assert_eq!(dir.meta_of(name).unwrap(), meta);
        }
        // A link is not followed, to a file or a folder, at the end of a name or on the way.
        std::fs::write(root.join("sub/in.md"), "in").unwrap();
        for name in ["to-big", "to-sub/in.md"] {
            let e = dir.read_stat_into(name, &mut buf).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{name}");
        }
        dir.read_stat_into("sub/in.md", &mut buf).unwrap();
        assert_eq!(buf, b"in");
        assert_eq!(
            dir.open_dir("to-sub").err().and_then(|e| e.raw_os_error()),
            Some(libc::ELOOP)
        );
        assert_eq!(
            Dir::open_no_link(&root.join("to-sub"))
                .err()
                .and_then(|e| e.raw_os_error()),
            Some(libc::ELOOP)
        );
        let sub = dir.open_dir("sub").unwrap();
        assert_eq!(sub.meta().unwrap(), dir.meta_of("sub").unwrap());
        assert_eq!(
            dir.meta_of("sub").unwrap().ino,
            std::fs::metadata(root.join("sub")).unwrap().ino()
        );
        let e = dir.read_stat_into("sub", &mut buf).unwrap_err();
        assert_eq!(
            e.raw_os_error(),
            Some(libc::EISDIR),
            "a folder is not read as a file"
        );
        // A named pipe with no writer neither blocks the open nor reads as a file.
        let fifo = c_name(root.join("pipe").as_os_str().as_bytes()).unwrap();
        // SAFETY: `fifo` is a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let e = dir.read_stat_into("pipe", &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        dir.open_dir("sub").unwrap();
        let e = dir.read_stat_into("missing", &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(dir.open_dir("b.md").is_err(), "a file is not a folder");
    }
}
