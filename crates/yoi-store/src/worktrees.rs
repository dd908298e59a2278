//! The linked worktrees of the repository around a workspace, seen from the tickets — which
//! ticket each belongs to, that ticket's state, whether it is the worktree the ticket was
//! accepted on — and the two ways a person tidies them: remove one, prune git's records of
//! those whose folder is gone.
//!
//! Removing and pruning are for people only (`yoi worktree …`): the service reads through this
//! module (the dashboard shows a ticket's worktree) but never removes or prunes through it, so
//! nothing the service does is ever forced (`scripts/check-boundaries` checks that neither the
//! engine nor the server names [`remove_worktree`] or [`prune_worktrees`]). [`remove_worktree`] never removes the main worktree, and refuses
//! a worktree with uncommitted work or the worktree of an in-progress ticket unless the caller
//! forces it; the branch is always kept, it holds the work. Listing and pruning take no lock;
//! removing takes the workspace lock, so it cannot race with an acceptance or a cancel deciding
//! on the same ticket. Everything that touches git goes through `yoi-git`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use thiserror::Error;
use yoi_core::id::ResolveError;
use yoi_core::state::State;
use yoi_core::ErrorClass;
use yoi_core::TicketId;
use yoi_git::{GitError, WorktreeInfo};

use crate::error::StoreError;
use crate::git;
use crate::tickets::ITEM;
use crate::workspace::Workspace;

/// One linked worktree and the ticket it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorktreeRow {
    /// Relative to the repository root when inside it, else absolute.
    pub path: String,
    /// The branch checked out; `None` when detached or unreadable.
    pub branch: Option<String>,
    /// The commit checked out (hex); `None` when unreadable.
    pub head: Option<String>,
    /// Whether it holds uncommitted work; `None` when its folder is gone or unreadable.
    pub dirty: Option<bool>,
    /// Its folder is gone and git still holds its record (`prune` drops it).
    pub prunable: bool,
    pub status: WorktreeStatus,
    /// The ticket named by its folder, else by its `yoi/<id>-…` branch.
    pub ticket: Option<TicketId>,
    /// That ticket's state; `None` when it names no ticket or the ticket does not exist.
    pub ticket_state: Option<State>,
    /// It is the worktree recorded in the ticket's latest `accepted_plan`.
    pub accepted: bool,
    #[serde(skip)]
    full_path: PathBuf,
    /// Its folder as git records it, links on the way unresolved (`full_path` resolves them).
    #[serde(skip)]
    recorded: PathBuf,
}

impl WorktreeRow {
    /// Its folder, absolute and canonical (as far as it exists).
    pub fn full_path(&self) -> &Path {
        &self.full_path
    }
}

/// A worktree's status in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorktreeStatus {
    Clean,
    Dirty,
    /// The folder no longer exists.
    Gone,
    /// The folder exists but its status could not be read.
    Unreadable,
}

impl WorktreeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            WorktreeStatus::Clean => "clean",
            WorktreeStatus::Dirty => "dirty",
            WorktreeStatus::Gone => "gone",
            WorktreeStatus::Unreadable => "unreadable",
        }
    }
}

/// Why a worktree was not removed (or pruned).
#[derive(Debug, Error)]
pub enum WorktreeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{path} is the main worktree of the repository; yoi never removes it")]
    MainWorktree { path: String },
    #[error("`{target}` is not a linked worktree of {}; `yoi worktree list` shows them", repo.display())]
    NotAWorktree { target: String, repo: PathBuf },
    #[error("ticket {ticket} has no worktree (none recorded in its accepted plan, none named after it); `yoi worktree list` shows them")]
    NoWorktree { ticket: TicketId },
    #[error("the folder of worktree {path} is already gone; `yoi worktree prune` drops git's record of it")]
    Gone { path: String },
    #[error("worktree {path} has uncommitted changes or untracked files: {}; commit or stash them first, or pass --force to discard them", changes.join(", "))]
    Dirty { path: String, changes: Vec<String> },
    #[error("worktree {path} belongs to ticket {ticket}, which is {state}: {}; cancel the ticket first (`yoi ticket cancel {ticket} --resolution \"<why>\"`), or pass --force", in_use_because(*.state))]
    InProgress {
        ticket: TicketId,
        path: String,
        state: State,
    },
}

impl WorktreeError {
    /// The class an entry point maps to an exit code and HTTP status.
    pub fn class(&self) -> ErrorClass {
        match self {
            WorktreeError::Store(e) => e.class(),
            WorktreeError::Git(e) => e.class(),
            WorktreeError::MainWorktree { .. } => ErrorClass::Refused,
            WorktreeError::NotAWorktree { .. }
            | WorktreeError::NoWorktree { .. }
            | WorktreeError::Gone { .. } => ErrorClass::NotFound,
            WorktreeError::Dirty { .. } | WorktreeError::InProgress { .. } => ErrorClass::Conflict,
        }
    }
}

/// What [`remove_worktree`] is pointed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A ticket id or unique suffix.
    Ticket(String),
    /// A folder (absolute).
    Path(PathBuf),
}

impl Target {
    /// `text` as a person typed it, relative paths taken from `base`: a path when it names an
    /// existing file or folder or has more than one component (`.worktree/x`, `.`, `/abs`),
    /// else a ticket id or suffix (those never contain a separator).
    pub fn parse(text: &str, base: &Path) -> Target {
        let as_path = Path::new(text);
        let one_name = matches!(
            as_path.components().collect::<Vec<_>>().as_slice(),
            [std::path::Component::Normal(_)]
        );
        let full = base.join(as_path);
        if !one_name || full.exists() {
            Target::Path(full)
        } else {
            Target::Ticket(text.to_string())
        }
    }
}

/// What [`remove_worktree`] removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Removed {
    /// Relative to the repository root when inside it, else absolute.
    pub path: String,
    /// The branch it had checked out: kept.
    pub branch: Option<String>,
    pub head: Option<String>,
    pub ticket: Option<TicketId>,
    pub ticket_state: Option<State>,
    /// The uncommitted files a forced removal discarded.
    pub discarded: Vec<String>,
    /// Sentences for the person who asked, about what the removal leaves behind.
    pub notes: Vec<String>,
}

/// Every linked worktree of the repository around the workspace (never the main one), in git's
/// order. Outside a git repository: none.
pub fn list_worktrees(ws: &Workspace) -> Result<Vec<WorktreeRow>, StoreError> {
    let Some(repo) = git::repo_root(ws.root()) else {
        return Ok(Vec::new());
    };
    Ok(Listing::read(ws, &repo)?.linked)
}

/// The worktree of a ticket's latest accepted plan, read alone (its branch, head and
/// dirtiness; `Gone` when its folder is): what a ticket page shows, without the status of
/// every other worktree. `None` when the ticket was never accepted onto a worktree.
pub fn ticket_worktree(ws: &Workspace, id: &TicketId) -> Result<Option<WorktreeRow>, StoreError> {
    let Some(repo) = git::repo_root(ws.root()) else {
        return Ok(None);
    };
    let Some(facts) = ticket_facts(ws, id)? else {
        return Ok(None);
    };
    let Some(path) = facts.accepted.clone() else {
        return Ok(None);
    };
    let info = yoi_git::worktree_info(&repo, &path).unwrap_or_else(|_| {
        let plan = ws.read_plan(id).unwrap_or_default();
        WorktreeInfo {
            branch: git::latest_accepted(plan.iter()).and_then(|p| p.branch.clone()),
            path: path.clone(),
            head: None,
            dirty: None,
            prunable: !path.is_dir(),
        }
    });
    Ok(Some(row(&repo, info, Some(id.clone()), Some(&facts))))
}

/// Remove one linked worktree: its folder and git's record of it. The branch is kept.
///
/// Holds the workspace lock throughout. Refuses the main worktree, a path that is not a linked
/// worktree, a ticket without one, a worktree whose folder is already gone (prune drops it),
/// and — unless `force` — the worktree of an in-progress ticket and one with uncommitted work
/// (naming the files).
pub fn remove_worktree(
    ws: &Workspace,
    target: &Target,
    force: bool,
) -> Result<Removed, WorktreeError> {
    let repo = git::repo_root(ws.root()).ok_or_else(|| StoreError::NotGit {
        what: ws.root().display().to_string(),
    })?;
    let _lock = ws.lock()?;
    let listing = Listing::read(ws, &repo)?;
    let (row, in_progress) = listing.find(ws, target)?;
    if row.status == WorktreeStatus::Gone {
        return Err(WorktreeError::Gone { path: row.path });
    }
    // Looked for on the path git records: the canonical `full_path` has every link on the
    // way resolved already, so it would name where the link leads and find no link.
    let link = crate::beneath::link_on_path(&repo, &row.recorded)
        .or_else(|| crate::beneath::link_on_path(&git::canonical(&repo), &row.recorded));
    if let Some(link) = link {
        return Err(StoreError::invalid(&link, None, crate::error::LINK_REASON).into());
    }
    if let (Some((ticket, state)), false) = (in_progress.clone(), force) {
        return Err(WorktreeError::InProgress {
            ticket,
            path: row.path,
            state,
        });
    }
    let discarded = if force {
        yoi_git::uncommitted_changes(&row.full_path).unwrap_or_default()
    } else {
        Vec::new()
    };
    match yoi_git::remove_worktree(&repo, &row.full_path, force) {
        Ok(()) => {}
        Err(GitError::Dirty { changes, .. }) => {
            return Err(WorktreeError::Dirty {
                path: row.path,
                changes,
            })
        }
        Err(e) => return Err(e.into()),
    }
    let mut notes = Vec::new();
    if !discarded.is_empty() {
        notes.push(format!(
            "discarded uncommitted changes: {}",
            discarded.join(", ")
        ));
    }
    if let Some((ticket, state)) = in_progress {
        let add = match &row.branch {
            Some(b) => format!("`git worktree add {} {b}`", row.path),
            None => format!("`git worktree add {} <branch>`", row.path),
        };
        notes.push(format!(
            "ticket {ticket} is still {state} without its worktree: re-create it with {add}, or cancel the ticket"
        ));
    }
    Ok(Removed {
        path: row.path,
        branch: row.branch,
        head: row.head,
        ticket: row.ticket,
        ticket_state: row.ticket_state,
        discarded,
        notes,
    })
}

/// Drop git's records of the linked worktrees whose folder is gone (like
/// `git worktree prune --expire now`); returns them as they were listed. Branches are kept.
/// Outside a git repository: none.
pub fn prune_worktrees(ws: &Workspace) -> Result<Vec<WorktreeRow>, WorktreeError> {
    let Some(repo) = git::repo_root(ws.root()) else {
        return Ok(Vec::new());
    };
    let listing = Listing::read(ws, &repo)?;
    let pruned = yoi_git::prune_worktrees(&repo)?;
    Ok(pruned
        .iter()
        .map(|p| {
            let full = git::canonical(p);
            listing
                .linked
                .iter()
                .find(|r| r.full_path == full)
                .cloned()
                .unwrap_or_else(|| WorktreeRow {
                    path: git::relative_to(&repo, p),
                    branch: None,
                    head: None,
                    dirty: None,
                    prunable: true,
                    status: WorktreeStatus::Gone,
                    ticket: None,
                    ticket_state: None,
                    accepted: false,
                    full_path: full,
                    recorded: p.clone(),
                })
        })
        .collect())
}

/// What a ticket contributes to its worktrees' rows.
struct TicketFacts {
    state: State,
    /// The worktree of its latest accepted plan, canonical.
    accepted: Option<PathBuf>,
}

fn ticket_facts(ws: &Workspace, id: &TicketId) -> Result<Option<TicketFacts>, StoreError> {
    if !ws.path_of(id, ITEM).is_file() {
        return Ok(None);
    }
    let state = ws.read_item(id)?.state;
    let plan = ws.read_plan(id)?;
    let accepted = git::latest_accepted(plan.iter())
        .and_then(|p| p.worktree.as_deref())
        .map(|w| git::canonical(&ws.root().join(w)));
    Ok(Some(TicketFacts { state, accepted }))
}

/// The repository's worktrees, read once.
struct Listing {
    repo: PathBuf,
    /// The main worktree's folder, canonical.
    main: PathBuf,
    linked: Vec<WorktreeRow>,
}

impl Listing {
    fn read(ws: &Workspace, repo: &Path) -> Result<Listing, StoreError> {
        let all = yoi_git::list_worktrees_with(repo, yoi_git::StatusOf::Linked).map_err(|e| {
            StoreError::invalid(
                repo,
                None,
                format!("the repository's worktrees could not be read: {e}"),
            )
        })?;
        let mut all = all.into_iter();
        // yoi-git lists the main worktree first.
        let main = all
            .next()
            .map(|w| git::canonical(&w.path))
            .unwrap_or_else(|| git::canonical(repo));
        let mut facts: BTreeMap<TicketId, Option<TicketFacts>> = BTreeMap::new();
        let mut linked = Vec::new();
        for w in all {
            let ticket = git::ticket_of_worktree(&w.path, w.branch.as_deref());
            if let Some(id) = &ticket {
                if !facts.contains_key(id) {
                    facts.insert(id.clone(), ticket_facts(ws, id)?);
                }
            }
            let known = ticket.as_ref().and_then(|id| facts[id].as_ref());
            linked.push(row(repo, w, ticket.clone(), known));
        }
        Ok(Listing {
            repo: repo.to_path_buf(),
            main,
            linked,
        })
    }

    /// The row `target` names, and the in-progress ticket whose worktree it is (if any).
    fn find(
        &self,
        ws: &Workspace,
        target: &Target,
    ) -> Result<(WorktreeRow, Option<(TicketId, State)>), WorktreeError> {
        let row = match target {
            Target::Path(p) => self.by_path(p)?,
            Target::Ticket(q) => self.by_ticket(ws, q)?,
        };
        // A queued ticket's worktree may be one an acceptance is making right now (it is made
        // before the lock is taken for the state change).
        let in_progress = match (&row.ticket, row.ticket_state) {
            (Some(id), Some(s @ (State::Inprogress | State::Queued))) => Some((id.clone(), s)),
            _ => None,
        };
        Ok((row, in_progress))
    }

    fn by_path(&self, path: &Path) -> Result<WorktreeRow, WorktreeError> {
        let wanted = git::canonical(path);
        if wanted == self.main {
            return Err(WorktreeError::MainWorktree {
                path: self.main.display().to_string(),
            });
        }
        self.linked
            .iter()
            .find(|r| r.full_path == wanted)
            .cloned()
            .ok_or_else(|| WorktreeError::NotAWorktree {
                target: git::relative_to(&self.repo, path),
                repo: self.repo.clone(),
            })
    }

    /// The worktree recorded in the ticket's accepted plan, else the first one named after it.
    /// A full id whose ticket no longer exists still finds the worktrees named after it.
    fn by_ticket(&self, ws: &Workspace, query: &str) -> Result<WorktreeRow, WorktreeError> {
        let id = match ws.resolve(query) {
            Ok(id) => id,
            Err(e @ StoreError::Resolve(ResolveError::NotFound { .. })) => {
                self.named_after(query).ok_or(e)?
            }
            Err(e) => return Err(e.into()),
        };
        let facts = ticket_facts(ws, &id)?;
        let recorded = facts.as_ref().and_then(|f| f.accepted.as_ref());
        let by_plan = recorded.and_then(|p| self.linked.iter().find(|r| &r.full_path == p));
        let by_name = || self.linked.iter().find(|r| r.ticket.as_ref() == Some(&id));
        let mut row = by_plan
            .or_else(by_name)
            .cloned()
            .ok_or(WorktreeError::NoWorktree { ticket: id.clone() })?;
        if by_plan.is_some() && row.ticket.as_ref() != Some(&id) {
            // The accepted plan names a folder that is not named after the ticket: it is
            // still this ticket's worktree.
            row.ticket_state = facts.map(|f| f.state);
            row.ticket = Some(id);
            row.accepted = true;
        }
        Ok(row)
    }

    /// The id `query` spells in full, when some worktree is named after it.
    fn named_after(&self, query: &str) -> Option<TicketId> {
        let id = git::ticket_named_by(&query.trim().to_ascii_uppercase())?;
        self.linked
            .iter()
            .any(|r| r.ticket.as_ref() == Some(&id))
            .then_some(id)
    }
}

fn row(
    repo: &Path,
    w: WorktreeInfo,
    ticket: Option<TicketId>,
    facts: Option<&TicketFacts>,
) -> WorktreeRow {
    let full_path = git::canonical(&w.path);
    let status = if w.prunable || !full_path.is_dir() {
        WorktreeStatus::Gone
    } else {
        match w.dirty {
            Some(false) => WorktreeStatus::Clean,
            Some(true) => WorktreeStatus::Dirty,
            None => WorktreeStatus::Unreadable,
        }
    };
    WorktreeRow {
        path: git::relative_to(repo, &w.path),
        recorded: w.path,
        branch: w.branch,
        head: w.head,
        dirty: w.dirty,
        prunable: w.prunable,
        status,
        ticket,
        ticket_state: facts.map(|f| f.state),
        accepted: facts.is_some_and(|f| f.accepted.as_ref() == Some(&full_path)),
        full_path,
    }
}

fn in_use_because(state: State) -> &'static str {
    match state {
        State::Queued => "routing may be accepting it onto this worktree right now",
        _ => "the orchestrator and pods use it",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_a_path_when_it_looks_like_one_or_exists() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        std::fs::create_dir(base.join("folder")).unwrap();
        let cases = [
            (".worktree/x", Target::Path(base.join(".worktree/x"))),
            (".", Target::Path(base.join("."))),
            ("folder", Target::Path(base.join("folder"))),
            ("ABCD", Target::Ticket("ABCD".into())),
            (
                "01JDX3V8Q4R5S6T7V8W9XAYBZC",
                Target::Ticket("01JDX3V8Q4R5S6T7V8W9XAYBZC".into()),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(Target::parse(text, base), want, "{text}");
        }
        assert_eq!(
            Target::parse("/abs/path", base),
            Target::Path(PathBuf::from("/abs/path"))
        );
    }

    #[test]
    fn outside_a_git_repository_there_are_no_worktrees() {
        let dir = tempfile::tempdir().unwrap();
        crate::workspace::init(dir.path(), "main").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        if git::repo_root(dir.path()).is_some() {
            return; // the temporary folder happens to lie inside a repository
        }
        assert_eq!(list_worktrees(&ws).unwrap(), Vec::new());
        assert!(prune_worktrees(&ws).unwrap().is_empty());
        assert!(matches!(
            remove_worktree(&ws, &Target::Ticket("ABCD".into()), false),
            Err(WorktreeError::Store(StoreError::NotGit { .. }))
        ));
    }
}
