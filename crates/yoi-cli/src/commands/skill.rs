//! `yoi skill …`: the workspace's skill catalog. Activation is recorded in the database before
//! the body is printed; proposals are approved or rejected only by the human running the CLI.

use std::io::Write;

use serde::Serialize;
use yoi_server::skills::{self as glue, DbRecorder};
use yoi_skills::{ActivationRequest, Catalog, CatalogConfig, HumanApprover, SkillEntry};

use crate::cli::SkillCommand;
use crate::context::{now, Env};
use crate::error::CliError;
use crate::output;

#[derive(Serialize)]
struct LintOutput<'a> {
    name: &'a str,
    location: &'a str,
    valid: bool,
    diagnostics: &'a [yoi_skills::Diagnostic],
}

fn skill_error(e: impl std::fmt::Display) -> CliError {
    CliError::Refused(e.to_string())
}

pub fn run(env: &Env, cmd: SkillCommand) -> Result<(), CliError> {
    match cmd {
        SkillCommand::List { json } => {
            let ws = env.files_only("yoi skill list")?;
            let catalog = glue::load_catalog(&ws);
            let list = catalog.list();
            if json {
                output::json(
                    &serde_json::json!({ "count": list.len(), "skills": list, "problems": catalog.problems() }),
                );
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
            }
        }
        SkillCommand::Show { name, json } => {
            let ws = env.files_only("yoi skill show")?;
            let catalog = glue::load_catalog(&ws);
            let entry = catalog.get(&name).ok_or_else(|| {
                CliError::Refused(format!("no skill named `{name}` in the catalog"))
            })?;
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
            let skills: Vec<&SkillEntry> = catalog
                .skills()
                .iter()
                .filter(|s| root.is_none() || s.source == yoi_skills::SkillSource::Workspace)
                .collect();
            let invalid = skills.iter().filter(|s| !s.valid).count();
            if json {
                let out: Vec<LintOutput> = skills
                    .iter()
                    .map(|s| LintOutput {
                        name: &s.name,
                        location: &s.location,
                        valid: s.valid,
                        diagnostics: &s.diagnostics,
                    })
                    .collect();
                output::json(&out);
            } else {
                for s in &skills {
                    println!(
                        "{} {}",
                        if s.valid { "ok     " } else { "invalid" },
                        s.location
                    );
                    for d in &s.diagnostics {
                        let line = d.line.map(|l| format!(":{l}")).unwrap_or_default();
                        println!("    {:?} {}{line}: {}", d.severity, d.rule, d.message);
                    }
                }
                println!("{} skill(s), {} invalid", skills.len(), invalid);
            }
            if invalid > 0 {
                return Err(CliError::DoctorFailed);
            }
        }
        SkillCommand::Activate { name, ticket, json } => {
            let (ws, index) = env.workspace_with_index("yoi skill activate")?;
            let catalog = glue::load_catalog(&ws);
            let ticket = ticket
                .map(|t| ws.resolve(&t))
                .transpose()?
                .map(|t| t.to_string());
            let who = env.human_ctx(&ws)?.principal.author();
            let mut recorder = DbRecorder {
                index: &index,
                now_ms: now().unix_millis(),
            };
            let activation = yoi_skills::activate(
                &catalog,
                &name,
                ActivationRequest {
                    who,
                    ticket,
                    assignment: None,
                },
                &mut recorder,
            )
            .map_err(skill_error)?;
            if json {
                output::json(&activation);
            } else {
                println!("{}", yoi_skills::render_activation(&activation));
            }
        }
        SkillCommand::Resource { name, path } => {
            let ws = env.files_only("yoi skill resource")?;
            let catalog = glue::load_catalog(&ws);
            let r = yoi_skills::resource(
                &catalog,
                &name,
                &path,
                yoi_skills::DEFAULT_MAX_RESOURCE_BYTES,
            )
            .map_err(skill_error)?;
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
            let p = yoi_skills::propose(
                &glue::proposals_root(&ws),
                &glue::workspace_skills_root(&ws),
                &folder,
                &who,
                &now().to_string(),
            )
            .map_err(skill_error)?;
            if json {
                output::json(&p);
            } else {
                println!("{}", p.id);
                eprintln!("proposed {:?} skill `{}` ({} lint error(s)); a human approves it with `yoi skill approve {}`", p.kind, p.name, p.error_count(), p.id);
            }
        }
        SkillCommand::Proposals { json } => {
            let ws = env.files_only("yoi skill proposals")?;
            let list =
                yoi_skills::proposal::list(&glue::proposals_root(&ws)).map_err(skill_error)?;
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
            let approver = HumanApprover::new(env.human_ctx(&ws)?.principal.author());
            let p = yoi_skills::approve(
                &glue::proposals_root(&ws),
                &id,
                &glue::workspace_skills_root(&ws),
                &approver,
                &now().to_string(),
            )
            .map_err(skill_error)?;
            println!(
                "approved {}: skill `{}` written to .yoi/skills/{}",
                p.id, p.name, p.name
            );
        }
        SkillCommand::Reject { id, reason } => {
            let ws = env.files_only("yoi skill reject")?;
            let approver = HumanApprover::new(env.human_ctx(&ws)?.principal.author());
            let p = yoi_skills::reject(
                &glue::proposals_root(&ws),
                &id,
                &approver,
                &reason,
                &now().to_string(),
            )
            .map_err(skill_error)?;
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
