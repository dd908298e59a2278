//! Flow files: `.yoi/flows/<name>.flow.yaml`, written by people (yoi never writes one). A flow
//! names the steps an in-progress ticket walks through, each run by a role, and what each must
//! return (docs/flows.md). [`parse`] checks a file completely and answers every problem with
//! its line; [`builtin`] is the flow every ticket follows unless it or the workspace names
//! another.
//!
//! ```yaml
//! schema_version: 1
//! name: coder-review
//! title: Implement, verify, review, merge
//! max_rounds: 3
//! steps:
//!   - id: implement
//!     role: coder
//!     output: commit
//!     timeout: 30m
//!     on_failure: { retry: 2 }
//!   - id: verify
//!     role: verifier
//!     output: checks
//!   - id: review
//!     role: reviewer
//!     output: verdict
//!     on_failure: escalate
//!   - id: merge
//!     role: service
//!     output: merge
//! ```

use serde::{Deserialize, Serialize};

use crate::role::{Role, ServiceStep};

mod assembly;
mod trigger;

pub use assembly::{Assembly, AssemblyHeader};

pub use trigger::{words, TicketFacts, Trigger};

/// The flow file name suffix.
pub const FLOW_SUFFIX: &str = ".flow.yaml";
/// The flow every ticket follows unless told otherwise.
pub const BUILTIN: &str = "coder-review";
/// The one schema version this yoi reads.
pub const SCHEMA_VERSION: u32 = 1;
/// The built-in flow's first step, whose attempts work in `.attempt-N` folders.
pub const IMPLEMENT: &str = "implement";
/// The role of the step the service runs itself.
pub const SERVICE: &str = Role::Service.as_str();

/// What a step must return, which also says who can run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Output {
    /// A commit on the ticket branch (a coder's agent).
    Commit,
    /// Each validation command's exit status, duration and log (the verifier, no agent).
    Checks,
    /// `YOI-VERDICT: approve|request_changes` and findings, read-only (a reviewer's agent).
    Verdict,
    /// The target moved and the `merge` event (the service itself).
    Merge,
    /// The branch pushed to the forge and merged through a pull request once its gate opened
    /// for the exact head (the service itself, docs/forge.md).
    #[serde(rename = "pr")]
    PullRequest,
}

impl Output {
    pub fn as_str(self) -> &'static str {
        match self {
            Output::Commit => "commit",
            Output::Checks => "checks",
            Output::Verdict => "verdict",
            Output::Merge => "merge",
            Output::PullRequest => "pr",
        }
    }

    /// The role whose runtime returns this output.
    pub fn role(self) -> Role {
        match self {
            Output::Commit => Role::Coder,
            Output::Checks => Role::Verifier,
            Output::Verdict => Role::Reviewer,
            Output::Merge | Output::PullRequest => Role::Service,
        }
    }

    /// Whether this output ends a flow (a local merge or a pull request).
    pub fn ends(self) -> bool {
        matches!(self, Output::Merge | Output::PullRequest)
    }
}

/// What happens when an attempt of a step fails or its lease runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Hand the step out again, up to this many more times in a row; then a person decides.
    Retry(u32),
    /// Stop at the first failure and tell a person (an `attention` event).
    Escalate,
    /// Send the ticket back to planning with the reason.
    ReturnToPlanning,
}

impl OnFailure {
    /// Failed attempts in a row after which the step stops being handed out.
    pub fn stop_after(self) -> usize {
        match self {
            OnFailure::Retry(n) => n as usize + 1,
            OnFailure::Escalate | OnFailure::ReturnToPlanning => 1,
        }
    }
}

/// The default: two more tries, then a person (the step circuit of docs/pods.md).
pub const DEFAULT_ON_FAILURE: OnFailure = OnFailure::Retry(2);

/// One step of a flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Step {
    pub id: String,
    /// Who runs it; always its output's role ([`Output::role`]), which [`parse`] checks.
    pub role: Role,
    /// Extra instructions for the agent, with `{ticket}`, `{title}`, `{step}`, `{commit}` and
    /// `{branch}` filled in.
    pub prompt: Option<String>,
    pub output: Output,
    /// Seconds an attempt may run; the agent profile's timeout when absent.
    pub timeout_secs: Option<u64>,
    pub on_failure: OnFailure,
}

/// A checked flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Flow {
    pub schema_version: u32,
    pub name: String,
    pub title: String,
    pub max_rounds: u32,
    pub steps: Vec<Step>,
    /// Which tickets without a `flow:` key it serves (docs/flows.md, "Triggers").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
    /// The headers each step's summary is stacked under when the flow finishes (docs/flows.md,
    /// "Assembly").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assembly: Option<Assembly>,
}

/// A problem in a flow file, at a line (1-based; 0 when it is about the whole file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Problem {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl Flow {
    /// The step called `id`.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.id == id)
    }

    /// The first step: where a ticket starts, and where a fix round goes back to.
    pub fn first(&self) -> &Step {
        &self.steps[0]
    }

    /// The step after `id`.
    pub fn after(&self, id: &str) -> Option<&Step> {
        let i = self.steps.iter().position(|s| s.id == id)?;
        self.steps.get(i + 1)
    }

    /// The output of step `id`, including yoi's own steps (`integrate` returns a commit,
    /// `merge-verify` checks).
    pub fn output_of(&self, id: &str) -> Option<Output> {
        match ServiceStep::parse(id) {
            Some(ServiceStep::Integrate) => Some(Output::Commit),
            Some(ServiceStep::MergeVerify) => Some(Output::Checks),
            None => self.step(id).map(|s| s.output),
        }
    }
}

/// The built-in flow ending in a pull request instead of a local merge (`[forge] mode = "pr"`):
/// implement → verify → review → pr.
pub fn builtin_pr(max_rounds: u32) -> Flow {
    let mut flow = builtin(max_rounds);
    flow.title = "Implement, verify, review, pull request".into();
    if let Some(last) = flow.steps.last_mut() {
        last.id = "pr".into();
        last.output = Output::PullRequest;
    }
    flow
}

/// The built-in `coder-review` flow: implement → verify → review → merge.
pub fn builtin(max_rounds: u32) -> Flow {
    let step = |id: &str, output: Output| Step {
        id: id.into(),
        role: output.role(),
        prompt: None,
        output,
        timeout_secs: None,
        on_failure: DEFAULT_ON_FAILURE,
    };
    Flow {
        schema_version: SCHEMA_VERSION,
        name: BUILTIN.into(),
        title: "Implement, verify, review, merge".into(),
        max_rounds: max_rounds.max(1),
        steps: vec![
            step(IMPLEMENT, Output::Commit),
            step("verify", Output::Checks),
            step("review", Output::Verdict),
            step("merge", Output::Merge),
        ],
        trigger: None,
        assembly: None,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    schema_version: u32,
    name: String,
    title: String,
    #[serde(default)]
    max_rounds: Option<u32>,
    steps: Vec<RawStep>,
    #[serde(default)]
    trigger: Option<RawTrigger>,
    #[serde(default)]
    assembly: Option<assembly::RawAssembly>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrigger {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    title_words: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    id: String,
    role: String,
    #[serde(default)]
    prompt: Option<String>,
    output: Output,
    #[serde(default)]
    timeout: Option<String>,
    #[serde(default)]
    on_failure: Option<RawOnFailure>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawOnFailure {
    Word(String),
    Retry { retry: u32 },
}

/// Whether `name` is a flow name: lowercase letters, digits and `-`, starting with a letter,
/// at most 64 characters.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Read and check a flow file's text. `stem` is the file name without `.flow.yaml` (the flow's
/// `name` must equal it); `roles` are the configured roles. Every problem found is returned,
/// each with its line.
pub fn parse(text: &str, stem: &str, roles: &[&str]) -> Result<Flow, Vec<Problem>> {
    if let Err(refused) = crate::yaml::check(text) {
        let line = match refused {
            crate::yaml::Refused::Brackets { line } => line,
            crate::yaml::Refused::Expansion { .. } => 0,
        };
        return Err(vec![Problem {
            line,
            message: format!("the file has {refused}"),
        }]);
    }
    let raw: RawFlow = serde_yaml_ng::from_str(text).map_err(|e| {
        vec![Problem {
            line: e.location().map(|l| l.line()).unwrap_or(0),
            message: e.to_string(),
        }]
    })?;
    let mut problems = Vec::new();
    let mut problem = |line: usize, message: String| problems.push(Problem { line, message });
    let key_line = |key: &str| line_of(text, |l| l.starts_with(&format!("{key}:")));
    if raw.schema_version != SCHEMA_VERSION {
        problem(
            key_line("schema_version"),
            format!(
                "schema_version {} is not one this yoi reads (it reads {SCHEMA_VERSION})",
                raw.schema_version
            ),
        );
    }
    if !valid_name(&raw.name) {
        problem(
            key_line("name"),
            format!("name `{}` must be lowercase letters, digits and `-`, starting with a letter (at most 64)", raw.name),
        );
    } else if raw.name != stem {
        problem(
            key_line("name"),
            format!(
                "name `{}` must match the file name `{stem}{FLOW_SUFFIX}`",
                raw.name
            ),
        );
    }
    if raw.title.trim().is_empty() {
        problem(key_line("title"), "title is empty".into());
    }
    let max_rounds = raw.max_rounds.unwrap_or(3);
    if !(1..=20).contains(&max_rounds) {
        problem(
            key_line("max_rounds"),
            format!("max_rounds {max_rounds} must be between 1 and 20"),
        );
    }
    if !(2..=6).contains(&raw.steps.len()) {
        problem(
            key_line("steps"),
            format!("a flow has 2 to 6 steps; this one has {}", raw.steps.len()),
        );
    }
    let mut steps = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut search_from = 0;
    for (i, s) in raw.steps.into_iter().enumerate() {
        let at = line_of_from(text, search_from, |l| {
            let l = l.trim_start().trim_start_matches("- ").trim_start();
            l.starts_with("id:") && l[3..].trim().trim_matches(['"', '\'']) == s.id
        });
        if at > 0 {
            search_from = at;
        }
        let line = if at > 0 { at } else { key_line("steps") };
        let mut bad = |m: String| problem(line, format!("step {} (`{}`): {m}", i + 1, s.id));
        if !valid_name(&s.id) {
            bad("an id is lowercase letters, digits and `-`, starting with a letter".into());
        }
        if ServiceStep::parse(&s.id).is_some() {
            bad(format!(
                "`{}` is a step yoi runs itself; choose another id",
                s.id
            ));
        }
        if seen.contains(&s.id) {
            bad("the id is used twice".into());
        }
        seen.push(s.id.clone());
        if s.role != SERVICE && !roles.contains(&s.role.as_str()) {
            bad(format!(
                "role `{}` is not a configured role ({}, or `service` for the merge)",
                s.role,
                roles.join(", ")
            ));
        } else if !s.output.role().is(&s.role) {
            bad(format!(
                "output `{}` is returned by the `{}` role, not `{}`",
                s.output.as_str(),
                s.output.role(),
                s.role
            ));
        }
        let timeout_secs = match s.timeout.as_deref().map(parse_duration) {
            None => None,
            Some(Ok(t)) if (1..=86_400).contains(&t) => Some(t),
            Some(Ok(t)) => {
                bad(format!("timeout {t}s must be between 1s and 24h"));
                None
            }
            Some(Err(m)) => {
                bad(m);
                None
            }
        };
        let on_failure = match s.on_failure {
            None => DEFAULT_ON_FAILURE,
            Some(RawOnFailure::Retry { retry }) if retry <= 10 => OnFailure::Retry(retry),
            Some(RawOnFailure::Retry { retry }) => {
                bad(format!("retry: {retry} must be at most 10"));
                DEFAULT_ON_FAILURE
            }
            Some(RawOnFailure::Word(w)) => match w.as_str() {
                "escalate" => OnFailure::Escalate,
                "return_to_planning" => OnFailure::ReturnToPlanning,
                _ => {
                    bad(format!(
                        "on_failure `{w}` must be `retry: N`, `escalate` or `return_to_planning`"
                    ));
                    DEFAULT_ON_FAILURE
                }
            },
        };
        if s.output.ends() && (s.prompt.is_some() || s.timeout.is_some()) {
            bad("the merge is run by the service: it takes no prompt or timeout".into());
        }
        steps.push(Step {
            id: s.id,
            // A role that is not its output's is a problem above, and no flow is returned.
            role: s.output.role(),
            prompt: s.prompt.filter(|p| !p.trim().is_empty()),
            output: s.output,
            timeout_secs,
            on_failure,
        });
    }
    if let Some(first) = steps.first() {
        if first.output != Output::Commit {
            problem(
                key_line("steps"),
                format!("the first step (`{}`) must return a commit: the work to verify, review and merge", first.id),
            );
        }
    }
    let merges = steps.iter().filter(|s| s.output.ends()).count();
    if merges != 1 || steps.last().is_some_and(|s| !s.output.ends()) {
        problem(
            key_line("steps"),
            "the last step, and only it, must be the merge (`role: service`, `output: merge`, or `output: pr` for a pull request)"
                .into(),
        );
    }
    let trigger = match raw.trigger {
        None => None,
        Some(t) => match Trigger::new(t.kind, t.labels, t.title_words) {
            Ok(t) => Some(t),
            Err(m) => {
                problem(key_line("trigger"), m);
                None
            }
        },
    };
    let ids: Vec<String> = steps.iter().map(|s: &Step| s.id.clone()).collect();
    let assembly = match raw.assembly {
        None => None,
        Some(a) => match assembly::check(a, &ids) {
            Ok(a) => Some(a),
            Err(ms) => {
                for m in ms {
                    problem(key_line("assembly"), m);
                }
                None
            }
        },
    };
    if problems.is_empty() {
        Ok(Flow {
            schema_version: raw.schema_version,
            name: raw.name,
            title: raw.title,
            max_rounds,
            steps,
            trigger,
            assembly,
        })
    } else {
        Err(problems)
    }
}

/// What is allowed but probably a mistake in a checked flow (warnings, never errors): a flow
/// of more than four steps, or fewer than two that run an agent or the verifier.
pub fn advice(flow: &Flow) -> Vec<Problem> {
    let mut out = Vec::new();
    if !(2..=4).contains(&flow.steps.len()) {
        out.push(Problem {
            line: 0,
            message: format!(
                "{} steps: flows of two to four steps are easiest to follow and to debug; \
                 consider splitting this one",
                flow.steps.len()
            ),
        });
    }
    out
}

/// `90s`, `30m`, `2h` or a number of seconds.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("timeout `{s}` must be a number with s, m or h (e.g. `30m`)"))?;
    let mult = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return Err(format!("timeout `{s}` must end in s, m or h")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("timeout `{s}` is too long"))
}

fn line_of(text: &str, pred: impl Fn(&str) -> bool) -> usize {
    line_of_from(text, 0, pred)
}

/// The 1-based number of the first line after line `from` that matches, or 0.
fn line_of_from(text: &str, from: usize, pred: impl Fn(&str) -> bool) -> usize {
    text.lines()
        .enumerate()
        .skip(from)
        .find(|(_, l)| pred(l))
        .map(|(i, _)| i + 1)
        .unwrap_or(0)
}

/// Fill a step prompt's placeholders.
pub fn render_prompt(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

#[cfg(test)]
mod tests;
