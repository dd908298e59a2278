//! `plan add`: append one orchestration plan record. Records note ordering and capacity
//! decisions; they never change state. With an operation id, the record id is derived from it,
//! so a replay finds the first record instead of appending a second.

use yoi_core::plan::{AcceptedPlan, PlanKind, PlanRecord};
use yoi_core::sha256_hex;

use super::{Ctx, Outcome};
use crate::error::{Refusal, StoreError};
use crate::tickets::{ARTIFACTS, PLAN};
use crate::workspace::Workspace;

#[derive(Debug, Clone)]
pub struct PlanRequest {
    pub kind: PlanKind,
    pub related: Option<String>,
    pub note: Option<String>,
    pub accepted_plan: Option<AcceptedPlan>,
}

pub fn add_plan_record(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &PlanRequest,
) -> Result<(Outcome, PlanRecord), StoreError> {
    if req.kind == PlanKind::AcceptedPlan {
        return Err(StoreError::Refused {
            reason: Refusal::AcceptedPlanIsTheRouters,
        });
    }
    let _lock = ws.lock()?;
    let id = ws.resolve(query)?;
    // A record is only added to a readable ticket: a malformed item.md is reported, not
    // silently built upon.
    ws.read_item(&id)?;
    let related = req.related.as_deref().map(|r| ws.resolve(r)).transpose()?;
    let record_id = match &ctx.op {
        Some(op) => format!("plan-op-{}", &sha256_hex(op.as_bytes())[..20]),
        None => format!("plan-{}", super::new_ulid(ctx.precise)),
    };
    let record = PlanRecord {
        id: record_id,
        ticket_id: id.clone(),
        kind: req.kind,
        related_ticket: related,
        note: req.note.clone().filter(|n| !n.trim().is_empty()),
        accepted_plan: req.accepted_plan.clone(),
        author: ctx.principal.author(),
        at: ctx.now,
    };
    let existing = ws.read_plan(&id)?;
    record
        .validate(&id, existing.len() + 1)
        .map_err(|e| StoreError::bad_input("plan record", e.to_string()))?;
    let outcome = |replayed| Outcome {
        ticket: id.clone(),
        operation: "plan_add".into(),
        event_id: None,
        from: None,
        to: None,
        replayed,
        index_error: None,
        notes: Vec::new(),
    };
    if let Some(prev) = existing.iter().find(|r| r.id == record.id) {
        let same = prev.kind == record.kind
            && prev.related_ticket == record.related_ticket
            && prev.note == record.note
            && prev.accepted_plan == record.accepted_plan;
        if !same {
            return Err(StoreError::ConflictingReplay {
                op: ctx.op.clone().unwrap_or_default(),
                ticket: id.to_string(),
            });
        }
        return Ok((outcome(true), prev.clone()));
    }
    let dir = ws.path_of(&id, ARTIFACTS);
    std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
    let path = ws.path_of(&id, PLAN);
    ws.writes
        .append_sync(&path, record.render_line().as_bytes())
        .map_err(|e| StoreError::io(&path, e))?;
    super::artifacts_changed(&dir);
    let fp = super::fingerprint(
        "plan_add",
        id.as_str(),
        &serde_json::to_value(&record).unwrap_or_default(),
    );
    Ok((super::finish(ws, ctx, &fp, outcome(false)), record))
}
