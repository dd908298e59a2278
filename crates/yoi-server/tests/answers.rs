//! Real answers validate against the served document (issue 41): a session through the API
//! touches most operations, and each answer is checked against the schema the document gives
//! for its operation and status, with a small validator of the JSON Schema keywords the
//! document uses (`$ref`, `type`, `enum`, `const`, `required`, `properties`,
//! `additionalProperties`, `items`, `prefixItems`, `minItems`/`maxItems`, `oneOf`, `anyOf`,
//! `allOf`; patterns and formats are left to schemathesis, which `.ci/run` runs with every
//! check). The live events the session caused are checked against `LiveEvent`, and a refusal's
//! details against their shape. The same answers with a field added, a required one taken away
//! or an enum value misspelt must fail it, so a drift between a type and its schema cannot pass
//! unseen.

mod common;

use std::io::BufRead;

use common::{Backend, Server, COMPLETE_BRIEF};
use serde_json::{json, Value};

/// What is wrong with `value` against `schema`, by JSON pointer; empty when it conforms.
fn violations(doc: &Value, schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.trim_start_matches("#/components/schemas/");
        let target = &doc["components"]["schemas"][name];
        assert!(!target.is_null(), "{at}: dangling $ref {r}");
        return violations(doc, target, value, at, out);
    }
    if schema == &Value::Bool(false) {
        out.push(format!("{at}: nothing may be here"));
        return;
    }
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let fits = types.iter().any(|t| match *t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            other => panic!("{at}: unknown type {other}"),
        });
        if !fits {
            out.push(format!("{at}: {value} is not of type {types:?}"));
            return;
        }
    }
    if let Some(fixed) = schema.get("const") {
        if fixed != value {
            out.push(format!("{at}: {value} is not {fixed}"));
        }
    }
    if let Some(values) = schema["enum"].as_array() {
        if !values.contains(value) {
            out.push(format!("{at}: {value} is not one of {values:?}"));
        }
    }
    if let Some(parts) = schema["allOf"].as_array() {
        for part in parts {
            violations(doc, part, value, at, out);
        }
    }
    for (key, exactly_one) in [("oneOf", true), ("anyOf", false)] {
        if let Some(choices) = schema[key].as_array() {
            let fitting = choices
                .iter()
                .filter(|c| {
                    let mut v = Vec::new();
                    violations(doc, c, value, at, &mut v);
                    v.is_empty()
                })
                .count();
            if fitting == 0 || (exactly_one && fitting > 1) {
                out.push(format!("{at}: {value} fits {fitting} of the {key} choices"));
            }
        }
    }
    if let Some(map) = value.as_object() {
        for name in schema["required"].as_array().into_iter().flatten() {
            let name = name.as_str().unwrap();
            if !map.contains_key(name) {
                out.push(format!("{at}: `{name}` is required"));
            }
        }
        let props = schema["properties"].as_object();
        for (k, v) in map {
            let here = format!("{at}/{k}");
            match (
                props.and_then(|p| p.get(k)),
                schema.get("additionalProperties"),
            ) {
                (Some(s), _) => violations(doc, s, v, &here, out),
                (None, Some(Value::Bool(false))) => out.push(format!("{here}: not in the schema")),
                (None, Some(extra)) => violations(doc, extra, v, &here, out),
                (None, None) => {}
            }
        }
    }
    if let Some(items) = value.as_array() {
        let prefix = schema["prefixItems"].as_array();
        for (i, item) in items.iter().enumerate() {
            let here = format!("{at}/{i}");
            match prefix.and_then(|p| p.get(i)) {
                Some(s) => violations(doc, s, item, &here, out),
                None => {
                    if let Some(s) = schema.get("items") {
                        violations(doc, s, item, &here, out);
                    }
                }
            }
        }
        let n = items.len() as u64;
        if schema["minItems"].as_u64().is_some_and(|m| n < m)
            || schema["maxItems"].as_u64().is_some_and(|m| n > m)
        {
            out.push(format!("{at}: {n} items"));
        }
    }
}

/// The schema the document gives the answer of `method path` with `status`.
fn answer_schema<'d>(doc: &'d Value, method: &str, path: &str, status: u16) -> &'d Value {
    let responses = &doc["paths"][path][method]["responses"];
    let response = match responses.get(status.to_string()) {
        Some(r) => r,
        None => &responses["default"],
    };
    let schema = &response["content"]["application/json"]["schema"];
    assert!(
        !schema.is_null(),
        "{method} {path} {status}: no JSON schema"
    );
    schema
}

fn conformance(doc: &Value, method: &str, path: &str, status: u16, answer: &Value) -> Vec<String> {
    let mut out = Vec::new();
    violations(
        doc,
        answer_schema(doc, method, path, status),
        answer,
        "",
        &mut out,
    );
    out
}

fn upper(method: &str) -> &'static str {
    match method {
        "get" => "GET",
        "post" => "POST",
        "patch" => "PATCH",
        other => panic!("no method {other} in the session"),
    }
}

/// One request of the session: method, documented path, concrete path, token, body, status.
type Call<'a> = (&'a str, &'a str, String, &'a str, Option<Value>, u16);

/// A session through the API, each answer checked against the document.
#[test]
fn real_answers_validate_against_the_document() {
    let doc = yoi_server::openapi::document();
    let s = Server::start_routed(Backend::Sqlite, |_| {});
    let first = s.ready_ticket("First");
    let second = s.create("Second", COMPLETE_BRIEF);
    let h = s.tokens.human.clone();
    let r = s.tokens.read.clone();
    let t = |suffix: &str, id: &str| format!("/api/v1/tickets/{id}{suffix}");
    let calls: Vec<Call> = vec![
        (
            "post",
            "/api/v1/tickets",
            "/api/v1/tickets".into(),
            &h,
            Some(json!({ "title": "Third", "depends_on": [first] })),
            201,
        ),
        (
            "post",
            "/api/v1/tickets/{id}/relations",
            t("/relations", &second),
            &h,
            Some(json!({ "kind": "depends_on", "target": first })),
            200,
        ),
        (
            "post",
            "/api/v1/tickets/{id}/comments",
            t("/comments", &second),
            &h,
            Some(json!({ "body": "hello" })),
            200,
        ),
        (
            "patch",
            "/api/v1/tickets/{id}",
            t("", &second),
            &h,
            Some(json!({ "title": "Second, edited" })),
            200,
        ),
        (
            "post",
            "/api/v1/tickets/{id}/plan",
            t("/plan", &second),
            &h,
            Some(json!({ "kind": "after", "related": first })),
            200,
        ),
        (
            "post",
            "/api/v1/tickets/{id}/queue",
            t("/queue", &first),
            &h,
            None,
            200,
        ),
        (
            "post",
            "/api/v1/tickets/{id}/queue",
            t("/queue", &second),
            &h,
            Some(json!({ "expected_state": "ready" })),
            409,
        ),
        (
            "get",
            "/api/v1/tickets",
            "/api/v1/tickets?state=all".into(),
            &r,
            None,
            200,
        ),
        ("get", "/api/v1/tickets/{id}", t("", &second), &r, None, 200),
        ("get", "/api/v1/tickets/{id}", t("", &first), &r, None, 200),
        (
            "get",
            "/api/v1/tickets/{id}/relations",
            t("/relations", &second),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/tickets/{id}/blockers",
            t("/blockers", &second),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/tickets/{id}/plan",
            t("/plan", &second),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/tickets/{id}/packet",
            t("/packet", &first),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/tickets/{id}/routing",
            t("/routing", &first),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/tickets/{id}/cost",
            t("/cost", &first),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/tickets/{id}/forge",
            t("/forge", &first),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/router",
            "/api/v1/router".into(),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/doctor",
            "/api/v1/doctor".into(),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/inbox",
            "/api/v1/inbox".into(),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/skills",
            "/api/v1/skills".into(),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/skills/{name}",
            "/api/v1/skills/agent-skills-format".into(),
            &r,
            None,
            200,
        ),
        (
            "post",
            "/api/v1/skills/{name}/activate",
            "/api/v1/skills/agent-skills-format/activate".into(),
            &h,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/skills/proposals",
            "/api/v1/skills/proposals".into(),
            &r,
            None,
            200,
        ),
        (
            "post",
            "/api/v1/workflow-offers/detect",
            "/api/v1/workflow-offers/detect".into(),
            &h,
            None,
            200,
        ),
        // No `[forge]` here: the pass is refused, with the error body the document names.
        (
            "post",
            "/api/v1/forge/sync",
            "/api/v1/forge/sync".into(),
            &h,
            None,
            422,
        ),
        (
            "get",
            "/api/v1/workflow-offers",
            "/api/v1/workflow-offers".into(),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/flows",
            "/api/v1/flows".into(),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/flows/{name}",
            "/api/v1/flows/coder-review".into(),
            &r,
            None,
            200,
        ),
        (
            "get",
            "/api/v1/flows/lint",
            "/api/v1/flows/lint".into(),
            &r,
            None,
            200,
        ),
        ("get", "/api/v1/pods", "/api/v1/pods".into(), &r, None, 200),
        (
            "get",
            "/api/v1/assignments",
            "/api/v1/assignments".into(),
            &r,
            None,
            200,
        ),
        ("get", "/healthz", "/healthz".into(), &r, None, 200),
        ("get", "/readyz", "/readyz".into(), &r, None, 200),
    ];
    let mut answers = Vec::new();
    for (method, path, concrete, token, body, status) in calls {
        let mut req = s.request(upper(method), &concrete).token(token);
        if let Some(body) = body {
            req = req.json(body);
        }
        let resp = req.send();
        assert_eq!(resp.status, status, "{method} {concrete}: {}", resp.text);
        let resp: Value = serde_json::from_str(&resp.text).unwrap();
        let bad = conformance(&doc, method, path, status, &resp);
        assert!(
            bad.is_empty(),
            "{method} {concrete} ({status}): {bad:#?}\n{resp:#}"
        );
        answers.push((method, path, status, resp));
    }

    // The same answers, wrong: each must fail the check.
    let (_, _, _, shown) = answers
        .iter()
        .find(|(m, p, ..)| *m == "get" && *p == "/api/v1/tickets/{id}")
        .unwrap();
    let mut extra = shown.clone();
    extra["relations"]["surprise"] = json!(1);
    let mut missing = shown.clone();
    missing.as_object_mut().unwrap().remove("state");
    let mut misspelt = shown.clone();
    misspelt["state"] = json!("in_progress");
    let mut wrong_type = shown.clone();
    wrong_type["events"][0]["body"] = json!(7);
    for (what, wrong) in [
        ("extra", extra),
        ("missing", missing),
        ("misspelt", misspelt),
        ("wrong type", wrong_type),
    ] {
        let bad = conformance(&doc, "get", "/api/v1/tickets/{id}", 200, &wrong);
        assert!(
            !bad.is_empty(),
            "a ticket with a {what} field passed the check"
        );
    }
    // The refusal's details are the typed shape of a stale state; misspelt or extended, they fail.
    let (.., stale) = answers
        .iter()
        .find(|(_, _, status, _)| *status == 409)
        .unwrap();
    assert_eq!(stale["error"]["details"]["expected"], "ready", "{stale:#}");
    assert_eq!(stale["error"]["details"]["found"], "planning", "{stale:#}");
    let mut misspelt = stale.clone();
    misspelt["error"]["details"]["found"] = json!("in_progress");
    let mut extra = stale.clone();
    extra["error"]["details"]["surprise"] = json!(1);
    for (what, wrong) in [("misspelt", misspelt), ("extra", extra)] {
        let bad = conformance(&doc, "post", "/api/v1/tickets/{id}/queue", 409, &wrong);
        assert!(
            !bad.is_empty(),
            "details with a {what} field passed the check"
        );
    }

    // Every event the session caused is a LiveEvent of its kind, from the first on.
    let events = live_events(
        &s,
        &r,
        &["ticket_created", "plan_record_added", "ticket_queued"],
    );
    let live = json!({ "$ref": "#/components/schemas/LiveEvent" });
    for (kind, data) in &events {
        let mut bad = Vec::new();
        violations(&doc, &live, data, "", &mut bad);
        assert!(bad.is_empty(), "live event {kind}: {bad:#?}\n{data:#}");
        assert_eq!(
            &data["kind"],
            kind.as_str(),
            "the SSE `event:` is the data's kind"
        );
    }
    // A thread event's payload under a plan record's kind fits no choice.
    let (_, created) = events.iter().find(|(k, _)| k == "ticket_created").unwrap();
    let mut wrong = created.clone();
    wrong["kind"] = json!("plan_record_added");
    let mut bad = Vec::new();
    violations(&doc, &live, &wrong, "", &mut bad);
    assert!(
        !bad.is_empty(),
        "a created event under another kind passed the check"
    );
}

/// The live events from the first on (`event:` and the parsed `data:`), until each of `kinds`
/// has been seen.
fn live_events(s: &Server, token: &str, kinds: &[&str]) -> Vec<(String, Value)> {
    let mut resp = s
        .agent()
        .get(format!("{}/api/v1/events?after=0", s.base))
        .header("Authorization", format!("Bearer {token}"))
        .call()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let lines = std::io::BufReader::new(resp.body_mut().as_reader()).lines();
    let mut events = Vec::new();
    let mut kind = None;
    for line in lines {
        let line = line.unwrap();
        if let Some(k) = line.strip_prefix("event:") {
            kind = Some(k.trim().to_string());
        } else if let Some(data) = line.strip_prefix("data:") {
            let data: Value = serde_json::from_str(data.trim()).unwrap();
            events.push((kind.take().expect("`event:` before `data:`"), data));
            if kinds
                .iter()
                .all(|k| events.iter().any(|(seen, _)| seen == k))
            {
                return events;
            }
        }
    }
    panic!("the stream ended before {kinds:?}: {events:#?}");
}
