//! The end of a schedule: the world settles, then the checks that only hold on a quiet
//! workspace run.
//!
//! Settling stops the faults, cleans the target and restarts the server, lets the claims of
//! dead pods run out (one lease and a second more), then works in rounds: route, sweep, resume
//! every paused pod, let every idle pod claim, let every pod at work finish (coders touch only
//! their own files, the reviewer approves). It goes on until two rounds in a row change neither
//! a ticket's state nor the count of applied results, and gives up as `stuck` after 60. Every
//! round goes through `World::step`, so every check after a step still runs while settling.
//!
//! Then, on the quiet workspace: nothing is stuck (a ticket still in progress waits on a
//! person, because its latest attempt failed or expired and its circuit is open), every thread
//! parses, the doctor (`run_full`, as `yoi ticket doctor` runs it) reports no error, and every
//! done ticket's merged commit is reachable from its target. These checks refuse to run on a
//! world still moving: a finding there would say when the run stopped, not what yoi did.

use yoi_core::State;
use yoi_engine::db::AssignmentStatus;

use crate::schedule::Action;

use super::{broken, Broken, World, LEASE};

impl World {
    /// The end of a schedule: the faults stop, the target is cleaned and the server restarts;
    /// then every pod works (approving, touching only its own files) with routing and sweeps
    /// until nothing moves. Then nothing may be stuck: a ticket still in progress waits on a
    /// person (its last attempt failed or expired, so its circuit is open); every thread
    /// parses; the doctor finds no error.
    pub fn settle(&mut self) -> Result<(), Broken> {
        self.faults.stop();
        self.settle_remotes()?;
        self.step(Action::Clean)?;
        self.step(Action::Restart)?;
        // The claims of pods that died run out (and are handed out again at the next sweep).
        self.step(Action::Advance {
            ms: LEASE.lease_ms as u32 + 1_000,
        })?;
        let mut quiet = 0;
        for _ in 0..60 {
            let before = (self.states.clone(), self.stats.results_applied);
            self.step(Action::Route)?;
            self.step(Action::Sweep)?;
            for _ in 0..self
                .pods
                .iter()
                .filter(|p| p.local() && p.held.as_ref().is_some_and(|h| h.paused))
                .count()
            {
                self.step(Action::Resume { p: 0 })?;
            }
            // Each idle pod in turn (`p = 4i` picks the i-th pod that may claim): a pod whose
            // role's only pending step is held over its budget must not stand in for the rest.
            for i in 0..self
                .pods
                .iter()
                .filter(|p| p.local() && p.held.is_none())
                .count()
            {
                self.step(Action::Claim { p: 4 * i as u32 })?;
            }
            for _ in 0..self
                .pods
                .iter()
                .filter(|p| p.local() && p.held.is_some())
                .count()
            {
                self.step(Action::Finish { p: 0, how: 1 })?;
            }
            // CI passes and a person approves every open pull request's head (docs/forge.md).
            let forge_moved = self.settle_forge()?;
            quiet = if !forge_moved && before == (self.states.clone(), self.stats.results_applied) {
                quiet + 1
            } else {
                0
            };
            if quiet == 2 {
                break;
            }
        }
        if quiet < 2 {
            return Err(broken(
                "stuck",
                "the workspace still moved after 60 rounds of work",
            ));
        }
        let l = self.live();
        for (t, s) in &self.states {
            if *s != State::Inprogress {
                continue;
            }
            let rows =
                l.db.assignments_of(t.as_str())
                    .map_err(|e| broken("db", e.to_string()))?;
            let last = rows.iter().max_by_key(|r| (r.created_ms, r.id.clone()));
            // Held over its budget, or paused agents: it waits on a person's grant or on time.
            // An agent that asked waits on a person only while its question is open: once
            // answered, the step must have been handed out again.
            let waits = last.is_some_and(|r| {
                matches!(
                    r.status,
                    AssignmentStatus::Failed | AssignmentStatus::Expired
                )
            }) || (last.is_some_and(|r| r.status == AssignmentStatus::Blocked)
                && self.open_question(t)?.is_some())
                || self.waits_on_budget_or_time(t)?;
            if !waits {
                return Err(broken(
                    "stuck",
                    format!(
                        "{t} is still in progress after every pod worked, and waits on no person; its latest attempt: {:?}; holds: {:?}; pauses: {:?}; open rows: {:?}",
                        last.map(|r| (&r.step, r.attempt, r.status.as_str(), &r.error)),
                        l.db.budget_holds().unwrap_or_default(),
                        l.db.pauses().unwrap_or_default(),
                        l.db.open_assignments().unwrap_or_default().iter().map(|a| (a.ticket.clone(), a.step.clone(), a.role.clone(), a.status.as_str(), a.created_ms)).collect::<Vec<_>>(),
                    ),
                ));
            }
        }
        if self.echo {
            let l = self.live();
            for (t, s) in &self.states {
                let rows = l.db.assignments_of(t.as_str()).unwrap_or_default();
                let last = rows.iter().max_by_key(|r| (r.created_ms, r.id.clone()));
                eprintln!(
                    "end: {t} {s} {:?}",
                    last.map(|r| (&r.step, r.attempt, r.status.as_str(), &r.error))
                );
            }
        }
        let l = self.live();
        for t in &self.tickets {
            l.ws.read_thread(t)
                .map_err(|e| broken("files", format!("{t}: the thread does not read: {e}")))?;
        }
        let report = yoi_engine::doctor::run_full(&l.ws, Some(&l.db), false)
            .map_err(|e| broken("doctor", format!("the doctor failed: {e}")))?;
        let errors: Vec<String> = report
            .findings
            .iter()
            .filter(|f| f.is_error())
            .map(|f| format!("{f:?}"))
            .collect();
        if !errors.is_empty() {
            return Err(broken(
                "doctor",
                format!(
                    "the doctor found errors on a quiet workspace:\n{}",
                    errors.join("\n")
                ),
            ));
        }
        for id in self.tickets.clone() {
            if self.states.get(&id) == Some(&State::Done) {
                self.check_merged(&id)?;
            }
        }
        self.check_all_told()?;
        self.check_attempt_refs()?;
        Ok(())
    }
}
