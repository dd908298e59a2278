//! The server's repository over git's smart HTTP behind pod tokens (docs/pods.md, "Pods on
//! other hosts"): a pod token fetches its claim's commit into a clone of its own and pushes its
//! result to its claim's attempt ref; a push to `refs/heads/main`, to another fence's ref, with
//! another role's token, by another incarnation of the same pod name and token, and after the
//! claim ended is refused before git writes anything — the
//! refs stay as they were. Every git command is the real git CLI against the real server.

mod common;

use std::path::Path;
use std::process::Command;

use common::pods::{git, no_supervised_pods, queued_ticket, workspace};
use common::server::Server;

/// `git ARGS` in `dir` with `token` as the bearer: (success, stderr).
fn git_as(dir: &Path, token: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new("git")
        .arg("-c")
        .arg(format!("http.extraHeader=Authorization: Bearer {token}"))
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `file` written with `text` and committed in `dir` as a pod commits (an identity of its own);
/// the new commit.
fn pod_commits(dir: &Path, file: &str, text: &str) -> String {
    std::fs::write(dir.join(file), text).unwrap();
    git(dir, &["add", file]);
    git(
        dir,
        &[
            "-c",
            "user.name=pod",
            "-c",
            "user.email=pod@yoi.invalid",
            "commit",
            "-qm",
            file,
        ],
    );
    git(dir, &["rev-parse", "HEAD"])
}

#[test]
fn a_pod_token_fetches_its_claim_and_pushes_only_to_its_own_live_attempt_ref() {
    let (repo, _) = workspace("sleep 600000\n", 60);
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
    let coder = token("remote-coder", "pod:coder");
    let reviewer = token("remote-reviewer", "pod:reviewer");
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
        (status, serde_json::from_str(&text).unwrap_or_default())
    };
    let (status, body) = post(&coder, "/pods", serde_json::json!({ "name": "far" }));
    assert_eq!(status, 201, "{body}");
    let pod = body["pod"]["id"].as_str().unwrap().to_string();
    let (status, work) = post(
        &coder,
        "/assignments/claim",
        serde_json::json!({ "pod": pod, "wait_ms": 20000 }),
    );
    assert_eq!(status, 200, "{work}");
    let a = &work["assignment"];
    let (attempt, fence) = (a["attempt"].as_i64().unwrap(), a["fence"].as_i64().unwrap());
    let head = work["head_commit"].as_str().unwrap().to_string();
    let attempt_ref = format!("refs/yoi/attempts/{id}/{attempt}.{fence}");
    let url = format!("http://{}/git", server.addr);

    // The pod's own clone, sharing nothing with the server's repository.
    let far = tempfile::tempdir().unwrap();
    git(far.path(), &["init", "-q", "-b", "work"]);
    let (ok, err) = git_as(far.path(), &coder, &["fetch", "-q", &url, &head]);
    assert!(ok, "fetching the claim's commit: {err}");
    assert_eq!(git(far.path(), &["rev-parse", "FETCH_HEAD"]), head);
    // No token, no fetch.
    let (ok, _) = git_as(far.path(), "", &["fetch", "-q", &url, &head]);
    assert!(!ok, "a fetch without a token was served");

    git(far.path(), &["checkout", "-q", "--detach", &head]);
    let result = pod_commits(far.path(), "hello.txt", "hello\n");
    let main_before = git(repo.path(), &["rev-parse", "refs/heads/main"]);
    let refs_before = git(repo.path(), &["for-each-ref"]);

    // Refused, each before git writes anything: a branch, another fence's ref, another role's
    // token on the right ref.
    let other_fence = format!("refs/yoi/attempts/{id}/{attempt}.{}", fence + 1);
    for (tok, target, why) in [
        (&coder, "refs/heads/main", "a branch"),
        (&coder, other_fence.as_str(), "another fence's ref"),
        (&reviewer, attempt_ref.as_str(), "another role's token"),
    ] {
        let (ok, err) = git_as(
            far.path(),
            tok,
            &["push", "-q", &url, &format!("HEAD:{target}")],
        );
        assert!(!ok, "{why}: pushed");
        assert!(err.contains("403"), "{why}: {err}");
    }
    // A second pod under the same token and name is another incarnation: naming itself, as
    // yoi's pods do, it cannot set the first one's claim's ref.
    let (status, body) = post(&coder, "/pods", serde_json::json!({ "name": "far" }));
    assert_eq!(status, 201, "{body}");
    let twin = body["pod"]["id"].as_str().unwrap().to_string();
    assert_ne!(twin, pod);
    let (ok, err) = git_as(
        far.path(),
        &coder,
        &[
            "-c",
            &format!("http.extraHeader=Yoi-Pod: {twin}"),
            "push",
            "-q",
            &url,
            &format!("HEAD:{attempt_ref}"),
        ],
    );
    assert!(
        !ok && err.contains("403"),
        "another incarnation's push: {err}"
    );
    assert_eq!(
        git(repo.path(), &["for-each-ref"]),
        refs_before,
        "no ref moved"
    );
    assert_eq!(
        git(repo.path(), &["rev-parse", "refs/heads/main"]),
        main_before
    );
    assert!(
        Command::new("git")
            .args(["cat-file", "-e", &result])
            .current_dir(repo.path())
            .status()
            .is_ok_and(|s| !s.success()),
        "a refused push left its objects"
    );

    // Its own live claim's ref: taken.
    let (ok, err) = git_as(
        far.path(),
        &coder,
        &["push", "-q", &url, &format!("HEAD:{attempt_ref}")],
    );
    assert!(ok, "pushing the attempt ref: {err}");
    assert_eq!(git(repo.path(), &["rev-parse", &attempt_ref]), result);

    // Once the claim has ended, its ref takes nothing more.
    let aid = a["id"].as_str().unwrap();
    let (status, body) = post(
        &coder,
        &format!("/assignments/{aid}/fail"),
        serde_json::json!({ "pod": pod, "fence": fence, "reason": "stopping" }),
    );
    assert!(status < 300, "{status} {body}");
    pod_commits(far.path(), "hello.txt", "late\n");
    let (ok, err) = git_as(
        far.path(),
        &coder,
        &["push", "-q", "-f", &url, &format!("HEAD:{attempt_ref}")],
    );
    assert!(!ok && err.contains("403"), "a late push: {err}");
    assert_eq!(git(repo.path(), &["rev-parse", &attempt_ref]), result);
}

/// Packs in the repository at `dir`.
fn packs(dir: &Path) -> usize {
    std::fs::read_dir(dir.join(".git/objects/pack"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "pack"))
        })
        .count()
}

/// A pod's push answers once git has taken it: the repository's maintenance — which git's
/// `receive-pack` would run inside the push, and which repacks everything once enough packs
/// pile up — runs after it, in the background. The server's repository is set so that any
/// `git maintenance run --auto` consolidates its packs (`gc.autoPackLimit = 1`, every push kept
/// as a pack): right after the push there is one pack more, and a little later one pack.
#[test]
fn a_push_answers_before_the_repository_is_maintained_and_maintenance_follows() {
    let (repo, _) = workspace("sleep 600000\n", 60);
    no_supervised_pods(&repo);
    let id = queued_ticket(&repo);
    for (k, v) in [("gc.autoPackLimit", "1"), ("receive.unpackLimit", "1")] {
        git(repo.path(), &["config", k, v]);
    }
    // Two packs already: any automatic maintenance would make them one.
    git(repo.path(), &["repack", "-q"]);
    std::fs::write(repo.path().join("extra.txt"), "extra\n").unwrap();
    git(repo.path(), &["add", "extra.txt"]);
    git(repo.path(), &["commit", "-qm", "extra"]);
    git(repo.path(), &["repack", "-q"]);
    let before = packs(repo.path());
    assert!(before >= 2, "{before} packs");
    let server = Server::spawn(&repo);
    let coder = repo
        .yoi(&["token", "create", "--name", "far", "--scope", "pod:coder"])
        .ok()
        .stdout
        .trim()
        .to_string();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let post = |path: &str, body: serde_json::Value| -> serde_json::Value {
        let mut resp = agent
            .post(&format!("http://{}/api/v1{path}", server.addr))
            .header("Authorization", &format!("Bearer {coder}"))
            .send_json(body)
            .unwrap();
        serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap()
    };
    let pod = post("/pods", serde_json::json!({ "name": "far" }))["pod"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let work = post(
        "/assignments/claim",
        serde_json::json!({ "pod": pod, "wait_ms": 20000 }),
    );
    let a = &work["assignment"];
    let attempt_ref = format!(
        "refs/yoi/attempts/{id}/{}.{}",
        a["attempt"].as_i64().unwrap(),
        a["fence"].as_i64().unwrap()
    );
    let head = work["head_commit"].as_str().unwrap().to_string();
    let url = format!("http://{}/git", server.addr);
    let far = tempfile::tempdir().unwrap();
    git(far.path(), &["init", "-q", "-b", "work"]);
    let (ok, err) = git_as(far.path(), &coder, &["fetch", "-q", &url, &head]);
    assert!(ok, "{err}");
    git(far.path(), &["checkout", "-q", "--detach", &head]);
    let pushed = pod_commits(far.path(), "hello.txt", "hello\n");
    let (ok, err) = git_as(
        far.path(),
        &coder,
        &["push", "-q", &url, &format!("HEAD:{attempt_ref}")],
    );
    assert!(ok, "{err}");
    assert_eq!(
        packs(repo.path()),
        before + 1,
        "the push was kept as a pack and nothing repacked inside it"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while packs(repo.path()) > 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "no maintenance after the push: {} packs",
            packs(repo.path())
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // The pushed commit survived the repack.
    assert_eq!(git(repo.path(), &["rev-parse", &attempt_ref]), pushed);
}
