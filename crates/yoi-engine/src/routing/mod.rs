//! The router (DESIGN §5): what a queued ticket needs, written to its thread once per
//! situation, and acceptance all or nothing.
//!
//! - [`decide`] / [`decide_in`] re-read the ticket and check, in order: an open circuit, open
//!   blockers, the brief's required sections, free capacity, conflicts with work in progress,
//!   the target ref. Only `queued` tickets are routed; for any other state they answer `None`.
//!   [`decide_with`] (the pass's) reads only the routing part of the thread ([`window`]): from
//!   the index when it is provably current, so a long thread costs no more than a short one.
//! - [`record`] appends the decision as a `decision` thread event unless the orchestrator's last
//!   decision event already says the same thing, so a ticket that stays blocked is not
//!   re-announced every tick. A `return_to_planning` decision also moves the ticket back. The
//!   pass records against the routing part it decided on, so a ticket's thread is read once.
//! - [`accept_ticket`] creates the branch, the worktree, the frozen IntentPacket and the first
//!   assignment, then calls the store's `accept`; when any step fails it undoes what it made,
//!   leaves the ticket queued and records an `acceptance_failed` decision.
//! - [`route_ticket`] / [`run_pass`] put these together for one ticket / every queued ticket,
//!   with the circuit breaker ([`circuit`]); [`orchestrator`] is the loop as a step function
//!   (which tickets to route for which outbox events, backoff, ack or fail), driven by
//!   `yoi serve` or by a test with a fake clock; [`view`] is the read-only routing view behind
//!   `GET /tickets/{id}/routing` and `yoi ticket route --dry-run`.
//!
//! Every write goes through `yoi_store::ops` with the orchestrator principal, so the store's
//! guards (brief, blockers, state) are checked again at acceptance.

mod accept;
pub mod circuit;
mod decide;
pub mod orchestrator;
mod pass;
mod record;
pub mod view;
pub mod window;

pub use accept::{accept_ticket, accept_ticket_failing_at, AcceptError, Accepted, FailAt};
pub use decide::{decide, decide_in, decide_with, Snapshot, RESOLVE_TARGET};
pub use orchestrator::{Orchestrator, RouterStatus, StepEnv, StepOutcome, CONSUMER};
pub use pass::{route_ticket, run_pass, PassHooks, RouteConfig, Routed, Targets};
pub use record::record;

use yoi_core::TicketId;

/// Longest slug taken from a title.
pub const MAX_SLUG: usize = 40;

/// A branch- and path-safe slug of a title: lowercase ASCII letters and digits, every other run
/// of characters written as one `-`, trimmed of `-`, at most [`MAX_SLUG`] characters. A title
/// with no ASCII letter or digit gives `ticket`.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(MAX_SLUG);
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "ticket".to_string()
    } else {
        out.to_string()
    }
}

/// `<id>-<slug>`: the worktree folder name, and the branch name after `yoi/`.
pub fn work_name(id: &TicketId, title: &str) -> String {
    format!("{id}-{}", slug(title))
}

/// The work branch of a ticket: `yoi/<id>-<slug>`.
pub fn branch_name(id: &TicketId, title: &str) -> String {
    format!("yoi/{}", work_name(id, title))
}

#[cfg(test)]
mod tests {
    use super::slug;

    #[test]
    fn slug_keeps_ascii_alnum_and_single_hyphens() {
        assert_eq!(slug("Fix the  Router: step #2!"), "fix-the-router-step-2");
        assert_eq!(slug("  --日本語-- "), "ticket");
        assert_eq!(slug(&"a".repeat(50)), "a".repeat(40));
        assert_eq!(slug(&format!("{}  b", "a".repeat(39))), "a".repeat(39));
    }
}
