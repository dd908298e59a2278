//! The answer epoch: one number that moves with every write to what the server's kept API
//! answers read from the database besides the ticket index (assignments, skill activations,
//! tokens), so a server can tell those writes — from any process — apart from the writes that
//! leave every answer as it was (a pod's heartbeat, a claim that found nothing, the outbox).
//!
//! The index itself follows the ticket files, and a ticket's files are watched one ticket at a
//! time (`watch.rs`), so a comment on one ticket does not touch this number; that is what lets
//! a server keep every other ticket's answer (`read_your_writes.rs`).
//!
//! A writer adds one ([`bump`]) in the transaction of its write, or right after it and before
//! it answers anyone: a reader that reads the old number then reads the new rows at worst, and
//! keeps them under the old number until it reads the new one. Only writes that changed a row
//! bump, so nothing done on every poll does.

use sqlx::Row;
use yoi_store::StoreError;

use crate::{db_err, Db, Dialect};

/// What a reader of kept answers learns from the database in one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamps {
    /// PostgreSQL's commit stamp ([`Db::commit_stamp`]); `None` with SQLite.
    pub commit: Option<u128>,
    /// The answer epoch.
    pub epoch: i64,
}

impl Db {
    /// The answer epoch and, on PostgreSQL, the commit stamp, read in one statement (one
    /// snapshot).
    pub async fn answer_stamps(&self) -> Result<Stamps, StoreError> {
        if self.dialect == Dialect::Sqlite {
            let epoch: i64 = sqlx::query("SELECT n FROM answer_epoch WHERE id = 1")
                .fetch_one(&self.pool)
                .await
                .and_then(|r| r.try_get(0))
                .map_err(db_err)?;
            return Ok(Stamps {
                commit: None,
                epoch,
            });
        }
        let row = sqlx::query(
            "SELECT CAST(pg_current_snapshot() AS TEXT), n FROM answer_epoch WHERE id = 1",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        let text: String = row.try_get(0).map_err(db_err)?;
        let epoch: i64 = row.try_get(1).map_err(db_err)?;
        let commit = crate::parse_snapshot(&text).ok_or_else(|| StoreError::Database {
            reason: format!("PostgreSQL answered `{text}` for its current snapshot"),
        })?;
        Ok(Stamps {
            commit: Some(commit),
            epoch,
        })
    }

    /// The answer epoch alone.
    pub async fn answer_epoch(&self) -> Result<i64, StoreError> {
        Ok(self.answer_stamps().await?.epoch)
    }
}

/// Move the answer epoch on: call it with the connection (or transaction) of a write that
/// changed assignments, activations or tokens, after that write.
pub(crate) async fn bump<'c, E>(conn: E) -> Result<(), StoreError>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    sqlx::query("UPDATE answer_epoch SET n = n + 1 WHERE id = 1")
        .execute(conn)
        .await
        .map_err(db_err)?;
    Ok(())
}
