//! The queue page read from the index (`queue_view_indexed`: the page's tickets by state, a
//! count of those in progress, every listed ticket's routing events in two statements, finished
//! blockers taken as the index holds them) says exactly what reading every file says
//! (`queue_view`), on a generated workspace of 2,000 tickets in every state with about two
//! `depends_on` each — with routing decisions, an open circuit and finished blockers whose
//! files are damaged, with no slot free, one slot free and every slot free, and with a page
//! smaller and larger than the queue. Runs on SQLite and on PostgreSQL.

use yoi_core::decision::RoutingDecision;
use yoi_core::{Principal, State, TicketId, Timestamp};
use yoi_db::DbIndex;
use yoi_engine::routing::view::{queue_view, queue_view_indexed, QueueView};
use yoi_store::ops::{self, CommentRequest};
use yoi_store::Ctx;
use yoi_testkit::pg;

const TICKETS: usize = 2_000;

fn json(v: &QueueView) -> serde_json::Value {
    serde_json::to_value(v).unwrap()
}

fn index_and_files_agree(url: Option<String>) {
    let rt = yoi_tests::runtime();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    yoi_testkit::git(root, &["init", "-q", "-b", "main"]);
    yoi_store::init(root, "main").unwrap();
    let made = yoi_tests::generate::generate(root, TICKETS, TICKETS * 2);
    println!(
        "seed {:#x}: {TICKETS} tickets, {made} relations",
        yoi_tests::generate::SEED
    );
    yoi_testkit::git(root, &["add", "-A"]);
    yoi_testkit::git(root, &["commit", "-q", "-m", "generated"]);
    let mut ws = yoi_tests::open(root);
    ws.config.database.url = url;
    let (index, _) = DbIndex::attach(
        &mut ws,
        yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
    )
    .unwrap();

    let files = queue_view(&ws, 4, 100_000).unwrap();
    let queued: Vec<TicketId> = files.queued.iter().map(|e| e.view.ticket.clone()).collect();
    assert!(queued.len() > 250, "{} queued", queued.len());
    // Routing events on some of the first queued tickets: an orchestrator's decisions, three
    // failures in a row with the circuit opened, a person's decision (not the latest).
    let at = Timestamp::parse("2026-03-01T10:00:00Z").unwrap();
    let orchestrator = Ctx::new(Principal::orchestrator(), at);
    let person = Ctx::new(Principal::human("alice"), at);
    let decide = |by: &Ctx, id: &TicketId, d: RoutingDecision| {
        let req = CommentRequest {
            kind: "decision".into(),
            body: d.render_event(),
        };
        ops::comment(&ws, by, id.as_str(), &req).unwrap();
    };
    for (i, id) in queued.iter().take(60).enumerate() {
        decide(
            &orchestrator,
            id,
            RoutingDecision::WaitingCapacity {
                in_progress: 4,
                max: 4,
            },
        );
        if i % 3 == 0 {
            for attempt in 1..=3 {
                decide(
                    &orchestrator,
                    id,
                    RoutingDecision::AcceptanceFailed {
                        step: "add_worktree".into(),
                        error: "boom".into(),
                        attempt,
                    },
                );
            }
            ops::attention(&ws, &orchestrator, id.as_str(), "circuit_open", "Stop.").unwrap();
        }
        if i % 5 == 0 {
            decide(
                &person,
                id,
                RoutingDecision::WaitingConflict { with: vec![] },
            );
        }
    }
    // Finished blockers of listed tickets whose files are damaged where the file snapshot
    // does not look (a plan line that does not parse, a thread.md that is not UTF-8): they
    // still block, and the index, which holds no row for them, says so too.
    let snap = yoi_engine::routing::Snapshot::load(&ws).unwrap();
    let mut finished: Vec<TicketId> = queued
        .iter()
        .take(100)
        .flat_map(|id| snap.graph.waits_on(id))
        .map(|(t, _)| t)
        .filter(|t| snap.items.get(t).is_some_and(|i| i.state.is_finished()))
        .collect();
    finished.sort();
    finished.dedup();
    assert!(finished.len() >= 2, "finished blockers: {finished:?}");
    let folder = |id: &TicketId| root.join(".yoi/tickets").join(id.as_str());
    std::fs::write(
        folder(&finished[0]).join("artifacts/orchestration-plan.jsonl"),
        "not a plan record\n",
    )
    .unwrap();
    std::fs::write(folder(&finished[1]).join("thread.md"), b"\xff\xfe broken\n").unwrap();
    index.refresh(&ws, &finished[..2]).unwrap();

    // Tickets queued now carry a time; some in one second, with and without its fraction (the
    // index's text of a time sorts by the second, not within it). The first queued without a
    // time come first; a page just longer than those reaches the timed ones.
    let seconds = [
        "2026-03-01T10:00:05.250Z",
        "2026-03-01T10:00:05Z",
        "2026-03-01T10:00:04.999999Z",
        "2026-03-01T10:00:05.1Z",
        "2026-03-01T09:00:00Z",
    ];
    let mut timed = 0;
    let ready = snap.items.iter().filter(|(_, i)| i.state == State::Ready);
    for id in ready.map(|(id, _)| id) {
        let at = Timestamp::parse(seconds[timed % seconds.len()]).unwrap();
        let by = Ctx::new(Principal::human("alice"), at);
        if ops::queue(&ws, &by, id.as_str(), &ops::TransitionRequest::default()).is_ok() {
            timed += 1;
        }
        if timed == 20 {
            break;
        }
    }
    assert!(timed >= 5, "{timed} tickets queued with a time");
    let untimed = queue_view(&ws, 4, 100_000)
        .unwrap()
        .queued
        .iter()
        .filter(|e| e.queued_at.is_none())
        .count();

    let in_progress = snap
        .items
        .values()
        .filter(|i| i.state == State::Inprogress)
        .count();
    for max in [1, 4, in_progress, in_progress + 1, 100_000] {
        for limit in [100, untimed + 3, untimed + 12, 100_000] {
            let files = queue_view(&ws, max, limit).unwrap();
            let indexed = queue_view_indexed(&ws, Some(&index), max, limit).unwrap();
            assert_eq!(
                json(&indexed),
                json(&files),
                "max_inprogress {max}, page of {limit}"
            );
            assert_eq!(indexed.capacity.in_progress, in_progress);
        }
    }
    // What the page shows covers every kind the workspace gives.
    let page = queue_view_indexed(&ws, Some(&index), 4, 100).unwrap();
    let kinds: std::collections::BTreeSet<String> = page
        .queued
        .iter()
        .filter_map(|e| e.view.would_decide.as_ref().map(|w| w.kind.clone()))
        .collect();
    for k in ["circuit_open", "blocked_by_dependency", "waiting_capacity"] {
        assert!(kinds.contains(k), "{k} among {kinds:?}");
    }
    for damaged in &finished[..2] {
        let blocks = page.queued.iter().any(|e| {
            e.view
                .blockers
                .iter()
                .any(|b| &b.ticket == damaged && b.state.is_none())
        });
        assert!(
            blocks,
            "finished blocker {damaged} with damaged files blocks"
        );
    }
}

#[test]
fn the_queue_page_from_the_index_equals_the_files_on_a_generated_workspace_on_sqlite() {
    index_and_files_agree(None);
}

#[test]
fn the_queue_page_from_the_index_equals_the_files_on_a_generated_workspace_on_postgres() {
    index_and_files_agree(Some(pg::database()));
}
