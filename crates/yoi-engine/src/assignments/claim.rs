//! Registering pods, claiming work with its working directory, and heartbeats.

use std::path::{Path, PathBuf};
use yoi_core::Role;

use serde::Serialize;
use yoi_core::packet::FrozenPacket;
use yoi_core::{TicketId, Timestamp};
use yoi_db::{Assignment, AssignmentStatus, DbIndex, Finish, PodRow, PodState};
use yoi_store::Workspace;

use super::{
    next_attempt, packet, results_lock, retries_left, work_place, AssignmentError, LeaseConfig,
};

/// Who is asking: the token's id and the role its scope names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodCaller {
    pub token_id: String,
    pub role: Role,
}

/// What a pod says of itself when it registers.
#[derive(Debug, Clone, Copy, Default)]
pub struct PodIntro<'a> {
    pub name: &'a str,
    pub host: &'a str,
    pub pid: Option<i64>,
    /// The agent profile it runs.
    pub profile: Option<&'a str>,
    /// The sandbox its agents run in.
    pub sandbox: Option<&'a str>,
    /// The provider its profile belongs to (docs/budgets.md).
    pub provider: Option<&'a str>,
}

/// Register a pod incarnation for `caller`'s role: its name plus a nonce drawn now, so a
/// restarted pod is a new row.
pub fn register_pod(
    index: &DbIndex,
    caller: &PodCaller,
    intro: PodIntro<'_>,
    now: Timestamp,
) -> Result<PodRow, AssignmentError> {
    let PodIntro {
        name,
        host,
        pid,
        profile,
        sandbox,
        provider,
    } = intro;
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(AssignmentError::BadResult {
            id: "register".into(),
            reason: format!("pod name {name:?} must be 1-64 letters, digits, `-`, `_` or `.`"),
        });
    }
    let role = caller.role.as_str();
    let nonce = yoi_store::ops::new_ulid(now).to_string();
    let row = PodRow {
        id: format!("{name}@{}", &nonce[nonce.len() - 10..]),
        name: name.to_string(),
        role: role.to_string(),
        host: host.to_string(),
        pid,
        profile: profile.map(str::to_string),
        state: PodState::Idle,
        registered_ms: now.unix_millis(),
        heartbeat_ms: now.unix_millis(),
        assignment: None,
        token_id: caller.token_id.clone(),
        sandbox: sandbox.map(|s| s.chars().take(500).collect()),
        provider: provider
            .filter(|p| !p.trim().is_empty())
            .map(|p| p.chars().take(100).collect()),
    };
    index.register_pod(&row)?;
    Ok(row)
}

/// The pod `pod` if `caller` speaks for it: registered with the caller's token, for its role.
pub fn pod_of(index: &DbIndex, caller: &PodCaller, pod: &str) -> Result<PodRow, AssignmentError> {
    speaks_for(caller, pod, index.pod(pod)?)
}

/// `row` (the pod `pod` as read) if `caller` speaks for it.
fn speaks_for(
    caller: &PodCaller,
    pod: &str,
    row: Option<PodRow>,
) -> Result<PodRow, AssignmentError> {
    let row = row.ok_or_else(|| AssignmentError::UnknownPod {
        pod: pod.to_string(),
    })?;
    if row.token_id != caller.token_id || !caller.role.is(&row.role) {
        return Err(AssignmentError::NotYours {
            id: format!("pod {pod}"),
            pod: pod.to_string(),
        });
    }
    Ok(row)
}

/// Whether `caller` may act on assignment `a`: its role's work only.
pub(crate) fn check_role(
    caller: &PodCaller,
    a: &Assignment,
    action: &'static str,
) -> Result<(), AssignmentError> {
    if !caller.role.is(&a.role) {
        return Err(AssignmentError::WrongRole {
            token_role: caller.role.to_string(),
            role: a.role.clone(),
            action,
        });
    }
    Ok(())
}

/// What a claim hands a pod: the assignment, where to work, and the brief.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = ClaimedWork)]
pub struct Work {
    pub assignment: Assignment,
    pub ticket: TicketId,
    pub title: String,
    /// The folder to run the agent in (absolute).
    #[schema(value_type = String)]
    pub workdir: PathBuf,
    /// The ticket branch the result will move, and its head when the folder was prepared.
    pub branch: String,
    pub head_commit: String,
    /// Where the ticket branch began (its base at acceptance): a review reads
    /// `base_commit..head_commit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
    /// The IntentPacket frozen at acceptance.
    pub packet: Option<FrozenPacket>,
    pub lease_ms: i64,
    pub heartbeat_ms: i64,
    /// What the last verification or review said, for a new round (by reference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// The token for the agent (`agent_token`), filled in by the server that holds the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_token: Option<String>,
    /// The earlier attempt whose work this one starts from: the folder is detached at its
    /// commit, while `head_commit` stays the head the result must descend from and the branch
    /// moves from (docs/pods.md, "Retries keep the work").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<super::KeptWork>,
    /// The workflows people invoked on the ticket that this attempt carries, rendered for the
    /// top of its prompt: what each requires, then its body (docs/workflows.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// The workflows its agent may invoke itself (`auto_invoke: true` for its role), listed in
    /// its prompt next to the skills.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub invocable: Vec<crate::workflows::carry::Invocable>,
    /// The questions agents asked on this ticket and people's answers, oldest first: the top
    /// of the prompt (docs/inbox.md, "Agents ask").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answered: Vec<super::questions::Answered>,
    /// Whether the pod moves commits through a remote of the repository (`[pods] transport =
    /// "remote"`, for a pod that claimed without the server's disk) instead of the server's
    /// own git; `remote_git` then says where.
    #[serde(default)]
    pub remote: bool,
    /// The remote, the refs to fetch and the attempt ref to push to, when `remote`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_git: Option<super::transport::ClaimRemote>,
}

/// Claim the oldest pending assignment of the pod's role and hand it out with its working
/// directory; `None` when there is no work. [`claim_many`] and [`hand_out`] in one call.
pub fn claim(
    ws: &Workspace,
    index: &DbIndex,
    caller: &PodCaller,
    pod: &str,
    cfg: LeaseConfig,
    now: Timestamp,
) -> Result<Option<Work>, AssignmentError> {
    let asks = [(caller.clone(), pod.to_string())];
    match claim_many(ws, index, &asks, cfg, now)?.pop() {
        Some(Ok(Some(Claimed::Ready(work)))) => Ok(Some(*work)),
        Some(Ok(Some(Claimed::Prepare(a)))) => hand_out(ws, index, pod, *a, cfg, now).map(Some),
        Some(Err(e)) => Err(e),
        Some(Ok(None)) | None => Ok(None),
    }
}

/// A claimed row: handed out already, or still needing its working directory made
/// ([`hand_out`], which may touch git and so is kept out of a group's transaction).
#[derive(Debug)]
pub enum Claimed {
    Ready(Box<Work>),
    Prepare(Box<Assignment>),
}

/// Claims for several pods at once, in one write transaction: for each `(caller, pod)`, the
/// claim (see [`Claimed`]), `None` when the role has no pending work (or the pod is draining),
/// or why the caller may not claim for that pod. A server groups the claims that arrive
/// together so a crowd of polling pods costs one read and one transaction per wave, not a few
/// each. Fails as a whole only when the database does.
#[allow(clippy::type_complexity)]
pub fn claim_many(
    ws: &Workspace,
    index: &DbIndex,
    asks: &[(PodCaller, String)],
    cfg: LeaseConfig,
    now: Timestamp,
) -> Result<Vec<Result<Option<Claimed>, AssignmentError>>, AssignmentError> {
    let now_ms = now.unix_millis();
    let ids: Vec<&str> = asks.iter().map(|(_, p)| p.as_str()).collect();
    let known: std::collections::HashMap<String, PodRow> = index
        .pods_by_id(&ids)?
        .into_iter()
        .map(|r| (r.id.clone(), r))
        .collect();
    let mut out: Vec<Option<Result<Option<Claimed>, AssignmentError>>> =
        (0..asks.len()).map(|_| None).collect();
    let mut rows = Vec::new();
    for (i, (caller, pod)) in asks.iter().enumerate() {
        let row = known.get(pod).cloned();
        match speaks_for(caller, pod, row) {
            Err(e) => out[i] = Some(Err(e)),
            Ok(row) if matches!(row.state, PodState::Draining | PodState::Stopped) => {
                out[i] = Some(Ok(None))
            }
            Ok(row) => rows.push((i, row)),
        }
    }
    // Paused agents and agents at their governor's limit wait without claiming
    // (crate::spend::gate).
    let waits = crate::spend::gate(
        ws,
        index,
        &rows.iter().map(|(_, r)| r).collect::<Vec<_>>(),
        now_ms,
    )?;
    let rows: Vec<(usize, PodRow)> = rows
        .into_iter()
        .zip(waits)
        .filter_map(|((i, row), wait)| match wait {
            Some(_) => {
                out[i] = Some(Ok(None));
                None
            }
            None => Some((i, row)),
        })
        .collect();
    let wanted: Vec<(&str, &str)> = rows
        .iter()
        .map(|(_, r)| (r.role.as_str(), r.id.as_str()))
        .collect();
    let got = if wanted.is_empty() {
        Vec::new()
    } else {
        index.claim_assignments(&wanted, now_ms + cfg.lease_ms, now_ms)?
    };
    for ((i, row), a) in rows.iter().zip(got) {
        let Some(a) = a else {
            // An idle pod polling an empty queue writes its row only every few seconds.
            if row.state != PodState::Idle || now_ms - row.heartbeat_ms >= 5_000 {
                index.touch_pod(&row.id, PodState::Idle, None, now_ms)?;
            }
            out[*i] = Some(Ok(None));
            continue;
        };
        let ready = match (&a.workdir, &a.head_commit) {
            (Some(dir), Some(head)) => ready(ws, &a, PathBuf::from(dir), head.clone(), cfg).ok(),
            _ => None,
        };
        out[*i] = Some(Ok(Some(match ready {
            Some(mut work) => {
                crate::workflows::carry::fill(ws, index, &mut work, now)?;
                Claimed::Ready(Box::new(work))
            }
            None => Claimed::Prepare(Box::new(a)),
        })));
    }
    Ok(out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect())
}

/// Hand a claimed row to its pod: the working directory, the brief and the lease terms. An
/// attempt whose folder was made with it (attempt 1: the ticket worktree from acceptance)
/// needs only two small file reads; a later attempt gets its own worktree made now. A folder
/// that cannot be prepared fails the attempt (and hands the step out again while the circuit
/// allows).
pub fn hand_out(
    ws: &Workspace,
    index: &DbIndex,
    pod: &str,
    a: Assignment,
    cfg: LeaseConfig,
    now: Timestamp,
) -> Result<Work, AssignmentError> {
    let prepared = match (&a.workdir, &a.head_commit) {
        (Some(dir), Some(head)) => ready(ws, &a, PathBuf::from(dir), head.clone(), cfg),
        _ => prepare(ws, index, pod, &a, cfg, now),
    };
    match prepared {
        Ok(mut work) => {
            crate::workflows::carry::fill(ws, index, &mut work, now)?;
            Ok(work)
        }
        Err(reason) => {
            let _guard = results_lock();
            let attempts = index.attempts_of(&a.ticket, &a.step)?;
            let failed_in_a_row = 1 + trailing_failures(&attempts, &a.id);
            let next = retries_left(ws, &a, failed_in_a_row).then(|| next_attempt(&a, now));
            let how = Finish::failed(&reason);
            index.finish_assignment(
                &a.id,
                a.fence,
                Some(pod),
                &how,
                next.as_ref(),
                now.unix_millis(),
            )?;
            Err(AssignmentError::Prepare { id: a.id, reason })
        }
    }
}

/// Failed or expired attempts directly before `id` in `attempts` (attempt order).
pub(crate) fn trailing_failures(attempts: &[Assignment], id: &str) -> usize {
    attempts
        .iter()
        .take_while(|a| a.id != id)
        // A rate limit is no failure, nor does it end a run of them (docs/budgets.md).
        .filter(|a| a.status != AssignmentStatus::RateLimited)
        .collect::<Vec<_>>()
        .iter()
        .rev()
        .take_while(|a| {
            matches!(
                a.status,
                AssignmentStatus::Failed | AssignmentStatus::Expired
            )
        })
        .count()
}

/// The working directory of a claimed attempt: attempt 1 of a coder step works in the ticket
/// worktree made at acceptance (detached at the base commit, which no earlier process used);
/// every later coder attempt gets a fresh worktree detached at the branch head, so it never
/// shares a folder with an earlier attempt's process that may still be running. A read-only
/// step (verify, review, merge-verify) works in the claiming pod's own worktree
/// ([`pod_worktree`]), moved to the exact commit.
fn prepare(
    ws: &Workspace,
    index: &DbIndex,
    pod: &str,
    a: &Assignment,
    cfg: LeaseConfig,
    now: Timestamp,
) -> Result<Work, String> {
    let ticket = TicketId::parse(&a.ticket).map_err(|e| e.to_string())?;
    let place = work_place(ws, &ticket).map_err(|e| e.to_string())?;
    let repo = ws.root();
    // A step bound to a commit (verify, review, a new round) works at that commit.
    let head = match &a.head_commit {
        Some(h) => h.clone(),
        None => yoi_git::resolve_commit(repo, &place.branch).map_err(|e| e.to_string())?,
    };
    let flow = crate::flows::of_ticket(ws, &ticket).map_err(|e| e.to_string())?;
    let leave_out = ws.config.tickets_prefix();
    let mut kept = None;
    let workdir = if a.step == flow.first().id && a.attempt <= 1 {
        ready_ticket_worktree(&place.worktree, &head)?;
        place.worktree.clone()
    } else if let Some(dir) = (!Role::Coder.is(&a.role))
        .then(|| pod_worktree(ws, index, pod, &head, now))
        .transpose()?
        .flatten()
    {
        dir
    } else {
        let dir = step_dir(&place.worktree, &a.step, a.attempt);
        if dir.exists() {
            return Err(format!(
                "{} already exists; an earlier run left it (look at it, then remove it with `yoi worktree remove`)",
                dir.display()
            ));
        }
        // A coder's retry starts from the work of the attempt before it, when that one ended
        // for a reason that is not about its change (`kept`); its claim stays bound to `head`.
        kept = super::kept::kept_work(ws, index, a, &head)?;
        let start = kept.as_ref().map_or(head.as_str(), |k| k.commit.as_str());
        yoi_git::add_worktree_sparse(repo, &dir, start, &[leave_out.as_str()])
            .map_err(|e| e.to_string())?;
        dir
    };
    let recorded = index
        .set_assignment_workdir(&a.id, a.fence, &workdir.display().to_string(), Some(&head))
        .map_err(|e| e.to_string())?;
    if !recorded {
        return Err("the claim was lost while its working directory was prepared".into());
    }
    let mut work = ready(ws, a, workdir, head, cfg)?;
    work.kept = kept;
    if Role::Coder.is(&a.role) {
        let rows = index.assignments_of(&a.ticket).map_err(|e| e.to_string())?;
        work.feedback = super::flow::feedback(&rows);
    }
    Ok(work)
}

/// Where the pods' own worktrees are: `<worktree_dir>/.pods/<pod name>`.
pub fn pod_worktrees_dir(ws: &Workspace) -> PathBuf {
    ws.config.pod_worktree_dir(ws.root())
}

/// The worktree of pod `pod` (a registered incarnation, `name@nonce`), detached at `head`: one
/// per pod name, kept between its claims and moved in place to each exact commit under test
/// (only the paths that differ are written), instead of a whole checkout for every
/// verification and review. A pod runs one attempt at a time and ends its agent's process
/// group before it reports, so when the same incarnation claims again nothing of its earlier
/// attempt still runs there. The folder is checked out afresh when it is missing, was last used
/// by another incarnation (a pod that died may have left processes behind), or is not exactly
/// a commit (anything untracked, ignored or modified, such as a build's output). A read-only
/// step's folder holds nothing to keep: its results are in the attempt's report and logs.
///
/// `None` when another incarnation of the same name is working in the folder right now (two
/// pods started under one name): the caller then makes a worktree for this attempt alone.
fn pod_worktree(
    ws: &Workspace,
    index: &DbIndex,
    pod: &str,
    head: &str,
    now: Timestamp,
) -> Result<Option<PathBuf>, String> {
    let repo = ws.root();
    let name = pod.split('@').next().unwrap_or(pod);
    let root = pod_worktrees_dir(ws);
    let dir = root.join(name);
    let owner = root.join(format!("{name}.pod"));
    let leave_out = ws.config.tickets_prefix();
    let leave_out = [leave_out.as_str()];
    let last = std::fs::read_to_string(&owner)
        .map(|o| o.trim().to_string())
        .ok();
    let ours = last.as_deref() == Some(pod);
    if let Some(other) = last.as_deref().filter(|o| *o != pod) {
        if works_now(index, other)? {
            return Ok(None);
        }
    }
    if ours && dir.exists() {
        match yoi_git::reset_detached(&dir, head, &leave_out) {
            Ok(yoi_git::Reset::Moved { .. }) => return Ok(Some(dir)),
            Ok(yoi_git::Reset::NotPristine { paths }) => tracing::info!(
                worktree = %dir.display(), paths = %paths.join(", "),
                "checking the pod's worktree out afresh: it is not exactly a commit"
            ),
            Err(e) => tracing::warn!(
                worktree = %dir.display(), error = %e,
                "checking the pod's worktree out afresh: it could not be moved"
            ),
        }
    }
    // Whatever is there or registered goes, also what a killed server left half made (git then
    // has it locked). The owner is written only once the checkout is complete.
    let _ = std::fs::remove_file(&owner);
    yoi_git::discard_worktree(repo, &dir).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    yoi_git::add_worktree_sparse(repo, &dir, head, &leave_out).map_err(|e| e.to_string())?;
    std::fs::write(&owner, pod).map_err(|e| format!("{}: {e}", owner.display()))?;
    // A fresh checkout is rare; it is also when the folders of pods long gone are tidied.
    if let Err(e) = tidy_pod_worktrees(ws, index, name, now) {
        tracing::warn!(error = %e, "could not tidy the worktrees of pods that are gone");
    }
    Ok(Some(dir))
}

/// A pod unheard of for this long is gone: a live one, idle or working, is heard from every few
/// seconds.
pub const POD_GONE_AFTER_MS: i64 = 10 * 60 * 1000;

/// Discard the worktrees of pods that are gone: pods run by hand get a name with their process
/// id, so each run would otherwise leave its folder behind. A folder goes when its last owner
/// is unknown to the database or unheard of for [`POD_GONE_AFTER_MS`], and holds no live claim;
/// `keep` (the caller's own name) is never touched.
fn tidy_pod_worktrees(
    ws: &Workspace,
    index: &DbIndex,
    keep: &str,
    now: Timestamp,
) -> Result<(), String> {
    let root = pod_worktrees_dir(ws);
    let entries = std::fs::read_dir(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".pod"))
        else {
            continue;
        };
        if name == keep {
            continue;
        }
        let owner = std::fs::read_to_string(&path).unwrap_or_default();
        let owner = owner.trim();
        let row = index.pod(owner).map_err(|e| e.to_string())?;
        let gone = row.is_none_or(|r| now.unix_millis() - r.heartbeat_ms > POD_GONE_AFTER_MS);
        if !gone || works_now(index, owner)? {
            continue;
        }
        let dir = root.join(name);
        yoi_git::discard_worktree(ws.root(), &dir).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(&path);
        tracing::info!(worktree = %dir.display(), pod = %owner, "discarded the worktree of a pod that is gone");
    }
    Ok(())
}

/// Whether pod incarnation `pod` holds a live claim (it may be running in its folder).
fn works_now(index: &DbIndex, pod: &str) -> Result<bool, String> {
    let Some(row) = index.pod(pod).map_err(|e| e.to_string())? else {
        return Ok(false);
    };
    let Some(id) = row.assignment else {
        return Ok(false);
    };
    let a = index.assignment(&id).map_err(|e| e.to_string())?;
    Ok(a.is_some_and(|a| {
        a.status == AssignmentStatus::Claimed && a.claimed_by.as_deref() == Some(pod)
    }))
}

/// What a pod gets for a claim whose folder `workdir` (detached at `head`) exists. The pod
/// checks the folder's HEAD itself before its agent starts (it is the one on the folder's
/// host), so no repository is opened here.
fn ready(
    ws: &Workspace,
    a: &Assignment,
    workdir: PathBuf,
    head: String,
    cfg: LeaseConfig,
) -> Result<Work, String> {
    let ticket = TicketId::parse(&a.ticket).map_err(|e| e.to_string())?;
    let item = ws.read_item(&ticket).map_err(|e| e.to_string())?;
    let place = work_place(ws, &ticket).map_err(|e| e.to_string())?;
    Ok(Work {
        assignment: Assignment {
            workdir: Some(workdir.display().to_string()),
            head_commit: Some(head.clone()),
            ..a.clone()
        },
        ticket: ticket.clone(),
        title: item.title,
        workdir,
        branch: place.branch,
        head_commit: head,
        base_commit: place.base_commit,
        packet: packet(ws, &ticket).map_err(|e| e.to_string())?,
        lease_ms: cfg.lease_ms,
        heartbeat_ms: cfg.heartbeat_ms,
        feedback: None,
        agent_token: None,
        kept: None,
        workflow: None,
        invocable: Vec::new(),
        answered: super::questions::answered(ws, &ticket).map_err(|e| e.to_string())?,
        remote: false,
        remote_git: None,
    })
}

/// The ticket worktree must exist and be detached at the branch head. Its HEAD is read
/// without a status: attempt 1 is the first process in it since acceptance, and whatever a
/// person left there is committed with the agent's work, never lost.
fn ready_ticket_worktree(worktree: &Path, head: &str) -> Result<(), String> {
    match yoi_git::detached_at(worktree, head) {
        Ok(()) => Ok(()),
        Err(yoi_git::NotDetachedAt::Missing) => Err(format!(
            "the ticket worktree {} is missing (`yoi ticket doctor` says how to restore it)",
            worktree.display()
        )),
        Err(yoi_git::NotDetachedAt::Elsewhere { branch, head: found }) => Err(format!(
            "the ticket worktree {} is not detached at the branch head {head} (branch {branch:?}, head {found:?}); only the server moves the ticket branch",
            worktree.display()
        )),
    }
}

/// The folder of attempt `n` of `step`: next to the ticket worktree — `.attempt-N` for the
/// coder's `implement`, `.<step>-N` for the others.
pub fn step_dir(ticket_worktree: &Path, step: &str, n: i64) -> PathBuf {
    if step == yoi_core::flow::IMPLEMENT {
        return attempt_dir(ticket_worktree, n);
    }
    let name = ticket_worktree
        .file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    ticket_worktree.with_file_name(format!("{name}.{step}-{n}"))
}

/// The folder of attempt `n` (≥ 2) of a ticket: next to its worktree.
pub fn attempt_dir(ticket_worktree: &Path, n: i64) -> PathBuf {
    let name = ticket_worktree
        .file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    ticket_worktree.with_file_name(format!("{name}.attempt-{n}"))
}

/// What a heartbeat answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct HeartbeatReply {
    pub lease_until_ms: i64,
    /// Present when the pod must stop its agent now and fail the attempt with this reason (its
    /// streamed usage passed a hard budget limit; docs/budgets.md). The lease still holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
}

/// Extend the lease of pod `pod`'s claim on `id` at `fence`. A claim that is not that — another
/// pod's, an older fence, expired, cancelled or finished — is refused and nothing changes.
pub fn heartbeat(
    index: &DbIndex,
    caller: &PodCaller,
    pod: &str,
    id: &str,
    fence: i64,
    cfg: LeaseConfig,
    now: Timestamp,
) -> Result<HeartbeatReply, AssignmentError> {
    pod_of(index, caller, pod)?;
    let now_ms = now.unix_millis();
    let lease_until_ms = now_ms + cfg.lease_ms;
    match index.heartbeat_assignment(id, fence, pod, lease_until_ms, now_ms)? {
        Some(_) => {
            index.touch_pod(pod, PodState::Working, Some(id), now_ms)?;
            Ok(HeartbeatReply {
                lease_until_ms,
                stop: None,
            })
        }
        None => Err(refusal(index, pod, id, fence)?),
    }
}

/// [`heartbeat`] from a pod whose agent streams its usage: `running` is what the attempt used
/// so far, and the answer says to stop it when that passes a hard budget limit by the margin
/// ([`crate::spend::over_while_running`]).
#[allow(clippy::too_many_arguments)]
pub fn heartbeat_running(
    ws: &Workspace,
    index: &DbIndex,
    caller: &PodCaller,
    pod: &str,
    id: &str,
    fence: i64,
    running: Option<yoi_core::report::Usage>,
    cfg: LeaseConfig,
    now: Timestamp,
) -> Result<HeartbeatReply, AssignmentError> {
    let mut reply = heartbeat(index, caller, pod, id, fence, cfg, now)?;
    if let Some(usage) = running {
        if let Some(a) = index.assignment(id)? {
            reply.stop = crate::spend::over_while_running(ws, index, &a, usage, now.unix_millis())?;
            if let Some(reason) = &reply.stop {
                tracing::info!(assignment = %id, ticket = %a.ticket, %reason, "stopping a running attempt over its budget");
            }
        }
    }
    Ok(reply)
}

/// Why a fence-guarded call on `id` by `pod` at `fence` was refused.
pub(crate) fn refusal(
    index: &DbIndex,
    pod: &str,
    id: &str,
    fence: i64,
) -> Result<AssignmentError, AssignmentError> {
    let Some(row) = index.assignment(id)? else {
        return Ok(AssignmentError::NotFound { id: id.to_string() });
    };
    if row.fence == fence
        && row.status == AssignmentStatus::Claimed
        && row.claimed_by.as_deref() != Some(pod)
    {
        return Ok(AssignmentError::NotYours {
            id: id.to_string(),
            pod: pod.to_string(),
        });
    }
    Ok(AssignmentError::StaleFence {
        id: id.to_string(),
        fence,
        current: row.fence,
        status: row.status,
    })
}

/// Append a chunk of the agent's output to the attempt's log (the live claim of `pod` at
/// `fence` only); returns the log file, relative to the repository root.
#[allow(clippy::too_many_arguments)]
pub fn append_log(
    ws: &Workspace,
    index: &DbIndex,
    caller: &PodCaller,
    pod: &str,
    id: &str,
    fence: i64,
    chunk: &[u8],
    now: Timestamp,
) -> Result<String, AssignmentError> {
    pod_of(index, caller, pod)?;
    let a = live_claim(index, pod, id, fence, now.unix_millis())?;
    Ok(ws.append_attempt_log(&a.ticket, &a.id, chunk)?)
}

/// The row of a live claim by `pod` at `fence` with an unexpired lease, or why not.
pub(crate) fn live_claim(
    index: &DbIndex,
    pod: &str,
    id: &str,
    fence: i64,
    now_ms: i64,
) -> Result<Assignment, AssignmentError> {
    match index.assignment(id)? {
        Some(a)
            if a.fence == fence
                && a.status == AssignmentStatus::Claimed
                && a.claimed_by.as_deref() == Some(pod)
                && a.lease_until_ms.is_some_and(|l| l >= now_ms) =>
        {
            Ok(a)
        }
        _ => Err(refusal(index, pod, id, fence)?),
    }
}
