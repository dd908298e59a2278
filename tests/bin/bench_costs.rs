//! `yoi-bench-costs YOI_BINARY [ATTEMPTS]`: where the money went, over a ledger of ATTEMPTS
//! (default 100,000) finished attempts spread over 30 days, 5 agent profiles, 4 models and 2,000
//! tickets, in the workspace's embedded database (docs/budgets.md).
//!
//! Measures, each idle and then while attempts keep finishing (a writer adds 50 a second, as a
//! busy team's pods would):
//! - `yoi cost --by day --json` (the whole command: start, open, query, print), 20 runs, and
//!   `--by ticket`, 10 runs;
//! - the dashboard's `/costs` page of a running `yoi serve`, 100 requests with a session.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use yoi_db::{Assignment, AssignmentStatus, Db, Footprint, PodRow, PodState};
use yoi_tests::yoi_init;

const DAY_MS: i64 = 86_400_000;
const AGENTS: [&str; 5] = ["claude", "codex", "gemini", "aider", "opencode"];
const MODELS: [&str; 4] = ["claude-sonnet-4", "gpt-5", "gemini-2.5-pro", "gpt-5-mini"];

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn summary(label: &str, mut ms: Vec<f64>) {
    ms.sort_by(f64::total_cmp);
    println!(
        "{label:<44} n={:<4} p50 {:>7.2} ms  p95 {:>7.2} ms  max {:>7.2} ms",
        ms.len(),
        pct(&ms, 0.5),
        pct(&ms, 0.95),
        ms[ms.len() - 1]
    );
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Attempt `i` of the ledger, finished `age_ms` ago.
fn attempt(i: usize, finished_ms: i64) -> Assignment {
    let usage = serde_json::json!({
        "wall_ms": 30_000 + (i % 900) * 100,
        "tokens_in": 20_000 + (i % 5_000),
        "tokens_out": 2_000 + (i % 700),
        "tokens_cached": 10_000,
        "cost_usd": 0.01 + (i % 97) as f64 / 1000.0,
        "cost_source": "reported",
        "model": MODELS[i % MODELS.len()],
    });
    Assignment {
        id: format!("asg-{i:08}"),
        ticket: format!("01JB{:022}", i % 2_000),
        step: ["implement", "verify", "review"][i % 3].into(),
        role: ["coder", "verifier", "reviewer"][i % 3].into(),
        attempt: 1 + (i / 2_000) as i64,
        fence: 1 + (i / 2_000) as i64,
        status: AssignmentStatus::Completed,
        created_ms: finished_ms - 60_000,
        updated_ms: finished_ms,
        claimed_by: Some(format!("pod-{}", AGENTS[i % AGENTS.len()])),
        usage: Some(usage.to_string()),
        finished_ms: Some(finished_ms),
        ..Assignment::default()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-costs YOI_BINARY [ATTEMPTS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let attempts: usize = args
        .get(2)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    yoi_testkit::git(root, &["init", "-q", "-b", "main"]);
    yoi_store::init(root, "main").unwrap();
    yoi_tests::no_routing_no_pods(root);
    let cfg = root.join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        format!("{text}\n[budget]\nday_usd = 5000.0\nticket_usd = 50.0\n"),
    )
    .unwrap();
    let token = yoi_init(&yoi, root);
    let ws = yoi_tests::open(root);
    let rt = yoi_tests::runtime();
    let db = rt
        .block_on(Db::open_workspace(
            &ws.database_url(),
            Footprint::Service,
            ws.config.workspace.id.as_deref(),
        ))
        .unwrap();
    let now = now_ms();
    for a in AGENTS {
        rt.block_on(db.register_pod(&PodRow {
            id: format!("pod-{a}"),
            name: format!("pod-{a}"),
            role: "coder".into(),
            host: "bench".into(),
            pid: None,
            profile: Some(a.into()),
            state: PodState::Idle,
            registered_ms: now,
            heartbeat_ms: now,
            assignment: None,
            token_id: "bench".into(),
            sandbox: None,
            provider: None,
        }))
        .unwrap();
    }
    let t = Instant::now();
    for i in 0..attempts {
        let finished = now - (i as i64 * 30 * DAY_MS) / attempts as i64;
        rt.block_on(db.create_assignment(&attempt(i, finished)))
            .unwrap();
    }
    println!(
        "{attempts} attempts written in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let (_server, addr, login) = yoi_tests::yoi_serve_with_login(&yoi, root);
    let base = format!("http://{addr}");
    let cookie = yoi_testkit::dashboard_session(&login);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();

    let cli = |by: &str| -> f64 {
        let t = Instant::now();
        let out = Command::new(&yoi)
            .args(["--local", "cost", "--by", by, "--json"])
            .current_dir(root)
            .output()
            .unwrap();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        ms
    };
    let timed = |path: &str, auth: (&str, String)| -> (f64, String) {
        let t = Instant::now();
        let mut r = agent
            .get(&format!("{base}{path}"))
            .header(auth.0, &auth.1)
            .call()
            .unwrap();
        let body = r.body_mut().read_to_string().unwrap();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(r.status(), 200, "{path}: {body}");
        (ms, body)
    };
    let session = || ("Cookie", cookie.clone());
    let bearer = || ("Authorization", format!("Bearer {token}"));
    let page = || -> f64 {
        let (ms, body) = timed("/costs", session());
        assert!(body.contains("<svg"));
        ms
    };
    let measure = |label: &str| {
        summary(
            &format!("yoi cost --by day ({label})"),
            (0..20).map(|_| cli("day")).collect(),
        );
        summary(
            &format!("yoi cost --by ticket ({label})"),
            (0..10).map(|_| cli("ticket")).collect(),
        );
        summary(
            &format!("/costs ({label})"),
            (0..100).map(|_| page()).collect(),
        );
        // Where a page's time goes: a page without the sums (/pods), and the API's sums.
        summary(
            &format!("/pods ({label})"),
            (0..50).map(|_| timed("/pods", session()).0).collect(),
        );
        summary(
            &format!("GET /api/v1/costs?by=day ({label})"),
            (0..50)
                .map(|_| timed("/api/v1/costs?by=day", bearer()).0)
                .collect(),
        );
        summary(
            &format!("GET /api/v1/costs?by=ticket ({label})"),
            (0..50)
                .map(|_| timed("/api/v1/costs?by=ticket", bearer()).0)
                .collect(),
        );
    };
    measure("idle");
    // Attempts keep finishing meanwhile: 50 a second.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let db = db.clone();
        let handle = rt.handle().clone();
        std::thread::spawn(move || {
            let mut i = attempts;
            while !stop.load(Ordering::SeqCst) {
                handle
                    .block_on(db.create_assignment(&attempt(i, now_ms())))
                    .unwrap();
                i += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            i - attempts
        })
    };
    measure("50 attempts/s finishing");
    stop.store(true, Ordering::SeqCst);
    println!(
        "{} attempts written during the loaded runs",
        writer.join().unwrap()
    );
}
