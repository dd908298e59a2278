//! A real git repository (made with the git CLI) holding a yoi workspace, and tickets accepted
//! the way the orchestrator accepts them: branch `yoi/<id>-<slug>` and a linked worktree at
//! `.worktree/<id>-<slug>` made with yoi-git, then `ops::accept` as the orchestrator. Tests check
//! the results with git itself.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use tempfile::TempDir;
use yoi_core::{Principal, TicketId, Timestamp};
use yoi_store::ops::{self, AcceptEvidence, CreateRequest, TransitionRequest};
use yoi_store::{Ctx, Outcome, Workspace};
pub use yoi_testkit::{git, git_output};

pub const BRIEF: &str =
    "## Intent\nShip it.\n\n## Acceptance criteria\n- it works\n\n## Validation\n- cargo test\n";

fn now() -> Timestamp {
    Timestamp::parse("2026-11-29T10:00:00Z").unwrap()
}

pub fn human() -> Ctx {
    Ctx::new(Principal::human("alice"), now())
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

    pub fn create(&self, title: &str) -> TicketId {
        let req = CreateRequest {
            title: title.into(),
            body: BRIEF.into(),
            depends_on: Vec::new(),
        };
        ops::create(&self.ws, &human(), &req).unwrap().ticket
    }

    /// A ticket marked ready and queued by a person.
    pub fn queued(&self, title: &str) -> TicketId {
        let id = self.create(title);
        let plain = TransitionRequest::default();
        ops::mark_ready(&self.ws, &human(), id.as_str(), &plain).unwrap();
        ops::queue(&self.ws, &human(), id.as_str(), &plain).unwrap();
        id
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
        let ev = AcceptEvidence {
            branch: branch.clone(),
            worktree: worktree.clone(),
            base_commit: self.head.clone(),
            assignment: "asg-1".into(),
            decision: "Routing decision: implementation_ready".into(),
        };
        let ctx = Ctx::new(Principal::orchestrator(), now());
        let req = TransitionRequest::default();
        ops::accept(&self.ws, &ctx, id.as_str(), &req, &ev).unwrap();
        Accepted {
            id,
            branch,
            worktree,
            path,
        }
    }

    pub fn cancel(&self, id: &TicketId) -> Outcome {
        let req = TransitionRequest {
            resolution: Some("Not needed.".into()),
            ..TransitionRequest::default()
        };
        ops::cancel(&self.ws, &human(), id.as_str(), &req).unwrap()
    }

    /// The worktree folders `git worktree list --porcelain` shows, main first.
    pub fn git_worktrees(&self) -> Vec<PathBuf> {
        git(self.root(), &["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .map(PathBuf::from)
            .collect()
    }

    /// What `git rev-parse --verify refs/heads/<branch>` says, `None` when there is no branch.
    pub fn git_branch(&self, branch: &str) -> Option<String> {
        let out = git_output(
            self.root(),
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
}
