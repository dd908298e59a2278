//! How the store relates tickets to the git repository around the workspace: which repository
//! that is, which branch and worktree a ticket was accepted on, and which ticket a `yoi/<id>-…`
//! branch or `<id>-…` worktree folder belongs to.
//!
//! Read-only, and no git of its own: everything that touches the repository goes through
//! `yoi-git`. Used by `cancel` (the ticket's worktree), by doctor's worktree checks and by the
//! worktree queries in [`crate::worktrees`].

use std::path::{Path, PathBuf};

use yoi_core::id::IdForm;
use yoi_core::plan::{AcceptedPlan, PlanKind, PlanRecord};
use yoi_core::TicketId;

/// The prefix of every work branch the orchestrator creates.
pub const BRANCH_PREFIX: &str = "yoi/";

/// The top of the working tree of the git repository holding `root`, or `None` when `root` is
/// not inside one (a workspace without git has no worktrees to look after).
pub fn repo_root(root: &Path) -> Option<PathBuf> {
    yoi_git::discover(root).ok().map(|info| info.workdir)
}

/// The latest `accepted_plan` record among a ticket's plan records: the branch and worktree the
/// ticket is being worked on.
pub fn latest_accepted<'a>(
    plan: impl DoubleEndedIterator<Item = &'a PlanRecord>,
) -> Option<&'a AcceptedPlan> {
    plan.rev()
        .filter(|r| r.kind == PlanKind::AcceptedPlan)
        .find_map(|r| r.accepted_plan.as_ref())
}

/// The ticket a worktree folder or branch name (without `yoi/`) is named after: `<id>-<slug>`
/// or `<id>`, where `<id>` is a 26-character ULID.
pub fn ticket_named_by(name: &str) -> Option<TicketId> {
    let head = name.get(..26)?;
    let rest = &name[26..];
    if !(rest.is_empty() || rest.starts_with('-')) {
        return None;
    }
    TicketId::parse(head)
        .ok()
        .filter(|id| id.form() == IdForm::Ulid)
}

/// The ticket a worktree belongs to: named by its folder, else by its `yoi/<id>-…` branch.
pub fn ticket_of_worktree(path: &Path, branch: Option<&str>) -> Option<TicketId> {
    let folder = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(ticket_named_by);
    folder.or_else(|| {
        branch
            .and_then(|b| b.strip_prefix(BRANCH_PREFIX))
            .and_then(ticket_named_by)
    })
}

/// `path` with symlinks resolved as far as it exists, so two spellings of one folder compare
/// equal even when the folder itself is gone.
pub fn canonical(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => canonical(parent).join(name),
        _ => path.to_path_buf(),
    }
}

/// `path` relative to `root` (both compared [`canonical`]), or `path` in full when it lies
/// outside.
pub fn relative_to(root: &Path, path: &Path) -> String {
    let path = canonical(path);
    path.strip_prefix(canonical(root))
        .unwrap_or(&path)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticket_named_by_reads_the_leading_ulid_only() {
        let id = "01JDX3V8Q4R5S6T7V8W9XAYBZC";
        assert_eq!(
            ticket_named_by(&format!("{id}-fix-login")).map(|t| t.to_string()),
            Some(id.to_string())
        );
        assert!(ticket_named_by(id).is_some());
        assert!(ticket_named_by(&format!("{id}x-fix")).is_none());
        assert!(ticket_named_by("00001KXKMX0QM-legacy").is_none());
        assert!(ticket_named_by("login").is_none());
        assert!(ticket_named_by(&id.to_lowercase()).is_none());
        assert!(ticket_named_by("é").is_none());
    }

    #[test]
    fn canonical_resolves_a_missing_leaf_through_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        let gone = dir.path().join("a/../gone");
        std::fs::create_dir(dir.path().join("a")).unwrap();
        assert_eq!(canonical(&gone), real.join("gone"));
        assert_eq!(canonical(dir.path()), real);
    }
}
