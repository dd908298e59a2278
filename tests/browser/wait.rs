//! Bounded waits on what a page shows, and screenshots. Each wait polls the browser until its
//! condition holds or the timeout passes, then fails the test with what it saw last; no test
//! needs a sleep of its own.

use std::path::Path;
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, Locator};

const POLL_EVERY: Duration = Duration::from_millis(50);

/// What [`wait_until_text`] waits for in an element's text: a substring (`&str`) or a predicate.
pub trait TextCheck {
    fn matches(&self, text: &str) -> bool;
    fn describe(&self) -> String;
}

impl TextCheck for &str {
    fn matches(&self, text: &str) -> bool {
        text.contains(*self)
    }

    fn describe(&self) -> String {
        format!("text containing {self:?}")
    }
}

impl<F: Fn(&str) -> bool> TextCheck for F {
    fn matches(&self, text: &str) -> bool {
        self(text)
    }

    fn describe(&self) -> String {
        "text matching the predicate".to_string()
    }
}

/// The first element matching the CSS selector `css`, once one exists.
pub async fn wait_for(client: &Client, css: &str, timeout: Duration) -> Element {
    match client
        .wait()
        .at_most(timeout)
        .every(POLL_EVERY)
        .for_element(Locator::Css(css))
        .await
    {
        Ok(element) => element,
        Err(e) => panic!(
            "no element matches `{css}` within {timeout:?} at {}: {e}",
            current_url(client).await
        ),
    }
}

/// The first element matching `css` whose visible text satisfies `check`, and that text.
pub async fn wait_until_text(
    client: &Client,
    css: &str,
    check: impl TextCheck,
    timeout: Duration,
) -> (Element, String) {
    let until = Instant::now() + timeout;
    let mut last_seen = Vec::new();
    loop {
        last_seen.clear();
        // An element replaced between `find_all` and `text` is stale; the next round finds it anew.
        if let Ok(elements) = client.find_all(Locator::Css(css)).await {
            for element in elements {
                if let Ok(text) = element.text().await {
                    if check.matches(&text) {
                        return (element, text);
                    }
                    last_seen.push(text);
                }
            }
        }
        if Instant::now() >= until {
            panic!(
                "no element matching `{css}` showed {} within {timeout:?} at {}; texts seen: {last_seen:?}",
                check.describe(),
                current_url(client).await
            );
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Save a PNG of the current viewport to `path`, creating its parent directories.
pub async fn screenshot(client: &Client, path: &Path) {
    let png = client
        .screenshot()
        .await
        .unwrap_or_else(|e| panic!("take a screenshot for {}: {e}", path.display()));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("create {}: {e}", parent.display()));
    }
    std::fs::write(path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

async fn current_url(client: &Client) -> String {
    match client.current_url().await {
        Ok(url) => url.to_string(),
        Err(e) => format!("<unknown url: {e}>"),
    }
}
