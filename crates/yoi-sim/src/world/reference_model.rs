//! The reference model the simulation holds yoi to: which actor each action acts as, the
//! edges of the state machine each actor may move a ticket along (DESIGN §4, with
//! docs/cli.md's `return-to-planning` of a ticket in progress), and which actions can change
//! an assignment row or a worktree at all.
//!
//! People take mark-ready, queue, return, cancel, close and reopen; the router takes
//! `queued → inprogress` and `queued → planning`; the service takes `inprogress → done`; pods,
//! git events, time and restarts move no ticket. `observe` holds every change it reads after a
//! step against `allowed`, and `step` runs the check of every assignment row only after the
//! actions `touches_assignments` names.
//!
//! Pure functions of an action and two states, with no I/O and no reading of yoi's own tables:
//! a model that asked the engine what is allowed would agree with any bug in it. The test below
//! pins each actor's edges.

use yoi_core::State;

use crate::schedule::Action;

/// Who an action acts as, for the reference model of the state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Actor {
    Human,
    Router,
    Service,
    /// Pods, git events, time, restarts: none of them moves a ticket.
    Nobody,
}

pub(super) fn actor_of(a: Action) -> Actor {
    use Action::*;
    match a {
        Create { .. }
        | Edit { .. }
        | MarkReady { .. }
        | Queue { .. }
        | Return { .. }
        | Cancel { .. }
        | Close { .. }
        | Reopen { .. }
        | Retry { .. }
        | Relate { .. }
        | Unrelate { .. }
        | Grant { .. }
        | Answer { .. } => Actor::Human,
        Route => Actor::Router,
        Sweep => Actor::Service,
        _ => Actor::Nobody,
    }
}

/// Whether `a` can change an assignment row or a worktree when it does not crash.
pub(super) fn touches_assignments(a: Action) -> bool {
    use Action::*;
    !matches!(
        a,
        Create { .. }
            | Edit { .. }
            | MarkReady { .. }
            | Queue { .. }
            | Relate { .. }
            | Unrelate { .. }
            | Heartbeat { .. }
            | Advance { .. }
            | Pause { .. }
            | TargetCommit { .. }
            | Dirty
            | Clean
            | RaceMerge
            | Crash { .. }
    )
}

/// The reference model: the edges each actor may move a ticket along (DESIGN §4, with
/// docs/cli.md's `return-to-planning` of a ticket in progress).
pub(super) fn allowed(actor: Actor, from: State, to: State) -> bool {
    use State::*;
    match actor {
        Actor::Human => matches!(
            (from, to),
            (Planning, Ready)
                | (Ready, Queued)
                | (Ready | Queued | Inprogress, Planning)
                | (Planning | Ready | Queued | Inprogress | Done, Closed)
                | (Closed, Planning)
        ),
        Actor::Router => matches!((from, to), (Queued, Inprogress) | (Queued, Planning)),
        Actor::Service => matches!((from, to), (Inprogress, Done)),
        Actor::Nobody => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_model_allows_each_actor_its_own_edges_only() {
        use State::*;
        assert!(allowed(Actor::Human, Ready, Queued));
        assert!(allowed(Actor::Human, Inprogress, Planning));
        assert!(!allowed(Actor::Human, Queued, Inprogress));
        assert!(!allowed(Actor::Human, Inprogress, Done));
        assert!(allowed(Actor::Router, Queued, Inprogress));
        assert!(!allowed(Actor::Router, Ready, Queued));
        assert!(allowed(Actor::Service, Inprogress, Done));
        assert!(!allowed(Actor::Service, Queued, Inprogress));
        for from in State::ALL {
            for to in State::ALL {
                assert!(!allowed(Actor::Nobody, from, to));
            }
        }
    }
}
