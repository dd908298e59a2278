//! `yoi assignment list [--ticket ID]`: every attempt of every step, from the database.

use crate::cli::AssignmentCommand;
use crate::context::Env;
use crate::error::CliError;
use crate::output;

pub fn run(env: &Env, cmd: AssignmentCommand) -> Result<(), CliError> {
    let AssignmentCommand::List {
        ticket,
        limit,
        json,
    } = cmd;
    let (ws, index) = env.workspace_with_index("yoi assignment list")?;
    let ticket = ticket.map(|t| ws.resolve(&t)).transpose()?;
    let rows =
        index.list_assignments(ticket.as_ref().map(|t| t.as_str()), limit.clamp(1, 10_000))?;
    if json {
        output::json(&serde_json::json!({ "count": rows.len(), "assignments": rows }));
        return Ok(());
    }
    if rows.is_empty() {
        println!("no assignments");
        return Ok(());
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|a| {
            vec![
                a.id.clone(),
                a.ticket.clone(),
                a.step.clone(),
                a.role.clone(),
                a.attempt.to_string(),
                a.fence.to_string(),
                a.status.as_str().to_string(),
                a.claimed_by.clone().unwrap_or_else(|| "-".into()),
                a.error
                    .clone()
                    .map_or_else(|| "-".into(), |e| output::clip(&e, 60)),
            ]
        })
        .collect();
    output::table(
        &[
            "ASSIGNMENT",
            "TICKET",
            "STEP",
            "ROLE",
            "ATTEMPT",
            "FENCE",
            "STATUS",
            "POD",
            "ERROR",
        ],
        &table,
    );
    Ok(())
}
