//! The workspace lock: one exclusive lock file (`.yoi/local/workspace.lock`) held for every
//! mutation of ticket files.
//!
//! Acquiring *waits* — polling an advisory `flock` — up to a timeout instead of failing at once,
//! because concurrent writers are normal (several agents, the server, a person at the CLI). The
//! holder writes its pid, command and start time into the file so a waiter that times out can
//! say who holds it. The lock is released when the guard drops or the process dies (the kernel
//! drops `flock` locks with the file descriptor), so a killed writer never leaves it stuck.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::StoreError;

pub struct WorkspaceLock {
    /// `None`: the lock is the enclosing group commit's ([`crate::group`]), which releases it.
    file: Option<File>,
    path: PathBuf,
}

impl WorkspaceLock {
    /// Wait up to `timeout` for the lock. `holder` describes this process for other waiters.
    pub fn acquire(path: &Path, timeout: Duration, holder: &str) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| StoreError::io(path, e))?;
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) => {
                    if start.elapsed() >= timeout {
                        return Err(StoreError::Locked {
                            path: path.to_path_buf(),
                            holder: read_holder(path),
                            waited: start.elapsed(),
                        });
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(25));
                }
                Err(TryLockError::Error(e)) => return Err(StoreError::io(path, e)),
            }
        }
        let mut lock = WorkspaceLock {
            file: Some(file),
            path: path.to_path_buf(),
        };
        lock.write_holder(holder);
        Ok(lock)
    }

    fn write_holder(&mut self, holder: &str) {
        // Best effort: the description only helps error messages.
        if let Some(file) = &mut self.file {
            let _ = file.set_len(0);
            let _ = file.seek(SeekFrom::Start(0));
            let _ = file.write_all(holder.as_bytes());
        }
    }

    /// The lock a group commit already holds, for a mutation inside it: dropping it releases
    /// nothing (the group does, at its end).
    pub(crate) fn held_by_group(path: &Path) -> WorkspaceLock {
        WorkspaceLock {
            file: None,
            path: path.to_path_buf(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkspaceLock {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            let _ = file.set_len(0);
            let _ = file.unlock();
        }
    }
}

fn read_holder(path: &Path) -> Option<String> {
    let mut s = String::new();
    File::open(path).ok()?.read_to_string(&mut s).ok()?;
    let s = s.trim().to_string();
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_acquirer_times_out_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("local/workspace.lock");
        let _held = WorkspaceLock::acquire(&p, Duration::from_secs(1), "pid 1 yoi test").unwrap();
        let err = WorkspaceLock::acquire(&p, Duration::from_millis(30), "other")
            .err()
            .expect("must time out");
        match err {
            StoreError::Locked { holder, .. } => {
                assert_eq!(holder.as_deref(), Some("pid 1 yoi test"))
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn waiter_gets_the_lock_once_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("workspace.lock");
        let held = WorkspaceLock::acquire(&p, Duration::from_secs(1), "first").unwrap();
        let p2 = p.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            tx.send(()).unwrap();
            WorkspaceLock::acquire(&p2, Duration::from_secs(30), "second").map(|_| ())
        });
        rx.recv().unwrap();
        drop(held);
        waiter
            .join()
            .unwrap()
            .expect("waiter acquires after release");
    }
}
