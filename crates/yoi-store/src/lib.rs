//! The file store of a yoi workspace.
//!
//! Owns everything under `.yoi/`: finding and initialising a workspace, the workspace lock,
//! atomic writes and synced appends, reading ticket records, the ticket operations (one
//! function per mutation, with every guard), read queries over the files, and the ticket
//! worktrees people list and tidy with `yoi worktree`. It never prints, reads the environment
//! or decides exit codes — callers pass settings, principals and the time in.
//!
//! The files are the truth, and this crate is only files: it has no database and no async
//! runtime in its dependency tree (`scripts/check-boundaries` checks it). A database index
//! attaches through [`index_hook::IndexHook`] (the `yoi-db` crate implements it); the doctor
//! lives in `yoi-doctor`.

pub mod beneath;
pub mod config;
pub mod dirfd;
pub mod error;
pub mod fsutil;
pub mod git;
pub mod group;
pub mod index_hook;
mod keys;
pub mod lock;
pub mod logs;
pub mod notify_config;
pub mod ops;
pub mod packet;
pub mod query;
pub mod server_file;
pub mod testpoint;
pub mod tickets;
pub mod workspace;
pub mod worktrees;
pub mod writes;

pub use error::{DbSetup, ErrorClass, StoreError};
pub use git::latest_accepted;
pub use ops::{Ctx, Outcome};
pub use packet::INTENT_PACKET;
pub use tickets::Ticket;
pub use workspace::{init, InitReport, Workspace};
