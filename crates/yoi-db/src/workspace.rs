//! Whose rows a database holds: the workspace's PostgreSQL schema, the id a database records
//! on first use, and the rows a workspace left behind in its previous database.

use sqlx::{AnyConnection, Connection, Row};
use yoi_store::{DbSetup, StoreError};

use crate::{db_err, redact, Db};

/// The key of the workspace id in `workspace_meta`.
const WORKSPACE_ID: &str = "workspace_id";

/// The PostgreSQL schema of workspace `id`.
pub fn schema_of(id: &str) -> String {
    format!("yoi_{id}")
}

/// `url` as workspace `id` sees it: a PostgreSQL URL that connects into the workspace's schema
/// (`options[search_path]`), for a tool or a test that opens its own connections; any other URL
/// (SQLite, or no id) unchanged.
pub fn schema_url(url: &str, id: Option<&str>) -> String {
    match id {
        Some(id) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            let sep = if url.contains('?') { '&' } else { '?' };
            format!("{url}{sep}options%5Bsearch_path%5D={}", schema_of(id))
        }
        _ => url.to_string(),
    }
}

/// Make sure workspace `id`'s schema exists in the PostgreSQL database at `url`; returns its
/// name. A schema made beforehand by someone else (a role that may not create schemas) is used
/// as it is: the existence check comes first, because PostgreSQL checks the right to create
/// before `IF NOT EXISTS`.
pub(crate) async fn ensure_schema(url: &str, id: &str) -> Result<String, StoreError> {
    let schema = schema_of(id);
    let mut conn = AnyConnection::connect(url)
        .await
        .map_err(|e| StoreError::Database {
            reason: format!("cannot open {}: {e}", redact(url)),
        })?;
    if !schema_exists(&mut conn, &schema).await? {
        // The name is `yoi_` and a checked id (lowercase letters, digits, `_`): safe to quote.
        let created = sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .execute(&mut conn)
            .await;
        if let Err(e) = created {
            // Another process may have made it meanwhile; anything else is said as it is.
            if !schema_exists(&mut conn, &schema).await? {
                let _ = conn.close().await;
                return Err(StoreError::DatabaseSetup {
                    problem: DbSetup::CannotCreate {
                        url: redact(url),
                        schema,
                        reason: e
                            .as_database_error()
                            .map(|d| d.message().to_string())
                            .unwrap_or_else(|| e.to_string()),
                    },
                });
            }
        }
    }
    let _ = conn.close().await;
    Ok(schema)
}

async fn schema_exists(conn: &mut AnyConnection, schema: &str) -> Result<bool, StoreError> {
    sqlx::query("SELECT COUNT(*) FROM pg_namespace WHERE nspname = $1")
        .bind(schema)
        .fetch_one(conn)
        .await
        .and_then(|r| r.try_get::<i64, _>(0))
        .map(|n| n > 0)
        .map_err(db_err)
}

/// How many rows of each kind that cannot be rebuilt from the files a database holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeRows {
    pub tokens: i64,
    pub pods: i64,
    pub assignments: i64,
}

impl RuntimeRows {
    pub fn any(&self) -> bool {
        self.tokens + self.pods + self.assignments > 0
    }
}

impl Db {
    /// Record workspace `id` in a database new to it, or refuse one made for another. Only a
    /// database new to it is written to: a command that reads stays a reader.
    pub(crate) async fn claim_for_workspace(&self, url: &str, id: &str) -> Result<(), StoreError> {
        let found = match self.workspace_id().await? {
            Some(found) => found,
            None => {
                // Both databases know `ON CONFLICT … DO NOTHING`: the first opener records it.
                sqlx::query(
                    "INSERT INTO workspace_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                )
                .bind(WORKSPACE_ID)
                .bind(id)
                .execute(self.pool())
                .await
                .map_err(db_err)?;
                self.workspace_id().await?.unwrap_or_else(|| id.to_string())
            }
        };
        if found != id {
            return Err(StoreError::DatabaseSetup {
                problem: DbSetup::OtherWorkspace {
                    url: redact(url),
                    found,
                    expected: id.to_string(),
                },
            });
        }
        Ok(())
    }

    /// The workspace id this database was made for (`None`: one from before ids).
    pub async fn workspace_id(&self) -> Result<Option<String>, StoreError> {
        sqlx::query("SELECT value FROM workspace_meta WHERE key = $1")
            .bind(WORKSPACE_ID)
            .fetch_optional(self.pool())
            .await
            .and_then(|r| r.map(|r| r.try_get(0)).transpose())
            .map_err(db_err)
    }

    /// The rows of this database that the files cannot give back.
    pub async fn runtime_rows(&self) -> Result<RuntimeRows, StoreError> {
        let count = |sql: &'static str| async move {
            sqlx::query(sql)
                .fetch_one(self.pool())
                .await
                .and_then(|r| r.try_get::<i64, _>(0))
                .map_err(db_err)
        };
        Ok(RuntimeRows {
            tokens: count("SELECT COUNT(*) FROM tokens WHERE revoked_ms IS NULL").await?,
            pods: count("SELECT COUNT(*) FROM pods").await?,
            assignments: count("SELECT COUNT(*) FROM assignments").await?,
        })
    }
}

/// What the SQLite file at `path` holds that the files cannot give back, read without writing
/// to it (read-only, no migration): `None` when it holds nothing of the kind or is not a yoi
/// database.
pub async fn left_in_sqlite(path: &std::path::Path) -> Option<RuntimeRows> {
    let url = format!("sqlite://{}?mode=ro", path.display());
    let mut conn = AnyConnection::connect(&url).await.ok()?;
    let mut rows = RuntimeRows::default();
    for (sql, slot) in [
        (
            "SELECT COUNT(*) FROM tokens WHERE revoked_ms IS NULL",
            &mut rows.tokens,
        ),
        ("SELECT COUNT(*) FROM pods", &mut rows.pods),
        ("SELECT COUNT(*) FROM assignments", &mut rows.assignments),
    ] {
        // A table an older file lacks counts as empty.
        *slot = sqlx::query(sql)
            .fetch_one(&mut conn)
            .await
            .and_then(|r| r.try_get::<i64, _>(0))
            .unwrap_or(0);
    }
    let _ = conn.close().await;
    rows.any().then_some(rows)
}
