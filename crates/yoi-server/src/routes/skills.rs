//! `/api/v1/skills…`: the same catalog the CLI and pods use. Listing carries only name,
//! description, source and validity; activation records who activated what before returning
//! the body; resources are confined to the skill folder; proposals wait for a human.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use utoipa::ToSchema;
use yoi_skills::{ActivateError, ActivationRequest, HumanApprover, ProposalError, ResourceError};

use crate::auth::{now, Authed, DecideSkill, ProposeSkill, ReadTickets, UseSkills};
use crate::error::ApiError;
use crate::extract::Body;
use crate::skills::{self as glue, DbRecorder};
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

fn activate_error(e: ActivateError) -> ApiError {
    match e {
        ActivateError::UnknownSkill { .. } => {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", e.to_string())
        }
        ActivateError::InvalidSkill { .. } => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_skill",
            e.to_string(),
        ),
        ActivateError::MissingWho => ApiError::bad_request(e.to_string()),
        ActivateError::Listing { .. } | ActivateError::NotRecorded { .. } => {
            ApiError::internal("skill activation", e)
        }
    }
}

fn resource_error(e: ResourceError) -> ApiError {
    match e {
        ResourceError::UnknownSkill { .. } | ResourceError::NotFound { .. } => {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", e.to_string())
        }
        ResourceError::TooLarge { .. } => {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", e.to_string())
        }
        ResourceError::Io { .. } => ApiError::internal("skill resource", e),
        _ => ApiError::new(StatusCode::BAD_REQUEST, "outside_skill", e.to_string()),
    }
}

fn proposal_error(e: ProposalError) -> ApiError {
    let text = e.to_string();
    match e {
        ProposalError::AlreadyDecided { .. } => {
            ApiError::new(StatusCode::CONFLICT, "already_decided", text)
        }
        ProposalError::Invalid { .. } => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_skill", text)
        }
        ProposalError::NotFound { .. } => ApiError::new(StatusCode::NOT_FOUND, "not_found", text),
        _ => ApiError::bad_request(text),
    }
}

#[utoipa::path(operation_id = "list_skills", get, path = "/api/v1/skills", responses((status = 200, body = Object)), security(("bearer" = [])), tag = "skills")]
pub async fn list(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let ws = s.ws.clone();
    let list = tokio::task::spawn_blocking(move || glue::load_catalog(&ws).list())
        .await
        .map_err(|e| ApiError::internal("catalog", e))?;
    Ok(Json(
        serde_json::json!({ "count": list.len(), "skills": list }),
    ))
}

#[utoipa::path(operation_id = "show_skill", get, path = "/api/v1/skills/{name}", params(("name" = String, Path)), responses((status = 200, body = Object)), security(("bearer" = [])), tag = "skills")]
pub async fn show(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(name): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let ws = s.ws.clone();
    let entry = tokio::task::spawn_blocking(move || {
        glue::load_catalog(&ws).get(&name).cloned().ok_or(name)
    })
    .await
    .map_err(|e| ApiError::internal("catalog", e))?
    .map_err(|name| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no skill named `{name}` in the catalog"),
        )
    })?;
    Ok(Json(serde_json::to_value(entry).unwrap_or_default()))
}

#[utoipa::path(operation_id = "activate_skill", post, path = "/api/v1/skills/{name}/activate", params(("name" = String, Path)), request_body = ActivateBody, responses((status = 200, body = Object)), security(("bearer" = [])), tag = "skills")]
pub async fn activate(
    State(s): State<AppState>,
    Authed(c, ..): Authed<UseSkills>,
    Path(name): Path<String>,
    Body(b): Body<ActivateBody>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let state = s.clone();
    let who = c.principal.author();
    let result = tokio::task::spawn_blocking(move || {
        let catalog = glue::load_catalog(&state.ws);
        let ticket = match b.ticket {
            Some(t) => Some(state.ws.resolve(&t).map_err(ApiError::from)?.to_string()),
            None => None,
        };
        let mut recorder = DbRecorder {
            index: &state.index,
            now_ms: now().unix_millis(),
        };
        yoi_skills::activate(
            &catalog,
            &name,
            ActivationRequest {
                who,
                ticket,
                assignment: b.assignment,
            },
            &mut recorder,
        )
        .map_err(activate_error)
    })
    .await
    .map_err(|e| ApiError::internal("activation", e))??;
    Ok(Json(serde_json::to_value(result).unwrap_or_default()))
}

#[utoipa::path(operation_id = "skill_resource", get, path = "/api/v1/skills/{name}/resources/{path}", params(("name" = String, Path), ("path" = String, Path)), responses((status = 200, content_type = "application/octet-stream", body = Vec<u8>)), security(("bearer" = [])), tag = "skills")]
pub async fn resource(
    State(s): State<AppState>,
    _a: Authed<UseSkills>,
    Path((name, path)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let ws = s.ws.clone();
    let r = tokio::task::spawn_blocking(move || {
        yoi_skills::resource(
            &glue::load_catalog(&ws),
            &name,
            &path,
            yoi_skills::DEFAULT_MAX_RESOURCE_BYTES,
        )
    })
    .await
    .map_err(|e| ApiError::internal("resource", e))?
    .map_err(resource_error)?;
    Ok((
        [(header::CONTENT_TYPE, "application/octet-stream")],
        r.bytes,
    )
        .into_response())
}

#[utoipa::path(operation_id = "list_skill_proposals", get, path = "/api/v1/skills/proposals", responses((status = 200, body = Object)), security(("bearer" = [])), tag = "skills")]
pub async fn proposals(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let ws = s.ws.clone();
    let list =
        tokio::task::spawn_blocking(move || yoi_skills::proposal::list(&glue::proposals_root(&ws)))
            .await
            .map_err(|e| ApiError::internal("proposals", e))?
            .map_err(proposal_error)?;
    Ok(Json(
        serde_json::json!({ "count": list.len(), "proposals": list }),
    ))
}

#[utoipa::path(operation_id = "propose_skill", post, path = "/api/v1/skills/proposals", request_body = ProposeBody, responses((status = 201, body = Object)), security(("bearer" = [])), tag = "skills")]
pub async fn propose(
    State(s): State<AppState>,
    Authed(c, ..): Authed<ProposeSkill>,
    Body(b): Body<ProposeBody>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let ws = s.ws.clone();
    let who = c.principal.author();
    let p = tokio::task::spawn_blocking(move || -> Result<_, ApiError> {
        // Lay the files out in a private folder named after the skill, refusing any path that
        // would leave it; the skills crate then lints and stores the proposal.
        let staging = tempfile_dir(&ws)?;
        let dir = staging.join(&b.name);
        if b.name.is_empty() || b.name.contains(['/', '\\']) || b.name.starts_with('.') {
            return Err(ApiError::bad_request("`name` must be a plain folder name"));
        }
        for (rel, text) in &b.files {
            let p = std::path::Path::new(rel);
            if p.is_absolute()
                || p.components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                let _ = std::fs::remove_dir_all(&staging);
                return Err(ApiError::bad_request(format!(
                    "file path `{rel}` must be relative and stay inside the skill"
                )));
            }
            let target = dir.join(p);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| ApiError::internal("proposal staging", e))?;
            }
            std::fs::write(&target, text).map_err(|e| ApiError::internal("proposal staging", e))?;
        }
        let result = yoi_skills::propose(
            &glue::proposals_root(&ws),
            &glue::workspace_skills_root(&ws),
            &dir,
            &who,
            &now().to_string(),
        )
        .map_err(proposal_error);
        let _ = std::fs::remove_dir_all(&staging);
        result
    })
    .await
    .map_err(|e| ApiError::internal("proposal", e))??;
    Ok((
        StatusCode::CREATED,
        Json(serde_json::to_value(p).unwrap_or_default()),
    ))
}

fn tempfile_dir(ws: &yoi_store::Workspace) -> Result<std::path::PathBuf, ApiError> {
    let dir = ws.local_dir().join(format!(
        "proposal-staging-{}",
        yoi_store::ops::new_ulid(now())
    ));
    std::fs::create_dir_all(&dir).map_err(|e| ApiError::internal("proposal staging", e))?;
    Ok(dir)
}

#[utoipa::path(operation_id = "approve_skill_proposal", post, path = "/api/v1/skills/proposals/{id}/approve", params(("id" = String, Path)), responses((status = 200, body = Object)), security(("bearer" = [])), tag = "skills")]
pub async fn approve(
    State(s): State<AppState>,
    Authed(c, ..): Authed<DecideSkill>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let ws = s.ws.clone();
    let approver = HumanApprover::new(c.principal.author());
    let p = tokio::task::spawn_blocking(move || {
        yoi_skills::approve(
            &glue::proposals_root(&ws),
            &id,
            &glue::workspace_skills_root(&ws),
            &approver,
            &now().to_string(),
        )
    })
    .await
    .map_err(|e| ApiError::internal("approve", e))?
    .map_err(proposal_error)?;
    Ok(Json(serde_json::to_value(p).unwrap_or_default()))
}

#[utoipa::path(operation_id = "reject_skill_proposal", post, path = "/api/v1/skills/proposals/{id}/reject", params(("id" = String, Path)), request_body = RejectBody, responses((status = 200, body = Object)), security(("bearer" = [])), tag = "skills")]
pub async fn reject(
    State(s): State<AppState>,
    Authed(c, ..): Authed<DecideSkill>,
    Path(id): Path<String>,
    Body(b): Body<RejectBody>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let ws = s.ws.clone();
    let approver = HumanApprover::new(c.principal.author());
    let p = tokio::task::spawn_blocking(move || {
        yoi_skills::reject(
            &glue::proposals_root(&ws),
            &id,
            &approver,
            &b.reason,
            &now().to_string(),
        )
    })
    .await
    .map_err(|e| ApiError::internal("reject", e))?
    .map_err(proposal_error)?;
    Ok(Json(serde_json::to_value(p).unwrap_or_default()))
}
