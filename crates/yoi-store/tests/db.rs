//! The database index, outbox and operation records — every case runs on SQLite and on a real
//! PostgreSQL (see `support/pg.rs`), through the same code.

#[path = "support/pg.rs"]
mod pg;

use std::sync::Arc;

use yoi_core::relation::RelationKind;
use yoi_core::state::State;
use yoi_core::{Principal, TicketId, Timestamp};
use yoi_store::db::{DbIndex, ReindexMode};
use yoi_store::ops::{self, CommentRequest, CreateRequest, RelationRequest, TransitionRequest};
use yoi_store::query::{self, ListFilter};
use yoi_store::{Ctx, StoreError, Workspace};

const BRIEF: &str =
    "## Intent\nDo it.\n\n## Acceptance criteria\n- done\n\n## Validation\n`true`\n";

#[derive(Clone, Copy, Debug)]
enum Backend {
    Sqlite,
    Postgres,
}

struct Fx {
    _dir: tempfile::TempDir,
    ws: Workspace,
    index: DbIndex,
    rt: Arc<tokio::runtime::Runtime>,
    url: String,
}

fn rt() -> Arc<tokio::runtime::Runtime> {
    Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    )
}

impl Fx {
    fn new(backend: Backend) -> Fx {
        let dir = tempfile::tempdir().unwrap();
        yoi_store::init(dir.path(), "main").unwrap();
        let mut ws = Workspace::open(dir.path()).unwrap();
        if let Backend::Postgres = backend {
            ws.config.database.url = Some(pg::database());
        }
        let url = ws.database_url();
        let rt = rt();
        let (index, _) = DbIndex::attach(&mut ws, rt.handle().clone()).unwrap();
        Fx {
            _dir: dir,
            ws,
            index,
            rt,
            url,
        }
    }

    /// Open the same workspace and database again, as a new process would.
    fn reopen(&self) -> (Workspace, DbIndex, yoi_store::db::IndexStats) {
        let mut ws = Workspace::open(self.ws.root()).unwrap();
        ws.config.database.url = Some(self.url.clone());
        let (index, stats) = DbIndex::attach(&mut ws, self.rt.handle().clone()).unwrap();
        (ws, index, stats)
    }

    fn create(&self, title: &str, deps: &[&TicketId]) -> TicketId {
        let req = CreateRequest {
            title: title.into(),
            body: BRIEF.into(),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
        };
        ops::create(&self.ws, &alice(), &req).unwrap().ticket
    }

    fn db_list(&self, filter: &ListFilter, search: &[&str]) -> Vec<(String, State, usize)> {
        let words: Vec<String> = search.iter().map(|s| s.to_string()).collect();
        self.index
            .block_on(self.index.db.list_all(filter, &words))
            .unwrap()
            .into_iter()
            .map(|t| (t.title, t.state, t.blockers.len()))
            .collect()
    }

    fn file_list(&self, filter: &ListFilter) -> Vec<(String, State, usize)> {
        query::list(&self.ws, filter)
            .unwrap()
            .into_iter()
            .map(|t| (t.title, t.state, t.blockers.len()))
            .collect()
    }
}

fn alice() -> Ctx {
    Ctx::new(
        Principal::human("alice"),
        Timestamp::parse("2026-11-29T10:00:00Z").unwrap(),
    )
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() {
                super::$name(super::Backend::Sqlite)
            }
            #[test]
            fn postgres() {
                super::$name(super::Backend::Postgres)
            }
        }
    )*};
}

on_both_backends!(
    every_operation_updates_index_and_outbox,
    list_filters_pagination_and_search_match_the_files,
    incremental_reindex_picks_up_hand_edits_and_skips_untouched_files,
    full_reindex_rebuilds_rows_and_restores_missing_outbox_rows,
    deliveries_ack_defer_fail_and_give_up,
    operation_ids_are_recorded_and_refused_on_another_ticket,
    newer_database_is_refused,
);

fn every_operation_updates_index_and_outbox(b: Backend) {
    let fx = Fx::new(b);
    let a = fx.create("Alpha", &[]);
    let z = fx.create("Zulu", &[&a]);
    let plain = TransitionRequest::default();
    ops::mark_ready(&fx.ws, &alice(), a.as_str(), &plain).unwrap();
    ops::queue(&fx.ws, &alice(), a.as_str(), &plain).unwrap();
    ops::comment(
        &fx.ws,
        &alice(),
        z.as_str(),
        &CommentRequest {
            kind: "comment".into(),
            body: "hello".into(),
        },
    )
    .unwrap();
    let rel = RelationRequest {
        kind: RelationKind::Related,
        target: a.to_string(),
        note: None,
    };
    ops::add_relation(&fx.ws, &alice(), z.as_str(), &rel).unwrap();
    let outbox = fx.index.block_on(fx.index.db.outbox()).unwrap();
    let kinds: Vec<(&str, &str)> = outbox
        .iter()
        .map(|o| (o.ticket.as_str(), o.kind.as_str()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (a.as_str(), "ticket_created"),
            (z.as_str(), "ticket_created"),
            (a.as_str(), "ticket_ready"),
            (a.as_str(), "ticket_queued"),
            (z.as_str(), "ticket_commented"),
            (z.as_str(), "relation_changed"),
        ]
    );
    let seqs: Vec<i64> = outbox.iter().map(|o| o.seq).collect();
    assert_eq!(seqs, (1..=6).collect::<Vec<i64>>(), "gap-free sequence");
    // Every outbox row is keyed by the thread event it stands for.
    let thread_ids: Vec<String> = [&a, &z]
        .iter()
        .flat_map(|t| {
            fx.ws
                .read_thread(t)
                .unwrap()
                .events
                .into_iter()
                .filter_map(|e| e.id().map(str::to_string))
        })
        .collect();
    for o in &outbox {
        assert!(
            thread_ids.contains(&o.event_id),
            "{} has no thread event",
            o.event_id
        );
    }
    let all = ListFilter {
        states: Some(State::ALL.to_vec()),
        ..Default::default()
    };
    assert_eq!(fx.db_list(&all, &[]), fx.file_list(&all));
    let row = fx
        .index
        .block_on(fx.index.db.indexed_ticket(&a))
        .unwrap()
        .unwrap();
    assert_eq!(row.state, State::Queued);
}

fn list_filters_pagination_and_search_match_the_files(b: Backend) {
    let fx = Fx::new(b);
    let base = fx.create("Base work 100%", &[]);
    let mut ids = vec![base.clone()];
    for i in 0..7 {
        ids.push(fx.create(&format!("Follow-up {i} needs_base"), &[&base]));
    }
    let plain = TransitionRequest::default();
    ops::mark_ready(&fx.ws, &alice(), ids[1].as_str(), &plain).unwrap();
    ops::mark_ready(&fx.ws, &alice(), base.as_str(), &plain).unwrap();
    for filter in [
        ListFilter::default(),
        ListFilter {
            ready: true,
            ..Default::default()
        },
        ListFilter {
            blocked: true,
            ..Default::default()
        },
        ListFilter {
            states: Some(vec![State::Ready]),
            ..Default::default()
        },
    ] {
        assert_eq!(
            fx.db_list(&filter, &[]),
            fx.file_list(&filter),
            "{filter:?}"
        );
    }
    assert_eq!(
        fx.db_list(
            &ListFilter {
                ready: true,
                ..Default::default()
            },
            &[]
        )
        .len(),
        1
    );
    let blocked = fx
        .index
        .block_on(fx.index.db.list(
            &ListFilter {
                blocked: true,
                ..Default::default()
            },
            &[],
            None,
            100,
        ))
        .unwrap();
    assert_eq!(blocked.tickets[0].blockers[0].ticket, base);
    assert_eq!(blocked.tickets[0].blockers[0].reason_kind, "depends_on");
    assert_eq!(blocked.tickets[0].blockers[0].state, Some(State::Ready));
    // Keyset pagination: pages of three cover everything once, in id order.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = fx
            .index
            .block_on(
                fx.index
                    .db
                    .list(&ListFilter::default(), &[], after.as_ref(), 3),
            )
            .unwrap();
        assert!(page.tickets.len() <= 3);
        seen.extend(page.tickets.iter().map(|t| t.id.clone()));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    assert_eq!(seen, ids);
    // Search: every word must match, case-insensitively; LIKE wildcards are literal.
    assert_eq!(
        fx.db_list(&ListFilter::default(), &["FOLLOW-UP", "3"])
            .len(),
        1
    );
    assert_eq!(fx.db_list(&ListFilter::default(), &["100%"]).len(), 1);
    assert_eq!(fx.db_list(&ListFilter::default(), &["needs_base"]).len(), 7);
    assert_eq!(fx.db_list(&ListFilter::default(), &["needs%base"]).len(), 0);
    assert_eq!(fx.db_list(&ListFilter::default(), &["validation"]).len(), 8);
}

fn incremental_reindex_picks_up_hand_edits_and_skips_untouched_files(b: Backend) {
    let fx = Fx::new(b);
    let a = fx.create("Original", &[]);
    let gone = fx.create("Will be deleted", &[]);
    let (_, _, stats) = fx.reopen();
    assert_eq!(stats.reindexed, 0, "nothing changed");
    // A hand edit, a deleted ticket, a ticket copied in (as a git pull would bring).
    let item = fx.ws.path_of(&a, "item.md");
    let text = std::fs::read_to_string(&item)
        .unwrap()
        .replace("title: Original", "title: Edited by hand");
    std::fs::write(&item, text).unwrap();
    std::fs::remove_dir_all(fx.ws.ticket_dir(&gone)).unwrap();
    let pulled = TicketId::parse("01JDQ5V6W7X8Y9Z0A1B2C3D4E5").unwrap();
    copy_dir(&fx.ws.ticket_dir(&a), &fx.ws.ticket_dir(&pulled));
    let thread = fx.ws.path_of(&pulled, "thread.md");
    let t = std::fs::read_to_string(&thread).unwrap();
    let old_id = fx.ws.read_thread(&a).unwrap().events[0]
        .id()
        .unwrap()
        .to_string();
    std::fs::write(&thread, t.replace(&old_id, "01JDQ5V6W7X8Y9Z0A1B2C3D4Z9")).unwrap();
    let (_, index, stats) = fx.reopen();
    assert_eq!((stats.reindexed, stats.removed), (2, 1), "{stats:?}");
    let rows = index.block_on(index.db.indexed_tickets()).unwrap();
    let titles: Vec<&str> = rows.iter().map(|r| r.title.as_str()).collect();
    assert_eq!(titles, vec!["Edited by hand", "Edited by hand"]);
    let outbox = index.block_on(index.db.outbox()).unwrap();
    assert!(
        outbox
            .iter()
            .any(|o| o.event_id == "01JDQ5V6W7X8Y9Z0A1B2C3D4Z9"),
        "the pulled ticket's event reaches consumers"
    );
    // Touching a file without changing it is not a change.
    let f = std::fs::File::options().append(true).open(&item).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    let (_, _, stats) = fx.reopen();
    assert_eq!(stats.reindexed, 0);
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn full_reindex_rebuilds_rows_and_restores_missing_outbox_rows(b: Backend) {
    let fx = Fx::new(b);
    let a = fx.create("A", &[]);
    let z = fx.create("Z", &[&a]);
    ops::comment(
        &fx.ws,
        &alice(),
        z.as_str(),
        &CommentRequest {
            kind: "comment".into(),
            body: "x".into(),
        },
    )
    .unwrap();
    let before = fx.index.block_on(fx.index.db.outbox()).unwrap();
    let stats = fx.index.reindex(&fx.ws, ReindexMode::Full).unwrap();
    assert_eq!((stats.reindexed, stats.outbox_added), (2, 0));
    assert_eq!(
        fx.index.block_on(fx.index.db.outbox()).unwrap(),
        before,
        "no duplicates"
    );
    // Events recorded while no database was attached (or lost from it) get their rows.
    let mut detached = Workspace::open(fx.ws.root()).unwrap();
    detached.index = None;
    ops::comment(
        &detached,
        &alice(),
        a.as_str(),
        &CommentRequest {
            kind: "comment".into(),
            body: "offline".into(),
        },
    )
    .unwrap();
    let stats = fx.index.reindex(&fx.ws, ReindexMode::Incremental).unwrap();
    assert_eq!((stats.reindexed, stats.outbox_added), (1, 1));
    let after = fx.index.block_on(fx.index.db.outbox()).unwrap();
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after.last().unwrap().kind, "ticket_commented");
    let all = ListFilter {
        states: Some(State::ALL.to_vec()),
        ..Default::default()
    };
    assert_eq!(fx.db_list(&all, &[]), fx.file_list(&all));
}

fn deliveries_ack_defer_fail_and_give_up(b: Backend) {
    let fx = Fx::new(b);
    fx.create("One", &[]);
    fx.create("Two", &[]);
    let db = &fx.index.db;
    let now = 1_000_000;
    fx.index
        .block_on(db.register_consumer("router", now))
        .unwrap();
    let next = |t: i64| fx.index.block_on(db.next_events("router", t, 10)).unwrap();
    assert_eq!(next(now).len(), 2);
    fx.index.block_on(db.ack("router", 1, now)).unwrap();
    fx.index
        .block_on(db.defer("router", 2, now + 500, "waiting on capacity", now))
        .unwrap();
    assert!(
        next(now).is_empty(),
        "acked and deferred rows are not handed out"
    );
    let later = next(now + 500);
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].attempts, 1);
    let d = fx
        .index
        .block_on(db.delivery("router", 2))
        .unwrap()
        .unwrap();
    assert_eq!(
        (d.status.as_str(), d.reason.as_deref()),
        ("deferred", Some("waiting on capacity"))
    );
    // Another consumer has its own deliveries.
    assert_eq!(
        fx.index
            .block_on(db.next_events("sse", now, 10))
            .unwrap()
            .len(),
        2
    );
    // Failures back off and finally give up.
    let mut t = now + 500;
    for _ in 0..yoi_store::db::MAX_ATTEMPTS {
        fx.index.block_on(db.fail("router", 2, "boom", t)).unwrap();
        t += 1 << 30;
    }
    let d = fx
        .index
        .block_on(db.delivery("router", 2))
        .unwrap()
        .unwrap();
    assert_eq!(d.status, "dead");
    assert!(next(t + (1 << 40)).is_empty());
    let stale = fx.index.block_on(db.undelivered_before(i64::MAX)).unwrap();
    assert_eq!(stale, vec![("router".to_string(), 2)]);
}

fn operation_ids_are_recorded_and_refused_on_another_ticket(b: Backend) {
    let fx = Fx::new(b);
    let a = fx.create("A", &[]);
    let z = fx.create("Z", &[]);
    let ctx = alice().with_op(Some("op-1".into()));
    let req = CommentRequest {
        kind: "comment".into(),
        body: "once".into(),
    };
    let first = ops::comment(&fx.ws, &ctx, a.as_str(), &req).unwrap();
    let rec = fx
        .index
        .block_on(fx.index.db.find_operation("op-1"))
        .unwrap()
        .unwrap();
    assert_eq!(rec.outcome, first);
    let again = ops::comment(&fx.ws, &ctx, a.as_str(), &req).unwrap();
    assert!(again.replayed);
    assert_eq!(again.event_id, first.event_id);
    let err = ops::comment(&fx.ws, &ctx, z.as_str(), &req).unwrap_err();
    assert!(matches!(err, StoreError::ConflictingReplay { .. }), "{err}");
    assert_eq!(
        fx.ws.read_thread(&z).unwrap().events.len(),
        1,
        "nothing written on the other ticket"
    );
}

fn newer_database_is_refused(b: Backend) {
    let fx = Fx::new(b);
    fx.index
        .block_on(async {
            sqlx::query("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (999, 'future', TRUE, $1, 0)")
                .bind(vec![0u8; 48])
                .execute(&sqlx::AnyPool::connect(&fx.url).await.unwrap())
                .await
        })
        .unwrap();
    let mut ws = Workspace::open(fx.ws.root()).unwrap();
    ws.config.database.url = Some(fx.url.clone());
    let err = DbIndex::attach(&mut ws, fx.rt.handle().clone()).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::DatabaseTooNew {
                found: 999,
                known: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("newer yoi"));
}
