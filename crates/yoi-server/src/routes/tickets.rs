//! `/api/v1/tickets…`: every ticket operation of the domain layer, nothing more and nothing
//! less. Each handler authenticates with its action's scope, turns the request into the store
//! request, and calls exactly one store function.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use yoi_core::state::State as TicketState;
use yoi_db::ticket_answers::Made;
use yoi_db::ticket_detail::EventWindow;
use yoi_engine::workflows::invoke;
use yoi_store::ops::{
    self, CommentRequest, CreateRequest, EditRequest, PlanRequest, RelationRequest,
    TransitionRequest,
};
use yoi_store::query::{self, ListFilter};
use yoi_store::Outcome;

use crate::auth::*;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Body, IdempotencyKey, Params};
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    pub title: String,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub depends_on: Vec<String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EditBody {
    #[serde(default, deserialize_with = "given")]
    pub title: Option<String>,
    #[serde(default, deserialize_with = "given")]
    pub body: Option<String>,
}

/// A field that may be left out but not sent as `null`: the document states each as an
/// optional string, so a `null` is malformed (400) rather than "unchanged".
fn given<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommentBody {
    #[serde(default = "comment_kind")]
    pub kind: String,
    pub body: String,
}

fn comment_kind() -> String {
    "comment".into()
}

/// Body of every state operation; each operation requires what it needs (reason, resolution).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransitionBody {
    pub reason: Option<String>,
    pub resolution: Option<String>,
    /// Compare-and-swap: refuse with 409 unless the ticket is in this state.
    #[schema(value_type = Option<String>)]
    pub expected_state: Option<TicketState>,
}

impl From<TransitionBody> for TransitionRequest {
    fn from(b: TransitionBody) -> Self {
        TransitionRequest {
            reason: b.reason,
            resolution: b.resolution,
            expected: b.expected_state,
        }
    }
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RelationBody {
    pub kind: String,
    pub target: String,
    pub note: Option<String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanBody {
    pub kind: String,
    pub related: Option<String>,
    pub note: Option<String>,
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Comma-separated states, `active` (default) or `all`.
    pub state: Option<String>,
    #[serde(default)]
    pub ready: bool,
    #[serde(default)]
    pub blocked: bool,
    /// Words that must all appear in the title or body.
    pub search: Option<String>,
    /// Page size (1 to 1000, default 100).
    pub limit: Option<usize>,
    /// Cursor: the `next` of the previous page.
    pub after: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ListResponse {
    pub count: usize,
    pub tickets: Vec<yoi_store::query::TicketSummary>,
    pub next: Option<String>,
    /// Tickets whose files yoi cannot read (`id`, `path`, `line`, `reason`, `check`: the
    /// doctor check that reports it), whatever the filter; on the first page only (no
    /// `after`), and absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub broken: Vec<yoi_store::tickets::BrokenTicket>,
}

/// A ticket's orchestration plan records, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlanList {
    pub count: usize,
    pub records: Vec<yoi_core::plan::PlanRecord>,
}

/// What adding a plan record did, and the record as written.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlanAdded {
    pub outcome: Outcome,
    pub record: yoi_core::plan::PlanRecord,
}

/// The `state` filter as the document states it: empty, `active`, `all`, or a comma list of
/// state names spelled exactly (the CLI's `--state` is more forgiving).
fn states(spec: Option<&str>) -> Result<Option<Vec<TicketState>>, ApiError> {
    if let Some(spec) = spec.filter(|s| !matches!(*s, "" | "active" | "all")) {
        for item in spec.split(',') {
            if !TicketState::ALL.iter().any(|s| s.as_str() == item) {
                return Err(ApiError::bad_request(format!(
                    "`{item}` is not a state (expected `active`, `all` or a comma list of planning, ready, queued, inprogress, done, closed)"
                )));
            }
        }
    }
    query::parse_state_filter(spec).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// A relation kind in the API: exactly as the document spells it.
fn relation_kind(kind: &str) -> Result<yoi_core::relation::RelationKind, ApiError> {
    yoi_core::relation::RelationKind::ALL
        .into_iter()
        .find(|k| k.as_str() == kind)
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "`{kind}` is not a relation kind (expected depends_on, blocks, related, supersedes or duplicate_of, spelled exactly)"
            ))
        })
}

#[utoipa::path(operation_id = "list_tickets", get, tag = "tickets", path = "/api/v1/tickets", params(ListParams), responses((status = 200, body = ListResponse)), security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    Authed(c, ..): Authed<ReadTickets>,
    query: axum::extract::RawQuery,
    Params(p): Params<ListParams>,
) -> Result<crate::fresh::JsonBytes, ApiError> {
    let key = format!("list?{}", query.0.unwrap_or_default());
    let state = s.clone();
    crate::fresh::answer_about_tickets(&s, c.view, key, || async move {
        Ok((list_page(state, p).await?, Made::AnyTicket))
    })
    .await
}

async fn list_page(s: AppState, p: ListParams) -> Result<crate::fresh::JsonBytes, ApiError> {
    let filter = ListFilter {
        states: states(p.state.as_deref())?,
        ready: p.ready,
        blocked: p.blocked,
    };
    let words: Vec<String> = p
        .search
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let after = match p.after {
        Some(a) => Some(s.read(move |ws| ws.resolve(&a)).await?),
        None => None,
    };
    let limit =
        crate::extract::page_size(p.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX)))? as usize;
    let page = s.db().list(&filter, &words, after.as_ref(), limit).await?;
    let broken = match after {
        None => broken_tickets(&s).await?,
        Some(_) => Vec::new(),
    };
    crate::fresh::JsonBytes::of(&ListResponse {
        count: page.tickets.len(),
        tickets: page.tickets,
        next: page.next.map(|n| n.to_string()),
        broken,
    })
}

/// Every ticket the index holds as broken, with what is wrong read from its files.
pub async fn broken_tickets(
    s: &AppState,
) -> Result<Vec<yoi_store::tickets::BrokenTicket>, ApiError> {
    let ids = s.db().broken_ids().await?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    s.read(move |ws| Ok(yoi_engine::db::broken::diagnose(ws, &ids)))
        .await
}

#[utoipa::path(operation_id = "create_ticket", post, tag = "tickets", path = "/api/v1/tickets", request_body = CreateBody, responses((status = 201, description = "created", body = Outcome), (status = 200, description = "a replay of an earlier create with the same Idempotency-Key", body = Outcome)), security(("bearer" = [])))]
pub async fn create(
    State(s): State<AppState>,
    Authed(c, ..): Authed<CreateTicket>,
    IdempotencyKey(key): IdempotencyKey,
    Body(b): Body<CreateBody>,
) -> Result<(StatusCode, Json<Outcome>), ApiError> {
    let ctx = c.ctx(key);
    let req = CreateRequest {
        title: b.title,
        body: b.body,
        depends_on: b.depends_on,
    };
    let out = s.op(move |ws| ops::create(ws, &ctx, &req)).await?;
    let status = if out.replayed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(out)))
}

/// Which of the thread's events `GET /tickets/{id}` carries.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ShowParams {
    /// How many of the latest events (1 to 1000, default 100).
    pub limit: Option<usize>,
    /// Cursor: the `events_before` of the previous answer; only events at thread positions
    /// below it are carried.
    pub before: Option<u64>,
    /// Every event of the thread, streamed; `limit` and `before` are then ignored.
    #[serde(default)]
    pub all: bool,
}

#[utoipa::path(operation_id = "show_ticket", get, tag = "tickets", path = "/api/v1/tickets/{id}", params(("id" = String, Path), ShowParams), responses((status = 200, body = yoi_db::ticket_detail::TicketDetail)), security(("bearer" = [])))]
pub async fn show(
    State(s): State<AppState>,
    Authed(c, ..): Authed<ReadTickets>,
    Path(id): Path<String>,
    Params(p): Params<ShowParams>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    if p.all {
        return whole_thread(s, id).await;
    }
    let limit =
        crate::extract::page_size(p.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX)))? as usize;
    let before = p.before.map(|b| usize::try_from(b).unwrap_or(usize::MAX));
    let key = format!("ticket/{id}?limit={limit}&before={before:?}");
    let window = EventWindow::Latest { limit, before };
    let state = s.clone();
    crate::fresh::answer_about_tickets(&s, c.view, key, || async move {
        let asked = id.clone();
        let detail = state
            .read_indexed(move |ws, index| {
                yoi_db::ticket_detail::ticket_detail_window(ws, Some(index), &id, window)
            })
            .await?;
        Ok((
            crate::fresh::JsonBytes::of(&detail)?,
            made_from(&asked, &detail),
        ))
    })
    .await
    .map(IntoResponse::into_response)
}

/// What a ticket's answer was made from: the ticket and every ticket its relations show. Asked
/// by a short id, any ticket (a new ticket may make the short id ambiguous).
pub(crate) fn made_from(asked: &str, detail: &yoi_db::ticket_detail::TicketDetail) -> Made {
    if asked != detail.id.as_str() {
        return Made::AnyTicket;
    }
    let r = &detail.relations;
    let mut tickets: Vec<yoi_core::TicketId> = std::iter::once(detail.id.clone())
        .chain(r.relations.iter().map(|e| e.other.clone()))
        .chain(r.blockers.iter().map(|b| b.ticket.clone()))
        .collect();
    tickets.sort();
    tickets.dedup();
    Made::Tickets(tickets)
}

/// The ticket with every event of its thread, streamed: the answer without its events first,
/// then the events a batch at a time as they are serialized, so a thread of 50,000 events is
/// never one string in memory (nor kept among the cached answers).
async fn whole_thread(s: AppState, id: String) -> Result<axum::response::Response, ApiError> {
    use axum::body::{Body, Bytes};
    use axum::http::header;
    use axum::response::IntoResponse;
    let (detail, events) = s
        .read_indexed(move |ws, index| {
            yoi_db::ticket_detail::ticket_detail_parts(ws, Some(index), &id)
        })
        .await?;
    let head = match serde_json::to_value(&detail) {
        Ok(serde_json::Value::Object(mut fields)) => {
            fields.remove("events");
            let mut head = serde_json::to_vec(&fields)
                .map_err(|e| ApiError::internal("serializing the answer", e))?;
            head.pop(); // the closing brace: the events follow
            if !fields.is_empty() {
                head.push(b',');
            }
            head.extend_from_slice(b"\"events\":[");
            head
        }
        Ok(_) => {
            return Err(ApiError::internal(
                "serializing the answer",
                "not an object",
            ))
        }
        Err(e) => return Err(ApiError::internal("serializing the answer", e)),
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::task::spawn_blocking(move || {
        const CHUNK: usize = 64 * 1024;
        let mut buf = head;
        for (i, e) in events.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            let detail = yoi_db::ticket_detail::EventDetail::from(e);
            if let Err(e) = serde_json::to_writer(&mut buf, &detail) {
                let _ = tx.blocking_send(Err(std::io::Error::other(e)));
                return;
            }
            if buf.len() >= CHUNK {
                let chunk = Bytes::from(std::mem::replace(&mut buf, Vec::with_capacity(CHUNK)));
                if tx.blocking_send(Ok(chunk)).is_err() {
                    return; // the client went away
                }
            }
        }
        buf.extend_from_slice(b"]}");
        let _ = tx.blocking_send(Ok(Bytes::from(buf)));
    });
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(body),
    )
        .into_response())
}

#[utoipa::path(operation_id = "edit_ticket", patch, tag = "tickets", path = "/api/v1/tickets/{id}", params(("id" = String, Path)), request_body = EditBody, responses((status = 200, body = Outcome)), security(("bearer" = [])))]
pub async fn edit(
    State(s): State<AppState>,
    Authed(c, ..): Authed<EditTicket>,
    IdempotencyKey(key): IdempotencyKey,
    Path(id): Path<String>,
    Body(b): Body<EditBody>,
) -> ApiResult<Outcome> {
    let ctx = c.ctx(key);
    let req = EditRequest {
        title: b.title,
        body: b.body,
    };
    s.op(move |ws| ops::edit(ws, &ctx, &id, &req))
        .await
        .map(Json)
}

#[utoipa::path(operation_id = "add_comment", post, tag = "tickets", path = "/api/v1/tickets/{id}/comments", params(("id" = String, Path)), request_body = CommentBody, responses((status = 200, body = Outcome)), security(("bearer" = [])))]
pub async fn comment(
    State(s): State<AppState>,
    Authed(c, ..): Authed<CommentTicket>,
    IdempotencyKey(key): IdempotencyKey,
    Path(id): Path<String>,
    Body(b): Body<CommentBody>,
) -> ApiResult<Outcome> {
    let ctx = c.ctx(key);
    let req = CommentRequest {
        kind: b.kind,
        body: b.body,
    };
    // A person's `/<slug>` comment invokes a workflow (docs/workflows.md).
    let who = ctx.principal.kind;
    let planned = s
        .blocking("workflows", move |ws| invoke::plan_comment(ws, who, &req))
        .await??;
    s.grouped(move |ws| invoke::write(ws, &ctx, &id, &planned))
        .await
        .map(Json)
}

macro_rules! transition_route {
    ($name:ident, $action:ty, $op:path, $path:literal) => {
        #[utoipa::path(post, tag = "tickets", path = $path, params(("id" = String, Path)), request_body = TransitionBody, responses((status = 200, body = Outcome)), security(("bearer" = [])))]
        pub async fn $name(State(s): State<AppState>, Authed(c, ..): Authed<$action>, IdempotencyKey(key): IdempotencyKey, Path(id): Path<String>, Body(b): Body<TransitionBody>) -> ApiResult<Outcome> {
            let ctx = c.ctx(key);
            let req: TransitionRequest = b.into();
            s.op(move |ws| $op(ws, &ctx, &id, &req)).await.map(Json)
        }
    };
}

transition_route!(
    mark_ready,
    MarkReady,
    ops::mark_ready,
    "/api/v1/tickets/{id}/mark-ready"
);
transition_route!(queue, Queue, ops::queue, "/api/v1/tickets/{id}/queue");
transition_route!(
    return_to_planning,
    ReturnToPlanning,
    ops::return_to_planning,
    "/api/v1/tickets/{id}/return-to-planning"
);
transition_route!(close, Close, ops::close, "/api/v1/tickets/{id}/close");
transition_route!(cancel, Cancel, ops::cancel, "/api/v1/tickets/{id}/cancel");
transition_route!(reopen, Reopen, ops::reopen, "/api/v1/tickets/{id}/reopen");

#[utoipa::path(operation_id = "list_relations", get, tag = "tickets", path = "/api/v1/tickets/{id}/relations", params(("id" = String, Path)), responses((status = 200, body = yoi_store::query::RelationView)), security(("bearer" = [])))]
pub async fn relations(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(id): Path<String>,
) -> ApiResult<yoi_store::query::RelationView> {
    s.read(move |ws| {
        let id = ws.resolve(&id)?;
        query::relation_view(ws, &id)
    })
    .await
    .map(Json)
}

#[utoipa::path(operation_id = "show_blockers", get, tag = "tickets", path = "/api/v1/tickets/{id}/blockers", params(("id" = String, Path)), responses((status = 200, body = yoi_store::query::RelationView)), security(("bearer" = [])))]
pub async fn blockers(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(id): Path<String>,
) -> ApiResult<yoi_store::query::RelationView> {
    s.read_indexed(move |ws, index| {
        let id = ws.resolve(&id)?;
        yoi_db::ticket_detail::relation_view_indexed(ws, Some(index), &id)
    })
    .await
    .map(Json)
}

#[utoipa::path(post, tag = "tickets", path = "/api/v1/tickets/{id}/relations", params(("id" = String, Path)), request_body = RelationBody, responses((status = 200, body = Outcome)), security(("bearer" = [])))]
pub async fn add_relation(
    State(s): State<AppState>,
    Authed(c, ..): Authed<EditRelations>,
    IdempotencyKey(key): IdempotencyKey,
    Path(id): Path<String>,
    Body(b): Body<RelationBody>,
) -> ApiResult<Outcome> {
    let ctx = c.ctx(key);
    let kind = relation_kind(&b.kind)?;
    let req = RelationRequest {
        kind,
        target: b.target,
        note: b.note,
    };
    s.op(move |ws| ops::add_relation(ws, &ctx, &id, &req))
        .await
        .map(Json)
}

#[utoipa::path(delete, tag = "tickets", path = "/api/v1/tickets/{id}/relations/{kind}/{target}", params(("id" = String, Path), ("kind" = String, Path), ("target" = String, Path)), responses((status = 200, body = Outcome)), security(("bearer" = [])))]
pub async fn remove_relation(
    State(s): State<AppState>,
    Authed(c, ..): Authed<EditRelations>,
    IdempotencyKey(key): IdempotencyKey,
    Path((id, kind, target)): Path<(String, String, String)>,
) -> ApiResult<Outcome> {
    let ctx = c.ctx(key);
    let kind = relation_kind(&kind)?;
    s.op(move |ws| ops::remove_relation(ws, &ctx, &id, kind, &target))
        .await
        .map(Json)
}

#[utoipa::path(operation_id = "list_plan_records", get, tag = "tickets", path = "/api/v1/tickets/{id}/plan", params(("id" = String, Path)), responses((status = 200, body = PlanList)), security(("bearer" = [])))]
pub async fn plan(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(id): Path<String>,
) -> ApiResult<PlanList> {
    s.read(move |ws| {
        let id = ws.resolve(&id)?;
        let records = ws.read_plan(&id)?;
        Ok(PlanList {
            count: records.len(),
            records,
        })
    })
    .await
    .map(Json)
}

#[utoipa::path(operation_id = "add_plan_record", post, tag = "tickets", path = "/api/v1/tickets/{id}/plan", params(("id" = String, Path)), request_body = PlanBody, responses((status = 200, body = PlanAdded)), security(("bearer" = [])))]
pub async fn add_plan(
    State(s): State<AppState>,
    Authed(c, ..): Authed<AddPlanRecord>,
    IdempotencyKey(key): IdempotencyKey,
    Path(id): Path<String>,
    Body(b): Body<PlanBody>,
) -> ApiResult<PlanAdded> {
    let ctx = c.ctx(key);
    let kind = yoi_core::plan::PlanKind::ALL
        .into_iter()
        .find(|k| k.as_str() == b.kind)
        .ok_or_else(|| {
            let known: Vec<&str> = yoi_core::plan::PlanKind::ALL
                .iter()
                .map(|k| k.as_str())
                .collect();
            ApiError::bad_request(format!(
                "`{}` is not a plan record kind (expected one of {}, spelled exactly)",
                b.kind,
                known.join(", ")
            ))
        })?;
    let req = PlanRequest {
        kind,
        related: b.related,
        note: b.note,
        accepted_plan: None,
    };
    let (out, record) = s
        .op(move |ws| ops::add_plan_record(ws, &ctx, &id, &req))
        .await?;
    Ok(Json(PlanAdded {
        outcome: out,
        record,
    }))
}

#[utoipa::path(operation_id = "run_doctor", get, tag = "service", path = "/api/v1/doctor", responses((status = 200, body = yoi_engine::doctor::Report)), security(("bearer" = [])))]
pub async fn doctor(
    State(s): State<AppState>,
    _a: Authed<RunDoctor>,
) -> ApiResult<yoi_engine::doctor::Report> {
    // The workspace carries the server's index, so the index and outbox checks run too.
    s.read_indexed(|ws, index| yoi_engine::doctor::run_full(ws, Some(index), false))
        .await
        .map(Json)
}
