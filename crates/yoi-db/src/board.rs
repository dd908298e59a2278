//! Reads for the dashboard's board, answered from the index alone and only for the ids of one
//! page: lane counts, and per card the facts its badges show (age in state, the router's last
//! decision, how many open tickets wait on it, brief completeness, the role at work, a change
//! request, the pull request's badge). A board of 10,000 tickets costs a handful of queries over 50 ids per lane, never a
//! read of every file.

use std::collections::BTreeMap;
use yoi_core::Role;

use serde::Serialize;
use sqlx::Row;
use yoi_core::packet::IntentPacket;
use yoi_core::state::State;
use yoi_core::TicketId;

use super::{db_err, placeholders, Db};
use yoi_store::StoreError;

/// What a card shows beyond its summary row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CardFacts {
    /// When the ticket entered its state (the latest `state_changed` event), if it ever moved.
    pub state_since: Option<String>,
    /// The kind of the orchestrator's latest decision (`waiting_capacity`, `circuit_open`, …).
    pub last_decision: Option<String>,
    /// Open tickets that wait on this one (depends_on it, or it blocks them).
    pub unblocks: usize,
    /// Required brief sections the body lacks.
    pub brief_missing: usize,
    /// The role and pod of the step at work or waiting for a pod (claimed, pending or held).
    pub working: Option<Working>,
    /// The latest completed review asked for changes.
    pub changes_requested: bool,
    /// The worktree of the latest accepted plan (relative to the repository root, as recorded).
    pub worktree: Option<String>,
    /// The pull request's badge (docs/forge.md), when the ticket has `forge_pr` events.
    pub forge: Option<yoi_core::forge::Badge>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Working {
    pub role: String,
    /// The pod holding the claim; `None` while the step waits for one.
    pub pod: Option<String>,
}

fn entry<'a>(
    out: &'a mut BTreeMap<TicketId, CardFacts>,
    id: &str,
) -> Result<Option<&'a mut CardFacts>, StoreError> {
    Ok(out.get_mut(&TicketId::parse(id)?))
}

impl Db {
    /// How many tickets are in each state (states with none are absent).
    pub async fn count_by_state(&self) -> Result<BTreeMap<State, i64>, StoreError> {
        let rows = sqlx::query("SELECT state, COUNT(*) FROM tickets GROUP BY state")
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        let mut out = BTreeMap::new();
        for r in rows {
            let state: String = r.try_get(0).map_err(db_err)?;
            let n: i64 = r.try_get(1).map_err(db_err)?;
            if let Ok(s) = state.parse::<State>() {
                out.insert(s, n);
            }
        }
        Ok(out)
    }

    /// The card facts of each of `ids` (every id gets an entry).
    pub async fn card_facts(
        &self,
        ids: &[TicketId],
    ) -> Result<BTreeMap<TicketId, CardFacts>, StoreError> {
        let mut out: BTreeMap<TicketId, CardFacts> = ids
            .iter()
            .map(|id| (id.clone(), CardFacts::default()))
            .collect();
        for chunk in ids.chunks(400).filter(|c| !c.is_empty()) {
            self.card_facts_chunk(chunk, &mut out).await?;
        }
        Ok(out)
    }

    async fn card_facts_chunk(
        &self,
        chunk: &[TicketId],
        out: &mut BTreeMap<TicketId, CardFacts>,
    ) -> Result<(), StoreError> {
        let list = placeholders(1, chunk.len());
        let run = |sql: String| async move {
            let mut q = sqlx::query(&sql);
            for id in chunk {
                q = q.bind(id.to_string());
            }
            q.fetch_all(self.pool()).await.map_err(db_err)
        };

        // The latest `state_changed` and the orchestrator's latest decision of each ticket:
        // one step down the `events_ticket_kind_position` index from its end each, whatever
        // the thread's length (reading every such event, or the decisions against each other,
        // made a board of five 25,000-event threads cost 40 times one of short threads).
        let orchestrator = yoi_core::Principal::orchestrator().author();
        let sql = format!(
            "SELECT t.id, \
               (SELECT e.at FROM events e WHERE e.ticket_id = t.id AND e.kind = 'state_changed' \
                 ORDER BY e.position DESC LIMIT 1), \
               (SELECT e.body FROM events e WHERE e.ticket_id = t.id AND e.kind = 'decision' \
                   AND e.author = $1 ORDER BY e.position DESC LIMIT 1) \
               FROM tickets t WHERE t.id IN ({})",
            placeholders(2, chunk.len())
        );
        let mut q = sqlx::query(&sql).bind(orchestrator);
        for id in chunk {
            q = q.bind(id.to_string());
        }
        for r in q.fetch_all(self.pool()).await.map_err(db_err)? {
            let id: String = r.try_get(0).map_err(db_err)?;
            let at: Option<String> = r.try_get(1).map_err(db_err)?;
            let body: Option<String> = r.try_get(2).map_err(db_err)?;
            if let Some(f) = entry(out, &id)? {
                f.state_since = at;
                f.last_decision = body
                    .and_then(|b| yoi_core::decision::read_decision(&b))
                    .map(|d| d.kind);
            }
        }

        // CROSS JOIN keeps SQLite from starting at the tickets table (it then scans every
        // ticket); it starts at the relations of these ids, by index. PostgreSQL plans it freely.
        let sql = format!(
            "SELECT r.target AS me, COUNT(*) FROM relations r CROSS JOIN tickets w \
              WHERE w.id = r.ticket_id AND r.kind = 'depends_on' AND r.target IN ({list}) \
                AND w.state NOT IN ('done', 'closed') \
              GROUP BY r.target \
             UNION ALL \
             SELECT r.ticket_id AS me, COUNT(*) FROM relations r CROSS JOIN tickets w \
              WHERE w.id = r.target AND r.kind = 'blocks' AND r.ticket_id IN ({list}) \
                AND w.state NOT IN ('done', 'closed') \
              GROUP BY r.ticket_id"
        );
        for r in run(sql).await? {
            let id: String = r.try_get(0).map_err(db_err)?;
            let n: i64 = r.try_get(1).map_err(db_err)?;
            if let Some(f) = entry(out, &id)? {
                f.unblocks += usize::try_from(n).unwrap_or(0);
            }
        }

        let sql = format!("SELECT id, body FROM tickets WHERE id IN ({list})");
        for r in run(sql).await? {
            let id: String = r.try_get(0).map_err(db_err)?;
            let body: String = r.try_get(1).map_err(db_err)?;
            if let Some(f) = entry(out, &id)? {
                f.brief_missing = IntentPacket::from_body(&body)
                    .completeness()
                    .missing_required
                    .len();
            }
        }

        let sql = format!(
            "SELECT ticket_id, record FROM plan_records WHERE kind = 'accepted_plan' \
              AND ticket_id IN ({list}) ORDER BY at, id"
        );
        for r in run(sql).await? {
            let id: String = r.try_get(0).map_err(db_err)?;
            let record: String = r.try_get(1).map_err(db_err)?;
            if let Some(f) = entry(out, &id)? {
                let plan = serde_json::from_str::<yoi_core::plan::PlanRecord>(&record).ok();
                f.worktree = plan.and_then(|p| p.accepted_plan).and_then(|a| a.worktree);
            }
        }

        let sql = format!(
            "SELECT ticket_id, role, claimed_by, status, result FROM assignments \
              WHERE ticket_id IN ({list}) AND status IN ('held', 'pending', 'claimed', 'completed') \
              ORDER BY updated_ms, id"
        );
        for r in run(sql).await? {
            let id: String = r.try_get(0).map_err(db_err)?;
            let role: String = r.try_get(1).map_err(db_err)?;
            let pod: Option<String> = r.try_get(2).map_err(db_err)?;
            let status: String = r.try_get(3).map_err(db_err)?;
            let result: Option<String> = r.try_get(4).map_err(db_err)?;
            let Some(f) = entry(out, &id)? else { continue };
            if status == "completed" {
                if Role::Reviewer.is(&role) {
                    let verdict = result
                        .as_deref()
                        .and_then(|r| serde_json::from_str::<yoi_core::report::Report>(r).ok())
                        .and_then(|r| r.verdict);
                    f.changes_requested =
                        verdict == Some(yoi_core::report::Verdict::RequestChanges);
                }
            } else {
                f.working = Some(Working {
                    role,
                    pod: if status == "claimed" { pod } else { None },
                });
            }
        }

        // The pull request: its events folded as the ticket page folds them, then the checks
        // kept for the remote head of the few tickets that have one.
        let sql = format!(
            "SELECT ticket_id, attrs FROM events WHERE kind = '{}' AND ticket_id IN ({list}) \
              ORDER BY ticket_id, position",
            yoi_core::forge::EVENT
        );
        let mut prs: BTreeMap<String, yoi_core::forge::PrFacts> = BTreeMap::new();
        for r in run(sql).await? {
            let id: String = r.try_get(0).map_err(db_err)?;
            let attrs: String = r.try_get(1).map_err(db_err)?;
            let attrs: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&attrs).unwrap_or_default();
            prs.entry(id)
                .or_default()
                .observe(|k| attrs.get(k).and_then(|v| v.as_str()));
        }
        for (id, facts) in prs {
            let checks = match &facts.remote_head {
                Some(head) if !facts.merged && !facts.closed => self.forge_checks_of(head).await?,
                _ => Vec::new(),
            };
            if let Some(f) = entry(out, &id)? {
                f.forge = Some(facts.badge(&checks));
            }
        }
        Ok(())
    }

    /// The tickets among `ids` that match every search word and, with `blocked_only`, have an
    /// open blocker; as [`Db::list`] returns them (blockers filled in), in id order. What a
    /// live board refetches for the cards an event touched.
    pub async fn summaries_by_id(
        &self,
        ids: &[TicketId],
        search: &[String],
        blocked_only: bool,
    ) -> Result<Vec<yoi_store::query::TicketSummary>, StoreError> {
        let mut out = Vec::new();
        for chunk in ids.chunks(200).filter(|c| !c.is_empty()) {
            let mut sql = format!(
                "SELECT t.id, t.title, t.state, t.created_at, t.updated_at, t.target_ref FROM tickets t WHERE t.id IN ({})",
                placeholders(1, chunk.len())
            );
            let mut binds: Vec<String> = chunk.iter().map(|i| i.to_string()).collect();
            for word in search.iter().filter(|w| !w.trim().is_empty()) {
                binds.push(super::lists::like_pattern(word.trim()));
                sql.push_str(&format!(
                    " AND t.search_text LIKE ${} ESCAPE '\\'",
                    binds.len()
                ));
            }
            if blocked_only {
                sql.push_str(" AND t.state NOT IN ('done', 'closed') AND ");
                sql.push_str(super::lists::OPEN_BLOCKER);
            }
            sql.push_str(" ORDER BY t.id");
            let mut q = sqlx::query(&sql);
            for b in &binds {
                q = q.bind(b.clone());
            }
            for r in q.fetch_all(self.pool()).await.map_err(db_err)? {
                out.push(super::lists::summary(&r)?);
            }
        }
        let found: Vec<TicketId> = out.iter().map(|t| t.id.clone()).collect();
        let mut blockers = self.blockers_of(&found).await?;
        for t in &mut out {
            if !t.state.is_finished() {
                t.blockers = blockers.remove(&t.id).unwrap_or_default();
            }
        }
        Ok(out)
    }

    /// The open tickets that wait on `id`, directly (depth 1) or through others, breadth first,
    /// at most `limit`: what finishing `id` unblocks.
    pub async fn waiting_on(
        &self,
        id: &TicketId,
        limit: usize,
    ) -> Result<Vec<Waiting>, StoreError> {
        let mut seen = std::collections::BTreeSet::from([id.clone()]);
        let mut frontier = vec![id.clone()];
        let mut out = Vec::new();
        let mut depth = 0;
        while !frontier.is_empty() && out.len() < limit {
            depth += 1;
            let mut next = Vec::new();
            for chunk in frontier.chunks(400) {
                let list = placeholders(1, chunk.len());
                let sql = format!(
                    "SELECT w.id, w.title, w.state FROM relations r CROSS JOIN tickets w \
                      WHERE w.id = r.ticket_id AND r.kind = 'depends_on' AND r.target IN ({list}) \
                        AND w.state NOT IN ('done', 'closed') \
                     UNION \
                     SELECT w.id, w.title, w.state FROM relations r CROSS JOIN tickets w \
                      WHERE w.id = r.target AND r.kind = 'blocks' AND r.ticket_id IN ({list}) \
                        AND w.state NOT IN ('done', 'closed')"
                );
                let mut q = sqlx::query(&sql);
                for id in chunk {
                    q = q.bind(id.to_string());
                }
                let mut rows = q.fetch_all(self.pool()).await.map_err(db_err)?;
                rows.sort_by_key(|r| r.try_get::<String, _>(0).unwrap_or_default());
                for r in rows {
                    let other = TicketId::parse(&r.try_get::<String, _>(0).map_err(db_err)?)?;
                    if !seen.insert(other.clone()) {
                        continue;
                    }
                    let state: String = r.try_get(2).map_err(db_err)?;
                    out.push(Waiting {
                        id: other.clone(),
                        title: r.try_get(1).map_err(db_err)?,
                        state: state.parse().unwrap_or(State::Planning),
                        depth,
                    });
                    next.push(other);
                }
            }
            frontier = next;
        }
        out.truncate(limit);
        Ok(out)
    }
}

/// A ticket waiting on another, `depth` steps away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Waiting {
    pub id: TicketId,
    pub title: String,
    pub state: State,
    pub depth: u32,
}
