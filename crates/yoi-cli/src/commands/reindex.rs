//! `yoi reindex [--full]`: catch the database index up with the files.

use yoi_engine::store::db::{DbIndex, ReindexMode};

use crate::cli::ReindexArgs;
use crate::context::{runtime, Env};
use crate::error::CliError;
use crate::output;

pub fn run(env: &Env, a: &ReindexArgs) -> Result<(), CliError> {
    let mut ws = env.files_only("yoi reindex")?;
    // Attaching already runs the incremental pass; --full then rebuilds every row.
    let (index, incremental) = DbIndex::attach(&mut ws, runtime().handle().clone())?;
    let stats = if a.full {
        index.reindex(&ws, ReindexMode::Full)?
    } else {
        incremental
    };
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
