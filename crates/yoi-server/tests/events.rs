//! `GET /api/v1/events` against a real server on 127.0.0.1:0: resuming with `Last-Event-ID`
//! delivers exactly the missed events, the ticket filter, events written beside the server, the
//! position rules, authentication, and streams ending when the server shuts down.
//!
//! The server runs in-process (`yoi_server::serve` on its own tokio runtime in a background
//! thread); its address comes from the `on_ready` callback. Clients are `ureq` agents reading
//! the SSE body line by line.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use yoi_core::{Principal, Timestamp};
use yoi_db::DbIndex;
use yoi_server::{serve, ServeOptions, ServerError};
use yoi_store::ops::{self, CommentRequest};
use yoi_store::{Ctx, Workspace};

/// A served workspace, plus a second writer (this test process) with its own database handle.
struct Server {
    addr: SocketAddr,
    token: String,
    /// The test's own view of the workspace, writing beside the server like `yoi --local`.
    beside: Workspace,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), ServerError>>>,
    _setup_rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let status = Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(status.success());
        yoi_store::init(&root, "main").unwrap();
        let setup_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut beside = Workspace::open(&root).unwrap();
        let (index, _) = DbIndex::attach(
            &mut beside,
            yoi_db::Bridge::new(setup_rt.handle().clone(), yoi_testkit::wall_ms),
        )
        .unwrap();
        index
            .ensure_admin_token(&beside.local_dir(), "alice", 0)
            .unwrap();
        let token = read_token(&beside.local_dir());

        let ws = Workspace::open(&root).unwrap();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(serve(
                ws,
                ServeOptions {
                    orchestrate: false,
                    listen: "127.0.0.1:0".parse().unwrap(),
                    pods: None,
                },
                async {
                    let _ = stopped.await;
                },
                move |addr, _login| addr_tx.send(addr).unwrap(),
            ))
        });
        let Ok(addr) = addr_rx.recv() else {
            panic!("the server did not start: {:?}", thread.join());
        };
        Server {
            addr,
            token,
            beside,
            stop: Some(stop),
            thread: Some(thread),
            _setup_rt: setup_rt,
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}/api/v1{path}", self.addr)
    }

    fn agent() -> ureq::Agent {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            // A safety net so a broken stream fails the test instead of hanging it.
            .timeout_global(Some(std::time::Duration::from_secs(60)))
            .build()
            .into()
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let mut resp = Self::agent()
            .post(&self.url(path))
            .header("Authorization", &format!("Bearer {}", self.token))
            .send_json(&body)
            .unwrap();
        let status = resp.status().as_u16();
        let v: Value = resp.body_mut().read_json().unwrap();
        assert!(status < 300, "POST {path}: {status} {v}");
        v
    }

    /// Create a ticket through the API; returns (ticket id, event id).
    fn create(&self, title: &str) -> (String, String) {
        let v = self.post("/tickets", json!({ "title": title }));
        (str_of(&v["ticket"]), str_of(&v["event_id"]))
    }

    /// Comment through the API; returns the event id.
    fn comment(&self, ticket: &str, text: &str) -> String {
        let v = self.post(
            &format!("/tickets/{ticket}/comments"),
            json!({ "body": text }),
        );
        str_of(&v["event_id"])
    }

    /// Open the event stream at `query` with optional extra headers.
    fn events(&self, query: &str, headers: &[(&str, &str)]) -> Events {
        let mut req = Self::agent()
            .get(&self.url(&format!("/events{query}")))
            .header("Authorization", &format!("Bearer {}", self.token));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.call().unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let content_type = resp.headers()["content-type"].to_str().unwrap().to_string();
        assert_eq!(content_type, "text/event-stream");
        Events {
            lines: BufReader::new(resp.into_body().into_reader()),
        }
    }

    /// Ask the server to stop and return what `serve` returned.
    fn shutdown(&mut self) -> Result<(), ServerError> {
        let _ = self.stop.take().unwrap().send(());
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_token(local: &Path) -> String {
    std::fs::read_to_string(local.join(yoi_db::ADMIN_TOKEN_FILE))
        .unwrap()
        .trim()
        .to_string()
}

fn str_of(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .to_string()
}

/// One parsed SSE event.
#[derive(Debug)]
struct Sse {
    id: i64,
    event: String,
    data: Value,
}

struct Events {
    lines: BufReader<ureq::BodyReader<'static>>,
}

impl Events {
    /// The next event, skipping keep-alive comments; `None` when the server ended the stream.
    fn next(&mut self) -> Option<Sse> {
        let (mut id, mut event, mut data) = (None, None, String::new());
        loop {
            let mut line = String::new();
            if self.lines.read_line(&mut line).unwrap() == 0 {
                assert!(id.is_none() && data.is_empty(), "stream ended mid-event");
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if data.is_empty() {
                    continue;
                }
                let e = Sse {
                    id: id.expect("every event has an id"),
                    event: event.expect("every event has a kind"),
                    data: serde_json::from_str(&data).unwrap(),
                };
                // The three views of an event agree.
                assert_eq!(e.data["seq"], e.id);
                assert_eq!(e.data["kind"], e.event.as_str());
                return Some(e);
            }
            if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim().parse::<i64>().unwrap());
            } else if let Some(v) = line.strip_prefix("event:") {
                event = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
    }

    fn take(&mut self, n: usize) -> Vec<Sse> {
        (0..n)
            .map(|_| self.next().expect("the stream ended early"))
            .collect()
    }
}

fn seqs(events: &[Sse]) -> Vec<i64> {
    events.iter().map(|e| e.id).collect()
}

fn event_ids(events: &[Sse]) -> Vec<String> {
    events.iter().map(|e| str_of(&e.data["event_id"])).collect()
}

#[test]
fn reconnecting_with_last_event_id_delivers_exactly_the_missed_events() {
    let server = Server::start();
    let (a, created) = server.create("First");
    let c1 = server.comment(&a, "one");
    let c2 = server.comment(&a, "two");

    let mut stream = server.events("?after=0", &[]);
    let seen = stream.take(3);
    assert_eq!(seqs(&seen), vec![1, 2, 3]);
    assert_eq!(event_ids(&seen), vec![created, c1, c2]);
    assert_eq!(seen[0].event, "ticket_created");
    assert_eq!(seen[1].event, "ticket_commented");
    assert_eq!(seen[1].data["ticket"], a.as_str());
    drop(stream);

    // While the client is away.
    let mut missed = vec![server.comment(&a, "three")];
    let (b, b_created) = server.create("Second");
    missed.push(b_created);
    missed.push(server.comment(&b, "four"));
    missed.push(server.comment(&a, "five"));

    let mut stream = server.events("", &[("Last-Event-ID", "3")]);
    let resumed = stream.take(4);
    assert_eq!(seqs(&resumed), vec![4, 5, 6, 7]);
    assert_eq!(event_ids(&resumed), missed);
    // Nothing is repeated: the next event is the next new one.
    let next = server.comment(&b, "six");
    let e = stream.next().unwrap();
    assert_eq!((e.id, str_of(&e.data["event_id"])), (8, next));

    // `?after=` resumes the same way, and the header wins over it (as a reconnecting browser
    // repeats the original URL and sends the header).
    let mut by_query = server.events("?after=5", &[]);
    assert_eq!(seqs(&by_query.take(3)), vec![6, 7, 8]);
    let mut both = server.events("?after=0", &[("Last-Event-ID", "6")]);
    assert_eq!(seqs(&both.take(2)), vec![7, 8]);
}

#[test]
fn the_ticket_filter_delivers_only_that_tickets_events() {
    let server = Server::start();
    let (a, a_created) = server.create("A");
    let (b, _) = server.create("B");
    let a1 = server.comment(&a, "a1");
    server.comment(&b, "b1");
    let a2 = server.comment(&a, "a2");

    // A suffix of the id is enough, as everywhere in the API.
    let suffix = &a[a.len() - 8..];
    let mut stream = server.events(&format!("?after=0&ticket={suffix}"), &[]);
    let got = stream.take(3);
    assert_eq!(event_ids(&got), vec![a_created, a1, a2]);
    assert!(got.iter().all(|e| e.data["ticket"] == a.as_str()));
    assert_eq!(seqs(&got), vec![1, 3, 5]);

    server.comment(&b, "b2");
    let a3 = server.comment(&a, "a3");
    let e = stream.next().unwrap();
    assert_eq!((e.id, str_of(&e.data["event_id"])), (7, a3));
}

#[test]
fn a_stream_without_a_position_starts_at_the_current_end() {
    let server = Server::start();
    let (a, _) = server.create("Old news");
    server.comment(&a, "old");
    let mut stream = server.events("", &[]);
    let fresh = server.comment(&a, "fresh");
    let e = stream.next().unwrap();
    assert_eq!((e.id, str_of(&e.data["event_id"])), (3, fresh));
}

#[test]
fn events_written_beside_the_server_are_delivered_by_polling() {
    let server = Server::start();
    let (a, _) = server.create("Shared");
    let mut stream = server.events("?after=1", &[]);
    // This process writes the files and the outbox itself, like `yoi --local`; the server is
    // not told, so only its periodic look at the outbox can find the event.
    let ctx = Ctx::new(
        Principal::human("bob"),
        Timestamp::parse("2026-11-29T10:00:00Z").unwrap(),
    );
    let req = CommentRequest {
        kind: "comment".into(),
        body: "written by another process".into(),
    };
    let out = ops::comment(&server.beside, &ctx, &a, &req).unwrap();
    let e = stream.next().unwrap();
    assert_eq!(e.id, 2);
    assert_eq!(e.data["event_id"], out.event_id.unwrap().as_str());
    assert_eq!(e.data["payload"]["author"], "bob");
}

#[test]
fn events_need_a_live_token() {
    let server = Server::start();
    let agent = Server::agent();
    let resp = agent.get(&server.url("/events")).call().unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    let resp = agent
        .get(&server.url("/events"))
        .header("Authorization", "Bearer yoi_not_a_token")
        .call()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
}

#[test]
fn bad_positions_and_unknown_tickets_are_refused() {
    let server = Server::start();
    server.create("Only one");
    let agent = Server::agent();
    let get = |query: &str, last: Option<&str>| {
        let mut req = agent
            .get(&server.url(&format!("/events{query}")))
            .header("Authorization", &format!("Bearer {}", server.token));
        if let Some(l) = last {
            req = req.header("Last-Event-ID", l);
        }
        let mut resp = req.call().unwrap();
        let status = resp.status().as_u16();
        let body: Value = resp.body_mut().read_json().unwrap();
        (status, body["error"]["code"].clone())
    };
    assert_eq!(get("", Some("three")), (400, json!("invalid")));
    assert_eq!(get("?after=-1", None), (400, json!("invalid")));
    assert_eq!(get("?after=three", None), (400, json!("invalid")));
    assert_eq!(get("?since=3", None), (400, json!("invalid")));
    assert_eq!(
        get("?after=0&ticket=ZZZZZZ", None),
        (404, json!("not_found"))
    );
}

#[test]
fn shutdown_ends_open_streams_and_the_server_stops() {
    let mut server = Server::start();
    let (a, _) = server.create("Watched");
    let mut stream = server.events("?after=0", &[]);
    assert_eq!(stream.next().unwrap().data["ticket"], a.as_str());
    // Graceful shutdown waits for every response to finish; an open stream must end rather
    // than keep the server alive.
    server.shutdown().unwrap();
    assert!(stream.next().is_none(), "the stream ends cleanly");
}

#[test]
fn the_openapi_document_lists_the_event_stream() {
    let doc = serde_json::to_value(yoi_server::openapi::document()).unwrap();
    let get = &doc["paths"]["/api/v1/events"]["get"];
    assert!(get.is_object(), "{doc}");
    assert!(get["responses"]["200"]["content"]["text/event-stream"].is_object());
    assert!(doc["components"]["schemas"]["LiveEvent"].is_object());
}
