//! `yoi-bench-api-load YOI_BINARY [SECONDS] [TICKETS] [CONNECTIONS] [WRITES_PER_S]`: the API's
//! reads with the workspace at work beside them (issue 45, "reads under load"), on SQLite and
//! on PostgreSQL in one run.
//!
//! For each database (SQLite, then a throwaway PostgreSQL database from the test kit's cluster)
//! a workspace of TICKETS generated tickets (default 1,000) is indexed by `yoi init` and served
//! by `yoi serve` on loopback with its three supervised pods (coder, verifier, reviewer; the
//! router off, so the pods poll and find nothing) — the pods are waited for before anything is
//! measured. `autocannon` then loads, one after another, with CONNECTIONS keep-alive
//! connections (default 50) for SECONDS each (default 10, after a 2-second warm-up):
//! `GET /healthz`, `GET /api/v1/tickets/{id}` of one ticket and `GET /api/v1/tickets?limit=50`;
//! first idle, then again while a writer posts WRITES_PER_S comments a second (default 10)
//! through the API on other tickets than the one shown. Each row gives requests/s and p99 idle
//! and loaded, the loaded rate against the idle one and against `/healthz` loaded, the comments
//! the writer made (and their p99), and the load average of the machine before and after.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use yoi_tests::autocannon::{self, Load, Target};
use yoi_tests::{disable_routing, yoi_init, yoi_serve};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage =
        "usage: yoi-bench-api-load YOI_BINARY [SECONDS] [TICKETS] [CONNECTIONS] [WRITES_PER_S]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let arg = |i: usize, default: u64| -> u64 {
        args.get(i)
            .map(|s| s.parse().expect(usage))
            .unwrap_or(default)
    };
    let seconds = arg(2, 10);
    let tickets = arg(3, 1000) as usize;
    let connections = arg(4, 50) as usize;
    let rate = arg(5, 10);
    println!(
        "autocannon, {connections} connections, {seconds} s each after a 2 s warm-up; {tickets} tickets; writes: {rate} comments/s through the API on other tickets"
    );
    for postgres in [false, true] {
        run(&yoi, postgres, seconds, tickets, connections, rate);
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn run(
    yoi: &std::path::Path,
    postgres: bool,
    seconds: u64,
    tickets: usize,
    conns: usize,
    rate: u64,
) {
    let db = if postgres { "PostgreSQL" } else { "SQLite" };
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = dir.path();
    yoi_testkit::git(root, &["init", "-q", "-b", "main"]);
    yoi_store::init(root, "main").expect("yoi's files initialise");
    if postgres {
        let url = yoi_testkit::pg::database();
        std::fs::write(root.join(".yoi/local/database.url"), format!("{url}\n")).unwrap();
    }
    yoi_tests::generate::generate(root, tickets, tickets * 2);
    let token = yoi_init(yoi, root);
    disable_routing(root);
    // Three supervised pods whose agent is never run: nothing is queued for them.
    let config = root.join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[pods.agent]\n",
        "[pods.agent]\ncoder = \"idle\"\nreviewer = \"idle\"\n",
    );
    let text = format!(
        "{text}\n[agents.idle]\nprogram = \"/bin/true\"\nargv = [\"{{program}}\"]\noutput = \"text\"\n"
    );
    std::fs::write(&config, text).unwrap();

    let mut ids: Vec<String> = std::fs::read_dir(root.join(".yoi/tickets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    let shown = ids[ids.len() / 2].clone();
    let others: Vec<String> = ids.iter().filter(|i| **i != shown).cloned().collect();

    let (server, addr) = yoi_serve(yoi, root);
    let pods = wait_for_pods(&addr, &token, 3, Duration::from_secs(60));
    println!("\n{db}: {pods} pods live");

    let targets = [
        ("GET /healthz", format!("http://{addr}/healthz"), false),
        (
            "GET /api/v1/tickets/{id}",
            format!("http://{addr}/api/v1/tickets/{shown}"),
            true,
        ),
        (
            "GET /api/v1/tickets?limit=50",
            format!("http://{addr}/api/v1/tickets?limit=50"),
            true,
        ),
    ];
    let tool = autocannon::tool();
    let measure = |url: &str, auth: bool| -> Load {
        let target = Target::Url(url.to_string());
        let token = auth.then_some(token.as_str());
        let _ = autocannon::run(&tool, &target, token, conns, 2);
        autocannon::run(&tool, &target, token, conns, seconds)
    };

    let idle_before = loadavg();
    let idle: Vec<Load> = targets.iter().map(|(_, u, a)| measure(u, *a)).collect();
    let idle_after = loadavg();

    let writer = Writer::start(addr.clone(), token.clone(), others, rate);
    let loaded_before = loadavg();
    let loaded: Vec<Load> = targets.iter().map(|(_, u, a)| measure(u, *a)).collect();
    let loaded_after = loadavg();
    let written = writer.stop();
    let pods_after = wait_for_pods(&addr, &token, 3, Duration::from_secs(5));

    println!(
        "load average idle {idle_before} → {idle_after}; loaded {loaded_before} → {loaded_after}"
    );
    println!(
        "writer: {} comments in {:.1} s ({:.1}/s), p99 {:.1} ms, {} failed; {pods_after} pods live after",
        written.done,
        written.secs,
        written.done as f64 / written.secs,
        written.p99_ms,
        written.failed
    );
    println!("| {db} | idle /s | idle p99 | with writes /s | with writes p99 | of idle | of /healthz with writes | errors |");
    println!("|---|---|---|---|---|---|---|---|");
    let ceiling = loaded[0].rps;
    for (i, (name, ..)) in targets.iter().enumerate() {
        let (a, b) = (&idle[i], &loaded[i]);
        println!(
            "| {name} | {:.0} | {:.1} ms | {:.0} | {:.1} ms | {:.2} | {:.2} | {} |",
            a.rps,
            a.p99,
            b.rps,
            b.p99,
            b.rps / a.rps,
            b.rps / ceiling,
            a.errors + a.non2xx + b.errors + b.non2xx
        );
    }
    server.stop();
}

/// How many pods the server lists as live, once `want` are or `limit` passed.
fn wait_for_pods(addr: &str, token: &str, want: usize, limit: Duration) -> usize {
    let started = Instant::now();
    loop {
        let r: serde_json::Value = ureq::get(&format!("http://{addr}/api/v1/pods"))
            .header("authorization", &format!("Bearer {token}"))
            .call()
            .ok()
            .and_then(|mut r| r.body_mut().read_json().ok())
            .unwrap_or_default();
        let live = r["pods"]
            .as_array()
            .map(|p| p.iter().filter(|p| p["state"] != "stopped").count())
            .unwrap_or(0);
        if live >= want || started.elapsed() > limit {
            return live;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Comments through the API at a steady rate on the given tickets, in turn.
struct Writer {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Written>,
}

struct Written {
    done: usize,
    failed: usize,
    secs: f64,
    p99_ms: f64,
}

impl Writer {
    fn start(addr: String, token: String, tickets: Vec<String>, rate: u64) -> Writer {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            let every = Duration::from_secs_f64(1.0 / rate.max(1) as f64);
            let started = Instant::now();
            let times = Mutex::new(Vec::new());
            let mut failed = 0;
            let mut n = 0usize;
            while !flag.load(Ordering::Relaxed) {
                let due = started + every * n as u32;
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                let id = &tickets[n % tickets.len()];
                let t = Instant::now();
                let ok = agent
                    .post(&format!("http://{addr}/api/v1/tickets/{id}/comments"))
                    .header("authorization", &format!("Bearer {token}"))
                    .send_json(serde_json::json!({ "body": format!("comment {n} under load") }))
                    .map(|r| r.status().is_success())
                    .unwrap_or(false);
                if ok {
                    times
                        .lock()
                        .unwrap()
                        .push(t.elapsed().as_secs_f64() * 1000.0);
                } else {
                    failed += 1;
                }
                n += 1;
            }
            let mut times = times.into_inner().unwrap();
            times.sort_by(|a, b| a.total_cmp(b));
            let p99_ms = times
                .get((times.len() * 99 / 100).min(times.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0.0);
            Written {
                done: times.len(),
                failed,
                secs: started.elapsed().as_secs_f64(),
                p99_ms,
            }
        });
        Writer { stop, thread }
    }

    fn stop(self) -> Written {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the writer ends")
    }
}
