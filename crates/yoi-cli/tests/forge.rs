//! Pull requests end to end with real processes (docs/forge.md): `yoi serve` supervises a coder,
//! the built-in verifier and a reviewer pod running the scripted `yoi-fake-agent`; the ticket
//! ends in a pull request on the fake GitHub (every request checked against GitHub's OpenAPI
//! description, found through `YOI_GITHUB_OPENAPI`; pushes to a real `git http-backend`). The
//! server is killed with SIGKILL between the push and the pull request's creation, and between
//! the checks and the merge, each time while the fake holds the very request — which it then
//! carries out, so the answer is lost too. Webhooks are dropped, repeated and reordered. Each
//! run ends as a clean one does: one pull request, merged once with exactly the head its
//! checks were for, the ticket done.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::pods::*;
use common::server::Server;
use common::Repo;
use yoi_testkit::forge::{FakeGitHub, Fault, Webhook};

const TOKEN: &str = "ghp_end_to_end_token";
const SECRET: &str = "end-to-end-webhook-secret";

fn private(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A workspace whose tickets end in a pull request on a fake GitHub seeded with its `main`.
fn forge_workspace() -> (Repo, FakeGitHub) {
    let repo = workspace_with_reviewer(
        "write hello.txt hello\\n\ndone added hello.txt\n",
        "say Looks right.\ndone read the change\nsay YOI-VERDICT: approve\n",
    );
    let fake = FakeGitHub::start("acme", "widgets", TOKEN, Some(repo.path()));
    git(repo.path(), &["remote", "add", "origin", &fake.git_url()]);
    let local = repo.path().join(".yoi/local");
    std::fs::create_dir_all(&local).unwrap();
    private(&local.join("github-token"), TOKEN);
    private(&local.join("webhook-secret"), SECRET);
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = format!(
        "{text}\n[forge]\nrepo = \"acme/widgets\"\napi_url = \"{}\"\ntoken_file = \".yoi/local/github-token\"\nwebhook_secret_file = \".yoi/local/webhook-secret\"\nmode = \"pr\"\npoll_secs = 1\n",
        fake.api_url()
    );
    std::fs::write(&config, text).unwrap();
    (repo, fake)
}

/// POST a webhook to the server, signed; the status and the answer's `status`.
fn deliver(server: &Server, w: &Webhook) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let sig = format!(
        "sha256={}",
        yoi_core::hmac_sha256_hex(SECRET.as_bytes(), &w.body)
    );
    let mut resp = agent
        .post(&format!("http://{}/forge/github/events", server.addr))
        .header("X-GitHub-Event", &w.event)
        .header("X-GitHub-Delivery", &w.delivery)
        .header("X-Hub-Signature-256", &sig)
        .header("Content-Type", "application/json")
        .send(&w.body[..])
        .unwrap();
    let body: serde_json::Value = resp.body_mut().read_json().unwrap();
    (
        resp.status().as_u16(),
        body["status"].as_str().unwrap_or_default().to_string(),
    )
}

fn forge_actions(repo: &Repo, id: &str) -> Vec<String> {
    let thread = std::fs::read_to_string(repo.ticket_dir(id).join("thread.md")).unwrap();
    thread
        .lines()
        .filter(|l| l.starts_with("<!-- event: forge_pr "))
        .filter_map(|l| {
            l.split(" action: ")
                .nth(1)
                .map(|r| r.split_whitespace().next().unwrap_or_default().to_string())
        })
        .collect()
}

/// One pull request, merged once with its head, the ticket done, `main` on the forge at the
/// merge — what every run below must end in.
fn assert_clean_end(repo: &Repo, fake: &FakeGitHub, id: &str) {
    let pulls = fake.pulls();
    assert_eq!(pulls.len(), 1, "one pull request: {pulls:?}");
    let pr = &pulls[0];
    assert!(pr.merged, "{pr:?}");
    let merges: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "PUT" && r.path.ends_with("/merge"))
        .collect();
    assert!(!merges.is_empty());
    for m in &merges {
        assert_eq!(
            m.body["sha"],
            pr.head_sha.as_str(),
            "merged only with the head"
        );
    }
    assert_eq!(fake.branch("main"), pr.merge_sha);
    let branch = git(repo.path(), &["rev-parse", &pr.head]);
    assert_eq!(
        branch, pr.head_sha,
        "the head merged is the ticket's approved commit"
    );
    assert_eq!(state_of(repo, id), "done");
    let actions = forge_actions(repo, id);
    assert_eq!(
        actions.iter().filter(|a| *a == "opened").count(),
        1,
        "{actions:?}"
    );
    assert_eq!(
        actions.iter().filter(|a| *a == "merged").count(),
        1,
        "{actions:?}"
    );
    let thread = std::fs::read_to_string(repo.ticket_dir(id).join("thread.md")).unwrap();
    assert!(!thread.contains(TOKEN));
    // `yoi forge status` says the same, from the thread and the kept check results.
    let out = repo.yoi(&["forge", "status", id, "--json"]).ok();
    let st: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(st["state"], "merged");
    assert_eq!(st["badge"], "merged");
    assert_eq!(st["number"], pr.number);
    assert_eq!(st["remote_head"], pr.head_sha.as_str());
    assert_eq!(st["merged_sha"].as_str(), pr.merge_sha.as_deref());
    let out = repo.yoi(&["forge", "status", id]).ok();
    assert!(
        out.stdout
            .contains(&format!("pull request #{} (merged) · PR merged", pr.number)),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains(&format!("head {}", pr.head_sha)));
    assert!(!out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN));
    fake.assert_conforming();
}

#[test]
fn a_server_killed_between_the_push_and_the_pull_request_opens_exactly_one() {
    let (repo, fake) = forge_workspace();
    // The fake takes the pull request's creation and holds it: nothing created yet.
    fake.fault("POST", "/repos/acme/widgets/pulls", Fault::Hold);
    let id = queued_ticket(&repo);
    let mut server = Server::spawn(&repo);
    fake.wait_held();
    // The branch landed before the pull request was asked for.
    let branch = format!("yoi/{id}-say-hello");
    let head = git(repo.path(), &["rev-parse", &branch]);
    assert_eq!(fake.branch(&branch).as_deref(), Some(head.as_str()));
    assert!(fake.pulls().is_empty());
    server.kill();
    // Now the forge carries the request out: the pull request exists, its answer is lost.
    fake.release();
    until("the held pull request to be created", || {
        fake.pulls().len() == 1
    });
    let _server = Server::spawn(&repo);
    until("the ticket to be done", || state_of(&repo, &id) == "done");
    assert_clean_end(&repo, &fake, &id);
    // The restarted server found the pull request instead of opening a second.
    let opens = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pulls"))
        .count();
    assert_eq!(opens, 1);
}

#[test]
fn a_server_killed_between_the_checks_and_the_merge_merges_once() {
    let (repo, fake) = forge_workspace();
    fake.set_ruleset_checks("main", &["ci"]);
    fake.fault("PUT", "/merge", Fault::Hold);
    let id = queued_ticket(&repo);
    let mut server = Server::spawn(&repo);
    until("the pull request to be opened", || fake.pulls().len() == 1);
    let head = fake.pulls()[0].head_sha.clone();
    // CI reports for the head; its webhook wakes the server (the poll would, a second later).
    fake.add_check_run(&head, "ci", Some("success"));
    for w in fake.take_webhooks() {
        assert_eq!(deliver(&server, &w), (202, "accepted".to_string()));
    }
    fake.wait_held();
    server.kill();
    // The forge merges; the answer never reaches yoi.
    fake.release();
    until("the held merge to be carried out", || {
        fake.pulls()[0].merged
    });
    let _server = Server::spawn(&repo);
    until("the ticket to be done", || state_of(&repo, &id) == "done");
    assert_clean_end(&repo, &fake, &id);
    let merges = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "PUT" && r.path.ends_with("/merge"))
        .count();
    assert_eq!(
        merges, 1,
        "the restarted server saw the merge and did not merge again"
    );
}

#[test]
fn dropped_repeated_and_reordered_webhooks_end_as_a_clean_run() {
    let (repo, fake) = forge_workspace();
    fake.set_ruleset_checks("main", &["ci", "lint"]);
    let id = queued_ticket(&repo);
    let mut server = Server::spawn(&repo);
    until("the pull request to be opened", || fake.pulls().len() == 1);
    let head = fake.pulls()[0].head_sha.clone();
    // `lint` succeeds at the head; its webhook is dropped (never delivered): the poll finds it.
    fake.add_status(&head, "lint", "success");
    assert_eq!(fake.take_webhooks().len(), 1);
    // `ci` starts and succeeds: its webhooks arrive reordered (the result first, the older
    // "in progress" after it) and each twice.
    fake.add_check_run(&head, "ci", None);
    fake.add_check_run(&head, "ci", Some("success"));
    let mut hooks = fake.take_webhooks();
    assert_eq!(hooks.len(), 2);
    hooks.reverse();
    for w in &hooks {
        assert_eq!(deliver(&server, w), (202, "accepted".to_string()));
        assert_eq!(deliver(&server, w), (200, "duplicate".to_string()));
    }
    until("the ticket to be done", || state_of(&repo, &id) == "done");
    // The checks table holds the newer result for the head, never the late "in progress".
    let (status, st) = server.get(&repo, &format!("/tickets/{id}/forge"));
    assert_eq!(status, 200, "{st}");
    let table: Vec<(String, String, String)> = st["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["conclusion"].as_str().unwrap().to_string(),
                c["sha"].as_str().unwrap().to_string(),
            )
        })
        .filter(|(n, _, _)| !n.starts_with("yoi/"))
        .collect();
    assert_eq!(
        table,
        [
            ("ci".to_string(), "success".to_string(), head.clone()),
            ("lint".to_string(), "success".to_string(), head.clone()),
        ],
        "{st}"
    );
    assert_eq!(st["badge"], "merged");
    // The ticket page shows the same table, and the board card the badge.
    let page = common::dashboard::Dashboard::login(&repo).page(&format!("/tickets/{id}"));
    assert!(page.contains(r#"<section id="forge""#), "{page}");
    assert!(
        page.contains("<caption>Checks at the head</caption>"),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            r#"<tr data-conclusion="success"><td>ci</td><td>success</td><td><code>{head}</code></td>"#
        )),
        "{page}"
    );
    assert!(
        page.contains(r#"<span class="badge ok">PR merged</span>"#),
        "{page}"
    );
    let board = common::dashboard::Dashboard::login(&repo).page("/");
    assert!(
        board.contains(r#"<li class="badge ok">PR merged</li>"#),
        "{board}"
    );
    // A redelivery after a restart is still known.
    server.kill();
    let server = Server::spawn(&repo);
    for w in &hooks {
        assert_eq!(deliver(&server, w), (200, "duplicate".to_string()));
    }
    assert_clean_end(&repo, &fake, &id);
}

#[test]
fn forge_import_sync_and_status_from_the_command_line() {
    let (repo, fake) = forge_workspace();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}import_label = \"yoi\"\n")).unwrap();
    fake.set_permission("maintainer", "write");
    fake.set_permission("drive-by", "read");
    let wanted = fake.add_issue("Greet in French", "Say bonjour.", "reporter");
    fake.label_issue(wanted, "yoi", "maintainer");
    let unwanted = fake.add_issue("Delete everything", "Please.", "drive-by");
    fake.label_issue(unwanted, "yoi", "drive-by");
    // Only the issue a collaborator labelled becomes a ticket.
    let out = repo.yoi(&["forge", "import", "--json"]).ok();
    let imported: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(imported["imported"]["created"].as_array().unwrap().len(), 1);
    assert_eq!(imported["imported"]["created"][0][0], wanted);
    assert_eq!(
        imported["imported"]["refused"],
        serde_json::json!([[unwanted, "drive-by"]])
    );
    assert!(imported.get("pass").is_none());
    let id = imported["imported"]["created"][0][1]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(state_of(&repo, &id), "planning");
    // Again: nothing new; the refusal is said in words.
    let out = repo.yoi(&["forge", "import"]).ok();
    assert!(!out.stdout.contains("imported issue"), "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!(
            "issue #{unwanted}: labelled by drive-by, who has no write access; not imported"
        )),
        "{}",
        out.stdout
    );
    // An edit of the issue is said, and recorded in the thread, not in the brief.
    fake.edit_issue(wanted, "Greet in French", "Say bonjour, please.");
    let out = repo.yoi(&["forge", "import"]).ok();
    assert!(
        out.stdout.contains(&format!(
            "issue #{wanted} was edited: its text is recorded in {id}'s thread (the brief is not changed)"
        )),
        "{}",
        out.stdout
    );
    // A pass now: no pull request is pending, so it only imports (nothing new).
    let out = repo.yoi(&["forge", "sync", "--json"]).ok();
    let pass: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(pass["pass"]["opened"], serde_json::json!([]));
    assert_eq!(pass["imported"]["created"], serde_json::json!([]));
    // The imported ticket has no pull request yet.
    let out = repo.yoi(&["forge", "status", &id]).ok();
    assert_eq!(out.stdout, format!("{id}: no pull request yet\n"));
    let out = repo.yoi(&["forge", "status", &id, "--json"]).ok();
    let st: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(st["badge"], "none");
    assert_eq!(st["events"][0]["action"], "issue");
    let out = repo.yoi(&["forge", "status", "NOPE1234"]);
    assert_eq!(out.code, 1, "{out:?}");
    // A workspace without [forge] says how to set one up.
    let plain = Repo::init();
    let out = plain.yoi(&["forge", "sync"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("no [forge] section"), "{}", out.stderr);
    fake.assert_conforming();
}

/// `yoi forge sync` and `yoi forge import` print the same words and exit with the same status
/// through a running server (`POST /api/v1/forge/sync`) as on the files without one, and through
/// the server the pass is the server's: it runs with the credential the server read at start,
/// so the command needs none (the token file is gone by then).
#[test]
fn forge_sync_through_a_server_prints_what_it_prints_without_one() {
    let script = |with_server: bool| -> Vec<String> {
        let (repo, fake) = forge_workspace();
        let config = repo.path().join(".yoi/workspace.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        let text = text.replace("poll_secs = 1\n", "poll_secs = 3600\n");
        std::fs::write(&config, format!("{text}import_label = \"yoi\"\n")).unwrap();
        fake.set_permission("maintainer", "write");
        fake.set_permission("drive-by", "read");
        let server = with_server.then(|| {
            let s = Server::start(&repo);
            // The driver's first pass (at start) has looked for labelled issues.
            until("the server's first forge pass", || {
                fake.requests().iter().any(|r| r.path.ends_with("/issues"))
            });
            std::fs::remove_file(repo.path().join(".yoi/local/github-token")).unwrap();
            s
        });
        let mut outs = vec![repo.yoi(&["forge", "sync"]).normalized()];
        let wanted = fake.add_issue("Greet in French", "Say bonjour.", "reporter");
        fake.label_issue(wanted, "yoi", "maintainer");
        let unwanted = fake.add_issue("Delete everything", "Please.", "drive-by");
        fake.label_issue(unwanted, "yoi", "drive-by");
        outs.push(repo.yoi(&["forge", "import"]).normalized());
        outs.push(repo.yoi(&["forge", "sync", "--json"]).normalized());
        outs.push(repo.yoi(&["forge", "import", "--json"]).normalized());
        if with_server {
            // Without a server the command would need the token file, which is gone.
            let local = repo.yoi(&["--local", "forge", "sync"]);
            assert_eq!(local.code, 1, "{local:?}");
            assert!(local.stderr.contains("[forge]"), "{}", local.stderr);
        }
        drop(server);
        fake.assert_conforming();
        outs
    };
    let files = script(false);
    let served = script(true);
    assert_eq!(files, served);
    assert!(files[0].contains("nothing to do"), "{}", files[0]);
    assert!(files[1].contains("imported issue #"), "{}", files[1]);
    assert!(files[1].contains("who has no write access"), "{}", files[1]);

    // Refusals read the same too: no [forge] in the workspace.
    let refused = |with_server: bool| {
        let plain = Repo::init();
        let _server = with_server.then(|| Server::start(&plain));
        let out = plain.yoi(&["forge", "sync"]);
        assert_eq!(out.code, 1, "{out:?}");
        out.normalized()
    };
    assert_eq!(refused(false), refused(true));
}

/// Webhook accepted → thread event (BENCHMARKS.md): with polling an hour apart, only the
/// webhook can make the server look. For each of four tickets in turn, CI's `check_run`
/// success for the pull request's head is delivered, and the time until the ticket's thread
/// holds the `merged` event is taken (the check result kept, a pass of the driver, the gate,
/// the merge call, the thread written). The issue asks p95 ≤ 1 s; the test asserts that the
/// webhook alone, with no poll due, brings every ticket to `merged`.
#[test]
fn a_webhook_reaches_the_thread_without_waiting_for_the_poll() {
    use std::time::{Duration, Instant};
    const N: usize = 4;
    let (repo, fake) = forge_workspace();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("poll_secs = 1\n", "poll_secs = 3600\n"),
    )
    .unwrap();
    fake.set_ruleset_checks("main", &["ci"]);
    let ids: Vec<String> = (0..N)
        .map(|i| {
            let id = repo.create(&format!("Say hello {i}"), BRIEF);
            repo.yoi(&["ticket", "mark-ready", &id]).ok();
            repo.yoi(&["ticket", "queue", &id]).ok();
            id
        })
        .collect();
    let server = Server::spawn(&repo);
    let ping = |n: usize| Webhook {
        event: "ping".into(),
        delivery: format!("ping-{n}"),
        body: br#"{"zen":"Keep it logically awesome.","hook_id":1}"#.to_vec(),
    };
    let mut pings = 0;
    let mut times = Vec::new();
    for k in 0..N {
        // A ping makes the driver look now: the next verified ticket's pull request opens.
        let deadline = Instant::now() + Duration::from_secs(120);
        while fake.pulls().len() <= k {
            assert!(Instant::now() < deadline, "pull request {k} never opened");
            pings += 1;
            deliver(&server, &ping(pings));
            std::thread::sleep(Duration::from_millis(300));
        }
        let pr = fake.pulls()[k].clone();
        let id = ids
            .iter()
            .find(|id| pr.head.contains(id.as_str()))
            .unwrap()
            .clone();
        fake.take_webhooks();
        fake.add_check_run(&pr.head_sha, "ci", Some("success"));
        let hooks = fake.take_webhooks();
        let thread = repo.ticket_dir(&id).join("thread.md");
        let started = Instant::now();
        for w in &hooks {
            assert_eq!(deliver(&server, w), (202, "accepted".to_string()));
        }
        while !std::fs::read_to_string(&thread)
            .unwrap()
            .contains("action: merged")
        {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no merge for {id}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        times.push(started.elapsed());
    }
    times.sort();
    let p95 = times[(times.len() * 95).div_ceil(100) - 1];
    // The figure is BENCHMARKS.md's (the issue asks p95 ≤ 1 s); a test asserts outcomes, not
    // timings, so it is printed, never asserted.
    eprintln!("webhook accepted → thread event, {N} tickets: {times:?}; p95 {p95:?}");
    for id in &ids {
        until("the ticket to be done", || state_of(&repo, id) == "done");
    }
    drop(server);
    fake.assert_conforming();
}
