//! Authentication and scopes, in one place.
//!
//! Every API route takes an [`Authed<A>`] extractor naming its action type `A`; the action's
//! `ALLOWED` list is the whole scope table, so a handler cannot compile without declaring its
//! scope. A missing, malformed, unknown or revoked token is 401; a valid token whose scope the
//! action does not allow is 403. Secrets are hashed before lookup and never logged.
//!
//! The API takes bearer tokens only. A dashboard session is a human token too, but its secret
//! lives in a cookie that a browser attaches on its own; so neither the cookie nor the session's
//! secret sent as a bearer token authorizes an API call (the dashboard reads its live events at
//! `/live/events`, a dashboard route).

use std::marker::PhantomData;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use yoi_core::{Principal, Role, Timestamp};
use yoi_db::{hash_secret, Scope, TokenInfo};
use yoi_engine::person_ops::PersonOp;
use yoi_store::Ctx;

use crate::error::ApiError;
use crate::state::AppState;

/// Which kinds of token may perform an action (the engine's one list, `person_ops::Who`).
pub use yoi_engine::person_ops::Who as ScopeClass;

pub trait Action: Send + Sync + 'static {
    const NAME: &'static str;
    const ALLOWED: &'static [ScopeClass];
}

macro_rules! actions {
    ($($ty:ident = $name:literal : [$($class:ident),*];)*) => {$(
        pub struct $ty;
        impl Action for $ty {
            const NAME: &'static str = $name;
            const ALLOWED: &'static [ScopeClass] = &[$(ScopeClass::$class),*];
        }
    )*};
}

/// The actions of the operations a person asks for: name and scopes come from the engine's
/// table (`yoi_engine::person_ops`), so the API cannot disagree with the other frontends.
macro_rules! person_actions {
    ($($ty:ident = $op:ident;)*) => {$(
        pub struct $ty;
        impl Action for $ty {
            const NAME: &'static str = PersonOp::$op.spec().name;
            const ALLOWED: &'static [ScopeClass] = PersonOp::$op.spec().who;
        }
    )*};
}

person_actions! {
    CreateTicket = Create;
    EditTicket = Edit;
    CommentTicket = Comment;
    MarkReady = MarkReady;
    Queue = Queue;
    ReturnToPlanning = ReturnToPlanning;
    Close = Close;
    Cancel = Cancel;
    Reopen = Reopen;
    EditRelations = AddRelation;
    AddPlanRecord = AddPlanRecord;
    Retry = Retry;
    AddBudget = AddBudget;
    AnswerQuestion = Answer;
}

// The scope table of everything else. Reading is open to every live token; each mutation names
// who may ask (the store's own guards still decide on the principal, e.g. only humans queue).
actions! {
    ReadTickets = "read": [Human, Read, Intake, Orchestrator, Pod, Agent];
    RunDoctor = "doctor": [Human, Read];
    UseSkills = "use skills": [Human, Read, Intake, Orchestrator, Pod, Agent];
    ProposeSkill = "propose skills": [Human, Intake, Orchestrator, Pod];
    DecideSkill = "approve or reject skill proposals": [Human];
    SubmitPacket = "submit an IntentPacket": [Human, Intake, Orchestrator];
    RunPod = "register a pod or claim and report its role's work": [Pod];
    OpenDashboard = "open a dashboard session": [Human];
    InvokeWorkflow = "invoke an auto_invoke workflow for its own attempt": [Agent];
    DecideOffer = "look for, accept or reject workflow offers": [Human];
    SyncForge = "run a forge pass": [Human];
}

/// The authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    pub token: TokenInfo,
    pub principal: Principal,
    /// What this request may rely on: the index had every write that finished before the
    /// request arrived (`AppState::settle`, once per request, before the token was looked up).
    pub view: yoi_db::read_your_writes::View,
}

impl Caller {
    pub(crate) fn class(&self) -> ScopeClass {
        match &self.token.scope {
            Scope::Human => ScopeClass::Human,
            Scope::Read => ScopeClass::Read,
            Scope::Pod(Role::Intake) => ScopeClass::Intake,
            Scope::Pod(Role::Orchestrator) => ScopeClass::Orchestrator,
            Scope::Pod(_) => ScopeClass::Pod,
            Scope::Agent(_) => ScopeClass::Agent,
        }
    }

    /// The pod this caller speaks as: its token and the role its scope names (`None` for
    /// tokens that are not pod tokens).
    pub fn pod(&self) -> Option<yoi_engine::assignments::PodCaller> {
        match &self.token.scope {
            Scope::Pod(role) => Some(yoi_engine::assignments::PodCaller {
                token_id: self.token.id.clone(),
                role: *role,
            }),
            Scope::Human | Scope::Read | Scope::Agent(_) => None,
        }
    }

    /// The operation context: this principal, now, and the request's idempotency key.
    pub fn ctx(&self, op: Option<String>) -> Ctx {
        Ctx::new(self.principal.clone(), now()).with_op(op)
    }
}

pub fn now() -> Timestamp {
    Timestamp::from_datetime(yoi_core::time::utc_now_from_system(
        std::time::SystemTime::now(),
    ))
}

fn principal_for(token: &TokenInfo) -> Principal {
    match &token.scope {
        Scope::Human | Scope::Read => Principal::human(token.principal.clone()),
        Scope::Pod(Role::Intake) => Principal::intake(token.principal.clone()),
        Scope::Pod(Role::Orchestrator) => Principal::orchestrator(),
        Scope::Pod(role) => Principal::pod(role.as_str(), &token.principal),
        Scope::Agent(_) => Principal::pod("agent", &token.principal),
    }
}

/// An authenticated caller allowed to perform `A`.
pub struct Authed<A: Action>(pub Caller, pub PhantomData<A>);

impl<A: Action> FromRequestParts<AppState> for Authed<A> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let view = state.settle().await?;
        let Some(header) = parts.headers.get(axum::http::header::AUTHORIZATION) else {
            let why = if crate::ui::session::secret_of(&parts.headers).is_some() {
                "missing bearer token (a dashboard session cookie is not an API token)"
            } else {
                "missing bearer token"
            };
            return Err(ApiError::unauthorized(why));
        };
        let secret = header
            .to_str()
            .ok()
            .and_then(|h| {
                // The scheme name is case-insensitive (RFC 9110 §11.1).
                let (scheme, rest) = h.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then_some(rest)
            })
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                ApiError::unauthorized("the Authorization header must be `Bearer <token>`")
            })?;
        if yoi_engine::assignments::agent_token::is_agent_token(secret) {
            let caller = agent_caller(state, secret, view).await?;
            if !A::ALLOWED.contains(&ScopeClass::Agent) {
                return Err(ApiError::forbidden(format!(
                    "an agent's token may not {}; it may read and use skills for its own assignment",
                    A::NAME
                )));
            }
            return Ok(Authed(caller, PhantomData));
        }
        let token = state
            .token_by_hash(view, &hash_secret(secret))
            .await?
            .ok_or_else(|| ApiError::unauthorized("unknown or revoked token"))?;
        if token.expired(now().unix_millis()) {
            return Err(ApiError::unauthorized(format!(
                "token `{}` expired at {}; create another with `yoi token create`",
                token.name,
                yoi_core::Timestamp::from_unix_millis(token.expires_ms.unwrap_or_default())
            )));
        }
        if crate::ui::session::is_session(&token) {
            return Err(ApiError::unauthorized(
                "a dashboard session is not an API token; use `yoi token create`",
            ));
        }
        let caller = Caller {
            principal: principal_for(&token),
            token,
            view,
        };
        if !A::ALLOWED.contains(&caller.class()) {
            return Err(ApiError::forbidden(format!(
                "a {} token may not {}",
                caller.token.scope,
                A::NAME
            )));
        }
        Ok(Authed(caller, PhantomData))
    }
}

/// The caller an agent token speaks for: its live claim's pod, as that pod's role.
async fn agent_caller(
    state: &AppState,
    secret: &str,
    view: yoi_db::read_your_writes::View,
) -> Result<Caller, ApiError> {
    use yoi_engine::assignments::agent_token::{live_claim_of, AgentRefusal};
    let (st, secret) = (state.clone(), secret.to_string());
    let found = tokio::task::spawn_blocking(move || {
        live_claim_of(&st.index, &st.agent_key, &secret, now().unix_millis())
    })
    .await
    .map_err(|e| ApiError::internal("agent token", e))?
    .map_err(ApiError::from)?;
    let a = match found {
        Ok(a) => a,
        Err(AgentRefusal::Invalid) => {
            return Err(ApiError::unauthorized("unknown or revoked token"))
        }
        Err(AgentRefusal::Ended { id }) => {
            return Err(ApiError::unauthorized(format!(
                "this agent token was for assignment {id}, whose claim has ended"
            )))
        }
    };
    let pod = a.claimed_by.clone().unwrap_or_default();
    Ok(Caller {
        principal: Principal::pod(&a.role, &pod),
        token: TokenInfo {
            id: format!("agent-{}", a.id),
            name: format!("agent of {pod}"),
            scope: Scope::Agent(a.id.clone()),
            principal: pod,
            created_ms: a.updated_ms,
            revoked_ms: None,
            expires_ms: None,
        },
        view,
    })
}
