//! `yoi db copy --to URL`: move the workspace's database, keeping every token and record.

use yoi_engine::store::server_file;
use yoi_engine::store::workspace::DATABASE_URL_FILE;

use crate::cli::DbCommand;
use crate::context::{attach_for_command, Env};
use crate::error::CliError;
use crate::output;

pub fn run(env: &Env, cmd: DbCommand) -> Result<(), CliError> {
    match cmd {
        DbCommand::Copy { to, json } => copy(env, to.trim(), json),
    }
}

fn copy(env: &Env, to: &str, as_json: bool) -> Result<(), CliError> {
    let mut ws = env.files_only("yoi db copy")?;
    let local = ws.local_dir();
    // A running server writes as it likes; what it wrote after its table was copied would stay
    // behind.
    if let Some(server) = server_file::live(&local) {
        return Err(CliError::Refused(format!(
            "a yoi server (pid {}) is serving this workspace at {}; stop it first, so every write is in the copy",
            server.pid, server.address
        )));
    }
    let from = yoi_engine::db::redact(&ws.database_url());
    let (index, _) = attach_for_command(&mut ws)?;
    // No command writes meanwhile: they wait for the workspace lock.
    let _lock = ws.lock()?;
    let tables = index.copy_to(&ws, to, |t| {
        if !as_json {
            eprintln!(
                "copied {}: {} rows, checksum {}",
                t.table,
                t.rows,
                &t.checksum[..12]
            );
        }
    })?;
    // Verified: only now does this clone use the new database.
    let path = local.join(DATABASE_URL_FILE);
    yoi_engine::db::write_secret_file(&path, to)?;
    let overridden = std::env::var("YOI_DATABASE_URL")
        .ok()
        .filter(|v| !v.trim().is_empty() && v.trim() != to);
    let rows: u64 = tables.iter().map(|t| t.rows).sum();
    if as_json {
        output::json(&serde_json::json!({
            "from": from,
            "to": yoi_engine::db::redact(to),
            "tables": tables,
            "rows": rows,
            "config": format!(".yoi/local/{DATABASE_URL_FILE}"),
        }));
    } else {
        println!(
            "copied {} tables ({rows} rows) from {from} to {}, each verified by its rows and checksum",
            tables.len(),
            yoi_engine::db::redact(to)
        );
        println!(
            "this clone now uses it (.yoi/local/{DATABASE_URL_FILE}); {from} is left as it was"
        );
    }
    if overridden.is_some() {
        eprintln!(
            "warning: YOI_DATABASE_URL is set and comes before .yoi/local/{DATABASE_URL_FILE}; point it at the new database too"
        );
    }
    Ok(())
}
