//! Who is acting. Every operation takes a principal; guards decide on its kind, and the thread
//! records its author string.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalKind {
    /// A person, through the CLI, the dashboard or a human token.
    Human,
    /// An intake pod drafting and readying tickets.
    Intake,
    /// The routing loop (or an orchestrator pod acting through it).
    Orchestrator,
    /// The service itself (merge and completion).
    Service,
    /// A role pod (coder, verifier, reviewer).
    Pod,
}

impl fmt::Display for PrincipalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PrincipalKind::Human => "human",
            PrincipalKind::Intake => "intake pod",
            PrincipalKind::Orchestrator => "orchestrator",
            PrincipalKind::Service => "service",
            PrincipalKind::Pod => "pod",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    pub kind: PrincipalKind,
    /// A person's name, or the pod's `role/name`.
    pub name: String,
}

impl Principal {
    pub fn human(name: impl Into<String>) -> Self {
        Principal {
            kind: PrincipalKind::Human,
            name: name.into(),
        }
    }

    pub fn orchestrator() -> Self {
        Principal {
            kind: PrincipalKind::Orchestrator,
            name: "yoi-orchestrator".into(),
        }
    }

    pub fn service() -> Self {
        Principal {
            kind: PrincipalKind::Service,
            name: "yoi".into(),
        }
    }

    pub fn intake(name: impl Into<String>) -> Self {
        Principal {
            kind: PrincipalKind::Intake,
            name: name.into(),
        }
    }

    pub fn pod(role: &str, name: &str) -> Self {
        Principal {
            kind: PrincipalKind::Pod,
            name: format!("{role}/{name}"),
        }
    }

    /// The `author` attribute written on thread events.
    pub fn author(&self) -> String {
        match self.kind {
            PrincipalKind::Human | PrincipalKind::Orchestrator | PrincipalKind::Service => {
                self.name.clone()
            }
            PrincipalKind::Intake => format!("intake:{}", self.name),
            PrincipalKind::Pod => format!("pod:{}", self.name),
        }
    }
}

/// Author names yoi itself writes under (the orchestrator, the service). A person or token may
/// not take one: routing trusts decision events by their author.
pub const RESERVED_AUTHORS: [&str; 2] = ["yoi-orchestrator", "yoi"];

/// Whether `name` is one of [`RESERVED_AUTHORS`] (ignoring case and surrounding spaces).
pub fn is_reserved_author(name: &str) -> bool {
    RESERVED_AUTHORS
        .iter()
        .any(|r| r.eq_ignore_ascii_case(name.trim()))
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.author())
    }
}
