//! [`Owned`]: a process a test started, ended with the test whichever way the test ends.

use std::io::Read;
use std::ops::{Deref, DerefMut};
use std::process::{Child, Output};

/// A child process that is killed (SIGKILL, which also ends a stopped process) and reaped when
/// dropped, unless it has already exited: a test that panics half-way leaves no pod or server
/// running behind it. Everything else is the [`Child`]'s.
#[derive(Debug)]
pub struct Owned(pub Child);

impl Owned {
    /// [`Child::wait_with_output`]: what it wrote to its piped stdout and stderr (read side by
    /// side, so neither pipe fills), once it has exited.
    pub fn wait_with_output(mut self) -> std::io::Result<Output> {
        let stderr = self.0.stderr.take();
        let reading = std::thread::spawn(move || {
            let mut err = Vec::new();
            if let Some(mut pipe) = stderr {
                let _ = pipe.read_to_end(&mut err);
            }
            err
        });
        let mut stdout = Vec::new();
        if let Some(mut pipe) = self.0.stdout.take() {
            pipe.read_to_end(&mut stdout)?;
        }
        let status = self.0.wait()?;
        let stderr = reading.join().unwrap_or_default();
        Ok(Output {
            status,
            stdout,
            stderr,
        })
    }
}

impl Deref for Owned {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for Owned {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_child_is_killed_and_reaped_when_dropped_even_stopped() {
        let child = Owned(
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap(),
        );
        let pid = child.id() as i32;
        // SAFETY: signals the child just started and not yet reaped.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        drop(child);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn its_output_is_read_as_the_childs_own() {
        let child = Owned(
            std::process::Command::new("sh")
                .args(["-c", "echo out; echo err >&2; exit 3"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }
}
