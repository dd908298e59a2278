//! `POST /mcp`: yoi's tickets as Model Context Protocol tools, over the protocol's streamable
//! HTTP transport (revision 2025-06-18), answered as `application/json` (docs/mcp.md).
//!
//! A hand-written JSON-RPC 2.0 layer: the server needs five methods, no sessions and no
//! server-initiated messages, so an SDK would add a large dependency tree for little. The bearer
//! token picks the tools: a person's token gets the planning tools, an agent's claim token
//! (`yoia_…`) gets the tools of its one attempt. Every tool runs the same store or engine
//! operation the REST route runs, so scoping and refusals are the API's; a tool's failure is a
//! result with `isError: true` and the reason, and nothing is written.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use yoi_core::Principal;
use yoi_db::ticket_answers::Made;
use yoi_db::Scope;
use yoi_engine::person_ops::PersonOp;
use yoi_engine::skills as glue;
use yoi_store::ops::{self, CommentRequest, CreateRequest, EditRequest, RelationRequest};
use yoi_store::query::ListFilter;
use yoi_store::Outcome;

use crate::auth::{now, Authed, Caller, ReadTickets, ScopeClass};
use crate::error::ApiError;
use crate::state::AppState;

/// The revision this server speaks, newest first; `initialize` answers the client's when it is
/// one of these, else the first.
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// Who is asking, as far as the tools care.
enum Audience {
    /// A token of a person or another service: the planning tools its scope allows.
    Person(ScopeClass),
    /// An agent's claim token: the tools of its own attempt.
    Agent(String),
}

fn audience(c: &Caller) -> Audience {
    match &c.token.scope {
        Scope::Agent(id) => Audience::Agent(id.clone()),
        _ => Audience::Person(c.class()),
    }
}

/// One tool: its name, description and input schema; `op` is the person operation whose scope
/// table decides who sees it (`None`: reading, open to every token).
struct Tool {
    name: &'static str,
    description: &'static str,
    op: Option<PersonOp>,
    schema: fn() -> Value,
}

fn obj(props: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": props, "required": required, "additionalProperties": false })
}

const PERSON_TOOLS: &[Tool] = &[
    Tool {
        name: "list_tickets",
        description: "List tickets (id, state, title, open blockers). Active ones unless state is given.",
        op: None,
        schema: || {
            obj(
                json!({
                    "search": {"type": "string", "description": "words that must all appear"},
                    "state": {"type": "string", "description": "active, all, or comma list of states"},
                    "ready": {"type": "boolean"},
                    "blocked": {"type": "boolean"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 200}
                }),
                &[],
            )
        },
    },
    Tool {
        name: "show_ticket",
        description: "One ticket: state, brief, blockers, latest attempt, open inbox entries. thread=true adds the thread.",
        op: None,
        schema: || {
            obj(
                json!({"id": {"type": "string"}, "thread": {"type": "boolean"}}),
                &["id"],
            )
        },
    },
    Tool {
        name: "create_ticket",
        description: "Create a ticket in planning; body is its brief (Markdown).",
        op: Some(PersonOp::Create),
        schema: || {
            obj(
                json!({
                    "title": {"type": "string"},
                    "body": {"type": "string"},
                    "depends_on": {"type": "array", "items": {"type": "string"}}
                }),
                &["title"],
            )
        },
    },
    Tool {
        name: "edit_ticket",
        description: "Replace a ticket's title and/or body (brief).",
        op: Some(PersonOp::Edit),
        schema: || {
            obj(
                json!({"id": {"type": "string"}, "title": {"type": "string"}, "body": {"type": "string"}}),
                &["id"],
            )
        },
    },
    Tool {
        name: "add_relation",
        description: "Relate ticket id to target.",
        op: Some(PersonOp::AddRelation),
        schema: || {
            obj(
                json!({
                    "id": {"type": "string"},
                    "kind": {"enum": ["depends_on", "blocks", "related", "supersedes", "duplicate_of"]},
                    "target": {"type": "string"},
                    "note": {"type": "string"}
                }),
                &["id", "kind", "target"],
            )
        },
    },
    Tool {
        name: "comment",
        description: "Add a comment to a ticket's thread.",
        op: Some(PersonOp::Comment),
        schema: || {
            obj(
                json!({"id": {"type": "string"}, "body": {"type": "string"}}),
                &["id", "body"],
            )
        },
    },
    Tool {
        name: "mark_ready",
        description: "Mark a planning ticket ready (its brief must be complete). Queueing stays with people.",
        op: Some(PersonOp::MarkReady),
        schema: || obj(json!({"id": {"type": "string"}}), &["id"]),
    },
    Tool {
        name: "inbox",
        description: "Open inbox entries: what waits on a person.",
        op: None,
        schema: || obj(json!({}), &[]),
    },
];

const AGENT_TOOLS: &[Tool] = &[
    Tool {
        name: "my_ticket",
        description: "Your ticket: state, brief, blockers, your attempt. thread=true adds the thread.",
        op: None,
        schema: || obj(json!({"thread": {"type": "boolean"}}), &[]),
    },
    Tool {
        name: "read_packet",
        description: "Your ticket's frozen IntentPacket (JSON).",
        op: None,
        schema: || obj(json!({}), &[]),
    },
    Tool {
        name: "post_note",
        description: "Post a progress note to your ticket's thread.",
        op: None,
        schema: || obj(json!({"body": {"type": "string"}}), &["body"]),
    },
    Tool {
        name: "ask_question",
        description: "Ask a person (opens an inbox entry). Then end your attempt blocked and wait for the answer.",
        op: None,
        schema: || {
            obj(
                json!({"questions": {"type": "array", "items": {"type": "string"}, "minItems": 1}}),
                &["questions"],
            )
        },
    },
    Tool {
        name: "propose_ticket",
        description: "Propose a follow-up ticket (created in planning; a person decides).",
        op: None,
        schema: || {
            obj(
                json!({"title": {"type": "string"}, "body": {"type": "string"}}),
                &["title"],
            )
        },
    },
    Tool {
        name: "activate_skill",
        description: "Activate a skill for your attempt; returns its instructions.",
        op: None,
        schema: || obj(json!({"name": {"type": "string"}}), &["name"]),
    },
];

/// The tools this audience may see and call.
fn tools_for(a: &Audience) -> Vec<&'static Tool> {
    match a {
        Audience::Agent(_) => AGENT_TOOLS.iter().collect(),
        Audience::Person(class) => PERSON_TOOLS
            .iter()
            .filter(|t| t.op.is_none_or(|op| op.spec().who.contains(class)))
            .collect(),
    }
}

/// The `tools/list` result for this audience.
fn list_result(a: &Audience) -> Value {
    let tools: Vec<Value> = tools_for(a)
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": (t.schema)()}))
        .collect();
    json!({ "tools": tools })
}

/// A JSON-RPC answer (HTTP 200) or a refusal of the request as a whole (HTTP 400).
fn rpc(status: StatusCode, body: Value) -> Response {
    let mut resp = (status, axum::Json(body)).into_response();
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    resp
}

fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

fn success(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// `POST /mcp`: one JSON-RPC message (batches were removed in 2025-06-18).
pub async fn post(
    State(s): State<AppState>,
    Authed(c, ..): Authed<ReadTickets>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(v) = headers.get("mcp-protocol-version") {
        let v = v.to_str().unwrap_or("");
        if !PROTOCOL_VERSIONS.contains(&v) {
            return rpc(
                StatusCode::BAD_REQUEST,
                error(
                    Value::Null,
                    INVALID_REQUEST,
                    format!(
                        "unsupported MCP-Protocol-Version `{v}` (this server speaks {})",
                        PROTOCOL_VERSIONS.join(", ")
                    ),
                ),
            );
        }
    }
    let msg: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return rpc(
                StatusCode::BAD_REQUEST,
                error(Value::Null, PARSE_ERROR, format!("parse error: {e}")),
            )
        }
    };
    let Value::Object(msg) = msg else {
        return rpc(
            StatusCode::BAD_REQUEST,
            error(
                Value::Null,
                INVALID_REQUEST,
                "a message must be one JSON-RPC object (batches are not part of 2025-06-18)",
            ),
        );
    };
    let id = msg.get("id").cloned();
    if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return rpc(
            StatusCode::BAD_REQUEST,
            error(
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                "`jsonrpc` must be \"2.0\"",
            ),
        );
    }
    let Some(method) = msg.get("method").and_then(Value::as_str) else {
        if id.is_some() && (msg.contains_key("result") || msg.contains_key("error")) {
            // A client's response to a request this server never sends: accepted, ignored.
            return StatusCode::ACCEPTED.into_response();
        }
        return rpc(
            StatusCode::BAD_REQUEST,
            error(
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                "a request needs a string `method`",
            ),
        );
    };
    let Some(id) = id else {
        // A notification (`notifications/initialized`, `notifications/cancelled`, …): no answer.
        return StatusCode::ACCEPTED.into_response();
    };
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        return rpc(
            StatusCode::BAD_REQUEST,
            error(
                Value::Null,
                INVALID_REQUEST,
                "`id` must be a string or an integer",
            ),
        );
    }
    let params = match msg.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            return rpc(
                StatusCode::OK,
                error(id, INVALID_PARAMS, "`params` must be an object"),
            )
        }
    };
    let who = audience(&c);
    let answer = match method {
        "initialize" => {
            let asked = params.get("protocolVersion").and_then(Value::as_str);
            let version = asked
                .filter(|v| PROTOCOL_VERSIONS.contains(v))
                .unwrap_or(PROTOCOL_VERSIONS[0]);
            success(
                id,
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}, "resources": {}},
                    "serverInfo": {"name": "yoi", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": match who {
                        Audience::Agent(_) => "Tools of your yoi attempt: read your ticket, note progress, ask a person, propose follow-ups.",
                        Audience::Person(_) => "yoi tickets: list, show, plan. Queueing and answering stay with people, in yoi itself.",
                    }
                }),
            )
        }
        "ping" => success(id, json!({})),
        "resources/list" => {
            let person = matches!(who, Audience::Person(_));
            let resources = match s
                .blocking("catalog", move |ws| skill_resources(ws, person))
                .await
            {
                Ok(r) => r,
                Err(e) => return rpc(StatusCode::OK, error(id, -32603, e.message)),
            };
            success(id, json!({ "resources": resources }))
        }
        "resources/read" => {
            let uri = params
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let Some((name, path)) = uri
                .strip_prefix("skill://")
                .and_then(|rest| rest.split_once('/'))
                .map(|(n, p)| (n.to_string(), p.to_string()))
            else {
                return rpc(
                    StatusCode::OK,
                    error(
                        id,
                        INVALID_PARAMS,
                        format!("`{uri}` is not a skill resource (skill://NAME/PATH)"),
                    ),
                );
            };
            let read = s
                .blocking("resource", move |ws| glue::resource(ws, &name, &path))
                .await;
            match read {
                Ok(Ok(r)) => match String::from_utf8(r.bytes) {
                    Ok(text) => success(
                        id,
                        json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}),
                    ),
                    Err(_) => error(
                        id,
                        INVALID_PARAMS,
                        format!(
                            "`{uri}` is not text; read it with GET /api/v1/skills/…/resources/…"
                        ),
                    ),
                },
                // The specification's "resource not found".
                Ok(Err(e)) => error(id, -32002, ApiError::from(e).message),
                Err(e) => error(id, -32603, e.message),
            }
        }
        "tools/list" => success(id, list_result(&who)),
        "tools/call" => {
            let Some(name) = params.get("name").and_then(Value::as_str) else {
                return rpc(
                    StatusCode::OK,
                    error(id, INVALID_PARAMS, "tools/call needs a string `name`"),
                );
            };
            let args = match params.get("arguments") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(m)) => m.clone(),
                Some(_) => {
                    return rpc(
                        StatusCode::OK,
                        error(id, INVALID_PARAMS, "`arguments` must be an object"),
                    )
                }
            };
            let Some(tool) = tools_for(&who).into_iter().find(|t| t.name == name) else {
                return rpc(
                    StatusCode::OK,
                    error(
                        id,
                        INVALID_PARAMS,
                        format!("unknown tool `{name}` (tools/list names the tools this token may call)"),
                    ),
                );
            };
            let result = match check_args(tool, &args) {
                Err(why) => Err(why),
                Ok(()) => match &who {
                    // Reads answer the same to every person: kept as the REST reads are, while
                    // nothing they read changed (`crate::fresh`).
                    Audience::Person(_) if tool.name == "show_ticket" => {
                        let key = format!("mcp/{}/{}", tool.name, Value::Object(args.clone()));
                        let id = text(&args, "id").unwrap_or_default();
                        kept(&s, &c, key, show(&s, &id, flag(&args, "thread"), None)).await
                    }
                    Audience::Person(_) if tool.name == "list_tickets" => {
                        let key = format!("mcp/{}/{}", tool.name, Value::Object(args.clone()));
                        let list = async {
                            let text = person_call(&s, &c, tool.name, &args).await?;
                            Ok((text, Made::AnyTicket))
                        };
                        kept(&s, &c, key, list).await
                    }
                    Audience::Person(_) => person_call(&s, &c, tool.name, &args).await,
                    Audience::Agent(own) => agent_call(&s, &c, own, tool.name, &args).await,
                },
            };
            let (text, is_error) = match result {
                Ok(text) => (text, false),
                Err(why) => (why, true),
            };
            success(
                id,
                json!({"content": [{"type": "text", "text": text}], "isError": is_error}),
            )
        }
        other => error(id, METHOD_NOT_FOUND, format!("unknown method `{other}`")),
    };
    rpc(StatusCode::OK, answer)
}

/// The files of each skill this caller may see, as `skill://NAME/PATH` resources (agents do not
/// see skills that keep themselves out of agents' catalogs, as `GET /skills` does not show them).
fn skill_resources(ws: &yoi_store::Workspace, person: bool) -> Vec<Value> {
    let catalog = glue::load_catalog(ws);
    let mut out = Vec::new();
    for e in catalog.skills() {
        if !person && e.meta().disable_model_invocation {
            continue;
        }
        let name = e.summary().name;
        let files = yoi_engine::skill_format::listing::list_files(e, 50)
            .map(|l| l.files)
            .unwrap_or_default();
        for f in std::iter::once("SKILL.md".to_string()).chain(files) {
            out.push(json!({"uri": format!("skill://{name}/{f}"), "name": format!("{name}/{f}")}));
        }
    }
    out
}

/// A read tool's answer through the server's kept answers; failures are never kept.
async fn kept(
    s: &AppState,
    c: &Caller,
    key: String,
    read: impl std::future::Future<Output = Result<(String, Made), String>>,
) -> Result<String, String> {
    let answer = crate::fresh::answer_about_tickets(s, c.view, key, || async move {
        match read.await {
            Ok((text, made)) => Ok((crate::fresh::JsonBytes::of(&text)?, made)),
            Err(why) => Err(ApiError::bad_request(why)),
        }
    })
    .await;
    match answer {
        Ok(bytes) => serde_json::from_slice(&bytes.0).map_err(|e| format!("internal: {e}")),
        Err(e) => Err(e.message),
    }
}

/// Arguments against the tool's schema: known names, required ones present, simple types.
fn check_args(tool: &Tool, args: &Map<String, Value>) -> Result<(), String> {
    let schema = (tool.schema)();
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (k, v) in args {
        let Some(p) = props.get(k) else {
            let known: Vec<&String> = props.keys().collect();
            return Err(format!(
                "invalid arguments: unknown argument `{k}` (expected {known:?})"
            ));
        };
        let ok = match p["type"].as_str() {
            Some("string") => v.is_string(),
            Some("boolean") => v.is_boolean(),
            Some("integer") => v.is_u64(),
            Some("array") => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            _ => p["enum"]
                .as_array()
                .is_none_or(|e| e.iter().any(|x| x == v)),
        };
        if !ok {
            let want = p["type"].as_str().unwrap_or("one of the listed values");
            return Err(format!("invalid arguments: `{k}` must be {want}"));
        }
    }
    for r in schema["required"].as_array().into_iter().flatten() {
        let r = r.as_str().unwrap_or_default();
        if !args.contains_key(r) {
            return Err(format!("invalid arguments: `{r}` is required"));
        }
    }
    Ok(())
}

fn text(args: &Map<String, Value>, k: &str) -> Option<String> {
    args.get(k).and_then(Value::as_str).map(str::to_string)
}

fn flag(args: &Map<String, Value>, k: &str) -> bool {
    args.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn refused(e: ApiError) -> String {
    format!("{}: {}", e.code, e.message)
}

fn done(o: &Outcome) -> String {
    let mut s = format!("{} {}", o.operation, o.ticket);
    if let (Some(from), Some(to)) = (o.from, o.to) {
        s.push_str(&format!(" ({from} -> {to})"));
    }
    if let Some(e) = &o.event_id {
        s.push_str(&format!(", event {e}"));
    }
    s
}

async fn person_call(
    s: &AppState,
    c: &Caller,
    tool: &str,
    args: &Map<String, Value>,
) -> Result<String, String> {
    let ctx = c.ctx(None);
    let id = text(args, "id").unwrap_or_default();
    match tool {
        "list_tickets" => {
            let states = match text(args, "state") {
                None => None,
                Some(spec) => yoi_store::query::parse_state_filter(Some(&spec))
                    .map_err(|e| format!("invalid arguments: {e}"))?,
            };
            let filter = ListFilter {
                states,
                ready: flag(args, "ready"),
                blocked: flag(args, "blocked"),
            };
            let words: Vec<String> = text(args, "search")
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect();
            let limit = args
                .get("limit")
                .and_then(Value::as_u64)
                .unwrap_or(50)
                .clamp(1, 200) as usize;
            let page = s
                .db()
                .list(&filter, &words, None, limit)
                .await
                .map_err(|e| refused(e.into()))?;
            let mut out = format!("{} ticket(s)", page.tickets.len());
            if page.next.is_some() {
                out.push_str(" (more: raise limit or narrow the search)");
            }
            for t in &page.tickets {
                out.push_str(&format!("\n{} [{}] {}", t.id, t.state, t.title));
                if !t.blockers.is_empty() {
                    let b: Vec<String> = t.blockers.iter().map(|b| b.ticket.to_string()).collect();
                    out.push_str(&format!(" (blocked by {})", b.join(", ")));
                }
            }
            Ok(out)
        }
        "show_ticket" => show(s, &id, flag(args, "thread"), None)
            .await
            .map(|(t, _)| t),
        "inbox" => {
            let inbox = s
                .read_indexed(yoi_engine::inbox::inbox)
                .await
                .map_err(refused)?;
            let mut out = format!("{} open entr(ies)", inbox.count);
            for e in &inbox.entries {
                out.push_str(&format!(
                    "\n- {} {:?}: {} (resolve: {})",
                    e.ticket.as_deref().unwrap_or("-"),
                    e.reason,
                    e.title,
                    e.command
                ));
            }
            Ok(out)
        }
        "create_ticket" => {
            let req = CreateRequest {
                title: text(args, "title").unwrap_or_default(),
                body: text(args, "body").unwrap_or_default(),
                depends_on: strings(args, "depends_on"),
            };
            let o = s
                .op(move |ws| ops::create(ws, &ctx, &req))
                .await
                .map_err(refused)?;
            Ok(format!("created {} (planning)", o.ticket))
        }
        "edit_ticket" => {
            let req = EditRequest {
                title: text(args, "title"),
                body: text(args, "body"),
            };
            s.op(move |ws| ops::edit(ws, &ctx, &id, &req))
                .await
                .map(|o| done(&o))
                .map_err(refused)
        }
        "add_relation" => {
            let kind = text(args, "kind").unwrap_or_default();
            let kind = yoi_core::relation::RelationKind::ALL
                .into_iter()
                .find(|k| k.as_str() == kind)
                .ok_or_else(|| format!("invalid arguments: `{kind}` is not a relation kind"))?;
            let req = RelationRequest {
                kind,
                target: text(args, "target").unwrap_or_default(),
                note: text(args, "note"),
            };
            s.op(move |ws| ops::add_relation(ws, &ctx, &id, &req))
                .await
                .map(|o| done(&o))
                .map_err(refused)
        }
        "comment" => {
            let body = text(args, "body").unwrap_or_default();
            // A `/slug` comment invokes a workflow in yoi (docs/workflows.md): that starts
            // work, which stays with people acting in yoi itself.
            if body.trim_start().starts_with('/') {
                return Err(
                    "refused: a comment starting with `/` invokes a workflow, which a person does in yoi itself (dashboard or CLI), not through MCP".into(),
                );
            }
            let req = CommentRequest {
                kind: "comment".into(),
                body,
            };
            s.grouped(move |ws| ops::comment(ws, &ctx, &id, &req))
                .await
                .map(|o| done(&o))
                .map_err(refused)
        }
        "mark_ready" => {
            let req = ops::TransitionRequest::default();
            s.op(move |ws| ops::mark_ready(ws, &ctx, &id, &req))
                .await
                .map(|o| done(&o))
                .map_err(refused)
        }
        _ => Err(format!("unknown tool `{tool}`")),
    }
}

fn strings(args: &Map<String, Value>, k: &str) -> Vec<String> {
    args.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// A ticket as short text: state, blockers, latest attempt, open inbox entries, the brief;
/// the thread only when asked. `attempt` marks the caller's own attempt. With it, what the text
/// was made from: the ticket's own rows (its inbox entries come from them) and the other ends
/// of its relations, as for the REST answer.
async fn show(
    s: &AppState,
    id: &str,
    thread: bool,
    attempt: Option<&str>,
) -> Result<(String, Made), String> {
    let q = id.to_string();
    // One blocking read: the detail and this ticket's own inbox entries (not the whole inbox).
    let (d, entries) = s
        .read_indexed(move |ws, index| {
            let d = yoi_db::ticket_detail::ticket_detail(ws, Some(index), &q)?;
            let entries = yoi_engine::inbox::of_ticket(index, &d.id)?;
            Ok((d, entries))
        })
        .await
        .map_err(refused)?;
    let mut out = format!("{} [{}] {}", d.id, d.state, d.title);
    if !d.relations.blockers.is_empty() {
        let b: Vec<String> = d
            .relations
            .blockers
            .iter()
            .map(|b| b.ticket.to_string())
            .collect();
        out.push_str(&format!("\nblocked by: {}", b.join(", ")));
    }
    for r in &d.relations.relations {
        out.push_str(&format!("\nrelation: {} {}", r.name, r.other));
    }
    if !d.missing_brief_sections.is_empty() {
        out.push_str(&format!(
            "\nbrief is missing: {}",
            d.missing_brief_sections.join(", ")
        ));
    }
    let latest = attempt
        .and_then(|own| d.attempts.iter().find(|a| a.assignment == own))
        .or(d.attempts.last());
    if let Some(a) = latest {
        out.push_str(&format!(
            "\nlatest attempt: {} step {} attempt {} ({:?}){}",
            a.assignment,
            a.step,
            a.attempt,
            a.status,
            a.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ));
    }
    for e in &entries {
        out.push_str(&format!(
            "\ninbox: {:?}: {} (resolve: {})",
            e.reason, e.detail, e.command
        ));
    }
    out.push_str("\n\n");
    out.push_str(d.body.trim());
    if thread {
        out.push_str("\n\nthread:");
        for e in &d.events {
            let v = serde_json::to_value(e).unwrap_or_default();
            out.push_str(&format!(
                "\n- {} {} {}: {}",
                v["at"].as_str().unwrap_or(""),
                v["kind"].as_str().unwrap_or(""),
                v["author"].as_str().unwrap_or(""),
                v["body"].as_str().unwrap_or("").trim()
            ));
        }
    }
    Ok((out, crate::routes::tickets::made_from(id, &d)))
}

async fn agent_call(
    s: &AppState,
    c: &Caller,
    own: &str,
    tool: &str,
    args: &Map<String, Value>,
) -> Result<String, String> {
    // The claim was live when the token was checked; read its row for the ticket and step.
    let (index, key) = (s.index.clone(), own.to_string());
    let a = tokio::task::spawn_blocking(move || index.assignment(&key))
        .await
        .map_err(|e| format!("internal: {e}"))?
        .map_err(|e| format!("internal: {e}"))?
        .ok_or_else(|| format!("refused: assignment {own} is gone"))?;
    let ticket = a.ticket.clone();
    match tool {
        "my_ticket" => show(s, &ticket, flag(args, "thread"), Some(own))
            .await
            .map(|(t, _)| t),
        "read_packet" => {
            let t = ticket.clone();
            let frozen = s
                .read(move |ws| {
                    let id = ws.resolve(&t)?;
                    ws.read_frozen_packet(&id)
                })
                .await
                .map_err(refused)?;
            match frozen {
                Some(p) => serde_json::to_string(&p).map_err(|e| format!("internal: {e}")),
                None => Err(format!("{ticket} has no frozen packet yet")),
            }
        }
        "post_note" => {
            let ctx = c.ctx(None);
            let req = CommentRequest {
                kind: "comment".into(),
                body: text(args, "body").unwrap_or_default(),
            };
            s.grouped(move |ws| ops::comment(ws, &ctx, &ticket, &req))
                .await
                .map(|o| done(&o))
                .map_err(refused)
        }
        "ask_question" => {
            // Recorded as the orchestrator records `YOI-QUESTION:` lines: one `question` event
            // naming the attempt, which the inbox shows as `agent_question`.
            let questions = strings(args, "questions");
            let attrs: Vec<(&str, String)> = vec![
                ("assignment", a.id.clone()),
                ("step", a.step.clone()),
                ("role", a.role.clone()),
                ("attempt", a.attempt.to_string()),
            ];
            let ctx = yoi_store::Ctx::new(Principal::orchestrator(), now());
            s.op(move |ws| ops::ask(ws, &ctx, &ticket, &attrs, &questions))
                .await
                .map(|o| {
                    format!(
                        "{}; end your attempt blocked to wait for the answer",
                        done(&o)
                    )
                })
                .map_err(refused)
        }
        "propose_ticket" => {
            let ctx = c.ctx(None);
            let mut body = text(args, "body").unwrap_or_default();
            body.push_str(&format!(
                "\n\n_Proposed by attempt {} of step `{}` of {ticket} (assignment {})._\n",
                a.attempt, a.step, a.id
            ));
            let req = CreateRequest {
                title: text(args, "title").unwrap_or_default(),
                body,
                depends_on: Vec::new(),
            };
            let o = s
                .op(move |ws| ops::create(ws, &ctx, &req))
                .await
                .map_err(refused)?;
            Ok(format!(
                "proposed {} (planning; a person decides whether it runs)",
                o.ticket
            ))
        }
        "activate_skill" => {
            let name = text(args, "name").unwrap_or_default();
            let (st, who, own) = (s.clone(), c.principal.author(), own.to_string());
            let act = tokio::task::spawn_blocking(move || {
                glue::activate_for_agent(&st.ws, &st.index, &name, who, &own, None, None, now())
            })
            .await
            .map_err(|e| format!("internal: {e}"))?
            .map_err(|e| refused(e.into()))?;
            let mut out = format!("skill {} ({})\n\n{}", act.name, act.location, act.body);
            for f in &act.files.files {
                out.push_str(&format!("\nresource: skill://{}/{f}", act.name));
            }
            for n in &act.notes {
                out.push_str(&format!("\nnote: {n}"));
            }
            Ok(out)
        }
        _ => Err(format!("unknown tool `{tool}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_twelve_tools_per_audience() {
        assert!(tools_for(&Audience::Person(ScopeClass::Human)).len() <= 12);
        assert!(tools_for(&Audience::Agent("a".into())).len() <= 12);
        // A read token sees only the reading tools.
        let read: Vec<&str> = tools_for(&Audience::Person(ScopeClass::Read))
            .iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(read, ["list_tickets", "show_ticket", "inbox"]);
    }
}
