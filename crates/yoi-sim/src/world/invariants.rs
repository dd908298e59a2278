//! The invariants checked after every step, each answering with the first thing it finds
//! broken and its kind (what shrinking keeps):
//!
//! - **the reference model** (`observe`): every change of a ticket's state is an edge its
//!   actor may take, a ticket is created in planning, and nothing starts that a person did not
//!   queue since it last left the queue (`unqueued-start`);
//! - **one live assignment** (`check_assignments`): at most one live row per ticket, live rows
//!   only for tickets in progress (or the held row of an acceptance a crash cut short), every
//!   ticket in progress has its worktree, and after a whole sweep it has a live row unless its
//!   circuit is open;
//! - **no refused coder commit on a branch** (`check_branches`);
//! - **a done ticket's merged commit is reachable from its target** (`check_merged`), when it
//!   becomes done and again at the end;
//! - **the outbox after every restart and crash** (`check_outbox`): every row seen keeps its
//!   seq and event id, and every thread event has its row.
//!
//! They read the workspace's files, the index and git, and write none of them; what they
//! update is the world's own memory of what it saw (the states, the tickets a person queued,
//! the outbox rows), which the next step's checks compare against. Which checks run after
//! which action is `World::step`'s decision. The stale-result check runs inside `send`, where
//! the footprint before a result is still known.

use std::collections::{BTreeMap, BTreeSet};

use yoi_core::{State, TicketId};
use yoi_engine::db::{Assignment, AssignmentStatus};
use yoi_engine::git as ygit;

use super::reference_model::{allowed, Actor};
use super::{broken, Broken, World};

impl World {
    /// Read every ticket's state and hold the changes against the reference model: each
    /// change is an edge its actor may take, and nothing starts that a person did not queue.
    pub(super) fn observe(
        &mut self,
        before: &BTreeMap<TicketId, State>,
        actor: Actor,
    ) -> Result<(), Broken> {
        // From disk: a creation a crash cut short may have left its ticket. `ticket_ids` is
        // sorted, and ids sort in creation order.
        self.tickets = self
            .live()
            .ws
            .ticket_ids()
            .map_err(|e| broken("files", format!("listing the tickets: {e}")))?;
        let mut now = BTreeMap::new();
        for id in &self.tickets {
            now.insert(id.clone(), self.state_of(id)?);
        }
        for (id, &to) in &now {
            let Some(&from) = before.get(id) else {
                if to != State::Planning {
                    return Err(broken("model", format!("{id} was created in {to}")));
                }
                continue;
            };
            if from == to {
                continue;
            }
            if !allowed(actor, from, to) {
                return Err(broken(
                    "model",
                    format!("{id} moved {from} -> {to} in a step of {actor:?}, which the state machine does not allow"),
                ));
            }
            match to {
                State::Queued => {
                    self.queued_by_human.insert(id.clone());
                }
                State::Inprogress => {
                    if !self.queued_by_human.remove(id) {
                        return Err(broken(
                            "unqueued-start",
                            format!("{id} started, but no person queued it since it last left the queue"),
                        ));
                    }
                    self.stats.accepted += 1;
                }
                State::Done => {
                    self.stats.merged += 1;
                    self.check_merged(id)?;
                }
                _ => {
                    self.queued_by_human.remove(id);
                }
            }
        }
        self.states = now;
        Ok(())
    }

    /// The assignments agree with the tickets: at most one live row per ticket, live rows only
    /// for tickets in progress (or held by an acceptance a crash cut short), and every ticket
    /// in progress has its worktree. After a whole sweep, a ticket in progress has a live row
    /// unless its last attempt failed or expired (its circuit is open and waits for a person).
    pub(super) fn check_assignments(&self, swept: bool) -> Result<(), Broken> {
        let l = self.live();
        let rows =
            l.db.list_assignments(None, 1_000_000)
                .map_err(|e| broken("db", e.to_string()))?;
        let mut by_ticket: BTreeMap<&str, Vec<&Assignment>> = BTreeMap::new();
        for r in &rows {
            by_ticket.entry(r.ticket.as_str()).or_default().push(r);
        }
        for (id, state) in &self.states {
            let mine = by_ticket.remove(id.as_str()).unwrap_or_default();
            let live: Vec<&&Assignment> = mine.iter().filter(|r| r.status.is_live()).collect();
            let show = |rs: &[&&Assignment]| {
                rs.iter()
                    .map(|r| {
                        format!(
                            "{} {} attempt {} {}",
                            r.id,
                            r.step,
                            r.attempt,
                            r.status.as_str()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if live.len() > 1 {
                return Err(broken(
                    "live-rows",
                    format!(
                        "{id} ({state}) has {} live assignments: {}",
                        live.len(),
                        show(&live)
                    ),
                ));
            }
            match state {
                State::Inprogress => {
                    match self.worktree_of(id)? {
                        Some(w) if w.is_dir() => {}
                        w => {
                            return Err(broken(
                                "worktree",
                                format!("{id} is in progress without its worktree ({w:?})"),
                            ))
                        }
                    }
                    if swept && live.is_empty() {
                        // Cancelled rows are an earlier acceptance's, and the index stamps a
                        // cancellation it applies with the wall clock, which is later than any
                        // simulated time: they never stand for the latest attempt.
                        let last = mine
                            .iter()
                            .filter(|r| r.status != AssignmentStatus::Cancelled)
                            .max_by_key(|r| (r.updated_ms, r.attempt));
                        // A blocked attempt waits for its answer, then for the router's step.
                        let waits = last.is_some_and(|r| {
                            matches!(
                                r.status,
                                AssignmentStatus::Failed
                                    | AssignmentStatus::Expired
                                    | AssignmentStatus::Blocked
                            )
                        });
                        if !waits {
                            return Err(broken(
                                "no-next-step",
                                format!(
                                    "{id} is in progress after a sweep with no live assignment; the last: {:?}",
                                    last.map(|r| (&r.step, r.status.as_str(), &r.error))
                                ),
                            ));
                        }
                    }
                }
                State::Queued if live.iter().all(|r| r.status == AssignmentStatus::Held) => {}
                _ if !live.is_empty() => {
                    return Err(broken(
                        "live-rows",
                        format!("{id} is {state} but has a live assignment: {}", show(&live)),
                    ));
                }
                _ => {}
            }
        }
        if let Some((id, _)) = by_ticket.into_iter().next() {
            return Err(broken(
                "live-rows",
                format!("assignments of an unknown ticket {id}"),
            ));
        }
        Ok(())
    }

    /// No refused coder commit is on its ticket's branch.
    pub(super) fn check_branches(&self) -> Result<(), Broken> {
        for (id, commit) in &self.refused {
            let Some(branch) = self.branch_of(id)? else {
                continue;
            };
            let Ok(head) = ygit::resolve_commit(&self.repo, &branch) else {
                continue;
            };
            if ygit::is_ancestor(&self.repo, commit, &head).unwrap_or(false) {
                return Err(broken(
                    "refused-commit",
                    format!(
                        "{id}: the commit {commit} of a refused result is on {branch} ({head})"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A done ticket's merged commit is reachable from its target.
    pub(super) fn check_merged(&self, id: &TicketId) -> Result<(), Broken> {
        let thread = self
            .live()
            .ws
            .read_thread(id)
            .map_err(|e| broken("files", format!("{id}: the thread does not read: {e}")))?;
        let Some(merge) = thread
            .events
            .iter()
            .rev()
            .find(|e| e.kind == yoi_core::thread::EventKind::Merge)
        else {
            return Err(broken(
                "merge",
                format!("{id} is done without a merge event"),
            ));
        };
        let commit = merge.get("commit").unwrap_or_default().to_string();
        let target = merge.get("target_ref").unwrap_or("main").to_string();
        // Merged through its pull request: on the forge's target, not the local one.
        if let Some(checked) = self.forge_merged(id, &commit, &target) {
            return checked;
        }
        let head = ygit::resolve_commit(&self.repo, &target)
            .map_err(|e| broken("merge", format!("{id}: the target {target}: {e}")))?;
        if !ygit::is_ancestor(&self.repo, &commit, &head).unwrap_or(false) {
            return Err(broken(
                "merge",
                format!("{id} is done but its merged commit {commit} is not reachable from {target} ({head})"),
            ));
        }
        Ok(())
    }

    /// After a restart's reindex: every outbox row seen before is still there under its seq,
    /// and every thread event has its row.
    pub(super) fn check_outbox(&mut self) -> Result<(), Broken> {
        let l = self.live();
        let rows = l.db.outbox().map_err(|e| broken("db", e.to_string()))?;
        let now: BTreeMap<i64, String> = rows.into_iter().map(|r| (r.seq, r.event_id)).collect();
        for (seq, event) in &self.outbox {
            if now.get(seq) != Some(event) {
                return Err(broken(
                    "outbox",
                    format!(
                        "outbox row {seq} ({event}) became {:?} after a restart",
                        now.get(seq)
                    ),
                ));
            }
        }
        let ids: BTreeSet<&str> = now.values().map(String::as_str).collect();
        for t in &self.tickets {
            let thread =
                l.ws.read_thread(t)
                    .map_err(|e| broken("files", format!("{t}: the thread does not read: {e}")))?;
            for e in &thread.events {
                if let Some(eid) = e.get("id") {
                    if !ids.contains(eid) {
                        return Err(broken(
                            "outbox",
                            format!(
                                "{t}: thread event {eid} ({}) has no outbox row after a restart",
                                e.kind.as_str()
                            ),
                        ));
                    }
                }
            }
        }
        self.outbox = now;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use yoi_core::{State, TicketId};
    use yoi_engine::db::{Assignment, AssignmentStatus};

    use crate::schedule::Action;
    use crate::world::World;

    /// A world with one ticket accepted and its first assignment pending.
    fn accepted() -> (World, TicketId) {
        let mut w = World::new().unwrap();
        for a in [
            Action::Create { deps: 0 },
            Action::MarkReady { t: 0 },
            Action::Queue { t: 0 },
            Action::Route,
        ] {
            w.step(a).unwrap();
        }
        let id = w.tickets[0].clone();
        assert_eq!(w.states[&id], State::Inprogress);
        (w, id)
    }

    #[test]
    fn a_second_live_assignment_is_caught() {
        let (mut w, id) = accepted();
        let l = w.live();
        let extra = Assignment {
            id: "asg-extra".into(),
            ticket: id.to_string(),
            step: "verify".into(),
            role: "verifier".into(),
            attempt: 1,
            fence: 1,
            status: AssignmentStatus::Pending,
            ..Assignment::default()
        };
        l.db.create_assignment(&extra).unwrap();
        let err = w.step(Action::Route).unwrap_err();
        assert_eq!(err.kind, "live-rows", "{err:?}");
        assert!(err.what.contains("2 live assignments"), "{err:?}");
    }

    #[test]
    fn a_start_that_no_person_queued_is_caught() {
        let mut w = World::new().unwrap();
        for a in [
            Action::Create { deps: 0 },
            Action::MarkReady { t: 0 },
            Action::Queue { t: 0 },
        ] {
            w.step(a).unwrap();
        }
        // Forget the person's queue: the acceptance that follows has nobody's intent behind it.
        w.queued_by_human.clear();
        let err = w.step(Action::Route).unwrap_err();
        assert_eq!(err.kind, "unqueued-start", "{err:?}");
    }

    #[test]
    fn an_attempt_ref_no_attempt_needs_is_caught() {
        let (w, id) = accepted();
        let name = format!("refs/yoi/attempts/{id}/9.9");
        crate::world::faults::git(&w.repo, &["update-ref", &name, "main"]).unwrap();
        let err = w.check_attempt_refs().unwrap_err();
        assert_eq!(err.kind, "attempt-ref-left", "{err:?}");
        assert!(err.what.contains("no attempt has that number"), "{err:?}");
    }

    #[test]
    fn a_missing_worktree_of_a_ticket_in_progress_is_caught() {
        let (mut w, id) = accepted();
        let wt = w.worktree_of(&id).unwrap().unwrap();
        std::fs::remove_dir_all(&wt).unwrap();
        let err = w.step(Action::Route).unwrap_err();
        assert_eq!(err.kind, "worktree", "{err:?}");
    }
}
