//! `Idempotency-Key`: replaying a request returns the first result with `replayed: true` and
//! writes nothing, even after the ticket moved on; the same key with a different request is
//! 409 `conflicting_replay` and writes nothing.

mod common;

use common::{t, Backend, Server, COMPLETE_BRIEF};
use serde_json::{json, Value};

/// The first answer as a replay must show it.
fn as_replayed(mut first: Value) -> Value {
    first["replayed"] = json!(true);
    first
}

#[test]
fn a_replayed_create_returns_the_first_ticket_and_writes_nothing() {
    let s = Server::start(Backend::Sqlite);
    let create = || {
        s.post("/api/v1/tickets")
            .token(&s.tokens.human)
            .key("create-parser-1")
            .json(json!({ "title": "Parser", "body": "Text." }))
            .send()
    };
    let first = create().expect(201);
    assert_eq!(first["replayed"], false);
    let before = s.tree();
    let again = create().expect(200);
    assert_eq!(again, as_replayed(first.clone()));
    assert_eq!(s.tree(), before, "a replay wrote files");
    let list = s
        .get("/api/v1/tickets")
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(list["count"], 1);
    // The key is stored on the thread event as its operation id.
    let shown = s.show(first["ticket"].as_str().unwrap());
    assert_eq!(shown["events"][0]["attrs"]["op"], "create-parser-1");
}

#[test]
fn a_replayed_create_with_a_different_body_is_409_and_writes_nothing() {
    let s = Server::start(Backend::Sqlite);
    let first = s
        .post("/api/v1/tickets")
        .token(&s.tokens.human)
        .key("create-2")
        .json(json!({ "title": "Parser" }))
        .send()
        .expect(201);
    let before = s.tree();
    let err = s
        .post("/api/v1/tickets")
        .token(&s.tokens.human)
        .key("create-2")
        .json(json!({ "title": "Lexer" }))
        .send()
        .expect_error(409, "conflicting_replay");
    assert_eq!(err["details"]["idempotency_key"], "create-2");
    assert_eq!(err["details"]["ticket"], first["ticket"]);
    assert_eq!(s.tree(), before);
}

#[test]
fn every_mutation_replays_its_first_result_after_the_ticket_moved_on() {
    let s = Server::start(Backend::Sqlite);
    let h = &s.tokens.human;
    let id = s.create("Subject", "Draft.");
    let other = s.create("Other", "");
    // (key, method, path, body), each applied once in order, then all replayed.
    let steps: Vec<(&str, &str, String, Value)> = vec![
        (
            "k-edit",
            "PATCH",
            t(&id, ""),
            json!({ "body": COMPLETE_BRIEF }),
        ),
        (
            "k-comment",
            "POST",
            t(&id, "/comments"),
            json!({ "body": "Hi." }),
        ),
        (
            "k-rel-add",
            "POST",
            t(&id, "/relations"),
            json!({ "kind": "related", "target": other }),
        ),
        (
            "k-plan",
            "POST",
            t(&id, "/plan"),
            json!({ "kind": "after", "related": other }),
        ),
        ("k-ready", "POST", t(&id, "/mark-ready"), json!({})),
        (
            "k-queue",
            "POST",
            t(&id, "/queue"),
            json!({ "expected_state": "ready" }),
        ),
        (
            "k-return",
            "POST",
            t(&id, "/return-to-planning"),
            json!({ "reason": "unclear" }),
        ),
        (
            "k-rel-rm",
            "DELETE",
            t(&id, &format!("/relations/related/{other}")),
            Value::Null,
        ),
        (
            "k-cancel",
            "POST",
            t(&id, "/cancel"),
            json!({ "resolution": "Dropped." }),
        ),
        (
            "k-reopen",
            "POST",
            t(&id, "/reopen"),
            json!({ "reason": "Back." }),
        ),
    ];
    let send = |key: &str, method: &'static str, path: &str, body: &Value| {
        let req = s.request(method, path).token(h).key(key);
        let req = if body.is_null() {
            req
        } else {
            req.json(body.clone())
        };
        req.send()
    };
    let mut firsts = Vec::new();
    for (key, method, path, body) in &steps {
        let first = send(key, method, path, body).expect(200);
        firsts.push(first);
    }
    let before = s.tree();
    for ((key, method, path, body), first) in steps.iter().zip(&firsts) {
        let again = send(key, method, path, body).expect(200);
        if *key == "k-plan" {
            assert_eq!(
                again["outcome"],
                as_replayed(first["outcome"].clone()),
                "{key}"
            );
            assert_eq!(again["record"], first["record"], "{key}");
        } else {
            assert_eq!(again, as_replayed(first.clone()), "{key}");
        }
    }
    assert_eq!(s.tree(), before, "a replay wrote files");
    assert_eq!(s.show(&id)["state"], "planning");
}

#[test]
fn a_key_reused_with_a_different_request_is_409_and_writes_nothing() {
    let s = Server::start(Backend::Sqlite);
    let h = &s.tokens.human;
    let a = s.ready_ticket("A");
    let b = s.create("B", "");
    s.post(&t(&a, "/comments"))
        .token(h)
        .key("k-1")
        .json(json!({ "body": "First." }))
        .send()
        .expect(200);
    s.post(&t(&a, "/queue"))
        .token(h)
        .key("k-2")
        .send()
        .expect(200);
    s.post(&t(&a, "/plan"))
        .token(h)
        .key("k-3")
        .json(json!({ "kind": "after", "related": b }))
        .send()
        .expect(200);
    let before = s.tree();
    let conflicts: [(&'static str, String, &str, Value); 5] = [
        // Same key, same route, different body.
        (
            "POST",
            t(&a, "/comments"),
            "k-1",
            json!({ "body": "Second." }),
        ),
        // Same key on another ticket.
        (
            "POST",
            t(&b, "/comments"),
            "k-1",
            json!({ "body": "First." }),
        ),
        // Same key, another operation.
        ("PATCH", t(&a, ""), "k-1", json!({ "title": "Renamed" })),
        // Same key on a transition with a different reason.
        (
            "POST",
            t(&a, "/queue"),
            "k-2",
            json!({ "reason": "urgent" }),
        ),
        (
            "POST",
            t(&a, "/plan"),
            "k-3",
            json!({ "kind": "before", "related": b }),
        ),
    ];
    for (method, path, key, body) in conflicts {
        let err = s
            .request(method, &path)
            .token(h)
            .key(key)
            .json(body)
            .send()
            .expect_error(409, "conflicting_replay");
        assert_eq!(err["details"]["idempotency_key"], key);
    }
    assert_eq!(s.tree(), before);
}

#[test]
fn a_malformed_idempotency_key_is_400_and_writes_nothing() {
    let s = Server::start(Backend::Sqlite);
    let before = s.tree();
    for key in ["has space", "quote\"d", &"k".repeat(201)] {
        s.post("/api/v1/tickets")
            .token(&s.tokens.human)
            .key(key)
            .json(json!({ "title": "T" }))
            .send()
            .expect_error(400, "invalid");
    }
    assert_eq!(s.tree(), before);
}
