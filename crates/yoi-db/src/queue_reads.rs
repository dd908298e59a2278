//! What the queue page reads of the index instead of every ticket's files: which tickets are
//! queued (in routing order), in progress and ready, and the items and relations of the few
//! tickets the page decides for. `yoi-engine`'s `routing::view` builds the router's snapshot
//! from them; the router itself still reads the files (a pass must see the files as they are).
//!
//! Items come back as the index holds them: every frontmatter field routing reads, the
//! target ref already resolved (`effective_target_ref`), and the body as `Item::body_text`
//! gives it. A ticket the index holds no row for (missing, or broken: its files do not read)
//! is absent, as the file snapshot leaves broken tickets out.

use std::collections::BTreeMap;

use sqlx::Row;
use yoi_core::item::Item;
use yoi_core::relation::Relation;
use yoi_core::{TicketId, Timestamp};

use super::{among, db_err, placeholders, Db};
use yoi_store::StoreError;

/// The tickets of the queue page, by state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueRows {
    /// The first `limit` queued tickets in routing order: first queued first (`queued_at`,
    /// none first), then by id, as `Snapshot::queued` orders them.
    pub queued: Vec<TicketId>,
    pub queued_total: usize,
    /// Every ticket in progress, by id, while fewer than the `max_inprogress` asked about are
    /// (deciding reads them then); else none: only their number counts.
    pub in_progress: Vec<TicketId>,
    pub in_progress_total: usize,
    /// The first `limit` ready tickets by id, with their titles.
    pub ready: Vec<(TicketId, String)>,
    pub ready_total: usize,
}

/// Ids at a time in one `IN (…)` list.
const CHUNK: usize = 400;

impl Db {
    /// The queued, in-progress and ready tickets (see [`QueueRows`]): their numbers, and only
    /// the few rows the page shows, each a range of the state index.
    pub async fn queue_rows(
        &self,
        limit: usize,
        max_inprogress: usize,
    ) -> Result<QueueRows, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        let count = |state: &'static str| {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM tickets WHERE state = $1")
                .bind(state)
        };
        let mut out = QueueRows {
            in_progress_total: count("inprogress")
                .fetch_one(&mut *conn)
                .await
                .map_err(db_err)? as usize,
            ready_total: count("ready").fetch_one(&mut *conn).await.map_err(db_err)? as usize,
            ..QueueRows::default()
        };
        if out.in_progress_total < max_inprogress {
            let rows: Vec<(String,)> =
                sqlx::query_as("SELECT id FROM tickets WHERE state = 'inprogress' ORDER BY id")
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(db_err)?;
            for (id,) in rows {
                out.in_progress.push(TicketId::parse(&id)?);
            }
        }
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT id, title FROM tickets WHERE state = 'ready' ORDER BY id LIMIT $1",
        )
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?;
        for (id, title) in rows {
            out.ready.push((TicketId::parse(&id)?, title));
        }
        // The first `limit` queued in routing order, without reading every queued row: a
        // time's text sorts by its second (`YYYY-MM-DDTHH:MM:SS`, UTC, always that wide) but not
        // within it (`…:05Z` is before `…:05.250Z`, and sorts after it). So the second of the
        // `limit`th is found first; when the first `limit` have no time at all (they come
        // first), they are the first `limit` by id; else every row up to and including that
        // second is read, and ordered here by their times. Both walk the index of migration
        // 0021 on (state, `second`), which repeats the expression word for word.
        out.queued_total = count("queued")
            .fetch_one(&mut *conn)
            .await
            .map_err(db_err)? as usize;
        let second = "COALESCE(SUBSTR(queued_at, 1, 19), '')";
        let cutoff: Option<String> = sqlx::query_scalar(&format!(
            "SELECT {second} FROM tickets WHERE state = 'queued' ORDER BY 1 LIMIT 1 OFFSET $1"
        ))
        .bind(i64::try_from(limit.max(1) - 1).unwrap_or(i64::MAX))
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?;
        let up_to =
            format!("SELECT id, queued_at FROM tickets WHERE state = 'queued' AND {second} <= $1");
        let rows: Vec<(String, Option<String>)> = match cutoff.as_deref() {
            Some("") => sqlx::query_as(
                "SELECT id, queued_at FROM tickets WHERE state = 'queued' AND queued_at IS NULL \
                  ORDER BY id LIMIT $1",
            )
            .bind(i64::try_from(limit).unwrap_or(i64::MAX)),
            Some(c) => sqlx::query_as(&up_to).bind(c.to_string()),
            None => sqlx::query_as("SELECT id, queued_at FROM tickets WHERE state = 'queued'"),
        }
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?;
        let mut queued: Vec<(Option<Timestamp>, TicketId)> = Vec::with_capacity(rows.len());
        for (id, at) in rows {
            queued.push((at.as_deref().map(time).transpose()?, TicketId::parse(&id)?));
        }
        queued.sort_unstable();
        out.queued = queued.into_iter().take(limit).map(|(_, id)| id).collect();
        Ok(out)
    }

    /// The states of `ids` the index holds (a ticket it holds no row of is absent).
    pub async fn indexed_states(
        &self,
        ids: &[TicketId],
    ) -> Result<BTreeMap<TicketId, yoi_core::State>, StoreError> {
        let mut out = BTreeMap::new();
        for chunk in ids.chunks(CHUNK) {
            let sql = format!(
                "SELECT id, state FROM tickets WHERE id IN ({})",
                placeholders(1, chunk.len())
            );
            for r in among(&sql, chunk)
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?
            {
                let id = TicketId::parse(&r.try_get::<String, _>(0).map_err(db_err)?)?;
                let state = r.try_get::<String, _>(1).map_err(db_err)?;
                let state = state.parse().map_err(|_| StoreError::Database {
                    reason: format!("ticket {id} has an unknown state in the index"),
                })?;
                out.insert(id, state);
            }
        }
        Ok(out)
    }

    /// The items of `ids` the index holds (see the module doc).
    pub async fn indexed_items(
        &self,
        ids: &[TicketId],
    ) -> Result<BTreeMap<TicketId, Item>, StoreError> {
        let mut out = BTreeMap::new();
        for chunk in ids.chunks(CHUNK) {
            let sql = format!(
                "SELECT id, title, state, created_at, updated_at, target_ref, flow, readiness, \
                        priority, queued_by, queued_at, body \
                   FROM tickets WHERE id IN ({})",
                placeholders(1, chunk.len())
            );
            let rows = among(&sql, chunk)
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?;
            for r in &rows {
                let text = |i: usize| r.try_get::<String, _>(i).map_err(db_err);
                let opt = |i: usize| r.try_get::<Option<String>, _>(i).map_err(db_err);
                let id = TicketId::parse(&text(0)?)?;
                let mut item = Item::new(text(1)?, time(&text(3)?)?, String::new());
                item.state = text(2)?.parse().map_err(|_| StoreError::Database {
                    reason: format!("ticket {id} has an unknown state in the index"),
                })?;
                item.updated_at = time(&text(4)?)?;
                item.target_ref = opt(5)?;
                item.flow = opt(6)?;
                item.readiness = opt(7)?;
                item.priority = opt(8)?;
                item.queued_by = opt(9)?;
                item.queued_at = opt(10)?.as_deref().map(time).transpose()?;
                item.set_body_text(&text(11)?);
                out.insert(id, item);
            }
        }
        Ok(out)
    }

    /// The relations that make blockers of `ids` (`RelationGraph::blockers`): their own
    /// `depends_on` and the `blocks` that point at them. The other relations of a ticket
    /// (who depends on it, what it relates to) decide nothing about it.
    pub async fn blocking_relations(&self, ids: &[TicketId]) -> Result<Vec<Relation>, StoreError> {
        let mut out = Vec::new();
        for chunk in ids.chunks(CHUNK) {
            let list = placeholders(1, chunk.len());
            let sql = format!(
                "SELECT ticket_id, kind, target, note, author, at FROM relations \
                  WHERE ticket_id IN ({list}) AND kind = 'depends_on' \
                 UNION SELECT ticket_id, kind, target, note, author, at FROM relations \
                  WHERE target IN ({list}) AND kind = 'blocks'"
            );
            let rows = among(&sql, chunk)
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?;
            for r in &rows {
                let text = |i: usize| r.try_get::<String, _>(i).map_err(db_err);
                out.push(Relation {
                    ticket_id: TicketId::parse(&text(0)?)?,
                    kind: text(1)?.parse().map_err(
                        |e: yoi_core::relation::RelationKindError| StoreError::Database {
                            reason: e.to_string(),
                        },
                    )?,
                    target: TicketId::parse(&text(2)?)?,
                    note: r.try_get(3).map_err(db_err)?,
                    author: text(4)?,
                    at: time(&text(5)?)?,
                });
            }
        }
        out.sort_by(|a, b| {
            (&a.ticket_id, a.kind, &a.target).cmp(&(&b.ticket_id, b.kind, &b.target))
        });
        out.dedup_by(|a, b| (&a.ticket_id, a.kind, &a.target) == (&b.ticket_id, b.kind, &b.target));
        Ok(out)
    }
}

fn time(s: &str) -> Result<Timestamp, StoreError> {
    Timestamp::parse(s).map_err(|e| StoreError::Database {
        reason: format!("a time in the index does not read: {e}"),
    })
}
