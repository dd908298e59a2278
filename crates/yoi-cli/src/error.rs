//! The CLI's errors and the one table from error to exit code: 0 success, 1 a refused or failed
//! operation, 2 a usage error (bad arguments or input the user must correct).

use thiserror::Error;
use yoi_store::{ErrorClass, StoreError};

#[derive(Debug, Error)]
pub enum CliError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Git(#[from] yoi_git::GitError),
    /// Arguments that clap accepted but that do not make sense together.
    #[error("{0}")]
    Usage(String),
    /// A command that cannot do what was asked; the message says what to do instead.
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Doctor found errors; the report is already printed.
    #[error("doctor found errors")]
    DoctorFailed,
}

impl CliError {
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Store(e) => match e.class() {
                ErrorClass::Invalid => 2,
                _ => 1,
            },
            CliError::Git(_)
            | CliError::Refused(_)
            | CliError::Io { .. }
            | CliError::DoctorFailed => 1,
        }
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
            (CliError::DoctorFailed, 1),
        ];
        for (err, code) in cases {
            assert_eq!(err.exit_code(), code, "{err}");
        }
    }
}
