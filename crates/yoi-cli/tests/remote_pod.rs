//! A pod on "another host" (docs/pods.md, "Pods on other hosts"): `yoi pod run --cache DIR`
//! with no copy of the server's repository fetches its claim's commit over the server's git
//! (HTTPS, trusted by `--ca`), runs the scripted agent in a detached worktree of its own cache,
//! pushes the result to its attempt ref and reports it; a remote verifier and a remote reviewer,
//! each on a host of its own, fetch exactly that commit, pass it and push nothing; it is merged,
//! and the ticket's attempt refs are deleted; a cache found broken is made again. On SQLite (trusting `--ca`) and on PostgreSQL (trusting
//! `--pin`, which git takes as the pinned certificate's key). Run
//! as root, every pod is a second unix user (`nobody`) whose folders and `HOME` are its own and
//! who cannot read the server's workspace, so a shared-disk shortcut fails the test.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::pods::{
    as_user, git, give, no_supervised_pods, pod_host, pod_host_for, queued_ticket,
    second_user_host, state_of, until, workspace_with_reviewer, PodHost,
};
use common::server::Server;

#[test]
fn a_pod_without_the_servers_disk_fetches_works_and_pushes_and_the_flow_merges_its_commit() {
    remote_flow(None);
}

#[test]
fn the_same_remote_flow_on_postgres() {
    remote_flow(Some(yoi_testkit::pg::database()));
}

/// The flow of the module's doc, on SQLite or (with its URL) on PostgreSQL.
fn remote_flow(postgres: Option<String>) {
    // Every pod is remote: the server supervises none.
    let repo = workspace_with_reviewer(
        "write hello.txt hello\\n\ndone greeted from afar\n",
        "say YOI-VERDICT: approve\ndone reviewed\n",
    );
    no_supervised_pods(&repo);
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text
        .replace("verifier = 1", "verifier = 0")
        .replace("reviewer = 1", "reviewer = 0");
    std::fs::write(&config, text).unwrap();
    let id = queued_ticket(&repo);
    if let Some(url) = &postgres {
        // The workspace moves to PostgreSQL with its tokens; the server then runs on it.
        repo.yoi(&["db", "copy", "--to", url]).ok();
        let named = std::fs::read_to_string(repo.path().join(".yoi/local/database.url")).unwrap();
        assert_eq!(named.trim(), url.as_str());
    }
    let mut server = Server::spawn_tls(&repo);
    let _login = server.stdout_line();
    let tls = server.stdout_line();
    assert!(tls.starts_with("tls: sha256:"), "{tls}");

    // The pod host: a workspace of its own (for the agent's profile), its own cache and HOME.
    let PodHost { repo: host, .. } = pod_host(
        &repo,
        "write hello.txt hello\\n\ndone greeted from afar\n",
        "far-coder",
        60,
    );
    // A cache left broken (a crash mid-clone, a full disk): the pod makes it again.
    std::fs::create_dir_all(host.path().join("cache/.git")).unwrap();
    std::fs::write(host.path().join("cache/.git/HEAD"), "not a ref\n").unwrap();
    let uid = second_user_host(&repo, host.path());

    let url = format!("https://{}", server.addr);
    // On SQLite the pod (and its git) trusts the certificate's file; on PostgreSQL its pin, which
    // git takes as the pinned certificate's key.
    let pin = tls
        .strip_prefix("tls: ")
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    let trust = match &postgres {
        None => ["--ca", "server.pem"],
        Some(_) => ["--pin", pin.as_str()],
    };
    let out = remote_pod(host.path(), uid, &url, trust, ["coder", "fake", "far"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("1 completed"), "{stderr}");
    assert!(
        stderr.contains("making it again"),
        "the broken cache was not remade: {stderr}"
    );

    // The verifier and the reviewer are remote too, each on a host of its own with its own
    // token: each fetches the commit the coder pushed, passes it, and pushes nothing.
    for (role, agent, script) in [
        ("verifier", "verify", ""),
        (
            "reviewer",
            "fake",
            "say YOI-VERDICT: approve\ndone reviewed\n",
        ),
    ] {
        let name = format!("far-{role}");
        let PodHost { repo: other, .. } =
            pod_host_for(&repo, script, &name, 60, &format!("pod:{role}"));
        if let Some(uid) = uid {
            give(other.path(), uid);
        }
        let before = git(repo.path(), &["for-each-ref", "refs/yoi/attempts/"]);
        let out = remote_pod(other.path(), uid, &url, trust, [role, agent, &name]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{role}: {stderr}");
        assert!(stderr.contains("1 completed"), "{role}: {stderr}");
        let after = git(repo.path(), &["for-each-ref", "refs/yoi/attempts/"]);
        assert!(
            after == before || state_of(&repo, &id) == "done",
            "the {role} pushed: {before} -> {after}"
        );
    }

    // The commit the pod reported is the one it pushed, and the flow merges it: the remote
    // verifier and reviewer passed it, main takes it, and the ticket's attempt refs are gone.
    let rows = repo
        .yoi(&["assignment", "list", "--ticket", &id, "--json"])
        .ok()
        .stdout;
    let rows: serde_json::Value = serde_json::from_str(&rows).unwrap();
    let implement = rows["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["step"] == "implement" && a["status"] == "completed")
        .unwrap_or_else(|| panic!("no completed implement attempt: {rows}"))
        .clone();
    let result: serde_json::Value = match &implement["result"] {
        serde_json::Value::String(text) => serde_json::from_str(text).unwrap(),
        other => other.clone(),
    };
    let pushed = result["commit"].as_str().unwrap().to_string();
    for (step, pod) in [("verify", "far-verifier"), ("review", "far-reviewer")] {
        let done = rows["assignments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["step"] == step && a["status"] == "completed")
            .unwrap_or_else(|| panic!("no completed {step} attempt: {rows}"));
        let by = done["claimed_by"].as_str().unwrap_or_default();
        assert!(
            by.starts_with(pod),
            "{step} was claimed by {by}, not {pod}: {done}"
        );
    }
    until("the ticket to be merged", || state_of(&repo, &id) == "done");
    let ancestor = Command::new("git")
        .args(["merge-base", "--is-ancestor", &pushed, "main"])
        .current_dir(repo.path())
        .status()
        .unwrap();
    assert!(
        ancestor.success(),
        "main does not hold the pushed commit {pushed}"
    );
    assert_eq!(git(repo.path(), &["show", "main:hello.txt"]), "hello");
    // The merge's tidy-up, right after the ticket is done, deletes them.
    until("the ticket's attempt refs to be deleted", || {
        git(repo.path(), &["for-each-ref", "refs/yoi/attempts/"]).is_empty()
    });
    // The attempt's worktree is gone from the cache; the cache stays for the next claim.
    assert!(host.path().join("cache/.git/HEAD").is_file());
    let left: Vec<_> = std::fs::read_dir(host.path().join("cache/attempts"))
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "worktrees left: {left:?}");
    server.terminate();
    let _ = server.child.wait();
}

/// `yoi pod run --once` of `[role, agent, name]` on the host in `folder`, as the second user when
/// there is one, with nothing of the test's environment but `PATH`.
fn remote_pod(
    folder: &Path,
    uid: Option<u32>,
    url: &str,
    trust: [&str; 2],
    [role, agent, name]: [&str; 3],
) -> std::process::Output {
    as_user(Command::new(env!("CARGO_BIN_EXE_yoi")), uid)
        .args([
            "pod",
            "run",
            "--role",
            role,
            "--agent",
            agent,
            "--name",
            name,
            "--server",
            url,
            trust[0],
            trust[1],
            "--cache",
            "cache",
            "--token-file",
            "token",
            "--once",
            "--wait-ms",
            "30000",
        ])
        .current_dir(folder)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", folder)
        .env("USER", name)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}
