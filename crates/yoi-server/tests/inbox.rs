//! The inbox on a real server: `GET /api/v1/inbox` lists an attention event a thread records as
//! one entry with what to do about it, a person's retry through the API closes it, and the route
//! needs a token like every other read; the dashboard's `/inbox` page, the count in the
//! navigation of every page and the "needs you" banner of the ticket page show the same entry
//! (server-rendered, so without JavaScript).

mod common;

use common::dashboard::{browser, log_in, page};
use common::{ctx, Backend, Server};
use yoi_core::Principal;
use yoi_store::ops;

#[test]
fn an_open_circuit_is_listed_with_what_to_do_until_a_retry_closes_it() {
    let s = Server::start(Backend::Sqlite);
    let id = s.ready_ticket("Stuck");
    s.post(&format!("/api/v1/tickets/{id}/queue"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let empty = s
        .get("/api/v1/inbox")
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(empty["count"], 0, "{empty}");

    // The orchestrator writes the thread; the server sees the file change.
    ops::attention(
        &s.workspace(),
        &ctx(Principal::orchestrator()),
        &id,
        "circuit_open",
        "Routing stopped dispatching this ticket.",
    )
    .unwrap();
    let got = s
        .get("/api/v1/inbox")
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(got["count"], 1, "{got}");
    let e = &got["entries"][0];
    assert_eq!(e["reason"], "circuit_open");
    assert_eq!(e["ticket"], id.as_str());
    assert_eq!(e["title"], "Stuck");
    assert_eq!(e["command"], format!("yoi ticket retry {id}"));
    assert_eq!(e["action"]["href"], format!("/tickets/{id}"));
    assert_eq!(e["detail"], "Routing stopped dispatching this ticket.");

    s.post(&format!("/api/v1/tickets/{id}/retry"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let after = s
        .get("/api/v1/inbox")
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(after["count"], 0, "{after}");

    s.get("/api/v1/inbox")
        .send()
        .expect_error(401, "unauthorized");
}

/// The inbox's answer is kept while nothing it reads changed, and is never stale: a thread
/// event (a watched file) and a skill proposal written behind the server's back (a folder no
/// watch covers, so the answer is keyed by its stamp) both show at the next request.
#[test]
fn a_kept_inbox_answer_follows_thread_events_and_proposals_written_by_others() {
    let s = Server::start(Backend::Sqlite);
    let id = s.ready_ticket("Stuck");
    s.post(&format!("/api/v1/tickets/{id}/queue"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let ws = s.workspace();
    let service = ctx(Principal::orchestrator());
    ops::attention(&ws, &service, &id, "circuit_open", "Stopped.").unwrap();
    let kept = s.until_kept(&[("/api/v1/inbox", &s.tokens.read)]);
    assert_eq!(kept[0]["count"], 1, "{}", kept[0]);

    // Another process proposes a skill: not a watched file.
    let files = std::collections::BTreeMap::from([(
        "SKILL.md".to_string(),
        "---\nname: tidy\ndescription: Keep things tidy.\n---\nTidy up.\n".to_string(),
    )]);
    yoi_engine::skills::propose_files(
        &ws,
        "tidy",
        &files,
        "pod:coder-1",
        yoi_core::Timestamp::parse("2026-03-01T10:00:00Z").unwrap(),
    )
    .unwrap();
    let got = s.get("/api/v1/inbox").token(&s.tokens.read).send();
    assert_ne!(got.cache_status, "yoi; hit");
    let got = got.expect(200);
    assert_eq!(got["count"], 2, "{got}");

    // A thread event: a watched file.
    let kept = s.until_kept(&[("/api/v1/inbox", &s.tokens.read)]);
    assert_eq!(kept[0]["count"], 2);
    ops::attention(&ws, &service, &id, "merge_deferred", "Dirty.").unwrap();
    let got = s.get("/api/v1/inbox").token(&s.tokens.read).send();
    assert_ne!(got.cache_status, "yoi; hit");
    assert_eq!(got.expect(200)["count"], 3);
}

#[test]
fn the_dashboard_lists_the_entry_counts_it_on_every_page_and_flags_the_ticket() {
    let s = Server::start(Backend::Sqlite);
    let id = s.ready_ticket("Deferred <merge>");
    s.post(&format!("/api/v1/tickets/{id}/queue"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let cookie = log_in(&s);
    let empty = page(&s, &cookie, "/inbox");
    assert!(empty.contains("id=\"inbox-empty\""), "{empty}");
    assert!(
        !empty.contains("id=\"inbox-count\""),
        "no count while empty"
    );

    ops::attention(
        &s.workspace(),
        &ctx(Principal::orchestrator()),
        &id,
        "merge_deferred",
        "Merge deferred: `src/a.rs` has uncommitted changes.",
    )
    .unwrap();
    let inbox = page(&s, &cookie, "/inbox");
    assert!(inbox.contains("data-reason=\"merge_deferred\""), "{inbox}");
    assert!(
        inbox.contains(&format!("href=\"/tickets/{id}\"")),
        "{inbox}"
    );
    assert!(
        inbox.contains("Deferred &#60;merge&#62;"),
        "titles are escaped: {inbox}"
    );
    assert!(
        inbox.contains("`src/a.rs` has uncommitted changes"),
        "{inbox}"
    );
    for path in ["/", "/queue", "/pods", "/inbox"] {
        let html = page(&s, &cookie, path);
        assert!(
            html.contains("id=\"inbox-count\" aria-label=\"1 waiting on you\">1</span>"),
            "{path} shows the count: {html}"
        );
    }
    let ticket = page(&s, &cookie, &format!("/tickets/{id}"));
    assert!(ticket.contains("id=\"needs-you\""), "{ticket}");
    assert!(ticket.contains("Needs you: Merge deferred"), "{ticket}");
}

#[test]
fn the_inbox_page_shows_the_notification_log_of_the_running_server() {
    let r = yoi_testkit::receiver::Receiver::start("unused");
    let url = format!("http://{}/slack", r.addr);
    let s = Server::start_configured(Backend::Sqlite, |ws| {
        let team = serde_json::json!({"name": "team", "channel": "slack", "url": url});
        ws.config.notify = vec![serde_json::from_value(team).unwrap()];
    });
    let cookie = log_in(&s);
    let none = page(&s, &cookie, "/inbox");
    assert!(none.contains("Nothing sent yet."), "{none}");
    let id = s.ready_ticket("Tell the team");
    s.post(&format!("/api/v1/tickets/{id}/queue"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    ops::attention(
        &s.workspace(),
        &ctx(Principal::orchestrator()),
        &id,
        "rounds_exhausted",
        "Review asked for changes four times.",
    )
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let html = loop {
        let html = page(&s, &cookie, "/inbox");
        if html.contains("data-status=\"delivered\"") {
            break html;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not delivered: {html}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(html.contains("HTTP 200: thanks"), "{html}");
    assert_eq!(r.got("/slack").len(), 1);
}

#[test]
fn the_login_page_uses_the_dashboard_stylesheet() {
    let s = Server::start(Backend::Sqlite);
    let mut res = browser().get(&format!("{}/login", s.base)).call().unwrap();
    assert_eq!(res.status(), 200);
    let html = res.body_mut().read_to_string().unwrap();
    let href = html
        .split("<link rel=\"stylesheet\" href=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("no stylesheet: {html}"));
    assert!(href.starts_with("/static/app."), "{href}");
    let css = browser().get(&format!("{}{href}", s.base)).call().unwrap();
    assert_eq!(css.status(), 200, "the stylesheet it names is served");
}
