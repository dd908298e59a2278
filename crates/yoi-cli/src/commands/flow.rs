//! `yoi flow …`: the flows tickets may run. `list` and `show` read the built-in flow and the
//! valid `.yoi/flows/*.flow.yaml`; `lint` checks the flow files (or one given file) and names
//! each problem with its file and line. Nothing here writes: flow files are people's.

use crate::cli::FlowCommand;
use crate::context::Env;
use crate::error::CliError;
use crate::output;
use yoi_engine::flows;

pub fn run(env: &Env, cmd: FlowCommand) -> Result<(), CliError> {
    match cmd {
        FlowCommand::List { json } => {
            let ws = env.files_only("yoi flow list")?;
            let (listed, skipped) = flows::catalog(&ws);
            if json {
                output::json(&serde_json::json!({
                    "count": listed.len(),
                    "flows": listed,
                    "skipped": skipped,
                }));
                return Ok(());
            }
            let rows: Vec<Vec<String>> = listed
                .iter()
                .map(|l| {
                    vec![
                        format!("{}{}", l.flow.name, if l.default { " *" } else { "" }),
                        l.flow
                            .steps
                            .iter()
                            .map(|s| s.id.as_str())
                            .collect::<Vec<_>>()
                            .join(" → "),
                        l.flow.max_rounds.to_string(),
                        l.source.clone(),
                    ]
                })
                .collect();
            output::table(&["NAME", "STEPS", "ROUNDS", "SOURCE"], &rows);
            println!("* the default flow ([flow] default)");
            for f in &skipped {
                println!(
                    "skipped {} ({} problem(s); `yoi flow lint {}`)",
                    f.file,
                    f.problems.len(),
                    f.file
                );
            }
        }
        FlowCommand::Show { name, json } => {
            let ws = env.files_only("yoi flow show")?;
            let l = flows::lookup(&ws, &name).map_err(|e| match e {
                flows::NotUsable::Invalid(problems) => {
                    CliError::Refused(format!("flow `{name}` is skipped: {}", problems.join("; ")))
                }
                flows::NotUsable::Unknown => CliError::Refused(format!(
                    "no flow is called `{name}` (`yoi flow list` shows the flows)"
                )),
            })?;
            if json {
                output::json(&l);
                return Ok(());
            }
            let f = &l.flow;
            println!("{} — {}", f.name, f.title);
            println!(
                "source: {}{}",
                l.source,
                if l.default { " (default)" } else { "" }
            );
            println!("max rounds: {}", f.max_rounds);
            for (i, s) in f.steps.iter().enumerate() {
                let timeout = s
                    .timeout_secs
                    .map(|t| format!(", timeout {t}s"))
                    .unwrap_or_default();
                let policy = match s.on_failure {
                    yoi_core::flow::OnFailure::Retry(n) => format!("retry {n}"),
                    yoi_core::flow::OnFailure::Escalate => "escalate".into(),
                    yoi_core::flow::OnFailure::ReturnToPlanning => "return to planning".into(),
                };
                println!(
                    "{}. {} ({}) → {}{timeout}; on failure: {policy}",
                    i + 1,
                    s.id,
                    s.role,
                    s.output.as_str()
                );
                if let Some(p) = &s.prompt {
                    for line in p.lines() {
                        println!("     | {line}");
                    }
                }
            }
        }
        FlowCommand::Lint { file, json } => {
            let ws = env.files_only("yoi flow lint")?;
            let files = match file {
                Some(path) => {
                    let path = given_file(env, path)?;
                    // A file of the flows folder is checked with the others (triggers).
                    let one = flows::lint_file(&ws, &path);
                    flows::scan(&ws)
                        .into_iter()
                        .find(|f| f.file == one.file)
                        .map_or(vec![one], |f| vec![f])
                }
                None => flows::scan(&ws),
            };
            let errors: usize = files.iter().map(|f| f.problems.len()).sum();
            if json {
                output::json(&serde_json::json!({ "files": files, "errors": errors }));
            } else {
                for f in &files {
                    if f.problems.is_empty() && f.warnings.is_empty() {
                        println!("ok      {}", f.file);
                    }
                    for p in &f.problems {
                        println!("error   {}:{}: {}", f.file, p.line, p.message);
                    }
                    for p in &f.warnings {
                        println!("warning {}:{}: {}", f.file, p.line, p.message);
                    }
                }
                println!("{} flow file(s), {errors} error(s)", files.len());
            }
            if errors > 0 {
                return Err(CliError::DoctorFailed);
            }
        }
    }
    Ok(())
}

/// A file named on the command line, relative to where `yoi` was started; a usage error
/// unless it is a file.
pub(crate) fn given_file(
    env: &Env,
    path: std::path::PathBuf,
) -> Result<std::path::PathBuf, CliError> {
    let path = if path.is_absolute() {
        path
    } else {
        env.start.join(path)
    };
    if !path.is_file() {
        return Err(CliError::Usage(format!("{} is not a file", path.display())));
    }
    Ok(path)
}
