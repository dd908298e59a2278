//! The facts an error answer carries in `error.details`: one named type per shape, serialised
//! as they are and described by the same types in the OpenAPI document (`ErrorDetails`, a
//! `oneOf` of closed objects no two of which an answer can fit at once). `error.rs` picks the
//! shape for each error variant; an error with nothing to add has no `details`.

use serde::Serialize;
use utoipa::ToSchema;
use yoi_core::principal::PrincipalKind;
use yoi_core::relation::Blocker;
use yoi_core::state::State;
use yoi_core::TicketId;
use yoi_db::AssignmentStatus;

/// Every rule an answer can name in `details.reason`: a `refused` (422) or `forbidden` (403)
/// answer's (`Refusal::code` and `Permission::code` in yoi-store) and a database set-up
/// problem's (`DbSetup::code`). The document gives `RuleDetails.reason` this enumeration; the
/// CLI's `error_edges` tests answer every rule and check it is here.
pub const RULES: &[&str] = &[
    "packet_frozen",
    "rewrite_unreadable",
    "accepted_plan_is_the_routers",
    "blocker_after_start",
    "nested_group",
    "group_failed",
    "bad_key_file",
    "never_accepted",
    "accepted_plan_incomplete",
    "not_ready_to_accept",
    "bidi_control",
    "no_budget_amount",
    "no_open_question",
    "submit_packet",
    "retry",
    "raise_attention",
    "record_attempt",
    "activate_for_own_assignment",
    "add_budget",
    "answer",
    "no_workspace_id",
    "other_workspace",
    "served_elsewhere",
    "left_behind",
    "cannot_create",
];

/// `error.details`, by shape. Variants are listed from the most fields to the fewest, the order
/// in which a generated client that tries each in turn finds the right one.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ErrorDetails {
    StaleFence(StaleFenceDetails),
    WrongState(WrongStateDetails),
    StaleState(StaleStateDetails),
    Blocked(BlockedDetails),
    BriefIncomplete(BriefIncompleteDetails),
    NotPermitted(NotPermittedDetails),
    ConflictingReplay(ConflictingReplayDetails),
    File(FileDetails),
    Ambiguous(AmbiguousDetails),
    Cycle(CycleDetails),
    Rule(RuleDetails),
    Paths(PathsDetails),
    Ticket(TicketDetails),
}

/// `stale_fence`: the fence a pod sent is not the assignment's current one.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StaleFenceDetails {
    pub assignment: String,
    /// The fence the request carried.
    pub fence: i64,
    pub current_fence: i64,
    pub status: AssignmentStatus,
}

/// `wrong_state`: the operation starts from one of `expected`, and the ticket is `found`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WrongStateDetails {
    pub ticket: TicketId,
    pub expected: Vec<State>,
    pub found: State,
}

/// `stale_state`: the request's `expected_state` (or the state an operation needs) is not the
/// ticket's.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StaleStateDetails {
    pub ticket: TicketId,
    pub expected: State,
    pub found: State,
}

/// `blocked`: the ticket's open blockers.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BlockedDetails {
    pub ticket: TicketId,
    pub blockers: Vec<Blocker>,
}

/// `brief_incomplete`: the brief sections mark-ready still needs.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BriefIncompleteDetails {
    pub ticket: TicketId,
    pub missing: Vec<String>,
}

/// `forbidden` by the state machine's guard: who may do this operation.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NotPermittedDetails {
    pub ticket: TicketId,
    pub allowed: Vec<PrincipalKind>,
}

/// `conflicting_replay`: the idempotency key was used for a different request.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConflictingReplayDetails {
    pub idempotency_key: String,
    pub ticket: String,
}

/// `invalid` or `corrupt_file` about a file: which one, and the line when known.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FileDetails {
    pub path: String,
    pub line: Option<usize>,
}

/// `ambiguous_id`: every ticket the given suffix matches.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AmbiguousDetails {
    pub matches: Vec<TicketId>,
}

/// `cycle`: the cycle the relation would close, as a path of ticket ids.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CycleDetails {
    pub cycle: String,
}

/// `refused` or `forbidden` by a store rule: the rule's stable name.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RuleDetails {
    #[schema(value_type = String)]
    pub reason: &'static str,
}

/// `touches_tickets`: the paths under `.yoi/tickets` a result changed.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PathsDetails {
    pub paths: Vec<String>,
}

/// The ticket a refused state change was asked for (no edge, or no change).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TicketDetails {
    pub ticket: TicketId,
}
