//! [`accept_ticket`]: make the work branch, its worktree, the frozen IntentPacket and the first
//! assignment, then move the ticket to `inprogress` through the store's `accept` — all or
//! nothing. When a step fails, what was made is taken away in reverse order (the assignment, the
//! packet file, the worktree, the branch only if this call created it), the ticket stays
//! `queued`, and an `acceptance_failed` decision is recorded with its attempt number.
//!
//! An acceptance killed half-way (the server died) leaves a pending assignment, a branch and a
//! worktree for a ticket that is still `queued`. The next acceptance of that ticket clears them
//! first: pending assignments of a queued ticket are discarded, and a worktree at the ticket's
//! path is removed only when it is exactly what an acceptance makes — registered, detached at
//! the base commit, with no changes. Anything else at that path fails the
//! worktree step and is left alone for a person to look at.
//!
//! A folder is given to one acceptance only. A ticket accepted again (returned to planning,
//! then queued) works in `<id>-<slug>-2`, `-3`, …: a pod whose claim on the earlier acceptance
//! was cancelled may still be running in the earlier folder, and must never commit under the
//! new attempt. The earlier folder is removed when nothing was done in it (clean, at its base)
//! and left for a person otherwise.
//!
//! A branch is not: a ticket accepted again continues on the branch its latest acceptance made
//! (routing's `branch_and_start`), at its head when work was done on it, so nothing an earlier
//! attempt or a person pushed to it is left behind and its pull request goes on. Only the server
//! moves that branch (by compare-and-swap, with the current fence), so no stale pod can.

use std::path::{Path, PathBuf};

use thiserror::Error;
use yoi_core::decision::RoutingDecision;
use yoi_core::packet::IntentPacket;
use yoi_core::{Principal, State, TicketId, Timestamp};
use yoi_db::{Assignment, AssignmentStatus, DbIndex};
use yoi_git::BranchOutcome;
use yoi_store::ops::{self, AcceptEvidence, TransitionRequest};
use yoi_store::{Ctx, StoreError, Workspace, INTENT_PACKET};

/// An acceptance step, in the order they run. Used to name the failed step and, in tests, to
/// inject a failure: [`accept_ticket_failing_at`] makes the named step fail right after it did
/// its work (for `Accept`, instead of calling the store), so the compensation of every step that
/// made something is exercised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailAt {
    Branch,
    Worktree,
    IntentPacket,
    Assignment,
    Accept,
}

impl FailAt {
    pub const ALL: [FailAt; 5] = [
        FailAt::Branch,
        FailAt::Worktree,
        FailAt::IntentPacket,
        FailAt::Assignment,
        FailAt::Accept,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailAt::Branch => "create_branch",
            FailAt::Worktree => "add_worktree",
            FailAt::IntentPacket => "freeze_intent_packet",
            FailAt::Assignment => "create_assignment",
            FailAt::Accept => "accept",
        }
    }
}

/// What a successful acceptance made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub branch: String,
    /// False when an existing branch at the base commit was reused.
    pub branch_created: bool,
    pub worktree: PathBuf,
    pub base_commit: String,
    pub assignment: String,
    pub packet_hash: String,
}

#[derive(Debug, Error)]
pub enum AcceptError {
    #[error("ticket {ticket}: only an implementation_ready decision is accepted, not {kind}")]
    NotReady {
        ticket: TicketId,
        kind: &'static str,
    },
    #[error("ticket {ticket}: acceptance step `{step}` failed: {error}; the ticket stays queued{}", cleanup_suffix(.cleanup))]
    Failed {
        ticket: TicketId,
        step: &'static str,
        error: String,
        /// Undo steps or the failure record that themselves failed; empty when all was undone.
        cleanup: Vec<String>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl AcceptError {
    /// The class an entry point maps to an exit code and HTTP status.
    pub fn class(&self) -> yoi_core::ErrorClass {
        match self {
            AcceptError::NotReady { .. } => yoi_core::ErrorClass::Conflict,
            AcceptError::Failed { .. } => yoi_core::ErrorClass::Internal,
            AcceptError::Store(e) => e.class(),
        }
    }
}

fn cleanup_suffix(cleanup: &[String]) -> String {
    if cleanup.is_empty() {
        String::new()
    } else {
        format!(" (cleanup incomplete: {})", cleanup.join("; "))
    }
}

/// Accept `id` as `decision` (an `implementation_ready` decision) with its worktree under
/// `worktree_root` (normally `ws.config.worktree_dir(ws.root())`), at
/// `<worktree_root>/<id>-<slug>`.
/// The first assignment goes to `db`.
pub fn accept_ticket(
    ws: &Workspace,
    db: &DbIndex,
    id: &TicketId,
    decision: &RoutingDecision,
    worktree_root: &Path,
    now: Timestamp,
) -> Result<Accepted, AcceptError> {
    run(ws, db, id, decision, worktree_root, now, None)
}

/// [`accept_ticket`] with a failure injected at `fail_at`; for tests of the compensation.
pub fn accept_ticket_failing_at(
    ws: &Workspace,
    db: &DbIndex,
    id: &TicketId,
    decision: &RoutingDecision,
    worktree_root: &Path,
    now: Timestamp,
    fail_at: FailAt,
) -> Result<Accepted, AcceptError> {
    run(ws, db, id, decision, worktree_root, now, Some(fail_at))
}

/// What has been made so far, for undoing.
#[derive(Default)]
struct Made {
    branch: Option<(String, String)>,
    worktree: Option<PathBuf>,
    packet: Option<TicketId>,
    assignment: Option<String>,
}

impl Made {
    /// Undo in reverse order; returns what could not be undone.
    fn undo(self, ws: &Workspace, db: &DbIndex) -> Vec<String> {
        let repo = ws.root();
        let mut failed = Vec::new();
        if let Some(a) = self.assignment {
            if let Err(e) = db.delete_assignment(&a) {
                failed.push(format!("delete assignment {a}: {e}"));
            }
        }
        if let Some(id) = self.packet {
            if let Err(e) = ws.remove_frozen_packet(&id) {
                failed.push(format!("remove the frozen packet: {e}"));
            }
        }
        if let Some(wt) = self.worktree {
            if let Err(e) = yoi_git::remove_worktree(repo, &wt, true) {
                failed.push(format!("remove worktree: {e}"));
            }
        }
        if let Some((branch, commit)) = self.branch {
            if let Err(e) = yoi_git::delete_branch(repo, &branch, &commit) {
                failed.push(format!("delete branch: {e}"));
            }
        }
        failed
    }
}

fn injected(step: FailAt, fail_at: Option<FailAt>) -> Result<(), String> {
    if fail_at == Some(step) {
        Err(format!("injected failure at {}", step.as_str()))
    } else {
        Ok(())
    }
}

fn run(
    ws: &Workspace,
    db: &DbIndex,
    id: &TicketId,
    decision: &RoutingDecision,
    worktree_root: &Path,
    now: Timestamp,
    fail_at: Option<FailAt>,
) -> Result<Accepted, AcceptError> {
    let RoutingDecision::ImplementationReady {
        branch,
        base_commit,
    } = decision
    else {
        return Err(AcceptError::NotReady {
            ticket: id.clone(),
            kind: decision.kind(),
        });
    };
    let item = ws.read_item(id)?;
    let mut packet = IntentPacket::freeze_body(item.body_text());
    // The flow is frozen with the packet; one that stopped checking out since the decision
    // fails this step (the router then returns the ticket to planning with the reason).
    let flow_problems = match crate::flows::resolve(ws, &item) {
        Ok(f) => {
            packet.flow = Some(f);
            None
        }
        Err(p) => Some(p.join("; ")),
    };
    let mut made = Made::default();
    let job = Job {
        ws,
        db,
        id,
        decision,
        branch,
        base_commit,
        worktree_root,
        packet: &packet,
        flow_problems: flow_problems.as_deref(),
        now,
        fail_at,
    };
    match job.steps(&mut made) {
        Ok(accepted) => Ok(accepted),
        Err((step, error)) => {
            let mut cleanup = made.undo(ws, db);
            let attempt = super::window::routing_thread(ws, Some(db), id)
                .map(|t| super::circuit::Circuit::of(&t).consecutive + 1);
            let recorded = attempt.and_then(|attempt| {
                let failed = RoutingDecision::AcceptanceFailed {
                    step: step.as_str().to_string(),
                    error: error.clone(),
                    attempt,
                };
                super::record(ws, Some(db), id, &failed, now)
            });
            if let Err(e) = recorded {
                cleanup.push(format!("record the failure: {e}"));
            }
            Err(AcceptError::Failed {
                ticket: id.clone(),
                step: step.as_str(),
                error,
                cleanup,
            })
        }
    }
}

/// One acceptance: its inputs, walked step by step by [`Job::steps`].
struct Job<'a> {
    ws: &'a Workspace,
    db: &'a DbIndex,
    id: &'a TicketId,
    decision: &'a RoutingDecision,
    branch: &'a str,
    base_commit: &'a str,
    worktree_root: &'a Path,
    packet: &'a yoi_core::packet::FrozenPacket,
    flow_problems: Option<&'a str>,
    now: Timestamp,
    fail_at: Option<FailAt>,
}

impl Job<'_> {
    fn steps(&self, made: &mut Made) -> Result<Accepted, (FailAt, String)> {
        let Job {
            ws,
            db,
            id,
            decision,
            branch,
            base_commit,
            worktree_root,
            packet,
            flow_problems,
            now,
            fail_at,
        } = *self;
        let repo = ws.root();
        let name = branch.strip_prefix("yoi/").unwrap_or(branch);
        let worktree =
            fresh_place(ws, id, worktree_root, name).map_err(|e| (FailAt::Worktree, e))?;

        // A planted link for the worktree (or the folder holding it) would have the checkout
        // written wherever it leads.
        let planted = yoi_store::beneath::link_on_path(repo, &worktree)
            .or_else(|| yoi_store::beneath::link_on_path(worktree_root, &worktree))
            .or_else(|| {
                std::fs::symlink_metadata(worktree_root)
                    .is_ok_and(|m| m.file_type().is_symlink())
                    .then(|| worktree_root.to_path_buf())
            });
        if let Some(link) = planted {
            return Err((
                FailAt::Worktree,
                format!(
                    "{} is a symbolic link, and yoi writes no worktree through a link; remove it (`yoi ticket doctor` reports it as layout.symlink)",
                    link.display()
                ),
            ));
        }
        let step = FailAt::Branch;
        clear_leftovers(db, id, repo, &worktree, branch, base_commit)
            .map_err(|e| (FailAt::Worktree, e))?;
        move_untouched(ws, id, branch, base_commit).map_err(|e| (step, e))?;
        let outcome =
            yoi_git::create_branch(repo, branch, base_commit).map_err(|e| (step, e.to_string()))?;
        if outcome == BranchOutcome::Created {
            made.branch = Some((branch.to_string(), base_commit.to_string()));
        }
        injected(step, fail_at).map_err(|e| (step, e))?;

        let step = FailAt::Worktree;
        std::fs::create_dir_all(worktree_root)
            .map_err(|e| (step, format!("{}: {e}", worktree_root.display())))?;
        // Detached at the base commit: commits made there move no branch. Only the server moves
        // the ticket branch, by compare-and-swap, to a commit a pod reports with the current
        // fence (docs/pods.md). The ticket files are left out (a sparse checkout), so the cost
        // does not grow with the backlog; commits there carry them unchanged.
        let leave_out = ws.config.tickets_prefix();
        yoi_git::add_worktree_sparse(repo, &worktree, base_commit, &[leave_out.as_str()])
            .map_err(|e| (step, e.to_string()))?;
        made.worktree = Some(worktree.clone());
        injected(step, fail_at).map_err(|e| (step, e))?;
        ws.writes.hit("accept.worktree");

        let step = FailAt::IntentPacket;
        if let Some(p) = flow_problems {
            return Err((step, format!("the ticket's flow cannot run: {p}")));
        }
        let first = packet
            .flow
            .as_ref()
            .map(|f| f.first().clone())
            .unwrap_or_else(|| crate::flows::builtin(ws).first().clone());
        ws.write_frozen_packet(id, packet)
            .map_err(|e| (step, e.to_string()))?;
        made.packet = Some(id.clone());
        injected(step, fail_at).map_err(|e| (step, e))?;

        let step = FailAt::Assignment;
        let ctx = Ctx::new(Principal::orchestrator(), now);
        let assignment = format!("asg-{}", ops::new_ulid(ctx.precise));
        let now_ms = now.unix_millis();
        db.create_assignment(&Assignment {
            id: assignment.clone(),
            ticket: id.to_string(),
            step: first.id.clone(),
            role: first.role.to_string(),
            attempt: 1,
            fence: 1,
            // Not claimable until the ticket is in progress (released below).
            status: AssignmentStatus::Held,
            lease_until_ms: None,
            created_ms: now_ms,
            updated_ms: now_ms,
            // Its folder exists from now on, so a claim hands it out without touching git.
            workdir: Some(worktree.display().to_string()),
            head_commit: Some(base_commit.to_string()),
            ..Default::default()
        })
        .map_err(|e| (step, e.to_string()))?;
        made.assignment = Some(assignment.clone());
        injected(step, fail_at).map_err(|e| (step, e))?;
        ws.writes.hit("accept.assignment");

        let step = FailAt::Accept;
        injected(step, fail_at).map_err(|e| (step, e))?;
        let evidence = AcceptEvidence {
            branch: branch.to_string(),
            worktree: ws.rel(&worktree),
            base_commit: base_commit.to_string(),
            assignment: assignment.clone(),
            decision: with_packet(decision, packet),
        };
        let req = TransitionRequest {
            expected: Some(State::Queued),
            ..TransitionRequest::default()
        };
        ops::accept(ws, &ctx, id.as_str(), &req, &evidence).map_err(|e| (step, e.to_string()))?;
        ws.writes.hit("accept.accepted");
        // Accepted: pods may claim the assignment now. Should this fail (or the process die
        // here), the orchestrator's catch-up releases the held rows of in-progress tickets.
        if let Err(e) = db.release_held(id.as_str(), now.unix_millis()) {
            tracing::warn!(ticket = %id, error = %e, "the first assignment stays held until the next catch-up");
        }
        Ok(Accepted {
            branch: branch.to_string(),
            branch_created: outcome == BranchOutcome::Created,
            worktree,
            base_commit: base_commit.to_string(),
            assignment,
            packet_hash: packet.content_hash.clone(),
        })
    }
}

/// A ticket accepted again whose branch holds nothing its new `base` lacks (nothing was done on
/// it, or it was merged) while the target has moved on: the branch is deleted, by
/// compare-and-swap on its commit, so the new acceptance makes it again at `base`. A branch
/// holding commits the target lacks is never moved (routing starts the new acceptance at its
/// head), nor one that no acceptance of this ticket made.
fn move_untouched(ws: &Workspace, id: &TicketId, branch: &str, base: &str) -> Result<(), String> {
    let repo = ws.root();
    let Ok(head) = yoi_git::resolve_commit(repo, &format!("refs/heads/{branch}")) else {
        return Ok(());
    };
    if head == base {
        return Ok(());
    }
    let plan = ws.read_plan(id).map_err(|e| e.to_string())?;
    let ours = plan
        .iter()
        .filter_map(|r| r.accepted_plan.as_ref())
        .any(|p| p.branch.as_deref() == Some(branch));
    if !ours || !yoi_git::is_ancestor(repo, &head, base).unwrap_or(false) {
        return Ok(()); // `create_branch` says what is there.
    }
    yoi_git::delete_branch(repo, branch, &head).map_err(|e| e.to_string())?;
    tracing::info!(ticket = %id, %branch, from = %head, to = %base, "moved the untouched branch of an earlier acceptance to the new base");
    Ok(())
}

/// The folder of a new acceptance of `id`: `<root>/<name>`, or the first of `<name>-2`, `-3`, …
/// that no earlier acceptance of the ticket was given (see the module doc). An earlier folder
/// with nothing done in it is removed on the way.
fn fresh_place(ws: &Workspace, id: &TicketId, root: &Path, name: &str) -> Result<PathBuf, String> {
    let repo = ws.root();
    let plan = ws.read_plan(id).map_err(|e| e.to_string())?;
    let earlier: Vec<(PathBuf, Option<&str>)> = plan
        .iter()
        .filter_map(|r| r.accepted_plan.as_ref())
        .filter_map(|p| {
            let w = p.worktree.as_deref()?;
            Some((repo.join(w), p.base_commit.as_deref()))
        })
        .collect();
    let same = |a: &Path, b: &Path| {
        a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
    };
    let mut n = 1;
    loop {
        let path = match n {
            1 => root.join(name),
            n => root.join(format!("{name}-{n}")),
        };
        let Some((_, base)) = earlier.iter().find(|(w, _)| same(w, &path)) else {
            return Ok(path);
        };
        if path.exists() {
            drop_if_untouched(repo, id, &path, *base);
        }
        n += 1;
    }
}

/// Remove the earlier acceptance's folder `path` of `id` when it is a registered worktree,
/// detached at its `base`, without changes; otherwise it stays for a person (doctor reports it
/// once the ticket is finished).
fn drop_if_untouched(repo: &Path, id: &TicketId, path: &Path, base: Option<&str>) {
    let untouched = matches!(
        yoi_git::worktree_head(path),
        Ok((None, Some(head))) if Some(head.as_str()) == base
    );
    if !untouched {
        tracing::info!(ticket = %id, worktree = %path.display(), "keeping the folder of an earlier acceptance: work was done in it");
        return;
    }
    match yoi_git::remove_worktree(repo, path, false) {
        Ok(()) => {
            tracing::info!(ticket = %id, worktree = %path.display(), "removed the unused folder of an earlier acceptance")
        }
        Err(e) => {
            tracing::info!(ticket = %id, worktree = %path.display(), error = %e, "keeping the folder of an earlier acceptance")
        }
    }
}

/// Clear what an acceptance of `id` killed half-way left behind (see the module doc): pending
/// assignments, and a clean worktree at `worktree` on `branch` at `base_commit`. Anything else
/// at that path is an error naming what was found. An earlier acceptance's attempt refs go too.
fn clear_leftovers(
    db: &DbIndex,
    id: &TicketId,
    repo: &Path,
    worktree: &Path,
    branch: &str,
    base_commit: &str,
) -> Result<(), String> {
    let discarded = db
        .discard_pending_assignments(id.as_str())
        .map_err(|e| format!("discard pending assignments: {e}"))?;
    if discarded > 0 {
        tracing::warn!(ticket = %id, discarded, "discarded pending assignments of an interrupted acceptance");
    }
    // An earlier acceptance's attempt refs, which the lease sweep may not have collected yet
    // (docs/pods.md): its attempts ended with it, and this one's start again at 1.1 under the
    // same names, where a pod's push must not find an unrelated commit.
    let refs = format!(
        "{}{}/",
        crate::assignments::attempt_ref::PREFIX,
        id.as_str()
    );
    match yoi_git::delete_refs_under(repo, &refs) {
        Ok(0) => {}
        Ok(n) => {
            tracing::info!(ticket = %id, refs = n, "deleted the attempt refs of an earlier acceptance")
        }
        Err(e) => {
            tracing::warn!(ticket = %id, error = %e, "could not delete the attempt refs of an earlier acceptance")
        }
    }
    if !worktree.exists() {
        return Ok(());
    }
    let listed =
        yoi_git::list_worktrees_with(repo, yoi_git::StatusOf::Linked).map_err(|e| e.to_string())?;
    let same = |p: &Path| p == worktree || p.canonicalize().ok() == worktree.canonicalize().ok();
    let Some(found) = listed.iter().find(|w| same(&w.path)) else {
        return Err(format!(
            "{} exists and is not a worktree of this repository; move it away",
            worktree.display()
        ));
    };
    // Detached (or, made by an older yoi, on the ticket's branch) at the base commit.
    let leftover = (found.branch.is_none() || found.branch.as_deref() == Some(branch))
        && found.head.as_deref() == Some(base_commit)
        && found.dirty == Some(false);
    if !leftover {
        return Err(format!(
            "{} is a worktree on {} at {} (dirty: {}); it is not the clean leftover of an interrupted acceptance, so it is left alone",
            worktree.display(),
            found.branch.as_deref().unwrap_or("a detached HEAD"),
            found.head.as_deref().unwrap_or("no commit"),
            found.dirty.map_or("unknown".to_string(), |d| d.to_string()),
        ));
    }
    yoi_git::remove_worktree(repo, worktree, false).map_err(|e| e.to_string())?;
    tracing::warn!(ticket = %id, worktree = %worktree.display(), "removed the clean worktree of an interrupted acceptance");
    Ok(())
}

/// The `implementation_ready` event body: the decision, then the frozen IntentPacket it hands
/// out, rendered (headings one level down, under the thread event's own heading) with its hash.
fn with_packet(decision: &RoutingDecision, packet: &yoi_core::packet::FrozenPacket) -> String {
    let rendered: Vec<String> = packet
        .packet
        .render_markdown()
        .lines()
        .map(|l| match l.strip_prefix("## ") {
            Some(h) => format!("### {h}"),
            None => l.to_string(),
        })
        .collect();
    format!(
        "{}\nIntentPacket (frozen to {INTENT_PACKET}, sha256 {}):\n\n{}\n",
        decision.render_event(),
        packet.content_hash,
        rendered.join("\n")
    )
}
