//! `yoi agent list | check NAME`: the agent profiles a pod can run (built in, and the
//! workspace's `[agents.NAME]`), and whether one is usable here.

use std::collections::BTreeMap;

use crate::cli::AgentCommand;
use crate::context::Env;
use crate::error::CliError;
use crate::output;

fn profiles(env: &Env) -> BTreeMap<String, (String, yoi_agent::profile::AgentProfile)> {
    let ws = env.files_only("yoi agent").ok();
    let mut all: BTreeMap<String, (String, yoi_agent::profile::AgentProfile)> =
        yoi_pod::profiles::builtins()
            .into_iter()
            .map(|(k, v)| (k, ("builtin".to_string(), v)))
            .collect();
    if let Some(ws) = ws {
        for (k, v) in ws.config.agents {
            all.insert(k, ("workspace".to_string(), v));
        }
    }
    all
}

pub fn run(env: &Env, cmd: AgentCommand) -> Result<(), CliError> {
    match cmd {
        AgentCommand::List { json } => {
            let all = profiles(env);
            if json {
                let list: Vec<serde_json::Value> = all
                    .iter()
                    .map(|(name, (source, p))| serde_json::json!({ "name": name, "source": source, "profile": p }))
                    .collect();
                let pauses = env
                    .workspace_with_index("yoi agent list")
                    .ok()
                    .and_then(|(_, index)| index.pauses().ok())
                    .unwrap_or_default();
                output::json(
                    &serde_json::json!({ "count": list.len(), "agents": list, "pauses": pauses }),
                );
                return Ok(());
            }
            let rows: Vec<Vec<String>> = all
                .iter()
                .map(|(name, (source, p))| {
                    vec![
                        name.clone(),
                        source.clone(),
                        if p.program.is_empty() {
                            "(set program)".into()
                        } else {
                            p.program.clone()
                        },
                        p.output.clone(),
                    ]
                })
                .collect();
            output::table(&["AGENT", "SOURCE", "PROGRAM", "OUTPUT"], &rows);
            // Agents that may not start work now, and until when (docs/budgets.md).
            if let Ok((_, index)) = env.workspace_with_index("yoi agent list") {
                let now_ms = crate::context::now().unix_millis();
                for p in index.pauses().unwrap_or_default() {
                    println!("{}", crate::commands::spend::pause_line(&p, now_ms));
                }
            }
            Ok(())
        }
        AgentCommand::Check { name, json } => {
            let all = profiles(env);
            let workspace: BTreeMap<_, _> = all
                .iter()
                .filter(|(_, (s, _))| s == "workspace")
                .map(|(k, (_, p))| (k.clone(), p.clone()))
                .collect();
            let profile =
                yoi_pod::profiles::resolve(&name, &workspace).map_err(CliError::Refused)?;
            let found = which(&profile.program);
            let ws = env.files_if_any("yoi agent check")?;
            let sandbox = crate::commands::pod::sandbox(ws.as_ref())?;
            let enforced = sandbox.enforcement_for(&profile);
            let sandbox_line = match &enforced {
                Ok(e) => format!(
                    "{}; writes the worktree, its run folder, a private temporary folder{}; never reads .yoi/local, other worktrees or {} credential paths",
                    e.describe(),
                    if profile.state.is_empty() {
                        String::new()
                    } else {
                        format!(" and {}", profile.state.join(", "))
                    },
                    yoi_agent::policy::CREDENTIALS.len() + sandbox.section.deny_read.len()
                ),
                Err(e) => format!("refused: {e}"),
            };
            let version = found
                .as_ref()
                .and_then(|_| yoi_pod::profiles::version(&profile));
            let mcp = yoi_pod::profiles::mcp_wiring(&profile);
            if json {
                output::json(
                    &serde_json::json!({ "name": name, "valid": true, "program": found, "version": version, "sandbox": sandbox_line, "sandbox_ok": enforced.is_ok(), "mcp": mcp.is_ok(), "mcp_detail": match &mcp { Ok(m) | Err(m) => m } }),
                );
            } else {
                println!("profile: valid");
                match &found {
                    Some(p) => println!("program: {p}"),
                    None => println!("program: `{}` not found on PATH", profile.program),
                }
                if let Some(v) = &version {
                    println!("version: {v}");
                }
                println!("sandbox: {sandbox_line}");
                match &mcp {
                    Ok(how) => println!("mcp: {how}"),
                    Err(why) => println!("mcp: {why}"),
                }
                // What the endpoint settings become for this CLI: names, never values.
                let pod_env: Vec<(String, String)> = std::env::vars().collect();
                match profile.endpoint_settings(&pod_env) {
                    Ok(yoi_agent::profile::EndpointSettings {
                        args, env, files, ..
                    }) if !args.is_empty() || !env.is_empty() || !files.is_empty() => {
                        let names: Vec<&str> = env
                            .iter()
                            .map(|(k, _)| k.as_str())
                            .chain(
                                files
                                    .iter()
                                    .filter_map(|f| f.env.as_ref().map(|e| e.0.as_str())),
                            )
                            .collect();
                        println!(
                            "endpoint: arguments [{}], environment {}",
                            args.join(" "),
                            names.join(", ")
                        );
                    }
                    Ok(_) => {}
                    Err(e) => println!("endpoint: {e}"),
                }
                let verifier = ws
                    .as_ref()
                    .and_then(|w| w.config.pods.agent.get("verifier").cloned());
                if let Some(v) = verifier.filter(|v| v != yoi_pod::VERIFY_PROFILE) {
                    println!(
                        "note: [pods.agent] verifier = \"{v}\": the verifier runs the brief's validation commands itself; `{v}` is not run in their place"
                    );
                }
            }
            if let Err(e) = enforced {
                return Err(CliError::Refused(e));
            }
            if found.is_none() {
                return Err(CliError::Refused(format!(
                    "`{}` is not installed here",
                    profile.program
                )));
            }
            Ok(())
        }
    }
}

/// The program's path: itself when it names a file, else the first match on PATH.
fn which(program: &str) -> Option<String> {
    if program.contains('/') {
        return std::path::Path::new(program)
            .is_file()
            .then(|| program.to_string());
    }
    std::env::var("PATH")
        .ok()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(program))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}
