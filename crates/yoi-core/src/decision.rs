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
//! [`RoutingDecision::situation_key`] is how the router avoids writing the same decision on
//! every tick: it is the kind plus a hash of the evidence lines, sorted, so it changes exactly
//! when the kind or a rendered fact changes (a blocker moving from `ready` to `inprogress`, a
//! new attempt number) and not when the same facts arrive in another order. This module does not
//! decide anything; the router builds the value.

use std::fmt::Write as _;

use serde::Serialize;

use crate::brief::Section;
use crate::relation::Blocker;
use crate::TicketId;

/// One routing outcome and the evidence behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RoutingDecision {
    /// Open dependencies, each with its state (`None` state: the ticket does not exist).
    BlockedByDependency { blockers: Vec<Blocker> },
    /// The brief lacks required sections.
    ReturnToPlanning { missing: Vec<Section> },
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

    fn reason(&self) -> String {
        match self {
            RoutingDecision::BlockedByDependency { blockers } => {
                let n = blockers.len();
                if n == 1 {
                    "1 open dependency must finish first.".to_string()
                } else {
                    format!("{n} open dependencies must finish first.")
                }
            }
            RoutingDecision::ReturnToPlanning { missing } => match missing.len() {
                1 => "the brief is missing 1 required section.".to_string(),
                n => format!("the brief is missing {n} required sections."),
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
    fn evidence(&self) -> Vec<String> {
        match self {
            RoutingDecision::BlockedByDependency { blockers } => {
                blockers.iter().map(|b| one_line(&b.to_string())).collect()
            }
            RoutingDecision::ReturnToPlanning { missing } => missing
                .iter()
                .map(|s| format!("missing section: {}", s.heading()))
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

    fn next_action(&self) -> &'static str {
        match self {
            RoutingDecision::BlockedByDependency { .. } => {
                "wait; the ticket is re-evaluated when a blocker changes state."
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

    /// `<kind>:<sha256 hex of the sorted, de-duplicated evidence lines>`; equal exactly when
    /// the kind and the set of rendered facts are equal.
    pub fn situation_key(&self) -> String {
        let mut evidence = self.evidence();
        evidence.sort();
        evidence.dedup();
        let hash = crate::sha256_hex(evidence.join("\n").as_bytes());
        format!("{}:{hash}", self.kind())
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
