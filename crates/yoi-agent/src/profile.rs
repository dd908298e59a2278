//! Agent profiles: how to run one command-line coding agent headless (docs/pods.md). A profile
//! is data — an argv template, how the prompt is delivered, which environment passes through,
//! how its output is read. yoi ships built-in profiles (`yoi-pod`); `[agents.NAME]` in
//! `.yoi/workspace.toml` is laid over the built-in of the same name field by field
//! ([`AgentProfile::over`]), or adds a profile of its own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How to run one command-line agent (docs/pods.md). Every field has a default, so a
/// workspace profile may set only what it changes: [`AgentProfile::over`] lays it over the
/// built-in of the same name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentProfile {
    /// The program (looked up on PATH unless absolute).
    pub program: String,
    /// The argv of a coder run, element by element; `{placeholders}` are filled in per
    /// element and never split.
    pub argv: Vec<String>,
    /// The argv of a read-only (reviewer) run; the coder argv when empty.
    pub reviewer_argv: Vec<String>,
    /// `prompt_file` (the prompt on stdin) or `null` (`/dev/null`).
    pub stdin: String,
    /// Environment variable names passed through from the pod's environment (`NAME` or a
    /// `PREFIX_*` pattern); nothing else is inherited but PATH, HOME, LANG, LC_ALL, TMPDIR and
    /// USER.
    pub env_passthrough: Vec<String>,
    /// Variables set for every run (updaters, telemetry and prompts silenced).
    pub env: BTreeMap<String, String>,
    /// Wall-clock limit of one run.
    pub timeout_secs: u64,
    /// How stdout is read: `text` (trailers in the output), `claude_json`,
    /// `claude_stream_json`, `codex_jsonl`, `gemini_json`, `opencode_jsonl`, `goose_json`.
    pub output: String,
    /// A file the agent writes its final message to (`{run_dir}/last-message.txt`), read
    /// instead of stdout for the output contract.
    pub result_file: Option<String>,
    /// The model, for `{model}`.
    pub model: Option<String>,
    /// Arguments appended when a model is set (`["--model", "{model}"]`).
    pub model_argv: Vec<String>,
    /// Arguments appended to every run (after the argv and the model arguments).
    pub extra_args: Vec<String>,
    /// How to print the agent's version (`yoi agent check`).
    pub version_argv: Vec<String>,
    /// The agent's own state (`~/.claude/`, `~/.claude.json`, …): the only places outside its
    /// working, run and temporary folders that its sandbox lets it write (docs/security.md). A
    /// path ending in `/` is a folder, made when missing; any other is a file, writable when
    /// it exists.
    pub state: Vec<String>,
    /// What a final message without the output contract means: `strict` fails the attempt,
    /// `lenient` lets a change the agent made complete it as `done`, flagged as missing its
    /// contract (docs/pods.md). Unset: lenient for coders, strict for reviewers.
    pub contract: Option<ContractRule>,
    /// The argv of one short follow-up turn that continues the agent's conversation to ask for
    /// the missing trailer lines (`{follow_up_file}` holds the question, also given on stdin
    /// when `stdin` is `prompt_file`); empty when the agent cannot continue a conversation.
    pub follow_up: Vec<String>,
    /// Wall-clock limit of the follow-up turn; 0 is [`FOLLOW_UP_TIMEOUT_SECS`].
    pub follow_up_timeout_secs: u64,
    /// The model endpoint (`http://127.0.0.1:8080/v1`), translated into what this CLI reads
    /// ([`Endpoint`]); unset, the CLI's own default.
    pub base_url: Option<String>,
    /// The pod's environment variable holding the endpoint's key, handed to the CLI under the
    /// name it reads (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, …).
    pub api_key_env: Option<String>,
    /// How this CLI is pointed at an endpoint (the built-ins set it).
    pub endpoint: Option<Endpoint>,
    /// The account whose limits this profile shares with others (`anthropic`): a rate limit
    /// pauses every profile of the provider, and `[governor] providers` caps them together
    /// (docs/budgets.md). Unset: the profile is its own provider.
    pub provider: Option<String>,
}

/// How a CLI is pointed at a model endpoint: what `base_url`, `model` and `api_key_env`
/// become for it ([`AgentProfile::endpoint_settings`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// Claude Code: `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL`, `ANTHROPIC_API_KEY`.
    Anthropic,
    /// Codex, which ignores `OPENAI_BASE_URL`: `-c` overrides for a provider of yoi's own
    /// (`model_providers.yoi` with the `base_url`, `wire_api = "responses"` and the key's
    /// variable) chosen with `model_provider = "yoi"`.
    Codex,
    /// Aider and other OpenAI-compatible clients: `OPENAI_API_BASE`, `OPENAI_BASE_URL`,
    /// `OPENAI_API_KEY`.
    Openai,
    /// Gemini CLI: `GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY`. With a `base_url`, also a home
    /// of its own in the run folder (`GEMINI_CLI_HOME`) whose settings choose the API-key
    /// login: from 0.61 a `GOOGLE_GEMINI_BASE_URL` alone selects a "gateway" login that
    /// headless runs refuse ("Invalid auth method selected.", exit 41).
    Gemini,
    /// OpenCode: a provider `yoi` (`@ai-sdk/openai-compatible`, which OpenCode bundles) with
    /// the `base_url`, the key's variable and the model, in a config file of the run folder
    /// (`OPENCODE_CONFIG`); `{model}` becomes `yoi/MODEL`.
    Opencode,
}

impl AgentProfile {
    /// What `base_url`, `model` and `api_key_env` add to a run: arguments after the argv, and
    /// variables (the key's value read from `pod_env`). Errors name what is missing.
    pub fn endpoint_settings(
        &self,
        pod_env: &[(String, String)],
    ) -> Result<EndpointSettings, String> {
        let mut out = EndpointSettings::default();
        let key = match &self.api_key_env {
            None => None,
            Some(name) => Some(
                pod_env
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| {
                        format!(
                            "api_key_env names `{name}`, which the pod's environment does not set"
                        )
                    })?,
            ),
        };
        if self.base_url.is_none() && key.is_none() {
            return Ok(out);
        }
        let Some(style) = self.endpoint else {
            return Err(
                "base_url and api_key_env need `endpoint` (anthropic, codex, openai, gemini or opencode) for a profile of your own"
                    .into(),
            );
        };
        let (args, env) = (&mut out.args, &mut out.env);
        let mut set = |k: &str, v: &str| env.push((k.to_string(), v.to_string()));
        match style {
            Endpoint::Anthropic => {
                if let Some(u) = &self.base_url {
                    set("ANTHROPIC_BASE_URL", u);
                }
                if let Some(m) = &self.model {
                    set("ANTHROPIC_MODEL", m);
                }
                if let Some(k) = &key {
                    set("ANTHROPIC_API_KEY", k);
                }
            }
            Endpoint::Openai => {
                if let Some(u) = &self.base_url {
                    set("OPENAI_API_BASE", u);
                    set("OPENAI_BASE_URL", u);
                }
                if let Some(k) = &key {
                    set("OPENAI_API_KEY", k);
                }
            }
            Endpoint::Gemini => {
                if let Some(u) = &self.base_url {
                    set("GOOGLE_GEMINI_BASE_URL", u);
                }
                if let Some(k) = &key {
                    set("GEMINI_API_KEY", k);
                }
                if self.base_url.is_some() {
                    out.files.push(RunFile {
                        path: "gemini-home/.gemini/settings.json".into(),
                        // yoi's MCP server too: Gemini CLI expands `${YOI_*}` in its
                        // settings from the variables the pod sets (docs/mcp.md).
                        contents: r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}, "mcpServers": {"yoi": {"httpUrl": "${YOI_SERVER}/mcp", "headers": {"Authorization": "Bearer ${YOI_TOKEN}"}}}}"#
                            .into(),
                        env: Some(("GEMINI_CLI_HOME".into(), "gemini-home".into())),
                    });
                }
            }
            Endpoint::Opencode => {
                let key_var = "YOI_OPENCODE_API_KEY";
                let Some(u) = &self.base_url else {
                    return Err("api_key_env without base_url: OpenCode reads each provider's own key variable (ANTHROPIC_API_KEY, OPENAI_API_KEY, …); pass it with env_passthrough".into());
                };
                let Some(model) = &self.model else {
                    return Err("base_url needs `model` for OpenCode: its provider lists the models it serves".into());
                };
                let mut options = format!("\"baseURL\": {}", quoted(u));
                if let Some(k) = &key {
                    set(key_var, k);
                    options.push_str(&format!(", \"apiKey\": \"{{env:{key_var}}}\""));
                }
                out.files.push(RunFile {
                    path: "opencode.json".into(),
                    contents: format!(
                        "{{\"provider\": {{\"yoi\": {{\"npm\": \"@ai-sdk/openai-compatible\", \"name\": \"yoi\", \"options\": {{{options}}}, \"models\": {{{m}: {{\"name\": {m}}}}}}}}}}}\n",
                        m = quoted(model)
                    ),
                    env: Some(("OPENCODE_CONFIG".into(), "opencode.json".into())),
                });
                out.model = Some(format!("yoi/{model}"));
            }
            Endpoint::Codex => {
                let key_var = "YOI_CODEX_API_KEY";
                if let Some(k) = &key {
                    set(key_var, k);
                }
                if let Some(u) = &self.base_url {
                    for c in [
                        "model_provider=\"yoi\"".to_string(),
                        "model_providers.yoi.name=\"yoi\"".to_string(),
                        format!("model_providers.yoi.base_url={}", quoted(u)),
                        "model_providers.yoi.wire_api=\"responses\"".to_string(),
                        format!(
                            "model_providers.yoi.env_key=\"{}\"",
                            if key.is_some() {
                                key_var
                            } else {
                                "OPENAI_API_KEY"
                            }
                        ),
                    ] {
                        args.push("-c".to_string());
                        args.push(c);
                    }
                } else if key.is_some() {
                    set("OPENAI_API_KEY", key.as_deref().unwrap_or_default());
                    set("CODEX_API_KEY", key.as_deref().unwrap_or_default());
                }
            }
        }
        Ok(out)
    }
}

/// What a profile's endpoint adds to a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointSettings {
    /// Arguments after the argv (as written: not placeholders).
    pub args: Vec<String>,
    /// Variables set for the run.
    pub env: Vec<(String, String)>,
    /// Files written into the run folder before the run (the CLI's own configuration).
    pub files: Vec<RunFile>,
    /// What `{model}` stands for in this CLI's arguments, when not the profile's `model`.
    pub model: Option<String>,
}

/// A file of the run folder that an endpoint needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFile {
    /// Relative to the run folder.
    pub path: String,
    pub contents: String,
    /// A variable naming it: (name, a path relative to the run folder) — the file itself or
    /// a folder above it.
    pub env: Option<(String, String)>,
}

/// `s` as a TOML basic string, which is also a JSON string.
impl AgentProfile {
    /// What hands yoi's MCP server (`SERVER/mcp`, docs/mcp.md) to this CLI, with the attempt's
    /// token read from `YOI_TOKEN` by the CLI itself, so the token is never in an argv or a
    /// file. Claude Code's is in its built-in argv (`--mcp-config`, which expands `${YOI_*}`)
    /// and OpenCode's in its built-in `OPENCODE_CONFIG_CONTENT` (`{env:YOI_*}`); Codex gets
    /// `-c mcp_servers.yoi.*` overrides here. Gemini CLI reads MCP servers only from user and
    /// workspace settings (its system files must be root's), so it gets yoi's in the home of
    /// its own that a `base_url` gives it ([`AgentProfile::endpoint_settings`]), or without one
    /// in a home the pod makes in the run folder from the person's `~/.gemini`. Aider speaks
    /// no MCP, and a profile of one's own adds its own.
    pub fn mcp_settings(&self, server: &str) -> EndpointSettings {
        let mut out = EndpointSettings::default();
        if self.endpoint == Some(Endpoint::Codex) {
            let url = format!("{}/mcp", server.trim_end_matches('/'));
            for c in [
                format!("mcp_servers.yoi.url={}", quoted(&url)),
                "mcp_servers.yoi.bearer_token_env_var=\"YOI_TOKEN\"".to_string(),
            ] {
                out.args.push("-c".to_string());
                out.args.push(c);
            }
        }
        out
    }
}

fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The follow-up turn's wall-clock limit when the profile sets none.
pub const FOLLOW_UP_TIMEOUT_SECS: u64 = 300;

/// What a missing output contract means for an attempt (docs/pods.md, "A missing contract").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContractRule {
    /// No contract, no result: the attempt fails with the reason.
    Strict,
    /// Exit status 0 and a change in the worktree complete the attempt as `done`; no change
    /// still fails it.
    Lenient,
}

impl ContractRule {
    /// The rule a run by `role` follows: the profile's, else lenient for coders and strict for
    /// every other role (a reviewer's verdict must be explicit).
    pub fn for_role(profile: Option<ContractRule>, role: &str) -> ContractRule {
        profile.unwrap_or(if yoi_core::Role::Coder.is(role) {
            ContractRule::Lenient
        } else {
            ContractRule::Strict
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ContractRule::Strict => "strict",
            ContractRule::Lenient => "lenient",
        }
    }
}

impl AgentProfile {
    /// `self` with every field `top` sets (a non-empty string or list, `Some`, a non-zero
    /// timeout) taken from `top`; maps are merged, `top` winning.
    pub fn over(mut self, top: &AgentProfile) -> AgentProfile {
        fn pick<T: Clone>(base: &mut T, top: &T, set: bool) {
            if set {
                *base = top.clone();
            }
        }
        pick(&mut self.program, &top.program, !top.program.is_empty());
        pick(&mut self.argv, &top.argv, !top.argv.is_empty());
        pick(
            &mut self.reviewer_argv,
            &top.reviewer_argv,
            !top.reviewer_argv.is_empty(),
        );
        pick(&mut self.stdin, &top.stdin, !top.stdin.is_empty());
        pick(
            &mut self.env_passthrough,
            &top.env_passthrough,
            !top.env_passthrough.is_empty(),
        );
        self.env
            .extend(top.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        pick(
            &mut self.timeout_secs,
            &top.timeout_secs,
            top.timeout_secs != 0,
        );
        pick(&mut self.output, &top.output, !top.output.is_empty());
        pick(
            &mut self.result_file,
            &top.result_file,
            top.result_file.is_some(),
        );
        pick(&mut self.model, &top.model, top.model.is_some());
        pick(
            &mut self.model_argv,
            &top.model_argv,
            !top.model_argv.is_empty(),
        );
        pick(
            &mut self.extra_args,
            &top.extra_args,
            !top.extra_args.is_empty(),
        );
        pick(
            &mut self.version_argv,
            &top.version_argv,
            !top.version_argv.is_empty(),
        );
        pick(&mut self.state, &top.state, !top.state.is_empty());
        pick(&mut self.contract, &top.contract, top.contract.is_some());
        pick(
            &mut self.follow_up,
            &top.follow_up,
            !top.follow_up.is_empty(),
        );
        pick(
            &mut self.follow_up_timeout_secs,
            &top.follow_up_timeout_secs,
            top.follow_up_timeout_secs != 0,
        );
        pick(&mut self.base_url, &top.base_url, top.base_url.is_some());
        pick(
            &mut self.api_key_env,
            &top.api_key_env,
            top.api_key_env.is_some(),
        );
        pick(&mut self.endpoint, &top.endpoint, top.endpoint.is_some());
        pick(&mut self.provider, &top.provider, top.provider.is_some());
        self
    }
}

/// The price of a model in USD per million tokens (`[prices."MODEL"]`), to estimate the cost of
/// attempts whose agent reported tokens but no cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cached: f64,
}

impl Eq for Price {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_rule_defaults_by_role_and_a_workspace_profile_overrides_it() {
        assert_eq!(ContractRule::for_role(None, "coder"), ContractRule::Lenient);
        assert_eq!(
            ContractRule::for_role(None, "reviewer"),
            ContractRule::Strict
        );
        assert_eq!(
            ContractRule::for_role(Some(ContractRule::Strict), "coder"),
            ContractRule::Strict
        );
        let base = AgentProfile {
            follow_up: vec!["{program}".into(), "--continue".into()],
            ..AgentProfile::default()
        };
        let top: AgentProfile =
            serde_json::from_str(r#"{"contract": "strict", "follow_up_timeout_secs": 30}"#)
                .unwrap();
        let merged = base.clone().over(&top);
        assert_eq!(merged.contract, Some(ContractRule::Strict));
        assert_eq!(
            merged.follow_up, base.follow_up,
            "unset fields keep the built-in's"
        );
        assert_eq!(merged.follow_up_timeout_secs, 30);
        assert!(serde_json::from_str::<AgentProfile>(r#"{"contract": "loose"}"#).is_err());
    }
}

#[cfg(test)]
mod endpoint_tests {
    use super::*;

    fn profile(endpoint: Endpoint) -> AgentProfile {
        AgentProfile {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key_env: Some("MY_KEY".into()),
            model: Some("m-1".into()),
            endpoint: Some(endpoint),
            ..AgentProfile::default()
        }
    }

    fn env() -> Vec<(String, String)> {
        vec![("MY_KEY".into(), "k-123".into())]
    }

    fn names(env: &[(String, String)]) -> Vec<&str> {
        env.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn each_cli_gets_the_endpoint_in_what_it_reads() {
        let EndpointSettings { args, env: e, .. } = profile(Endpoint::Anthropic)
            .endpoint_settings(&env())
            .unwrap();
        assert!(args.is_empty());
        assert_eq!(
            names(&e),
            ["ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "ANTHROPIC_API_KEY"]
        );
        let e = profile(Endpoint::Openai)
            .endpoint_settings(&env())
            .unwrap()
            .env;
        assert_eq!(
            names(&e),
            ["OPENAI_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_KEY"]
        );
        assert_eq!(e[2].1, "k-123");
        let e = profile(Endpoint::Gemini)
            .endpoint_settings(&env())
            .unwrap()
            .env;
        assert_eq!(names(&e), ["GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY"]);
        // Gemini CLI 0.61 refuses the "gateway" login a base URL alone selects: a home of
        // its own in the run folder chooses the API-key login.
        let files = profile(Endpoint::Gemini)
            .endpoint_settings(&env())
            .unwrap()
            .files;
        assert_eq!(files[0].path, "gemini-home/.gemini/settings.json");
        assert!(files[0].contents.contains("\"gemini-api-key\""));
        // The same home hands it yoi's MCP server, which Gemini CLI reads from user settings
        // only; the token stays in the variable it expands.
        let settings: serde_json::Value = serde_json::from_str(&files[0].contents).unwrap();
        assert_eq!(
            settings["mcpServers"]["yoi"],
            serde_json::json!({
                "httpUrl": "${YOI_SERVER}/mcp",
                "headers": {"Authorization": "Bearer ${YOI_TOKEN}"}
            })
        );
        assert_eq!(
            files[0].env,
            Some(("GEMINI_CLI_HOME".to_string(), "gemini-home".to_string()))
        );
        // OpenCode: a provider of yoi's own in a config file, the model under it.
        let s = profile(Endpoint::Opencode)
            .endpoint_settings(&env())
            .unwrap();
        assert_eq!(
            s.env,
            [("YOI_OPENCODE_API_KEY".to_string(), "k-123".to_string())]
        );
        assert_eq!(s.model.as_deref(), Some("yoi/m-1"));
        let config: serde_json::Value = serde_json::from_str(&s.files[0].contents).unwrap();
        assert_eq!(
            config["provider"]["yoi"]["options"],
            serde_json::json!({"baseURL": "http://127.0.0.1:9/v1", "apiKey": "{env:YOI_OPENCODE_API_KEY}"})
        );
        assert_eq!(config["provider"]["yoi"]["models"]["m-1"]["name"], "m-1");
        assert_eq!(
            s.files[0].env,
            Some(("OPENCODE_CONFIG".to_string(), "opencode.json".to_string()))
        );
        let mut no_model = profile(Endpoint::Opencode);
        no_model.model = None;
        assert!(no_model
            .endpoint_settings(&env())
            .unwrap_err()
            .contains("model"));
        // Codex ignores OPENAI_BASE_URL: a provider of yoi's own, by `-c` overrides.
        let EndpointSettings { args, env: e, .. } =
            profile(Endpoint::Codex).endpoint_settings(&env()).unwrap();
        assert_eq!(
            args,
            [
                "-c",
                "model_provider=\"yoi\"",
                "-c",
                "model_providers.yoi.name=\"yoi\"",
                "-c",
                "model_providers.yoi.base_url=\"http://127.0.0.1:9/v1\"",
                "-c",
                "model_providers.yoi.wire_api=\"responses\"",
                "-c",
                "model_providers.yoi.env_key=\"YOI_CODEX_API_KEY\"",
            ]
        );
        assert_eq!(e, [("YOI_CODEX_API_KEY".to_string(), "k-123".to_string())]);
    }

    #[test]
    fn a_missing_key_variable_or_style_is_named() {
        let err = profile(Endpoint::Openai)
            .endpoint_settings(&[])
            .unwrap_err();
        assert!(err.contains("MY_KEY"), "{err}");
        let mut own = profile(Endpoint::Openai);
        own.endpoint = None;
        assert!(own
            .endpoint_settings(&env())
            .unwrap_err()
            .contains("endpoint"));
        let none = AgentProfile::default().endpoint_settings(&env()).unwrap();
        assert_eq!(none, EndpointSettings::default());
    }
    #[test]
    fn codex_is_handed_yois_mcp_server_with_the_token_left_in_its_variable() {
        let s = profile(Endpoint::Codex).mcp_settings("http://127.0.0.1:7070/");
        assert_eq!(
            s.args,
            [
                "-c",
                "mcp_servers.yoi.url=\"http://127.0.0.1:7070/mcp\"",
                "-c",
                "mcp_servers.yoi.bearer_token_env_var=\"YOI_TOKEN\"",
            ]
        );
        assert!(s.env.is_empty() && s.files.is_empty());
        // The others take it from their argv or settings, Aider not at all.
        for e in [
            Endpoint::Anthropic,
            Endpoint::Gemini,
            Endpoint::Openai,
            Endpoint::Opencode,
        ] {
            assert_eq!(
                profile(e).mcp_settings("http://127.0.0.1:7070"),
                EndpointSettings::default(),
                "{e:?}"
            );
        }
    }
}
