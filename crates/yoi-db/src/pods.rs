//! Pods: one row per pod incarnation (its name plus a nonce drawn at each start), with its role,
//! where it runs, what it is working on and when it last spoke. Runtime state only — nothing
//! here is in the ticket files, and a lost row costs nothing but the listing.

use serde::Serialize;
use sqlx::Row;

use super::{db_err, Db};
use yoi_store::StoreError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PodState {
    /// Registered and polling for work.
    Idle,
    /// Running an assignment.
    Working,
    /// Finishing its current work before it exits; it claims nothing new.
    Draining,
    /// Said goodbye.
    Stopped,
}

impl PodState {
    pub fn as_str(self) -> &'static str {
        match self {
            PodState::Idle => "idle",
            PodState::Working => "working",
            PodState::Draining => "draining",
            PodState::Stopped => "stopped",
        }
    }

    fn parse(s: &str) -> Result<PodState, StoreError> {
        Ok(match s {
            "idle" => PodState::Idle,
            "working" => PodState::Working,
            "draining" => PodState::Draining,
            "stopped" => PodState::Stopped,
            other => {
                return Err(StoreError::Database {
                    reason: format!("pods.state holds unknown value {other:?}"),
                })
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct PodRow {
    pub id: String,
    pub name: String,
    #[schema(value_type = yoi_core::role::Role)]
    pub role: String,
    pub host: String,
    pub pid: Option<i64>,
    pub profile: Option<String>,
    pub state: PodState,
    pub registered_ms: i64,
    pub heartbeat_ms: i64,
    pub assignment: Option<String>,
    /// The token it registered with.
    #[serde(skip)]
    pub token_id: String,
    /// The sandbox its agents run in, as it reported it.
    pub sandbox: Option<String>,
    /// The provider its profile belongs to (`[agents.NAME] provider`), for rate-limit pauses
    /// and the governor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

const COLUMNS: &str =
    "id, name, role, host, pid, profile, state, registered_ms, heartbeat_ms, assignment_id, token_id, sandbox, provider";

impl Db {
    pub async fn register_pod(&self, p: &PodRow) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "INSERT INTO pods ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        ))
        .bind(p.id.clone())
        .bind(p.name.clone())
        .bind(p.role.clone())
        .bind(p.host.clone())
        .bind(p.pid)
        .bind(p.profile.clone())
        .bind(p.state.as_str())
        .bind(p.registered_ms)
        .bind(p.heartbeat_ms)
        .bind(p.assignment.clone())
        .bind(p.token_id.clone())
        .bind(p.sandbox.clone())
        .bind(p.provider.clone())
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        Ok(())
    }

    /// Record that pod `id` spoke at `now_ms`, in `state`, working on `assignment`.
    pub async fn touch_pod(
        &self,
        id: &str,
        state: PodState,
        assignment: Option<&str>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE pods SET state = $2, assignment_id = $3, heartbeat_ms = $4 WHERE id = $1",
        )
        .bind(id)
        .bind(state.as_str())
        .bind(assignment)
        .bind(now_ms)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn pod(&self, id: &str) -> Result<Option<PodRow>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM pods WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
        row.as_ref().map(pod).transpose()
    }

    /// The pods among `ids` that exist, in one query.
    pub async fn pods_by_id(&self, ids: &[&str]) -> Result<Vec<PodRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {COLUMNS} FROM pods WHERE id IN ({})",
            super::placeholders(1, ids.len())
        );
        let mut q = sqlx::query(&sql);
        for id in ids {
            q = q.bind(id.to_string());
        }
        let rows = q.fetch_all(self.pool()).await.map_err(db_err)?;
        rows.iter().map(pod).collect()
    }

    /// Every pod that has not said goodbye, and those that did within `keep_ms` of `now_ms`.
    pub async fn pods(&self, now_ms: i64, keep_ms: i64) -> Result<Vec<PodRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM pods WHERE state <> 'stopped' OR heartbeat_ms >= $1 \
              ORDER BY role, registered_ms, id"
        ))
        .bind(now_ms - keep_ms)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(pod).collect()
    }
}

fn pod(r: &sqlx::any::AnyRow) -> Result<PodRow, StoreError> {
    let state: String = r.try_get(6).map_err(db_err)?;
    Ok(PodRow {
        id: r.try_get(0).map_err(db_err)?,
        name: r.try_get(1).map_err(db_err)?,
        role: r.try_get(2).map_err(db_err)?,
        host: r.try_get(3).map_err(db_err)?,
        pid: r.try_get(4).map_err(db_err)?,
        profile: r.try_get(5).map_err(db_err)?,
        state: PodState::parse(&state)?,
        registered_ms: r.try_get(7).map_err(db_err)?,
        heartbeat_ms: r.try_get(8).map_err(db_err)?,
        assignment: r.try_get(9).map_err(db_err)?,
        token_id: r.try_get(10).map_err(db_err)?,
        sandbox: r.try_get(11).map_err(db_err)?,
        provider: r.try_get(12).map_err(db_err)?,
    })
}
