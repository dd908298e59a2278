//! The engine tests' fixture: a real git repository with a yoi workspace and its SQLite index.

#![allow(dead_code)]

use std::path::PathBuf;

use yoi_core::thread::EventKind;
use yoi_core::{Principal, State, TicketId, Timestamp};
use yoi_db::{Assignment, DbIndex};
use yoi_engine::routing as router;
use yoi_store::ops::{self, CreateRequest, TransitionRequest};
use yoi_store::{Ctx, Workspace};
use yoi_testkit::git;

pub const BRIEF: &str = "## Intent\nMake it work.\n\n## Acceptance criteria\n- it works\n\n## Validation\n`cargo test`\n";

pub fn now() -> Timestamp {
    Timestamp::parse("2026-03-01T10:00:00Z").unwrap()
}

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub repo: PathBuf,
    pub ws: Workspace,
    pub db: DbIndex,
    pub base: String,
    _rt: tokio::runtime::Runtime,
}

impl Fixture {
    /// A repository on `main` with one commit holding a source file and the yoi workspace.
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("repo")).unwrap();
        // Canonical, so paths compare equal to what git prints.
        let repo = dir.path().join("repo").canonicalize().unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "hello\n").unwrap();
        yoi_store::init(&repo, "main").unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "base"]);
        let base = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
        let mut ws = Workspace::open(&repo).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (db, _) = DbIndex::attach(
            &mut ws,
            yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
        )
        .unwrap();
        Fixture {
            _dir: dir,
            repo,
            ws,
            db,
            base,
            _rt: rt,
        }
    }

    pub fn human(&self) -> Ctx {
        Ctx::new(Principal::human("alice"), now())
    }

    /// A queued ticket with a complete brief.
    pub fn queued(&self, title: &str, body: &str, depends_on: &[&TicketId]) -> TicketId {
        let ctx = self.human();
        let out = ops::create(
            &self.ws,
            &ctx,
            &CreateRequest {
                title: title.into(),
                body: body.into(),
                depends_on: depends_on.iter().map(|d| d.to_string()).collect(),
            },
        )
        .unwrap();
        let id = out.ticket;
        let req = TransitionRequest::default();
        ops::mark_ready(&self.ws, &ctx, id.as_str(), &req).unwrap();
        ops::queue(&self.ws, &ctx, id.as_str(), &req).unwrap();
        id
    }

    pub fn state(&self, id: &TicketId) -> State {
        self.ws.read_item(id).unwrap().state
    }

    pub fn decisions(&self, id: &TicketId) -> Vec<String> {
        self.ws
            .read_thread(id)
            .unwrap()
            .events
            .into_iter()
            .filter(|e| e.kind == EventKind::Decision)
            .map(|e| e.body)
            .collect()
    }

    pub fn assignments(&self, id: &TicketId) -> Vec<Assignment> {
        self.db.assignments_of(id.as_str()).unwrap()
    }

    pub fn worktree_root(&self) -> PathBuf {
        self.ws.config.worktree_dir(&self.repo)
    }

    /// Route and accept `id`, which must be ready.
    pub fn accept(&self, id: &TicketId) -> router::Accepted {
        let d = router::decide(&self.ws, id, 10).unwrap().unwrap();
        router::accept_ticket(&self.ws, &self.db, id, &d, &self.worktree_root(), now()).unwrap()
    }
}
