//! `/api/v1/pods` and `/api/v1/assignments…`: the pod protocol (docs/pods.md). A pod token
//! registers a pod of its role, long-polls for that role's work, heartbeats, streams its log and
//! reports; every call after the claim names the pod and the fence, and the engine refuses
//! anything but the live claim (409 `stale_fence`). People and the dashboard read pods and
//! assignments.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use yoi_db::{Assignment, PodRow};
use yoi_engine::assignments::{self as asg, LeaseConfig, PodCaller, Report};

use crate::auth::*;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Body, Params};
use crate::state::AppState;

/// Longest a claim waits for work.
pub const MAX_WAIT_MS: u64 = 30_000;

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterBody {
    /// The pod's name (1–64 letters, digits, `-`, `_`, `.`); a nonce is added to make its id.
    pub name: String,
    #[serde(default)]
    pub host: String,
    pub pid: Option<i64>,
    /// The agent profile it runs.
    pub profile: Option<String>,
    /// The sandbox its agents run in (`landlock v7, pid+mount namespaces`, or `off`).
    #[serde(default)]
    #[schema(max_length = 500)]
    pub sandbox: Option<String>,
    /// The provider its profile belongs to (`[agents.NAME] provider`): rate-limit pauses and
    /// the governor count by it.
    #[serde(default)]
    #[schema(max_length = 100)]
    pub provider: Option<String>,
}

/// A registered pod, and the lease and heartbeat periods it must keep.
#[derive(Debug, Serialize, ToSchema)]
pub struct Registered {
    pub pod: PodRow,
    pub lease_ms: i64,
    pub heartbeat_ms: i64,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimBody {
    pub pod: String,
    /// How long to wait for work, in milliseconds (at most 30,000; 0 answers at once).
    #[serde(default)]
    pub wait_ms: u64,
    /// The pod works without the server's disk (`yoi pod run --cache`). Under `[pods]
    /// transport = "remote"` its claim's commits are then pushed to the remote first, and the
    /// answer says where (`remote: true`, `remote_git`); a pod on the server's disk needs
    /// neither.
    #[serde(default)]
    pub remote: bool,
}

/// A heartbeat: the claim it keeps, and what the attempt used so far when its agent streams
/// its usage (the answer then says whether to stop it over a budget).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatBody {
    pub pod: String,
    pub fence: i64,
    #[serde(default)]
    pub usage: Option<yoi_core::report::Usage>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteBody {
    pub pod: String,
    pub fence: i64,
    pub report: Report,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FailBody {
    pub pod: String,
    pub fence: i64,
    pub reason: String,
    /// Hand the step out again (while the circuit allows).
    #[serde(default = "yes")]
    pub retryable: bool,
    pub report: Option<Report>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LogBody {
    pub pod: String,
    pub fence: i64,
    /// Output text to append.
    pub text: String,
}

/// The pods seen in the last hour, and the server's clock when it answered.
#[derive(Debug, Serialize, ToSchema)]
pub struct PodList {
    pub count: usize,
    pub pods: Vec<PodRow>,
    pub now_ms: i64,
}

/// What a failed attempt led to: the next attempt of the step, when the step is handed out
/// again.
#[derive(Debug, Serialize, ToSchema)]
pub struct Failed {
    pub next: Option<Assignment>,
}

/// Where the log text was appended, relative to the repository root.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogAppended {
    pub log: String,
}

/// Assignments, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct AssignmentList {
    pub count: usize,
    pub assignments: Vec<Assignment>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AssignmentQuery {
    /// Only this ticket's assignments (id or unique suffix).
    pub ticket: Option<String>,
    /// At most this many, newest first (1 to 1000, default 100).
    pub limit: Option<i64>,
}

/// Run one engine call of the pod protocol on a blocking thread.
async fn pod_work<T, F>(s: &AppState, what: &'static str, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&AppState) -> Result<T, asg::AssignmentError> + Send + 'static,
{
    let st = s.clone();
    tokio::task::spawn_blocking(move || f(&st))
        .await
        .map_err(|e| ApiError::internal(what, e))?
        .map_err(ApiError::from)
}

fn pod_caller(c: &Caller) -> Result<PodCaller, ApiError> {
    c.pod()
        .ok_or_else(|| ApiError::forbidden("only a pod token speaks for a pod"))
}

#[utoipa::path(operation_id = "register_pod", post, tag = "pods", path = "/api/v1/pods", request_body = RegisterBody, responses((status = 201, body = Registered)), security(("bearer" = [])))]
/// Register a pod of the token's role.
pub async fn register(
    State(s): State<AppState>,
    Authed(c, ..): Authed<RunPod>,
    Body(b): Body<RegisterBody>,
) -> Result<(StatusCode, Json<Registered>), ApiError> {
    let caller = pod_caller(&c)?;
    let pod = pod_work(&s, "register", move |st| {
        asg::register_pod(
            &st.index,
            &caller,
            asg::PodIntro {
                name: &b.name,
                host: &b.host,
                pid: b.pid,
                profile: b.profile.as_deref(),
                sandbox: b.sandbox.as_deref(),
                provider: b.provider.as_deref(),
            },
            now(),
        )
    })
    .await?;
    let cfg = LeaseConfig::of(&s.ws);
    Ok((
        StatusCode::CREATED,
        Json(Registered {
            pod,
            lease_ms: cfg.lease_ms,
            heartbeat_ms: cfg.heartbeat_ms,
        }),
    ))
}

#[utoipa::path(operation_id = "list_pods", get, tag = "pods", path = "/api/v1/pods", responses((status = 200, body = PodList)), security(("bearer" = [])))]
/// Pods that are running or stopped within the last hour.
pub async fn list(State(s): State<AppState>, _a: Authed<ReadTickets>) -> ApiResult<PodList> {
    let now_ms = now().unix_millis();
    let pods = s.db().pods(now_ms, 3_600_000).await?;
    Ok(Json(PodList {
        count: pods.len(),
        pods,
        now_ms,
    }))
}

#[utoipa::path(operation_id = "claim_assignment", post, tag = "pods", path = "/api/v1/assignments/claim", request_body = ClaimBody, responses((status = 200, body = asg::Work), (status = 204, description = "no work within the wait"), (status = 503, description = "`remote_unreachable`: the claim's commits could not be pushed to the pods' remote; it was put back, claim again later", body = crate::openapi::ErrorBody)), security(("bearer" = [])))]
/// Claim the oldest pending assignment of the pod's role, waiting up to `wait_ms` for one.
pub async fn claim(
    State(s): State<AppState>,
    Authed(c, ..): Authed<RunPod>,
    Body(b): Body<ClaimBody>,
) -> Result<Response, ApiError> {
    let caller = pod_caller(&c)?;
    let wait = Duration::from_millis(b.wait_ms.min(MAX_WAIT_MS));
    let deadline = tokio::time::Instant::now() + wait;
    let mut changed = s.changed.subscribe();
    let mut closing = s.closing.subscribe();
    loop {
        changed.borrow_and_update();
        let row = s
            .claims
            .claim(&s.ws, &s.index, caller.clone(), b.pod.clone())
            .await?;
        let work = match row {
            Some(asg::Claimed::Ready(work)) => Some(*work),
            Some(asg::Claimed::Prepare(a)) => {
                let pod = b.pod.clone();
                Some(
                    pod_work(&s, "claim", move |st| {
                        asg::hand_out(&st.ws, &st.index, &pod, *a, LeaseConfig::of(&st.ws), now())
                    })
                    .await?,
                )
            }
            None => None,
        };
        if let Some(mut work) = work {
            if b.remote {
                work = publish(&s, &b.pod, work).await?;
            }
            work.agent_token = Some(asg::agent_token::mint(&s.agent_key, &work.assignment));
            return Ok(Json(work).into_response());
        }
        if *closing.borrow() {
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        tokio::select! {
            _ = changed.changed() => {}
            _ = tokio::time::sleep_until(deadline) => return Ok(StatusCode::NO_CONTENT.into_response()),
            _ = closing.changed() => return Ok(StatusCode::NO_CONTENT.into_response()),
        }
    }
}

/// Under `[pods] transport = "remote"`, push what a pod without the server's disk must fetch
/// to the remote before its claim goes out ([`asg::transport::publish`]): a push that fails
/// puts the claim back and answers 503 `remote_unreachable`, so the pod claims again later.
async fn publish(s: &AppState, pod: &str, work: asg::Work) -> Result<asg::Work, ApiError> {
    let pod = pod.to_string();
    let published = pod_work(s, "claim", move |st| {
        let mut work = work;
        if let Some(remote) = asg::transport::pod_remote(&st.ws)? {
            asg::transport::publish(&st.ws, &st.index, &remote, &pod, &mut work, now())?;
        }
        Ok(work)
    })
    .await;
    match published {
        Ok(work) => {
            if work.remote {
                s.remote_wake.notify_one();
            }
            Ok(work)
        }
        Err(e) => {
            // The claim is pending again: a waiting pod may take it.
            s.changed.send_modify(|n| *n += 1);
            Err(e)
        }
    }
}

#[utoipa::path(operation_id = "heartbeat_assignment", post, tag = "pods", path = "/api/v1/assignments/{id}/heartbeat", params(("id" = String, Path)), request_body = HeartbeatBody, responses((status = 200, body = asg::HeartbeatReply)), security(("bearer" = [])))]
/// Extend the claim's lease; 409 when the claim is not live (the pod must stop its agent). With
/// the attempt's usage so far, the answer's `stop` says when it passed a budget (docs/budgets.md).
pub async fn heartbeat(
    State(s): State<AppState>,
    Authed(c, ..): Authed<RunPod>,
    Path(id): Path<String>,
    Body(b): Body<HeartbeatBody>,
) -> ApiResult<asg::HeartbeatReply> {
    let caller = pod_caller(&c)?;
    let reply = pod_work(&s, "heartbeat", move |st| {
        asg::heartbeat_running(
            &st.ws,
            &st.index,
            &caller,
            &b.pod,
            &id,
            b.fence,
            b.usage,
            LeaseConfig::of(&st.ws),
            now(),
        )
    })
    .await?;
    Ok(Json(reply))
}

#[utoipa::path(operation_id = "complete_assignment", post, tag = "pods", path = "/api/v1/assignments/{id}/complete", params(("id" = String, Path)), request_body = CompleteBody, responses((status = 200, body = asg::Completed)), security(("bearer" = [])))]
/// Report the attempt's result; a coder's commit moves the ticket branch by compare-and-swap.
pub async fn complete(
    State(s): State<AppState>,
    Authed(c, ..): Authed<RunPod>,
    Path(id): Path<String>,
    Body(b): Body<CompleteBody>,
) -> ApiResult<asg::Completed> {
    let caller = pod_caller(&c)?;
    let done = pod_work(&s, "complete", move |st| {
        asg::complete(
            &st.ws,
            &st.index,
            &caller,
            &b.pod,
            &id,
            b.fence,
            &b.report,
            now(),
        )
    })
    .await?;
    s.changed.send_modify(|n| *n += 1);
    s.flow_wake.notify_one();
    Ok(Json(done))
}

#[utoipa::path(operation_id = "fail_assignment", post, tag = "pods", path = "/api/v1/assignments/{id}/fail", params(("id" = String, Path)), request_body = FailBody, responses((status = 200, body = Failed)), security(("bearer" = [])))]
/// Report that the attempt failed; the step is handed out again while the circuit allows.
pub async fn fail(
    State(s): State<AppState>,
    Authed(c, ..): Authed<RunPod>,
    Path(id): Path<String>,
    Body(b): Body<FailBody>,
) -> ApiResult<Failed> {
    let caller = pod_caller(&c)?;
    let next = pod_work(&s, "fail", move |st| {
        asg::fail(
            &st.ws,
            &st.index,
            &caller,
            &b.pod,
            &id,
            b.fence,
            &b.reason,
            b.retryable,
            b.report.as_ref(),
            now(),
        )
    })
    .await?;
    s.changed.send_modify(|n| *n += 1);
    s.flow_wake.notify_one();
    Ok(Json(Failed { next }))
}

#[utoipa::path(operation_id = "append_assignment_log", post, tag = "pods", path = "/api/v1/assignments/{id}/log", params(("id" = String, Path)), request_body = LogBody, responses((status = 200, body = LogAppended)), security(("bearer" = [])))]
/// Append output to the attempt's log (`.yoi/local/logs/<ticket>/<assignment>.log`).
pub async fn log(
    State(s): State<AppState>,
    Authed(c, ..): Authed<RunPod>,
    Path(id): Path<String>,
    Body(b): Body<LogBody>,
) -> ApiResult<LogAppended> {
    let caller = pod_caller(&c)?;
    let path = pod_work(&s, "log", move |st| {
        asg::append_log(
            &st.ws,
            &st.index,
            &caller,
            &b.pod,
            &id,
            b.fence,
            b.text.as_bytes(),
            now(),
        )
    })
    .await?;
    Ok(Json(LogAppended { log: path }))
}

#[utoipa::path(operation_id = "list_assignments", get, tag = "pods", path = "/api/v1/assignments", params(AssignmentQuery), responses((status = 200, body = AssignmentList)), security(("bearer" = [])))]
/// Assignments, newest first: every attempt of every step, with its status, fence and result.
pub async fn list_assignments(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Params(q): Params<AssignmentQuery>,
) -> ApiResult<AssignmentList> {
    let limit = crate::extract::page_size(q.limit)?;
    let rows: Vec<Assignment> = s
        .read_indexed(move |ws, index| {
            let ticket = q.ticket.as_deref().map(|t| ws.resolve(t)).transpose()?;
            index.list_assignments(ticket.as_ref().map(|t| t.as_str()), limit)
        })
        .await?;
    Ok(Json(AssignmentList {
        count: rows.len(),
        assignments: rows,
    }))
}

#[utoipa::path(operation_id = "ticket_cost", get, tag = "tickets", path = "/api/v1/tickets/{id}/cost", params(("id" = String, Path)), responses((status = 200, body = yoi_engine::cost::CostReport)), security(("bearer" = [])))]
/// What a ticket's attempts cost, per attempt and in total (reported, estimated, unpriced).
pub async fn ticket_cost(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(id): Path<String>,
) -> ApiResult<yoi_engine::cost::CostReport> {
    s.read_indexed(move |ws, index| yoi_engine::cost::ticket_cost(ws, index, &id))
        .await
        .map(Json)
}
