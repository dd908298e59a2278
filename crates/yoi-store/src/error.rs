//! Every way a store operation can fail, one variant per outcome, with the fields a person
//! needs to fix it. Entry points classify these once (exit code, HTTP status); nothing above
//! the store matches on message text.

use std::path::{Path, PathBuf};
use std::time::Duration;

use thiserror::Error;
use yoi_core::id::{IdError, ResolveError};
use yoi_core::principal::PrincipalKind;
use yoi_core::relation::{Blocker, RelationKind};
use yoi_core::state::{State, TransitionError};
use yoi_core::TicketId;

/// Why a path beneath the tickets folder that is, or passes through, a symbolic link is refused.
pub const LINK_REASON: &str = "it, or a folder above it inside the tickets folder, is a symbolic link, and yoi follows no links there: replace the link with the real file or folder (`yoi ticket doctor` reports it as layout.symlink)";

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}{}: {reason}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        path: PathBuf,
        line: Option<usize>,
        reason: String,
    },
    #[error("the workspace is locked by {} (waited {:.1}s for {}); try again when it finishes", holder.as_deref().unwrap_or("another process"), waited.as_secs_f64(), path.display())]
    Locked {
        path: PathBuf,
        holder: Option<String>,
        waited: Duration,
    },
    #[error("no yoi workspace at {}: run `yoi init` first", root.display())]
    NotInitialized { root: PathBuf },
    #[error("{0}")]
    BadId(#[from] IdError),
    #[error("{0}")]
    Resolve(#[from] ResolveError),
    #[error("ticket {ticket}: {source}")]
    Transition {
        ticket: TicketId,
        #[source]
        source: TransitionError,
    },
    #[error("ticket {ticket} is {found}, expected {expected}: it changed since it was read")]
    StaleState {
        ticket: TicketId,
        expected: State,
        found: State,
    },
    #[error("ticket {ticket} is blocked by {}", blockers.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", "))]
    Blocked {
        ticket: TicketId,
        blockers: Vec<Blocker>,
    },
    #[error("ticket {ticket} cannot be marked ready: the brief is missing {}; add `## <heading>` sections with content to item.md", missing.join(", "))]
    BriefIncomplete {
        ticket: TicketId,
        missing: Vec<String>,
    },
    #[error("{field}: {reason}")]
    BadInput { field: String, reason: String },
    #[error("operation id `{op}` was already used for a different request on {ticket}")]
    ConflictingReplay { op: String, ticket: String },
    /// A request this operation never grants, whoever asks (the reason says what to do).
    #[error("{reason}")]
    Refused { reason: Refusal },
    /// This principal may not do this; the reason names who may.
    #[error("{reason}")]
    NotPermitted { reason: Permission },
    #[error("ticket {ticket} cannot relate to itself")]
    SelfRelation { ticket: TicketId },
    #[error("ticket {ticket} already has {kind} {target}")]
    DuplicateRelation {
        ticket: TicketId,
        kind: RelationKind,
        target: TicketId,
    },
    #[error("ticket {ticket} has no {kind} {target}")]
    NoSuchRelation {
        ticket: TicketId,
        kind: RelationKind,
        target: TicketId,
    },
    #[error("{ticket} {kind} {target} would close a cycle: {cycle}")]
    Cycle {
        ticket: TicketId,
        kind: RelationKind,
        target: TicketId,
        cycle: String,
    },
    #[error("database: {reason}")]
    Database { reason: String },
    #[error("the database {url} was written by a newer yoi (schema version {found}; this yoi knows up to {known}); upgrade yoi or point it at another database")]
    DatabaseTooNew { url: String, found: i64, known: i64 },
    #[error("{what} is not a git repository (looked for .git in it and its parents)")]
    NotGit { what: String },
    /// The database and this workspace do not go together; the problem says how and what to do.
    #[error("{problem}")]
    DatabaseSetup { problem: DbSetup },
}

/// Why a database cannot serve this workspace as configured ([`StoreError::DatabaseSetup`]),
/// each with the facts its message names; [`DbSetup::code`] is the API's `details.reason`.
/// URLs here are already redacted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DbSetup {
    #[error("{url} is PostgreSQL, which keeps many workspaces apart by their id, and .yoi/workspace.toml names none: run `yoi init` to add `[workspace] id`, and commit the file so every clone shares it")]
    NoWorkspaceId { url: String },
    #[error("{url} holds the rows of workspace `{found}`, but .yoi/workspace.toml says this is `{expected}`: point `[database] url` (or .yoi/local/database.url) at this workspace's database, or put the id back")]
    OtherWorkspace {
        url: String,
        found: String,
        expected: String,
    },
    #[error("workspace `{workspace}` is served by yoi (pid {pid}) on {host} from {root}{}, last heartbeat {seconds_ago} s ago; one server indexes a workspace: use the API there, or stop that server (its lease lapses {lease_secs} s after its last heartbeat)", address.as_ref().map(|a| format!(" at http://{a}")).unwrap_or_default())]
    ServedElsewhere {
        workspace: String,
        host: String,
        root: String,
        pid: i64,
        address: Option<String>,
        seconds_ago: i64,
        lease_secs: i64,
    },
    #[error("{url} holds no tokens, but this workspace's previous database {old} holds {tokens} token(s), {pods} pod(s) and {assignments} assignment(s): move them with `yoi db copy --to URL` (URL: the new database), or delete {old} to start afresh")]
    LeftBehind {
        url: String,
        old: String,
        tokens: i64,
        pods: i64,
        assignments: i64,
    },
    #[error("cannot create schema {schema} in {url} ({reason}): as a role that may, run `CREATE SCHEMA {schema} AUTHORIZATION <yoi's role>` or `GRANT CREATE ON DATABASE <database> TO <yoi's role>`")]
    CannotCreate {
        url: String,
        schema: String,
        reason: String,
    },
}

impl DbSetup {
    pub fn code(&self) -> &'static str {
        match self {
            DbSetup::NoWorkspaceId { .. } => "no_workspace_id",
            DbSetup::OtherWorkspace { .. } => "other_workspace",
            DbSetup::ServedElsewhere { .. } => "served_elsewhere",
            DbSetup::LeftBehind { .. } => "left_behind",
            DbSetup::CannotCreate { .. } => "cannot_create",
        }
    }

    pub fn class(&self) -> ErrorClass {
        match self {
            DbSetup::ServedElsewhere { .. } => ErrorClass::Conflict,
            _ => ErrorClass::Setup,
        }
    }
}

impl StoreError {
    /// An I/O error on `path`. Two kinds are damage to the files rather than a failure of the
    /// machine, and become [`StoreError::Invalid`] (`corrupt_file`, naming the path): a
    /// symbolic link where yoi follows none ([`crate::beneath`]), and text that is not UTF-8
    /// (with its line).
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        if crate::beneath::is_link(&source) {
            return StoreError::invalid(path, None, LINK_REASON);
        }
        if let Some(bad) = crate::beneath::not_utf8(&source) {
            return StoreError::invalid(
                path,
                Some(bad.line),
                format!("not UTF-8 (byte {})", bad.byte),
            );
        }
        StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn invalid(path: &Path, line: Option<usize>, reason: impl Into<String>) -> Self {
        StoreError::Invalid {
            path: path.to_path_buf(),
            line,
            reason: reason.into(),
        }
    }

    pub fn bad_input(field: &str, reason: impl Into<String>) -> Self {
        StoreError::BadInput {
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    /// The class an entry point maps to an exit code and HTTP status (`yoi_engine::edge`).
    pub fn class(&self) -> ErrorClass {
        match self {
            StoreError::Io { .. } | StoreError::Database { .. } => ErrorClass::Internal,
            StoreError::DatabaseTooNew { .. } => ErrorClass::Setup,
            StoreError::DatabaseSetup { problem } => problem.class(),
            StoreError::Invalid { .. } => ErrorClass::Corrupt,
            StoreError::Locked { .. } => ErrorClass::Busy,
            StoreError::NotInitialized { .. } | StoreError::NotGit { .. } => ErrorClass::Setup,
            StoreError::BadInput { .. } => ErrorClass::Invalid,
            StoreError::BadId(e) => e.class(),
            StoreError::Resolve(e) => e.class(),
            StoreError::Transition { source, .. } => source.class(),
            StoreError::NotPermitted { .. } => ErrorClass::NotPermitted,
            StoreError::StaleState { .. }
            | StoreError::Blocked { .. }
            | StoreError::ConflictingReplay { .. }
            | StoreError::DuplicateRelation { .. }
            | StoreError::Cycle { .. } => ErrorClass::Conflict,
            StoreError::NoSuchRelation { .. } => ErrorClass::NotFound,
            StoreError::BriefIncomplete { .. }
            | StoreError::SelfRelation { .. }
            | StoreError::Refused { .. } => ErrorClass::Refused,
        }
    }

    /// The stable, machine-readable name of the outcome (the API's `error.code`, listed in
    /// docs/api.md). A refusal or a principal refusal answers its class's code and names its
    /// rule in [`StoreError::reason`].
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Resolve(ResolveError::Ambiguous { .. }) => "ambiguous_id",
            StoreError::Transition { source, .. } => match source {
                TransitionError::NotPermitted { .. } => "forbidden",
                TransitionError::WrongState { .. }
                | TransitionError::NoEdge { .. }
                | TransitionError::Unchanged { .. } => "wrong_state",
            },
            StoreError::StaleState { .. } => "stale_state",
            StoreError::Blocked { .. } => "blocked",
            StoreError::ConflictingReplay { .. } => "conflicting_replay",
            StoreError::DuplicateRelation { .. } => "duplicate_relation",
            StoreError::Cycle { .. } => "cycle",
            StoreError::BriefIncomplete { .. } => "brief_incomplete",
            StoreError::SelfRelation { .. } => "self_relation",
            StoreError::Invalid { .. } => "corrupt_file",
            StoreError::Refused { .. }
            | StoreError::NotPermitted { .. }
            | StoreError::BadId(_)
            | StoreError::BadInput { .. }
            | StoreError::Resolve(_)
            | StoreError::NoSuchRelation { .. }
            | StoreError::Locked { .. }
            | StoreError::Io { .. }
            | StoreError::Database { .. }
            | StoreError::DatabaseTooNew { .. }
            | StoreError::DatabaseSetup { .. }
            | StoreError::NotInitialized { .. }
            | StoreError::NotGit { .. } => self.class().code(),
        }
    }

    /// The rule a refusal names (the API's `details.reason`): [`Refusal::code`] or
    /// [`Permission::code`]; `None` for every other outcome.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            StoreError::Refused { reason } => Some(reason.code()),
            StoreError::NotPermitted { reason } => Some(reason.code()),
            StoreError::DatabaseSetup { problem } => Some(problem.code()),
            _ => None,
        }
    }
}

pub use yoi_core::ErrorClass;

/// Why a request is refused whoever asks ([`StoreError::Refused`]): one variant per rule, with
/// the facts its message names. [`Refusal::code`] is the stable name the API reports.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Refusal {
    #[error("the ticket is {state}: its IntentPacket was frozen at acceptance (artifacts/intent-packet.json) and is what the work follows")]
    PacketFrozen { state: State },
    #[error("rewriting {path} would give a file that does not read back ({problem}); nothing was written, edit its frontmatter by hand")]
    RewriteUnreadable { path: String, problem: String },
    #[error("accepted_plan records are written by the orchestrator when it accepts a ticket")]
    AcceptedPlanIsTheRouters,
    #[error("{blocked} is in progress, and {blocker} ({blocker_state}) would block it after its work started; return it to planning first (`yoi ticket return-to-planning {blocked} --reason R`), or relate them with `related`")]
    BlockerAfterStart {
        blocked: TicketId,
        blocker: TicketId,
        blocker_state: State,
    },
    #[error("a group commit cannot run inside another")]
    NestedGroup,
    /// The group commit a mutation was part of failed before it: the group's error, as written.
    #[error("{message}")]
    GroupFailed { message: String },
    #[error("{} is not 64 hex digits; delete it and restart the server (tokens handed to running agents stop working)", path.display())]
    BadKeyFile { path: PathBuf },
    #[error("ticket {ticket} has no accepted plan; it was never accepted")]
    NeverAccepted { ticket: TicketId },
    #[error("ticket {ticket}'s accepted plan names no branch or worktree")]
    AcceptedPlanIncomplete { ticket: TicketId },
    /// Routing found the ticket not ready to accept (the message says what is missing).
    #[error("{message}")]
    NotReadyToAccept { message: String },
    #[error("{field} holds the bidirectional control U+{code_point:04X} at character {position}; such controls make text display in another order than it is stored, so titles and names may not carry them: remove it")]
    BidiControl {
        field: String,
        position: usize,
        code_point: u32,
    },
    #[error("add a positive amount of USD (`--add`, `add_usd`) or of tokens (`--add-tokens`, `add_tokens`) to a budget; nothing was written")]
    NoBudgetAmount,
    #[error("ticket {ticket} has no open question to answer: no agent asked since the last answer, retry or state change (`yoi ticket show {ticket}` shows its thread)")]
    NoOpenQuestion { ticket: TicketId },
}

impl Refusal {
    /// Refuse `value` of `field` (a title or a name) when it holds a bidirectional control.
    pub fn check_bidi(field: &str, value: &str) -> Result<(), StoreError> {
        match yoi_core::text::first_bidi_control(value) {
            None => Ok(()),
            Some((position, c)) => Err(StoreError::Refused {
                reason: Refusal::BidiControl {
                    field: field.to_string(),
                    position,
                    code_point: u32::from(c),
                },
            }),
        }
    }

    /// The stable, machine-readable name of the rule (the API's `details.reason`).
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::PacketFrozen { .. } => "packet_frozen",
            Refusal::RewriteUnreadable { .. } => "rewrite_unreadable",
            Refusal::AcceptedPlanIsTheRouters => "accepted_plan_is_the_routers",
            Refusal::BlockerAfterStart { .. } => "blocker_after_start",
            Refusal::NestedGroup => "nested_group",
            Refusal::GroupFailed { .. } => "group_failed",
            Refusal::BadKeyFile { .. } => "bad_key_file",
            Refusal::NeverAccepted { .. } => "never_accepted",
            Refusal::AcceptedPlanIncomplete { .. } => "accepted_plan_incomplete",
            Refusal::NotReadyToAccept { .. } => "not_ready_to_accept",
            Refusal::BidiControl { .. } => "bidi_control",
            Refusal::NoBudgetAmount => "no_budget_amount",
            Refusal::NoOpenQuestion { .. } => "no_open_question",
        }
    }
}

/// Who may do what this principal asked ([`StoreError::NotPermitted`]): one variant per rule,
/// naming the kind that asked.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Permission {
    #[error(
        "a {kind} cannot submit an IntentPacket; people, intake pods and the orchestrator can"
    )]
    SubmitPacket { kind: PrincipalKind },
    #[error("only a person may retry routing; {kind} asked")]
    Retry { kind: PrincipalKind },
    #[error("only the orchestrator raises attention events; {kind} asked")]
    RaiseAttention { kind: PrincipalKind },
    #[error("only the orchestrator records attempts; {kind} asked")]
    RecordAttempt { kind: PrincipalKind },
    #[error("an agent's token activates skills for its own assignment {own} only")]
    ActivateForOwnAssignment { own: String },
    #[error("only a person may add to a ticket's budget; {kind} asked")]
    AddBudget { kind: PrincipalKind },
    #[error("only a person may answer an agent's question; {kind} asked")]
    Answer { kind: PrincipalKind },
}

impl Permission {
    /// The stable, machine-readable name of the rule (the API's `details.reason`).
    pub fn code(&self) -> &'static str {
        match self {
            Permission::SubmitPacket { .. } => "submit_packet",
            Permission::Retry { .. } => "retry",
            Permission::RaiseAttention { .. } => "raise_attention",
            Permission::RecordAttempt { .. } => "record_attempt",
            Permission::ActivateForOwnAssignment { .. } => "activate_for_own_assignment",
            Permission::AddBudget { .. } => "add_budget",
            Permission::Answer { .. } => "answer",
        }
    }
}
