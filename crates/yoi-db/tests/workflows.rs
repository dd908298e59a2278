//! The workflow carriers table (docs/workflows.md) on SQLite and on a real PostgreSQL (see
//! `yoi_testkit::pg`), through the same code: recording is idempotent and each carrier reads
//! back with its attempt's status now. The offer detector's reading of the history and the
//! invocation counts read the same rows on both.

use yoi_db::{Assignment, AssignmentStatus, DbIndex};
use yoi_store::Workspace;
use yoi_testkit::on_both_backends;
use yoi_testkit::pg::{self, Backend};

struct Fx {
    _dir: tempfile::TempDir,
    ws: Workspace,
    index: DbIndex,
    _rt: tokio::runtime::Runtime,
}

fn fx(backend: Backend) -> Fx {
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

fn carriers_record_once_and_read_back_with_the_attempts_status(b: Backend) {
    let f = fx(b);
    let a = Assignment {
        id: "asg-1".into(),
        ticket: "T1".into(),
        step: "implement".into(),
        role: "coder".into(),
        attempt: 1,
        fence: 1,
        status: AssignmentStatus::Pending,
        created_ms: 1,
        updated_ms: 1,
        ..Assignment::default()
    };
    f.index.create_assignment(&a).unwrap();
    let inv = vec![
        ("ev-1".to_string(), "security-precheck".to_string()),
        ("ev-2".to_string(), "deep-check".to_string()),
    ];
    f.index.carry_workflows("T1", "asg-1", &inv, 10).unwrap();
    f.index.carry_workflows("T1", "asg-1", &inv, 11).unwrap();
    let rows = f.index.workflow_carriers("T1").unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].invocation_id, "ev-1");
    assert_eq!(rows[0].assignment_id, "asg-1");
    assert_eq!(rows[0].status.as_deref(), Some("pending"));
    // An attempt the table no longer knows reads with no status.
    f.index
        .carry_workflows("T1", "asg-gone", &inv[..1], 12)
        .unwrap();
    let rows = f.index.workflow_carriers("T1").unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows
        .iter()
        .any(|r| r.assignment_id == "asg-gone" && r.status.is_none()));
    assert!(f.index.workflow_carriers("T2").unwrap().is_empty());
}

on_both_backends!(carriers_record_once_and_read_back_with_the_attempts_status);

fn the_history_and_the_invocations_read_back_in_thread_order(b: Backend) {
    use yoi_core::{Principal, Timestamp};
    use yoi_store::ops::{self, CommentRequest, CreateRequest, InvokeRequest};
    let f = fx(b);
    let alice = yoi_store::Ctx::new(
        Principal::human("alice"),
        Timestamp::parse("2026-03-01T10:00:00Z").unwrap(),
    );
    let mut ids = Vec::new();
    for n in 0..2 {
        let req = CreateRequest {
            title: format!("T{n}"),
            body: format!("## Notes\n\nBody {n}.\n"),
            depends_on: Vec::new(),
        };
        ids.push(ops::create(&f.ws, &alice, &req).unwrap().ticket.to_string());
    }
    let comment = |id: &str, body: &str| {
        let req = CommentRequest {
            kind: "comment".into(),
            body: body.into(),
        };
        ops::comment(&f.ws, &alice, id, &req).unwrap();
    };
    comment(&ids[0], "first");
    // Text that looks like the attribute is not an invocation: only attributes count.
    comment(&ids[0], "say \"workflow\": \"x\" here");
    let inv = InvokeRequest {
        slug: "precheck".into(),
        role: "coder".into(),
        comment: "/precheck now".into(),
    };
    ops::invoke_workflow(&f.ws, &alice, &ids[1], &inv).unwrap();

    let history = f.index.offer_history().unwrap();
    assert_eq!(history.len(), 2);
    let first = history.iter().find(|t| t.id == ids[0]).unwrap();
    assert!(first.body.contains("Body 0."), "{first:?}");
    let bodies: Vec<&str> = first.events.iter().map(|e| e.body.trim()).collect();
    assert_eq!(bodies, ["first", "say \"workflow\": \"x\" here"]);
    let second = history.iter().find(|t| t.id == ids[1]).unwrap();
    assert_eq!(second.events.len(), 1);
    assert_eq!(second.events[0].attr("workflow"), Some("precheck"));
    assert_eq!(second.events[0].author.as_deref(), Some("alice"));

    let rows = f.index.workflow_invocations().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].ticket, ids[1]);
    assert_eq!(rows[0].slug, "precheck");
    assert_eq!(rows[0].author.as_deref(), Some("alice"));
}

on_both_backends!(the_history_and_the_invocations_read_back_in_thread_order);
