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
//!
//! A move may say what it changed ([`bump_for`], table `answer_changes`): the tickets whose
//! assignments or activations it wrote, or [`TOKENS`]. A reader that knows every move since
//! the number it kept answers at then drops only the answers about those tickets (and the
//! lists and counts, which may show them), and its tokens only for a move that names tokens.
//! A move that names nothing ([`bump`]) drops everything. The number and the move's names are
//! written in one transaction, the number first (on PostgreSQL its row lock orders the moves
//! as they commit), so a reader that sees a number sees every name of it.

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

/// Move the answer epoch on, naming nothing (every kept answer is dropped): call it with the
/// connection (or transaction) of a write that changed assignments, activations or tokens,
/// after that write.
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

/// The name a move of the epoch gives a write to tokens: no answer about tickets reads them.
pub const TOKENS: &str = "*tokens";

/// Moves whose names are kept; a reader further behind drops everything.
pub const NAMED_MOVES: i64 = 1000;

/// What one move of the epoch changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Moved {
    /// Something it did not name: every kept answer goes.
    Everything,
    /// Tokens alone (and these tickets' answers, when any).
    Tokens(Vec<String>),
    /// These tickets' answers (and lists and counts).
    Tickets(Vec<String>),
}

/// Move the answer epoch on, naming `what` (ticket ids, or [`TOKENS`]): inside the caller's
/// transaction on `conn`. An empty `what` names nothing, as [`bump`].
pub(crate) async fn bump_for(
    conn: &mut sqlx::AnyConnection,
    what: &[&str],
) -> Result<(), StoreError> {
    let n: i64 = sqlx::query("UPDATE answer_epoch SET n = n + 1 WHERE id = 1 RETURNING n")
        .fetch_one(&mut *conn)
        .await
        .and_then(|r| r.try_get(0))
        .map_err(db_err)?;
    let mut names: Vec<&str> = what.to_vec();
    names.sort_unstable();
    names.dedup();
    for name in names {
        sqlx::query("INSERT INTO answer_changes (n, ticket_id) VALUES ($1, $2)")
            .bind(n)
            .bind(name)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
    }
    if n % 100 == 0 {
        sqlx::query("DELETE FROM answer_changes WHERE n <= $1")
            .bind(n - NAMED_MOVES)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

impl Db {
    /// [`bump_for`] in a transaction of its own, right after a write that committed.
    pub(crate) async fn bump_own(&self, what: &[&str]) -> Result<(), StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        self.begin_write(&mut conn).await?;
        let result = bump_for(&mut conn, what).await;
        self.end_write(&mut conn, result).await
    }

    /// What each move of the epoch in `after + 1 ..= upto` changed, in order: one entry per
    /// move. Moves that named nothing (or whose names were deleted) are [`Moved::Everything`].
    pub async fn answer_moves(&self, after: i64, upto: i64) -> Result<Vec<Moved>, StoreError> {
        if upto <= after {
            return Ok(Vec::new());
        }
        if upto - after > NAMED_MOVES {
            return Ok(vec![Moved::Everything]);
        }
        let rows = sqlx::query(
            "SELECT n, ticket_id FROM answer_changes WHERE n > $1 AND n <= $2 ORDER BY n",
        )
        .bind(after)
        .bind(upto)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut named: std::collections::BTreeMap<i64, Vec<String>> = Default::default();
        for r in &rows {
            let n: i64 = r.try_get(0).map_err(db_err)?;
            named
                .entry(n)
                .or_default()
                .push(r.try_get(1).map_err(db_err)?);
        }
        Ok((after + 1..=upto)
            .map(|n| match named.remove(&n) {
                None => Moved::Everything,
                Some(names) if names.iter().any(|t| t == TOKENS) => {
                    Moved::Tokens(names.into_iter().filter(|t| t != TOKENS).collect())
                }
                Some(names) => Moved::Tickets(names),
            })
            .collect())
    }
}
