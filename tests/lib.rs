//! Shared helpers for yoi's end-to-end tests and their helper programs.

pub mod generate;

use std::path::Path;

use yoi_core::{Principal, Timestamp};
use yoi_store::{Ctx, Workspace};

/// A fixed clock for helper programs: the tests assert content, not times.
pub fn ctx(name: &str) -> Ctx {
    Ctx::new(
        Principal::human(name),
        Timestamp::parse("2026-11-29T10:00:00Z").expect("valid timestamp"),
    )
}

/// Open the workspace at `root`, panicking with the reason (helper programs only).
pub fn open(root: &Path) -> Workspace {
    Workspace::open(root).unwrap_or_else(|e| panic!("open workspace {}: {e}", root.display()))
}
