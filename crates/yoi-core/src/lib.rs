//! yoi's domain vocabulary and file formats.
//!
//! Everything here is pure: parsing and rendering of ticket files, the state machine, relation
//! and blocker rules, and the brief sections. No filesystem, no clock, no async — callers pass
//! text, times and ids in, and the store crate does the I/O.

pub mod agent;
pub mod brief;
pub mod class;
pub mod decision;
pub mod finding;
pub mod id;
pub mod item;
pub mod packet;
pub mod plan;
pub mod principal;
pub mod relation;
pub mod report;
pub mod resolution;
pub mod scope;
pub mod state;
pub mod thread;
pub mod time;

pub use class::ErrorClass;
pub use id::TicketId;
pub use item::Item;
pub use principal::{Principal, PrincipalKind};
pub use state::{Operation, State};
pub use time::Timestamp;

/// Hex SHA-256 of some bytes: content hashes and operation fingerprints.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
