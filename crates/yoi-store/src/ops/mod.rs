//! Ticket operations: the one place each mutation is implemented.
//!
//! Every operation takes the workspace lock (waiting for it), re-reads what it decides on inside
//! the lock, checks its guards, and only then writes: the thread event first (the audit record,
//! appended and fsynced), then the rewritten files atomically. CLI, API and pods all call these
//! functions; none of them re-checks or skips a guard.
//!
//! Idempotency: an operation given an operation id stores it on its thread event (`op`) with a
//! fingerprint of the request (`fp`). Replaying the same id with the same request returns the
//! first result without writing; the same id with a different request is refused.

mod create;
mod edit;
mod forge;
mod plan;
mod question;
mod relation;
mod signal;
mod transition;
mod workflow;
mod worktree_disposal;

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use yoi_core::principal::Principal;
use yoi_core::state::State;
use yoi_core::thread::{Event, ParsedThread};
use yoi_core::{sha256_hex, TicketId, Timestamp};

use crate::error::{Refusal, StoreError};
use crate::index_hook::OpRecord;
use crate::tickets::THREAD;
use crate::workspace::Workspace;

pub use create::{create, CreateRequest};
pub use edit::{comment, edit, submit_packet, CommentRequest, EditRequest, COMMENT_KINDS};
pub use forge::record_forge;
pub use plan::{add_plan_record, PlanRequest};
pub use question::{
    answer, ask, open_question, unapplied_state_change, MAX_ANSWER_CHARS, QUESTION,
};
pub use relation::{add_relation, remove_relation, RelationRequest};
pub use signal::{
    add_budget, attention, record_attempt, retry, ADD_TOKENS, ADD_USD, ATTENTION_REASON,
    CIRCUIT_OPEN, RETRY_STATES,
};
pub use transition::{
    accept, cancel, close, complete, mark_ready, queue, reopen, return_to_planning, AcceptEvidence,
    MergeEvidence, TransitionRequest, MAX_REASON_CHARS,
};
pub use workflow::{
    invoke_workflow, record_agent_invocation, record_assembly, InvokeRequest, AGENT_WORKFLOW,
    ASSEMBLY, ASSIGNMENT, INVOKE_STATES, WORKFLOW, WORKFLOW_ROLE,
};
/// The longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 1024;

/// Who is acting, under which operation id, and when.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub principal: Principal,
    pub op: Option<String>,
    /// The time written into files: whole seconds.
    pub now: Timestamp,
    /// The full-precision time, for the time part of new ids, so that ids made within one
    /// second still sort in creation order.
    pub precise: Timestamp,
}

impl Ctx {
    pub fn new(principal: Principal, now: Timestamp) -> Self {
        Ctx {
            principal,
            op: None,
            now: now.to_seconds(),
            precise: now,
        }
    }

    pub fn with_op(mut self, op: Option<String>) -> Self {
        self.op = op;
        self
    }
}

/// Every name an [`Outcome::operation`] can hold: the state machine's operations
/// ([`Operation::as_str`](yoi_core::state::Operation::as_str)) and the operations that change no
/// state. The API's document gives `OperationResult.operation` this enumeration; a debug build
/// refuses to finish an operation whose name is not here.
pub const OPERATIONS: [&str; 22] = [
    "create",
    "edit",
    "submit_packet",
    "comment",
    "retry",
    "attention",
    "record_attempt",
    "record_forge",
    "relation_add",
    "relation_rm",
    "plan_add",
    "mark-ready",
    "queue",
    "return-to-planning",
    "accept",
    "complete",
    "close",
    "cancel",
    "reopen",
    "add_budget",
    "ask",
    "answer",
];

/// What a mutation did. A replay returns the same value with `replayed: true`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = OperationResult)]
pub struct Outcome {
    pub ticket: TicketId,
    pub operation: String,
    /// Id of the thread event that records it (absent for plan records and legacy events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<State>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<State>,
    pub replayed: bool,
    /// Set when the files were written but the database index could not be updated; the next
    /// start-up reindex repairs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_error: Option<String>,
    /// Sentences for the person who asked, about what the operation did beyond the state change
    /// (for example what `cancel` did with the ticket's worktree); one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

static IDS: Mutex<Option<ulid::Generator>> = Mutex::new(None);

/// A new event id: a ULID, monotonic within this process.
pub fn new_ulid(now: Timestamp) -> ulid::Ulid {
    let mut guard = IDS.lock().unwrap_or_else(|p| p.into_inner());
    let generator = guard.get_or_insert_with(ulid::Generator::new);
    let time =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(now.unix_millis().max(0) as u64);
    generator
        .generate_from_datetime(time)
        .unwrap_or_else(|_| ulid::Ulid::from_datetime(time))
}

/// Check an operation id supplied by a caller.
pub fn validate_op(op: &str) -> Result<(), StoreError> {
    if op.is_empty()
        || op.len() > 200
        || op
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '"')
    {
        return Err(StoreError::bad_input(
            "operation id",
            "must be 1 to 200 characters without spaces, quotes or control characters",
        ));
    }
    Ok(())
}

/// Fingerprint of a request: operation, ticket and payload.
pub fn fingerprint(operation: &str, ticket: &str, payload: &serde_json::Value) -> String {
    let canonical = serde_json::json!({ "op": operation, "ticket": ticket, "payload": payload });
    sha256_hex(canonical.to_string().as_bytes())[..16].to_string()
}

/// The replay decision for `ctx.op`: the index's record first (it also catches an id reused
/// on another ticket), then the thread's event carrying the id (the durable record).
pub(crate) fn replay_of(
    ws: &Workspace,
    thread: &ParsedThread,
    ctx: &Ctx,
    fp: &str,
    ticket: &TicketId,
    operation: &str,
) -> Result<Option<Outcome>, StoreError> {
    let Some(op) = &ctx.op else { return Ok(None) };
    let conflict = || StoreError::ConflictingReplay {
        op: op.clone(),
        ticket: ticket.to_string(),
    };
    let recorded = match &ws.index {
        Some(index) => index.0.find_operation(op)?,
        None => None,
    };
    // An operation earlier in this group commit is not in the index yet.
    if let Some(rec) = recorded.or_else(|| ws.writes.queued_operation(op)) {
        if rec.fingerprint != fp {
            return Err(conflict());
        }
        return Ok(Some(Outcome {
            replayed: true,
            index_error: None,
            ..rec.outcome
        }));
    }
    match thread.events.iter().find(|e| e.op() == Some(op.as_str())) {
        None => Ok(None),
        Some(e) if e.get("fp") == Some(fp) => Ok(Some(edit::replayed(ticket, operation, e))),
        Some(_) => Err(conflict()),
    }
}

/// After the files are written (lock still held): update the index and remember the operation.
pub(crate) fn finish(ws: &Workspace, ctx: &Ctx, fp: &str, mut outcome: Outcome) -> Outcome {
    debug_assert!(
        OPERATIONS.contains(&outcome.operation.as_str()),
        "the operation `{}` is not in yoi_store::ops::OPERATIONS (nor in the API's document)",
        outcome.operation
    );
    ws.writes.hit("files.written");
    if ws.index.is_none() {
        return outcome;
    }
    let record = ctx.op.as_ref().map(|op| OpRecord {
        op_id: op.clone(),
        fingerprint: fp.to_string(),
        ticket: outcome.ticket.clone(),
        operation: outcome.operation.clone(),
        outcome: outcome.clone(),
    });
    // In a group commit the index reads the files once they are in place, at its end.
    if ws.writes.defer_index(&outcome.ticket, record.clone()) {
        return outcome;
    }
    let Some(index) = &ws.index else {
        return outcome;
    };
    if let Err(e) =
        index
            .0
            .tickets_changed(ws, std::slice::from_ref(&outcome.ticket), record.as_slice())
    {
        outcome.index_error = Some(e.to_string());
    }
    outcome
}

/// Stamp the standard attributes on a new event: id, author, at, then op and fingerprint.
pub(crate) fn stamp(event: Event, ctx: &Ctx, fp: &str) -> Event {
    let mut e = Event {
        attrs: Vec::new(),
        ..event.clone()
    };
    e.set("id", new_ulid(ctx.precise).to_string());
    e.set("author", ctx.principal.author());
    e.set("at", ctx.now.to_string());
    for (k, v) in event.attrs {
        e.set(&k, v);
    }
    if let Some(op) = &ctx.op {
        e.set("op", op.clone());
        e.set("fp", fp);
    }
    e
}

/// Append events to a ticket's thread in one synced write.
pub(crate) fn append_events(
    ws: &Workspace,
    id: &TicketId,
    events: &[Event],
) -> Result<(), StoreError> {
    let path = ws.path_of(id, THREAD);
    for e in events {
        e.validate()
            .map_err(|err| StoreError::bad_input("event", err.to_string()))?;
    }
    ws.writes.hit("thread.appending");
    let existing = ws.writes.len(&path);
    let mut text = String::new();
    for e in events {
        if existing > 0 || !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&e.render());
    }
    ws.writes
        .append_sync(&path, text.as_bytes())
        .map_err(|e| StoreError::io(&path, e))?;
    ws.writes.hit("thread.appended");
    Ok(())
}

/// Say that `dir`, a ticket's `artifacts/`, changed: its modification time is set to the
/// file system's now (`UTIME_NOW`, not yoi's clock, which a caller may set), after yoi wrote a
/// file inside it. A server short of inotify watches for every `artifacts/` folder watches only
/// the ticket folders (yoi-db's `Coverage::Folders`, docs/database.md), where this is an
/// attribute change of `artifacts`: yoi's own write inside the folder is then seen at once, not
/// at the server's periodic look at every file. A failure is no error: the write itself was
/// made, and the periodic look still finds it.
pub(crate) fn artifacts_changed(dir: &std::path::Path) {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    // Never through a symbolic link: only the folder itself is marked.
    let Ok(folder) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir)
    else {
        return;
    };
    let times = [
        libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
    ];
    // SAFETY: `folder` is an open descriptor for the call's length and `times` two timespecs.
    let _ = unsafe { libc::futimens(folder.as_raw_fd(), times.as_ptr()) };
}

/// Write item.md atomically.
pub(crate) fn write_item(
    ws: &Workspace,
    id: &TicketId,
    item: &yoi_core::Item,
) -> Result<(), StoreError> {
    let path = ws.path_of(id, crate::tickets::ITEM);
    let text = item.render();
    // Never write a file that would not read back (an older frontmatter whose aliases render
    // out past the YAML bounds, say): the mutation is refused and the old file stays.
    if let Err(e) = yoi_core::Item::parse(&text) {
        return Err(StoreError::Refused {
            reason: Refusal::RewriteUnreadable {
                path: ws.rel(&path),
                problem: e.to_string(),
            },
        });
    }
    ws.writes
        .atomic_write(&path, text.as_bytes())
        .map_err(|e| StoreError::io(&path, e))
}

/// A required one-line text field of at most `max` characters (counted as given, before
/// surrounding whitespace is trimmed; the API document states the same rule).
pub(crate) fn one_line(field: &str, value: &str, max: usize) -> Result<String, StoreError> {
    if value.chars().count() > max {
        return Err(StoreError::bad_input(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    let v = value.trim();
    if v.is_empty() {
        return Err(StoreError::bad_input(field, "must not be empty"));
    }
    if v.contains(['\n', '\r']) || v.chars().any(char::is_control) {
        return Err(StoreError::bad_input(field, "must be a single line"));
    }
    crate::error::Refusal::check_bidi(field, v)?;
    Ok(v.to_string())
}

/// A Markdown text field with a size bound.
pub(crate) fn text_field(field: &str, value: &str) -> Result<String, StoreError> {
    if value.len() > yoi_core::thread::MAX_BODY_BYTES {
        return Err(StoreError::bad_input(
            field,
            format!("is larger than {} bytes", yoi_core::thread::MAX_BODY_BYTES),
        ));
    }
    if value.contains('\0') {
        return Err(StoreError::bad_input(field, "must not contain NUL bytes"));
    }
    Ok(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::OPERATIONS;
    use yoi_core::state::Operation;

    #[test]
    fn every_state_operation_is_a_named_operation() {
        for op in Operation::ALL {
            assert!(OPERATIONS.contains(&op.as_str()), "{}", op.as_str());
        }
    }
}
