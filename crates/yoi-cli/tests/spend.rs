//! Spending within limits through the real `yoi serve`, its supervised pods and a scripted agent
//! (docs/budgets.md): rate limits pause the agent and never open the circuit, and a ticket that
//! reaches its budget in its second round waits, is let go on by a person, and merges.

mod common;

use common::pods::{assignments, state_of, until, until_swept, workspace_with_reviewer};
use common::server::Server;
use common::Repo;

const BRIEF: &str = "## Intent\nLeave a note.\n\n## Acceptance criteria\n- notes.txt exists\n\n## Validation\n`test -f notes.txt`\n";

fn with_config(repo: &Repo, extra: &str) {
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n{extra}\n")).unwrap();
    yoi_testkit::commit_all(repo.path(), "config");
}

fn queued(repo: &Repo) -> String {
    let id = repo.create("Leave a note", BRIEF);
    repo.yoi(&["ticket", "mark-ready", &id]).ok();
    repo.yoi(&["ticket", "queue", &id]).ok();
    id
}

fn thread(repo: &Repo, id: &str) -> String {
    std::fs::read_to_string(repo.ticket_dir(id).join("thread.md")).unwrap()
}

fn json(out: &common::Output) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

#[test]
fn rate_limits_pause_the_agent_and_never_open_the_circuit_and_the_ticket_merges() {
    // Three refusals in a row — as many failures would open the circuit — then the work.
    let repo = workspace_with_reviewer(
        "attempt 1 say Error: 429 Too Many Requests (rate_limit_error). Retry-After: 3\n\
         attempt 1 exit 1\n\
         attempt 2 say Error: 429 Too Many Requests (rate_limit_error). Retry-After: 2\n\
         attempt 2 exit 1\n\
         attempt 3 say Error: 429 Too Many Requests (rate_limit_error). Retry-After: 2\n\
         attempt 3 exit 1\n\
         write notes.txt noted\\n\n\
         done wrote the note\n",
        "say YOI-VERDICT: approve\ndone reviewed\n",
    );
    let id = queued(&repo);
    let server = Server::spawn(&repo);
    let implement = |status: &str| {
        assignments(&server, &repo, &id)
            .iter()
            .filter(|a| a["step"] == "implement" && a["status"] == status)
            .count()
    };
    until("the first rate-limited attempt", || {
        implement("rate_limited") >= 1
    });
    // The agent is paused, and says why and until when.
    let (status, limits) = server.get(&repo, "/limits");
    assert_eq!(status, 200, "{limits}");
    let pause = limits["pauses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["subject"] == "agent:fake")
        .cloned()
        .unwrap_or_else(|| panic!("agent:fake is paused: {limits}"));
    assert_eq!(pause["reason"], "rate_limited");
    assert!(
        pause["message"].as_str().unwrap().contains("429"),
        "{pause}"
    );
    let listed = repo.yoi(&["agent", "list"]).ok();
    assert!(listed.stdout.contains("agent:fake"), "{}", listed.stdout);
    until("the ticket to be merged", || state_of(&repo, &id) == "done");
    assert_eq!((implement("rate_limited"), implement("completed")), (3, 1));
    assert_eq!(implement("failed"), 0);
    let t = thread(&repo, &id);
    assert_eq!(t.matches("outcome: rate_limited").count(), 3, "{t}");
    assert!(!t.contains("event: attention"), "no circuit opened: {t}");
    // Got through: the strikes are gone.
    let (_, limits) = server.get(&repo, "/limits");
    assert_eq!(limits["pauses"], serde_json::json!([]), "{limits}");
}

#[test]
fn a_ticket_that_reaches_its_budget_in_round_two_waits_for_a_person_then_merges() {
    let coder = "say Tokens: 1k sent, 100 received. Cost: $0.03 message, $0.03 session.\n\
                 attempt 1 write notes.txt one\\n\n\
                 attempt 2 write notes.txt two\\n\n\
                 done wrote the note\n";
    let reviewer = "say Tokens: 500 sent, 50 received. Cost: $0.01 message, $0.01 session.\n\
                    attempt 1 say YOI-VERDICT: request_changes\n\
                    attempt 1 say YOI-FINDING: say two\n\
                    attempt 1 done asked for a change\n\
                    attempt 2 say YOI-VERDICT: approve\n\
                    attempt 2 done reviewed\n";
    let repo = workspace_with_reviewer(coder, reviewer);
    with_config(&repo, "[budget]\nticket_usd = 0.05\n");
    let id = queued(&repo);
    let server = Server::spawn(&repo);
    // Round one: $0.03 + $0.01 is 80% of $0.05 — said once; round two's coder passes it.
    until("the ticket to reach its budget", || {
        thread(&repo, &id).contains("reason: budget_reached")
    });
    let t = thread(&repo, &id);
    assert_eq!(t.matches("reason: budget_near").count(), 1, "{t}");
    assert!(t.contains("$0.07 of $0.05"), "{t}");
    // It waits: in progress, its next step pending and unclaimed, whole sweeps later.
    until_swept(&server, &repo);
    until_swept(&server, &repo);
    assert_eq!(state_of(&repo, &id), "inprogress");
    let rows = assignments(&server, &repo, &id);
    let pending: Vec<_> = rows.iter().filter(|a| a["status"] == "pending").collect();
    assert_eq!(pending.len(), 1, "{rows:?}");
    assert_eq!(pending[0]["step"], "verify");
    let budget = json(&repo.yoi(&["ticket", "budget", &id, "--json"]).ok());
    assert_eq!(budget["held"]["ticket"], id.as_str(), "{budget}");
    assert_eq!(budget["spent"]["cost_micros"], 70_000, "{budget}");
    // It waits on a person, in the inbox, with the command and the form that let it go on.
    let inbox = json(&repo.yoi(&["inbox", "--json"]).ok());
    let reasons: Vec<&str> = inbox["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("{inbox}"))
        .iter()
        .filter(|e| e["ticket"] == id.as_str())
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["budget_near", "budget_reached"], "{inbox}");
    // A person adds to it on the ticket's page, and it goes on to the merge.
    let dashboard = common::dashboard::Dashboard::login(&repo);
    let (status, to) = dashboard.submit(
        &format!("/tickets/{id}"),
        &format!("/tickets/{id}/budget"),
        &[
            ("add_usd", "0.50"),
            ("add_tokens", ""),
            ("note", "worth it"),
        ],
    );
    assert_eq!((status, to), (303, format!("/tickets/{id}")));
    until("the ticket to be merged", || state_of(&repo, &id) == "done");
    let t = thread(&repo, &id);
    assert!(
        t.contains("event: budget") && t.contains("add_usd: 0.5"),
        "{t}"
    );
    let budget = json(&repo.yoi(&["ticket", "budget", &id, "--json"]).ok());
    assert_eq!(budget["held"], serde_json::Value::Null, "{budget}");
    assert_eq!(budget["limit_usd"], 0.55, "{budget}");
    // Where the money went.
    let costs = json(&repo.yoi(&["cost", "--by", "ticket", "--json"]).ok());
    assert_eq!(costs["costs"]["rows"][0]["key"], id.as_str(), "{costs}");
    assert_eq!(costs["costs"]["rows"][0]["cost_micros"], 80_000, "{costs}");
    let page = dashboard.page("/costs");
    assert!(page.contains("<svg") && page.contains(&id), "{page}");
    assert!(page.contains("<rect") && page.contains("fake"), "{page}");
}

/// An agent that streams its usage (Claude Code's `stream-json`) and passes its ticket's token
/// budget while it runs: the next heartbeat carries that usage, the server says to stop, and the
/// pod ends the agent's whole group and fails the attempt saying why. Its work stays on the
/// attempt (kept for the next one, never on the branch), and the ticket is held for a person.
#[test]
fn a_streaming_agent_past_its_ticket_budget_is_stopped_while_running_and_its_work_kept() {
    let usage = r#"{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","usage":{"input_tokens":5000,"output_tokens":100}}}"#;
    let (repo, _) = common::pods::workspace(
        &format!("write notes.txt half\\n\nsay {usage}\nrun sleep 40\ndone never reached\n"),
        3,
    );
    common::pods::no_supervised_pods(&repo);
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "output = \"text\"\ntimeout_secs = 60",
        "output = \"claude_stream_json\"\ntimeout_secs = 60",
    );
    std::fs::write(&config, text).unwrap();
    with_config(&repo, "[budget]\nticket_tokens = 1000\nstop_margin = 0.5\n");
    let id = queued(&repo);
    let server = Server::spawn(&repo);
    let base = common::pods::git(repo.path(), &["rev-parse", "main"]);
    let started = std::time::Instant::now();
    let mut pod = common::pods::own_pod(&repo, "streaming", &["--once"]);
    assert_eq!(pod.wait().unwrap().code(), Some(1), "its attempt failed");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the agent was stopped, not waited for"
    );
    let rows = assignments(&server, &repo, &id);
    let failed = rows
        .iter()
        .find(|a| a["step"] == "implement" && a["status"] == "failed")
        .unwrap_or_else(|| panic!("{rows:?}"));
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("stopped while running: the ticket's budget was passed by more than 50%")
            && error.contains("5100 of 1000 tokens"),
        "{error}"
    );
    let report: serde_json::Value =
        serde_json::from_str(failed["result"].as_str().unwrap()).unwrap();
    assert_eq!(report["keep_work"], true, "{report}");
    assert!(report["commit"].as_str().is_some(), "{report}");
    assert_eq!(
        report["usage"]["model"], "claude-sonnet-4-5",
        "the usage so far is the attempt's: {report}"
    );
    let branch = format!("yoi/{id}-leave-a-note");
    assert_eq!(
        common::pods::git(repo.path(), &["rev-parse", &branch]),
        base,
        "nothing of a stopped attempt reaches the branch"
    );
    assert_eq!(
        common::pods::processes_mentioning("sleep 40"),
        Vec::<u32>::new(),
        "the agent's group is gone"
    );
    // Its ledger entry counts, so the ticket is held for a person.
    until("the ticket to be held", || {
        thread(&repo, &id).contains("reason: budget_reached")
    });
    assert_eq!(state_of(&repo, &id), "inprogress");
}

/// The real Aider against an endpoint that answers the whole first attempt with 429 ("Please
/// try again in 2s"; the attempt's folder, which the prompt names, tells them apart): Aider
/// retries by itself until the attempt's timeout ends it; what it printed names the limit, so
/// the attempt ends `rate_limited` (no failure), Aider's agent pauses for the 2 s the answer
/// named, the step is handed out again, and the ticket merges with the circuit closed.
#[test]
fn the_real_aider_refused_by_a_rate_limit_pauses_and_its_ticket_merges() {
    let reply = "hello.txt\n```\nhello\n```\n\nI created hello.txt.\n\nYOI-RESULT: done\nYOI-SUMMARY: created hello.txt\n";
    let (base, seen) = common::pods::model_endpoint_refusing(
        |body| body.contains("say-hello") && !body.contains("say-hello.attempt-"),
        &[reply],
    );
    let repo = workspace_with_reviewer("", "say YOI-VERDICT: approve\ndone reviewed\n");
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[pods.agent]\ncoder = \"fake\"\n",
        "[pods.agent]\ncoder = \"aider\"\n",
    );
    // A short timeout ends the first attempt while Aider is still retrying the 429s.
    let profile =
        common::pods::aider_profile(&base).replace("timeout_secs = 300", "timeout_secs = 15");
    std::fs::write(&config, format!("{text}\n[agents.aider]\n{profile}\n")).unwrap();
    yoi_testkit::commit_all(repo.path(), "config");
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        "[user]\n\tname = agent user\n\temail = agent@yoi.invalid\n",
    )
    .unwrap();
    let id = repo.create("Say hello", common::pods::BRIEF);
    repo.yoi(&["ticket", "mark-ready", &id]).ok();
    repo.yoi(&["ticket", "queue", &id]).ok();
    let server = Server::spawn_with_env(
        &repo,
        "127.0.0.1:0",
        &[
            ("TEST_MODEL_KEY", "sk-yoi-test"),
            ("HOME", home.path().to_str().unwrap()),
        ],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while state_of(&repo, &id) != "done" {
        assert!(
            std::time::Instant::now() < deadline,
            "the ticket was not merged: {:#?}\n{}\n{}",
            assignments(&server, &repo, &id),
            thread(&repo, &id),
            common::pods::run_outputs(&repo)
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let mut implement: Vec<_> = assignments(&server, &repo, &id)
        .into_iter()
        .filter(|a| a["step"] == "implement")
        .collect();
    implement.sort_by_key(|a| a["attempt"].as_i64());
    let statuses: Vec<&str> = implement
        .iter()
        .map(|a| a["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["rate_limited", "completed"], "{implement:?}");
    let report: serde_json::Value =
        serde_json::from_str(implement[0]["result"].as_str().unwrap()).unwrap();
    assert!(
        report["rate_limit"]["message"]
            .as_str()
            .is_some_and(|m| m.to_ascii_lowercase().contains("rate limit")),
        "the line that named the limit: {report}"
    );
    // The endpoint refused, then answered the second attempt's Aider.
    let requests = seen.lock().unwrap().clone();
    assert!(
        requests.len() >= 3,
        "Aider retried the 429s: {}",
        requests.len()
    );
    let t = thread(&repo, &id);
    assert!(t.contains("outcome: rate_limited"), "{t}");
    assert!(t.contains("agent:aider pauses until"), "{t}");
    assert!(!t.contains("step_circuit_open"), "{t}");
    assert_eq!(
        common::pods::git(repo.path(), &["show", "main:hello.txt"]),
        "hello"
    );
}
