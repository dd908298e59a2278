//! The server lease: one server indexes a workspace. `yoi serve` takes it before it catches the
//! index up with its clone's files and renews it with a heartbeat; a server or command of
//! another clone (another host or folder) is refused while it is fresh, so two checkouts never
//! rewrite one set of rows. A server that stops gives it back; one that dies leaves it to lapse
//! [`LEASE_MS`] after its last heartbeat.

use std::time::Duration;

use sqlx::Row;
use yoi_store::{DbSetup, StoreError};

use crate::{db_err, Db};

/// How long a lease outlives its last heartbeat.
pub const LEASE_MS: i64 = 30_000;
/// How often a server renews its lease (a sixth of [`LEASE_MS`]).
pub const RENEW_EVERY: Duration = Duration::from_secs(5);

/// The one row of `server_lease`.
const SLOT: &str = "server";

/// Who holds, or asks for, the lease: a clone is a host and a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHolder {
    pub host: String,
    pub root: String,
    pub pid: i64,
}

impl LeaseHolder {
    /// This process, serving the clone at `root`.
    pub fn this_process(root: &std::path::Path) -> LeaseHolder {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .map(|h| h.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        LeaseHolder {
            host,
            root: root.display().to_string(),
            pid: i64::from(std::process::id()),
        }
    }
}

impl Db {
    /// Take the lease for `me` (a fresh draw `nonce` names this incarnation), unless a server
    /// of another clone holds it and heartbeat within [`LEASE_MS`].
    pub async fn take_server_lease(
        &self,
        workspace: &str,
        me: &LeaseHolder,
        nonce: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        // A lapsed lease, or one of this very clone (a server that died; a live one on this
        // clone is refused earlier, by its server.json), gives way.
        sqlx::query(
            "DELETE FROM server_lease WHERE slot = $1 AND (heartbeat_ms < $2 OR (host = $3 AND root = $4))",
        )
        .bind(SLOT)
        .bind(now_ms - LEASE_MS)
        .bind(&me.host)
        .bind(&me.root)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        sqlx::query(
            "INSERT INTO server_lease (slot, host, root, pid, address, nonce, heartbeat_ms) \
             VALUES ($1, $2, $3, $4, NULL, $5, $6) ON CONFLICT (slot) DO NOTHING",
        )
        .bind(SLOT)
        .bind(&me.host)
        .bind(&me.root)
        .bind(me.pid)
        .bind(nonce)
        .bind(now_ms)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        match self.lease_row().await? {
            Some(row) if row.nonce == nonce => Ok(()),
            Some(row) => Err(row.refusal(workspace, now_ms)),
            // Given back between the two statements: ask again.
            None => Box::pin(self.take_server_lease(workspace, me, nonce, now_ms)).await,
        }
    }

    /// Refuse `me` (a command) when a server of another clone holds a fresh lease: it would
    /// rewrite that server's index with this clone's files.
    pub async fn check_server_lease(
        &self,
        workspace: &str,
        me: &LeaseHolder,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        match self.lease_row().await? {
            Some(row)
                if row.heartbeat_ms >= now_ms - LEASE_MS
                    && (row.host != me.host || row.root != me.root) =>
            {
                Err(row.refusal(workspace, now_ms))
            }
            _ => Ok(()),
        }
    }

    /// Renew the lease `nonce` holds, recording the address it serves at. `false`: it is no
    /// longer this server's (it lapsed and another took it); the server must stop indexing.
    pub async fn renew_server_lease(
        &self,
        nonce: &str,
        address: Option<&str>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        sqlx::query(
            "UPDATE server_lease SET heartbeat_ms = $1, address = COALESCE($2, address) \
             WHERE slot = $3 AND nonce = $4",
        )
        .bind(now_ms)
        .bind(address)
        .bind(SLOT)
        .bind(nonce)
        .execute(self.pool())
        .await
        .map(|r| r.rows_affected() == 1)
        .map_err(db_err)
    }

    /// Give the lease back (a server that stops).
    pub async fn release_server_lease(&self, nonce: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM server_lease WHERE slot = $1 AND nonce = $2")
            .bind(SLOT)
            .bind(nonce)
            .execute(self.pool())
            .await
            .map(|_| ())
            .map_err(db_err)
    }

    async fn lease_row(&self) -> Result<Option<LeaseRow>, StoreError> {
        sqlx::query(
            "SELECT host, root, pid, address, nonce, heartbeat_ms FROM server_lease WHERE slot = $1",
        )
        .bind(SLOT)
        .fetch_optional(self.pool())
        .await
        .and_then(|r| {
            r.map(|r| {
                Ok(LeaseRow {
                    host: r.try_get(0)?,
                    root: r.try_get(1)?,
                    pid: r.try_get(2)?,
                    address: r.try_get(3)?,
                    nonce: r.try_get(4)?,
                    heartbeat_ms: r.try_get(5)?,
                })
            })
            .transpose()
        })
        .map_err(db_err)
    }
}

struct LeaseRow {
    host: String,
    root: String,
    pid: i64,
    address: Option<String>,
    nonce: String,
    heartbeat_ms: i64,
}

impl LeaseRow {
    fn refusal(self, workspace: &str, now_ms: i64) -> StoreError {
        StoreError::DatabaseSetup {
            problem: DbSetup::ServedElsewhere {
                workspace: workspace.to_string(),
                host: self.host,
                root: self.root,
                pid: self.pid,
                address: self.address,
                seconds_ago: (now_ms - self.heartbeat_ms).max(0) / 1000,
                lease_secs: LEASE_MS / 1000,
            },
        }
    }
}
