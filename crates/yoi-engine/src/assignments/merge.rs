//! The `merge` step, run by the service itself (no pod): an approval counts only for the exact
//! commit reviewed and only while the ticket branch still points at it. The target moves only
//! by compare-and-swap on the head that was read; a worktree with the target checked out is
//! brought along only when every path the merge changes is clean there (otherwise the merge
//! waits with a `merge_deferred` attention naming the dirty paths, and runs once they are
//! clean). A target that moved on beyond the branch sends the ticket to its coder as an
//! `integrate` step. Then one operation writes the `merge` event and `inprogress → done`.
//!
//! [`flow_tick`] is the step function the server calls every second: it hands out every next
//! step a crash may have left undecided ([`super::flow::advance`]), runs due merges, and
//! completes tickets whose merge is recorded.

use yoi_core::{Principal, TicketId, Timestamp};
use yoi_core::{Role, ServiceStep};
use yoi_db::{AssignmentStatus, DbIndex, Finish};
use yoi_store::ops::{self, MergeEvidence, TransitionRequest};
use yoi_store::{Ctx, Workspace};

use super::finish::record;
use super::flow::{advance, is_pull_request, is_service, new_step, Advanced, MergeRecord};
use super::{results_lock, work_place, AssignmentError};

/// The `attention` reason of a merge that waits for a dirty checked-out target.
pub const MERGE_DEFERRED: &str = "merge_deferred";

/// What a failed merge row's reason starts with when the trees conflict.
pub const MERGE_CONFLICT: &str = "merge_conflict";

/// The step that validates a computed merge commit before the target moves (the verifier).
pub const MERGE_VERIFY: &str = ServiceStep::MergeVerify.as_str();

/// What one [`flow_tick`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FlowTick {
    /// Next steps handed out (assignment ids).
    pub handed_out: Vec<String>,
    /// Tickets merged and marked done.
    pub done: Vec<String>,
    /// Tickets whose merge waits for a clean checked-out target.
    pub deferred: Vec<String>,
    /// Tickets sent back to their coder (integrate) or to verification (branch moved).
    pub sent_back: Vec<String>,
    /// Tickets held over their budget that may go on now (a person added to it, or the
    /// configuration was raised).
    pub released: Vec<String>,
}

impl FlowTick {
    pub fn changed(&self) -> bool {
        !(self.handed_out.is_empty()
            && self.done.is_empty()
            && self.sent_back.is_empty()
            && self.released.is_empty())
    }
}

/// One pass over the flows of a workspace at `now`.
pub fn flow_tick(
    ws: &Workspace,
    index: &DbIndex,
    now: Timestamp,
) -> Result<FlowTick, AssignmentError> {
    let mut tick = FlowTick::default();
    for t in index.tickets_between_steps()? {
        let Ok(ticket) = TicketId::parse(&t) else {
            continue;
        };
        let _guard = results_lock();
        // A blocked attempt whose question a dying server never wrote: written now, so the
        // step waits for an answer a person can see.
        match super::questions::recover_question(ws, index, &ticket, now) {
            Ok(true) => {
                tracing::warn!(ticket = %t, "wrote the question a blocked attempt left unrecorded")
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(ticket = %t, error = %e, "could not check the ticket's blocked attempt")
            }
        }
        match advance(ws, index, &ticket, now) {
            Ok(Advanced::Next(a)) => tick.handed_out.push(a.id),
            Ok(Advanced::Merged(ev)) => {
                if finish_done(ws, index, &ticket, &ev, now)? {
                    tick.done.push(t.clone());
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(ticket = %t, error = %e, "could not advance the ticket's flow")
            }
        }
    }
    let due: Vec<_> = index
        .open_assignments()?
        .into_iter()
        .filter(|a| is_service(a) && a.status == AssignmentStatus::Pending)
        // A pull-request step is the forge driver's (super::pr), never a local merge.
        .filter(|a| !is_pull_request(ws, a))
        .collect();
    for a in due {
        let _guard = results_lock();
        let ticket = super::finish::ticket_of(&a)?;
        match merge_one(ws, index, &ticket, &a, now) {
            Ok(Merge::Done) => tick.done.push(a.ticket.clone()),
            Ok(Merge::Deferred) => tick.deferred.push(a.ticket.clone()),
            Ok(Merge::SentBack(next)) => {
                tick.sent_back.push(a.ticket.clone());
                tick.handed_out.push(next);
            }
            Ok(Merge::Retry) => {}
            Err(e) => {
                tracing::warn!(ticket = %a.ticket, error = %e, "the merge failed; it is tried again")
            }
        }
    }
    match crate::spend::release_held(ws, index) {
        Ok(released) => tick.released = released,
        Err(e) => {
            tracing::warn!(error = %e, "could not look at the tickets held over their budget")
        }
    }
    Ok(tick)
}

enum Merge {
    Done,
    Deferred,
    SentBack(String),
    Retry,
}

fn merge_one(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    a: &yoi_db::Assignment,
    now: Timestamp,
) -> Result<Merge, AssignmentError> {
    let repo = ws.root();
    let item = ws.read_item(ticket)?;
    let target = item
        .effective_target_ref()
        .unwrap_or_else(|| ws.config.workspace.default_target.clone());
    let place = work_place(ws, ticket)?;
    let head = yoi_git::resolve_commit(repo, &place.branch)?;
    let approved = a.head_commit.clone().unwrap_or_default();
    let now_ms = now.unix_millis();
    let rows = index.assignments_of(ticket.as_str())?;
    let send_back = |step: &str, role: Role, reason: String| -> Result<Merge, AssignmentError> {
        let next = new_step(&rows, ticket, step, role, &head, None, now);
        let how = Finish::failed(&reason);
        match index.finish_pending(&a.id, a.fence, &how, Some(&next), now_ms)? {
            Some(row) => {
                record(ws, &row, "failed", None, None, Some(&reason), now)?;
                Ok(Merge::SentBack(next.id))
            }
            None => Ok(Merge::Retry),
        }
    };
    if head != approved {
        let flow = crate::flows::of_ticket(ws, ticket)?;
        let again = super::flow::reverify_step(&flow);
        return send_back(
            &again.id,
            again.role,
            format!(
                "the branch {} moved from the approved commit {approved} to {head}; the approval no longer counts and {head} is verified and reviewed again",
                place.branch
            ),
        );
    }
    let record_of = |before: String, after: String| MergeRecord {
        target_ref: target.clone(),
        before,
        after,
        commit: approved.clone(),
    };
    let merged = match yoi_git::plan_merge(repo, &target, &approved)? {
        yoi_git::MergePlan::AlreadyMerged { before } => record_of(before.clone(), before),
        yoi_git::MergePlan::FastForward {
            before,
            after,
            changed,
        } => match land_on(
            ws, index, ticket, a, &target, &before, &after, &changed, now,
        )? {
            Landing::Moved => record_of(before, after),
            Landing::Deferred => return Ok(Merge::Deferred),
            Landing::Raced => return Ok(Merge::Retry),
        },
        yoi_git::MergePlan::Diverged { before } => {
            // A merge of exactly this target head and this approval that passed validation
            // lands as it is; anything else is merged (again) and validated first.
            if let Some(m) = validated_merge(repo, &rows, &before, &approved) {
                let changed = yoi_git::changed_paths(repo, &before, &m)?;
                return match land_on(ws, index, ticket, a, &target, &before, &m, &changed, now)? {
                    Landing::Moved => {
                        complete_merge(ws, index, ticket, a, record_of(before, m), now)
                    }
                    Landing::Deferred => Ok(Merge::Deferred),
                    Landing::Raced => Ok(Merge::Retry),
                };
            }
            let message = format!(
                "Merge ticket {ticket}: {}\n\nThe approved commit {approved} merged into `{target}` at {before} by yoi.\n\nYOI-Ticket: {ticket}\n",
                item.title
            );
            let who = yoi_git::Identity {
                name: "yoi".into(),
                email: "service@yoi.invalid".into(),
                time_secs: now.unix_millis() / 1000,
            };
            match yoi_git::merge_three_way(repo, &before, &approved, &message, &who)? {
                yoi_git::ThreeWay::Conflicted { before, paths } => {
                    return send_back(
                        ServiceStep::Integrate.as_str(),
                        Role::Coder,
                        format!(
                            "{MERGE_CONFLICT}: merging {approved} into `{target}` at {before} conflicts in {}",
                            paths.join(", ")
                        ),
                    );
                }
                yoi_git::ThreeWay::Clean {
                    before,
                    commit,
                    changed,
                } => {
                    let checks = super::packet(ws, ticket)?
                        .map(|p| p.checks.commands.len())
                        .unwrap_or(0);
                    if checks > 0 {
                        // Validate the merged tree before the target moves, as merge queues do.
                        let next = new_step(
                            &rows,
                            ticket,
                            MERGE_VERIFY,
                            ServiceStep::MergeVerify.role(),
                            &commit,
                            None,
                            now,
                        );
                        let reason = format!(
                            "the target `{target}` moved on to {before}; the merge {commit} is validated before the target moves"
                        );
                        let how = Finish::failed(&reason);
                        return match index.finish_pending(
                            &a.id,
                            a.fence,
                            &how,
                            Some(&next),
                            now_ms,
                        )? {
                            Some(row) => {
                                record(ws, &row, "failed", None, None, Some(&reason), now)?;
                                Ok(Merge::SentBack(next.id))
                            }
                            None => Ok(Merge::Retry),
                        };
                    }
                    match land_on(
                        ws, index, ticket, a, &target, &before, &commit, &changed, now,
                    )? {
                        Landing::Moved => record_of(before, commit),
                        Landing::Deferred => return Ok(Merge::Deferred),
                        Landing::Raced => return Ok(Merge::Retry),
                    }
                }
            }
        }
    };
    complete_merge(ws, index, ticket, a, merged, now)
}

/// The latest merge commit of `approved` into the target at `before` whose validation passed.
fn validated_merge(
    repo: &std::path::Path,
    rows: &[yoi_db::Assignment],
    before: &str,
    approved: &str,
) -> Option<String> {
    rows.iter()
        .filter(|r| r.step == MERGE_VERIFY && r.status == AssignmentStatus::Completed)
        .filter(|r| super::flow::verified(r))
        .max_by_key(|r| r.finished_ms)
        .and_then(|r| r.head_commit.clone())
        .filter(|m| {
            yoi_git::parents_of(repo, m).ok().as_deref()
                == Some(&[before.to_string(), approved.to_string()][..])
        })
}

/// How [`land_on`] ended.
enum Landing {
    Moved,
    /// A checked-out target has uncommitted changes in the merged paths: the merge waits.
    Deferred,
    /// Someone moved the target between the read and the swap: read again next sweep.
    Raced,
}

/// Move the target from `before` to `after` (changing `changed`) by compare-and-swap. When a
/// checked-out target has uncommitted changes in those paths nothing is written and a person
/// is told once (`merge_deferred`).
#[allow(clippy::too_many_arguments)]
fn land_on(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    a: &yoi_db::Assignment,
    target: &str,
    before: &str,
    after: &str,
    changed: &[String],
    now: Timestamp,
) -> Result<Landing, AssignmentError> {
    let tickets_dir = ws.config.tickets_prefix();
    ws.writes.hit("merge.before_land");
    match yoi_git::land(
        ws.root(),
        target,
        before,
        after,
        changed,
        &[tickets_dir.as_str()],
    ) {
        Ok(yoi_git::Landed::Moved { .. }) => {
            ws.writes.hit("merge.landed");
            Ok(Landing::Moved)
        }
        Err(e) => {
            tracing::info!(ticket = %ticket, error = %e, "the target moved during the merge; trying again");
            Ok(Landing::Raced)
        }
        Ok(yoi_git::Landed::Deferred { worktree, dirty }) => {
            let note = format!(
                "the target `{target}` is checked out in {} with uncommitted changes in {} that the merge would change",
                worktree.display(),
                dirty.join(", ")
            );
            if index.note_pending(&a.id, a.fence, &note)? {
                let body = format!(
                    "Merge of {after} into `{target}` deferred: {note}. Nothing was written. \
                     Commit or stash those files; the merge runs by itself once they are clean."
                );
                let ctx = Ctx::new(Principal::orchestrator(), now);
                match ops::attention(ws, &ctx, ticket.as_str(), MERGE_DEFERRED, &body) {
                    Ok(_) | Err(yoi_store::StoreError::StaleState { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(Landing::Deferred)
        }
    }
}

/// The merge row completes with its evidence, then the ticket is done.
fn complete_merge(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    a: &yoi_db::Assignment,
    merged: MergeRecord,
    now: Timestamp,
) -> Result<Merge, AssignmentError> {
    let now_ms = now.unix_millis();
    let how = Finish {
        status: AssignmentStatus::Completed,
        result: serde_json::to_string(&merged).ok(),
        usage: None,
        error: None,
        log_path: None,
    };
    let Some(row) = index.finish_pending(&a.id, a.fence, &how, None, now_ms)? else {
        return Ok(Merge::Retry);
    };
    ws.writes.hit("merge.recorded");
    record(ws, &row, "completed", Some(&merged.after), None, None, now)?;
    let ev = MergeEvidence {
        target_ref: merged.target_ref,
        before: merged.before,
        after: merged.after,
        commit: merged.commit,
    };
    finish_done(ws, index, ticket, &ev, now)?;
    Ok(Merge::Done)
}

/// `inprogress → done` with the merge event, then tidy up: the ticket's clean worktrees are
/// removed (a dirty one is kept and said so in the log; doctor reports it), and the branch is
/// deleted when `[flow] delete_branch` says so. Whether the ticket moved.
fn finish_done(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    ev: &MergeEvidence,
    now: Timestamp,
) -> Result<bool, AssignmentError> {
    let ctx = Ctx::new(Principal::service(), now);
    assemble(ws, index, ticket, ev, now)?;
    match ops::complete(ws, &ctx, ticket.as_str(), &TransitionRequest::default(), ev) {
        Ok(_) => {}
        Err(yoi_store::StoreError::StaleState { .. }) => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    let place = work_place(ws, ticket)?;
    let repo = ws.root();
    let prefix = place.worktree.display().to_string();
    for wt in yoi_git::list_worktrees_with(repo, yoi_git::StatusOf::Nothing).unwrap_or_default() {
        let p = wt.path.display().to_string();
        if p == prefix || p.starts_with(&format!("{prefix}.")) {
            if let Err(e) = yoi_git::remove_worktree(repo, &wt.path, false) {
                tracing::warn!(worktree = %p, error = %e, "kept a worktree of a merged ticket");
            }
        }
    }
    if ws.config.flow.auto_close {
        auto_close(ws, index, ticket, ev, now)?;
    }
    if ws.config.flow.delete_branch {
        if let Err(e) = yoi_git::delete_branch(repo, &place.branch, &ev.commit) {
            tracing::warn!(branch = %place.branch, error = %e, "kept the branch of a merged ticket");
        }
    }
    // Remote pods' pushed results (docs/pods.md) are merged or stale now.
    let attempts = format!("{}{}/", super::attempt_ref::PREFIX, ticket.as_str());
    if let Err(e) = yoi_git::delete_refs_under(repo, &attempts) {
        tracing::warn!(refs = %attempts, error = %e, "kept the attempt refs of a merged ticket");
    }
    Ok(true)
}

/// The flow's `assembly` (docs/flows.md, "Assembly"), written just before the ticket is done:
/// each named step's latest completed summary under its header, the merge step as the merge it
/// made. The operation id is derived from the merge, so a completion tried again after a crash
/// replays the event instead of writing it twice. A ticket whose flow has none writes nothing.
fn assemble(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    ev: &MergeEvidence,
    now: Timestamp,
) -> Result<(), AssignmentError> {
    let flow = crate::flows::of_ticket(ws, ticket)?;
    let Some(assembly) = &flow.assembly else {
        return Ok(());
    };
    let rows = index.assignments_of(ticket.as_str())?;
    let text = assembly.render(|step| {
        if flow.step(step).is_some_and(|s| s.output.ends()) {
            return Some(format!(
                "Merged {} into `{}` ({} → {}).",
                ev.commit, ev.target_ref, ev.before, ev.after
            ));
        }
        rows.iter()
            .filter(|a| a.step == step && a.status == AssignmentStatus::Completed)
            .max_by_key(|a| a.attempt)
            .and_then(|a| super::flow::report_of(a).and_then(|r| r.summary))
    });
    let ctx = Ctx::new(Principal::service(), now).with_op(Some(format!(
        "assembly-{}-{}",
        ticket.as_str(),
        ev.after
    )));
    match ops::record_assembly(ws, &ctx, ticket.as_str(), &flow.name, &text) {
        Ok(_) | Err(yoi_store::StoreError::StaleState { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// `[flow] auto_close`: close a done ticket with a resolution built from what its attempts
/// said (each summary once, in order) and the merge.
fn auto_close(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    ev: &MergeEvidence,
    now: Timestamp,
) -> Result<(), AssignmentError> {
    let rows = index.assignments_of(ticket.as_str())?;
    let mut lines: Vec<String> = Vec::new();
    for a in rows
        .iter()
        .filter(|a| a.status == AssignmentStatus::Completed && Role::Coder.is(&a.role))
    {
        if let Some(s) = super::flow::report_of(a).and_then(|r| r.summary) {
            let line = format!("- {} (attempt {}): {}", a.step, a.attempt, s.trim());
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
    }
    let resolution = format!(
        "Done and merged: {} moved `{}` from {} to {}.\n{}",
        ev.commit,
        ev.target_ref,
        ev.before,
        ev.after,
        lines.join("\n")
    );
    let req = TransitionRequest {
        expected: Some(yoi_core::State::Done),
        resolution: Some(resolution.trim_end().to_string()),
        ..TransitionRequest::default()
    };
    let ctx = Ctx::new(Principal::service(), now);
    match ops::close(ws, &ctx, ticket.as_str(), &req) {
        Ok(_) | Err(yoi_store::StoreError::StaleState { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
