//! Routing decisions: what the router concluded about a queued ticket, with the evidence.
//!
//! A decision is data. [`RoutingDecision::render`] gives the thread event body, a fixed shape
//! other tools read back:
//!
//! ```text
//! Routing decision: <kind>
//! Reason: <one sentence>
//! Evidence checked:
//! - <one line per fact>
//! Next action: <one sentence>
//! ```
//!
//! Free text (errors, step names, branch names, reasons) is kept on one line by writing line
//! breaks as `\n`, so every line of the body keeps its meaning. An empty evidence list is
//! written as `- none`.
//!
//! The prose is for people. The same decision is also written as data, so a reader need not
//! parse the prose back: [`RoutingDecision::render_event`] appends a fenced block with the info
//! string `json yoi-decision` holding the decision as one line of JSON (its serde form, tagged
//! by `kind`), and [`read_decision`] takes the kind and the data from that block. The prose is
//! read only when there is no readable block — decision events written before the block
//! existed, or a block that does not parse: their kind comes from the first line and their data
//! is `None`, with [`ReadDecision::step`] falling back to the `- step:` evidence line.
//!
//! This module does not decide anything; the router builds the value.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::brief::Section;
use crate::relation::Blocker;
use crate::TicketId;

/// One routing outcome and the evidence behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RoutingDecision {
    /// Open dependencies, each with its state (`None` state: the ticket does not exist).
    BlockedByDependency { blockers: Vec<Blocker> },
    /// The brief lacks required sections, or the flow the ticket names cannot run (missing or
    /// invalid; each problem a line).
    ReturnToPlanning {
        missing: Vec<Section>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        flow: Vec<String>,
    },
    /// Every implementation slot is taken.
    WaitingCapacity { in_progress: usize, max: usize },
    /// Work in flight conflicts; each entry names the ticket and why: `conflicts_with`,
    /// `do_not_parallelize`, or `write scope overlap on <glob>`.
    WaitingConflict { with: Vec<(TicketId, String)> },
    /// Everything checked out; the router accepts onto this branch from this commit.
    ImplementationReady { branch: String, base_commit: String },
    /// An acceptance step failed; the ticket stays queued.
    AcceptanceFailed {
        step: String,
        error: String,
        attempt: u32,
    },
    /// Consecutive failures opened the circuit; no automatic dispatch until a human retries.
    CircuitOpen { failures: u32 },
    /// One step failed too often in total; the ticket is stopped, labelled partial and returned
    /// to planning with whatever it produced kept.
    Stopped { step: String, failures: u32 },
}

const FIRST_LINE: &str = "Routing decision: ";

impl RoutingDecision {
    /// Every kind name, in variant order.
    pub const KINDS: [&'static str; 8] = [
        "blocked_by_dependency",
        "return_to_planning",
        "waiting_capacity",
        "waiting_conflict",
        "implementation_ready",
        "acceptance_failed",
        "circuit_open",
        "stopped",
    ];

    /// The snake_case name written on the first line of the event body.
    pub fn kind(&self) -> &'static str {
        match self {
            RoutingDecision::BlockedByDependency { .. } => "blocked_by_dependency",
            RoutingDecision::ReturnToPlanning { .. } => "return_to_planning",
            RoutingDecision::WaitingCapacity { .. } => "waiting_capacity",
            RoutingDecision::WaitingConflict { .. } => "waiting_conflict",
            RoutingDecision::ImplementationReady { .. } => "implementation_ready",
            RoutingDecision::AcceptanceFailed { .. } => "acceptance_failed",
            RoutingDecision::CircuitOpen { .. } => "circuit_open",
            RoutingDecision::Stopped { .. } => "stopped",
        }
    }

    /// Why, in one sentence (the `Reason:` line).
    pub fn reason(&self) -> String {
        match self {
            RoutingDecision::BlockedByDependency { blockers } => {
                let n = blockers.len();
                if n == 1 {
                    "1 open dependency must finish first.".to_string()
                } else {
                    format!("{n} open dependencies must finish first.")
                }
            }
            RoutingDecision::ReturnToPlanning { missing, flow } => match (missing.len(), flow.len()) {
                (0, n) if n > 0 => "the flow the ticket names cannot run.".to_string(),
                (1, _) => "the brief is missing 1 required section.".to_string(),
                (n, _) => format!("the brief is missing {n} required sections."),
            },
            RoutingDecision::WaitingCapacity { .. } => {
                "no implementation slot is free.".to_string()
            }
            RoutingDecision::WaitingConflict { with } => {
                match with.len() {
                    1 => "1 ticket in flight conflicts with this one.".to_string(),
                    n => format!("{n} tickets in flight conflict with this one."),
                }
            }
            RoutingDecision::ImplementationReady { .. } => {
                "dependencies are done, the brief is complete, a slot is free and nothing in flight conflicts.".to_string()
            }
            RoutingDecision::AcceptanceFailed { step, attempt, .. } => format!(
                "acceptance step `{}` failed on attempt {attempt}.",
                one_line(step)
            ),
            RoutingDecision::CircuitOpen { failures } => {
                format!("{failures} consecutive failures opened the circuit.")
            }
            RoutingDecision::Stopped { step, failures } => format!(
                "acceptance step `{}` failed {failures} times in total; the ticket is stopped (partial).",
                one_line(step)
            ),
        }
    }

    /// The facts checked, one rendered line each (without the `- ` bullet).
    pub fn evidence(&self) -> Vec<String> {
        match self {
            RoutingDecision::BlockedByDependency { blockers } => {
                blockers.iter().map(|b| one_line(&b.to_string())).collect()
            }
            RoutingDecision::ReturnToPlanning { missing, flow } => missing
                .iter()
                .map(|s| format!("missing section: {}", s.heading()))
                .chain(flow.iter().map(|p| format!("flow: {}", one_line(p))))
                .collect(),
            RoutingDecision::WaitingCapacity { in_progress, max } => vec![
                format!("tickets in progress: {in_progress}"),
                format!("maximum in progress: {max}"),
            ],
            RoutingDecision::WaitingConflict { with } => with
                .iter()
                .map(|(id, why)| format!("{id}: {}", one_line(why)))
                .collect(),
            RoutingDecision::ImplementationReady {
                branch,
                base_commit,
            } => vec![
                format!("branch: {}", one_line(branch)),
                format!("base commit: {}", one_line(base_commit)),
            ],
            RoutingDecision::AcceptanceFailed {
                step,
                error,
                attempt,
            } => vec![
                format!("step: {}", one_line(step)),
                format!("attempt: {attempt}"),
                format!("error: {}", one_line(error)),
            ],
            RoutingDecision::CircuitOpen { failures } => {
                vec![format!("consecutive failures: {failures}")]
            }
            RoutingDecision::Stopped { step, failures } => vec![
                format!("step: {}", one_line(step)),
                format!("failures in total: {failures}"),
            ],
        }
    }

    /// What happens next, in one sentence (the `Next action:` line).
    pub fn next_action(&self) -> &'static str {
        match self {
            RoutingDecision::BlockedByDependency { .. } => {
                "wait; the ticket is re-evaluated when a blocker changes state."
            }
            RoutingDecision::ReturnToPlanning { flow, .. } if !flow.is_empty() => {
                "return the ticket to planning; fix the flow file (`yoi flow lint`) or name another flow, then mark it ready again."
            }
            RoutingDecision::ReturnToPlanning { .. } => {
                "return the ticket to planning; complete the missing sections and mark it ready again."
            }
            RoutingDecision::WaitingCapacity { .. } => {
                "wait; the ticket is re-evaluated when a ticket in progress finishes."
            }
            RoutingDecision::WaitingConflict { .. } => {
                "wait; the ticket is re-evaluated when the conflicting work finishes."
            }
            RoutingDecision::ImplementationReady { .. } => {
                "accept: create the branch and worktree, freeze the IntentPacket, start the first assignment, then move the ticket to inprogress."
            }
            RoutingDecision::AcceptanceFailed { .. } => {
                "the ticket stays queued and acceptance is retried; three failures in a row open the circuit."
            }
            RoutingDecision::CircuitOpen { .. } => {
                "no automatic dispatch; a human `retry` closes the circuit."
            }
            RoutingDecision::Stopped { .. } => {
                "return the ticket to planning, keeping what it produced; a person fixes the cause and queues it again."
            }
        }
    }

    /// [`evidence`](Self::evidence) as a page lists it: each line with the ticket it names
    /// (a blocker, a conflicting ticket) taken out of the text, so the page can link it.
    pub fn facts(&self) -> Vec<Fact> {
        let tickets: Vec<&TicketId> = match self {
            RoutingDecision::BlockedByDependency { blockers } => {
                blockers.iter().map(|b| &b.ticket).collect()
            }
            RoutingDecision::WaitingConflict { with } => with.iter().map(|(t, _)| t).collect(),
            _ => Vec::new(),
        };
        self.evidence()
            .into_iter()
            .enumerate()
            .map(|(i, line)| match tickets.get(i) {
                Some(t) => Fact {
                    text: line
                        .strip_prefix(t.as_str())
                        .unwrap_or(&line)
                        .trim_start_matches(':')
                        .trim()
                        .to_string(),
                    ticket: Some((*t).clone()),
                },
                None => Fact {
                    ticket: None,
                    text: line,
                },
            })
            .collect()
    }

    /// The event body; see the module doc for the shape.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{FIRST_LINE}{}", self.kind());
        let _ = writeln!(out, "Reason: {}", self.reason());
        out.push_str("Evidence checked:\n");
        let evidence = self.evidence();
        if evidence.is_empty() {
            out.push_str("- none\n");
        }
        for line in evidence {
            let _ = writeln!(out, "- {line}");
        }
        let _ = writeln!(out, "Next action: {}", self.next_action());
        out
    }

    /// The event body: [`render`](Self::render), then the decision as data in a
    /// `json yoi-decision` fenced block (see the module doc).
    pub fn render_event(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{}\n{DATA_FENCE}\n{json}\n```\n", self.render())
    }
}

/// One fact a decision checked (see [`RoutingDecision::facts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// The ticket the fact is about, if it names one.
    pub ticket: Option<TicketId>,
    /// The rest of the fact: `via depends_on (state: queued)`, `write scope overlap on src/**`.
    pub text: String,
}

/// The opening line of the data block in a decision event body.
pub const DATA_FENCE: &str = "```json yoi-decision";

/// A decision read back from an event body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadDecision {
    /// The kind, from the data block, else from the first line.
    pub kind: String,
    /// The decision itself; `None` for events written before the data block existed (or a
    /// data block this version cannot read).
    pub data: Option<RoutingDecision>,
    /// The failed step of an `acceptance_failed` or `stopped` decision.
    pub step: Option<String>,
}

/// Read a decision event body: the data block when present, else the older prose shape.
/// `None` when the body is not a routing decision at all.
pub fn read_decision(body: &str) -> Option<ReadDecision> {
    if let Some(data) = data_block(body) {
        let step = match &data {
            RoutingDecision::AcceptanceFailed { step, .. }
            | RoutingDecision::Stopped { step, .. } => Some(step.clone()),
            _ => None,
        };
        return Some(ReadDecision {
            kind: data.kind().to_string(),
            data: Some(data),
            step,
        });
    }
    let kind = parse_kind(body)?;
    let step = body
        .lines()
        .find_map(|l| l.strip_prefix("- step: "))
        .map(|s| s.trim().to_string());
    Some(ReadDecision {
        kind,
        data: None,
        step,
    })
}

/// The decision in a body's `json yoi-decision` block, if there is a readable one.
fn data_block(body: &str) -> Option<RoutingDecision> {
    let mut lines = body.lines();
    lines.find(|l| l.trim_end() == DATA_FENCE)?;
    serde_json::from_str(lines.next()?).ok()
}

/// A decision body without its data block: what people read, and what two decisions are
/// compared by when one of them was written before the block existed.
pub fn prose(body: &str) -> &str {
    match body.find(DATA_FENCE) {
        Some(at) => body[..at].trim_end(),
        None => body.trim_end(),
    }
}

/// The kind named on the first line of a rendered decision, if the body is one.
pub fn parse_kind(body: &str) -> Option<String> {
    let first = body.lines().next()?.trim_end();
    let kind = first.strip_prefix(FIRST_LINE)?.trim();
    let valid = !kind.is_empty()
        && kind
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    valid.then(|| kind.to_string())
}

/// Keep free text on one line: line breaks become a literal `\n`.
fn one_line(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests;
