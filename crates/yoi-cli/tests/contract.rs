//! An agent that forgets its trailer lines (docs/pods.md, "A missing contract"), with real
//! processes: the scripted agent and the real Aider CLI against a scripted model endpoint. The
//! pod asks once in a follow-up turn run in the same sandbox, environment and worktree, and
//! counts its usage; without an answer a lenient coder keeps the change it made (flagged
//! `contract_missing`), a strict one fails with the reason, a coder that changed nothing fails,
//! and a reviewer is never approved without its verdict. A coder that commits and then runs past
//! its timeout hands its commits to the next attempt.

mod common;

use common::pods::*;
use common::server::Server;
use common::Repo;

/// Let the fake coder answer a follow-up turn by running `script`, and add `extra` (TOML
/// lines) to its profile.
fn coder_follows_up_with(repo: &Repo, script: &str, extra: &str) {
    let path = repo.side.path().join("follow-up-script.txt");
    std::fs::write(&path, script).unwrap();
    set_profile(
        repo,
        "fake",
        &format!(
            "follow_up = [\"{{program}}\", \"{}\"]\n{extra}",
            path.display()
        ),
    );
}

/// Add `lines` to the `[agents.NAME]` table of the workspace's config.
fn set_profile(repo: &Repo, name: &str, lines: &str) {
    let config = repo.path().join(".yoi/workspace.toml");
    let header = format!("[agents.{name}]\n");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains(&header), "{text}");
    std::fs::write(&config, text.replace(&header, &format!("{header}{lines}"))).unwrap();
}

/// The header line of the `assignment` event of `step`'s attempt `attempt`.
fn attempt_event(repo: &Repo, id: &str, step: &str, attempt: u32) -> String {
    let thread = std::fs::read_to_string(repo.ticket_dir(id).join("thread.md")).unwrap();
    thread
        .lines()
        .find(|l| {
            l.contains("event: assignment ")
                && l.contains(&format!("step: {step} "))
                && l.contains(&format!("attempt: {attempt} "))
        })
        .unwrap_or_else(|| panic!("no event of {step} attempt {attempt}: {thread}"))
        .to_string()
}

fn thread_of(repo: &Repo, id: &str) -> String {
    std::fs::read_to_string(repo.ticket_dir(id).join("thread.md")).unwrap()
}

/// The run folder of `pod`'s attempt `row`.
fn run_dir(repo: &Repo, pod: &str, row: &serde_json::Value) -> std::path::PathBuf {
    repo.path()
        .join(".yoi/local/pods")
        .join(pod)
        .join("runs")
        .join(row["id"].as_str().unwrap())
}

/// Run one coder attempt with a pod of the test's own and return the implement rows. The
/// pod's exit status tells how its attempt went: 0 completed, 1 failed (docs/cli.md).
fn one_coder_attempt(repo: &Repo, server: &Server, id: &str, name: &str) -> Vec<serde_json::Value> {
    let mut pod = own_pod(repo, name, &["--once"]);
    let status = pod.wait().unwrap();
    let rows: Vec<serde_json::Value> = assignments(server, repo, id)
        .into_iter()
        .filter(|a| a["step"] == "implement")
        .collect();
    let ran = rows
        .iter()
        .filter(|a| a["status"] == "completed" || a["status"] == "failed")
        .max_by_key(|a| a["attempt"].as_i64())
        .expect("the pod ran an attempt");
    let want = if ran["status"] == "completed" { 0 } else { 1 };
    assert_eq!(
        status.code(),
        Some(want),
        "{ran}: {}",
        std::fs::read_to_string(pod_log(repo, name)).unwrap_or_default()
    );
    rows
}

fn first_attempt(rows: &[serde_json::Value]) -> serde_json::Value {
    rows.iter()
        .find(|a| a["attempt"] == 1)
        .cloned()
        .unwrap_or_else(|| panic!("no attempt 1: {rows:?}"))
}

fn tokens(repo: &Repo, id: &str) -> (Option<u64>, Option<u64>) {
    let cost = repo.yoi(&["ticket", "cost", id, "--json"]).ok();
    let cost: serde_json::Value = serde_json::from_str(&cost.stdout).unwrap();
    (cost["tokens_in"].as_u64(), cost["tokens_out"].as_u64())
}

#[test]
fn a_coder_that_forgets_its_trailer_is_asked_once_in_the_same_sandbox_and_its_answer_counts() {
    let (repo, _) = workspace(
        "write hello.txt hello\\n\nsay Tokens: 1k sent, 100 received.\nsay I wrote hello.txt.\n",
        30,
    );
    no_supervised_pods(&repo);
    // The follow-up runs where the first turn did (its file is there), with the attempt's
    // environment and object folder, and in its sandbox (the admin token stays unreadable).
    coder_follows_up_with(
        &repo,
        "run test -f hello.txt && test \"$YOI_STEP\" = implement && test -n \"$YOI_TOKEN\" && test -n \"$GIT_OBJECT_DIRECTORY\" && ! cat ../../.yoi/local/admin.token >/dev/null 2>&1\nsay Tokens: 200 sent, 20 received.\ndone added hello.txt\n",
        "",
    );
    assert!(repo.path().join(".yoi/local/admin.token").is_file());
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let rows = one_coder_attempt(&repo, &server, &id, "forgetful");
    let first = first_attempt(&rows);
    assert_eq!(
        first["status"],
        "completed",
        "{first}\n{}",
        run_outputs(&repo)
    );

    // The answer counts: its summary, no flag; the attempt says it was asked.
    let event = attempt_event(&repo, &id, "implement", 1);
    assert!(event.contains("outcome: completed"), "{event}");
    assert!(event.contains("follow_up: true"), "{event}");
    assert!(!event.contains("contract_missing"), "{event}");
    assert!(
        thread_of(&repo, &id).contains("Summary: added hello.txt"),
        "{}",
        thread_of(&repo, &id)
    );
    // Asked once, with the question on stdin, in the same run folder.
    let run = run_dir(&repo, "forgetful", &first);
    let question = std::fs::read_to_string(run.join("follow-up.seen")).unwrap();
    assert!(
        question.contains("YOI-RESULT: done (or blocked, or failed)")
            && !question.contains("YOI-VERDICT"),
        "{question}"
    );
    assert!(run.join("follow-up.stdout.log").is_file());
    // Both turns' usage is the attempt's.
    assert_eq!(tokens(&repo, &id), (Some(1200), Some(120)));
    // The first turn's change is on the branch.
    let head = git(repo.path(), &["rev-parse", &format!("yoi/{id}-say-hello")]);
    assert_eq!(
        git(repo.path(), &["show", &format!("{head}:hello.txt")]),
        "hello"
    );
}

#[test]
fn a_lenient_coder_that_never_gives_its_trailer_keeps_its_change_flagged_contract_missing() {
    let (repo, _) = workspace(
        "write hello.txt hello\\n\nsay Working on it.\nsay\nsay I wrote hello.txt\nsay for the greeting.\n",
        30,
    );
    no_supervised_pods(&repo);
    // Lenient is the coder's default; the follow-up does not help.
    coder_follows_up_with(&repo, "say Sorry, which lines?\n", "");
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let rows = one_coder_attempt(&repo, &server, &id, "lenient");
    let first = first_attempt(&rows);
    assert_eq!(
        first["status"],
        "completed",
        "{first}\n{}",
        run_outputs(&repo)
    );

    let event = attempt_event(&repo, &id, "implement", 1);
    assert!(event.contains("contract_missing: true"), "{event}");
    assert!(event.contains("follow_up: true"), "{event}");
    let thread = thread_of(&repo, &id);
    assert!(
        thread.contains("Summary: I wrote hello.txt for the greeting."),
        "the summary is the last paragraph of the final message: {thread}"
    );
    let head = git(repo.path(), &["rev-parse", &format!("yoi/{id}-say-hello")]);
    assert_eq!(
        git(repo.path(), &["show", &format!("{head}:hello.txt")]),
        "hello"
    );

    // The attempt carries the flag, and the ticket page shows it.
    let show = repo.yoi(&["ticket", "show", &id, "--json"]).ok();
    let show: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    let attempt = show["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["step"] == "implement")
        .unwrap();
    assert_eq!(attempt["contract_missing"], true, "{attempt}");
    let link = repo.yoi(&["dashboard", "--no-open"]).ok().stdout;
    let cookie = yoi_testkit::dashboard_session(&link);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let page = agent
        .get(&format!("http://{}/tickets/{id}", server.addr))
        .header("Cookie", &cookie)
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    let coder_row = page
        .split("<td>implement</td><td>coder</td>")
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .unwrap_or("");
    assert!(
        coder_row.contains("class=\"warn contract-missing\"")
            && coder_row.contains("contract missing"),
        "the coder's row shows the missing contract: {page}"
    );

    // The verifier still decides: the flow goes on to verify that commit.
    until("the verify step to be handed out", || {
        assignments(&server, &repo, &id)
            .iter()
            .any(|a| a["step"] == "verify")
    });
}

#[test]
fn a_strict_coder_without_its_trailer_fails_with_the_reason_and_lands_nothing() {
    let (repo, _) = workspace("write hello.txt hello\\n\nsay I wrote hello.txt.\n", 30);
    no_supervised_pods(&repo);
    coder_follows_up_with(
        &repo,
        "say Sorry, which lines?\n",
        "contract = \"strict\"\n",
    );
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    // The branch is made at acceptance from main's head.
    let base = git(repo.path(), &["rev-parse", "main"]);
    let rows = one_coder_attempt(&repo, &server, &id, "strict");
    let branch = format!("yoi/{id}-say-hello");
    let first = first_attempt(&rows);
    assert_eq!(first["status"], "failed", "{first}");
    let error = first["error"].as_str().unwrap();
    for part in [
        "the output contract is missing",
        "also after a follow-up turn asking for it",
        "contract = \"strict\"",
    ] {
        assert!(error.contains(part), "{part:?} in {error}");
    }
    assert_eq!(git(repo.path(), &["rev-parse", &branch]), base);
    let event = attempt_event(&repo, &id, "implement", 1);
    assert!(
        event.contains("outcome: failed") && !event.contains("contract_missing"),
        "{event}"
    );
    // The step is handed out again.
    assert!(
        rows.iter()
            .any(|a| a["attempt"] == 2 && a["status"] == "pending"),
        "{rows:?}"
    );
}

#[test]
fn a_coder_that_changed_nothing_and_gave_no_trailer_fails_even_when_lenient() {
    let (repo, _) = workspace("say I looked around and found nothing to do.\n", 30);
    no_supervised_pods(&repo);
    // A profile that cannot continue a conversation is not asked.
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let rows = one_coder_attempt(&repo, &server, &id, "idle");
    let first = first_attempt(&rows);
    assert_eq!(first["status"], "failed", "{first}");
    let error = first["error"].as_str().unwrap();
    assert!(
        error.contains("the output contract is missing")
            && error.contains("the agent changed nothing")
            && !error.contains("follow-up"),
        "{error}"
    );
    let run = run_dir(&repo, "idle", &first);
    assert!(
        !run.join("follow-up.seen").exists(),
        "no follow-up without a `follow_up` argv"
    );
    assert!(!attempt_event(&repo, &id, "implement", 1).contains("follow_up"));
}

#[test]
fn a_reviewer_that_forgets_its_verdict_fails_and_is_never_approved() {
    let repo = workspace_with_reviewer(
        "write hello.txt hello\\n\ndone added hello.txt\n",
        "say Looks fine to me.\n",
    );
    // Asked again, the reviewer gives a result but still no verdict.
    let path = repo.side.path().join("review-follow-up.txt");
    std::fs::write(&path, "say YOI-RESULT: done\nsay YOI-SUMMARY: read it\n").unwrap();
    set_profile(
        &repo,
        "fake-review",
        &format!("follow_up = [\"{{program}}\", \"{}\"]\n", path.display()),
    );
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    until("the review step's circuit to open", || {
        thread_of(&repo, &id).contains("Step `review` failed")
    });
    let reviews: Vec<_> = assignments(&server, &repo, &id)
        .into_iter()
        .filter(|a| a["step"] == "review")
        .collect();
    assert!(!reviews.is_empty());
    for r in &reviews {
        assert_eq!(r["status"], "failed", "{r}");
        assert!(
            r["error"].as_str().unwrap().contains("no `YOI-VERDICT"),
            "{r}"
        );
    }
    let event = attempt_event(&repo, &id, "review", 1);
    assert!(
        event.contains("follow_up: true"),
        "the reviewer was asked: {event}"
    );
    assert_eq!(state_of(&repo, &id), "inprogress");
    assert_eq!(
        git(repo.path(), &["log", "--oneline", "main"])
            .lines()
            .count(),
        1,
        "nothing was merged"
    );
    let first = reviews.iter().find(|r| r["attempt"] == 1).unwrap();
    let question =
        std::fs::read_to_string(run_dir(&repo, "reviewer-0", first).join("follow-up.seen"))
            .unwrap();
    assert!(
        question.contains("YOI-VERDICT: approve (or request_changes)"),
        "a reviewer is asked for its verdict too: {question}"
    );
}

/// Aider, laid over its built-in profile, talking to `base`.
fn aider_profile(repo: &Repo, extra: &str) {
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = format!(
        "{text}\n[agents.aider]\nprogram = \"{}\"\nmodel = \"openai/gpt-4o-mini\"\nextra_args = [\"--edit-format\", \"whole\", \"--map-tokens\", \"0\"]\ntimeout_secs = 300\n{extra}",
        aider()
    );
    std::fs::write(&config, text).unwrap();
}

fn run_aider_pod(repo: &Repo, base: &str) {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        "[user]\n\tname = aider user\n\temail = aider@yoi.invalid\n",
    )
    .unwrap();
    let mut pod = own_pod_env(
        repo,
        "aider",
        "aider",
        &["--once"],
        &[
            ("OPENAI_API_BASE", base),
            ("OPENAI_API_KEY", "sk-yoi-test"),
            ("HOME", home.path().to_str().unwrap()),
        ],
    );
    // Its exit status says how the attempt went (0 completed, 1 failed); the callers check
    // the attempt itself.
    let status = pod.wait().unwrap();
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "{status:?}: {}",
        std::fs::read_to_string(pod_log(repo, "aider")).unwrap_or_default()
    );
}

/// Aider's answer: the file, whole, and no trailer lines.
const FORGETFUL: &str = "hello.txt\n```\nhello\n```\n\nI created hello.txt with the greeting.\n";

#[test]
fn the_real_aider_that_forgets_its_trailer_answers_the_follow_up_and_its_ticket_is_merged() {
    // (An answer naming a file of the repository would make Aider add it to the chat and ask
    // the model once more: docs/pods.md.)
    let (base, seen) = model_endpoint(&[
        FORGETFUL,
        "YOI-RESULT: done\nYOI-SUMMARY: added the greeting\n",
    ]);
    let repo = workspace_with_reviewer("", "say YOI-VERDICT: approve\ndone reviewed\n");
    no_supervised_pods(&repo);
    aider_profile(&repo, "");
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    run_aider_pod(&repo, &base);
    let rows = assignments(&server, &repo, &id);
    let first = rows
        .iter()
        .find(|a| a["step"] == "implement" && a["attempt"] == 1)
        .unwrap();
    assert_eq!(
        first["status"],
        "completed",
        "{first}\n{}",
        run_outputs(&repo)
    );

    // Two model calls: the task, then the follow-up with the restored conversation.
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert!(requests[0].contains("hello.txt says hello"));
    assert!(
        requests[1].contains("ended without the trailer lines")
            && requests[1].contains("I created hello.txt with the greeting."),
        "the follow-up continues the conversation: {}",
        requests[1]
    );
    let event = attempt_event(&repo, &id, "implement", 1);
    assert!(
        event.contains("follow_up: true") && !event.contains("contract_missing"),
        "{event}"
    );
    assert!(thread_of(&repo, &id).contains("Summary: added the greeting"));
    // Both calls' usage is the attempt's (812 + 812 in, 41 + 41 out).
    assert_eq!(tokens(&repo, &id), (Some(1624), Some(82)));

    until("the ticket to be merged", || state_of(&repo, &id) == "done");
    assert_eq!(
        git(repo.path(), &["show", "main:hello.txt"]),
        "hello",
        "aider's change reached main"
    );
}

#[test]
fn the_real_aider_that_never_gives_its_trailer_fails_under_a_strict_profile() {
    let (base, seen) = model_endpoint(&[FORGETFUL, "Done, the file is there."]);
    let (repo, _) = workspace("", 30);
    no_supervised_pods(&repo);
    aider_profile(&repo, "contract = \"strict\"\n");
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let before = git(repo.path(), &["rev-parse", "main"]);
    run_aider_pod(&repo, &base);
    let branch = format!("yoi/{id}-say-hello");
    let rows = assignments(&server, &repo, &id);
    let first = rows
        .iter()
        .find(|a| a["step"] == "implement" && a["attempt"] == 1)
        .unwrap();
    assert_eq!(first["status"], "failed", "{first}\n{}", run_outputs(&repo));
    let error = first["error"].as_str().unwrap();
    assert!(
        error.contains("the output contract is missing")
            && error.contains("also after a follow-up turn")
            && error.contains("strict"),
        "{error}"
    );
    assert_eq!(seen.lock().unwrap().len(), 2, "asked once, not more");
    assert_eq!(git(repo.path(), &["rev-parse", &branch]), before);
}

#[test]
fn the_real_aider_that_never_gives_its_trailer_is_kept_by_its_lenient_profile_and_merged() {
    let (base, seen) = model_endpoint(&[FORGETFUL, "Done, the greeting is there."]);
    let repo = workspace_with_reviewer("", "say YOI-VERDICT: approve\ndone reviewed\n");
    no_supervised_pods(&repo);
    aider_profile(&repo, "");
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    run_aider_pod(&repo, &base);
    let rows = assignments(&server, &repo, &id);
    let first = rows
        .iter()
        .find(|a| a["step"] == "implement" && a["attempt"] == 1)
        .unwrap();
    assert_eq!(
        first["status"],
        "completed",
        "{first}\n{}",
        run_outputs(&repo)
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "one follow-up turn, two model calls"
    );
    let event = attempt_event(&repo, &id, "implement", 1);
    assert!(
        event.contains("contract_missing: true") && event.contains("follow_up: true"),
        "{event}"
    );
    // The summary is the last paragraph of what Aider said, without its bookkeeping.
    assert!(
        thread_of(&repo, &id).contains("Summary: I created hello.txt with the greeting.\n"),
        "{}\n{}",
        thread_of(&repo, &id),
        run_outputs(&repo)
    );
    until("the ticket to be merged", || state_of(&repo, &id) == "done");
    assert_eq!(git(repo.path(), &["show", "main:hello.txt"]), "hello");
}

#[test]
fn a_coder_that_commits_then_times_out_hands_its_commits_to_the_next_attempt() {
    let (repo, _) = workspace(
        "attempt 1 write part1.txt first half\\n\nattempt 1 commit first half\nattempt 1 sleep 600000\nattempt 2 run test -f part1.txt && test \"$(git log -1 --format=%s)\" = \"first half\"\nattempt 2 write part2.txt second half\\n\nattempt 2 done finished the second half\n",
        30,
    );
    no_supervised_pods(&repo);
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("timeout_secs = 60", "timeout_secs = 2");
    std::fs::write(&config, text).unwrap();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let base = git(repo.path(), &["rev-parse", "main"]);

    // Attempt 1 commits half the work, then runs past its timeout.
    let rows = one_coder_attempt(&repo, &server, &id, "slow");
    let first = first_attempt(&rows);
    assert_eq!(first["status"], "failed", "{first}");
    assert!(
        first["error"].as_str().unwrap().contains("timeout"),
        "{first}"
    );
    let report: serde_json::Value =
        serde_json::from_str(first["result"].as_str().unwrap()).unwrap();
    assert_eq!(report["keep_work"], true, "{report}");
    let half = report["commit"].as_str().unwrap().to_string();
    let branch = format!("yoi/{id}-say-hello");
    assert_eq!(
        git(repo.path(), &["rev-parse", &branch]),
        base,
        "a failure moves no branch"
    );

    // Attempt 2 starts from that commit (its script checks it), is told so, and finishes.
    let rows = one_coder_attempt(&repo, &server, &id, "next");
    let second = rows.iter().find(|a| a["attempt"] == 2).unwrap();
    assert_eq!(
        second["status"],
        "completed",
        "{second}\n{}",
        run_outputs(&repo)
    );
    let prompt =
        std::fs::read_to_string(run_dir(&repo, "next", second).join("prompt.seen")).unwrap();
    assert!(
        prompt.contains("Already here: the work of attempt 1")
            && prompt.contains(&format!("this folder starts at {half}")),
        "{prompt}"
    );
    let head = git(repo.path(), &["rev-parse", &branch]);
    assert_eq!(
        git(repo.path(), &["show", &format!("{head}:part1.txt")]),
        "first half"
    );
    assert_eq!(
        git(repo.path(), &["show", &format!("{head}:part2.txt")]),
        "second half"
    );
    assert_eq!(
        git(repo.path(), &["merge-base", &half, &head]),
        half,
        "the first attempt's commit is on the branch"
    );
}
