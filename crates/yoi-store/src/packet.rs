//! The IntentPacket frozen at acceptance, `artifacts/intent-packet.json`: written once by the
//! accept saga (atomically, so a reader sees all of it or none), read by the routes and pods
//! that hand it out, and removed only when an acceptance that wrote it is undone. Nothing else
//! writes it: from acceptance on it is what the work follows, whatever the body says later.

use std::path::PathBuf;

use yoi_core::packet::FrozenPacket;
use yoi_core::TicketId;

use crate::error::StoreError;
use crate::workspace::Workspace;

/// Where the frozen packet is kept, relative to the ticket folder.
pub const INTENT_PACKET: &str = "artifacts/intent-packet.json";

impl Workspace {
    /// Write `packet` as the ticket's frozen IntentPacket; returns the file written.
    pub fn write_frozen_packet(
        &self,
        id: &TicketId,
        packet: &FrozenPacket,
    ) -> Result<PathBuf, StoreError> {
        let path = self.path_of(id, INTENT_PACKET);
        let json = serde_json::to_string_pretty(packet)
            .map_err(|e| StoreError::invalid(&path, None, e.to_string()))?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        }
        self.writes
            .atomic_write(&path, format!("{json}\n").as_bytes())
            .map_err(|e| StoreError::io(&path, e))?;
        Ok(path)
    }

    /// The ticket's frozen IntentPacket, or `None` before acceptance. A file that does not
    /// parse is an error naming its line.
    pub fn read_frozen_packet(&self, id: &TicketId) -> Result<Option<FrozenPacket>, StoreError> {
        let path = self.path_of(id, INTENT_PACKET);
        let Some(text) = self
            .writes
            .read_opt(&path)
            .map_err(|e| StoreError::io(&path, e))?
        else {
            return Ok(None);
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| StoreError::invalid(&path, Some(e.line()), e.to_string()))
    }

    /// Remove the frozen packet (undoing an acceptance); absent is fine.
    pub fn remove_frozen_packet(&self, id: &TicketId) -> Result<(), StoreError> {
        let path = self.path_of(id, INTENT_PACKET);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(&path, e)),
        }
    }
}
