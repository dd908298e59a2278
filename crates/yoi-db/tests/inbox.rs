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

fn a_delivery_is_promised_once_and_each_attempt_is_claimed_once(b: Backend) {
    use yoi_db::notify::{AttemptEnd, DeliveryStatus, NotifyDelivery};
    let f = Fx::new(b);
    let row = NotifyDelivery {
        channel: "hook".into(),
        entry_key: "T:circuit_open:E".into(),
        reason: "circuit_open".into(),
        ticket: Some("T".into()),
        payload: "{}".into(),
        idempotency_key: "dlv_1".into(),
        status: DeliveryStatus::Pending,
        attempts: 0,
        next_ms: 1_000,
        created_ms: 1_000,
        updated_ms: 1_000,
        last_answer: None,
    };
    assert!(f.index.notify_promise(&row).unwrap());
    let again = NotifyDelivery {
        idempotency_key: "dlv_2".into(),
        ..row.clone()
    };
    assert!(
        !f.index.notify_promise(&again).unwrap(),
        "one row per (channel, entry)"
    );
    assert!(f.index.notify_due("hook", 999, 10).unwrap().is_empty());
    assert_eq!(f.index.notify_due("hook", 1_000, 10).unwrap().len(), 1);

    assert!(f
        .index
        .notify_claim("hook", &row.entry_key, 0, 60_000, 1_000)
        .unwrap());
    assert!(
        !f.index
            .notify_claim("hook", &row.entry_key, 0, 60_000, 1_000)
            .unwrap(),
        "an attempt is claimed once"
    );
    // Left `sending` by a crash: due again once the resend time comes.
    assert!(f.index.notify_due("hook", 59_999, 10).unwrap().is_empty());
    let stuck = f.index.notify_due("hook", 60_000, 10).unwrap();
    assert_eq!(
        (stuck[0].status, stuck[0].attempts),
        (DeliveryStatus::Sending, 1)
    );

    let failed = AttemptEnd {
        started_ms: 1_000,
        duration_ms: 12,
        ok: false,
        answer: "HTTP 503: down".into(),
        status: DeliveryStatus::Pending,
        next_ms: 3_000,
    };
    f.index
        .notify_record("hook", &row.entry_key, 1, &failed)
        .unwrap();
    assert!(f
        .index
        .notify_claim("hook", &row.entry_key, 1, 60_000, 3_000)
        .unwrap());
    let ok = AttemptEnd {
        started_ms: 3_000,
        duration_ms: 5,
        ok: true,
        answer: "HTTP 200: thanks".into(),
        status: DeliveryStatus::Delivered,
        next_ms: 3_000,
    };
    f.index
        .notify_record("hook", &row.entry_key, 2, &ok)
        .unwrap();
    assert!(f.index.notify_due("hook", i64::MAX, 10).unwrap().is_empty());
    let got = f.index.notify_deliveries(Some("hook"), 10).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(
        (
            got[0].status,
            got[0].attempts,
            got[0].idempotency_key.as_str()
        ),
        (DeliveryStatus::Delivered, 2, "dlv_1")
    );
    let attempts = f.index.notify_attempts("hook", &row.entry_key).unwrap();
    let seen: Vec<(i64, bool, &str)> = attempts
        .iter()
        .map(|a| (a.attempt, a.ok, a.answer.as_str()))
        .collect();
    assert_eq!(
        seen,
        [(1, false, "HTTP 503: down"), (2, true, "HTTP 200: thanks")]
    );
}

on_both_backends!(
    inbox_tickets_reads_only_tickets_that_may_wait_on_a_person,
    a_delivery_is_promised_once_and_each_attempt_is_claimed_once
);
