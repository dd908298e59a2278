//! The state commands: one per operation, plus `state ID STATE`, which routes to the operation
//! that owns the edge or refuses, naming the command to use.

use yoi_core::state::{Operation, State, TransitionError};
use yoi_engine::person_ops::{Needs, PersonOp};
use yoi_engine::store::ops::TransitionRequest;

use crate::cli::StateArgs;
use crate::context::Env;
use crate::error::CliError;
use crate::output;

fn apply(
    env: &Env,
    name: &str,
    op: Operation,
    id: &str,
    req: TransitionRequest,
    as_json: bool,
) -> Result<(), CliError> {
    let out = env.target(name)?.transition(op, id, &req)?;
    output::outcome(&out, as_json);
    Ok(())
}

fn with_reason(reason: &str) -> TransitionRequest {
    TransitionRequest {
        reason: Some(reason.into()),
        ..Default::default()
    }
}

fn with_resolution(resolution: &str) -> TransitionRequest {
    TransitionRequest {
        resolution: Some(resolution.into()),
        ..Default::default()
    }
}

pub fn mark_ready(env: &Env, id: &str, as_json: bool) -> Result<(), CliError> {
    let req = TransitionRequest::default();
    apply(
        env,
        "yoi ticket mark-ready",
        Operation::MarkReady,
        id,
        req,
        as_json,
    )
}

pub fn queue(env: &Env, id: &str, as_json: bool) -> Result<(), CliError> {
    let req = TransitionRequest::default();
    apply(env, "yoi ticket queue", Operation::Queue, id, req, as_json)
}

pub fn return_to_planning(
    env: &Env,
    id: &str,
    reason: &str,
    as_json: bool,
) -> Result<(), CliError> {
    let (name, op) = ("yoi ticket return-to-planning", Operation::ReturnToPlanning);
    apply(env, name, op, id, with_reason(reason), as_json)
}

pub fn close(env: &Env, id: &str, resolution: &str, as_json: bool) -> Result<(), CliError> {
    let req = with_resolution(resolution);
    apply(env, "yoi ticket close", Operation::Close, id, req, as_json)
}

pub fn cancel(env: &Env, id: &str, resolution: &str, as_json: bool) -> Result<(), CliError> {
    let req = with_resolution(resolution);
    apply(
        env,
        "yoi ticket cancel",
        Operation::Cancel,
        id,
        req,
        as_json,
    )
}

pub fn reopen(env: &Env, id: &str, reason: &str, as_json: bool) -> Result<(), CliError> {
    let req = with_reason(reason);
    apply(
        env,
        "yoi ticket reopen",
        Operation::Reopen,
        id,
        req,
        as_json,
    )
}

/// `yoi ticket state ID STATE [--reason R]`.
pub fn state(env: &Env, a: &StateArgs) -> Result<(), CliError> {
    let target: State = a
        .state
        .parse()
        .map_err(|e: yoi_core::state::StateParseError| CliError::Usage(e.to_string()))?;
    let via = env.target("yoi ticket state")?;
    let id = via.ws.resolve(&a.id)?;
    let current = via.ws.read_item(&id)?.state;
    let op = Operation::for_edge(current, target).map_err(|e| refusal(&id, current, target, e))?;
    let with_reason_if = |required: bool| -> Result<TransitionRequest, CliError> {
        if required && a.reason.is_none() {
            return Err(CliError::Usage(format!(
                "{current} -> {target} needs --reason (or use `{}`)",
                usage(op).unwrap_or_default().replace("ID", id.as_str())
            )));
        }
        Ok(TransitionRequest {
            reason: a.reason.clone(),
            expected: Some(current),
            ..Default::default()
        })
    };
    match op {
        Operation::MarkReady
        | Operation::Queue
        | Operation::ReturnToPlanning
        | Operation::Reopen => {}
        Operation::Close | Operation::Cancel => {
            return Err(CliError::Refused(format!(
                "{current} -> {target} records a resolution: use `{}`",
                usage(op).unwrap_or_default().replace("ID", id.as_str())
            )))
        }
        Operation::Accept => {
            return Err(CliError::Refused(format!(
                "{id}: queued -> inprogress happens only when the orchestrator accepts the ticket (it needs a worktree and an assignment); run `yoi serve` and let it route the queue"
            )))
        }
        Operation::Complete => {
            return Err(CliError::Refused(format!(
                "{id}: inprogress -> done happens only when the service merges the approved commit"
            )))
        }
    }
    let needs = PersonOp::of_transition(op).map(|p| p.spec().needs);
    let req = with_reason_if(needs == Some(Needs::Reason))?;
    let out = via.transition(op, id.as_str(), &req)?;
    output::outcome(&out, a.json);
    Ok(())
}

/// The command that owns an edge (`None` for the edges yoi takes itself).
fn usage(op: Operation) -> Option<String> {
    PersonOp::of_transition(op).and_then(PersonOp::usage)
}

fn refusal(id: &yoi_core::TicketId, current: State, target: State, e: TransitionError) -> CliError {
    if let TransitionError::Unchanged { .. } = e {
        return CliError::Refused(format!("{id} is already {current}"));
    }
    let next: Vec<String> = Operation::ALL
        .iter()
        .filter(|op| op.from_states().contains(&current))
        .map(|op| match usage(*op) {
            Some(cmd) => format!("{} (`{}`)", op.to_state(), cmd.replace("ID", id.as_str())),
            None => format!("{} (done by yoi itself)", op.to_state()),
        })
        .collect();
    CliError::Refused(format!(
        "{id}: there is no transition from {current} to {target}; from {current} it can go to {}",
        next.join(", ")
    ))
}
