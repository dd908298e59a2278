//! The inbox read from the index, starting at the events that can open an entry (`yoi-db`'s
//! `inbox.rs`, migration 0019), gives exactly the entries of the rule (`yoi_engine::inbox`)
//! applied to every ticket's files, and of the walk it replaced (every queued, in-progress and
//! planning ticket, with its two probes, taken from the files) — on a generated workspace of
//! 2,000 tickets in every state, with the cases that decide an entry: open and resolved
//! attention, asked, answered and asked-again questions, a retry, a budget grant, tickets that
//! left the states where an entry is open (by an operation and by a hand edit of item.md), the
//! service's returns to planning and a person's, a ticket moved on from planning, a state
//! change item.md does not show, and a planning ticket the service moved but never into
//! planning. The whole inbox (count and entries) and each ticket's entries are compared. Runs on
//! SQLite and on PostgreSQL.

use std::collections::BTreeSet;

use yoi_core::inbox::InboxReason;
use yoi_core::item::Item;
use yoi_core::{Principal, State, TicketId, Timestamp};
use yoi_db::inbox::{InboxEvent, InboxTicket, INBOX_EVENT_KINDS};
use yoi_db::DbIndex;
use yoi_engine::inbox::{self, ticket_entries, InboxEntry};
use yoi_store::ops::{self, TransitionRequest};
use yoi_store::{Ctx, Workspace};
use yoi_testkit::pg;

const TICKETS: usize = 2_000;

/// A ticket as the inbox reads it, taken from its files instead of the index.
fn from_files(ws: &Workspace, id: &TicketId) -> InboxTicket {
    let item = ws.read_item(id).unwrap();
    let thread = ws.read_thread(id).unwrap();
    let events = thread
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| INBOX_EVENT_KINDS.contains(&e.kind.as_str()))
        .map(|(position, e)| InboxEvent {
            id: yoi_db::event_key(id, position, e),
            kind: e.kind.as_str().to_string(),
            author: e.author().map(str::to_string),
            at: e.get("at").map(str::to_string),
            attrs: e
                .attrs
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::json!(v)))
                .collect(),
            body: e.body.clone(),
        })
        .collect();
    InboxTicket {
        id: id.to_string(),
        title: item.title,
        state: item.state.as_str().to_string(),
        events,
    }
}

/// The condition the index's walk over the states applied (before migration 0019), on files.
fn walked(t: &InboxTicket, service: &str) -> bool {
    match t.state.as_str() {
        "queued" | "inprogress" => t
            .events
            .iter()
            .any(|e| e.kind == "attention" || e.kind == "question"),
        "planning" => t
            .events
            .iter()
            .any(|e| e.kind == "state_changed" && e.author.as_deref() == Some(service)),
        _ => false,
    }
}

/// Entries in the inbox's order: the longest-waiting first.
fn sorted(mut entries: Vec<InboxEntry>) -> Vec<InboxEntry> {
    entries.sort_by(|a, b| (&a.since, &a.key).cmp(&(&b.since, &b.key)));
    entries
}

/// Write item.md by hand (an editor, `git pull`), and read it into the index.
fn hand_edit_state(ws: &Workspace, index: &DbIndex, id: &TicketId, state: State) {
    let path = ws.ticket_dir(id).join("item.md");
    let mut item = Item::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    item.state = state;
    std::fs::write(&path, item.render()).unwrap();
    index.refresh(ws, std::slice::from_ref(id)).unwrap();
}

fn index_and_files_agree(url: Option<String>) {
    let rt = yoi_tests::runtime();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    yoi_testkit::git(root, &["init", "-q", "-b", "main"]);
    yoi_store::init(root, "main").unwrap();
    let made = yoi_tests::generate::generate(root, TICKETS, TICKETS * 2);
    println!(
        "seed {:#x}: {TICKETS} tickets, {made} relations",
        yoi_tests::generate::SEED
    );
    let mut ws = yoi_tests::open(root);
    ws.config.database.url = url;
    let (index, _) = DbIndex::attach(
        &mut ws,
        yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
    )
    .unwrap();

    let items = ws.read_all_items().unwrap();
    // Tickets that depend on none, so that queueing one is never refused for a blocker.
    let of = |s: State| -> Vec<TicketId> {
        items
            .iter()
            .filter(|(id, i)| i.state == s && ws.read_relations(id).unwrap().relations.is_empty())
            .map(|(id, _)| id.clone())
            .take(12)
            .collect()
    };
    let (q, p, r) = (of(State::Queued), of(State::Inprogress), of(State::Ready));
    assert!(q.len() == 12 && p.len() == 12 && r.len() == 12);
    let at = Timestamp::parse("2026-03-01T10:00:00Z").unwrap();
    let service = Ctx::new(Principal::orchestrator(), at);
    let alice = Ctx::new(Principal::human("alice"), at);
    let author = Principal::orchestrator().author();
    let why = |r: &str| TransitionRequest {
        reason: Some(r.into()),
        ..TransitionRequest::default()
    };
    let none = TransitionRequest::default();
    let attention = |id: &TicketId, reason: &str| {
        ops::attention(&ws, &service, id.as_str(), reason, "Stopped.").unwrap();
    };
    let ask = |id: &TicketId| {
        let questions = ["Which branch?".to_string()];
        ops::ask(&ws, &service, id.as_str(), &[], &questions).unwrap();
    };
    // Each case, and the reasons it must leave open (checked against the rule below, so a
    // case that stopped exercising what it names fails here).
    let mut want: BTreeSet<(String, InboxReason)> = BTreeSet::new();
    let mut open = |id: &TicketId, r: InboxReason| want.insert((id.to_string(), r));

    // Queued: open, retried, budget granted, left by a person, returned by the service, edited
    // by hand out of the states.
    attention(&q[0], "circuit_open");
    open(&q[0], InboxReason::CircuitOpen);
    attention(&q[1], "circuit_open");
    ops::retry(&ws, &alice, q[1].as_str(), None).unwrap();
    attention(&q[2], "budget_near");
    ops::add_budget(&ws, &alice, q[2].as_str(), Some(1.0), None, None).unwrap();
    attention(&q[3], "circuit_open");
    ops::return_to_planning(&ws, &alice, q[3].as_str(), &why("not now")).unwrap();
    attention(&q[4], "circuit_open");
    ops::return_to_planning(&ws, &service, q[4].as_str(), &why("brief incomplete")).unwrap();
    open(&q[4], InboxReason::RoutingFailed);
    // Returned, made ready again by a person (moved on), then queued and returned again.
    ops::return_to_planning(&ws, &service, q[5].as_str(), &why("first")).unwrap();
    ops::mark_ready(&ws, &alice, q[5].as_str(), &none).unwrap();
    ops::return_to_planning(&ws, &service, q[6].as_str(), &why("first")).unwrap();
    ops::mark_ready(&ws, &alice, q[6].as_str(), &none).unwrap();
    ops::queue(&ws, &alice, q[6].as_str(), &none).unwrap();
    ops::return_to_planning(&ws, &service, q[6].as_str(), &why("second")).unwrap();
    open(&q[6], InboxReason::RoutingFailed);
    attention(&q[7], "circuit_open");
    hand_edit_state(&ws, &index, &q[7], State::Done);
    // A service return whose item.md a hand edit put back in the queue: the move did not
    // happen as far as item.md says, and the attention before it is still open.
    attention(&q[8], "circuit_open");
    ops::return_to_planning(&ws, &service, q[8].as_str(), &why("torn")).unwrap();
    hand_edit_state(&ws, &index, &q[8], State::Queued);
    open(&q[8], InboxReason::CircuitOpen);
    // In planning by a hand edit after the service accepted it: the walk read it (a service
    // move, in planning), the events never moved it into planning, and it has no entry.
    let evidence = ops::AcceptEvidence {
        branch: "yoi/t".into(),
        worktree: "w".into(),
        base_commit: "0".repeat(40),
        assignment: "a".into(),
        decision: "Accepted.".into(),
    };
    ops::accept(&ws, &service, q[9].as_str(), &none, &evidence).unwrap();
    hand_edit_state(&ws, &index, &q[9], State::Planning);
    // A person returned it to planning: nobody's entry.
    ops::return_to_planning(&ws, &alice, r[1].as_str(), &why("later")).unwrap();

    // In progress: asked, answered, asked again after an answer, retried past, cancelled while
    // asked, a second attention of the same reason, two reasons and a budget grant.
    ask(&p[0]);
    open(&p[0], InboxReason::AgentQuestion);
    ask(&p[1]);
    ops::answer(&ws, &alice, p[1].as_str(), "main").unwrap();
    ask(&p[2]);
    ops::answer(&ws, &alice, p[2].as_str(), "main").unwrap();
    ask(&p[2]);
    open(&p[2], InboxReason::AgentQuestion);
    ask(&p[3]);
    ops::retry(&ws, &alice, p[3].as_str(), Some("try again")).unwrap();
    ask(&p[4]);
    let resolution = TransitionRequest {
        resolution: Some("Not needed.".into()),
        ..TransitionRequest::default()
    };
    ops::cancel(&ws, &alice, p[4].as_str(), &resolution).unwrap();
    attention(&p[5], "agent_blocked");
    attention(&p[5], "agent_blocked");
    open(&p[5], InboxReason::AgentBlocked);
    attention(&p[6], "budget_reached");
    attention(&p[6], "merge_deferred");
    ops::add_budget(&ws, &alice, p[6].as_str(), Some(2.0), None, None).unwrap();
    open(&p[6], InboxReason::MergeDeferred);
    attention(&p[7], "agent_unusable");
    hand_edit_state(&ws, &index, &p[7], State::Planning);

    // The rule on every ticket's files; the walk's tickets from the files; the index.
    let all: Vec<InboxTicket> = items.iter().map(|(id, _)| from_files(&ws, id)).collect();
    let reference = sorted(all.iter().flat_map(ticket_entries).collect());
    let walk = sorted(
        all.iter()
            .filter(|t| walked(t, &author))
            .flat_map(ticket_entries)
            .collect(),
    );
    let read = index.inbox_tickets(&author, None).unwrap();
    let indexed = sorted(read.iter().flat_map(ticket_entries).collect());
    let got: BTreeSet<(String, InboxReason)> = reference
        .iter()
        .map(|e| (e.ticket.clone().unwrap(), e.reason))
        .collect();
    assert_eq!(got, want, "the rule on the files");
    assert_eq!(walk, reference, "the walk over the states");
    assert_eq!(indexed, reference, "the index, from the events");
    // The walk read the ticket the service accepted and a hand edit put in planning; the index
    // leaves it out, and it has no entry either way.
    assert!(all
        .iter()
        .any(|t| t.id == q[9].as_str() && walked(t, &author)));
    assert!(read.iter().all(|t| t.id != q[9].as_str()));

    // The whole inbox, as the API and the dashboard's count read it.
    let whole = inbox::inbox(&ws, &index).unwrap();
    assert_eq!(whole.count, reference.len());
    assert_eq!(whole.entries, reference);

    // One ticket's entries (its page), for every ticket a case touched and a few untouched.
    for id in q.iter().chain(&p).chain(&r[..3]) {
        let one = inbox::of_ticket(&index, id).unwrap();
        let files = ticket_entries(&from_files(&ws, id));
        assert_eq!(one, files, "ticket {id}");
    }
}

#[test]
fn the_inbox_from_the_index_equals_the_rule_on_every_file_on_sqlite() {
    index_and_files_agree(None);
}

#[test]
fn the_inbox_from_the_index_equals_the_rule_on_every_file_on_postgres() {
    index_and_files_agree(Some(pg::database()));
}
