//! The pods: two coders, a verifier and a reviewer, as clients of the same engine calls the
//! API makes (`register_pod`, `claim`, `heartbeat`, `complete`, `fail`).
//!
//! A pod does its work as a real one does: it checks the folder it is handed before work
//! (yoi-pod's `check_workdir`, through the same `detached_at`) and fails the attempt when the
//! folder is not at the claim's commit; a coder commits a file of its own, sometimes a line of
//! the shared file, and merges the target in first at an `integrate` step; the verifier's
//! checks pass; the reviewer approves three times in four. It also misbehaves on purpose, as
//! pods do: it dies silently, pauses past its lease and resumes with a late result, sends the
//! same result twice, and sends one with the fence before its own.
//!
//! `send` is where one invariant is checked as it happens: a result for a claim that
//! is not live (not this pod's, not at this fence, not claimed) changes neither the ticket's
//! assignment rows nor its branch head. A coder commit whose result was refused is remembered,
//! so `check_branches` can hold that it never reaches its ticket's branch. A pod's step moves
//! no ticket (the reference model refuses every edge to it), and a pod writes in its own
//! worktree only: what it does reaches a ticket through the engine's answer to its results.

use std::collections::BTreeSet;

use yoi_core::report::{CheckResult, Report, ReportOutcome, Verdict};
use yoi_core::TicketId;
use yoi_engine::assignments::{self as asg, PodCaller, Work};
use yoi_engine::db::{Assignment, AssignmentStatus};
use yoi_engine::git as ygit;

use super::faults::git;
use super::{broken, Broken, World, EPOCH_MS, LEASE};

/// The pods: two coders, the verifier and a reviewer.
const PODS: &[(&str, &str)] = &[
    ("coder", "coder-1"),
    ("coder", "coder-2"),
    ("verifier", "verifier-1"),
    ("reviewer", "reviewer-1"),
];

/// A ticket's assignment rows (id, status, fence) and its branch head.
type Footprint = (Vec<(String, AssignmentStatus, i64)>, Option<String>);

pub(super) struct Pod {
    pub(super) role: &'static str,
    pub(super) name: &'static str,
    pub(super) id: String,
    pub(super) held: Option<Held>,
    pub(super) last: Option<Sent>,
    /// A pod on another host (`super::remote`): its own repository, the cache it fetches the
    /// claim's commits into and pushes its result from. `None` for a pod on the server's disk.
    pub(super) cache: Option<std::path::PathBuf>,
}

impl Pod {
    /// Whether this pod works in the server's repository (one of `PODS`).
    pub(super) fn local(&self) -> bool {
        self.cache.is_none()
    }
}

pub(super) struct Held {
    pub(super) work: Work,
    pub(super) paused: bool,
    /// A remote pod's result and how far its push got.
    pub(super) remote: Option<super::remote::Push>,
}

#[derive(Clone)]
pub(super) enum Outcome {
    Complete(Box<Report>),
    /// A failure, with the report of a coder that says its work is worth keeping.
    Fail(Option<Box<Report>>),
}

#[derive(Clone)]
pub(super) struct Sent {
    pub(super) id: String,
    pub(super) fence: i64,
    pub(super) outcome: Outcome,
}

/// The check a real pod makes of the folder it is handed before its agent starts (yoi-pod's
/// `check_workdir`, through the same `detached_at`).
pub(super) fn workdir_ready(w: &Work) -> Result<(), String> {
    // A retry that keeps an earlier attempt's work starts at that attempt's commit.
    let start = w.kept.as_ref().map_or(&w.head_commit, |k| &k.commit);
    ygit::detached_at(&w.workdir, start)
        .map_err(|e| format!("{} is not detached at {start}: {e:?}", w.workdir.display()))
}

/// A verifier's or a reviewer's result, local or remote: the verifier's checks pass; the
/// reviewer approves three times in four, and one reviewer in five forgets its trailer and
/// sends its verdict as kept without a contract, as a pod that ignored its strict rule would
/// (refused, then failed).
pub(super) fn read_only_report(role: &str, how: u32) -> Report {
    if role == "verifier" {
        return Report {
            outcome: ReportOutcome::Done,
            checks: vec![CheckResult {
                command: "cargo test".into(),
                exit_code: Some(0),
                duration_ms: 1,
                timed_out: false,
                log: None,
            }],
            ..Report::default()
        };
    }
    Report {
        outcome: ReportOutcome::Done,
        verdict: Some(if how.is_multiple_of(4) {
            Verdict::RequestChanges
        } else {
            Verdict::Approve
        }),
        contract_missing: how % 5 == 3,
        ..Report::default()
    }
}

pub(super) fn caller(role: &str) -> PodCaller {
    PodCaller {
        token_id: format!("tok-{role}"),
        role: yoi_core::Role::parse(role).expect("a pod role"),
    }
}

impl World {
    pub(super) fn register(&self, role: &str, name: &str) -> Result<String, Broken> {
        let l = self.live();
        asg::register_pod(
            &l.db,
            &caller(role),
            asg::PodIntro {
                name,
                host: "sim",
                profile: Some(super::spending::profile_of(name)),
                ..Default::default()
            },
            self.now(),
        )
        .map(|p| p.id)
        .map_err(|e| broken("setup", format!("registering pod {name}: {e}")))
    }

    /// Register every pod of `PODS`, in its order.
    pub(super) fn register_pods(&mut self) -> Result<(), Broken> {
        for (role, name) in PODS {
            let id = self.register(role, name)?;
            self.pods.push(Pod {
                role,
                name,
                id,
                held: None,
                last: None,
                cache: None,
            });
        }
        self.register_remotes()
    }

    /// The pod on the server's disk `p` stands for: one for which `fit` holds, unless
    /// `p % 4 == 3` (or none does), when it is any such pod (trying what a pod with nothing to
    /// do may not do). The remote pods have their own actions (`super::remote`).
    fn pod_where(&self, p: u32, fit: impl Fn(&Pod) -> bool) -> usize {
        let n = (p / 4) as usize;
        if p % 4 != 3 {
            let fits: Vec<usize> = (0..PODS.len()).filter(|&k| fit(&self.pods[k])).collect();
            if !fits.is_empty() {
                return fits[n % fits.len()];
            }
        }
        p as usize % PODS.len()
    }

    /// A pod at work (holding an unpaused claim), preferably.
    fn pod(&self, p: u32) -> usize {
        self.pod_where(p, |pod| pod.held.as_ref().is_some_and(|h| !h.paused))
    }

    pub(super) fn claim(&mut self, p: u32) -> Result<(), Broken> {
        let l = self.live();
        let open =
            l.db.open_assignments()
                .map_err(|e| broken("db", e.to_string()))?;
        let roles: BTreeSet<String> = open
            .into_iter()
            .filter(|a| a.status == AssignmentStatus::Pending)
            .map(|a| a.role)
            .collect();
        let k = self.pod_where(p, |pod| pod.held.is_none() && roles.contains(pod.role));
        if self.pods[k].held.is_some() {
            return Ok(());
        }
        let l = self.live();
        let pod = &self.pods[k];
        match asg::claim(&l.ws, &l.db, &caller(pod.role), &pod.id, LEASE, self.now()) {
            Ok(Some(work)) => {
                self.note(format!(
                    "  {} claimed {} {} attempt {} fence {}",
                    pod.name,
                    work.ticket,
                    work.assignment.step,
                    work.assignment.attempt,
                    work.assignment.fence
                ));
                self.check_claim_within_limits(&work, self.pods[k].name)?;
                if let Err(e) = workdir_ready(&work) {
                    // As a real pod does before its agent starts: the attempt fails.
                    self.note(format!("  {} refuses the folder: {e}", self.pods[k].name));
                    let a = &work.assignment;
                    return self
                        .send(k, &a.id, a.fence, Outcome::Fail(None))
                        .map(|_| ());
                }
                self.pods[k].held = Some(Held {
                    work,
                    paused: false,
                    remote: None,
                });
            }
            Ok(None) => {
                if !roles.is_empty() && self.any_limit_in_force()? {
                    self.stats.limited_claims += 1;
                }
            }
            Err(e) => self.note(format!("  {} could not claim: {e}", pod.name)),
        }
        Ok(())
    }

    /// The heartbeat of the pod `p` stands for, a pod at work preferably.
    pub(super) fn pod_heartbeats(&mut self, p: u32) {
        let k = self.pod(p);
        self.heartbeat(k);
    }

    pub(super) fn heartbeat(&mut self, k: usize) {
        let Some(h) = &self.pods[k].held else { return };
        if h.paused {
            return;
        }
        let (id, fence) = (h.work.assignment.id.clone(), h.work.assignment.fence);
        let l = self.live();
        let pod = &self.pods[k];
        if let Err(e) = asg::heartbeat(
            &l.db,
            &caller(pod.role),
            &pod.id,
            &id,
            fence,
            LEASE,
            self.now(),
        ) {
            // A pod whose heartbeat is refused stops its agent and lets the claim go.
            self.note(format!("  {} lost its claim: {e}", pod.name));
            self.pods[k].held = None;
        }
    }

    /// The pod `p` stands for when it is at work and not paused.
    pub(super) fn pod_at_work(&self, p: u32) -> Option<usize> {
        let k = self.pod(p);
        self.pods[k]
            .held
            .as_ref()
            .is_some_and(|h| !h.paused)
            .then_some(k)
    }

    /// The work pod `k` holds, which it stops holding (it is about to send its result).
    pub(super) fn pod_work(&mut self, k: usize) -> Option<Work> {
        self.pods[k].held.take().map(|h| h.work)
    }

    pub(super) fn pod_name(&self, k: usize) -> &'static str {
        self.pods[k].name
    }

    /// Pod `k` reports its attempt `id` at `fence` failed, with `report`; whether it was applied.
    pub(super) fn send_failure(
        &mut self,
        k: usize,
        id: &str,
        fence: i64,
        report: Report,
    ) -> Result<bool, Broken> {
        self.send(k, id, fence, Outcome::Fail(Some(Box::new(report))))
    }

    /// The pod `p` stands for finishes its work, if it is at work and not paused.
    pub(super) fn pod_finishes(&mut self, p: u32, how: u32) -> Result<(), Broken> {
        let k = self.pod(p);
        if self.pods[k].held.as_ref().is_some_and(|h| !h.paused) {
            self.finish(k, how)?;
        }
        Ok(())
    }

    /// The agent of the pod `p` stands for, if it is at work and not paused, cannot go on
    /// without a person: its attempt ends `YOI-RESULT: blocked` with one `YOI-QUESTION:` line
    /// and its step waits for the answer (docs/inbox.md, "Agents ask").
    pub(super) fn pod_asks(&mut self, p: u32) -> Result<(), Broken> {
        let k = self.pod(p);
        let Some(h) = self.pods[k].held.take_if(|h| !h.paused) else {
            return Ok(());
        };
        let a = &h.work.assignment;
        let report = Report {
            outcome: ReportOutcome::Blocked,
            summary: Some("a decision the brief does not make".into()),
            questions: vec![format!(
                "Attempt {} of {} on {}: which way?",
                a.attempt, a.step, h.work.ticket
            )],
            usage: Some(super::spending::usage_of(
                super::spending::profile_of(self.pods[k].name),
                a.attempt as u32,
            )),
            ..Report::default()
        };
        let (id, fence) = (a.id.clone(), a.fence);
        // Counted as asked whatever becomes of the result (a crash may cut its sending short).
        self.stats.questions += 1;
        self.send(k, &id, fence, Outcome::Complete(Box::new(report)))?;
        Ok(())
    }

    /// The pod `p` stands for reports its work failed, if it is at work and not paused. A coder
    /// on an odd attempt first commits part of the work and then runs past its timeout: its
    /// report keeps the work for the next attempt (docs/pods.md, "Retries keep the work").
    pub(super) fn pod_fails(&mut self, p: u32) -> Result<(), Broken> {
        let k = self.pod(p);
        if let Some(h) = self.pods[k].held.take() {
            if h.paused {
                self.pods[k].held = Some(h);
                return Ok(());
            }
            let a = &h.work.assignment;
            let (id, fence) = (a.id.clone(), a.fence);
            let partial = (self.pods[k].role == "coder" && a.attempt % 2 == 1)
                .then(|| self.code(&h.work, 1).ok())
                .flatten();
            let report = partial.clone().map(|commit| {
                Box::new(Report {
                    outcome: ReportOutcome::Failed,
                    commit: Some(commit),
                    keep_work: true,
                    usage: Some(super::spending::usage_of(
                        super::spending::profile_of(self.pods[k].name),
                        a.attempt as u32,
                    )),
                    ..Report::default()
                })
            });
            let applied = self.send(k, &id, fence, Outcome::Fail(report))?;
            if let (false, Some(c)) = (applied, partial.clone()) {
                self.refused.push((h.work.ticket.clone(), c));
            } else if applied && partial.is_some() {
                self.stats.work_kept += 1;
            }
        }
        Ok(())
    }

    /// The pod `p` names dies silently and comes back as a new registration with nothing held.
    pub(super) fn pod_dies(&mut self, p: u32) -> Result<(), Broken> {
        let k = p as usize % PODS.len();
        self.pods[k].held = None;
        self.pods[k].last = None;
        let (role, name) = (self.pods[k].role, self.pods[k].name);
        self.pods[k].id = self.register(role, name)?;
        Ok(())
    }

    /// The pod `p` stands for stops: no heartbeats and no result until it resumes.
    pub(super) fn pod_pauses(&mut self, p: u32) {
        let k = self.pod(p);
        if let Some(h) = &mut self.pods[k].held {
            h.paused = true;
        }
    }

    /// A paused pod, preferably, wakes and finishes its work with what is now a late result.
    pub(super) fn pod_resumes(&mut self, p: u32) -> Result<(), Broken> {
        let k = self.pod_where(p, |pod| pod.held.as_ref().is_some_and(|h| h.paused));
        let resumed = match &mut self.pods[k].held {
            Some(h) if h.paused => {
                h.paused = false;
                true
            }
            _ => false,
        };
        if resumed {
            self.finish(k, 1)?;
        }
        Ok(())
    }

    /// A pod that sent a result, preferably, sends the same result again.
    pub(super) fn pod_resends(&mut self, p: u32) -> Result<(), Broken> {
        let k = self.pod_where(p, |pod| pod.last.is_some());
        if let Some(s) = self.pods[k].last.clone() {
            self.send(k, &s.id, s.fence, s.outcome)?;
        }
        Ok(())
    }

    /// The pod `p` stands for sends a result for its claim with the fence before its own.
    pub(super) fn pod_sends_old_fence(&mut self, p: u32) -> Result<(), Broken> {
        let k = self.pod(p);
        let Some(h) = &self.pods[k].held else {
            return Ok(());
        };
        let (id, fence) = (h.work.assignment.id.clone(), h.work.assignment.fence);
        let report = Report {
            outcome: ReportOutcome::Done,
            commit: Some(h.work.head_commit.clone()),
            summary: Some("a result from an earlier claim".into()),
            ..Report::default()
        };
        self.send(k, &id, fence - 1, Outcome::Complete(Box::new(report)))?;
        Ok(())
    }

    /// The pod does the work it holds and sends the result.
    pub(super) fn finish(&mut self, k: usize, how: u32) -> Result<(), Broken> {
        let Some(h) = self.pods[k].held.take() else {
            return Ok(());
        };
        let w = &h.work;
        let report = match self.pods[k].role {
            // One coder in five forgets its trailer lines and its lenient profile keeps the
            // change (docs/pods.md, "A missing contract").
            "coder" => match self.code(w, how) {
                Ok(commit) => Report {
                    outcome: ReportOutcome::Done,
                    commit: Some(commit),
                    summary: Some("did the work".into()),
                    contract_missing: how % 5 == 2,
                    follow_up: how % 5 == 2,
                    ..Report::default()
                },
                Err(e) => {
                    self.note(format!("  the coder's work failed: {e}"));
                    let a = &w.assignment;
                    return self
                        .send(k, &a.id.clone(), a.fence, Outcome::Fail(None))
                        .map(|_| ());
                }
            },
            role => read_only_report(role, how),
        };
        let report = Report {
            usage: Some(super::spending::usage_of(
                super::spending::profile_of(self.pods[k].name),
                how,
            )),
            ..report
        };
        let forgot = report.contract_missing;
        let a = &w.assignment;
        let (id, fence) = (a.id.clone(), a.fence);
        let commit = report.commit.clone();
        let ticket = w.ticket.clone();
        let applied = self.send(k, &id, fence, Outcome::Complete(Box::new(report)))?;
        if let (false, Some(c)) = (applied, commit) {
            self.refused.push((ticket, c));
        }
        if forgot && applied {
            self.stats.contract_missing += 1;
        }
        if forgot && !applied && self.pods[k].role != "coder" {
            // The pod reports the refusal as the attempt's failure.
            self.send(k, &id, fence, Outcome::Fail(None))?;
        }
        Ok(())
    }

    /// A coder's change in its working directory, committed: a file of its own, sometimes a
    /// line of the shared file; an `integrate` step first merges the target in.
    pub(super) fn code(&self, w: &Work, how: u32) -> Result<String, String> {
        let dir = &w.workdir;
        if w.assignment.step == "integrate" {
            git(dir, &["merge", "-q", "--no-edit", "-X", "theirs", "main"])?;
            // A person's commits on the pull request's branch, as the round's feedback asks;
            // one coder in seven does not, as an agent may ignore what it is told.
            let asked = super::forge::forge_ref_in(w.feedback.as_deref());
            if let Some(r) = asked.filter(|_| how % 7 != 4) {
                git(dir, &["merge", "-q", "--no-edit", "-X", "theirs", &r])?;
            }
        }
        let a = &w.assignment;
        std::fs::create_dir_all(dir.join("work")).map_err(|e| e.to_string())?;
        let name = format!("work/{}-{}-{}.txt", w.ticket, a.attempt, a.fence);
        std::fs::write(dir.join(&name), format!("{} at {}\n", a.id, self.clock_ms))
            .map_err(|e| e.to_string())?;
        if how.is_multiple_of(3) {
            let p = dir.join("shared.txt");
            let mut text = std::fs::read_to_string(&p).map_err(|e| e.to_string())?;
            text.push_str(&format!("{} attempt {}\n", w.ticket, a.attempt));
            std::fs::write(&p, text).map_err(|e| e.to_string())?;
        }
        let who = ygit::Identity {
            name: "sim coder".into(),
            email: "coder@yoi.invalid".into(),
            time_secs: (EPOCH_MS + self.clock_ms) / 1000,
        };
        ygit::commit_all(dir, &format!("work on {}", w.ticket), &who)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "nothing to commit".to_string())
    }

    /// What a result may change: the ticket's assignment rows and its branch head.
    fn footprint(&self, ticket: &str) -> Result<Footprint, Broken> {
        let l = self.live();
        let rows =
            l.db.assignments_of(ticket)
                .map_err(|e| broken("db", e.to_string()))?;
        let id = TicketId::parse(ticket).map_err(|e| broken("db", e.to_string()))?;
        let head = self
            .branch_of(&id)?
            .and_then(|b| ygit::resolve_commit(&self.repo, &b).ok());
        Ok((
            rows.into_iter()
                .map(|r| (r.id, r.status, r.fence))
                .collect(),
            head,
        ))
    }

    /// Send a result for `id` at `fence` as pod `k`; whether it was applied. A result for a
    /// claim that was not live (this pod's, this fence, claimed) must change nothing.
    pub(super) fn send(
        &mut self,
        k: usize,
        id: &str,
        fence: i64,
        outcome: Outcome,
    ) -> Result<bool, Broken> {
        let now = self.now();
        let pod_id = self.pods[k].id.clone();
        let role = self.pods[k].role;
        let l = self.live();
        let row: Option<Assignment> =
            l.db.assignment(id)
                .map_err(|e| broken("db", e.to_string()))?;
        let Some(row) = row else {
            return Err(broken("db", format!("assignment {id} is unknown")));
        };
        let live = row.status == AssignmentStatus::Claimed
            && row.fence == fence
            && row.claimed_by.as_deref() == Some(pod_id.as_str());
        let before = self.footprint(&row.ticket)?;
        let l = self.live();
        let result = match &outcome {
            Outcome::Complete(report) => {
                asg::complete(&l.ws, &l.db, &caller(role), &pod_id, id, fence, report, now)
                    .map(|_| ())
            }
            Outcome::Fail(report) => asg::fail(
                &l.ws,
                &l.db,
                &caller(role),
                &pod_id,
                id,
                fence,
                "the simulated agent failed",
                true,
                report.as_deref(),
                now,
            )
            .map(|_| ()),
        };
        let after = self.footprint(&row.ticket)?;
        if let (Ok(()), Outcome::Complete(r)) = (&result, &outcome) {
            if r.contract_missing && role != "coder" {
                return Err(broken(
                    "strict-contract",
                    format!(
                        "a {role} result for {id} without its output contract completed the step"
                    ),
                ));
            }
        }
        self.pods[k].last = Some(Sent {
            id: id.to_string(),
            fence,
            outcome,
        });
        if !live && before != after {
            return Err(broken(
                "stale-result",
                format!(
                    "a result for {id} at fence {fence} from {pod_id} was applied though the claim was {} at fence {} by {:?}: {before:?} -> {after:?}",
                    row.status.as_str(),
                    row.fence,
                    row.claimed_by
                ),
            ));
        }
        match result {
            Ok(()) => {
                // A commit whose first send was refused and whose resend was taken (the claim
                // was live both times) may be on the branch.
                if let Some(Outcome::Complete(r)) = self.pods[k].last.as_ref().map(|s| &s.outcome) {
                    if let Some(c) = r.commit.clone() {
                        self.refused.retain(|(_, refused)| *refused != c);
                    }
                }
                self.stats.results_applied += 1;
                self.note(format!("  result for {id} applied"));
                Ok(true)
            }
            Err(e) => {
                self.stats.results_refused += 1;
                self.note(format!("  result for {id} refused: {e}"));
                Ok(false)
            }
        }
    }
}
