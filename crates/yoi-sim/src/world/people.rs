//! What people do: create and edit tickets, move them along the state machine (mark ready,
//! queue, return to planning, cancel, close, reopen), retry a ticket whose circuit is open, and
//! add or remove a `depends_on`. Each is the store operation the CLI and the API call, with
//! the principal `alice` at the simulated clock's time.
//!
//! Every operation but creation is held against the reference model where it happens
//! (`human_to`): when it succeeds the ticket is in the state that operation leads to,
//! and when it is refused the ticket has not moved. A refusal itself is an outcome to count,
//! not a violation: three times in four the ticket is picked among those in a state the
//! operation fits, the fourth among all, so the guards get tried too. A creation that fails is
//! a violation, since a complete brief has nothing to refuse. What an operation did to
//! assignments, worktrees and branches is left to the checks after the step, which see every
//! actor's work the same way.

use yoi_core::relation::RelationKind;
use yoi_core::{Principal, State, TicketId};
use yoi_engine::store::ops::{
    self, CreateRequest, EditRequest, RelationRequest, TransitionRequest,
};
use yoi_engine::store::{Ctx, Workspace};

use super::{broken, Broken, World};

/// The brief every simulated ticket gets: complete, with one validation command.
const BRIEF: &str = "## Intent\nMake it work.\n\n## Acceptance criteria\n- it works\n\n## Validation\n`cargo test`\n";

type TransitionOp = fn(
    &Workspace,
    &Ctx,
    &str,
    &TransitionRequest,
) -> Result<ops::Outcome, yoi_engine::store::StoreError>;

impl World {
    fn ctx(&self) -> Ctx {
        Ctx::new(Principal::human("alice"), self.now())
    }

    /// The ticket `t` stands for: among those in one of `states` (the work moves on), but
    /// among all when `t % 4 == 3` (the guards are tried).
    pub(super) fn pick(&self, t: u32, states: &[State]) -> Option<TicketId> {
        if self.tickets.is_empty() {
            return None;
        }
        let n = (t / 4) as usize;
        if t % 4 != 3 {
            let fit: Vec<&TicketId> = self
                .tickets
                .iter()
                .filter(|id| self.states.get(*id).is_some_and(|s| states.contains(s)))
                .collect();
            if !fit.is_empty() {
                return Some(fit[n % fit.len()].clone());
            }
        }
        Some(self.tickets[n % self.tickets.len()].clone())
    }

    pub(super) fn create(&mut self, deps: u32) -> Result<(), Broken> {
        let n = self.tickets.len() + 1;
        let depends_on: Vec<String> = self
            .tickets
            .iter()
            .rev()
            .take(deps as usize)
            .map(|t| t.to_string())
            .collect();
        let req = CreateRequest {
            title: format!("Ticket {n}"),
            body: BRIEF.into(),
            depends_on,
        };
        let ctx = self.ctx();
        match ops::create(&self.live().ws, &ctx, &req) {
            Ok(out) => {
                self.note(format!("  created {}", out.ticket));
                // The ticket list is read from disk after every step (see `observe`).
                self.stats.created += 1;
            }
            Err(e) => return Err(broken("human", format!("creating a ticket failed: {e}"))),
        }
        Ok(())
    }

    pub(super) fn edit(&mut self, t: u32) -> Result<(), Broken> {
        self.human(t, &[State::Planning], |ws, ctx, id| {
            let req = EditRequest {
                title: Some(format!("Ticket {id} (edited)")),
                body: None,
            };
            ops::edit(ws, ctx, id, &req).map(|_| ())
        })
    }

    pub(super) fn mark_ready(&mut self, t: u32) -> Result<(), Broken> {
        self.transition(t, &[State::Planning], State::Ready, ops::mark_ready)
    }

    pub(super) fn queue(&mut self, t: u32) -> Result<(), Broken> {
        self.transition(t, &[State::Ready], State::Queued, ops::queue)
    }

    pub(super) fn return_to_planning(&mut self, t: u32) -> Result<(), Broken> {
        let from = [State::Queued, State::Ready, State::Inprogress];
        self.transition(t, &from, State::Planning, ops::return_to_planning)
    }

    pub(super) fn cancel(&mut self, t: u32) -> Result<(), Broken> {
        let from = [
            State::Inprogress,
            State::Queued,
            State::Ready,
            State::Planning,
        ];
        self.transition(t, &from, State::Closed, ops::cancel)
    }

    pub(super) fn close(&mut self, t: u32) -> Result<(), Broken> {
        self.transition(t, &[State::Done], State::Closed, ops::close)
    }

    pub(super) fn reopen(&mut self, t: u32) -> Result<(), Broken> {
        self.transition(t, &[State::Closed], State::Planning, ops::reopen)
    }

    pub(super) fn retry(&mut self, t: u32) -> Result<(), Broken> {
        self.human(t, &[State::Inprogress, State::Queued], |ws, ctx, id| {
            ops::retry(ws, ctx, id, Some("the sim retries")).map(|_| ())
        })
    }

    /// A person answers the open question of the ticket `t` stands for: among the tickets with
    /// one, but among all when `t % 4 == 3` (refused then, unless it has one). An answer moves
    /// no ticket; the orchestrator hands the step that asked out again.
    pub(super) fn answer(&mut self, t: u32) -> Result<(), Broken> {
        let mut asked = Vec::new();
        for id in &self.tickets {
            if self.open_question(id)?.is_some() {
                asked.push(id.clone());
            }
        }
        let id = match (t % 4, asked.is_empty()) {
            (3, _) | (_, true) => match self.pick(t, &[]) {
                Some(id) => id,
                None => return Ok(()),
            },
            _ => asked[(t / 4) as usize % asked.len()].clone(),
        };
        let before = self.state_of(&id)?;
        let ctx = self.ctx();
        let result = ops::answer(&self.live().ws, &ctx, id.as_str(), "Take the simple way.");
        let after = self.state_of(&id)?;
        if before != after {
            return Err(broken(
                "model",
                format!("answering {id} moved it {before} -> {after}"),
            ));
        }
        match result {
            Ok(_) => {
                self.stats.answers += 1;
                self.note(format!("  {id}: answered"));
            }
            Err(e) => {
                self.stats.human_refusals += 1;
                self.note(format!("  {id}: answer refused: {e}"));
            }
        }
        Ok(())
    }

    /// The id of the question on `id` that waits for an answer, read from its files.
    pub(super) fn open_question(&self, id: &TicketId) -> Result<Option<String>, Broken> {
        let ws = &self.live().ws;
        let thread = ws
            .read_thread(id)
            .map_err(|e| broken("files", format!("{id}: the thread does not read: {e}")))?;
        let state = self.state_of(id)?;
        Ok(ops::open_question(&thread, state)
            .and_then(|q| q.id())
            .map(str::to_string))
    }

    /// A person's operation on the ticket `t` stands for; on success the ticket is in the
    /// state the model expects, on refusal it has not moved.
    fn human_to(
        &mut self,
        t: u32,
        pick_from: &[State],
        expect: impl Fn(State) -> State,
        op: impl FnOnce(&Workspace, &Ctx, &str) -> Result<(), yoi_engine::store::StoreError>,
    ) -> Result<(), Broken> {
        let Some(id) = self.pick(t, pick_from) else {
            return Ok(());
        };
        let before = self.state_of(&id)?;
        let ctx = self.ctx();
        let result = op(&self.live().ws, &ctx, id.as_str());
        let after = self.state_of(&id)?;
        match result {
            Ok(()) => {
                self.note(format!("  {id}: {before} -> {after}"));
                let want = expect(before);
                if after != want {
                    return Err(broken(
                        "model",
                        format!("{id}: the operation succeeded from {before} but left {after}, not {want}"),
                    ));
                }
            }
            Err(e) => {
                self.stats.human_refusals += 1;
                self.note(format!("  {id} ({before}): refused: {e}"));
                if after != before {
                    return Err(broken(
                        "model",
                        format!(
                            "{id}: the operation was refused ({e}) but moved {before} -> {after}"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn human(
        &mut self,
        t: u32,
        pick_from: &[State],
        op: impl FnOnce(&Workspace, &Ctx, &str) -> Result<(), yoi_engine::store::StoreError>,
    ) -> Result<(), Broken> {
        self.human_to(t, pick_from, |s| s, op)
    }

    fn transition(
        &mut self,
        t: u32,
        pick_from: &[State],
        to: State,
        op: TransitionOp,
    ) -> Result<(), Broken> {
        let req = TransitionRequest {
            reason: Some("the sim says so".into()),
            resolution: Some("the sim resolves it".into()),
            expected: None,
        };
        self.human_to(
            t,
            pick_from,
            |_| to,
            |ws, ctx, id| op(ws, ctx, id, &req).map(|_| ()),
        )
    }

    pub(super) fn relate(&mut self, t: u32, u: u32, add: bool) -> Result<(), Broken> {
        let Some(target) = self.pick(u | 3, &[]) else {
            return Ok(());
        };
        let target = target.to_string();
        self.human(
            t,
            &[State::Planning, State::Ready, State::Queued],
            |ws, ctx, id| {
                if add {
                    let req = RelationRequest {
                        kind: RelationKind::DependsOn,
                        target,
                        note: None,
                    };
                    ops::add_relation(ws, ctx, id, &req).map(|_| ())
                } else {
                    ops::remove_relation(ws, ctx, id, RelationKind::DependsOn, &target).map(|_| ())
                }
            },
        )
    }
}
