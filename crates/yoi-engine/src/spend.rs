//! Spending within limits (docs/budgets.md): the rules over what attempts cost.
//!
//! - **Priced.** An attempt whose agent reported tokens but no cost gets an estimate from the
//!   price table (`[prices."MODEL"]` over [`builtin_price`]) before it is recorded; reported and
//!   estimated costs stay apart (`cost_source`).
//! - **Budgets** (`[budget]`): per ticket (the configured limit plus what people added with
//!   `yoi ticket budget`), per UTC day for the workspace, and per agent profile per day. Spend
//!   only changes when an attempt ends, so the limits are checked then ([`after_attempt`]): at
//!   the soft share a `budget_near` attention event (once), at the limit the ticket's pending
//!   steps are held (`budget_reached`, the ticket stays in progress) or, for a daily limit, the
//!   agents pause until the next UTC day. Nothing running is killed and nothing is lost.
//! - **Rate limits pause** ([`rate_limited`]): the attempt ends `rate_limited`, never counted as
//!   a failure; the pod's provider (or profile) pauses until the reset its output named, else
//!   1 minute doubling per limit in a row up to 1 hour; the step is handed out again at once and
//!   claimed when the pause ends.
//! - **A running attempt that streams its usage** ([`over_while_running`]): its heartbeats carry
//!   the usage so far, and once that plus what was spent before passes a hard limit by
//!   `[budget] stop_margin` the heartbeat tells the pod to stop it; the pod ends the agent and
//!   fails the attempt with the reason, keeping its work on the attempt.
//! - **The governor** ([`gate`]): a pod whose profile or provider runs `[governor]`'s limit of
//!   attempts at once, or is paused, claims nothing.

use std::collections::HashMap;

use yoi_core::report::{CostSource, RateLimit, Usage};
use yoi_core::thread::{EventKind, ParsedThread};
use yoi_core::{Principal, TicketId, Timestamp};
use yoi_db::spend::{Pause, Spent, SpentBy, SpentRow};
use yoi_db::{Assignment, DbIndex, PodRow};
use yoi_store::ops::{self, ADD_TOKENS, ADD_USD, ATTENTION_REASON};
use yoi_store::{Ctx, StoreError, Workspace};

/// The attention reason of a ticket whose spend passed the soft share of a limit.
pub const BUDGET_NEAR: &str = "budget_near";
/// The attention reason of a ticket held over a limit.
pub const BUDGET_REACHED: &str = "budget_reached";
/// Pause reasons.
pub const RATE_LIMITED: &str = "rate_limited";
pub const BUDGET_DAY: &str = "budget_day";
pub const BUDGET_AGENT_DAY: &str = "budget_agent_day";
/// The pause subject of every agent (the workspace's daily limit).
pub const EVERYONE: &str = "*";

const DAY_MS: i64 = 86_400_000;
const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 3_600_000;

/// USD per million tokens of common models, as their makers listed them on 2026-11-30; a
/// workspace's `[prices."MODEL"]` comes first. Used only to estimate what an agent did not
/// report.
const BUILTIN_PRICES: &[(&str, f64, f64, f64)] = &[
    ("claude-opus-4", 15.0, 75.0, 1.5),
    ("claude-sonnet-4", 3.0, 15.0, 0.3),
    ("claude-haiku-4", 1.0, 5.0, 0.1),
    ("gpt-5", 1.25, 10.0, 0.125),
    ("gpt-5-mini", 0.25, 2.0, 0.025),
    ("gpt-4.1", 2.0, 8.0, 0.5),
    ("gpt-4o", 2.5, 10.0, 1.25),
    ("o4-mini", 1.1, 4.4, 0.275),
    ("gemini-2.5-pro", 1.25, 10.0, 0.31),
    ("gemini-2.5-flash", 0.3, 2.5, 0.075),
];

/// The price of `model` in the built-in table: the longest entry `model` starts with, so dated
/// and suffixed names (`claude-sonnet-4-5-20250929`, `gpt-5-mini-2025-08-07`) find theirs.
pub fn builtin_price(model: &str) -> Option<yoi_agent::profile::Price> {
    let m = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    BUILTIN_PRICES
        .iter()
        .filter(|(name, ..)| m.starts_with(name))
        .max_by_key(|(name, ..)| name.len())
        .map(|&(_, input, output, cached)| yoi_agent::profile::Price {
            input,
            output,
            cached,
        })
}

/// `u` with an estimated cost when its agent reported none and its model has a price.
pub fn priced(ws: &Workspace, mut u: Usage) -> Usage {
    if u.cost_usd.is_some() {
        if u.cost_source == CostSource::None {
            u.cost_source = CostSource::Reported;
        }
        return u;
    }
    let price = u.model.as_deref().and_then(|m| {
        ws.config
            .prices
            .get(m)
            .copied()
            .or_else(|| builtin_price(m))
    });
    if let Some(p) = price {
        u.cost_usd = Some(
            (u.tokens_in as f64 * p.input
                + u.tokens_out as f64 * p.output
                + u.tokens_cached as f64 * p.cached)
                / 1_000_000.0,
        );
        u.cost_source = CostSource::Estimated;
    }
    u
}

/// A ticket's limits: the configured ones plus what people added in its thread.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limit {
    pub usd: Option<f64>,
    pub tokens: Option<u64>,
}

impl Limit {
    /// How far `spent` is into the limit: the larger share of money and tokens.
    fn share(&self, spent: &Spent) -> f64 {
        // In whole millionths of a USD, as spend is counted: $0.04 of $0.05 is 80%, not
        // 79.99…% as in binary fractions.
        let money = self
            .usd
            .map(|l| match (l * 1e6).round() as i64 {
                micros if micros <= 0 => f64::INFINITY,
                micros => spent.cost_micros as f64 / micros as f64,
            })
            .unwrap_or(0.0);
        let tokens = self
            .tokens
            .map(|l| {
                if l == 0 {
                    f64::INFINITY
                } else {
                    spent.tokens as f64 / l as f64
                }
            })
            .unwrap_or(0.0);
        money.max(tokens)
    }

    fn says(&self, spent: &Spent) -> String {
        let mut parts = Vec::new();
        if let Some(l) = self.usd {
            parts.push(format!("${:.2} of ${l:.2}", spent.usd()));
        }
        if let Some(l) = self.tokens {
            parts.push(format!("{} of {l} tokens", spent.tokens));
        }
        parts.join(", ")
    }
}

/// The limit of a ticket whose thread is `thread`.
pub fn ticket_limit(ws: &Workspace, thread: &ParsedThread) -> Limit {
    let b = &ws.config.budget;
    let mut limit = Limit {
        usd: b.ticket_usd,
        tokens: b.ticket_tokens,
    };
    for e in thread.events.iter().filter(|e| e.kind == EventKind::Budget) {
        if let Some(add) = e.get(ADD_USD).and_then(|v| v.parse::<f64>().ok()) {
            limit.usd = Some(limit.usd.unwrap_or(0.0) + add);
        }
        if let Some(add) = e.get(ADD_TOKENS).and_then(|v| v.parse::<u64>().ok()) {
            limit.tokens = Some(limit.tokens.unwrap_or(0).saturating_add(add));
        }
    }
    // Added tokens alone do not make the money unlimited, nor the other way round: a limit
    // that was never configured stays unset unless a person set one by adding to it.
    limit
}

/// The start of the UTC day holding `ms`.
pub fn day_start(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS) * DAY_MS
}

/// Whether the thread already said `reason` since the ticket's budget last grew.
fn said_since_last_grant(thread: &ParsedThread, reason: &str) -> bool {
    thread
        .events
        .iter()
        .rev()
        .take_while(|e| e.kind != EventKind::Budget)
        .any(|e| e.kind == EventKind::Attention && e.get(ATTENTION_REASON) == Some(reason))
}

fn attention(
    ws: &Workspace,
    ticket: &str,
    reason: &str,
    body: &str,
    now: Timestamp,
) -> Result<(), StoreError> {
    let ctx = Ctx::new(Principal::orchestrator(), now);
    match ops::attention(ws, &ctx, ticket, reason, body) {
        // A ticket that moved on (done, closed) needs no word about its budget.
        Ok(_) | Err(StoreError::StaleState { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The daily limits an attempt of `agent` counts against, each set one with its pause
/// subject and attention reason: the workspace's (`*`) and the agent profile's own.
fn daily_limits<'a>(
    b: &yoi_store::config::BudgetSection,
    agent: Option<&'a str>,
) -> Vec<(String, &'static str, Limit, Option<&'a str>)> {
    let mut daily = Vec::new();
    let day = Limit {
        usd: b.day_usd,
        tokens: b.day_tokens,
    };
    if day.usd.is_some() || day.tokens.is_some() {
        daily.push((EVERYONE.to_string(), BUDGET_DAY, day, None));
    }
    if let Some((name, ab)) = agent.and_then(|n| b.agents.get(n).map(|ab| (n, ab))) {
        let l = Limit {
            usd: ab.day_usd,
            tokens: ab.day_tokens,
        };
        if l.usd.is_some() || l.tokens.is_some() {
            daily.push((format!("agent:{name}"), BUDGET_AGENT_DAY, l, Some(name)));
        }
    }
    daily
}

/// Check the limits after attempt `a` (run by the agent profile `agent`) ended: hold its ticket
/// over the ticket's limit, pause agents over a daily one, and say so once each.
pub fn after_attempt(
    ws: &Workspace,
    index: &DbIndex,
    a: &Assignment,
    agent: Option<&str>,
    now: Timestamp,
) -> Result<(), StoreError> {
    let b = &ws.config.budget;
    let now_ms = now.unix_millis();
    let ticket = TicketId::parse(&a.ticket)?;
    let thread = ws.read_thread(&ticket)?;
    let limit = ticket_limit(ws, &thread);
    if limit.usd.is_some() || limit.tokens.is_some() {
        let spent = index.spent_on_ticket(&a.ticket)?;
        let share = limit.share(&spent);
        if share >= 1.0 {
            let message = format!("ticket {} spent {}", a.ticket, limit.says(&spent));
            if index.hold_ticket(&a.ticket, &message, now_ms)?
                && !said_since_last_grant(&thread, BUDGET_REACHED)
            {
                let body = format!(
                    "The ticket reached its budget: {}. Its next step waits (the ticket stays in \
                     progress and keeps its work) until a person adds to it: \
                     `yoi ticket budget {} --add USD`.",
                    limit.says(&spent),
                    a.ticket
                );
                attention(ws, &a.ticket, BUDGET_REACHED, &body, now)?;
            }
        } else if share >= b.soft && !said_since_last_grant(&thread, BUDGET_NEAR) {
            let body = format!(
                "The ticket is near its budget: {} ({:.0}%).",
                limit.says(&spent),
                share * 100.0
            );
            attention(ws, &a.ticket, BUDGET_NEAR, &body, now)?;
        }
    }
    let today = day_start(now_ms);
    let tomorrow = today + DAY_MS;
    let daily = daily_limits(b, agent);
    for (subject, reason, limit, agent) in daily {
        let spent = index.spent_since(today, agent)?;
        if limit.share(&spent) < 1.0 {
            continue;
        }
        let already = index
            .pauses()?
            .into_iter()
            .any(|p| p.subject == subject && p.until_ms >= tomorrow);
        if already {
            continue;
        }
        let whose = agent.map_or("the workspace".to_string(), |a| format!("agent `{a}`"));
        let message = format!(
            "{whose} spent {} today (UTC); no new attempt starts until the next UTC day",
            limit.says(&spent)
        );
        index.pause(&Pause {
            subject,
            until_ms: tomorrow,
            strikes: 0,
            reason: reason.to_string(),
            message: message.clone(),
            since_ms: now_ms,
        })?;
        attention(
            ws,
            &a.ticket,
            BUDGET_REACHED,
            &format!("The daily budget is reached: {message}. Raise `[budget]` in .yoi/workspace.toml to go on today."),
            now,
        )?;
    }
    Ok(())
}

/// Whether running attempt `a`, which has used `running` so far (its heartbeat says, from an
/// agent that streams its usage), must stop: what it used plus what was spent before passes
/// its ticket's limit, the day's or its agent's day's by more than `[budget] stop_margin`.
/// The reason, for the attempt's failure, when it must.
pub fn over_while_running(
    ws: &Workspace,
    index: &DbIndex,
    a: &Assignment,
    running: Usage,
    now_ms: i64,
) -> Result<Option<String>, StoreError> {
    let b = &ws.config.budget;
    let running = priced(ws, running);
    let so_far = Spent {
        cost_micros: running
            .cost_usd
            .filter(|c| c.is_finite() && *c >= 0.0)
            .map_or(0, |c| (c * 1e6).round() as i64),
        tokens: (running.tokens_in + running.tokens_out + running.tokens_cached) as i64,
        attempts: 1,
    };
    let plus = |s: Spent| Spent {
        cost_micros: s.cost_micros + so_far.cost_micros,
        tokens: s.tokens + so_far.tokens,
        attempts: s.attempts + 1,
    };
    let stop_at = 1.0 + b.stop_margin;
    let margin = format!("{:.0}%", b.stop_margin * 100.0);
    let ticket = TicketId::parse(&a.ticket)?;
    let limit = ticket_limit(ws, &ws.read_thread(&ticket)?);
    if limit.usd.is_some() || limit.tokens.is_some() {
        let spent = plus(index.spent_on_ticket(&a.ticket)?);
        if limit.share(&spent) >= stop_at {
            return Ok(Some(format!(
                "stopped while running: the ticket's budget was passed by more than {margin} ({} with this attempt's streamed usage); its work so far is kept on the attempt",
                limit.says(&spent)
            )));
        }
    }
    let today = day_start(now_ms);
    for (_, _, limit, of) in daily_limits(b, running.agent.as_deref()) {
        let spent = plus(index.spent_since(today, of)?);
        if limit.share(&spent) >= stop_at {
            let whose = of.map_or("the workspace's daily budget".to_string(), |a| {
                format!("agent `{a}`'s daily budget")
            });
            return Ok(Some(format!(
                "stopped while running: {whose} was passed by more than {margin} ({} today with this attempt's streamed usage); its work so far is kept on the attempt",
                limit.says(&spent)
            )));
        }
    }
    Ok(None)
}

/// Let held tickets go on whose limits now allow it (a person added to the budget, or the
/// configuration was raised). Returns the tickets released.
pub fn release_held(ws: &Workspace, index: &DbIndex) -> Result<Vec<String>, StoreError> {
    let mut released = Vec::new();
    for hold in index.budget_holds()? {
        let Ok(id) = TicketId::parse(&hold.ticket) else {
            continue;
        };
        let under = match ws.read_thread(&id) {
            Ok(thread) => {
                let limit = ticket_limit(ws, &thread);
                limit.share(&index.spent_on_ticket(&hold.ticket)?) < 1.0
            }
            // A ticket whose files are gone holds nothing back.
            Err(_) => true,
        };
        if under && index.release_ticket(&hold.ticket)? {
            released.push(hold.ticket);
        }
    }
    Ok(released)
}

/// The pause subject of a pod: its provider, else its profile.
pub fn subject_of(pod: &PodRow) -> Option<String> {
    match (&pod.provider, &pod.profile) {
        (Some(p), _) => Some(format!("provider:{p}")),
        (None, Some(a)) => Some(format!("agent:{a}")),
        (None, None) => None,
    }
}

/// The pause after a rate limit of `pod`'s agent: until the reset its output named (at least a
/// minute from now), else a minute doubled per limit in a row, up to an hour.
pub fn rate_limited(
    index: &DbIndex,
    pod: &PodRow,
    rl: &RateLimit,
    now_ms: i64,
) -> Result<Option<Pause>, StoreError> {
    let Some(subject) = subject_of(pod) else {
        return Ok(None);
    };
    let strikes = index
        .pauses()?
        .into_iter()
        .find(|p| p.subject == subject && p.reason == RATE_LIMITED)
        .map_or(0, |p| p.strikes)
        + 1;
    let backoff = (MINUTE_MS << (strikes - 1).clamp(0, 6)).min(HOUR_MS);
    let until_ms = match rl.resets_at_ms {
        Some(at) if at > now_ms => at.min(now_ms + 24 * HOUR_MS),
        _ => now_ms + backoff,
    };
    let pause = Pause {
        subject,
        until_ms,
        strikes,
        reason: RATE_LIMITED.to_string(),
        message: rl.message.chars().take(300).collect(),
        since_ms: now_ms,
    };
    index.pause(&pause)?;
    Ok(Some(pause))
}

/// `pod`'s agent got through: its rate-limit strikes are forgotten.
pub fn got_through(index: &DbIndex, pod: &PodRow) -> Result<(), StoreError> {
    if let Some(subject) = subject_of(pod) {
        let limited = index
            .pauses()?
            .into_iter()
            .any(|p| p.subject == subject && p.reason == RATE_LIMITED);
        if limited {
            index.clear_pause(&subject)?;
        }
    }
    Ok(())
}

/// Which of `pods` may claim now: not paused (everyone, its profile or its provider) and under
/// `[governor]`'s limits, counting the attempts running now and those granted in this wave.
/// The answer is in `pods`' order; `Some(reason)` for a pod that waits.
pub fn gate(
    ws: &Workspace,
    index: &DbIndex,
    pods: &[&PodRow],
    now_ms: i64,
) -> Result<Vec<Option<String>>, StoreError> {
    let pauses: Vec<Pause> = index
        .pauses()?
        .into_iter()
        .filter(|p| p.until_ms > now_ms)
        .collect();
    let g = &ws.config.governor;
    let mut by_agent: HashMap<String, i64> = HashMap::new();
    let mut by_provider: HashMap<String, i64> = HashMap::new();
    if !g.agents.is_empty() || !g.providers.is_empty() {
        for (agent, provider, n) in index.running_by_agent()? {
            if let Some(a) = agent {
                *by_agent.entry(a).or_default() += n;
            }
            if let Some(p) = provider {
                *by_provider.entry(p).or_default() += n;
            }
        }
    }
    Ok(pods
        .iter()
        .map(|pod| {
            let mine = |s: &str| {
                s == EVERYONE
                    || pod
                        .profile
                        .as_deref()
                        .is_some_and(|a| s == format!("agent:{a}"))
                    || pod
                        .provider
                        .as_deref()
                        .is_some_and(|p| s == format!("provider:{p}"))
            };
            if let Some(p) = pauses.iter().find(|p| mine(&p.subject)) {
                return Some(format!(
                    "{} paused until {} ({})",
                    p.subject, p.until_ms, p.reason
                ));
            }
            let agent_full = pod.profile.as_deref().and_then(|a| {
                let max = i64::from(*g.agents.get(a)?);
                (by_agent.get(a).copied().unwrap_or(0) >= max)
                    .then(|| format!("agent `{a}` runs its {max} at once"))
            });
            let provider_full = pod.provider.as_deref().and_then(|p| {
                let max = i64::from(*g.providers.get(p)?);
                (by_provider.get(p).copied().unwrap_or(0) >= max)
                    .then(|| format!("provider `{p}` runs its {max} at once"))
            });
            if let Some(why) = agent_full.or(provider_full) {
                return Some(why);
            }
            // Granted: it counts for the pods after it in this wave.
            if let Some(a) = &pod.profile {
                *by_agent.entry(a.clone()).or_default() += 1;
            }
            if let Some(p) = &pod.provider {
                *by_provider.entry(p.clone()).or_default() += 1;
            }
            None
        })
        .collect())
}

/// Spend since a moment, grouped ([`breakdown`]).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CostBreakdown {
    pub by: SpentBy,
    pub since_ms: i64,
    pub total: Spent,
    pub rows: Vec<SpentRow>,
}

/// Spend since `since_ms`, grouped `by` ticket, UTC day, agent profile or model.
pub fn breakdown(index: &DbIndex, by: SpentBy, since_ms: i64) -> Result<CostBreakdown, StoreError> {
    let rows = index.spent_by(by, since_ms)?;
    let total = rows.iter().fold(Spent::default(), |t, r| Spent {
        cost_micros: t.cost_micros + r.spent.cost_micros,
        tokens: t.tokens + r.spent.tokens,
        attempts: t.attempts + r.spent.attempts,
    });
    Ok(CostBreakdown {
        by,
        since_ms,
        total,
        rows,
    })
}

/// The limits in force now and who waits on them.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Limits {
    pub now_ms: i64,
    /// Spent today (UTC), the whole workspace.
    pub today: Spent,
    pub ticket_usd: Option<f64>,
    pub ticket_tokens: Option<u64>,
    pub day_usd: Option<f64>,
    pub day_tokens: Option<u64>,
    /// Agents that may not start work until a time: paused now, or with rate-limit strikes.
    pub pauses: Vec<Pause>,
    /// Tickets whose steps wait over their budget.
    pub holds: Vec<yoi_db::spend::BudgetHold>,
}

pub fn limits(ws: &Workspace, index: &DbIndex, now_ms: i64) -> Result<Limits, StoreError> {
    let b = &ws.config.budget;
    Ok(Limits {
        now_ms,
        today: index.spent_since(day_start(now_ms), None)?,
        ticket_usd: b.ticket_usd,
        ticket_tokens: b.ticket_tokens,
        day_usd: b.day_usd,
        day_tokens: b.day_tokens,
        pauses: index
            .pauses()?
            .into_iter()
            .filter(|p| p.until_ms > now_ms || p.strikes > 0)
            .collect(),
        holds: index.budget_holds()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dated_model_names_find_their_built_in_price() {
        let p = builtin_price("claude-sonnet-4-5-20250929").unwrap();
        assert_eq!((p.input, p.output), (3.0, 15.0));
        assert_eq!(builtin_price("gpt-5-mini-2025-08-07").unwrap().input, 0.25);
        assert_eq!(builtin_price("openai/gpt-5").unwrap().input, 1.25);
        assert!(builtin_price("my-local-model").is_none());
    }

    #[test]
    fn a_limit_is_as_far_as_its_fuller_measure() {
        let spent = Spent {
            cost_micros: 500_000,
            tokens: 900,
            attempts: 2,
        };
        let l = Limit {
            usd: Some(1.0),
            tokens: Some(1000),
        };
        assert!((l.share(&spent) - 0.9).abs() < 1e-9);
        let four_cents = Spent {
            cost_micros: 40_000,
            tokens: 0,
            attempts: 2,
        };
        let five = Limit {
            usd: Some(0.05),
            tokens: None,
        };
        assert!(five.share(&four_cents) >= 0.8, "80% exactly");
        assert_eq!(Limit::default().share(&spent), 0.0);
        assert_eq!(day_start(86_400_000 * 3 + 5), 86_400_000 * 3);
        assert_eq!(day_start(-1), -86_400_000);
    }
}
