//! Skill activations: who activated which skill (by digest) for which ticket or assignment.
//! The skills crate asks for the record to be written before it returns a body.

use serde::Serialize;
use sqlx::Row;

use super::{db_err, Db};
use yoi_store::StoreError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActivationRow {
    pub id: String,
    pub skill: String,
    pub digest: String,
    pub source: String,
    pub who: String,
    pub ticket: Option<String>,
    pub assignment: Option<String>,
    pub at_ms: i64,
}

impl Db {
    pub async fn record_activation(&self, row: &ActivationRow) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO skill_activations (id, skill, digest, source, who, ticket_id, assignment_id, at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
            .bind(row.id.clone())
            .bind(row.skill.clone())
            .bind(row.digest.clone())
            .bind(row.source.clone())
            .bind(row.who.clone())
            .bind(row.ticket.clone())
            .bind(row.assignment.clone())
            .bind(row.at_ms)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        match &row.ticket {
            Some(ticket) => self.bump_own(&[ticket.as_str()]).await,
            None => crate::answer_epoch::bump(self.pool()).await,
        }
    }

    /// The activations recorded for a ticket's assignments or the ticket, oldest first.
    pub async fn activations_of_ticket(
        &self,
        ticket: &str,
    ) -> Result<Vec<ActivationRow>, StoreError> {
        let rows = sqlx::query("SELECT id, skill, digest, source, who, ticket_id, assignment_id, at_ms FROM skill_activations WHERE ticket_id = $1 OR assignment_id IN (SELECT id FROM assignments WHERE ticket_id = $1) ORDER BY at_ms, id")
            .bind(ticket)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(activation).collect()
    }

    /// Activations, newest first, optionally of one skill.
    pub async fn activations(
        &self,
        skill: Option<&str>,
        limit: i64,
    ) -> Result<Vec<ActivationRow>, StoreError> {
        let rows = sqlx::query("SELECT id, skill, digest, source, who, ticket_id, assignment_id, at_ms FROM skill_activations WHERE ($1 = '' OR skill = $1) ORDER BY at_ms DESC, id DESC LIMIT $2")
            .bind(skill.unwrap_or(""))
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(activation).collect()
    }
}

fn activation(r: &sqlx::any::AnyRow) -> Result<ActivationRow, StoreError> {
    Ok(ActivationRow {
        id: r.try_get(0).map_err(db_err)?,
        skill: r.try_get(1).map_err(db_err)?,
        digest: r.try_get(2).map_err(db_err)?,
        source: r.try_get(3).map_err(db_err)?,
        who: r.try_get(4).map_err(db_err)?,
        ticket: r.try_get(5).map_err(db_err)?,
        assignment: r.try_get(6).map_err(db_err)?,
        at_ms: r.try_get(7).map_err(db_err)?,
    })
}
