//! The roles that work tickets, and the steps yoi runs itself.
//!
//! A [`Role`] names who runs a step or holds a pod token: the three role pods of a flow, the
//! service (which merges), and the two pods that speak for people and for routing. Rows and
//! files store a role by its name ([`Role::as_str`]); code compares with the enum, so a
//! misspelt role does not compile. A [`ServiceStep`] is a step no flow file lists but yoi adds
//! when it needs one: bringing a moved target into the branch, and validating a computed merge.

use serde::{Deserialize, Serialize};

/// Who runs a step, or what a pod token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Writes the code: returns a commit.
    Coder,
    /// Runs the brief's validation commands: returns checks.
    Verifier,
    /// Reads the change: returns a verdict.
    Reviewer,
    /// yoi itself: the merge.
    Service,
    /// Routes tickets (an orchestrator pod, or the router inside `yoi serve`).
    Orchestrator,
    /// Drafts and readies tickets for people.
    Intake,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::Coder,
        Role::Verifier,
        Role::Reviewer,
        Role::Service,
        Role::Orchestrator,
        Role::Intake,
    ];

    /// The roles a pod may run as (every one but the service's).
    pub const PODS: [Role; 5] = [
        Role::Coder,
        Role::Verifier,
        Role::Reviewer,
        Role::Orchestrator,
        Role::Intake,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Coder => "coder",
            Role::Verifier => "verifier",
            Role::Reviewer => "reviewer",
            Role::Service => "service",
            Role::Orchestrator => "orchestrator",
            Role::Intake => "intake",
        }
    }

    /// The role a stored name stands for.
    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// Whether a stored name is this role.
    pub fn is(self, name: &str) -> bool {
        self.as_str() == name
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A step yoi adds to a ticket's run itself, outside its flow's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceStep {
    /// The coder merges a target that moved on into the branch by hand (after a conflict, or
    /// after a computed merge failed its validation).
    Integrate,
    /// The verifier validates a merge commit yoi computed before the target moves.
    MergeVerify,
}

impl ServiceStep {
    pub const ALL: [ServiceStep; 2] = [ServiceStep::Integrate, ServiceStep::MergeVerify];

    pub const fn as_str(self) -> &'static str {
        match self {
            ServiceStep::Integrate => "integrate",
            ServiceStep::MergeVerify => "merge-verify",
        }
    }

    /// The role that runs it.
    pub const fn role(self) -> Role {
        match self {
            ServiceStep::Integrate => Role::Coder,
            ServiceStep::MergeVerify => Role::Verifier,
        }
    }

    /// The step a stored id stands for, when it is one of these.
    pub fn parse(id: &str) -> Option<ServiceStep> {
        ServiceStep::ALL.into_iter().find(|s| s.as_str() == id)
    }

    /// Whether a stored step id is this step.
    pub fn is(self, id: &str) -> bool {
        self.as_str() == id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_and_service_step_reads_back_from_its_name() {
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Some(r));
            assert_eq!(
                serde_json::to_value(r).unwrap(),
                serde_json::Value::String(r.as_str().into())
            );
        }
        for s in ServiceStep::ALL {
            assert_eq!(ServiceStep::parse(s.as_str()), Some(s));
        }
        assert_eq!(Role::parse("coders"), None);
        assert!(!Role::PODS.contains(&Role::Service));
    }
}
