//! A database-only write drops only the kept answers it changed (`answer_epoch.rs`'s named
//! moves, `read_your_writes.rs`): an assignment created, claimed, given its working folder or
//! finished, or a skill activation recorded, drops its ticket's answer and the lists, and the
//! next answer says what the database now holds; another ticket's answer stays kept. A token
//! revoked drops the kept tokens and no answer about tickets; a move that names nothing drops
//! everything. Counted by how each answer met the kept ones (`Kept`), with a real watch on a
//! real workspace, on SQLite and on PostgreSQL.

use std::sync::Arc;

use yoi_core::{Principal, TicketId, Timestamp};
use yoi_db::read_your_writes::{Kept, ReadYourWrites, View};
use yoi_db::ticket_answers::Made;
use yoi_db::{ActivationRow, Assignment, AssignmentStatus, Db, DbIndex, Finish, PodRow, PodState};
use yoi_db::{IndexStats, Scope};
use yoi_store::ops::{self, CreateRequest};
use yoi_store::{Ctx, Workspace};
use yoi_testkit::on_both_backends;
use yoi_testkit::pg::{self, Backend};

struct Fx {
    _dir: tempfile::TempDir,
    ws: Workspace,
    db: Db,
    rt: Arc<tokio::runtime::Runtime>,
    rw: ReadYourWrites<Vec<u8>>,
    a: TicketId,
    b: TicketId,
}

impl Fx {
    fn new(backend: Backend) -> Fx {
        let dir = tempfile::tempdir().unwrap();
        yoi_store::init(dir.path(), "main").unwrap();
        let mut ws = Workspace::open(dir.path()).unwrap();
        if let Backend::Postgres = backend {
            ws.config.database.url = Some(pg::database());
        }
        let rt = Arc::new(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
        );
        let (index, _): (DbIndex, _) = DbIndex::attach(
            &mut ws,
            yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
        )
        .unwrap();
        let alice = Ctx::new(
            Principal::human("alice"),
            Timestamp::parse("2026-03-01T10:00:00Z").unwrap(),
        );
        let create = |title: &str| {
            let req = CreateRequest {
                title: title.into(),
                body: "## Intent\nx\n".into(),
                depends_on: Vec::new(),
            };
            ops::create(&ws, &alice, &req).unwrap().ticket
        };
        let (a, b) = (create("A"), create("B"));
        let rw = rt.block_on(async { ReadYourWrites::start(&ws) });
        Fx {
            _dir: dir,
            db: index.db.clone(),
            ws,
            rt,
            rw,
            a,
            b,
        }
    }

    fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.rt.block_on(f)
    }

    /// Settle as a request does: every write that finished before is seen.
    fn settle(&self) -> View {
        let (ws, db) = (&self.ws, &self.db);
        self.run(self.rw.settle(ws, db, |ids| async move {
            let ids = match ids {
                Some(ids) => ids,
                None => ws.ticket_ids()?,
            };
            let reindexed = db.refresh(ws, &ids, 0).await?;
            Ok(IndexStats {
                reindexed,
                ..IndexStats::default()
            })
        }))
        .unwrap()
    }

    /// What the database says of `t`: its attempts' statuses and working folders, and its
    /// activations — what a ticket's answer shows of the database.
    fn facts(&self, t: &TicketId) -> String {
        let rows = self.run(self.db.assignments_of(t.as_str())).unwrap();
        let acts = self.run(self.db.activations_of_ticket(t.as_str())).unwrap();
        let rows: Vec<String> = rows
            .iter()
            .map(|r| format!("{}:{:?}", r.status.as_str(), r.workdir))
            .collect();
        format!("{rows:?} activations {}", acts.len())
    }

    /// The answers about `a`, `b` and a list, as one request each would meet them.
    fn ask(&self) -> [(String, Kept); 3] {
        let view = self.settle();
        let one = |key: &str, made: Made, value: String| {
            let (bytes, kept) = self
                .run(
                    self.rw
                        .answer_about_tickets(view, key.to_string(), || async move {
                            Ok::<_, ()>((value.into_bytes(), made))
                        }),
                )
                .unwrap();
            (String::from_utf8(bytes).unwrap(), kept)
        };
        let all = format!("{} | {}", self.facts(&self.a), self.facts(&self.b));
        [
            one(
                "a",
                Made::Tickets(vec![self.a.clone()]),
                self.facts(&self.a),
            ),
            one(
                "b",
                Made::Tickets(vec![self.b.clone()]),
                self.facts(&self.b),
            ),
            one("list", Made::AnyTicket, all),
        ]
    }

    /// After a write: which of (a, b, list) were computed again, and each answer is what the
    /// database says now.
    fn after_write(&self, what: &str, fresh: [bool; 3]) {
        let got = self.ask();
        let want = [
            self.facts(&self.a),
            self.facts(&self.b),
            format!("{} | {}", self.facts(&self.a), self.facts(&self.b)),
        ];
        for (i, ((answer, kept), want)) in got.iter().zip(&want).enumerate() {
            let name = ["a", "b", "list"][i];
            assert_eq!(answer, want, "{what}: the answer {name} is current");
            let expected = if fresh[i] { Kept::Miss } else { Kept::Hit };
            assert_eq!(*kept, expected, "{what}: the answer {name}");
        }
        // Asked again with nothing written: all kept.
        for (i, (_, kept)) in self.ask().iter().enumerate() {
            assert_eq!(*kept, Kept::Hit, "{what}: answer {i} asked again");
        }
    }
}

fn attempt(id: &str, ticket: &TicketId) -> Assignment {
    Assignment {
        id: id.into(),
        ticket: ticket.to_string(),
        step: "implement".into(),
        role: "coder".into(),
        attempt: 1,
        fence: 1,
        status: AssignmentStatus::Pending,
        created_ms: 1,
        updated_ms: 1,
        ..Assignment::default()
    }
}

fn activation(id: &str, ticket: Option<&TicketId>) -> ActivationRow {
    ActivationRow {
        id: id.into(),
        skill: "s".into(),
        digest: "d".into(),
        source: "builtin".into(),
        who: "alice".into(),
        ticket: ticket.map(|t| t.to_string()),
        assignment: None,
        at_ms: 1,
    }
}

on_both_backends!(a_database_only_write_drops_only_the_answers_it_changed);

fn a_database_only_write_drops_only_the_answers_it_changed(b: Backend) {
    let fx = Fx::new(b);
    for (_, kept) in fx.ask() {
        assert_eq!(kept, Kept::Miss, "first asked");
    }
    for (_, kept) in fx.ask() {
        assert_eq!(kept, Kept::Hit, "asked again");
    }
    // A pod registering writes no row the answers read.
    let pod = PodRow {
        id: "pod1".into(),
        name: "pod1".into(),
        role: "coder".into(),
        host: "h".into(),
        pid: None,
        profile: None,
        state: PodState::Idle,
        registered_ms: 1,
        heartbeat_ms: 1,
        assignment: None,
        token_id: "tok".into(),
        sandbox: None,
        provider: None,
    };
    fx.run(fx.db.register_pod(&pod)).unwrap();

    fx.run(fx.db.create_assignment(&attempt("x1", &fx.a)))
        .unwrap();
    fx.after_write("an attempt of a created", [true, false, true]);
    let claimed = fx
        .run(fx.db.claim_assignment("coder", "pod1", i64::MAX / 2, 2))
        .unwrap()
        .expect("the attempt is claimed");
    fx.after_write("the attempt claimed", [true, false, true]);
    assert!(fx
        .run(
            fx.db
                .set_assignment_workdir("x1", claimed.fence, "/work/x1", None)
        )
        .unwrap());
    fx.after_write("its working folder set", [true, false, true]);
    let done = Finish {
        status: AssignmentStatus::Completed,
        result: Some("{}".into()),
        usage: None,
        error: None,
        log_path: None,
    };
    let finished = fx
        .run(
            fx.db
                .finish_assignment("x1", claimed.fence, Some("pod1"), &done, None, 3),
        )
        .unwrap();
    assert!(finished.is_some());
    fx.after_write("the attempt finished", [true, false, true]);
    fx.run(fx.db.record_activation(&activation("act1", Some(&fx.b))))
        .unwrap();
    fx.after_write("a skill activated on b", [false, true, true]);

    // A token kept, then revoked: the kept token goes, no answer about tickets does.
    let (token, _) = fx
        .run(fx.db.create_token("t1", &Scope::Read, "alice", 1))
        .unwrap();
    let view = fx.settle();
    fx.rw.keep_token(view, "hash1".into(), token);
    assert!(
        fx.rw.token(fx.settle(), "hash1").is_some(),
        "the token is kept"
    );
    assert!(fx.run(fx.db.revoke_token("t1", 4)).unwrap());
    assert!(
        fx.rw.token(fx.settle(), "hash1").is_none(),
        "a revoked token is looked up again"
    );
    fx.after_write("a token revoked", [false, false, false]);

    // A move that names nothing (an activation of no ticket) drops every answer.
    fx.run(fx.db.record_activation(&activation("act2", None)))
        .unwrap();
    fx.after_write("an activation of no ticket", [true, true, true]);
}
