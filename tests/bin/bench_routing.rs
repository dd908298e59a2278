//! `yoi-bench-routing YOI_BINARY [TICKETS] [RELATIONS] [MAX_INPROGRESS]`: route a workspace of
//! queued tickets to a fixed point with a real `yoi serve` and report the time, the decisions
//! written, the acceptances and any duplicate decision.
//!
//! A git repository with one commit holds TICKETS (default 1,000) generated tickets, all
//! `queued`, each with a complete brief and its own write scope, and about RELATIONS (default
//! 1,000) `depends_on` relations to older tickets (fixed seed, see [`yoi_tests::generate`]).
//! `yoi init` indexes them; then `yoi serve` starts with `[router] max_inprogress =
//! MAX_INPROGRESS` (default: TICKETS, so every unblocked ticket is accepted with its branch and
//! worktree) and the clock runs from its `listening` line until `GET /api/v1/router` reports
//! `settled` (every outbox event handled, no pass running, nothing in a retry backoff).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use yoi_core::decision::parse_kind;
use yoi_core::state::State;
use yoi_core::thread::EventKind;
use yoi_core::{Principal, TicketId};
use yoi_testkit::git;
use yoi_tests::generate::{generate_in, SEED};
use yoi_tests::{yoi_init, yoi_serve};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-routing YOI_BINARY [TICKETS] [RELATIONS] [MAX_INPROGRESS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let tickets: usize = args.get(2).map(|s| s.parse().expect(usage)).unwrap_or(1000);
    let relations: usize = args.get(3).map(|s| s.parse().expect(usage)).unwrap_or(1000);
    let max: usize = args
        .get(4)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(tickets);

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "bench\n").unwrap();
    yoi_store::init(root, "main").unwrap();
    let made = generate_in(root, tickets, relations, Some(State::Queued));
    let config = root.join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("max_inprogress = 4", &format!("max_inprogress = {max}"));
    std::fs::write(&config, text).unwrap();
    yoi_testkit::commit_all(root, "base");
    println!(
        "seed {SEED:#x}: {tickets} queued tickets, {made} depends_on relations, max_inprogress {max}"
    );
    let token = yoi_init(&yoi, root);

    let (server, addr) = yoi_serve(&yoi, root);
    let start = Instant::now();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let status = loop {
        let mut resp = agent
            .get(format!("http://{addr}/api/v1/router"))
            .header("Authorization", format!("Bearer {token}"))
            .call()
            .unwrap();
        let status: serde_json::Value =
            serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        if status["settled"] == true {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(1800),
            "did not settle: {status}"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    server.stop();

    let ws = yoi_store::Workspace::open(root).unwrap();
    let orchestrator = Principal::orchestrator().author();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut duplicates = 0;
    let mut states: BTreeMap<State, usize> = BTreeMap::new();
    let mut ids: Vec<TicketId> = ws.ticket_ids().unwrap();
    ids.sort();
    for id in &ids {
        *states.entry(ws.read_item(id).unwrap().state).or_default() += 1;
        let bodies: Vec<String> = ws
            .read_thread(id)
            .unwrap()
            .events
            .into_iter()
            .filter(|e| e.kind == EventKind::Decision && e.author() == Some(orchestrator.as_str()))
            .map(|e| e.body)
            .collect();
        duplicates += bodies.windows(2).filter(|w| w[0] == w[1]).count();
        for b in &bodies {
            *kinds.entry(parse_kind(b).unwrap_or_default()).or_default() += 1;
        }
    }
    let worktrees = git(root, &["worktree", "list", "--porcelain"])
        .matches("worktree ")
        .count()
        - 1;
    let decisions: usize = kinds.values().sum();
    println!(
        "settled in {:.2}s: {} passes, {} decisions written, {} accepted, {} linked worktrees, {} duplicate decisions",
        elapsed.as_secs_f64(),
        status["passes"],
        decisions,
        states.get(&State::Inprogress).copied().unwrap_or(0),
        worktrees,
        duplicates
    );
    println!("decisions by kind: {kinds:?}");
    println!("states: {states:?}");
    assert_eq!(duplicates, 0, "a decision was written twice in a row");
}
