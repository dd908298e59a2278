//! The board `/`: one lane per state with its true count and a page of cards, the filter form,
//! and the fragments live updates refetch (`/fragments/cards`, `/fragments/counts`). Every read
//! comes from the index: a page of ids per lane, then the facts of those ids only.

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::{Query, State};
use axum::response::Response;
use serde::Deserialize;
use yoi_core::state::State as TicketState;
use yoi_core::TicketId;
use yoi_db::CardFacts;
use yoi_store::query::{ListFilter, TicketSummary};

use super::page::{age, html, short, state_label, Chrome, LiveMark, UiError};
use super::session::Viewer;
use crate::auth::now;
use crate::state::AppState;

/// Cards per lane and page.
pub const LANE_PAGE: usize = 50;
/// The lanes of the board, in order (closed is a count and a link).
pub const LANES: [TicketState; 5] = [
    TicketState::Planning,
    TicketState::Ready,
    TicketState::Queued,
    TicketState::Inprogress,
    TicketState::Done,
];

/// The board's filters, all in the query string (shareable, Back works).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Filters {
    /// Words, plus `state:a,b`, `blocked:yes` and `attention:yes` terms.
    pub q: String,
    /// Comma-separated states (the lanes shown).
    pub state: String,
    /// `yes`: only tickets with an open blocker.
    pub blocked: String,
    /// `yes`: only cards that need a person (see [`Card::attention`]).
    pub attention: String,
    /// Page one lane onwards from this cursor.
    pub lane: String,
    pub after: String,
}

/// The filters as the queries need them.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    pub words: Vec<String>,
    pub states: Option<Vec<TicketState>>,
    pub blocked: bool,
    pub attention: bool,
}

impl Filters {
    pub fn parse(&self) -> Result<Parsed, UiError> {
        let mut p = Parsed {
            blocked: yes(&self.blocked),
            attention: yes(&self.attention),
            ..Parsed::default()
        };
        let mut states = split_states(&self.state)?;
        for word in self.q.split_whitespace() {
            match word.split_once(':') {
                Some(("state", v)) => states.extend(split_states(v)?),
                Some(("blocked", v)) => p.blocked = yes(v),
                Some(("attention", v)) => p.attention = yes(v),
                _ => p.words.push(word.to_string()),
            }
        }
        if !states.is_empty() {
            p.states = Some(states);
        }
        Ok(p)
    }

    /// The query string of these filters (without the paging fields).
    pub fn query(&self) -> String {
        urlencode(
            &[
                ("q", &self.q),
                ("state", &self.state),
                ("blocked", &self.blocked),
                ("attention", &self.attention),
            ]
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .collect::<Vec<_>>(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.query().is_empty()
    }
}

fn yes(v: &str) -> bool {
    matches!(v.trim(), "yes" | "true" | "1" | "on")
}

fn split_states(spec: &str) -> Result<Vec<TicketState>, UiError> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            yoi_store::query::parse_state_filter(Some(s))
                .map_err(|e| UiError::BadRequest(e.to_string()))
                .map(|v| v.unwrap_or_default())
        })
        .collect::<Result<Vec<_>, _>>()
        .map(|v| v.into_iter().flatten().collect())
}

/// A query string of `pairs`, percent-encoded.
pub fn urlencode(pairs: &[(&str, &String)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap_or_default()
}

/// A badge: text always (never colour alone), and a class for its colour.
#[derive(Debug, Clone)]
pub struct Badge {
    pub text: String,
    pub class: &'static str,
}

/// One card.
#[derive(Debug, Clone)]
pub struct Card {
    pub id: String,
    pub short: String,
    pub title: String,
    pub state: &'static str,
    pub age: String,
    pub since: String,
    pub badges: Vec<Badge>,
    /// Needs a person: blocked, routing failed or refused, circuit open, brief incomplete past
    /// planning, changes requested.
    pub attention: bool,
}

impl Card {
    /// `root`: the repository root, against which a recorded worktree is looked for.
    pub fn new(t: &TicketSummary, f: &CardFacts, now_ms: i64, root: &std::path::Path) -> Card {
        let since = f
            .state_since
            .clone()
            .unwrap_or_else(|| t.created_at.to_string());
        let mut badges = Vec::new();
        let mut attention = false;
        if !t.blockers.is_empty() {
            badges.push(Badge {
                text: format!("blocked by {}", t.blockers.len()),
                class: "warn",
            });
            attention = true;
        }
        if f.unblocks > 0 {
            badges.push(Badge {
                text: format!("unblocks {}", f.unblocks),
                class: "info",
            });
        }
        if f.brief_missing > 0 {
            badges.push(Badge {
                text: "brief incomplete".into(),
                class: if t.state == TicketState::Planning {
                    "muted"
                } else {
                    "warn"
                },
            });
            attention |= t.state != TicketState::Planning;
        }
        if t.state == TicketState::Queued {
            if let Some(kind) = &f.last_decision {
                let (text, class, needs) = match kind.as_str() {
                    "waiting_capacity" => ("waiting: capacity", "muted", false),
                    "waiting_conflict" => ("waiting: conflict", "muted", false),
                    "blocked_by_dependency" => ("waiting: blocked", "muted", false),
                    "acceptance_failed" => ("routing failed", "bad", true),
                    "circuit_open" => ("circuit open", "bad", true),
                    "stopped" => ("routing stopped", "bad", true),
                    "return_to_planning" => ("sent back to planning", "warn", true),
                    _ => ("", "", false),
                };
                if !text.is_empty() {
                    badges.push(Badge {
                        text: text.into(),
                        class,
                    });
                    attention |= needs;
                }
            }
        }
        if f.changes_requested && t.state == TicketState::Inprogress {
            badges.push(Badge {
                text: "changes requested".into(),
                class: "warn",
            });
        }
        if t.state == TicketState::Inprogress {
            let missing = match &f.worktree {
                Some(w) => !root.join(w).is_dir(),
                None => true,
            };
            if missing {
                badges.push(Badge {
                    text: "worktree missing".into(),
                    class: "bad",
                });
                attention = true;
            }
        }
        if let Some(pr) = f.forge.filter(|b| *b != yoi_core::forge::Badge::None) {
            use yoi_core::forge::Badge as Pr;
            badges.push(Badge {
                text: pr.label().into(),
                class: match pr {
                    Pr::ChecksFailing | Pr::Closed => "bad",
                    Pr::ChangesRequested => "warn",
                    Pr::ReadyToMerge | Pr::Merged => "ok",
                    _ => "info",
                },
            });
        }
        if let Some(w) = &f.working {
            badges.push(Badge {
                text: match &w.pod {
                    Some(pod) => format!("{} · {pod}", w.role),
                    None => format!("{}: waiting for a pod", w.role),
                },
                class: "role",
            });
        }
        Card {
            id: t.id.to_string(),
            short: short(t.id.as_str()),
            title: t.title.clone(),
            state: t.state.as_str(),
            age: age(&since, now_ms),
            since,
            badges,
            attention,
        }
    }
}

pub struct Lane {
    pub state: &'static str,
    pub label: &'static str,
    pub count: i64,
    pub cards: Vec<Card>,
    /// The "show more" link, when more cards follow.
    pub more: Option<String>,
    /// The cards start after a cursor (a "show more" page).
    pub paged: bool,
}

#[derive(Template)]
#[template(path = "board.html")]
pub struct BoardPage {
    pub chrome: Chrome,
    pub filters: Filters,
    pub lanes: Vec<Lane>,
    pub closed: i64,
    pub in_progress: i64,
    pub max_inprogress: usize,
    pub op: String,
    pub api_query: String,
    /// Tickets yoi cannot read, shown as broken cards whatever the filters.
    pub broken: Vec<yoi_store::tickets::BrokenTicket>,
}

/// The cards of `tickets` with their facts.
pub async fn cards(s: &AppState, tickets: &[TicketSummary]) -> Result<Vec<Card>, UiError> {
    let ids: Vec<TicketId> = tickets.iter().map(|t| t.id.clone()).collect();
    let facts = s.db().card_facts(&ids).await.map_err(UiError::from_store)?;
    let now_ms = now().unix_millis();
    let none = CardFacts::default();
    Ok(tickets
        .iter()
        .map(|t| Card::new(t, facts.get(&t.id).unwrap_or(&none), now_ms, s.ws.root()))
        .collect())
}

pub async fn board(
    State(s): State<AppState>,
    v: Viewer,
    Query(f): Query<Filters>,
) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let p = f.parse()?;
    let counts = s.db().count_by_state().await.map_err(UiError::from_store)?;
    let shown: Vec<TicketState> = LANES
        .into_iter()
        .filter(|l| p.states.as_ref().is_none_or(|s| s.contains(l)))
        .collect();
    let filtered = !p.words.is_empty() || p.blocked;
    // One page per lane, then the facts of every card on the board in one go.
    let mut pages = Vec::new();
    for state in shown {
        let after = (f.lane == state.as_str() && !f.after.is_empty())
            .then(|| TicketId::parse(&f.after))
            .transpose()
            .map_err(|e| UiError::BadRequest(e.to_string()))?;
        let filter = ListFilter {
            states: Some(vec![state]),
            ready: false,
            blocked: p.blocked,
        };
        let page = s
            .db()
            .list_ordered(
                &filter,
                &p.words,
                after.as_ref(),
                LANE_PAGE,
                state == TicketState::Done,
            )
            .await
            .map_err(UiError::from_store)?;
        pages.push((state, after.is_some(), page));
    }
    let all: Vec<TicketSummary> = pages
        .iter()
        .flat_map(|(_, _, page)| page.tickets.iter().cloned())
        .collect();
    let mut cards = cards(&s, &all).await?.into_iter();
    let mut lanes = Vec::new();
    for (state, paged, page) in pages {
        let mut lane_cards: Vec<Card> = cards.by_ref().take(page.tickets.len()).collect();
        if p.attention {
            lane_cards.retain(|c| c.attention);
        }
        let count = if filtered || p.attention {
            // A filtered lane counts what it shows on this page (and says so).
            -1
        } else {
            counts.get(&state).copied().unwrap_or(0)
        };
        let more = page.next.map(|n| {
            let q = f.query();
            format!(
                "/?{}{}lane={}&after={n}#lane-{}",
                q,
                if q.is_empty() { "" } else { "&" },
                state.as_str(),
                state.as_str()
            )
        });
        lanes.push(Lane {
            state: state.as_str(),
            label: state_label(state),
            count,
            cards: lane_cards,
            more,
            paged,
        });
    }
    let chrome = Chrome::new(&s, &v, mark, "Board", "board").await?;
    let broken = crate::routes::tickets::broken_tickets(&s).await?;
    let api_query = {
        let mut q = vec!["state=all".to_string()];
        if p.blocked {
            q.push("blocked=true".into());
        }
        if !p.words.is_empty() {
            q.push(urlencode(&[("search", &p.words.join(" "))]));
        }
        format!("/api/v1/tickets?{}", q.join("&"))
    };
    Ok(html(&BoardPage {
        chrome,
        lanes,
        closed: counts.get(&TicketState::Closed).copied().unwrap_or(0),
        in_progress: counts.get(&TicketState::Inprogress).copied().unwrap_or(0),
        max_inprogress: s.ws.config.router.max_inprogress,
        op: ulid::Ulid::new().to_string(),
        filters: f,
        api_query,
        broken,
    }))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CardsQuery {
    pub ids: String,
    #[serde(flatten)]
    pub filters: Filters,
}

#[derive(Template)]
#[template(path = "fragments/cards.html")]
pub struct CardsFragment {
    pub cards: Vec<Card>,
}

/// `GET /fragments/cards?ids=a,b&<filters>`: the current card of each id that still matches
/// the board's filters; an id without a card here left the board.
pub async fn cards_fragment(
    State(s): State<AppState>,
    _v: Viewer,
    Query(q): Query<CardsQuery>,
) -> Result<Response, UiError> {
    let p = q.filters.parse()?;
    let ids: Vec<TicketId> = q
        .ids
        .split(',')
        .filter(|i| !i.trim().is_empty())
        .take(200)
        .map(|i| TicketId::parse(i.trim()))
        .collect::<Result<_, _>>()
        .map_err(|e| UiError::BadRequest(e.to_string()))?;
    let mut tickets = s
        .db()
        .summaries_by_id(&ids, &p.words, p.blocked)
        .await
        .map_err(UiError::from_store)?;
    tickets.retain(|t| {
        LANES.contains(&t.state) && p.states.as_ref().is_none_or(|s| s.contains(&t.state))
    });
    let mut cards = cards(&s, &tickets).await?;
    if p.attention {
        cards.retain(|c| c.attention);
    }
    Ok(html(&CardsFragment { cards }))
}

#[derive(Template)]
#[template(path = "fragments/counts.html")]
pub struct CountsFragment {
    pub counts: BTreeMap<&'static str, i64>,
    pub in_progress: i64,
    pub max_inprogress: usize,
    pub router: String,
}

/// `GET /fragments/counts`: every lane's count and the router line.
pub async fn counts_fragment(State(s): State<AppState>, _v: Viewer) -> Result<Response, UiError> {
    let counts = s.db().count_by_state().await.map_err(UiError::from_store)?;
    Ok(html(&CountsFragment {
        in_progress: counts.get(&TicketState::Inprogress).copied().unwrap_or(0),
        max_inprogress: s.ws.config.router.max_inprogress,
        counts: TicketState::ALL
            .into_iter()
            .map(|st| (st.as_str(), counts.get(&st).copied().unwrap_or(0)))
            .collect(),
        router: super::page::router_line(&s),
    }))
}
