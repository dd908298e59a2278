//! `yoi init`: find the git repository, then create `.yoi/` in it.

use crate::context::{now, Env};
use crate::error::CliError;
use crate::output;

pub fn run(env: &Env, as_json: bool) -> Result<(), CliError> {
    let repo = yoi_engine::git::discover(&env.start)?;
    let target = repo.branch.as_deref().unwrap_or("main");
    let report = yoi_engine::store::init(&repo.workdir, target)?;
    // The database and the local human's admin token (for the API and the CLI through it).
    let (ws, index) =
        Env::new(Some(repo.workdir.clone()), None)?.workspace_with_index("yoi init")?;
    let principal = env.human_ctx(&ws)?.principal.name;
    let token_created =
        index.ensure_admin_token(&ws.local_dir(), &principal, now().unix_millis())?;
    ws.secure_local_dir().map_err(|e| {
        CliError::Refused(format!("making {} private: {e}", ws.local_dir().display()))
    })?;
    if as_json {
        output::json(&report);
        return Ok(());
    }
    if report.created.is_empty() && !token_created {
        println!("yoi workspace already initialised at {}", report.root);
    } else {
        println!("initialised yoi workspace at {}", report.root);
        for c in &report.created {
            println!("  created {c}");
        }
        for r in &report.ignore_rules_added {
            println!("  ignored {r}");
        }
        if token_created {
            println!(
                "  wrote the admin token to .yoi/local/{} (mode 0600)",
                yoi_engine::db::ADMIN_TOKEN_FILE
            );
        }
    }
    Ok(())
}
