//! The file store of a yoi workspace.
//!
//! Owns everything under `.yoi/`: finding and initialising a workspace, the workspace lock,
//! atomic writes and synced appends, reading ticket records, the ticket operations (one
//! function per mutation, with every guard), read queries, doctor, and the ticket worktrees
//! people list and tidy with `yoi worktree`. It never prints, reads the environment or decides
//! exit codes — callers pass settings, principals and the time in.

pub mod config;
pub mod db;
mod dirfd;
pub mod doctor;
pub mod error;
pub mod fsutil;
mod git;
pub mod group;
pub mod index;
mod keys;
pub mod lock;
pub mod logs;
pub mod ops;
pub mod packet;
pub mod query;
pub mod server_file;
pub mod testpoint;
pub mod tickets;
pub mod watch;
pub mod workspace;
pub mod worktrees;

pub use error::{ErrorClass, StoreError};
pub use git::latest_accepted;
pub use ops::{Ctx, Outcome};
pub use packet::INTENT_PACKET;
pub use tickets::Ticket;
pub use workspace::{init, InitReport, Workspace};
