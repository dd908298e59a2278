//! The CLI's errors and their exit codes: 0 success, 1 a refused or failed operation, 2 a usage
//! error (bad arguments or input the user must correct). A library error exits with the code
//! the one edge table (`yoi_engine::edge`) gives its class; an error answered by the server
//! exits with the code of the class the table maps its HTTP status to — the same code local
//! mode gives for the same error, because the server took its status from the same table.

use thiserror::Error;
use yoi_core::ErrorClass;
use yoi_engine::edge::{edge, exit_code_for_status};
use yoi_engine::skills::SkillError;
use yoi_engine::store::worktrees::WorktreeError;
use yoi_engine::store::StoreError;

#[derive(Debug, Error)]
pub enum CliError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Git(#[from] yoi_engine::git::GitError),
    /// `yoi worktree remove|prune` refused or failed.
    #[error(transparent)]
    Worktree(#[from] WorktreeError),
    #[error(transparent)]
    Skill(#[from] SkillError),
    #[error(transparent)]
    Workflow(#[from] yoi_engine::workflows::WorkflowError),
    #[error(transparent)]
    Offer(#[from] yoi_engine::workflows::offers::OffersError),
    /// Arguments that clap accepted but that do not make sense together.
    #[error("{0}")]
    Usage(String),
    /// A command that cannot do what was asked; the message says what to do instead.
    #[error("{0}")]
    Refused(String),
    /// `yoi pod run --once` waited and found no work (exit 3).
    #[error("no work was handed out within the wait")]
    NoWork,
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The workspace's server refused or failed the request; `message` is its error text (the
    /// store error's, for a refused operation).
    #[error("{message}")]
    Api { status: u16, message: String },
    /// The workspace's server could not be reached or answered something unreadable.
    #[error("the yoi server (pid {pid}) at {address} did not answer: {reason}; pass --local to work on the files directly")]
    Server {
        pid: u32,
        address: String,
        reason: String,
    },
    /// Doctor found errors; the report is already printed.
    #[error("doctor found errors")]
    DoctorFailed,
}

impl CliError {
    pub fn exit_code(&self) -> i32 {
        let class = match self {
            CliError::Store(e) => e.class(),
            CliError::Git(e) => e.class(),
            CliError::Worktree(e) => e.class(),
            CliError::Skill(e) => e.class(),
            CliError::Workflow(e) => e.class(),
            CliError::Offer(e) => e.class(),
            CliError::Usage(_) => ErrorClass::Invalid,
            CliError::Refused(_) | CliError::DoctorFailed => ErrorClass::Refused,
            CliError::Io { .. } | CliError::Server { .. } => ErrorClass::Internal,
            CliError::Api { status, .. } => return i32::from(exit_code_for_status(*status)),
            CliError::NoWork => return 3,
        };
        i32::from(edge(class).exit_code)
    }

    /// What to print on stderr (`None` when the output already said it).
    pub fn message(&self) -> Option<String> {
        match self {
            CliError::DoctorFailed => None,
            other => Some(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yoi_core::state::{Operation, State, TransitionError};
    use yoi_core::PrincipalKind;

    #[test]
    fn exit_codes_per_outcome() {
        let id = yoi_core::TicketId::parse("00001KXKMX0QM").unwrap();
        let cases: Vec<(CliError, i32)> = vec![
            (CliError::Usage("x".into()), 2),
            (StoreError::bad_input("title", "empty").into(), 2),
            (
                StoreError::Resolve(yoi_core::id::ResolveError::NotFound {
                    query: "ABCD".into(),
                })
                .into(),
                1,
            ),
            (
                StoreError::Transition {
                    ticket: id.clone(),
                    source: TransitionError::NotPermitted {
                        operation: Operation::Queue,
                        principal: "o".into(),
                        kind: PrincipalKind::Orchestrator,
                        allowed: vec![PrincipalKind::Human],
                    },
                }
                .into(),
                1,
            ),
            (
                StoreError::StaleState {
                    ticket: id,
                    expected: State::Ready,
                    found: State::Queued,
                }
                .into(),
                1,
            ),
            (CliError::Refused("use another command".into()), 1),
            (
                CliError::Api {
                    status: 400,
                    message: "bad title".into(),
                },
                2,
            ),
            (
                CliError::Api {
                    status: 409,
                    message: "stale".into(),
                },
                1,
            ),
            (
                CliError::Server {
                    pid: 1,
                    address: "127.0.0.1:1".into(),
                    reason: "refused".into(),
                },
                1,
            ),
            (CliError::DoctorFailed, 1),
            (CliError::NoWork, 3),
            (
                WorktreeError::Store(StoreError::bad_input("ticket", "too short")).into(),
                2,
            ),
            (
                WorktreeError::Store(StoreError::Resolve(yoi_core::id::ResolveError::NotFound {
                    query: "ABCD".into(),
                }))
                .into(),
                1,
            ),
            (
                WorktreeError::Dirty {
                    path: ".worktree/x".into(),
                    changes: vec!["a.txt".into()],
                }
                .into(),
                1,
            ),
            (WorktreeError::MainWorktree { path: "/r".into() }.into(), 1),
        ];
        for (err, code) in cases {
            assert_eq!(err.exit_code(), code, "{err}");
        }
    }
    /// The CLI through a server prints the server's error message and picks the exit code from
    /// the HTTP status; for every store error that must equal what local mode does.
    #[test]
    fn server_errors_exit_and_read_like_local_errors() {
        use yoi_core::id::ResolveError;
        use yoi_core::relation::RelationKind;
        let id = || yoi_core::TicketId::parse("00001KXKMX0QM").unwrap();
        let other = || yoi_core::TicketId::parse("00001KXKMX0QN").unwrap();
        let cases: Vec<Box<dyn Fn() -> StoreError>> = vec![
            Box::new(|| StoreError::bad_input("title", "must not be empty")),
            Box::new(|| yoi_core::TicketId::parse("nope").unwrap_err().into()),
            Box::new(|| {
                ResolveError::NotFound {
                    query: "ABCD".into(),
                }
                .into()
            }),
            Box::new(|| ResolveError::TooShort { query: "AB".into() }.into()),
            Box::new(move || {
                ResolveError::Ambiguous {
                    query: "QM".into(),
                    matches: vec![id(), other()],
                }
                .into()
            }),
            Box::new(move || StoreError::Transition {
                ticket: id(),
                source: TransitionError::NotPermitted {
                    operation: Operation::Queue,
                    principal: "o".into(),
                    kind: PrincipalKind::Orchestrator,
                    allowed: vec![PrincipalKind::Human],
                },
            }),
            Box::new(move || StoreError::Transition {
                ticket: id(),
                source: TransitionError::WrongState {
                    operation: Operation::Queue,
                    expected: vec![State::Ready],
                    found: State::Planning,
                },
            }),
            Box::new(move || StoreError::StaleState {
                ticket: id(),
                expected: State::Ready,
                found: State::Queued,
            }),
            Box::new(move || StoreError::Blocked {
                ticket: id(),
                blockers: vec![],
            }),
            Box::new(move || StoreError::BriefIncomplete {
                ticket: id(),
                missing: vec!["Intent".into()],
            }),
            Box::new(move || StoreError::ConflictingReplay {
                op: "op-1".into(),
                ticket: id().to_string(),
            }),
            Box::new(move || StoreError::SelfRelation { ticket: id() }),
            Box::new(move || StoreError::DuplicateRelation {
                ticket: id(),
                kind: RelationKind::DependsOn,
                target: other(),
            }),
            Box::new(move || StoreError::NoSuchRelation {
                ticket: id(),
                kind: RelationKind::DependsOn,
                target: other(),
            }),
            Box::new(move || StoreError::Cycle {
                ticket: id(),
                kind: RelationKind::DependsOn,
                target: other(),
                cycle: "A -> B -> A".into(),
            }),
            Box::new(|| StoreError::Locked {
                path: "/w/.yoi/local/workspace.lock".into(),
                holder: Some("pid 7".into()),
                waited: std::time::Duration::from_secs(10),
            }),
            Box::new(|| StoreError::invalid(std::path::Path::new("item.md"), Some(3), "bad")),
        ];
        for make in cases {
            let local = CliError::from(make());
            let api = yoi_server::error::ApiError::from(make());
            let remote = CliError::Api {
                status: api.status.as_u16(),
                message: api.message,
            };
            assert_eq!(remote.exit_code(), local.exit_code(), "{local}");
            assert_eq!(remote.message(), local.message());
        }
    }
}
