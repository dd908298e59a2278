//! What a pod reports when an attempt ends: the wire form of `POST
//! /api/v1/assignments/{id}/complete` and `…/fail`, shared by the pod runtime that writes it and
//! the engine that reads it, so the two cannot drift. Unknown fields are refused.

use serde::{Deserialize, Serialize};

/// What a pod reports when its agent finished.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = AttemptReport)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// The output contract's `YOI-RESULT`.
    pub outcome: ReportOutcome,
    /// The output contract's `YOI-SUMMARY`.
    #[serde(default)]
    pub summary: Option<String>,
    /// The head of the working directory after the run (a coder's result), full hex.
    #[serde(default)]
    pub commit: Option<String>,
    /// Commits the agent made itself (the pod commits what it left uncommitted).
    #[serde(default)]
    pub agent_commits: u32,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Where the run's log is, relative to the repository root.
    #[serde(default)]
    pub log: Option<String>,
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// A reviewer's `YOI-VERDICT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// What the agent asks a person (`YOI-QUESTION:` lines, in order). With the outcome
    /// `blocked` the attempt ends `blocked` and its step waits for an answer
    /// (docs/inbox.md, "Agents ask").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 20)]
    pub questions: Vec<String>,
    /// A reviewer's findings (`YOI-FINDING:` lines), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// A verifier's validation commands, each with how it ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckResult>,
    /// A verifier's prose checks, left to the reviewer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manual_checks: Vec<String>,
    /// The sandbox the run had (`yoi_agent::policy::Policy::summary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// What did the work: the agent profile and its CLI's version as it reported it
    /// (`aider 0.86.2`), so a verdict can be traced to what gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The paths the change touches outside the brief's write scope (`[flow] write_scope`), set
    /// by the server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_write_scope: Vec<String>,
    /// The agent's final message had no output contract, even after the follow-up turn, and
    /// the attempt completed under its profile's lenient rule: the summary is the last
    /// paragraph of that message (docs/pods.md, "A missing contract").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub contract_missing: bool,
    /// The attempt could not start because its agent cannot run on the pod (its program is not
    /// installed, its profile's endpoint is wrong): the step stops and the inbox says
    /// `agent_unusable` instead of handing it out to fail the same way again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub agent_unusable: bool,
    /// Whether the pod asked the agent for its missing trailer lines in a follow-up turn
    /// (whose usage is counted in `usage`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub follow_up: bool,
    /// A failed coder attempt whose change is worth keeping: it ended for a reason that is not
    /// about its change (its contract, its timeout, an error its agent reported), after the pod
    /// killed its process group. The next attempt starts from `commit` when it descends from
    /// the head this attempt started at (docs/pods.md, "Retries keep the work").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_work: bool,
    /// The agent's provider refused it for a rate limit or a quota (docs/budgets.md): the
    /// attempt ends `rate_limited`, never counted as a failure, and its agent pauses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
}

/// A rate limit or quota an agent ran into, as its output said it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// When the limit resets, when the output named it (milliseconds since the Unix epoch).
    #[serde(default)]
    pub resets_at_ms: Option<i64>,
    /// The line that said so.
    pub message: String,
}

impl Report {
    /// Whether this completed attempt found the work wanting and so used a fix round: a
    /// validation command that did not pass, or a change request.
    pub fn used_a_round(&self) -> bool {
        self.checks.iter().any(|c| !c.passed()) || self.verdict == Some(Verdict::RequestChanges)
    }
}

/// A reviewer's verdict on the exact commit it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    RequestChanges,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "approve",
            Verdict::RequestChanges => "request_changes",
        }
    }

    /// The verdict a `YOI-VERDICT:` value names.
    pub fn parse(s: &str) -> Option<Verdict> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "approve" | "approved" => Some(Verdict::Approve),
            "request_changes" | "changes_requested" => Some(Verdict::RequestChanges),
            _ => None,
        }
    }
}

/// One validation command the verifier ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckResult {
    pub command: String,
    /// Its exit status; `None` when it was killed (timeout, lease lost) or could not start.
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub timed_out: bool,
    /// Its output, relative to the repository root (or the pod's run folder).
    pub log: Option<String>,
}

impl CheckResult {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportOutcome {
    #[default]
    Done,
    /// The agent could not go on without a decision (the brief's escalate-if).
    Blocked,
    Failed,
}

impl ReportOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportOutcome::Done => "done",
            ReportOutcome::Blocked => "blocked",
            ReportOutcome::Failed => "failed",
        }
    }
}

/// What one attempt cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    #[serde(default)]
    pub wall_ms: u64,
    #[serde(default)]
    pub tokens_in: u64,
    #[serde(default)]
    pub tokens_out: u64,
    #[serde(default)]
    pub tokens_cached: u64,
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// `reported` (the agent said), `estimated` (from the price table) or `none`.
    #[serde(default)]
    pub cost_source: CostSource,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
}

impl Eq for Usage {}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    Reported,
    Estimated,
    #[default]
    None,
}
