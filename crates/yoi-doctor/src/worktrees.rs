//! Worktrees and branches against tickets (DESIGN §11): an in-progress ticket's accepted branch
//! and worktree must exist; a yoi worktree or branch whose ticket is gone or finished is a
//! leftover; a worktree record whose folder is gone is dropped by `--fix`.
//!
//! Runs only when the workspace is inside a git repository; otherwise there is nothing to compare
//! and it reports nothing. It reads git through yoi-git and changes nothing there, except the
//! prune `--fix` applies ([`SafeFix::PruneWorktrees`]). Fix commands are run from the repository
//! root; paths in them are relative to it.
//!
//! Which worktrees are yoi's: linked worktrees under the worktree folder
//! (`workspace.worktree_dir`) or checked out on a `yoi/…` branch. Their ticket is read from the
//! folder name, else the branch name (`<id>-<slug>`, `<id>` a 26-character ULID). A clean one
//! whose ticket is not in progress is an orphan: removing it loses nothing, its branch stays. A
//! dirty one of a done, closed or missing ticket is reported with the instruction to save the
//! changes first. A dirty one of a ticket back in planning, ready or queued is not reported:
//! a stopped ticket keeps what it produced on purpose (DESIGN §5).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use yoi_core::finding::{Finding, SafeFix};
use yoi_core::plan::PlanKind;
use yoi_core::state::State;
use yoi_core::TicketId;
use yoi_git::{BranchInfo, WorktreeInfo};

use super::ticket::TicketScan;
use yoi_store::git::{self, BRANCH_PREFIX};
use yoi_store::tickets::PLAN;
use yoi_store::workspace::Workspace;

const CANCEL: &str = "yoi ticket cancel";

/// The repository as doctor sees it, read once.
struct Repo<'a> {
    ws: &'a Workspace,
    /// Canonical top of the main working tree.
    root: PathBuf,
    /// Canonical worktree folder (`workspace.worktree_dir`).
    worktree_dir: PathBuf,
    /// Canonical folder of the pods' own worktrees, inside it.
    pod_dir: PathBuf,
    /// Linked worktrees only (the main one is never a ticket's).
    linked: Vec<WorktreeInfo>,
    branches: Vec<BranchInfo>,
    tickets: BTreeMap<&'a TicketId, &'a TicketScan>,
}

/// Every worktree and branch finding, or none outside a git repository.
pub(super) fn check_workspace(ws: &Workspace, tickets: &[TicketScan]) -> Vec<Finding> {
    let Some(root) = git::repo_root(ws.root()) else {
        return Vec::new();
    };
    let read = yoi_git::list_worktrees_with(&root, yoi_git::StatusOf::Linked)
        .and_then(|w| yoi_git::list_branches(&root, "").map(|b| (w, b)));
    let (worktrees, branches) = match read {
        Ok(found) => found,
        Err(e) => {
            let seen = format!("the repository's worktrees and branches could not be read: {e}");
            let fix = format!(
                "check the repository with `git -C {} worktree list` and `git fsck`",
                root.display()
            );
            return vec![Finding::warning(
                "git.unreadable",
                seen,
                "a readable repository, so worktrees and branches can be checked against tickets",
            )
            .with_fix(fix)];
        }
    };
    let repo = Repo {
        ws,
        worktree_dir: git::canonical(&ws.config.worktree_dir(ws.root())),
        pod_dir: git::canonical(&ws.config.pod_worktree_dir(ws.root())),
        root: git::canonical(&root),
        linked: worktrees.into_iter().skip(1).collect(),
        branches,
        tickets: tickets.iter().map(|t| (&t.id, t)).collect(),
    };
    let mut out = Vec::new();
    for t in tickets {
        if t.state == Some(State::Inprogress) {
            repo.check_accepted(t, &mut out);
        }
    }
    for w in &repo.linked {
        repo.check_linked(w, &mut out);
    }
    repo.check_branches(&mut out);
    out
}

impl Repo<'_> {
    /// `path` relative to the repository root when it is inside it.
    fn rel(&self, path: &Path) -> String {
        git::relative_to(&self.root, path)
    }

    fn branch(&self, name: &str) -> Option<&BranchInfo> {
        self.branches.iter().find(|b| b.name == name)
    }

    fn registered(&self, path: &Path) -> Option<&WorktreeInfo> {
        let wanted = git::canonical(path);
        self.linked
            .iter()
            .find(|w| git::canonical(&w.path) == wanted)
    }

    /// An in-progress ticket: the branch and worktree of its latest accepted plan exist.
    fn check_accepted(&self, t: &TicketScan, out: &mut Vec<Finding>) {
        let Some((line, plan)) = t
            .plan
            .iter()
            .rev()
            .filter(|(_, r)| r.kind == PlanKind::AcceptedPlan)
            .find_map(|(line, r)| r.accepted_plan.as_ref().map(|p| (*line, p)))
        else {
            return;
        };
        let id = t.id.as_str();
        let at = |f: Finding| {
            f.with_ticket(id)
                .at(self.ws.rel(&self.ws.path_of(&t.id, PLAN)), Some(line))
        };
        let cancel = format!("`{CANCEL} {id} --resolution \"<why>\"`");
        let branch_ok = plan
            .branch
            .as_deref()
            .is_some_and(|b| self.branch(b).is_some());
        // A plan without a base commit was written by the older tools (yoi records the base of
        // every acceptance): it names where the older tool worked, often in another clone (its
        // worktree paths even start with a `<repo>` placeholder). yoi made neither and runs
        // nothing there, so their absence is worth a note, not an error.
        if plan.base_commit.is_none() {
            let worktree_ok = plan
                .worktree
                .as_deref()
                .is_none_or(|w| self.registered(&self.ws.root().join(w)).is_some());
            if !branch_ok || !worktree_ok {
                let named = [
                    plan.branch.as_deref().map(|b| format!("branch `{b}`")),
                    plan.worktree.as_deref().map(|w| format!("worktree `{w}`")),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" and ");
                out.push(at(Finding::warning(
                    "plan.older_workplace",
                    format!(
                        "ticket {id} is in progress under an older tool's plan ({named}), which is not all in this repository"
                    ),
                    "the older tool's accepted plan is kept as written; yoi runs nothing for a ticket it did not accept",
                )
                .with_fix(format!(
                    "nothing to do; to have yoi work on it, `yoi ticket return-to-planning {id} --reason \"<why>\"`, then mark it ready and queue it"
                ))));
            }
            return;
        }
        if let (Some(b), false) = (plan.branch.as_deref(), branch_ok) {
            let fix = match &plan.base_commit {
                Some(base) => format!(
                    "`git branch {b} {base}` re-creates it at its base commit (commits made only on it are lost: look for them with `git reflog` first), or {cancel}"
                ),
                None => format!(
                    "re-create the branch at the commit the work started from, or {cancel}"
                ),
            };
            out.push(at(Finding::error(
                "branch.missing",
                format!("ticket {id} is in progress on branch `{b}`, which does not exist"),
                "the branch named by an in-progress ticket's accepted plan exists",
            )
            .with_fix(fix)));
        }
        let Some(w) = plan.worktree.as_deref() else {
            return;
        };
        let path = self.ws.root().join(w);
        let (problem, first) = match self.registered(&path) {
            Some(r) if r.prunable || !path.is_dir() => (
                "its folder is gone (git still holds its record)",
                Some("`git worktree prune`"),
            ),
            Some(_) => return,
            None if path.exists() => (
                "that folder is not a worktree of this repository",
                Some("move the folder aside (it may hold work)"),
            ),
            None => ("no worktree is registered there", None),
        };
        let add = match (&plan.branch, branch_ok) {
            (Some(b), true) => format!("`git worktree add {w} {b}`"),
            (Some(b), false) => format!(
                "re-create the branch `{b}` (see branch.missing), then `git worktree add {w} {b}`"
            ),
            (None, _) => format!("`git worktree add {w} <branch>`"),
        };
        let fix = match first {
            Some(first) => format!("{first}, then {add}; or {cancel}"),
            None => format!("{add}, or {cancel}"),
        };
        out.push(at(Finding::error(
            "worktree.missing",
            format!("ticket {id} is in progress in worktree `{w}`, but {problem}"),
            "the worktree named by an in-progress ticket's accepted plan is a worktree of the repository",
        )
        .with_fix(fix)));
    }

    /// A linked worktree: its record is live, and a yoi worktree belongs to an in-progress
    /// ticket.
    fn check_linked(&self, w: &WorktreeInfo, out: &mut Vec<Finding>) {
        let rel = self.rel(&w.path);
        let on_branch = match &w.branch {
            Some(b) => format!(" (branch `{b}`)"),
            None => String::new(),
        };
        let ticket = self.ticket_of(w);
        let with_ticket = |f: Finding| match &ticket {
            Some(id) => f.with_ticket(id.as_str()),
            None => f,
        };
        if w.prunable {
            out.push(with_ticket(
                Finding::warning(
                    "worktree.prunable",
                    format!(
                        "git holds a record of worktree `{rel}`{on_branch}, but its folder is gone"
                    ),
                    "every worktree git lists exists",
                )
                .at(rel, None)
                .with_fix("`git worktree prune` (applied by `yoi ticket doctor --fix`)")
                .with_safe_fix(SafeFix::PruneWorktrees),
            ));
            return;
        }
        if !w.path.is_dir() || !self.is_yois(w) {
            return;
        }
        // A pod's own worktree belongs to no ticket: the service moves it to each commit a
        // read-only step works on and replaces it when it is not exactly one (docs/flows.md).
        if git::canonical(&w.path).starts_with(&self.pod_dir) {
            return;
        }
        let (whose, finished) = match &ticket {
            None => (
                "names no ticket (no ticket id in its folder or branch name)".to_string(),
                true,
            ),
            Some(id) => match self.tickets.get(id).filter(|t| t.exists) {
                None => (
                    format!("belongs to ticket {id}, which does not exist"),
                    true,
                ),
                // In progress is where a worktree belongs; an unreadable item.md is reported
                // by the item checks and decides nothing here.
                Some(t) => match t.state {
                    Some(State::Inprogress) | None => return,
                    Some(state) => (
                        format!("belongs to ticket {id}, which is {state}"),
                        matches!(state, State::Done | State::Closed),
                    ),
                },
            },
        };
        let f = match w.dirty {
            Some(false) => {
                let keeps = match &w.branch {
                    Some(b) => format!("; the branch `{b}` stays"),
                    None => String::new(),
                };
                Finding::warning(
                    "worktree.orphan",
                    format!("worktree `{rel}`{on_branch} {whose}; it is clean"),
                    "a yoi worktree exists only while its ticket is in progress",
                )
                .with_fix(format!("`git worktree remove {rel}`{keeps}"))
            }
            dirty if finished => {
                let what = match dirty {
                    Some(_) => "it has uncommitted changes",
                    None => "its status could not be read",
                };
                Finding::warning(
                    "worktree.dirty_closed",
                    format!("worktree `{rel}`{on_branch} {whose}; {what}"),
                    "a finished ticket leaves no worktree and no uncommitted work behind",
                )
                .with_fix(format!(
                    "commit or stash the changes in `{rel}` (`git -C {rel} status` lists them), then `git worktree remove {rel}`"
                ))
            }
            // A ticket back in planning, ready or queued keeps its work on purpose.
            _ => return,
        };
        out.push(with_ticket(f.at(rel, None)));
    }

    /// Under the worktree folder, or on a `yoi/…` branch.
    fn is_yois(&self, w: &WorktreeInfo) -> bool {
        git::canonical(&w.path).starts_with(&self.worktree_dir)
            || w.branch
                .as_deref()
                .is_some_and(|b| b.starts_with(BRANCH_PREFIX))
    }

    fn ticket_of(&self, w: &WorktreeInfo) -> Option<TicketId> {
        git::ticket_of_worktree(&w.path, w.branch.as_deref())
    }

    /// Every `yoi/<id>-…` branch belongs to a ticket that exists.
    fn check_branches(&self, out: &mut Vec<Finding>) {
        let target = &self.ws.config.workspace.default_target;
        for b in &self.branches {
            let Some(id) = b
                .name
                .strip_prefix(BRANCH_PREFIX)
                .and_then(git::ticket_named_by)
            else {
                continue;
            };
            if self.tickets.get(&id).is_some_and(|t| t.exists) {
                continue;
            }
            let name = &b.name;
            let short = &b.head[..b.head.len().min(12)];
            // git refuses to delete a branch checked out somewhere: its worktree goes first.
            let first: String = self
                .linked
                .iter()
                .filter(|w| w.branch.as_deref() == Some(name.as_str()))
                .map(|w| format!("`git worktree remove {}`, then ", self.rel(&w.path)))
                .collect();
            out.push(
                Finding::warning(
                    "branch.orphan",
                    format!("branch `{name}` (at {short}) names ticket {id}, which does not exist"),
                    "every `yoi/<id>-…` branch belongs to a ticket",
                )
                .with_ticket(id.as_str())
                .with_fix(format!(
                    "check that nothing needs it (`git log {target}..{name}` lists its commits not on {target}), then {first}`git branch -D {name}`"
                )),
            );
        }
    }
}
