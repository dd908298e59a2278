//! `yoi-bench-routing YOI_BINARY [TICKETS] [RELATIONS] [MAX_INPROGRESS]`: route a workspace of
//! queued tickets to a fixed point with a real `yoi serve` and report the time, the decisions
//! written, the acceptances and any duplicate decision.
//!
//! A git repository with one commit holds TICKETS (default 1,000) generated tickets, all
//! `queued`, each with a complete brief and its own write scope, and about RELATIONS (default
//! 1,000) `depends_on` relations to older tickets (fixed seed, see [`yoi_tests::generate`]).
//! `yoi init` indexes them; then `yoi serve` starts with `[router] max_inprogress =
//! MAX_INPROGRESS` (default: TICKETS, so every unblocked ticket is accepted with its branch and
//! worktree) and the clock runs from its `listening` line until `GET /api/v1/router` reports
//! `settled` (every outbox event handled, no pass running, nothing in a retry backoff).
//!
//! `yoi-bench-routing threads [TICKETS] [EVENTS] [PASSES]`: what a thread's length costs a
//! routing pass (issue 45), in process, against the same tickets with one-event threads in the
//! same run. TICKETS (default 500) generated queued tickets with about as many `depends_on`
//! relations, their index in SQLite, `max_inprogress = 0` (nothing is accepted: every pass
//! decides every ticket and, after the first, writes nothing). PASSES (default 21) passes are
//! timed on the one-event threads; then EVENTS (default 999) events are appended to every
//! thread by hand, as a pull brings them (comments, the orchestrator's decisions, a move out of
//! the queue and one back into it halfway), the index reads them, and PASSES passes are timed
//! again. Reported: the median wall and CPU time of a pass (this process's, every thread's:
//! the database is in it), long / short, and for reference the same tickets decided from the
//! whole thread files (`decide_in`, what a pass read before it read the index).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use yoi_core::decision::parse_kind;
use yoi_core::state::State;
use yoi_core::thread::EventKind;
use yoi_core::{Principal, TicketId};
use yoi_testkit::git;
use yoi_tests::generate::{generate_in, SEED};
use yoi_tests::{yoi_init, yoi_serve};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("threads") {
        return threads(&args[2..]);
    }
    let usage = "usage: yoi-bench-routing YOI_BINARY [TICKETS] [RELATIONS] [MAX_INPROGRESS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let tickets: usize = args.get(2).map(|s| s.parse().expect(usage)).unwrap_or(1000);
    let relations: usize = args.get(3).map(|s| s.parse().expect(usage)).unwrap_or(1000);
    let max: usize = args
        .get(4)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(tickets);

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "bench\n").unwrap();
    yoi_store::init(root, "main").unwrap();
    let made = generate_in(root, tickets, relations, Some(State::Queued));
    let config = root.join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("max_inprogress = 4", &format!("max_inprogress = {max}"));
    std::fs::write(&config, text).unwrap();
    yoi_testkit::commit_all(root, "base");
    println!(
        "seed {SEED:#x}: {tickets} queued tickets, {made} depends_on relations, max_inprogress {max}"
    );
    let token = yoi_init(&yoi, root);

    let (server, addr) = yoi_serve(&yoi, root);
    let start = Instant::now();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let status = loop {
        let mut resp = agent
            .get(format!("http://{addr}/api/v1/router"))
            .header("Authorization", format!("Bearer {token}"))
            .call()
            .unwrap();
        let status: serde_json::Value =
            serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        if status["settled"] == true {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(1800),
            "did not settle: {status}"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    server.stop();

    let ws = yoi_store::Workspace::open(root).unwrap();
    let orchestrator = Principal::orchestrator().author();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut duplicates = 0;
    let mut states: BTreeMap<State, usize> = BTreeMap::new();
    let mut ids: Vec<TicketId> = ws.ticket_ids().unwrap();
    ids.sort();
    for id in &ids {
        *states.entry(ws.read_item(id).unwrap().state).or_default() += 1;
        let bodies: Vec<String> = ws
            .read_thread(id)
            .unwrap()
            .events
            .into_iter()
            .filter(|e| e.kind == EventKind::Decision && e.author() == Some(orchestrator.as_str()))
            .map(|e| e.body)
            .collect();
        duplicates += bodies.windows(2).filter(|w| w[0] == w[1]).count();
        for b in &bodies {
            *kinds.entry(parse_kind(b).unwrap_or_default()).or_default() += 1;
        }
    }
    let worktrees = git(root, &["worktree", "list", "--porcelain"])
        .matches("worktree ")
        .count()
        - 1;
    let decisions: usize = kinds.values().sum();
    println!(
        "settled in {:.2}s: {} passes, {} decisions written, {} accepted, {} linked worktrees, {} duplicate decisions",
        elapsed.as_secs_f64(),
        status["passes"],
        decisions,
        states.get(&State::Inprogress).copied().unwrap_or(0),
        worktrees,
        duplicates
    );
    println!("decisions by kind: {kinds:?}");
    println!("states: {states:?}");
    assert_eq!(duplicates, 0, "a decision was written twice in a row");
}

/// This process's CPU time so far, every thread's, in seconds.
fn cpu_secs() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// `n` events of a queued ticket's later life, written at seconds `from..`: comments, the
/// orchestrator's waiting decision every 50 events, a move out of the queue at a quarter and
/// back into it at half (so the circuit's window holds the second half).
fn later_life(n: usize, from: usize) -> Vec<yoi_core::thread::Event> {
    use yoi_core::decision::RoutingDecision;
    use yoi_core::thread::Event;
    let orchestrator = Principal::orchestrator().author();
    let waiting = RoutingDecision::WaitingCapacity {
        in_progress: 0,
        max: 0,
    };
    (0..n)
        .map(|i| {
            let k = from + i;
            let e = if i == n / 4 {
                Event::new(EventKind::StateChanged, "Accepted.")
                    .with_attr("author", orchestrator.clone())
                    .with_attr("from", "queued")
                    .with_attr("to", "inprogress")
            } else if i == n / 2 {
                Event::new(EventKind::StateChanged, "Back to the queue.")
                    .with_attr("author", "alice")
                    .with_attr("from", "inprogress")
                    .with_attr("to", "queued")
            } else if i % 50 == 1 {
                Event::new(EventKind::Decision, &waiting.render_event())
                    .with_attr("author", orchestrator.clone())
            } else {
                Event::new(
                    EventKind::Comment,
                    &format!("Comment {k}: **progress** on `the thing`, see the docs."),
                )
                .with_attr("author", "alice")
            };
            let mut e = e.with_attr(
                "at",
                format!(
                    "2026-03-02T{:02}:{:02}:{:02}Z",
                    k / 3600 % 24,
                    k / 60 % 60,
                    k % 60
                ),
            );
            e.attrs.insert(
                0,
                (
                    "id".into(),
                    ulid::Ulid::from_parts(1_700_000_000_000 + k as u64, k as u128).to_string(),
                ),
            );
            e
        })
        .collect()
}

/// The median (wall, CPU) seconds of `passes` routing passes over every queued ticket.
fn time_passes(ws: &yoi_store::Workspace, db: &yoi_db::DbIndex, passes: usize) -> (f64, f64) {
    use yoi_engine::routing::{run_pass, PassHooks, RouteConfig, Targets};
    let cfg = RouteConfig::of(ws);
    let hooks = PassHooks {
        turn: &|| Box::new(()),
        stop: &|| false,
        clock: &|| yoi_core::Timestamp::parse("2026-03-05T00:00:00Z").unwrap(),
    };
    let hold = Default::default();
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..passes {
        let (t, c) = (Instant::now(), cpu_secs());
        let results = run_pass(ws, db, &cfg, &Targets::All, &hold, &hooks).unwrap();
        wall.push(t.elapsed().as_secs_f64());
        cpu.push(cpu_secs() - c);
        assert!(
            results.iter().all(|(_, r)| r.is_ok()),
            "a ticket failed to route"
        );
        let wrote: Vec<_> = results
            .iter()
            .filter(|(_, r)| r.as_ref().unwrap().wrote())
            .collect();
        assert!(
            wrote.is_empty(),
            "a timed pass wrote: {} of them, first {:?}",
            wrote.len(),
            wrote.first()
        );
    }
    (yoi_tests::median(wall).0, yoi_tests::median(cpu).0)
}

/// One pass that writes each ticket's decision where it changed, so the timed ones write
/// nothing.
fn warm_up(ws: &yoi_store::Workspace, db: &yoi_db::DbIndex) {
    use yoi_engine::routing::{run_pass, PassHooks, RouteConfig, Targets};
    let hooks = PassHooks {
        turn: &|| Box::new(()),
        stop: &|| false,
        clock: &|| yoi_core::Timestamp::parse("2026-03-05T00:00:00Z").unwrap(),
    };
    let results = run_pass(
        ws,
        db,
        &RouteConfig::of(ws),
        &Targets::All,
        &Default::default(),
        &hooks,
    );
    assert!(
        results.unwrap().iter().all(|(_, r)| r.is_ok()),
        "a ticket failed to route"
    );
}

/// The median seconds of deciding every queued ticket from its whole thread file.
fn time_files(ws: &yoi_store::Workspace, passes: usize) -> f64 {
    let snap = yoi_engine::routing::Snapshot::load(ws).unwrap();
    let queued = snap.queued();
    let mut wall = Vec::new();
    for _ in 0..passes {
        let t = Instant::now();
        for id in &queued {
            yoi_engine::routing::decide_in(ws, &snap, id, 0).unwrap();
        }
        wall.push(t.elapsed().as_secs_f64());
    }
    yoi_tests::median(wall).0
}

fn threads(args: &[String]) {
    let usage = "usage: yoi-bench-routing threads [TICKETS] [EVENTS] [PASSES]";
    let arg = |i: usize, default: usize| {
        args.get(i)
            .map(|s| s.parse().expect(usage))
            .unwrap_or(default)
    };
    let (tickets, events, passes) = (arg(0, 500), arg(1, 999), arg(2, 21));
    let rt = yoi_tests::runtime();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "bench\n").unwrap();
    yoi_store::init(root, "main").unwrap();
    let made = generate_in(root, tickets, tickets, Some(State::Queued));
    let config = root.join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("max_inprogress = 4", "max_inprogress = 0");
    std::fs::write(&config, text).unwrap();
    yoi_testkit::commit_all(root, "base");
    let mut ws = yoi_tests::open(root);
    let (db, _) = yoi_db::DbIndex::attach(
        &mut ws,
        yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
    )
    .unwrap();
    println!(
        "seed {SEED:#x}: {tickets} queued tickets, {made} depends_on relations, max_inprogress 0, {passes} passes each"
    );
    let ids: Vec<TicketId> = ws.ticket_ids().unwrap();
    // The first pass writes each ticket's decision; the timed ones decide and write nothing.
    warm_up(&ws, &db);
    let (short, short_cpu) = time_passes(&ws, &db, passes);
    let short_files = time_files(&ws, passes);
    let thread_len = |id: &TicketId| ws.read_thread(id).unwrap().events.len();
    let short_len = thread_len(&ids[0]);

    for (i, id) in ids.iter().enumerate() {
        let path = ws.path_of(id, yoi_store::tickets::THREAD);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push('\n');
        text.push_str(&yoi_core::thread::render_thread(&later_life(
            events,
            i * events,
        )));
        std::fs::write(&path, text).unwrap();
    }
    let t = Instant::now();
    db.refresh(&ws, &ids).unwrap();
    let indexing = t.elapsed().as_secs_f64();
    warm_up(&ws, &db);
    let (long, long_cpu) = time_passes(&ws, &db, passes);
    let long_files = time_files(&ws, passes);
    let long_len = thread_len(&ids[0]);
    println!(
        "index read the appended {} events in {indexing:.2}s",
        tickets * events
    );
    println!(
        "pass over {tickets} tickets, {short_len}-event threads: {:.1} ms wall, {:.1} ms CPU; decided from the files: {:.1} ms",
        short * 1e3,
        short_cpu * 1e3,
        short_files * 1e3
    );
    println!(
        "pass over {tickets} tickets, {long_len}-event threads: {:.1} ms wall, {:.1} ms CPU; decided from the files: {:.1} ms",
        long * 1e3,
        long_cpu * 1e3,
        long_files * 1e3
    );
    println!(
        "long / short: pass {:.3} wall, {:.3} CPU; from the files {:.2}",
        long / short,
        long_cpu / short_cpu,
        long_files / short_files
    );
    db.close();
}
