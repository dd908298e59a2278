//! Reads answered from the index alone: ticket lists with filters, keyset pagination and text
//! search, and blockers with their reasons. They must agree with the file-based queries in
//! `yoi_store::query`; tests compare the two.

use std::collections::{BTreeMap, HashSet};

use futures_util::TryStreamExt;
use serde::Serialize;
use sqlx::any::AnyRow;
use sqlx::Row;
use yoi_core::relation::{Blocker, BlockerReason, Relation};
use yoi_core::state::State;
use yoi_core::{TicketId, Timestamp};

use super::{db_err, Db};
use yoi_store::query::{build_view, ListFilter, RelationView, TicketSummary};
use yoi_store::StoreError;

/// One page of a list: `next` is the cursor (the last id) when more may follow.
#[derive(Debug, Clone, Serialize)]
pub struct Page {
    pub tickets: Vec<TicketSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<TicketId>,
}

/// A ticket row as indexed (for show and drift checks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexedTicket {
    pub id: TicketId,
    pub title: String,
    pub state: State,
    pub updated_at: String,
}

/// The blocker `b` (an SQL alias, left-joined) is not finished, or not indexed at all.
macro_rules! open_b {
    () => {
        "(b.id IS NULL OR b.state NOT IN ('done', 'closed'))"
    };
}
const OPEN_B: &str = open_b!();

/// Each blocker of the tickets the two conditions select (on the `depends_on` and the `blocks`
/// relations, `r`, joined with the blocker's row, `b`): waiter, blocker, why and its state.
fn blockers_sql(depends: &str, blocks: &str) -> String {
    format!(
        "SELECT r.ticket_id AS waiter, r.target AS other, 'depends_on' AS why, b.state AS state \
           FROM relations r LEFT JOIN tickets b ON b.id = r.target \
          WHERE r.kind = 'depends_on' AND {depends} \
         UNION ALL \
         SELECT r.target AS waiter, r.ticket_id AS other, 'blocked_by' AS why, b.state AS state \
           FROM relations r LEFT JOIN tickets b ON b.id = r.ticket_id \
          WHERE r.kind = 'blocks' AND {blocks}"
    )
}

/// Each ticket's blockers sorted, each once.
fn sorted_blockers(mut out: BTreeMap<TicketId, Vec<Blocker>>) -> BTreeMap<TicketId, Vec<Blocker>> {
    for v in out.values_mut() {
        v.sort();
        v.dedup();
    }
    out
}

/// Open blockers of the ticket `t` (an SQL alias), as a condition.
pub(super) const OPEN_BLOCKER: &str = concat!(
    "( EXISTS (SELECT 1 FROM relations r LEFT JOIN tickets b ON b.id = r.target \
      WHERE r.ticket_id = t.id AND r.kind = 'depends_on' AND ",
    open_b!(),
    ") OR EXISTS (SELECT 1 FROM relations r LEFT JOIN tickets b ON b.id = r.ticket_id \
      WHERE r.target = t.id AND r.kind = 'blocks' AND ",
    open_b!(),
    ") )"
);

/// Add the condition that ticket `t` matches the search word `word`: its title or brief holds
/// it (case-insensitive), or — when the word could be the end of an id (at least
/// [`yoi_core::id::MIN_SUFFIX_LEN`] characters of the id alphabet) — its id ends with it, as
/// `yoi ticket show` resolves a suffix. People search for a dependency by the short id the
/// dashboard shows as often as by its title.
pub(super) fn push_search_word(sql: &mut String, binds: &mut Vec<String>, word: &str) {
    binds.push(like_pattern(word));
    sql.push_str(&format!(
        " AND (t.search_text LIKE ${} ESCAPE '\\'",
        binds.len()
    ));
    if let Some(suffix) = id_suffix(word) {
        binds.push(format!("%{suffix}"));
        sql.push_str(&format!(" OR t.id LIKE ${}", binds.len()));
    }
    sql.push(')');
}

/// `word` upper-cased when it could be the end of a ticket id: ids are ULIDs, Crockford's
/// base 32 (no I, L, O or U), and a suffix must be long enough to resolve.
fn id_suffix(word: &str) -> Option<String> {
    let w = word.to_ascii_uppercase();
    let ok = w.len() >= yoi_core::id::MIN_SUFFIX_LEN
        && w.len() <= 26
        && w.bytes()
            .all(|b| b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"ILOU".contains(&b)));
    ok.then_some(w)
}

pub(super) fn like_pattern(word: &str) -> String {
    let escaped = word
        .to_lowercase()
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

impl Db {
    /// List tickets matching `filter` and every search word, oldest first, `limit` per page,
    /// starting after the `after` cursor.
    pub async fn list(
        &self,
        filter: &ListFilter,
        search: &[String],
        after: Option<&TicketId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.list_ordered(filter, search, after, limit, false).await
    }

    /// [`Db::list`], newest first when `newest_first` (the cursor then pages towards older
    /// tickets).
    pub async fn list_ordered(
        &self,
        filter: &ListFilter,
        search: &[String],
        after: Option<&TicketId>,
        limit: usize,
        newest_first: bool,
    ) -> Result<Page, StoreError> {
        let limit = Some(limit.clamp(1, 100_000));
        self.page(filter, search, after, limit, newest_first).await
    }

    /// The tickets after `after`, in id order, at most `limit` of them (every one without).
    async fn page(
        &self,
        filter: &ListFilter,
        search: &[String],
        after: Option<&TicketId>,
        limit: Option<usize>,
        newest_first: bool,
    ) -> Result<Page, StoreError> {
        let mut sql = String::from(
            "SELECT t.id, t.title, t.state, t.created_at, t.updated_at, t.target_ref FROM tickets t WHERE 1 = 1",
        );
        let mut binds: Vec<String> = Vec::new();
        let mut param = |sql: &mut String, value: String| {
            binds.push(value);
            sql.push_str(&format!("${}", binds.len()));
        };
        let states: Vec<State> = match &filter.states {
            Some(s) => s.clone(),
            None => State::ALL.into_iter().filter(|s| s.is_active()).collect(),
        };
        sql.push_str(" AND t.state IN (");
        for (i, s) in states.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            param(&mut sql, s.as_str().to_string());
        }
        if states.is_empty() {
            sql.push_str("NULL");
        }
        sql.push(')');
        if filter.ready {
            sql.push_str(" AND t.state IN ('ready', 'queued') AND NOT ");
            sql.push_str(OPEN_BLOCKER);
        }
        if filter.blocked {
            sql.push_str(" AND t.state NOT IN ('done', 'closed') AND ");
            sql.push_str(OPEN_BLOCKER);
        }
        for word in search.iter().filter(|w| !w.trim().is_empty()) {
            push_search_word(&mut sql, &mut binds, word.trim());
        }
        if let Some(a) = after {
            sql.push_str(if newest_first {
                " AND t.id < "
            } else {
                " AND t.id > "
            });
            binds.push(a.to_string());
            sql.push_str(&format!("${}", binds.len()));
        }
        let order = if newest_first { "DESC" } else { "ASC" };
        sql.push_str(&format!(" ORDER BY t.id {order}"));
        if let Some(limit) = limit {
            sql.push_str(&format!(" LIMIT {}", limit.saturating_add(1)));
        }
        let limit = limit.unwrap_or(usize::MAX);
        let mut q = sqlx::query(&sql);
        for b in &binds {
            q = q.bind(b.clone());
        }
        // Row by row: a whole list of a large tree is a hundred thousand rows, each far larger
        // as a row than as a summary.
        let mut rows = q.fetch(self.pool());
        let mut tickets: Vec<TicketSummary> = Vec::new();
        let mut more = false;
        while let Some(row) = rows.try_next().await.map_err(db_err)? {
            if tickets.len() == limit {
                more = true;
                break;
            }
            tickets.push(summary(&row)?);
        }
        drop(rows);
        let ids: Vec<TicketId> = tickets.iter().map(|t| t.id.clone()).collect();
        let mut blockers = self.blockers_of(&ids).await?;
        for t in &mut tickets {
            if !t.state.is_finished() {
                t.blockers = blockers.remove(&t.id).unwrap_or_default();
            }
        }
        let next = if more {
            tickets.last().map(|t| t.id.clone())
        } else {
            None
        };
        Ok(Page { tickets, next })
    }

    /// Every page of [`Db::list`] at once, in one query. Page by page, PostgreSQL evaluated the
    /// blocker conditions over the whole relations table once per page (a hashed subplan):
    /// 100,000 tickets took 16 s for `--blocked` in pages of 1,000.
    pub async fn list_all(
        &self,
        filter: &ListFilter,
        search: &[String],
    ) -> Result<Vec<TicketSummary>, StoreError> {
        Ok(self.page(filter, search, None, None, false).await?.tickets)
    }

    /// Open blockers of each ticket, with reasons, sorted as the file-based view sorts them.
    /// Many tickets (a whole list) take one pass over every open blocker instead of a query per
    /// few hundred ids: on PostgreSQL at 100,000 tickets each of those cost 30 ms.
    pub async fn blockers_of(
        &self,
        ids: &[TicketId],
    ) -> Result<BTreeMap<TicketId, Vec<Blocker>>, StoreError> {
        if ids.len() >= 2_000 {
            self.blockers_in_one_pass(ids).await
        } else {
            self.blockers_by_id(ids).await
        }
    }

    /// [`Db::blockers_of`] with a query per few hundred ids.
    pub async fn blockers_by_id(
        &self,
        ids: &[TicketId],
    ) -> Result<BTreeMap<TicketId, Vec<Blocker>>, StoreError> {
        let mut out = BTreeMap::new();
        for chunk in ids.chunks(400) {
            let list = super::placeholders(1, chunk.len());
            let sql = blockers_sql(
                &format!("r.ticket_id IN ({list})"),
                &format!("r.target IN ({list})"),
            );
            self.add_blockers(&sql, chunk, None, &mut out).await?;
        }
        Ok(sorted_blockers(out))
    }

    /// [`Db::blockers_of`] in one pass over every open blocker, keeping those of `ids`.
    pub async fn blockers_in_one_pass(
        &self,
        ids: &[TicketId],
    ) -> Result<BTreeMap<TicketId, Vec<Blocker>>, StoreError> {
        let wanted: HashSet<&str> = ids.iter().map(TicketId::as_str).collect();
        let mut out = BTreeMap::new();
        let sql = blockers_sql(OPEN_B, OPEN_B);
        self.add_blockers(&sql, &[], Some(&wanted), &mut out)
            .await?;
        Ok(sorted_blockers(out))
    }

    /// The unfinished blockers `sql` ([`blockers_sql`]) returns, of the `wanted` tickets only
    /// when given.
    async fn add_blockers(
        &self,
        sql: &str,
        binds: &[TicketId],
        wanted: Option<&HashSet<&str>>,
        out: &mut BTreeMap<TicketId, Vec<Blocker>>,
    ) -> Result<(), StoreError> {
        let mut q = sqlx::query(sql);
        for id in binds {
            q = q.bind(id.to_string());
        }
        let mut rows = q.fetch(self.pool());
        while let Some(r) = rows.try_next().await.map_err(db_err)? {
            let waiter: String = r.try_get("waiter").map_err(db_err)?;
            if wanted.is_some_and(|w| !w.contains(waiter.as_str())) {
                continue;
            }
            let other: String = r.try_get("other").map_err(db_err)?;
            let why: String = r.try_get("why").map_err(db_err)?;
            let state: Option<String> = r.try_get("state").map_err(db_err)?;
            let state = state.and_then(|s| s.parse::<State>().ok());
            if state.is_some_and(State::is_finished) {
                continue;
            }
            out.entry(TicketId::parse(&waiter)?)
                .or_default()
                .push(Blocker {
                    ticket: TicketId::parse(&other)?,
                    reason_kind: BlockerReason::parse(&why).ok_or_else(|| {
                        StoreError::Database {
                            reason: format!("a blocker row with the reason `{why}`"),
                        }
                    })?,
                    state,
                });
        }
        Ok(())
    }

    /// The indexed row of one ticket.
    pub async fn indexed_ticket(&self, id: &TicketId) -> Result<Option<IndexedTicket>, StoreError> {
        let row = sqlx::query("SELECT id, title, state, updated_at FROM tickets WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
        row.map(|r| indexed(&r)).transpose()
    }

    /// How many tickets are indexed (also a liveness probe of the database).
    pub async fn indexed_tickets_count(&self) -> Result<i64, StoreError> {
        sqlx::query("SELECT COUNT(*) FROM tickets")
            .fetch_one(self.pool())
            .await
            .and_then(|r| r.try_get(0))
            .map_err(db_err)
    }
}

impl Db {
    /// The relation view of one ticket (relations both ways, open blockers, notices, queue
    /// guard), from the index alone.
    pub async fn relation_view(&self, id: &TicketId) -> Result<Option<RelationView>, StoreError> {
        let Some(me) = self.indexed_ticket(id).await? else {
            return Ok(None);
        };
        let rows = sqlx::query(
            "SELECT r.ticket_id, r.kind, r.target, r.note, r.author, r.at, o.state \
               FROM relations r LEFT JOIN tickets o ON o.id = CASE WHEN r.ticket_id = $1 THEN r.target ELSE r.ticket_id END \
              WHERE r.ticket_id = $1 OR r.target = $1 ORDER BY r.kind, r.target, r.ticket_id",
        )
        .bind(id.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut outgoing = Vec::new();
        let mut incoming = Vec::new();
        let mut states = BTreeMap::new();
        for r in &rows {
            let from: String = r.try_get(0).map_err(db_err)?;
            let kind: String = r.try_get(1).map_err(db_err)?;
            let target: String = r.try_get(2).map_err(db_err)?;
            let at: String = r.try_get(5).map_err(db_err)?;
            let other_state: Option<String> = r.try_get(6).map_err(db_err)?;
            let rel = Relation {
                ticket_id: TicketId::parse(&from)?,
                kind: kind
                    .parse()
                    .map_err(
                        |e: yoi_core::relation::RelationKindError| StoreError::Database {
                            reason: e.to_string(),
                        },
                    )?,
                target: TicketId::parse(&target)?,
                note: r.try_get(3).map_err(db_err)?,
                author: r.try_get(4).map_err(db_err)?,
                at: parse_time(&at)?,
            };
            let other = if &rel.ticket_id == id {
                rel.target.clone()
            } else {
                rel.ticket_id.clone()
            };
            if let Some(s) = other_state {
                states.insert(other, parse_state(&s)?);
            }
            if &rel.ticket_id == id {
                outgoing.push(rel);
            } else {
                incoming.push(rel);
            }
        }
        Ok(Some(build_view(
            id, me.state, &outgoing, &incoming, &states,
        )))
    }
}

fn parse_state(s: &str) -> Result<State, StoreError> {
    s.parse()
        .map_err(|e: yoi_core::state::StateParseError| StoreError::Database {
            reason: e.to_string(),
        })
}

fn parse_time(s: &str) -> Result<Timestamp, StoreError> {
    Timestamp::parse(s).map_err(|e| StoreError::Database {
        reason: e.to_string(),
    })
}

fn indexed(r: &AnyRow) -> Result<IndexedTicket, StoreError> {
    let id: String = r.try_get(0).map_err(db_err)?;
    let state: String = r.try_get(2).map_err(db_err)?;
    Ok(IndexedTicket {
        id: TicketId::parse(&id)?,
        title: r.try_get(1).map_err(db_err)?,
        state: parse_state(&state)?,
        updated_at: r.try_get(3).map_err(db_err)?,
    })
}

pub(super) fn summary(r: &AnyRow) -> Result<TicketSummary, StoreError> {
    let id: String = r.try_get(0).map_err(db_err)?;
    let state: String = r.try_get(2).map_err(db_err)?;
    let created: String = r.try_get(3).map_err(db_err)?;
    let updated: String = r.try_get(4).map_err(db_err)?;
    Ok(TicketSummary {
        id: TicketId::parse(&id)?,
        title: r.try_get(1).map_err(db_err)?,
        state: parse_state(&state)?,
        created_at: parse_time(&created)?,
        updated_at: parse_time(&updated)?,
        target_ref: r.try_get(5).map_err(db_err)?,
        blockers: Vec::new(),
    })
}
