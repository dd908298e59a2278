//! A write drops the kept answers it changed and no other (issue 45): a comment on one ticket
//! leaves every other ticket's answer kept and makes its own fresh, on both databases, when the
//! comment comes through the API and when another process writes it on the files and the
//! index; a write to what answers read beside the index (an attempt recorded by another
//! process) reaches the answer at once; and a pod polling for work with none to give drops
//! nothing; the inbox, made from the ticket files alone, stays kept through all of those
//! writes that leave the tickets alone.
//!
//! Whether an answer came from memory is what the server says in its `Cache-Status` header
//! (`yoi; hit`), so each test first waits for the server to keep the answers it looks at.

mod common;

use common::{Backend, Server};
use serde_json::{json, Value};

const HIT: &str = "yoi; hit";

fn shown(id: &str) -> String {
    format!("/api/v1/tickets/{id}")
}

/// The answer to `path` and how it met the kept ones.
fn get(s: &Server, path: &str) -> (String, Value) {
    let r = s.get(path).token(&s.tokens.read).send();
    let status = r.cache_status.clone();
    (status, r.expect(200))
}

fn comment_bodies(ticket: &Value) -> Vec<String> {
    ticket["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "comment")
        .map(|e| e["body"].as_str().unwrap().trim().to_string())
        .collect()
}

/// Two unrelated tickets and a third that depends on the first; every answer kept.
fn three_kept(s: &Server) -> (String, String, String) {
    let a = s.create("Ticket A", "");
    let b = s.create("Ticket B", "");
    let c = s.create("Ticket C", "");
    s.post(&format!("/api/v1/tickets/{c}/relations"))
        .token(&s.tokens.human)
        .json(json!({ "kind": "depends_on", "target": a }))
        .send()
        .expect(200);
    let token = s.tokens.read.as_str();
    s.until_kept(&[
        (shown(&a).as_str(), token),
        (shown(&b).as_str(), token),
        (shown(&c).as_str(), token),
        ("/api/v1/tickets", token),
    ]);
    (a, b, c)
}

#[test]
fn a_comment_on_one_ticket_leaves_the_others_answers_kept() {
    check_a_comment_on_one_ticket_leaves_the_others_answers_kept(Backend::Sqlite);
}

#[test]
fn a_comment_on_one_ticket_leaves_the_others_answers_kept_on_postgres() {
    check_a_comment_on_one_ticket_leaves_the_others_answers_kept(Backend::Postgres);
}

fn check_a_comment_on_one_ticket_leaves_the_others_answers_kept(backend: Backend) {
    let s = Server::start(backend);
    let (a, b, c) = three_kept(&s);
    let before_b = get(&s, &shown(&b)).1;
    s.post(&format!("/api/v1/tickets/{a}/comments"))
        .token(&s.tokens.human)
        .json(json!({ "body": "First look" }))
        .send()
        .expect(200);
    let (status, got_a) = get(&s, &shown(&a));
    assert_ne!(status, HIT, "A's answer was dropped");
    assert_eq!(comment_bodies(&got_a), ["First look"]);
    let (status, got_b) = get(&s, &shown(&b));
    assert_eq!(status, HIT, "B's answer was kept through a write to A");
    assert_eq!(got_b, before_b);
    // C shows A at the other end of a relation, but a comment does not change what it shows
    // of A; it is dropped all the same (it was made from A's files), and fresh.
    let (_, got_c) = get(&s, &shown(&c));
    assert_eq!(got_c["relations"]["relations"][0]["other"], a.as_str());
    let (status, _) = get(&s, "/api/v1/tickets");
    assert_ne!(status, HIT, "a list holds every ticket: dropped");
    s.stop();
}

#[test]
fn a_write_by_another_process_drops_only_its_tickets_answers() {
    check_a_write_by_another_process_drops_only_its_tickets_answers(Backend::Sqlite);
}

#[test]
fn a_write_by_another_process_drops_only_its_tickets_answers_on_postgres() {
    check_a_write_by_another_process_drops_only_its_tickets_answers(Backend::Postgres);
}

fn check_a_write_by_another_process_drops_only_its_tickets_answers(backend: Backend) {
    let s = Server::start(backend);
    let (a, b, _) = three_kept(&s);
    // As `yoi --local ticket comment` in another process: the files and the database index,
    // through a connection of its own.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut ws = s.workspace();
    let (_index, _) = yoi_db::DbIndex::attach(
        &mut ws,
        yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
    )
    .unwrap();
    let ctx = yoi_store::Ctx::new(yoi_core::Principal::human("carol"), yoi_server::auth::now());
    let req = yoi_store::ops::CommentRequest {
        kind: "comment".into(),
        body: "From another process".into(),
    };
    yoi_store::ops::comment(&ws, &ctx, &a, &req).unwrap();

    let (status, got_a) = get(&s, &shown(&a));
    assert_ne!(status, HIT);
    assert_eq!(comment_bodies(&got_a), ["From another process"]);
    let (status, _) = get(&s, &shown(&b));
    assert_eq!(
        status, HIT,
        "B's answer was kept through another process's write to A"
    );

    // An attempt recorded by another process, in the database alone: the answer that shows
    // it is fresh at once.
    let attempt = pending_attempt("asg-from-elsewhere", &b);
    s.admin()
        .rt
        .block_on(s.admin().db.create_assignment(&attempt))
        .unwrap();
    let (status, got_b) = get(&s, &shown(&b));
    assert_ne!(status, HIT);
    assert_eq!(got_b["attempts"][0]["assignment"], "asg-from-elsewhere");
    drop(_index);
    s.stop();
}

#[test]
fn a_pod_polling_with_nothing_to_do_drops_no_answer() {
    check_a_pod_polling_with_nothing_to_do_drops_no_answer(Backend::Sqlite);
}

#[test]
fn a_pod_polling_with_nothing_to_do_drops_no_answer_on_postgres() {
    check_a_pod_polling_with_nothing_to_do_drops_no_answer(Backend::Postgres);
}

fn check_a_pod_polling_with_nothing_to_do_drops_no_answer(backend: Backend) {
    let s = Server::start(backend);
    let (a, b, _) = three_kept(&s);
    let pod = s
        .post("/api/v1/pods")
        .token(&s.tokens.coder)
        .json(json!({ "name": "idle" }))
        .send()
        .expect(201);
    let token = s.tokens.read.as_str();
    // Registering is a write the answers do not read; the epoch stays.
    s.until_kept(&[(shown(&a).as_str(), token), (shown(&b).as_str(), token)]);
    for _ in 0..3 {
        let r = s
            .post("/api/v1/assignments/claim")
            .token(&s.tokens.coder)
            .json(json!({ "pod": pod["pod"]["id"], "wait_ms": 0 }))
            .send();
        assert!(r.status == 200 || r.status == 204, "{}", r.status);
    }
    for id in [&a, &b] {
        let (status, _) = get(&s, &shown(id));
        assert_eq!(
            status, HIT,
            "{id} was dropped by a claim that found nothing"
        );
    }
    let (status, _) = get(&s, "/api/v1/tickets");
    assert_eq!(status, HIT);
    s.stop();
}

#[test]
fn the_inbox_stays_kept_through_writes_that_leave_the_tickets_alone() {
    check_the_inbox_stays_kept_through_writes_that_leave_the_tickets_alone(Backend::Sqlite);
}

#[test]
fn the_inbox_stays_kept_through_writes_that_leave_the_tickets_alone_on_postgres() {
    check_the_inbox_stays_kept_through_writes_that_leave_the_tickets_alone(Backend::Postgres);
}

/// The inbox (and so the count in every dashboard page's header) reads the ticket files alone:
/// a pod registering, polling with nothing to do and an attempt written to the database (which
/// moves the answer epoch, as a claim or a lease sweep that ends an attempt does) leave it kept;
/// a thread event on any ticket makes it fresh at once.
fn check_the_inbox_stays_kept_through_writes_that_leave_the_tickets_alone(backend: Backend) {
    let s = Server::start(backend);
    let id = s.ready_ticket("Stuck");
    s.post(&format!("/api/v1/tickets/{id}/queue"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let other = s.create("Another", "");
    let ws = s.workspace();
    let service = yoi_store::Ctx::new(yoi_core::Principal::orchestrator(), yoi_server::auth::now());
    yoi_store::ops::attention(&ws, &service, &id, "circuit_open", "Stopped.").unwrap();
    let token = s.tokens.read.as_str();
    let kept = s.until_kept(&[("/api/v1/inbox", token)]);
    assert_eq!(kept[0]["count"], 1, "{}", kept[0]);

    let pod = s
        .post("/api/v1/pods")
        .token(&s.tokens.coder)
        .json(json!({ "name": "idle" }))
        .send()
        .expect(201);
    for _ in 0..3 {
        let r = s
            .post("/api/v1/assignments/claim")
            .token(&s.tokens.coder)
            .json(json!({ "pod": pod["pod"]["id"], "wait_ms": 0 }))
            .send();
        assert!(r.status == 200 || r.status == 204, "{}", r.status);
    }
    let attempt = pending_attempt("asg-elsewhere", &other);
    s.admin()
        .rt
        .block_on(s.admin().db.create_assignment(&attempt))
        .unwrap();
    // The epoch moved: the other ticket's answer, which shows attempts, is made again.
    let (status, got) = get(&s, &shown(&other));
    assert_ne!(status, HIT);
    assert_eq!(got["attempts"][0]["assignment"], "asg-elsewhere");
    let (status, got) = get(&s, "/api/v1/inbox");
    assert_eq!(
        status, HIT,
        "the inbox was dropped by writes it does not read"
    );
    assert_eq!(got["count"], 1);

    // A retry on the ticket closes the entry: a thread event, seen at the next request.
    yoi_store::ops::retry(
        &ws,
        &yoi_store::Ctx::new(yoi_core::Principal::human("carol"), yoi_server::auth::now()),
        &id,
        None,
    )
    .unwrap();
    let (status, got) = get(&s, "/api/v1/inbox");
    assert_ne!(status, HIT);
    assert_eq!(got["count"], 0, "{got}");
    s.stop();
}

/// The MCP server's `show_ticket` and `list_tickets` are kept by the same rule as the REST
/// reads: a comment on A reaches A's `show_ticket` (with its thread) and the list's `updated`
/// order at once, and B's answer is the same text as before.
#[test]
fn the_mcp_reads_follow_the_same_rule() {
    let s = Server::start(Backend::Sqlite);
    let (a, b, _) = three_kept(&s);
    let call = |name: &str, arguments: Value| -> String {
        let answer = s
            .post("/mcp")
            .token(&s.tokens.human)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}))
            .send()
            .expect(200);
        assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let show = |id: &str| call("show_ticket", json!({"id": id, "thread": true}));
    let (a_before, b_before) = (show(&a), show(&b));
    // Asked twice, the same answer (kept or not, nothing changed).
    assert_eq!(show(&a), a_before);
    s.post(&format!("/api/v1/tickets/{a}/comments"))
        .token(&s.tokens.human)
        .json(json!({ "body": "a word on A through the API" }))
        .send()
        .expect(200);
    let a_after = show(&a);
    assert!(
        a_after.contains("a word on A through the API"),
        "A's show_ticket is fresh after its comment:\n{a_after}"
    );
    assert_eq!(show(&b), b_before, "B's answer did not change");
    let list = call("list_tickets", json!({"limit": 50}));
    assert!(list.contains(&a) && list.contains(&b), "{list}");
}

/// A pending implement attempt of `ticket`, as another process would write it to the database.
fn pending_attempt(id: &str, ticket: &str) -> yoi_db::Assignment {
    yoi_db::Assignment {
        id: id.into(),
        ticket: ticket.to_string(),
        step: "implement".into(),
        role: "coder".into(),
        attempt: 1,
        fence: 1,
        status: yoi_db::AssignmentStatus::Pending,
        lease_until_ms: None,
        created_ms: 1,
        updated_ms: 1,
        claimed_by: None,
        heartbeat_ms: None,
        workdir: None,
        head_commit: None,
        result: None,
        usage: None,
        error: None,
        log_path: None,
        finished_ms: None,
    }
}
