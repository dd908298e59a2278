//! Fifty clients at once against one server: each creates a ticket (and replays that create)
//! and comments on a few shared tickets. Every request must succeed, every ticket and comment
//! must be in the files exactly once, and doctor — over files and index, both through the API
//! while serving and directly after the server stopped — must find nothing wrong. Runs on
//! SQLite and PostgreSQL.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};

use common::{Backend, Server};
use serde_json::json;
use yoi_core::TicketId;

const CLIENTS: usize = 50;
const SHARED: usize = 5;
const COMMENTS_PER_CLIENT: usize = 3;

struct ClientReport {
    created: String,
    title: String,
    /// (shared ticket, comment body, event id)
    comments: Vec<(String, String, String)>,
}

fn fifty_clients(backend: Backend) {
    let s = Server::start(backend);
    let shared: Vec<String> = (0..SHARED)
        .map(|i| s.create(&format!("Shared {i}"), ""))
        .collect();
    let barrier = Arc::new(Barrier::new(CLIENTS));
    let handles: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let agent = s.agent();
            let base = s.base.clone();
            // Creators alternate between a person and the intake pod; comments come from
            // both too.
            let token = if c % 2 == 0 {
                s.tokens.human.clone()
            } else {
                s.tokens.intake.clone()
            };
            let shared = shared.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let post = |path: &str, key: Option<&str>, body: serde_json::Value| {
                    let mut req = agent
                        .post(format!("{base}{path}"))
                        .header("Authorization", &format!("Bearer {token}"));
                    if let Some(k) = key {
                        req = req.header("Idempotency-Key", k);
                    }
                    let mut resp = req.send_json(&body).expect("transport");
                    let status = resp.status().as_u16();
                    let text = resp.body_mut().read_to_string().unwrap();
                    assert!(
                        (200..300).contains(&status),
                        "client {c}: POST {path} answered {status}: {text}"
                    );
                    (
                        status,
                        serde_json::from_str::<serde_json::Value>(&text).unwrap(),
                    )
                };
                barrier.wait();
                let title = format!("Client {c} ticket");
                let key = format!("client-{c}-create");
                let body = json!({ "title": title, "body": format!("Made by client {c}.") });
                let (status, first) = post("/api/v1/tickets", Some(&key), body.clone());
                assert_eq!(status, 201, "client {c}: {first}");
                let created = first["ticket"].as_str().unwrap().to_string();
                let mut comments = Vec::new();
                for k in 0..COMMENTS_PER_CLIENT {
                    let target = &shared[(c + k) % SHARED];
                    let text = format!("Comment {k} from client {c}.");
                    let (_, out) = post(
                        &format!("/api/v1/tickets/{target}/comments"),
                        None,
                        json!({ "body": text }),
                    );
                    assert_eq!(out["ticket"], target.as_str());
                    comments.push((
                        target.clone(),
                        text,
                        out["event_id"].as_str().unwrap().to_string(),
                    ));
                }
                let (status, again) = post("/api/v1/tickets", Some(&key), body);
                assert_eq!(status, 200, "client {c}: the replay");
                assert_eq!(again["ticket"], created.as_str(), "client {c}: the replay");
                assert_eq!(again["replayed"], true);
                ClientReport {
                    created,
                    title,
                    comments,
                }
            })
        })
        .collect();
    let reports: Vec<ClientReport> = handles
        .into_iter()
        .map(|h| h.join().expect("a client failed"))
        .collect();

    // Every response is accounted for: distinct tickets and distinct events.
    let created: BTreeMap<&str, &str> = reports
        .iter()
        .map(|r| (r.created.as_str(), r.title.as_str()))
        .collect();
    assert_eq!(created.len(), CLIENTS, "each client created its own ticket");
    let mut event_ids: Vec<&str> = reports
        .iter()
        .flat_map(|r| r.comments.iter().map(|c| c.2.as_str()))
        .collect();
    event_ids.sort();
    event_ids.dedup();
    assert_eq!(event_ids.len(), CLIENTS * COMMENTS_PER_CLIENT);

    // The index agrees while serving.
    let all = s
        .get("/api/v1/tickets?state=all&limit=1000")
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(all["count"], CLIENTS + SHARED);
    let report = s
        .get("/api/v1/doctor")
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["errors"], 0, "{report}");

    let stopped = s.stop();
    let ws = stopped.workspace();

    // Files: exactly the shared tickets and one ticket per client, each title once.
    let ids = ws.ticket_ids().unwrap();
    assert_eq!(ids.len(), CLIENTS + SHARED);
    let mut titles: BTreeMap<String, usize> = BTreeMap::new();
    for id in &ids {
        *titles.entry(ws.read_item(id).unwrap().title).or_default() += 1;
    }
    for (id, title) in &created {
        assert_eq!(titles.get(*title), Some(&1), "{title} once");
        let item = ws.read_item(&TicketId::parse(id).unwrap()).unwrap();
        assert_eq!(item.title, *title);
    }

    // Files: every comment exactly once, on the ticket it was sent to, with its event id.
    let mut expected: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for r in &reports {
        for (target, text, event) in &r.comments {
            expected
                .entry(target.clone())
                .or_default()
                .push((text.clone(), event.clone()));
        }
    }
    for target in &shared {
        let thread = ws.read_thread(&TicketId::parse(target).unwrap()).unwrap();
        assert!(thread.issues.is_empty(), "{target}: {:?}", thread.issues);
        let mut found: Vec<(String, String)> = thread
            .events
            .iter()
            .filter(|e| e.kind.as_str() == "comment")
            .map(|e| (e.body.trim().to_string(), e.id().unwrap().to_string()))
            .collect();
        found.sort();
        let mut want = expected.remove(target).unwrap_or_default();
        want.sort();
        assert_eq!(found, want, "comments on {target}");
    }
    assert_eq!(
        CLIENTS * COMMENTS_PER_CLIENT,
        shared
            .iter()
            .map(|t| ws
                .read_thread(&TicketId::parse(t).unwrap())
                .unwrap()
                .events
                .iter()
                .filter(|e| e.kind.as_str() == "comment")
                .count())
            .sum::<usize>()
    );

    // Doctor over files and index as the server left them.
    let report = stopped.doctor();
    assert!(report.ok, "{:#?}", report.findings);
    assert_eq!(report.errors, 0);
}

#[test]
fn fifty_clients_creating_and_commenting_on_sqlite() {
    fifty_clients(Backend::Sqlite);
}

#[test]
fn fifty_clients_creating_and_commenting_on_postgres() {
    fifty_clients(Backend::Postgres);
}
