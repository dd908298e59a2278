//! Keeping the index in step with the files: per-ticket sync (after each operation), the
//! incremental start-up pass (size + mtime, then content hash), and the full rebuild.
//!
//! A ticket's rows are always replaced from its files in one transaction, so the index can
//! never hold half of an update. Thread events are keyed by their id (events written without
//! one get `legacy:<ticket>:<position>`); every event gains exactly one outbox row, so
//! consumers see everything the files record, even events written while no index was attached.

use std::collections::{BTreeMap, BTreeSet};

use sqlx::AnyConnection;
use sqlx::Row;
use yoi_core::{State, TicketId};

use super::outbox::{add_outbox, plan_payload, OutboxKind};
use super::snapshot::{
    file_stat, fingerprinted, is_ticket, look_at, plan_key, read_snapshot, snapshot,
    ticket_changed, FileStat, Seen, Snapshot,
};
use super::{db_err, Db};
use yoi_store::index_hook::{AppendedThread, OpRecord};
use yoi_store::workspace::Workspace;
use yoi_store::StoreError;

const BATCH: usize = 250;
/// Tickets read at a time by a full rebuild (read in parallel, then written in multi-row
/// statements).
const BULK_BATCH: usize = 2000;
/// Tickets per transaction of a full rebuild. Each commit writes every page its inserts
/// dirtied to the log, and the inserts into indexes keyed at random (`relations_target`, the
/// events' ids) dirty pages all over those indexes: the larger the index, the more pages per
/// ticket, so with a commit every 2,000 tickets the bytes written per ticket doubled from
/// 10,000 to 100,000 tickets (1.43 GB written for a 275 MB database; BENCHMARKS.md, issue 45).
/// A commit every 20,000 keeps them about as they are at 10,000. The rows in memory stay one
/// read at a time; only SQLite's log holds more between commits.
const COMMIT_TICKETS: usize = 20_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReindexMode {
    /// Re-read only tickets whose files changed (size, mtime, then hash).
    Incremental,
    /// Drop every index row and re-read every ticket. Outbox, deliveries and operations stay.
    Full,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct IndexStats {
    pub scanned: usize,
    pub reindexed: usize,
    pub removed: usize,
    pub outbox_added: usize,
}

impl Db {
    /// Re-read these tickets into the index in one transaction; record `ops` with them. Of
    /// the tickets whose threads a group commit only `appended` to, those whose rows provably
    /// hold everything before the append gain just their new events
    /// ([`super::bulk::append_snapshots`]); the others are rewritten whole.
    pub async fn sync_tickets(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
        appended: &[AppendedThread],
        ops: &[OpRecord],
        now_ms: i64,
    ) -> Result<usize, StoreError> {
        let snaps: Vec<Snapshot> = ids.iter().map(|id| snapshot(ws, id)).collect();
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        self.begin_write(&mut conn).await?;
        let result = async {
            let (mut added, rest) = if appended.is_empty() {
                (0, snaps.iter().collect())
            } else {
                super::bulk::append_snapshots(&mut conn, &snaps, appended, now_ms).await?
            };
            if rest.len() > 1 {
                // Many tickets (a group commit): a few multi-row statements for all of them.
                added += super::bulk::rewrite_snapshots(&mut conn, &rest, now_ms).await?;
            } else {
                for s in rest {
                    added += write_snapshot(&mut conn, s, now_ms).await?;
                }
            }
            super::bulk::record_ops(&mut conn, ops, now_ms).await?;
            Ok(added)
        }
        .await;
        self.end_write(&mut conn, result).await
    }

    /// Which of these tickets differ from what the index saw, as the incremental pass tells
    /// (size and mtime, then the content hash): `(changed, gone)`, gone meaning the folder
    /// holds no item.md any more while the index has the ticket. Reads only.
    pub async fn stale_tickets(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
    ) -> Result<(Vec<TicketId>, Vec<TicketId>), StoreError> {
        let mut changed = Vec::new();
        let mut gone = Vec::new();
        for (id, look) in self.looked_at(ws, ids).await? {
            match look {
                Look::Changed => changed.push(id),
                Look::Gone => gone.push(id),
                Look::Same(_) | Look::Absent => {}
            }
        }
        Ok((changed, gone))
    }

    /// What [`Db::stale_tickets`] tells of each of `ids`, with the fingerprints of the files of
    /// those that are as the index saw them.
    pub(crate) async fn looked_at(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
    ) -> Result<Vec<(TicketId, Look)>, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        // One query per few hundred tickets: after a group commit every request's settle
        // looks at the group's tickets.
        let mut indexed: BTreeMap<String, Vec<FileStat>> = BTreeMap::new();
        for chunk in ids.chunks(BATCH) {
            let sql = format!(
                "SELECT ticket_id, name, size, mtime_ns, hash FROM ticket_files WHERE ticket_id IN ({})",
                super::placeholders(1, chunk.len())
            );
            let rows = super::among(&sql, chunk).fetch_all(&mut *conn).await;
            for r in rows.map_err(db_err)? {
                if let Some(stat) = file_stat(&r, 1)? {
                    indexed
                        .entry(r.try_get(0).map_err(db_err)?)
                        .or_default()
                        .push(stat);
                }
            }
        }
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let seen = look_at(ws, id);
            let known = indexed.remove(id.as_str()).unwrap_or_default();
            let look = if !is_ticket(&seen) {
                if known.is_empty() {
                    Look::Absent
                } else {
                    Look::Gone
                }
            } else if ticket_changed(ws, id, &seen, (!known.is_empty()).then_some(&known)) {
                Look::Changed
            } else {
                Look::Same(seen)
            };
            out.push((id.clone(), look));
        }
        Ok(out)
    }

    /// Bring just these tickets in line with their files (see [`Db::stale_tickets`], which
    /// this asks again: a caller may have looked before it held the lock): a changed ticket is
    /// read again, a gone one loses its rows. Returns how many. Call under the workspace lock,
    /// as every index write is (the outbox numbers its rows inside the transaction);
    /// [`super::DbIndex::refresh`] takes it.
    pub async fn refresh(
        &self,
        ws: &Workspace,
        ids: &[TicketId],
        now_ms: i64,
    ) -> Result<usize, StoreError> {
        let (changed, gone) = self.stale_tickets(ws, ids).await?;
        if changed.is_empty() && gone.is_empty() {
            return Ok(0);
        }
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        let snaps: Vec<Snapshot> = changed.iter().map(|id| snapshot(ws, id)).collect();
        self.begin_write(&mut conn).await?;
        let r = async {
            for id in &gone {
                delete_ticket_rows(&mut conn, id.as_str()).await?;
            }
            for s in &snaps {
                write_snapshot(&mut conn, s, now_ms).await?;
            }
            Ok(())
        }
        .await;
        self.end_write(&mut conn, r).await?;
        Ok(changed.len() + gone.len())
    }

    /// Every file fingerprint the index holds, as an incremental reindex reads them, `batch`
    /// rows at a time: (ticket, file, size, mtime in ns, hash), in ticket and file order.
    pub async fn file_fingerprints(
        &self,
        batch: usize,
    ) -> Result<Vec<(String, &'static str, i64, i64, String)>, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        let stats = load_file_stats_by(&mut conn, self.dialect(), batch.max(1)).await?;
        Ok(stats
            .into_iter()
            .flat_map(|(t, files)| {
                files.into_iter().map(move |f| {
                    let hash = f.hash.unwrap_or_default();
                    (t.clone(), f.name, f.size, f.mtime_ns, hash)
                })
            })
            .collect())
    }

    /// Bring the index in line with the files (see [`ReindexMode`]).
    pub async fn reindex(
        &self,
        ws: &Workspace,
        mode: ReindexMode,
        now_ms: i64,
    ) -> Result<IndexStats, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        // An index that knows no file at all (a first build, or one whose fingerprints were
        // lost) is rebuilt whole: every row is derived from the files anyway, so looking at
        // every file first to compare with nothing would only cost a stat per file.
        let mode = if mode == ReindexMode::Incremental && !knows_any_file(&mut conn).await? {
            ReindexMode::Full
        } else {
            mode
        };
        // The files are looked at (on every core) while the index's record of them is read: a
        // folder is a ticket when its item.md is a file, so that is one stat, not two.
        let looking = (mode == ReindexMode::Incremental).then(|| {
            let ws = ws.clone();
            std::thread::spawn(move || -> Result<Vec<(TicketId, Seen)>, StoreError> {
                let folders = ws.ticket_folders()?;
                let seen = yoi_store::tickets::parallel_map(&folders, |id| Ok(look_at(&ws, id)))?;
                Ok(folders
                    .into_iter()
                    .zip(seen)
                    .filter(|(_, seen)| is_ticket(seen))
                    .collect())
            })
        });
        let known = match mode {
            ReindexMode::Incremental => load_file_stats(&mut conn, self.dialect()).await?,
            ReindexMode::Full => BTreeMap::new(),
        };
        let (ids, seen): (Vec<TicketId>, Vec<Seen>) = match looking.map(|h| h.join()) {
            Some(Ok(found)) => found?.into_iter().unzip(),
            Some(Err(_)) => {
                return Err(StoreError::Database {
                    reason: "a thread looking at the ticket files panicked".into(),
                })
            }
            // Told from other folders by the readers (see `read_snapshot`).
            None => (ws.ticket_folders()?, Vec::new()),
        };
        let on_disk: BTreeSet<&TicketId> = ids.iter().collect();
        let mode = if known.is_empty() {
            ReindexMode::Full
        } else {
            mode
        };
        // A full rebuild counts the tickets as it reads them (its `ids` may be every folder).
        let mut stats = IndexStats {
            scanned: if mode == ReindexMode::Full {
                0
            } else {
                ids.len()
            },
            ..IndexStats::default()
        };
        let (changed, gone): (Vec<TicketId>, Vec<String>) = match mode {
            ReindexMode::Full => {
                self.begin_write(&mut conn).await?;
                let tables = [
                    "tickets",
                    "ticket_files",
                    "relations",
                    "events",
                    "plan_records",
                    "broken_tickets",
                ];
                // PostgreSQL's DELETE leaves every old row behind as a dead tuple until a
                // vacuum, so each rebuild would make the next one (and every read) slower;
                // TRUNCATE gives the tables back empty, inside the same transaction. It needs
                // more than DELETE's privilege, so a role without it still deletes (behind a
                // savepoint: a failed statement would end the transaction). SQLite truncates a
                // DELETE without WHERE by itself.
                let postgres = self.dialect() == super::Dialect::Postgres;
                let r = async {
                    let mut truncated = false;
                    if postgres {
                        let all = format!("TRUNCATE {}", tables.join(", "));
                        sqlx::query("SAVEPOINT yoi_truncate")
                            .execute(&mut *conn)
                            .await
                            .map_err(db_err)?;
                        truncated = sqlx::query(&all).execute(&mut *conn).await.is_ok();
                        let end = if truncated {
                            "RELEASE SAVEPOINT yoi_truncate"
                        } else {
                            "ROLLBACK TO SAVEPOINT yoi_truncate"
                        };
                        sqlx::query(end).execute(&mut *conn).await.map_err(db_err)?;
                    }
                    if !truncated {
                        for t in tables {
                            sqlx::query(&format!("DELETE FROM {t}"))
                                .execute(&mut *conn)
                                .await
                                .map_err(db_err)?;
                        }
                    }
                    Ok(())
                }
                .await;
                self.end_write(&mut conn, r).await?;
                (ids.clone(), Vec::new())
            }
            ReindexMode::Incremental => {
                let changed = ids
                    .iter()
                    .zip(&seen)
                    .filter(|(id, now)| ticket_changed(ws, id, now, known.get(id.as_str())))
                    .map(|(id, _)| id.clone())
                    .collect();
                let gone = known
                    .keys()
                    .filter(|k| {
                        TicketId::parse(k)
                            .map(|t| !on_disk.contains(&t))
                            .unwrap_or(true)
                    })
                    .cloned()
                    .collect();
                (changed, gone)
            }
        };
        drop(conn);
        if !gone.is_empty() {
            let mut conn = self.pool().acquire().await.map_err(db_err)?;
            self.begin_write(&mut conn).await?;
            let r = async {
                for id in &gone {
                    delete_ticket_rows(&mut conn, id).await?;
                }
                Ok(())
            }
            .await;
            self.end_write(&mut conn, r).await?;
            stats.removed = gone.len();
        }
        if mode == ReindexMode::Full {
            let mut conn = self.pool().acquire().await.map_err(db_err)?;
            let mut known = super::bulk::outbox_ids(&mut conn).await?;
            // Read the next chunk, and make its rows, on other threads while this one is
            // written: the writer only binds values.
            let read = |chunk: Vec<TicketId>| {
                let ws = ws.clone();
                std::thread::spawn(move || {
                    let rows = yoi_store::tickets::parallel_map(&chunk, |id| {
                        Ok(read_snapshot(&ws, id, true)
                            .map(|s| super::bulk::Rows::of(std::slice::from_ref(&s)).into_owned()))
                    })?;
                    let mut all = super::bulk::Rows::default();
                    let mut tickets = 0;
                    for r in rows.into_iter().flatten() {
                        all.append(r);
                        tickets += 1;
                    }
                    Ok::<_, StoreError>((tickets, all))
                })
            };
            let mut chunks = changed.chunks(BULK_BATCH).map(<[TicketId]>::to_vec);
            let mut next = chunks.next().map(read);
            // Tickets written in the transaction still open (0: none is open).
            let mut open = 0usize;
            while let Some(reading) = next.take() {
                let got = reading
                    .join()
                    .map_err(|_| StoreError::Database {
                        reason: "a reader thread of the rebuild panicked".into(),
                    })
                    .and_then(|r| r);
                let (tickets, rows) = match got {
                    Ok(r) => r,
                    Err(e) if open > 0 => return self.end_write(&mut conn, Err(e)).await,
                    Err(e) => return Err(e),
                };
                next = chunks.next().map(read);
                if open == 0 {
                    self.begin_write(&mut conn).await?;
                }
                let r = super::bulk::write_rows(&mut conn, rows, &mut known, now_ms).await;
                open += tickets;
                let r = match r {
                    Ok(added) if open < COMMIT_TICKETS && next.is_some() => added,
                    r => {
                        open = 0;
                        self.end_write(&mut conn, r).await?
                    }
                };
                stats.outbox_added += r;
                stats.scanned += tickets;
                stats.reindexed += tickets;
            }
            return Ok(stats);
        }
        for chunk in changed.chunks(BATCH) {
            let snaps: Vec<Snapshot> =
                yoi_store::tickets::parallel_map(chunk, |id| Ok(snapshot(ws, id)))?;
            let mut conn = self.pool().acquire().await.map_err(db_err)?;
            self.begin_write(&mut conn).await?;
            let r = async {
                let mut added = 0;
                for s in &snaps {
                    added += write_snapshot(&mut conn, s, now_ms).await?;
                }
                Ok(added)
            }
            .await;
            stats.outbox_added += self.end_write(&mut conn, r).await?;
            stats.reindexed += chunk.len();
        }
        Ok(stats)
    }
}

/// Whether the index holds a fingerprint of any file.
async fn knows_any_file(conn: &mut AnyConnection) -> Result<bool, StoreError> {
    Ok(sqlx::query("SELECT 1 FROM ticket_files LIMIT 1")
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?
        .is_some())
}

/// Every file fingerprint the index holds, by ticket.
///
/// Read a few thousand rows at a time, each batch aggregated into one text (a line per row,
/// fields split by tabs: ids, names and hex hashes hold neither): sqlx hands rows over one
/// message at a time between threads, and a row costs far more that way than its bytes. Row by
/// row, the 30,000 records of 10,000 tickets cost about 10,000 thread switches, a third of a
/// CLI read. Batches, not one text: at 100,000 tickets the whole would be 30 MB at once.
async fn load_file_stats(
    conn: &mut AnyConnection,
    dialect: super::Dialect,
) -> Result<BTreeMap<String, Vec<FileStat>>, StoreError> {
    load_file_stats_by(conn, dialect, 4096).await
}

/// [`load_file_stats`], `batch` rows at a time.
async fn load_file_stats_by(
    conn: &mut AnyConnection,
    dialect: super::Dialect,
    batch: usize,
) -> Result<BTreeMap<String, Vec<FileStat>>, StoreError> {
    let sql = match dialect {
        super::Dialect::Sqlite => format!(
            "SELECT group_concat(ticket_id || char(9) || name || char(9) || size || char(9) \
                    || mtime_ns || char(9) || hash, char(10) ORDER BY ticket_id, name), count(*) \
               FROM (SELECT * FROM ticket_files WHERE (ticket_id, name) > ($1, $2) \
                      ORDER BY ticket_id, name LIMIT {batch})"
        ),
        super::Dialect::Postgres => format!(
            "SELECT string_agg(ticket_id || chr(9) || name || chr(9) || CAST(size AS TEXT) \
                    || chr(9) || CAST(mtime_ns AS TEXT) || chr(9) || hash, chr(10) \
                    ORDER BY ticket_id, name), count(*) \
               FROM (SELECT * FROM ticket_files WHERE (ticket_id, name) > ($1, $2) \
                      ORDER BY ticket_id, name LIMIT {batch}) AS batch"
        ),
    };
    let bad = |line: &str| StoreError::Database {
        reason: format!("a ticket_files row did not read back: {line:?}"),
    };
    let mut out: BTreeMap<String, Vec<FileStat>> = BTreeMap::new();
    let mut after = (String::new(), String::new());
    loop {
        let row = sqlx::query(&sql)
            .bind(&after.0)
            .bind(&after.1)
            .fetch_one(&mut *conn)
            .await
            .map_err(db_err)?;
        let text: Option<String> = row.try_get(0).map_err(db_err)?;
        let count: i64 = row.try_get(1).map_err(db_err)?;
        let Some(text) = text else {
            return Ok(out);
        };
        // The batch is the next rows in key order, listed in that order (the database's, which
        // on PostgreSQL follows its collation), so the next batch starts after its last line.
        let mut last: Option<(&str, &str)> = None;
        for line in text.split('\n') {
            let mut f = line.split('\t');
            let (Some(ticket), Some(name), Some(size), Some(mtime), Some(hash), None) =
                (f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
            else {
                return Err(bad(line));
            };
            last = Some((ticket, name));
            let Some(name) = fingerprinted(name) else {
                continue;
            };
            let stat = FileStat {
                name,
                size: size.parse().map_err(|_| bad(line))?,
                mtime_ns: mtime.parse().map_err(|_| bad(line))?,
                hash: Some(hash.to_string()),
            };
            match out.get_mut(ticket) {
                Some(v) => v.push(stat),
                None => {
                    out.insert(ticket.to_string(), vec![stat]);
                }
            }
        }
        if (count as usize) < batch {
            return Ok(out);
        }
        let (t, n) = last.ok_or_else(|| bad(""))?;
        after = (t.to_string(), n.to_string());
    }
}

async fn delete_ticket_rows(conn: &mut AnyConnection, id: &str) -> Result<(), StoreError> {
    for sql in [
        "DELETE FROM tickets WHERE id = $1",
        "DELETE FROM ticket_files WHERE ticket_id = $1",
        "DELETE FROM relations WHERE ticket_id = $1",
        "DELETE FROM events WHERE ticket_id = $1",
        "DELETE FROM plan_records WHERE ticket_id = $1",
        "DELETE FROM broken_tickets WHERE ticket_id = $1",
    ] {
        sqlx::query(sql)
            .bind(id)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

/// Replace one ticket's rows from its snapshot; returns the number of outbox rows added.
async fn write_snapshot(
    conn: &mut AnyConnection,
    s: &Snapshot,
    now_ms: i64,
) -> Result<usize, StoreError> {
    let id = s.id.as_str();
    sqlx::query("DELETE FROM tickets WHERE id = $1")
        .bind(id)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    if let Some(item) = &s.item {
        if !matches!(item.state, State::Inprogress | State::Queued) {
            super::assignments::cancel_open(&mut *conn, id, now_ms).await?;
        }
        let body = item.body_text().to_string();
        let search = format!("{}\n{}", item.title, body).to_lowercase();
        sqlx::query(
            "INSERT INTO tickets (id, title, state, created_at, updated_at, target_ref, flow, readiness, priority, queued_by, queued_at, body, search_text, thread_events) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(id)
        .bind(item.title.clone())
        .bind(item.state.as_str())
        .bind(item.created_at.to_string())
        .bind(item.updated_at.to_string())
        .bind(item.effective_target_ref())
        .bind(item.flow.clone())
        .bind(item.readiness.clone())
        .bind(item.priority.clone())
        .bind(item.queued_by.clone())
        .bind(item.queued_at.map(|t| t.to_string()))
        .bind(body)
        .bind(search)
        .bind(s.thread_events())
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    }
    sqlx::query("DELETE FROM relations WHERE ticket_id = $1")
        .bind(id)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    for r in &s.relations {
        sqlx::query("INSERT INTO relations (ticket_id, kind, target, note, author, at) VALUES ($1, $2, $3, $4, $5, $6)")
            .bind(id)
            .bind(r.kind.as_str())
            .bind(r.target.as_str())
            .bind(r.note.clone())
            .bind(r.author.clone())
            .bind(r.at.to_string())
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
    }
    sqlx::query("DELETE FROM plan_records WHERE ticket_id = $1")
        .bind(id)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    let mut added = 0;
    for p in &s.plan {
        sqlx::query("INSERT INTO plan_records (ticket_id, id, kind, related_ticket, at, record) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (ticket_id, id) DO NOTHING")
            .bind(id)
            .bind(p.id.clone())
            .bind(p.kind.as_str())
            .bind(p.related_ticket.as_ref().map(|t| t.to_string()))
            .bind(p.at.to_string())
            .bind(serde_json::to_string(p).unwrap_or_default())
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        let payload = plan_payload(id, p);
        added += add_outbox(
            conn,
            &plan_key(&s.id, &p.id),
            id,
            OutboxKind::PlanRecordAdded,
            &payload,
            now_ms,
        )
        .await?;
    }
    // Events: append the new tail when the indexed prefix still matches, else replace.
    let existing: Vec<String> =
        sqlx::query("SELECT id FROM events WHERE ticket_id = $1 ORDER BY position")
            .bind(id)
            .fetch_all(&mut *conn)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(|r| r.try_get::<String, _>(0))
            .collect::<Result<_, _>>()
            .map_err(db_err)?;
    let prefix_holds = existing.len() <= s.events.len()
        && existing.iter().zip(&s.events).all(|(a, (b, _))| a == b);
    let start = if prefix_holds {
        existing.len()
    } else {
        sqlx::query("DELETE FROM events WHERE ticket_id = $1")
            .bind(id)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        0
    };
    // The new tail and the outbox rows it lacks, in multi-row statements (every event, old
    // or new, has its outbox row, idempotent by event id).
    let tail: Vec<(usize, &(String, yoi_core::thread::Event))> =
        s.events.iter().enumerate().skip(start).collect();
    added += super::bulk::write_event_tail(conn, id, &tail, now_ms).await?;
    sqlx::query("DELETE FROM ticket_files WHERE ticket_id = $1")
        .bind(id)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    for f in &s.files {
        sqlx::query("INSERT INTO ticket_files (ticket_id, name, size, mtime_ns, hash) VALUES ($1, $2, $3, $4, $5)")
            .bind(id)
            .bind(f.name)
            .bind(f.size)
            .bind(f.mtime_ns)
            .bind(f.hash.clone().unwrap_or_default())
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
    }
    sqlx::query("DELETE FROM broken_tickets WHERE ticket_id = $1")
        .bind(id)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    if s.broken() {
        sqlx::query("INSERT INTO broken_tickets (ticket_id) VALUES ($1)")
            .bind(id)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
    }
    Ok(added)
}

impl Db {
    pub async fn find_operation(&self, op_id: &str) -> Result<Option<OpRecord>, StoreError> {
        let row = sqlx::query("SELECT op_id, fingerprint, ticket_id, operation, result FROM operations WHERE op_id = $1")
            .bind(op_id)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
        let Some(r) = row else { return Ok(None) };
        let result: String = r.try_get(4).map_err(db_err)?;
        let ticket: String = r.try_get(2).map_err(db_err)?;
        Ok(Some(OpRecord {
            op_id: r.try_get(0).map_err(db_err)?,
            fingerprint: r.try_get(1).map_err(db_err)?,
            ticket: TicketId::parse(&ticket)?,
            operation: r.try_get(3).map_err(db_err)?,
            outcome: serde_json::from_str(&result).map_err(|e| StoreError::Database {
                reason: format!("operation {op_id}: stored result unreadable: {e}"),
            })?,
        }))
    }
}

/// One ticket's files against what the index saw of them ([`Db::looked_at`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Look {
    /// As the index saw them; their fingerprints now.
    Same(Seen),
    /// Changed since.
    Changed,
    /// The folder holds no item.md any more; the index has the ticket.
    Gone,
    /// Neither the folder nor the index has the ticket.
    Absent,
}
