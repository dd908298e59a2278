//! The failure record of a queued ticket, read back from its thread: how many acceptance
//! attempts failed in a row, how many failed per step, and whether the circuit is open.
//!
//! The window starts at the ticket's latest move into `queued` (a person re-queueing a ticket
//! starts it afresh). Within it, in thread order:
//! - an `acceptance_failed` decision by the orchestrator adds one consecutive failure and one
//!   failure of its step;
//! - an `implementation_ready` decision ends the run of consecutive failures;
//! - an `attention` event with reason `circuit_open` opens the circuit;
//! - a `retry` event closes it and ends the run, but the per-step totals stand, so a step that
//!   keeps failing is stopped after [`STOP_AFTER`] failures however often it is retried.
//!
//! Only decisions written by the orchestrator count: anyone may write a `decision` comment, and
//! a person's note must not open or close a circuit.

use std::collections::BTreeMap;

use yoi_core::decision::read_decision;
use yoi_core::thread::{EventKind, ParsedThread};
use yoi_core::Principal;
use yoi_store::ops::{ATTENTION_REASON, CIRCUIT_OPEN};

/// Consecutive failures that open the circuit.
pub const OPEN_AFTER: u32 = 3;
/// Failures of one step, in total since the ticket was queued, that stop the ticket for good
/// (it returns to planning).
pub const STOP_AFTER: u32 = 6;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Circuit {
    /// Acceptance failures since the last success or retry.
    pub consecutive: u32,
    /// The circuit is open: no automatic dispatch until a person retries.
    pub open: bool,
    /// Failures per step name since the ticket was queued.
    pub step_failures: BTreeMap<String, u32>,
}

impl Circuit {
    pub fn of(thread: &ParsedThread) -> Circuit {
        let orchestrator = Principal::orchestrator().author();
        let mut c = Circuit::default();
        for e in &thread.events {
            match &e.kind {
                EventKind::StateChanged if e.get("to") == Some("queued") => c = Circuit::default(),
                EventKind::Retry => {
                    c.consecutive = 0;
                    c.open = false;
                }
                EventKind::Attention if e.get(ATTENTION_REASON) == Some(CIRCUIT_OPEN) => {
                    c.open = true;
                }
                EventKind::Decision if e.get("author") == Some(orchestrator.as_str()) => {
                    let Some(read) = read_decision(&e.body) else {
                        continue;
                    };
                    match read.kind.as_str() {
                        "acceptance_failed" => {
                            c.consecutive += 1;
                            let step = read.step.unwrap_or_else(|| "unknown".to_string());
                            *c.step_failures.entry(step).or_default() += 1;
                        }
                        "implementation_ready" => c.consecutive = 0,
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        c
    }

    /// Failures so far of `step`.
    pub fn failures_of(&self, step: &str) -> u32 {
        self.step_failures.get(step).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yoi_core::decision::RoutingDecision;
    use yoi_core::thread::{parse_thread, render_thread, Event};

    fn decision(d: &RoutingDecision, author: &str) -> Event {
        Event::new(EventKind::Decision, &d.render_event()).with_attr("author", author)
    }

    fn failed(step: &str, attempt: u32) -> RoutingDecision {
        RoutingDecision::AcceptanceFailed {
            step: step.into(),
            error: "boom".into(),
            attempt,
        }
    }

    fn thread(events: &[Event]) -> ParsedThread {
        parse_thread(&render_thread(events))
    }

    #[test]
    fn failures_count_in_a_row_and_per_step_and_retry_resets_only_the_run() {
        let o = Principal::orchestrator().author();
        let mut events = vec![
            Event::new(EventKind::StateChanged, "Queued.").with_attr("to", "queued"),
            decision(&failed("add_worktree", 1), &o),
            decision(&failed("add_worktree", 2), &o),
            decision(&failed("add_worktree", 3), &o),
            Event::new(EventKind::Attention, "open").with_attr(ATTENTION_REASON, CIRCUIT_OPEN),
        ];
        let c = Circuit::of(&thread(&events));
        assert_eq!(
            (c.consecutive, c.open, c.failures_of("add_worktree")),
            (3, true, 3)
        );

        events.push(Event::new(EventKind::Retry, "Retry requested."));
        let c = Circuit::of(&thread(&events));
        assert_eq!(
            (c.consecutive, c.open, c.failures_of("add_worktree")),
            (0, false, 3)
        );

        events.push(decision(&failed("add_worktree", 1), &o));
        let c = Circuit::of(&thread(&events));
        assert_eq!((c.consecutive, c.failures_of("add_worktree")), (1, 4));
    }

    #[test]
    fn a_persons_decision_comment_and_an_older_queueing_do_not_count() {
        let o = Principal::orchestrator().author();
        let events = vec![
            decision(&failed("accept", 1), &o),
            Event::new(EventKind::StateChanged, "Queued again.").with_attr("to", "queued"),
            decision(&failed("accept", 1), "human:mallory"),
        ];
        assert_eq!(Circuit::of(&thread(&events)), Circuit::default());
    }

    #[test]
    fn decisions_written_before_the_data_block_still_count() {
        let o = Principal::orchestrator().author();
        let older = |d: &RoutingDecision| {
            Event::new(EventKind::Decision, &d.render()).with_attr("author", o.as_str())
        };
        let events = vec![
            older(&failed("add_worktree", 1)),
            older(&failed("accept", 2)),
        ];
        let c = Circuit::of(&thread(&events));
        assert_eq!(
            (
                c.consecutive,
                c.failures_of("add_worktree"),
                c.failures_of("accept")
            ),
            (2, 1, 1)
        );
    }

    #[test]
    fn a_success_ends_the_run() {
        let o = Principal::orchestrator().author();
        let ready = RoutingDecision::ImplementationReady {
            branch: "yoi/x".into(),
            base_commit: "abc".into(),
        };
        let events = vec![decision(&failed("accept", 1), &o), decision(&ready, &o)];
        let c = Circuit::of(&thread(&events));
        assert_eq!((c.consecutive, c.failures_of("accept")), (0, 1));
    }
}
