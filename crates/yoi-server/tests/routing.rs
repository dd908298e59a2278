//! The orchestrator loop inside a real server, on real git repositories: queued tickets are
//! blocked, returned, made to wait or accepted without anyone asking, every decision is written
//! once per situation, a failing acceptance opens the circuit and `retry` closes it, and a
//! restart resumes from the outbox without duplicate decisions.
//!
//! Tests wait on `GET /api/v1/router` reporting `settled` (every outbox event handled, no pass
//! running, no ticket in a retry backoff): a fixed point, not a clock.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::dashboard::{log_in, page};
use common::{git, Backend, Server, COMPLETE_BRIEF};
use serde_json::{json, Value};
use yoi_core::decision::parse_kind;
use yoi_core::thread::EventKind;
use yoi_core::{Principal, TicketId};

/// Wait until the orchestrator has reached a fixed point.
fn settle(s: &Server) -> Value {
    let start = Instant::now();
    loop {
        let status = s
            .get("/api/v1/router")
            .token(&s.tokens.read)
            .send()
            .expect(200);
        if status["settled"] == true {
            return status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "routing did not settle: {status}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The orchestrator's decision kinds for a ticket, in thread order, with their bodies.
fn decisions(s: &Server, id: &str) -> Vec<(String, String)> {
    let ws = s.workspace();
    let id = TicketId::parse(id).unwrap();
    let orchestrator = Principal::orchestrator().author();
    ws.read_thread(&id)
        .unwrap()
        .events
        .into_iter()
        .filter(|e| e.kind == EventKind::Decision && e.author() == Some(orchestrator.as_str()))
        .map(|e| (parse_kind(&e.body).unwrap_or_default(), e.body))
        .collect()
}

fn kinds(s: &Server, id: &str) -> Vec<String> {
    decisions(s, id).into_iter().map(|(k, _)| k).collect()
}

/// No decision repeats the one before it (written once per situation).
fn assert_no_repeats(s: &Server, id: &str) {
    let d = decisions(s, id);
    for pair in d.windows(2) {
        assert_ne!(
            pair[0].1, pair[1].1,
            "{id}: a decision was written twice: {d:?}"
        );
    }
}

fn state(s: &Server, id: &str) -> String {
    s.show(id)["state"].as_str().unwrap().to_string()
}

fn queue(s: &Server, id: &str) {
    s.post(&format!("/api/v1/tickets/{id}/queue"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
}

fn cancel(s: &Server, id: &str) {
    s.post(&format!("/api/v1/tickets/{id}/cancel"))
        .token(&s.tokens.human)
        .json(json!({ "resolution": "not needed any more" }))
        .send()
        .expect(200);
}

/// A ready ticket with this body.
fn ready_with(s: &Server, title: &str, body: &str, depends_on: &[&str]) -> String {
    let out = s
        .post("/api/v1/tickets")
        .token(&s.tokens.human)
        .json(json!({ "title": title, "body": body, "depends_on": depends_on }))
        .send()
        .expect(201);
    let id = out["ticket"].as_str().unwrap().to_string();
    s.post(&format!("/api/v1/tickets/{id}/mark-ready"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    id
}

fn routing(s: &Server, id: &str) -> Value {
    s.get(&format!("/api/v1/tickets/{id}/routing"))
        .token(&s.tokens.read)
        .send()
        .expect(200)
}

fn worktree_of(s: &Server, id: &str, slug: &str) -> PathBuf {
    s.root().join(".worktree").join(format!("{id}-{slug}"))
}

/// The linked worktrees git lists (the main one excluded).
fn linked_worktrees(repo: &Path) -> Vec<PathBuf> {
    git(repo, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .filter(|p| p != repo)
        .collect()
}

/// The ticket was accepted: git lists its clean worktree on its branch at the base commit, the
/// IntentPacket is frozen, and one pending `implement` assignment exists.
fn assert_accepted(s: &Server, id: &str, slug: &str) {
    assert_eq!(state(s, id), "inprogress", "{id}: {:?}", decisions(s, id));
    let wt = worktree_of(s, id, slug);
    assert!(
        linked_worktrees(s.root()).contains(&wt),
        "{wt:?} not listed"
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    let base = git(s.root(), &["rev-parse", "main"]);
    let branch = format!("yoi/{id}-{slug}");
    assert_eq!(git(s.root(), &["rev-parse", &branch]), base);
    assert_eq!(git(&wt, &["rev-parse", "HEAD"]), base);
    assert!(s
        .root()
        .join(format!(".yoi/tickets/{id}/artifacts/intent-packet.json"))
        .is_file());
    let a = s
        .admin()
        .rt
        .block_on(s.admin().db.assignments_of(id))
        .unwrap();
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(
        (a[0].step.as_str(), a[0].role.as_str()),
        ("implement", "coder")
    );
    let k = kinds(s, id);
    assert_eq!(
        k.iter().filter(|k| *k == "implementation_ready").count(),
        1,
        "{k:?}"
    );
    assert_eq!(k.last().map(String::as_str), Some("implementation_ready"));
}

fn blocked_then_unblocked_when_the_dependency_is_closed(backend: Backend) {
    let s = Server::start_routed(backend, |_| {});
    let a = ready_with(&s, "Dependency", COMPLETE_BRIEF, &[]);
    let b = ready_with(&s, "Dependent", COMPLETE_BRIEF, &[&a]);
    // A dependent can be queued once its dependencies are in flight.
    queue(&s, &a);
    settle(&s);
    assert_accepted(&s, &a, "dependency");
    queue(&s, &b);
    settle(&s);
    assert_eq!(state(&s, &b), "queued");
    let d = decisions(&s, &b);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].0, "blocked_by_dependency");
    assert!(
        d[0].1.contains(&a) && d[0].1.contains("(state: inprogress)"),
        "{}",
        d[0].1
    );
    let view = routing(&s, &b);
    assert_eq!(view["blockers"][0]["ticket"], a.as_str());
    assert_eq!(view["would_decide"]["kind"], "blocked_by_dependency");
    // The queue page lists the decision as data, not its Markdown: the reason, each blocker
    // linked with how it blocks, and the next action.
    let cookie = log_in(&s);
    let q = page(&s, &cookie, "/queue");
    for part in [
        "<dt>Reason</dt><dd>1 open dependency must finish first.</dd>".to_string(),
        format!("<li><a href=\"/tickets/{a}\">"),
        "via depends_on (state: inprogress)</li>".to_string(),
        "<dt>Next action</dt><dd>wait; the ticket is re-evaluated when a blocker changes state.</dd>"
            .to_string(),
    ] {
        assert!(q.contains(&part), "{part} in {q}");
    }

    // Nothing changes: another look writes nothing.
    s.post(&format!("/api/v1/tickets/{b}/comments"))
        .token(&s.tokens.human)
        .json(json!({ "kind": "comment", "body": "still waiting?" }))
        .send()
        .expect(200);
    let c = ready_with(&s, "Unrelated", COMPLETE_BRIEF, &[]);
    queue(&s, &c);
    settle(&s);
    assert_accepted(&s, &c, "unrelated");
    assert_eq!(decisions(&s, &b).len(), 1);

    // Closing the blocker wakes the dependent with no human action.
    cancel(&s, &a);
    settle(&s);
    assert_accepted(&s, &b, "dependent");
    assert_no_repeats(&s, &a);
    assert_no_repeats(&s, &b);
    let view = routing(&s, &b);
    assert_eq!(view["state"], "inprogress");
    assert_eq!(view["latest_decision"]["kind"], "implementation_ready");
    assert_eq!(view["would_decide"], Value::Null);
    s.stop();
}

#[test]
fn blocked_then_unblocked_when_the_dependency_is_closed_sqlite() {
    blocked_then_unblocked_when_the_dependency_is_closed(Backend::Sqlite);
}

#[test]
fn blocked_then_unblocked_when_the_dependency_is_closed_postgres() {
    blocked_then_unblocked_when_the_dependency_is_closed(Backend::Postgres);
}

#[test]
fn an_incomplete_brief_is_returned_to_planning_naming_the_sections() {
    // No slot is free, so the queued ticket waits while its brief is emptied.
    let s = Server::start_routed(Backend::Sqlite, |ws| ws.config.router.max_inprogress = 0);
    let id = ready_with(&s, "Thin brief", COMPLETE_BRIEF, &[]);
    queue(&s, &id);
    settle(&s);
    assert_eq!(kinds(&s, &id), ["waiting_capacity"]);
    s.patch(&format!("/api/v1/tickets/{id}"))
        .token(&s.tokens.human)
        .json(json!({ "body": "## Intent\nSomething.\n" }))
        .send()
        .expect(200);
    settle(&s);
    assert_eq!(state(&s, &id), "planning");
    let (kind, body) = decisions(&s, &id).pop().unwrap();
    assert_eq!(kind, "return_to_planning");
    assert!(
        body.contains("missing section: Acceptance criteria"),
        "{body}"
    );
    assert!(body.contains("missing section: Validation"), "{body}");
    let thread = s.show(&id)["events"].to_string();
    assert!(
        thread.contains("the brief is missing required sections: Acceptance criteria, Validation"),
        "{thread}"
    );
    assert!(linked_worktrees(s.root()).is_empty());
    s.stop();
}

#[test]
fn a_full_set_of_slots_waits_then_accepts_when_one_frees() {
    let s = Server::start_routed(Backend::Sqlite, |ws| ws.config.router.max_inprogress = 1);
    let x = ready_with(&s, "First", COMPLETE_BRIEF, &[]);
    let y = ready_with(&s, "Second", COMPLETE_BRIEF, &[]);
    queue(&s, &x);
    settle(&s);
    queue(&s, &y);
    settle(&s);
    assert_accepted(&s, &x, "first");
    assert_eq!(state(&s, &y), "queued");
    let (kind, body) = decisions(&s, &y).pop().unwrap();
    assert_eq!(kind, "waiting_capacity");
    assert!(body.contains("tickets in progress: 1") && body.contains("maximum in progress: 1"));
    let view = routing(&s, &y);
    assert_eq!(view["capacity"], json!({ "in_progress": 1, "max": 1 }));
    assert_eq!(view["would_decide"]["kind"], "waiting_capacity");

    cancel(&s, &x);
    settle(&s);
    assert_accepted(&s, &y, "second");
    assert_eq!(kinds(&s, &y), ["waiting_capacity", "implementation_ready"]);
    s.stop();
}

#[test]
fn conflicting_work_in_progress_makes_tickets_wait() {
    let s = Server::start_routed(Backend::Sqlite, |_| {});
    let scoped = |scope: &str| format!("{COMPLETE_BRIEF}\n## Write scope\n- {scope}\n");
    let x = ready_with(&s, "Wide", &scoped("src/**"), &[]);
    queue(&s, &x);
    settle(&s);
    assert_accepted(&s, &x, "wide");

    let y = ready_with(&s, "Narrow", &scoped("src/lib.rs"), &[]);
    let z = ready_with(&s, "Elsewhere", &scoped("docs/**"), &[]);
    s.post(&format!("/api/v1/tickets/{z}/plan"))
        .token(&s.tokens.human)
        .json(json!({ "kind": "conflicts_with", "related": x }))
        .send()
        .expect(200);
    queue(&s, &y);
    queue(&s, &z);
    settle(&s);
    let (kind, body) = decisions(&s, &y).pop().unwrap();
    assert_eq!(kind, "waiting_conflict");
    assert!(
        body.contains(&format!("{x}: write scope overlap on src/lib.rs")),
        "{body}"
    );
    let (kind, body) = decisions(&s, &z).pop().unwrap();
    assert_eq!(kind, "waiting_conflict");
    assert!(body.contains(&format!("{x}: conflicts_with")), "{body}");

    cancel(&s, &x);
    settle(&s);
    assert_accepted(&s, &y, "narrow");
    assert_accepted(&s, &z, "elsewhere");
    s.stop();
}

/// The ticket's worktree path is taken by a plain file, so every acceptance fails at the
/// worktree step.
fn block_worktree_path(s: &Server, id: &str, slug: &str) -> PathBuf {
    let path = worktree_of(s, id, slug);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "in the way\n").unwrap();
    path
}

fn retry(s: &Server, id: &str) {
    s.post(&format!("/api/v1/tickets/{id}/retry"))
        .token(&s.tokens.human)
        .json(json!({ "reason": "moved the file away" }))
        .send()
        .expect(200);
}

#[test]
fn three_failures_open_the_circuit_and_retry_closes_it() {
    let s = Server::start_routed(Backend::Sqlite, |_| {});
    let id = ready_with(&s, "Fragile", COMPLETE_BRIEF, &[]);
    let blocker = block_worktree_path(&s, &id, "fragile");
    queue(&s, &id);
    settle(&s);
    assert_eq!(state(&s, &id), "queued");
    assert_eq!(
        kinds(&s, &id),
        [
            "acceptance_failed",
            "acceptance_failed",
            "acceptance_failed",
            "circuit_open"
        ]
    );
    let failed = decisions(&s, &id)[2].1.clone();
    assert!(
        failed.contains("step: add_worktree") && failed.contains("attempt: 3"),
        "{failed}"
    );
    let thread = s
        .workspace()
        .read_thread(&TicketId::parse(&id).unwrap())
        .unwrap();
    let attention: Vec<_> = thread
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Attention)
        .collect();
    assert_eq!(attention.len(), 1);
    assert!(attention[0]
        .body
        .contains(&format!("yoi ticket retry {id}")));
    assert_eq!(std::fs::read_to_string(&blocker).unwrap(), "in the way\n");
    let view = routing(&s, &id);
    assert_eq!(view["circuit"]["open"], true);
    assert_eq!(view["circuit"]["consecutive_failures"], 3);
    assert_eq!(view["would_decide"]["kind"], "circuit_open");

    // An open circuit stays open: other events route every queued ticket, nothing is tried.
    let other = ready_with(&s, "Other", COMPLETE_BRIEF, &[]);
    queue(&s, &other);
    settle(&s);
    assert_accepted(&s, &other, "other");
    assert_eq!(kinds(&s, &id).len(), 4);

    // Only a person retries.
    s.post(&format!("/api/v1/tickets/{id}/retry"))
        .token(&s.tokens.orchestrator)
        .json(json!({}))
        .send()
        .expect(403);
    std::fs::remove_file(&blocker).unwrap();
    retry(&s, &id);
    settle(&s);
    assert_accepted(&s, &id, "fragile");
    assert_no_repeats(&s, &id);
    s.stop();
}

#[test]
fn six_failures_of_one_step_stop_the_ticket_and_return_it_to_planning() {
    let s = Server::start_routed(Backend::Sqlite, |_| {});
    let id = ready_with(&s, "Doomed", COMPLETE_BRIEF, &[]);
    block_worktree_path(&s, &id, "doomed");
    queue(&s, &id);
    settle(&s);
    retry(&s, &id);
    settle(&s);
    assert_eq!(state(&s, &id), "planning");
    let k = kinds(&s, &id);
    assert_eq!(
        k.iter().filter(|k| *k == "acceptance_failed").count(),
        6,
        "{k:?}"
    );
    assert_eq!(k.last().map(String::as_str), Some("stopped"));
    let thread = s.show(&id)["events"].to_string();
    assert!(
        thread.contains("partial: stopped after acceptance step `add_worktree` failed 6 times"),
        "{thread}"
    );
    s.stop();
}

#[test]
fn a_restart_in_the_middle_of_routing_resumes_without_duplicate_decisions() {
    let s = Server::start_routed(Backend::Sqlite, |ws| ws.config.router.max_inprogress = 3);
    // A chain and some independent tickets, queued as fast as the API takes them.
    let mut ids: Vec<(String, String)> = Vec::new();
    for i in 0..12 {
        let title = format!("Step {i}");
        let deps: Vec<&str> = if i % 3 == 1 {
            vec![ids[i - 1].0.as_str()]
        } else {
            vec![]
        };
        let id = ready_with(&s, &title, COMPLETE_BRIEF, &deps);
        ids.push((id, format!("step-{i}")));
    }
    for (id, _) in &ids {
        queue(&s, id);
    }
    // Stop while the loop is still working through the events.
    let stopped = s.stop();
    let s = stopped.restart(true, |ws| {
        ws.config.router.max_inprogress = 3;
        ws.config.router.retry_backoff_ms = 20;
    });
    settle(&s);
    let inprogress: Vec<&(String, String)> = ids
        .iter()
        .filter(|(id, _)| state(&s, id) == "inprogress")
        .collect();
    assert_eq!(inprogress.len(), 3);
    for (id, slug) in &inprogress {
        assert_accepted(&s, id, slug);
    }
    assert_eq!(linked_worktrees(s.root()).len(), 3);
    for (id, _) in &ids {
        assert_no_repeats(&s, id);
        let k = kinds(&s, id);
        assert!(!k.is_empty(), "{id} was never routed");
        if state(&s, id) == "queued" {
            assert!(
                matches!(
                    k.last().map(String::as_str),
                    Some("waiting_capacity" | "blocked_by_dependency")
                ),
                "{id}: {k:?}"
            );
        }
    }
    // A second restart at the fixed point writes nothing at all.
    let before: Vec<usize> = ids.iter().map(|(id, _)| decisions(&s, id).len()).collect();
    let s = s
        .stop()
        .restart(true, |ws| ws.config.router.max_inprogress = 3);
    settle(&s);
    let after: Vec<usize> = ids.iter().map(|(id, _)| decisions(&s, id).len()).collect();
    assert_eq!(before, after);
    s.stop();
}

#[test]
fn a_packet_submitted_whole_is_the_brief_that_acceptance_freezes() {
    let s = Server::start_routed(Backend::Sqlite, |_| {});
    let id = s.create("Drafted by intake", "Some context the person wrote.\n");
    let packet = json!({
        "intent": "Make the parser total.",
        "acceptance_criteria": ["no input panics", "errors name the line"],
        "validation": ["cargo test -p parser"],
        "write_scope": ["src/parser/**"],
        "escalate_if": ["the grammar must change"]
    });
    s.request("PUT", &format!("/api/v1/tickets/{id}/packet"))
        .token(&s.tokens.coder)
        .json(packet.clone())
        .send()
        .expect_error(403, "forbidden");
    let err = s
        .request("PUT", &format!("/api/v1/tickets/{id}/packet"))
        .token(&s.tokens.intake)
        .json(json!({ "intent": "x", "acceptance": ["typo"] }))
        .send()
        .expect_error(400, "invalid");
    assert!(
        err["message"].as_str().unwrap().contains("acceptance"),
        "{err}"
    );
    s.request("PUT", &format!("/api/v1/tickets/{id}/packet"))
        .token(&s.tokens.intake)
        .json(packet)
        .send()
        .expect(200);

    let view = s
        .get(&format!("/api/v1/tickets/{id}/packet"))
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(view["complete"], true);
    assert_eq!(
        view["packet"]["acceptance_criteria"][1],
        "errors name the line"
    );
    assert_eq!(view["frozen"], Value::Null);
    let body = s.show(&id)["body"].as_str().unwrap().to_string();
    assert!(
        body.starts_with("Some context the person wrote.\n\n## Intent\n"),
        "{body}"
    );

    s.post(&format!("/api/v1/tickets/{id}/mark-ready"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    queue(&s, &id);
    settle(&s);
    assert_accepted(&s, &id, "drafted-by-intake");
    let view = s
        .get(&format!("/api/v1/tickets/{id}/packet"))
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(view["frozen"]["content_hash"], view["content_hash"]);
    assert_eq!(view["frozen"]["packet"], view["packet"]);

    // From acceptance on, the frozen packet is what the work follows.
    let err = s
        .request("PUT", &format!("/api/v1/tickets/{id}/packet"))
        .token(&s.tokens.intake)
        .json(json!({ "intent": "Something else." }))
        .send()
        .expect_error(422, "refused");
    assert!(err["message"].as_str().unwrap().contains("frozen"), "{err}");
    s.stop();
}
