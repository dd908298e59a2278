//! `/api/v1/workflow-offers…` against a real server (docs/workflows.md, "Offers"): an
//! instruction people wrote on three tickets through the API is offered once, shows in the
//! inbox with its diff, and only a person's token accepts or rejects it — every pod scope, the
//! read scope and an agent's own claim token get 403 and no file is written. The same on
//! SQLite and PostgreSQL.

mod common;

use common::{Backend, Server};
use serde_json::json;

const SAID: &str = "Run the OWASP checklist against the diff before asking for review.";

fn offered_and_decided_only_by_a_person(backend: Backend) {
    let s = Server::start(backend);
    for n in 0..3 {
        let id = s.create(&format!("Ticket {n}"), common::COMPLETE_BRIEF);
        s.post(&format!("/api/v1/tickets/{id}/comments"))
            .token(&s.tokens.human)
            .json(json!({ "body": SAID }))
            .send()
            .expect(200);
    }
    // Looking at the history is a person's call too.
    for token in [&s.tokens.coder, &s.tokens.intake, &s.tokens.read] {
        s.post("/api/v1/workflow-offers/detect")
            .token(token)
            .send()
            .expect_error(403, "forbidden");
    }
    let found = s
        .post("/api/v1/workflow-offers/detect")
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(found["offered"].as_array().unwrap().len(), 1, "{found:#}");
    let again = s
        .post("/api/v1/workflow-offers/detect")
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(again["offered"], json!([]), "no duplicate");
    assert_eq!(again["pending"], 1);

    let offer = &found["offered"][0];
    let id = offer["id"].as_str().unwrap();
    let target = offer["target"].as_str().unwrap();
    assert_eq!(offer["kind"], "new_workflow");
    assert_eq!(offer["status"], "pending");
    let listed = s
        .get("/api/v1/workflow-offers")
        .token(&s.tokens.coder)
        .send()
        .expect(200);
    assert_eq!(listed["pending"], 1);
    let inbox = s
        .get("/api/v1/inbox")
        .token(&s.tokens.read)
        .send()
        .expect(200);
    let entry = inbox["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["reason"] == "workflow_offer")
        .expect("the offer is in the inbox");
    assert!(entry["detail"].as_str().unwrap().contains("```diff"));

    // No agent-side scope accepts or rejects, and nothing is written.
    for token in [
        &s.tokens.coder,
        &s.tokens.intake,
        &s.tokens.orchestrator,
        &s.tokens.read,
    ] {
        s.post(&format!("/api/v1/workflow-offers/{id}/accept"))
            .token(token)
            .send()
            .expect_error(403, "forbidden");
        s.post(&format!("/api/v1/workflow-offers/{id}/reject"))
            .token(token)
            .json(json!({ "reason": "no" }))
            .send()
            .expect_error(403, "forbidden");
    }
    assert!(!s.root().join(target).exists());
    s.post("/api/v1/workflow-offers/o0000000000000000000000000/accept")
        .token(&s.tokens.human)
        .send()
        .expect_error(400, "invalid");
    s.post("/api/v1/workflow-offers/o000000000000000000000000/accept")
        .token(&s.tokens.human)
        .send()
        .expect_error(404, "not_found");

    let done = s
        .post(&format!("/api/v1/workflow-offers/{id}/accept"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(done["status"], "accepted");
    assert_eq!(done["decision"]["by"], "alice");
    let written = std::fs::read_to_string(s.root().join(target)).unwrap();
    assert_eq!(written, offer["content"].as_str().unwrap());
    let slug = offer["name"].as_str().unwrap();
    s.get(&format!("/api/v1/workflows/{slug}"))
        .token(&s.tokens.read)
        .send()
        .expect(200);
    s.post(&format!("/api/v1/workflow-offers/{id}/reject"))
        .token(&s.tokens.human)
        .json(json!({ "reason": "late" }))
        .send()
        .expect_error(409, "already_decided");
}

#[test]
fn offers_are_made_once_and_decided_only_by_a_person_sqlite() {
    offered_and_decided_only_by_a_person(Backend::Sqlite);
}

#[test]
fn offers_are_made_once_and_decided_only_by_a_person_postgres() {
    offered_and_decided_only_by_a_person(Backend::Postgres);
}

/// An agent's own token — the one a pod's claim hands its agent — cannot look for, accept or
/// reject offers either: 403, and nothing is written.
#[test]
fn an_agents_claim_token_cannot_accept_an_offer() {
    let s = Server::start_routed(Backend::Sqlite, |_| {});
    let mut first = None;
    for n in 0..3 {
        let id = s.ready_ticket(&format!("Ticket {n}"));
        s.post(&format!("/api/v1/tickets/{id}/comments"))
            .token(&s.tokens.human)
            .json(json!({ "body": SAID }))
            .send()
            .expect(200);
        first.get_or_insert(id);
    }
    let first = first.unwrap();
    let found = s
        .post("/api/v1/workflow-offers/detect")
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let offer = found["offered"][0]["id"].as_str().unwrap().to_string();
    let target = found["offered"][0]["target"].as_str().unwrap().to_string();
    s.post(&format!("/api/v1/tickets/{first}/queue"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let pod = s
        .post("/api/v1/pods")
        .token(&s.tokens.coder)
        .json(json!({ "name": "c" }))
        .send()
        .expect(201);
    let work = s
        .post("/api/v1/assignments/claim")
        .token(&s.tokens.coder)
        .json(json!({ "pod": pod["pod"]["id"], "wait_ms": 20000 }))
        .send()
        .expect(200);
    let agent = work["agent_token"]
        .as_str()
        .expect("a claim hands its agent a token");
    s.post("/api/v1/workflow-offers/detect")
        .token(agent)
        .send()
        .expect_error(403, "forbidden");
    s.post(&format!("/api/v1/workflow-offers/{offer}/accept"))
        .token(agent)
        .send()
        .expect_error(403, "forbidden");
    s.post(&format!("/api/v1/workflow-offers/{offer}/reject"))
        .token(agent)
        .json(json!({ "reason": "mine" }))
        .send()
        .expect_error(403, "forbidden");
    // It may still read them, as it reads tickets.
    s.get("/api/v1/workflow-offers")
        .token(agent)
        .send()
        .expect(200);
    assert!(!s.root().join(&target).exists());
    let still = s
        .get(&format!("/api/v1/workflow-offers/{offer}"))
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(still["status"], "pending");
}
