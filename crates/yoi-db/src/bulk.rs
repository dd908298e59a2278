//! The full rebuild's writer: many tickets' rows into emptied index tables with multi-row
//! statements, instead of a dozen statements per ticket (also used to rewrite the tickets a
//! group commit changed). The rows are exactly those the
//! per-ticket writer (`index::write_snapshot`) makes; tests compare the two.

use std::borrow::{Borrow, Cow};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::json;
use sqlx::AnyConnection;
use sqlx::Row;
use yoi_core::State;

use super::db_err;
use super::outbox::{outbox_kind, outbox_payload, plan_payload, OutboxKind};
use super::snapshot::{plan_key, FileStat, Snapshot};
use yoi_core::thread::Event;
use yoi_store::index_hook::{AppendedThread, OpRecord};
use yoi_store::tickets::THREAD;
use yoi_store::StoreError;

/// One bound value: borrowed from the snapshot it describes where it can be, so a rebuild does
/// not copy every title, body and key before the database copies it once more. Fixed words
/// (states, kinds, file names) and a ticket's id, which every row of the ticket repeats, are
/// never copied, even by [`Rows::into_owned`].
pub(super) enum Val<'a> {
    Text(Option<Cow<'a, str>>),
    Static(&'static str),
    Shared(Arc<str>),
    Int(i64),
}

impl From<String> for Val<'_> {
    fn from(s: String) -> Self {
        Val::Text(Some(Cow::Owned(s)))
    }
}

impl<'a> From<&'a str> for Val<'a> {
    fn from(s: &'a str) -> Self {
        Val::Text(Some(Cow::Borrowed(s)))
    }
}

impl From<Option<String>> for Val<'_> {
    fn from(s: Option<String>) -> Self {
        Val::Text(s.map(Cow::Owned))
    }
}

impl<'a> From<Option<&'a str>> for Val<'a> {
    fn from(s: Option<&'a str>) -> Self {
        Val::Text(s.map(Cow::Borrowed))
    }
}

impl Val<'_> {
    fn into_owned(self) -> Val<'static> {
        match self {
            Val::Text(t) => Val::Text(t.map(|t| Cow::Owned(t.into_owned()))),
            Val::Static(t) => Val::Static(t),
            Val::Shared(t) => Val::Shared(t),
            Val::Int(n) => Val::Int(n),
        }
    }
}

impl From<i64> for Val<'_> {
    fn from(n: i64) -> Self {
        Val::Int(n)
    }
}

/// Bound values per statement where they are written `$N` on both engines (the `IN (…)` lists
/// of a group commit's update). sqlx resolves every named parameter by asking SQLite for its
/// name, which walks the statement's list of names, so there binding `$N` costs grow with the
/// square of the count (8,000 per statement spent two thirds of a rebuild, 240 still 13%).
const MAX_PARAMS: usize = 240;

/// Bound values per multi-row insert: on SQLite the values are anonymous `?`, which have no
/// names to walk, and on PostgreSQL binding is by position, so statements can be larger, and
/// fewer statements means fewer round trips to the connection's worker thread or the server
/// (PostgreSQL at 10,000 tickets: 240 values per statement 1.25 s, 1,000–4,000 about 0.93 s).
/// Handing SQLite one JSON array per statement to unpack with `json_each` was slower still:
/// `value->>N` parses the row again for every column.
const MAX_PARAMS_SQLITE: usize = 960;
const MAX_PARAMS_PG: usize = 2000;

/// `head VALUES (…), (…) tail` for `rows` of `cols` values each, in statements of at most
/// [`MAX_PARAMS_PG`] or [`MAX_PARAMS_SQLITE`] values.
pub(super) async fn insert_rows(
    conn: &mut AnyConnection,
    head: &str,
    tail: &str,
    cols: usize,
    rows: Vec<Vec<Val<'_>>>,
) -> Result<(), StoreError> {
    // Anonymous parameters bind in order, which is the order the values are pushed.
    let anonymous = conn.backend_name() == "SQLite";
    let max = if anonymous {
        MAX_PARAMS_SQLITE
    } else {
        MAX_PARAMS_PG
    };
    let per = (max / cols).max(1);
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let batch: Vec<Vec<Val>> = rows.by_ref().take(per).collect();
        let mut sql = String::with_capacity(head.len() + batch.len() * cols * 6);
        sql.push_str(head);
        sql.push_str(" VALUES ");
        let mut n = 0;
        for (i, row) in batch.iter().enumerate() {
            debug_assert_eq!(row.len(), cols);
            sql.push_str(if i == 0 { "(" } else { ", (" });
            for j in 0..cols {
                n += 1;
                if j > 0 {
                    sql.push_str(", ");
                }
                if anonymous {
                    sql.push('?');
                } else {
                    sql.push('$');
                    sql.push_str(&n.to_string());
                }
            }
            sql.push(')');
        }
        sql.push_str(tail);
        // Bound by reference: the batch outlives the statement.
        let mut q = sqlx::query(&sql);
        for v in batch.iter().flatten() {
            q = match v {
                Val::Text(t) => q.bind(t.as_deref()),
                Val::Static(t) => q.bind(*t),
                Val::Shared(t) => q.bind(&**t),
                Val::Int(i) => q.bind(*i),
            };
        }
        q.execute(&mut *conn).await.map_err(db_err)?;
    }
    Ok(())
}

/// The event ids the outbox already holds (so a rebuild adds only what is missing).
pub(super) async fn outbox_ids(conn: &mut AnyConnection) -> Result<HashSet<String>, StoreError> {
    let rows = sqlx::query("SELECT event_id FROM outbox")
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?;
    rows.iter()
        .map(|r| r.try_get::<String, _>(0).map_err(db_err))
        .collect()
}

/// Replace the rows of `snaps`' tickets (inside the caller's write transaction) as the full
/// rebuild writes them: their rows deleted with one statement per table, then written by
/// [`write_snapshots`], the outbox rows these tickets already have counted as known. A group
/// commit's index update: a dozen statements per ticket became a few for all of them.
pub(super) async fn rewrite_snapshots(
    conn: &mut AnyConnection,
    snaps: &[&Snapshot],
    now_ms: i64,
) -> Result<usize, StoreError> {
    let ids: Vec<String> = snaps.iter().map(|s| s.id.to_string()).collect();
    let mut known = HashSet::new();
    for chunk in ids.chunks(MAX_PARAMS) {
        let list = super::placeholders(1, chunk.len());
        for (table, column) in [
            ("tickets", "id"),
            ("relations", "ticket_id"),
            ("plan_records", "ticket_id"),
            ("events", "ticket_id"),
            ("ticket_files", "ticket_id"),
            ("broken_tickets", "ticket_id"),
        ] {
            let sql = format!("DELETE FROM {table} WHERE {column} IN ({list})");
            let mut q = sqlx::query(&sql);
            for id in chunk {
                q = q.bind(id.clone());
            }
            q.execute(&mut *conn).await.map_err(db_err)?;
        }
        let sql = format!("SELECT event_id FROM outbox WHERE ticket_id IN ({list})");
        let mut q = sqlx::query(&sql);
        for id in chunk {
            q = q.bind(id.clone());
        }
        for row in q.fetch_all(&mut *conn).await.map_err(db_err)? {
            known.insert(row.try_get::<String, _>(0).map_err(db_err)?);
        }
    }
    write_snapshots(conn, snaps, &mut known, now_ms).await
}

/// The index update of a group commit for the tickets whose threads it only appended to
/// (inside the caller's write transaction): each of `snaps` named in `appended` whose rows
/// provably hold everything before the append gains just its new events and their outbox
/// rows, its `updated_at` and thread.md's fingerprint; nothing else of it is written. Returns
/// the outbox rows added and the snapshots that do not qualify, to be rewritten whole.
///
/// A ticket qualifies when its item.md parses and its whole thread parses cleanly; the index
/// holds, for thread.md, the size and mtime it had before the group's first append and, for
/// every other file, the size and mtime it has now (the incremental pass's own test); and the
/// index's event keys are, position by position, the first of the thread's, with more after
/// them. A file changed behind the index's back fails one of those, and its ticket is read
/// whole as ever.
pub(super) async fn append_snapshots<'s>(
    conn: &mut AnyConnection,
    snaps: &'s [Snapshot],
    appended: &[AppendedThread],
    now_ms: i64,
) -> Result<(usize, Vec<&'s Snapshot>), StoreError> {
    let before: HashMap<&str, (i64, i64)> = appended
        .iter()
        .map(|a| (a.ticket.as_str(), (a.size, a.mtime_ns)))
        .collect();
    let (candidates, mut rest): (Vec<&Snapshot>, Vec<&Snapshot>) = snaps
        .iter()
        .partition(|s| s.item.is_some() && s.thread_clean && before.contains_key(s.id.as_str()));
    if candidates.is_empty() {
        return Ok((0, rest));
    }
    let ids: Vec<String> = candidates.iter().map(|s| s.id.to_string()).collect();
    let mut files: HashMap<String, Vec<(String, i64, i64)>> = HashMap::new();
    let mut keys: HashMap<String, Vec<(i64, String)>> = HashMap::new();
    for chunk in ids.chunks(MAX_PARAMS) {
        let list = super::placeholders(1, chunk.len());
        let sql = format!(
            "SELECT ticket_id, name, size, mtime_ns FROM ticket_files WHERE ticket_id IN ({list})"
        );
        for r in super::among(&sql, chunk)
            .fetch_all(&mut *conn)
            .await
            .map_err(db_err)?
        {
            let row = (
                r.try_get(1).map_err(db_err)?,
                r.try_get(2).map_err(db_err)?,
                r.try_get(3).map_err(db_err)?,
            );
            files
                .entry(r.try_get(0).map_err(db_err)?)
                .or_default()
                .push(row);
        }
        let sql = format!("SELECT ticket_id, position, id FROM events WHERE ticket_id IN ({list})");
        for r in super::among(&sql, chunk)
            .fetch_all(&mut *conn)
            .await
            .map_err(db_err)?
        {
            let row = (r.try_get(1).map_err(db_err)?, r.try_get(2).map_err(db_err)?);
            keys.entry(r.try_get(0).map_err(db_err)?)
                .or_default()
                .push(row);
        }
    }

    let mut events = Vec::new();
    let mut outbox: Vec<OutboxRow> = Vec::new();
    let mut touched: Vec<(&str, String, i64)> = Vec::new();
    let mut threads = Vec::new();
    for s in candidates {
        let id = s.id.as_str();
        let mut indexed = keys.remove(id).unwrap_or_default();
        indexed.sort();
        let k = indexed.len();
        let holds_the_prefix = k < s.events.len()
            && indexed
                .iter()
                .zip(&s.events)
                .enumerate()
                .all(|(i, ((position, key), (now, _)))| *position == i as i64 && key == now);
        let thread = s.files.iter().find(|f| f.name == THREAD);
        let (Some(item), Some(thread), true, true) = (
            &s.item,
            thread,
            holds_the_prefix,
            files_match(s, files.get(id), before[id]),
        ) else {
            rest.push(s);
            continue;
        };
        for (position, (key, e)) in s.events.iter().enumerate().skip(k) {
            events.push(event_row(id.into(), position, key, e));
            outbox.push(outbox_row(id, key, e));
        }
        touched.push((id, item.updated_at.to_string(), s.thread_events()));
        threads.push(file_row(id.into(), thread));
    }
    if touched.is_empty() {
        return Ok((0, rest));
    }

    // The new events' outbox rows, unless one is there already (an event moved by hand
    // between tickets keeps its row, as in the whole rewrite).
    let outbox = not_in_outbox(conn, outbox).await?;

    // Each ticket's last change and its thread's new count (its thread reads cleanly).
    for chunk in touched.chunks(MAX_PARAMS / 5) {
        let n = chunk.len();
        let mut sql = String::from("UPDATE tickets SET updated_at = CASE id");
        for i in 0..n {
            sql.push_str(&format!(" WHEN ${} THEN ${}", 2 * i + 1, 2 * i + 2));
        }
        sql.push_str(" END, thread_events = CASE id");
        for i in 0..n {
            sql.push_str(&format!(
                " WHEN ${} THEN ${}",
                2 * n + 2 * i + 1,
                2 * n + 2 * i + 2
            ));
        }
        sql.push_str(&format!(
            " END WHERE id IN ({})",
            super::placeholders(4 * n + 1, n)
        ));
        let mut q = sqlx::query(&sql);
        for (id, at, _) in chunk {
            q = q.bind(id.to_string()).bind(at.clone());
        }
        for (id, _, count) in chunk {
            q = q.bind(id.to_string()).bind(*count);
        }
        for (id, ..) in chunk {
            q = q.bind(id.to_string());
        }
        q.execute(&mut *conn).await.map_err(db_err)?;
    }
    insert_rows(
        conn,
        "INSERT INTO ticket_files (ticket_id, name, size, mtime_ns, hash)",
        " ON CONFLICT (ticket_id, name) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, hash = excluded.hash",
        5,
        threads,
    )
    .await?;
    insert_events(conn, events).await?;
    let added = add_outbox(conn, outbox, now_ms).await?;
    Ok((added, rest))
}

/// The outbox rows of `events` (a tail of one ticket's thread, each with its position and
/// index key) written into the index (inside the caller's write transaction) with a few
/// multi-row statements: the events' rows, and the outbox rows the outbox does not hold yet.
/// Returns the outbox rows added. What the per-ticket writer does with a thread it reads for
/// the first time, or whose tail is new: a row at a time, a 40,000-event thread took 9 s.
pub(super) async fn write_event_tail(
    conn: &mut AnyConnection,
    ticket: &str,
    events: &[(usize, &(String, Event))],
    now_ms: i64,
) -> Result<usize, StoreError> {
    let shared: Arc<str> = Arc::from(ticket);
    let rows = events
        .iter()
        .map(|(position, (key, e))| event_row(Val::Shared(shared.clone()), *position, key, e))
        .collect();
    insert_events(conn, rows).await?;
    let outbox = events
        .iter()
        .map(|(_, (key, e))| outbox_row(ticket, key, e))
        .collect();
    let outbox = not_in_outbox(conn, outbox).await?;
    add_outbox(conn, outbox, now_ms).await
}

/// `outbox` without the rows whose event the outbox holds already (under any ticket: an
/// event moved by hand between tickets keeps its row) and without repeats of one event, so
/// the rows numbered by [`add_outbox`] are all written and the numbers stay gap-free.
async fn not_in_outbox(
    conn: &mut AnyConnection,
    mut outbox: Vec<OutboxRow>,
) -> Result<Vec<OutboxRow>, StoreError> {
    let keys: Vec<String> = outbox.iter().map(|(key, ..)| key.clone()).collect();
    let mut known = HashSet::new();
    // Anonymous parameters on SQLite, as `insert_rows` binds them: named ones cost the square
    // of their count to bind, and a 25,000-event tail asks about every key.
    let anonymous = conn.backend_name() == "SQLite";
    let per = if anonymous {
        MAX_PARAMS_SQLITE
    } else {
        MAX_PARAMS_PG
    };
    for chunk in keys.chunks(per) {
        let list = if anonymous {
            vec!["?"; chunk.len()].join(", ")
        } else {
            super::placeholders(1, chunk.len())
        };
        let sql = format!("SELECT event_id FROM outbox WHERE event_id IN ({list})");
        for r in super::among(&sql, chunk)
            .fetch_all(&mut *conn)
            .await
            .map_err(db_err)?
        {
            known.insert(r.try_get::<String, _>(0).map_err(db_err)?);
        }
    }
    outbox.retain(|(key, ..)| known.insert(key.clone()));
    Ok(outbox)
}

/// Whether the index's fingerprints of a ticket's files (`indexed`: name, size, mtime) are
/// those of `s`'s files, except thread.md's, which must be `thread_before`.
fn files_match(
    s: &Snapshot,
    indexed: Option<&Vec<(String, i64, i64)>>,
    thread_before: (i64, i64),
) -> bool {
    let Some(indexed) = indexed else {
        return false;
    };
    let mut now: Vec<(&str, i64, i64)> = s
        .files
        .iter()
        .map(|f| {
            if f.name == THREAD {
                (f.name, thread_before.0, thread_before.1)
            } else {
                (f.name, f.size, f.mtime_ns)
            }
        })
        .collect();
    let mut was: Vec<(&str, i64, i64)> = indexed
        .iter()
        .map(|(name, size, mtime)| (name.as_str(), *size, *mtime))
        .collect();
    now.sort_unstable();
    was.sort_unstable();
    now == was
}

/// Record operations for replays (inside the caller's write transaction), in one statement
/// per few hundred values.
pub(super) async fn record_ops(
    conn: &mut AnyConnection,
    ops: &[OpRecord],
    now_ms: i64,
) -> Result<(), StoreError> {
    let rows = ops
        .iter()
        .map(|op| {
            vec![
                op.op_id.clone().into(),
                op.fingerprint.clone().into(),
                op.ticket.to_string().into(),
                op.operation.clone().into(),
                serde_json::to_string(&op.outcome)
                    .unwrap_or_default()
                    .into(),
                now_ms.into(),
            ]
        })
        .collect();
    insert_rows(
        conn,
        "INSERT INTO operations (op_id, fingerprint, ticket_id, operation, result, created_ms)",
        " ON CONFLICT (op_id) DO NOTHING",
        6,
        rows,
    )
    .await
}

/// Every row some tickets' files give the index tables, made before the write transaction
/// (a rebuild makes them on the threads that read the files, so its writer only binds them).
#[derive(Default)]
pub(super) struct Rows<'a> {
    tickets: Vec<Vec<Val<'a>>>,
    relations: Vec<Vec<Val<'a>>>,
    plans: Vec<Vec<Val<'a>>>,
    events: Vec<Vec<Val<'a>>>,
    files: Vec<Vec<Val<'a>>>,
    /// Tickets whose files yoi cannot read ([`Snapshot::broken`]).
    broken: Vec<Vec<Val<'a>>>,
    /// An outbox row for every plan record and event, in file order; the writer adds those the
    /// outbox does not hold yet.
    outbox: Vec<OutboxRow>,
    /// Tickets neither queued nor in progress: their open assignments are cancelled.
    settled: Vec<String>,
}

impl<'a> Rows<'a> {
    pub(super) fn of<S: Borrow<Snapshot>>(snaps: &'a [S]) -> Rows<'a> {
        let mut rows = Rows::default();
        for s in snaps {
            rows.add(s.borrow());
        }
        rows
    }

    fn add(&mut self, s: &'a Snapshot) {
        let id = s.id.as_str();
        let shared: Arc<str> = Arc::from(id);
        let idv = || Val::Shared(shared.clone());
        if let Some(item) = &s.item {
            if !matches!(item.state, State::Inprogress | State::Queued) {
                self.settled.push(id.to_string());
            }
            let body = item.body_text();
            let search = format!("{}\n{}", item.title, body).to_lowercase();
            self.tickets.push(vec![
                idv(),
                item.title.as_str().into(),
                Val::Static(item.state.as_str()),
                item.created_at.to_string().into(),
                item.updated_at.to_string().into(),
                item.effective_target_ref().into(),
                item.flow.as_deref().into(),
                item.readiness.as_deref().into(),
                item.priority.as_deref().into(),
                item.queued_by.as_deref().into(),
                item.queued_at.map(|t| t.to_string()).into(),
                body.into(),
                search.into(),
                s.thread_events().into(),
            ]);
        }
        for r in &s.relations {
            self.relations.push(vec![
                idv(),
                Val::Static(r.kind.as_str()),
                r.target.as_str().into(),
                r.note.as_deref().into(),
                r.author.as_str().into(),
                r.at.to_string().into(),
            ]);
        }
        for p in &s.plan {
            self.plans.push(vec![
                idv(),
                p.id.as_str().into(),
                Val::Static(p.kind.as_str()),
                p.related_ticket.as_ref().map(|t| t.to_string()).into(),
                p.at.to_string().into(),
                serde_json::to_string(p).unwrap_or_default().into(),
            ]);
            let payload = plan_payload(id, p);
            self.outbox.push((
                plan_key(&s.id, &p.id),
                id.to_string(),
                OutboxKind::PlanRecordAdded,
                payload.to_string(),
            ));
        }
        for (position, (key, e)) in s.events.iter().enumerate() {
            self.events.push(event_row(idv(), position, key, e));
            self.outbox.push(outbox_row(id, key, e));
        }
        self.files
            .extend(s.files.iter().map(|f| file_row(idv(), f)));
        if s.broken() {
            self.broken.push(vec![idv()]);
        }
    }

    /// These rows holding their own copies of every value, to cross threads.
    pub(super) fn into_owned(self) -> Rows<'static> {
        fn owned(rows: Vec<Vec<Val<'_>>>) -> Vec<Vec<Val<'static>>> {
            rows.into_iter()
                .map(|row| row.into_iter().map(Val::into_owned).collect())
                .collect()
        }
        Rows {
            tickets: owned(self.tickets),
            relations: owned(self.relations),
            plans: owned(self.plans),
            events: owned(self.events),
            files: owned(self.files),
            broken: owned(self.broken),
            outbox: self.outbox,
            settled: self.settled,
        }
    }

    /// `other`'s rows after these.
    pub(super) fn append(&mut self, mut other: Rows<'a>) {
        self.tickets.append(&mut other.tickets);
        self.relations.append(&mut other.relations);
        self.plans.append(&mut other.plans);
        self.events.append(&mut other.events);
        self.files.append(&mut other.files);
        self.broken.append(&mut other.broken);
        self.outbox.append(&mut other.outbox);
        self.settled.append(&mut other.settled);
    }
}

/// Write every row of `snaps` into the emptied index tables (inside the caller's write
/// transaction), cancel open assignments of tickets no longer queued or in progress, and add
/// the outbox rows `known` lacks (adding them to it). Returns the outbox rows added.
pub(super) async fn write_snapshots<S: Borrow<Snapshot>>(
    conn: &mut AnyConnection,
    snaps: &[S],
    known: &mut HashSet<String>,
    now_ms: i64,
) -> Result<usize, StoreError> {
    write_rows(conn, Rows::of(snaps), known, now_ms).await
}

/// [`write_snapshots`] of rows made beforehand.
pub(super) async fn write_rows(
    conn: &mut AnyConnection,
    rows: Rows<'_>,
    known: &mut HashSet<String>,
    now_ms: i64,
) -> Result<usize, StoreError> {
    let Rows {
        tickets,
        relations,
        plans,
        events,
        files,
        broken,
        mut outbox,
        settled,
    } = rows;
    outbox.retain(|(key, ..)| known.insert(key.clone()));
    let mut cancelled = 0;
    for chunk in settled.chunks(500) {
        let sql = format!(
            "UPDATE assignments SET status = 'cancelled', updated_ms = $1 \
              WHERE status IN ('held', 'pending', 'claimed') AND ticket_id IN ({})",
            super::placeholders(2, chunk.len())
        );
        let mut q = sqlx::query(&sql).bind(now_ms);
        for id in chunk {
            q = q.bind(id.as_str());
        }
        cancelled += q.execute(&mut *conn).await.map_err(db_err)?.rows_affected();
    }
    if cancelled > 0 {
        crate::answer_epoch::bump(&mut *conn).await?;
    }
    insert_rows(
        conn,
        "INSERT INTO tickets (id, title, state, created_at, updated_at, target_ref, flow, readiness, priority, queued_by, queued_at, body, search_text, thread_events)",
        "",
        14,
        tickets,
    )
    .await?;
    insert_rows(
        conn,
        "INSERT INTO relations (ticket_id, kind, target, note, author, at)",
        "",
        6,
        relations,
    )
    .await?;
    insert_rows(
        conn,
        "INSERT INTO plan_records (ticket_id, id, kind, related_ticket, at, record)",
        " ON CONFLICT (ticket_id, id) DO NOTHING",
        6,
        plans,
    )
    .await?;
    insert_events(conn, events).await?;
    insert_files(conn, files).await?;
    insert_rows(
        conn,
        "INSERT INTO broken_tickets (ticket_id)",
        "",
        1,
        broken,
    )
    .await?;
    add_outbox(conn, outbox, now_ms).await
}

/// An outbox row to add: the event's key, its ticket, the outbox kind and the payload.
type OutboxRow = (String, String, OutboxKind, String);

fn event_row<'a>(id: Val<'a>, position: usize, key: &'a str, e: &'a Event) -> Vec<Val<'a>> {
    let attrs: serde_json::Map<String, serde_json::Value> =
        e.attrs.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    vec![
        key.into(),
        id,
        (position as i64).into(),
        e.kind.as_str().into(),
        e.author().into(),
        e.get("at").into(),
        serde_json::Value::Object(attrs).to_string().into(),
        e.heading.as_deref().into(),
        e.body.as_str().into(),
    ]
}

fn outbox_row(id: &str, key: &str, e: &Event) -> OutboxRow {
    (
        key.to_string(),
        id.to_string(),
        outbox_kind(e),
        outbox_payload(id, key, e).to_string(),
    )
}

fn file_row<'a>(id: Val<'a>, f: &'a FileStat) -> Vec<Val<'a>> {
    vec![
        id,
        Val::Static(f.name),
        f.size.into(),
        f.mtime_ns.into(),
        f.hash.as_deref().unwrap_or_default().into(),
    ]
}

async fn insert_events(
    conn: &mut AnyConnection,
    rows: Vec<Vec<Val<'_>>>,
) -> Result<(), StoreError> {
    insert_rows(
        conn,
        "INSERT INTO events (id, ticket_id, position, kind, author, at, attrs, heading, body)",
        " ON CONFLICT (id) DO NOTHING",
        9,
        rows,
    )
    .await
}

async fn insert_files(conn: &mut AnyConnection, rows: Vec<Vec<Val<'_>>>) -> Result<(), StoreError> {
    insert_rows(
        conn,
        "INSERT INTO ticket_files (ticket_id, name, size, mtime_ns, hash)",
        "",
        5,
        rows,
    )
    .await
}

/// Number `outbox` after the newest row and add it; returns how many.
async fn add_outbox(
    conn: &mut AnyConnection,
    outbox: Vec<OutboxRow>,
    now_ms: i64,
) -> Result<usize, StoreError> {
    let added = outbox.len();
    if added > 0 {
        // Writers are serialised (the workspace lock and the database's write lock), so the
        // next numbers are ours for this transaction.
        let last: i64 = sqlx::query("SELECT COALESCE(MAX(seq), 0) FROM outbox")
            .fetch_one(&mut *conn)
            .await
            .and_then(|r| r.try_get(0))
            .map_err(db_err)?;
        let rows = outbox
            .into_iter()
            .enumerate()
            .map(|(i, (key, ticket, kind, payload))| {
                vec![
                    (last + 1 + i as i64).into(),
                    key.into(),
                    ticket.into(),
                    Val::Static(kind.as_str()),
                    payload.into(),
                    now_ms.into(),
                ]
            })
            .collect();
        // `known` holds every outbox row of these tickets; an event whose row sits under
        // another ticket (a thread moved by hand) keeps that row, as the per-ticket writer's
        // `WHERE NOT EXISTS` does.
        insert_rows(
            conn,
            "INSERT INTO outbox (seq, event_id, ticket_id, kind, payload, created_ms)",
            " ON CONFLICT (event_id) DO NOTHING",
            6,
            rows,
        )
        .await?;
    }
    Ok(added)
}
