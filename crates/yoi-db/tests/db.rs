//! The database index, outbox and operation records — every case runs on SQLite and on a real
//! PostgreSQL (see `yoi_testkit::pg`), through the same code.

use yoi_testkit::on_both_backends;
use yoi_testkit::pg::{self, Backend};

use std::sync::Arc;

use yoi_core::finding::Finding;
use yoi_core::relation::RelationKind;
use yoi_core::state::State;
use yoi_core::{Principal, TicketId, Timestamp};
use yoi_db::{DbIndex, ReindexMode};
use yoi_doctor as doctor;
use yoi_store::ops::TransitionRequest;
use yoi_store::ops::{
    self, CommentRequest, CreateRequest, EditRequest, PlanRequest, RelationRequest,
};
use yoi_store::query::{self, ListFilter};
use yoi_store::{Ctx, StoreError, Workspace};

const BRIEF: &str =
    "## Intent\nDo it.\n\n## Acceptance criteria\n- done\n\n## Validation\n`true`\n";

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
        // The workspace's own schema on PostgreSQL, for the raw connections below too.
        let url = yoi_db::schema_url(&ws.database_url(), ws.config.workspace.id.as_deref());
        let rt = rt();
        let (index, _) = DbIndex::attach(
            &mut ws,
            yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
        )
        .unwrap();
        Fx {
            _dir: dir,
            ws,
            index,
            rt,
            url,
        }
    }

    /// Open the same workspace and database again, as a new process would.
    fn reopen(&self) -> (Workspace, DbIndex, yoi_db::IndexStats) {
        let mut ws = Workspace::open(self.ws.root()).unwrap();
        ws.config.database.url = Some(self.url.clone());
        let (index, stats) = DbIndex::attach(
            &mut ws,
            yoi_db::Bridge::new(self.rt.handle().clone(), yoi_testkit::wall_ms),
        )
        .unwrap();
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
        self.rt
            .block_on(self.index.db.list_all(filter, &words))
            .unwrap()
            .into_iter()
            .map(|t| (t.title, t.state, t.blockers.len()))
            .collect()
    }

    /// Run statements against the database behind the index, to break it on purpose.
    fn sql(&self, statements: &[String]) {
        self.rt.block_on(async {
            let pool = sqlx::AnyPool::connect(&self.url).await.unwrap();
            for s in statements {
                sqlx::query(s)
                    .execute(&pool)
                    .await
                    .unwrap_or_else(|e| panic!("{s}: {e}"));
            }
            pool.close().await;
        })
    }

    fn index_findings(&self, now_ms: i64) -> Vec<Finding> {
        doctor::index_findings(&self.index, &self.ws, now_ms).unwrap()
    }

    /// The id of the first event in a ticket's thread.
    fn first_event(&self, id: &TicketId) -> String {
        self.ws.read_thread(id).unwrap().events[0]
            .id()
            .unwrap()
            .to_string()
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

on_both_backends!(
    every_operation_updates_index_and_outbox,
    list_filters_pagination_and_search_match_the_files,
    incremental_reindex_picks_up_hand_edits_and_skips_untouched_files,
    full_reindex_rebuilds_rows_and_restores_missing_outbox_rows,
    deliveries_ack_defer_fail_and_give_up,
    operation_ids_are_recorded_and_refused_on_another_ticket,
    newer_database_is_refused,
    doctor_finds_nothing_in_the_index_of_a_healthy_workspace,
    doctor_reports_each_kind_of_index_drift_and_fix_rebuilds_the_index,
    doctor_reports_undelivered_events_per_consumer_and_dead_deliveries,
    open_assignments_exist_only_for_work_in_progress,
    board_reads_count_lanes_and_give_each_card_its_facts,
    the_bulk_rebuild_writes_the_rows_the_per_ticket_writer_wrote,
    a_group_commit_lands_every_mutation_and_indexes_them_together,
    a_group_commit_holds_the_lock_and_one_that_dies_replaces_no_file,
    a_group_commit_adds_only_new_events_yet_reads_hand_edits_whole,
    file_fingerprints_read_back_whole_in_batches_of_any_size,
    linked_folders_and_damaged_artifacts_are_broken_until_repaired,
    a_long_thread_arriving_by_hand_is_indexed_whole_and_the_board_reads_its_latest,
    a_page_of_a_thread_from_the_index_is_the_page_the_file_gives,
);

/// The rows of one ticket's events, in thread order, as the index holds them.
fn event_rows(
    fx: &Fx,
    ticket: &TicketId,
) -> Vec<(String, i64, String, Option<String>, String, String)> {
    use sqlx::Row;
    fx.rt.block_on(async {
        let pool = sqlx::AnyPool::connect(&fx.url).await.unwrap();
        let rows = sqlx::query(
            "SELECT id, position, kind, at, attrs, body FROM events WHERE ticket_id = $1 ORDER BY position",
        )
        .bind(ticket.as_str())
        .fetch_all(&pool)
        .await
        .unwrap();
        pool.close().await;
        rows.iter()
            .map(|r| {
                (
                    r.get(0),
                    r.get(1),
                    r.get(2),
                    r.get(3),
                    r.get(4),
                    r.get(5),
                )
            })
            .collect()
    })
}

/// Issue 45: a thread that arrives by hand holding thousands of events (as a pull brings them)
/// is indexed by the next incremental pass exactly as a full rebuild indexes it, every event
/// with one outbox row and the rows numbered without a gap — an event already in the outbox
/// (moved by hand from another ticket) keeps its row there. The board's facts are the ticket's
/// latest: its latest `state_changed`, and the orchestrator's latest decision, not a person's
/// later one. Routing's events of a ticket that is not queued are all of its routing events.
fn a_long_thread_arriving_by_hand_is_indexed_whole_and_the_board_reads_its_latest(b: Backend) {
    use yoi_core::decision::RoutingDecision;
    use yoi_core::thread::{render_thread, Event, EventKind};
    let fx = Fx::new(b);
    let long = fx.create("Long-lived", &[]);
    let other = fx.create("Other", &[]);
    let moved = fx.first_event(&other);
    let orchestrator = Principal::orchestrator().author();
    let waiting = RoutingDecision::WaitingCapacity {
        in_progress: 1,
        max: 1,
    };
    let n = 3000;
    let mut events: Vec<Event> = (0..n)
        .map(|i| {
            let e = match i % 100 {
                10 => Event::new(EventKind::Decision, &waiting.render_event())
                    .with_attr("author", orchestrator.clone()),
                20 => Event::new(EventKind::StateChanged, "Moved.")
                    .with_attr("author", "alice")
                    .with_attr("from", "planning")
                    .with_attr("to", "ready"),
                _ => Event::new(EventKind::Comment, &format!("Note {i}."))
                    .with_attr("author", "alice"),
            };
            e.with_attr("id", format!("01KTHREAD{i:017}")).with_attr(
                "at",
                format!(
                    "2026-12-01T{:02}:{:02}:{:02}Z",
                    i / 3600,
                    i / 60 % 60,
                    i % 60
                ),
            )
        })
        .collect();
    let ready = RoutingDecision::ImplementationReady {
        branch: "yoi/long".into(),
        base_commit: "0000000000000000000000000000000000000000".into(),
    };
    events.push(
        Event::new(EventKind::Decision, &ready.render_event())
            .with_attr("id", "01KTHREADLATESTDECISION00")
            .with_attr("author", orchestrator.clone())
            .with_attr("at", "2026-12-02T00:00:00Z"),
    );
    events.push(
        Event::new(EventKind::Decision, &waiting.render_event())
            .with_attr("id", "01KTHREADPERSONDECISION00")
            .with_attr("author", "alice")
            .with_attr("at", "2026-12-02T00:00:01Z"),
    );
    events.push(
        Event::new(EventKind::Comment, "Moved here by hand.")
            .with_attr("id", moved.clone())
            .with_attr("author", "alice"),
    );
    let path = fx.ws.path_of(&long, "thread.md");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push('\n');
    text.push_str(&render_thread(&events));
    std::fs::write(&path, text).unwrap();
    let thread = fx.ws.read_thread(&long).unwrap();
    assert!(thread.issues.is_empty(), "{:?}", thread.issues);
    assert_eq!(thread.events.len(), 1 + n as usize + 3);

    let (ws, index, stats) = fx.reopen();
    assert_eq!(stats.reindexed, 1, "{stats:?}");
    let incremental = event_rows(&fx, &long);
    assert_eq!(
        incremental.len(),
        thread.events.len() - 1,
        "every event but the one indexed under the other ticket"
    );
    let outbox = |fx: &Fx| -> (i64, i64, i64, i64) {
        use sqlx::Row;
        fx.rt.block_on(async {
            let pool = sqlx::AnyPool::connect(&fx.url).await.unwrap();
            let r = sqlx::query("SELECT COUNT(*), MIN(seq), MAX(seq) FROM outbox")
                .fetch_one(&pool)
                .await
                .unwrap();
            let m =
                sqlx::query("SELECT COUNT(*) FROM outbox WHERE event_id = $1 AND ticket_id = $2")
                    .bind(moved.clone())
                    .bind(other.as_str())
                    .fetch_one(&pool)
                    .await
                    .unwrap();
            pool.close().await;
            (r.get(0), r.get(1), r.get(2), m.get(0))
        })
    };
    let (count, first, last, moved_rows) = outbox(&fx);
    assert_eq!(last - first + 1, count, "outbox numbers without a gap");
    assert_eq!(moved_rows, 1, "the moved event keeps its one row");
    let keys: std::collections::BTreeSet<String> =
        incremental.iter().map(|r| r.0.clone()).collect();
    assert_eq!(keys.len(), incremental.len());

    let facts = fx
        .rt
        .block_on(index.db.card_facts(std::slice::from_ref(&long)))
        .unwrap();
    let f = &facts[&long];
    assert_eq!(f.last_decision.as_deref(), Some("implementation_ready"));
    let latest_move = thread
        .events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::StateChanged)
        .and_then(|e| e.get("at"))
        .map(str::to_string);
    assert_eq!(f.state_since, latest_move);
    assert_eq!(f.state_since.as_deref(), Some("2026-12-01T00:48:40Z"));

    let routing = fx
        .rt
        .block_on(index.db.routing_events(&long))
        .unwrap()
        .unwrap();
    let expected: Vec<&Event> = thread
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::StateChanged
                    | EventKind::Retry
                    | EventKind::Attention
                    | EventKind::Decision
            )
        })
        .collect();
    assert_eq!(routing.len(), expected.len());
    for (got, want) in routing.iter().zip(&expected) {
        assert_eq!(
            (got.kind.as_str(), got.id(), got.author(), &got.body),
            (want.kind.as_str(), want.id(), want.author(), &want.body)
        );
    }

    fx.rt
        .block_on(index.db.reindex(&ws, ReindexMode::Full, 0))
        .unwrap();
    // Which ticket's row a duplicated event id ends under is the rebuild's order, not this
    // change's: the moved event is left out of the comparison.
    let mut rebuilt = event_rows(&fx, &long);
    rebuilt.retain(|r| r.0 != moved);
    assert!(
        rebuilt == incremental,
        "the incremental pass wrote what the full rebuild writes"
    );
    assert_eq!(
        outbox(&fx),
        (count, first, last, moved_rows),
        "nothing added"
    );
}

/// The answer of `limit` events before `before` as the thread file gives it (the reference the
/// index's page must equal).
fn page_from_file(
    ws: &Workspace,
    index: &DbIndex,
    id: &TicketId,
    limit: usize,
    before: Option<usize>,
) -> serde_json::Value {
    use yoi_db::ticket_detail::{ticket_detail_parts, EventDetail, EventWindow};
    let (mut d, events) = ticket_detail_parts(ws, Some(index), id.as_str()).unwrap();
    let range = EventWindow::Latest { limit, before }.range(events.len());
    d.events_before = (range.start > 0).then_some(range.start);
    d.events = events[range].iter().map(EventDetail::from).collect();
    serde_json::to_value(d).unwrap()
}

/// The index's page of the same, `None` when the index declines.
fn page_from_index(
    ws: &Workspace,
    index: &DbIndex,
    id: &TicketId,
    limit: usize,
    before: Option<usize>,
) -> Option<serde_json::Value> {
    yoi_db::ticket_detail::ticket_detail_page(ws, index, id, limit, before)
        .unwrap()
        .map(|d| serde_json::to_value(d).unwrap())
}

/// Issue 45: the API's page of a thread comes from the index's rows, and is then, field for
/// field, the page the file gives — for every window (the latest, walked back with the cursor,
/// before the start, past the end), events without an id, repeated and quoted attributes,
/// unknown kinds, and after a comment's group commit appended to the rows. The index declines
/// (and the file answers) while the thread changed behind it, for a page holding an event
/// whose id another ticket's row holds, and for a thread with an issue.
fn a_page_of_a_thread_from_the_index_is_the_page_the_file_gives(b: Backend) {
    use yoi_core::thread::{render_thread, Event, EventKind};
    let fx = Fx::new(b);
    let long = fx.create("Long-lived", &[]);
    let other = fx.create("Other", &[&long]);
    let moved = fx.first_event(&other);
    let n = 400;
    let events: Vec<Event> = (0..n)
        .map(|i| {
            let e = match i % 7 {
                0 => Event::new(EventKind::parse("custom_kind"), "Unknown kind.")
                    .with_attr("author", "alice")
                    .with_attr("note", "a \"quoted\" value -- with --> in it"),
                1 => {
                    let mut e = Event::new(EventKind::Comment, "Repeated attributes.")
                        .with_attr("author", "bob");
                    e.attrs.push(("note".into(), "first".into()));
                    e.attrs.push(("note".into(), "second".into()));
                    e
                }
                2 => Event::new(EventKind::Comment, "").with_attr("author", "alice"),
                _ => Event::new(EventKind::Comment, &format!("Note {i}.\n\n---\nnot a rule"))
                    .with_attr("author", "alice"),
            };
            let e = e.with_attr("at", format!("2026-12-01T00:{:02}:{:02}Z", i / 60, i % 60));
            // Every 50th event was written without an id (indexed by its position).
            match i % 50 {
                49 => e,
                _ => e.with_attr("id", format!("01KPAGE{i:019}")),
            }
        })
        .collect();
    let path = fx.ws.path_of(&long, "thread.md");
    let append = |events: &[Event]| {
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push('\n');
        text.push_str(&render_thread(events));
        std::fs::write(&path, text).unwrap();
    };
    append(&events[..n / 2]);
    // Behind the index's back: it declines until it has read the file again.
    assert_eq!(page_from_index(&fx.ws, &fx.index, &long, 100, None), None);
    append(&events[n / 2..]);
    let (ws, index, _) = fx.reopen();
    let total = ws.read_thread(&long).unwrap().events.len();
    assert_eq!(total, 1 + n);

    let same = |limit: usize, before: Option<usize>| {
        let want = page_from_file(&ws, &index, &long, limit, before);
        let got = page_from_index(&ws, &index, &long, limit, before);
        assert_eq!(got.as_ref(), Some(&want), "limit {limit} before {before:?}");
        want
    };
    let mut cursor = same(100, None)["events_before"].as_u64();
    let mut walked = 100;
    while let Some(before) = cursor {
        let page = same(100, Some(before as usize));
        walked += page["events"].as_array().unwrap().len();
        cursor = page["events_before"].as_u64();
    }
    assert_eq!(walked, total);
    for (limit, before) in [
        (1, None),
        (1000, None),
        (7, Some(0)),
        (7, Some(3)),
        (2, Some(total + 50)),
        (100, Some(usize::MAX)),
    ] {
        same(limit, before);
    }
    // The default answer through the public entry point is the same page.
    let window = yoi_db::ticket_detail::EventWindow::Latest {
        limit: 100,
        before: None,
    };
    let answer =
        yoi_db::ticket_detail::ticket_detail_window(&ws, Some(&index), long.as_str(), window)
            .unwrap();
    assert_eq!(
        serde_json::to_value(answer).unwrap(),
        page_from_file(&ws, &index, &long, 100, None)
    );

    // A comment's group commit appends to the rows; the page still equals the file's.
    ops::comment(
        &ws,
        &alice(),
        long.as_str(),
        &CommentRequest {
            kind: "comment".into(),
            body: "After the pull.".into(),
        },
    )
    .unwrap();
    same(100, None);

    // An event whose id the other ticket's row holds is not indexed here: a page holding it
    // is read from the file, a page before it still from the index.
    append(&[Event::new(EventKind::Comment, "Moved here by hand.")
        .with_attr("id", moved)
        .with_attr("author", "alice")]);
    let (ws, index, _) = fx.reopen();
    assert_eq!(page_from_index(&ws, &index, &long, 100, None), None);
    let answer =
        yoi_db::ticket_detail::ticket_detail_window(&ws, Some(&index), long.as_str(), window)
            .unwrap();
    assert_eq!(
        serde_json::to_value(answer).unwrap(),
        page_from_file(&ws, &index, &long, 100, None)
    );
    same(100, Some(total));

    // A torn append: the thread has an issue, which only the file can name.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("\n<!-- event: comment id: 01KPAGETORN00000000000000 author: alice -->\n\nhalf");
    std::fs::write(&path, text).unwrap();
    let (ws, index, _) = fx.reopen();
    assert_eq!(page_from_index(&ws, &index, &long, 100, Some(10)), None);
    let answer =
        yoi_db::ticket_detail::ticket_detail_window(&ws, Some(&index), long.as_str(), window)
            .unwrap();
    assert!(!answer.thread_issues.is_empty());
}

/// A ticket folder or artifacts/ folder replaced by a symbolic link, and a relations.json that
/// no longer parses, each make their ticket broken at the next reindex (a broken_tickets row,
/// no tickets row), are not read again while unchanged, and are tickets again once repaired.
fn linked_folders_and_damaged_artifacts_are_broken_until_repaired(b: Backend) {
    let fx = Fx::new(b);
    let healthy = fx.create("Healthy", &[]);
    let folder = fx.create("Its folder becomes a link", &[]);
    let artifacts = fx.create("Its artifacts become a link", &[]);
    let relations = fx.create("Its relations get damaged", &[]);
    let outside = tempfile::tempdir().unwrap();
    let linked = [
        (fx.ws.ticket_dir(&folder), outside.path().join("folder")),
        (
            fx.ws.path_of(&artifacts, "artifacts"),
            outside.path().join("artifacts"),
        ),
    ];
    for (path, moved) in &linked {
        std::fs::rename(path, moved).unwrap();
        std::os::unix::fs::symlink(moved, path).unwrap();
    }
    let damaged = fx.ws.path_of(&relations, "artifacts/relations.json");
    std::fs::write(&damaged, "{ \"version\": 1, oops").unwrap();

    let (_, index, stats) = fx.reopen();
    assert_eq!(stats.reindexed, 3, "{stats:?}");
    let mut want = vec![folder.clone(), artifacts.clone(), relations.clone()];
    want.sort();
    assert_eq!(fx.rt.block_on(index.db.broken_ids()).unwrap(), want);
    let rows = fx.rt.block_on(index.db.ticket_rows()).unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, [healthy.as_str()]);
    let findings = doctor::index_findings(&index, &fx.ws, yoi_testkit::wall_ms()).unwrap();
    let drift: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.check.starts_with("index."))
        .collect();
    assert!(drift.is_empty(), "doctor agrees with the index: {drift:?}");
    let (_, _, stats) = fx.reopen();
    assert_eq!(
        stats.reindexed, 0,
        "unchanged links are not looked at again"
    );

    for (path, moved) in &linked {
        std::fs::remove_file(path).unwrap();
        std::fs::rename(moved, path).unwrap();
    }
    std::fs::remove_file(&damaged).unwrap();
    let (_, index, stats) = fx.reopen();
    assert_eq!(stats.reindexed, 3, "{stats:?}");
    assert!(fx.rt.block_on(index.db.broken_ids()).unwrap().is_empty());
    assert_eq!(fx.rt.block_on(index.db.ticket_rows()).unwrap().len(), 4);
}

/// The fingerprints an incremental reindex reads, a batch at a time, are the rows: every one,
/// once, whatever the batch size (each batch continues after the last key of the one before).
fn file_fingerprints_read_back_whole_in_batches_of_any_size(b: Backend) {
    let fx = Fx::new(b);
    for n in 0..5 {
        fx.create(&format!("ticket {n}"), &[]);
    }
    let rows: Vec<(String, String, i64, i64, String)> = fx
        .rt
        .block_on(async {
            let pool = sqlx::AnyPool::connect(&fx.url).await.unwrap();
            let rows = sqlx::query_as(
                "SELECT ticket_id, name, size, mtime_ns, hash FROM ticket_files \
                 ORDER BY ticket_id, name",
            )
            .fetch_all(&pool)
            .await;
            pool.close().await;
            rows
        })
        .unwrap();
    assert!(rows.len() >= 10, "{rows:?}");
    let n = rows.len();
    for batch in [1, 2, 3, n - 1, n, n + 1, 4096] {
        let got: Vec<(String, String, i64, i64, String)> = fx
            .rt
            .block_on(fx.index.db.file_fingerprints(batch))
            .unwrap()
            .into_iter()
            .map(|(t, f, size, mtime, hash)| (t, f.to_string(), size, mtime, hash))
            .collect();
        assert_eq!(got, rows, "batches of {batch}");
    }
}

fn comment_job(ctx: Ctx, ticket: &str, body: &str) -> yoi_store::group::Job {
    let (ticket, req) = (
        ticket.to_string(),
        CommentRequest {
            kind: "comment".into(),
            body: body.into(),
        },
    );
    Box::new(move |ws: &Workspace| ops::comment(ws, &ctx, &ticket, &req))
}

/// An edit (which rewrites item.md, unlike a comment) as a group job.
fn edit_job(ctx: Ctx, ticket: &str, req: EditRequest) -> yoi_store::group::Job {
    let ticket = ticket.to_string();
    Box::new(move |ws: &Workspace| ops::edit(ws, &ctx, &ticket, &req))
}

fn at_minute(m: i64) -> Ctx {
    let t0 = Timestamp::parse("2026-11-29T10:00:00Z").unwrap();
    Ctx::new(
        Principal::human("alice"),
        Timestamp::from_unix_millis(t0.unix_millis() + m * 60_000),
    )
}

fn with_op(mut ctx: Ctx, op: &str) -> Ctx {
    ctx.op = Some(op.into());
    ctx
}

fn comment_bodies(ws: &Workspace, id: &TicketId) -> Vec<String> {
    let thread = ws.read_thread(id).unwrap();
    assert!(thread.issues.is_empty(), "{:?}", thread.issues);
    thread.events[1..]
        .iter()
        .filter(|e| e.kind.as_str() == "comment")
        .map(|e| e.body.clone())
        .collect()
}

fn a_group_commit_lands_every_mutation_and_indexes_them_together(b: Backend) {
    let fx = Fx::new(b);
    let a = fx.create("Alpha", &[]);
    let z = fx.create("Zulu", &[]);
    let jobs = vec![
        comment_job(with_op(at_minute(1), "op-1"), a.as_str(), "one"),
        comment_job(at_minute(2), z.as_str(), "two"),
        comment_job(at_minute(3), a.as_str(), "three"),
        // The same operation again, before the index has heard of the first.
        comment_job(with_op(at_minute(4), "op-1"), a.as_str(), "one"),
        // The same id for another ticket: refused, as it is once indexed.
        comment_job(with_op(at_minute(5), "op-1"), z.as_str(), "one"),
        comment_job(at_minute(6), "01JNOSUCHTICKET000000000000", "lost"),
        // Two edits of Alpha's item.md: the second builds on the first's waiting file.
        edit_job(
            at_minute(7),
            a.as_str(),
            EditRequest {
                title: Some("Alpha, renamed".into()),
                body: None,
            },
        ),
        edit_job(
            at_minute(8),
            a.as_str(),
            EditRequest {
                title: None,
                body: Some("A new body.".into()),
            },
        ),
    ];
    let out = yoi_store::group::run(&fx.ws, jobs);
    assert_eq!(out.len(), 8);
    assert!(out[6].is_ok() && out[7].is_ok(), "{:?}", &out[6..]);
    let ok: Vec<&yoi_store::Outcome> = out[..4].iter().map(|o| o.as_ref().unwrap()).collect();
    assert!(ok.iter().all(|o| o.index_error.is_none()), "{ok:?}");
    assert_eq!(
        ok.iter().map(|o| o.replayed).collect::<Vec<_>>(),
        [false, false, false, true]
    );
    assert_eq!(
        ok[3].event_id, ok[0].event_id,
        "the replay names the first event"
    );
    assert!(
        matches!(out[4], Err(StoreError::ConflictingReplay { .. })),
        "{:?}",
        out[4]
    );
    assert!(out[5].is_err());
    // Both mutations of Alpha are in its files: the second built on the first.
    assert_eq!(comment_bodies(&fx.ws, &a), ["one", "three"]);
    assert_eq!(comment_bodies(&fx.ws, &z), ["two"]);
    let item = fx.ws.read_item(&a).unwrap();
    assert_eq!(
        item.updated_at,
        at_minute(8).now,
        "item.md is the last replacement"
    );
    assert_eq!(item.title, "Alpha, renamed");
    assert_eq!(item.body_text().trim(), "A new body.");
    // Zulu's item.md was never rewritten: a comment only appends.
    assert_eq!(
        fx.ws.read_item(&z).unwrap().updated_at,
        fx.ws.read_item(&z).unwrap().created_at
    );
    for id in [&a, &z] {
        let dir = fx.ws.tickets_dir().join(id.as_str());
        assert!(yoi_store::fsutil::temp_leftovers(&dir).is_empty());
    }
    // The index read the files once they were in place, and recorded the operation.
    assert!(
        fx.index_findings(0).is_empty(),
        "{:?}",
        fx.index_findings(0)
    );
    // In the rows the per-ticket writer makes.
    let grouped = fx.rows_as_rewritten(&[&a, &z]);
    // Every event has one outbox row, numbered without gaps.
    let seqs: Vec<usize> = grouped
        .iter()
        .filter_map(|r| r.strip_prefix("outbox: "))
        .map(|r| r.split(" | ").next().unwrap().parse().unwrap())
        .collect();
    let events = grouped.iter().filter(|r| r.starts_with("events: ")).count();
    assert_eq!(seqs, (1..=events).collect::<Vec<_>>());
    let replay = ops::comment(
        &fx.ws,
        &with_op(at_minute(7), "op-1"),
        a.as_str(),
        &CommentRequest {
            kind: "comment".into(),
            body: "one".into(),
        },
    )
    .unwrap();
    assert!(replay.replayed);
    assert_eq!(comment_bodies(&fx.ws, &a), ["one", "three"]);
}

fn a_group_commit_adds_only_new_events_yet_reads_hand_edits_whole(b: Backend) {
    let fx = Fx::new(b);
    let a = fx.create("Alpha", &[]);
    let z = fx.create("Zulu", &[]);
    let y = fx.create("Yankee", &[]);
    let file = |id: &TicketId, name: &str| fx.ws.tickets_dir().join(id.as_str()).join(name);
    // Behind the index's back: a line added to the body of Zulu's first event, and Yankee's
    // title changed in item.md.
    let thread = file(&z, "thread.md");
    let text = std::fs::read_to_string(&thread).unwrap();
    let end = text.find("\n---\n").unwrap();
    let edited = format!("{}\nAdded by hand.{}", &text[..end], &text[end..]);
    std::fs::write(&thread, edited).unwrap();
    let item = file(&y, "item.md");
    let text = std::fs::read_to_string(&item).unwrap();
    std::fs::write(
        &item,
        text.replace("title: Yankee", "title: Yankee, by hand"),
    )
    .unwrap();

    let out = yoi_store::group::run(
        &fx.ws,
        vec![
            comment_job(at_minute(1), a.as_str(), "one"),
            comment_job(at_minute(2), z.as_str(), "two"),
            comment_job(at_minute(3), y.as_str(), "three"),
            comment_job(at_minute(4), a.as_str(), "four"),
        ],
    );
    for o in &out {
        let o = o.as_ref().unwrap();
        assert!(o.index_error.is_none(), "{o:?}");
    }
    // The index holds what rewriting each ticket from its files gives: Alpha's two new
    // events added, Zulu and Yankee read whole with their hand edits.
    assert!(
        fx.index_findings(0).is_empty(),
        "{:?}",
        fx.index_findings(0)
    );
    let grouped = fx.rows_as_rewritten(&[&a, &z, &y]);
    let row = |table: &str, has: &[&str]| {
        grouped
            .iter()
            .filter(|r| r.starts_with(table) && has.iter().all(|h| r.contains(h)))
            .count()
    };
    assert_eq!(row("events: ", &[z.as_str(), "Added by hand."]), 1);
    assert_eq!(row("tickets: ", &["Yankee, by hand"]), 1);
    // Each ticket's time of last change is its newest comment; item.md kept its own.
    let minute = |m: i64| at_minute(m).now.to_string();
    assert_eq!(row("tickets: ", &[a.as_str(), &minute(4)]), 1);
    assert_eq!(row("tickets: ", &[y.as_str(), &minute(3)]), 1);
    assert_eq!(row("events: ", &[a.as_str(), "comment"]), 2);
    assert_eq!(row("outbox: ", &[a.as_str(), "ticket_commented"]), 2);
    assert_eq!(
        fx.ws.read_item(&a).unwrap().updated_at,
        fx.ws.read_item(&a).unwrap().created_at
    );
}

fn a_group_commit_holds_the_lock_and_one_that_dies_replaces_no_file(b: Backend) {
    let fx = Fx::new(b);
    let a = fx.create("Alpha", &[]);
    let lock_file = fx.ws.local_dir().join("workspace.lock");
    // While the group runs, another writer cannot take the workspace lock (the group's own
    // mutations can).
    let probe = lock_file.clone();
    let others_tried: yoi_store::group::Job = Box::new(move |_ws: &Workspace| {
        let other = std::thread::spawn(move || {
            yoi_store::lock::WorkspaceLock::acquire(
                &probe,
                std::time::Duration::from_millis(50),
                "other",
            )
            .map(|_| ())
        })
        .join()
        .unwrap();
        // Taking the lock must fail here; a success is reported as an error the assertion
        // below (it wants `Locked`) cannot mistake for the expected one.
        Err(other.err().unwrap_or(StoreError::Database {
            reason: "another writer took the lock in the middle of a group".into(),
        }))
    });
    let out = yoi_store::group::run(
        &fx.ws,
        vec![comment_job(at_minute(1), a.as_str(), "one"), others_tried],
    );
    assert!(out[0].is_ok(), "{:?}", out[0]);
    assert!(
        matches!(out[1], Err(StoreError::Locked { .. })),
        "{:?}",
        out[1]
    );
    assert!(
        yoi_store::lock::WorkspaceLock::acquire(
            &lock_file,
            std::time::Duration::from_millis(50),
            "after"
        )
        .is_ok(),
        "released at the group's end"
    );

    // A group that dies midway (as a crash would) replaced no item.md and told nobody.
    let item = fx.ws.tickets_dir().join(a.as_str()).join("item.md");
    let before = std::fs::read(&item).unwrap();
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        yoi_store::group::run(
            &fx.ws,
            vec![
                comment_job(at_minute(2), a.as_str(), "two"),
                edit_job(
                    at_minute(2),
                    a.as_str(),
                    EditRequest {
                        title: Some("Alpha, lost".into()),
                        body: None,
                    },
                ),
                Box::new(|_: &Workspace| panic!("the writer dies")),
            ],
        )
    }));
    assert!(died.is_err());
    assert_eq!(std::fs::read(&item).unwrap(), before, "item.md untouched");
    let dir = fx.ws.tickets_dir().join(a.as_str());
    assert!(yoi_store::fsutil::temp_leftovers(&dir).is_empty());
    // The thread still reads whole, and the next mutation works as ever.
    comment_bodies(&fx.ws, &a);
    ops::comment(
        &fx.ws,
        &at_minute(3),
        a.as_str(),
        &CommentRequest {
            kind: "comment".into(),
            body: "three".into(),
        },
    )
    .unwrap();
    assert_eq!(comment_bodies(&fx.ws, &a).last().unwrap(), "three");
    assert!(
        fx.index_findings(0).is_empty(),
        "{:?}",
        fx.index_findings(0)
    );
}

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
    let outbox = fx.rt.block_on(fx.index.db.outbox()).unwrap();
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
        .rt
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
        .rt
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
            .rt
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
    // A word that could end an id also finds the ticket whose id ends with it, in any case, as
    // `yoi ticket show` resolves a suffix.
    let tail = &ids[4].as_str()[20..];
    let found = fx.db_list(&ListFilter::default(), &[&tail.to_lowercase()]);
    assert_eq!(found.len(), 1, "{tail}: {found:?}");
    assert_eq!(found[0].0, "Follow-up 3 needs_base");

    // Blockers by a query per few ids and in one pass over every open blocker (what a long
    // list uses) agree: `blocks` as well as `depends_on`, a finished blocker left out, a
    // ticket not asked for left out.
    let blocker = fx.create("Blocks follow-up 2", &[]);
    let done_blocker = fx.create("Cancelled blocker", &[]);
    for (from, to) in [(&blocker, &ids[2]), (&done_blocker, &ids[3])] {
        let rel = RelationRequest {
            kind: RelationKind::Blocks,
            target: to.to_string(),
            note: None,
        };
        ops::add_relation(&fx.ws, &alice(), from.as_str(), &rel).unwrap();
    }
    let cancel = TransitionRequest {
        resolution: Some("not needed".into()),
        ..TransitionRequest::default()
    };
    ops::cancel(&fx.ws, &alice(), done_blocker.as_str(), &cancel).unwrap();
    let asked = &ids[..6];
    let by_id = fx.rt.block_on(fx.index.db.blockers_by_id(asked)).unwrap();
    let one_pass = fx
        .rt
        .block_on(fx.index.db.blockers_in_one_pass(asked))
        .unwrap();
    assert_eq!(by_id, one_pass);
    assert_eq!(by_id.len(), 5, "every follow-up asked for waits: {by_id:?}");
    let two = &by_id[&ids[2]];
    assert_eq!(two.len(), 2, "{two:?}");
    assert!(two
        .iter()
        .any(|b| b.ticket == blocker && b.reason_kind == "blocked_by"));
    assert_eq!(by_id[&ids[3]].len(), 1, "the cancelled blocker is finished");
    assert!(!by_id.contains_key(&ids[6]), "not asked for");
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
    let rows = fx.rt.block_on(index.db.ticket_rows()).unwrap();
    let titles: Vec<&str> = rows.iter().map(|r| r.title.as_str()).collect();
    assert_eq!(titles, vec!["Edited by hand", "Edited by hand"]);
    let outbox = fx.rt.block_on(index.db.outbox()).unwrap();
    assert!(
        outbox
            .iter()
            .any(|o| o.event_id == "01JDQ5V6W7X8Y9Z0A1B2C3D4Z9"),
        "the pulled ticket's event reaches consumers"
    );
    // Touching a file without changing it is not a change.
    let f = std::fs::File::options().append(true).open(&item).unwrap();
    let mtime = f.metadata().unwrap().modified().unwrap();
    f.set_modified(mtime + std::time::Duration::from_secs(5))
        .unwrap();
    let (_, _, stats) = fx.reopen();
    assert_eq!(stats.reindexed, 0);
    // A folder whose item.md is gone (its thread left behind) is a broken ticket: no tickets
    // row, but listed as broken, never silently dropped.
    std::fs::remove_file(fx.ws.path_of(&pulled, "item.md")).unwrap();
    let (_, index, stats) = fx.reopen();
    assert_eq!(
        (stats.scanned, stats.reindexed, stats.removed),
        (2, 1, 0),
        "{stats:?}"
    );
    let rows = fx.rt.block_on(index.db.ticket_rows()).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        fx.rt.block_on(index.db.broken_ids()).unwrap(),
        vec![pulled.clone()]
    );
    // Without its thread too, it is no ticket any more.
    std::fs::remove_file(fx.ws.path_of(&pulled, "thread.md")).unwrap();
    let (_, index, stats) = fx.reopen();
    assert_eq!((stats.scanned, stats.removed), (1, 1), "{stats:?}");
    assert!(fx.rt.block_on(index.db.broken_ids()).unwrap().is_empty());
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
    let before = fx.rt.block_on(fx.index.db.outbox()).unwrap();
    let stats = fx.index.reindex(&fx.ws, ReindexMode::Full).unwrap();
    assert_eq!((stats.reindexed, stats.outbox_added), (2, 0));
    assert_eq!(
        fx.rt.block_on(fx.index.db.outbox()).unwrap(),
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
    let after = fx.rt.block_on(fx.index.db.outbox()).unwrap();
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
    fx.rt.block_on(db.register_consumer("router", now)).unwrap();
    let next = |t: i64| fx.rt.block_on(db.next_events("router", t, 10)).unwrap();
    assert_eq!(next(now).len(), 2);
    fx.rt.block_on(db.ack("router", 1, now)).unwrap();
    fx.rt
        .block_on(db.defer("router", 2, now + 500, "waiting on capacity", now))
        .unwrap();
    assert!(
        next(now).is_empty(),
        "acked and deferred rows are not handed out"
    );
    let later = next(now + 500);
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].attempts, 1);
    let d = fx.rt.block_on(db.delivery("router", 2)).unwrap().unwrap();
    assert_eq!(
        (d.status.as_str(), d.reason.as_deref()),
        ("deferred", Some("waiting on capacity"))
    );
    // Another consumer has its own deliveries.
    assert_eq!(
        fx.rt
            .block_on(db.next_events("sse", now, 10))
            .unwrap()
            .len(),
        2
    );
    // Failures back off and finally give up.
    let mut t = now + 500;
    for _ in 0..yoi_db::MAX_ATTEMPTS {
        fx.rt.block_on(db.fail("router", 2, "boom", t)).unwrap();
        t += 1 << 30;
    }
    let d = fx.rt.block_on(db.delivery("router", 2)).unwrap().unwrap();
    assert_eq!(d.status, "dead");
    assert!(next(t + (1 << 40)).is_empty());
    // The row given up on stays visible (as dead); the acknowledged one is not reported.
    let dead = fx.rt.block_on(db.dead_deliveries()).unwrap();
    let dead: Vec<(String, i64)> = dead.into_iter().map(|d| (d.consumer, d.seq)).collect();
    assert_eq!(dead, vec![("router".to_string(), 2)]);
    let pending = fx
        .rt
        .block_on(db.undelivered_by_consumer(i64::MAX))
        .unwrap();
    assert!(pending.is_empty(), "{pending:?}");
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
        .rt
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
    fx.rt.block_on(async {
            sqlx::query("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (999, 'future', TRUE, $1, 0)")
                .bind(vec![0u8; 48])
                .execute(&sqlx::AnyPool::connect(&fx.url).await.unwrap())
                .await
        })
        .unwrap();
    let mut ws = Workspace::open(fx.ws.root()).unwrap();
    ws.config.database.url = Some(fx.url.clone());
    let err = DbIndex::attach(
        &mut ws,
        yoi_db::Bridge::new(fx.rt.handle().clone(), yoi_testkit::wall_ms),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::DatabaseTooNew {
                found: 999,
                known: 7..,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("newer yoi"));
}

const HOUR: i64 = 60 * 60 * 1000;
const FIX_REINDEX: &str =
    "yoi ticket doctor --fix (rebuilds the index from the files, as `yoi reindex --full` does)";

fn doctor_finds_nothing_in_the_index_of_a_healthy_workspace(b: Backend) {
    let fx = Fx::new(b);
    let a = fx.create("Alpha", &[]);
    let z = fx.create("Zulu", &[&a]);
    ops::mark_ready(&fx.ws, &alice(), a.as_str(), &TransitionRequest::default()).unwrap();
    let comment = CommentRequest {
        kind: "comment".into(),
        body: "hello".into(),
    };
    ops::comment(&fx.ws, &alice(), z.as_str(), &comment).unwrap();
    let plan = PlanRequest {
        kind: yoi_core::plan::PlanKind::After,
        related: Some(a.to_string()),
        note: None,
        accepted_plan: None,
    };
    let (_, record) = ops::add_plan_record(&fx.ws, &alice(), z.as_str(), &plan).unwrap();
    let outbox = fx.rt.block_on(fx.index.db.outbox()).unwrap();
    assert!(
        outbox
            .iter()
            .any(|o| o.event_id == format!("plan:{z}:{}", record.id)),
        "the plan record has its outbox row"
    );
    assert_eq!(fx.index_findings(HOUR), Vec::<Finding>::new());
    for report in [
        doctor::run_with_index(&fx.ws, &fx.index, false).unwrap(),
        doctor::run_attached(&fx.ws, Some(&fx.index), false).unwrap(),
        doctor::run_with_index(&fx.ws, &fx.index, true).unwrap(),
    ] {
        assert_eq!(report.findings, Vec::<Finding>::new());
        assert!(report.ok);
        assert_eq!(report.fixed, Vec::<String>::new(), "nothing to repair");
    }
}

fn doctor_reports_each_kind_of_index_drift_and_fix_rebuilds_the_index(b: Backend) {
    let fx = Fx::new(b);
    let a = fx.create("Alpha", &[]);
    let z = fx.create("Zulu", &[]);
    let comment = CommentRequest {
        kind: "comment".into(),
        body: "hello".into(),
    };
    let c = ops::comment(&fx.ws, &alice(), z.as_str(), &comment)
        .unwrap()
        .event_id
        .unwrap();
    let a_created = fx.first_event(&a);
    let gone = "01JDQ5V6W7X8Y9Z0A1B2C3D4E5";
    let ghost = "01JDQ5V6W7X8Y9Z0A1B2C3D4G7";
    fx.sql(&[
        format!("DELETE FROM tickets WHERE id = '{a}'"),
        format!("UPDATE tickets SET state = 'done' WHERE id = '{z}'"),
        format!("DELETE FROM events WHERE id = '{c}'"),
        format!(
            "INSERT INTO events (id, ticket_id, position, kind, author, at, attrs, heading, body) \
             VALUES ('{ghost}', '{z}', 99, 'comment', 'mallory', NULL, '{{}}', NULL, 'never written')"
        ),
        format!("DELETE FROM outbox WHERE event_id = '{a_created}'"),
        format!(
            "INSERT INTO outbox (seq, event_id, ticket_id, kind, payload, created_ms) \
             VALUES (1000, 'ghost-event', '{a}', 'ticket_commented', '{{}}', 0)"
        ),
        format!(
            "INSERT INTO tickets (id, title, state, created_at, updated_at, body, search_text) \
             VALUES ('{gone}', 'Gone', 'ready', '2026-11-29T10:00:00Z', '2026-11-29T10:00:00Z', '', '')"
        ),
    ]);
    let item = |t: &TicketId| fx.ws.rel(&fx.ws.path_of(t, "item.md"));
    let thread = |t: &TicketId| fx.ws.rel(&fx.ws.path_of(t, "thread.md"));
    let orphan = Finding::warning(
        "outbox.orphan",
        "1 outbox row naming no thread event or plan record on disk: seq 1000 (ghost-event)",
        "every outbox row names an event or plan record in the files",
    )
    .with_ticket(a.as_str())
    .with_fix(format!(
        "if ticket {a}'s events were removed on purpose, nothing to do (the rows are delivery history); otherwise restore its files from git and run `yoi reindex`"
    ));
    let mut expected = vec![
        Finding::error(
            "index.missing_ticket",
            format!("ticket {a} (`Alpha`) has no row in the index"),
            "a tickets row for every ticket whose item.md parses",
        )
        .with_ticket(a.as_str())
        .at(item(&a), None)
        .with_fix(FIX_REINDEX),
        Finding::error(
            "outbox.missing",
            format!("1 event without an outbox row: {a_created}"),
            "one outbox row per thread event and plan record, so consumers see every event",
        )
        .with_ticket(a.as_str())
        .with_fix(FIX_REINDEX),
        orphan.clone(),
        Finding::error(
            "index.stale_ticket",
            "the index row has state `done`",
            "state `planning`, as item.md says",
        )
        .with_ticket(z.as_str())
        .at(item(&z), None)
        .with_fix(FIX_REINDEX),
        Finding::error(
            "index.missing_event",
            format!("1 thread event not in the index: {c}"),
            "every event of thread.md in the index",
        )
        .with_ticket(z.as_str())
        .at(thread(&z), None)
        .with_fix(FIX_REINDEX),
        Finding::error(
            "index.extra_event",
            format!("1 indexed event not in thread.md: {ghost}"),
            "only the events thread.md holds in the index",
        )
        .with_ticket(z.as_str())
        .with_fix(FIX_REINDEX),
        Finding::error(
            "index.extra_ticket",
            format!(
                "the index has a row for {gone} (`Gone`) but there is no ticket folder with an item.md"
            ),
            "index rows only for tickets whose item.md parses",
        )
        .with_ticket(gone)
        .with_fix(FIX_REINDEX),
    ];
    // Documented order: by ticket, then check id, then what was seen.
    expected.sort_by(|x, y| (&x.ticket, x.check, &x.seen).cmp(&(&y.ticket, y.check, &y.seen)));
    assert_eq!(fx.index_findings(HOUR), expected);
    for f in &expected {
        assert!(
            doctor::CHECKS.iter().any(|c| c.id == f.check),
            "{}",
            f.check
        );
    }
    // The full report is the file checks (clean here) followed by the index checks.
    let report = doctor::run_with_index(&fx.ws, &fx.index, false).unwrap();
    assert_eq!(report.findings, expected);
    assert_eq!((report.ok, report.errors, report.warnings), (false, 6, 1));
    assert!(report.fixed.is_empty());

    let report = doctor::run_with_index(&fx.ws, &fx.index, true).unwrap();
    assert_eq!(
        report.fixed,
        vec!["rebuilt the database index from the files: 2 tickets re-read, 1 outbox row restored"]
    );
    // A rebuild restores what the files say; it never deletes outbox rows.
    assert_eq!(report.findings, vec![orphan.clone()]);
    assert_eq!((report.ok, report.errors, report.warnings), (true, 0, 1));
    assert_eq!(fx.index_findings(HOUR), vec![orphan]);
    let db = &fx.index.db;
    let rows = fx.rt.block_on(db.ticket_rows()).unwrap();
    let states: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.id.as_str(), r.state.as_str()))
        .collect();
    let mut want = vec![(a.as_str(), "planning"), (z.as_str(), "planning")];
    want.sort();
    assert_eq!(states, want);
    let outbox = fx.rt.block_on(db.outbox_keys()).unwrap();
    assert_eq!(
        outbox.iter().filter(|o| o.event_id == a_created).count(),
        1,
        "the lost outbox row is back, once"
    );
}

fn doctor_reports_undelivered_events_per_consumer_and_dead_deliveries(b: Backend) {
    let fx = Fx::new(b);
    let one = fx.create("One", &[]);
    fx.create("Two", &[]);
    fx.create("Three", &[]);
    let one_created = fx.first_event(&one);
    let db = &fx.index.db;
    let now = 10 * HOUR;
    fx.sql(&[
        format!(
            "UPDATE outbox SET created_ms = {} WHERE seq IN (1, 2)",
            now - 2 * HOUR
        ),
        format!(
            "UPDATE outbox SET created_ms = {} WHERE seq = 3",
            now - 10 * 60_000
        ),
    ]);
    for c in ["mailer", "router", "sse"] {
        fx.rt.block_on(db.register_consumer(c, 0)).unwrap();
    }
    fx.rt.block_on(db.ack("router", 1, now)).unwrap();
    fx.rt.block_on(db.ack("mailer", 2, now)).unwrap();
    for n in 0..yoi_db::MAX_ATTEMPTS {
        fx.rt
            .block_on(db.fail("mailer", 1, "smtp refused", now + n))
            .unwrap();
    }
    // A consumer nobody registered is not waited for.
    fx.rt.block_on(db.ack("ghost", 3, now)).unwrap();
    let undelivered = |consumer: &str, n: &str, oldest: i64, age: &str| {
        Finding::warning(
            "outbox.undelivered",
            format!("consumer `{consumer}` has not acknowledged {n} older than {age} (oldest: seq {oldest})"),
            format!("registered consumers acknowledge each event within {age}"),
        )
        .with_fix(format!(
            "check that consumer `{consumer}` is running and acknowledging events; a consumer retired for good should be unregistered"
        ))
    };
    let dead = Finding::error(
        "outbox.dead",
        format!(
            "consumer `mailer` gave up on outbox seq 1 (event {one_created}, ticket_created) after 8 attempts; last reason: smtp refused"
        ),
        "every delivery acknowledged",
    )
    .with_ticket(one.as_str())
    .with_fix(
        "fix the cause the reason names, then have `mailer` take seq 1 again (no yoi command re-queues a dead delivery yet)",
    );
    // Older than an hour: seq 1 and 2. The dead delivery is reported once, as dead.
    assert_eq!(
        fx.index_findings(now),
        vec![
            undelivered("router", "1 outbox event", 2, "1h"),
            undelivered("sse", "2 outbox events", 1, "1h"),
            dead.clone(),
        ]
    );
    // The threshold is a parameter.
    let with = |after: i64| doctor::index_findings_with(&fx.index, &fx.ws, now, after).unwrap();
    assert_eq!(
        with(5 * 60_000),
        vec![
            undelivered("mailer", "1 outbox event", 3, "5m"),
            undelivered("router", "2 outbox events", 2, "5m"),
            undelivered("sse", "3 outbox events", 1, "5m"),
            dead.clone(),
        ]
    );
    assert_eq!(with(3 * HOUR), vec![dead.clone()]);
    // Runtime problems are not drift: --fix does not rebuild the index for them.
    let report = doctor::run_with_index(&fx.ws, &fx.index, true).unwrap();
    assert!(report.fixed.is_empty(), "{:?}", report.fixed);
    assert!(report.findings.contains(&dead));
    assert!(!report.ok);
}

fn assignment(id: &str, ticket: &TicketId) -> yoi_db::Assignment {
    yoi_db::Assignment {
        id: id.into(),
        ticket: ticket.to_string(),
        step: "implement".into(),
        role: "coder".into(),
        attempt: 1,
        fence: 1,
        status: yoi_db::AssignmentStatus::Pending,
        lease_until_ms: None,
        created_ms: 1,
        updated_ms: 1,
        ..Default::default()
    }
}

fn open_assignments_exist_only_for_work_in_progress(b: Backend) {
    use yoi_db::AssignmentStatus;
    let fx = Fx::new(b);
    let db = &fx.index.db;
    let status = |id: &TicketId| -> Vec<AssignmentStatus> {
        fx.rt
            .block_on(db.assignments_of(id.as_str()))
            .unwrap()
            .into_iter()
            .map(|a| a.status)
            .collect()
    };
    let stale = |fx: &Fx| -> Vec<String> {
        fx.index_findings(0)
            .into_iter()
            .filter(|f| f.check == "assignment.stale")
            .map(|f| f.seen)
            .collect()
    };
    let req = TransitionRequest::default();
    let t = fx.create("Routed", &[]);
    ops::mark_ready(&fx.ws, &alice(), t.as_str(), &req).unwrap();
    ops::queue(&fx.ws, &alice(), t.as_str(), &req).unwrap();

    // A queued ticket's pending assignment is one an acceptance is making: not stale, and an
    // operation on the ticket leaves it alone.
    fx.rt
        .block_on(db.create_assignment(&assignment("asg-1", &t)))
        .unwrap();
    ops::comment(
        &fx.ws,
        &alice(),
        t.as_str(),
        &ops::CommentRequest {
            kind: "comment".into(),
            body: "still queued".into(),
        },
    )
    .unwrap();
    assert_eq!(status(&t), [AssignmentStatus::Pending]);
    assert_eq!(stale(&fx), Vec::<String>::new());

    // Returning the ticket to planning cancels it in the same index write.
    let back = TransitionRequest {
        reason: Some("needs a decision".into()),
        ..TransitionRequest::default()
    };
    ops::return_to_planning(&fx.ws, &alice(), t.as_str(), &back).unwrap();
    assert_eq!(status(&t), [AssignmentStatus::Cancelled]);

    // An open row the index never reconciled (written behind its back) is reported, and
    // --fix cancels it by re-reading the tickets.
    fx.rt
        .block_on(db.create_assignment(&assignment("asg-2", &t)))
        .unwrap();
    assert_eq!(
        stale(&fx),
        ["assignment asg-2 (implement for coder, pending) is open but its ticket is planning"]
    );
    let report = doctor::run_with_index(&fx.ws, &fx.index, true).unwrap();
    assert!(
        report
            .findings
            .iter()
            .all(|f| f.check != "assignment.stale"),
        "{:?}",
        report.findings
    );
    assert_eq!(
        status(&t),
        [AssignmentStatus::Cancelled, AssignmentStatus::Cancelled]
    );

    // A ticket gone from the checkout is reported, not cancelled.
    let gone = TicketId::parse("01ZZZZZZZZZZZZZZZZZZZZZZZZ").unwrap();
    fx.rt
        .block_on(db.create_assignment(&assignment("asg-3", &gone)))
        .unwrap();
    assert_eq!(
        stale(&fx),
        ["assignment asg-3 (implement for coder, pending) is open but its ticket is not in this checkout"]
    );
    assert_eq!(status(&gone), [AssignmentStatus::Pending]);
}

/// The dashboard's reads (`db/board.rs`): counts by state, the facts behind each card's badges,
/// cards by id with the board's filters, what finishing a ticket unblocks, newest-first pages.
fn board_reads_count_lanes_and_give_each_card_its_facts(b: Backend) {
    use yoi_core::decision::RoutingDecision;
    let fx = Fx::new(b);
    let db = &fx.index.db;
    let a = fx.create("Alpha schema", &[]);
    let bb = fx.create("Bravo build", &[&a]);
    let c = fx.create("Charlie cleanup", &[&bb]);
    let bare = ops::create(
        &fx.ws,
        &alice(),
        &CreateRequest {
            title: "Delta without a brief".into(),
            body: String::new(),
            depends_on: Vec::new(),
        },
    )
    .unwrap()
    .ticket;
    ops::mark_ready(&fx.ws, &alice(), a.as_str(), &TransitionRequest::default()).unwrap();
    ops::queue(&fx.ws, &alice(), a.as_str(), &TransitionRequest::default()).unwrap();
    let orchestrator = Ctx::new(
        Principal::orchestrator(),
        Timestamp::parse("2026-11-29T10:05:00Z").unwrap(),
    );
    let waiting = RoutingDecision::WaitingCapacity {
        in_progress: 4,
        max: 4,
    };
    ops::comment(
        &fx.ws,
        &orchestrator,
        a.as_str(),
        &CommentRequest {
            kind: "decision".into(),
            body: waiting.render_event(),
        },
    )
    .unwrap();
    ops::accept(
        &fx.ws,
        &orchestrator,
        a.as_str(),
        &TransitionRequest::default(),
        &ops::AcceptEvidence {
            branch: "yoi/alpha".into(),
            worktree: ".worktree/alpha".into(),
            base_commit: "0000000000000000000000000000000000000000".into(),
            assignment: "asg-alpha".into(),
            decision: RoutingDecision::ImplementationReady {
                branch: "yoi/alpha".into(),
                base_commit: "0000000000000000000000000000000000000000".into(),
            }
            .render_event(),
        },
    )
    .unwrap();
    let mut asg = assignment("asg-board", &bb);
    asg.role = "reviewer".into();
    fx.rt.block_on(db.create_assignment(&asg)).unwrap();

    let counts = fx.rt.block_on(db.count_by_state()).unwrap();
    assert_eq!(counts.get(&State::Inprogress), Some(&1));
    assert_eq!(counts.get(&State::Planning), Some(&3));
    assert_eq!(
        counts.get(&State::Queued),
        None,
        "no queued ticket, no entry"
    );

    let ids = [a.clone(), bb.clone(), c.clone(), bare.clone()];
    let facts = fx.rt.block_on(db.card_facts(&ids)).unwrap();
    assert_eq!(facts.len(), 4);
    let fa = &facts[&a];
    assert_eq!(fa.unblocks, 1, "Bravo waits on Alpha");
    assert_eq!(
        fa.last_decision.as_deref(),
        Some("implementation_ready"),
        "the latest of the orchestrator's decisions (it waited for capacity first)"
    );
    assert_eq!(fa.state_since.as_deref(), Some("2026-11-29T10:05:00Z"));
    assert_eq!(fa.brief_missing, 0);
    assert_eq!(fa.worktree.as_deref(), Some(".worktree/alpha"));
    assert_eq!(facts[&bb].worktree, None);
    assert_eq!(facts[&bb].unblocks, 1, "Charlie waits on Bravo");
    assert_eq!(
        facts[&bb]
            .working
            .as_ref()
            .map(|w| (w.role.as_str(), w.pod.clone())),
        Some(("reviewer", None)),
        "a pending step shows its role, waiting for a pod"
    );
    assert_eq!(facts[&bb].state_since, None, "never moved");
    assert_eq!(facts[&c].unblocks, 0);
    assert_eq!(facts[&bare].brief_missing, 3);
    assert!(facts[&c].last_decision.is_none());

    // Cards by id, with the board's filters.
    let by_id = |words: &[&str], blocked: bool| -> Vec<String> {
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        fx.rt
            .block_on(db.summaries_by_id(&ids, &words, blocked))
            .unwrap()
            .into_iter()
            .map(|t| t.title)
            .collect()
    };
    assert_eq!(by_id(&[], false).len(), 4);
    assert_eq!(by_id(&["bravo"], false), ["Bravo build"]);
    assert_eq!(by_id(&[], true), ["Bravo build", "Charlie cleanup"]);
    let blockers = fx
        .rt
        .block_on(db.summaries_by_id(std::slice::from_ref(&c), &[], false))
        .unwrap();
    assert_eq!(blockers[0].blockers.len(), 1, "blockers are filled in");

    // What finishing Alpha unblocks, transitively, and nothing of a finished ticket.
    let waits = fx.rt.block_on(db.waiting_on(&a, 50)).unwrap();
    let got: Vec<(String, u32)> = waits.iter().map(|w| (w.title.clone(), w.depth)).collect();
    assert_eq!(
        got,
        [
            ("Bravo build".to_string(), 1),
            ("Charlie cleanup".to_string(), 2)
        ]
    );
    assert_eq!(fx.rt.block_on(db.waiting_on(&a, 1)).unwrap().len(), 1);
    ops::cancel(
        &fx.ws,
        &alice(),
        bb.as_str(),
        &TransitionRequest {
            resolution: Some("not needed".into()),
            ..TransitionRequest::default()
        },
    )
    .unwrap();
    let waits = fx.rt.block_on(db.waiting_on(&a, 50)).unwrap();
    assert!(
        waits.is_empty(),
        "a closed dependent waits on nothing: {waits:?}"
    );

    // Newest first, paged by the cursor towards older tickets.
    let filter = ListFilter {
        states: Some(State::ALL.to_vec()),
        ..ListFilter::default()
    };
    let page = fx
        .rt
        .block_on(db.list_ordered(&filter, &[], None, 2, true))
        .unwrap();
    let titles: Vec<&str> = page.tickets.iter().map(|t| t.title.as_str()).collect();
    assert_eq!(titles, ["Delta without a brief", "Charlie cleanup"]);
    let next = fx
        .rt
        .block_on(db.list_ordered(&filter, &[], page.next.as_ref(), 2, true))
        .unwrap();
    let titles: Vec<&str> = next.tickets.iter().map(|t| t.title.as_str()).collect();
    assert_eq!(titles, ["Bravo build", "Alpha schema"]);
    assert!(next.next.is_none());
}

impl Fx {
    /// Every index row, as text, in key order (outbox included).
    /// The index rows, checked to be what rewriting each of `ids` alone from its files
    /// makes (the per-ticket writer).
    fn rows_as_rewritten(&self, ids: &[&TicketId]) -> Vec<String> {
        let rows = self.index_rows();
        for id in ids {
            yoi_store::index_hook::IndexHook::tickets_changed(
                &self.index,
                &self.ws,
                std::slice::from_ref(*id),
                &[],
            )
            .unwrap();
        }
        assert_eq!(self.index_rows(), rows, "a rewrite of each ticket alone");
        rows
    }

    fn index_rows(&self) -> Vec<String> {
        let queries = [
            "SELECT id, title, state, created_at, updated_at, COALESCE(target_ref, '-'), COALESCE(flow, '-'), COALESCE(readiness, '-'), COALESCE(priority, '-'), COALESCE(queued_by, '-'), COALESCE(queued_at, '-'), body, search_text, CAST(thread_events AS TEXT) FROM tickets ORDER BY id",
            "SELECT ticket_id, kind, target, COALESCE(note, '-'), author, at FROM relations ORDER BY ticket_id, kind, target",
            "SELECT ticket_id, id, kind, COALESCE(related_ticket, '-'), at, record FROM plan_records ORDER BY ticket_id, id",
            "SELECT id, ticket_id, CAST(position AS TEXT), kind, COALESCE(author, '-'), COALESCE(at, '-'), attrs, COALESCE(heading, '-'), body FROM events ORDER BY ticket_id, position",
            "SELECT ticket_id, name, CAST(size AS TEXT), CAST(mtime_ns AS TEXT), hash FROM ticket_files ORDER BY ticket_id, name",
            "SELECT CAST(seq AS TEXT), event_id, ticket_id, kind, payload FROM outbox ORDER BY seq",
            "SELECT id, status FROM assignments ORDER BY id",
        ];
        self.rt.block_on(async {
            let pool = sqlx::AnyPool::connect(&self.url).await.unwrap();
            let mut out = Vec::new();
            for q in queries {
                let table = q.split(" FROM ").nth(1).and_then(|t| t.split(' ').next());
                for row in sqlx::query(q).fetch_all(&pool).await.unwrap() {
                    use sqlx::Row;
                    let cols: Vec<String> = (0..row.len())
                        .map(|i| row.try_get::<String, _>(i).unwrap())
                        .collect();
                    out.push(format!("{}: {}", table.unwrap(), cols.join(" | ")));
                }
            }
            pool.close().await;
            out
        })
    }
}

/// A full rebuild writes many tickets per multi-row statement (`db/bulk.rs`); the rows must be
/// the ones each operation's own sync wrote, row for row, with no outbox row added twice.
fn the_bulk_rebuild_writes_the_rows_the_per_ticket_writer_wrote(b: Backend) {
    let fx = Fx::new(b);
    let mut ids = Vec::new();
    for i in 0..30 {
        let deps: Vec<&TicketId> = ids.iter().rev().take(i % 3).collect();
        let id = fx.create(&format!("Ticket {i} with \"quotes\" and ünïcode"), &deps);
        ids.push(id);
    }
    ops::mark_ready(
        &fx.ws,
        &alice(),
        ids[0].as_str(),
        &TransitionRequest::default(),
    )
    .unwrap();
    ops::queue(
        &fx.ws,
        &alice(),
        ids[0].as_str(),
        &TransitionRequest::default(),
    )
    .unwrap();
    ops::comment(
        &fx.ws,
        &alice(),
        ids[5].as_str(),
        &CommentRequest {
            kind: "comment".into(),
            body: "a body\nwith lines, $1 and '; DROP TABLE tickets; --".into(),
        },
    )
    .unwrap();
    ops::add_relation(
        &fx.ws,
        &alice(),
        ids[7].as_str(),
        &RelationRequest {
            kind: RelationKind::Related,
            target: ids[8].to_string(),
            note: Some("see also".into()),
        },
    )
    .unwrap();
    ops::add_plan_record(
        &fx.ws,
        &alice(),
        ids[9].as_str(),
        &PlanRequest {
            kind: yoi_core::plan::PlanKind::ConflictsWith,
            related: Some(ids[10].to_string()),
            note: Some("same files".into()),
            accepted_plan: None,
        },
    )
    .unwrap();
    let mut open = assignment("asg-open", &ids[3]);
    open.status = yoi_db::AssignmentStatus::Claimed;
    fx.rt
        .block_on(fx.index.db.create_assignment(&open))
        .unwrap();
    let before = fx.index_rows();
    assert!(
        before.len() > 150,
        "a real amount of rows: {}",
        before.len()
    );

    // Folders named like tickets that are not tickets: neither item.md nor thread.md (its
    // artifacts alone), item.md a folder, item.md a named pipe (which must not block the
    // reader). None gives a row. (A thread alone is a broken ticket: see
    // `incremental_reindex_picks_up_hand_edits_and_skips_untouched_files`.)
    let stray = |id: &str| {
        let dir = fx.ws.tickets_dir().join(id);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    };
    std::fs::create_dir(stray("01ARZ3NDEKTSV4RRFFQ69G5FAV").join("artifacts")).unwrap();
    std::fs::create_dir(stray("01ARZ3NDEKTSV4RRFFQ69G5FAW").join("item.md")).unwrap();
    let fifo = stray("01ARZ3NDEKTSV4RRFFQ69G5FAX").join("item.md");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());

    let stats = fx.index.reindex(&fx.ws, ReindexMode::Full).unwrap();
    assert_eq!(
        (stats.scanned, stats.reindexed, stats.outbox_added),
        (30, 30, 0)
    );
    let after = fx.index_rows();
    let changed: Vec<(&String, &String)> =
        before.iter().zip(&after).filter(|(x, y)| x != y).collect();
    // The open assignment of a planning ticket is cancelled, as the per-ticket writer does.
    assert_eq!(
        changed,
        [(
            &"assignments: asg-open | claimed".to_string(),
            &"assignments: asg-open | cancelled".to_string()
        )]
    );
    assert_eq!(before.len(), after.len());

    // A first build into an empty index (a fresh clone) takes the same path and restores the
    // outbox rows the files imply.
    fx.sql(&[
        "DELETE FROM tickets".into(),
        "DELETE FROM ticket_files".into(),
        "DELETE FROM relations".into(),
        "DELETE FROM events".into(),
        "DELETE FROM plan_records".into(),
        "DELETE FROM outbox".into(),
    ]);
    let stats = fx.index.reindex(&fx.ws, ReindexMode::Incremental).unwrap();
    assert_eq!(stats.reindexed, 30);
    let outbox = fx.rt.block_on(fx.index.db.outbox()).unwrap();
    assert_eq!(stats.outbox_added, outbox.len());
    let seqs: Vec<i64> = outbox.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=outbox.len() as i64).collect::<Vec<_>>(),
        "gap-free seqs"
    );
    let not_outbox = |rows: Vec<String>| -> Vec<String> {
        rows.into_iter()
            .filter(|r| !r.starts_with("outbox: "))
            .collect()
    };
    let kept = not_outbox(after);
    assert!(kept.len() > 150);
    assert_eq!(
        not_outbox(fx.index_rows()),
        kept,
        "the same rows again, outbox aside"
    );
}

/// A rebuild on PostgreSQL empties the index tables with TRUNCATE, which needs more than the
/// DELETE privilege. A role that may read and write rows of tables another role made still
/// rebuilds: the rebuild falls back to DELETE behind a savepoint.
#[test]
fn a_rebuild_without_the_truncate_privilege_deletes_instead() {
    let fx = Fx::new(Backend::Postgres);
    let a = fx.create("First", &[]);
    fx.create("Second", &[&a]);
    let before = fx.index_rows();
    let database = fx.url.rsplit('/').next().unwrap_or_default();
    let role = format!(
        "rows_only_{}",
        database.split('?').next().unwrap_or_default()
    );
    let schema = format!("yoi_{}", fx.ws.config.workspace.id.as_deref().unwrap());
    fx.sql(&[
        format!("CREATE ROLE {role} LOGIN"),
        // Enough for yoi to open the database (sqlx's migration check creates its table if
        // it is missing), not to own the tables.
        format!("GRANT USAGE, CREATE ON SCHEMA {schema} TO {role}"),
        format!("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}"),
    ]);
    let url = fx
        .url
        .replacen("postgres://yoi@", &format!("postgres://{role}@"), 1);
    assert_ne!(url, fx.url, "the test's URL names its user");
    let refused = fx.rt.block_on(async {
        let pool = sqlx::AnyPool::connect(&url).await.unwrap();
        let r = sqlx::query("TRUNCATE tickets").execute(&pool).await;
        pool.close().await;
        r
    });
    assert!(refused.is_err(), "the role cannot truncate");

    let mut ws = Workspace::open(fx.ws.root()).unwrap();
    ws.config.database.url = Some(url);
    let (_index, stats) = DbIndex::attach_with(
        &mut ws,
        yoi_db::Bridge::new(fx.rt.handle().clone(), yoi_testkit::wall_ms),
        ReindexMode::Full,
    )
    .unwrap();
    assert_eq!((stats.scanned, stats.reindexed), (2, 2));
    assert_eq!(fx.index_rows(), before);
}
