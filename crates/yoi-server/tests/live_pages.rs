//! A dashboard page and the live updates that follow it: the outbox position a page carries
//! (`<body data-seq>`, where its script resumes the stream) is never past what the page shows.
//! Were it read after the page's content, an event landing in between would be neither on the
//! page nor sent to it, and the card would stay stale until a reload.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::dashboard::{log_in, page};
use common::{Backend, Server};
use serde_json::json;

fn title(n: usize) -> String {
    format!("edit-{n:05}")
}

/// The number in the first `edit-NNNNN` title on the page, and the page's `data-seq`.
fn shown(html: &str) -> (usize, i64) {
    let n = html
        .split("edit-")
        .nth(1)
        .and_then(|r| r.get(..5))
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("no edit title on the page:\n{html}"));
    let seq = html
        .split("data-seq=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("no data-seq on the page:\n{html}"));
    (n, seq)
}

#[test]
fn a_page_resumes_live_updates_no_later_than_what_it_shows() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create(&title(0), "");
    let cookie = log_in(&s);
    let pages = [
        "/".to_string(),
        "/tickets".to_string(),
        format!("/tickets/{id}"),
    ];

    // One writer renames the ticket as fast as the server takes it, while pages are read.
    let stop = Arc::new(AtomicBool::new(false));
    let edits = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                s.patch(&format!("/api/v1/tickets/{id}"))
                    .token(&s.tokens.human)
                    .json(json!({ "title": title(n) }))
                    .send()
                    .expect(200);
            }
            n
        });
        let mut seen = Vec::new();
        for i in 0..450 {
            let path = &pages[i % pages.len()];
            seen.push((path.clone(), shown(&page(&s, &cookie, path))));
        }
        stop.store(true, Ordering::Relaxed);
        let edits = writer.join().unwrap();
        (edits, seen)
    });
    let (edits, seen) = edits;
    assert!(edits >= 20, "the writer renamed the ticket {edits} times");

    // The seq of each rename, in order: rename k is the k-th `ticket_edited` of the ticket.
    let admin = s.admin();
    let renames: Vec<i64> = admin
        .rt
        .block_on(admin.db.events_after(0, Some(&id), 100_000))
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "ticket_edited")
        .map(|e| e.seq)
        .collect();
    assert_eq!(renames.len(), edits, "one event per rename");

    let mut moving = 0;
    for (path, (n, seq)) in seen {
        // The page shows rename n; the next rename must still be ahead of where it resumes.
        if let Some(&next) = renames.get(n) {
            moving += 1;
            assert!(
                seq < next,
                "{path} shows `{}` but resumes live updates after seq {seq}, past rename {} \
                 (seq {next}): that rename would never reach the page",
                title(n),
                n + 1
            );
        }
    }
    assert!(
        moving >= 100,
        "only {moving} pages were read while renames were still coming"
    );
}
