//! Which attempt carries which workflow invocation (`workflow_carriers`, docs/workflows.md).
//! The invocations themselves are comments in the ticket's thread; the engine decides which
//! are still due and records here the attempt it hands them to.

use sqlx::Row;

use super::{db_err, Db};
use yoi_store::StoreError;

/// One invocation handed to one attempt, with that attempt's status now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarrierRow {
    pub invocation_id: String,
    pub assignment_id: String,
    /// The assignment's status (`completed`, `failed`, …), `None` if the row is gone.
    pub status: Option<String>,
}

impl Db {
    /// Record that `assignment` carries each of `invocations` (`(id, slug)`); a pair already
    /// recorded is left as it is.
    pub async fn carry_workflows(
        &self,
        ticket: &str,
        assignment: &str,
        invocations: &[(String, String)],
        at_ms: i64,
    ) -> Result<(), StoreError> {
        for (id, slug) in invocations {
            sqlx::query("INSERT INTO workflow_carriers (invocation_id, assignment_id, ticket_id, slug, at_ms) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (invocation_id, assignment_id) DO NOTHING")
                .bind(id.clone())
                .bind(assignment.to_string())
                .bind(ticket.to_string())
                .bind(slug.clone())
                .bind(at_ms)
                .execute(self.pool())
                .await
                .map_err(db_err)?;
        }
        Ok(())
    }

    /// Every attempt of `ticket` that was handed an invocation, with its status.
    pub async fn workflow_carriers(&self, ticket: &str) -> Result<Vec<CarrierRow>, StoreError> {
        let rows = sqlx::query("SELECT c.invocation_id, c.assignment_id, a.status FROM workflow_carriers c LEFT JOIN assignments a ON a.id = c.assignment_id WHERE c.ticket_id = $1 ORDER BY c.at_ms, c.invocation_id")
            .bind(ticket)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(CarrierRow {
                    invocation_id: r.try_get(0).map_err(db_err)?,
                    assignment_id: r.try_get(1).map_err(db_err)?,
                    status: r.try_get(2).map_err(db_err)?,
                })
            })
            .collect()
    }
}

/// One ticket as the workflow-offer detector reads it: its brief and, in thread order, its
/// comments, ended attempts and attention events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryTicket {
    pub id: String,
    pub title: String,
    pub body: String,
    pub events: Vec<crate::inbox::InboxEvent>,
}

/// The event kinds the detector reads.
pub const HISTORY_EVENT_KINDS: [&str; 3] = ["comment", "assignment", "attention"];

impl Db {
    /// Every ticket with its body and its events of [`HISTORY_EVENT_KINDS`], in id order. The
    /// detector reads the whole history (it runs every few minutes, not per request).
    pub async fn offer_history(&self) -> Result<Vec<HistoryTicket>, StoreError> {
        let tickets = sqlx::query("SELECT id, title, body FROM tickets ORDER BY id")
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        let mut out: Vec<HistoryTicket> = Vec::with_capacity(tickets.len());
        for r in tickets {
            out.push(HistoryTicket {
                id: r.try_get(0).map_err(db_err)?,
                title: r.try_get(1).map_err(db_err)?,
                body: r.try_get(2).map_err(db_err)?,
                events: Vec::new(),
            });
        }
        let rows = sqlx::query(
            "SELECT ticket_id, id, kind, author, at, attrs, body FROM events \
              WHERE kind IN ('comment', 'assignment', 'attention') \
              ORDER BY ticket_id, position",
        )
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut at = 0usize;
        for r in rows {
            let ticket: String = r.try_get(0).map_err(db_err)?;
            while at < out.len() && out[at].id < ticket {
                at += 1;
            }
            if at >= out.len() || out[at].id != ticket {
                continue;
            }
            let attrs: String = r.try_get(5).map_err(db_err)?;
            let attrs = match serde_json::from_str(&attrs) {
                Ok(serde_json::Value::Object(m)) => m,
                _ => serde_json::Map::new(),
            };
            out[at].events.push(crate::inbox::InboxEvent {
                id: r.try_get(1).map_err(db_err)?,
                kind: r.try_get(2).map_err(db_err)?,
                author: r.try_get(3).map_err(db_err)?,
                at: r.try_get(4).map_err(db_err)?,
                attrs,
                body: r.try_get(6).map_err(db_err)?,
            });
        }
        Ok(out)
    }
}

/// One person's (or anyone's: the engine filters) invocation of a workflow, as the index holds
/// it: a `comment` event with a `workflow` attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvocationRow {
    pub ticket: String,
    pub author: Option<String>,
    pub slug: String,
}

impl Db {
    /// Every comment event that carries a `workflow` attribute, in ticket and thread order.
    pub async fn workflow_invocations(&self) -> Result<Vec<InvocationRow>, StoreError> {
        // `"workflow":` never matches `"agent_workflow":` (the quote comes first).
        let rows = sqlx::query(
            "SELECT ticket_id, author, attrs FROM events \
              WHERE kind = 'comment' AND attrs LIKE '%\"workflow\":%' \
              ORDER BY ticket_id, position",
        )
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let attrs: String = r.try_get(2).map_err(db_err)?;
            let slug = serde_json::from_str::<serde_json::Value>(&attrs)
                .ok()
                .and_then(|v| {
                    v.get("workflow")
                        .and_then(|s| s.as_str())
                        .map(str::to_string)
                });
            if let Some(slug) = slug {
                out.push(InvocationRow {
                    ticket: r.try_get(0).map_err(db_err)?,
                    author: r.try_get(1).map_err(db_err)?,
                    slug,
                });
            }
        }
        Ok(out)
    }
}
