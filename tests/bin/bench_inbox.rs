//! `yoi-bench-inbox YOI_BINARY [ENTRIES] [REQUESTS] [EVENTS]`: the inbox and its notifications
//! against a real `yoi serve` (issue 32's measures).
//!
//! A workspace with ENTRIES (default 1,000) queued tickets whose routing circuit is open — each
//! an open inbox entry — and a `[[notify]]` webhook to a receiver on loopback that checks every
//! signature (`yoi_testkit::receiver`). Reported: how long the server takes to deliver the whole
//! backlog once; `GET /api/v1/inbox` latency over REQUESTS sequential requests (default 200, after
//! 20 warm-up ones) on one keep-alive connection, right after the backlog (how many answers were
//! kept, computed, or computed because the database was written less than a second before:
//! `Cache-Status`), then again once the server keeps the answer; and, for EVENTS new entries (default 50) written
//! to a ticket's thread by another process one after another, the time from the write to the
//! receiver holding the signed delivery.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use yoi_core::{Principal, Timestamp};
use yoi_store::ops::{self, CreateRequest, TransitionRequest};
use yoi_store::{Ctx, Workspace};
use yoi_testkit::receiver::Receiver;

const SECRET: &str = "bench-secret";
const BRIEF: &str =
    "## Intent\nDo it.\n\n## Acceptance criteria\n- done\n\n## Validation\n`true`\n";

fn yoi(bin: &str, dir: &Path, args: &[&str]) -> String {
    let out = Command::new(bin)
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "yoi {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn queued(ws: &Workspace, title: &str) -> String {
    let alice = Ctx::new(
        Principal::human("alice"),
        Timestamp::parse("2026-03-01T10:00:00Z").unwrap(),
    );
    let req = CreateRequest {
        title: title.into(),
        body: BRIEF.into(),
        depends_on: Vec::new(),
    };
    let id = ops::create(ws, &alice, &req).unwrap().ticket.to_string();
    let t = TransitionRequest::default();
    ops::mark_ready(ws, &alice, &id, &t).unwrap();
    ops::queue(ws, &alice, &id, &t).unwrap();
    id
}

fn stop(ws: &Workspace, id: &str) {
    let service = Ctx::new(
        Principal::orchestrator(),
        Timestamp::parse("2026-03-01T10:00:00Z").unwrap(),
    );
    ops::attention(
        ws,
        &service,
        id,
        "circuit_open",
        "Routing stopped dispatching this ticket.",
    )
    .unwrap();
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bin = args
        .first()
        .expect("usage: yoi-bench-inbox YOI_BINARY [ENTRIES] [REQUESTS] [EVENTS]")
        .clone();
    let num = |i: usize, d: usize| args.get(i).map_or(d, |a| a.parse().expect("a number"));
    let (entries, requests, events) = (num(1, 1000), num(2, 200), num(3, 50));
    let receiver = Receiver::start(SECRET);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert!(Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(root)
        .status()
        .unwrap()
        .success());
    yoi(&bin, root, &["init"]);
    let cfg = root.join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("\nenabled = true\n", "\nenabled = false\n");
    std::fs::write(&cfg, format!(
        "{text}\n[[notify]]\nname = \"hook\"\nchannel = \"webhook\"\nurl = \"http://{}/hook\"\nsecret_env = \"YOI_BENCH_HOOK_KEY\"\n",
        receiver.addr
    )).unwrap();
    let ws = Workspace::open(root).unwrap();
    let start = Instant::now();
    for i in 0..entries {
        let id = queued(&ws, &format!("Stuck {i}"));
        stop(&ws, &id);
    }
    let spare: Vec<String> = (0..events)
        .map(|i| queued(&ws, &format!("Later {i}")))
        .collect();
    eprintln!(
        "made {entries} entries and {events} spare tickets in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let token = yoi(
        &bin,
        root,
        &["token", "create", "--name", "bench", "--scope", "read"],
    );
    let token = token.lines().last().unwrap().trim().to_string();

    let started = Instant::now();
    let mut child = Command::new(&bin)
        .arg("-C")
        .arg(root)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("YOI_BENCH_HOOK_KEY", SECRET)
        .env("YOI_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .strip_prefix("listening on http://")
        .expect("listening line")
        .to_string();
    while receiver.got("/hook").len() < entries {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "backlog not delivered"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let backlog = started.elapsed().as_secs_f64();

    let agent: ureq::Agent = ureq::Agent::config_builder().build().into();
    let url = format!("http://{addr}/api/v1/inbox");
    let mut times = Vec::new();
    // How each measured answer met the server's kept ones (`Cache-Status`).
    let mut kept: std::collections::BTreeMap<String, usize> = Default::default();
    for i in 0..requests + 20 {
        let t = Instant::now();
        let mut res = agent
            .get(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .call()
            .unwrap();
        let status = res
            .headers()
            .get("cache-status")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
            .to_string();
        let body = res
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .unwrap();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if i >= 20 {
            *kept.entry(status).or_default() += 1;
        }
        if i == 0 {
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(v["count"], entries, "the inbox holds every entry");
        }
        if i >= 20 {
            times.push(ms);
        }
    }
    times.sort_by(f64::total_cmp);

    // The same once the server keeps the answer (nothing written for a second): the steady
    // state of a dashboard or a client polling an inbox that did not change.
    let mut steady = Vec::new();
    let started_steady = Instant::now();
    loop {
        let res = agent
            .get(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .call()
            .unwrap();
        let hit = res
            .headers()
            .get("cache-status")
            .is_some_and(|v| v.as_bytes() == b"yoi; hit");
        if hit {
            break;
        }
        assert!(
            started_steady.elapsed() < Duration::from_secs(60),
            "never kept"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for _ in 0..requests {
        let t = Instant::now();
        let mut res = agent
            .get(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .call()
            .unwrap();
        let _ = res
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .unwrap();
        steady.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    steady.sort_by(f64::total_cmp);

    // The dashboard's `/inbox` page, in a session of its own (after the rounds above, so the
    // same quiet server).
    let link = yoi(&bin, root, &["dashboard", "--no-open"]);
    let cookie = yoi_testkit::dashboard_session(link.lines().last().unwrap_or_default());
    let page_url = format!("http://{addr}/inbox");
    let mut page = Vec::new();
    for i in 0..requests + 20 {
        let t = Instant::now();
        let mut res = agent
            .get(&page_url)
            .header("Cookie", &cookie)
            .call()
            .unwrap();
        let html = res
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .unwrap();
        if i == 0 {
            assert!(
                html.contains("id=\"inbox-list\""),
                "the page lists the entries"
            );
        }
        if i >= 20 {
            page.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    page.sort_by(f64::total_cmp);

    let mut lat = Vec::new();
    for id in &spare {
        let before = receiver.got("/hook").len();
        let t = Instant::now();
        stop(&ws, id);
        while receiver.got("/hook").len() == before {
            assert!(t.elapsed() < Duration::from_secs(60), "not delivered");
            std::thread::sleep(Duration::from_millis(1));
        }
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    lat.sort_by(f64::total_cmp);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        receiver.got("/hook").len(),
        entries + events,
        "each entry delivered once"
    );
    println!("entries: {entries}; backlog delivered once, signed, in {backlog:.1} s from the server's start");
    println!(
        "GET /api/v1/inbox ({entries} open entries, {requests} requests): p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        pct(&times, 0.5), pct(&times, 0.95), times[times.len() - 1]
    );
    println!("  answers by Cache-Status: {kept:?}");
    println!(
        "GET /api/v1/inbox once kept ({requests} requests): p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        pct(&steady, 0.5), pct(&steady, 0.95), steady[steady.len() - 1]
    );
    println!(
        "GET /inbox, the dashboard page ({requests} requests): p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        pct(&page, 0.5), pct(&page, 0.95), page[page.len() - 1]
    );
    println!(
        "event -> webhook received ({events} entries, written by another process): p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms",
        pct(&lat, 0.5), pct(&lat, 0.95), lat[lat.len() - 1]
    );
}
