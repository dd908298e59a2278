//! `yoi init`: find the git repository, then create `.yoi/` in it.

use crate::context::Env;
use crate::error::CliError;
use crate::output;

pub fn run(env: &Env, as_json: bool) -> Result<(), CliError> {
    let repo = yoi_git::discover(&env.start)?;
    let target = repo.branch.as_deref().unwrap_or("main");
    let report = yoi_store::init(&repo.workdir, target)?;
    if as_json {
        output::json(&report);
        return Ok(());
    }
    if report.created.is_empty() {
        println!("yoi workspace already initialised at {}", report.root);
    } else {
        println!("initialised yoi workspace at {}", report.root);
        for c in &report.created {
            println!("  created {c}");
        }
        for r in &report.ignore_rules_added {
            println!("  ignored {r}");
        }
    }
    Ok(())
}
