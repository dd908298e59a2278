//! A process that dies between an operation's file write and its index write: the files keep
//! the change, the database misses it, doctor's index checks name the gap, and the next start —
//! attaching the index runs the incremental reindex — brings the index and the outbox back in
//! line, with exactly one outbox row per event. Every case runs on SQLite and on PostgreSQL.

use yoi_testkit::on_both_backends;
use yoi_testkit::pg::{self, Backend};

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use yoi_core::state::State;
use yoi_core::TicketId;
use yoi_db::{DbIndex, IndexStats};
use yoi_doctor as doctor;
use yoi_store::ops::{self, CreateRequest};
use yoi_store::Workspace;

const BRIEF: &str =
    "## Intent\nDo it.\n\n## Acceptance criteria\n- done\n\n## Validation\n`true`\n";
/// What the helper prints right before `abort()`; see tests/bin/crash_before_index.rs.
const MARKER: &str = "yoi-crash-before-index: files written, aborting before the index";
const SIGABRT: i32 = 6;

struct Fx {
    dir: tempfile::TempDir,
    url: Option<String>,
    rt: tokio::runtime::Runtime,
}

impl Fx {
    fn new(backend: Backend) -> Fx {
        let dir = tempfile::tempdir().unwrap();
        yoi_store::init(dir.path(), "main").unwrap();
        let url = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(pg::database()),
        };
        let rt = yoi_tests::runtime();
        Fx { dir, url, rt }
    }

    /// Open the workspace and attach its database, as every start of yoi does.
    fn start(&self) -> (Workspace, DbIndex, IndexStats) {
        let mut ws = yoi_tests::open(self.dir.path());
        ws.config.database.url = self.url.clone();
        let (index, stats) = DbIndex::attach(
            &mut ws,
            yoi_db::Bridge::new(self.rt.handle().clone(), yoi_testkit::wall_ms),
        )
        .unwrap();
        (ws, index, stats)
    }

    /// Run the helper; it must die by the abort in its index hook.
    fn crash(&self, args: &[&str]) {
        // Run inside the temporary folder, so a core dump (where enabled) lands there too.
        let out = Command::new(env!("CARGO_BIN_EXE_yoi-crash-before-index"))
            .current_dir(self.dir.path())
            .arg(self.dir.path())
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} exited normally: {stderr}");
        assert_eq!(
            out.status.signal(),
            Some(SIGABRT),
            "{args:?} was not aborted: {:?}, {stderr}",
            out.status
        );
        assert!(stderr.contains(MARKER), "aborted elsewhere: {stderr}");
    }
}

/// `(check, ticket)` of each index finding, in report order.
fn checks(index: &DbIndex, ws: &Workspace) -> Vec<(&'static str, String)> {
    doctor::index_findings(index, ws, 0)
        .unwrap()
        .into_iter()
        .map(|f| (f.check, f.ticket.unwrap_or_default()))
        .collect()
}

fn has_event(index: &DbIndex, ticket: &TicketId, event: &str) -> bool {
    index
        .event_keys()
        .unwrap()
        .contains(&(ticket.to_string(), event.to_string()))
}

/// The kinds of the outbox rows standing for `event`.
fn outbox_rows(index: &DbIndex, event: &str) -> Vec<String> {
    index
        .outbox()
        .unwrap()
        .into_iter()
        .filter(|o| o.event_id == event)
        .map(|o| o.kind)
        .collect()
}

on_both_backends!(
    comment_written_before_a_crash_reaches_the_index_on_the_next_start,
    state_change_written_before_a_crash_reaches_the_index_on_the_next_start,
);

fn create(ws: &Workspace) -> TicketId {
    let req = CreateRequest {
        title: "Survives a crash".into(),
        body: BRIEF.into(),
        depends_on: Vec::new(),
    };
    ops::create(ws, &yoi_tests::ctx("alice"), &req)
        .unwrap()
        .ticket
}

fn comment_written_before_a_crash_reaches_the_index_on_the_next_start(b: Backend) {
    let fx = Fx::new(b);
    let (ws, index, _) = fx.start();
    let ticket = create(&ws);
    assert_eq!(index.outbox().unwrap().len(), 1);

    fx.crash(&["comment", ticket.as_str(), "written before the crash"]);

    // The files have the comment...
    let thread = ws.read_thread(&ticket).unwrap();
    assert_eq!(thread.events.len(), 2);
    let event = thread.events.last().unwrap();
    assert_eq!(event.body.trim(), "written before the crash");
    let id = event.id().unwrap().to_string();
    // ...the database does not, and doctor names exactly that gap.
    assert!(!has_event(&index, &ticket, &id));
    assert_eq!(outbox_rows(&index, &id), Vec::<String>::new());
    assert_eq!(index.outbox().unwrap().len(), 1);
    let t = ticket.to_string();
    assert_eq!(
        checks(&index, &ws),
        vec![
            ("index.missing_event", t.clone()),
            ("index.stale_ticket", t.clone()),
            ("outbox.missing", t.clone()),
        ]
    );
    drop((ws, index));

    // A new start catches up: the event is indexed, with exactly one outbox row.
    let (ws, index, stats) = fx.start();
    assert_eq!((stats.reindexed, stats.outbox_added), (1, 1), "{stats:?}");
    assert!(has_event(&index, &ticket, &id));
    assert_eq!(outbox_rows(&index, &id), vec!["ticket_commented"]);
    let row = index.indexed_ticket(&ticket).unwrap().unwrap();
    assert_eq!(row.updated_at, "2026-11-29T11:00:00Z");
    assert_eq!(checks(&index, &ws), Vec::new());
    let report = doctor::run_with_index(&ws, &index, false).unwrap();
    assert!(report.ok && report.findings.is_empty(), "{report:?}");
    drop((ws, index));

    // Starting again finds nothing left to do and adds no second row.
    let (_, index, stats) = fx.start();
    assert_eq!((stats.reindexed, stats.outbox_added), (0, 0), "{stats:?}");
    assert_eq!(outbox_rows(&index, &id), vec!["ticket_commented"]);
}

fn state_change_written_before_a_crash_reaches_the_index_on_the_next_start(b: Backend) {
    let fx = Fx::new(b);
    let (ws, index, _) = fx.start();
    let ticket = create(&ws);

    fx.crash(&["ready", ticket.as_str()]);

    assert_eq!(ws.read_item(&ticket).unwrap().state, State::Ready);
    let event = ws.read_thread(&ticket).unwrap().events.pop().unwrap();
    assert_eq!(event.get("to"), Some("ready"));
    let id = event.id().unwrap().to_string();
    let row = |index: &DbIndex| index.indexed_ticket(&ticket).unwrap().unwrap().state;
    assert_eq!(row(&index), State::Planning, "the index missed the change");
    assert_eq!(outbox_rows(&index, &id), Vec::<String>::new());
    let t = ticket.to_string();
    assert_eq!(
        checks(&index, &ws),
        vec![
            ("index.missing_event", t.clone()),
            ("index.stale_ticket", t.clone()),
            ("outbox.missing", t.clone()),
        ]
    );
    drop((ws, index));

    let (ws, index, stats) = fx.start();
    assert_eq!((stats.reindexed, stats.outbox_added), (1, 1), "{stats:?}");
    assert_eq!(row(&index), State::Ready);
    assert!(has_event(&index, &ticket, &id));
    assert_eq!(outbox_rows(&index, &id), vec!["ticket_ready"]);
    assert_eq!(checks(&index, &ws), Vec::new());
}
