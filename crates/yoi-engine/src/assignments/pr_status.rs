//! What people see of a ticket's pull request (docs/forge.md, "People see it"): the status
//! `GET /api/v1/tickets/{id}/forge`, `yoi forge status` and the ticket page answer — the
//! number, link and head, the checks table, the reviews, the merge, why the gate is or is not
//! open — and the one-word badge the board card shows. Read from the ticket's `forge_pr`
//! events and the check results the database keeps for the head (migration 0012); it asks
//! nothing of the forge, so it answers while the forge is down.

use std::collections::BTreeMap;

use yoi_core::forge::gate::{Blocker, CheckResult, Gate};
use yoi_core::forge::{action, PrFacts};

pub use yoi_core::forge::Badge;
use yoi_db::DbIndex;
use yoi_store::{StoreError, Workspace};

use super::pr::pr_record;

/// One line a person reads for a reason the gate is closed.
pub fn blocker_text(b: &Blocker) -> String {
    match b {
        Blocker::CheckMissing { name } => {
            format!("the required check `{name}` has not reported for this head")
        }
        Blocker::CheckPending { name } => format!("the required check `{name}` is still running"),
        Blocker::CheckFailed { name, conclusion } => {
            format!(
                "the required check `{name}` concluded {}",
                conclusion.as_str()
            )
        }
        Blocker::NotVerified { verified } => match verified {
            Some(v) => format!("yoi's verification passed {v}, not this head"),
            None => "yoi's verification has not passed".into(),
        },
        Blocker::NotReviewed { reviewed } => match reviewed {
            Some(v) => format!("yoi's reviewer approved {v}, not this head"),
            None => "yoi's reviewer has not approved".into(),
        },
        Blocker::Approvals { need, have } => {
            format!("{have} of the {need} approving reviews needed are for this head")
        }
        Blocker::ChangesRequested { user, commit_id } => {
            format!("{user} requested changes (on {commit_id})")
        }
    }
}

/// A person's review as the thread recorded it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ReviewView {
    pub user: String,
    /// `Approved`, `ChangesRequested`, `Commented`, `Dismissed`.
    pub state: String,
    /// The commit the review was for.
    pub commit: String,
}

/// What a ticket's pull request looks like, from its thread (`GET /api/v1/tickets/{id}/forge`).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ForgeStatus {
    pub ticket: String,
    /// Whether the workspace has a `[forge]` section.
    pub configured: bool,
    /// `none` (no pull request yet), `open`, `merged` or `closed`.
    pub state: String,
    /// The board card's word for it.
    pub badge: Badge,
    pub number: Option<u64>,
    pub url: Option<String>,
    /// The head yoi last saw on the remote branch (its own push, or a person's).
    pub remote_head: Option<String>,
    pub merged_sha: Option<String>,
    pub merge_method: Option<String>,
    /// The checks table: the newest result of every check kept for the remote head (by polling
    /// or webhook), each with the SHA it is for.
    pub checks: Vec<CheckResult>,
    /// Each person's latest review.
    pub reviews: Vec<ReviewView>,
    /// The last answer of the gate recorded for the remote head, with every reason.
    pub gate: Option<Gate>,
    /// Every `forge_pr` event, oldest first.
    pub events: Vec<ForgeEventView>,
}

/// One `forge_pr` event.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ForgeEventView {
    pub action: String,
    pub at: Option<String>,
    pub attrs: BTreeMap<String, String>,
    pub body: String,
}

/// The forge status of the ticket `query` names.
pub fn status(ws: &Workspace, index: &DbIndex, query: &str) -> Result<ForgeStatus, StoreError> {
    let id = ws.resolve(query)?;
    let thread = ws.read_thread(&id)?;
    let rec = pr_record(ws, &id)?;
    let mut out = ForgeStatus {
        ticket: id.to_string(),
        configured: ws.config.forge.is_some(),
        state: if rec.number.is_some() { "open" } else { "none" }.into(),
        badge: Badge::None,
        number: rec.number,
        url: rec.url.clone(),
        remote_head: rec.remote_head.clone(),
        merged_sha: None,
        merge_method: None,
        checks: Vec::new(),
        reviews: Vec::new(),
        gate: None,
        events: Vec::new(),
    };
    let mut reviews: BTreeMap<String, ReviewView> = BTreeMap::new();
    let mut facts = PrFacts::default();
    for e in thread
        .events
        .iter()
        .filter(|e| e.kind.as_str() == yoi_core::forge::EVENT)
    {
        facts.observe(|k| e.get(k));
        let action = e.get("action").unwrap_or_default().to_string();
        match action.as_str() {
            // A new attempt's own pull request: the earlier one's end and reviews are not its.
            action::OPENED if e.get("number").and_then(|n| n.parse().ok()) == rec.number => {
                out.state = "open".into();
                out.merged_sha = None;
                out.merge_method = None;
                reviews.clear();
            }
            action::MERGED => {
                out.state = "merged".into();
                out.merged_sha = e.get("sha").map(str::to_string);
                out.merge_method = e.get("method").map(str::to_string);
            }
            action::CLOSED => out.state = "closed".into(),
            action::WAITING if e.get("head") == rec.remote_head.as_deref() => {
                out.gate = e
                    .body
                    .split("```json\n")
                    .nth(1)
                    .and_then(|j| j.split("\n```").next())
                    .and_then(|j| serde_json::from_str(j).ok());
            }
            action::REVIEW => {
                let user = e.get("user").unwrap_or_default().to_string();
                reviews.insert(
                    user.clone(),
                    ReviewView {
                        user,
                        state: e.get("state").unwrap_or_default().to_string(),
                        commit: e.get("commit").unwrap_or_default().to_string(),
                    },
                );
            }
            _ => {}
        }
        out.events.push(ForgeEventView {
            action,
            at: e.at().map(|t| t.to_string()),
            attrs: e
                .attrs
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "id" | "at" | "author" | "op"))
                .cloned()
                .collect(),
            body: e.body.clone(),
        });
    }
    out.reviews = reviews.into_values().collect();
    if let Some(head) = &rec.remote_head {
        out.checks = index.forge_checks_of(head)?;
    }
    out.badge = facts.badge(&out.checks);
    Ok(out)
}
