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
    /// Every queued ticket in routing order: first queued first (`queued_at`, none first),
    /// then by id, as `Snapshot::queued` orders them.
    pub queued: Vec<TicketId>,
    /// Every ticket in progress, by id.
    pub in_progress: Vec<TicketId>,
    /// The first `limit` ready tickets by id, with their titles.
    pub ready: Vec<(TicketId, String)>,
    pub ready_total: usize,
}

/// Ids at a time in one `IN (…)` list.
const CHUNK: usize = 400;

impl Db {
    /// The queued, in-progress and ready tickets (see [`QueueRows`]), one walk of the state
    /// index.
    pub async fn queue_rows(&self, limit: usize) -> Result<QueueRows, StoreError> {
        let rows = sqlx::query(
            "SELECT id, state, queued_at, title FROM tickets \
              WHERE state IN ('queued', 'inprogress', 'ready') ORDER BY state, id",
        )
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut out = QueueRows::default();
        let mut queued: Vec<(Option<Timestamp>, TicketId)> = Vec::new();
        for r in &rows {
            let id = TicketId::parse(&r.try_get::<String, _>(0).map_err(db_err)?)?;
            match r.try_get::<String, _>(1).map_err(db_err)?.as_str() {
                "queued" => {
                    let at: Option<String> = r.try_get(2).map_err(db_err)?;
                    queued.push((at.as_deref().map(time).transpose()?, id));
                }
                "inprogress" => out.in_progress.push(id),
                _ => {
                    out.ready_total += 1;
                    if out.ready.len() < limit {
                        out.ready.push((id, r.try_get(3).map_err(db_err)?));
                    }
                }
            }
        }
        queued.sort();
        out.queued = queued.into_iter().map(|(_, id)| id).collect();
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

    /// Every relation from or to one of `ids`.
    pub async fn relations_touching(&self, ids: &[TicketId]) -> Result<Vec<Relation>, StoreError> {
        let mut out = Vec::new();
        for chunk in ids.chunks(CHUNK) {
            let list = placeholders(1, chunk.len());
            let sql = format!(
                "SELECT ticket_id, kind, target, note, author, at FROM relations \
                  WHERE ticket_id IN ({list}) \
                 UNION SELECT ticket_id, kind, target, note, author, at FROM relations \
                  WHERE target IN ({list})"
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
