//! Ticket states and the one operation that owns each edge between them.
//!
//! The table here is the whole state machine (DESIGN §4). Every entry point asks
//! [`Operation::check`] before it changes a ticket; there is no other way to move a state.
//! Asking for an edge without an operation names the command that does exist, or says that
//! none does.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;
use utoipa::ToSchema;

use crate::principal::{Principal, PrincipalKind};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Planning,
    Ready,
    Queued,
    Inprogress,
    Done,
    Closed,
}

impl State {
    pub const ALL: [State; 6] = [
        State::Planning,
        State::Ready,
        State::Queued,
        State::Inprogress,
        State::Done,
        State::Closed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Planning => "planning",
            State::Ready => "ready",
            State::Queued => "queued",
            State::Inprogress => "inprogress",
            State::Done => "done",
            State::Closed => "closed",
        }
    }

    /// A ticket in this state no longer blocks the tickets that wait on it.
    pub fn is_finished(self) -> bool {
        matches!(self, State::Done | State::Closed)
    }

    /// Work on a ticket in this state is already scheduled or running.
    pub fn is_in_flight(self) -> bool {
        matches!(self, State::Queued | State::Inprogress)
    }

    /// Not closed: the default filter of `ticket list`.
    pub fn is_active(self) -> bool {
        !matches!(self, State::Closed)
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
#[error("`{value}` is not a ticket state (expected one of planning, ready, queued, inprogress, done, closed)")]
pub struct StateParseError {
    pub value: String,
}

impl FromStr for State {
    type Err = StateParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v = s.trim().to_ascii_lowercase();
        Ok(match v.as_str() {
            "planning" => State::Planning,
            "ready" => State::Ready,
            "queued" => State::Queued,
            "inprogress" | "in_progress" | "in-progress" => State::Inprogress,
            "done" => State::Done,
            "closed" => State::Closed,
            _ => {
                return Err(StateParseError {
                    value: s.to_string(),
                })
            }
        })
    }
}

impl State {
    /// A state name as the older tools wrote it in `state_changed` events, read as the current
    /// state it became: `intake` (the older lifecycle's first state, before planning) is
    /// `planning`. `None` for a name that is neither older nor current.
    pub fn from_older(s: &str) -> Option<State> {
        match s.trim().to_ascii_lowercase().as_str() {
            "intake" => Some(State::Planning),
            _ => None,
        }
    }

    /// A state name from a thread event: a current one, else an older one ([`State::from_older`]).
    pub fn from_event(s: &str) -> Option<State> {
        s.parse().ok().or_else(|| State::from_older(s))
    }
}

/// The dedicated operation for each edge of the state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    MarkReady,
    Queue,
    ReturnToPlanning,
    Accept,
    Complete,
    Close,
    Cancel,
    Reopen,
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum TransitionError {
    #[error(
        "{operation} needs the ticket in {}, but it is {found}",
        expected_list(expected)
    )]
    WrongState {
        operation: Operation,
        expected: Vec<State>,
        found: State,
    },
    #[error(
        "{operation} may only be done by {}; {principal} is a {kind}",
        allowed_list(allowed)
    )]
    NotPermitted {
        operation: Operation,
        principal: String,
        kind: PrincipalKind,
        allowed: Vec<PrincipalKind>,
    },
    #[error("there is no transition from {from} to {to}")]
    NoEdge { from: State, to: State },
    #[error("the ticket is already {state}")]
    Unchanged { state: State },
}

fn expected_list(states: &[State]) -> String {
    states
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" or ")
}

fn allowed_list(kinds: &[PrincipalKind]) -> String {
    kinds
        .iter()
        .map(|k| k.to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}

impl Operation {
    pub const ALL: [Operation; 8] = [
        Operation::MarkReady,
        Operation::Queue,
        Operation::ReturnToPlanning,
        Operation::Accept,
        Operation::Complete,
        Operation::Close,
        Operation::Cancel,
        Operation::Reopen,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Operation::MarkReady => "mark-ready",
            Operation::Queue => "queue",
            Operation::ReturnToPlanning => "return-to-planning",
            Operation::Accept => "accept",
            Operation::Complete => "complete",
            Operation::Close => "close",
            Operation::Cancel => "cancel",
            Operation::Reopen => "reopen",
        }
    }

    /// The states this operation starts from.
    pub fn from_states(self) -> &'static [State] {
        use State::*;
        match self {
            Operation::MarkReady => &[Planning],
            Operation::Queue => &[Ready],
            Operation::ReturnToPlanning => &[Ready, Queued, Inprogress],
            Operation::Accept => &[Queued],
            Operation::Complete => &[Inprogress],
            Operation::Close => &[Done],
            Operation::Cancel => &[Planning, Ready, Queued, Inprogress],
            Operation::Reopen => &[Closed],
        }
    }

    pub fn to_state(self) -> State {
        match self {
            Operation::MarkReady => State::Ready,
            Operation::Queue => State::Queued,
            Operation::ReturnToPlanning => State::Planning,
            Operation::Accept => State::Inprogress,
            Operation::Complete => State::Done,
            Operation::Close | Operation::Cancel => State::Closed,
            Operation::Reopen => State::Planning,
        }
    }

    /// Who may perform the operation (DESIGN §4, "who" column).
    pub fn allowed(self) -> &'static [PrincipalKind] {
        use PrincipalKind::*;
        match self {
            Operation::MarkReady => &[Human, Intake],
            Operation::Queue => &[Human],
            Operation::ReturnToPlanning => &[Human, Orchestrator],
            Operation::Accept => &[Orchestrator],
            Operation::Complete => &[Service],
            Operation::Close => &[Human, Service],
            Operation::Cancel => &[Human],
            Operation::Reopen => &[Human],
        }
    }

    /// The `reason` recorded on the `state_changed` event when the caller gives none.
    pub fn default_reason(self) -> &'static str {
        match self {
            Operation::MarkReady => "marked_ready",
            Operation::Queue => "queued",
            Operation::ReturnToPlanning => "returned_to_planning",
            Operation::Accept => "orchestrator_acceptance",
            Operation::Complete => "merged",
            Operation::Close => "closed",
            Operation::Cancel => "cancelled",
            Operation::Reopen => "reopened",
        }
    }

    /// Check state and principal. Returns the target state.
    pub fn check(self, current: State, principal: &Principal) -> Result<State, TransitionError> {
        if !self.from_states().contains(&current) {
            return Err(TransitionError::WrongState {
                operation: self,
                expected: self.from_states().to_vec(),
                found: current,
            });
        }
        if !self.allowed().contains(&principal.kind) {
            return Err(TransitionError::NotPermitted {
                operation: self,
                principal: principal.author(),
                kind: principal.kind,
                allowed: self.allowed().to_vec(),
            });
        }
        Ok(self.to_state())
    }

    /// The operation that owns the edge `from -> to`, if there is one.
    pub fn for_edge(from: State, to: State) -> Result<Operation, TransitionError> {
        if from == to {
            return Err(TransitionError::Unchanged { state: from });
        }
        Operation::ALL
            .into_iter()
            .find(|op| op.to_state() == to && op.from_states().contains(&from))
            .ok_or(TransitionError::NoEdge { from, to })
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TransitionError {
    pub fn class(&self) -> crate::ErrorClass {
        match self {
            TransitionError::NotPermitted { .. } => crate::ErrorClass::NotPermitted,
            TransitionError::WrongState { .. }
            | TransitionError::NoEdge { .. }
            | TransitionError::Unchanged { .. } => crate::ErrorClass::Conflict,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_edge_of_the_design_table_has_exactly_one_operation() {
        use State::*;
        let edges = [
            (Planning, Ready, Operation::MarkReady),
            (Ready, Queued, Operation::Queue),
            (Ready, Planning, Operation::ReturnToPlanning),
            (Queued, Planning, Operation::ReturnToPlanning),
            (Inprogress, Planning, Operation::ReturnToPlanning),
            (Queued, Inprogress, Operation::Accept),
            (Inprogress, Done, Operation::Complete),
            (Done, Closed, Operation::Close),
            (Planning, Closed, Operation::Cancel),
            (Ready, Closed, Operation::Cancel),
            (Queued, Closed, Operation::Cancel),
            (Inprogress, Closed, Operation::Cancel),
            (Closed, Planning, Operation::Reopen),
        ];
        let mut count = 0;
        for from in State::ALL {
            for to in State::ALL {
                let expected = edges
                    .iter()
                    .find(|(f, t, _)| *f == from && *t == to)
                    .map(|e| e.2);
                match (Operation::for_edge(from, to), expected) {
                    (Ok(op), Some(want)) => {
                        assert_eq!(op, want);
                        count += 1;
                    }
                    (Err(_), None) => {}
                    (got, want) => panic!("{from}->{to}: got {got:?}, want {want:?}"),
                }
            }
        }
        assert_eq!(count, edges.len());
    }

    #[test]
    fn queue_is_for_humans_only() {
        let human = Principal::human("alice");
        let orch = Principal::orchestrator();
        assert_eq!(
            Operation::Queue.check(State::Ready, &human),
            Ok(State::Queued)
        );
        let err = Operation::Queue.check(State::Ready, &orch).unwrap_err();
        assert!(matches!(err, TransitionError::NotPermitted { .. }));
        assert!(err.to_string().contains("human"));
    }

    #[test]
    fn wrong_state_names_expected_and_found() {
        let err = Operation::Close
            .check(State::Queued, &Principal::human("a"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "close needs the ticket in done, but it is queued"
        );
    }

    #[test]
    fn state_parses_legacy_spellings() {
        assert_eq!("in_progress".parse::<State>().unwrap(), State::Inprogress);
        assert_eq!("Queued".parse::<State>().unwrap(), State::Queued);
        assert!("open".parse::<State>().is_err());
    }
}
