//! `POST /api/v1/forge/sync`: one pass of the forge driver now, asked for by a person (`yoi forge
//! sync` and `yoi forge import` call it when a server runs): labelled issues in as tickets,
//! then every pending pull request one step further (docs/forge.md). It runs
//! `crate::forge::sync`, the one function the CLI runs without a server, with the credential
//! this server read at start — the CLI never needs it then — in this server's turn for writes.
//! Only a person's token may ask: a pod's, a read token's or an agent's is 403. Without
//! `[forge]`, or `import_only` without `import_label`, or a pass that cannot run (the
//! credential, an import that fails): 422 `refused`, with the words the CLI prints.

use axum::extract::State;
use axum::Json;
use serde::Deserialize;

use crate::auth::{now, Authed, SyncForge};
use crate::error::ApiError;
use crate::extract::Params;
use crate::forge::{sync as run, ForgeSynced};
use crate::state::AppState;

/// `?import_only=true`: import the labelled issues only (`yoi forge import`).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SyncQuery {
    /// Import the labelled issues only; no pull request is walked.
    #[serde(default)]
    pub import_only: bool,
}

#[utoipa::path(operation_id = "forge_sync", post, tag = "forge", path = "/api/v1/forge/sync", params(SyncQuery), responses((status = 200, body = ForgeSynced), (status = 403, description = "a pod's, agent's or read token: only a person may run a pass", body = crate::openapi::ErrorBody), (status = 422, description = "refused: no [forge] section, `import_only` without `import_label`, or the pass could not run (the message says why)", body = crate::openapi::ErrorBody)), security(("bearer" = [])))]
/// One forge pass now: labelled issues in as tickets, then every pending pull request one step
/// further; what it did.
pub async fn sync(
    State(s): State<AppState>,
    _a: Authed<SyncForge>,
    Params(q): Params<SyncQuery>,
) -> Result<Json<ForgeSynced>, ApiError> {
    let state = s.clone();
    let done = tokio::task::spawn_blocking(move || {
        let _turn = state.write_turn_blocking();
        run(
            &state.ws,
            &state.index,
            state.forge.as_deref(),
            q.import_only,
            now(),
        )
    })
    .await
    .map_err(|e| ApiError::internal("forge sync", e))?;
    let synced =
        done.map_err(|e| ApiError::classified(yoi_core::ErrorClass::Refused, "refused", e, None))?;
    if !synced.imported.created.is_empty()
        || synced.pass.as_ref().is_some_and(|p| {
            !(p.pushed.is_empty()
                && p.opened.is_empty()
                && p.merged.is_empty()
                && p.sent_back.is_empty())
        })
    {
        s.changed.send_modify(|n| *n += 1);
        s.flow_wake.notify_one();
    }
    Ok(Json(synced))
}
