//! Deciding a proposal: approval (install + audit) and rejection (reason + audit).
//!
//! Both hold the proposal's `decide.lock`, refuse anything but a pending proposal, and need a
//! [`HumanApprover`]. Approval re-reads the stored copy, refuses it if its tree digest moved or
//! it has lint errors, installs it, then rewrites `proposal.json` and appends the audit event.

use std::path::Path;

use super::install::{install, Fault};
use super::store::{
    append_audit, audit_event, proposal_dir, read_proposal, write_proposal, DecideLock,
};
use super::tree::read_tree;
use super::{require, Decision, HumanApprover, Proposal, ProposalError, ProposalStatus};
use crate::lint::lint_skill_md;
/// Installs a pending, lint-clean proposal into the workspace skills root and audits it.
pub fn approve(
    proposals_root: &Path,
    id: &str,
    workspace_skills_root: &Path,
    approver: &HumanApprover,
    now: &str,
) -> Result<Proposal, ProposalError> {
    approve_with_fault(
        proposals_root,
        id,
        workspace_skills_root,
        approver,
        now,
        Fault::None,
    )
}

pub(crate) fn approve_with_fault(
    proposals_root: &Path,
    id: &str,
    workspace_skills_root: &Path,
    approver: &HumanApprover,
    now: &str,
    fault: Fault,
) -> Result<Proposal, ProposalError> {
    require("approver", approver.name())?;
    require("now", now)?;
    let dir = proposal_dir(proposals_root, id)?;
    let _lock = DecideLock::acquire(&dir, id)?;
    let mut proposal = pending(&dir, id)?;
    let stored = dir.join("skill").join(&proposal.name);
    let tree = read_tree(&stored)?;
    let found = tree.digest();
    if found != proposal.tree_digest {
        return Err(ProposalError::Tampered {
            id: id.to_string(),
            expected: proposal.tree_digest.clone(),
            found,
        });
    }
    let skill_md = tree
        .file("SKILL.md")
        .ok_or(ProposalError::MissingSkillFile)?;
    let errors = lint_skill_md(&proposal.name, skill_md).error_count();
    if errors > 0 {
        return Err(ProposalError::Invalid {
            id: id.to_string(),
            errors,
        });
    }
    let installed = install(
        &tree,
        workspace_skills_root,
        &proposal.name,
        &dir,
        id,
        fault,
    )?;
    proposal.status = ProposalStatus::Approved;
    proposal.decision = Some(Decision {
        by: approver.name().to_string(),
        at: now.to_string(),
        reason: None,
        replaced_digest: installed.replaced_digest.clone(),
        previous: installed.previous.clone(),
    });
    write_proposal(&dir, &proposal)?;
    let replaced = match &installed.replaced_digest {
        Some(old) => format!(
            " It replaced the skill with digest {old}, kept at `{}`.",
            installed.previous.as_deref().unwrap_or("")
        ),
        None => String::new(),
    };
    append_audit(
        &dir,
        &audit_event(
            "skill_approved",
            &[
                ("id", &format!("{id}-approved")),
                ("author", approver.name()),
                ("at", now),
                ("skill", &proposal.name),
                ("digest", &proposal.digest),
                ("tree_digest", &proposal.tree_digest),
            ],
            "Skill approved",
            &format!(
                "{} approved `{}` into the workspace skills.{replaced}",
                approver.name(),
                proposal.name
            ),
        ),
    )?;
    Ok(proposal)
}

/// Marks a pending proposal rejected with a reason, and audits it.
pub fn reject(
    proposals_root: &Path,
    id: &str,
    approver: &HumanApprover,
    reason: &str,
    now: &str,
) -> Result<Proposal, ProposalError> {
    require("approver", approver.name())?;
    require("reason", reason)?;
    require("now", now)?;
    let dir = proposal_dir(proposals_root, id)?;
    let _lock = DecideLock::acquire(&dir, id)?;
    let mut proposal = pending(&dir, id)?;
    proposal.status = ProposalStatus::Rejected;
    proposal.decision = Some(Decision {
        by: approver.name().to_string(),
        at: now.to_string(),
        reason: Some(reason.to_string()),
        replaced_digest: None,
        previous: None,
    });
    write_proposal(&dir, &proposal)?;
    append_audit(
        &dir,
        &audit_event(
            "skill_rejected",
            &[
                ("id", &format!("{id}-rejected")),
                ("author", approver.name()),
                ("at", now),
                ("skill", &proposal.name),
                ("digest", &proposal.digest),
            ],
            "Skill rejected",
            reason,
        ),
    )?;
    Ok(proposal)
}

fn pending(dir: &Path, id: &str) -> Result<Proposal, ProposalError> {
    let proposal = read_proposal(dir, id)?;
    if proposal.status != ProposalStatus::Pending {
        return Err(ProposalError::AlreadyDecided {
            id: id.to_string(),
            status: proposal.status,
        });
    }
    Ok(proposal)
}
