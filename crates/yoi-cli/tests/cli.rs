//! The `yoi` command line end to end: real binary, real git repository, real files. Output is
//! compared as (status, stdout, stderr) snapshots with ids and times normalised.

mod common;

use common::{normalize, Repo, COMPLETE_BRIEF};
use yoi_testkit::until_the_file_clock_passes;

#[test]
fn init_refuses_outside_a_git_repository() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::run_yoi(dir.path(), &["init"], None);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("is not inside a git repository"),
        "{}",
        out.stderr
    );
    assert!(!dir.path().join(".yoi").exists());
}

#[test]
fn init_is_idempotent_and_keeps_ignore_lines() {
    let repo = Repo::bare();
    std::fs::write(repo.path().join(".gitignore"), "target/\n").unwrap();
    let first = repo.yoi(&["init"]).ok();
    assert!(first.stdout.contains("created .yoi/workspace.toml"));
    let second = repo.yoi(&["init"]).ok();
    assert!(second.stdout.contains("already initialised"));
    let ignore = std::fs::read_to_string(repo.path().join(".gitignore")).unwrap();
    assert_eq!(
        ignore,
        "target/\n# yoi: local state and ticket worktrees\n/.yoi/local/\n/.worktree/\n"
    );
    let config = std::fs::read_to_string(repo.path().join(".yoi/workspace.toml")).unwrap();
    assert!(config.contains("default_target = \"main\""));
}

#[test]
fn commands_outside_a_workspace_say_to_run_init() {
    let repo = Repo::bare();
    let out = repo.yoi(&["ticket", "list"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("run `yoi init` first"),
        "{}",
        out.stderr
    );
}

#[test]
fn create_prints_only_the_new_id_and_show_reads_it_back() {
    let repo = Repo::init();
    let id = repo.create("First ticket", "## Intent\nShip it.\n");
    assert_eq!(id.len(), 26);
    let out = repo.yoi(&["ticket", "show", &id[22..]]).ok();
    insta::assert_snapshot!(out.normalized());
    let json = repo.yoi(&["ticket", "show", &id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["title"], "First ticket");
    assert_eq!(v["state"], "planning");
    assert_eq!(v["events"][0]["kind"], "create");
    assert_eq!(v["events"][0]["author"], "tester");
    assert_eq!(
        v["missing_brief_sections"],
        serde_json::json!(["Acceptance criteria", "Validation"])
    );
}

#[test]
fn mark_ready_names_the_missing_brief_sections() {
    let repo = Repo::init();
    let id = repo.create("Thin", "## Intent\nSomething.\n");
    let out = repo.yoi(&["ticket", "mark-ready", &id]);
    assert_eq!(out.code, 1);
    insta::assert_snapshot!(out.normalized());
    repo.yoi_stdin(&["ticket", "edit", &id, "--body-file", "-"], COMPLETE_BRIEF)
        .ok();
    let out = repo.yoi(&["ticket", "mark-ready", &id]).ok();
    assert_eq!(normalize(&out.stdout), "[ID]: planning -> ready\n");
}

#[test]
fn queue_refuses_while_a_dependency_is_open_and_names_it() {
    let repo = Repo::init();
    let dep = repo.create("Dependency", COMPLETE_BRIEF);
    let out = repo
        .yoi_stdin(
            &[
                "ticket",
                "create",
                "--title",
                "Waiter",
                "--depends-on",
                &dep,
                "--body-file",
                "-",
            ],
            COMPLETE_BRIEF,
        )
        .ok();
    let waiter = out.stdout.trim().to_string();
    repo.yoi(&["ticket", "mark-ready", &waiter]).ok();
    let out = repo.yoi(&["ticket", "queue", &waiter]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(&format!(
            "blocked by {dep} via depends_on (state: planning)"
        )),
        "{}",
        out.stderr
    );
    // Once the dependency is in flight the waiter may queue behind it.
    repo.yoi(&["ticket", "mark-ready", &dep]).ok();
    repo.yoi(&["ticket", "queue", &dep]).ok();
    repo.yoi(&["ticket", "queue", &waiter]).ok();
    let listed = repo.yoi(&["ticket", "list", "--blocked", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(v["count"], 1);
    assert_eq!(v["tickets"][0]["id"], waiter.as_str());
    assert_eq!(v["tickets"][0]["blockers"][0]["state"], "queued");
    let ready = repo.yoi(&["ticket", "list", "--ready", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&ready.stdout).unwrap();
    assert_eq!(v["count"], 1);
    assert_eq!(v["tickets"][0]["id"], dep.as_str());
}

#[test]
fn state_routes_to_the_dedicated_operation_or_names_the_command() {
    let repo = Repo::init();
    let id = repo.ready_ticket("Routed");
    let out = repo.yoi(&["ticket", "state", &id, "queued"]).ok();
    assert_eq!(normalize(&out.stdout), "[ID]: ready -> queued\n");
    let out = repo.yoi(&["ticket", "state", &id, "inprogress"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("only when the orchestrator accepts"),
        "{}",
        out.stderr
    );
    let out = repo.yoi(&["ticket", "state", &id, "done"]);
    insta::assert_snapshot!("state_no_edge", out.normalized());
    let out = repo.yoi(&["ticket", "state", &id, "closed"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains(&format!("yoi ticket cancel {id} --resolution R")),
        "{}",
        out.stderr
    );
    let out = repo.yoi(&["ticket", "state", &id, "planning"]);
    assert_eq!(out.code, 2, "return to planning needs a reason");
    let out = repo
        .yoi(&[
            "ticket",
            "state",
            &id,
            "planning",
            "--reason",
            "needs a decision on storage",
        ])
        .ok();
    assert_eq!(normalize(&out.stdout), "[ID]: queued -> planning\n");
    let out = repo.yoi(&["ticket", "state", &id, "sideways"]);
    assert_eq!(out.code, 2);
}

#[test]
fn full_lifecycle_with_cancel_reopen_and_resolution() {
    let repo = Repo::init();
    let id = repo.ready_ticket("Lifecycle");
    repo.yoi(&["ticket", "queue", &id]).ok();
    let out = repo
        .yoi(&[
            "ticket",
            "cancel",
            &id,
            "--resolution",
            "Not needed after all.",
        ])
        .ok();
    assert_eq!(normalize(&out.stdout), "[ID]: queued -> closed\n");
    let resolution = std::fs::read_to_string(repo.ticket_dir(&id).join("resolution.md")).unwrap();
    assert_eq!(resolution, "Not needed after all.\n");
    let listed = repo.yoi(&["ticket", "list", "--json"]).ok();
    assert!(
        !listed.stdout.contains(&id),
        "closed tickets are hidden by default"
    );
    let listed = repo
        .yoi(&["ticket", "list", "--state", "all", "--json"])
        .ok();
    assert!(listed.stdout.contains(&id));
    let out = repo.yoi(&["ticket", "close", &id, "--resolution", "again"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("close needs the ticket in done, but it is closed"),
        "{}",
        out.stderr
    );
    repo.yoi(&["ticket", "reopen", &id, "--reason", "it is needed"])
        .ok();
    assert!(!repo.ticket_dir(&id).join("resolution.md").exists());
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(
        thread.contains("Not needed after all."),
        "the resolution stays in the thread"
    );
}

#[test]
fn comments_relations_and_plan_records() {
    let repo = Repo::init();
    let a = repo.create("A", "");
    let b = repo.create("B", "");
    let c = repo.create("C", "");
    repo.yoi(&[
        "ticket",
        "comment",
        &a,
        "--message",
        "first note\n---\nkept",
    ])
    .ok();
    repo.yoi_stdin(
        &["ticket", "comment", &a, "--file", "-", "--kind", "plan"],
        "plan text",
    )
    .ok();
    let out = repo.yoi(&[
        "ticket",
        "comment",
        &a,
        "--message",
        "x",
        "--kind",
        "state_changed",
    ]);
    assert_eq!(out.code, 2);
    repo.yoi(&["ticket", "relation", "add", &a, "depends_on", &b])
        .ok();
    repo.yoi(&[
        "ticket",
        "relation",
        "add",
        &b,
        "depends_on",
        &c,
        "--note",
        "order",
    ])
    .ok();
    let out = repo.yoi(&["ticket", "relation", "add", &c, "depends_on", &a]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(&format!("{c} -> {a} -> {b} -> {c}")),
        "{}",
        out.stderr
    );
    let out = repo.yoi(&["ticket", "relation", "add", &a, "depends_on", &a]);
    assert_eq!(out.code, 1);
    let out = repo.yoi(&["ticket", "relation", "add", &a, "depends_on", &b]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("already has depends_on"));
    let out = repo.yoi(&["ticket", "relation", "add", &a, "parent_of", &b]);
    assert_eq!(out.code, 2);
    let out = repo.yoi(&["ticket", "relation", "list", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["count"], 2);
    repo.yoi(&["ticket", "relation", "rm", &a, "depends_on", &b])
        .ok();
    let out = repo.yoi(&["ticket", "relation", "rm", &a, "depends_on", &b]);
    assert_eq!(out.code, 1);
    repo.yoi(&[
        "ticket",
        "plan",
        "add",
        &a,
        "conflicts_with",
        "--related",
        &c,
        "--note",
        "same files",
    ])
    .ok();
    let out = repo.yoi(&["ticket", "plan", "add", &a, "before"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let out = repo.yoi(&["ticket", "plan", "list", &a, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["records"][0]["kind"], "conflicts_with");
    let show = repo.yoi(&["ticket", "show", &a, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    let bodies: Vec<&str> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["body"].as_str().unwrap())
        .collect();
    assert!(bodies.contains(&"first note\n---\nkept"));
    assert!(bodies.contains(&"plan text"));
}

#[test]
fn operation_ids_replay_and_refuse_conflicts() {
    let repo = Repo::init();
    let id = repo.ready_ticket("Replay");
    let first = repo.yoi(&["--op-id", "q-1", "ticket", "queue", &id]).ok();
    let again = repo.yoi(&["--op-id", "q-1", "ticket", "queue", &id]).ok();
    assert_eq!(normalize(&first.stdout), "[ID]: ready -> queued\n");
    assert_eq!(
        normalize(&again.stdout),
        "[ID]: ready -> queued (replayed)\n"
    );
    let out = repo.yoi(&[
        "--op-id",
        "q-1",
        "ticket",
        "return-to-planning",
        &id,
        "--reason",
        "x",
    ]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("already used for a different request"),
        "{}",
        out.stderr
    );
    let c1 = repo
        .yoi(&["--op-id", "c-1", "ticket", "create", "--title", "Once"])
        .ok();
    let c2 = repo
        .yoi(&["--op-id", "c-1", "ticket", "create", "--title", "Once"])
        .ok();
    assert_eq!(c1.stdout, c2.stdout);
    let c3 = repo.yoi(&["--op-id", "c-1", "ticket", "create", "--title", "Other"]);
    assert_eq!(c3.code, 1);
    let out = repo.yoi(&["--op-id", "has space", "ticket", "list"]);
    assert_eq!(out.code, 2);
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_code() {
    let repo = Repo::init();
    let a = repo.create("Alpha", "");
    let out = repo.yoi(&["ticket", "create", "--title", "  "]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr, "error: title: must not be empty\n");
    let out = repo.yoi(&["ticket", "show", "ZZZZZZ"]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stderr, "error: no ticket matches `ZZZZZZ`\n");
    let out = repo.yoi(&["ticket", "show", "AB"]);
    assert_eq!(out.code, 2);
    let out = repo.yoi(&["ticket", "show", "../../etc"]);
    assert_eq!(out.code, 1);
    let out = repo.yoi(&["ticket", "list", "--state", "open"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("`open` is not a ticket state"));
    let out = repo.yoi(&[
        "ticket",
        "create",
        "--title",
        "x",
        "--body-file",
        "/nonexistent/file",
    ]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("/nonexistent/file"));
    // A corrupt item.md is named with its line and nothing is written.
    let item = repo.ticket_dir(&a).join("item.md");
    std::fs::write(&item, "---\ntitle: [broken\n---\n").unwrap();
    let thread_before = std::fs::read(repo.ticket_dir(&a).join("thread.md")).unwrap();
    let out = repo.yoi(&["ticket", "comment", &a, "--message", "hi"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(&format!(".yoi/tickets/{a}/item.md:")),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read(repo.ticket_dir(&a).join("thread.md")).unwrap(),
        thread_before
    );
    let out = repo.yoi(&["ticket", "frobnicate"]);
    assert_eq!(out.code, 2);
}

#[test]
fn list_prints_a_table_and_json() {
    let repo = Repo::init();
    repo.create("One", "");
    repo.ready_ticket("Two");
    let out = repo.yoi(&["ticket", "list"]).ok();
    insta::assert_snapshot!(out.normalized());
    let out = repo
        .yoi(&["ticket", "list", "--state", "ready", "--json"])
        .ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["count"], 1);
    assert_eq!(v["tickets"][0]["title"], "Two");
}

#[test]
fn doctor_is_clean_on_a_fresh_workspace_and_fails_on_a_broken_one() {
    let repo = Repo::init();
    let id = repo.create("Fine", "");
    let out = repo.yoi(&["ticket", "doctor", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["errors"], 0);
    std::fs::write(repo.ticket_dir(&id).join("item.md"), "no frontmatter\n").unwrap();
    let out = repo.yoi(&["ticket", "doctor", "--json"]);
    assert_eq!(out.code, 1);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert!(v["errors"].as_u64().unwrap() >= 1);
    let f = &v["findings"][0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["ticket"], id.as_str());
    let out = repo.yoi(&["doctor"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("problems found"));
}

#[test]
fn doctor_keeps_its_cache_only_when_asked_and_sees_an_edit_made_after_it() {
    let repo = Repo::init();
    let id = repo.create("Cached", "");
    let cache = repo.path().join(".yoi/local/doctor-cache");
    // Every time the ticket's files carry is older than the next pass, so it may keep the
    // ticket.
    until_the_file_clock_passes(&repo.ticket_dir(&id), &repo.path().join(".yoi/local"));
    let out = repo.yoi(&["ticket", "doctor", "--json", "--no-cache"]).ok();
    assert!(
        !cache.exists(),
        "--no-cache neither reads nor writes the cache"
    );
    let first = out.stdout;
    let out = repo.yoi(&["ticket", "doctor", "--json"]).ok();
    assert_eq!(out.stdout, first);
    // The file's index names each ticket it keeps an entry for.
    let kept = std::fs::read(&cache).unwrap();
    assert!(
        kept.windows(id.len()).any(|w| w == id.as_bytes()),
        "the cache keeps an entry for {id}"
    );
    let out = repo.yoi(&["ticket", "doctor", "--json"]).ok();
    assert_eq!(
        out.stdout, first,
        "read back from the cache, the same report"
    );
    // An edit right after: the same size, so only the file's times tell.
    let item = repo.ticket_dir(&id).join("item.md");
    let text = std::fs::read_to_string(&item).unwrap();
    assert!(text.contains("state: planning"), "{text}");
    std::fs::write(
        &item,
        text.replacen("state: planning", "state: planxing", 1),
    )
    .unwrap();
    let out = repo.yoi(&["ticket", "doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["ok"], false, "{}", out.stdout);
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["check"] == "item.state" && f["ticket"] == id.as_str()),
        "{}",
        out.stdout
    );
}

#[test]
fn dash_c_targets_another_folder_and_suffixes_resolve() {
    let repo = Repo::init();
    let id = repo.create("Elsewhere", "");
    let other = tempfile::tempdir().unwrap();
    let out = common::run_yoi(
        other.path(),
        &[
            "-C",
            repo.path().to_str().unwrap(),
            "ticket",
            "show",
            &id[20..].to_lowercase(),
            "--json",
        ],
        None,
    )
    .ok();
    assert!(out.stdout.contains("Elsewhere"));
    let sub = repo.path().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let out = common::run_yoi(&sub, &["ticket", "list", "--json"], None).ok();
    assert!(out.stdout.contains(&id), "found from a subfolder");
}

/// Commit what is in the repository, then accept `id` the way the orchestrator does: branch
/// `yoi/<id>-<slug>`, worktree `.worktree/<id>-<slug>`, then the store's `accept`. Returns the
/// worktree path relative to the repository root.
fn accept_like_the_orchestrator(repo: &Repo, id: &str, slug: &str) -> String {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(["-c", "maintenance.auto=false"])
            .args(args)
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    if !repo.path().join("README.md").exists() {
        std::fs::write(repo.path().join("README.md"), "hello\n").unwrap();
        git(&["add", "README.md"]);
        git(&["commit", "-q", "-m", "base"]);
    }
    let head = git(&["rev-parse", "HEAD"]).trim().to_string();
    let branch = format!("yoi/{id}-{slug}");
    let worktree = format!(".worktree/{id}-{slug}");
    yoi_git::create_branch(repo.path(), &branch, &head).unwrap();
    std::fs::create_dir_all(repo.path().join(".worktree")).unwrap();
    yoi_git::add_worktree(repo.path(), &repo.path().join(&worktree), &branch).unwrap();
    let ws = yoi_store::Workspace::open(repo.path()).unwrap();
    let ctx = yoi_store::Ctx::new(
        yoi_core::Principal::orchestrator(),
        yoi_core::Timestamp::parse("2026-11-29T10:00:00Z").unwrap(),
    );
    let ev = yoi_store::ops::AcceptEvidence {
        branch,
        worktree: worktree.clone(),
        base_commit: head,
        assignment: "asg-1".into(),
        decision: "Routing decision: implementation_ready".into(),
    };
    yoi_store::ops::accept(&ws, &ctx, id, &Default::default(), &ev).unwrap();
    worktree
}

#[test]
fn cancel_of_an_accepted_ticket_prints_what_happened_to_its_worktree() {
    let repo = Repo::init();
    let clean = repo.ready_ticket("Clean");
    let dirty = repo.ready_ticket("Dirty");
    for id in [&clean, &dirty] {
        repo.yoi(&["ticket", "queue", id]).ok();
    }
    let clean_wt = accept_like_the_orchestrator(&repo, &clean, "clean");
    let dirty_wt = accept_like_the_orchestrator(&repo, &dirty, "dirty");
    std::fs::write(repo.path().join(&dirty_wt).join("wip.txt"), "wip").unwrap();

    let out = repo
        .yoi(&["ticket", "cancel", &clean, "--resolution", "Dropped."])
        .ok();
    assert_eq!(
        normalize(&out.stdout),
        "[ID]: inprogress -> closed\nnote: removed the worktree .worktree/[ID]-clean (it was clean); the branch yoi/[ID]-clean is kept\n"
    );
    assert!(!repo.path().join(&clean_wt).exists());

    let out = repo
        .yoi(&[
            "ticket",
            "cancel",
            &dirty,
            "--resolution",
            "Dropped.",
            "--json",
        ])
        .ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["to"], "closed");
    assert_eq!(
        v["notes"],
        serde_json::json!([format!(
            "kept the worktree {dirty_wt}: it has uncommitted changes (1 file); the branch yoi/{dirty}-dirty is kept"
        )])
    );
    assert!(repo.path().join(&dirty_wt).join("wip.txt").is_file());

    // Doctor sees the kept worktree of a closed ticket: a warning, so it still exits 0.
    let out = repo.yoi(&["ticket", "doctor"]).ok();
    assert!(
        out.stdout.contains(&format!(
            "warning[worktree.dirty_closed] {dirty_wt}: worktree `{dirty_wt}`"
        )),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains(&format!("then `git worktree remove {dirty_wt}`")),
        "{}",
        out.stdout
    );
}

#[test]
fn output_into_a_closed_pipe_ends_quietly_instead_of_panicking() {
    use std::os::unix::process::ExitStatusExt;
    let repo = Repo::init();
    for i in 0..3 {
        repo.create(&format!("Ticket {i}"), "## Intent\nx\n");
    }
    // The reading end is gone before yoi writes: the write gets EPIPE.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_yoi"))
        .args(["ticket", "list"])
        .current_dir(repo.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
}
