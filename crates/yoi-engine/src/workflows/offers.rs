//! Workflow offers in a workspace (docs/workflows.md, "Offers"): yoi looks at what happened on
//! tickets ([`super::detect`]) and offers — a new workflow, an improvement, `auto_invoke` on, a
//! flow — and never writes one. Offers wait in `.yoi/workflow-offers/` (tracked, like skill
//! proposals), show in the inbox (so the notification channels tell people, with the diff),
//! and only a person's [`accept`] writes the file, after the content is checked once more as
//! the workflow or flow it would be. [`reject`] keeps the reason, and the pattern is never
//! offered again. The CLI, the API and the dashboard call these functions and nothing below.

use std::path::PathBuf;

use serde::Serialize;
use thiserror::Error;
use utoipa::ToSchema;
use yoi_core::inbox::InboxReason;
use yoi_core::{ErrorClass, Principal, Timestamp};
use yoi_db::DbIndex;
use yoi_skills::offer::{self, Offer, OfferError, OfferKind, OfferStatus};
use yoi_skills::proposal::HumanApprover;
use yoi_skills::workflow::{parse_workflow_md, WorkflowFile, WorkflowSet};
use yoi_store::{StoreError, Workspace};

use super::detect::{self, Known, Thresholds};
use crate::inbox::{InboxAction, InboxEntry};
use crate::skills::load_catalog;

/// Where offers are kept, relative to the repository root.
pub const OFFERS_DIR: &str = ".yoi/workflow-offers";

/// Why an offer could not be listed, made, accepted or rejected.
#[derive(Debug, Error)]
pub enum OffersError {
    #[error(transparent)]
    Offer(#[from] OfferError),
    /// The content would not be a valid workflow or flow now (a skill it requires was removed,
    /// a role is no longer configured): it is never written.
    #[error("offer `{id}` would write `{target}`, which would not check out now: {}; reject it", problems.join("; "))]
    Invalid {
        id: String,
        target: String,
        problems: Vec<String>,
    },
    /// An approver name that is not a person's (the service, the orchestrator, a pod).
    #[error("`{name}` is not a person: only a person accepts or rejects an offer")]
    NotAPerson { name: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl OffersError {
    pub fn class(&self) -> ErrorClass {
        match self {
            OffersError::Offer(e) => e.class(),
            OffersError::Invalid { .. } => ErrorClass::Refused,
            OffersError::NotAPerson { .. } => ErrorClass::NotPermitted,
            OffersError::Store(e) => e.class(),
        }
    }

    /// The API's `error.code` (one of the codes docs/api.md lists).
    pub fn code(&self) -> &'static str {
        match self {
            OffersError::Offer(OfferError::AlreadyDecided { .. }) => "already_decided",
            OffersError::Offer(e) => match e.class() {
                ErrorClass::Invalid => "invalid",
                ErrorClass::NotFound => "not_found",
                ErrorClass::Conflict => "conflict",
                ErrorClass::Refused => "refused",
                ErrorClass::Busy => "locked",
                ErrorClass::Corrupt => "corrupt_file",
                _ => "internal",
            },
            OffersError::Invalid { target, .. } if target.ends_with(".flow.yaml") => "invalid_flow",
            OffersError::Invalid { .. } => "invalid_workflow",
            OffersError::NotAPerson { .. } => "forbidden",
            OffersError::Store(e) => e.code(),
        }
    }
}

/// Every offer, oldest first, and how many wait for a person.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OfferList {
    pub count: usize,
    pub pending: usize,
    pub offers: Vec<Offer>,
}

/// What one look at the history offered.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Detected {
    /// The offers this look made (none when every pattern was offered before).
    pub offered: Vec<Offer>,
    /// Offers pending now, these included.
    pub pending: usize,
}

pub fn root(ws: &Workspace) -> PathBuf {
    ws.root().join(OFFERS_DIR)
}

/// Every offer of the workspace.
pub fn list(ws: &Workspace) -> Result<OfferList, OffersError> {
    let offers = offer::list(&root(ws))?;
    Ok(OfferList {
        count: offers.len(),
        pending: offers
            .iter()
            .filter(|o| o.status == OfferStatus::Pending)
            .count(),
        offers,
    })
}

/// One offer.
pub fn show(ws: &Workspace, id: &str) -> Result<Offer, OffersError> {
    Ok(offer::load(&root(ws), id)?)
}

/// Look at the tickets' history (from the index) and offer what it supports that was never
/// offered. Running it again offers nothing new until the history does.
pub fn detect(ws: &Workspace, index: &DbIndex, now: Timestamp) -> Result<Detected, OffersError> {
    let history = index.offer_history()?;
    let existing = offer::list(&root(ws))?;
    let set = super::set(ws);
    let repo = ws.root().to_path_buf();
    let read = move |rel: &str| std::fs::read_to_string(repo.join(rel)).ok();
    let offers_root = root(ws);
    let offered = |sig: &str| offer::exists(&offers_root, sig);
    let roles = crate::flows::roles(ws);
    let known = Known {
        workflows: &set,
        read: &read,
        pending_targets: existing
            .iter()
            .filter(|o| o.status == OfferStatus::Pending)
            .map(|o| o.target.clone())
            .collect(),
        offered: &offered,
        roles: &roles,
    };
    let w = &ws.config.workflows;
    let drafts = detect::detect(
        &history,
        &known,
        Thresholds {
            min_tickets: w.offer_min_tickets,
            auto_invoke_min_invocations: w.auto_invoke_min_invocations,
            auto_invoke_min_tickets: w.auto_invoke_min_tickets,
        },
    );
    let by = Principal::service().author();
    let at = now.to_string();
    let mut made = Vec::new();
    for d in drafts {
        if let Some(o) = offer::offer(&root(ws), d, &by, &at)? {
            tracing::info!(offer = %o.id, kind = o.kind.as_str(), target = %o.target, "offered a workflow change");
            made.push(o);
        }
    }
    let pending = offer::list(&root(ws))?
        .iter()
        .filter(|o| o.status == OfferStatus::Pending)
        .count();
    Ok(Detected {
        offered: made,
        pending,
    })
}

/// A person accepts offer `id`: its content is checked as the workflow or flow it would be,
/// then written. `approver` is the authenticated person (the human token's principal, or the
/// CLI's user); no other principal reaches this function (the API's scope is human-only).
pub fn accept(
    ws: &Workspace,
    id: &str,
    approver: &str,
    now: Timestamp,
) -> Result<Offer, OffersError> {
    person(approver)?;
    let o = offer::load(&root(ws), id)?;
    if o.status == OfferStatus::Pending {
        let problems = check(ws, &o);
        if !problems.is_empty() {
            return Err(OffersError::Invalid {
                id: o.id,
                target: o.target,
                problems,
            });
        }
    }
    Ok(offer::accept(
        &root(ws),
        id,
        ws.root(),
        &HumanApprover::new(approver),
        &now.to_string(),
    )?)
}

/// A person rejects offer `id` with a reason.
pub fn reject(
    ws: &Workspace,
    id: &str,
    approver: &str,
    reason: &str,
    now: Timestamp,
) -> Result<Offer, OffersError> {
    person(approver)?;
    Ok(offer::reject(
        &root(ws),
        id,
        &HumanApprover::new(approver),
        reason,
        &now.to_string(),
    )?)
}

/// Refuse a name yoi itself, an intake pod or a pod writes under: the frontends pass the
/// authenticated person, and this keeps a mistake in one of them from deciding as the service.
fn person(name: &str) -> Result<(), OffersError> {
    let ok = !name.trim().is_empty()
        && !yoi_core::principal::is_reserved_author(name)
        && super::carry::is_person_author(name);
    if ok {
        Ok(())
    } else {
        Err(OffersError::NotAPerson {
            name: name.to_string(),
        })
    }
}

/// What is wrong with the offer's content as the file it would become, against the workspace as
/// it is now (empty: nothing).
fn check(ws: &Workspace, o: &Offer) -> Vec<String> {
    match o.kind {
        OfferKind::NewFlow => {
            match yoi_core::flow::parse(&o.content, &o.name, &crate::flows::roles(ws)) {
                Ok(_) => Vec::new(),
                Err(problems) => problems.iter().map(|p| p.to_string()).collect(),
            }
        }
        _ => {
            let file = parse_workflow_md(&o.target, o.content.as_bytes());
            let slug = file.slug.clone();
            let mut files: Vec<WorkflowFile> = super::set(ws)
                .files()
                .iter()
                .filter(|f| f.slug != slug)
                .cloned()
                .collect();
            files.push(file);
            let checked = WorkflowSet::from_files(files, &load_catalog(ws));
            checked
                .file(&slug)
                .map(|f| {
                    f.diagnostics
                        .iter()
                        .filter(|d| d.is_error())
                        .map(|d| format!("{} [{}]", d.message, d.rule))
                        .collect()
                })
                .unwrap_or_default()
        }
    }
}

/// One inbox entry per pending offer, with the diff it would make. An offers folder that cannot
/// be read gives none (`yoi workflow offers` reports it).
pub fn inbox_entries(ws: &Workspace) -> Vec<InboxEntry> {
    let Ok(offers) = offer::list(&root(ws)) else {
        return Vec::new();
    };
    offers
        .into_iter()
        .filter(|o| o.status == OfferStatus::Pending)
        .map(|o| InboxEntry {
            key: format!("workflow_offer:{}", o.id),
            reason: InboxReason::WorkflowOffer,
            ticket: None,
            title: o.title.clone(),
            since: o.created_at.clone(),
            detail: format!("{}\n\n```diff\n{}```", o.why, o.diff),
            command: format!(
                "yoi workflow accept {}   # or: yoi workflow reject {} --reason …",
                o.id, o.id
            ),
            action: InboxAction {
                label: "Accept or reject".into(),
                href: format!("/workflows#o-{}", o.id),
            },
            event: None,
        })
        .collect()
}
