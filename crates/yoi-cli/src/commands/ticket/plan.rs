//! `plan add | list`.

use serde::Serialize;
use yoi_core::plan::{PlanKind, PlanRecord};
use yoi_engine::store::ops::PlanRequest;

use crate::cli::PlanCommand;
use crate::context::Env;
use crate::error::CliError;
use crate::output;

#[derive(Serialize)]
struct ListOutput<'a> {
    count: usize,
    records: &'a [PlanRecord],
}

pub fn run(env: &Env, cmd: PlanCommand) -> Result<(), CliError> {
    match cmd {
        PlanCommand::Add {
            id,
            kind,
            related,
            note,
            json,
        } => {
            let kind: PlanKind = kind
                .parse()
                .map_err(|e: yoi_core::plan::PlanKindError| CliError::Usage(e.to_string()))?;
            let target = env.target("yoi ticket plan add")?;
            let req = PlanRequest {
                kind,
                related,
                note,
                accepted_plan: None,
            };
            let (out, record) = target.add_plan_record(&id, &req)?;
            if json {
                output::json(&record);
            } else {
                let replay = if out.replayed { " (replayed)" } else { "" };
                println!(
                    "{}: plan record {} {}{replay}",
                    out.ticket, record.id, record.kind
                );
            }
        }
        PlanCommand::List { id, json } => {
            let ws = env.workspace("yoi ticket plan list")?;
            let id = ws.resolve(&id)?;
            let records = ws.read_plan(&id)?;
            if json {
                output::json(&ListOutput {
                    count: records.len(),
                    records: &records,
                });
            } else if records.is_empty() {
                println!("no plan records");
            } else {
                let rows: Vec<Vec<String>> = records
                    .iter()
                    .map(|r| {
                        vec![
                            r.at.to_string(),
                            r.kind.to_string(),
                            r.related_ticket
                                .as_ref()
                                .map(|t| t.to_string())
                                .unwrap_or_default(),
                            r.author.clone(),
                            output::clip(
                                r.note
                                    .as_deref()
                                    .or(r.accepted_plan.as_ref().map(|p| p.summary.as_str()))
                                    .unwrap_or(""),
                                50,
                            ),
                        ]
                    })
                    .collect();
                output::table(&["AT", "KIND", "RELATED", "AUTHOR", "NOTE"], &rows);
            }
        }
    }
    Ok(())
}
