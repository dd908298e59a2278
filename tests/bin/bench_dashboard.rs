//! `yoi-bench-dashboard YOI_BINARY [TICKETS] [REQUESTS]`: the dashboard of a real `yoi serve`
//! over a generated workspace (default 10,000 tickets, see [`yoi_tests::generate`]).
//!
//! Measures, with a session cookie from a one-time login link:
//! - server time (request sent → last byte, sequential, keep-alive) of REQUESTS (default 200)
//!   GETs of the board `/`, a filtered board, `/tickets`, a fragment of 50 cards, and a ticket page
//!   whose thread holds 200 comments and which has 20 relations; `/queue` 20 times;
//! - the board's weight: HTML raw and gzipped (`gzip -9`), CSS, JS, and every other address the
//!   page loads (fonts and other hosts must be none);
//! - in headless Chromium (the browser harness), from an API edit to the change seen in the board's
//!   DOM (a MutationObserver's `Date.now()` against the wall clock before the request), 40 times;
//!   and the same for an edit by another process (`yoi --local ticket edit`), 10 times.
//!
//! With `YOI_SCREENSHOTS=DIR` it saves the board, the ticket page and the queue there.
//!
//! `yoi-bench-dashboard YOI_BINARY TICKETS REQUESTS --pages` measures only the pages people
//! wait on at that size: REQUESTS GETs each of the board `/` and `/queue` (p50, p95, max), with
//! the load average before and after; nothing is written to the workspace. Two settings help
//! comparing builds on a busy machine:
//! - `YOI_BENCH_WORKSPACE=DIR` generates the workspace in DIR once and reuses it on later runs
//!   (a 100,000-ticket tree takes minutes to write and index); DIR is never deleted;
//! - the server's CPU time per request of each page is printed beside the times (from
//!   `/proc/PID/stat`: less moved by other processes than the time a request waits);
//! - `YOI_BENCH_CALLGRIND=DIR`, with YOI_BINARY a script that runs `valgrind --tool=callgrind
//!   --callgrind-out-file=DIR/%p.out yoi "$@"`, counts the server's instructions per request
//!   of each page (`callgrind_control` zeroes the counts before a page's requests and dumps them
//!   after), which the machine's load does not change at all;
//! - `YOI_BENCH_WRITES=N` measures both pages again while a writer posts N comments a second
//!   through the API on the board's cards, in turn (the workspace then gains those comments), and
//!   prints how many it made and their p99.

#[path = "../browser/mod.rs"]
mod browser;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use yoi_tests::generate::{generate, SEED};
use yoi_tests::yoi_init;

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn summary(label: &str, mut ms: Vec<f64>, bytes: usize) {
    ms.sort_by(f64::total_cmp);
    println!(
        "{label:<42} n={:<4} p50 {:>7.2} ms  p95 {:>7.2} ms  max {:>7.2} ms  {:>8} bytes",
        ms.len(),
        pct(&ms, 0.5),
        pct(&ms, 0.95),
        ms[ms.len() - 1],
        bytes
    );
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-dashboard YOI_BINARY [TICKETS] [REQUESTS] [--pages]";
    let pages_only = args.iter().any(|a| a == "--pages");
    let args: Vec<String> = args.into_iter().filter(|a| a != "--pages").collect();
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let tickets: usize = args
        .get(2)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(10_000);
    let requests: usize = args.get(3).map(|s| s.parse().expect(usage)).unwrap_or(200);

    let dir = tempfile::tempdir().unwrap();
    // `YOI_BENCH_KEEP=1` keeps the workspace for a look afterwards (its path is printed).
    let kept = std::env::var_os("YOI_BENCH_KEEP").map(|_| dir.path().to_path_buf());
    let reused = std::env::var_os("YOI_BENCH_WORKSPACE").map(PathBuf::from);
    let root = reused.as_deref().unwrap_or(dir.path());
    if let Some(k) = &kept {
        println!("workspace kept at {}", k.display());
    }
    let token = match reused
        .as_ref()
        .filter(|r| r.join(".yoi/bench-token").exists())
    {
        Some(r) => {
            println!("workspace reused from {}", r.display());
            std::fs::read_to_string(r.join(".yoi/bench-token")).unwrap()
        }
        None => {
            std::fs::create_dir_all(root).unwrap();
            yoi_testkit::git(root, &["init", "-q", "-b", "main"]);
            yoi_store::init(root, "main").unwrap();
            let made = generate(root, tickets, tickets * 2);
            println!("seed {SEED:#x}: {tickets} tickets, {made} depends_on relations");
            // No routing and no pods: the numbers are the dashboard's alone.
            yoi_tests::no_routing_no_pods(root);
            let token = yoi_init(&yoi, root);
            if reused.is_some() {
                std::fs::write(root.join(".yoi/bench-token"), &token).unwrap();
            }
            token
        }
    };

    let started = Instant::now();
    let (_server, addr, login) = yoi_tests::yoi_serve_with_login(&yoi, root);
    let base = format!("http://{addr}");
    println!("server up in {:.2}s", started.elapsed().as_secs_f64());

    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let cookie = yoi_testkit::dashboard_session(&login);
    let get = |path: &str| -> (f64, String) {
        let t = Instant::now();
        let mut r = agent
            .get(&format!("{base}{path}"))
            .header("Cookie", &cookie)
            .call()
            .unwrap();
        let body = r.body_mut().read_to_string().unwrap();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(r.status(), 200, "GET {path}: {body}");
        (ms, body)
    };
    let (first, board) = get("/");
    println!("first board request after start: {first:.1} ms");
    if pages_only {
        println!("load average before: {}", loadavg());
        let pid = _server.id();
        let callgrind = std::env::var_os("YOI_BENCH_CALLGRIND").map(PathBuf::from);
        let writes: u64 = std::env::var("YOI_BENCH_WRITES")
            .ok()
            .map(|v| {
                v.parse()
                    .expect("YOI_BENCH_WRITES is a number of comments a second")
            })
            .unwrap_or(0);
        let rounds: &[u64] = if writes > 0 { &[0, writes] } else { &[0] };
        for &rate in rounds {
            let writer = (rate > 0).then(|| {
                println!("with {rate} comments a second through the API on the board's cards:");
                Writer::start(
                    base.clone(),
                    token.trim().to_string(),
                    card_ids(&board),
                    rate,
                )
            });
            for (label, path) in [("board /", "/"), ("/queue", "/queue")] {
                let _ = get(path); // warm
                if callgrind.is_some() {
                    callgrind_control(pid, "-z");
                }
                // `YOI_BENCH_PERF_RECORD=DIR`: a `perf record -g` profile of the server per page.
                let record = std::env::var_os("YOI_BENCH_PERF_RECORD").map(|dir| {
                    let out = PathBuf::from(dir).join(format!("{}.data", path.replace('/', "_")));
                    let child = Command::new("perf")
                        .args([
                            "record",
                            "-e",
                            "cpu-clock",
                            "-g",
                            "-p",
                            &pid.to_string(),
                            "-o",
                        ])
                        .arg(&out)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .expect("perf runs (YOI_BENCH_PERF_RECORD)");
                    std::thread::sleep(Duration::from_millis(500));
                    child
                });
                let cpu = cpu_ms(pid);
                let mut ms = Vec::new();
                let mut bytes = 0;
                for _ in 0..requests {
                    let (t, body) = get(path);
                    ms.push(t);
                    bytes = body.len();
                }
                let cpu = (cpu_ms(pid) - cpu) / requests as f64;
                if let Some(mut child) = record {
                    // SAFETY: signals the perf child this process started and has not reaped.
                    unsafe {
                        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
                    }
                    child.wait().unwrap();
                }
                summary(label, ms, bytes);
                println!("{label:<42} server CPU {cpu:.2} ms per request");
                if let Some(dir) = &callgrind {
                    callgrind_control(pid, "-d");
                    let n = callgrind_total(dir, pid);
                    println!(
                    "{label:<42} {:.2} M instructions per request (callgrind, {requests} requests)",
                    n as f64 / requests as f64 / 1e6
                );
                }
            }
            if let Some(w) = writer {
                let (done, failed, p99) = w.stop();
                println!("writer: {done} comments made, {failed} failed, p99 {p99:.1} ms");
            }
        }
        println!("load average after: {}", loadavg());
        return;
    }

    // The ticket page's subject: the first planning card, with 200 comments and 20 relations.
    let ids = card_ids(&board);
    let planning = board
        .split("data-lane=\"planning\"")
        .nth(2)
        .map(card_ids)
        .unwrap_or_default();
    let subject = planning.first().expect("a planning card").clone();
    let api = |method: &str, path: &str, body: serde_json::Value| {
        let req = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{base}/api/v1{path}"))
            .header("Authorization", format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .unwrap();
        let r = agent.run(req).unwrap();
        assert!(r.status().is_success(), "{method} {path}: {}", r.status());
    };
    for i in 0..200 {
        api(
            "POST",
            &format!("/tickets/{subject}/comments"),
            serde_json::json!({ "body": format!("Comment {i}: **progress** on `the thing`, see [the docs](https://example.invalid/{i}).") }),
        );
    }
    let others: Vec<&String> = ids.iter().filter(|i| **i != subject).take(20).collect();
    for o in &others {
        api(
            "POST",
            &format!("/tickets/{subject}/relations"),
            serde_json::json!({ "kind": "related", "target": o }),
        );
    }

    let fragment = format!(
        "/fragments/cards?ids={}",
        ids[..50.min(ids.len())].join(",")
    );
    let word = "ticket";
    let targets: Vec<(String, String, usize)> = vec![
        ("board /".into(), "/".into(), requests),
        (
            format!("board /?q={word}&blocked=yes"),
            format!("/?q={word}&blocked=yes"),
            requests,
        ),
        ("/tickets".into(), "/tickets".into(), requests),
        ("/fragments/cards (50 ids)".into(), fragment, requests),
        (
            "ticket page (200 comments, 20 relations)".into(),
            format!("/tickets/{subject}"),
            requests,
        ),
        ("/queue".into(), "/queue".into(), 20),
    ];
    for (label, path, n) in &targets {
        let _ = get(path); // warm
        let mut ms = Vec::new();
        let mut bytes = 0;
        for _ in 0..*n {
            let (t, body) = get(path);
            ms.push(t);
            bytes = body.len();
        }
        summary(label, ms, bytes);
    }

    // Weight of the board.
    let (_, board) = get("/");
    let gz = gzip_len(board.as_bytes());
    let css_url = attr_after(&board, "<link rel=\"stylesheet\" href=\"");
    let js_url = attr_after(&board, "<script src=\"");
    let (_, css) = get(&css_url);
    let (_, js) = get(&js_url);
    let cards = board.matches("class=\"card\"").count();
    println!(
        "board weight: HTML {} bytes ({gz} gzipped) with {cards} cards; CSS {} bytes; JS {} bytes",
        board.len(),
        css.len(),
        js.len()
    );
    let loads = loaded_addresses(&board);
    let foreign: Vec<&String> = loads.iter().filter(|u| u.contains("://")).collect();
    let fonts = loads
        .iter()
        .filter(|u| [".woff", ".ttf", ".otf"].iter().any(|e| u.contains(e)))
        .count();
    println!(
        "board loads {} addresses besides itself ({}), {} on other hosts, {fonts} fonts",
        loads.len(),
        loads.join(", "),
        foreign.len()
    );

    // Event → visible change in a real browser.
    let rt = yoi_tests::runtime();
    rt.block_on(browser_latency(&yoi, root, &base, &token, &subject));
    if kept.is_some() {
        drop(_server);
        let _ = dir.keep();
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The CPU time process `pid` has used, all its threads, in milliseconds.
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's closing parenthesis; utime and stime are 14 and 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks * 1000.0 / hz
}

fn callgrind_control(pid: u32, what: &str) {
    let out = Command::new("callgrind_control")
        .arg(what)
        .arg(pid.to_string())
        .output()
        .expect("callgrind_control runs (YOI_BENCH_CALLGRIND)");
    assert!(
        out.status.success(),
        "callgrind_control {what} {pid}: {out:?}"
    );
}

/// The instruction count of the newest dump of `pid` in `dir` (`totals:` or `summary:`).
fn callgrind_total(dir: &Path, pid: u32) -> u64 {
    let newest = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{pid}.out"))
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("no callgrind dump of {pid} in {}", dir.display()));
    let text = std::fs::read_to_string(newest.path()).unwrap();
    text.lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no totals in {}", newest.path().display()))
}

fn card_ids(html: &str) -> Vec<String> {
    html.split("<li class=\"card\" id=\"t-")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .map(str::to_string)
        .collect()
}

fn attr_after(html: &str, prefix: &str) -> String {
    html.split(prefix)
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("no {prefix}"))
        .to_string()
}

/// Every `src=` and stylesheet `href=` of the page (what a browser fetches on load).
fn loaded_addresses(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in html.split("src=\"").skip(1) {
        out.push(part.split('"').next().unwrap_or("").to_string());
    }
    for part in html.split("<link ").skip(1) {
        if let Some(h) = part.split("href=\"").nth(1) {
            out.push(h.split('"').next().unwrap_or("").to_string());
        }
    }
    out
}

fn gzip_len(bytes: &[u8]) -> usize {
    let mut gz = Command::new("gzip")
        .arg("-9c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip runs");
    gz.stdin.take().unwrap().write_all(bytes).unwrap();
    gz.wait_with_output().unwrap().stdout.len()
}

fn screenshots() -> Option<PathBuf> {
    std::env::var_os("YOI_SCREENSHOTS").map(PathBuf::from)
}

async fn browser_latency(yoi: &Path, root: &Path, base: &str, token: &str, subject: &str) {
    use fantoccini::Locator;
    let driver = browser::Driver::start();
    let c = driver.session(true).await;
    let link = Command::new(yoi)
        .arg("-C")
        .arg(root)
        .args(["dashboard", "--no-open"])
        .output()
        .unwrap();
    let link = String::from_utf8(link.stdout).unwrap().trim().to_string();
    c.goto(&link).await.unwrap();
    browser::wait_for(&c, "#live[data-state=\"live\"]", browser::BROWSER_TIMEOUT).await;
    if let Some(dir) = screenshots() {
        browser::screenshot(&c, &dir.join("board.png")).await;
    }
    let observer = format!(
        "window.__seen = {{}};
         const card = document.getElementById('t-{subject}');
         if (!card) return false;
         new MutationObserver(() => {{
           const t = document.querySelector('#t-{subject} .title');
           const m = t && /^bench (\\d+)$/.exec(t.textContent);
           if (m && !(m[1] in window.__seen)) window.__seen[m[1]] = Date.now();
         }}).observe(document.querySelector('.lanes'), {{ subtree: true, childList: true, characterData: true }});
         return true;"
    );
    let ok = c.execute(&observer, vec![]).await.unwrap();
    assert_eq!(
        ok,
        serde_json::json!(true),
        "the subject's card is on the board"
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let seen = |i: usize| {
        let c = &c;
        async move {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let v = c
                    .execute(&format!("return window.__seen['{i}'] || null;"), vec![])
                    .await
                    .unwrap();
                if let Some(ms) = v.as_f64() {
                    return ms;
                }
                assert!(Instant::now() < deadline, "edit {i} never reached the page");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    };
    let mut api_ms = Vec::new();
    for i in 0..40 {
        let t0 = now_ms();
        let req = ureq::http::Request::builder()
            .method("PATCH")
            .uri(format!("{base}/api/v1/tickets/{subject}"))
            .header("Authorization", format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .body(serde_json::json!({ "title": format!("bench {i}") }).to_string())
            .unwrap();
        let r = agent.run(req).unwrap();
        assert!(r.status().is_success(), "PATCH: {}", r.status());
        api_ms.push(seen(i).await - t0);
    }
    summary("API edit → visible on the board", api_ms, 0);
    let mut local_ms = Vec::new();
    for i in 1000..1010 {
        let t0 = now_ms();
        let out = Command::new(yoi)
            .arg("-C")
            .arg(root)
            .args(["--local", "ticket", "edit", subject, "--title"])
            .arg(format!("bench {i}"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        local_ms.push(seen(i).await - t0);
    }
    summary("`yoi --local` edit → visible on the board", local_ms, 0);
    if let Some(dir) = screenshots() {
        c.goto(&format!("{base}/tickets/{subject}")).await.unwrap();
        browser::wait_for(&c, "#thread", browser::BROWSER_TIMEOUT).await;
        browser::screenshot(&c, &dir.join("ticket.png")).await;
        c.goto(&format!("{base}/queue")).await.unwrap();
        browser::wait_for(&c, "main h1", browser::BROWSER_TIMEOUT).await;
        browser::screenshot(&c, &dir.join("queue.png")).await;
        let _ = c.find(Locator::Css("main")).await;
    }
    c.close().await.unwrap();
}

/// Comments through the API at a steady rate on the given tickets, in turn, until stopped.
struct Writer {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(usize, usize, f64)>,
}

impl Writer {
    fn start(base: String, token: String, tickets: Vec<String>, rate: u64) -> Writer {
        assert!(!tickets.is_empty(), "the board shows no card to comment on");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            let every = Duration::from_secs_f64(1.0 / rate as f64);
            let started = Instant::now();
            let (mut times, mut failed, mut n) = (Vec::new(), 0, 0usize);
            while !flag.load(Ordering::Relaxed) {
                if let Some(wait) =
                    (started + every * n as u32).checked_duration_since(Instant::now())
                {
                    std::thread::sleep(wait);
                }
                let t = Instant::now();
                let ok = agent
                    .post(&format!(
                        "{base}/api/v1/tickets/{}/comments",
                        tickets[n % tickets.len()]
                    ))
                    .header("authorization", &format!("Bearer {token}"))
                    .send_json(
                        serde_json::json!({ "body": format!("comment {n} while the pages load") }),
                    )
                    .map(|r| r.status().is_success())
                    .unwrap_or(false);
                if ok {
                    times.push(t.elapsed().as_secs_f64() * 1000.0);
                } else {
                    failed += 1;
                }
                n += 1;
            }
            times.sort_by(|a: &f64, b| a.total_cmp(b));
            let p99 = times
                .get((times.len() * 99 / 100).min(times.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0.0);
            (times.len(), failed, p99)
        });
        Writer { stop, thread }
    }

    /// Stop writing: the comments made, those that failed, and the p99 of their times.
    fn stop(self) -> (usize, usize, f64) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the writer ran")
    }
}
