//! `yoi inbox [--json]`: everything that waits on a person, from the same rules as
//! `GET /api/v1/inbox` and the dashboard's `/inbox` (`yoi_engine::inbox`).

use crate::cli::JsonFlag;
use crate::context::Env;
use crate::error::CliError;
use crate::output;
use yoi_engine::inbox;

pub fn run(env: &Env, args: &JsonFlag) -> Result<(), CliError> {
    let (ws, index) = env.workspace_with_index("yoi inbox")?;
    let found = inbox::inbox(&ws, &index)?;
    if args.json {
        output::json(&found);
        return Ok(());
    }
    if found.entries.is_empty() {
        println!("nothing waits on you");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = found
        .entries
        .iter()
        .map(|e| {
            vec![
                e.reason.as_str().to_string(),
                e.ticket.clone().unwrap_or_else(|| "-".into()),
                e.since.clone(),
                output::clip(&e.title, 40),
                e.command.clone(),
            ]
        })
        .collect();
    output::table(&["REASON", "TICKET", "SINCE", "TITLE", "DO"], &rows);
    Ok(())
}
