//! `yoi reindex [--full]`: catch the database index up with the files.

use yoi_engine::db::{DbIndex, ReindexMode};

use crate::cli::ReindexArgs;
use crate::context::Env;
use crate::error::CliError;
use crate::output;

pub fn run(env: &Env, a: &ReindexArgs) -> Result<(), CliError> {
    let mut ws = env.files_only("yoi reindex")?;
    // Attaching runs the catch-up pass: incremental, or with --full a rebuild of every row.
    let mode = if a.full {
        ReindexMode::Full
    } else {
        ReindexMode::Incremental
    };
    let (_index, stats) = DbIndex::attach_with(&mut ws, crate::context::bridge(), mode)?;
    if a.json {
        output::json(&stats);
    } else {
        println!(
            "{} reindex: {} tickets scanned, {} re-read, {} removed, {} outbox events added",
            if a.full { "full" } else { "incremental" },
            stats.scanned,
            stats.reindexed,
            stats.removed,
            stats.outbox_added
        );
    }
    Ok(())
}
