//! `yoi-bench-threads YOI_BINARY [EVENTS] [TICKETS] [REQUESTS]`: what long threads cost
//! (issue 45's thread-length goals), each figure next to its reference in the same run.
//!
//! Two workspaces with the same TICKETS queued tickets (default 5): in the first, each thread
//! holds the few events the operations wrote and the last 20 of a long life (so its board
//! shows the same latest decision and move); in the second, EVENTS events (default 125,000)
//! are appended to those threads by hand, split evenly, as a `git pull` would bring them — a
//! ticket's long life: comments, attempts, reports, reviews, the orchestrator's decisions, and
//! a move out of the queue and back every 500 events. Measured:
//! - the first read after the threads arrive (`yoi ticket list --json`, no server: it indexes
//!   what changed), in events per second, against the same read of the short-thread workspace
//!   after those 20-event appends, and against `cat` of the long thread files;
//! - with `yoi serve` on each (no routing, no pods), REQUESTS (default 100) sequential requests
//!   of the board `/`, `/queue`, `/tickets` and `GET /api/v1/tickets?limit=50`, alternating
//!   between the two servers (each pair in turn order): p50 and p95 of each, each server's
//!   CPU time per request, and long / short of the medians and of the CPU times;
//! - `GET /api/v1/tickets/{id}` of a long-thread ticket: the default answer (the latest 100
//!   events; kept after the first), a page at a cursor asked for the first time (what making
//!   a page costs), against `?all=true` (the whole thread, streamed), time and bytes, and the
//!   server's peak RSS before and after the whole threads are read.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use yoi_core::decision::RoutingDecision;
use yoi_core::thread::{render_thread, Event, EventKind};
use yoi_core::{Principal, Timestamp};
use yoi_store::ops::{self, CreateRequest, TransitionRequest};
use yoi_store::Ctx;

/// Events in each thread of the short-thread workspace (besides those the operations wrote).
const SHORT: usize = 20;

const BRIEF: &str =
    "## Intent\nDo it.\n\n## Acceptance criteria\n- done\n\n## Validation\n`true`\n";

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// A workspace of `tickets` queued tickets, routing off and no pods; its admin token.
fn workspace(yoi: &Path, root: &Path, tickets: usize) -> (Vec<String>, String) {
    yoi_testkit::git(root, &["init", "-q", "-b", "main"]);
    yoi_store::init(root, "main").unwrap();
    yoi_tests::no_routing_no_pods(root);
    let ws = yoi_tests::open(root);
    let alice = Ctx::new(
        Principal::human("alice"),
        Timestamp::parse("2026-03-01T10:00:00Z").unwrap(),
    );
    let ids = (0..tickets)
        .map(|i| {
            let req = CreateRequest {
                title: format!("Long-lived ticket {i}"),
                body: BRIEF.into(),
                depends_on: Vec::new(),
            };
            let id = ops::create(&ws, &alice, &req).unwrap().ticket.to_string();
            let t = TransitionRequest::default();
            ops::mark_ready(&ws, &alice, &id, &t).unwrap();
            ops::queue(&ws, &alice, &id, &t).unwrap();
            id
        })
        .collect();
    let token = yoi_tests::yoi_init(yoi, root);
    (ids, token)
}

/// `n` events of a ticket's long life, starting at second `from` of the day.
fn life(n: usize, from: usize) -> Vec<Event> {
    let orchestrator = Principal::orchestrator().author();
    let capacity = RoutingDecision::WaitingCapacity {
        in_progress: 1,
        max: 1,
    };
    (0..n)
        .map(|i| {
            let k = from + i;
            let at = format!(
                "2026-03-{:02}T{:02}:{:02}:{:02}Z",
                2 + k / 86_400 % 27,
                k / 3600 % 24,
                k / 60 % 60,
                k % 60
            );
            let e = match i % 500 {
                0 => Event::new(EventKind::StateChanged, "Accepted.")
                    .with_attr("author", orchestrator.clone())
                    .with_attr("from", "queued")
                    .with_attr("to", "inprogress"),
                499 => Event::new(EventKind::StateChanged, "Back to the queue.")
                    .with_attr("author", "alice")
                    .with_attr("from", "inprogress")
                    .with_attr("to", "queued"),
                j if j % 50 == 1 => Event::new(EventKind::Decision, &capacity.render_event())
                    .with_attr("author", orchestrator.clone()),
                j if j % 50 == 2 => Event::new(
                    EventKind::Assignment,
                    &format!("Attempt {k} ended: completed."),
                )
                .with_attr("author", "yoi"),
                j if j % 50 == 3 => Event::new(
                    EventKind::ImplementationReport,
                    &format!("Changed `src/lib.rs` and `src/main.rs`; commit {k:040x}."),
                )
                .with_attr("author", "pod:coder"),
                j if j % 50 == 4 => Event::new(
                    EventKind::Review,
                    "Request changes: the error path is untested.\n\n- add a test for the timeout",
                )
                .with_attr("author", "pod:reviewer"),
                _ => Event::new(
                    EventKind::Comment,
                    &format!(
                        "Comment {k}: **progress** on `the thing`, see [the docs](https://example.invalid/{k})."
                    ),
                )
                .with_attr("author", "alice"),
            };
            let id = ulid::Ulid::from_parts(1_700_000_000_000 + k as u64, k as u128).to_string();
            let mut e = e.with_attr("at", at);
            e.attrs.insert(0, ("id".into(), id));
            e
        })
        .collect()
}

/// Append `events` to `id`'s thread.md by hand (as a pull would).
fn append(root: &Path, id: &str, events: &[Event]) {
    let path = root.join(".yoi/tickets").join(id).join("thread.md");
    let mut text = std::fs::read_to_string(&path).unwrap();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push('\n');
    text.push_str(&render_thread(events));
    std::fs::write(&path, text).unwrap();
}

/// `yoi ticket list --json` in `root`, timed (seconds).
fn first_read(yoi: &Path, root: &Path) -> f64 {
    let t = Instant::now();
    let out = Command::new(yoi)
        .args(["ticket", "list", "--json"])
        .current_dir(root)
        .output()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    secs
}

/// The CPU time the process `pid` has used so far, every thread's, in nanoseconds
/// (`/proc/PID/task/*/schedstat`): the work a server did, apart from the time it waited.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

struct Server {
    served: yoi_tests::Served,
    base: String,
    cookie: String,
    token: String,
}

fn serve(yoi: &Path, root: &Path, token: String) -> Server {
    let (served, addr, login) = yoi_tests::yoi_serve_with_login(yoi, root);
    Server {
        served,
        base: format!("http://{addr}"),
        cookie: yoi_testkit::dashboard_session(&login),
        token,
    }
}

impl Server {
    /// One GET, timed to its last byte: (ms, bytes).
    fn get(&self, agent: &ureq::Agent, path: &str) -> (f64, usize) {
        let t = Instant::now();
        let req = agent.get(&format!("{}{path}", self.base));
        let req = if path.starts_with("/api/") {
            req.header("Authorization", &format!("Bearer {}", self.token))
        } else {
            req.header("Cookie", &self.cookie)
        };
        let mut r = req.call().unwrap();
        let body = r
            .body_mut()
            .with_config()
            .limit(u64::MAX)
            .read_to_vec()
            .unwrap();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(r.status(), 200, "GET {path}");
        (ms, body.len())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-threads YOI_BINARY [EVENTS] [TICKETS] [REQUESTS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let num = |i: usize, d: usize| args.get(i).map_or(d, |a| a.parse().expect(usage));
    let (events, tickets, requests) = (num(2, 125_000), num(3, 5), num(4, 100));
    let per = events / tickets;

    let short_dir = tempfile::tempdir().unwrap();
    let long_dir = tempfile::tempdir().unwrap();
    let (short_ids, short_token) = workspace(&yoi, short_dir.path(), tickets);
    let (long_ids, long_token) = workspace(&yoi, long_dir.path(), tickets);
    println!(
        "{tickets} queued tickets in each workspace; {per} events appended to each long thread"
    );

    // The first read after the threads arrive. The short threads get the long ones' last
    // events, so both boards show the same latest decision and move.
    for (i, id) in short_ids.iter().enumerate() {
        let tail = life(per, i * per).split_off(per.saturating_sub(SHORT));
        append(short_dir.path(), id, &tail);
    }
    for (i, id) in long_ids.iter().enumerate() {
        append(long_dir.path(), id, &life(per, i * per));
    }
    let bytes: u64 = long_ids
        .iter()
        .map(|id| {
            let p = long_dir
                .path()
                .join(".yoi/tickets")
                .join(id)
                .join("thread.md");
            std::fs::metadata(p).unwrap().len()
        })
        .sum();
    // `YOI_BENCH_KEEP=1` keeps both workspaces, and the long one's index as it was before its
    // first read in `.yoi/local.before` (to profile that read again: copy it back first).
    if std::env::var_os("YOI_BENCH_KEEP").is_some() {
        let local = long_dir.path().join(".yoi/local");
        let before = long_dir.path().join(".yoi/local.before");
        assert!(Command::new("cp")
            .arg("-a")
            .arg(&local)
            .arg(&before)
            .status()
            .unwrap()
            .success());
    }
    let t = Instant::now();
    for id in &long_ids {
        let p = long_dir
            .path()
            .join(".yoi/tickets")
            .join(id)
            .join("thread.md");
        std::hint::black_box(std::fs::read(p).unwrap());
    }
    let cat = t.elapsed().as_secs_f64();
    let short = first_read(&yoi, short_dir.path());
    let long = first_read(&yoi, long_dir.path());
    let again = first_read(&yoi, long_dir.path());
    let total = per * tickets;
    println!(
        "first read, {total} new events ({:.1} MB): {long:.3} s = {:.0} events/s \
         ({:.0} events/s above the short workspace's {short:.3} s); read again {again:.3} s; \
         reading the thread files alone {:.1} ms",
        bytes as f64 / 1e6,
        total as f64 / long,
        total as f64 / (long - short).max(1e-9),
        cat * 1000.0
    );

    // Board, queue and lists, alternating between the two servers.
    let short_srv = serve(&yoi, short_dir.path(), short_token);
    let long_srv = serve(&yoi, long_dir.path(), long_token);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    // Both servers first settle: their outbox consumers read the new events, and every write
    // they make starts the kept answers over, so a list answered from memory twice in a row
    // (`Cache-Status: yoi; hit`) is the fixed point to measure from.
    for (name, srv) in [("short", &short_srv), ("long", &long_srv)] {
        let t = Instant::now();
        let mut hits = 0;
        while hits < 2 && t.elapsed().as_secs() < 120 {
            let r = agent
                .get(&format!("{}/api/v1/tickets?limit=50", srv.base))
                .header("Authorization", &format!("Bearer {}", srv.token))
                .call()
                .unwrap();
            let hit = r
                .headers()
                .get("cache-status")
                .is_some_and(|v| v.to_str().unwrap_or("") == "yoi; hit");
            hits = if hit { hits + 1 } else { 0 };
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        println!(
            "{name} server settled in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    // Each pair of requests in turn order (short first, then long first), so neither server
    // always answers right after the other; besides the times, each server's CPU time per
    // request (its own work, whatever the other processes on the machine do to the wait).
    let (short_pid, long_pid) = (short_srv.served.0.id(), long_srv.served.0.id());
    for path in ["/", "/queue", "/tickets", "/api/v1/tickets?limit=50"] {
        let (mut s, mut l) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            short_srv.get(&agent, path);
            long_srv.get(&agent, path);
        }
        let (s_cpu, l_cpu) = (cpu_ns(short_pid), cpu_ns(long_pid));
        for i in 0..requests {
            if i % 2 == 0 {
                s.push(short_srv.get(&agent, path).0);
                l.push(long_srv.get(&agent, path).0);
            } else {
                l.push(long_srv.get(&agent, path).0);
                s.push(short_srv.get(&agent, path).0);
            }
        }
        let per = |now: u64, was: u64| now.saturating_sub(was) as f64 / 1e6 / requests as f64;
        let (s_cpu, l_cpu) = (per(cpu_ns(short_pid), s_cpu), per(cpu_ns(long_pid), l_cpu));
        s.sort_by(f64::total_cmp);
        l.sort_by(f64::total_cmp);
        println!(
            "{path:<28} short threads p50 {:>6.2} ms p95 {:>6.2} ms cpu {s_cpu:.2} ms | long threads p50 {:>6.2} ms p95 {:>6.2} ms cpu {l_cpu:.2} ms | long/short p50 {:.2} cpu {:.2}",
            pct(&s, 0.5),
            pct(&s, 0.95),
            pct(&l, 0.5),
            pct(&l, 0.95),
            pct(&l, 0.5) / pct(&s, 0.5),
            l_cpu / s_cpu
        );
    }

    // One long ticket through the API: its latest page, then the whole thread.
    let id = &long_ids[0];
    let pid = long_srv.served.0.id();
    let rss_before = peak_rss_kib(pid);
    let mut page = Vec::new();
    let mut page_bytes = 0;
    for _ in 0..requests {
        let (ms, b) = long_srv.get(&agent, &format!("/api/v1/tickets/{id}"));
        page.push(ms);
        page_bytes = b;
    }
    page.sort_by(f64::total_cmp);
    // Pages no answer was kept for (each ends at a cursor asked for the first time): what a
    // page costs to make.
    let mut fresh = Vec::new();
    for i in 0..requests {
        let before = per - 1 - i % per;
        let path = format!("/api/v1/tickets/{id}?before={before}");
        fresh.push(long_srv.get(&agent, &path).0);
    }
    fresh.sort_by(f64::total_cmp);
    let mut whole = Vec::new();
    let mut whole_bytes = 0;
    for _ in 0..5 {
        let (ms, b) = long_srv.get(&agent, &format!("/api/v1/tickets/{id}?all=true"));
        whole.push(ms);
        whole_bytes = b;
    }
    whole.sort_by(f64::total_cmp);
    println!(
        "GET /api/v1/tickets/{{id}}, {per} events: latest 100 p50 {:.2} ms p95 {:.2} ms, {page_bytes} bytes; \
         a page not kept before (?before=P) p50 {:.2} ms p95 {:.2} ms; \
         ?all=true p50 {:.1} ms, {whole_bytes} bytes; server peak RSS {:.1} MiB before, {:.1} MiB after",
        pct(&page, 0.5),
        pct(&page, 0.95),
        pct(&fresh, 0.5),
        pct(&fresh, 0.95),
        pct(&whole, 0.5),
        rss_before as f64 / 1024.0,
        peak_rss_kib(pid) as f64 / 1024.0
    );
    short_srv.served.stop();
    long_srv.served.stop();
    if std::env::var_os("YOI_BENCH_KEEP").is_some() {
        println!(
            "kept: short {} long {}",
            short_dir.keep().display(),
            long_dir.keep().display()
        );
    }
}
