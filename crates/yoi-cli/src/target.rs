//! Where a ticket mutation runs: through the workspace's running server, or on the files under
//! the workspace lock. This is the only place that chooses; commands call one method per
//! operation and print the result the same way either way.
//!
//! The server is used when `.yoi/local/server.json` names a live one and `--local` was not
//! given. Its answers are the store's own (`Outcome`, the error text), so the output does not
//! depend on the route taken; only the author differs by design — the server records the admin
//! token's principal, local mode the human from `YOI_USER`/config/`$USER`.

use yoi_core::plan::PlanRecord;
use yoi_core::relation::RelationKind;
use yoi_core::state::Operation;
use yoi_engine::person_ops::PersonOp;
use yoi_engine::store::ops::{
    self, CommentRequest, CreateRequest, EditRequest, PlanRequest, RelationRequest,
    TransitionRequest,
};
use yoi_engine::store::{Ctx, Outcome, Workspace};

use crate::context::Env;
use crate::error::CliError;
use crate::remote::{not_a_human_operation, Remote};

pub struct Target {
    /// The workspace, for local reads (e.g. the current state before `yoi ticket state`).
    pub ws: Workspace,
    via: Via,
}

enum Via {
    Files(Ctx),
    Server(Remote),
}

impl Env {
    /// Where the mutations of `command` run.
    pub fn target(&self, command: &str) -> Result<Target, CliError> {
        let mut ws = self.files_only(command)?;
        if !self.local {
            if let Some(remote) = Remote::find(&ws.local_dir(), self.op_id.clone())? {
                return Ok(Target {
                    ws,
                    via: Via::Server(remote),
                });
            }
        }
        crate::context::attach_for_command(&mut ws)?;
        let ctx = self.human_ctx(&ws)?;
        Ok(Target {
            ws,
            via: Via::Files(ctx),
        })
    }
}

impl Target {
    pub fn create(&self, req: &CreateRequest) -> Result<Outcome, CliError> {
        match &self.via {
            Via::Files(ctx) => Ok(ops::create(&self.ws, ctx, req)?),
            Via::Server(r) => r.create(req),
        }
    }

    pub fn edit(&self, id: &str, req: &EditRequest) -> Result<Outcome, CliError> {
        match &self.via {
            Via::Files(ctx) => Ok(ops::edit(&self.ws, ctx, id, req)?),
            Via::Server(r) => r.edit(id, req),
        }
    }

    pub fn comment(&self, id: &str, req: &CommentRequest) -> Result<Outcome, CliError> {
        match &self.via {
            // A person's `/<slug>` comment invokes a workflow (docs/workflows.md).
            Via::Files(ctx) => Ok(yoi_engine::workflows::invoke::comment(
                &self.ws, ctx, id, req,
            )?),
            Via::Server(r) => r.comment(id, req),
        }
    }

    /// One of the human state operations (mark-ready, queue, return-to-planning, close, cancel,
    /// reopen).
    pub fn transition(
        &self,
        op: Operation,
        id: &str,
        req: &TransitionRequest,
    ) -> Result<Outcome, CliError> {
        let ctx = match &self.via {
            Via::Files(ctx) => ctx,
            Via::Server(r) => return r.transition(op, id, req),
        };
        let Some(f) = PersonOp::of_transition(op).and_then(PersonOp::transition_fn) else {
            return Err(not_a_human_operation(op));
        };
        Ok(f(&self.ws, ctx, id, req)?)
    }

    pub fn retry(&self, id: &str, reason: Option<&str>) -> Result<Outcome, CliError> {
        match &self.via {
            Via::Files(ctx) => Ok(ops::retry(&self.ws, ctx, id, reason)?),
            Via::Server(r) => r.retry(id, reason),
        }
    }

    pub fn answer(&self, id: &str, message: &str) -> Result<Outcome, CliError> {
        match &self.via {
            Via::Files(ctx) => Ok(ops::answer(&self.ws, ctx, id, message)?),
            Via::Server(r) => r.answer(id, message),
        }
    }

    pub fn add_budget(
        &self,
        id: &str,
        usd: Option<f64>,
        tokens: Option<u64>,
        note: Option<&str>,
    ) -> Result<Outcome, CliError> {
        match &self.via {
            Via::Files(ctx) => Ok(ops::add_budget(&self.ws, ctx, id, usd, tokens, note)?),
            Via::Server(r) => r.add_budget(id, usd, tokens, note),
        }
    }

    pub fn add_relation(&self, id: &str, req: &RelationRequest) -> Result<Outcome, CliError> {
        match &self.via {
            Via::Files(ctx) => Ok(ops::add_relation(&self.ws, ctx, id, req)?),
            Via::Server(r) => r.add_relation(id, req),
        }
    }

    pub fn remove_relation(
        &self,
        id: &str,
        kind: RelationKind,
        target: &str,
    ) -> Result<Outcome, CliError> {
        match &self.via {
            Via::Files(ctx) => Ok(ops::remove_relation(&self.ws, ctx, id, kind, target)?),
            Via::Server(r) => r.remove_relation(id, kind, target),
        }
    }

    pub fn add_plan_record(
        &self,
        id: &str,
        req: &PlanRequest,
    ) -> Result<(Outcome, PlanRecord), CliError> {
        match &self.via {
            Via::Files(ctx) => Ok(ops::add_plan_record(&self.ws, ctx, id, req)?),
            Via::Server(r) => r.add_plan_record(id, req),
        }
    }
}
