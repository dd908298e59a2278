//! What attempts cost, summed; who may not start work until when (pauses after a rate limit or
//! over a daily budget); which tickets wait over their budget; how many attempts each agent
//! profile and provider is running. The rules that decide these live in the engine
//! (`yoi_engine::spend`); this is their storage (docs/budgets.md).

use serde::Serialize;
use sqlx::Row;
use yoi_store::StoreError;

use crate::{db_err, Db};

/// A finished attempt's figures, read from its usage JSON when it is finished.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Figures {
    pub cost_micros: Option<i64>,
    pub tokens: Option<i64>,
    pub model: Option<String>,
}

impl Figures {
    pub(crate) fn of_usage(usage: Option<&str>) -> Figures {
        let Some(v) = usage.and_then(|u| serde_json::from_str::<serde_json::Value>(u).ok()) else {
            return Figures::default();
        };
        let n = |k: &str| v[k].as_i64().unwrap_or(0);
        Figures {
            cost_micros: v["cost_usd"]
                .as_f64()
                .filter(|c| c.is_finite() && *c >= 0.0)
                .map(|c| (c * 1e6).round() as i64),
            tokens: Some(n("tokens_in") + n("tokens_out") + n("tokens_cached")),
            model: v["model"].as_str().map(str::to_string),
        }
    }
}

/// Money and tokens spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Spent {
    /// Millionths of a USD (reported plus estimated).
    pub cost_micros: i64,
    pub tokens: i64,
    pub attempts: i64,
}

impl Spent {
    pub fn usd(&self) -> f64 {
        self.cost_micros as f64 / 1e6
    }

    /// The three sums `SUM(cost_micros), SUM(tokens), COUNT(*)` from column `first` of `r`.
    fn read(r: &sqlx::any::AnyRow, first: usize) -> Result<Spent, sqlx::Error> {
        Ok(Spent {
            cost_micros: r.try_get(first)?,
            tokens: r.try_get(first + 1)?,
            attempts: r.try_get(first + 2)?,
        })
    }
}

/// One row of a breakdown ([`Db::spent_by`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SpentRow {
    /// The ticket id, the UTC day (`YYYY-MM-DD`), the agent profile or the model.
    pub key: String,
    #[serde(flatten)]
    pub spent: Spent,
}

/// What a breakdown groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpentBy {
    Ticket,
    Day,
    Agent,
    Model,
}

/// Someone who may not start work until `until_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Pause {
    /// `provider:NAME`, `agent:NAME`, or `*` (every agent).
    pub subject: String,
    pub until_ms: i64,
    /// Rate limits in a row (the backoff's exponent); 0 for a budget pause.
    pub strikes: i64,
    /// `rate_limited`, `budget_day` or `budget_agent_day`.
    pub reason: String,
    pub message: String,
    pub since_ms: i64,
}

/// A ticket whose steps wait over its budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BudgetHold {
    #[schema(value_type = yoi_core::TicketId)]
    pub ticket: String,
    pub since_ms: i64,
    pub message: String,
}

const DAY_MS: i64 = 86_400_000;

impl Db {
    async fn spent_where(
        &self,
        cond: &str,
        binds: &[&str],
        from_ms: i64,
    ) -> Result<Spent, StoreError> {
        let sql = format!(
            "SELECT COALESCE(SUM(cost_micros), 0), COALESCE(SUM(tokens), 0), COUNT(*) \
               FROM assignments WHERE finished_ms >= $1 AND tokens IS NOT NULL{cond}"
        );
        let mut q = sqlx::query(&sql).bind(from_ms);
        for b in binds {
            q = q.bind(b.to_string());
        }
        let row = q.fetch_one(self.pool()).await.map_err(db_err)?;
        Spent::read(&row, 0).map_err(db_err)
    }

    /// What the attempts of `ticket` cost, all of them.
    pub async fn spent_on_ticket(&self, ticket: &str) -> Result<Spent, StoreError> {
        self.spent_where(" AND ticket_id = $2", &[ticket], i64::MIN)
            .await
    }

    /// What attempts finished since `from_ms` cost: all of them, or one agent profile's.
    pub async fn spent_since(
        &self,
        from_ms: i64,
        agent: Option<&str>,
    ) -> Result<Spent, StoreError> {
        match agent {
            Some(a) => self.spent_where(" AND agent = $2", &[a], from_ms).await,
            None => self.spent_where("", &[], from_ms).await,
        }
    }

    /// Spend since `from_ms` grouped by `by`, the most expensive first (days: newest first).
    pub async fn spent_by(&self, by: SpentBy, from_ms: i64) -> Result<Vec<SpentRow>, StoreError> {
        let key = match by {
            // An expression, not the bare column: SQLite would group along the ticket index
            // (no sort, but a lookup of every attempt's wide row: 190 ms at 100,000 attempts)
            // rather than read the spend index and sort 2,000 groups (40 ms).
            SpentBy::Ticket => "COALESCE(ticket_id, '')".to_string(),
            SpentBy::Day => format!("CAST(finished_ms / {DAY_MS} AS BIGINT)"),
            SpentBy::Agent => "COALESCE(agent, '')".to_string(),
            SpentBy::Model => "COALESCE(model, '')".to_string(),
        };
        let order = match by {
            SpentBy::Day => "1 DESC",
            _ => "2 DESC, 1",
        };
        let sql = format!(
            "SELECT {key}, COALESCE(SUM(cost_micros), 0), COALESCE(SUM(tokens), 0), COUNT(*) \
               FROM assignments WHERE finished_ms >= $1 AND tokens IS NOT NULL \
              GROUP BY {key} ORDER BY {order}"
        );
        let rows = sqlx::query(&sql)
            .bind(from_ms)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                let key = match by {
                    SpentBy::Day => day_name(r.try_get::<i64, _>(0)?),
                    _ => r.try_get::<String, _>(0)?,
                };
                Ok(SpentRow {
                    key,
                    spent: Spent::read(r, 1)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err)
    }

    /// Spend since `from_ms` per UTC day (days since the epoch) and agent profile, oldest day
    /// first: what the dashboard's chart draws.
    pub async fn spent_by_day_and_agent(
        &self,
        from_ms: i64,
    ) -> Result<Vec<(i64, String, Spent)>, StoreError> {
        let sql = format!(
            "SELECT CAST(finished_ms / {DAY_MS} AS BIGINT), COALESCE(agent, ''), \
                    COALESCE(SUM(cost_micros), 0), COALESCE(SUM(tokens), 0), COUNT(*) \
               FROM assignments WHERE finished_ms >= $1 AND tokens IS NOT NULL \
              GROUP BY 1, 2 ORDER BY 1, 2"
        );
        let rows = sqlx::query(&sql)
            .bind(from_ms)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, Spent::read(r, 2)?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err)
    }

    /// Pause `subject` until `until_ms` (replacing an earlier pause of it).
    pub async fn pause(&self, p: &Pause) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO agent_pauses (subject, until_ms, strikes, reason, message, since_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (subject) DO UPDATE SET until_ms = $2, strikes = $3, reason = $4, message = $5, since_ms = $6",
        )
        .bind(&p.subject)
        .bind(p.until_ms)
        .bind(p.strikes)
        .bind(&p.reason)
        .bind(&p.message)
        .bind(p.since_ms)
        .execute(self.pool())
        .await
        .map(|_| ())
        .map_err(db_err)
    }

    /// Every pause, ended ones included (a rate limit's strikes outlive its pause).
    pub async fn pauses(&self) -> Result<Vec<Pause>, StoreError> {
        let rows = sqlx::query(
            "SELECT subject, until_ms, strikes, reason, message, since_ms FROM agent_pauses ORDER BY subject",
        )
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(Pause {
                    subject: r.try_get(0)?,
                    until_ms: r.try_get(1)?,
                    strikes: r.try_get(2)?,
                    reason: r.try_get(3)?,
                    message: r.try_get(4)?,
                    since_ms: r.try_get(5)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err)
    }

    /// Forget `subject`'s pause and strikes (its agent got through).
    pub async fn clear_pause(&self, subject: &str) -> Result<bool, StoreError> {
        sqlx::query("DELETE FROM agent_pauses WHERE subject = $1")
            .bind(subject)
            .execute(self.pool())
            .await
            .map(|r| r.rows_affected() > 0)
            .map_err(db_err)
    }

    /// Hold `ticket`'s steps over its budget; `false` when it was held already.
    pub async fn hold_ticket(
        &self,
        ticket: &str,
        message: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        sqlx::query(
            "INSERT INTO budget_holds (ticket_id, since_ms, message) VALUES ($1, $2, $3) \
             ON CONFLICT (ticket_id) DO NOTHING",
        )
        .bind(ticket)
        .bind(now_ms)
        .bind(message)
        .execute(self.pool())
        .await
        .map(|r| r.rows_affected() > 0)
        .map_err(db_err)
    }

    /// Let `ticket`'s steps go on; whether it was held.
    pub async fn release_ticket(&self, ticket: &str) -> Result<bool, StoreError> {
        sqlx::query("DELETE FROM budget_holds WHERE ticket_id = $1")
            .bind(ticket)
            .execute(self.pool())
            .await
            .map(|r| r.rows_affected() > 0)
            .map_err(db_err)
    }

    pub async fn budget_holds(&self) -> Result<Vec<BudgetHold>, StoreError> {
        let rows =
            sqlx::query("SELECT ticket_id, since_ms, message FROM budget_holds ORDER BY since_ms")
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(BudgetHold {
                    ticket: r.try_get(0)?,
                    since_ms: r.try_get(1)?,
                    message: r.try_get(2)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err)
    }

    /// Attempts running now (claimed), per agent profile and per provider of the pods that
    /// hold them.
    pub async fn running_by_agent(
        &self,
    ) -> Result<Vec<(Option<String>, Option<String>, i64)>, StoreError> {
        let rows = sqlx::query(
            "SELECT p.profile, p.provider, COUNT(*) FROM assignments a JOIN pods p ON p.id = a.claimed_by \
              WHERE a.status = 'claimed' GROUP BY p.profile, p.provider",
        )
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_err)
    }
}

/// `YYYY-MM-DD` of a day number since the Unix epoch (UTC).
pub fn day_name(day: i64) -> String {
    // Howard Hinnant's civil-from-days.
    let z = day + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

impl crate::DbIndex {
    pub fn spent_on_ticket(&self, ticket: &str) -> Result<Spent, StoreError> {
        self.run(self.db.spent_on_ticket(ticket))
    }

    pub fn spent_since(&self, from_ms: i64, agent: Option<&str>) -> Result<Spent, StoreError> {
        self.run(self.db.spent_since(from_ms, agent))
    }

    pub fn spent_by(&self, by: SpentBy, from_ms: i64) -> Result<Vec<SpentRow>, StoreError> {
        self.run(self.db.spent_by(by, from_ms))
    }

    pub fn pause(&self, p: &Pause) -> Result<(), StoreError> {
        self.run(self.db.pause(p))
    }

    pub fn pauses(&self) -> Result<Vec<Pause>, StoreError> {
        self.run(self.db.pauses())
    }

    pub fn clear_pause(&self, subject: &str) -> Result<bool, StoreError> {
        self.run(self.db.clear_pause(subject))
    }

    pub fn hold_ticket(
        &self,
        ticket: &str,
        message: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.run(self.db.hold_ticket(ticket, message, now_ms))
    }

    pub fn release_ticket(&self, ticket: &str) -> Result<bool, StoreError> {
        self.run(self.db.release_ticket(ticket))
    }

    pub fn budget_holds(&self) -> Result<Vec<BudgetHold>, StoreError> {
        self.run(self.db.budget_holds())
    }

    #[allow(clippy::type_complexity)]
    pub fn running_by_agent(
        &self,
    ) -> Result<Vec<(Option<String>, Option<String>, i64)>, StoreError> {
        self.run(self.db.running_by_agent())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_named_in_utc() {
        assert_eq!(day_name(0), "1970-01-01");
        assert_eq!(day_name(20_791), "2026-12-04");
        assert_eq!(day_name(-1), "1969-12-31");
        assert_eq!(day_name(11_016), "2000-02-29");
    }

    #[test]
    fn figures_come_from_the_usage() {
        let f = Figures::of_usage(Some(
            r#"{"tokens_in":10,"tokens_out":5,"tokens_cached":2,"cost_usd":0.0123456,"model":"m"}"#,
        ));
        assert_eq!(
            f,
            Figures {
                cost_micros: Some(12_346),
                tokens: Some(17),
                model: Some("m".into())
            }
        );
        assert_eq!(Figures::of_usage(None), Figures::default());
        assert_eq!(Figures::of_usage(Some("{}")).cost_micros, None);
    }
}
