//! The OpenAPI document covers exactly the router's routes, the server serves that document,
//! and a copy is written to `$CARGO_TARGET_TMPDIR/openapi.json` (`target/tmp/openapi.json`)
//! for CI to check with an OpenAPI validator (`.ci/run`).

mod common;

use std::collections::BTreeSet;

use common::{Backend, Server, UNKNOWN_ID};

/// Every route `yoi_server::router` serves, as (method, path). Keep in step with the router:
/// the tests below fail when the document or the server disagrees with this list.
const ROUTES: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/api/v1/openapi.json"),
    ("get", "/api/v1/tickets"),
    ("post", "/api/v1/tickets"),
    ("get", "/api/v1/tickets/{id}"),
    ("patch", "/api/v1/tickets/{id}"),
    ("post", "/api/v1/tickets/{id}/comments"),
    ("post", "/api/v1/tickets/{id}/mark-ready"),
    ("post", "/api/v1/tickets/{id}/queue"),
    ("post", "/api/v1/tickets/{id}/return-to-planning"),
    ("post", "/api/v1/tickets/{id}/close"),
    ("post", "/api/v1/tickets/{id}/cancel"),
    ("post", "/api/v1/tickets/{id}/reopen"),
    ("get", "/api/v1/tickets/{id}/relations"),
    ("post", "/api/v1/tickets/{id}/relations"),
    ("delete", "/api/v1/tickets/{id}/relations/{kind}/{target}"),
    ("get", "/api/v1/tickets/{id}/blockers"),
    ("get", "/api/v1/tickets/{id}/plan"),
    ("post", "/api/v1/tickets/{id}/plan"),
    ("get", "/api/v1/tickets/{id}/routing"),
    ("post", "/api/v1/tickets/{id}/retry"),
    ("get", "/api/v1/router"),
    ("get", "/api/v1/tickets/{id}/cost"),
    ("get", "/api/v1/tickets/{id}/forge"),
    ("post", "/api/v1/forge/sync"),
    ("post", "/api/v1/tickets/{id}/budget"),
    ("post", "/api/v1/tickets/{id}/answer"),
    ("get", "/api/v1/notify/log"),
    ("get", "/api/v1/costs"),
    ("get", "/api/v1/limits"),
    ("get", "/api/v1/pods"),
    ("post", "/api/v1/pods"),
    ("get", "/api/v1/assignments"),
    ("post", "/api/v1/assignments/claim"),
    ("post", "/api/v1/assignments/{id}/heartbeat"),
    ("post", "/api/v1/assignments/{id}/complete"),
    ("post", "/api/v1/assignments/{id}/fail"),
    ("post", "/api/v1/assignments/{id}/log"),
    ("get", "/api/v1/tickets/{id}/packet"),
    ("put", "/api/v1/tickets/{id}/packet"),
    ("get", "/api/v1/doctor"),
    ("get", "/api/v1/inbox"),
    ("get", "/api/v1/events"),
    ("get", "/api/v1/flows"),
    ("get", "/api/v1/flows/lint"),
    ("get", "/api/v1/flows/{name}"),
    ("get", "/api/v1/workflows"),
    ("get", "/api/v1/workflows/lint"),
    ("get", "/api/v1/workflows/{slug}"),
    ("post", "/api/v1/workflows/{slug}/invoke"),
    ("get", "/api/v1/workflow-offers"),
    ("post", "/api/v1/workflow-offers/detect"),
    ("get", "/api/v1/workflow-offers/{id}"),
    ("post", "/api/v1/workflow-offers/{id}/accept"),
    ("post", "/api/v1/workflow-offers/{id}/reject"),
    ("get", "/api/v1/skills"),
    ("get", "/api/v1/skills/{name}"),
    ("post", "/api/v1/skills/{name}/activate"),
    ("get", "/api/v1/skills/{name}/resources/{path}"),
    ("get", "/api/v1/skills/proposals"),
    ("post", "/api/v1/skills/proposals"),
    ("post", "/api/v1/skills/proposals/{id}/approve"),
    ("post", "/api/v1/skills/proposals/{id}/reject"),
    ("post", "/api/v1/dashboard/login"),
];

/// Routes anyone may call; every other route requires a bearer token.
const PUBLIC: &[&str] = &["/healthz", "/readyz", "/api/v1/openapi.json"];

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn document() -> serde_json::Value {
    serde_json::to_value(yoi_server::openapi::document()).unwrap()
}

fn documented(doc: &serde_json::Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in METHODS {
            if item.get(*method).is_some() {
                out.insert((method.to_string(), path.clone()));
            }
        }
    }
    out
}

#[test]
fn the_document_lists_exactly_the_routes_of_the_router() {
    let doc = document();
    let listed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(listed.len(), ROUTES.len(), "ROUTES has duplicates");
    let documented = documented(&doc);
    let undocumented: Vec<_> = listed.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&listed).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "routes missing from the document: {undocumented:?}; documented but not routed: {unknown:?}"
    );
}

#[test]
fn every_operation_declares_its_path_parameters_security_and_a_tag() {
    let doc = document();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    let declared: Vec<serde_json::Value> = doc["tags"]
        .as_array()
        .expect("declared tags")
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    for (method, path) in ROUTES {
        let op = &doc["paths"][path][method];
        let params: BTreeSet<&str> = op["parameters"]
            .as_array()
            .map(|ps| {
                ps.iter()
                    .filter(|p| p["in"] == "path")
                    .map(|p| p["name"].as_str().unwrap())
                    .collect()
            })
            .unwrap_or_default();
        let in_path: BTreeSet<&str> = path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        assert_eq!(params, in_path, "{method} {path}: path parameters");
        let secured = op["security"]
            .as_array()
            .is_some_and(|s| s.iter().any(|r| r.get("bearer").is_some()));
        assert_eq!(
            secured,
            !PUBLIC.contains(path),
            "{method} {path}: bearer security"
        );
        let tags = op["tags"].as_array().cloned().unwrap_or_default();
        assert!(
            !tags.is_empty() && tags.iter().all(|t| declared.contains(t)),
            "{method} {path}: tags {tags:?} must be among the declared {declared:?}"
        );
        assert!(
            op["responses"]["default"]["content"]["application/json"]["schema"]["$ref"]
                == "#/components/schemas/ErrorBody",
            "{method} {path}: the error body as the default response"
        );
        let ok = op["responses"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with('2'));
        assert!(ok, "{method} {path}: a success response");
    }
}

/// A request for `path` with its parameters filled in.
fn concrete(path: &str) -> String {
    path.replace("{id}", UNKNOWN_ID)
        .replace("{kind}", "depends_on")
        .replace("{target}", UNKNOWN_ID)
}

#[test]
fn the_server_serves_every_listed_route() {
    let s = Server::start(Backend::Sqlite);
    for (method, path) in ROUTES {
        let resp = s.request(upper(method), &concrete(path)).send();
        let expected = if PUBLIC.contains(path) { 200 } else { 401 };
        assert_eq!(
            resp.status, expected,
            "{method} {path}: the router answers {} ({})",
            resp.status, resp.text
        );
    }
}

#[test]
fn the_served_document_is_the_generated_one_and_is_saved_for_validation() {
    let s = Server::start(Backend::Sqlite);
    let served = s.get("/api/v1/openapi.json").send().expect(200);
    assert_eq!(served, document());
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(dir).unwrap();
    let text = serde_json::to_string_pretty(&served).unwrap() + "\n";
    std::fs::write(dir.join("openapi.json"), text).unwrap();
}

fn upper(method: &str) -> &'static str {
    match method {
        "get" => "GET",
        "post" => "POST",
        "patch" => "PATCH",
        "put" => "PUT",
        "delete" => "DELETE",
        other => panic!("no method {other} in ROUTES"),
    }
}

#[test]
fn operation_ids_are_unique() {
    let doc = document();
    let mut seen = BTreeSet::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            assert!(
                seen.insert(id.to_string()),
                "operationId `{id}` ({method} {path}) is used twice"
            );
        }
    }
    assert_eq!(seen.len(), ROUTES.len());
}

/// The schema of property `prop` of component `component`.
fn schema_of<'d>(doc: &'d serde_json::Value, component: &str, prop: &str) -> &'d serde_json::Value {
    &doc["components"]["schemas"][component]["properties"][prop]
}

#[test]
fn the_documented_limits_are_the_ones_the_server_enforces() {
    let s = Server::start(Backend::Sqlite);
    let doc = document();
    let title = schema_of(&doc, "CreateBody", "title");
    let max = title["maxLength"].as_u64().unwrap() as usize;
    assert_eq!(max, 1024);
    let create = |title: String| {
        s.post("/api/v1/tickets")
            .token(&s.tokens.human)
            .json(serde_json::json!({ "title": title }))
            .send()
    };
    // At the limit in characters (four bytes each) it is taken; one more is refused.
    let id = create("🎫".repeat(max)).expect(201)["ticket"]
        .as_str()
        .unwrap()
        .to_string();
    create("a".repeat(max + 1)).expect_error(400, "invalid");
    // Surrounding whitespace is trimmed (the pattern allows it); inner control characters are
    // refused, and a blank title too.
    create("\n\ttitle\n".into()).expect(201);
    create("a\u{1}b".into()).expect_error(400, "invalid");
    create(" \u{3000} ".into()).expect_error(400, "invalid");
    // Page sizes are 1 to 1000, exactly as documented.
    let limit = &doc["paths"]["/api/v1/tickets"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .unwrap()["schema"];
    assert_eq!(
        (limit["minimum"].as_i64(), limit["maximum"].as_i64()),
        (Some(1), Some(1000))
    );
    for (n, status) in [(0, 400), (1, 200), (1000, 200), (1001, 400)] {
        let r = s
            .get(&format!("/api/v1/tickets?limit={n}"))
            .token(&s.tokens.read)
            .send();
        assert_eq!(r.status, status, "limit={n}: {}", r.text);
    }
    // Enumerations are spelled exactly: the API does not take the CLI's forgiving spellings.
    s.get("/api/v1/tickets?state=READY")
        .token(&s.tokens.read)
        .send()
        .expect_error(400, "invalid");
    s.get("/api/v1/tickets?state=ready,done")
        .token(&s.tokens.read)
        .send()
        .expect(200);
    s.post(&format!("/api/v1/tickets/{id}/relations"))
        .token(&s.tokens.human)
        .json(serde_json::json!({ "kind": "Depends-On", "target": UNKNOWN_ID }))
        .send()
        .expect_error(400, "invalid");
    s.post(&format!("/api/v1/tickets/{id}/plan"))
        .token(&s.tokens.human)
        .json(serde_json::json!({ "kind": "waiting_capacity_note", "note": "busy" }))
        .send()
        .expect_error(400, "invalid");
    // A negative event position is refused even when a Last-Event-ID header is given.
    let r = s
        .get("/api/v1/events?after=-1")
        .token(&s.tokens.read)
        .header("Last-Event-ID", "0")
        .send();
    assert_eq!(r.status, 400, "{}", r.text);
    // The per-operation bodies: close needs a resolution, reopen a reason.
    let close = &doc["paths"]["/api/v1/tickets/{id}/close"]["post"]["requestBody"]["content"]
        ["application/json"]["schema"]["$ref"];
    assert_eq!(close, "#/components/schemas/ResolutionBody");
    assert_eq!(
        doc["components"]["schemas"]["ResolutionBody"]["required"],
        serde_json::json!(["resolution"])
    );
    assert_eq!(
        doc["components"]["schemas"]["CreateBody"]["additionalProperties"],
        false
    );
}

/// The engine's table of person operations is the one list: each operation's route is served
/// and documented with its method, and a state operation's body is the one its table row says.
#[test]
fn every_person_operation_of_the_engine_s_table_is_routed_and_documented() {
    use yoi_engine::person_ops::{Needs, PersonOp};
    let doc = document();
    let documented = documented(&doc);
    for op in PersonOp::ALL {
        let spec = op.spec();
        let route = (
            spec.method.to_ascii_lowercase(),
            format!("/api/v1{}", spec.path),
        );
        assert!(
            ROUTES.contains(&(route.0.as_str(), route.1.as_str())),
            "{op:?}: {route:?} is not a route of the router"
        );
        assert!(
            documented.contains(&route),
            "{op:?}: {route:?} is not documented"
        );
        let body = &doc["paths"][&route.1][&route.0]["requestBody"]["content"]["application/json"]
            ["schema"]["$ref"];
        let want = match (spec.transition, spec.needs) {
            (Some(_), Needs::Reason) => Some("#/components/schemas/ReasonBody"),
            (Some(_), Needs::Resolution) => Some("#/components/schemas/ResolutionBody"),
            (Some(_), _) => Some("#/components/schemas/TransitionBody"),
            (None, _) => None,
        };
        if let Some(want) = want {
            assert_eq!(body, want, "{op:?}: its request body");
        }
        // What it answers: the outcome of the operation (a plan record's, with the record).
        let answer = match op {
            PersonOp::AddPlanRecord => "#/components/schemas/PlanAdded",
            _ => "#/components/schemas/OperationResult",
        };
        let responses = doc["paths"][&route.1][&route.0]["responses"]
            .as_object()
            .unwrap();
        for (status, response) in responses.iter().filter(|(s, _)| s.starts_with('2')) {
            assert_eq!(
                response["content"]["application/json"]["schema"]["$ref"], answer,
                "{op:?}: its {status} answer"
            );
        }
    }
}

/// Answers that are not a JSON value of ours: the document itself, a skill resource's bytes,
/// and the event stream (described by `constraints::sse`).
const NOT_OURS: &[(&str, &str)] = &[
    ("get", "/api/v1/openapi.json"),
    ("get", "/api/v1/skills/{name}/resources/{path}"),
    ("get", "/api/v1/events"),
];

/// Whether `schema` says nothing about its object: `{"type": "object"}` (or one with an empty
/// `properties`) and no other keyword that shapes it.
fn bare_object(schema: &serde_json::Value) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    let shaped = [
        "properties",
        "additionalProperties",
        "oneOf",
        "anyOf",
        "allOf",
        "$ref",
    ]
    .iter()
    .any(|k| match map.get(*k) {
        Some(serde_json::Value::Object(o)) => !o.is_empty() || *k == "additionalProperties",
        Some(_) => true,
        None => false,
    });
    map.get("type") == Some(&serde_json::json!("object")) && !shaped
}

/// Every bare object anywhere inside `value`, by its JSON pointer.
fn bare_objects(value: &serde_json::Value, at: String, out: &mut Vec<String>) {
    if bare_object(value) {
        out.push(at.clone());
    }
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                bare_objects(v, format!("{at}/{k}"), out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                bare_objects(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Issue 41: a client generated from the document gets a typed value back, and schemathesis's
/// response-conformance check can fail. Every success answer of every operation is a named
/// component schema, and no component a named answer reaches is a bare object.
#[test]
fn every_success_answer_is_a_named_schema() {
    let doc = document();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut named = BTreeSet::new();
    for (method, path) in ROUTES {
        if NOT_OURS.contains(&(method, path)) {
            continue;
        }
        let responses = doc["paths"][path][method]["responses"].as_object().unwrap();
        for (status, response) in responses.iter().filter(|(s, _)| s.starts_with('2')) {
            let Some(schema) = response["content"]["application/json"].get("schema") else {
                assert!(
                    response.get("content").is_none(),
                    "{method} {path} {status}: an answer that is not JSON"
                );
                continue;
            };
            let name = schema["$ref"]
                .as_str()
                .and_then(|r| r.strip_prefix("#/components/schemas/"));
            let Some(name) = name else {
                panic!("{method} {path} {status}: the answer is {schema}, not a named schema")
            };
            assert!(
                schemas.contains_key(name),
                "{method} {path} {status}: `{name}` is not a component"
            );
            named.insert(name.to_string());
        }
    }
    // Everything the named answers reach, transitively.
    let mut todo: Vec<String> = named.iter().cloned().collect();
    let mut reached = BTreeSet::new();
    while let Some(name) = todo.pop() {
        if !reached.insert(name.clone()) {
            continue;
        }
        let text = schemas[&name].to_string();
        for part in text.split("\"#/components/schemas/").skip(1) {
            let next = part.split('"').next().unwrap();
            todo.push(next.to_string());
        }
    }
    let mut bare = Vec::new();
    for name in &reached {
        bare_objects(
            &schemas[name],
            format!("#/components/schemas/{name}"),
            &mut bare,
        );
    }
    assert!(bare.is_empty(), "bare objects in the answers: {bare:?}");
    for must in [
        "OperationResult",
        "Ticket",
        "TicketSummary",
        "RelationView",
        "RoutingView",
        "IntentPacket",
        "DoctorReport",
        "Skill",
        "SkillProposal",
        "ListedFlow",
        "ClaimedWork",
        "Cost",
    ] {
        assert!(reached.contains(must), "`{must}` is not an answer's schema");
    }
}

/// PATCH takes one object whose `title` and `body` are both optional, at least one given, so a
/// generated client can send either or both; a `null` for either is malformed.
#[test]
fn the_edit_body_is_one_object_with_optional_title_and_body() {
    let doc = document();
    let edit = &doc["components"]["schemas"]["EditBody"];
    assert_eq!(edit["type"], "object");
    assert_eq!(edit["minProperties"], 1);
    assert_eq!(edit["additionalProperties"], false);
    assert!(edit.get("required").is_none(), "{edit}");
    for k in ["anyOf", "oneOf", "allOf"] {
        assert!(edit.get(k).is_none(), "{k} in {edit}");
    }
    assert_eq!(edit["properties"]["title"]["type"], "string");
    assert_eq!(edit["properties"]["body"]["type"], "string");

    let s = Server::start(Backend::Sqlite);
    let id = s
        .post("/api/v1/tickets")
        .token(&s.tokens.human)
        .json(serde_json::json!({ "title": "first" }))
        .send()
        .expect(201)["ticket"]
        .as_str()
        .unwrap()
        .to_string();
    let patch = |body: serde_json::Value| {
        s.request("PATCH", &format!("/api/v1/tickets/{id}"))
            .token(&s.tokens.human)
            .json(body)
            .send()
    };
    patch(serde_json::json!({ "title": "second", "body": "both at once" })).expect(200);
    let shown = s
        .get(&format!("/api/v1/tickets/{id}"))
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(shown["title"], "second");
    assert_eq!(shown["body"].as_str().unwrap().trim(), "both at once");
    patch(serde_json::json!({ "body": "only the body" })).expect(200);
    patch(serde_json::json!({})).expect_error(400, "invalid");
    patch(serde_json::json!({ "title": null, "body": "x" })).expect_error(400, "invalid");
}

/// Answers are closed objects, as serde writes exactly the fields the derived schema lists; only
/// a schema another one extends with `allOf` (a flattened struct) stays open.
#[test]
fn answer_objects_are_closed() {
    let doc = document();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in [
        "OperationResult",
        "Ticket",
        "TicketSummary",
        "DoctorReport",
        "ClaimedWork",
    ] {
        assert_eq!(schemas[name]["additionalProperties"], false, "{name}");
    }
    for variant in schemas["RoutingDecision"]["oneOf"].as_array().unwrap() {
        assert_eq!(variant["additionalProperties"], false, "{variant}");
    }
    assert!(
        schemas["RouterStatus"]
            .get("additionalProperties")
            .is_none(),
        "RouterView extends RouterStatus, which must stay open"
    );
}

/// An empty body means "no fields", so a body whose fields are all optional is documented as
/// optional, and the server takes a request without one.
#[test]
fn a_body_of_optional_fields_may_be_left_out() {
    let doc = document();
    let required =
        |method: &str, path: &str| doc["paths"][path][method]["requestBody"]["required"].clone();
    assert_eq!(required("post", "/api/v1/tickets/{id}/mark-ready"), false);
    assert_eq!(required("post", "/api/v1/skills/{name}/activate"), false);
    assert_eq!(required("patch", "/api/v1/tickets/{id}"), true);
    assert_eq!(required("post", "/api/v1/tickets/{id}/close"), true);

    let s = Server::start(Backend::Sqlite);
    let brief = "## Intent\nx\n\n## Acceptance criteria\n- y\n\n## Validation\n`true`\n";
    let id = s
        .post("/api/v1/tickets")
        .token(&s.tokens.human)
        .json(serde_json::json!({ "title": "t", "body": brief }))
        .send()
        .expect(201)["ticket"]
        .as_str()
        .unwrap()
        .to_string();
    let ready = s
        .post(&format!("/api/v1/tickets/{id}/mark-ready"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(ready["to"], "ready");
}

/// The live stream's events name their kind from the outbox's one list of kinds, and each kind
/// is a closed schema of its own whose payload is the type the outbox writes for it.
#[test]
fn live_event_kinds_are_the_outbox_kinds() {
    let doc = document();
    let schemas = &doc["components"]["schemas"];
    let kinds: Vec<&str> = yoi_db::OutboxKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(schemas["OutboxKind"]["enum"], serde_json::json!(kinds));
    let live = &schemas["LiveEvent"];
    assert_eq!(live["discriminator"]["propertyName"], "kind", "{live}");
    let choices = live["oneOf"].as_array().unwrap();
    assert_eq!(choices.len(), kinds.len(), "{live}");
    for kind in yoi_db::OutboxKind::ALL {
        let name = yoi_server::openapi::events::schema_name(kind);
        let reference = format!("#/components/schemas/{name}");
        assert_eq!(
            live["discriminator"]["mapping"][kind.as_str()],
            reference.as_str()
        );
        assert!(
            choices.contains(&serde_json::json!({ "$ref": reference })),
            "{name}"
        );
        let one = &schemas[&name];
        assert_eq!(one["properties"]["kind"]["const"], kind.as_str(), "{name}");
        assert_eq!(
            one["properties"]["payload"]["$ref"],
            format!("#/components/schemas/{}", kind.payload_schema()),
            "{name}"
        );
        assert_eq!(one["additionalProperties"], false, "{name}");
        assert!(schemas[kind.payload_schema()]["properties"].is_object());
    }
    let sse = &doc["paths"]["/api/v1/events"]["get"]["responses"]["200"]["content"]
        ["text/event-stream"]["schema"]["properties"]["event"];
    assert_eq!(sse["$ref"], "#/components/schemas/OutboxKind", "{sse}");
}

/// An error's code is one of the enumerated codes, each named in docs/api.md.
#[test]
fn error_codes_are_an_enumeration_the_docs_name() {
    let doc = document();
    let code = &doc["components"]["schemas"]["ErrorDetail"]["properties"]["code"];
    assert_eq!(code["enum"], serde_json::json!(yoi_server::error::CODES));
    let api_doc = include_str!("../../../docs/api.md");
    for c in yoi_server::error::CODES {
        assert!(
            api_doc.contains(&format!("`{c}`")),
            "`{c}` is not in docs/api.md"
        );
    }
}
