//! `relation add | rm | list`.

use serde::Serialize;
use yoi_core::relation::{Relation, RelationKind};
use yoi_engine::store::ops::RelationRequest;
use yoi_engine::store::StoreError;

use crate::cli::RelationCommand;
use crate::context::Env;
use crate::error::CliError;
use crate::output;

fn kind(s: &str) -> Result<RelationKind, CliError> {
    s.parse()
        .map_err(|e: yoi_core::relation::RelationKindError| CliError::Usage(e.to_string()))
}

#[derive(Serialize)]
struct ListOutput<'a> {
    count: usize,
    relations: &'a [Relation],
}

pub fn run(env: &Env, cmd: RelationCommand) -> Result<(), CliError> {
    match cmd {
        RelationCommand::Add {
            id,
            kind: k,
            target,
            note,
            json,
        } => {
            let via = env.target("yoi ticket relation add")?;
            let req = RelationRequest {
                kind: kind(&k)?,
                target,
                note,
            };
            let out = via.add_relation(&id, &req)?;
            output::outcome(&out, json);
        }
        RelationCommand::Rm {
            id,
            kind: k,
            target,
            json,
        } => {
            let via = env.target("yoi ticket relation rm")?;
            let out = via.remove_relation(&id, kind(&k)?, &target)?;
            output::outcome(&out, json);
        }
        RelationCommand::List { id, json } => {
            let ws = env.workspace("yoi ticket relation list")?;
            let relations: Vec<Relation> = match id {
                Some(q) => {
                    let id = ws.resolve(&q)?;
                    ws.read_relations(&id)?.relations
                }
                None => {
                    let mut all = Vec::new();
                    let mut broken = Vec::new();
                    for id in ws.ticket_ids()? {
                        match ws.read_relations(&id) {
                            Ok(file) => all.extend(file.relations),
                            // A damaged relations.json breaks its own ticket only: it is named
                            // on stderr, as `yoi ticket list` names broken tickets.
                            Err(StoreError::Invalid { .. }) => broken.extend(ws.diagnose(&id)),
                            Err(e) => return Err(e.into()),
                        }
                    }
                    super::read::report_broken(&broken);
                    all
                }
            };
            if json {
                output::json(&ListOutput {
                    count: relations.len(),
                    relations: &relations,
                });
            } else if relations.is_empty() {
                println!("no relations");
            } else {
                let rows: Vec<Vec<String>> = relations
                    .iter()
                    .map(|r| {
                        vec![
                            r.ticket_id.to_string(),
                            r.kind.to_string(),
                            r.target.to_string(),
                            r.note
                                .clone()
                                .map(|n| output::clip(&n, 50))
                                .unwrap_or_default(),
                        ]
                    })
                    .collect();
                output::table(&["TICKET", "KIND", "TARGET", "NOTE"], &rows);
            }
        }
    }
    Ok(())
}
