//! `yoi-bench-activate YOI_BINARY [REQUESTS]`: latency of skill activation through the API of a
//! real `yoi serve` — one keep-alive client, REQUESTS (default 2,000) sequential
//! `POST /api/v1/skills/yoi-ticket-work/activate` after 200 warm-up requests. Each activation
//! is recorded in the database before its body is returned, so this measures the record too.

use std::time::Instant;

use yoi_tests::{yoi_init, yoi_serve};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-activate YOI_BINARY [REQUESTS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let requests: usize = args
        .get(2)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(2_000);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    yoi_testkit::git(root, &["init", "-q", "-b", "main"]);
    let token = yoi_init(&yoi, root);
    let (server, addr) = yoi_serve(&yoi, root);
    let url = format!("http://{addr}/api/v1/skills/yoi-ticket-work/activate");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut micros = Vec::with_capacity(requests);
    for i in 0..(requests + 200) {
        let t = Instant::now();
        let mut resp = agent
            .post(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .send("{}")
            .expect("request");
        let body = resp.body_mut().read_to_string().unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{body}");
        if i >= 200 {
            micros.push(t.elapsed().as_micros() as u64);
        }
    }
    server.stop();
    micros.sort_unstable();
    let pct =
        |p: f64| micros[((micros.len() as f64 * p) as usize).min(micros.len() - 1)] as f64 / 1000.0;
    println!(
        "{requests} activations: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        pct(0.50),
        pct(0.99),
        *micros.last().unwrap() as f64 / 1000.0
    );
}
