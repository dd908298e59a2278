//! Pods end to end, with real processes: `yoi serve` supervises a coder pod (`yoi pod run`)
//! that runs a scripted agent (`yoi-fake-agent`) in the ticket's detached worktree; the server
//! moves the ticket branch to the commit the pod reports and records the attempt. Also: a pod
//! killed mid-run loses its lease, the step is handed out again with a new fence, and the dead
//! attempt's late results are refused without changing row, thread or branch.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::pods::*;
use common::server::Server;
use yoi_testkit::child::Owned;

#[test]
fn a_queued_ticket_is_implemented_by_a_supervised_coder_pod_and_its_branch_moves() {
    let (repo, _) = workspace(
        "write hello.txt hello\\n\nsay I wrote hello.txt.\nsay Tokens: 1.2k sent, 345 received. Cost: $0.01 message, $0.02 session.\ndone added hello.txt\n",
        30,
    );
    let id = queued_ticket(&repo);
    let mut server = Server::spawn(&repo);
    until("the implement attempt to complete", || {
        assignments(&server, &repo, &id)
            .iter()
            .any(|a| a["status"] == "completed" && a["step"] == "implement")
    });
    let rows = assignments(&server, &repo, &id);
    let done = rows
        .iter()
        .find(|a| a["status"] == "completed" && a["step"] == "implement")
        .unwrap();
    assert_eq!(
        (
            done["step"].as_str(),
            done["attempt"].as_i64(),
            done["fence"].as_i64()
        ),
        (Some("implement"), Some(1), Some(1))
    );

    // The branch moved to the pod's commit, which holds the agent's file and names the ticket.
    let branch = format!("yoi/{id}-say-hello");
    let head = git(repo.path(), &["rev-parse", &branch]);
    assert_eq!(
        git(repo.path(), &["show", &format!("{head}:hello.txt")]),
        "hello"
    );
    let message = git(repo.path(), &["log", "-1", "--format=%B", &head]);
    assert!(
        message.starts_with(&format!("{id}: Say hello (attempt 1)")),
        "{message}"
    );
    // The ticket worktree holds the work, detached and clean; main did not move.
    let wt = repo.path().join(format!(".worktree/{id}-say-hello"));
    assert_eq!(git(&wt, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(
        git(repo.path(), &["log", "--oneline", "main"])
            .lines()
            .count(),
        1
    );

    // One assignment event, with the attempt's facts; the ticket is still in progress.
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    let events: Vec<&str> = thread
        .lines()
        .filter(|l| l.contains("event: assignment ") && l.contains("step: implement"))
        .collect();
    assert_eq!(events.len(), 1, "{thread}");
    for part in [
        "outcome: completed",
        "attempt: 1",
        "fence: 1",
        "role: coder",
        &format!("commit: {head}"),
    ] {
        assert!(events[0].contains(part), "{part} in {}", events[0]);
    }
    assert!(thread.contains("Summary: added hello.txt"), "{thread}");
    let show = repo.yoi(&["ticket", "show", &id, "--json"]).ok();
    let show: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(show["state"], "inprogress");
    // The agent got the frozen brief on stdin.
    let seen = std::fs::read_to_string(
        repo.path()
            .join(".yoi/local/pods/coder-0/runs")
            .join(done["id"].as_str().unwrap())
            .join("prompt.seen"),
    )
    .unwrap();
    assert!(
        seen.contains("hello.txt says hello") && seen.contains("YOI-RESULT"),
        "{seen}"
    );

    // The cost ledger has the attempt, with the cost the agent reported.
    let cost = repo.yoi(&["ticket", "cost", &id, "--json"]).ok();
    let cost: serde_json::Value = serde_json::from_str(&cost.stdout).unwrap();
    // (The verifier may have run by now too; it costs nothing.)
    let coder = |c: &serde_json::Value| -> Vec<serde_json::Value> {
        c["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["role"] == "coder")
            .cloned()
            .collect()
    };
    assert_eq!(coder(&cost).len(), 1, "{cost}");
    assert_eq!(
        (cost["tokens_in"].as_u64(), cost["tokens_out"].as_u64()),
        (Some(1200), Some(345)),
        "{cost}"
    );
    assert_eq!(cost["reported_usd"].as_f64(), Some(0.01), "{cost}");
    assert!(cost["wall_ms"].as_u64().unwrap() > 0);
    let (status, api_cost) = server.get(&repo, &format!("/tickets/{id}/cost"));
    assert_eq!(status, 200);
    assert_eq!(coder(&api_cost), coder(&cost));
    // `show` lists the attempt.
    assert_eq!(show["attempts"][0]["status"], "completed", "{show}");

    // The dashboard's ticket page shows the branch's commit and the end of the agent's log.
    let link = repo.yoi(&["dashboard", "--no-open"]).ok().stdout;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let cookie = yoi_testkit::dashboard_session(&link);
    let page = agent
        .get(&format!("http://{}/tickets/{id}", server.addr))
        .header("Cookie", &cookie)
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    let commits = page.split("id=\"commits\"").nth(1).unwrap_or("");
    assert!(
        commits.contains(&head[..12]) && commits.contains("Say hello (attempt 1)"),
        "the commits section lists the pod's commit: {page}"
    );
    let coder_row = page
        .split("<td>implement</td><td>coder</td>")
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .unwrap_or("");
    assert!(
        coder_row.contains("I wrote hello.txt."),
        "the coder's row shows the end of what its agent said: {page}"
    );

    // Stopping the server stops its pods: nothing it started is left.
    server.terminate();
    assert!(server.wait().success());
    let root = repo.path().display().to_string();
    until("the pods to be gone", || {
        processes_mentioning(&root).is_empty()
    });
}

#[test]
fn a_killed_pod_loses_its_lease_and_its_late_results_change_nothing() {
    // The agent writes a file, then hangs; its pod is SIGKILLed mid-run.
    let (repo, script) = workspace(
        "pidfile agent.pid\nwrite work.txt first\\n\nsleep 600000\n",
        3,
    );
    // No supervisor pods: this test runs its own pod so it can kill it.
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("coder = 1", "coder = 0");
    std::fs::write(&config, text).unwrap();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let token = repo
        .yoi(&[
            "token",
            "create",
            "--name",
            "test-coder",
            "--scope",
            "pod:coder",
        ])
        .ok()
        .stdout
        .trim()
        .to_string();
    let mut pod = Owned(
        Command::new(env!("CARGO_BIN_EXE_yoi"))
            .args([
                "pod",
                "run",
                "--role",
                "coder",
                "--name",
                "victim",
                "--agent",
                "fake",
                "--wait-ms",
                "2000",
            ])
            .current_dir(repo.path())
            .env("YOI_TOKEN", &token)
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let wt = repo.path().join(format!(".worktree/{id}-say-hello"));
    until("the agent to start", || {
        wt.join("agent.pid").exists() && wt.join("work.txt").exists()
    });
    let first = assignments(&server, &repo, &id)[0].clone();
    assert_eq!(first["status"], "claimed");
    // The agent (and its sandbox launcher) by command line: in its PID namespace the pid it
    // wrote is not the machine's.
    let agent = processes_mentioning(&script.display().to_string());
    assert!(!agent.is_empty(), "the agent's processes are found");
    pod.kill().unwrap();
    pod.wait().unwrap();
    // The agent dies with its pod.
    until("the agent to die with its pod", || {
        processes_mentioning(&script.display().to_string()).is_empty()
    });

    // The lease runs out; attempt 2 is handed out with a new fence.
    until("the lease to expire", || {
        assignments(&server, &repo, &id)
            .iter()
            .any(|a| a["status"] == "expired")
    });
    let rows = assignments(&server, &repo, &id);
    let next = rows
        .iter()
        .find(|a| a["status"] == "pending")
        .expect("attempt 2 is pending");
    assert_eq!(
        (next["attempt"].as_i64(), next["fence"].as_i64()),
        (Some(2), Some(2))
    );

    // The dead attempt's late heartbeat and result: 409, and nothing changes.
    let branch = format!("yoi/{id}-say-hello");
    let branch_before = git(repo.path(), &["rev-parse", &branch]);
    let thread_before = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    let pod_id = first["claimed_by"].as_str().unwrap().to_string();
    let a = first["id"].as_str().unwrap();
    git(&wt, &["add", "-A"]);
    git(
        &wt,
        &[
            "-c",
            "user.name=z",
            "-c",
            "user.email=z@z.invalid",
            "commit",
            "-q",
            "-m",
            "zombie work",
        ],
    );
    let zombie = git(&wt, &["rev-parse", "HEAD"]);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let post = |path: &str, body: serde_json::Value| -> (u16, serde_json::Value) {
        let mut resp = agent
            .post(&format!("http://{}/api/v1{path}", server.addr))
            .header("Authorization", &format!("Bearer {token}"))
            .send_json(body)
            .unwrap();
        (resp.status().as_u16(), resp.body_mut().read_json().unwrap())
    };
    let (status, body) = post(
        &format!("/assignments/{a}/heartbeat"),
        serde_json::json!({ "pod": pod_id, "fence": 1 }),
    );
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "stale_fence");
    let (status, body) = post(
        &format!("/assignments/{a}/complete"),
        serde_json::json!({ "pod": pod_id, "fence": 1, "report": { "outcome": "done", "commit": zombie } }),
    );
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        git(repo.path(), &["rev-parse", &branch]),
        branch_before,
        "the zombie's commit never reaches the branch"
    );
    let thread_after = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert_eq!(thread_after, thread_before);
    let row = assignments(&server, &repo, &id)
        .into_iter()
        .find(|r| r["id"] == first["id"])
        .unwrap();
    assert_eq!(row["status"], "expired");
    // Attempt 2 gets a worktree of its own, never the one the old attempt used.
    std::fs::write(&script, "write second.txt two\\n\ndone second try\n").unwrap();
    let token_file = repo.side.path().join("pod.token");
    std::fs::write(&token_file, &token).unwrap();
    let out = repo.yoi_in(
        repo.path(),
        &[
            "pod",
            "run",
            "--role",
            "coder",
            "--name",
            "second",
            "--agent",
            "fake",
            "--once",
            "--wait-ms",
            "5000",
            "--token-file",
            &token_file.display().to_string(),
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows = assignments(&server, &repo, &id);
    let second = rows.iter().find(|a| a["attempt"] == 2).unwrap();
    assert_eq!(second["status"], "completed", "{second}");
    assert!(
        second["workdir"].as_str().unwrap().ends_with(".attempt-2"),
        "{second}"
    );
    let head = git(repo.path(), &["rev-parse", &branch]);
    assert_eq!(
        git(repo.path(), &["show", &format!("{head}:second.txt")]),
        "two"
    );
    let files = git(repo.path(), &["ls-tree", "-r", "--name-only", &head]);
    assert!(
        !files.contains("work.txt"),
        "nothing of the dead attempt is on the branch: {files}"
    );
    drop(server);
}

fn signal(pid: u32, sig: &str) {
    assert!(Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success());
}

/// Processes running `sleep SECS` (the fake agent's grandchildren carry a unique number).
fn sleepers(secs: &str) -> Vec<u32> {
    processes_mentioning(&format!("sleep\0{secs}"))
}

#[test]
fn a_timed_out_agent_is_killed_with_its_whole_group_even_when_it_ignores_sigterm() {
    let (repo, _) = workspace("ignore-sigterm\ngrandchild 317\nsleep 600000\n", 30);
    no_supervised_pods(&repo);
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("timeout_secs = 60", "timeout_secs = 2");
    std::fs::write(&config, text).unwrap();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let mut pod = own_pod(&repo, "timeout", &["--once"]);
    until("the grandchild to start", || !sleepers("317").is_empty());
    assert_eq!(pod.wait().unwrap().code(), Some(1), "its attempt failed");
    assert!(
        sleepers("317").is_empty(),
        "the agent's grandchild outlived the timeout"
    );
    let rows = assignments(&server, &repo, &id);
    let first = rows.iter().find(|a| a["attempt"] == 1).unwrap();
    assert_eq!(first["status"], "failed");
    assert!(
        first["error"].as_str().unwrap().contains("timeout"),
        "{first}"
    );
    // The step is handed out again.
    assert!(
        rows.iter()
            .any(|a| a["attempt"] == 2 && a["status"] == "pending"),
        "{rows:?}"
    );
}

#[test]
fn cancelling_the_ticket_stops_its_agent_at_the_next_heartbeat_and_leaves_nothing_running() {
    let (repo, _) = workspace("grandchild 318\nsleep 600000\n", 30);
    no_supervised_pods(&repo);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let mut pod = own_pod(&repo, "cancelled", &["--once"]);
    until("the agent to start", || !sleepers("318").is_empty());
    let out = repo.yoi(&["ticket", "cancel", &id, "--resolution", "Not needed."]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(pod.wait().unwrap().code(), Some(1), "its attempt was lost");
    assert!(
        sleepers("318").is_empty(),
        "the cancelled agent's group is gone"
    );
    let rows = assignments(&server, &repo, &id);
    assert_eq!(rows[0]["status"], "cancelled", "{rows:?}");
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(
        !thread.contains("event: assignment "),
        "a cancelled attempt reports nothing: {thread}"
    );
}

#[test]
fn a_coder_stopped_past_its_lease_and_resumed_gets_nothing_onto_the_branch() {
    // The agent works for four seconds, then commits and reports done.
    let (repo, _) = workspace(
        "pidfile agent.pid\nsleep 4000\nwrite late.txt late\\n\ncommit zombie commit\nwrite finished.flag x\ndone late work\n",
        2,
    );
    no_supervised_pods(&repo);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let branch = format!("yoi/{id}-say-hello");
    let mut pod = own_pod(&repo, "sleeper", &["--once"]);
    let wt = repo.path().join(format!(".worktree/{id}-say-hello"));
    until("the agent to start", || wt.join("agent.pid").exists());
    let base = git(repo.path(), &["rev-parse", &branch]);
    signal(pod.id(), "-STOP");
    until("the lease to expire", || {
        assignments(&server, &repo, &id)
            .iter()
            .any(|a| a["status"] == "expired")
    });
    until("the agent to finish its work", || {
        wt.join("finished.flag").exists()
    });
    signal(pod.id(), "-CONT");
    assert_eq!(pod.wait().unwrap().code(), Some(1), "its attempt was lost");
    assert_eq!(
        git(repo.path(), &["rev-parse", &branch]),
        base,
        "no commit of the expired attempt reached the branch"
    );
    let rows = assignments(&server, &repo, &id);
    let first = rows.iter().find(|a| a["attempt"] == 1).unwrap();
    assert_eq!(first["status"], "expired", "{first}");
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    let events: Vec<&str> = thread
        .lines()
        .filter(|l| l.contains("event: assignment ") && l.contains("step: implement"))
        .collect();
    assert!(events[0].contains("outcome: expired"), "{}", events[0]);
}

#[test]
fn pod_tokens_are_limited_to_their_role_and_bad_results_are_refused() {
    let (repo, _) = workspace("sleep 600000\n", 30);
    no_supervised_pods(&repo);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let token = |name: &str, scope: &str| {
        repo.yoi(&["token", "create", "--name", name, "--scope", scope])
            .ok()
            .stdout
            .trim()
            .to_string()
    };
    let coder = token("c1", "pod:coder");
    let other_coder = token("c2", "pod:coder");
    let reviewer = token("r1", "pod:reviewer");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let post = |tok: &str, path: &str, body: serde_json::Value| -> (u16, serde_json::Value) {
        let mut resp = agent
            .post(&format!("http://{}/api/v1{path}", server.addr))
            .header("Authorization", &format!("Bearer {tok}"))
            .send_json(body)
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
        )
    };
    let human = std::fs::read_to_string(repo.path().join(".yoi/local/admin.token"))
        .unwrap()
        .trim()
        .to_string();
    let (status, _) = post(&human, "/pods", serde_json::json!({ "name": "h" }));
    assert_eq!(status, 403, "a human token is not a pod");
    let (status, body) = post(&coder, "/pods", serde_json::json!({ "name": "c" }));
    assert_eq!(status, 201, "{body}");
    let pod = body["pod"]["id"].as_str().unwrap().to_string();
    let (status, body) = post(&reviewer, "/pods", serde_json::json!({ "name": "r" }));
    assert_eq!(status, 201, "{body}");
    let rpod = body["pod"]["id"].as_str().unwrap().to_string();
    // A reviewer pod finds no coder work; a token cannot speak for another token's pod.
    let (status, _) = post(
        &reviewer,
        "/assignments/claim",
        serde_json::json!({ "pod": rpod }),
    );
    assert_eq!(status, 204);
    let (status, _) = post(
        &other_coder,
        "/assignments/claim",
        serde_json::json!({ "pod": pod }),
    );
    assert_eq!(status, 403);
    let (status, work) = post(
        &coder,
        "/assignments/claim",
        serde_json::json!({ "pod": pod, "wait_ms": 5000 }),
    );
    assert_eq!(status, 200, "{work}");
    let a = work["assignment"]["id"].as_str().unwrap().to_string();
    // Pod tokens may not do human operations.
    let (status, _) = post(
        &coder,
        &format!("/tickets/{id}/queue"),
        serde_json::json!({}),
    );
    assert_eq!(status, 403);
    let branch = format!("yoi/{id}-say-hello");
    let before = git(repo.path(), &["rev-parse", &branch]);
    let complete = |tok: &str, report: serde_json::Value| {
        post(
            tok,
            &format!("/assignments/{a}/complete"),
            serde_json::json!({ "pod": pod, "fence": 1, "report": report }),
        )
    };
    let (status, body) = complete(
        &coder,
        serde_json::json!({ "outcome": "done", "surprise": 1 }),
    );
    assert_eq!(status, 400, "unknown fields: {body}");
    let (status, body) = complete(
        &coder,
        serde_json::json!({ "outcome": "done", "commit": "0".repeat(40) }),
    );
    assert_eq!(status, 400, "a commit that does not exist: {body}");
    // A commit that touches the ticket files.
    let wt = PathBuf::from(work["workdir"].as_str().unwrap());
    std::fs::create_dir_all(wt.join(format!(".yoi/tickets/{id}"))).unwrap();
    std::fs::write(wt.join(format!(".yoi/tickets/{id}/item.md")), "tampered\n").unwrap();
    git(&wt, &["add", "-A"]);
    git(
        &wt,
        &[
            "-c",
            "user.name=z",
            "-c",
            "user.email=z@z.invalid",
            "commit",
            "-q",
            "-m",
            "tamper",
        ],
    );
    let tampered = git(&wt, &["rev-parse", "HEAD"]);
    let (status, body) = complete(
        &coder,
        serde_json::json!({ "outcome": "done", "commit": tampered }),
    );
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "touches_tickets");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!(".yoi/tickets/{id}")),
        "{body}"
    );
    // Another coder token cannot report for this pod.
    let (status, _) = complete(&other_coder, serde_json::json!({ "outcome": "done" }));
    assert_eq!(status, 403);
    assert_eq!(
        git(repo.path(), &["rev-parse", &branch]),
        before,
        "nothing moved the branch"
    );
    let rows = assignments(&server, &repo, &id);
    assert_eq!(
        rows[0]["status"], "claimed",
        "the claim is untouched: {rows:?}"
    );
}

#[test]
fn a_claim_survives_a_server_restart_and_its_pod_finishes_it_with_the_same_fence() {
    let (repo, _) = workspace("pidfile agent.pid\nsleep 5000\nwrite after.txt restart-proof\\n\ndone finished across a restart\n", 4);
    no_supervised_pods(&repo);
    let id = queued_ticket(&repo);
    let mut server = Server::spawn(&repo);
    let addr = server.addr.clone();
    let mut pod = own_pod(
        &repo,
        "steady",
        &["--once", "--server", &format!("http://{addr}")],
    );
    let wt = repo.path().join(format!(".worktree/{id}-say-hello"));
    until("the agent to start", || wt.join("agent.pid").exists());
    server.terminate();
    assert!(server.wait().success());
    // The same address again; the claim is a row, the pod keeps heartbeating.
    let server = Server::spawn_at(&repo, &addr);
    assert!(pod.wait().unwrap().success());
    let rows: Vec<_> = assignments(&server, &repo, &id)
        .into_iter()
        .filter(|a| a["step"] == "implement")
        .collect();
    assert_eq!(rows.len(), 1, "no second attempt: {rows:?}");
    assert_eq!(
        (rows[0]["status"].as_str(), rows[0]["fence"].as_i64()),
        (Some("completed"), Some(1)),
        "{rows:?}"
    );
    let head = git(repo.path(), &["rev-parse", &format!("yoi/{id}-say-hello")]);
    assert_eq!(
        git(repo.path(), &["show", &format!("{head}:after.txt")]),
        "restart-proof"
    );
}

/// Aider implements a ticket through yoi's `base_url`/`api_key_env` translation; the ledger
/// has its usage and the attempt names the CLI's version.
fn aider_implements_a_ticket(who: RunAs) {
    let (base, seen) = model_endpoint(&[AIDER_REPLY]);
    // The endpoint comes from the profile's `base_url` and `api_key_env`, which yoi turns into
    // what Aider reads; nothing of OPENAI_* is in the pod's environment. The home folder has
    // a git identity: without one Aider writes it into the repository's shared config, which
    // the sandbox keeps closed to agents.
    let run = RealCoder::run(
        "aider",
        &aider_profile(&base),
        who,
        &[("TEST_MODEL_KEY", "sk-yoi-test")],
    );
    assert_eq!(run.on_branch("greeting.txt"), "hello from aider");
    // Aider talked to the endpoint with the frozen brief, and the ledger has its usage.
    let requests = seen.lock().unwrap().clone();
    assert!(!requests.is_empty());
    assert!(
        requests[0].contains("Bearer sk-yoi-test"),
        "the key from api_key_env reached the endpoint: {}",
        requests[0].lines().take(3).collect::<Vec<_>>().join(" | ")
    );
    assert!(
        requests.iter().any(|r| r.contains("hello.txt says hello")),
        "the brief reached the model"
    );
    let cost = run.cost();
    assert_eq!(
        (cost["tokens_in"].as_u64(), cost["tokens_out"].as_u64()),
        (Some(812), Some(41)),
        "{cost}"
    );
    assert!(cost["cost_usd"].as_f64().unwrap() > 0.0, "{cost}");
    let wt = run
        .repo
        .path()
        .join(format!(".worktree/{}-say-hello", run.id));
    assert_eq!(
        git(&wt, &["-c", "safe.directory=*", "status", "--porcelain"]),
        "",
        "aider's droppings stay out of the worktree"
    );
    // The attempt names what did the work: the profile and the CLI's own version.
    let thread = run.thread();
    assert!(thread.contains("agent: \"aider 0.86.2\""), "{thread}");
    assert_eq!(run.owner_in_worktree("greeting.txt"), run.user());
}

#[test]
fn the_real_aider_cli_implements_a_ticket_against_a_local_model_endpoint() {
    aider_implements_a_ticket(RunAs::Tester);
}

#[test]
fn the_real_aider_cli_implements_a_ticket_as_a_normal_user() {
    aider_implements_a_ticket(RunAs::NormalUser);
}

#[test]
fn the_agent_gets_a_token_of_its_own_that_uses_skills_for_its_attempt_and_dies_with_it() {
    let (repo, _) = workspace(
        "write used.txt yes\nkeep-token\napi GET /skills\napi POST /skills/deploy-notes/activate {}\napi POST /assignments/claim {\"pod\": \"x\"}\napi GET /pods\napi POST /skills/deploy-notes/activate {\"assignment\": \"asg-someone-else\"}\ndone used the skill\n",
        30,
    );
    let skill = repo.path().join(".yoi/skills/deploy-notes");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deploy-notes\ndescription: How we deploy.\n---\nDo the steps.\n",
    )
    .unwrap();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    until("the implement attempt to complete", || {
        assignments(&server, &repo, &id)
            .iter()
            .any(|a| a["status"] == "completed" && a["step"] == "implement")
    });
    let done = assignments(&server, &repo, &id)
        .into_iter()
        .find(|a| a["status"] == "completed" && a["step"] == "implement")
        .unwrap();
    let run = repo
        .path()
        .join(".yoi/local/pods/coder-0/runs")
        .join(done["id"].as_str().unwrap());
    // Reads and skills for its own attempt; no pod calls, no one else's assignment.
    let seen = std::fs::read_to_string(run.join("api.seen")).unwrap();
    assert_eq!(
        seen.lines().collect::<Vec<_>>(),
        [
            "200 /skills",
            "200 /skills/deploy-notes/activate",
            "403 /assignments/claim",
            "200 /pods",
            "403 /skills/deploy-notes/activate",
        ],
        "{seen}"
    );
    // The activation is recorded against the attempt, with the pod as who.
    let show = repo.yoi(&["ticket", "show", &id, "--json"]).ok();
    let show: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    let acts = show["attempts"][0]["activations"].as_array().unwrap();
    assert_eq!(acts.len(), 1, "{show}");
    assert_eq!(acts[0]["skill"], "deploy-notes");
    // The token was the agent's own (not the pod's), and it stopped working with the attempt.
    let token = std::fs::read_to_string(run.join("token.seen")).unwrap();
    assert!(token.starts_with("yoia_"), "{token}");
    let pod_log =
        std::fs::read_to_string(repo.path().join(".yoi/local/logs/pods/coder-0.log")).unwrap();
    assert!(
        !pod_log.contains(&token),
        "the token is never logged: {pod_log}"
    );
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(thread.contains("event: assignment ") && !thread.contains(&token));
    let status = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent()
        .get(&format!("http://{}/api/v1/skills", server.addr))
        .header("Authorization", &format!("Bearer {token}"))
        .call()
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(status, 401, "a finished attempt's token is refused");
    // A forged one (another fence) is refused too.
    let forged = token.replacen(".1.", ".2.", 1);
    let status = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent()
        .get(&format!("http://{}/api/v1/skills", server.addr))
        .header("Authorization", &format!("Bearer {forged}"))
        .call()
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(status, 401);
}

#[test]
fn a_pod_run_once_without_work_says_so_with_its_own_exit_status() {
    let (repo, _) = workspace("done nothing to do\n", 30);
    no_supervised_pods(&repo);
    let _server = Server::spawn(&repo);
    let mut pod = own_pod(&repo, "idle", &["--once"]);
    assert_eq!(pod.wait().unwrap().code(), Some(3), "no work: exit 3");
}

#[test]
fn the_pod_logs_its_own_share_of_an_attempt_apart_from_the_agents() {
    let (repo, _) = workspace("run echo hi > hello.txt\nsleep 1000\ndone slept\n", 30);
    no_supervised_pods(&repo);
    let _id = queued_ticket(&repo);
    let _server = Server::spawn(&repo);
    let mut pod = own_pod(&repo, "timed", &["--once"]);
    assert_eq!(pod.wait().unwrap().code(), Some(0));
    let log = std::fs::read_to_string(pod_log(&repo, "timed")).unwrap();
    let timings = common::pods::attempt_timings(&log);
    assert_eq!(timings.len(), 1, "one attempt, one timing line: {log}");
    let (_before, agent, _after) = timings[0];
    // The agent slept a second: that second is the agent's, not the pod's.
    assert!(agent >= 1000, "the agent's run includes its sleep: {log}");
}

#[test]
fn a_failed_attempt_says_why_with_the_end_of_the_agents_stderr_and_no_secret() {
    let (repo, _) = workspace(
        "run echo 'starting up' >&2\nrun echo 'fatal: the model endpoint refused key sk-ant-api03-abcdefghijklmnopqrstu' >&2\nexit 3\n",
        30,
    );
    no_supervised_pods(&repo);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let mut pod = own_pod(&repo, "failing", &["--once"]);
    assert_eq!(pod.wait().unwrap().code(), Some(1));
    let rows = assignments(&server, &repo, &id);
    let failed = rows
        .iter()
        .find(|a| a["status"] == "failed")
        .unwrap_or_else(|| panic!("{rows:?}"));
    let error = failed["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("the agent exited with 3"), "{error}");
    assert!(
        error.contains("fatal: the model endpoint refused key sk-ant-***"),
        "{error}"
    );
    assert!(
        !error.contains("abcdefghijklmnop"),
        "the key is masked: {error}"
    );
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(thread.contains("starting up"), "{thread}");
    assert!(!thread.contains("abcdefghijklmnop"), "{thread}");
}

/// A workspace whose pods end an agent after `secs` without progress.
fn with_stall(repo: &common::Repo, secs: u64) {
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "kill_grace_secs = 2",
        &format!("kill_grace_secs = 2\nstall_secs = {secs}"),
    );
    std::fs::write(&config, text).unwrap();
}

#[test]
fn a_stalled_agent_is_ended_and_its_attempt_fails_as_stalled() {
    let (repo, _) = workspace("grandchild 319\nsleep 600000\n", 30);
    no_supervised_pods(&repo);
    with_stall(&repo, 2);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let mut pod = own_pod(&repo, "stalled", &["--once"]);
    assert_eq!(pod.wait().unwrap().code(), Some(1), "its attempt failed");
    assert!(sleepers("319").is_empty(), "nothing of the agent is left");
    let rows = assignments(&server, &repo, &id);
    let failed = rows.iter().find(|a| a["status"] == "failed").unwrap();
    assert!(
        failed["error"].as_str().unwrap().starts_with("stalled: "),
        "{failed}"
    );
}

#[test]
fn an_agent_that_keeps_printing_is_not_stalled() {
    let (repo, _) = workspace(
        "run for i in 1 2 3 4 5 6 7 8 9 10; do echo working; sleep 0.4; done\nwrite hello.txt hello\\n\ndone kept busy\n",
        30,
    );
    no_supervised_pods(&repo);
    with_stall(&repo, 2);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let mut pod = own_pod(&repo, "busy", &["--once"]);
    assert_eq!(pod.wait().unwrap().code(), Some(0), "its attempt completed");
    let rows = assignments(&server, &repo, &id);
    let implement = rows.iter().find(|a| a["step"] == "implement").unwrap();
    assert_eq!(implement["status"], "completed", "{rows:?}");
}

/// `case`'s CLI implements a ticket in yoi's sandbox, run as `who`, pointed at its endpoint by
/// the profile's `base_url`, `model` and `api_key_env`: the file its tool wrote is on the
/// branch, written by the pod's user; the CLI sent the tool's result back with the key; the
/// attempt names the CLI's version and the ledger has its tokens.
fn implements_a_ticket(case: RealCase, who: RunAs) {
    implements_a_ticket_on(case, who, false)
}

/// [`implements_a_ticket`] with the server on HTTPS (`--tls-self-signed`) when `tls`.
fn implements_a_ticket_on(case: RealCase, who: RunAs, tls: bool) {
    let (base, seen) = (case.endpoint)();
    let model = case
        .model
        .map(|m| format!("model = \"{m}\"\n"))
        .unwrap_or_default();
    let config = format!(
        "program = \"{}\"\nbase_url = \"{base}\"\n{model}api_key_env = \"TEST_MODEL_KEY\"\ntimeout_secs = 300",
        (case.program)()
    );
    let env = [("TEST_MODEL_KEY", "sk-yoi-test")];
    let run = match tls {
        true => RealCoder::run_over_tls(case.agent, &config, who, &env),
        false => RealCoder::run(case.agent, &config, who, &env),
    };
    assert_eq!(
        run.on_branch("greeting.txt"),
        format!("hello from {}", case.agent)
    );
    assert_eq!(
        run.owner_in_worktree("greeting.txt"),
        run.user(),
        "the file is the pod's user's"
    );
    let requests = seen.lock().unwrap().clone();
    assert!(
        requests.iter().any(|r| (case.answered)(r)),
        "{} used its tool and sent the result back, with the key: {:?}",
        case.agent,
        requests
            .iter()
            .map(|r| r.lines().next())
            .collect::<Vec<_>>()
    );
    let thread = run.thread();
    assert!(
        thread.contains(&format!("agent: \"{}", case.agent_label)),
        "{thread}"
    );
    assert!(thread.contains("sandbox: \"landlock v"), "{thread}");
    let cost = run.cost();
    assert!(cost["tokens_in"].as_u64().unwrap_or(0) > 0, "{cost}");
    if let Some((tokens_in, tokens_out)) = case.tokens {
        assert_eq!(
            (cost["tokens_in"].as_u64(), cost["tokens_out"].as_u64()),
            (Some(tokens_in), Some(tokens_out)),
            "{cost}"
        );
    }
}

#[test]
fn the_real_claude_code_implements_a_ticket_in_the_sandbox_against_a_local_endpoint() {
    implements_a_ticket(claude_case(), RunAs::Tester);
}

#[test]
fn the_real_claude_code_implements_a_ticket_as_a_normal_user() {
    implements_a_ticket(claude_case(), RunAs::NormalUser);
}

/// On a server with a certificate of its own (`yoi serve --tls-self-signed`, as on a build box
/// reached over the network), Claude Code still reaches yoi's MCP server at `$YOI_SERVER/mcp`
/// with its own TLS and normal verification: the case's check requires the model to be offered
/// `mcp__yoi__my_ticket` and `mcp__yoi__ask_question`, which Claude Code lists only once it has
/// connected to the server. Nothing here tells Node to trust the certificate but what the pod
/// hands the agent.
#[test]
fn the_real_claude_code_reaches_the_mcp_server_of_a_self_signed_https_server() {
    implements_a_ticket_on(claude_case(), RunAs::Tester, true);
}

#[test]
fn the_real_codex_implements_a_ticket_through_its_shell_tool_in_the_sandbox() {
    implements_a_ticket(codex_case(), RunAs::Tester);
}

#[test]
fn the_real_codex_implements_a_ticket_as_a_normal_user() {
    implements_a_ticket(codex_case(), RunAs::NormalUser);
}

#[test]
fn the_real_gemini_cli_implements_a_ticket_in_the_sandbox_against_a_local_endpoint() {
    implements_a_ticket(gemini_case(), RunAs::Tester);
}

#[test]
fn the_real_gemini_cli_implements_a_ticket_as_a_normal_user() {
    implements_a_ticket(gemini_case(), RunAs::NormalUser);
}

/// Without a `base_url` Gemini CLI runs with the person's own `~/.gemini` (their login, their
/// settings), which yoi does not write: the pod hands it yoi's MCP server in a home of the
/// run's own that mirrors that folder. The person's endpoint and key come from their own
/// configuration here (the profile's `env` and the pod's environment), as they would for a
/// person with a gateway of their own.
#[test]
fn the_real_gemini_cli_without_a_base_url_gets_the_mcp_server_beside_the_persons_settings() {
    let (base, seen) = (gemini_case().endpoint)();
    let settings =
        r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}, "ui": {"hideTips": true}}"#;
    let run = RealCoder::run_at_home(
        "gemini",
        &format!(
            "program = \"{}\"\nmodel = \"gemini-2.5-pro\"\ntimeout_secs = 300\nenv = {{ GOOGLE_GEMINI_BASE_URL = \"{base}\" }}",
            gemini()
        ),
        RunAs::Tester,
        &[("GEMINI_API_KEY", "sk-yoi-test")],
        &[
            (".gemini/settings.json", settings),
            (".gemini/installation_id", "the-persons-install"),
        ],
    );
    assert_eq!(run.on_branch("greeting.txt"), "hello from gemini");
    let requests = seen.lock().unwrap().clone();
    assert!(
        requests.iter().any(|r| (gemini_case().answered)(r)),
        "Gemini CLI was offered yoi's MCP tools and used its own: {:?}",
        requests
            .iter()
            .map(|r| r.lines().next())
            .collect::<Vec<_>>()
    );
    // The person's own settings are as they were.
    assert_eq!(
        std::fs::read_to_string(run.home.path().join(".gemini/settings.json")).unwrap(),
        settings
    );
}

#[test]
fn the_real_opencode_implements_a_ticket_in_the_sandbox_against_a_local_endpoint() {
    implements_a_ticket(opencode_case(), RunAs::Tester);
}

#[test]
fn the_real_opencode_implements_a_ticket_as_a_normal_user() {
    implements_a_ticket(opencode_case(), RunAs::NormalUser);
}

/// `case`'s CLI reviews a ticket that the scripted agent implemented, as the supervised
/// reviewer, with the profile's read-only argv in yoi's sandbox: the model reads the change
/// through the CLI's own tool and approves, the review names the CLI, and the ticket merges.
fn reviews_and_merges(case: RealCase) {
    let (base, seen) = (case.endpoint)();
    let (repo, _) = workspace(
        "write hello.txt hello from the coder\\n\ndone added hello.txt\n",
        30,
    );
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[pods.agent]\ncoder = \"fake\"\n",
        &format!(
            "[pods.agent]\ncoder = \"fake\"\nreviewer = \"{}\"\n",
            case.agent
        ),
    );
    let model = case
        .model
        .map(|m| format!("model = \"{m}\"\n"))
        .unwrap_or_default();
    std::fs::write(
        &config,
        format!(
            "{text}\n[agents.{}]\nprogram = \"{}\"\nbase_url = \"{base}\"\n{model}api_key_env = \"TEST_MODEL_KEY\"\ntimeout_secs = 300\n",
            case.agent,
            (case.program)()
        ),
    )
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    // The server's reflogs need git's identity, which lives in the home folder.
    std::fs::write(
        home.path().join(".gitconfig"),
        "[user]\n\tname = yoi test\n\temail = test@yoi.invalid\n",
    )
    .unwrap();
    let id = queued_ticket(&repo);
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
            "not merged: {:?}\n{}",
            assignments(&server, &repo, &id),
            run_outputs(&repo)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let rows = assignments(&server, &repo, &id);
    let review = rows.iter().find(|a| a["step"] == "review").unwrap();
    let report: serde_json::Value =
        serde_json::from_str(review["result"].as_str().unwrap()).unwrap();
    assert_eq!(report["verdict"], "approve", "{report}");
    assert!(
        report["agent"]
            .as_str()
            .unwrap_or_default()
            .starts_with(case.agent_label),
        "{report}"
    );
    let requests = seen.lock().unwrap().clone();
    assert!(
        requests.iter().any(|r| (case.answered)(r)),
        "{} read the change through its tool and sent the result back, with the key: {:?}",
        case.agent,
        requests
            .iter()
            .map(|r| r.lines().next())
            .collect::<Vec<_>>()
    );
}

/// What a request carries after `marker` (where the tool's result starts); empty without it.
fn tool_result<'a>(request: &'a str, marker: &str) -> &'a str {
    request.split_once(marker).map_or("", |(_, rest)| rest)
}

const APPROVE: &str = "The greeting is there, as the brief asks.\n\nYOI-RESULT: done\nYOI-SUMMARY: reviewed the greeting\nYOI-VERDICT: approve\n";

#[test]
fn the_real_codex_reviews_a_ticket_in_the_sandbox_against_a_local_endpoint_and_it_merges() {
    // The reviewer looks at the change through its shell tool, as a reviewer does.
    reviews_and_merges(RealCase {
        endpoint: || responses_calling("git show --stat HEAD", APPROVE),
        answered: |r| {
            tool_result(r, "function_call_output").contains("Process exited with code 0")
                && tool_result(r, "function_call_output").contains("hello.txt")
                && r.contains("Bearer sk-yoi-test")
        },
        ..codex_case()
    });
}

#[test]
fn the_real_gemini_cli_reviews_a_ticket_in_plan_mode_and_it_merges() {
    reviews_and_merges(RealCase {
        endpoint: || {
            gemini_endpoint(
                |folder| {
                    let path = format!("{folder}/hello.txt");
                    ("read_file", serde_json::json!({ "file_path": path }))
                },
                APPROVE,
            )
        },
        answered: |r| {
            tool_result(r, "functionResponse").contains("hello from the coder")
                && r.to_ascii_lowercase()
                    .contains("x-goog-api-key: sk-yoi-test")
        },
        ..gemini_case()
    });
}

#[test]
fn the_real_opencode_reviews_a_ticket_as_its_plan_agent_and_it_merges() {
    reviews_and_merges(RealCase {
        endpoint: || {
            chat_tool_endpoint(
                |folder| {
                    let path = format!("{folder}/hello.txt");
                    ("read", serde_json::json!({ "filePath": path }))
                },
                APPROVE,
            )
        },
        answered: |r| {
            tool_result(r, "\"role\":\"tool\"").contains("hello from the coder")
                && r.contains("Bearer sk-yoi-test")
        },
        ..opencode_case()
    });
}

/// `yoi agent check` shows what the endpoint becomes for each CLI — the arguments and the
/// names of the variables, the files' included — and never the key.
#[test]
fn agent_check_names_what_an_endpoint_becomes_without_its_key() {
    let repo = common::Repo::init();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let endpoint = "program = \"/bin/true\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m-1\"\napi_key_env = \"TEST_MODEL_KEY\"\n";
    std::fs::write(
        &config,
        format!("{text}\n[agents.gemini]\n{endpoint}\n[agents.opencode]\n{endpoint}\n[agents.codex]\n{endpoint}"),
    )
    .unwrap();
    let check = |agent: &str| {
        let out = common::run_yoi_env(
            repo.path(),
            &["agent", "check", agent],
            &[("TEST_MODEL_KEY", "sk-secret-value")],
        );
        assert!(!out.stdout.contains("sk-secret-value"), "{}", out.stdout);
        out.stdout
            .lines()
            .find(|l| l.starts_with("endpoint: "))
            .unwrap_or_else(|| panic!("no endpoint line: {}", out.stdout))
            .to_string()
    };
    assert_eq!(
        check("gemini"),
        "endpoint: arguments [], environment GOOGLE_GEMINI_BASE_URL, GEMINI_API_KEY, GEMINI_CLI_HOME"
    );
    assert_eq!(
        check("opencode"),
        "endpoint: arguments [], environment YOI_OPENCODE_API_KEY, OPENCODE_CONFIG"
    );
    assert!(
        check("codex").contains("-c model_provider=\"yoi\""),
        "Codex gets its provider as -c overrides"
    );
}

/// `yoi agent check` says whether and how each CLI is handed yoi's MCP server: the four that
/// speak MCP are (Gemini CLI in a home of the run's own, with a `base_url` or without), Aider
/// never.
#[test]
fn agent_check_says_how_each_agent_gets_the_mcp_server() {
    let repo = common::Repo::init();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}\n[agents.claude]\nprogram = \"/bin/true\"\n[agents.codex]\nprogram = \"/bin/true\"\n[agents.opencode]\nprogram = \"/bin/true\"\n[agents.aider]\nprogram = \"/bin/true\"\n[agents.gemini]\nprogram = \"/bin/true\"\n[agents.gemini-local]\nprogram = \"/bin/true\"\nendpoint = \"gemini\"\nbase_url = \"http://127.0.0.1:9\"\n"
        ),
    )
    .unwrap();
    let check = |agent: &str| {
        let out = common::run_yoi(repo.path(), &["agent", "check", agent, "--json"], None);
        let v: serde_json::Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{agent}: {e}: {}", out.stdout));
        (
            v["mcp"].as_bool().unwrap(),
            v["mcp_detail"].as_str().unwrap().to_string(),
        )
    };
    for (agent, how) in [
        ("claude", "in its argv"),
        ("codex", "-c mcp_servers.yoi.*"),
        ("opencode", "in its configuration variable"),
        ("gemini-local", "settings of the home"),
    ] {
        let (handed, detail) = check(agent);
        assert!(handed && detail.contains(how), "{agent}: {detail}");
    }
    let (handed, detail) = check("gemini");
    assert!(handed && detail.contains("mirrors ~/.gemini"), "{detail}");
    let (handed, detail) = check("aider");
    assert!(!handed && detail.contains("trailer lines"), "{detail}");
}
