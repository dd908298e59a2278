//! `yoi-bench-api YOI_BINARY [CLIENTS] [SECONDS] [TICKETS] [COMMENT_PERCENT]`: load the HTTP API
//! of a real `yoi serve` and report requests/s and latency percentiles.
//!
//! A workspace of TICKETS generated tickets (default 10,000, see [`yoi_tests::generate`]) is
//! indexed by `yoi init`, then served on 127.0.0.1:0. CLIENTS threads (default 50), each with
//! its own keep-alive connection, send requests back to back for SECONDS (default 20, after a
//! 3-second warm-up that is not counted): COMMENT_PERCENT (default 10) `POST …/comments` on a
//! random ticket, the rest split evenly between `GET /api/v1/tickets?limit=50` and
//! `GET /api/v1/tickets/{id}` of a random ticket.
//! Each client's choices come from a fixed seed (printed), so runs send the same mix.

use std::time::{Duration, Instant};

use yoi_tests::generate::{Rng, SEED};
use yoi_tests::yoi_serve;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Show,
    Comment,
}

const KINDS: [(Kind, &str); 3] = [
    (Kind::List, "GET /tickets?limit=50"),
    (Kind::Show, "GET /tickets/{id}"),
    (Kind::Comment, "POST /tickets/{id}/comments"),
];

#[derive(Default)]
struct Samples {
    /// Latencies in microseconds, per kind.
    micros: [Vec<u64>; 3],
    errors: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-api YOI_BINARY [CLIENTS] [SECONDS] [TICKETS] [COMMENT_PERCENT]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let clients: usize = args.get(2).map(|s| s.parse().expect(usage)).unwrap_or(50);
    let seconds: u64 = args.get(3).map(|s| s.parse().expect(usage)).unwrap_or(20);
    let tickets: usize = args
        .get(4)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(10_000);
    let comments: u64 = args.get(5).map(|s| s.parse().expect(usage)).unwrap_or(10);
    assert!(comments <= 100, "{usage}");

    let (dir, token) = yoi_tests::generated_workspace(&yoi, tickets);
    let root = dir.path();
    let ids: Vec<String> = std::fs::read_dir(root.join(".yoi/tickets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();

    yoi_tests::disable_routing_if_asked(root);
    let (server, addr) = yoi_serve(&yoi, root);
    // Measured once the router's first pass over the backlog is done: its writes take the
    // same writer turn as the comments (YOI_BENCH_ROUTING=0 skips the pass).
    let waited = yoi_tests::wait_for_router_rest(&addr, &token, Duration::from_secs(600));
    println!("router resting after {:.1} s", waited.as_secs_f64());
    let base = format!("http://{addr}/api/v1");

    let warmup = Duration::from_secs(3);
    let start = Instant::now() + Duration::from_millis(200);
    let measure_from = start + warmup;
    let end = measure_from + Duration::from_secs(seconds);
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let (base, token, ids) = (base.clone(), token.clone(), ids.clone());
            let mix = Mix {
                comments,
                start,
                measure_from,
                end,
            };
            std::thread::spawn(move || client(i, &base, &token, &ids, mix))
        })
        .collect();
    // The server's CPU time over the measured window, to tell CPU cost from queueing.
    std::thread::sleep(measure_from.saturating_duration_since(Instant::now()));
    let cpu_before = cpu_seconds(server.id());
    std::thread::sleep(end.saturating_duration_since(Instant::now()));
    let server_cpu = cpu_seconds(server.id()) - cpu_before;
    let mut all = Samples::default();
    for t in threads {
        let s = t.join().unwrap();
        for k in 0..3 {
            all.micros[k].extend(&s.micros[k]);
        }
        all.errors += s.errors;
    }
    server.stop();

    let secs = seconds as f64;
    let total: usize = all.micros.iter().map(Vec::len).sum();
    let reads = all.micros[0].len() + all.micros[1].len();
    println!(
        "{clients} clients, {comments}% comments, {seconds}s measured after a {}s warm-up; {total} requests, {} errors",
        warmup.as_secs(),
        all.errors
    );
    println!(
        "throughput: {:.0} requests/s, of which {:.0} reads/s and {:.0} comments/s",
        total as f64 / secs,
        reads as f64 / secs,
        all.micros[2].len() as f64 / secs
    );
    println!(
        "server CPU: {:.2} cores on average ({:.0} µs per request)",
        server_cpu / secs,
        server_cpu * 1e6 / total.max(1) as f64
    );
    let mut reads_micros: Vec<u64> = all.micros[0]
        .iter()
        .chain(&all.micros[1])
        .copied()
        .collect();
    report("all reads", &mut reads_micros);
    for (k, (_, label)) in KINDS.iter().enumerate() {
        report(label, &mut all.micros[k]);
    }
}

fn report(label: &str, micros: &mut [u64]) {
    if micros.is_empty() {
        println!("{label:<30} no samples");
        return;
    }
    micros.sort_unstable();
    let pct =
        |p: f64| micros[((micros.len() as f64 * p) as usize).min(micros.len() - 1)] as f64 / 1000.0;
    println!(
        "{label:<30} n={:<7} p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms",
        micros.len(),
        pct(0.50),
        pct(0.99),
        *micros.last().unwrap() as f64 / 1000.0
    );
}

#[derive(Clone, Copy)]
struct Mix {
    /// Percentage of requests that are comments.
    comments: u64,
    start: Instant,
    measure_from: Instant,
    end: Instant,
}

fn client(i: usize, base: &str, token: &str, ids: &[String], mix: Mix) -> Samples {
    let Mix {
        comments,
        start,
        measure_from,
        end,
    } = mix;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_idle_connections_per_host(1)
        .build()
        .into();
    let auth = format!("Bearer {token}");
    let mut rng = Rng(SEED ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut samples = Samples::default();
    std::thread::sleep(start.saturating_duration_since(Instant::now()));
    loop {
        let now = Instant::now();
        if now >= end {
            return samples;
        }
        let roll = rng.below(100);
        let id = &ids[rng.below(ids.len() as u64) as usize];
        let (kind, result) = if roll < comments {
            let body = serde_json::json!({ "body": format!("load comment from client {i}") });
            let r = agent
                .post(&format!("{base}/tickets/{id}/comments"))
                .header("Authorization", &auth)
                .send_json(&body);
            (Kind::Comment, r)
        } else if (roll - comments) * 2 < 100 - comments {
            let r = agent
                .get(&format!("{base}/tickets?limit=50"))
                .header("Authorization", &auth)
                .call();
            (Kind::List, r)
        } else {
            let r = agent
                .get(&format!("{base}/tickets/{id}"))
                .header("Authorization", &auth)
                .call();
            (Kind::Show, r)
        };
        let ok = match result {
            Ok(mut resp) => {
                let status = resp.status().as_u16();
                resp.body_mut().read_to_vec().is_ok() && status < 300
            }
            Err(_) => false,
        };
        let done = Instant::now();
        if now >= measure_from && done <= end {
            if ok {
                let k = KINDS.iter().position(|(k, _)| *k == kind).unwrap();
                samples.micros[k].push((done - now).as_micros() as u64);
            } else {
                samples.errors += 1;
            }
        }
    }
}

/// User + system CPU seconds of a process so far (Linux `/proc/PID/stat`, 100 ticks a second).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}
