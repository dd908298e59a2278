//! `yoi workflow …`: the workflows people write in `.yoi/workflow/<slug>.md`. `list` and `show`
//! read the valid ones, `lint` checks the files (or one given file) against each other and the
//! skill catalog and names each problem with its file, line and rule; `run` invokes one on a
//! ticket, as the person's comment `/SLUG ARGS`. `offers`, `offer`, `accept` and `reject` are
//! the offers yoi makes from the history: only `accept`, run by a person, writes a workflow or
//! flow file (docs/workflows.md, "Offers").

use crate::cli::WorkflowCommand;
use crate::context::{now, Env};
use crate::error::CliError;
use crate::output;
use yoi_engine::store::ops::CommentRequest;
use yoi_engine::workflows;
use yoi_engine::workflows::offers;

pub fn run(env: &Env, cmd: WorkflowCommand) -> Result<(), CliError> {
    match cmd {
        WorkflowCommand::List { json } => {
            let ws = env.files_only("yoi workflow list")?;
            let list = workflows::list(&ws);
            if json {
                output::json(&list);
                return Ok(());
            }
            let rows: Vec<Vec<String>> = list
                .workflows
                .iter()
                .map(|w| {
                    vec![
                        format!("/{}", w.slug),
                        w.role.clone(),
                        flags(w.user_invocable, w.auto_invoke),
                        if w.requires.is_empty() {
                            "-".into()
                        } else {
                            w.requires.join(", ")
                        },
                        w.description.clone(),
                    ]
                })
                .collect();
            output::table(
                &["WORKFLOW", "ROLE", "INVOKED BY", "REQUIRES", "DESCRIPTION"],
                &rows,
            );
            for f in &list.skipped {
                println!(
                    "skipped {} ({} error(s); `yoi workflow lint {}`)",
                    f.file,
                    f.error_count(),
                    f.file
                );
            }
        }
        WorkflowCommand::Show { slug, json } => {
            let ws = env.files_only("yoi workflow show")?;
            let w = workflows::lookup(&ws, &slug)?;
            if json {
                output::json(&w);
                return Ok(());
            }
            println!("/{} — {}", w.slug, w.description);
            println!("role: {}", w.role);
            println!("invoked by: {}", flags(w.user_invocable, w.auto_invoke));
            println!(
                "requires: {}",
                if w.requires.is_empty() {
                    "nothing".into()
                } else {
                    w.requires.join(", ")
                }
            );
            println!();
            println!("{}", w.body);
        }
        WorkflowCommand::Lint { file, json } => {
            let ws = env.files_only("yoi workflow lint")?;
            let path = file
                .map(|path| super::flow::given_file(env, path))
                .transpose()?;
            let lint = workflows::lint(&ws, path.as_deref());
            if json {
                output::json(&lint);
            } else {
                for f in &lint.files {
                    if f.diagnostics.is_empty() {
                        println!("ok      {}", f.file);
                    }
                    for d in &f.diagnostics {
                        let level = if d.is_error() { "error  " } else { "warning" };
                        let at = d.line.map(|l| format!(":{l}")).unwrap_or_default();
                        println!("{level} {}{at}: {} [{}]", f.file, d.message, d.rule);
                    }
                }
                println!(
                    "{} workflow file(s), {} error(s)",
                    lint.files.len(),
                    lint.errors
                );
            }
            if lint.errors > 0 {
                return Err(CliError::DoctorFailed);
            }
        }
        WorkflowCommand::Run {
            slug,
            ticket,
            args,
            json,
        } => {
            // The slug is checked here too, so `../x` never becomes a comment.
            if !yoi_engine::skill_format::workflow::is_valid_slug(&slug) {
                return Err(workflows::WorkflowError::BadSlug { slug }.into());
            }
            let target = env.target("yoi workflow run")?;
            let args = args.join(" ");
            let req = CommentRequest {
                kind: "comment".into(),
                body: if args.trim().is_empty() {
                    format!("/{slug}")
                } else {
                    format!("/{slug} {}", args.trim())
                },
            };
            let out = target.comment(&ticket, &req)?;
            output::outcome(&out, json);
        }
        WorkflowCommand::Offers { detect, json } => {
            if detect {
                let (ws, index) = env.workspace_with_index("yoi workflow offers --detect")?;
                let found = offers::detect(&ws, &index, now())?;
                if !json {
                    println!(
                        "{} new offer(s), {} pending",
                        found.offered.len(),
                        found.pending
                    );
                }
            }
            let ws = env.files_only("yoi workflow offers")?;
            let list = offers::list(&ws)?;
            if json {
                output::json(&list);
                return Ok(());
            }
            let rows: Vec<Vec<String>> = list
                .offers
                .iter()
                .map(|o| {
                    vec![
                        o.id.clone(),
                        o.kind.as_str().into(),
                        format!("{:?}", o.status).to_lowercase(),
                        o.target.clone(),
                        o.title.clone(),
                    ]
                })
                .collect();
            output::table(&["ID", "KIND", "STATUS", "FILE", "OFFER"], &rows);
        }
        WorkflowCommand::Offer { id, json } => {
            let ws = env.files_only("yoi workflow offer")?;
            let o = offers::show(&ws, &id)?;
            if json {
                output::json(&o);
                return Ok(());
            }
            println!("{} — {}", o.id, o.title);
            println!(
                "kind: {}   status: {}   file: {}",
                o.kind.as_str(),
                format!("{:?}", o.status).to_lowercase(),
                o.target
            );
            if let Some(d) = &o.decision {
                println!(
                    "decided by {} at {}{}",
                    d.by,
                    d.at,
                    d.reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                );
            }
            println!("\n{}\n\n{}", o.why, o.diff);
        }
        WorkflowCommand::Accept { id, json } => {
            let ws = env.files_only("yoi workflow accept")?;
            let approver = env.human_ctx(&ws)?.principal.author();
            let o = offers::accept(&ws, &id, &approver, now())?;
            if json {
                output::json(&o);
            } else {
                println!("accepted {}: wrote {}", o.id, o.target);
            }
        }
        WorkflowCommand::Reject { id, reason, json } => {
            let ws = env.files_only("yoi workflow reject")?;
            let approver = env.human_ctx(&ws)?.principal.author();
            let o = offers::reject(&ws, &id, &approver, &reason, now())?;
            if json {
                output::json(&o);
            } else {
                println!("rejected {}: {} is not written", o.id, o.target);
            }
        }
    }
    Ok(())
}

/// Who may invoke a workflow, in words.
fn flags(user_invocable: bool, auto_invoke: bool) -> String {
    match (user_invocable, auto_invoke) {
        (true, true) => "people, agents".into(),
        (true, false) => "people".into(),
        (false, true) => "agents".into(),
        (false, false) => "nobody".into(),
    }
}
