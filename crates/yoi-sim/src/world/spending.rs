//! Spending within limits (docs/budgets.md): every attempt reports what it used, the workspace
//! has budgets per ticket, per day and for one agent per day, agents hit their provider's rate
//! limit, and a person adds to a ticket's budget.
//!
//! Two invariants are checked where they happen:
//!
//! - **no start over a limit** (`over-limit-start`, in `claim`): a claim is never granted for a
//!   ticket whose spend has reached its limit (the configured one plus every grant in its
//!   thread), nor while the day's spend has reached the daily limit or the pod's agent's has
//!   reached its own, nor to a pod whose agent is paused;
//! - **a rate limit is no failure** (`rate-limit-counted`, in `pod_rate_limited`): an attempt
//!   that ends `rate_limited` has its step handed out again at once (the circuit, which opens
//!   after three failures in a row, never counts it), and ends no run of failures either.
//!
//! The limits are read from the records (the ledger in the index, the grants in the threads,
//! the pauses), not from the holds the engine keeps, so a hold a crash lost is a violation.

use yoi_core::report::{RateLimit, Report, ReportOutcome, Usage};
use yoi_core::thread::EventKind;
use yoi_core::{Principal, State, TicketId};
use yoi_engine::assignments::Work;
use yoi_engine::db::AssignmentStatus;
use yoi_engine::store::ops;
use yoi_engine::store::Ctx;

use super::{broken, Broken, World};

/// The budgets of every simulated workspace, appended to its `.yoi/workspace.toml`: a ticket
/// reaches its limit in three to six attempts, a day in a long schedule, and `sim-b` sooner.
pub(super) const BUDGET_CONFIG: &str =
    "\n[budget]\nticket_usd = 0.12\nday_usd = 2.0\n\n[budget.agents.sim-b]\nday_usd = 0.4\n";

/// The agent profile a pod runs.
pub(super) fn profile_of(pod: &str) -> &'static str {
    match pod {
        "coder-1" | "remote-1" | "remote-2" => "sim-a",
        "coder-2" => "sim-b",
        "verifier-1" | "remote-verifier" => "verify",
        _ => "sim-r",
    }
}

/// What an attempt by `profile` used: a coder's costs a few cents, a check nothing, a review a
/// cent; `how` varies it.
pub(super) fn usage_of(profile: &str, how: u32) -> Usage {
    let cents = match profile {
        "verify" => 0,
        "sim-r" => 1,
        _ => 2 + how % 3,
    };
    Usage {
        wall_ms: 1_000,
        tokens_in: 1_000 * u64::from(cents),
        tokens_out: 100 * u64::from(cents),
        cost_usd: (cents > 0).then(|| f64::from(cents) / 100.0),
        agent: Some(profile.to_string()),
        ..Usage::default()
    }
}

impl World {
    /// Hold a claim just granted against the limits: none was reached for its ticket, the day
    /// or its pod's agent, and that agent was not paused.
    pub(super) fn check_claim_within_limits(
        &self,
        work: &Work,
        pod_name: &str,
    ) -> Result<(), Broken> {
        let l = self.live();
        let now_ms = self.now().unix_millis();
        let db = |e: yoi_engine::store::StoreError| broken("db", e.to_string());
        let ticket = work.ticket.clone();
        let thread =
            l.ws.read_thread(&ticket)
                .map_err(|e| broken("files", format!("{ticket}: {e}")))?;
        let granted: f64 = thread
            .events
            .iter()
            .filter(|e| e.kind == EventKind::Budget)
            .filter_map(|e| e.get(ops::ADD_USD).and_then(|v| v.parse::<f64>().ok()))
            .sum();
        // The limits as the workspace's configuration sets them; a limit left out is none.
        let b = &l.ws.config.budget;
        let micros = |usd: Option<f64>| usd.map_or(i64::MAX, |u| (u * 1e6).round() as i64);
        let spent = l.db.spent_on_ticket(work.ticket.as_str()).map_err(db)?;
        // A grant sets a limit where none was configured (docs/budgets.md).
        let configured = b.ticket_usd.or((granted > 0.0).then_some(0.0));
        let limit = micros(configured.map(|u| u + granted));
        let mut over = Vec::new();
        if spent.cost_micros >= limit {
            over.push(format!(
                "its ticket spent {} of {} micro-USD",
                spent.cost_micros, limit
            ));
        }
        let today = yoi_engine::spend::day_start(now_ms);
        let day = l.db.spent_since(today, None).map_err(db)?;
        if day.cost_micros >= micros(b.day_usd) {
            over.push(format!("the day spent {} micro-USD", day.cost_micros));
        }
        let profile = profile_of(pod_name);
        if let Some(own) = b.agents.get(profile) {
            let agent = l.db.spent_since(today, Some(profile)).map_err(db)?;
            if agent.cost_micros >= micros(own.day_usd) {
                over.push(format!(
                    "agent {profile} spent {} micro-USD today",
                    agent.cost_micros
                ));
            }
        }
        let subject = format!("agent:{profile}");
        for p in l.db.pauses().map_err(db)? {
            if (p.subject == subject || p.subject == "*") && p.until_ms > now_ms {
                over.push(format!("{} is paused ({})", p.subject, p.reason));
            }
        }
        if over.is_empty() {
            return Ok(());
        }
        Err(broken(
            "over-limit-start",
            format!(
                "{pod_name} was given {} {} attempt {} though {}",
                work.ticket,
                work.assignment.step,
                work.assignment.attempt,
                over.join(", ")
            ),
        ))
    }

    /// The pod `p` stands for, at work and not paused, has its agent refused by its provider's
    /// rate limit: the attempt ends `rate_limited`, and its step must be handed out again.
    pub(super) fn pod_rate_limited(&mut self, p: u32) -> Result<(), Broken> {
        let Some(k) = self.pod_at_work(p) else {
            return Ok(());
        };
        let Some(work) = self.pod_work(k) else {
            return Ok(());
        };
        let a = &work.assignment;
        let (id, fence, step, attempt) = (a.id.clone(), a.fence, a.step.clone(), a.attempt);
        let profile = profile_of(self.pod_name(k));
        let report = Report {
            outcome: ReportOutcome::Failed,
            usage: Some(Usage {
                cost_usd: Some(0.001),
                ..usage_of(profile, 0)
            }),
            rate_limit: Some(RateLimit {
                resets_at_ms: Some(self.now().unix_millis() + 30_000),
                message: "Error: 429 Too Many Requests (rate_limit_error)".into(),
            }),
            ..Report::default()
        };
        let applied = self.send_failure(k, &id, fence, report)?;
        if !applied {
            return Ok(());
        }
        self.stats.rate_limited += 1;
        let l = self.live();
        let row =
            l.db.assignment(&id)
                .map_err(|e| broken("db", e.to_string()))?;
        if row.as_ref().map(|r| r.status) != Some(AssignmentStatus::RateLimited) {
            return Err(broken(
                "rate-limit-counted",
                format!(
                    "the rate-limited attempt {id} ended {:?}, not rate_limited",
                    row.map(|r| r.status)
                ),
            ));
        }
        // Still in progress (no person moved it in between): the same step waits again.
        let ticket = work.ticket.clone();
        if self.state_of(&ticket)? == State::Inprogress {
            let rows =
                l.db.assignments_of(work.ticket.as_str())
                    .map_err(|e| broken("db", e.to_string()))?;
            let again = rows.iter().any(|r| {
                r.step == step
                    && r.attempt == attempt + 1
                    && matches!(
                        r.status,
                        AssignmentStatus::Pending | AssignmentStatus::Claimed
                    )
            });
            if !again {
                return Err(broken(
                    "rate-limit-counted",
                    format!(
                        "{} {step} attempt {attempt} ended rate_limited and its step was not handed out again: {:?}",
                        work.ticket,
                        rows.iter()
                            .map(|r| (&r.step, r.attempt, r.status.as_str()))
                            .collect::<Vec<_>>()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A person adds to the budget of the ticket `t` stands for (in progress, preferably).
    pub(super) fn grant(&mut self, t: u32) -> Result<(), Broken> {
        let Some(id) = self.pick(t, &[State::Inprogress]) else {
            return Ok(());
        };
        let l = self.live();
        let ctx = Ctx::new(Principal::human("alice"), self.now());
        match ops::add_budget(&l.ws, &ctx, id.as_str(), Some(0.1), None, Some("worth it")) {
            Ok(_) => {
                self.stats.grants += 1;
                self.note(format!("  alice added $0.10 to {id}"));
            }
            Err(e) => {
                self.stats.human_refusals += 1;
                self.note(format!("  adding to {id}'s budget refused: {e}"));
            }
        }
        Ok(())
    }

    /// Whether a ticket is held over its budget or an agent is paused now.
    pub(super) fn any_limit_in_force(&self) -> Result<bool, Broken> {
        let l = self.live();
        let db = |e: yoi_engine::store::StoreError| broken("db", e.to_string());
        let now_ms = self.now().unix_millis();
        Ok(!l.db.budget_holds().map_err(db)?.is_empty()
            || l.db
                .pauses()
                .map_err(db)?
                .iter()
                .any(|p| p.until_ms > now_ms))
    }

    /// Whether the in-progress ticket `t`, whose latest attempt is pending, waits on a person's
    /// grant (held over its budget) or on time (every pod that could take it is paused).
    pub(super) fn waits_on_budget_or_time(&self, t: &TicketId) -> Result<bool, Broken> {
        let l = self.live();
        let db = |e: yoi_engine::store::StoreError| broken("db", e.to_string());
        if l.db
            .budget_holds()
            .map_err(db)?
            .iter()
            .any(|h| h.ticket == t.as_str())
        {
            return Ok(true);
        }
        let now_ms = self.now().unix_millis();
        Ok(l.db
            .pauses()
            .map_err(db)?
            .iter()
            .any(|p| p.until_ms > now_ms))
    }
}
