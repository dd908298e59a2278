//! The scope table from the outside: every mutating route refused without a token (401) and
//! with each token whose scope may not perform it (403), with the ticket files byte-for-byte
//! unchanged; the same requests then succeed with an allowed token, so the refusals were about
//! authentication alone. Also: read routes, revoked and malformed tokens, and thread authors.

mod common;

use common::{prepare_done_ticket, t, Backend, Server, COMPLETE_BRIEF, TOKEN_SPECS};
use serde_json::{json, Value};

/// One valid mutation: it would succeed for an allowed caller.
struct Mutation {
    name: &'static str,
    method: &'static str,
    path: String,
    body: Option<Value>,
    /// The scopes allowed to perform it (the server's scope table, restated as the spec).
    allowed: &'static [&'static str],
}

struct Fixture {
    server: Server,
    mutations: Vec<Mutation>,
}

/// A workspace with a ticket in the right state for every mutation, and the mutations.
fn fixture() -> Fixture {
    let mut done = String::new();
    let s = Server::start_with(Backend::Sqlite, |ws| {
        done = prepare_done_ticket(ws, "Merged")
    });
    let planning = s.create("Planning", COMPLETE_BRIEF);
    let to_cancel = s.create("To cancel", "");
    let target = s.create("Target", "");
    let related = s.create("Has a relation", "");
    s.post(&t(&related, "/relations"))
        .token(&s.tokens.human)
        .json(json!({ "kind": "related", "target": target }))
        .send()
        .expect(200);
    let to_queue = s.ready_ticket("To queue");
    let to_return = s.ready_ticket("To return");
    let queued = s.ready_ticket("Queued");
    s.post(&t(&queued, "/queue"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let closed = s.create("Closed", "");
    s.post(&t(&closed, "/cancel"))
        .token(&s.tokens.human)
        .json(json!({ "resolution": "Dropped." }))
        .send()
        .expect(200);
    let m = |name, method, path: String, body: Option<Value>, allowed| Mutation {
        name,
        method,
        path,
        body,
        allowed,
    };
    let mutations = vec![
        m(
            "create",
            "POST",
            "/api/v1/tickets".into(),
            Some(json!({ "title": "New" })),
            &["human", "pod:intake"],
        ),
        m(
            "edit",
            "PATCH",
            t(&planning, ""),
            Some(json!({ "title": "Renamed" })),
            &["human", "pod:intake"],
        ),
        m(
            "comment",
            "POST",
            t(&planning, "/comments"),
            Some(json!({ "body": "A note." })),
            &["human", "pod:intake", "pod:orchestrator"],
        ),
        m(
            "mark-ready",
            "POST",
            t(&planning, "/mark-ready"),
            None,
            &["human", "pod:intake"],
        ),
        m("queue", "POST", t(&to_queue, "/queue"), None, &["human"]),
        m(
            "return-to-planning",
            "POST",
            t(&to_return, "/return-to-planning"),
            Some(json!({ "reason": "unclear" })),
            &["human", "pod:orchestrator"],
        ),
        m(
            "close",
            "POST",
            t(&done, "/close"),
            Some(json!({ "resolution": "Shipped." })),
            &["human"],
        ),
        m(
            "cancel",
            "POST",
            t(&to_cancel, "/cancel"),
            Some(json!({ "resolution": "Not needed." })),
            &["human"],
        ),
        m(
            "reopen",
            "POST",
            t(&closed, "/reopen"),
            Some(json!({ "reason": "Needed again." })),
            &["human"],
        ),
        m(
            "add relation",
            "POST",
            t(&planning, "/relations"),
            Some(json!({ "kind": "related", "target": target })),
            &["human", "pod:intake"],
        ),
        m(
            "remove relation",
            "DELETE",
            t(&related, &format!("/relations/related/{target}")),
            None,
            &["human", "pod:intake"],
        ),
        m(
            "retry",
            "POST",
            t(&queued, "/retry"),
            Some(json!({ "reason": "fixed" })),
            &["human"],
        ),
        m(
            "submit packet",
            "PUT",
            t(&planning, "/packet"),
            Some(
                json!({ "intent": "Do it.", "acceptance_criteria": ["done"], "validation": ["true"] }),
            ),
            &["human", "pod:intake", "pod:orchestrator"],
        ),
        m(
            "add plan record",
            "POST",
            t(&planning, "/plan"),
            Some(json!({ "kind": "after", "related": target })),
            &["human", "pod:orchestrator"],
        ),
    ];
    Fixture {
        server: s,
        mutations,
    }
}

fn send(s: &Server, m: &Mutation, auth: Option<&str>) -> common::Resp {
    let mut req = s.request(m.method, &m.path);
    if let Some(header) = auth {
        req = req.header("Authorization", header);
    }
    if let Some(body) = &m.body {
        req = req.json(body.clone());
    }
    req.send()
}

#[test]
fn every_mutation_without_a_token_is_401_and_writes_nothing() {
    let Fixture {
        server: s,
        mutations,
    } = fixture();
    let before = s.tree();
    for m in &mutations {
        let err = send(&s, m, None).expect_error(401, "unauthorized");
        assert!(
            err["message"].as_str().unwrap().contains("token"),
            "{}: {err}",
            m.name
        );
    }
    assert_eq!(s.tree(), before, "a refused request wrote files");
    // The same requests are valid: an allowed caller gets through.
    for m in &mutations {
        let secret = s.tokens.for_scope(m.allowed[0]).to_string();
        let resp = send(&s, m, Some(&format!("Bearer {secret}")));
        assert!(
            (200..300).contains(&resp.status),
            "{} with {}: {} {}",
            m.name,
            m.allowed[0],
            resp.status,
            resp.text
        );
    }
}

#[test]
fn every_mutation_with_a_wrong_scope_is_403_and_writes_nothing() {
    let Fixture {
        server: s,
        mutations,
    } = fixture();
    let before = s.tree();
    let mut refused = 0;
    for m in &mutations {
        for (_, scope, _) in TOKEN_SPECS {
            if m.allowed.contains(&scope) {
                continue;
            }
            let secret = s.tokens.for_scope(scope).to_string();
            let err = send(&s, m, Some(&format!("Bearer {secret}"))).expect_error(403, "forbidden");
            let message = err["message"].as_str().unwrap();
            assert!(
                message.contains(scope),
                "{} as {scope}: the refusal names the scope: {message}",
                m.name
            );
            refused += 1;
        }
    }
    // Every mutation is refused to `read` and `pod:coder` at least.
    assert!(refused >= 2 * mutations.len(), "{refused}");
    assert_eq!(s.tree(), before, "a refused request wrote files");
    for m in &mutations {
        let secret = s.tokens.for_scope(m.allowed[0]).to_string();
        let resp = send(&s, m, Some(&format!("Bearer {secret}")));
        assert!(
            (200..300).contains(&resp.status),
            "{} with {}: {} {}",
            m.name,
            m.allowed[0],
            resp.status,
            resp.text
        );
    }
}

#[test]
fn a_coder_token_cannot_queue() {
    let s = Server::start(Backend::Sqlite);
    let id = s.ready_ticket("Ready");
    let before = s.tree();
    s.post(&t(&id, "/queue"))
        .token(&s.tokens.coder)
        .send()
        .expect_error(403, "forbidden");
    assert_eq!(s.tree(), before);
    assert_eq!(s.show(&id)["state"], "ready");
}

#[test]
fn every_read_route_needs_a_live_token() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("One", "");
    let reads = [
        "/api/v1/tickets".to_string(),
        t(&id, ""),
        t(&id, "/relations"),
        t(&id, "/blockers"),
        t(&id, "/plan"),
        "/api/v1/doctor".to_string(),
    ];
    for path in &reads {
        s.get(path).send().expect_error(401, "unauthorized");
        s.get(path)
            .token("yoi_0000000000000000000000000000000000000000000000000000000000000000")
            .send()
            .expect_error(401, "unauthorized");
    }
    // The service routes and the API description are public.
    for path in ["/healthz", "/readyz", "/api/v1/openapi.json"] {
        s.get(path).send().expect(200);
    }
}

#[test]
fn a_read_token_reads_everything_and_writes_nothing() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("One", "");
    let r = &s.tokens.read;
    assert_eq!(
        s.get("/api/v1/tickets").token(r).send().expect(200)["count"],
        1
    );
    assert_eq!(
        s.get(&t(&id, "")).token(r).send().expect(200)["id"],
        id.as_str()
    );
    for rest in ["/relations", "/blockers", "/plan"] {
        s.get(&t(&id, rest)).token(r).send().expect(200);
    }
    assert_eq!(
        s.get("/api/v1/doctor").token(r).send().expect(200)["ok"],
        true
    );
    let before = s.tree();
    s.post("/api/v1/tickets")
        .token(r)
        .json(json!({ "title": "Sneaky" }))
        .send()
        .expect_error(403, "forbidden");
    s.post(&t(&id, "/comments"))
        .token(r)
        .json(json!({ "body": "Sneaky" }))
        .send()
        .expect_error(403, "forbidden");
    assert_eq!(s.tree(), before);
}

#[test]
fn pod_tokens_read_tickets_but_only_read_and_human_tokens_run_doctor() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("One", "");
    for token in [&s.tokens.coder, &s.tokens.intake, &s.tokens.orchestrator] {
        s.get("/api/v1/tickets").token(token).send().expect(200);
        s.get(&t(&id, "")).token(token).send().expect(200);
        s.get("/api/v1/doctor")
            .token(token)
            .send()
            .expect_error(403, "forbidden");
    }
}

#[test]
fn a_revoked_token_is_401() {
    let s = Server::start(Backend::Sqlite);
    let secret = s.admin().create_token("short-lived", "human", "bob");
    s.post("/api/v1/tickets")
        .token(&secret)
        .json(json!({ "title": "While valid" }))
        .send()
        .expect(201);
    s.admin().revoke_token("short-lived");
    let before = s.tree();
    s.post("/api/v1/tickets")
        .token(&secret)
        .json(json!({ "title": "After revocation" }))
        .send()
        .expect_error(401, "unauthorized");
    s.get("/api/v1/tickets")
        .token(&secret)
        .send()
        .expect_error(401, "unauthorized");
    assert_eq!(s.tree(), before);
    // Other tokens are unaffected.
    s.get("/api/v1/tickets")
        .token(&s.tokens.human)
        .send()
        .expect(200);
}

#[test]
fn a_token_revoked_by_another_process_is_401_at_once_though_the_server_kept_it() {
    check_a_token_revoked_by_another_process_is_401_at_once_though_the_server_kept_it(
        Backend::Sqlite,
    );
}

#[test]
fn a_token_revoked_by_another_process_is_401_at_once_though_the_server_kept_it_on_postgres() {
    check_a_token_revoked_by_another_process_is_401_at_once_though_the_server_kept_it(
        Backend::Postgres,
    );
}

fn check_a_token_revoked_by_another_process_is_401_at_once_though_the_server_kept_it(
    backend: Backend,
) {
    let s = Server::start(backend);
    let secret = s.admin().create_token("kept", "read", "bob");
    s.get("/api/v1/tickets").token(&secret).send().expect(200);
    // Wait until the server answers a request with this token from memory: from then on it
    // keeps the token too. The revocation below comes through a second connection, as
    // `yoi token revoke --local` in another process would.
    s.until_kept(&[("/api/v1/tickets", &secret)]);
    s.admin().revoke_token("kept");
    s.get("/api/v1/tickets")
        .token(&secret)
        .send()
        .expect_error(401, "unauthorized");
    // And once the server keeps answers and tokens again, the revoked one is not among them.
    s.until_kept(&[("/api/v1/tickets", &s.tokens.read)]);
    s.get("/api/v1/tickets")
        .token(&secret)
        .send()
        .expect_error(401, "unauthorized");
    s.get("/api/v1/tickets")
        .token(&s.tokens.read)
        .send()
        .expect(200);
}

#[test]
fn a_malformed_authorization_header_is_401() {
    let s = Server::start(Backend::Sqlite);
    let secret = s.tokens.human.clone();
    let before = s.tree();
    for header in [
        secret.clone(),
        format!("Basic {secret}"),
        format!("Token {secret}"),
        "Bearer".to_string(),
        "Bearer    ".to_string(),
        format!("Bearer{secret}"),
        format!("Bearer {}", &secret[..secret.len() - 1]),
        format!("Bearer {secret}x"),
    ] {
        s.post("/api/v1/tickets")
            .header("Authorization", &header)
            .json(json!({ "title": "Should not exist" }))
            .send()
            .expect_error(401, "unauthorized");
    }
    assert_eq!(s.tree(), before);
}

#[test]
fn the_bearer_scheme_name_is_case_insensitive() {
    let s = Server::start(Backend::Sqlite);
    let secret = s.tokens.human.clone();
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let v = s
            .get("/api/v1/tickets")
            .header("Authorization", &format!("{scheme} {secret}"))
            .send()
            .expect(200);
        assert_eq!(v["count"], 0, "{scheme}");
    }
}

#[test]
fn the_event_author_is_the_token_principal() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("Authored", "");
    let by = |token: &str, body: &str| {
        let out = s
            .post(&t(&id, "/comments"))
            .token(token)
            .json(json!({ "body": body }))
            .send()
            .expect(200);
        out["event_id"].as_str().unwrap().to_string()
    };
    let cases = [
        (by(&s.tokens.human, "from alice"), "alice"),
        (by(&s.tokens.intake, "from intake"), "intake:triage"),
        (
            by(&s.tokens.orchestrator, "from the orchestrator"),
            "yoi-orchestrator",
        ),
    ];
    let bob = s.admin().create_token("bob-desktop", "human", "bob");
    let bob_event = by(&bob, "from bob");
    let shown = s.show(&id);
    let events = shown["events"].as_array().unwrap();
    let author_of = |event_id: &str| {
        events
            .iter()
            .find(|e| e["id"] == event_id)
            .unwrap_or_else(|| panic!("event {event_id} in the thread"))["author"]
            .clone()
    };
    for (event_id, author) in &cases {
        assert_eq!(author_of(event_id), *author);
    }
    assert_eq!(author_of(&bob_event), "bob");
    assert_eq!(events[0]["author"], "alice", "the create event");
    // Ticket fields record the principal too.
    let ready = s.create("Queued by a person", COMPLETE_BRIEF);
    s.post(&t(&ready, "/mark-ready"))
        .token(&s.tokens.intake)
        .send()
        .expect(200);
    s.post(&t(&ready, "/queue")).token(&bob).send().expect(200);
    let shown = s.show(&ready);
    assert_eq!(shown["queued_by"], "bob");
    let authors: Vec<&Value> = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["author"])
        .collect();
    assert_eq!(
        authors,
        [&json!("alice"), &json!("intake:triage"), &json!("bob")]
    );
}
