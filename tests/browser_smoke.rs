//! The browser harness itself (browser/mod.rs): a real headless Chromium runs JavaScript in one
//! session and not in another, takes a screenshot, and leaves no process behind once the driver
//! is dropped.

#[path = "browser/mod.rs"]
mod browser;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

use browser::{Driver, BROWSER_TIMEOUT};
use fantoccini::{Client, Locator};

const PAGE: &str = "<!doctype html>\n<html><head><title>smoke</title></head><body>\n\
<noscript><p id=\"nojs\">JavaScript is off</p></noscript>\n\
<h1>smoke</h1>\n\
<script>document.body.dataset.js = \"on\";</script>\n\
</body></html>\n";

/// Serve `PAGE` at `/` (404 elsewhere) from a thread; returns the page's URL.
fn serve_page() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the page server");
    let url = format!("http://{}/", listener.local_addr().expect("local address"));
    std::thread::spawn(move || {
        // A thread per connection: Chromium opens speculative connections that may never send
        // a request, and one of those must not hold up the real one.
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    });
    url
}

fn answer(mut stream: TcpStream) {
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    // Read the headers so the browser never sees its request cut short.
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    let (status, body) = match request_line.split_whitespace().nth(1) {
        Some("/") => ("200 OK", PAGE),
        _ => ("404 Not Found", "not found\n"),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes());
}

async fn data_js(client: &Client) -> Option<String> {
    client
        .find(Locator::Css("body"))
        .await
        .expect("the page has a body")
        .attr("data-js")
        .await
        .expect("read data-js")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_runs_scripts_only_when_asked_and_leaves_no_process_behind() {
    let url = serve_page();
    let driver = Driver::start();
    let trace = driver.trace();

    let with_js = driver.session(true).await;
    with_js
        .goto(&url)
        .await
        .expect("open the page with JavaScript");
    browser::wait_for(&with_js, "body[data-js=on]", BROWSER_TIMEOUT).await;
    assert_eq!(data_js(&with_js).await.as_deref(), Some("on"));
    assert!(
        with_js.find(Locator::Css("#nojs")).await.is_err(),
        "<noscript> content became elements although JavaScript runs"
    );
    let shots = tempfile::tempdir().expect("screenshot directory");
    let shot = shots.path().join("nested/with-js.png");
    browser::screenshot(&with_js, &shot).await;
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "not a PNG: {:?}",
        &png[..png.len().min(8)]
    );

    let without_js = driver.session(false).await;
    without_js
        .goto(&url)
        .await
        .expect("open the page without JavaScript");
    let (_, text) =
        browser::wait_until_text(&without_js, "#nojs", "JavaScript is off", BROWSER_TIMEOUT).await;
    assert_eq!(text, "JavaScript is off");
    assert_eq!(data_js(&without_js).await, None);

    // The scan must see the browsers before their absence afterwards means anything.
    let running = trace.alive();
    assert!(
        running
            .iter()
            .any(|p| p.pid == trace.pgid() && p.comm == "chromedriver")
            && running
                .iter()
                .filter(|p| p.ppid == trace.pgid() && p.comm == "chromium")
                .count()
                == 2,
        "expected chromedriver and its two browsers in group {}: {running:?}",
        trace.pgid()
    );
    // Sessions stay open on purpose: dropping the driver must clean up after them too.
    drop(driver);
    assert_eq!(
        trace.alive(),
        Vec::new(),
        "left behind after the driver was dropped"
    );
    drop((with_js, without_js));
}

/// Set in the copy of this test binary that `a_killed_test_process_leaves_no_browser_behind`
/// starts and then kills outright.
const CHILD_ENV: &str = "YOI_BROWSER_SMOKE_CHILD";

/// A test binary killed with SIGKILL never runs `Drop`: chromedriver still dies with it (its
/// parent-death signal), and the browsers it had started are killed by the next driver's start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_test_process_leaves_no_browser_behind() {
    if std::env::var_os(CHILD_ENV).is_some() {
        // The copy: open a browser, say where it is, and wait to be killed.
        let url = serve_page();
        let driver = Driver::start();
        let client = driver.session(true).await;
        client.goto(&url).await.expect("open the page");
        println!("TRACE {}", driver.trace().to_line());
        std::io::stdout().flush().expect("flush the trace line");
        tokio::time::sleep(std::time::Duration::from_secs(300)).await;
        unreachable!("the parent kills this process within 300 s");
    }
    let mut child = std::process::Command::new(std::env::current_exe().expect("this binary"))
        .args([
            "--exact",
            "a_killed_test_process_leaves_no_browser_behind",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("start a copy of this test binary");
    let mut trace = None;
    for line in BufReader::new(child.stdout.take().expect("piped stdout"))
        .lines()
        .map_while(Result::ok)
    {
        // The harness prints `test NAME ... ` without a line end before the test's own output.
        if let Some((_, rest)) = line.split_once("TRACE ") {
            trace = browser::DriverTrace::parse(rest);
            break;
        }
    }
    let Some(trace) = trace else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the copy of the test binary never opened a browser");
    };
    let before = trace.alive();
    assert!(
        before.iter().any(|p| p.comm == "chromedriver")
            && before.iter().any(|p| p.comm == "chromium"),
        "the copy's chromedriver and browser should be running: {before:?}"
    );
    child.kill().expect("SIGKILL the copy");
    child.wait().expect("reap the copy");

    // chromedriver follows its owner within moments; nothing waits on it but the kernel.
    let until = std::time::Instant::now() + BROWSER_TIMEOUT;
    while trace.alive().iter().any(|p| p.comm == "chromedriver") {
        assert!(
            std::time::Instant::now() < until,
            "chromedriver outlived the test process that started it: {:?}",
            trace.alive()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The next driver's start sweeps what the dead owner left.
    let driver = Driver::start();
    let until = std::time::Instant::now() + BROWSER_TIMEOUT;
    while !trace.alive().is_empty() {
        assert!(
            std::time::Instant::now() < until,
            "left behind by a killed test process after the next driver started: {:?}",
            trace.alive()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    drop(driver);
}
