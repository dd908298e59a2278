//! `GET /costs`: where the money went (docs/budgets.md) — spend per UTC day by agent profile as
//! an SVG drawn here (no chart library in the browser), the tickets that cost most, the limits
//! in force, the agents paused and the tickets held over their budget.

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use yoi_db::spend::{BudgetHold, Pause, Spent, SpentBy, SpentRow};

use super::page::{html, Chrome, LiveMark, UiError};
use super::session::Viewer;
use crate::auth::now;
use crate::state::AppState;

const DAY_MS: i64 = 86_400_000;
/// Days the chart shows, today included.
const DAYS: i64 = 14;
/// Fill colours of the agents, in order of first appearance (then repeated).
const COLOURS: [&str; 6] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1",
];

/// One bar segment: an agent's spend on a day.
pub struct Segment {
    pub x: i64,
    pub y: i64,
    pub width: i64,
    pub height: i64,
    pub colour: &'static str,
    /// The tooltip: day, agent, amount.
    pub title: String,
}

pub struct Legend {
    pub agent: String,
    pub colour: &'static str,
}

pub struct Tick {
    pub x: i64,
    pub label: String,
}

pub struct Chart {
    pub width: i64,
    pub height: i64,
    pub segments: Vec<Segment>,
    pub legend: Vec<Legend>,
    pub ticks: Vec<Tick>,
    /// The largest day's spend, labelled on the axis.
    pub top: String,
    /// The daily budget's line, when one is set and within the chart.
    pub budget_y: Option<i64>,
}

pub struct PauseLine {
    pub p: Pause,
    pub until: String,
    pub active: bool,
}

#[derive(Template)]
#[template(path = "costs.html")]
pub struct CostsPage {
    pub chrome: Chrome,
    pub chart: Chart,
    pub top: Vec<SpentRow>,
    pub today: Spent,
    pub day_usd: Option<f64>,
    pub ticket_usd: Option<f64>,
    pub pauses: Vec<PauseLine>,
    pub holds: Vec<BudgetHold>,
}

impl CostsPage {
    pub fn usd(&self, micros: &i64) -> String {
        format!("${:.2}", *micros as f64 / 1e6)
    }
}

/// The chart of `rows` (day number, agent, spend) for the `DAYS` days up to `today`.
fn chart(rows: &[(i64, String, Spent)], today: i64, day_budget: Option<f64>) -> Chart {
    let (width, height, left, bottom, top_pad) = (640, 220, 48, 24, 12);
    let first = today - DAYS + 1;
    let mut agents: Vec<String> = Vec::new();
    for (_, a, _) in rows {
        if !agents.contains(a) {
            agents.push(a.clone());
        }
    }
    let colour = |a: &str| COLOURS[agents.iter().position(|x| x == a).unwrap_or(0) % COLOURS.len()];
    let per_day = |d: i64| -> i64 {
        rows.iter()
            .filter(|(day, ..)| *day == d)
            .map(|(_, _, s)| s.cost_micros)
            .sum()
    };
    let budget_micros = day_budget.map(|b| (b * 1e6) as i64);
    let max = (first..=today)
        .map(per_day)
        .chain(budget_micros)
        .max()
        .unwrap_or(0)
        .max(1);
    let plot_h = height - bottom - top_pad;
    let slot = (width - left) / DAYS;
    let mut segments = Vec::new();
    for d in first..=today {
        let mut y = height - bottom;
        for (_, a, s) in rows.iter().filter(|(day, ..)| *day == d) {
            let h = (s.cost_micros * plot_h / max).max(i64::from(s.cost_micros > 0));
            y -= h;
            segments.push(Segment {
                x: left + (d - first) * slot + 2,
                y,
                width: slot - 4,
                height: h,
                colour: colour(a),
                title: format!(
                    "{}: {} ${:.2} ({} tokens, {} attempts)",
                    yoi_db::spend::day_name(d),
                    if a.is_empty() { "-" } else { a },
                    s.usd(),
                    s.tokens,
                    s.attempts
                ),
            });
        }
    }
    let ticks = (first..=today)
        .step_by(2)
        .map(|d| Tick {
            x: left + (d - first) * slot + slot / 2,
            label: yoi_db::spend::day_name(d)[5..].to_string(),
        })
        .collect();
    Chart {
        width,
        height,
        segments,
        legend: agents
            .iter()
            .map(|a| Legend {
                agent: if a.is_empty() { "-".into() } else { a.clone() },
                colour: colour(a),
            })
            .collect(),
        ticks,
        top: format!("${:.2}", max as f64 / 1e6),
        budget_y: budget_micros.map(|b| height - bottom - b * plot_h / max),
    }
}

pub async fn page(State(s): State<AppState>, v: Viewer) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let now_ms = now().unix_millis();
    let today = now_ms.div_euclid(DAY_MS);
    let since = (today - DAYS + 1) * DAY_MS;
    let db = s.db().clone();
    let rows = db
        .spent_by_day_and_agent(since)
        .await
        .map_err(UiError::from_store)?;
    let mut top = db
        .spent_by(SpentBy::Ticket, since)
        .await
        .map_err(UiError::from_store)?;
    top.truncate(10);
    let today_spent = db
        .spent_since(today * DAY_MS, None)
        .await
        .map_err(UiError::from_store)?;
    let pauses = db
        .pauses()
        .await
        .map_err(UiError::from_store)?
        .into_iter()
        .filter(|p| p.until_ms > now_ms || p.strikes > 0)
        .map(|p| PauseLine {
            until: yoi_core::Timestamp::from_unix_millis(p.until_ms).to_string(),
            active: p.until_ms > now_ms,
            p,
        })
        .collect();
    let holds = db.budget_holds().await.map_err(UiError::from_store)?;
    let b = &s.ws.config.budget;
    let chrome = Chrome::new(&s, &v, mark, "Costs", "costs").await?;
    Ok(html(&CostsPage {
        chrome,
        chart: chart(&rows, today, b.day_usd),
        top,
        today: today_spent,
        day_usd: b.day_usd,
        ticket_usd: b.ticket_usd,
        pauses,
        holds,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_stack_per_day_scaled_to_the_largest_day() {
        let s = |c: i64| Spent {
            cost_micros: c,
            tokens: 10,
            attempts: 1,
        };
        let rows = vec![
            (100, "claude".to_string(), s(2_000_000)),
            (100, "codex".to_string(), s(2_000_000)),
            (101, "claude".to_string(), s(1_000_000)),
        ];
        let c = chart(&rows, 101, Some(8.0));
        assert_eq!(c.segments.len(), 3);
        assert_eq!(c.legend.len(), 2);
        // The budget ($8) is the top of the scale; day 100's two segments stack to half of it.
        assert_eq!(c.top, "$8.00");
        let day100: i64 = c.segments[..2].iter().map(|s| s.height).sum();
        assert_eq!(day100, (220 - 24 - 12) / 2);
        assert_eq!(c.segments[1].y + c.segments[1].height, c.segments[0].y);
        assert_eq!(c.budget_y, Some(12));
        assert!(c.segments[2].title.contains("claude $1.00"));
    }
}
