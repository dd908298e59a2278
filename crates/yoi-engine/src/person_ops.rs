//! The operations a person (or a pod speaking for one) asks for, in one list.
//!
//! Each [`PersonOp`] names, once: its stable name (the dashboard form's `action`, the scope's
//! name, the operation recorded in an outcome), the HTTP route of the API, the `yoi` command,
//! who may ask at the API, the state-machine edge it owns (for a state operation: the guard
//! table of `yoi_core::state` decides the rest), whether the dashboard offers it on a ticket and
//! on the board's bulk form, and what its request needs. The frontends build their tables from
//! here — the server's scopes, the dashboard's actions, the CLI's and the remote client's
//! dispatch of state operations, the OpenAPI bodies of state operations — and tests check what
//! cannot be built: that every entry has its route in the router and in the OpenAPI document
//! with the same method, that its CLI command exists, and that the scopes agree with the guard
//! table. A new operation is added here, and a frontend that misses it fails a test.
//!
//! The list holds what a person asks for, not what yoi does by itself: `accept` and `complete`
//! have no entry (the router and the merge step perform them), nor do reads.

use yoi_core::principal::PrincipalKind;
use yoi_core::state::Operation;
use yoi_store::ops::{self, TransitionRequest};
use yoi_store::{Ctx, Outcome, StoreError, Workspace};

/// Which kinds of token may ask for an operation at the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Who {
    Human,
    /// A read-only token.
    Read,
    Intake,
    Orchestrator,
    /// Any role pod.
    Pod,
    /// A pod's agent, for its one live claim.
    Agent,
}

/// What a state operation's request must carry (the API's body schema, the CLI's argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing but the ticket.
    Nothing,
    /// A reason (`return-to-planning`, `reopen`, `retry` optionally).
    Reason,
    /// A resolution (`close`, `cancel`).
    Resolution,
    /// A body of its own (create, edit, comment, relations, plan records).
    Body,
}

/// Where the dashboard offers an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dashboard {
    /// Not as a button of its own (a form with fields of its own, or not at all).
    Absent,
    /// A button on the ticket page (a form posting `action=<name>` to `/tickets/{id}/act`).
    Ticket,
    /// A button on the ticket page and on the board's bulk form.
    TicketAndBulk,
}

/// One entry of the table.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub name: &'static str,
    pub method: &'static str,
    /// The API route, under `/api/v1`.
    pub path: &'static str,
    /// The `yoi` command that asks for it (the words after `yoi`).
    pub cli: &'static [&'static str],
    pub who: &'static [Who],
    /// The edge of the state machine this operation owns.
    pub transition: Option<Operation>,
    pub needs: Needs,
    pub dashboard: Dashboard,
    /// The dashboard button's label.
    pub label: &'static str,
    /// What the dashboard says it did (`queued`).
    pub done: &'static str,
}

/// Every operation a person asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PersonOp {
    Create,
    Edit,
    Comment,
    MarkReady,
    Queue,
    ReturnToPlanning,
    Close,
    Cancel,
    Reopen,
    Retry,
    AddRelation,
    RemoveRelation,
    AddPlanRecord,
    /// Add to a ticket's budget (docs/budgets.md).
    AddBudget,
    /// Answer an agent's question (docs/inbox.md, "Agents ask").
    Answer,
}

/// A state operation of the store, as the frontends call it.
pub type TransitionFn =
    fn(&Workspace, &Ctx, &str, &TransitionRequest) -> Result<Outcome, StoreError>;

use Who::{Human, Intake, Orchestrator};

impl PersonOp {
    pub const ALL: [PersonOp; 15] = [
        PersonOp::Create,
        PersonOp::Edit,
        PersonOp::Comment,
        PersonOp::MarkReady,
        PersonOp::Queue,
        PersonOp::ReturnToPlanning,
        PersonOp::Close,
        PersonOp::Cancel,
        PersonOp::Reopen,
        PersonOp::Retry,
        PersonOp::AddRelation,
        PersonOp::RemoveRelation,
        PersonOp::AddPlanRecord,
        PersonOp::AddBudget,
        PersonOp::Answer,
    ];

    /// The table: one row per operation.
    pub const fn spec(self) -> Spec {
        const fn row(
            name: &'static str,
            method: &'static str,
            path: &'static str,
            cli: &'static [&'static str],
            who: &'static [Who],
        ) -> Spec {
            Spec {
                name,
                method,
                path,
                cli,
                who,
                transition: None,
                needs: Needs::Body,
                dashboard: Dashboard::Absent,
                label: "",
                done: "",
            }
        }
        const fn state(
            row: Spec,
            op: Operation,
            needs: Needs,
            dashboard: Dashboard,
            (label, done): (&'static str, &'static str),
        ) -> Spec {
            Spec {
                transition: Some(op),
                needs,
                dashboard,
                label,
                done,
                ..row
            }
        }
        const T: &str = "/tickets/{id}";
        match self {
            PersonOp::Create => row(
                "create",
                "POST",
                "/tickets",
                &["ticket", "create"],
                &[Human, Intake],
            ),
            PersonOp::Edit => row("edit", "PATCH", T, &["ticket", "edit"], &[Human, Intake]),
            PersonOp::Comment => row(
                "comment",
                "POST",
                "/tickets/{id}/comments",
                &["ticket", "comment"],
                &[Human, Intake, Orchestrator],
            ),
            PersonOp::MarkReady => state(
                row(
                    "mark-ready",
                    "POST",
                    "/tickets/{id}/mark-ready",
                    &["ticket", "mark-ready"],
                    &[Human, Intake],
                ),
                Operation::MarkReady,
                Needs::Nothing,
                Dashboard::TicketAndBulk,
                ("Mark ready", "marked ready"),
            ),
            PersonOp::Queue => state(
                row(
                    "queue",
                    "POST",
                    "/tickets/{id}/queue",
                    &["ticket", "queue"],
                    &[Human],
                ),
                Operation::Queue,
                Needs::Nothing,
                Dashboard::TicketAndBulk,
                ("Queue", "queued"),
            ),
            PersonOp::ReturnToPlanning => state(
                row(
                    "return-to-planning",
                    "POST",
                    "/tickets/{id}/return-to-planning",
                    &["ticket", "return-to-planning"],
                    &[Human, Orchestrator],
                ),
                Operation::ReturnToPlanning,
                Needs::Reason,
                Dashboard::TicketAndBulk,
                ("Return to planning", "returned to planning"),
            ),
            PersonOp::Close => state(
                row(
                    "close",
                    "POST",
                    "/tickets/{id}/close",
                    &["ticket", "close"],
                    &[Human],
                ),
                Operation::Close,
                Needs::Resolution,
                Dashboard::TicketAndBulk,
                ("Close", "closed"),
            ),
            PersonOp::Cancel => state(
                row(
                    "cancel",
                    "POST",
                    "/tickets/{id}/cancel",
                    &["ticket", "cancel"],
                    &[Human],
                ),
                Operation::Cancel,
                Needs::Resolution,
                Dashboard::Ticket,
                ("Cancel", "cancelled"),
            ),
            PersonOp::Reopen => state(
                row(
                    "reopen",
                    "POST",
                    "/tickets/{id}/reopen",
                    &["ticket", "reopen"],
                    &[Human],
                ),
                Operation::Reopen,
                Needs::Reason,
                Dashboard::Ticket,
                ("Reopen", "reopened"),
            ),
            PersonOp::Retry => Spec {
                needs: Needs::Reason,
                dashboard: Dashboard::Ticket,
                label: "Retry routing",
                done: "sent to routing again",
                ..row(
                    "retry routing",
                    "POST",
                    "/tickets/{id}/retry",
                    &["ticket", "retry"],
                    &[Human],
                )
            },
            PersonOp::AddRelation => row(
                "relations",
                "POST",
                "/tickets/{id}/relations",
                &["ticket", "relation", "add"],
                &[Human, Intake],
            ),
            PersonOp::RemoveRelation => row(
                "relations",
                "DELETE",
                "/tickets/{id}/relations/{kind}/{target}",
                &["ticket", "relation", "rm"],
                &[Human, Intake],
            ),
            PersonOp::AddPlanRecord => row(
                "plan",
                "POST",
                "/tickets/{id}/plan",
                &["ticket", "plan", "add"],
                &[Human, Orchestrator],
            ),
            PersonOp::AddBudget => row(
                "add to a budget",
                "POST",
                "/tickets/{id}/budget",
                &["ticket", "budget"],
                &[Human],
            ),
            PersonOp::Answer => row(
                "answer",
                "POST",
                "/tickets/{id}/answer",
                &["ticket", "answer"],
                &[Human],
            ),
        }
    }

    /// The dashboard's form action for this operation (`retry` for [`PersonOp::Retry`], whose
    /// scope name is longer), else its name.
    pub fn action(self) -> &'static str {
        match self {
            PersonOp::Retry => "retry",
            _ => self.spec().name,
        }
    }

    /// The operation a dashboard form's `action` names, if it offers one by that name.
    pub fn from_action(action: &str) -> Option<PersonOp> {
        PersonOp::ALL
            .into_iter()
            .find(|op| op.spec().dashboard != Dashboard::Absent && op.action() == action)
    }

    /// The entry that owns a state-machine edge (`None` for `accept` and `complete`, which
    /// yoi performs itself).
    pub fn of_transition(op: Operation) -> Option<PersonOp> {
        PersonOp::ALL
            .into_iter()
            .find(|p| p.spec().transition == Some(op))
    }

    /// The store's function for a state operation.
    pub fn transition_fn(self) -> Option<TransitionFn> {
        let f: TransitionFn = match self.spec().transition? {
            Operation::MarkReady => ops::mark_ready,
            Operation::Queue => ops::queue,
            Operation::ReturnToPlanning => ops::return_to_planning,
            Operation::Close => ops::close,
            Operation::Cancel => ops::cancel,
            Operation::Reopen => ops::reopen,
            Operation::Accept | Operation::Complete => return None,
        };
        Some(f)
    }

    /// How a person asks for it on the command line, with `ID` and `R` for the ticket and the
    /// text it needs (`yoi ticket close ID --resolution R`); `None` for an operation with a
    /// body of its own.
    pub fn usage(self) -> Option<String> {
        let s = self.spec();
        let flag = match s.needs {
            Needs::Nothing => "",
            Needs::Reason => " --reason R",
            Needs::Resolution => " --resolution R",
            Needs::Body => return None,
        };
        Some(format!("yoi {} ID{flag}", s.cli.join(" ")))
    }

    /// The operations the board's bulk form offers.
    pub fn bulk() -> impl Iterator<Item = PersonOp> {
        PersonOp::ALL
            .into_iter()
            .filter(|op| op.spec().dashboard == Dashboard::TicketAndBulk)
    }
}

impl Who {
    /// The principal kinds the store's guard sees for a caller of this kind (`None`: a kind
    /// that never acts on a ticket's state).
    pub fn principal(self) -> Option<PrincipalKind> {
        match self {
            Who::Human => Some(PrincipalKind::Human),
            Who::Intake => Some(PrincipalKind::Intake),
            Who::Orchestrator => Some(PrincipalKind::Orchestrator),
            Who::Pod | Who::Agent => Some(PrincipalKind::Pod),
            Who::Read => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_human_edge_of_the_state_machine_has_one_entry_and_yoi_s_own_have_none() {
        for op in Operation::ALL {
            let owners: Vec<_> = PersonOp::ALL
                .into_iter()
                .filter(|p| p.spec().transition == Some(op))
                .collect();
            match op {
                Operation::Accept | Operation::Complete => assert!(owners.is_empty(), "{op:?}"),
                _ => assert_eq!(owners.len(), 1, "{op:?} is owned by {owners:?}"),
            }
        }
    }

    #[test]
    fn the_api_scopes_of_a_state_operation_agree_with_the_guard_table() {
        for p in PersonOp::ALL {
            let Some(op) = p.spec().transition else {
                continue;
            };
            for who in p.spec().who {
                let kind = who.principal().expect("a state operation's caller acts");
                assert!(
                    op.allowed().contains(&kind),
                    "{}: the API lets {who:?} ask, the guard refuses {kind:?}",
                    p.spec().name
                );
            }
            for kind in op.allowed() {
                assert!(
                    p.spec().who.iter().any(|w| w.principal() == Some(*kind))
                        || *kind == PrincipalKind::Service,
                    "{}: the guard allows {kind:?}, no API scope reaches it",
                    p.spec().name
                );
            }
        }
    }

    #[test]
    fn every_state_operation_has_a_store_function_and_the_name_of_its_edge() {
        for p in PersonOp::ALL {
            match p.spec().transition {
                Some(op) => {
                    assert!(p.transition_fn().is_some(), "{p:?}");
                    assert_eq!(p.spec().name, op.as_str());
                    assert_eq!(p.spec().path, format!("/tickets/{{id}}/{}", op.as_str()));
                }
                None => assert!(p.transition_fn().is_none(), "{p:?}"),
            }
        }
    }

    #[test]
    fn usage_names_the_command_and_what_it_needs() {
        assert_eq!(
            PersonOp::Queue.usage().as_deref(),
            Some("yoi ticket queue ID")
        );
        assert_eq!(
            PersonOp::Close.usage().as_deref(),
            Some("yoi ticket close ID --resolution R")
        );
        assert_eq!(
            PersonOp::ReturnToPlanning.usage().as_deref(),
            Some("yoi ticket return-to-planning ID --reason R")
        );
        assert_eq!(PersonOp::Create.usage(), None);
    }

    #[test]
    fn a_dashboard_action_names_exactly_one_operation() {
        for p in PersonOp::ALL {
            let offered = p.spec().dashboard != Dashboard::Absent;
            assert_eq!(
                PersonOp::from_action(p.action()) == Some(p),
                offered,
                "{p:?}"
            );
            if offered {
                assert!(!p.spec().done.is_empty(), "{p:?} says what it did");
                assert!(!p.spec().label.is_empty(), "{p:?} has a label");
            }
        }
        assert_eq!(PersonOp::from_action("accept"), None);
        assert_eq!(
            PersonOp::bulk().map(PersonOp::action).collect::<Vec<_>>(),
            ["mark-ready", "queue", "return-to-planning", "close"]
        );
    }
}
