//! Relations, blockers and plan records through the API: adding, listing and removing
//! relations with their refusals (duplicate, cycle, self, unknown kind or target), the blocker
//! view answered from the index, and orchestration plan records.

mod common;

use common::{t, Backend, Server, UNKNOWN_ID};
use serde_json::{json, Value};

#[test]
fn relations_are_added_listed_and_removed() {
    let s = Server::start(Backend::Sqlite);
    let a = s.create("A", "");
    let b = s.create("B", "");
    let out = s
        .post(&t(&a, "/relations"))
        .token(&s.tokens.human)
        .json(json!({ "kind": "depends_on", "target": b, "note": "needs the parser" }))
        .send()
        .expect(200);
    assert_eq!(out["operation"], "relation_add");
    let view = s
        .get(&t(&a, "/relations"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(view["ticket"], a.as_str());
    assert_eq!(
        view["relations"],
        json!([{ "name": "depends_on", "kind": "depends_on", "other": b, "direction": "outgoing",
                 "other_state": "planning", "note": "needs the parser" }])
    );
    assert_eq!(view["can_queue"], false);
    let inverse = s
        .get(&t(&b, "/relations"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(inverse["relations"][0]["name"], "dependency_of");
    assert_eq!(inverse["relations"][0]["direction"], "incoming");
    let out = s
        .delete(&t(&a, &format!("/relations/depends_on/{b}")))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(out["operation"], "relation_rm");
    let view = s
        .get(&t(&a, "/relations"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(view["relations"], json!([]));
    assert_eq!(view["can_queue"], true);
}

#[test]
fn relation_refusals_have_their_own_codes_and_write_nothing() {
    let s = Server::start(Backend::Sqlite);
    let a = s.create("A", "");
    let b = s.create("B", "");
    s.post(&t(&a, "/relations"))
        .token(&s.tokens.human)
        .json(json!({ "kind": "depends_on", "target": b }))
        .send()
        .expect(200);
    let before = s.tree();
    let add = |id: &str, body: Value| {
        s.post(&t(id, "/relations"))
            .token(&s.tokens.human)
            .json(body)
            .send()
    };
    add(&a, json!({ "kind": "depends_on", "target": b })).expect_error(409, "duplicate_relation");
    let cycle = add(&b, json!({ "kind": "depends_on", "target": a })).expect_error(409, "cycle");
    assert!(cycle["details"]["cycle"].as_str().unwrap().contains(&a));
    add(&a, json!({ "kind": "related", "target": a })).expect_error(422, "self_relation");
    add(&a, json!({ "kind": "likes", "target": b })).expect_error(400, "invalid");
    add(&a, json!({ "kind": "related" })).expect_error(400, "invalid");
    add(&a, json!({ "kind": "related", "target": UNKNOWN_ID })).expect_error(404, "not_found");
    let remove = |path: String| s.delete(&path).token(&s.tokens.human).send();
    remove(t(&a, &format!("/relations/related/{b}"))).expect_error(404, "not_found");
    remove(t(&a, &format!("/relations/likes/{b}"))).expect_error(400, "invalid");
    assert_eq!(s.tree(), before);
}

#[test]
fn blockers_answer_from_the_index() {
    let s = Server::start(Backend::Sqlite);
    let dep = s.create("Dependency", "");
    let id = s.create("Dependent", "");
    s.post(&t(&id, "/relations"))
        .token(&s.tokens.human)
        .json(json!({ "kind": "depends_on", "target": dep }))
        .send()
        .expect(200);
    let view = s
        .get(&t(&id, "/blockers"))
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(view["ticket"], id.as_str());
    assert_eq!(
        view["blockers"],
        json!([{ "ticket": dep, "reason_kind": "depends_on", "state": "planning" }])
    );
    assert_eq!(view["can_queue"], false);
    s.post(&t(&dep, "/cancel"))
        .token(&s.tokens.human)
        .json(json!({ "resolution": "Dropped." }))
        .send()
        .expect(200);
    let view = s
        .get(&t(&id, "/blockers"))
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(view["blockers"], json!([]));
    assert_eq!(view["can_queue"], true);
}

#[test]
fn plan_records_are_added_and_listed() {
    let s = Server::start(Backend::Sqlite);
    let a = s.create("A", "");
    let b = s.create("B", "");
    let empty = s
        .get(&t(&a, "/plan"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(empty, json!({ "count": 0, "records": [] }));
    let out = s
        .post(&t(&a, "/plan"))
        .token(&s.tokens.orchestrator)
        .json(json!({ "kind": "after", "related": b, "note": "B settles the schema" }))
        .send()
        .expect(200);
    assert_eq!(out["outcome"]["operation"], "plan_add");
    assert_eq!(out["record"]["kind"], "after");
    assert_eq!(out["record"]["related_ticket"], b.as_str());
    assert_eq!(out["record"]["author"], "yoi-orchestrator");
    let listed = s
        .get(&t(&a, "/plan"))
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(listed["count"], 1);
    assert_eq!(listed["records"][0], out["record"]);
}

#[test]
fn plan_refusals_write_nothing() {
    let s = Server::start(Backend::Sqlite);
    let a = s.create("A", "");
    let before = s.tree();
    let add = |body: Value| {
        s.post(&t(&a, "/plan"))
            .token(&s.tokens.human)
            .json(body)
            .send()
    };
    let err = add(json!({ "kind": "accepted_plan", "note": "go" })).expect_error(422, "refused");
    assert!(err["message"].as_str().unwrap().contains("orchestrator"));
    // The refusal names its rule for a program, not only in the message.
    assert_eq!(err["details"]["reason"], "accepted_plan_is_the_routers");
    add(json!({ "kind": "someday" })).expect_error(400, "invalid");
    add(json!({ "kind": "after" })).expect_error(400, "invalid");
    add(json!({ "kind": "waiting_capacity", "note": "" })).expect_error(400, "invalid");
    add(json!({ "kind": "after", "related": a })).expect_error(400, "invalid");
    add(json!({ "kind": "after", "related": UNKNOWN_ID })).expect_error(404, "not_found");
    assert_eq!(s.tree(), before);
}
