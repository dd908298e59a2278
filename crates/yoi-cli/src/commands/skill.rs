//! `yoi skill …`: the workspace's skill catalog. Activation is recorded in the database before
//! the body is printed; proposals are approved or rejected only by the human running the CLI.

use std::io::Write;

use serde::Serialize;
use yoi_engine::skill_format::{Catalog, CatalogConfig, SkillEntry, SkillSource};
use yoi_engine::skills::{self as glue, SkillError};

use crate::cli::SkillCommand;
use crate::context::{now, Env};
use crate::error::CliError;
use crate::output;

/// One linted folder: a skill, or a folder the catalog skipped because it is not one.
#[derive(Serialize)]
struct LintOutput<'a> {
    name: &'a str,
    location: &'a str,
    valid: bool,
    diagnostics: &'a [yoi_engine::skill_format::Diagnostic],
}

/// Every skill and every skipped folder of `catalog` (only the workspace source when a root
/// was given), sorted by name.
fn lint_rows(catalog: &Catalog, only_workspace: bool) -> Vec<LintOutput<'_>> {
    let wanted = |source: &SkillSource| !only_workspace || *source == SkillSource::Workspace;
    let skills = catalog
        .skills()
        .iter()
        .filter(|s| wanted(&s.source))
        .map(|s| LintOutput {
            name: &s.name,
            location: &s.location,
            valid: s.valid,
            diagnostics: &s.diagnostics,
        });
    let skipped = catalog
        .skipped()
        .iter()
        .filter(|f| wanted(&f.source))
        .map(|f| LintOutput {
            name: &f.name,
            location: &f.location,
            valid: false,
            diagnostics: std::slice::from_ref(&f.diagnostic),
        });
    let mut rows: Vec<LintOutput> = skills.chain(skipped).collect();
    rows.sort_by(|a, b| (a.name, a.location).cmp(&(b.name, b.location)));
    rows
}

pub fn run(env: &Env, cmd: SkillCommand) -> Result<(), CliError> {
    match cmd {
        SkillCommand::List { json } => {
            let ws = env.files_only("yoi skill list")?;
            let catalog = glue::load_catalog(&ws);
            let list = catalog.list();
            if json {
                output::json(&serde_json::json!({
                    "count": list.len(),
                    "skills": list,
                    "problems": catalog.problems(),
                    "skipped": catalog.skipped(),
                }));
            } else {
                let rows: Vec<Vec<String>> = list
                    .iter()
                    .map(|s| {
                        vec![
                            s.name.clone(),
                            glue::source_name(&s.source),
                            if s.valid {
                                "ok".into()
                            } else {
                                format!("{} problem(s)", s.diagnostic_count)
                            },
                            output::clip(s.description.as_deref().unwrap_or(""), 70),
                        ]
                    })
                    .collect();
                output::table(&["NAME", "SOURCE", "STATUS", "DESCRIPTION"], &rows);
                if !catalog.skipped().is_empty() {
                    eprintln!(
                        "skipped {} folder(s) that are not skills; `yoi skill lint` says why",
                        catalog.skipped().len()
                    );
                }
            }
        }
        SkillCommand::Show { name, json } => {
            let ws = env.files_only("yoi skill show")?;
            let catalog = glue::load_catalog(&ws);
            let entry = catalog
                .get(&name)
                .ok_or_else(|| SkillError::Unknown { name: name.clone() })?;
            if json {
                output::json(entry);
            } else {
                print_entry(entry);
            }
        }
        SkillCommand::Lint { root, json } => {
            let catalog = match &root {
                Some(dir) => {
                    let ws_root = env.start.clone();
                    let mut config = CatalogConfig::new(ws_root);
                    config.workspace_root = dir.clone();
                    Catalog::load(&config)
                }
                None => glue::load_catalog(&env.files_only("yoi skill lint")?),
            };
            let rows = lint_rows(&catalog, root.is_some());
            let invalid = rows.iter().filter(|s| !s.valid).count();
            if json {
                output::json(&rows);
            } else {
                for s in &rows {
                    println!(
                        "{} {}",
                        if s.valid { "ok     " } else { "invalid" },
                        s.location
                    );
                    for d in s.diagnostics {
                        let line = d.line.map(|l| format!(":{l}")).unwrap_or_default();
                        println!("    {:?} {}{line}: {}", d.severity, d.rule, d.message);
                    }
                }
                println!("{} folder(s), {} invalid", rows.len(), invalid);
            }
            if invalid > 0 {
                return Err(CliError::DoctorFailed);
            }
        }
        SkillCommand::Activate { name, ticket, json } => {
            let (ws, index) = env.workspace_with_index("yoi skill activate")?;
            let who = env.human_ctx(&ws)?.principal.author();
            let activation =
                glue::activate(&ws, &index, &name, who, ticket.as_deref(), None, now())?;
            if json {
                output::json(&activation);
            } else {
                println!(
                    "{}",
                    yoi_engine::skill_format::render_activation(&activation)
                );
            }
        }
        SkillCommand::Resource { name, path } => {
            let ws = env.files_only("yoi skill resource")?;
            let r = glue::resource(&ws, &name, &path)?;
            std::io::stdout()
                .write_all(&r.bytes)
                .map_err(|e| CliError::Io {
                    path: "standard output".into(),
                    source: e,
                })?;
        }
        SkillCommand::Propose { folder, json } => {
            let ws = env.files_only("yoi skill propose")?;
            let who = env.human_ctx(&ws)?.principal.author();
            let p = glue::propose_folder(&ws, &folder, &who, now())?;
            if json {
                output::json(&p);
            } else {
                println!("{}", p.id);
                eprintln!("proposed {:?} skill `{}` ({} lint error(s)); a human approves it with `yoi skill approve {}`", p.kind, p.name, p.error_count(), p.id);
            }
        }
        SkillCommand::Proposals { json } => {
            let ws = env.files_only("yoi skill proposals")?;
            let list = glue::proposals(&ws)?;
            if json {
                output::json(&serde_json::json!({ "count": list.len(), "proposals": list }));
            } else if list.is_empty() {
                println!("no proposals");
            } else {
                let rows: Vec<Vec<String>> = list
                    .iter()
                    .map(|p| {
                        vec![
                            p.id.clone(),
                            p.name.clone(),
                            format!("{:?}", p.kind).to_lowercase(),
                            format!("{:?}", p.status).to_lowercase(),
                            p.proposer.clone(),
                        ]
                    })
                    .collect();
                output::table(&["ID", "SKILL", "KIND", "STATUS", "PROPOSER"], &rows);
            }
        }
        SkillCommand::Approve { id } => {
            let ws = env.files_only("yoi skill approve")?;
            let approver = env.human_ctx(&ws)?.principal.author();
            let p = glue::approve(&ws, &id, &approver, now())?;
            println!(
                "approved {}: skill `{}` written to .yoi/skills/{}",
                p.id, p.name, p.name
            );
        }
        SkillCommand::Reject { id, reason } => {
            let ws = env.files_only("yoi skill reject")?;
            let approver = env.human_ctx(&ws)?.principal.author();
            let p = glue::reject(&ws, &id, &approver, &reason, now())?;
            println!("rejected {}: skill `{}`", p.id, p.name);
        }
    }
    Ok(())
}

fn print_entry(e: &SkillEntry) {
    println!(
        "{}  ({}, {})",
        e.name,
        glue::source_name(&e.source),
        e.location
    );
    println!("{}", e.description.as_deref().unwrap_or("(no description)"));
    println!("digest: {}", e.digest);
    println!("valid:  {}", e.valid);
    for d in &e.diagnostics {
        println!("  {:?} {}: {}", d.severity, d.rule, d.message);
    }
    for s in &e.shadows {
        println!("shadows {} ({})", s.location, glue::source_name(&s.source));
    }
}
