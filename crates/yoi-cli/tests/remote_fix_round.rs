//! A remote fix round from a local pod's kept work (docs/pods.md, "Retries keep the work" and
//! "Pods on other hosts"): a coder pod on the server's disk commits half the work and runs past
//! its timeout, so its failure keeps that commit for the next attempt; the commit lives in the
//! server's object store, under no branch. A pod without the server's disk (`yoi pod run
//! --cache DIR`) then takes the next attempt: it must fetch that commit over the server's git —
//! which serves only what a ref reaches — and start from it. The server keeps a kept commit
//! under the failed attempt's own ref (`refs/yoi/attempts/<ticket>/<attempt>.<fence>`) for
//! exactly that, and the ref goes with the ticket's other attempt refs when it is merged.

mod common;

use std::process::{Command, Stdio};

use common::pods::{
    assignments, git, no_supervised_pods, own_pod, pod_host, pod_log, queued_ticket, state_of,
    until, workspace_with_reviewer, PodHost,
};
use common::server::Server;

#[test]
fn a_remote_pod_starts_its_fix_round_from_the_work_a_local_pod_kept() {
    // The server's coder: attempt 1 commits half the work, then sleeps past its 2 s timeout.
    let repo = workspace_with_reviewer(
        "attempt 1 write part1.txt first half\\n\nattempt 1 commit first half\nattempt 1 sleep 600000\n",
        "say YOI-VERDICT: approve\ndone reviewed\n",
    );
    no_supervised_pods(&repo);
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        "output = \"text\"\ntimeout_secs = 60",
        "output = \"text\"\ntimeout_secs = 2",
        1,
    );
    std::fs::write(&config, text).unwrap();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let base = git(repo.path(), &["rev-parse", "main"]);

    let mut local = own_pod(&repo, "near", &["--once"]);
    assert_eq!(
        local.wait().unwrap().code(),
        Some(1),
        "the local attempt fails: {}",
        std::fs::read_to_string(pod_log(&repo, "near")).unwrap_or_default()
    );
    let rows = assignments(&server, &repo, &id);
    let first = rows
        .iter()
        .find(|a| a["step"] == "implement" && a["attempt"] == 1)
        .unwrap_or_else(|| panic!("no attempt 1: {rows:?}"));
    assert_eq!(first["status"], "failed", "{first}");
    let report: serde_json::Value =
        serde_json::from_str(first["result"].as_str().unwrap()).unwrap();
    assert_eq!(report["keep_work"], true, "{report}");
    let half = report["commit"].as_str().unwrap().to_string();
    // The kept commit is under the failed attempt's ref, so a fetch over git can reach it.
    let kept_ref = format!(
        "refs/yoi/attempts/{id}/1.{}",
        first["fence"].as_i64().unwrap()
    );
    assert_eq!(
        git(
            repo.path(),
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/yoi/attempts/"
            ]
        ),
        format!("{kept_ref} {half}"),
        "the server keeps the kept commit under the failed attempt's ref"
    );

    // The remote pod's agent checks that its folder starts at the kept commit, then finishes.
    let PodHost { repo: host, token } = pod_host(
        &repo,
        "attempt 2 run test \"$(cat part1.txt)\" = \"first half\" && test \"$(git log -1 --format=%s)\" = \"first half\"\nattempt 2 write hello.txt hello\\n\nattempt 2 done finished the second half\n",
        "far-coder",
        60,
    );
    // Its git speaks protocol v0, whose upload-pack serves only commits a ref reaches (v2's
    // takes any object id the repository has): the ref is what makes the commit fetchable
    // whatever the pod's git, and what keeps it from git's pruning until the ticket is done.
    std::fs::write(
        host.path().join(".gitconfig"),
        "[protocol]\n\tversion = 0\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_yoi"))
        .args([
            "pod",
            "run",
            "--role",
            "coder",
            "--agent",
            "fake",
            "--name",
            "far",
            "--server",
            &format!("http://{}", server.addr),
            "--cache",
            "cache",
            "--token-file",
        ])
        .arg(&token)
        .args(["--once", "--wait-ms", "30000"])
        .current_dir(host.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", host.path())
        .env("USER", "far")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("1 completed"), "{stderr}");

    // Attempt 2 was told what is already there, and its result carries the first half.
    let rows = assignments(&server, &repo, &id);
    let second = rows
        .iter()
        .find(|a| a["step"] == "implement" && a["attempt"] == 2)
        .unwrap_or_else(|| panic!("no attempt 2: {rows:?}"));
    assert_eq!(second["status"], "completed", "{second}");
    let prompt = std::fs::read_to_string(
        host.path()
            .join(".yoi/local/pods/far/runs")
            .join(second["id"].as_str().unwrap())
            .join("prompt.seen"),
    )
    .unwrap();
    assert!(
        prompt.contains("Already here: the work of attempt 1"),
        "{prompt}"
    );
    let branch = format!("yoi/{id}-say-hello");
    let head = git(repo.path(), &["rev-parse", &branch]);
    assert_ne!(head, base);
    assert_eq!(
        git(repo.path(), &["merge-base", &half, &head]),
        half,
        "the kept commit is on the branch"
    );
    assert_eq!(
        git(repo.path(), &["show", &format!("{head}:hello.txt")]),
        "hello"
    );

    // The server's verifier and reviewer pass it; the merge takes every attempt ref away.
    until("the ticket to be merged", || state_of(&repo, &id) == "done");
    assert_eq!(git(repo.path(), &["show", "main:part1.txt"]), "first half");
    until("the ticket's attempt refs to be deleted", || {
        git(repo.path(), &["for-each-ref", "refs/yoi/attempts/"]).is_empty()
    });
}
