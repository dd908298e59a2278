//! Assignments: one step of a ticket's flow handed to a role (DESIGN §7). The orchestrator
//! writes the first one when it accepts a ticket; claims, leases and results come with pods.
//!
//! Only an in-progress ticket has open (`pending`, `claimed`) assignments — and a queued one,
//! while an acceptance is making its first. Whenever the index records a ticket in any other
//! state it cancels that ticket's open rows in the same transaction (see `db/index.rs`), so the
//! rule holds for closes and returns made through the API, the CLI in local mode, hand edits
//! and reindexing alike. A ticket whose item.md cannot be read is left alone.

use serde::Serialize;
use sqlx::Row;

use super::{db_err, Db};
use crate::error::StoreError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AssignmentStatus {
    Pending,
    Claimed,
    Done,
    Failed,
    Cancelled,
}

impl AssignmentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AssignmentStatus::Pending => "pending",
            AssignmentStatus::Claimed => "claimed",
            AssignmentStatus::Done => "done",
            AssignmentStatus::Failed => "failed",
            AssignmentStatus::Cancelled => "cancelled",
        }
    }

    fn parse(s: &str) -> Result<AssignmentStatus, StoreError> {
        Ok(match s {
            "pending" => AssignmentStatus::Pending,
            "claimed" => AssignmentStatus::Claimed,
            "done" => AssignmentStatus::Done,
            "failed" => AssignmentStatus::Failed,
            "cancelled" => AssignmentStatus::Cancelled,
            other => {
                return Err(StoreError::Database {
                    reason: format!("assignments.status holds unknown value {other:?}"),
                })
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assignment {
    pub id: String,
    pub ticket: String,
    pub step: String,
    pub role: String,
    pub attempt: i64,
    pub fence: i64,
    pub status: AssignmentStatus,
    pub lease_until_ms: Option<i64>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

const COLUMNS: &str =
    "id, ticket_id, step, role, attempt, fence, status, lease_until_ms, created_ms, updated_ms";

impl Db {
    pub async fn create_assignment(&self, a: &Assignment) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "INSERT INTO assignments ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        ))
        .bind(a.id.clone())
        .bind(a.ticket.clone())
        .bind(a.step.clone())
        .bind(a.role.clone())
        .bind(a.attempt)
        .bind(a.fence)
        .bind(a.status.as_str())
        .bind(a.lease_until_ms)
        .bind(a.created_ms)
        .bind(a.updated_ms)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        Ok(())
    }

    /// Remove one assignment (an acceptance undoing what it made); whether it existed.
    pub async fn delete_assignment(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM assignments WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        Ok(done.rows_affected() > 0)
    }

    /// Remove the `pending` assignments of a ticket: what an acceptance that died before moving
    /// the ticket to `inprogress` left behind. Returns how many.
    pub async fn discard_pending_assignments(&self, ticket: &str) -> Result<u64, StoreError> {
        let done =
            sqlx::query("DELETE FROM assignments WHERE ticket_id = $1 AND status = 'pending'")
                .bind(ticket)
                .execute(self.pool())
                .await
                .map_err(db_err)?;
        Ok(done.rows_affected())
    }

    /// Every open (`pending`, `claimed`) assignment, oldest first.
    pub async fn open_assignments(&self) -> Result<Vec<Assignment>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM assignments WHERE status IN ('pending', 'claimed') ORDER BY created_ms, id"
        ))
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(assignment).collect()
    }

    /// A ticket's assignments, oldest first.
    pub async fn assignments_of(&self, ticket: &str) -> Result<Vec<Assignment>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM assignments WHERE ticket_id = $1 ORDER BY created_ms, id"
        ))
        .bind(ticket)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(assignment).collect()
    }
}

/// Cancel the open (`pending`, `claimed`) assignments of a ticket, inside the caller's
/// transaction.
pub(crate) async fn cancel_open(
    conn: &mut sqlx::AnyConnection,
    ticket: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE assignments SET status = 'cancelled', updated_ms = $2 \
          WHERE ticket_id = $1 AND status IN ('pending', 'claimed')",
    )
    .bind(ticket)
    .bind(now_ms)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

fn assignment(r: &sqlx::any::AnyRow) -> Result<Assignment, StoreError> {
    let status: String = r.try_get(6).map_err(db_err)?;
    Ok(Assignment {
        id: r.try_get(0).map_err(db_err)?,
        ticket: r.try_get(1).map_err(db_err)?,
        step: r.try_get(2).map_err(db_err)?,
        role: r.try_get(3).map_err(db_err)?,
        attempt: r.try_get(4).map_err(db_err)?,
        fence: r.try_get(5).map_err(db_err)?,
        status: AssignmentStatus::parse(&status)?,
        lease_until_ms: r.try_get(7).map_err(db_err)?,
        created_ms: r.try_get(8).map_err(db_err)?,
        updated_ms: r.try_get(9).map_err(db_err)?,
    })
}
