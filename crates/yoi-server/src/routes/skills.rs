//! `/api/v1/skills…`: the same catalog the CLI and pods use. Listing carries only name,
//! description, source and validity; activation records who activated what before returning
//! the body; resources are confined to the skill folder; proposals wait for a human.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use yoi_engine::skill_format::activate::Activation;
use yoi_engine::skill_format::catalog::{SkillEntry, SkillSummary};
use yoi_engine::skill_format::proposal::Proposal;
use yoi_engine::skills::{self as glue, SkillError};

use crate::auth::{now, Authed, DecideSkill, ProposeSkill, ReadTickets, UseSkills};
use crate::error::ApiError;
use crate::extract::Body;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ActivateBody {
    pub ticket: Option<String>,
    pub assignment: Option<String>,
}

/// A proposed skill: its name and its files as text, keyed by path inside the skill folder.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeBody {
    pub name: String,
    pub files: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectBody {
    pub reason: String,
}

/// The catalog: name, description, source and validity of each skill.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillList {
    pub count: usize,
    pub skills: Vec<SkillSummary>,
}

/// Every skill proposal, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProposalList {
    pub count: usize,
    pub proposals: Vec<Proposal>,
}

#[utoipa::path(operation_id = "list_skills", get, path = "/api/v1/skills", responses((status = 200, body = SkillList)), security(("bearer" = [])), tag = "skills")]
pub async fn list(
    State(s): State<AppState>,
    Authed(c, ..): Authed<ReadTickets>,
) -> Result<Json<SkillList>, ApiError> {
    // Pods and agents never see a skill that keeps itself out of agents' catalogs
    // (`disable-model-invocation: true`, docs/skills.md); people and read tokens see all.
    let person = matches!(c.token.scope, yoi_db::Scope::Human | yoi_db::Scope::Read);
    let skills = s
        .blocking("catalog", move |ws| {
            let catalog = glue::load_catalog(ws);
            catalog
                .skills()
                .iter()
                .filter(|e| person || !e.meta().disable_model_invocation)
                .map(|e| e.summary())
                .collect::<Vec<_>>()
        })
        .await?;
    Ok(Json(SkillList {
        count: skills.len(),
        skills,
    }))
}

#[utoipa::path(operation_id = "show_skill", get, path = "/api/v1/skills/{name}", params(("name" = String, Path)), responses((status = 200, body = SkillEntry)), security(("bearer" = [])), tag = "skills")]
pub async fn show(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(name): Path<String>,
) -> Result<Json<SkillEntry>, ApiError> {
    let entry = s
        .blocking("catalog", move |ws| {
            glue::load_catalog(ws).get(&name).cloned().ok_or(name)
        })
        .await?
        .map_err(|name| SkillError::Unknown { name })?;
    Ok(Json(entry))
}

#[utoipa::path(operation_id = "activate_skill", post, path = "/api/v1/skills/{name}/activate", params(("name" = String, Path)), request_body = ActivateBody, responses((status = 200, body = Activation)), security(("bearer" = [])), tag = "skills")]
pub async fn activate(
    State(s): State<AppState>,
    Authed(c, ..): Authed<UseSkills>,
    Path(name): Path<String>,
    Body(b): Body<ActivateBody>,
) -> Result<Json<Activation>, ApiError> {
    let state = s.clone();
    let who = c.principal.author();
    let agent = match &c.token.scope {
        yoi_db::Scope::Agent(own) => Some(own.clone()),
        _ => None,
    };
    let result = tokio::task::spawn_blocking(move || match agent {
        Some(own) => glue::activate_for_agent(
            &state.ws,
            &state.index,
            &name,
            who,
            &own,
            b.ticket.as_deref(),
            b.assignment.as_deref(),
            now(),
        ),
        None => glue::activate(
            &state.ws,
            &state.index,
            &name,
            who,
            b.ticket.as_deref(),
            b.assignment,
            now(),
        ),
    })
    .await
    .map_err(|e| ApiError::internal("activation", e))??;
    Ok(Json(result))
}

#[utoipa::path(operation_id = "skill_resource", get, path = "/api/v1/skills/{name}/resources/{path}", params(("name" = String, Path), ("path" = String, Path)), responses((status = 200, content_type = "application/octet-stream", body = Vec<u8>)), security(("bearer" = [])), tag = "skills")]
pub async fn resource(
    State(s): State<AppState>,
    _a: Authed<UseSkills>,
    Path((name, path)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let r = s
        .blocking("resource", move |ws| glue::resource(ws, &name, &path))
        .await??;
    Ok((
        [(header::CONTENT_TYPE, "application/octet-stream")],
        r.bytes,
    )
        .into_response())
}

#[utoipa::path(operation_id = "list_skill_proposals", get, path = "/api/v1/skills/proposals", responses((status = 200, body = ProposalList)), security(("bearer" = [])), tag = "skills")]
pub async fn proposals(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
) -> Result<Json<ProposalList>, ApiError> {
    let proposals = s.blocking("proposals", glue::proposals).await??;
    Ok(Json(ProposalList {
        count: proposals.len(),
        proposals,
    }))
}

#[utoipa::path(operation_id = "propose_skill", post, path = "/api/v1/skills/proposals", request_body = ProposeBody, responses((status = 201, body = Proposal)), security(("bearer" = [])), tag = "skills")]
pub async fn propose(
    State(s): State<AppState>,
    Authed(c, ..): Authed<ProposeSkill>,
    Body(b): Body<ProposeBody>,
) -> Result<(StatusCode, Json<Proposal>), ApiError> {
    let who = c.principal.author();
    let p = s
        .blocking("proposal", move |ws| {
            glue::propose_files(ws, &b.name, &b.files, &who, now())
        })
        .await??;
    Ok((StatusCode::CREATED, Json(p)))
}

#[utoipa::path(operation_id = "approve_skill_proposal", post, path = "/api/v1/skills/proposals/{id}/approve", params(("id" = String, Path)), responses((status = 200, body = Proposal)), security(("bearer" = [])), tag = "skills")]
pub async fn approve(
    State(s): State<AppState>,
    Authed(c, ..): Authed<DecideSkill>,
    Path(id): Path<String>,
) -> Result<Json<Proposal>, ApiError> {
    let approver = c.principal.author();
    let p = s
        .blocking("approve", move |ws| {
            glue::approve(ws, &id, &approver, now())
        })
        .await??;
    Ok(Json(p))
}

#[utoipa::path(operation_id = "reject_skill_proposal", post, path = "/api/v1/skills/proposals/{id}/reject", params(("id" = String, Path)), request_body = RejectBody, responses((status = 200, body = Proposal)), security(("bearer" = [])), tag = "skills")]
pub async fn reject(
    State(s): State<AppState>,
    Authed(c, ..): Authed<DecideSkill>,
    Path(id): Path<String>,
    Body(b): Body<RejectBody>,
) -> Result<Json<Proposal>, ApiError> {
    let approver = c.principal.author();
    let p = s
        .blocking("reject", move |ws| {
            glue::reject(ws, &id, &approver, &b.reason, now())
        })
        .await??;
    Ok(Json(p))
}
