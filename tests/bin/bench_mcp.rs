//! `yoi-bench-mcp YOI_BINARY [CLIENTS] [SECONDS] [TICKETS]`: the MCP server's two numbers of
//! issue 35 (docs/mcp.md).
//!
//! 1. A tool call through `POST /mcp` under load: a workspace of TICKETS generated tickets
//!    (default 10,000) is served with routing off; CLIENTS threads (default 50), each with its
//!    own keep-alive connection and the admin token, send `tools/call` back to back for SECONDS
//!    (default 20, after a 3-second warm-up that is not counted), alternating `show_ticket` of
//!    a random ticket and `list_tickets` (limit 20). Reports p50/p99/max per tool.
//! 2. `yoi mcp` from start to initialized: 30 times, start `yoi mcp` in the workspace, write
//!    one `initialize` line and time until its answer is read from stdout. Reports the median,
//!    p99 (the worst of 30) and the first run.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use yoi_tests::generate::{Rng, SEED};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-mcp YOI_BINARY [CLIENTS] [SECONDS] [TICKETS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let clients: usize = args.get(2).map(|s| s.parse().expect(usage)).unwrap_or(50);
    let seconds: u64 = args.get(3).map(|s| s.parse().expect(usage)).unwrap_or(20);
    let tickets: usize = args
        .get(4)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(10_000);

    let (dir, token) = yoi_tests::generated_workspace(&yoi, tickets);
    let root = dir.path();
    let ids: Vec<String> = std::fs::read_dir(root.join(".yoi/tickets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    yoi_tests::disable_routing(root);
    let (server, addr) = yoi_tests::yoi_serve(&yoi, root);
    let url = format!("http://{addr}/mcp");

    let start = Instant::now() + Duration::from_millis(200);
    let measure_from = start + Duration::from_secs(3);
    let end = measure_from + Duration::from_secs(seconds);
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let (url, token, ids) = (url.clone(), token.clone(), ids.clone());
            std::thread::spawn(move || client(i, &url, &token, &ids, (start, measure_from, end)))
        })
        .collect();
    let (mut show, mut list, mut errors) = (Vec::new(), Vec::new(), 0);
    for t in threads {
        let (s, l, e) = t.join().unwrap();
        show.extend(s);
        list.extend(l);
        errors += e;
    }
    println!(
        "{clients} clients, {seconds}s measured after a 3s warm-up, {tickets} tickets; {} calls, {errors} errors, {:.0} calls/s",
        show.len() + list.len(),
        (show.len() + list.len()) as f64 / seconds as f64
    );
    let mut all: Vec<u64> = show.iter().chain(&list).copied().collect();
    report("tools/call (all)", &mut all);
    report("tools/call show_ticket", &mut show);
    report("tools/call list_tickets", &mut list);

    // `yoi mcp` start to initialized, against the same server.
    let mut starts = Vec::new();
    for _ in 0..30 {
        let began = Instant::now();
        let mut child = Command::new(&yoi)
            .arg("mcp")
            .current_dir(root)
            .env_remove("YOI_TOKEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("yoi mcp starts");
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{INIT}").unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        starts.push(began.elapsed().as_micros() as u64);
        assert!(line.contains("\"protocolVersion\""), "{line}");
        drop(stdin);
        child.wait().unwrap();
    }
    let first = starts[0] as f64 / 1000.0;
    report("yoi mcp start to initialized", &mut starts);
    println!("(first run {first:.2} ms)");
    server.stop();
}

type Window = (Instant, Instant, Instant);

fn client(
    i: usize,
    url: &str,
    token: &str,
    ids: &[String],
    w: Window,
) -> (Vec<u64>, Vec<u64>, usize) {
    let (start, measure_from, end) = w;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_idle_connections_per_host(1)
        .build()
        .into();
    let auth = format!("Bearer {token}");
    let mut rng = Rng(SEED ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let (mut show, mut list, mut errors) = (Vec::new(), Vec::new(), 0);
    std::thread::sleep(start.saturating_duration_since(Instant::now()));
    let mut n = 0u64;
    loop {
        let now = Instant::now();
        if now >= end {
            return (show, list, errors);
        }
        n += 1;
        let showing = n.is_multiple_of(2);
        let params = if showing {
            let id = &ids[rng.below(ids.len() as u64) as usize];
            serde_json::json!({"name": "show_ticket", "arguments": {"id": id}})
        } else {
            serde_json::json!({"name": "list_tickets", "arguments": {"limit": 20}})
        };
        let body = serde_json::json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params});
        let ok = match agent
            .post(url)
            .header("Authorization", &auth)
            .header("MCP-Protocol-Version", "2025-06-18")
            .send_json(&body)
        {
            Ok(mut resp) => {
                let status = resp.status().as_u16();
                let text = resp.body_mut().read_to_string().unwrap_or_default();
                status == 200 && text.contains("\"isError\":false")
            }
            Err(_) => false,
        };
        let took = now.elapsed().as_micros() as u64;
        if now >= measure_from {
            if !ok {
                errors += 1;
            } else if showing {
                show.push(took);
            } else {
                list.push(took);
            }
        }
    }
}

fn report(label: &str, micros: &mut [u64]) {
    if micros.is_empty() {
        println!("{label:<32} no samples");
        return;
    }
    micros.sort_unstable();
    let pct =
        |p: f64| micros[((micros.len() as f64 * p) as usize).min(micros.len() - 1)] as f64 / 1000.0;
    println!(
        "{label:<32} n={:<7} p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms",
        micros.len(),
        pct(0.50),
        pct(0.99),
        *micros.last().unwrap() as f64 / 1000.0
    );
}
