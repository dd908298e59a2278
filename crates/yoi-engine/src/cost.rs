//! The cost ledger of a ticket: every attempt's wall time, tokens and cost, summed across roles
//! and attempts. A cost the agent reported is kept as *reported*; when an agent reported only
//! tokens, the cost is *estimated* from `[prices."MODEL"]` in the configuration (USD per million
//! tokens), and left out — with the tokens still counted — when no price is known.

use std::collections::BTreeMap;

use serde::Serialize;
use yoi_agent::profile::Price;
use yoi_db::DbIndex;
use yoi_store::{StoreError, Workspace};

use crate::assignments::{CostSource, Usage};

/// One attempt's line in the ledger.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CostLine {
    pub assignment: String,
    pub step: String,
    #[schema(value_type = yoi_core::role::Role)]
    pub role: String,
    pub attempt: i64,
    #[schema(value_type = yoi_db::AssignmentStatus)]
    pub status: String,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub wall_ms: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub tokens_cached: u64,
    pub cost_usd: Option<f64>,
    pub cost_source: CostSource,
}

/// A ticket's ledger and its totals.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = Cost)]
pub struct CostReport {
    #[schema(value_type = yoi_core::TicketId)]
    pub ticket: String,
    pub attempts: Vec<CostLine>,
    pub wall_ms: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub tokens_cached: u64,
    /// Reported plus estimated cost.
    pub cost_usd: f64,
    pub reported_usd: f64,
    pub estimated_usd: f64,
    /// Attempts with tokens but neither a reported cost nor a price to estimate one.
    pub unpriced_attempts: usize,
    /// Per role: attempts and cost.
    pub by_role: BTreeMap<String, (usize, f64)>,
}

/// The ledger of the ticket `query` names.
pub fn ticket_cost(ws: &Workspace, index: &DbIndex, query: &str) -> Result<CostReport, StoreError> {
    let id = ws.resolve(query)?;
    let rows = index.assignments_of(id.as_str())?;
    let prices = &ws.config.prices;
    let mut report = CostReport {
        ticket: id.to_string(),
        attempts: Vec::new(),
        wall_ms: 0,
        tokens_in: 0,
        tokens_out: 0,
        tokens_cached: 0,
        cost_usd: 0.0,
        reported_usd: 0.0,
        estimated_usd: 0.0,
        unpriced_attempts: 0,
        by_role: BTreeMap::new(),
    };
    for a in rows {
        let Some(u) = a
            .usage
            .as_deref()
            .and_then(|u| serde_json::from_str::<Usage>(u).ok())
        else {
            continue;
        };
        let (cost, source) = match (u.cost_usd, u.cost_source) {
            (Some(c), CostSource::Reported) | (Some(c), CostSource::Estimated) => {
                (Some(c), u.cost_source)
            }
            _ => match u.model.as_ref().and_then(|m| prices.get(m)) {
                Some(p) => (Some(estimate(&u, p)), CostSource::Estimated),
                None => (None, CostSource::None),
            },
        };
        report.wall_ms += u.wall_ms;
        report.tokens_in += u.tokens_in;
        report.tokens_out += u.tokens_out;
        report.tokens_cached += u.tokens_cached;
        match (cost, source) {
            (Some(c), CostSource::Reported) => report.reported_usd += c,
            (Some(c), _) => report.estimated_usd += c,
            (None, _) if u.tokens_in + u.tokens_out > 0 => report.unpriced_attempts += 1,
            (None, _) => {}
        }
        let role = report.by_role.entry(a.role.clone()).or_insert((0, 0.0));
        role.0 += 1;
        role.1 += cost.unwrap_or(0.0);
        report.attempts.push(CostLine {
            assignment: a.id,
            step: a.step,
            role: a.role,
            attempt: a.attempt,
            status: a.status.as_str().to_string(),
            agent: u.agent.clone(),
            model: u.model.clone(),
            wall_ms: u.wall_ms,
            tokens_in: u.tokens_in,
            tokens_out: u.tokens_out,
            tokens_cached: u.tokens_cached,
            cost_usd: cost,
            cost_source: source,
        });
    }
    report.cost_usd = report.reported_usd + report.estimated_usd;
    Ok(report)
}

fn estimate(u: &Usage, p: &Price) -> f64 {
    (u.tokens_in as f64 * p.input
        + u.tokens_out as f64 * p.output
        + u.tokens_cached as f64 * p.cached)
        / 1_000_000.0
}
