//! A real git repository (made with the git CLI) holding a yoi workspace, and tickets accepted
//! the way the orchestrator accepts them: branch `yoi/<id>-<slug>` and a linked worktree at
//! `.worktree/<id>-<slug>` made with yoi-git, then `ops::accept` as the orchestrator. Tests check
//! the results with git itself. Also a workspace outside any git repository, for the checks that
//! must leave folders alone there.
//!
//! The free functions take a repository root or a workspace rather than a fixture, so the CLI's
//! worktree tests (which build their repositories with the `yoi` binary) use them too.

use std::path::{Path, PathBuf};

pub use crate::{git, git_output};
use tempfile::TempDir;
use yoi_core::{Principal, TicketId, Timestamp};
use yoi_store::ops::{self, AcceptEvidence, CreateRequest, TransitionRequest};
use yoi_store::{Ctx, Outcome, Workspace};

pub const BRIEF: &str =
    "## Intent\nShip it.\n\n## Acceptance criteria\n- it works\n\n## Validation\n- cargo test\n";

fn now() -> Timestamp {
    Timestamp::parse("2026-11-29T10:00:00Z").unwrap()
}

pub fn human() -> Ctx {
    Ctx::new(Principal::human("alice"), now())
}

/// Creates a ticket titled `title` with [`BRIEF`] as a person; it is left in planning.
pub fn create_ticket(ws: &Workspace, title: &str) -> TicketId {
    let req = CreateRequest {
        title: title.into(),
        body: BRIEF.into(),
        depends_on: Vec::new(),
    };
    ops::create(ws, &human(), &req).unwrap().ticket
}

/// Creates a ticket, marks it ready and queues it as a person; it is left queued.
pub fn queued_ticket(ws: &Workspace, title: &str) -> TicketId {
    let id = create_ticket(ws, title);
    let plain = TransitionRequest::default();
    ops::mark_ready(ws, &human(), id.as_str(), &plain).unwrap();
    ops::queue(ws, &human(), id.as_str(), &plain).unwrap();
    id
}

/// Accepts the queued ticket `id` as the orchestrator at `now`, its plan naming `branch`,
/// `worktree` (relative to the root) and `base_commit`. The ticket is left in progress; nothing
/// in git is made or checked.
pub fn accept_as_orchestrator(
    ws: &Workspace,
    now: Timestamp,
    id: &str,
    branch: &str,
    worktree: &str,
    base_commit: &str,
) {
    let ev = AcceptEvidence {
        branch: branch.into(),
        worktree: worktree.into(),
        base_commit: base_commit.into(),
        assignment: "asg-1".into(),
        decision: "Routing decision: implementation_ready".into(),
    };
    let ctx = Ctx::new(Principal::orchestrator(), now);
    ops::accept(ws, &ctx, id, &TransitionRequest::default(), &ev).unwrap();
}

/// Cancels ticket `id` as a person with the resolution "Not needed."; it is left closed.
pub fn cancel_ticket(ws: &Workspace, id: &TicketId) -> Outcome {
    let req = TransitionRequest {
        resolution: Some("Not needed.".into()),
        ..TransitionRequest::default()
    };
    ops::cancel(ws, &human(), id.as_str(), &req).unwrap()
}

/// `git worktree add -q -b <branch> <path>` in `root`: leaves a new branch at HEAD checked out
/// in a new linked worktree at `path` (absolute, or relative to `root`). No ticket is touched.
pub fn worktree_on_new_branch(root: &Path, branch: &str, path: impl AsRef<Path>) {
    let path = path.as_ref().to_str().unwrap();
    git(root, &["worktree", "add", "-q", "-b", branch, path]);
}

/// The worktree folders `git worktree list --porcelain` shows in `root`, main first.
pub fn git_worktrees(root: &Path) -> Vec<PathBuf> {
    git(root, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .collect()
}

/// What `git rev-parse --verify refs/heads/<branch>` says in `root`, `None` when there is no
/// such branch.
pub fn git_branch(root: &Path, branch: &str) -> Option<String> {
    let out = git_output(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    );
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).unwrap().trim().to_string())
}

/// A ticket accepted on a branch with a worktree.
#[derive(Debug, Clone)]
pub struct Accepted {
    pub id: TicketId,
    pub branch: String,
    /// Relative to the repository root, as the accepted plan records it.
    pub worktree: String,
    /// Absolute.
    pub path: PathBuf,
}

pub struct GitFx {
    _dir: TempDir,
    pub ws: Workspace,
    /// The commit on `main` every work branch starts from.
    pub head: String,
}

impl GitFx {
    /// `git init -b main` in `<tempdir>/repo`, one commit, then `yoi_store::init`.
    pub fn new() -> GitFx {
        let dir = tempfile::tempdir().unwrap();
        // The repository is a subfolder, so tests can put worktrees beside it.
        let root = dir.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir(&root).unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("README.md"), "hello\n").unwrap();
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "base"]);
        let head = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
        yoi_store::init(&root, "main").unwrap();
        let ws = Workspace::open(&root).unwrap();
        GitFx {
            _dir: dir,
            ws,
            head,
        }
    }

    pub fn root(&self) -> &Path {
        self.ws.root()
    }

    /// `<tempdir>/<name>`, beside the repository and outside it; nothing is made there.
    pub fn beside(&self, name: &str) -> PathBuf {
        self.root().parent().unwrap().join(name)
    }

    /// A ticket in planning; see [`create_ticket`].
    pub fn create(&self, title: &str) -> TicketId {
        create_ticket(&self.ws, title)
    }

    /// A ticket marked ready and queued by a person.
    pub fn queued(&self, title: &str) -> TicketId {
        queued_ticket(&self.ws, title)
    }

    /// A queued ticket accepted as the orchestrator does it: branch, worktree, then `accept`.
    pub fn accepted(&self, title: &str, slug: &str) -> Accepted {
        let id = self.queued(title);
        let name = format!("{id}-{slug}");
        let branch = format!("yoi/{name}");
        let worktree = format!(".worktree/{name}");
        let path = self.root().join(&worktree);
        yoi_git::create_branch(self.root(), &branch, &self.head).unwrap();
        std::fs::create_dir_all(self.root().join(".worktree")).unwrap();
        yoi_git::add_worktree(self.root(), &path, &branch).unwrap();
        accept_as_orchestrator(&self.ws, now(), id.as_str(), &branch, &worktree, &self.head);
        Accepted {
            id,
            branch,
            worktree,
            path,
        }
    }

    /// Cancels `id` with the resolution "Not needed."; see [`cancel_ticket`].
    pub fn cancel(&self, id: &TicketId) -> Outcome {
        cancel_ticket(&self.ws, id)
    }

    /// A new branch on a new linked worktree, made with the git CLI and no store operation;
    /// see [`worktree_on_new_branch`].
    pub fn worktree_on_new_branch(&self, branch: &str, path: impl AsRef<Path>) {
        worktree_on_new_branch(self.root(), branch, path);
    }

    /// The worktree folders `git worktree list --porcelain` shows, main first.
    pub fn git_worktrees(&self) -> Vec<PathBuf> {
        git_worktrees(self.root())
    }

    /// What `git rev-parse --verify refs/heads/<branch>` says, `None` when there is no branch.
    pub fn git_branch(&self, branch: &str) -> Option<String> {
        git_branch(self.root(), branch)
    }
}

/// A yoi workspace in a plain temporary folder that is no git repository, holding one ticket
/// (titled "T") accepted by the orchestrator: it is left in progress, its plan naming branch
/// `yoi/<id>-t`, worktree `.worktree/<id>-t` and base commit `0123abcd`, none of which exist.
pub struct NoGitFx {
    _dir: TempDir,
    pub ws: Workspace,
    pub id: TicketId,
    /// Relative to the workspace root, as the accepted plan records it.
    pub worktree: String,
}

impl NoGitFx {
    pub fn new() -> NoGitFx {
        let dir = tempfile::tempdir().unwrap();
        yoi_store::init(dir.path(), "main").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let id = queued_ticket(&ws, "T");
        let branch = format!("yoi/{id}-t");
        let worktree = format!(".worktree/{id}-t");
        accept_as_orchestrator(&ws, now(), id.as_str(), &branch, &worktree, "0123abcd");
        NoGitFx {
            _dir: dir,
            ws,
            id,
            worktree,
        }
    }

    pub fn root(&self) -> &Path {
        self.ws.root()
    }
}
