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
