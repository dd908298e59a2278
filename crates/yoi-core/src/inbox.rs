//! The inbox's vocabulary: why something waits on a person. The rules that decide when an
//! entry opens and closes live in `yoi_engine::inbox`; this module only names the reasons and
//! maps the `reason` attribute of a thread's `attention` event onto them, so a reason the engine
//! raises and a reason the inbox shows can never be spelled two ways.

use serde::{Deserialize, Serialize};

/// Why an inbox entry waits on a person. Serialized as its snake_case name.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum InboxReason {
    /// Routing or a flow step failed three times in a row; nothing is dispatched until a person
    /// retries.
    CircuitOpen,
    /// A ticket used every fix round its flow allows.
    RoundsExhausted,
    /// The merge waits for uncommitted changes in the checked-out target.
    MergeDeferred,
    /// An agent asked a question and waits for the answer.
    AgentQuestion,
    /// An agent reported that it cannot go on without a decision.
    AgentBlocked,
    /// The service returned a queued or in-progress ticket to planning (an incomplete brief, a
    /// step whose flow says so, a ticket stopped after repeated failures).
    RoutingFailed,
    /// A skill proposal waits for approval.
    SkillProposal,
    /// yoi offers a workflow change (a new workflow or flow, an improvement, `auto_invoke`)
    /// that waits for a person to accept or reject it.
    WorkflowOffer,
    /// An agent profile cannot run.
    AgentUnusable,
    /// Doctor found an error.
    DoctorError,
    /// A pull request waits on a person: the approving reviews its gate needs for the head, or
    /// (`[forge] merge = "person"`) the merge itself (docs/forge.md).
    PrReview,
    /// A pull request's required checks still fail after the fix rounds its flow allows.
    ChecksFailing,
    /// A ticket spent the soft share of its budget (`[budget] soft`; docs/budgets.md).
    BudgetNear,
    /// A budget is reached: the ticket's next step waits for a person to add to it, or a daily
    /// limit paused the agents until the next UTC day.
    BudgetReached,
    /// An `attention` event with a reason this version does not know (written by a newer yoi,
    /// or by hand): shown rather than dropped.
    Other,
    /// A ticket merged and is done. Never an inbox entry — nothing waits on anyone — only a
    /// notification, for the `[[notify]]` channels that name it in `reasons`.
    Done,
}

impl InboxReason {
    pub const ALL: [InboxReason; 16] = [
        InboxReason::CircuitOpen,
        InboxReason::RoundsExhausted,
        InboxReason::MergeDeferred,
        InboxReason::AgentQuestion,
        InboxReason::AgentBlocked,
        InboxReason::RoutingFailed,
        InboxReason::SkillProposal,
        InboxReason::WorkflowOffer,
        InboxReason::AgentUnusable,
        InboxReason::DoctorError,
        InboxReason::PrReview,
        InboxReason::ChecksFailing,
        InboxReason::BudgetNear,
        InboxReason::BudgetReached,
        InboxReason::Other,
        InboxReason::Done,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            InboxReason::CircuitOpen => "circuit_open",
            InboxReason::RoundsExhausted => "rounds_exhausted",
            InboxReason::MergeDeferred => "merge_deferred",
            InboxReason::AgentQuestion => "agent_question",
            InboxReason::AgentBlocked => "agent_blocked",
            InboxReason::RoutingFailed => "routing_failed",
            InboxReason::SkillProposal => "skill_proposal",
            InboxReason::WorkflowOffer => "workflow_offer",
            InboxReason::AgentUnusable => "agent_unusable",
            InboxReason::DoctorError => "doctor_error",
            InboxReason::PrReview => "pr_review",
            InboxReason::ChecksFailing => "checks_failing",
            InboxReason::BudgetNear => "budget_near",
            InboxReason::BudgetReached => "budget_reached",
            InboxReason::Other => "other",
            InboxReason::Done => "done",
        }
    }

    /// A few words for people.
    pub fn label(self) -> &'static str {
        match self {
            InboxReason::CircuitOpen => "Circuit open",
            InboxReason::RoundsExhausted => "Fix rounds used up",
            InboxReason::MergeDeferred => "Merge deferred",
            InboxReason::AgentQuestion => "Agent asks",
            InboxReason::AgentBlocked => "Agent blocked",
            InboxReason::RoutingFailed => "Returned to planning",
            InboxReason::SkillProposal => "Skill proposal",
            InboxReason::WorkflowOffer => "Workflow offer",
            InboxReason::AgentUnusable => "Agent unusable",
            InboxReason::DoctorError => "Doctor error",
            InboxReason::PrReview => "PR waits for your review",
            InboxReason::ChecksFailing => "Checks failing after the fix rounds",
            InboxReason::BudgetNear => "Near its budget",
            InboxReason::BudgetReached => "Budget reached",
            InboxReason::Other => "Attention",
            InboxReason::Done => "Done",
        }
    }

    pub fn parse(s: &str) -> Option<InboxReason> {
        InboxReason::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The inbox reason of an `attention` event whose `reason` attribute is `attr`. Both
    /// circuits — routing's (`circuit_open`) and a flow step's (`step_circuit_open`) — are one
    /// reason to a person: something stopped until they retry.
    pub fn of_attention(attr: &str) -> InboxReason {
        match attr {
            "circuit_open" | "step_circuit_open" => InboxReason::CircuitOpen,
            "rounds_exhausted" => InboxReason::RoundsExhausted,
            "merge_deferred" => InboxReason::MergeDeferred,
            "agent_question" => InboxReason::AgentQuestion,
            "agent_blocked" => InboxReason::AgentBlocked,
            other => InboxReason::parse(other)
                .filter(|r| !matches!(r, InboxReason::Other | InboxReason::Done))
                .unwrap_or(InboxReason::Other),
        }
    }
}

impl std::fmt::Display for InboxReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_round_trips_through_its_name_and_serde() {
        for r in InboxReason::ALL {
            assert_eq!(InboxReason::parse(r.as_str()), Some(r));
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
        }
        assert_eq!(InboxReason::parse("nope"), None);
    }

    #[test]
    fn attention_reasons_map_and_unknown_ones_are_kept_as_other() {
        assert_eq!(
            InboxReason::of_attention("step_circuit_open"),
            InboxReason::CircuitOpen
        );
        assert_eq!(
            InboxReason::of_attention("merge_deferred"),
            InboxReason::MergeDeferred
        );
        assert_eq!(
            InboxReason::of_attention("doctor_error"),
            InboxReason::DoctorError
        );
        assert_eq!(
            InboxReason::of_attention("budget_exceeded"),
            InboxReason::Other
        );
    }
}
