//! The constraints the server enforces on requests, written into the generated document: one
//! table, so a client generated from the document (or a fuzzer such as schemathesis) cannot
//! build a request the server refuses as malformed, and every request the document calls
//! malformed is refused. The route annotations give the shapes; this adds patterns, lengths,
//! enums, required fields and `additionalProperties: false`, each mirroring a rule in the code
//! it names. `.ci/run` checks the two agree with a bounded schemathesis run.

use serde_json::{json, Map, Value};
use yoi_engine::person_ops::{Needs, PersonOp};

/// Unicode White_Space, which Rust's `str::trim` removes (not JSON Schema's `\s`, which also
/// holds U+FEFF).
const WS: &str = r"\t\n\u000B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000";
/// Control characters (`char::is_control`, Unicode Cc).
const CC: &str = r"\u0000-\u001F\u007F-\u009F";

/// A ticket named by its id or a unique trailing part of at least four characters
/// (`yoi_core::id::resolve`); anything else is refused, and no ticket id holds other characters.
fn ticket_ref() -> Value {
    json!({
        "type": "string",
        "minLength": 4,
        "pattern": "^[0-9A-Za-z]+$",
        "description": "A ticket id (26 or 13 Crockford base32 characters) or a unique trailing part of one, at least 4 characters; case-insensitive. An unknown one answers 404.",
    })
}

/// A one-line text (`yoi_store::ops::one_line`): at most `max` characters as given; once
/// surrounding whitespace is trimmed, not empty and free of control characters.
fn one_line(max: usize) -> Value {
    let core = format!("[^{CC}{WS}]");
    json!({
        "type": "string",
        "maxLength": max,
        "pattern": format!("^[{WS}]*{core}([^{CC}]*{core})?[{WS}]*$"),
    })
}

/// A Markdown text: anything but NUL, up to the event body limit (`text_field`).
fn text() -> Value {
    json!({
        "type": "string",
        "pattern": "^[^\\u0000]*$",
        "description": format!("Markdown; at most {} bytes of UTF-8, no NUL.", yoi_core::thread::MAX_BODY_BYTES),
    })
}

/// A Markdown text that is not blank.
fn non_blank_text() -> Value {
    json!({
        "type": "string",
        "pattern": format!("^[^\\u0000]*[^\\u0000{WS}][^\\u0000]*$"),
        "description": format!("Markdown, not blank; at most {} bytes of UTF-8, no NUL.", yoi_core::thread::MAX_BODY_BYTES),
    })
}

fn enumeration(values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values })
}

fn nullable(mut schema: Value) -> Value {
    let t = schema["type"].clone();
    schema["type"] = json!([t, "null"]);
    schema
}

/// A ULID as yoi writes it: 26 upper-case Crockford base32 characters, the first at most `7`.
const ULID: &str = "^[0-7][0-9A-HJKMNP-TV-Z]{25}$";

/// An assignment's id: `asg-` and a ULID.
const ASSIGNMENT_ID: &str = "^asg-[0-7][0-9A-HJKMNP-TV-Z]{25}$";

/// A step's id: 1 to 64 lowercase letters, digits and `-`, starting with a letter.
const STEP_ID: &str = "^[a-z][a-z0-9-]{0,63}$";

const RELATION_KINDS: &[&str] = &[
    "depends_on",
    "blocks",
    "related",
    "supersedes",
    "duplicate_of",
];

/// Apply every constraint to the generated document.
pub fn apply(doc: &mut Value) {
    parameters(doc);
    bodies(doc);
    sse(doc);
    super::events::apply(doc);
    closed(doc);
    closed_answers(doc);
    tuples(doc);
    optional_bodies(doc);
}

/// Path, query and header parameters.
fn parameters(doc: &mut Value) {
    // Ticket references (`yoi_core::id::resolve`).
    param(
        doc,
        |p| p.starts_with("/api/v1/tickets/{id}"),
        "id",
        ticket_ref(),
    );
    param(
        doc,
        |p| p.ends_with("/relations/{kind}/{target}"),
        "target",
        ticket_ref(),
    );
    param(
        doc,
        |p| p == "/api/v1/assignments" || p == "/api/v1/events",
        "ticket",
        ticket_ref(),
    );
    param(doc, |p| p == "/api/v1/tickets", "after", ticket_ref());
    // `relation_kind` in routes/tickets.rs: spelled exactly.
    param(
        doc,
        |p| p.ends_with("/relations/{kind}/{target}"),
        "kind",
        enumeration(RELATION_KINDS),
    );
    // `states` in routes/tickets.rs.
    let state = format!("({})", STATES.join("|"));
    param(
        doc,
        |p| p == "/api/v1/tickets",
        "state",
        json!({
            "type": "string",
            "pattern": format!("^(|active|all|{state}(,{state})*)$"),
            "description": "Empty or `active` (every state but closed, the default), `all`, or a comma list of states.",
        }),
    );
    // `extract::page_size`.
    let limit = json!({ "type": "integer", "minimum": 1, "maximum": 1000, "description": "1 to 1000 (default 100)." });
    param(
        doc,
        |p| {
            p == "/api/v1/tickets"
                || p == "/api/v1/tickets/{id}"
                || p == "/api/v1/assignments"
                || p == "/api/v1/notify/log"
        },
        "limit",
        limit,
    );
    // A thread position (routes/tickets.rs `ShowParams`): a whole number, not negative.
    param(
        doc,
        |p| p == "/api/v1/tickets/{id}",
        "before",
        json!({ "type": "integer", "format": "int64", "minimum": 0, "maximum": i64::MAX, "description": "The `events_before` of the previous answer: only events at thread positions below it." }),
    );
    // The outbox position (routes/events.rs): a whole number, not negative.
    let seq = json!({ "type": "integer", "format": "int64", "minimum": 0, "maximum": i64::MAX });
    param(doc, |p| p == "/api/v1/events", "after", seq.clone());
    param(doc, |p| p == "/api/v1/events", "Last-Event-ID", seq);
    // Proposal ids (`yoi_skills::proposal::store`): 1-64 of a-z, 0-9 and `-`.
    param(
        doc,
        |p| p.starts_with("/api/v1/skills/proposals/{id}"),
        "id",
        json!({ "type": "string", "pattern": "^[a-z0-9-]{1,64}$" }),
    );
    // Workflow offer ids (`yoi_skills::offer`): `o` and 24 lowercase hex digits.
    param(
        doc,
        |p| p.starts_with("/api/v1/workflow-offers/{id}"),
        "id",
        json!({ "type": "string", "pattern": "^o[0-9a-f]{24}$" }),
    );
    // A workflow's slug (`yoi_skills::workflow`): lowercase letters and digits, single hyphens
    // inside, at most 64 characters.
    param(
        doc,
        |p| p.starts_with("/api/v1/workflows/{slug}"),
        "slug",
        json!({ "type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "maxLength": 64 }),
    );
    // A skill's resource: one path component that is not `.` or `..` (nested resources are
    // addressed with an encoded `/`, which the document does not generate).
    param(
        doc,
        |p| p.ends_with("/resources/{path}"),
        "path",
        json!({ "type": "string", "pattern": format!("^{SEGMENT}$") }),
    );
}

const STATES: &[&str] = &[
    "planning",
    "ready",
    "queued",
    "inprogress",
    "done",
    "closed",
];

/// One component of a proposed file's path (`check_file_name` in yoi-engine): 1-63
/// characters, no `/` or NUL, not `.` or `..`.
const SEGMENT: &str =
    r"([^./\u0000][^/\u0000]{0,62}|\.[^./\u0000][^/\u0000]{0,61}|\.\.[^/\u0000]{1,61})";

/// Request bodies.
fn bodies(doc: &mut Value) {
    // POST /api/v1/tickets (`ops::create`).
    prop(
        doc,
        "CreateBody",
        "title",
        one_line(yoi_store::ops::MAX_TITLE_CHARS),
    );
    prop(doc, "CreateBody", "body", text());
    prop(
        doc,
        "CreateBody",
        "depends_on",
        json!({ "type": "array", "items": ticket_ref() }),
    );
    // PATCH /api/v1/tickets/{id} (`ops::edit`): one object whose two fields are optional, at
    // least one of them given (a generated client can send either or both).
    doc["components"]["schemas"]["EditBody"] = json!({
        "type": "object",
        "description": "What to change: the title, the body, or both; at least one.",
        "properties": {
            "title": one_line(yoi_store::ops::MAX_TITLE_CHARS),
            "body": text(),
        },
        "minProperties": 1,
    });
    // Comments (`ops::comment`).
    let mut kind = enumeration(&yoi_store::ops::COMMENT_KINDS);
    kind["default"] = json!("comment");
    prop(doc, "CommentBody", "kind", kind);
    prop(doc, "CommentBody", "body", non_blank_text());
    // State operations (`ops::transition`): mark-ready and queue take nothing; reopen and
    // return-to-planning need a reason; close and cancel a resolution.
    let reason = one_line(yoi_store::ops::MAX_REASON_CHARS);
    let expected = nullable(enumeration(STATES));
    let any_text = json!({ "type": ["string", "null"] });
    prop(doc, "TransitionBody", "reason", nullable(reason.clone()));
    prop(
        doc,
        "TransitionBody",
        "resolution",
        json!({ "type": ["string", "null"], "description": "Ignored by this operation." }),
    );
    prop(doc, "TransitionBody", "expected_state", expected.clone());
    let schemas = &mut doc["components"]["schemas"];
    schemas["ReasonBody"] = object(
        [
            ("reason", reason.clone()),
            ("resolution", any_text),
            ("expected_state", expected.clone()),
        ],
        &["reason"],
    );
    schemas["ResolutionBody"] = object(
        [
            ("resolution", non_blank()),
            ("reason", nullable(reason)),
            ("expected_state", expected),
        ],
        &["resolution"],
    );
    // Which body each state operation takes comes from the engine's table of operations.
    for op in PersonOp::ALL
        .into_iter()
        .filter(|p| p.spec().transition.is_some())
    {
        let body = match op.spec().needs {
            Needs::Reason => "ReasonBody",
            Needs::Resolution => "ResolutionBody",
            Needs::Nothing | Needs::Body => continue,
        };
        let spec = op.spec();
        let content = &mut doc["paths"][format!("/api/v1{}", spec.path)]
            [spec.method.to_ascii_lowercase()]["requestBody"]["content"]["application/json"];
        content["schema"] = json!({ "$ref": format!("#/components/schemas/{body}") });
    }
    // Relations (`ops::add_relation`): the note is at most 16 KiB.
    prop(doc, "RelationBody", "kind", enumeration(RELATION_KINDS));
    prop(doc, "RelationBody", "target", ticket_ref());
    prop(
        doc,
        "RelationBody",
        "note",
        json!({ "type": ["string", "null"], "description": "At most 16384 bytes; blank means none." }),
    );
    // Plan records (`ops::add_plan_record`): `related` for every kind but waiting_capacity,
    // which needs a note instead; accepted plans are the router's (422).
    let note = json!({ "type": ["string", "null"], "pattern": "^[^\\u0000]*$", "description": "At most 16384 bytes, no NUL." });
    let ordering: Vec<&str> = PLAN_KINDS
        .iter()
        .copied()
        .filter(|k| *k != "waiting_capacity")
        .collect();
    doc["components"]["schemas"]["PlanBody"] = json!({
        "oneOf": [
            object([("kind", enumeration(&ordering)), ("related", ticket_ref()), ("note", note.clone())], &["kind", "related"]),
            object([
                ("kind", enumeration(&["waiting_capacity"])),
                ("note", json!({ "type": "string", "pattern": format!("^[^\\u0000]*[^\\u0000{WS}][^\\u0000]*$"), "description": "Why it waits; at most 16384 bytes, no NUL." })),
                ("related", nullable(ticket_ref())),
            ], &["kind", "note"]),
        ],
    });
    // Retry (`ops::retry`).
    prop(doc, "RetryBody", "reason", nullable(text()));
    // The IntentPacket (routes/packet.rs).
    let field = json!({ "type": "string", "pattern": "^[^\\u0000]*$" });
    let list = json!({ "type": "array", "items": field.clone() });
    let packet = object(
        [
            ("intent", field.clone()),
            ("implementation_latitude", field),
            ("binding_decisions", list.clone()),
            ("acceptance_criteria", list.clone()),
            ("escalate_if", list.clone()),
            ("validation", list.clone()),
            ("code_map", list.clone()),
            ("critical_risks", list.clone()),
            ("write_scope", list),
        ],
        &[],
    );
    doc["paths"]["/api/v1/tickets/{id}/packet"]["put"]["requestBody"]["content"]
        ["application/json"]["schema"] = packet;
    // Skills (yoi-engine `skills`).
    prop(doc, "ActivateBody", "ticket", nullable(ticket_ref()));
    prop(
        doc,
        "ProposeBody",
        "name",
        json!({ "type": "string", "maxLength": 64, "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$" }),
    );
    prop(
        doc,
        "ProposeBody",
        "files",
        json!({
            "type": "object",
            "description": "Each file's text by its path inside the skill folder; `SKILL.md` is required. At most 1000 files, 16 levels deep.",
            "required": ["SKILL.md"],
            "maxProperties": 1000,
            "propertyNames": { "pattern": format!("^{SEGMENT}(/{SEGMENT}){{0,15}}$") },
            "additionalProperties": { "type": "string" },
        }),
    );
    prop(doc, "RejectBody", "reason", non_blank());
    // Every rule a refusal can name (`error::details::RULES`).
    prop(
        doc,
        "RuleDetails",
        "reason",
        enumeration(crate::error::details::RULES),
    );
    // Answers' fixed vocabularies kept as strings in their types: what an operation was
    // (`yoi_store::ops::OPERATIONS`), which way a relation points (`query::relation_view`), what
    // the router would decide (`RoutingDecision::KINDS`).
    prop(
        doc,
        "OperationResult",
        "operation",
        enumeration(&yoi_store::ops::OPERATIONS),
    );
    // The id of the event an operation wrote: a ULID (`ops::new_ulid`).
    prop(
        doc,
        "OperationResult",
        "event_id",
        json!({ "type": "string", "pattern": ULID, "description": "Id of the thread event that records it, a ULID (absent for plan records)." }),
    );
    prop(
        doc,
        "RelationEntry",
        "direction",
        enumeration(&["outgoing", "incoming"]),
    );
    prop(
        doc,
        "WouldDecide",
        "kind",
        enumeration(&yoi_core::decision::RoutingDecision::KINDS),
    );
    // Assignment ids (`asg-` and a ULID: `yoi_engine::assignments::new_id`, the accept saga)
    // and step ids (a flow's, `yoi_core::flow::valid_name`, or a service step's) in answers.
    let assignment = json!({ "type": "string", "pattern": ASSIGNMENT_ID });
    let step = json!({ "type": "string", "pattern": STEP_ID });
    for (component, field) in [
        ("Assignment", "id"),
        ("AttemptDetail", "assignment"),
        ("CompletedAttempt", "assignment"),
        ("CostLine", "assignment"),
        ("StaleFenceDetails", "assignment"),
    ] {
        prop(doc, component, field, assignment.clone());
    }
    prop(doc, "PodRow", "assignment", nullable(assignment));
    for (component, field) in [
        ("Assignment", "step"),
        ("AttemptDetail", "step"),
        ("CostLine", "step"),
        ("Step", "id"),
    ] {
        prop(doc, component, field, step.clone());
    }
    prop(
        doc,
        "RunningFlow",
        "steps",
        json!({ "type": "array", "items": step }),
    );
    // Every error code an answer can carry (`error::CODES`).
    prop(
        doc,
        "ErrorDetail",
        "code",
        json!({
            "type": "string",
            "enum": crate::error::CODES,
            "description": "Stable machine-readable code; the status table of docs/api.md says when each is answered.",
        }),
    );
}

const PLAN_KINDS: &[&str] = &[
    "before",
    "after",
    "blocked_by",
    "blocks",
    "conflicts_with",
    "do_not_parallelize",
    "waiting_capacity",
];

/// Any text with something other than whitespace in it.
fn non_blank() -> Value {
    json!({ "type": "string", "pattern": format!("[^{WS}]") })
}

/// `GET /api/v1/events` streams server-sent events: each is an object of `id` (the outbox
/// seq), `event` (its kind) and `data`, a JSON-encoded LiveEvent — not a LiveEvent itself.
fn sse(doc: &mut Value) {
    let content = &mut doc["paths"]["/api/v1/events"]["get"]["responses"]["200"]["content"];
    if content.get("text/event-stream").is_some() {
        content["text/event-stream"]["schema"] = json!({
            "type": "object",
            "required": ["id", "event", "data"],
            "properties": {
                "id": { "type": "string", "pattern": "^[0-9]+$", "description": "The outbox seq; send it back as `Last-Event-ID` to resume." },
                "event": { "$ref": "#/components/schemas/OutboxKind", "description": "The event's kind, e.g. `ticket_queued`." },
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": { "$ref": "#/components/schemas/LiveEvent" },
                },
            },
        });
    }
}

/// Set the schema of parameter `name` in every operation of the paths `which` selects.
fn param(doc: &mut Value, which: impl Fn(&str) -> bool, name: &str, schema: Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        if !which(path) {
            continue;
        }
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for op in item.values_mut() {
            let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) else {
                continue;
            };
            for p in params.iter_mut().filter(|p| p["name"] == name) {
                p["schema"] = schema.clone();
            }
        }
    }
}

/// Set property `prop` of component schema `component`.
fn prop(doc: &mut Value, component: &str, prop: &str, schema: Value) {
    if let Some(props) = doc["components"]["schemas"][component]["properties"].as_object_mut() {
        props.insert(prop.to_string(), schema);
    }
}

/// Every request body object refuses unknown fields (they all use `deny_unknown_fields`).
fn closed(doc: &mut Value) {
    let Some(schemas) = doc["components"]["schemas"].as_object_mut() else {
        return;
    };
    for (name, schema) in schemas.iter_mut() {
        if name.ends_with("Body") && schema["type"] == "object" {
            schema["additionalProperties"] = Value::Bool(false);
        }
    }
}

/// Every answer object is closed too: its schema is derived from the struct serde writes, which
/// writes exactly the fields listed, so a field the document does not name is drift that
/// schemathesis's response-conformance check reports. A schema that another one extends with
/// `allOf` (a `#[serde(flatten)]`ed struct, such as the router's status) stays open, as the
/// extension's fields would be extra to it.
fn closed_answers(doc: &mut Value) {
    let extended: Vec<String> = doc["components"]["schemas"]
        .as_object()
        .into_iter()
        .flat_map(|schemas| schemas.values())
        .filter_map(|schema| schema["allOf"].as_array())
        .flatten()
        .filter_map(|part| part["$ref"].as_str())
        .filter_map(|r| r.strip_prefix("#/components/schemas/"))
        .map(str::to_string)
        .collect();
    let Some(schemas) = doc["components"]["schemas"].as_object_mut() else {
        return;
    };
    for (name, schema) in schemas.iter_mut() {
        if !extended.contains(name) {
            close(schema);
        }
    }
}

/// Close an object schema that lists its properties, and each object a `oneOf` or `anyOf` of
/// it chooses from (the variants of a tagged enum).
fn close(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if map.get("type") == Some(&json!("object"))
        && map.contains_key("properties")
        && !map.contains_key("additionalProperties")
    {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(variants) = map.get_mut(key).and_then(Value::as_array_mut) {
            variants.iter_mut().for_each(close);
        }
    }
}

/// A Rust tuple is a JSON array of fixed length; utoipa says so with `prefixItems` and
/// `"items": false`, which generators such as openapi-python-client cannot read. The same
/// array is `prefixItems` with `minItems` and `maxItems` equal to its length.
fn tuples(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("items") == Some(&Value::Bool(false)) {
                if let Some(n) = map
                    .get("prefixItems")
                    .and_then(Value::as_array)
                    .map(Vec::len)
                {
                    map.remove("items");
                    map.insert("minItems".into(), json!(n));
                    map.insert("maxItems".into(), json!(n));
                }
            }
            map.values_mut().for_each(tuples);
        }
        Value::Array(items) => items.iter_mut().for_each(tuples),
        _ => {}
    }
}

/// An empty request body means "no fields" (`extract::Body`), so a body whose fields are all
/// optional may be left out: the document says `required: false` for it, and a client (or
/// schemathesis) sending none is not sending malformed data.
fn optional_bodies(doc: &mut Value) {
    let schemas = doc["components"]["schemas"].clone();
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for op in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
    {
        let Some(body) = op.get_mut("requestBody") else {
            continue;
        };
        let schema = &body["content"]["application/json"]["schema"];
        let schema = match schema["$ref"].as_str() {
            Some(r) => &schemas[r.trim_start_matches("#/components/schemas/")],
            None => schema,
        };
        let none_required = schema["required"].as_array().is_none_or(Vec::is_empty);
        if schema["type"] == "object" && none_required && schema.get("minProperties").is_none() {
            body["required"] = Value::Bool(false);
        }
    }
}

/// A closed object schema.
fn object<const N: usize>(props: [(&str, Value); N], required: &[&str]) -> Value {
    let props: Map<String, Value> = props.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    json!({ "type": "object", "properties": props, "required": required, "additionalProperties": false })
}
