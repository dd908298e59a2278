//! `yoi-bench-pods YOI_BINARY [TICKETS] [PODS] [DATABASE_URL]`: the pod protocol under load,
//! against a real `yoi serve` (release build recommended).
//!
//! 1. **Claims.** TICKETS (default 1,000) tickets are accepted in this process with the real
//!    engine (branch, detached worktree, frozen packet, first assignment) on a one-file
//!    repository; then PODS (default 200) simulated pods — threads with their own HTTP client,
//!    registered with a coder token — claim back to back until the queue is empty (a no-op
//!    agent reports nothing). Prints claims per second and claim latency p50/p95/p99.
//! 2. **Cycle.** The same pods then complete each claim (no commit) before the next, on a fresh
//!    batch: claim→complete cycles per second.
//! 3. **Wake-up.** One pod long-polls on an empty queue; a ticket is queued through the API and
//!    the orchestrator accepts it; the time from the assignment's creation (its `created_ms`) to
//!    the pod holding it, over 20 tickets: p50/p95.
//!
//! 4. **Idle pod memory.** Three real `yoi pod run` processes long-poll an empty queue; their
//!    resident set size (VmRSS) after two seconds.
//! 5. **Lease expiry after SIGKILL.** With the default lease (60 s) and heartbeat (20 s), those
//!    pods claim three tickets and run `yoi-fake-agent` (it sleeps); all three are SIGKILLed and
//!    the time until each claim is expired and its step handed out again is measured.
//!
//! DATABASE_URL (`postgres://…`) runs it on PostgreSQL; default the embedded SQLite. Phases 4
//! and 5 need `yoi-fake-agent` next to YOI_BINARY (`cargo build --release -p yoi-tests --bins`).

use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use yoi_db::{DbIndex, Scope};
use yoi_store::ops::{self, CreateRequest, TransitionRequest};
use yoi_store::Workspace;
use yoi_testkit::git;
use yoi_tests::{ctx, yoi_init};

const BRIEF: &str =
    "## Intent\nBench.\n\n## Acceptance criteria\n- fast\n\n## Validation\n`true`\n";

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

fn post(agent: &ureq::Agent, addr: &str, token: &str, path: &str, body: Value) -> (u16, Value) {
    let mut resp = agent
        .post(&format!("http://{addr}/api/v1{path}"))
        .header("Authorization", &format!("Bearer {token}"))
        .send_json(body)
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Accept `n` new tickets in this process with the real engine.
fn accept(ws: &Workspace, db: &DbIndex, n: usize, tag: &str) {
    let c = ctx("bench");
    let root = ws.config.worktree_dir(ws.root());
    for i in 0..n {
        let id = ops::create(
            ws,
            &c,
            &CreateRequest {
                title: format!("{tag} {i}"),
                body: BRIEF.into(),
                depends_on: vec![],
            },
        )
        .unwrap()
        .ticket;
        let req = TransitionRequest::default();
        ops::mark_ready(ws, &c, id.as_str(), &req).unwrap();
        ops::queue(ws, &c, id.as_str(), &req).unwrap();
        let d = yoi_engine::routing::decide(ws, &id, usize::MAX)
            .unwrap()
            .unwrap();
        yoi_engine::routing::accept_ticket(ws, db, &id, &d, &root, c.now).unwrap();
    }
}

/// CPU time (user + system) a process has used, in milliseconds.
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) ends with ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) * 10.0
}

/// PODS threads claim until the queue is empty; with `complete`, each claim is completed first.
fn storm(addr: &str, token: &str, pods: usize, complete: bool) -> (usize, f64, Vec<f64>) {
    let lat = Arc::new(Mutex::new(Vec::new()));
    let start = Arc::new(Barrier::new(pods + 1));
    let threads: Vec<_> = (0..pods)
        .map(|i| {
            let (addr, token, lat, start) = (addr.to_string(), token.to_string(), lat.clone(), start.clone());
            std::thread::spawn(move || {
                let agent = client();
                let (s, reg) = post(&agent, &addr, &token, "/pods", json!({ "name": format!("bench-{i}") }));
                assert_eq!(s, 201, "{reg}");
                let pod = reg["pod"]["id"].as_str().unwrap().to_string();
                start.wait();
                let mut mine = Vec::new();
                loop {
                    let t = Instant::now();
                    let (s, work) = post(&agent, &addr, &token, "/assignments/claim", json!({ "pod": pod, "wait_ms": 0 }));
                    let ms = t.elapsed().as_secs_f64() * 1000.0;
                    if s == 204 {
                        break;
                    }
                    assert_eq!(s, 200, "{work}");
                    mine.push(ms);
                    if complete {
                        let a = work["assignment"]["id"].as_str().unwrap();
                        let (s, body) = post(
                            &agent,
                            &addr,
                            &token,
                            &format!("/assignments/{a}/complete"),
                            json!({ "pod": pod, "fence": work["assignment"]["fence"], "report": { "outcome": "done" } }),
                        );
                        assert_eq!(s, 200, "{body}");
                    }
                }
                lat.lock().unwrap().extend(mine);
            })
        })
        .collect();
    start.wait();
    let t = Instant::now();
    for th in threads {
        th.join().unwrap();
    }
    let secs = t.elapsed().as_secs_f64();
    let mut v = lat.lock().unwrap().clone();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v.len(), secs, v)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-pods YOI_BINARY [TICKETS] [PODS] [DATABASE_URL]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let tickets: usize = args.get(2).map(|s| s.parse().expect(usage)).unwrap_or(1000);
    let pods: usize = args.get(3).map(|s| s.parse().expect(usage)).unwrap_or(200);
    let url = args.get(4).cloned();

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "bench\n").unwrap();
    yoi_testkit::commit_all(root, "base");
    yoi_init(&yoi, root);
    let config = root.join(".yoi/workspace.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    if let Some(u) = &url {
        text = text.replace(
            "# url = \"postgres://user:password@127.0.0.1:5432/yoi\"",
            &format!("url = \"{u}\""),
        );
    }
    // Claims are held for the whole run (the no-op agent reports nothing in the claim phase).
    let text = text.replace("lease_secs = 60", "lease_secs = 3600");
    std::fs::write(
        &config,
        text.replace("\nenabled = true\n", "\nenabled = false\n"),
    )
    .unwrap();
    // The admin token lives in the database: make it again in the one now configured.
    yoi_init(&yoi, root);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut ws = Workspace::open(root).unwrap();
    let (db, _) = DbIndex::attach(
        &mut ws,
        yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
    )
    .unwrap();
    let t = Instant::now();
    accept(&ws, &db, tickets, "claim");
    println!(
        "database {}; {tickets} tickets accepted in {:.1} s",
        if url.is_some() { "postgres" } else { "sqlite" },
        t.elapsed().as_secs_f64()
    );
    let (_, token) = db
        .create_token("bench", &Scope::Pod(yoi_core::Role::Coder), "bench", 0)
        .unwrap();
    let (mut server, addr) = yoi_tests::yoi_serve(&yoi, root);

    let cpu0 = cpu_ms(server.id());
    let (n, secs, lat) = storm(&addr, &token, pods, false);
    let cpu = cpu_ms(server.id()) - cpu0;
    println!(
        "claims: {n} by {pods} pods in {secs:.2} s = {:.0} claims/s; latency p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms; server CPU {:.2} ms per claim",
        n as f64 / secs,
        pct(&lat, 0.5),
        pct(&lat, 0.95),
        pct(&lat, 0.99),
        cpu / n as f64
    );
    assert_eq!(n, tickets, "every assignment claimed exactly once");

    accept(&ws, &db, tickets, "cycle");
    let (n, secs, lat) = storm(&addr, &token, pods, true);
    println!(
        "claim→complete cycles: {n} in {secs:.2} s = {:.0}/s; claim p50 {:.1} ms, p99 {:.1} ms",
        n as f64 / secs,
        pct(&lat, 0.5),
        pct(&lat, 0.99)
    );
    server.kill().unwrap();
    server.wait().unwrap();

    // Wake-up: routing on, one long-polling pod, tickets queued through the API one by one.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("\nenabled = false\n", "\nenabled = true\n")
            .replace("max_inprogress = 4", "max_inprogress = 100000"),
    )
    .unwrap();
    let (mut server, addr) = yoi_tests::yoi_serve(&yoi, root);
    let admin = std::fs::read_to_string(root.join(".yoi/local/admin.token"))
        .unwrap()
        .trim()
        .to_string();
    let agent = client();
    let (_, reg) = post(&agent, &addr, &token, "/pods", json!({ "name": "waiter" }));
    let pod = reg["pod"]["id"].as_str().unwrap().to_string();
    let mut wake = Vec::new();
    for i in 0..20 {
        let (s, made) = post(
            &agent,
            &addr,
            &admin,
            "/tickets",
            json!({ "title": format!("wake {i}"), "body": BRIEF }),
        );
        assert_eq!(s, 201, "{made}");
        let id = made["ticket"].as_str().unwrap().to_string();
        post(
            &agent,
            &addr,
            &admin,
            &format!("/tickets/{id}/mark-ready"),
            json!({}),
        );
        let (addr2, token2, pod2) = (addr.clone(), token.clone(), pod.clone());
        let waiter = std::thread::spawn(move || {
            let agent = client();
            let (s, work) = post(
                &agent,
                &addr2,
                &token2,
                "/assignments/claim",
                json!({ "pod": pod2, "wait_ms": 30000 }),
            );
            let got = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64;
            assert_eq!(s, 200, "{work}");
            (
                got - work["assignment"]["created_ms"].as_i64().unwrap(),
                work,
            )
        });
        std::thread::sleep(Duration::from_millis(50));
        post(
            &agent,
            &addr,
            &admin,
            &format!("/tickets/{id}/queue"),
            json!({}),
        );
        let (ms, work) = waiter.join().unwrap();
        wake.push(ms as f64);
        let a = work["assignment"]["id"].as_str().unwrap();
        post(
            &agent,
            &addr,
            &token,
            &format!("/assignments/{a}/complete"),
            json!({ "pod": pod, "fence": work["assignment"]["fence"], "report": { "outcome": "done" } }),
        );
    }
    wake.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "wake-up (assignment created → long-polling pod has it), 20 tickets: p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms",
        pct(&wake, 0.5),
        pct(&wake, 0.95),
        wake.last().unwrap()
    );
    server.kill().unwrap();
    server.wait().unwrap();
    lease_phase(&yoi, root, &config, &token, &admin);
}

/// Phases 4 and 5: idle RSS of real pods, then lease expiry after SIGKILL with the defaults.
fn lease_phase(
    yoi: &std::path::Path,
    root: &std::path::Path,
    config: &std::path::Path,
    token: &str,
    admin: &str,
) {
    let agent_bin = yoi.with_file_name("yoi-fake-agent");
    assert!(agent_bin.is_file(), "{} is missing", agent_bin.display());
    let script = root.join(".yoi/local/sleep-script.txt");
    std::fs::write(&script, "sleep 600000\n").unwrap();
    let text = std::fs::read_to_string(config)
        .unwrap()
        .replace("lease_secs = 3600", "lease_secs = 60");
    let text = format!(
        "{text}\n[agents.sleeper]\nprogram = \"{}\"\nargv = [\"{{program}}\", \"{}\"]\noutput = \"text\"\n",
        agent_bin.display(),
        script.display()
    );
    std::fs::write(config, text).unwrap();
    let (mut server, addr) = yoi_tests::yoi_serve(yoi, root);
    let mut pods: Vec<std::process::Child> = (0..3)
        .map(|i| {
            std::process::Command::new(yoi)
                .args([
                    "pod",
                    "run",
                    "--role",
                    "coder",
                    "--agent",
                    "sleeper",
                    "--name",
                    &format!("rss-{i}"),
                    "--wait-ms",
                    "30000",
                ])
                .current_dir(root)
                .env("YOI_TOKEN", token)
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let rss: Vec<u64> = pods
        .iter()
        .map(|p| {
            let status = std::fs::read_to_string(format!("/proc/{}/status", p.id())).unwrap();
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap()
        })
        .collect();
    println!(
        "idle pod RSS: {} KiB (3 pods long-polling)",
        rss.iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );

    let agent = client();
    let mut ids = Vec::new();
    for i in 0..3 {
        let (_, made) = post(
            &agent,
            &addr,
            admin,
            "/tickets",
            json!({ "title": format!("lease {i}"), "body": BRIEF }),
        );
        let id = made["ticket"].as_str().unwrap().to_string();
        post(
            &agent,
            &addr,
            admin,
            &format!("/tickets/{id}/mark-ready"),
            json!({}),
        );
        post(
            &agent,
            &addr,
            admin,
            &format!("/tickets/{id}/queue"),
            json!({}),
        );
        ids.push(id);
    }
    let get = |path: &str| -> Value {
        let mut r = agent
            .get(&format!("http://{addr}/api/v1{path}"))
            .header("Authorization", &format!("Bearer {admin}"))
            .call()
            .unwrap();
        r.body_mut().read_json().unwrap()
    };
    let status_of = |id: &str| -> Vec<String> {
        get(&format!("/assignments?ticket={id}"))["assignments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["status"].as_str().unwrap().to_string())
            .collect()
    };
    while !ids
        .iter()
        .all(|id| status_of(id).iter().any(|s| s == "claimed"))
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    // Let a heartbeat or two pass so the kill lands at a random point of the heartbeat cycle.
    std::thread::sleep(Duration::from_secs(25));
    for p in &mut pods {
        p.kill().unwrap();
        p.wait().unwrap();
    }
    let killed = Instant::now();
    let mut detected = vec![None; ids.len()];
    while detected.iter().any(Option::is_none) {
        for (i, id) in ids.iter().enumerate() {
            if detected[i].is_none() && status_of(id).iter().any(|s| s == "expired") {
                detected[i] = Some(killed.elapsed().as_secs_f64());
            }
        }
        assert!(
            killed.elapsed() < Duration::from_secs(180),
            "no expiry within 180 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    println!(
        "lease expiry after SIGKILL (lease 60 s, heartbeat 20 s): {} s after the kill",
        detected
            .iter()
            .map(|d| format!("{:.1}", d.unwrap()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    server.kill().unwrap();
    server.wait().unwrap();
}
