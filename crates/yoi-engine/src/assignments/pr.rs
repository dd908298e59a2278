//! The `pr` step (docs/forge.md): a flow that ends in a pull request instead of a local merge.
//! Run by the service, like the merge, but only by the forge driver ([`forge_tick`]) — the
//! local merge never touches a `pr` row, so a server without a forge credential leaves it
//! waiting rather than merging past the pull request.
//!
//! Each call of [`forge_tick`] walks every pending `pr` row one step further, idempotently, so
//! a crash, a lost answer or a restart between any two calls ends in the same place:
//! 1. push the approved commit to the ticket branch with `--force-with-lease` on the head yoi
//!    last saw there; a person's push in between is never overwritten — it is fetched,
//!    recorded, and the ticket goes back to its coder (`integrate`) to build on it — and a head
//!    that does not hold every commit a person pushed is never pushed (it goes back again);
//! 2. open the pull request, or find the one that exists for the branch;
//! 3. post yoi's verdicts on the head as commit statuses (`yoi/verify`, `yoi/review`);
//! 4. evaluate the gate for the exact head (`yoi_core::forge::gate`): every required check
//!    succeeded at it, yoi's verifier and reviewer verdicts are for it, the review rule holds;
//! 5. merge with that SHA (`[forge] merge = "yoi"`; a 409 means the head moved: evaluate again
//!    next time, never merge), or wait for a person to (`"person"`). The row completes with the
//!    merge record and the flow marks the ticket done; a failing required check or a change
//!    request sends it back for a round with that feedback; a pull request closed without a
//!    merge goes to a person with an attention event.
//!
//! Every fact lands in the thread as a `forge_pr` event whose operation id is derived from the
//! fact itself, so seeing it twice writes it once.

use std::path::PathBuf;

use yoi_core::forge::gate::{self, Blocker, Gate, GateInput};
use yoi_core::forge::{action, ForgeSection, Merger, OpenWhen, STATUS_REVIEW, STATUS_VERIFY};
use yoi_core::report::Verdict;
use yoi_core::{Principal, Role, ServiceStep, TicketId, Timestamp};
use yoi_db::{Assignment, AssignmentStatus, DbIndex, Finish};
use yoi_forge::push::{self, Push, Pushed};
use yoi_forge::{ChangeState, Forge, ForgeError, MergeOutcome, NewChange, Secret, StatusState};
use yoi_store::ops;
use yoi_store::{Ctx, StoreError, Workspace};

use super::finish::record;
use super::flow::{is_pull_request, new_step, report_of, verified, MergeRecord};
use super::{results_lock, work_place, AssignmentError};

pub use super::pr_status::{blocker_text, status, Badge, ForgeEventView, ForgeStatus};

/// What the reason of a `pr` row sent back for a round starts with, so the next coder round
/// reads it as the pull request's feedback (`super::flow::feedback`).
pub const FEEDBACK_PREFIX: &str = "forge: ";

/// What the reason starts with when the send-back is a fix round (a failing required check, a
/// change request, a collaborator's `/yoi fix`), which counts against `max_rounds` like a failed
/// verification (`super::flow::rounds_used`). A person's push or a moved branch is not one.
pub const ROUND_PREFIX: &str = "forge: round: ";

/// The `attention` reason when a pull request was closed without a merge.
pub const PR_CLOSED: &str = "pr_closed";
/// The `attention` reason when the forge refused the merge for a reason of its own.
pub const PR_NOT_MERGEABLE: &str = "pr_not_mergeable";
/// The `attention` reason when a pull request waits on people: the approving reviews its gate
/// needs for the head, or (`[forge] merge = "person"`) their merge. The inbox's `pr_review`.
pub const PR_REVIEW: &str = "pr_review";
/// The `attention` reason when required checks still fail after the fix rounds the flow allows
/// (instead of the general `rounds_exhausted`). The inbox's `checks_failing`.
pub const CHECKS_FAILING: &str = "checks_failing";

/// What the driver needs: the forge, its section, and the credential git pushes with.
pub struct ForgeEnv<'a> {
    pub forge: &'a dyn Forge,
    pub section: &'a ForgeSection,
    pub token: &'a Secret,
    /// A private folder for git's credential helper (`.yoi/local/forge`).
    pub scratch: PathBuf,
}

/// What one [`forge_tick`] did, by ticket (what `POST /api/v1/forge/sync` answers in `pass`).
#[derive(
    Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
pub struct ForgeTick {
    pub pushed: Vec<String>,
    pub opened: Vec<String>,
    /// Gates evaluated and closed: the ticket and why.
    pub waiting: Vec<(String, Gate)>,
    pub merged: Vec<String>,
    /// Sent back for a round (a person's push, a failing check, changes requested).
    pub sent_back: Vec<String>,
    /// Calls that failed and are tried again next time (the forge down, slow, limited).
    pub retried: Vec<(String, String)>,
}

/// One pass over the pending `pr` rows of a workspace at `now`.
pub fn forge_tick(
    ws: &Workspace,
    index: &DbIndex,
    env: &ForgeEnv<'_>,
    now: Timestamp,
) -> Result<ForgeTick, AssignmentError> {
    let mut tick = ForgeTick::default();
    let due: Vec<Assignment> = index
        .open_assignments()?
        .into_iter()
        .filter(|a| a.status == AssignmentStatus::Pending && is_pull_request(ws, a))
        .collect();
    if env.section.open == OpenWhen::Early {
        early(ws, index, env, &due, now, &mut tick)?;
    }
    // The required checks of a target branch, read once a pass whatever the pull requests.
    let mut required = std::collections::HashMap::new();
    for a in due {
        let _guard = results_lock();
        let ticket = super::finish::ticket_of(&a)?;
        match pr_one(ws, index, env, &ticket, &a, now, &mut required, &mut tick) {
            Ok(()) => {}
            Err(StepError::Forge(e)) => {
                tracing::info!(ticket = %a.ticket, error = %e, "a forge call failed; it is tried again");
                tick.retried.push((a.ticket.clone(), e.to_string()));
            }
            Err(StepError::Engine(e)) => {
                tracing::warn!(ticket = %a.ticket, error = %e, "the pr step failed; it is tried again");
                tick.retried.push((a.ticket.clone(), e.to_string()));
            }
        }
    }
    Ok(tick)
}

/// `open = "early"`: every in-progress ticket whose flow ends in a pull request and whose `pr`
/// step is not due yet gets its branch pushed as the coder reports commits, and a draft pull
/// request at the first push; the `pr` step marks it ready once verified and reviewed. A push
/// the lease refuses here is left alone — it is not recorded as the remote head, so the `pr`
/// step's own push meets the same lease and hands the person's commits to the coder, never
/// over them.
fn early(
    ws: &Workspace,
    index: &DbIndex,
    env: &ForgeEnv<'_>,
    due: &[Assignment],
    now: Timestamp,
    tick: &mut ForgeTick,
) -> Result<(), AssignmentError> {
    let mut seen = std::collections::BTreeSet::new();
    for a in index.open_assignments()? {
        if due.iter().any(|d| d.ticket == a.ticket) || !seen.insert(a.ticket.clone()) {
            continue;
        }
        let Ok(ticket) = TicketId::parse(&a.ticket) else {
            continue;
        };
        let ends_in_pr = crate::flows::of_ticket(ws, &ticket)
            .ok()
            .and_then(|f| f.steps.last().map(|s| s.output))
            == Some(yoi_core::flow::Output::PullRequest);
        if !ends_in_pr {
            continue;
        }
        let _guard = results_lock();
        if let Err(e) = early_one(ws, env, &ticket, now, tick) {
            let e = match e {
                StepError::Forge(e) => e.to_string(),
                StepError::Engine(e) => e.to_string(),
            };
            tracing::info!(ticket = %a.ticket, error = %e, "an early push failed; it is tried again");
            tick.retried.push((a.ticket.clone(), e));
        }
    }
    Ok(())
}

fn early_one(
    ws: &Workspace,
    env: &ForgeEnv<'_>,
    ticket: &TicketId,
    now: Timestamp,
    tick: &mut ForgeTick,
) -> Result<(), StepError> {
    let t = ticket.as_str();
    let repo = ws.root();
    let item = ws.read_item(ticket)?;
    let target = item
        .effective_target_ref()
        .unwrap_or_else(|| ws.config.workspace.default_target.clone());
    let place = work_place(ws, ticket)?;
    let head = yoi_git::resolve_commit(repo, &place.branch)?;
    if yoi_git::resolve_commit(repo, &target).ok().as_deref() == Some(head.as_str()) {
        return Ok(()); // Nothing to show yet.
    }
    let rec = pr_record(ws, ticket)?;
    if person_left_out(repo, &rec, &place.branch, &head).is_some() {
        return Ok(()); // The `pr` step sends the work back to take their commits in.
    }
    if rec.remote_head.as_deref() != Some(head.as_str()) {
        let pusher = Push {
            repo,
            remote: &env.section.remote,
            branch: &place.branch,
            sha: &head,
            lease: rec.remote_head.as_deref(),
            user: "x-access-token",
            token: env.token,
            scratch: &env.scratch,
        };
        let landed = match push::push(&pusher)? {
            Pushed::Done => true,
            Pushed::LeaseRefused { .. } => push::fetch(&pusher)?.as_deref() == Some(head.as_str()),
        };
        if !landed {
            tracing::info!(
                ticket = t,
                "someone pushed to the draft's branch; the pr step takes their commits in"
            );
            return Ok(());
        }
        note(
            ws,
            ticket,
            format!("forge-pushed-{t}-{head}"),
            &[
                ("action", action::PUSHED.into()),
                ("head", head.clone()),
                ("branch", place.branch.clone()),
            ],
            &format!(
                "Pushed {head} to `{}` on {} (early: not verified yet).",
                place.branch, env.section.remote
            ),
            now,
        )?;
        tick.pushed.push(t.into());
    }
    if rec.number.is_none() {
        let pr = env.forge.open_change(&NewChange {
            title: item.title.clone(),
            head: place.branch.clone(),
            base: target,
            body: yoi_core::forge::pr_body(&item.body, t, rec.issue),
            draft: true,
            earlier: None,
        })?;
        note(
            ws,
            ticket,
            format!("forge-opened-{t}-{}", pr.number),
            &[
                ("action", action::OPENED.into()),
                ("number", pr.number.to_string()),
                ("url", pr.url.clone()),
                ("head", pr.head_sha.clone()),
                ("draft", pr.draft.to_string()),
            ],
            &format!(
                "Draft pull request #{} for {}: {} — marked ready once yoi verified and reviewed its head.",
                pr.number, pr.head_sha, pr.url
            ),
            now,
        )?;
        tick.opened.push(t.into());
    }
    Ok(())
}

/// Finish the `pr` row as failed and hand out `step` for `role` at a commit, for a reason.
type SendBack<'a> = dyn Fn(&str, Role, &str, String) -> Result<bool, StepError> + 'a;

enum StepError {
    Forge(ForgeError),
    Engine(AssignmentError),
}

impl From<ForgeError> for StepError {
    fn from(e: ForgeError) -> Self {
        StepError::Forge(e)
    }
}
impl<E: Into<AssignmentError>> From<E> for StepError {
    fn from(e: E) -> Self {
        StepError::Engine(e.into())
    }
}

/// What the thread says of the ticket's pull request so far.
#[derive(Debug, Default, Clone)]
pub struct PrRecord {
    /// The head yoi last saw on the remote branch (its push, or a person's).
    pub remote_head: Option<String>,
    pub number: Option<u64>,
    pub url: Option<String>,
    /// The forge issue the ticket came from.
    pub issue: Option<u64>,
    /// Every head a person pushed, as yoi fetched it (`person_pushed`), with the branch it was
    /// pushed to (`None` in events written before the branch was recorded).
    pub people: Vec<(Option<String>, String)>,
    /// How many times the ticket was accepted after its pull request was opened, and whether
    /// the pull request was said to go on since the latest of them (`continued`).
    pub accepted_since_open: usize,
    pub continued: bool,
}

/// Read the `forge_pr` events of a ticket.
pub fn pr_record(ws: &Workspace, ticket: &TicketId) -> Result<PrRecord, StoreError> {
    let thread = ws.read_thread(ticket)?;
    let mut r = PrRecord::default();
    for e in &thread.events {
        if e.kind == yoi_core::thread::EventKind::StateChanged
            && e.get("to") == Some(yoi_core::State::Inprogress.as_str())
            && r.number.is_some()
        {
            r.accepted_since_open += 1;
            r.continued = false;
        }
        if e.kind.as_str() != yoi_core::forge::EVENT {
            continue;
        }
        match e.get("action") {
            Some(action::CONTINUED) => r.continued = true,
            Some(action::PUSHED) => r.remote_head = e.get("head").map(str::to_string),
            Some(action::PERSON_PUSHED) => {
                r.remote_head = e.get("remote").map(str::to_string);
                let branch = e.get("branch").map(str::to_string);
                r.people
                    .extend(e.get("remote").map(|h| (branch, h.to_string())));
            }
            Some(action::ISSUE) => r.issue = e.get("number").and_then(|n| n.parse().ok()),
            Some(action::OPENED) => {
                let number = e.get("number").and_then(|n| n.parse().ok());
                if number != r.number {
                    r.accepted_since_open = 0;
                    r.continued = false;
                }
                r.number = number;
                r.url = e.get("url").map(str::to_string);
            }
            _ => {}
        }
    }
    Ok(r)
}

/// The first head a person pushed to the branch that `head` does not hold. Pushing `head`
/// would drop their commits: the lease only says nobody pushed since yoi last looked, not that
/// the round built on what they pushed (an agent may ignore the feedback that asked it to).
fn person_left_out(
    repo: &std::path::Path,
    rec: &PrRecord,
    branch: &str,
    head: &str,
) -> Option<String> {
    rec.people
        .iter()
        .filter(|(b, _)| b.as_deref().is_none_or(|b| b == branch))
        .find(|(_, p)| !yoi_git::is_ancestor(repo, p, head).unwrap_or(false))
        .map(|(_, p)| p.clone())
}

/// Record a fact once; whether this call wrote it (false: it was already there).
fn note(
    ws: &Workspace,
    ticket: &TicketId,
    op: String,
    attrs: &[(&str, String)],
    body: &str,
    now: Timestamp,
) -> Result<bool, StoreError> {
    // An operation id is at most 200 characters without spaces.
    let op: String = op
        .chars()
        .filter(|c| !c.is_whitespace())
        .take(200)
        .collect();
    let ctx = Ctx::new(Principal::orchestrator(), now).with_op(Some(op));
    match ops::record_forge(ws, &ctx, ticket.as_str(), attrs, body) {
        Ok(o) => Ok(!o.replayed),
        Err(StoreError::StaleState { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The SHA of the newest passed verification and of the newest approval of the ticket.
fn verdict_shas(rows: &[Assignment]) -> (Option<String>, Option<String>) {
    let newest = |f: &dyn Fn(&Assignment) -> bool| {
        rows.iter()
            .filter(|a| a.status == AssignmentStatus::Completed && f(a))
            .max_by_key(|a| (a.finished_ms, a.created_ms))
            .and_then(|a| a.head_commit.clone())
    };
    let verify = newest(&|a| {
        Role::Verifier.is(&a.role) && a.step != ServiceStep::MergeVerify.as_str() && verified(a)
    });
    let review = newest(&|a| {
        Role::Reviewer.is(&a.role) && report_of(a).and_then(|r| r.verdict) == Some(Verdict::Approve)
    });
    (verify, review)
}

#[allow(clippy::too_many_arguments)]
fn pr_one(
    ws: &Workspace,
    index: &DbIndex,
    env: &ForgeEnv<'_>,
    ticket: &TicketId,
    a: &Assignment,
    now: Timestamp,
    required_of: &mut std::collections::HashMap<String, gate::Required>,
    tick: &mut ForgeTick,
) -> Result<(), StepError> {
    let repo = ws.root();
    let item = ws.read_item(ticket)?;
    let target = item
        .effective_target_ref()
        .unwrap_or_else(|| ws.config.workspace.default_target.clone());
    let place = work_place(ws, ticket)?;
    let head = a.head_commit.clone().unwrap_or_default();
    let rows = index.assignments_of(ticket.as_str())?;
    let now_ms = now.unix_millis();
    let t = ticket.as_str();
    let send_back = |step: &str, role: Role, at: &str, reason: String| -> Result<bool, StepError> {
        let reason = format!("{FEEDBACK_PREFIX}{reason}");
        let next = new_step(&rows, ticket, step, role, at, None, now);
        let how = Finish::failed(&reason);
        match index.finish_pending(&a.id, a.fence, &how, Some(&next), now_ms)? {
            Some(row) => {
                record(ws, &row, "failed", None, None, Some(&reason), now)?;
                Ok(true)
            }
            None => Ok(false),
        }
    };
    // A fix round, unless the rounds are used up: then a person decides (`yoi ticket retry`),
    // told that it is the checks that still fail when they are why.
    let round = |reason: String, checks_fail: bool| -> Result<bool, StepError> {
        let flow = crate::flows::of_ticket(ws, ticket)?;
        let feedback = reason.clone();
        let reason = format!("{ROUND_PREFIX}{reason}");
        let used = super::flow::rounds_used(&rows) + 1;
        if used > super::flow::max_rounds(&flow) + super::flow::rounds_granted(&rows) {
            let how = Finish::failed(&reason);
            if let Some(row) = index.finish_pending(&a.id, a.fence, &how, None, now_ms)? {
                record(ws, &row, "failed", None, None, Some(&reason), now)?;
                if checks_fail {
                    let body = format!(
                        "The required checks still fail at {head} after {} fix rounds (the limit is {}); nothing more is handed out.\n\n{}\n\nFix the cause (the code, or CI), then `yoi ticket retry {t}` for one more round, or cancel the ticket.",
                        used - 1,
                        super::flow::max_rounds(&flow),
                        feedback.trim()
                    );
                    attention(ws, ticket, CHECKS_FAILING, &body, None, now)?;
                } else {
                    super::flow::exhausted(ws, ticket, &flow, used, now)?;
                }
            }
            return Ok(false);
        }
        let first = flow.first();
        let next = new_step(&rows, ticket, &first.id, first.role, &head, None, now);
        match index.finish_pending(
            &a.id,
            a.fence,
            &Finish::failed(&reason),
            Some(&next),
            now_ms,
        )? {
            Some(row) => {
                record(ws, &row, "failed", None, None, Some(&reason), now)?;
                Ok(true)
            }
            None => Ok(false),
        }
    };
    let local = yoi_git::resolve_commit(repo, &place.branch)?;
    if local != head {
        // The branch moved after the approval: what is pushed must be verified and reviewed.
        let flow = crate::flows::of_ticket(ws, ticket)?;
        let again = super::flow::reverify_step(&flow);
        let reason = format!(
            "the branch {} moved from the approved commit {head} to {local}; {local} is verified and reviewed again before it is pushed",
            place.branch
        );
        if send_back(&again.id, again.role, &local, reason)? {
            tick.sent_back.push(t.into());
        }
        return Ok(());
    }
    let rec = pr_record(ws, ticket)?;
    let lease = rec.remote_head.clone();
    let pusher = Push {
        repo,
        remote: &env.section.remote,
        branch: &place.branch,
        sha: &head,
        lease: lease.as_deref(),
        user: "x-access-token",
        token: env.token,
        scratch: &env.scratch,
    };
    // 1. The push, unless the remote branch is already at the head; never of a head that leaves
    // out a person's commits (the round goes back to the coder to merge them in).
    if let Some(theirs) = person_left_out(repo, &rec, &place.branch, &head) {
        let reason = format!(
            "{head} leaves out {theirs}, which a person pushed to `{b}`: merge `refs/yoi/forge/{b}` ({theirs}) into the ticket branch, keeping their commits, then finish",
            b = place.branch
        );
        if send_back(ServiceStep::Integrate.as_str(), Role::Coder, &head, reason)? {
            tick.sent_back.push(t.into());
        }
        return Ok(());
    }
    if rec.remote_head.as_deref() != Some(head.as_str()) {
        let landed = match push::push(&pusher)? {
            Pushed::Done => true,
            // Refused: someone pushed — or a push of ours landed and a crash lost its record,
            // in which case the remote is exactly at the head.
            Pushed::LeaseRefused { .. } => match push::fetch(&pusher)? {
                Some(found) => found == head,
                // The branch is gone from the remote (deleted after its pull request merged,
                // or by a person): nothing is there to keep — every head a person pushed is in
                // `head` (checked above) — so it is pushed anew, on the lease that it is absent.
                None => {
                    let anew = Push {
                        lease: None,
                        ..pusher
                    };
                    push::push(&anew)? == Pushed::Done
                }
            },
        };
        if !landed {
            return person_pushed(ws, env, &pusher, ticket, &head, now, tick, &send_back);
        }
        note(
            ws,
            ticket,
            format!("forge-pushed-{t}-{head}"),
            &[
                ("action", action::PUSHED.into()),
                ("head", head.clone()),
                ("branch", place.branch.clone()),
            ],
            &format!(
                "Pushed {head} to `{}` on {}.",
                place.branch, env.section.remote
            ),
            now,
        )?;
        tick.pushed.push(t.into());
    }
    // 2. The pull request, opened once — or once again, when the one the thread records ended
    // (merged or closed) before the ticket was accepted again: that one was an earlier
    // attempt's, and this attempt opens its own.
    let known = match rec.number {
        Some(n) => Some(env.forge.change(n)?),
        None => None,
    };
    let earlier = known
        .as_ref()
        .filter(|pr| rec.accepted_since_open > 0 && !rec.continued && pr.state != ChangeState::Open)
        .map(|pr| pr.number);
    let pr = match (known, earlier) {
        (Some(pr), None) => pr,
        (_, earlier) => {
            let closes = rec.issue;
            let pr = env.forge.open_change(&NewChange {
                title: item.title.clone(),
                head: place.branch.clone(),
                base: target.clone(),
                body: yoi_core::forge::pr_body(&item.body, t, closes),
                draft: false,
                earlier,
            })?;
            note(
                ws,
                ticket,
                format!("forge-opened-{t}-{}", pr.number),
                &[
                    ("action", action::OPENED.into()),
                    ("number", pr.number.to_string()),
                    ("url", pr.url.clone()),
                    ("head", pr.head_sha.clone()),
                ],
                &format!(
                    "Pull request #{} for {}: {}",
                    pr.number, pr.head_sha, pr.url
                ),
                now,
            )?;
            tick.opened.push(t.into());
            pr
        }
    };
    match pr.state {
        ChangeState::Merged => {
            let sha = pr.merge_sha.clone().unwrap_or_default();
            return merged(
                ws, env, index, ticket, a, &pr, &target, &head, &sha, None, now, tick,
            );
        }
        ChangeState::Closed => {
            let reason = format!("pull request #{} was closed without a merge", pr.number);
            note(
                ws,
                ticket,
                format!("forge-closed-{t}-{}", pr.number),
                &[
                    ("action", action::CLOSED.into()),
                    ("number", pr.number.to_string()),
                ],
                &format!(
                    "Pull request #{} ({}) was closed without a merge.",
                    pr.number, pr.url
                ),
                now,
            )?;
            let how = Finish::failed(&reason);
            if let Some(row) = index.finish_pending(&a.id, a.fence, &how, None, now_ms)? {
                record(ws, &row, "failed", None, None, Some(&reason), now)?;
                let ctx = Ctx::new(Principal::orchestrator(), now);
                let body = format!(
                    "Pull request #{} ({}) was closed on the forge without a merge. Nothing more happens on its own: reopen it and `yoi ticket retry {t}`, or cancel the ticket.",
                    pr.number, pr.url
                );
                match ops::attention(ws, &ctx, t, PR_CLOSED, &body) {
                    Ok(_) | Err(StoreError::StaleState { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            return Ok(());
        }
        ChangeState::Open => {}
    }
    if pr.head_sha != head {
        // Someone pushed to the pull request's branch after yoi did.
        return person_pushed(ws, env, &pusher, ticket, &head, now, tick, &send_back);
    }
    // The ticket was accepted again since the pull request opened: it goes on with the new
    // attempt (same branch, docs/routing.md), and the people on it are told so, once.
    if rec.accepted_since_open > 0 && !rec.continued {
        continued(ws, env, ticket, &pr, &head, rec.accepted_since_open, now)?;
    }
    // A draft (`open = "early"`) is marked ready now that yoi verified and reviewed its head.
    if pr.draft {
        env.forge.mark_ready(&pr)?;
        note(
            ws,
            ticket,
            format!("forge-ready-{t}-{}-{head}", pr.number),
            &[
                ("action", action::READY.into()),
                ("number", pr.number.to_string()),
                ("head", head.clone()),
            ],
            &format!(
                "Pull request #{} marked ready for review: yoi verified and reviewed {head}.",
                pr.number
            ),
            now,
        )?;
    }
    // A `/yoi fix` from a person with write access is a round; anyone else's is shown only.
    if let Some(reason) = fix_requested(ws, env, ticket, pr.number, now)? {
        if round(reason, false)? {
            tick.sent_back.push(t.into());
        }
        return Ok(());
    }
    // 3. yoi's verdicts for this head, as commit statuses people see on the forge.
    let (verified_sha, reviewed_sha) = verdict_shas(&rows);
    // What the forge says now, kept with what it (or a webhook) said before: the newer result
    // of each check wins, so a late older one — a reordered webhook, a stale cache — never
    // overwrites it, and the results outlive a restart.
    let fresh = env.forge.checks(&head)?;
    index.forge_checks_record(&fresh, yoi_db::forge::FROM_POLL, now_ms)?;
    let checks = gate::latest(fresh.into_iter().chain(index.forge_checks_of(&head)?));
    for (context, sha, what) in [
        (STATUS_VERIFY, &verified_sha, "verified by yoi"),
        (STATUS_REVIEW, &reviewed_sha, "approved by yoi's reviewer"),
    ] {
        let posted = checks
            .iter()
            .any(|c| c.name == context && c.conclusion == gate::Conclusion::Success);
        if sha.as_deref() == Some(head.as_str()) && !posted {
            env.forge
                .set_status(&head, context, StatusState::Success, what)?;
        }
    }
    // 4. The gate, for exactly this head.
    let reviews = env.forge.reviews(pr.number)?;
    let required = match required_of.get(&target) {
        Some(r) => r.clone(),
        None => {
            let r = env
                .forge
                .required_checks(&target, &env.section.required_checks)?;
            required_of.insert(target.clone(), r.clone());
            r
        }
    };
    let g = gate::evaluate(&GateInput {
        head: &head,
        checks: &checks,
        required: &required,
        reviews: &reviews,
        verified: verified_sha.as_deref(),
        reviewed: reviewed_sha.as_deref(),
        required_approvals: env.section.required_approvals,
        own_contexts: &[STATUS_VERIFY, STATUS_REVIEW],
    });
    for r in &reviews {
        note(
            ws,
            ticket,
            format!("forge-review-{t}-{}", r.id),
            &[
                ("action", action::REVIEW.into()),
                ("user", r.user.clone()),
                ("state", format!("{:?}", r.state)),
                ("commit", r.commit_id.clone()),
            ],
            &format!(
                "{} reviewed {}: {:?}.\n\n{}",
                r.user, r.commit_id, r.state, r.body
            ),
            now,
        )?;
    }
    // Review comments on lines of the diff, each with its file, line and commit.
    let line_comments = env.forge.review_comments(pr.number)?;
    for c in &line_comments {
        let at = match c.line {
            Some(l) => format!("{}:{l}", c.path),
            None => c.path.clone(),
        };
        let mut attrs = vec![
            ("action", action::REVIEW_COMMENT.to_string()),
            ("user", c.user.clone()),
            ("path", c.path.clone()),
            ("commit", c.commit_id.clone()),
            ("comment", c.id.to_string()),
        ];
        if let Some(l) = c.line {
            attrs.push(("line", l.to_string()));
        }
        let body = format!(
            "{} on `{at}` at {}:\n\n{}\n\n{}",
            c.user, c.commit_id, c.body, c.url
        );
        note(
            ws,
            ticket,
            format!("forge-line-comment-{t}-{}", c.id),
            &attrs,
            &body,
            now,
        )?;
    }
    if !g.open {
        if let Some(reason) = feedback_of(&g, &checks, &line_comments) {
            // A failing required check or a change request: a round with that feedback.
            let checks_fail = g
                .blockers
                .iter()
                .any(|b| matches!(b, Blocker::CheckFailed { .. }));
            if round(reason, checks_fail)? {
                tick.sent_back.push(t.into());
            }
            return Ok(());
        }
        record_gate(ws, ticket, &g, now)?;
        if g.blockers
            .iter()
            .all(|b| matches!(b, Blocker::Approvals { .. }))
        {
            // Only people's approvals for this head are missing: it waits on them.
            let why: Vec<String> = g.blockers.iter().map(blocker_text).collect();
            let body = format!(
                "Pull request #{} ({}) waits for your review of {head}: {}.",
                pr.number,
                pr.url,
                why.join("; ")
            );
            let op = format!("forge-wait-review-{t}-{head}");
            attention(ws, ticket, PR_REVIEW, &body, Some(op), now)?;
        }
        tick.waiting.push((t.into(), g));
        return Ok(());
    }
    // 5. The merge with exactly this head, or a person's.
    if env.section.merge == Merger::Person {
        record_gate(ws, ticket, &g, now)?;
        let body = format!(
            "Pull request #{} ({}) is ready for you to merge: every required check and verdict is for its head {head}. Merge it on the forge (only that head).",
            pr.number, pr.url
        );
        let op = format!("forge-wait-merge-{t}-{head}");
        attention(ws, ticket, PR_REVIEW, &body, Some(op), now)?;
        tick.waiting.push((t.into(), g));
        return Ok(());
    }
    let title = format!("{} (#{})", item.title, pr.number);
    match env
        .forge
        .merge(pr.number, &head, env.section.merge_method, &title)?
    {
        MergeOutcome::Merged { sha } => {
            let method = env.section.merge_method.as_str();
            merged(
                ws,
                env,
                index,
                ticket,
                a,
                &pr,
                &target,
                &head,
                &sha,
                Some(method),
                now,
                tick,
            )
        }
        // The head moved after the gate read it: evaluated again next time, never merged.
        MergeOutcome::HeadMoved { .. } => Ok(()),
        MergeOutcome::NotMergeable { message } => {
            if index.note_pending(&a.id, a.fence, &message)? {
                let ctx = Ctx::new(Principal::orchestrator(), now);
                let body = format!(
                    "The forge refused to merge pull request #{} ({}): {message}. yoi tries again; resolve it on the forge.",
                    pr.number, pr.url
                );
                match ops::attention(ws, &ctx, t, PR_NOT_MERGEABLE, &body) {
                    Ok(_) | Err(StoreError::StaleState { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(())
        }
    }
}

/// Say on the pull request, and record, that the ticket was accepted again and `pr` goes on
/// with the new attempt's `head`. The comment comes first, so a failure is tried again by the
/// next pass; `nth` (the acceptances since it opened) keys the fact.
fn continued(
    ws: &Workspace,
    env: &ForgeEnv<'_>,
    ticket: &TicketId,
    pr: &yoi_forge::ChangeRequest,
    head: &str,
    nth: usize,
    now: Timestamp,
) -> Result<(), StepError> {
    let t = ticket.as_str();
    env.forge.comment(
        pr.number,
        &format!(
            "yoi accepted ticket {t} again (it had been returned to planning). This pull request \
             goes on with the new attempt on the same branch: its head is now {head}, which yoi \
             verified and reviewed. Earlier reviews and checks are for earlier commits."
        ),
    )?;
    note(
        ws,
        ticket,
        format!("forge-continued-{t}-{}-{nth}", pr.number),
        &[
            ("action", action::CONTINUED.into()),
            ("number", pr.number.to_string()),
            ("head", head.into()),
        ],
        &format!(
            "The ticket was accepted again; pull request #{} ({}) goes on with the new attempt at {head}.",
            pr.number, pr.url
        ),
        now,
    )?;
    Ok(())
}

/// An `attention` event for a person (the inbox shows it), written once under `op` when given.
fn attention(
    ws: &Workspace,
    ticket: &TicketId,
    reason: &str,
    body: &str,
    op: Option<String>,
    now: Timestamp,
) -> Result<(), StepError> {
    let ctx = Ctx::new(Principal::orchestrator(), now).with_op(op);
    match ops::attention(ws, &ctx, ticket.as_str(), reason, body) {
        // Said already for this head (its words may have changed since: still said once).
        Ok(_) | Err(StoreError::StaleState { .. } | StoreError::ConflictingReplay { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Record why the gate is (or, for a person's merge, that it is) as it is, once per distinct
/// answer: people read it in the thread and through `GET /api/v1/tickets/{id}/forge`.
fn record_gate(
    ws: &Workspace,
    ticket: &TicketId,
    g: &Gate,
    now: Timestamp,
) -> Result<(), StepError> {
    let json = serde_json::to_string(g).unwrap_or_default();
    let key = &yoi_core::sha256_hex(json.as_bytes())[..16];
    let mut body = if g.open {
        format!("The gate is open for {}: a person may merge.\n", g.head)
    } else {
        format!("The gate is closed for {}:\n", g.head)
    };
    for b in &g.blockers {
        body.push_str(&format!("- {}\n", blocker_text(b)));
    }
    for n in &g.notes {
        body.push_str(&format!("- note: {n}\n"));
    }
    body.push_str(&format!("\n```json\n{json}\n```\n"));
    let attrs = [
        ("action", action::WAITING.to_string()),
        ("head", g.head.clone()),
        ("open", g.open.to_string()),
    ];
    note(
        ws,
        ticket,
        format!("forge-gate-{}-{key}", ticket.as_str()),
        &attrs,
        &body,
        now,
    )?;
    Ok(())
}

/// The first `/yoi fix` comment not handled before whose author may push (asked of the forge,
/// not read from `author_association`, which says nothing of write access): its text, as the
/// reason of a round. Every `/yoi fix` is recorded once; one from anyone else is shown in the
/// thread and never obeyed (an outside comment is untrusted input, like agent output).
fn fix_requested(
    ws: &Workspace,
    env: &ForgeEnv<'_>,
    ticket: &TicketId,
    number: u64,
    now: Timestamp,
) -> Result<Option<String>, StepError> {
    let t = ticket.as_str();
    for c in env.forge.comments(number)? {
        let Some(rest) = c
            .body
            .trim_start()
            .strip_prefix(yoi_core::forge::FIX_COMMAND)
        else {
            continue;
        };
        let ask: String = rest.trim().chars().take(4000).collect();
        let op = format!("forge-comment-{t}-{}", c.id);
        if env.forge.permission(&c.user)?.can_push() {
            let body = format!(
                "{} asked for a round on pull request #{number}:\n\n{ask}",
                c.user
            );
            let attrs = [
                ("action", action::FIX_REQUESTED.to_string()),
                ("user", c.user.clone()),
                ("comment", c.id.to_string()),
            ];
            if note(ws, ticket, op, &attrs, &body, now)? {
                return Ok(Some(format!(
                    "{} asked on pull request #{number} (`/yoi fix`): {ask}",
                    c.user
                )));
            }
        } else {
            let body = format!(
                "{} wrote `/yoi fix` on pull request #{number} but has no write access to the repository: shown here, not obeyed.\n\n{ask}",
                c.user
            );
            let attrs = [
                ("action", action::COMMENT_IGNORED.to_string()),
                ("user", c.user.clone()),
                ("comment", c.id.to_string()),
            ];
            note(ws, ticket, op, &attrs, &body, now)?;
        }
    }
    Ok(None)
}

/// The feedback for a round, when the gate is closed for a reason a coder can fix: a required
/// check that failed (with its output) or a change request (with the requester's comments on
/// lines of that commit, each with its file and line).
fn feedback_of(
    g: &Gate,
    checks: &[gate::CheckResult],
    line_comments: &[yoi_forge::ReviewComment],
) -> Option<String> {
    let mut out = String::new();
    for b in &g.blockers {
        match b {
            Blocker::CheckFailed { name, conclusion } => {
                out.push_str(&format!(
                    "The required check `{name}` concluded {} at {}.\n",
                    conclusion.as_str(),
                    g.head
                ));
                if let Some(c) = checks.iter().find(|c| &c.name == name && c.sha == g.head) {
                    for s in [&c.title, &c.summary].into_iter().flatten() {
                        out.push_str(&format!("  {}\n", s.trim()));
                    }
                    if let Some(u) = &c.url {
                        out.push_str(&format!("  {u}\n"));
                    }
                }
            }
            Blocker::ChangesRequested { user, commit_id } => {
                out.push_str(&format!("{user} requested changes on {commit_id}.\n"));
                for c in line_comments
                    .iter()
                    .filter(|c| &c.user == user && &c.commit_id == commit_id)
                {
                    let at = match c.line {
                        Some(l) => format!("{}:{l}", c.path),
                        None => c.path.clone(),
                    };
                    out.push_str(&format!("  {at}: {}\n", c.body.trim()));
                }
            }
            _ => {}
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A person pushed to the branch: fetch their commits, record them, and send the ticket to its
/// coder to build on them (`integrate` at the local head, with the remote head to merge).
#[allow(clippy::too_many_arguments)]
fn person_pushed(
    ws: &Workspace,
    env: &ForgeEnv<'_>,
    pusher: &Push<'_>,
    ticket: &TicketId,
    head: &str,
    now: Timestamp,
    tick: &mut ForgeTick,
    send_back: &SendBack<'_>,
) -> Result<(), StepError> {
    let t = ticket.as_str();
    let Some(remote) = push::fetch(pusher)? else {
        return Err(StepError::Forge(ForgeError::Push {
            remote: env.section.remote.clone(),
            reason: format!(
                "the push of `{}` was refused but the branch is gone",
                pusher.branch
            ),
        }));
    };
    let body = format!(
        "Someone pushed {remote} to `{}` after yoi's last push; nothing of it is overwritten. \
         It is fetched as `refs/yoi/forge/{}`, and the next round merges it into the ticket branch.",
        pusher.branch, pusher.branch
    );
    note(
        ws,
        ticket,
        format!("forge-person-{t}-{remote}"),
        &[
            ("action", action::PERSON_PUSHED.into()),
            ("remote", remote.clone()),
            ("local", head.into()),
            ("branch", pusher.branch.into()),
        ],
        &body,
        now,
    )?;
    let reason = format!(
        "a person pushed {remote} to `{b}`: merge `refs/yoi/forge/{b}` ({remote}) into the ticket branch, keeping their commits, then finish",
        b = pusher.branch
    );
    if send_back(ServiceStep::Integrate.as_str(), Role::Coder, head, reason)? {
        tick.sent_back.push(t.into());
    }
    Ok(())
}

/// The pull request merged (by yoi or a person): the row completes with the merge record and
/// the flow marks the ticket done.
#[allow(clippy::too_many_arguments)]
fn merged(
    ws: &Workspace,
    env: &ForgeEnv<'_>,
    index: &DbIndex,
    ticket: &TicketId,
    a: &Assignment,
    pr: &yoi_forge::ChangeRequest,
    target: &str,
    head: &str,
    sha: &str,
    method: Option<&str>,
    now: Timestamp,
    tick: &mut ForgeTick,
) -> Result<(), StepError> {
    let t = ticket.as_str();
    let method = method.unwrap_or("by a person on the forge");
    note(
        ws,
        ticket,
        format!("forge-merged-{t}-{}", pr.number),
        &[
            ("action", action::MERGED.into()),
            ("number", pr.number.to_string()),
            ("url", pr.url.clone()),
            ("sha", sha.into()),
            ("head", head.into()),
            ("method", method.into()),
        ],
        &format!(
            "Pull request #{} merged into `{target}` as {sha} ({method}), for the head {head}.",
            pr.number
        ),
        now,
    )?;
    // The issue the ticket came from closes with its pull request (GitHub's `Closes #N` does it
    // only for a merge into the default branch), before the row completes, so a failure here is
    // tried again by the next pass.
    if let Some(issue) = pr_record(ws, ticket)?.issue {
        let closed_now = env.forge.close_issue(
            issue,
            &format!(
                "Closed by pull request #{} ({}), merged into `{target}` as {sha}.",
                pr.number, pr.url
            ),
        )?;
        note(
            ws,
            ticket,
            format!("forge-issue-closed-{t}-{issue}"),
            &[
                ("action", action::ISSUE_CLOSED.into()),
                ("number", issue.to_string()),
                ("by", if closed_now { "yoi" } else { "forge" }.into()),
            ],
            &format!("Issue #{issue} is closed with pull request #{}.", pr.number),
            now,
        )?;
    }
    let rec = MergeRecord {
        target_ref: target.into(),
        before: String::new(),
        after: sha.into(),
        commit: head.into(),
    };
    let how = Finish {
        status: AssignmentStatus::Completed,
        result: serde_json::to_string(&rec).ok(),
        usage: None,
        error: None,
        log_path: None,
    };
    if let Some(row) = index.finish_pending(&a.id, a.fence, &how, None, now.unix_millis())? {
        record(ws, &row, "completed", Some(sha), None, None, now)?;
        tick.merged.push(t.into());
    }
    Ok(())
}
