//! `yoi-bench-serve-memory YOI_BINARY [TICKETS]`: the resident memory of `yoi serve` after a
//! full list (issue 16 item 8).
//!
//! A workspace of TICKETS generated tickets (default 100,000) is indexed by `yoi init` and
//! served. The server's memory is read from `/proc/<pid>/status` when it is up, 10 s later
//! (the router's first pass over the backlog runs meanwhile), once the router has caught up
//! and rests (`GET /api/v1/router`), then after the whole backlog was listed through
//! `GET /api/v1/tickets` (pages of 1,000, following `next`).
//! `VmRSS` is split into anonymous memory (the heap) and file pages (the mapped database);
//! `VmHWM` is the peak.

use yoi_tests::yoi_serve;

/// `VmRSS`, `RssAnon`, `RssFile` and `VmHWM` of `pid`, in MiB.
fn memory(pid: u32) -> [f64; 4] {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server runs");
    ["VmRSS:", "RssAnon:", "RssFile:", "VmHWM:"].map(|key| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    })
}

fn show(when: &str, m: [f64; 4]) {
    println!(
        "| {when} | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.1} MiB |",
        m[0], m[1], m[2], m[3]
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-serve-memory YOI_BINARY [TICKETS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let tickets: usize = args
        .get(2)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(100_000);
    let (dir, token) = yoi_tests::generated_workspace(&yoi, tickets);
    // `YOI_BENCH_ROUTING=0`: a server that does not route the backlog (for a profile).
    yoi_tests::disable_routing_if_asked(dir.path());
    let (server, addr) = yoi_serve(&yoi, dir.path());
    let pid = server.id();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let auth = format!("Bearer {token}");
    println!("| `yoi serve` | RSS | of it anonymous | of it file pages | peak (VmHWM) |");
    println!("|---|---|---|---|---|");
    show("started", memory(pid));
    // The router's first passes and the catch-up run in the background after the start.
    std::thread::sleep(std::time::Duration::from_secs(10));
    show("10 s later, before any request", memory(pid));
    // Then until the router has caught up with the backlog and rests (at most 10 minutes).
    let waited =
        yoi_tests::wait_for_router_rest(&addr, &token, std::time::Duration::from_secs(600));
    show(
        &format!(
            "router caught up and resting ({:.0} s later)",
            waited.as_secs_f64() + 10.0
        ),
        memory(pid),
    );
    let (mut listed, mut after) = (0usize, None::<String>);
    loop {
        let url = match &after {
            Some(a) => format!("http://{addr}/api/v1/tickets?limit=1000&after={a}"),
            None => format!("http://{addr}/api/v1/tickets?limit=1000"),
        };
        let mut resp = agent
            .get(&url)
            .header("Authorization", &auth)
            .call()
            .expect("the list answers");
        assert_eq!(resp.status().as_u16(), 200, "{url}");
        let page: serde_json::Value = resp.body_mut().read_json().expect("a JSON page");
        listed += page["count"].as_u64().unwrap_or(0) as usize;
        match page["next"].as_str() {
            Some(n) => after = Some(n.to_string()),
            None => break,
        }
    }
    show(
        &format!("after listing all {listed} open tickets"),
        memory(pid),
    );
    server.stop();
}
