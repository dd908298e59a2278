//! The sqlx database: an index of the ticket files plus runtime state that files cannot hold
//! (assignments, pods, tokens, skill activations, outbox deliveries, operation ids). SQLite at
//! `.yoi/local/yoi.db` by default (WAL, busy timeout, `BEGIN IMMEDIATE` for writes); a
//! `postgres://` URL switches to PostgreSQL with the same SQL — one portable migrations folder,
//! `$N` placeholders, no dialect-only types.
//!
//! Everything on [`Db`] is async; [`DbIndex`] is the synchronous facade that everything on a
//! blocking thread calls — the file operations' index hook, the engine, doctor, the CLI —
//! across the one [`Bridge`] its frontend gave it (`blocking.rs` holds the line, and
//! `scripts/check-boundaries` keeps `block_on` out of the callers). `sqlx::Error` never leaves
//! this crate: it becomes [`StoreError::Database`] (and no other crate of yoi depends on sqlx
//! outside its tests, which `scripts/check-boundaries` checks).
//!
//! A long-lived reader (`yoi serve`) also keeps the index as fresh as the files from here: the
//! inotify [`watch`] and [`read_your_writes`], which drains it before each request and keeps the
//! answer and token caches exact.

mod activations;
pub mod answer_epoch;
mod assignments;
mod blocking;
mod board;
pub mod broken;
mod bulk;
mod commit_rounds;
mod copy;
pub mod forge;
pub mod inbox;
mod inspect;
mod lease;
mod lists;
pub mod notify;
mod outbox;
mod pods;
pub mod queue_reads;
mod read_ahead;
pub mod read_your_writes;
mod reindex;
mod routing_events;
mod snapshot;
pub mod spend;
mod sync_calls;
mod thread_page;
pub mod ticket_answers;
pub mod ticket_detail;
mod tokens;
pub mod watch;
pub mod workflows;
mod workspace;

use std::borrow::Cow;
use std::time::Duration;

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::AnyConnection;
use sqlx::{AnyPool, Row};

pub use activations::ActivationRow;
pub use assignments::{Assignment, AssignmentStatus, Finish};
pub use blocking::{Bridge, DbIndex};
pub use board::{CardFacts, Waiting, Working};
pub use copy::TableCopy;
pub use inspect::{
    DeadDelivery, KeysOf, OutboxKey, Span, SpanKeys, SpanRows, TicketRow, Undelivered,
};
pub use lease::{LeaseHolder, LEASE_MS, RENEW_EVERY};
pub use lists::{IndexedTicket, Page};
pub use outbox::{
    outbox_kind, Delivery, EventPayload, OutboxEvent, OutboxKind, PlanPayload, MAX_ATTEMPTS,
};
pub use pods::{PodRow, PodState};
pub use read_ahead::SpanReader;
pub use reindex::{IndexStats, ReindexMode};
pub use routing_events::RoutingWindow;
pub use snapshot::{event_key, event_key_of, indexed_plan, plan_key};
pub use thread_page::ThreadPage;
pub use tokens::{
    admin_token_name, hash_secret, is_admin_token_name, new_secret, write_secret_file, Scope,
    TokenInfo, ADMIN_TOKEN_FILE, SESSION_PREFIX,
};
pub use workspace::schema_url;
pub use yoi_store::workspace::sqlite_url;

use yoi_store::StoreError;

/// Migrations compiled into the binary, in version order.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "index",
        include_str!("../../../migrations/0001_index.sql"),
    ),
    (
        2,
        "tokens",
        include_str!("../../../migrations/0002_tokens.sql"),
    ),
    (
        3,
        "skill_activations",
        include_str!("../../../migrations/0003_skill_activations.sql"),
    ),
    (
        4,
        "assignments",
        include_str!("../../../migrations/0004_assignments.sql"),
    ),
    (5, "pods", include_str!("../../../migrations/0005_pods.sql")),
    (
        6,
        "covering_ticket_indexes",
        include_str!("../../../migrations/0006_covering_ticket_indexes.sql"),
    ),
    (
        7,
        "broken_tickets",
        include_str!("../../../migrations/0007_broken_tickets.sql"),
    ),
    (
        8,
        "pod_sandbox",
        include_str!("../../../migrations/0008_pod_sandbox.sql"),
    ),
    (
        9,
        "workspaces",
        include_str!("../../../migrations/0009_workspaces.sql"),
    ),
    (
        10,
        "inbox",
        include_str!("../../../migrations/0010_inbox.sql"),
    ),
    (
        11,
        "workflows",
        include_str!("../../../migrations/0011_workflows.sql"),
    ),
    (
        12,
        "forge",
        include_str!("../../../migrations/0012_forge.sql"),
    ),
    (
        13,
        "spend",
        include_str!("../../../migrations/0013_spend.sql"),
    ),
    (
        14,
        "spend_index",
        include_str!("../../../migrations/0014_spend_index.sql"),
    ),
    (
        15,
        "token_expiry",
        include_str!("../../../migrations/0015_token_expiry.sql"),
    ),
    (
        16,
        "events_latest_of_kind",
        include_str!("../../../migrations/0016_events_latest_of_kind.sql"),
    ),
    (
        17,
        "answer_epoch",
        include_str!("../../../migrations/0017_answer_epoch.sql"),
    ),
    (
        18,
        "thread_events",
        include_str!("../../../migrations/0018_thread_events.sql"),
    ),
    (
        19,
        "inbox_from_events",
        include_str!("../../../migrations/0019_inbox_from_events.sql"),
    ),
    (
        20,
        "answer_changes",
        include_str!("../../../migrations/0020_answer_changes.sql"),
    ),
    (
        21,
        "queued_second",
        include_str!("../../../migrations/0021_queued_second.sql"),
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A connected, migrated database.
#[derive(Debug, Clone)]
pub struct Db {
    pool: AnyPool,
    dialect: Dialect,
}

/// `$first, $first+1, …`: `n` numbered parameters for an `IN (…)` list.
pub(crate) fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `SELECT … WHERE col IN ($1, …)` for `ids`, with the ids bound.
pub(crate) fn among<'q, S: AsRef<str>>(
    sql: &'q str,
    ids: &'q [S],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    ids.iter()
        .fold(sqlx::query(sql), |q, id| q.bind(id.as_ref()))
}

/// What a process keeps of the embedded database in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Footprint {
    /// A long-lived process: a large cache per connection, so repeated reads are fast.
    Service,
    /// `yoi serve`: as [`Footprint::Service`], and no checkpoint inside a commit; the server
    /// calls [`Db::checkpoint`] from a task of its own.
    Server,
    /// A command that reads what it needs once and exits: SQLite's small defaults.
    Command,
    /// A command that reads whole tables once, in key order (doctor): no page is wanted twice,
    /// so each connection keeps 256 KiB of pages instead of 2 MiB (4 MiB less at the peak of
    /// doctor's two connections on a 10,000-ticket tree, for no measurable time).
    Scan,
}

pub(crate) fn db_err(e: sqlx::Error) -> StoreError {
    StoreError::Database {
        reason: e.to_string(),
    }
}

/// The file an `sqlite:` URL names (`None`: not SQLite, or an in-memory database).
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    (!path.is_empty() && !path.starts_with(':')).then(|| std::path::PathBuf::from(path))
}

impl Db {
    /// Connect and run migrations, for a long-running service. Refuses a database written by
    /// a newer yoi.
    pub async fn open(url: &str) -> Result<Db, StoreError> {
        Db::open_as(url, Footprint::Service).await
    }

    /// [`Db::open`] with the memory of `footprint`, on the database's default schema.
    pub async fn open_as(url: &str, footprint: Footprint) -> Result<Db, StoreError> {
        Db::open_workspace(url, footprint, None).await
    }

    /// [`Db::open_as`] for the workspace `id` (`[workspace] id`): on PostgreSQL its rows live
    /// in a schema of their own, `yoi_<id>` (created when missing), so one database holds any
    /// number of workspaces apart; on either database the id is recorded on first use and a
    /// database made for another workspace is refused (`DbSetup::OtherWorkspace`).
    pub async fn open_workspace(
        url: &str,
        footprint: Footprint,
        id: Option<&str>,
    ) -> Result<Db, StoreError> {
        sqlx::any::install_default_drivers();
        let dialect = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Dialect::Postgres
        } else if url.starts_with("sqlite:") {
            Dialect::Sqlite
        } else {
            return Err(StoreError::bad_input(
                "database_url",
                format!("`{}` is neither sqlite: nor postgres://", redact(url)),
            ));
        };
        let schema = match (dialect, id) {
            (Dialect::Postgres, Some(id)) => Some(workspace::ensure_schema(url, id).await?),
            _ => None,
        };
        let search_path: Option<std::sync::Arc<str>> =
            schema.map(|s| format!("SET search_path TO \"{s}\"").into());
        let pool = AnyPoolOptions::new()
            .max_connections(if dialect == Dialect::Sqlite { 4 } else { 8 })
            .acquire_timeout(Duration::from_secs(30))
            .after_connect(move |conn, _| {
                let search_path = search_path.clone();
                Box::pin(async move {
                    if let Some(set) = search_path {
                        sqlx::query(&set).execute(&mut *conn).await?;
                    }
                    if dialect == Dialect::Sqlite {
                        let memory = match footprint {
                            // Each connection keeps up to 8 MiB of pages decoded, instead of
                            // 2 MiB read back with a system call each (docs/database.md). No
                            // mapping: every connection's mapping counts in the server's
                            // resident memory again (4 × 64 MiB of the same 200 MiB file at
                            // 100,000 tickets), and repeated reads are answered from the
                            // server's own caches before they reach SQLite.
                            Footprint::Service => [
                                "PRAGMA mmap_size = 0",
                                "PRAGMA cache_size = -8192",
                                "PRAGMA wal_autocheckpoint = 1000",
                            ],
                            // And no checkpoint in a commit: the server checkpoints from a
                            // task of its own ([`Db::checkpoint`]), so a write never waits for
                            // the log to be copied into the database file (~10 ms of the
                            // commit that crossed SQLite's 1,000-page mark).
                            Footprint::Server => [
                                "PRAGMA mmap_size = 0",
                                "PRAGMA cache_size = -8192",
                                "PRAGMA wal_autocheckpoint = 0",
                            ],
                            // A command reads each page about once: SQLite's own defaults.
                            Footprint::Command => [
                                "PRAGMA mmap_size = 0",
                                "PRAGMA cache_size = -2000",
                                "PRAGMA wal_autocheckpoint = 1000",
                            ],
                            Footprint::Scan => [
                                "PRAGMA mmap_size = 0",
                                "PRAGMA cache_size = -256",
                                "PRAGMA wal_autocheckpoint = 1000",
                            ],
                        };
                        for pragma in [
                            "PRAGMA journal_mode = WAL",
                            "PRAGMA busy_timeout = 10000",
                            "PRAGMA synchronous = NORMAL",
                        ]
                        .into_iter()
                        .chain(memory)
                        {
                            sqlx::query(pragma).execute(&mut *conn).await?;
                        }
                    }
                    Ok(())
                })
            })
            .connect(url)
            .await
            .map_err(|e| StoreError::Database {
                reason: format!("cannot open {}: {e}", redact(url)),
            })?;
        let db = Db { pool, dialect };
        db.migrate(url).await?;
        if let Some(id) = id {
            db.claim_for_workspace(url, id).await?;
        }
        Ok(db)
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    async fn migrate(&self, url: &str) -> Result<(), StoreError> {
        let known = MIGRATIONS.iter().map(|m| m.0).max().unwrap_or(0);
        let exists = match self.dialect {
            Dialect::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
            Dialect::Postgres => "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = '_sqlx_migrations'",
        };
        let n: i64 = sqlx::query(exists)
            .fetch_one(&self.pool)
            .await
            .and_then(|r| r.try_get(0))
            .map_err(db_err)?;
        if n > 0 {
            let newest: i64 = sqlx::query("SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations")
                .fetch_one(&self.pool)
                .await
                .and_then(|r| r.try_get(0))
                .map_err(db_err)?;
            if newest > known {
                return Err(StoreError::DatabaseTooNew {
                    url: redact(url),
                    found: newest,
                    known,
                });
            }
        }
        let migrator = Migrator {
            migrations: Cow::Owned(
                MIGRATIONS
                    .iter()
                    .map(|(v, d, sql)| {
                        Migration::new(
                            *v,
                            Cow::Borrowed(*d),
                            MigrationType::Simple,
                            Cow::Borrowed(*sql),
                            false,
                        )
                    })
                    .collect(),
            ),
            ..Migrator::DEFAULT
        };
        migrator
            .run(&self.pool)
            .await
            .map_err(|e| StoreError::Database {
                reason: format!("migrating {}: {e}", redact(url)),
            })
    }

    /// Copy SQLite's write-ahead log into the database file as far as no reader still needs
    /// it (`wal_checkpoint(PASSIVE)`: it waits for nobody, and writers go on meanwhile). The
    /// server's connections make no checkpoint of their own; it calls this from a task. A
    /// no-op on PostgreSQL.
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        if self.dialect != Dialect::Sqlite {
            return Ok(());
        }
        sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(db_err)
    }

    /// Start a write transaction: `BEGIN IMMEDIATE` on SQLite so a read-modify-write never
    /// has to upgrade its lock, plain `BEGIN` on PostgreSQL.
    pub(crate) async fn begin_write(&self, conn: &mut AnyConnection) -> Result<(), StoreError> {
        let sql = match self.dialect {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres => "BEGIN",
        };
        sqlx::query(sql)
            .execute(conn)
            .await
            .map(|_| ())
            .map_err(db_err)
    }

    /// Commit on success, roll back on error, and pass the result through.
    pub(crate) async fn end_write<T>(
        &self,
        conn: &mut AnyConnection,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match result {
            Ok(v) => {
                sqlx::query("COMMIT").execute(conn).await.map_err(db_err)?;
                Ok(v)
            }
            Err(e) => {
                let _ = sqlx::query("ROLLBACK").execute(conn).await;
                Err(e)
            }
        }
    }

    /// Where PostgreSQL's committed state stands, as one number (`None` with SQLite, whose
    /// file the server watches instead). It is read from the server's current snapshot, not
    /// from any table, so writes pay nothing for it: the snapshot's upper bound (the newest
    /// finished transaction, plus one) only grows, and below it the set of transactions still
    /// running only shrinks. So two equal stamps read at two moments mean nothing committed in
    /// between, and a later stamp never orders before an earlier one. Any transaction of the
    /// cluster that writes moves it, also in other databases: that costs a cache miss, never a
    /// stale answer. Needs PostgreSQL 13 or newer (`pg_current_snapshot`).
    pub async fn commit_stamp(&self) -> Result<Option<u128>, StoreError> {
        if self.dialect == Dialect::Sqlite {
            return Ok(None);
        }
        let text: String = sqlx::query("SELECT CAST(pg_current_snapshot() AS TEXT)")
            .fetch_one(&self.pool)
            .await
            .and_then(|r| r.try_get(0))
            .map_err(db_err)?;
        parse_snapshot(&text)
            .map(Some)
            .ok_or_else(|| StoreError::Database {
                reason: format!("PostgreSQL answered `{text}` for its current snapshot"),
            })
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// `xmin:xmax:xip,…` (PostgreSQL's text form of a snapshot) as one ordered number: `xmax` in
/// the high half, and fewer running transactions ordering later in the low half.
fn parse_snapshot(text: &str) -> Option<u128> {
    let mut parts = text.trim().split(':');
    let (_xmin, xmax, running) = (parts.next()?, parts.next()?, parts.next()?);
    let xmax: u64 = xmax.parse().ok()?;
    let running = running.split(',').filter(|x| !x.is_empty()).count() as u64;
    parts
        .next()
        .is_none()
        .then_some((u128::from(xmax) << 64) | u128::from(u64::MAX - running))
}

/// A database URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &creds[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_stamp_grows_with_commits_and_shrinking_running_sets() {
        let idle = parse_snapshot("750:750:").unwrap();
        let two_running = parse_snapshot("748:752:748,749").unwrap();
        let one_running = parse_snapshot("748:752:749").unwrap();
        let later = parse_snapshot("753:753:").unwrap();
        assert!(idle < two_running && two_running < one_running && one_running < later);
        assert_eq!(parse_snapshot("748:752:748,749"), Some(two_running));
        for bad in ["", "1:2", "1:x:", "1:2:3:4"] {
            assert_eq!(parse_snapshot(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn redact_hides_passwords() {
        assert_eq!(
            redact("postgres://yoi:secret@127.0.0.1:5432/db"),
            "postgres://yoi:***@127.0.0.1:5432/db"
        );
        assert_eq!(redact("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
    }
}
