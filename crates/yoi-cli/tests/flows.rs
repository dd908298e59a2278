//! The built-in flow end to end, with real processes: `yoi serve` supervises a coder, the
//! built-in verifier and a reviewer pod, each running the scripted `yoi-fake-agent`; tickets go
//! from queued through implement, verify, review and merge to done (docs/flows.md).

mod common;

use std::path::Path;
use std::time::Duration;

use common::pods::*;
use common::server::Server;

#[test]
fn a_queued_ticket_is_implemented_verified_reviewed_and_merged_into_the_checked_out_main() {
    let repo = workspace_with_reviewer(
        "write hello.txt hello\\n\ndone added hello.txt\n",
        "say Looks right.\ndone read the change\nsay YOI-VERDICT: approve\n",
    );
    // A change of the user's own in the main worktree, in a path the merge does not touch.
    std::fs::write(repo.path().join("README.md"), "base, edited by me\n").unwrap();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    until("the ticket to be done", || state_of(&repo, &id) == "done");

    // main moved to the ticket's commit (a fast-forward), and the main worktree has it, clean
    // except for the user's own edit, which is untouched.
    let branch = format!("yoi/{id}-say-hello");
    let head = git(repo.path(), &["rev-parse", &branch]);
    assert_eq!(git(repo.path(), &["rev-parse", "main"]), head);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("hello.txt")).unwrap(),
        "hello\n"
    );
    // (The test's own edit of workspace.toml shows too; the merge's hello.txt does not.)
    assert_eq!(
        git(
            repo.path(),
            &["status", "--porcelain", "--", "README.md", "hello.txt"]
        ),
        "M README.md"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("README.md")).unwrap(),
        "base, edited by me\n"
    );
    // Every step in order, each once, bound to the commit; then the merge event.
    let rows = assignments(&server, &repo, &id);
    let mut steps: Vec<(String, String)> = rows
        .iter()
        .map(|a| {
            (
                a["step"].as_str().unwrap().to_string(),
                a["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    steps.reverse();
    assert_eq!(
        steps,
        [
            ("implement".into(), "completed".into()),
            ("verify".into(), "completed".into()),
            ("review".into(), "completed".into()),
            ("merge".into(), "completed".into()),
        ],
        "{rows:?}"
    );
    for a in rows.iter().filter(|a| a["step"] != "implement") {
        assert_eq!(a["head_commit"].as_str(), Some(head.as_str()), "{a}");
    }
    let verify = rows.iter().find(|a| a["step"] == "verify").unwrap();
    let report: serde_json::Value =
        serde_json::from_str(verify["result"].as_str().unwrap()).unwrap();
    assert_eq!(report["checks"][0]["command"], "test -f hello.txt");
    assert_eq!(report["checks"][0]["exit_code"], 0);
    let review = rows.iter().find(|a| a["step"] == "review").unwrap();
    let report: serde_json::Value =
        serde_json::from_str(review["result"].as_str().unwrap()).unwrap();
    assert_eq!(report["verdict"], "approve");
    // The reviewer is told exactly what to compare, and not that yoi commits what it leaves.
    let prompt = std::fs::read_to_string(
        repo.path()
            .join(".yoi/local/pods/reviewer-0/runs")
            .join(review["id"].as_str().unwrap())
            .join("prompt.seen"),
    )
    .unwrap();
    let base = git(repo.path(), &["rev-parse", &format!("{head}^")]);
    assert!(
        prompt.contains(&format!("`git diff {base} {head}`")),
        "{prompt}"
    );
    assert!(!prompt.contains("yoi commits what you leave"), "{prompt}");
    // `yoi ticket show` says the same: the flow, the rounds, each check and the verdict.
    let show = repo.yoi(&["ticket", "show", &id]).ok().stdout;
    for part in [
        "flow: coder-review (implement → verify → review → merge); no step live; fix rounds used: 0 of 3",
        "passed `test -f hello.txt`",
        "verdict: approve",
    ] {
        assert!(show.contains(part), "{part} in:\n{show}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&repo.yoi(&["ticket", "show", &id, "--json"]).ok().stdout).unwrap();
    let review_attempt = json["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["step"] == "review")
        .unwrap();
    assert_eq!(review_attempt["verdict"], "approve");
    assert_eq!(review_attempt["commit"].as_str(), Some(head.as_str()));
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(thread.contains("event: merge "), "{thread}");
    assert!(thread.contains(&format!("after: {head}")), "{thread}");
    // The ticket's worktrees are gone; its branch is kept.
    // (They go right after the state change.)
    until("the ticket worktrees to be removed", || {
        ticket_worktrees(&repo).is_empty()
    });
    assert_eq!(
        git(repo.path(), &["branch", "--list", &branch]).trim_start_matches(['*', ' ']),
        branch
    );
    // The pods' own worktrees stay, and doctor does not call them orphans.
    assert!(repo.path().join(".worktree/.pods").is_dir());
    let doctor: serde_json::Value = serde_json::from_str(
        &repo
            .yoi(&["ticket", "doctor", "--json", "--local"])
            .ok()
            .stdout,
    )
    .unwrap();
    let worktree_findings: Vec<&serde_json::Value> = doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"].as_str().unwrap().starts_with("worktree."))
        .collect();
    assert!(worktree_findings.is_empty(), "{worktree_findings:#?}");
}

#[test]
fn a_failed_verification_and_a_change_request_each_cost_a_round_and_the_next_round_reads_why() {
    // Round 1 writes the wrong file (verification fails); round 2 writes the right one and the
    // first review requests changes; round 3 is approved.
    let coder = "attempt 1 write note.txt round\\n\nattempt 2 write hello.txt hello\\n\nattempt 3 write hello.txt hello, again\\n\ndone worked\n";
    let review = "attempt 1 say YOI-VERDICT: request_changes\nattempt 1 say YOI-FINDING: hello.txt needs more\nattempt 2 say YOI-VERDICT: approve\ndone reviewed\n";
    let repo = workspace_with_reviewer(coder, review);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    until("the ticket to be done", || state_of(&repo, &id) == "done");
    let rows = assignments(&server, &repo, &id);
    let prompt = |attempt: i64| {
        let a = rows
            .iter()
            .find(|a| a["step"] == "implement" && a["attempt"] == attempt)
            .unwrap();
        std::fs::read_to_string(
            repo.path()
                .join(".yoi/local/pods/coder-0/runs")
                .join(a["id"].as_str().unwrap())
                .join("prompt.seen"),
        )
        .unwrap()
    };
    let show = repo.yoi(&["ticket", "show", &id]).ok().stdout;
    assert!(show.contains("fix rounds used: 2"), "{show}");
    assert!(show.contains("finding: hello.txt needs more"), "{show}");
    let p2 = prompt(2);
    assert!(
        p2.contains("Verification of") && p2.contains("`test -f hello.txt` exited with 1"),
        "{p2}"
    );
    let p3 = prompt(3);
    assert!(
        p3.contains("requested changes") && p3.contains("hello.txt needs more"),
        "{p3}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("hello.txt")).unwrap(),
        "hello, again\n"
    );
    let steps: Vec<String> = rows
        .iter()
        .rev()
        .map(|a| format!("{}#{}", a["step"].as_str().unwrap(), a["attempt"]))
        .collect();
    assert_eq!(
        steps,
        [
            "implement#1",
            "verify#1",
            "implement#2",
            "verify#2",
            "review#1",
            "implement#3",
            "verify#3",
            "review#2",
            "merge#1"
        ],
        "{rows:?}"
    );
    assert_eq!(
        git(repo.path(), &["rev-parse", "main"]),
        git(repo.path(), &["rev-parse", &format!("yoi/{id}-say-hello")])
    );
    // The thread alone says what decided each round: a clone has no database.
    let text = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    let thread = yoi_core::thread::parse_thread(&text);
    let attempt = |step: &str, n: &str| {
        thread
            .events
            .iter()
            .find(|e| {
                e.kind == yoi_core::thread::EventKind::Assignment
                    && e.get("step") == Some(step)
                    && e.get("attempt") == Some(n)
            })
            .unwrap_or_else(|| panic!("no {step}#{n} in {text}"))
    };
    let verify = attempt("verify", "1");
    assert_eq!(verify.get("checks"), Some("0/1"), "{text}");
    assert!(
        verify
            .body
            .contains("Checks:\n- `test -f hello.txt` exited 1 in "),
        "{}",
        verify.body
    );
    let review = attempt("review", "1");
    assert_eq!(review.get("verdict"), Some("request_changes"));
    assert!(
        review
            .body
            .contains("Verdict: request_changes\n\nFindings:\n- hello.txt needs more"),
        "{}",
        review.body
    );
    assert_eq!(attempt("review", "2").get("verdict"), Some("approve"));
    assert_eq!(attempt("verify", "3").get("checks"), Some("1/1"));
}

#[test]
fn past_max_rounds_the_ticket_waits_for_a_person_and_retry_grants_one_more() {
    let repo = workspace_with_reviewer(
        "write other.txt x\\n\ndone wrong file\n",
        "done\nsay YOI-VERDICT: approve\n",
    );
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("max_rounds = 3", "max_rounds = 1");
    std::fs::write(&config, text).unwrap();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    until("the rounds to run out", || {
        std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md"))
            .unwrap()
            .contains("rounds_exhausted")
    });
    // Two verifications failed (the first round and the one allowed fix round); nothing is
    // live, also once a whole sweep has looked at the ticket since.
    until_swept(&server, &repo);
    let rows = assignments(&server, &repo, &id);
    assert!(
        rows.iter()
            .all(|a| !["pending", "claimed"].contains(&a["status"].as_str().unwrap())),
        "{rows:?}"
    );
    assert_eq!(
        rows.iter().filter(|a| a["step"] == "verify").count(),
        2,
        "{rows:?}"
    );
    assert_eq!(state_of(&repo, &id), "inprogress");
    // A person fixes the agent and grants a round.
    std::fs::write(
        repo.side.path().join("agent-script.txt"),
        "write hello.txt hello\\n\ndone added hello.txt\n",
    )
    .unwrap();
    repo.yoi(&["ticket", "retry", &id]).ok();
    until("the ticket to be done", || state_of(&repo, &id) == "done");
}

use yoi_testkit::pg;

/// A coder that writes a note named after its ticket, and a reviewer that approves.
const NOTE_CODER: &str = "write notes/$YOI_TICKET.md for $YOI_TICKET\\n\ndone wrote the note\n";
const APPROVE: &str = "say YOI-VERDICT: approve\ndone reviewed\n";
const NOTE_BRIEF: &str = "## Intent\nLeave a note.\n\n## Acceptance criteria\n- the note exists\n\n## Validation\n`ls notes`\n";

fn chain_of_three_merges_in_dependency_order(postgres: bool) {
    let repo = workspace_with_reviewer(NOTE_CODER, APPROVE);
    if postgres {
        // The workspace moves from its SQLite file to PostgreSQL, admin token and all.
        repo.yoi(&["db", "copy", "--to", &pg::database()]).ok();
    }
    let a = repo.create("First", NOTE_BRIEF);
    let b = repo.create("Second", NOTE_BRIEF);
    let c = repo.create("Third", NOTE_BRIEF);
    repo.yoi(&["ticket", "relation", "add", &b, "depends_on", &a])
        .ok();
    repo.yoi(&["ticket", "relation", "add", &c, "depends_on", &b])
        .ok();
    for id in [&a, &b, &c] {
        repo.yoi(&["ticket", "mark-ready", id]).ok();
        repo.yoi(&["ticket", "queue", id]).ok();
    }
    let _server = Server::spawn(&repo);
    until("all three to be done", || {
        [&a, &b, &c].iter().all(|id| state_of(&repo, id) == "done")
    });
    // main holds the three changes, merged in dependency order, nothing else.
    let log = git(repo.path(), &["log", "--format=%s", "main"]);
    let subjects: Vec<&str> = log.lines().collect();
    assert_eq!(subjects.len(), 4, "{log}");
    for (subject, id) in subjects.iter().zip([&c, &b, &a]) {
        assert!(subject.starts_with(id.as_str()), "{log}");
    }
    for id in [&a, &b, &c] {
        assert!(repo.path().join(format!("notes/{id}.md")).is_file());
    }
    // (They go right after the state change.)
    until("the ticket worktrees to be removed", || {
        ticket_worktrees(&repo).is_empty()
    });
}

#[test]
fn three_dependent_tickets_queued_once_are_merged_in_order_on_sqlite() {
    chain_of_three_merges_in_dependency_order(false);
}

#[test]
fn three_dependent_tickets_queued_once_are_merged_in_order_on_postgres() {
    chain_of_three_merges_in_dependency_order(true);
}

#[test]
fn a_dirty_checked_out_main_defers_the_merge_and_a_branch_moved_after_approval_is_checked_again() {
    let repo = workspace_with_reviewer(NOTE_CODER, APPROVE);
    let id = repo.create("Note", NOTE_BRIEF);
    // The user has an uncommitted file exactly where the merge would write.
    let mine = repo.path().join(format!("notes/{id}.md"));
    std::fs::create_dir_all(mine.parent().unwrap()).unwrap();
    std::fs::write(&mine, "my own draft\n").unwrap();
    repo.yoi(&["ticket", "mark-ready", &id]).ok();
    repo.yoi(&["ticket", "queue", &id]).ok();
    let server = Server::spawn(&repo);
    let thread = || std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    until("the merge to be deferred", || {
        thread().contains("merge_deferred")
    });
    assert_eq!(
        thread().matches("reason: merge_deferred").count(),
        1,
        "announced once"
    );
    let t = thread();
    assert!(
        t.contains(&format!("uncommitted changes in notes/{id}.md"))
            && t.contains("Nothing was written"),
        "{t}"
    );
    // Nothing moved, also once a whole sweep has tried the merge again since: main, the
    // user's file, the ticket's state.
    until_swept(&server, &repo);
    assert_eq!(
        git(repo.path(), &["log", "--format=%s", "main"])
            .lines()
            .count(),
        1
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "my own draft\n");
    assert_eq!(state_of(&repo, &id), "inprogress");
    assert_eq!(
        thread().matches("reason: merge_deferred").count(),
        1,
        "not repeated"
    );

    // Meanwhile someone moves the ticket branch past the approved commit by hand.
    let branch = format!("yoi/{id}-note");
    let approved = git(repo.path(), &["rev-parse", &branch]);
    let side = repo.path().join("side");
    git(
        repo.path(),
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            side.to_str().unwrap(),
            &branch,
        ],
    );
    std::fs::write(side.join("extra.txt"), "late\n").unwrap();
    yoi_testkit::commit_all(&side, "late");
    let late = git(&side, &["rev-parse", "HEAD"]);
    git(repo.path(), &["worktree", "remove", side.to_str().unwrap()]);
    git(
        repo.path(),
        &[
            "update-ref",
            &format!("refs/heads/{branch}"),
            &late,
            &approved,
        ],
    );
    // The user clears the draft; the merge now notices the branch moved and starts over.
    std::fs::remove_file(&mine).unwrap();
    until("the ticket to be done", || state_of(&repo, &id) == "done");
    assert_eq!(git(repo.path(), &["rev-parse", "main"]), late);
    let rows = assignments(&server, &repo, &id);
    let verified: Vec<&str> = rows
        .iter()
        .filter(|a| a["step"] == "verify" && a["status"] == "completed")
        .map(|a| a["head_commit"].as_str().unwrap())
        .collect();
    assert!(
        verified.contains(&late.as_str()) && verified.contains(&approved.as_str()),
        "{rows:?}"
    );
    let void = rows
        .iter()
        .find(|a| a["step"] == "merge" && a["status"] == "failed")
        .unwrap();
    assert!(
        void["error"].as_str().unwrap().contains("no longer counts"),
        "{void}"
    );
}

#[test]
fn a_target_that_moved_on_with_a_conflict_goes_to_the_coder_to_integrate_then_merges() {
    // The implement step also commits a conflicting hello.txt onto main (someone else's work
    // landing meanwhile); the integrate step merges main in, keeping its own side.
    let repo = workspace_with_reviewer("", APPROVE);
    let coder = format!(
        "step implement write hello.txt ours\\n\n{}\
         step integrate run git -c user.name=c -c user.email=c@c.invalid merge -q --no-edit -X ours main\n\
         done did it\n",
        wait_for_theirs(&repo)
    );
    std::fs::write(repo.side.path().join("agent-script.txt"), coder).unwrap();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    land_theirs_on_main(&server, &repo, &id, "hello.txt", "theirs\n");
    until("the ticket to be done", || state_of(&repo, &id) == "done");
    let rows = assignments(&server, &repo, &id);
    let steps: Vec<String> = rows
        .iter()
        .rev()
        .map(|a| {
            format!(
                "{}:{}",
                a["step"].as_str().unwrap(),
                a["status"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            "implement:completed",
            "verify:completed",
            "review:completed",
            "merge:failed",
            "integrate:completed",
            "verify:completed",
            "review:completed",
            "merge:completed"
        ],
        "{rows:?}"
    );
    // main has both sides' history; the file is the integrated one.
    let main = git(repo.path(), &["rev-parse", "main"]);
    let parents = git(repo.path(), &["log", "-1", "--format=%P", &main]);
    assert_eq!(parents.split(' ').count(), 2, "a merge commit: {parents}");
    assert_eq!(
        std::fs::read_to_string(repo.path().join("hello.txt")).unwrap(),
        "ours\n"
    );
    assert_eq!(
        git(repo.path(), &["status", "--porcelain", "--", "hello.txt"]),
        ""
    );
    let log = git(repo.path(), &["log", "--format=%s", "main"]);
    assert!(log.contains("theirs"), "{log}");
}

#[test]
fn the_server_killed_at_step_boundaries_resumes_the_flow_and_no_step_completes_twice() {
    // Every step takes a little while, so the poll below sees each one handed out.
    let repo = workspace_with_reviewer(
        &format!("sleep 400\n{NOTE_CODER}"),
        &format!("sleep 400\n{APPROVE}"),
    );
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("lease_secs = 30", "lease_secs = 3");
    std::fs::write(&config, text).unwrap();
    let id = repo.create(
        "Note",
        &NOTE_BRIEF.replace("`ls notes`", "`sleep 0.4 && ls notes`"),
    );
    repo.yoi(&["ticket", "mark-ready", &id]).ok();
    repo.yoi(&["ticket", "queue", &id]).ok();
    let mut server = Server::spawn(&repo);
    let addr = server.addr.clone();
    let mut seen: Vec<String> = Vec::new();
    let mut kills = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while state_of(&repo, &id) != "done" {
        if std::time::Instant::now() > deadline {
            for f in std::fs::read_dir(repo.path().join(".yoi/local/logs/pods")).unwrap() {
                let f = f.unwrap().path();
                eprintln!(
                    "DEBUG {}:\n{}",
                    f.display(),
                    std::fs::read_to_string(&f).unwrap_or_default()
                );
            }
            eprintln!("server log:\n{}", server.log_so_far().join("\n"));
            panic!(
                "the flow did not finish: {:?}",
                assignments(&server, &repo, &id)
            );
        }
        // Each time a step is first handed out (a step boundary), SIGKILL the server and start
        // it again: its claims are lost with it, its pods drain, and the flow must go on.
        let steps: Vec<String> = assignments(&server, &repo, &id)
            .iter()
            .map(|a| a["step"].as_str().unwrap().to_string())
            .collect();
        if let Some(new) = steps.iter().find(|s| !seen.contains(s)) {
            seen.push(new.clone());
            kills += 1;
            server.kill();
            server = Server::spawn_at(&repo, &addr);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        kills >= 3,
        "the test killed the server at {kills} boundaries"
    );
    let rows = assignments(&server, &repo, &id);
    for step in ["implement", "verify", "review", "merge"] {
        let completed = rows
            .iter()
            .filter(|a| a["step"] == step && a["status"] == "completed")
            .count();
        assert_eq!(completed, 1, "{step} completed once: {rows:?}");
    }
    assert!(rows
        .iter()
        .all(|a| !["pending", "claimed", "held"].contains(&a["status"].as_str().unwrap())));
    assert_eq!(
        git(repo.path(), &["log", "--format=%s", "main"])
            .lines()
            .count(),
        2
    );
    // The pods of every killed server went with it (they drain on their server's death).
    server.terminate();
    assert!(server.wait().success());
    let root = repo.path().display().to_string();
    until("every pod to be gone", || {
        processes_mentioning(&root).is_empty()
    });
    let doctor = repo.yoi(&["ticket", "doctor", "--json"]).ok();
    let doctor: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
    assert_eq!(doctor["errors"], 0, "{doctor}");
}

/// The steps of a ticket's assignments, oldest first, as `step:status`.
fn step_log(server: &Server, repo: &common::Repo, id: &str) -> Vec<String> {
    assignments(server, repo, id)
        .iter()
        .rev()
        .map(|a| {
            format!(
                "{}:{}",
                a["step"].as_str().unwrap(),
                a["status"].as_str().unwrap()
            )
        })
        .collect()
}

/// A coder line that lands a commit of someone else's on main while the ticket is worked.
/// The implement step's agent waits, in its sandbox, until someone else's commit has landed
/// on main ([`land_theirs_on_main`]); agents cannot write the main repository themselves.
fn wait_for_theirs(repo: &common::Repo) -> String {
    format!(
        "step implement run while [ ! -e '{}' ]; do sleep 0.05; done\n",
        repo.side.path().join("theirs-landed").display()
    )
}

/// Once the implement step is claimed, commit `file` with `text` on main as someone else, then
/// let the waiting agent ([`wait_for_theirs`]) go on.
fn land_theirs_on_main(server: &Server, repo: &common::Repo, id: &str, file: &str, text: &str) {
    until("the implement step to be claimed", || {
        assignments(server, repo, id)
            .iter()
            .any(|a| a["step"] == "implement" && a["status"] == "claimed")
    });
    std::fs::write(repo.path().join(file), text).unwrap();
    git(repo.path(), &["add", file]);
    git(
        repo.path(),
        &[
            "-c",
            "user.name=o",
            "-c",
            "user.email=o@o.invalid",
            "commit",
            "-q",
            "-m",
            "theirs",
        ],
    );
    std::fs::write(repo.side.path().join("theirs-landed"), "").unwrap();
}

/// Give ticket `id` the `flow:` key, as a person editing item.md would.
fn name_flow(repo: &common::Repo, id: &str, flow: &str) {
    let item = repo.path().join(format!(".yoi/tickets/{id}/item.md"));
    let text = std::fs::read_to_string(&item).unwrap();
    let edited = text.replacen("\n---\n", &format!("\nflow: {flow}\n---\n"), 1);
    assert_ne!(edited, text, "item.md has a front matter end");
    std::fs::write(&item, edited).unwrap();
}

fn queued_with(repo: &common::Repo, validation: &str) -> String {
    let id = repo.create(
        "Say hello",
        &format!("## Intent\nAdd a greeting.\n\n## Acceptance criteria\n- hello.txt says hello\n\n## Validation\n`{validation}`\n"),
    );
    repo.yoi(&["ticket", "mark-ready", &id]).ok();
    repo.yoi(&["ticket", "queue", &id]).ok();
    id
}

#[test]
fn a_target_that_moved_on_without_conflict_is_merged_by_yoi_once_the_merged_tree_passes() {
    let repo = workspace_with_reviewer("", APPROVE);
    let coder = format!(
        "step implement write hello.txt hello\\n\n{}done did it\n",
        wait_for_theirs(&repo)
    );
    std::fs::write(repo.side.path().join("agent-script.txt"), coder).unwrap();
    // Passes on the branch and on the merged tree.
    let id = queued_with(&repo, "test -f hello.txt");
    let server = Server::spawn(&repo);
    land_theirs_on_main(&server, &repo, &id, "other.txt", "theirs\n");
    until("the ticket to be done", || state_of(&repo, &id) == "done");
    assert_eq!(
        step_log(&server, &repo, &id),
        [
            "implement:completed",
            "verify:completed",
            "review:completed",
            "merge:failed",
            "merge-verify:completed",
            "merge:completed"
        ]
    );
    // main is yoi's merge commit: first parent someone else's commit, second the approved one.
    let rows = assignments(&server, &repo, &id);
    let approved = rows
        .iter()
        .find(|a| a["step"] == "review")
        .and_then(|a| a["head_commit"].as_str())
        .unwrap()
        .to_string();
    let main = git(repo.path(), &["rev-parse", "main"]);
    let parents: Vec<String> = git(repo.path(), &["log", "-1", "--format=%P", &main])
        .split(' ')
        .map(str::to_string)
        .collect();
    assert_eq!(parents.len(), 2, "{parents:?}");
    assert_eq!(parents[1], approved);
    assert_eq!(
        git(repo.path(), &["log", "-1", "--format=%s", &parents[0]]),
        "theirs"
    );
    let subject = git(repo.path(), &["log", "-1", "--format=%s", &main]);
    assert!(
        subject.starts_with(&format!("Merge ticket {id}")),
        "{subject}"
    );
    // The merge-verify step ran the brief's command at exactly that merge commit.
    let mv = rows.iter().find(|a| a["step"] == "merge-verify").unwrap();
    assert_eq!(mv["head_commit"].as_str(), Some(main.as_str()), "{mv}");
    // The checked-out main has both sides, clean in those paths.
    assert_eq!(
        std::fs::read_to_string(repo.path().join("hello.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("other.txt")).unwrap(),
        "theirs\n"
    );
    assert_eq!(
        git(
            repo.path(),
            &["status", "--porcelain", "--", "hello.txt", "other.txt"]
        ),
        ""
    );
}

#[test]
fn a_merged_tree_that_fails_validation_never_reaches_the_target_and_goes_back_to_the_coder() {
    // The brief's check passes on the branch alone and fails once other.txt is merged in; the
    // coder's integrate round merges main and drops other.txt, which then merges forward.
    let repo = workspace_with_reviewer("", APPROVE);
    let coder = format!(
        "step implement write hello.txt hello\\n\n{}\
         step integrate run git -c user.name=c -c user.email=c@c.invalid merge -q --no-edit main && git rm -q other.txt && git -c user.name=c -c user.email=c@c.invalid commit -q -m drop-other\n\
         done did it\n",
        wait_for_theirs(&repo)
    );
    std::fs::write(repo.side.path().join("agent-script.txt"), coder).unwrap();
    let id = queued_with(&repo, "test -f hello.txt && ! test -e other.txt");
    let server = Server::spawn(&repo);
    land_theirs_on_main(&server, &repo, &id, "other.txt", "theirs\n");
    until("the ticket to be done", || state_of(&repo, &id) == "done");
    assert_eq!(
        step_log(&server, &repo, &id),
        [
            "implement:completed",
            "verify:completed",
            "review:completed",
            "merge:failed",
            "merge-verify:completed",
            "integrate:completed",
            "verify:completed",
            "review:completed",
            "merge:completed"
        ]
    );
    let rows = assignments(&server, &repo, &id);
    let mv = rows.iter().find(|a| a["step"] == "merge-verify").unwrap();
    let computed = mv["head_commit"].as_str().unwrap().to_string();
    // The merge yoi computed failed its check and never became part of main.
    let history = git(repo.path(), &["rev-list", "main"]);
    assert!(!history.lines().any(|c| c == computed), "{history}");
    let show = repo.yoi(&["ticket", "show", &id]).ok().stdout;
    assert!(show.contains("merge-verify"), "{show}");
    // The coder's integrate round was told why, by reference.
    assert!(
        std::fs::read_dir(repo.path().join(".yoi/local/logs")).is_ok(),
        "logs exist"
    );
    assert!(!repo.path().join("other.txt").exists());
    assert_eq!(
        std::fs::read_to_string(repo.path().join("hello.txt")).unwrap(),
        "hello\n"
    );
}

#[test]
fn a_flow_file_picks_the_steps_and_an_invalid_one_sends_its_tickets_back_to_planning() {
    let repo = workspace_with_reviewer(
        "step implement run grep -q 'Keep the change to one file' \"$YOI_PROMPT_FILE\"\nwrite hello.txt hello\\n\ndone added hello.txt\n",
        APPROVE,
    );
    let flows = repo.path().join(".yoi/flows");
    std::fs::create_dir_all(&flows).unwrap();
    std::fs::write(
        flows.join("quick.flow.yaml"),
        "schema_version: 1\nname: quick\ntitle: Implement and review\nmax_rounds: 2\nsteps:\n  - id: implement\n    role: coder\n    output: commit\n    prompt: Keep the change to one file ({ticket}).\n  - id: review\n    role: reviewer\n    output: verdict\n  - id: merge\n    role: service\n    output: merge\nassembly:\n  headers:\n    review: What the review found\n    implement: What changed\n",
    )
    .unwrap();
    std::fs::write(
        flows.join("broken.flow.yaml"),
        "schema_version: 1\nname: broken\ntitle: Broken\nsteps:\n  - id: implement\n    role: coder\n    output: commit\n  - id: review\n    role: auditor\n    output: verdict\n  - id: merge\n    role: service\n    output: merge\n",
    )
    .unwrap();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.replace("default = \"coder-review\"", "default = \"quick\"");
    assert!(text.contains("default = \"quick\""));
    std::fs::write(&config, text).unwrap();
    yoi_testkit::commit_all(repo.path(), "flows");

    // lint names the file and the line; list shows the good ones and what was skipped.
    let lint = repo.yoi(&["flow", "lint"]);
    assert_eq!(lint.code, 1, "{}", lint.stdout);
    assert!(
        lint.stdout
            .contains("error   .yoi/flows/broken.flow.yaml:8: step 2 (`review`): role `auditor` is not a configured role"),
        "{}",
        lint.stdout
    );
    let list = repo.yoi(&["flow", "list"]).ok().stdout;
    assert!(list.contains("quick *"), "{list}");
    assert!(list.contains("coder-review"), "{list}");
    assert!(
        list.contains("skipped .yoi/flows/broken.flow.yaml"),
        "{list}"
    );

    // A ticket naming the broken flow; one using the default.
    let broken = repo.create("Broken", BRIEF);
    name_flow(&repo, &broken, "broken");
    repo.yoi(&["ticket", "mark-ready", &broken]).ok();
    repo.yoi(&["ticket", "queue", &broken]).ok();
    let id = queued_ticket(&repo);

    // The server starts regardless and serves the same answers.
    let server = Server::spawn(&repo);
    let (status, body) = server.get(&repo, "/flows");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["skipped"][0]["problems"][0]["line"], 8, "{body}");
    let (status, body) = server.get(&repo, "/flows/broken");
    assert_eq!(status, 422, "{body}");
    let (status, body) = server.get(&repo, "/flows/quick");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["flow"]["steps"][1]["id"], "review", "{body}");

    until("the broken-flow ticket to be back in planning", || {
        state_of(&repo, &broken) == "planning"
    });
    let thread =
        std::fs::read_to_string(repo.path().join(format!(".yoi/tickets/{broken}/thread.md")))
            .unwrap();
    assert!(
        thread.contains("role `auditor` is not a configured role"),
        "{thread}"
    );
    assert!(thread.contains("`yoi flow lint`"), "{thread}");

    until("the quick-flow ticket to be done", || {
        state_of(&repo, &id) == "done"
    });
    assert_eq!(
        step_log(&server, &repo, &id),
        ["implement:completed", "review:completed", "merge:completed"]
    );
    let show = repo.yoi(&["ticket", "show", &id]).ok().stdout;
    assert!(show.contains("quick"), "{show}");
    // The flow's assembly: each step's summary under its header, in step order, once.
    let thread =
        std::fs::read_to_string(repo.path().join(format!(".yoi/tickets/{id}/thread.md"))).unwrap();
    assert_eq!(thread.matches("assembly: quick").count(), 1, "{thread}");
    let changed = thread
        .find("### What changed\n\nadded hello.txt")
        .expect(&thread);
    let review = thread
        .find("### What the review found\n\nreviewed")
        .expect(&thread);
    assert!(changed < review, "{thread}");
}

#[test]
fn a_step_failure_follows_the_flow_policy_escalate_or_return_to_planning() {
    let repo = workspace_with_reviewer("exit 3\n", APPROVE);
    let flows = repo.path().join(".yoi/flows");
    std::fs::create_dir_all(&flows).unwrap();
    for (name, policy) in [("careful", "return_to_planning"), ("strict", "escalate")] {
        std::fs::write(
            flows.join(format!("{name}.flow.yaml")),
            format!("schema_version: 1\nname: {name}\ntitle: t\nsteps:\n  - id: implement\n    role: coder\n    output: commit\n    on_failure: {policy}\n  - id: merge\n    role: service\n    output: merge\n"),
        )
        .unwrap();
    }
    yoi_testkit::commit_all(repo.path(), "flows");
    let mut ids = Vec::new();
    for flow in ["careful", "strict"] {
        let id = repo.create(flow, BRIEF);
        name_flow(&repo, &id, flow);

        repo.yoi(&["ticket", "mark-ready", &id]).ok();
        repo.yoi(&["ticket", "queue", &id]).ok();
        ids.push(id);
    }
    let server = Server::spawn(&repo);
    let (careful, strict) = (&ids[0], &ids[1]);
    until("the careful ticket to be back in planning", || {
        state_of(&repo, careful) == "planning"
    });
    let thread = |id: &str| {
        std::fs::read_to_string(repo.path().join(format!(".yoi/tickets/{id}/thread.md"))).unwrap()
    };
    assert!(
        thread(careful).contains("on_failure: return_to_planning"),
        "{}",
        thread(careful)
    );
    // What the attempt produced is kept: the branch and the worktree.
    let branches = git(
        repo.path(),
        &["branch", "--list", &format!("yoi/{careful}-*")],
    );
    assert!(!branches.is_empty());
    until("the strict ticket's circuit to open", || {
        thread(strict).contains("step_circuit_open")
    });
    // One attempt each: neither policy hands a failed step out again.
    for id in [careful, strict] {
        let rows = assignments(&server, &repo, id);
        let implements = rows.iter().filter(|a| a["step"] == "implement").count();
        assert_eq!(implements, 1, "{rows:?}");
        assert!(
            rows.iter()
                .all(|a| a["status"] != "pending" && a["status"] != "claimed"),
            "{rows:?}"
        );
    }
    assert_eq!(state_of(&repo, strict), "inprogress");
}

/// The linked worktrees other than the pods' own (`.worktree/.pods/<pod>`, kept between claims
/// and clean): those of tickets. Checks the pods' ones are clean on the way.
fn ticket_worktrees(repo: &common::Repo) -> Vec<String> {
    let list = git(repo.path(), &["worktree", "list", "--porcelain"]);
    let mut out = Vec::new();
    for block in list.split("\n\n").skip(1).filter(|b| !b.trim().is_empty()) {
        let path = block
            .lines()
            .next()
            .unwrap()
            .trim_start_matches("worktree ");
        if path.contains("/.worktree/.pods/") {
            assert!(block.contains("\ndetached"), "{block}");
            assert_eq!(
                git(Path::new(path), &["status", "--porcelain"]),
                "",
                "{path}"
            );
        } else {
            out.push(path.to_string());
        }
    }
    out
}

#[test]
fn an_agent_named_for_the_verifier_never_replaces_the_validation_commands() {
    // The reviewer's agent is also named for the verifier; it would say `done` and run
    // nothing. The verifier pod runs the brief's commands instead.
    let repo = workspace_with_reviewer(
        "write hello.txt hello\\n\ndone added hello.txt\n",
        "say YOI-VERDICT: approve\ndone reviewed\n",
    );
    let config = repo.path().join(".yoi/workspace.toml");
    let before = std::fs::read_to_string(&config).unwrap();
    let text = before.replace(
        "reviewer = \"fake-review\"\n",
        "reviewer = \"fake-review\"\nverifier = \"fake-review\"\n",
    );
    assert_ne!(text, before, "the verifier is given the agent");
    std::fs::write(&config, text).unwrap();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    until("the ticket to be done", || state_of(&repo, &id) == "done");
    let rows = assignments(&server, &repo, &id);
    let verify = rows.iter().find(|a| a["step"] == "verify").unwrap();
    let report: serde_json::Value =
        serde_json::from_str(verify["result"].as_str().unwrap()).unwrap();
    assert_eq!(
        report["checks"][0]["command"], "test -f hello.txt",
        "{report}"
    );
    assert_eq!(report["checks"][0]["exit_code"], 0, "{report}");
}
