//! `yoi-bench-serve-memory YOI_BINARY [TICKETS]`: the resident memory of `yoi serve` after
//! every page of the dashboard and a full list (issue 16 item 8, issue 45).
//!
//! A workspace of TICKETS generated tickets (default 100,000) is indexed by `yoi init` and
//! served. The server's memory is read from `/proc/<pid>/status` when it is up, 10 s later
//! (the router's first pass over the backlog runs meanwhile), once the router has caught up
//! and rests (`GET /api/v1/router`), then after each request below, in this order:
//!
//! - every dashboard page a person opens (`GET` routes of `crates/yoi-server/src/ui/mod.rs`,
//!   with a session from the one-time login link): the board `/`, `/queue`, `/tickets` (and
//!   its last page, newest first, and every state), `/tickets/new`, a ticket's page, `/inbox`,
//!   `/pods`, `/costs`, `/skills` (and the first skill's page), `/workflows` (and the first
//!   workflow's page), `/doctor`, `/login`, and the fragments the pages fetch (cards, counts,
//!   a ticket's, the ticket picks);
//! - the whole backlog through `GET /api/v1/tickets` (pages of 1,000, following `next`);
//! - `yoi ticket list --all --json` and `yoi ticket list --state all --all --json` through the
//!   server (the CLI finds it running; its output is counted, not kept);
//! - a ticket's whole thread (`GET /api/v1/tickets/{id}?all=true`).
//!
//! `VmRSS` is split into anonymous memory (the heap) and file pages (the mapped database);
//! `VmHWM` is the peak. The line "highest RSS after a request" is the figure issue 45's goal
//! (≤ 150 MiB at 100,000 tickets) is about. `YOI_BENCH_ROUTING=0` serves with routing off;
//! `YOI_BENCH_KEEP=1` keeps the tree. The load average is printed at the start and the end
//! (the machine may be shared).

use std::io::Read;
use std::process::{Command, Stdio};

use yoi_tests::yoi_serve_with_login;

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

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

struct Table {
    pid: u32,
    /// The highest RSS read after a request, and after which.
    highest: (f64, String),
}

impl Table {
    fn show(&mut self, when: &str, extra: &str) {
        let m = memory(self.pid);
        println!(
            "| {when} | {extra} | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.1} MiB |",
            m[0], m[1], m[2], m[3]
        );
        if m[0] > self.highest.0 {
            self.highest = (m[0], when.to_string());
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-serve-memory YOI_BINARY [TICKETS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let tickets: usize = args
        .get(2)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(100_000);
    println!("load average at the start: {}", loadavg());
    let (dir, token) = yoi_tests::generated_workspace(&yoi, tickets);
    let root = dir.path();
    // `YOI_BENCH_ROUTING=0`: a server that does not route the backlog (for a profile).
    yoi_tests::disable_routing_if_asked(root);
    let (server, addr, login) = yoi_serve_with_login(&yoi, root);
    let pid = server.id();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let auth = format!("Bearer {token}");
    let mut t = Table {
        pid,
        highest: (0.0, String::new()),
    };
    println!("| `yoi serve` | answer | RSS | of it anonymous | of it file pages | peak (VmHWM) |");
    println!("|---|---|---|---|---|---|");
    t.show("started", "");
    // The router's first passes and the catch-up run in the background after the start.
    std::thread::sleep(std::time::Duration::from_secs(10));
    t.show("10 s later, before any request", "");
    // Then until the router has caught up with the backlog and rests (at most 10 minutes).
    let waited =
        yoi_tests::wait_for_router_rest(&addr, &token, std::time::Duration::from_secs(600));
    t.show(
        &format!(
            "router caught up and resting ({:.0} s later)",
            waited.as_secs_f64() + 10.0
        ),
        "",
    );
    // Only what follows is "after a request".
    t.highest = (0.0, String::new());

    let api = |path: &str| -> serde_json::Value {
        let mut resp = agent
            .get(&format!("http://{addr}/api/v1{path}"))
            .header("Authorization", &auth)
            .call()
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        assert_eq!(resp.status().as_u16(), 200, "GET /api/v1{path}");
        resp.body_mut().read_json().expect("a JSON answer")
    };
    // What the pages with an id need: a ticket in the middle, a skill, a workflow.
    let first_page = api("/tickets?limit=1000&state=all");
    let ids: Vec<String> = first_page["tickets"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let one = ids.get(ids.len() / 2).cloned().expect("a ticket");
    let skill = api("/skills")["skills"]
        .as_array()
        .and_then(|a| a.first())
        .and_then(|s| s["name"].as_str().map(str::to_string));
    let workflow = api("/workflows")["workflows"]
        .as_array()
        .and_then(|a| a.first())
        .and_then(|w| w["slug"].as_str().map(str::to_string));

    let cookie = yoi_testkit::dashboard_session(&login);
    let mut pages: Vec<String> = [
        "/",
        "/queue",
        "/tickets",
        "/tickets?sort=-id",
        "/tickets?state=all",
        "/tickets/new",
        &format!("/tickets/{one}"),
        "/inbox",
        "/pods",
        "/costs",
        "/skills",
        "/workflows",
        "/doctor",
        "/login",
        "/fragments/cards",
        "/fragments/counts",
        &format!("/fragments/ticket/{one}"),
        "/fragments/ticket-picks",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(s) = &skill {
        pages.push(format!("/skills/{s}"));
    }
    if let Some(w) = &workflow {
        pages.push(format!("/workflows/{w}"));
    }
    for page in &pages {
        let started = std::time::Instant::now();
        let mut resp = agent
            .get(&format!("http://{addr}{page}"))
            .header("Cookie", &cookie)
            .call()
            .unwrap_or_else(|e| panic!("GET {page}: {e}"));
        let status = resp.status().as_u16();
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(u64::MAX)
            .read_to_vec()
            .map(|b| b.len())
            .unwrap_or(0);
        assert!(
            status == 200 || (page == "/login" && status == 303),
            "GET {page}: {status}"
        );
        t.show(
            &format!("dashboard `{page}`"),
            &format!(
                "{status}, {} KB, {:.0} ms",
                bytes / 1000,
                started.elapsed().as_secs_f64() * 1e3
            ),
        );
    }

    let started = std::time::Instant::now();
    let (mut listed, mut after) = (0usize, None::<String>);
    loop {
        let page = match &after {
            Some(a) => api(&format!("/tickets?limit=1000&after={a}")),
            None => api("/tickets?limit=1000"),
        };
        listed += page["count"].as_u64().unwrap_or(0) as usize;
        match page["next"].as_str() {
            Some(n) => after = Some(n.to_string()),
            None => break,
        }
    }
    t.show(
        "API: every open ticket, pages of 1,000",
        &format!("{listed} tickets, {:.1} s", started.elapsed().as_secs_f64()),
    );

    for (label, args) in [
        (
            "CLI through the server: `ticket list --all --json`",
            &["ticket", "list", "--all", "--json"][..],
        ),
        (
            "CLI through the server: `ticket list --state all --all --json`",
            &["ticket", "list", "--state", "all", "--all", "--json"][..],
        ),
    ] {
        let started = std::time::Instant::now();
        let mut child = Command::new(&yoi)
            .args(args)
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("yoi runs");
        // Counted as it arrives, never kept: the CLI's output is not what is measured.
        let (mut out, mut bytes, mut buf) = (child.stdout.take().unwrap(), 0usize, [0u8; 65536]);
        loop {
            match out.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => bytes += n,
            }
        }
        let status = child.wait().expect("yoi ends");
        assert!(status.success(), "yoi {args:?}: {status}");
        t.show(
            label,
            &format!(
                "{:.1} MB, {:.1} s",
                bytes as f64 / 1e6,
                started.elapsed().as_secs_f64()
            ),
        );
    }

    let started = std::time::Instant::now();
    let whole = api(&format!("/tickets/{one}?all=true"));
    t.show(
        &format!("API: `/tickets/{one}?all=true`"),
        &format!(
            "{} events, {:.0} ms",
            whole["events"].as_array().map_or(0, Vec::len),
            started.elapsed().as_secs_f64() * 1e3
        ),
    );

    // A hand edit (a new file renamed over item.md, as an editor saves): how long until the
    // API shows it. Seen at once with a watch, at the next full look without one.
    let item = root.join(".yoi/tickets").join(&one).join("item.md");
    let text = std::fs::read_to_string(&item).expect("item.md");
    let edited = text.replacen("title: ", "title: Edited by hand ", 1);
    let tmp = item.with_file_name(".item.md.swp");
    std::fs::write(&tmp, edited).expect("write");
    std::fs::rename(&tmp, &item).expect("rename");
    let started = std::time::Instant::now();
    let seen = loop {
        let title = api(&format!("/tickets/{one}"))["title"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if title.starts_with("Edited by hand") {
            break Some(started.elapsed());
        }
        if started.elapsed() > std::time::Duration::from_secs(300) {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    match seen {
        Some(d) => println!(
            "a hand edit of {one}'s item.md was served {:.2} s after it was made",
            d.as_secs_f64()
        ),
        None => println!("a hand edit of {one}'s item.md was not served within 300 s"),
    }
    t.show("after the hand edit was served", "");

    println!();
    println!(
        "highest RSS after a request: {:.1} MiB (after {}); goal ≤ 150 MiB",
        t.highest.0, t.highest.1
    );
    println!("load average at the end: {}", loadavg());
    server.stop();
    // `YOI_BENCH_KEEP=1` keeps the tree (for a profile afterwards); else it is removed.
    if std::env::var_os("YOI_BENCH_KEEP").is_some() {
        println!("kept {}", dir.keep().display());
    }
}
