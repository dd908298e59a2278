//! Assignments, leases and fences (DESIGN §7, docs/pods.md): what pods claim, how long a claim
//! lives, and what a result, a failure or a silence means.
//!
//! - **One row, one attempt.** A step handed out again is a new row with attempt + 1 and
//!   fence + 1; at most one row per (ticket, step) is live, which the schema enforces.
//! - **The fence guards everything after a claim.** Heartbeat, complete and fail name the fence
//!   they were given; anything but the live claim of the same pod with an unexpired lease is
//!   refused ([`AssignmentError::StaleFence`], 409) and changes nothing — row, thread, branch.
//! - **The fence protects the branch too.** Only [`complete`] moves a ticket branch, by
//!   compare-and-swap from the head the claim was prepared at, to a commit that descends from it
//!   and leaves `.yoi/tickets/` alone, and only while the claim is live. A coder works in a
//!   detached worktree, so its own commits move nothing; an attempt after the first gets a fresh
//!   worktree, so it never shares a folder with an earlier attempt's process that may still run.
//! - **Silence is a failure.** [`expire_due`] is a step function: a claim whose lease ran out is
//!   recorded as expired and the step handed out again.
//! - **Bounded.** Three failed or expired attempts of one step in a row open the ticket's circuit
//!   (an `attention` event; no new attempt) until a person runs `yoi ticket retry`.
//! - **Claims and heartbeats never write the thread**; one `assignment` event is appended when
//!   an attempt ends.
//!
//! Completion, failure and expiry of one workspace are serialised by one lock in this module,
//! so a lease cannot run out between the check and the branch move of a result.

pub mod agent_token;
pub mod attempt_ref;
mod claim;
mod decided;
mod finish;
pub mod flow;
mod kept;
mod lease;
mod merge;
pub mod pr;
mod pr_status;
pub mod questions;
pub mod transport;

use std::path::PathBuf;
use std::sync::Mutex;
use yoi_core::Role;

use thiserror::Error;
use yoi_core::packet::FrozenPacket;
use yoi_core::{ErrorClass, TicketId};
use yoi_db::{Assignment, AssignmentStatus};
use yoi_store::error::Refusal;
use yoi_store::{StoreError, Workspace};

pub use claim::{
    append_log, attempt_dir, claim, claim_many, hand_out, heartbeat, heartbeat_running, pod_of,
    register_pod, Claimed, HeartbeatReply, PodCaller, PodIntro, Work,
};
pub use finish::{complete, fail, resume_after_retry, Completed};
pub use kept::KeptWork;
pub use lease::{expire_due, ExpireOutcome};
pub use merge::{flow_tick, FlowTick, MERGE_DEFERRED};
pub use pr::{forge_tick, ForgeEnv, ForgeTick};

/// The `attention` reason of an assignment circuit.
pub const STEP_CIRCUIT_OPEN: &str = "step_circuit_open";
/// The `attention` reason of a step stopped because its agent reported `blocked`: it waits for
/// a person's decision, and a `retry` hands the step out again.
pub const AGENT_BLOCKED: &str = "agent_blocked";
/// The `attention` reason of a step stopped because its agent cannot run on the pod that
/// claimed it (its program is not installed, its profile is wrong): handing it out again would
/// fail the same way, so a person fixes the agent and retries.
pub const AGENT_UNUSABLE: &str = "agent_unusable";

/// Serialises the result paths (complete, fail, expire) within this process.
static RESULTS: Mutex<()> = Mutex::new(());

fn results_lock() -> std::sync::MutexGuard<'static, ()> {
    RESULTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Lease timing, from `[pods]` in the workspace configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseConfig {
    /// How long a claim lives without a heartbeat.
    pub lease_ms: i64,
    /// How often pods are told to heartbeat (a third of the lease by default).
    pub heartbeat_ms: i64,
}

impl LeaseConfig {
    pub fn of(ws: &Workspace) -> LeaseConfig {
        let p = &ws.config.pods;
        LeaseConfig {
            lease_ms: (p.lease_secs as i64).saturating_mul(1000),
            heartbeat_ms: (p.heartbeat_secs as i64).saturating_mul(1000),
        }
    }
}

pub use yoi_core::report::{CostSource, Report, ReportOutcome, Usage};

#[derive(Debug, Error)]
pub enum AssignmentError {
    #[error("no assignment {id}")]
    NotFound { id: String },
    #[error("assignment {id} is not held with fence {fence} (it is {status:?} at fence {current}): the lease was lost or the result is late; nothing was changed")]
    StaleFence {
        id: String,
        fence: i64,
        current: i64,
        status: AssignmentStatus,
    },
    #[error("assignment {id} is held by another pod, not {pod}")]
    NotYours { id: String, pod: String },
    #[error("a {token_role} pod cannot {action} {role} work")]
    WrongRole {
        token_role: String,
        role: String,
        action: &'static str,
    },
    #[error("pod {pod} is not registered; register it first")]
    UnknownPod { pod: String },
    #[error("assignment {id}: {reason}")]
    BadResult { id: String, reason: String },
    #[error("assignment {id}: the commit changes {}; work branches must not modify ticket files", paths.join(", "))]
    TouchesTickets { id: String, paths: Vec<String> },
    #[error("assignment {id}: preparing the working directory failed: {reason}")]
    Prepare { id: String, reason: String },
    /// The remote pods go through (`[pods] transport = "remote"`) did not take a push or a
    /// fetch; nothing was handed out or moved, and the same call may be made again.
    #[error("the remote `{remote}` of `[pods] transport = \"remote\"` could not be reached; nothing was changed, try again: {reason}")]
    RemoteUnreachable { remote: String, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Git(#[from] yoi_git::GitError),
}

impl AssignmentError {
    /// The class an entry point maps to an exit code and HTTP status.
    pub fn class(&self) -> ErrorClass {
        match self {
            AssignmentError::NotFound { .. } | AssignmentError::UnknownPod { .. } => {
                ErrorClass::NotFound
            }
            AssignmentError::StaleFence { .. } => ErrorClass::Conflict,
            AssignmentError::NotYours { .. } | AssignmentError::WrongRole { .. } => {
                ErrorClass::NotPermitted
            }
            AssignmentError::BadResult { .. } => ErrorClass::Invalid,
            AssignmentError::TouchesTickets { .. } => ErrorClass::Refused,
            AssignmentError::Prepare { .. } => ErrorClass::Internal,
            AssignmentError::RemoteUnreachable { .. } => ErrorClass::Busy,
            AssignmentError::Store(e) => e.class(),
            AssignmentError::Git(e) => e.class(),
        }
    }

    /// The stable, machine-readable name of the outcome (the API's `error.code`).
    pub fn code(&self) -> &'static str {
        match self {
            AssignmentError::StaleFence { .. } => "stale_fence",
            AssignmentError::TouchesTickets { .. } => "touches_tickets",
            AssignmentError::RemoteUnreachable { .. } => "remote_unreachable",
            AssignmentError::Store(e) => e.code(),
            AssignmentError::NotFound { .. }
            | AssignmentError::NotYours { .. }
            | AssignmentError::WrongRole { .. }
            | AssignmentError::UnknownPod { .. }
            | AssignmentError::BadResult { .. }
            | AssignmentError::Prepare { .. }
            | AssignmentError::Git(_) => self.class().code(),
        }
    }
}

/// Where a ticket is being worked: its branch and worktree from the latest accepted plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkPlace {
    pub branch: String,
    pub worktree: PathBuf,
    /// Where the ticket branch began (the accepted plan's base commit), when recorded.
    pub base_commit: Option<String>,
}

pub(crate) fn work_place(ws: &Workspace, ticket: &TicketId) -> Result<WorkPlace, StoreError> {
    let plan = ws.read_plan(ticket)?;
    let accepted = yoi_store::latest_accepted(plan.iter()).ok_or_else(|| StoreError::Refused {
        reason: Refusal::NeverAccepted {
            ticket: ticket.clone(),
        },
    })?;
    let (Some(branch), Some(worktree)) = (&accepted.branch, &accepted.worktree) else {
        return Err(StoreError::Refused {
            reason: Refusal::AcceptedPlanIncomplete {
                ticket: ticket.clone(),
            },
        });
    };
    Ok(WorkPlace {
        branch: branch.clone(),
        worktree: ws.root().join(worktree),
        base_commit: accepted.base_commit.clone(),
    })
}

/// The frozen packet of a ticket, if it was frozen.
pub(crate) fn packet(
    ws: &Workspace,
    ticket: &TicketId,
) -> Result<Option<FrozenPacket>, StoreError> {
    ws.read_frozen_packet(ticket)
}

/// The id of a new assignment.
pub(crate) fn new_id(now: yoi_core::Timestamp) -> String {
    format!("asg-{}", yoi_store::ops::new_ulid(now))
}

/// What a failure of `a`'s step leads to, from the ticket's flow (yoi's own steps, and a
/// ticket whose flow cannot be read, use the default: two more tries, then a person).
pub(crate) fn on_failure(ws: &Workspace, a: &Assignment) -> yoi_core::flow::OnFailure {
    TicketId::parse(&a.ticket)
        .ok()
        .and_then(|t| crate::flows::of_ticket(ws, &t).ok())
        .and_then(|f| f.step(&a.step).map(|s| s.on_failure))
        .unwrap_or(yoi_core::flow::DEFAULT_ON_FAILURE)
}

/// Whether `a`'s step is handed out again after `in_a_row` failed attempts in a row.
pub(crate) fn retries_left(ws: &Workspace, a: &Assignment, in_a_row: usize) -> bool {
    in_a_row < on_failure(ws, a).stop_after()
}

/// The next attempt of `a`'s step: attempt + 1, fence + 1, pending. A read-only step keeps the
/// exact commit it works on; a coder's starts from the branch head at its claim.
pub(crate) fn next_attempt(a: &Assignment, now: yoi_core::Timestamp) -> Assignment {
    let now_ms = now.unix_millis();
    Assignment {
        id: new_id(now),
        ticket: a.ticket.clone(),
        step: a.step.clone(),
        role: a.role.clone(),
        attempt: a.attempt + 1,
        fence: a.fence + 1,
        status: AssignmentStatus::Pending,
        created_ms: now_ms,
        updated_ms: now_ms,
        head_commit: (!Role::Coder.is(&a.role))
            .then(|| a.head_commit.clone())
            .flatten(),
        ..Assignment::default()
    }
}
