//! `yoi db copy`: every table of one database into another, verified.
//!
//! Each table is copied in one transaction of the target (its rows there are replaced, so a
//! copy that was interrupted is simply run again), then counted and checksummed on both sides.
//! The checksum does not depend on row order or on the database: each row is digested from its
//! values in column order, and the sorted digests are digested again, so SQLite and PostgreSQL
//! (whose text orderings differ) agree on equal contents. The lease and the migration record
//! are each database's own and are not copied.

use serde::Serialize;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};
use yoi_store::workspace::Workspace;
use yoi_store::{DbSetup, StoreError};

use crate::{db_err, redact, Db, DbIndex, Dialect, Footprint, LeaseHolder};

/// Tables that belong to one database, not to the workspace's contents.
const NOT_COPIED: &[&str] = &[
    "_sqlx_migrations",
    "server_lease",
    "answer_epoch",
    "answer_changes",
];

/// One table copied: its rows and their checksum, equal on both sides.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TableCopy {
    pub table: String,
    pub rows: u64,
    pub checksum: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
    Text,
    Bytes,
}

impl Kind {
    fn of_declared(t: &str) -> Kind {
        let t = t.to_ascii_uppercase();
        if t.contains("INT") {
            Kind::Int
        } else if t.contains("REAL") || t.contains("DOUBLE") || t.contains("FLOAT") {
            Kind::Float
        } else if t.contains("BLOB") || t.contains("BYTEA") {
            Kind::Bytes
        } else {
            Kind::Text
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Val {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
}

impl Val {
    fn read(row: &AnyRow, i: usize, kind: Kind) -> Result<Val, sqlx::Error> {
        Ok(match kind {
            Kind::Int => row.try_get::<Option<i64>, _>(i)?.map(Val::Int),
            Kind::Float => row.try_get::<Option<f64>, _>(i)?.map(Val::Float),
            Kind::Text => row.try_get::<Option<String>, _>(i)?.map(Val::Text),
            Kind::Bytes => row.try_get::<Option<Vec<u8>>, _>(i)?.map(Val::Bytes),
        }
        .unwrap_or(Val::Null))
    }

    /// The value's bytes for the checksum, tagged so no two values of different kinds meet.
    fn digest_into(&self, out: &mut Vec<u8>) {
        let (tag, body): (u8, Vec<u8>) = match self {
            Val::Null => (0, Vec::new()),
            Val::Int(v) => (1, v.to_le_bytes().to_vec()),
            Val::Float(v) => (2, v.to_bits().to_le_bytes().to_vec()),
            Val::Text(v) => (3, v.as_bytes().to_vec()),
            Val::Bytes(v) => (4, v.clone()),
        };
        out.push(tag);
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
    }
}

impl Db {
    /// The tables whose rows a copy moves, in name order.
    async fn copied_tables(&self) -> Result<Vec<String>, StoreError> {
        let sql = match self.dialect {
            Dialect::Sqlite => {
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            }
            Dialect::Postgres => {
                "SELECT CAST(table_name AS TEXT) FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1"
            }
        };
        let names: Vec<String> = sqlx::query(sql)
            .fetch_all(self.pool())
            .await
            .and_then(|rows| rows.iter().map(|r| r.try_get(0)).collect())
            .map_err(db_err)?;
        Ok(names
            .into_iter()
            .filter(|n| !NOT_COPIED.contains(&n.as_str()))
            .collect())
    }

    /// `table`'s columns in their declared order, with the kind of value each holds.
    async fn columns(&self, table: &str) -> Result<Vec<(String, Kind)>, StoreError> {
        let rows = match self.dialect {
            Dialect::Sqlite => {
                sqlx::query("SELECT name, type FROM pragma_table_info($1) ORDER BY cid")
                    .bind(table)
                    .fetch_all(self.pool())
                    .await
            }
            Dialect::Postgres => sqlx::query(
                "SELECT CAST(column_name AS TEXT), CAST(data_type AS TEXT) FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
            )
            .bind(table)
            .fetch_all(self.pool())
            .await,
        }
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                let name: String = r.try_get(0)?;
                let declared: String = r.try_get(1)?;
                Ok((name, Kind::of_declared(&declared)))
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err)
    }

    async fn rows_of(
        &self,
        table: &str,
        columns: &[(String, Kind)],
    ) -> Result<Vec<Vec<Val>>, StoreError> {
        let list = quoted_list(columns);
        let rows = sqlx::query(&format!("SELECT {list} FROM \"{table}\""))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                columns
                    .iter()
                    .enumerate()
                    .map(|(i, (_, kind))| Val::read(r, i, *kind))
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<_, _>>()
            .map_err(|e| StoreError::Database {
                reason: format!("reading {table}: {e}"),
            })
    }

    /// The row count and order-free checksum of `table`.
    async fn table_sum(
        &self,
        table: &str,
        columns: &[(String, Kind)],
    ) -> Result<(u64, String), StoreError> {
        let rows = self.rows_of(table, columns).await?;
        Ok((rows.len() as u64, checksum(&rows)))
    }

    /// Copy every table of this database into `target` (both migrated to the same version),
    /// replacing what `target` held, and verify each by its rows and checksum. `progress` hears
    /// of each table once it is verified.
    pub async fn copy_into(
        &self,
        target: &Db,
        mut progress: impl FnMut(&TableCopy),
    ) -> Result<Vec<TableCopy>, StoreError> {
        let mut done = Vec::new();
        for table in self.copied_tables().await? {
            let columns = self.columns(&table).await?;
            let theirs = target.columns(&table).await?;
            if theirs.iter().map(|c| &c.0).ne(columns.iter().map(|c| &c.0)) {
                return Err(StoreError::Database {
                    reason: format!(
                        "table {table} has other columns in the target database; both must be at the same schema version"
                    ),
                });
            }
            let rows = self.rows_of(&table, &columns).await?;
            let mut conn = target.pool().acquire().await.map_err(db_err)?;
            target.begin_write(&mut conn).await?;
            let written = insert_all(&mut conn, &table, &columns, &rows).await;
            target.end_write(&mut conn, written).await?;
            drop(conn);
            let mine = (rows.len() as u64, checksum(&rows));
            let there = target.table_sum(&table, &columns).await?;
            if mine != there {
                return Err(StoreError::Database {
                    reason: format!(
                        "table {table} did not copy faithfully: {} rows (checksum {}) here, {} rows (checksum {}) there",
                        mine.0, mine.1, there.0, there.1
                    ),
                });
            }
            let copy = TableCopy {
                table,
                rows: mine.0,
                checksum: mine.1,
            };
            progress(&copy);
            done.push(copy);
        }
        Ok(done)
    }
}

impl DbIndex {
    /// Copy this workspace's database into the one at `to_url` (made or migrated first, and
    /// refused when it belongs to another workspace or a server of another clone serves it
    /// from there), verifying each table; `progress` hears of each. The caller holds the
    /// workspace lock and makes sure no server writes meanwhile.
    pub fn copy_to(
        &self,
        ws: &Workspace,
        to_url: &str,
        progress: impl FnMut(&TableCopy),
    ) -> Result<Vec<TableCopy>, StoreError> {
        let id = ws.config.workspace.id.as_deref();
        if !to_url.starts_with("sqlite:") && id.is_none() {
            return Err(StoreError::DatabaseSetup {
                problem: DbSetup::NoWorkspaceId {
                    url: redact(to_url),
                },
            });
        }
        if to_url == ws.database_url() {
            return Err(StoreError::bad_input(
                "to",
                format!("this workspace already uses {}", redact(to_url)),
            ));
        }
        if let Some(dir) =
            crate::sqlite_file(to_url).and_then(|f| f.parent().map(|p| p.to_path_buf()))
        {
            std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        }
        let target = self.run(Db::open_workspace(to_url, Footprint::Command, id))?;
        let result = (|| {
            if let Some(id) = id {
                let me = LeaseHolder::this_process(ws.root());
                self.run(target.check_server_lease(id, &me, self.now_ms()))?;
            }
            self.run(self.db.copy_into(&target, progress))
        })();
        self.run(target.close());
        result
    }
}

/// Replace `table`'s rows with `rows`, in the caller's transaction.
async fn insert_all(
    conn: &mut AnyConnection,
    table: &str,
    columns: &[(String, Kind)],
    rows: &[Vec<Val>],
) -> Result<(), StoreError> {
    sqlx::query(&format!("DELETE FROM \"{table}\""))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    if columns.is_empty() {
        return Ok(());
    }
    // Well under both databases' limit on parameters in one statement.
    let per_statement = (900 / columns.len()).max(1);
    let list = quoted_list(columns);
    for chunk in rows.chunks(per_statement) {
        let values = (0..chunk.len())
            .map(|r| {
                format!(
                    "({})",
                    crate::placeholders(r * columns.len() + 1, columns.len())
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!("INSERT INTO \"{table}\" ({list}) VALUES {values}");
        let mut q = sqlx::query(&sql);
        for row in chunk {
            for (v, (_, kind)) in row.iter().zip(columns) {
                q = match (v, kind) {
                    (Val::Int(v), _) => q.bind(*v),
                    (Val::Float(v), _) => q.bind(*v),
                    (Val::Text(v), _) => q.bind(v.clone()),
                    (Val::Bytes(v), _) => q.bind(v.clone()),
                    // A null still carries its column's type: PostgreSQL refuses a text null
                    // for a bigint column.
                    (Val::Null, Kind::Int) => q.bind(None::<i64>),
                    (Val::Null, Kind::Float) => q.bind(None::<f64>),
                    (Val::Null, Kind::Text) => q.bind(None::<String>),
                    (Val::Null, Kind::Bytes) => q.bind(None::<Vec<u8>>),
                };
            }
        }
        q.execute(&mut *conn)
            .await
            .map_err(|e| StoreError::Database {
                reason: format!("writing {table}: {e}"),
            })?;
    }
    Ok(())
}

fn quoted_list(columns: &[(String, Kind)]) -> String {
    columns
        .iter()
        .map(|(c, _)| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn checksum(rows: &[Vec<Val>]) -> String {
    let mut digests: Vec<String> = rows
        .iter()
        .map(|row| {
            let mut bytes = Vec::new();
            for v in row {
                v.digest_into(&mut bytes);
            }
            yoi_core::sha256_hex(&bytes)
        })
        .collect();
    digests.sort_unstable();
    yoi_core::sha256_hex(digests.concat().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_ignores_row_order_and_tells_kinds_apart() {
        let a = vec![Val::Int(1), Val::Text("x".into()), Val::Null];
        let b = vec![Val::Int(2), Val::Text("y".into()), Val::Bytes(vec![1])];
        assert_eq!(
            checksum(&[a.clone(), b.clone()]),
            checksum(&[b.clone(), a.clone()])
        );
        assert_ne!(checksum(std::slice::from_ref(&a)), checksum(&[b]));
        let as_text = vec![Val::Text("1".into()), Val::Text("x".into()), Val::Null];
        assert_ne!(checksum(std::slice::from_ref(&a)), checksum(&[as_text]));
        let empty_not_null = vec![Val::Int(1), Val::Text("x".into()), Val::Text(String::new())];
        assert_ne!(checksum(&[a]), checksum(&[empty_not_null]));
    }
}
