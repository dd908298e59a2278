//! The other pages: login, the queue with why each ticket waits, the ticket table with bulk
//! actions, pods, skills (with proposals to approve or reject) and the doctor.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use yoi_core::state::State as TicketState;
use yoi_core::TicketId;
use yoi_db::{hash_secret, PodRow, Scope};
use yoi_engine::routing::view::QueueView;
use yoi_store::query::ListFilter;

use super::actions::Form;
use super::board::{cards, Card, Filters};
use super::page::{age, html, short, Chrome, LiveMark, UiError};
use super::session::{self, Viewer};
use crate::auth::now;
use crate::state::AppState;

// ---- login ----

#[derive(Template)]
#[template(path = "login.html")]
pub struct LoginPage {
    pub message: Option<String>,
    /// The server accepts plain HTTP beyond loopback (`[server] plain_http`): say so.
    pub plain_http: bool,
}

impl LoginPage {
    fn new(s: &AppState, message: Option<String>) -> LoginPage {
        LoginPage {
            message,
            plain_http: s.ws.config.server.plain_http,
        }
    }

    /// The dashboard's stylesheet, which the login page uses too.
    pub fn css(&self) -> &'static str {
        super::assets::CSS_URL.as_str()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct LoginQuery {
    pub code: Option<String>,
}

fn logged_in(s: &AppState, secret: &str) -> Response {
    let max_age = s.ws.config.server.session_max_secs;
    (
        [(header::SET_COOKIE, session::cookie(Some(secret), max_age))],
        Redirect::to("/"),
    )
        .into_response()
}

/// The client address a login counts against (the unspecified address when the server was
/// reached some other way than its own listener, as in-process tests of the router may).
fn client_addr(ext: &axum::http::Extensions) -> std::net::IpAddr {
    ext.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
}

/// Refuse a login from an address that failed too often in the last minute: 429 with
/// `Retry-After`.
fn too_many_failures(s: &AppState, addr: std::net::IpAddr) -> Option<Response> {
    let max = s.ws.config.server.login_failures_per_minute;
    let wait =
        s.ui.login_failures
            .check(addr, now().unix_millis(), max)
            .err()?;
    let page = LoginPage::new(
        s,
        Some(format!(
            "Too many failed logins from this address; try again in {wait} s."
        )),
    );
    Some(
        (
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, wait.to_string())],
            html(&page),
        )
            .into_response(),
    )
}

/// `GET /login[?code=…]`: exchange a one-time code for a session, or show how to get one.
pub async fn login(
    State(s): State<AppState>,
    ext: axum::http::Extensions,
    Query(q): Query<LoginQuery>,
) -> Result<Response, UiError> {
    let Some(code) = q.code.filter(|c| !c.trim().is_empty()) else {
        return Ok(html(&LoginPage::new(&s, None)));
    };
    let addr = client_addr(&ext);
    if let Some(refused) = too_many_failures(&s, addr) {
        return Ok(refused);
    }
    let Some(principal) = s.ui.logins.redeem(&code, now().unix_millis()) else {
        s.ui.login_failures.failed(addr, now().unix_millis());
        let page = LoginPage::new(
            &s,
            Some(
                "That login link is unknown, used or expired (links work once, for 10 minutes). Run `yoi dashboard` for a new one."
                    .into(),
            ),
        );
        return Ok((axum::http::StatusCode::UNAUTHORIZED, html(&page)).into_response());
    };
    let secret = session::start(&s, &principal)
        .await
        .map_err(UiError::from_store)?;
    Ok(logged_in(&s, &secret))
}

/// `POST /login`: a pasted human token starts a session for its principal. Like every form,
/// it is refused when the browser marks it cross-site or its `Origin` is not this server
/// (login CSRF: another site logging the browser in as someone else).
pub async fn login_with_token(
    State(s): State<AppState>,
    ext: axum::http::Extensions,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, UiError> {
    session::same_origin(&headers)?;
    let addr = client_addr(&ext);
    if let Some(refused) = too_many_failures(&s, addr) {
        return Ok(refused);
    }
    let form = Form::parse(&body);
    let token = form.get("token").unwrap_or("");
    let found = s
        .db()
        .token_by_hash(&hash_secret(token))
        .await
        .map_err(UiError::from_store)?
        .filter(|t| {
            t.scope == Scope::Human && !session::is_session(t) && !t.expired(now().unix_millis())
        });
    let Some(t) = found else {
        s.ui.login_failures.failed(addr, now().unix_millis());
        let page = LoginPage::new(&s, Some("That is not a live human token.".into()));
        return Ok((axum::http::StatusCode::UNAUTHORIZED, html(&page)).into_response());
    };
    let secret = session::start(&s, &t.principal)
        .await
        .map_err(UiError::from_store)?;
    Ok(logged_in(&s, &secret))
}

// ---- queue ----

/// Queued (and ready) tickets the queue page lists, in routing order.
pub const QUEUE_PAGE: usize = 100;

#[derive(Template)]
#[template(path = "queue.html")]
pub struct QueuePage {
    pub chrome: Chrome,
    pub q: QueueView,
    pub op: String,
    /// Tickets yoi cannot read, shown as broken cards (their state is unknown).
    pub broken: Vec<yoi_store::tickets::BrokenTicket>,
}

impl QueuePage {
    pub fn short(&self, id: &TicketId) -> String {
        short(id.as_str())
    }
}

pub async fn queue(State(s): State<AppState>, v: Viewer) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let max = s.ws.config.router.max_inprogress;
    let q = s
        .read_indexed(move |ws, index| {
            yoi_engine::routing::view::queue_view_indexed(ws, Some(index), max, QUEUE_PAGE)
        })
        .await?;
    let chrome = Chrome::new(&s, &v, mark, "Queue", "queue").await?;
    let broken = crate::routes::tickets::broken_tickets(&s).await?;
    Ok(html(&QueuePage {
        chrome,
        q,
        op: ulid::Ulid::new().to_string(),
        broken,
    }))
}

// ---- tickets ----

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct TableQuery {
    #[serde(flatten)]
    pub filters: Filters,
    /// `id` (oldest first, default) or `-id` (newest first).
    pub sort: String,
}

#[derive(Template)]
#[template(path = "tickets.html")]
pub struct TicketsPage {
    pub chrome: Chrome,
    pub filters: Filters,
    pub rows: Vec<Card>,
    pub newest_first: bool,
    pub next: Option<String>,
    pub api: String,
    pub op: String,
    pub back: String,
    /// Tickets yoi cannot read, as broken rows on the first page whatever the filters (as the
    /// API's list gives them).
    pub broken: Vec<yoi_store::tickets::BrokenTicket>,
}

pub async fn tickets(
    State(s): State<AppState>,
    v: Viewer,
    Query(q): Query<TableQuery>,
) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let p = q.filters.parse()?;
    let newest_first = q.sort == "-id";
    let after = (!q.filters.after.is_empty())
        .then(|| TicketId::parse(&q.filters.after))
        .transpose()
        .map_err(|e| UiError::BadRequest(e.to_string()))?;
    let filter = ListFilter {
        states: p.states.clone().or(Some(TicketState::ALL.to_vec())),
        ready: false,
        blocked: p.blocked,
    };
    let page = s
        .db()
        .list_ordered(&filter, &p.words, after.as_ref(), 100, newest_first)
        .await
        .map_err(UiError::from_store)?;
    let mut rows = cards(&s, &page.tickets).await?;
    if p.attention {
        rows.retain(|c| c.attention);
    }
    let base = q.filters.query();
    let sort = if newest_first { "&sort=-id" } else { "" };
    let next = page
        .next
        .map(|n| format!("/tickets?{base}{sort}&after={n}"));
    let mut api = vec![format!(
        "state={}",
        p.states
            .as_ref()
            .map(|v| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(","))
            .unwrap_or_else(|| "all".into())
    )];
    if p.blocked {
        api.push("blocked=true".into());
    }
    if !p.words.is_empty() {
        api.push(super::board::urlencode(&[("search", &p.words.join(" "))]));
    }
    if let Some(a) = &after {
        api.push(format!("after={a}"));
    }
    let broken = match after {
        None => crate::routes::tickets::broken_tickets(&s).await?,
        Some(_) => Vec::new(),
    };
    let chrome = Chrome::new(&s, &v, mark, "Tickets", "tickets").await?;
    Ok(html(&TicketsPage {
        chrome,
        back: format!("/tickets?{base}{sort}"),
        filters: q.filters,
        rows,
        newest_first,
        next,
        api: format!("/api/v1/tickets?{}&limit=100", api.join("&")),
        op: ulid::Ulid::new().to_string(),
        broken,
    }))
}

// ---- pods ----

pub struct PodLine {
    pub pod: PodRow,
    pub heartbeat: String,
}

#[derive(Template)]
#[template(path = "pods.html")]
pub struct PodsPage {
    pub chrome: Chrome,
    pub pods: Vec<PodLine>,
    pub open: Vec<yoi_db::Assignment>,
}

pub async fn pods(State(s): State<AppState>, v: Viewer) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let now_ms = now().unix_millis();
    let pods = s
        .db()
        .pods(now_ms, 3_600_000)
        .await
        .map_err(UiError::from_store)?
        .into_iter()
        .map(|pod| PodLine {
            heartbeat: format!("{}s", ((now_ms - pod.heartbeat_ms) / 1000).max(0)),
            pod,
        })
        .collect();
    let open = s
        .db()
        .open_assignments()
        .await
        .map_err(UiError::from_store)?;
    let chrome = Chrome::new(&s, &v, mark, "Pods", "pods").await?;
    Ok(html(&PodsPage { chrome, pods, open }))
}

// ---- skills ----

pub struct ProposalView {
    pub p: yoi_skills::Proposal,
    pub diff: Vec<DiffLine>,
    pub is_change: bool,
}

#[derive(Template)]
#[template(path = "skills.html")]
pub struct SkillsPage {
    pub chrome: Chrome,
    pub skills: Vec<yoi_skills::SkillEntry>,
    pub proposals: Vec<ProposalView>,
    pub activations: Vec<yoi_db::ActivationRow>,
}

impl SkillsPage {
    pub fn at(&self, ms: &i64) -> String {
        age(
            &yoi_core::Timestamp::from_unix_millis(*ms).to_string(),
            now().unix_millis(),
        )
    }
}

pub async fn skills(State(s): State<AppState>, v: Viewer) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let (skills, proposals) = s
        .blocking("skills page", |ws| {
            let skills = yoi_engine::skills::load_catalog(ws).skills().to_vec();
            let proposals: Vec<ProposalView> = yoi_engine::skills::proposals(ws)
                .unwrap_or_default()
                .into_iter()
                .rev()
                .filter_map(|p| {
                    let (p, proposed, current) =
                        yoi_engine::skills::proposal_skill_md(ws, &p.id).ok()?;
                    Some(ProposalView {
                        is_change: current.is_some(),
                        diff: diff_lines(current.as_deref().unwrap_or(""), &proposed),
                        p,
                    })
                })
                .collect();
            (skills, proposals)
        })
        .await?;
    let activations = s
        .db()
        .activations(None, 50)
        .await
        .map_err(UiError::from_store)?;
    let chrome = Chrome::new(&s, &v, mark, "Skills", "skills").await?;
    Ok(html(&SkillsPage {
        chrome,
        skills,
        proposals,
        activations,
    }))
}

#[derive(Template)]
#[template(path = "skill.html")]
pub struct SkillPage {
    pub chrome: Chrome,
    pub skill: yoi_skills::SkillEntry,
    pub source: String,
    pub activations: Vec<yoi_db::ActivationRow>,
}

pub async fn skill(
    State(s): State<AppState>,
    v: Viewer,
    Path(name): Path<String>,
) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let n = name.clone();
    let skill = s
        .blocking("skill page", move |ws| {
            yoi_engine::skills::load_catalog(ws).get(&n).cloned()
        })
        .await?
        .ok_or_else(|| UiError::NotFound(format!("no skill `{name}` in the catalog")))?;
    let activations = s
        .db()
        .activations(Some(&skill.name), 50)
        .await
        .map_err(UiError::from_store)?;
    let chrome = Chrome::new(&s, &v, mark, format!("Skill {}", skill.name), "skills").await?;
    Ok(html(&SkillPage {
        chrome,
        source: yoi_engine::skills::source_name(&skill.source),
        skill,
        activations,
    }))
}

/// One line of a line diff: ` ` kept, `-` removed, `+` added.
pub struct DiffLine {
    pub sign: char,
    pub text: String,
}

/// A line diff of `old` to `new` (longest common subsequence; inputs past 1,000 lines are
/// shown as a whole replacement, so the table stays under 4 MB).
pub fn diff_lines(old: &str, new: &str) -> Vec<DiffLine> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let line = |sign, text: &str| DiffLine {
        sign,
        text: text.to_string(),
    };
    if a.len() > 1000 || b.len() > 1000 {
        return a
            .iter()
            .map(|l| line('-', l))
            .chain(b.iter().map(|l| line('+', l)))
            .collect();
    }
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            out.push(line(' ', a[i]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(line('+', b[j]));
            j += 1;
        } else {
            out.push(line('-', a[i]));
            i += 1;
        }
    }
    out
}

// ---- doctor ----

/// The most findings of one check the page lists; the rest are counted (`yoi ticket doctor
/// --json` lists them all). A tree of 100,000 tickets can have 50,000 findings: listed whole,
/// 38 MB of HTML and 230 MiB more in the server while it was made (issue 45).
const DOCTOR_PER_CHECK: usize = 100;

#[derive(Template)]
#[template(path = "doctor.html")]
pub struct DoctorPage {
    pub chrome: Chrome,
    /// The report with at most [`DOCTOR_PER_CHECK`] findings of each check (its counts are
    /// the whole report's).
    pub report: yoi_engine::doctor::Report,
    /// Each check with findings left out: whether it is an error, its id, how many.
    pub more: Vec<(bool, &'static str, usize)>,
}

pub async fn doctor(State(s): State<AppState>, v: Viewer) -> Result<Response, UiError> {
    let mark = LiveMark::take(&s).await?;
    let (report, more) = s
        .read_indexed(|ws, index| {
            let mut report = yoi_engine::doctor::run_full(ws, Some(index), false)?;
            let more = keep_per_check(&mut report);
            // The whole pass's memory (hundreds of MiB at 100,000 tickets) is free now: give
            // it back before answering, not at the next periodic look.
            crate::memory::give_back();
            Ok((report, more))
        })
        .await?;
    let chrome = Chrome::new(&s, &v, mark, "Doctor", "doctor").await?;
    Ok(html(&DoctorPage {
        chrome,
        report,
        more,
    }))
}

/// Keep at most [`DOCTOR_PER_CHECK`] findings of each check in `report`; each check with
/// findings left out, for [`DoctorPage::more`].
fn keep_per_check(report: &mut yoi_engine::doctor::Report) -> Vec<(bool, &'static str, usize)> {
    let mut listed: std::collections::BTreeMap<&'static str, (bool, usize)> = Default::default();
    report.findings.retain(|f| {
        let n = listed.entry(f.check).or_insert((f.is_error(), 0));
        n.1 += 1;
        n.1 <= DOCTOR_PER_CHECK
    });
    report.findings.shrink_to_fit();
    listed
        .into_iter()
        .filter(|(_, (_, n))| *n > DOCTOR_PER_CHECK)
        .map(|(check, (error, n))| (error, check, n - DOCTOR_PER_CHECK))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::diff_lines;

    #[test]
    fn a_line_diff_keeps_removes_and_adds() {
        let d = diff_lines("a\nb\nc\n", "a\nc\nd\n");
        let s: Vec<String> = d.iter().map(|l| format!("{}{}", l.sign, l.text)).collect();
        assert_eq!(s, [" a", "-b", " c", "+d"]);
    }
}
