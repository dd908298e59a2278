//! The built-in agent profiles, written from the facts in `../shared/reference/agent-clis.md`
//! (print mode, the prompt on stdin or from a file, structured output parsed before the exit
//! code, updaters, telemetry and first-run prompts silenced, `git push` denied, the provider
//! variables each CLI reads passed through), and how a profile becomes an argv.
//!
//! A workspace's `[agents.NAME]` is laid over the built-in of the same name field by field (what
//! it sets wins: [`AgentProfile::over`]), and a name with no built-in is laid over `script`
//! ([`resolve`]). Placeholders fill one argv element each and never split it; an unknown
//! placeholder is an error naming it, never left in the argv (braces around JSON, or around
//! text with a space or a colon, are not placeholders and stay as written).

use std::collections::BTreeMap;

use yoi_agent::profile::{AgentProfile, Endpoint};

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn env(v: &[(&str, &str)]) -> BTreeMap<String, String> {
    v.iter()
        .map(|(k, x)| (k.to_string(), x.to_string()))
        .collect()
}

/// Every built-in profile by name.
pub fn builtins() -> BTreeMap<String, AgentProfile> {
    let mut m = BTreeMap::new();
    m.insert(
        "claude".into(),
        AgentProfile {
            program: "claude".into(),
            argv: s(&[
                "{program}", "-p", "--output-format=json",
                "--permission-mode=bypassPermissions",
                "--disallowedTools=Bash(git push:*),AskUserQuestion",
                "--max-turns=200",
                // yoi's MCP server with the attempt's claim token (docs/mcp.md); Claude Code
                // expands the two variables the pod sets from its own environment.
                r#"--mcp-config={"mcpServers":{"yoi":{"type":"http","url":"${YOI_SERVER}/mcp","headers":{"Authorization":"Bearer ${YOI_TOKEN}"}}}}"#,
            ]),
            reviewer_argv: s(&[
                "{program}", "-p", "--output-format=json", "--permission-mode=dontAsk",
                "--tools=Read,Grep,Glob,Bash",
                "--allowedTools=Read,Grep,Glob,Bash(git diff:*),Bash(git log:*),Bash(git show:*),Bash(git status)",
                "--max-turns=100",
            ]),
            stdin: "prompt_file".into(),
            env_passthrough: s(&[
                "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_*", "CLAUDE_CODE_OAUTH_TOKEN",
                "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "AWS_*", "CLOUDSDK_*",
            ]),
            env: env(&[
                ("DISABLE_AUTOUPDATER", "1"),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
                ("NO_COLOR", "1"),
            ]),
            timeout_secs: 3600,
            output: "claude_json".into(),
            result_file: None,
            model: None,
            model_argv: s(&["--model={model}"]),
            extra_args: Vec::new(),
            version_argv: s(&["{program}", "--version"]),
            endpoint: Some(Endpoint::Anthropic),
            provider: Some("anthropic".into()),
            state: s(&["~/.claude/", "~/.claude.json", "~/.cache/claude/", "~/.config/claude/"]),
            contract: None,
            // The session `-p` just saved in this working directory, one turn, no tools.
            follow_up: s(&[
                "{program}", "-p", "--continue", "--output-format=json",
                "--permission-mode=dontAsk", "--tools=", "--max-turns=1",
            ]),
            follow_up_timeout_secs: 0,
            base_url: None,
            api_key_env: None,
        },
    );
    // Codex's own sandbox cannot run inside yoi's: from 0.171 every filesystem-restricted
    // mode (`workspace-write`, `read-only`) runs each command under its bundled bubblewrap,
    // which fails to write the uid map of its user namespace because yoi's sandbox makes every
    // mount, its own `/proc` included, read-only ("bwrap: setting up uid map: Read-only file
    // system"), and its legacy Landlock mode refuses to run without bubblewrap. So Codex runs
    // with its sandbox off and yoi's sandbox is the boundary (docs/pods.md); a reviewer's
    // worktree is still checked untouched after the run.
    m.insert(
        "codex".into(),
        AgentProfile {
            program: "codex".into(),
            argv: s(&[
                "{program}",
                "exec",
                "--json",
                "--sandbox",
                "danger-full-access",
                "--ephemeral",
                "-C",
                "{worktree}",
                "-o",
                "{run_dir}/last-message.txt",
                "-",
            ]),
            reviewer_argv: s(&[
                "{program}",
                "exec",
                "--json",
                "--sandbox",
                "danger-full-access",
                "--ephemeral",
                "-C",
                "{worktree}",
                "-o",
                "{run_dir}/last-message.txt",
                "-",
            ]),
            stdin: "prompt_file".into(),
            env_passthrough: s(&[
                "CODEX_API_KEY",
                "OPENAI_API_KEY",
                "OPENAI_BASE_URL",
                "CODEX_HOME",
            ]),
            env: env(&[("RUST_LOG", "error"), ("NO_COLOR", "1")]),
            timeout_secs: 3600,
            output: "codex_jsonl".into(),
            result_file: Some("{run_dir}/last-message.txt".into()),
            model: None,
            model_argv: s(&["-m", "{model}"]),
            extra_args: Vec::new(),
            version_argv: s(&["{program}", "--version"]),
            endpoint: Some(Endpoint::Codex),
            provider: Some("openai".into()),
            state: s(&["~/.codex/"]),
            contract: None,
            follow_up: Vec::new(),
            follow_up_timeout_secs: 0,
            base_url: None,
            api_key_env: None,
        },
    );
    m.insert(
        "gemini".into(),
        AgentProfile {
            program: "gemini".into(),
            argv: s(&[
                "{program}", "--approval-mode=yolo", "--skip-trust", "--output-format=json", "-p",
                "Carry out the task given above (from standard input). End with the required YOI- trailer lines.",
            ]),
            reviewer_argv: s(&[
                "{program}", "--approval-mode=plan", "--skip-trust", "--output-format=json", "-p",
                "Review the change described above. End with the required YOI- trailer lines.",
            ]),
            stdin: "prompt_file".into(),
            env_passthrough: s(&[
                "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
                "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_APPLICATION_CREDENTIALS",
            ]),
            env: env(&[("GEMINI_CLI_TRUST_WORKSPACE", "true"), ("NO_COLOR", "1")]),
            timeout_secs: 3600,
            output: "gemini_json".into(),
            result_file: None,
            model: None,
            model_argv: s(&["-m", "{model}"]),
            extra_args: Vec::new(),
            version_argv: s(&["{program}", "--version"]),
            endpoint: Some(Endpoint::Gemini),
            provider: Some("google".into()),
            state: s(&["~/.gemini/"]),
            contract: None,
            follow_up: Vec::new(),
            follow_up_timeout_secs: 0,
            base_url: None,
            api_key_env: None,
        },
    );
    m.insert(
        "aider".into(),
        AgentProfile {
            program: "aider".into(),
            argv: s(&[
                "{program}",
                "--message-file",
                "{prompt_file}",
                "--yes-always",
                "--no-auto-commits",
                "--no-dirty-commits",
                "--no-gitignore",
                "--no-analytics",
                "--analytics-log",
                "{run_dir}/aider-analytics.jsonl",
                "--no-check-update",
                "--no-show-model-warnings",
                "--no-pretty",
                "--no-stream",
                "--no-fancy-input",
                "--chat-history-file",
                "{run_dir}/aider-chat.md",
                "--input-history-file",
                "{run_dir}/aider-input.history",
                "--no-show-release-notes",
                "--no-detect-urls",
            ]),
            reviewer_argv: s(&[
                "{program}",
                "--chat-mode",
                "ask",
                "--dry-run",
                "--message-file",
                "{prompt_file}",
                "--yes-always",
                "--no-auto-commits",
                "--no-dirty-commits",
                "--no-gitignore",
                "--no-analytics",
                "--no-check-update",
                "--no-pretty",
                "--no-stream",
                "--no-fancy-input",
                "--chat-history-file",
                "{run_dir}/aider-chat.md",
            ]),
            stdin: "null".into(),
            env_passthrough: s(&[
                "OPENAI_API_KEY",
                "OPENAI_API_BASE",
                "OPENAI_BASE_URL",
                "ANTHROPIC_API_KEY",
                "GEMINI_API_KEY",
                "OPENROUTER_API_KEY",
                "DEEPSEEK_API_KEY",
                "AIDER_*",
            ]),
            // Unbuffered: what Aider prints (its retries, a rate limit) is in the log as it happens,
            // counts as progress for the stall check, and survives the attempt being killed.
            env: env(&[("NO_COLOR", "1"), ("PYTHONUNBUFFERED", "1")]),
            timeout_secs: 3600,
            output: "text".into(),
            result_file: None,
            model: None,
            model_argv: s(&["--model", "{model}"]),
            extra_args: Vec::new(),
            version_argv: s(&["{program}", "--version"]),
            endpoint: Some(Endpoint::Openai),
            provider: None,
            state: s(&["~/.aider/", "~/.cache/aider/"]),
            contract: None,
            // The chat the run saved in its run folder, answered in ask mode (no edits).
            follow_up: s(&[
                "{program}",
                "--restore-chat-history",
                "--chat-mode",
                "ask",
                "--message-file",
                "{follow_up_file}",
                "--yes-always",
                "--no-auto-commits",
                "--no-dirty-commits",
                "--no-gitignore",
                "--no-analytics",
                "--analytics-log",
                "{run_dir}/aider-analytics.jsonl",
                "--no-check-update",
                "--no-show-model-warnings",
                "--no-pretty",
                "--no-stream",
                "--no-fancy-input",
                "--chat-history-file",
                "{run_dir}/aider-chat.md",
                "--input-history-file",
                "{run_dir}/aider-input.history",
                "--no-show-release-notes",
                "--no-detect-urls",
            ]),
            follow_up_timeout_secs: 0,
            base_url: None,
            api_key_env: None,
        },
    );
    m.insert(
        "opencode".into(),
        AgentProfile {
            program: "opencode".into(),
            argv: s(&[
                "{program}",
                "run",
                "--format",
                "json",
                "--auto",
                "--title",
                "yoi {ticket} {step}",
            ]),
            reviewer_argv: s(&[
                "{program}",
                "run",
                "--format",
                "json",
                "--agent",
                "plan",
                "--title",
                "yoi review {ticket}",
            ]),
            stdin: "prompt_file".into(),
            env_passthrough: s(&[
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
                "OPENROUTER_API_KEY",
                "OPENCODE_*",
            ]),
            env: env(&[
                ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
                (
                    "OPENCODE_CONFIG_CONTENT",
                    // yoi's MCP server with the attempt's token, which OpenCode reads from
                    // the variables the pod sets (docs/mcp.md).
                    r#"{"share":"disabled","autoupdate":false,"mcp":{"yoi":{"type":"remote","url":"{env:YOI_SERVER}/mcp","headers":{"Authorization":"Bearer {env:YOI_TOKEN}"}}}}"#,
                ),
                (
                    "OPENCODE_PERMISSION",
                    r#"{"bash":{"*":"allow","git push*":"deny"},"external_directory":"deny"}"#,
                ),
                ("OPENCODE_DISABLE_PROJECT_CONFIG", "true"),
            ]),
            timeout_secs: 3600,
            output: "opencode_jsonl".into(),
            result_file: None,
            model: None,
            model_argv: s(&["--model", "{model}"]),
            extra_args: Vec::new(),
            version_argv: s(&["{program}", "--version"]),
            state: s(&[
                "~/.local/share/opencode/",
                "~/.local/state/opencode/",
                "~/.cache/opencode/",
                "~/.config/opencode/",
            ]),
            contract: None,
            follow_up: Vec::new(),
            follow_up_timeout_secs: 0,
            base_url: None,
            api_key_env: None,
            endpoint: Some(Endpoint::Opencode),
            provider: None,
        },
    );
    m.insert(
        "goose".into(),
        AgentProfile {
            program: "goose".into(),
            argv: s(&[
                "{program}",
                "run",
                "--no-session",
                "-i",
                "{prompt_file}",
                "--output-format",
                "json",
                "--max-turns",
                "200",
                "--no-profile",
                "--with-builtin",
                "developer",
            ]),
            reviewer_argv: s(&[
                "{program}",
                "run",
                "--no-session",
                "-i",
                "{prompt_file}",
                "--output-format",
                "json",
                "--no-profile",
            ]),
            stdin: "null".into(),
            env_passthrough: s(&[
                "GOOSE_PROVIDER",
                "GOOSE_MODEL",
                "ANTHROPIC_API_KEY",
                "OPENAI_API_KEY",
                "GOOSE_*",
            ]),
            env: env(&[
                ("GOOSE_MODE", "auto"),
                ("GOOSE_DISABLE_KEYRING", "1"),
                ("GOOSE_DISABLE_SESSION_NAMING", "true"),
                ("GOOSE_TELEMETRY_ENABLED", "false"),
            ]),
            timeout_secs: 3600,
            output: "goose_json".into(),
            result_file: None,
            model: None,
            model_argv: s(&["--model", "{model}"]),
            extra_args: Vec::new(),
            version_argv: s(&["{program}", "--version"]),
            state: s(&[
                "~/.config/goose/",
                "~/.local/share/goose/",
                "~/.local/state/goose/",
            ]),
            contract: None,
            follow_up: Vec::new(),
            follow_up_timeout_secs: 0,
            base_url: None,
            api_key_env: None,
            endpoint: None,
            provider: None,
        },
    );
    m.insert(
        "script".into(),
        AgentProfile {
            // Any program: set `program` (and `argv`) in `[agents.script]` or your own profile.
            program: String::new(),
            argv: s(&["{program}"]),
            reviewer_argv: Vec::new(),
            stdin: "prompt_file".into(),
            env_passthrough: Vec::new(),
            env: BTreeMap::new(),
            timeout_secs: 3600,
            output: "text".into(),
            result_file: None,
            model: None,
            model_argv: Vec::new(),
            extra_args: Vec::new(),
            version_argv: Vec::new(),
            state: Vec::new(),
            contract: None,
            follow_up: Vec::new(),
            follow_up_timeout_secs: 0,
            base_url: None,
            api_key_env: None,
            endpoint: None,
            provider: None,
        },
    );
    m.insert(
        "verify".into(),
        AgentProfile {
            // The verifier runs no agent: each validation command is `sh -c COMMAND` in the
            // worktree at the commit under test, with this timeout per command.
            program: "sh".into(),
            argv: s(&["{program}", "-c", "true"]),
            reviewer_argv: Vec::new(),
            stdin: "null".into(),
            env_passthrough: Vec::new(),
            env: BTreeMap::new(),
            timeout_secs: 600,
            output: "text".into(),
            result_file: None,
            model: None,
            model_argv: Vec::new(),
            extra_args: Vec::new(),
            version_argv: s(&[
                "{program}",
                "-c",
                "echo 'built-in verifier: sh -c per validation command'",
            ]),
            state: Vec::new(),
            contract: None,
            follow_up: Vec::new(),
            follow_up_timeout_secs: 0,
            base_url: None,
            api_key_env: None,
            endpoint: None,
            provider: None,
        },
    );
    m
}

/// The profile named `name`: the workspace's `[agents.NAME]` laid over the built-in of that
/// name ([`AgentProfile::over`]), or either alone.
pub fn resolve(
    name: &str,
    workspace: &BTreeMap<String, AgentProfile>,
) -> Result<AgentProfile, String> {
    let profile = match (builtins().remove(name), workspace.get(name)) {
        (Some(b), Some(w)) => Some(b.over(w)),
        (Some(b), None) => Some(b),
        // A profile of its own is laid over `script`: its defaults (stdin, output, timeout).
        (None, Some(w)) => builtins().remove("script").map(|s| s.over(w)),
        (None, None) => None,
    }
    .ok_or_else(|| {
        let mut known: Vec<String> = builtins().into_keys().collect();
        known.extend(workspace.keys().cloned());
        known.sort();
        known.dedup();
        format!("no agent profile `{name}`; known: {}", known.join(", "))
    })?;
    check(name, &profile)?;
    Ok(profile)
}

/// A profile's own rules: a program, an argv that starts with it, a known stdin mode and
/// output kind.
pub fn check(name: &str, p: &AgentProfile) -> Result<(), String> {
    if p.program.trim().is_empty() {
        return Err(format!(
            "agent profile `{name}` names no program; set `program` in [agents.{name}]"
        ));
    }
    if p.argv.is_empty() {
        return Err(format!("agent profile `{name}` has an empty argv"));
    }
    if !matches!(p.stdin.as_str(), "prompt_file" | "null" | "") {
        return Err(format!(
            "agent profile `{name}`: stdin must be `prompt_file` or `null`, not `{}`",
            p.stdin
        ));
    }
    const OUTPUTS: [&str; 7] = [
        "text",
        "claude_json",
        "claude_stream_json",
        "codex_jsonl",
        "gemini_json",
        "opencode_jsonl",
        "goose_json",
    ];
    if !p.output.is_empty() && !OUTPUTS.contains(&p.output.as_str()) {
        return Err(format!(
            "agent profile `{name}`: output `{}` is not one of {}",
            p.output,
            OUTPUTS.join(", ")
        ));
    }
    for a in p
        .argv
        .iter()
        .chain(&p.reviewer_argv)
        .chain(&p.model_argv)
        .chain(&p.extra_args)
        .chain(&p.follow_up)
    {
        fill(a, &Vars::default()).map(|_| ()).or_else(|e| {
            if e.starts_with("unknown") {
                Err(format!("agent profile `{name}`: {e}"))
            } else {
                Ok(())
            }
        })?;
    }
    Ok(())
}

/// The values placeholders take.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    pub program: String,
    pub prompt_file: String,
    pub worktree: String,
    pub run_dir: String,
    pub ticket: String,
    pub step: String,
    pub attempt: String,
    pub assignment: String,
    pub model: Option<String>,
    /// The follow-up turn's question (empty outside a follow-up).
    pub follow_up_file: String,
}

const PLACEHOLDERS: [&str; 10] = [
    "program",
    "prompt_file",
    "worktree",
    "run_dir",
    "ticket",
    "step",
    "attempt",
    "assignment",
    "model",
    "follow_up_file",
];

/// Fill the placeholders of one argv element.
pub fn fill(element: &str, v: &Vars) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = element;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        // `${NAME}` is the agent's own expansion of its environment (Claude Code's
        // `--mcp-config` reads `${YOI_SERVER}` and `${YOI_TOKEN}` so), never a placeholder.
        if out.ends_with('$') {
            out.push('{');
            rest = after;
            continue;
        }
        if !PLACEHOLDERS.contains(&name) {
            // JSON in an argv element (`{"a":1}`) is not a placeholder.
            if name.contains(['"', ':', ' ']) || name.is_empty() {
                out.push('{');
                rest = after;
                continue;
            }
            return Err(format!(
                "unknown placeholder `{{{name}}}` (known: {})",
                PLACEHOLDERS.join(", ")
            ));
        }
        let value = match name {
            "program" => v.program.clone(),
            "prompt_file" => v.prompt_file.clone(),
            "worktree" => v.worktree.clone(),
            "run_dir" => v.run_dir.clone(),
            "ticket" => v.ticket.clone(),
            "step" => v.step.clone(),
            "attempt" => v.attempt.clone(),
            "assignment" => v.assignment.clone(),
            "follow_up_file" => v.follow_up_file.clone(),
            _ => v
                .model
                .clone()
                .ok_or_else(|| "`{model}` is used but the profile sets no model".to_string())?,
        };
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// How a profile's agent is handed yoi's MCP server (docs/mcp.md), for `yoi agent check`:
/// `Ok(how)` when it is, `Err(why not)` when it is not. Each way was checked with the CLI
/// version named, by the real-CLI pod tests (`cargo test -p yoi-cli --test pods the_real`).
pub fn mcp_wiring(p: &AgentProfile) -> Result<String, String> {
    let in_argv = p.argv.iter().any(|a| a.contains("${YOI_SERVER}/mcp"));
    let in_env = p.env.values().any(|v| v.contains("{env:YOI_SERVER}/mcp"));
    match p.endpoint {
        _ if in_argv => Ok("yoi's MCP server in its argv, the token from YOI_TOKEN (checked with Claude Code 2.1.197)".into()),
        _ if in_env => Ok("yoi's MCP server in its configuration variable, the token from YOI_TOKEN (checked with OpenCode 1.18.33)".into()),
        Some(Endpoint::Codex) => Ok("yoi's MCP server by `-c mcp_servers.yoi.*`, the token from YOI_TOKEN (checked with Codex 0.171.0)".into()),
        Some(Endpoint::Gemini) if p.base_url.is_some() => Ok("yoi's MCP server in the settings of the home its base_url gives it, the token from YOI_TOKEN (checked with Gemini CLI 0.61.0)".into()),
        Some(Endpoint::Gemini) => Ok("yoi's MCP server in the settings of a home of the run's own that mirrors ~/.gemini (each entry linked, settings.json with `mcpServers.yoi` added), the token from YOI_TOKEN (checked with Gemini CLI 0.61.0); settings yoi cannot read as plain JSON are left alone and the server is not handed".into()),
        _ => Err("not handed: this agent reaches yoi through its trailer lines and the API's skill and workflow routes (docs/mcp.md)".into()),
    }
}

/// What the profile's CLI says its version is (`version_argv`, its first line, at most 80
/// characters), asked with a 10-second limit; `None` when it has no version command, is not
/// installed or does not answer.
pub fn version(p: &AgentProfile) -> Option<String> {
    use std::process::{Command, Stdio};
    let vars = Vars {
        program: p.program.clone(),
        ..Vars::default()
    };
    let argv: Vec<String> = p
        .version_argv
        .iter()
        .map(|e| fill(e, &vars))
        .collect::<Result<_, _>>()
        .ok()?;
    let (program, args) = argv.split_first()?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    let line = out.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(80).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_but_script_is_complete_and_script_needs_a_program() {
        for (name, p) in builtins() {
            if name == "script" {
                assert!(check(&name, &p).unwrap_err().contains("program"));
            } else {
                check(&name, &p).unwrap();
                assert!(!p.version_argv.is_empty(), "{name}");
                assert!(
                    p.argv.iter().all(|a| !a.contains("push"))
                        || name == "claude"
                        || name == "opencode",
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn placeholders_fill_one_element_and_unknown_ones_are_errors() {
        let v = Vars {
            program: "/bin/agent".into(),
            run_dir: "/tmp/run dir".into(),
            ticket: "T1".into(),
            ..Vars::default()
        };
        assert_eq!(
            fill("{run_dir}/last.txt", &v).unwrap(),
            "/tmp/run dir/last.txt"
        );
        assert_eq!(fill("yoi {ticket} {step}", &v).unwrap(), "yoi T1 ");
        assert_eq!(
            fill(r#"{"share":"disabled"}"#, &v).unwrap(),
            r#"{"share":"disabled"}"#
        );
        assert!(fill("{nope}", &v)
            .unwrap_err()
            .contains("unknown placeholder `{nope}`"));
        assert_eq!(
            fill("url=${YOI_SERVER}/mcp {ticket}", &v).unwrap(),
            "url=${YOI_SERVER}/mcp T1"
        );
        assert!(fill("--model={model}", &v)
            .unwrap_err()
            .contains("no model"));
    }

    #[test]
    fn a_workspace_profile_replaces_the_builtin_of_its_name() {
        let mut ws = BTreeMap::new();
        ws.insert(
            "script".to_string(),
            AgentProfile {
                program: "/usr/bin/true".into(),
                argv: vec!["{program}".into()],
                ..AgentProfile::default()
            },
        );
        assert_eq!(resolve("script", &ws).unwrap().program, "/usr/bin/true");
        // Only what a workspace profile sets replaces the built-in's fields.
        ws.insert(
            "aider".to_string(),
            AgentProfile {
                program: "/opt/aider".into(),
                model: Some("m".into()),
                ..AgentProfile::default()
            },
        );
        let aider = resolve("aider", &ws).unwrap();
        assert_eq!(
            (aider.program.as_str(), aider.model.as_deref()),
            ("/opt/aider", Some("m"))
        );
        assert!(aider.argv.contains(&"--no-auto-commits".to_string()));
        ws.remove("aider");
        assert_eq!(resolve("aider", &ws).unwrap().program, "aider");
        assert!(resolve("nobody", &ws)
            .unwrap_err()
            .contains("known: aider, claude"));
    }
}
