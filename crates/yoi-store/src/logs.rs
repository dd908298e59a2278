//! Attempt logs under `.yoi/local/logs/<ticket>/<assignment>.log` (git-ignored runtime state):
//! what an agent printed, streamed in chunks by its pod. Appends only; a log is never rewritten.

use std::io::Write;
use std::path::PathBuf;

use crate::error::StoreError;
use crate::workspace::Workspace;

/// The largest chunk one append takes.
pub const MAX_CHUNK_BYTES: usize = 256 * 1024;

impl Workspace {
    /// The log file of an attempt (it may not exist yet).
    pub fn attempt_log(&self, ticket: &str, assignment: &str) -> PathBuf {
        self.local_dir()
            .join("logs")
            .join(ticket)
            .join(format!("{assignment}.log"))
    }

    /// Append `chunk` to an attempt's log; returns the file, relative to the repository root.
    /// The names come from the database (ticket ids, `asg-<ulid>`), never from a request.
    pub fn append_attempt_log(
        &self,
        ticket: &str,
        assignment: &str,
        chunk: &[u8],
    ) -> Result<String, StoreError> {
        if chunk.len() > MAX_CHUNK_BYTES {
            return Err(StoreError::bad_input(
                "chunk",
                format!("at most {MAX_CHUNK_BYTES} bytes per append"),
            ));
        }
        let path = self.attempt_log(ticket, assignment);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        f.write_all(chunk).map_err(|e| StoreError::io(&path, e))?;
        Ok(self.rel(&path))
    }
}
