//! The inbox: one list of everything that waits on a person (docs/inbox.md).
//!
//! It is a query, not a store. Entries are derived on every read from the thread events in the
//! index (which a reindex rebuilds from the files) and from the skill proposals on disk, so
//! deleting the database loses no entry a thread records, and an entry can never outlive its
//! condition. The rules, in thread order per ticket:
//!
//! - an `attention` event opens an entry of its reason ([`InboxReason::of_attention`]); a
//!   second one of the same reason while the first is open is the same episode (one entry,
//!   its detail the latest body, its `since` the first);
//! - a `question` (an agent asked a person) opens an `agent_question` entry, one per question
//!   event; the `answer` to it closes it;
//! - a `retry` closes what a retry answers: an open circuit, used-up fix rounds, a blocked
//!   agent, an agent that could not run, a question left unanswered (the step is handed out
//!   again without an answer), an unknown reason;
//! - a `merge` closes a deferred merge (the checkout was cleaned and the merge ran);
//! - a `budget` event (a person added to the ticket's budget) closes `budget_near` and
//!   `budget_reached`;
//! - any state change closes every entry of the ticket — the ticket moved on — and one the
//!   service made into `planning` opens a `routing_failed` entry that the next state change
//!   closes; a state change item.md does not show (the last one, when its `to` is not the
//!   ticket's state: an operation that died between its two writes) closes and opens nothing;
//! - whatever the events say, attention entries are open only while the ticket is queued or in
//!   progress, and `routing_failed` only while it is in planning (a hand edit of item.md wins);
//! - every pending skill proposal is an entry without a ticket;
//! - every ticket whose files cannot be read (the index's broken tickets) is a `doctor_error`
//!   entry until they read again.
//!
//! The episode key (`<ticket>:<reason>:<opening event id>`, `skill_proposal:<id>`) names one
//! situation; notifications are keyed by it, so one situation is told once.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use yoi_core::inbox::InboxReason;
use yoi_core::{Principal, TicketId};
use yoi_db::inbox::{InboxEvent, InboxTicket};
use yoi_db::DbIndex;
use yoi_skills::proposal::ProposalStatus;
use yoi_store::{StoreError, Workspace};

/// What a person does about an entry in the dashboard: a page and the control on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InboxAction {
    /// The control to use, e.g. `Retry`.
    pub label: String,
    /// The dashboard page that holds it (a path on the server).
    pub href: String,
}

/// One situation waiting on a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InboxEntry {
    /// The episode key: one situation is one key, however often it is raised.
    pub key: String,
    pub reason: InboxReason,
    /// The ticket it is about (none for a skill proposal).
    pub ticket: Option<String>,
    /// The ticket's title, or what is proposed.
    pub title: String,
    /// When the situation began (RFC 3339).
    pub since: String,
    /// What happened, as the engine wrote it (Markdown).
    pub detail: String,
    /// The command that resolves it.
    pub command: String,
    /// Where to resolve it in the dashboard.
    pub action: InboxAction,
    /// The thread event that opened it.
    pub event: Option<String>,
}

/// Every open entry, the longest-waiting first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Inbox {
    pub count: usize,
    pub entries: Vec<InboxEntry>,
}

/// The whole inbox: ticket entries from the index and pending skill proposals.
pub fn inbox(ws: &Workspace, index: &DbIndex) -> Result<Inbox, StoreError> {
    let service = Principal::orchestrator().author();
    let mut entries: Vec<InboxEntry> = index
        .inbox_tickets(&service, None)?
        .iter()
        .flat_map(ticket_entries)
        .collect();
    entries.extend(proposal_entries(ws));
    entries.extend(broken_entries(ws, index)?);
    entries.extend(crate::workflows::offers::inbox_entries(ws));
    entries.sort_by(|a, b| (&a.since, &a.key).cmp(&(&b.since, &b.key)));
    Ok(Inbox {
        count: entries.len(),
        entries,
    })
}

/// A stamp of what the inbox reads outside the index and the ticket folders: the skill
/// proposals and workflow offers, whose folders no watch covers. It names each proposal's and
/// offer's record file with its inode, size and modification time (they are replaced by a
/// rename, so every change moves one), hashed. A server keeps an inbox it computed while the
/// index and the ticket files are unchanged (its read-your-writes layer) *and* this stamp is
/// the same; reading it costs a directory listing and a stat per proposal and offer.
pub fn unwatched_stamp(ws: &Workspace) -> String {
    use std::os::unix::fs::MetadataExt;
    let mut seen = String::new();
    for (dir, record) in [
        (crate::skills::PROPOSALS_DIR, "proposal.json"),
        (crate::workflows::offers::OFFERS_DIR, "offer.json"),
    ] {
        let Ok(entries) = std::fs::read_dir(ws.root().join(dir)) else {
            seen.push_str(dir);
            seen.push_str(" absent\n");
            continue;
        };
        let mut lines: Vec<String> = entries
            .flatten()
            .map(|e| {
                let m = std::fs::metadata(e.path().join(record));
                let name = e.file_name().to_string_lossy().into_owned();
                match m {
                    Ok(m) => format!(
                        "{dir}/{name} {} {} {}.{}",
                        m.ino(),
                        m.len(),
                        m.mtime(),
                        m.mtime_nsec()
                    ),
                    Err(_) => format!("{dir}/{name} -"),
                }
            })
            .collect();
        lines.sort();
        for l in lines {
            seen.push_str(&l);
            seen.push('\n');
        }
    }
    yoi_core::sha256_hex(seen.as_bytes())[..32].to_string()
}

/// The open entries of one ticket (for the "needs you" banner of its page).
pub fn of_ticket(index: &DbIndex, ticket: &TicketId) -> Result<Vec<InboxEntry>, StoreError> {
    let service = Principal::orchestrator().author();
    Ok(index
        .inbox_tickets(&service, Some(ticket.as_str()))?
        .iter()
        .flat_map(ticket_entries)
        .collect())
}

/// Where the ticket's events record a state change its item.md does not show: the last
/// `state_changed`, when its `to` is not the ticket's state (an operation interrupted between
/// its thread event and its item.md; the store's `ops::unapplied_state_change` is the same rule
/// over a whole thread).
fn unapplied_state_change(t: &InboxTicket) -> Option<usize> {
    let (i, e) = t
        .events
        .iter()
        .enumerate()
        .rfind(|(_, e)| e.kind == "state_changed")?;
    (e.attr("to") != Some(t.state.as_str())).then_some(i)
}

/// The rule: the entries open at the end of one ticket's events (see the module doc).
pub fn ticket_entries(t: &InboxTicket) -> Vec<InboxEntry> {
    let service = Principal::orchestrator().author();
    let mut open: Vec<InboxEntry> = Vec::new();
    // The head of the ticket's pull request as the thread last recorded it.
    let mut pr_head: Option<&str> = None;
    let unapplied = unapplied_state_change(t);
    for (i, e) in t.events.iter().enumerate() {
        match e.kind.as_str() {
            "attention" => {
                let reason = InboxReason::of_attention(e.attr("reason").unwrap_or_default());
                match open.iter_mut().find(|x| x.reason == reason) {
                    Some(same) => same.detail = e.body.trim().to_string(),
                    None => open.push(entry(t, reason, e, e.body.trim())),
                }
            }
            // A question is one episode per `question` event: the next attempt may ask again,
            // and that is a new situation to tell people about.
            "question" => {
                open.retain(|x| x.reason != InboxReason::AgentQuestion);
                open.push(entry(t, InboxReason::AgentQuestion, e, e.body.trim()));
            }
            "answer" => open.retain(|x| x.reason != InboxReason::AgentQuestion),
            "retry" => open.retain(|x| {
                !matches!(
                    x.reason,
                    InboxReason::CircuitOpen
                        | InboxReason::RoundsExhausted
                        | InboxReason::AgentBlocked
                        | InboxReason::AgentQuestion
                        | InboxReason::AgentUnusable
                        | InboxReason::ChecksFailing
                        | InboxReason::Other
                )
            }),
            "merge" => open.retain(|x| x.reason != InboxReason::MergeDeferred),
            "budget" => open.retain(|x| {
                !matches!(
                    x.reason,
                    InboxReason::BudgetNear | InboxReason::BudgetReached
                )
            }),
            // A pull request's new head asks for a new review (raised again if still needed);
            // its merge or close ends the wait for one.
            "forge_pr" => {
                use yoi_core::forge::action;
                match e.attr("action") {
                    Some(action::PUSHED | action::PERSON_PUSHED) => {
                        pr_head = match e.attr("action") {
                            Some(action::PERSON_PUSHED) => e.attr("remote"),
                            _ => e.attr("head"),
                        };
                        open.retain(|x| x.reason != InboxReason::PrReview)
                    }
                    // A person answered the wait with a round instead of an approval: changes
                    // requested on the head, or a `/yoi fix`. The coder works next, not them.
                    Some(action::REVIEW)
                        if e.attr("state") == Some("ChangesRequested")
                            && (pr_head.is_none() || e.attr("commit") == pr_head) =>
                    {
                        open.retain(|x| x.reason != InboxReason::PrReview)
                    }
                    Some(action::FIX_REQUESTED) => {
                        open.retain(|x| x.reason != InboxReason::PrReview)
                    }
                    Some(action::MERGED | action::CLOSED) => open.retain(|x| {
                        !matches!(x.reason, InboxReason::PrReview | InboxReason::ChecksFailing)
                    }),
                    _ => {}
                }
            }
            // A state change item.md does not show ended nothing: the ticket never moved.
            "state_changed" if Some(i) == unapplied => {}
            "state_changed" => {
                open.clear();
                if e.author.as_deref() == Some(service.as_str()) && e.attr("to") == Some("planning")
                {
                    let why = e.attr("reason").unwrap_or("no reason was recorded");
                    let detail = format!("The service returned this ticket to planning: {why}.");
                    open.push(entry(t, InboxReason::RoutingFailed, e, &detail));
                }
            }
            _ => {}
        }
    }
    let active = matches!(t.state.as_str(), "queued" | "inprogress");
    open.retain(|x| {
        if x.reason == InboxReason::RoutingFailed {
            t.state == "planning"
        } else {
            active
        }
    });
    open
}

fn entry(t: &InboxTicket, reason: InboxReason, e: &InboxEvent, detail: &str) -> InboxEntry {
    let id = &t.id;
    let (command, label) = match reason {
        InboxReason::MergeDeferred => (
            "git status   # in the checkout named above: commit or stash those files; the merge then runs by itself".to_string(),
            "Open the ticket",
        ),
        InboxReason::RoutingFailed => (
            format!("yoi ticket show {id}   # complete the brief, then: yoi ticket mark-ready {id}"),
            "Edit the brief",
        ),
        InboxReason::AgentUnusable => (
            format!("yoi agent list   # install or fix the agent, then: yoi ticket retry {id}"),
            "Retry",
        ),
        InboxReason::AgentQuestion => (
            format!("yoi ticket answer {id} --message \"…\""),
            "Answer",
        ),
        InboxReason::PrReview => (
            format!("yoi forge status {id}   # review (or merge) the pull request it links, on the forge"),
            "Open the ticket",
        ),
        InboxReason::BudgetNear | InboxReason::BudgetReached => (
            format!("yoi ticket budget {id} --add USD   # or raise [budget] in .yoi/workspace.toml"),
            "Add to its budget",
        ),
        _ => (format!("yoi ticket retry {id}"), "Retry"),
    };
    InboxEntry {
        key: format!("{id}:{}:{}", reason.as_str(), e.id),
        reason,
        ticket: Some(id.clone()),
        title: t.title.clone(),
        since: e.at.clone().unwrap_or_default(),
        detail: detail.to_string(),
        command,
        action: InboxAction {
            label: label.to_string(),
            href: format!("/tickets/{id}"),
        },
        event: Some(e.id.clone()),
    }
}

/// One `doctor_error` entry per ticket whose files cannot be read (the index's broken tickets,
/// the doctor's `item.parse`, `ticket.missing_item`, `file.unreadable` … errors): its episode is
/// the ticket and the check, so another fault of the same ticket is a new entry, and it closes
/// when the files read again. `since` is when the broken file last changed.
fn broken_entries(ws: &Workspace, index: &DbIndex) -> Result<Vec<InboxEntry>, StoreError> {
    Ok(index
        .broken(ws)?
        .into_iter()
        .map(|b| {
            let at = b.line.map_or(b.path.clone(), |l| format!("{}:{l}", b.path));
            let since = std::fs::metadata(ws.root().join(&b.path))
                .and_then(|m| m.modified())
                .map(|t| yoi_core::Timestamp::from_unix_millis(yoi_core::time::unix_ms(t)))
                .map(|t| t.to_string())
                .unwrap_or_default();
            let id = b.id.to_string();
            InboxEntry {
                key: format!("{id}:doctor_error:{}", b.check),
                reason: InboxReason::DoctorError,
                ticket: Some(id.clone()),
                title: format!("Ticket {id} cannot be read"),
                since,
                detail: format!("`{at}`: {} (doctor check `{}`)", b.reason, b.check),
                command: format!(
                    "yoi ticket doctor   # then repair {at} by hand, or: yoi ticket doctor --fix"
                ),
                action: InboxAction {
                    label: "Open the doctor".into(),
                    href: "/doctor".into(),
                },
                event: None,
            }
        })
        .collect())
}

/// One entry per pending skill proposal. A proposals folder that cannot be read gives none
/// (skills' own pages report it).
fn proposal_entries(ws: &Workspace) -> Vec<InboxEntry> {
    let Ok(proposals) = crate::skills::proposals(ws) else {
        return Vec::new();
    };
    proposals
        .into_iter()
        .filter(|p| p.status == ProposalStatus::Pending)
        .map(|p| {
            let errors = p.error_count();
            InboxEntry {
                key: format!("skill_proposal:{}", p.id),
                reason: InboxReason::SkillProposal,
                ticket: None,
                title: format!("Skill `{}` proposed by {}", p.name, p.proposer),
                since: p.created_at.clone(),
                detail: if errors == 0 {
                    format!("A proposed skill `{}` waits for approval.", p.name)
                } else {
                    format!(
                        "A proposed skill `{}` waits for a decision; its lint found {errors} error(s), so it can only be rejected as it is.",
                        p.name
                    )
                },
                command: format!(
                    "yoi skill approve {}   # or: yoi skill reject {} --reason …",
                    p.id, p.id
                ),
                action: InboxAction {
                    label: "Approve or reject".into(),
                    href: format!("/skills#p-{}", p.id),
                },
                event: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str, kind: &str, author: &str, attrs: &[(&str, &str)]) -> InboxEvent {
        InboxEvent {
            id: id.into(),
            kind: kind.into(),
            author: Some(author.into()),
            at: Some(format!("2026-03-01T10:00:0{}Z", id.len() % 10)),
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
                .collect(),
            body: format!("body of {id}"),
        }
    }

    fn ticket(state: &str, events: Vec<InboxEvent>) -> InboxTicket {
        InboxTicket {
            id: "01JD0000000000000000000000".into(),
            title: "T".into(),
            state: state.into(),
            events,
        }
    }

    fn reasons(t: &InboxTicket) -> Vec<InboxReason> {
        ticket_entries(t).iter().map(|e| e.reason).collect()
    }

    #[test]
    fn a_merge_closes_a_deferred_merge_and_only_that() {
        let s = Principal::orchestrator().author();
        let t = ticket(
            "inprogress",
            vec![
                event("a", "attention", &s, &[("reason", "merge_deferred")]),
                event("b", "attention", &s, &[("reason", "budget_exceeded")]),
                event("c", "merge", &s, &[]),
            ],
        );
        assert_eq!(reasons(&t), vec![InboxReason::Other]);
    }

    #[test]
    fn a_budget_grant_closes_the_budget_entries_and_only_those() {
        let s = Principal::orchestrator().author();
        let t = ticket(
            "inprogress",
            vec![
                event("a", "attention", &s, &[("reason", "budget_near")]),
                event("b", "attention", &s, &[("reason", "budget_reached")]),
                event("c", "attention", &s, &[("reason", "agent_blocked")]),
            ],
        );
        assert_eq!(
            reasons(&t),
            vec![
                InboxReason::BudgetNear,
                InboxReason::BudgetReached,
                InboxReason::AgentBlocked
            ]
        );
        let mut granted = t.clone();
        granted
            .events
            .push(event("d", "budget", "alice", &[("add_usd", "0.5")]));
        assert_eq!(reasons(&granted), vec![InboxReason::AgentBlocked]);
        let entry = &ticket_entries(&t)[1];
        assert!(entry.command.contains("yoi ticket budget"), "{entry:?}");
        assert_eq!(entry.action.label, "Add to its budget");
    }

    #[test]
    fn a_pr_review_entry_closes_when_a_person_asks_for_a_round_on_its_head() {
        let s = Principal::orchestrator().author();
        let waits = |extra: Vec<InboxEvent>| {
            let mut events = vec![
                event("p", "forge_pr", &s, &[("action", "pushed"), ("head", "h2")]),
                event("w", "attention", &s, &[("reason", "pr_review")]),
            ];
            events.extend(extra);
            ticket("inprogress", events)
        };
        let review = |state: &str, commit: &str| {
            event(
                "r",
                "forge_pr",
                &s,
                &[("action", "review"), ("state", state), ("commit", commit)],
            )
        };
        assert_eq!(reasons(&waits(vec![])), vec![InboxReason::PrReview]);
        // Changes requested on the head: a round follows, nobody's review is awaited.
        assert!(reasons(&waits(vec![review("ChangesRequested", "h2")])).is_empty());
        // On an older head, or an approval that does not open the gate: it still waits.
        assert_eq!(
            reasons(&waits(vec![review("ChangesRequested", "h1")])),
            vec![InboxReason::PrReview]
        );
        assert_eq!(
            reasons(&waits(vec![review("Approved", "h1")])),
            vec![InboxReason::PrReview]
        );
        assert_eq!(
            reasons(&waits(vec![review("Commented", "h2")])),
            vec![InboxReason::PrReview]
        );
        let fix = event("f", "forge_pr", &s, &[("action", "fix_requested")]);
        assert!(reasons(&waits(vec![fix])).is_empty());
    }

    #[test]
    fn a_hand_edited_state_wins_over_the_events() {
        let s = Principal::orchestrator().author();
        let events = vec![event("a", "attention", &s, &[("reason", "circuit_open")])];
        assert_eq!(
            reasons(&ticket("queued", events.clone())),
            vec![InboxReason::CircuitOpen]
        );
        assert!(reasons(&ticket("done", events.clone())).is_empty());
        assert!(reasons(&ticket("planning", events)).is_empty());
        let bounced = vec![event(
            "a",
            "state_changed",
            &s,
            &[("to", "planning"), ("reason", "why")],
        )];
        assert_eq!(
            reasons(&ticket("planning", bounced.clone())),
            vec![InboxReason::RoutingFailed]
        );
        assert!(reasons(&ticket("ready", bounced)).is_empty());
    }

    #[test]
    fn one_episode_keeps_its_first_key_and_time_and_shows_the_latest_detail() {
        let s = Principal::orchestrator().author();
        let t = ticket(
            "queued",
            vec![
                event("a", "attention", &s, &[("reason", "circuit_open")]),
                event("bbbb", "attention", &s, &[("reason", "step_circuit_open")]),
            ],
        );
        let got = ticket_entries(&t);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].key, format!("{}:circuit_open:a", t.id));
        assert_eq!(got[0].since, "2026-03-01T10:00:01Z");
        assert_eq!(got[0].detail, "body of bbbb");
    }

    #[test]
    fn a_question_is_open_until_its_answer_or_a_retry_and_each_question_is_its_own_episode() {
        let s = Principal::orchestrator().author();
        let asked = |extra: Vec<InboxEvent>| {
            let mut events = vec![event("q1", "question", &s, &[("step", "implement")])];
            events.extend(extra);
            ticket("inprogress", events)
        };
        let open = ticket_entries(&asked(vec![]));
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].reason, InboxReason::AgentQuestion);
        assert_eq!(open[0].detail, "body of q1");
        assert!(
            open[0].command.starts_with("yoi ticket answer "),
            "{open:?}"
        );
        assert_eq!(open[0].action.label, "Answer");
        let answer = event("a1", "answer", "human:alice", &[("question", "q1")]);
        assert!(reasons(&asked(vec![answer.clone()])).is_empty());
        let retry = event("r1", "retry", "human:alice", &[]);
        assert!(reasons(&asked(vec![retry])).is_empty());
        // Asked again after the answer: a new entry, with the new question's key.
        let again = ticket_entries(&asked(vec![
            answer,
            event("q2", "question", &s, &[("step", "implement")]),
        ]));
        assert_eq!(again.len(), 1);
        assert_eq!(
            again[0].key,
            format!("{}:agent_question:q2", again[0].ticket.as_deref().unwrap())
        );
        // A ticket that left progress asks nothing any more.
        let mut closed = asked(vec![]);
        closed.state = "done".into();
        assert!(reasons(&closed).is_empty());
    }

    #[test]
    fn a_state_change_item_md_does_not_show_ends_no_question_and_no_attention() {
        let s = Principal::orchestrator().author();
        let away = |id: &str| {
            event(
                id,
                "state_changed",
                "human:alice",
                &[("from", "inprogress"), ("to", "planning")],
            )
        };
        // A return to planning that died between its thread event and item.md: the ticket is
        // still in progress, and its step still waits for the answer.
        let torn = ticket(
            "inprogress",
            vec![
                event("a", "attention", &s, &[("reason", "merge_deferred")]),
                event("q1", "question", &s, &[("step", "implement")]),
                away("s1"),
            ],
        );
        assert_eq!(
            reasons(&torn),
            vec![InboxReason::MergeDeferred, InboxReason::AgentQuestion]
        );
        // Only the last state change can be the interrupted one: one that did happen, followed
        // by the acceptance that brought the ticket back, ends the question.
        let back = ticket(
            "inprogress",
            vec![
                event("q1", "question", &s, &[("step", "implement")]),
                away("s1"),
                event(
                    "s2",
                    "state_changed",
                    &s,
                    &[("from", "queued"), ("to", "inprogress")],
                ),
            ],
        );
        assert!(reasons(&back).is_empty());
    }
}
