//! `.yoi/local/agent.key`: the server's secret for the tokens it derives instead of storing
//! (a pod's agent gets one per claim). 32 random bytes as hex, created on first use with mode
//! 0600 and never committed (`.yoi/local/` is git-ignored). Deleting it revokes every such token
//! at once.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use crate::error::{Refusal, StoreError};
use crate::Workspace;

const FILE: &str = "agent.key";

impl Workspace {
    /// The agent-token key, made now if there is none.
    pub fn agent_key(&self) -> Result<Vec<u8>, StoreError> {
        let path = self.local_dir().join(FILE);
        let io = |e: std::io::Error| StoreError::Io {
            path: path.clone(),
            source: e,
        };
        loop {
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    return decode(text.trim()).ok_or_else(|| StoreError::Refused {
                        reason: Refusal::BadKeyFile { path: path.clone() },
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(e)),
            }
            std::fs::create_dir_all(self.local_dir()).map_err(io)?;
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|e| StoreError::Database {
                reason: format!("no randomness for the agent-token key: {e}"),
            })?;
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(mut f) => {
                    f.write_all(hex.as_bytes()).map_err(io)?;
                    f.sync_all().map_err(io)?;
                    return Ok(bytes.to_vec());
                }
                // Someone else made it first: read theirs.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(e)),
            }
        }
    }
}

fn decode(hex: &str) -> Option<Vec<u8>> {
    if hex.len() != 64 {
        return None;
    }
    (0..32)
        .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}
