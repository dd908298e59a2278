//! Pods on other hosts (docs/pods.md, "Pods on other hosts"): two coders, a verifier and a
//! reviewer with no access to the server's repository but through git, as `yoi pod run --cache
//! DIR` works.
//!
//! Each has a repository of its own (its cache). A claim is the engine's `claim`, as for any
//! pod; the pod then fetches the claim's commits from the server's repository into its cache
//! (git's upload-pack, with `uploadpack.allowReachableSHA1InWant` as the server's
//! `http-backend` runs it), works in a detached
//! worktree of the cache, and pushes its commit to its attempt ref,
//! `refs/yoi/attempts/<ticket>/<attempt>.<fence>`. The push is put to the server's own rule
//! first, `attempt_ref::may_push` at the simulated now, as the server's `receive-pack` route does
//! before git receives a byte, and only then does git (`receive-pack`, into the server's
//! repository) write the ref. The pod then reports the commit with its fence through the
//! engine's `complete`, as every pod does, so the stale-result check of `send` holds for it.
//!
//! The verifier and the reviewer fetch the commit under check the same way, run read-only in
//! their own worktree of the cache, push nothing, and report their checks or their verdict with
//! the fence (`remote-report`): normally, with the answer lost (they report again), lost (they
//! give up and the claim runs out), or after their claim expired mid-run (they stop at `how`
//! and report late at `remote-resume`, refused).
//!
//! Faults, drawn from the schedule (`how`):
//!
//! - **a lost push**: the commit is made and never reaches the server; the pod hears nothing and
//!   stops (no heartbeats) until it resumes and pushes again, late;
//! - **a push in flight**: the server checked the push's ref update and git is still receiving
//!   the pack while the network holds it and the pod's heartbeats; git writes the ref only at
//!   `remote-land`, any number of actions later — the lease may run out, the step be handed to
//!   another pod, or a person return the ticket in between;
//! - **a push, then the pod stops**: its claim runs out and another pod takes the step over;
//!   when it resumes, it reports late;
//! - **a lost report**: the push arrived, the report never does; the pod gives up;
//! - **a lost answer**: the report was applied and its answer lost; the pod reports again.
//!
//! The invariants this adds (the others hold for remote pods as for local ones):
//!
//! - `acked-push-lost`: a push git acknowledged, for a claim that is still live, has its ref at
//!   the commit when the pod reports it;
//! - `acked-result-lost`: a result the server acknowledged stays on its ticket's branch for as
//!   long as the ticket is in progress (and `check_merged` follows it to the target);
//! - `attempt-ref-left`: once the world has settled, no attempt ref is left for an attempt
//!   that expired or was cancelled, nor for a ticket that is not in progress
//!   (`check_attempt_refs`);
//! - `read-only-pushed`: a verifier's or a reviewer's report writes or moves no attempt ref
//!   (they push nothing, and the server writes none for them);
//! - a push or a report refused joins the refused commits that `check_branches` holds off
//!   every branch.

use std::path::PathBuf;

use yoi_core::report::{Report, ReportOutcome};
use yoi_core::{State, TicketId};
use yoi_engine::assignments::{self as asg, attempt_ref::AttemptRef, Work};
use yoi_engine::db::AssignmentStatus;
use yoi_engine::git as ygit;

use super::faults::git;
use super::pods::{caller, workdir_ready, Held, Outcome, Pod};
use super::{broken, Broken, World};

/// The remote pods: two coders, a verifier and a reviewer.
const REMOTES: &[(&str, &str)] = &[
    ("coder", "remote-1"),
    ("coder", "remote-2"),
    ("verifier", "remote-verifier"),
    ("reviewer", "remote-reviewer"),
];

/// The server's side of a fetch and of a push, configured as its `http-backend` runs them
/// (`yoi-server`'s routes/git.rs). Given as the program git starts for the other side: a `-c`
/// of the pod's own git does not reach it (a local transport drops `GIT_CONFIG_PARAMETERS`).
/// Above all `receive.autogc=false`: otherwise every push started a detached `git maintenance
/// run --auto` in the server's repository, a process of its own that ran on the wall clock
/// beside the simulated world.
const UPLOAD_PACK: &str = "git -c uploadpack.allowReachableSHA1InWant=true upload-pack";
const RECEIVE_PACK: &str = "git -c receive.autogc=false -c receive.fsckObjects=true -c core.hooksPath=/dev/null receive-pack";

/// A remote pod's result: its commit, and how far its push got.
#[derive(Clone, Debug)]
pub(super) enum Push {
    /// Committed in the cache; the push was lost on the way (it may be made again).
    Lost(String),
    /// The server checked the push and git is receiving it: the ref is not written yet.
    InFlight(String),
    /// git acknowledged the push: the ref holds the commit.
    Pushed(String),
}

/// A result the server acknowledged: its ticket, the branch it moved, the commit.
pub(super) type Acked = (TicketId, String, String);

impl World {
    /// Register the remote pods after the local ones, each with an empty cache of its own.
    pub(super) fn register_remotes(&mut self) -> Result<(), Broken> {
        for (role, name) in REMOTES {
            let id = self.register(role, name)?;
            let cache = self.caches_dir().join(name);
            std::fs::create_dir_all(&cache)
                .map_err(|e| broken("setup", format!("{}: {e}", cache.display())))?;
            git(&cache, &["init", "-q"]).map_err(|e| broken("setup", e))?;
            self.pods.push(Pod {
                role,
                name,
                id,
                held: None,
                last: None,
                cache: Some(cache),
            });
        }
        Ok(())
    }

    fn caches_dir(&self) -> PathBuf {
        self.repo
            .parent()
            .expect("the repository has a parent folder")
            .join("remote-hosts")
    }

    /// The remote pod `p` stands for: one for which `fit` holds, unless `p % 4 == 3` (or none
    /// does), when it is any remote pod.
    fn remote_where(&self, p: u32, fit: impl Fn(&Pod) -> bool) -> usize {
        let remotes: Vec<usize> = (0..self.pods.len())
            .filter(|&k| !self.pods[k].local())
            .collect();
        if p % 4 != 3 {
            let fits: Vec<usize> = remotes
                .iter()
                .copied()
                .filter(|&k| fit(&self.pods[k]))
                .collect();
            if !fits.is_empty() {
                return fits[(p / 4) as usize % fits.len()];
            }
        }
        remotes[p as usize % remotes.len()]
    }

    fn remote_state(&self, k: usize) -> Option<(&Held, Option<&Push>)> {
        self.pods[k].held.as_ref().map(|h| (h, h.remote.as_ref()))
    }

    /// A remote pod with nothing in hand claims, and fetches what the claim names into its
    /// cache: the head, a kept attempt's commit, the target and a pull request's ref its
    /// feedback names. A fetch that fails fails the attempt, as a real pod's would.
    pub(super) fn remote_claim(&mut self, p: u32) -> Result<(), Broken> {
        let pending: std::collections::BTreeSet<String> = self
            .live()
            .db
            .open_assignments()
            .map_err(|e| broken("db", e.to_string()))?
            .into_iter()
            .filter(|a| a.status == AssignmentStatus::Pending)
            .map(|a| a.role)
            .collect();
        let k = self.remote_where(p, |pod| pod.held.is_none() && pending.contains(pod.role));
        if self.pods[k].held.is_some() {
            return Ok(());
        }
        let l = self.live();
        let pod = &self.pods[k];
        let claimed = asg::claim(
            &l.ws,
            &l.db,
            &caller(pod.role),
            &pod.id,
            super::LEASE,
            self.now(),
        );
        let mut work = match claimed {
            Ok(Some(w)) => w,
            Ok(None) => return Ok(()),
            Err(e) => {
                self.note(format!("  {} could not claim: {e}", pod.name));
                return Ok(());
            }
        };
        let name = self.pods[k].name;
        self.note(format!(
            "  {name} (remote) claimed {} {} attempt {} fence {}",
            work.ticket, work.assignment.step, work.assignment.attempt, work.assignment.fence
        ));
        self.check_claim_within_limits(&work, name)?;
        let a = work.assignment.clone();
        match self.fetch_into_cache(k, &work) {
            Ok(dir) => work.workdir = dir,
            Err(e) => {
                self.note(format!("  {name} could not fetch its claim: {e}"));
                return self
                    .send(k, &a.id, a.fence, Outcome::Fail(None))
                    .map(|_| ());
            }
        }
        if let Err(e) = workdir_ready(&work) {
            self.note(format!("  {name} refuses its checkout: {e}"));
            return self
                .send(k, &a.id, a.fence, Outcome::Fail(None))
                .map(|_| ());
        }
        self.pods[k].held = Some(Held {
            work,
            paused: false,
            remote: None,
        });
        Ok(())
    }

    /// Fetch the claim's commits from the server's repository and make the attempt's detached
    /// worktree in the cache; its folder.
    fn fetch_into_cache(&self, k: usize, w: &Work) -> Result<PathBuf, String> {
        let cache = self.pods[k].cache.clone().expect("a remote pod");
        let start = w
            .kept
            .as_ref()
            .map_or(&w.head_commit, |k| &k.commit)
            .clone();
        let server = self.repo.display().to_string();
        let mut args = vec![
            "fetch".to_string(),
            "-q".into(),
            format!("--upload-pack={UPLOAD_PACK}"),
            server,
            w.head_commit.clone(),
            "+refs/heads/main:refs/heads/main".into(),
        ];
        if start != w.head_commit {
            args.push(start.clone());
        }
        if let Some(r) = super::forge::forge_ref_in(w.feedback.as_deref()) {
            args.push(format!("+{r}:{r}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        git(&cache, &args)?;
        // The attempts before this one are over: their worktrees go.
        let attempts = cache.join("attempts");
        let _ = std::fs::remove_dir_all(&attempts);
        git(&cache, &["worktree", "prune"])?;
        let a = &w.assignment;
        let dir = attempts.join(format!("{}-{}", a.id, a.fence));
        git(
            &cache,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                &dir.display().to_string(),
                &start,
            ],
        )?;
        Ok(dir)
    }

    /// A remote coder at work does its work and pushes it, or goes on pushing a result whose
    /// push was lost: normally (the push is checked and written), lost on the way (the pod stops
    /// until it resumes), still in flight (written at `remote-land`), or written and then the
    /// pod stops (another pod may take its step over), by `how`.
    pub(super) fn remote_push(&mut self, p: u32, how: u32) -> Result<(), Broken> {
        let k = self.remote_where(p, |pod| {
            pod.role == "coder"
                && pod
                    .held
                    .as_ref()
                    .is_some_and(|h| !h.paused && matches!(h.remote, None | Some(Push::Lost(_))))
        });
        if self.pods[k].role != "coder" {
            // A verifier or a reviewer pushes nothing.
            return Ok(());
        }
        let commit = match self.remote_state(k) {
            Some((h, None)) if !h.paused => {
                let w = h.work.clone();
                match self.code(&w, how) {
                    Ok(c) => c,
                    Err(e) => {
                        self.note(format!("  the remote coder's work failed: {e}"));
                        let a = &w.assignment;
                        self.pods[k].held = None;
                        return self
                            .send(k, &a.id, a.fence, Outcome::Fail(None))
                            .map(|_| ());
                    }
                }
            }
            Some((h, Some(Push::Lost(c)))) if !h.paused => c.clone(),
            _ => return Ok(()),
        };
        match how % 8 {
            5 => {
                self.note(format!(
                    "  {}'s push of {commit} is lost",
                    self.pods[k].name
                ));
                self.set_remote(k, Push::Lost(commit), true);
                Ok(())
            }
            6 => {
                if self.push_checked(k, &commit)? {
                    // The network holds the pack, and the pod's heartbeats with it.
                    self.note("  the push is in flight; the pod hears nothing".to_string());
                    self.set_remote(k, Push::InFlight(commit), true);
                }
                Ok(())
            }
            7 => {
                if self.push_checked(k, &commit)? {
                    self.land(k, &commit)?;
                    self.note(format!("  {} stops after its push", self.pods[k].name));
                    self.set_remote(k, Push::Pushed(commit), true);
                }
                Ok(())
            }
            _ => {
                if self.push_checked(k, &commit)? {
                    self.land(k, &commit)?;
                    self.set_remote(k, Push::Pushed(commit), false);
                }
                Ok(())
            }
        }
    }

    fn set_remote(&mut self, k: usize, r: Push, paused: bool) {
        if let Some(h) = &mut self.pods[k].held {
            h.remote = Some(r);
            h.paused = paused;
        }
    }

    /// The server's check of the push of `commit` to pod `k`'s attempt ref, at the simulated
    /// now (`attempt_ref::may_push`, as the `receive-pack` route runs it). A refused push writes
    /// nothing: the pod gives its attempt up (a 403 is not tried again), and its commit must
    /// never reach the branch.
    fn push_checked(&mut self, k: usize, commit: &str) -> Result<bool, Broken> {
        let Some(h) = &self.pods[k].held else {
            return Ok(false);
        };
        let (ticket, name) = (
            h.work.ticket.clone(),
            AttemptRef::of(&h.work.assignment).name(),
        );
        let l = self.live();
        let pod = &self.pods[k];
        let verdict = asg::attempt_ref::may_push(
            &l.db,
            &caller(pod.role),
            Some(&pod.id),
            &name,
            false,
            self.now().unix_millis(),
        )
        .map_err(|e| broken("db", e.to_string()))?;
        match verdict {
            Ok(_) => Ok(true),
            Err(refusal) => {
                self.note(format!("  push refused: {refusal}"));
                self.refused.push((ticket, commit.to_string()));
                self.stats.remote.pushes_refused += 1;
                self.pods[k].held = None;
                Ok(false)
            }
        }
    }

    /// git receives the pack and writes the ref (the server's `receive-pack`, into its
    /// repository), for pod `k`'s attempt.
    fn land(&mut self, k: usize, commit: &str) -> Result<(), Broken> {
        let Some(h) = &self.pods[k].held else {
            return Ok(());
        };
        let a = h.work.assignment.clone();
        let name = AttemptRef::of(&a).name();
        let row = self
            .live()
            .db
            .assignment(&a.id)
            .map_err(|e| broken("db", e.to_string()))?;
        if row.is_none_or(|r| r.status != AssignmentStatus::Claimed || r.fence != a.fence) {
            // Checked while the claim was live, written after it ended: the ref is garbage the
            // lease sweep must collect.
            self.stats.remote.landed_late += 1;
        }
        let cache = self.pods[k].cache.clone().expect("a remote pod");
        let server = self.repo.display().to_string();
        git(
            &cache,
            &[
                "push",
                "-q",
                &format!("--receive-pack={RECEIVE_PACK}"),
                &server,
                &format!("{commit}:{name}"),
            ],
        )
        .map_err(|e| broken("git", format!("a push the server took failed in git: {e}")))?;
        self.stats.remote.pushes += 1;
        self.note(format!("  {name} written at {commit}"));
        Ok(())
    }

    /// The push in flight of the remote pod `p` stands for arrives whole: git writes its ref,
    /// whatever became of the claim since the server checked it.
    pub(super) fn remote_land(&mut self, p: u32) -> Result<(), Broken> {
        let k = self.remote_where(p, |pod| {
            pod.held
                .as_ref()
                .is_some_and(|h| matches!(h.remote, Some(Push::InFlight(_))))
        });
        let Some((_, Some(Push::InFlight(c)))) = self.remote_state(k) else {
            return Ok(());
        };
        let c = c.clone();
        self.land(k, &c)?;
        // The pod hears of it when it wakes.
        if let Some(h) = &mut self.pods[k].held {
            h.remote = Some(Push::Pushed(c));
        }
        Ok(())
    }

    /// The remote pod `p` stands for, at work with its push written (a coder) or its check or
    /// review run (a verifier, a reviewer), reports it with its fence: normally; with its answer
    /// lost, so it reports again; or lost, so the pod gives up (by `how`). A verifier or a
    /// reviewer may instead run past its lease: it stops, and reports late when it resumes.
    pub(super) fn remote_report(&mut self, p: u32, how: u32) -> Result<(), Broken> {
        let k = self.remote_where(p, |pod| {
            pod.held.as_ref().is_some_and(|h| {
                !h.paused
                    && match &h.remote {
                        Some(Push::Pushed(_)) => true,
                        None => pod.role != "coder",
                        _ => false,
                    }
            })
        });
        let read_only = self.pods[k].role != "coder";
        match self.remote_state(k) {
            Some((h, Some(Push::Pushed(_)))) if !h.paused => {}
            Some((h, None)) if !h.paused && read_only => {}
            _ => return Ok(()),
        }
        if read_only && how % 6 == 5 {
            // The check or the review outlives the claim's lease: the pod hears nothing (its
            // heartbeats stop) until it resumes and reports late.
            self.note(format!("  {} runs past its lease", self.pods[k].name));
            if let Some(h) = &mut self.pods[k].held {
                h.paused = true;
            }
            return Ok(());
        }
        match how % 6 {
            1 => {
                self.note(format!("  {}'s report is lost", self.pods[k].name));
                self.stats.remote.reports_lost += 1;
                self.pods[k].held = None;
                Ok(())
            }
            0 => {
                self.report(k, how)?;
                self.note("  the answer is lost: the pod reports again".to_string());
                if let Some(s) = self.pods[k].last.clone() {
                    self.send(k, &s.id, s.fence, s.outcome)?;
                }
                Ok(())
            }
            _ => self.report(k, how),
        }
    }

    /// Report pod `k`'s pushed commit, or a verifier's or a reviewer's result (it stops
    /// holding the claim).
    fn report(&mut self, k: usize, how: u32) -> Result<(), Broken> {
        if self.pods[k].role != "coder" {
            return self.report_read_only(k, how);
        }
        let Some(h) = self.pods[k].held.take() else {
            return Ok(());
        };
        let Some(Push::Pushed(commit)) = h.remote.clone() else {
            return Ok(());
        };
        let a = h.work.assignment.clone();
        let name = AttemptRef::of(&a).name();
        // git acknowledged the push: while the claim is live, its ref holds the commit.
        let l = self.live();
        let row =
            l.db.assignment(&a.id)
                .map_err(|e| broken("db", e.to_string()))?;
        let live = row.as_ref().is_some_and(|r| {
            r.status == AssignmentStatus::Claimed
                && r.fence == a.fence
                && r.claimed_by.as_deref() == Some(self.pods[k].id.as_str())
        });
        if live && ygit::resolve_commit(&self.repo, &name).ok().as_deref() != Some(&commit) {
            return Err(broken(
                "acked-push-lost",
                format!("{name}: git acknowledged the push of {commit}, and the live claim's ref does not hold it"),
            ));
        }
        let report = Report {
            outcome: ReportOutcome::Done,
            commit: Some(commit.clone()),
            summary: Some("did the work on another host".into()),
            usage: Some(super::spending::usage_of(
                super::spending::profile_of(self.pods[k].name),
                how,
            )),
            ..Report::default()
        };
        let applied = self.send(k, &a.id, a.fence, Outcome::Complete(Box::new(report)))?;
        if applied {
            self.stats.remote.results_applied += 1;
            self.acked
                .push((h.work.ticket.clone(), h.work.branch.clone(), commit));
        } else {
            self.refused.push((h.work.ticket.clone(), commit));
        }
        Ok(())
    }

    /// A verifier's or a reviewer's result, reported with its fence as a local one's is (a
    /// reviewer that forgot its trailer is refused and fails the attempt). It pushed nothing,
    /// and its report may write or move no attempt ref (`read-only-pushed`).
    fn report_read_only(&mut self, k: usize, how: u32) -> Result<(), Broken> {
        let Some(h) = self.pods[k].held.take() else {
            return Ok(());
        };
        let a = h.work.assignment.clone();
        let refs = |repo: &std::path::Path| {
            git(
                repo,
                &[
                    "for-each-ref",
                    "--format=%(refname) %(objectname)",
                    asg::attempt_ref::PREFIX,
                ],
            )
            .map(|out| out.lines().map(str::to_string).collect::<Vec<_>>())
            .map_err(|e| broken("git", e))
        };
        let before = refs(&self.repo)?;
        let report = Report {
            usage: Some(super::spending::usage_of(
                super::spending::profile_of(self.pods[k].name),
                how,
            )),
            ..super::pods::read_only_report(self.pods[k].role, how)
        };
        let forgot = report.contract_missing;
        let applied = self.send(k, &a.id, a.fence, Outcome::Complete(Box::new(report)))?;
        if applied {
            self.stats.remote.read_only_applied += 1;
        } else if forgot {
            self.send(k, &a.id, a.fence, Outcome::Fail(None))?;
        }
        if let Some(new) = refs(&self.repo)?.into_iter().find(|r| !before.contains(r)) {
            return Err(broken(
                "read-only-pushed",
                format!(
                    "{new}: written while a {} that pushes nothing reported",
                    a.role
                ),
            ));
        }
        Ok(())
    }

    /// A stopped remote pod, preferably, wakes: a push in flight lands, a lost push is made
    /// again, and a written one is reported, however late; a verifier or a reviewer reports its
    /// late result.
    pub(super) fn remote_resume(&mut self, p: u32) -> Result<(), Broken> {
        let k = self.remote_where(p, |pod| pod.held.as_ref().is_some_and(|h| h.paused));
        let Some((h, r)) = self.remote_state(k) else {
            return Ok(());
        };
        if !h.paused {
            return Ok(());
        }
        let r = r.cloned();
        if let Some(h) = &mut self.pods[k].held {
            h.paused = false;
        }
        self.stats.remote.resumed += 1;
        if self.pods[k].role != "coder" {
            return self.report_read_only(k, 2);
        }
        let commit = match r {
            Some(Push::Lost(c)) => {
                if !self.push_checked(k, &c)? {
                    return Ok(());
                }
                self.land(k, &c)?;
                c
            }
            Some(Push::InFlight(c)) => {
                self.land(k, &c)?;
                c
            }
            Some(Push::Pushed(c)) => c,
            None => return Ok(()),
        };
        self.set_remote(k, Push::Pushed(commit), false);
        self.report(k, 2)
    }

    /// The end of a schedule for the remote pods: pushes in flight land, stopped pods wake, and
    /// every remote pod at work pushes and reports; then they claim nothing more (the local
    /// pods settle the rest).
    pub(super) fn settle_remotes(&mut self) -> Result<(), Broken> {
        use crate::schedule::Action;
        // A schedule without remote work settles exactly as it did before there were remote
        // pods (the clock moves with every step).
        if self.pods.iter().all(|p| p.local() || p.held.is_none()) {
            return Ok(());
        }
        for _ in 0..REMOTES.len() {
            self.step(Action::RemoteLand { p: 0 })?;
            self.step(Action::RemoteResume { p: 0 })?;
            self.step(Action::RemotePush { p: 0, how: 1 })?;
            self.step(Action::RemoteReport { p: 0, how: 2 })?;
        }
        for pod in self.pods.iter_mut().filter(|p| !p.local()) {
            pod.held = None;
        }
        Ok(())
    }

    /// A result the server acknowledged stays on its branch while its ticket is in progress
    /// and the branch is still the ticket's; one whose ticket left progress is forgotten (a
    /// person's return or cancel, or its merge, which `check_merged` follows).
    pub(super) fn check_acked(&mut self) -> Result<(), Broken> {
        let mut keep = Vec::new();
        for (t, branch, commit) in std::mem::take(&mut self.acked) {
            if self.states.get(&t) != Some(&State::Inprogress) {
                continue;
            }
            if self.branch_of(&t)?.as_deref() != Some(branch.as_str()) {
                continue;
            }
            let head = ygit::resolve_commit(&self.repo, &branch).map_err(|e| {
                broken(
                    "acked-result-lost",
                    format!("{t}: the branch {branch} of an acknowledged result is gone: {e}"),
                )
            })?;
            if !ygit::is_ancestor(&self.repo, &commit, &head).unwrap_or(false) {
                return Err(broken(
                    "acked-result-lost",
                    format!(
                        "{t}: the acknowledged result {commit} is no longer on {branch} ({head})"
                    ),
                ));
            }
            keep.push((t, branch, commit));
        }
        self.acked = keep;
        Ok(())
    }

    /// On a settled world: every attempt ref left belongs to an attempt that did not expire and
    /// was not cancelled, of a ticket that is in progress (an attempt ref lasts as long as its
    /// acceptance, docs/pods.md).
    pub(super) fn check_attempt_refs(&self) -> Result<(), Broken> {
        let refs = git(
            &self.repo,
            &[
                "for-each-ref",
                "--format=%(refname)",
                asg::attempt_ref::PREFIX,
            ],
        )
        .map_err(|e| broken("git", e))?;
        let l = self.live();
        for name in refs.lines().filter(|l| !l.is_empty()) {
            let Some(r) = AttemptRef::parse(name) else {
                return Err(broken(
                    "attempt-ref-left",
                    format!("{name} is no attempt ref"),
                ));
            };
            let state = TicketId::parse(&r.ticket)
                .ok()
                .and_then(|t| self.states.get(&t).copied());
            let rows =
                l.db.assignments_of(&r.ticket)
                    .map_err(|e| broken("db", e.to_string()))?;
            // Every step, and every acceptance, numbers its attempts from 1.1: the ref is
            // left rightly while one attempt of that number did not expire or was cancelled.
            let same: Vec<_> = rows
                .iter()
                .filter(|a| a.attempt == r.attempt && a.fence == r.fence)
                .collect();
            let ended = |a: &&yoi_engine::db::Assignment| {
                matches!(
                    a.status,
                    AssignmentStatus::Expired | AssignmentStatus::Cancelled
                )
            };
            let why = if state != Some(State::Inprogress) {
                Some(format!(
                    "its ticket is {}",
                    state.map_or("unknown", |s| s.as_str())
                ))
            } else if same.is_empty() {
                Some("no attempt has that number and fence".to_string())
            } else if same.iter().all(ended) {
                Some("every attempt of that number expired or was cancelled".to_string())
            } else {
                None
            };
            if let Some(why) = why {
                return Err(broken(
                    "attempt-ref-left",
                    format!("{name} is left on a settled world, and {why}"),
                ));
            }
        }
        Ok(())
    }
}

/// What the remote pods did over a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteStats {
    /// Pushes git wrote to an attempt ref.
    pub pushes: usize,
    /// Pushes the server refused before git received them.
    pub pushes_refused: usize,
    /// Remote results applied.
    pub results_applied: usize,
    /// Reports lost after their push.
    pub reports_lost: usize,
    /// Stopped remote pods that woke up.
    pub resumed: usize,
    /// Checks and verdicts of remote verifiers and reviewers applied.
    pub read_only_applied: usize,
    /// Pushes git wrote after their claim had ended (checked while it was live).
    pub landed_late: usize,
}

impl RemoteStats {
    pub fn add(&mut self, o: &RemoteStats) {
        self.pushes += o.pushes;
        self.pushes_refused += o.pushes_refused;
        self.results_applied += o.results_applied;
        self.reports_lost += o.reports_lost;
        self.resumed += o.resumed;
        self.read_only_applied += o.read_only_applied;
        self.landed_late += o.landed_late;
    }
}
