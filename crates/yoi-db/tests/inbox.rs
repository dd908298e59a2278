//! The inbox's reads and the notification delivery records, on SQLite and on a real PostgreSQL
//! (see `yoi_testkit::pg`), through the same code.

use yoi_testkit::on_both_backends;
use yoi_testkit::pg::{self, Backend};

use yoi_core::{Principal, Timestamp};
use yoi_db::DbIndex;
use yoi_store::ops::{self, CreateRequest, TransitionRequest};
use yoi_store::{Ctx, Workspace};

const BRIEF: &str =
    "## Intent\nDo it.\n\n## Acceptance criteria\n- done\n\n## Validation\n`true`\n";

struct Fx {
    _dir: tempfile::TempDir,
    ws: Workspace,
    index: DbIndex,
    _rt: tokio::runtime::Runtime,
}

impl Fx {
    fn new(backend: Backend) -> Fx {
        let dir = tempfile::tempdir().unwrap();
        yoi_store::init(dir.path(), "main").unwrap();
        let mut ws = Workspace::open(dir.path()).unwrap();
        if let Backend::Postgres = backend {
            ws.config.database.url = Some(pg::database());
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (index, _) = DbIndex::attach(
            &mut ws,
            yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
        )
        .unwrap();
        Fx {
            _dir: dir,
            ws,
            index,
            _rt: rt,
        }
    }

    fn queued(&self, title: &str) -> String {
        let alice = Ctx::new(Principal::human("alice"), now());
        let req = CreateRequest {
            title: title.into(),
            body: BRIEF.into(),
            depends_on: Vec::new(),
        };
        let id = ops::create(&self.ws, &alice, &req).unwrap().ticket;
        let t = TransitionRequest::default();
        ops::mark_ready(&self.ws, &alice, id.as_str(), &t).unwrap();
        ops::queue(&self.ws, &alice, id.as_str(), &t).unwrap();
        id.to_string()
    }
}

fn now() -> Timestamp {
    Timestamp::parse("2026-03-01T10:00:00Z").unwrap()
}

fn service() -> Ctx {
    Ctx::new(Principal::orchestrator(), now())
}

fn inbox_tickets_reads_only_tickets_that_may_wait_on_a_person(b: Backend) {
    let f = Fx::new(b);
    let quiet = f.queued("Quiet");
    let stuck = f.queued("Stuck");
    let bounced = f.queued("Bounced");
    ops::attention(&f.ws, &service(), &stuck, "circuit_open", "Stopped.").unwrap();
    let back = TransitionRequest {
        reason: Some("the brief is incomplete".into()),
        ..TransitionRequest::default()
    };
    ops::return_to_planning(&f.ws, &service(), &bounced, &back).unwrap();
    let author = Principal::orchestrator().author();

    let all = f.index.inbox_tickets(&author, None).unwrap();
    let mut ids: Vec<&str> = all.iter().map(|t| t.id.as_str()).collect();
    ids.sort();
    let mut want = vec![stuck.as_str(), bounced.as_str()];
    want.sort();
    assert_eq!(ids, want, "{quiet} has nothing waiting");

    let one = f.index.inbox_tickets(&author, Some(&stuck)).unwrap();
    assert_eq!(one.len(), 1);
    let t = &one[0];
    assert_eq!((t.title.as_str(), t.state.as_str()), ("Stuck", "queued"));
    let kinds: Vec<&str> = t.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["state_changed", "state_changed", "attention"]);
    let attention = &t.events[2];
    assert_eq!(attention.attr("reason"), Some("circuit_open"));
    assert_eq!(attention.author.as_deref(), Some(author.as_str()));
    assert_eq!(attention.body.trim(), "Stopped.");
    assert!(attention.at.is_some());
}

on_both_backends!(inbox_tickets_reads_only_tickets_that_may_wait_on_a_person);
