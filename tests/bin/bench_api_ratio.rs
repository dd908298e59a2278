//! `yoi-bench-api-ratio YOI_BINARY [SECONDS] [TICKETS] [CONNECTIONS]`: the API's read
//! throughput against the server's own ceiling, with a standard load tool (issue 16 item 3).
//!
//! A workspace of TICKETS generated tickets (default 10,000) is indexed by `yoi init` and
//! served by `yoi serve` on loopback. `autocannon` (from npm; `AUTOCANNON` names another
//! binary) then loads, one after another with CONNECTIONS keep-alive connections (default 50)
//! for SECONDS each (default 10, after a 2-second warm-up): `GET /healthz` (no token, no
//! database: the ceiling of this server on this machine), `GET /api/v1/tickets/{id}` of one
//! ticket, the same for 1,000 and for every ticket in turn (a HAR file of those requests, each
//! connection walking it), and `GET /api/v1/tickets?limit=50`, once the router has finished its
//! first pass over the backlog; then the MCP server's `tools/call` (issue 35): `show_ticket` of
//! the same ticket and of 1,000 in turn, and `list_tickets` with a limit of 50 (POSTs from HAR
//! files). The table gives requests/s, p50 and p99, and each read's share of the ceiling.
//!
//! Those rows are closed loops: each connection sends its next request the moment the last is
//! answered, so the server always has CONNECTIONS requests waiting and the p99 is mostly that
//! queue. `YOI_BENCH_RATES=1000,5000` adds, for each rate, the same connections paced to that
//! many requests a second in all (autocannon's `-R`) for `/healthz`, the REST read and the MCP
//! calls: the latency a call sees when the clients are busy but the server is not saturated.

use yoi_tests::autocannon::{self, Target};
use yoi_tests::yoi_serve;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-api-ratio YOI_BINARY [SECONDS] [TICKETS] [CONNECTIONS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let seconds: u64 = args.get(2).map(|s| s.parse().expect(usage)).unwrap_or(10);
    let tickets: usize = args
        .get(3)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(10_000);
    let connections: usize = args.get(4).map(|s| s.parse().expect(usage)).unwrap_or(50);
    let tool = autocannon::tool();

    let (dir, token) = yoi_tests::generated_workspace(&yoi, tickets);
    let root = dir.path();
    let mut ids: Vec<String> = std::fs::read_dir(root.join(".yoi/tickets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    // A ticket from the middle of the backlog, with relations.
    let id = &ids[ids.len() / 2];

    // `YOI_BENCH_ROUTING=0`: a server that does not route the backlog meanwhile.
    yoi_tests::disable_routing_if_asked(root);
    let (server, addr) = yoi_serve(&yoi, root);
    // Reads are measured once the router's first pass over the backlog is done: while it
    // accepts tickets, every write it makes starts the caches over (YOI_BENCH_ROUTING=0 skips
    // the pass).
    let waited =
        yoi_tests::wait_for_router_rest(&addr, &token, std::time::Duration::from_secs(600));
    println!("router resting after {:.1} s", waited.as_secs_f64());
    // A HAR file of requests for autocannon to walk (each connection in turn).
    let har_file = |name: &str, entries: Vec<serde_json::Value>| {
        let file = root.join(format!("{name}.har"));
        let log = serde_json::json!({ "log": { "version": "1.2", "entries": entries } });
        std::fs::write(&file, log.to_string()).unwrap();
        Target::Har {
            file,
            base: format!("http://{addr}"),
        }
    };
    let har = |n: usize| {
        let step = (ids.len() / n).max(1);
        let entries = ids
            .iter()
            .step_by(step)
            .take(n)
            .map(|id| har_request("GET", &format!("http://{addr}/api/v1/tickets/{id}"), None))
            .collect();
        har_file(&format!("tickets-{n}"), entries)
    };
    // The MCP server's calls (issue 35), as autocannon sends a body: a HAR file of POSTs.
    let mcp_har = |name: &str, calls: Vec<serde_json::Value>| {
        let entries = calls
            .into_iter()
            .map(|params| {
                let body = serde_json::json!({
                    "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params,
                });
                har_request("POST", &format!("http://{addr}/mcp"), Some(&body))
            })
            .collect();
        har_file(name, entries)
    };
    let show = |id: &str| serde_json::json!({"name": "show_ticket", "arguments": {"id": id}});
    // autocannon counts answers that are not 2xx, and a tool's failure is a 200 with
    // `isError`: each call is made once first and must succeed.
    for params in [
        show(id),
        serde_json::json!({"name": "list_tickets", "arguments": {"limit": 50}}),
    ] {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let answer: serde_json::Value = ureq::post(&format!("http://{addr}/mcp"))
            .header("authorization", &format!("Bearer {token}"))
            .header("accept", "application/json, text/event-stream")
            .send_json(&body)
            .expect("the MCP call is answered")
            .body_mut()
            .read_json()
            .expect("a JSON-RPC answer");
        assert_eq!(
            answer["result"]["isError"],
            serde_json::json!(false),
            "{params}: {answer}"
        );
    }
    let step = (ids.len() / 1000).max(1);
    let targets = [
        (
            "GET /healthz",
            Target::Url(format!("http://{addr}/healthz")),
            None,
        ),
        (
            "GET /api/v1/tickets/{id}",
            Target::Url(format!("http://{addr}/api/v1/tickets/{id}")),
            Some(token.as_str()),
        ),
        (
            "GET /api/v1/tickets/{id}, 1,000 tickets in turn",
            har(1000),
            Some(token.as_str()),
        ),
        (
            "GET /api/v1/tickets/{id}, every ticket in turn",
            har(ids.len()),
            Some(token.as_str()),
        ),
        (
            "GET /api/v1/tickets?limit=50",
            Target::Url(format!("http://{addr}/api/v1/tickets?limit=50")),
            Some(token.as_str()),
        ),
        (
            "MCP `show_ticket` of the same ticket",
            mcp_har("mcp-show-1", vec![show(id)]),
            Some(token.as_str()),
        ),
        (
            "MCP `show_ticket`, 1,000 tickets in turn",
            mcp_har(
                "mcp-show-1000",
                ids.iter()
                    .step_by(step)
                    .take(1000)
                    .map(|i| show(i))
                    .collect(),
            ),
            Some(token.as_str()),
        ),
        (
            "MCP `list_tickets` (limit 50)",
            mcp_har(
                "mcp-list",
                vec![serde_json::json!({"name": "list_tickets", "arguments": {"limit": 50}})],
            ),
            Some(token.as_str()),
        ),
    ];
    println!(
        "autocannon, {connections} connections, {seconds} s each after a 2 s warm-up, one after another"
    );
    let rates: Vec<u64> = std::env::var("YOI_BENCH_RATES")
        .unwrap_or_default()
        .split(',')
        .filter(|r| !r.trim().is_empty())
        .map(|r| {
            r.trim()
                .parse()
                .expect("YOI_BENCH_RATES: requests/s, comma-separated")
        })
        .collect();
    println!("| request | paced at | requests/s | p50 | p99 | of /healthz | errors |");
    println!("|---|---|---|---|---|---|---|");
    let mut ceiling = None;
    let paced =
        |n: &str| n == "GET /healthz" || n == "GET /api/v1/tickets/{id}" || n.starts_with("MCP");
    for rate in std::iter::once(None).chain(rates.iter().copied().map(Some)) {
        for (name, target, token) in &targets {
            if rate.is_some() && !paced(name) {
                continue;
            }
            let _ = autocannon::run_paced(&tool, target, *token, connections, 2, rate);
            let l = autocannon::run_paced(&tool, target, *token, connections, seconds, rate);
            let share = match (rate, ceiling) {
                (Some(_), _) => "-".to_string(),
                (None, None) => {
                    ceiling = Some(l.rps);
                    "1.00".to_string()
                }
                (None, Some(c)) => format!("{:.3}", l.rps / c),
            };
            println!(
                "| {name} | {} | {:.0} | {:.1} ms | {:.1} ms | {share} | {} ({} not 2xx) |",
                rate.map_or("closed loop".to_string(), |r| format!("{r}/s")),
                l.rps,
                l.p50,
                l.p99,
                l.errors + l.non2xx,
                l.non2xx
            );
        }
    }
    server.stop();
}

/// One HAR request entry; a JSON `body` is sent with the headers an MCP client sends.
fn har_request(method: &str, url: &str, body: Option<&serde_json::Value>) -> serde_json::Value {
    let mut request = serde_json::json!({
        "method": method,
        "url": url,
        "httpVersion": "HTTP/1.1",
        "headers": [],
        "queryString": [],
        "cookies": [],
        "headersSize": -1,
        "bodySize": 0,
    });
    if let Some(body) = body {
        request["headers"] = serde_json::json!([
            {"name": "content-type", "value": "application/json"},
            {"name": "accept", "value": "application/json, text/event-stream"},
            {"name": "mcp-protocol-version", "value": "2025-06-18"},
        ]);
        request["bodySize"] = serde_json::json!(-1);
        request["postData"] =
            serde_json::json!({"mimeType": "application/json", "text": body.to_string()});
    }
    serde_json::json!({ "request": request })
}
