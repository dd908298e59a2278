//! `[pods] transport = "remote"` (docs/pods.md, "Pods through a remote of the repository"):
//! pods without the server's disk fetch from and push to a remote of the server's repository,
//! a real git server on loopback (`git http-backend` behind basic auth, each side with a
//! password of its own, given by a credential helper of its own git configuration).
//!
//! - the flow: a `yoi pod run --cache` coder with its own cache and `HOME` fetches the claim's
//!   commit from the remote, pushes its result there, the server fetches it and its own
//!   verifier and reviewer pass it, and it is merged; the branch moved to exactly the commit
//!   pushed, no yoi token or `Yoi-Pod` header reached the remote, and no ref of yoi's is left
//!   here or there;
//! - the remote is down when a claim is prepared: nothing is handed out, the row says why, and
//!   it is handed out once the remote is back;
//! - a report of a commit that is not at the attempt ref on the remote is refused, and taken
//!   once it is pushed there;
//! - a report after the claim expired is refused, and its attempt ref is deleted on the remote;
//! - a report while the remote is down answers 503 and changes nothing, and is taken once the
//!   remote is back.
//!
//! The flow and the claim put back run on SQLite and on PostgreSQL. In the flow the pod reaches
//! the server over HTTPS (`--ca`) and, run as root, is a second unix user (`nobody`) who cannot
//! read the server's workspace, so it has the remote and the API and nothing else; the other
//! tests reach the server over plain HTTP on loopback as the test's own user.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::pods::{
    as_user, assignments, git, no_supervised_pods, pod_host, queued_ticket, second_user_host,
    state_of, until, workspace, workspace_with_reviewer, PodHost,
};
use common::server::Server;
use common::Repo;
use yoi_testkit::child::Owned;
use yoi_testkit::git_remote::GitRemote;

const CODER: &str = "write hello.txt hello\\n\ndone greeted through the remote\n";

/// A credential helper answering `user` and `password`, as git config takes it.
fn helper(user: &str, password: &str) -> String {
    format!("!f() {{ test \"$1\" = get && printf 'username={user}\\npassword={password}\\n'; }}; f")
}

/// Make `repo` (committed, with its pods' transport set to `remote`) a clone of a new remote:
/// `origin`, reached with the server's own credential helper.
fn with_remote(repo: &Repo) -> GitRemote {
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let remote_text = text.replace("transport = \"server\"", "transport = \"remote\"");
    assert_ne!(text, remote_text, "the default file names the transport");
    std::fs::write(&config, remote_text).unwrap();
    yoi_testkit::commit_all(repo.path(), "pods through origin");
    let remote = GitRemote::start(
        &[("server", "server-pw"), ("pod", "pod-pw")],
        Some(repo.path()),
    );
    git(repo.path(), &["remote", "add", "origin", &remote.url()]);
    git(
        repo.path(),
        &[
            "config",
            "credential.helper",
            &helper("server", "server-pw"),
        ],
    );
    remote
}

/// The pod host's own git credentials for the remote, in its `HOME`.
fn pod_credentials(host: &std::path::Path) {
    std::fs::write(
        host.join(".gitconfig"),
        format!(
            "[credential]\n\thelper = \"{}\"\n",
            helper("pod", "pod-pw").replace('"', "\\\"")
        ),
    )
    .unwrap();
}

/// `yoi pod run --cache` on the pod host, reaching the server at `server` (its URL) for the API
/// only.
fn remote_pod(host: &Path, server: &str, name: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_yoi"));
    cmd.args([
        "pod",
        "run",
        "--role",
        "coder",
        "--agent",
        "fake",
        "--name",
        name,
        "--server",
        server,
        "--cache",
        "cache",
        "--token-file",
        "token",
        "--once",
        "--wait-ms",
        "30000",
    ])
    .current_dir(host)
    .env_clear()
    .env("PATH", std::env::var("PATH").unwrap_or_default())
    .env("HOME", host)
    .env("USER", "far")
    .stdin(Stdio::null());
    cmd
}

fn result_commit(row: &serde_json::Value) -> String {
    let result: serde_json::Value = match &row["result"] {
        serde_json::Value::String(text) => serde_json::from_str(text).unwrap(),
        other => other.clone(),
    };
    result["commit"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_remote_pod_works_through_the_repositorys_remote_and_the_flow_merges_exactly_its_commit() {
    flow(None);
}

#[test]
fn the_same_flow_through_the_remote_on_postgres() {
    flow(Some(yoi_testkit::pg::database()));
}

/// The server's workspace with its remote and a queued ticket, on SQLite or (with its URL) on
/// PostgreSQL; its server (no supervised pods), over HTTPS with `tls`; and a coder pod's host
/// with the remote's credentials (and the server's certificate, `server.pem`, with `tls`).
fn setup(postgres: Option<String>, tls: bool) -> (Repo, GitRemote, String, Server, Repo) {
    let repo = workspace_with_reviewer(CODER, "say YOI-VERDICT: approve\ndone reviewed\n");
    no_supervised_pods(&repo);
    let remote = with_remote(&repo);
    let id = queued_ticket(&repo);
    if let Some(url) = &postgres {
        // The workspace moves to PostgreSQL with its tokens; the server then runs on it.
        repo.yoi(&["db", "copy", "--to", url]).ok();
    }
    let server = if tls {
        Server::spawn_tls(&repo)
    } else {
        Server::spawn(&repo)
    };
    let PodHost { repo: host, .. } = pod_host(&repo, CODER, "far-coder", 60);
    pod_credentials(host.path());
    (repo, remote, id, server, host)
}

/// The flow of the module's doc, on SQLite or (with its URL) on PostgreSQL.
fn flow(postgres: Option<String>) {
    let (repo, remote, id, server, host) = setup(postgres, true);
    // Run as root, the pod is the second user: its host is its own, the server's workspace is
    // not readable to it.
    let uid = second_user_host(&repo, host.path());

    let url = format!("https://{}", server.addr);
    let mut pod = as_user(remote_pod(host.path(), &url, "far"), uid);
    let out = pod.args(["--ca", "server.pem"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("1 completed"), "{stderr}");

    // Over HTTPS the CLI asks the server (trusting its certificate as the workspace records it).
    let rows = repo
        .yoi(&["assignment", "list", "--ticket", &id, "--json"])
        .ok()
        .stdout;
    let rows: serde_json::Value = serde_json::from_str(&rows).unwrap();
    let rows = rows["assignments"].as_array().unwrap().clone();
    let implement = rows
        .iter()
        .find(|a| a["step"] == "implement" && a["status"] == "completed")
        .unwrap_or_else(|| panic!("no completed implement attempt: {rows:?}"));
    let pushed = result_commit(implement);
    assert_eq!(pushed.len(), 40, "{implement}");
    // The commit was made in the pod's cache, and the server has it from the remote.
    let cache = host.path().join("cache/.git");
    let made_there = Command::new("git")
        .arg("--git-dir")
        .arg(&cache)
        .args(["cat-file", "-e", &format!("{pushed}^{{commit}}")])
        .status()
        .unwrap();
    assert!(made_there.success(), "the pod's cache lacks {pushed}");
    if let Some(uid) = uid {
        use std::os::unix::fs::MetadataExt;
        let owner = std::fs::metadata(&cache).unwrap().uid();
        assert_eq!(
            owner, uid,
            "the cache was made by another user than the pod's"
        );
    }

    until("the ticket to be merged", || state_of(&repo, &id) == "done");
    // The branch was moved to exactly the commit pushed (the verifier and the reviewer move
    // nothing), and main holds it.
    let branch = git(
        repo.path(),
        &["for-each-ref", "--format=%(refname)", "refs/heads/yoi/"],
    );
    assert_eq!(git(repo.path(), &["rev-parse", branch.trim()]), pushed);
    let ancestor = Command::new("git")
        .args(["merge-base", "--is-ancestor", &pushed, "main"])
        .current_dir(repo.path())
        .status()
        .unwrap();
    assert!(ancestor.success(), "main does not hold {pushed}");
    assert_eq!(git(repo.path(), &["show", "main:hello.txt"]), "hello");

    // Nothing of yoi's is left, here or on the remote.
    until("the attempt refs to go here", || {
        git(repo.path(), &["for-each-ref", "refs/yoi/"]).is_empty()
    });
    until("yoi's refs to go on the remote", || {
        remote.refs("refs/yoi/").is_empty()
    });

    // The remote heard from the server and from the pod, each with its own credentials, and
    // never a yoi token nor a pod's name.
    let seen = remote.seen();
    let users: std::collections::BTreeSet<_> = seen.iter().filter_map(|s| s.user.clone()).collect();
    assert_eq!(
        users.into_iter().collect::<Vec<_>>(),
        ["pod", "server"],
        "{seen:?}"
    );
    for s in &seen {
        assert!(
            s.authorization
                .as_deref()
                .is_none_or(|a| a.starts_with("Basic ")),
            "a yoi token reached the remote: {s:?}"
        );
        assert!(
            s.yoi_pod.is_none(),
            "a Yoi-Pod header reached the remote: {s:?}"
        );
    }
    // A push from the pod (receive-pack) and a fetch (upload-pack), as user `pod`.
    for service in ["git-receive-pack", "git-upload-pack"] {
        assert!(
            seen.iter()
                .any(|s| s.user.as_deref() == Some("pod") && s.path.ends_with(service)),
            "the pod made no {service} request: {seen:?}"
        );
    }
    // The cache has no worktree left.
    let left: Vec<_> = std::fs::read_dir(host.path().join("cache/attempts"))
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "worktrees left: {left:?}");
    let doctor = repo.yoi(&["ticket", "doctor", "--json"]);
    assert_eq!(doctor.code, 0, "{}", doctor.stdout);
    server.terminate();
}

#[test]
fn no_claim_is_handed_out_while_the_remote_is_down_and_it_is_once_it_is_back() {
    remote_down(None);
}

#[test]
fn the_claim_put_back_while_the_remote_is_down_on_postgres() {
    remote_down(Some(yoi_testkit::pg::database()));
}

/// The remote down while a claim is prepared, on SQLite or (with its URL) on PostgreSQL.
fn remote_down(postgres: Option<String>) {
    let (repo, remote, id, server, host) = setup(postgres, false);
    remote.set_down(true);

    let pod = Owned(
        remote_pod(host.path(), &format!("http://{}", server.addr), "far")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // The claim is put back with the reason, and the step stays queued for the role.
    until("the claim to be put back with its reason", || {
        assignments(&server, &repo, &id).iter().any(|a| {
            a["step"] == "implement"
                && a["status"] == "pending"
                && a["claimed_by"].is_null()
                && a["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("not handed out") && e.contains("`origin`"))
        })
    });
    let rows = assignments(&server, &repo, &id);
    assert!(
        rows.iter().all(|a| a["status"] != "claimed"),
        "a claim is out while the remote is down: {rows:?}"
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(remote.refs("refs/yoi/").is_empty());

    remote.set_down(false);
    let out = pod.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("1 completed"), "{stderr}");
    assert!(
        stderr.contains("remote `origin`") && stderr.contains("could not be reached"),
        "the pod was not told why: {stderr}"
    );
    // The same attempt, handed out once the remote was back.
    let rows = assignments(&server, &repo, &id);
    let implement = rows
        .iter()
        .find(|a| a["step"] == "implement" && a["status"] == "completed")
        .unwrap_or_else(|| panic!("no completed implement attempt: {rows:?}"));
    assert_eq!(implement["attempt"], 1, "{implement}");
    until("the ticket to be merged", || state_of(&repo, &id) == "done");
    until("yoi's refs to go on the remote", || {
        remote.refs("refs/yoi/").is_empty()
    });
    server.terminate();
}

/// A pod of the test's own speaking the API: its token, its registered id.
struct ApiPod {
    agent: ureq::Agent,
    base: String,
    token: String,
    id: String,
}

impl ApiPod {
    fn register(repo: &Repo, server: &Server, name: &str) -> ApiPod {
        let token = repo
            .yoi(&["token", "create", "--name", name, "--scope", "pod:coder"])
            .ok()
            .stdout
            .trim()
            .to_string();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut pod = ApiPod {
            agent,
            base: format!("http://{}/api/v1", server.addr),
            token,
            id: String::new(),
        };
        let (status, body) = pod.post("/pods", serde_json::json!({ "name": name }));
        assert_eq!(status, 201, "{body}");
        pod.id = body["pod"]["id"].as_str().unwrap().to_string();
        pod
    }

    fn post(&self, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
        let mut resp = self
            .agent
            .post(&format!("{}{path}", self.base))
            .header("Authorization", &format!("Bearer {}", self.token))
            .send_json(body)
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap();
        (status, serde_json::from_str(&text).unwrap_or_default())
    }

    fn claim(&self) -> serde_json::Value {
        let (status, work) = self.post(
            "/assignments/claim",
            serde_json::json!({ "pod": self.id, "wait_ms": 20000, "remote": true }),
        );
        assert_eq!(status, 200, "{work}");
        work
    }

    fn complete(&self, work: &serde_json::Value, commit: &str) -> (u16, serde_json::Value) {
        let a = &work["assignment"];
        self.post(
            &format!("/assignments/{}/complete", a["id"].as_str().unwrap()),
            serde_json::json!({
                "pod": self.id,
                "fence": a["fence"],
                "report": { "outcome": "done", "summary": "by hand", "commit": commit },
            }),
        )
    }
}

/// A clone of the remote with the claim's head fetched by the ref the claim names, and a
/// commit on it (`hello.txt`): the commit.
fn commit_on_claim(remote: &GitRemote, work: &serde_json::Value) -> (tempfile::TempDir, String) {
    let far = tempfile::tempdir().unwrap();
    git(far.path(), &["init", "-q", "-b", "work"]);
    let rg = &work["remote_git"];
    let head_ref = rg["head_ref"].as_str().unwrap();
    git(
        far.path(),
        &[
            "fetch",
            "-q",
            &remote.bare().display().to_string(),
            &format!("{head_ref}:refs/claim"),
        ],
    );
    assert_eq!(
        git(far.path(), &["rev-parse", "refs/claim"]),
        work["head_commit"].as_str().unwrap()
    );
    git(far.path(), &["checkout", "-q", "--detach", "refs/claim"]);
    std::fs::write(far.path().join("hello.txt"), "hello\n").unwrap();
    git(far.path(), &["add", "hello.txt"]);
    git(
        far.path(),
        &[
            "-c",
            "user.name=far",
            "-c",
            "user.email=far@x",
            "commit",
            "-q",
            "-m",
            "hello",
        ],
    );
    let commit = git(far.path(), &["rev-parse", "HEAD"]);
    (far, commit)
}

#[test]
fn a_report_of_a_commit_not_at_the_remotes_attempt_ref_is_refused() {
    let (repo, _) = workspace(CODER, 30);
    no_supervised_pods(&repo);
    let remote = with_remote(&repo);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let pod = ApiPod::register(&repo, &server, "by-hand");
    let work = pod.claim();
    assert_eq!(work["remote"], true, "{work}");
    let rg = &work["remote_git"];
    assert_eq!(rg["url"], remote.url().as_str(), "{work}");
    assert_eq!(rg["name"], "origin");
    let a = &work["assignment"];
    let attempt_ref = format!("refs/yoi/attempts/{id}/{}.{}", a["attempt"], a["fence"]);
    assert_eq!(rg["push_ref"], attempt_ref.as_str());
    // The server pushed the claim's head there, under the claim's own ref.
    let head_ref = rg["head_ref"].as_str().unwrap();
    assert_eq!(
        remote.refs(head_ref),
        [(
            head_ref.to_string(),
            work["head_commit"].as_str().unwrap().to_string()
        )]
    );
    let branch = work["branch"].as_str().unwrap().to_string();
    let before = git(repo.path(), &["rev-parse", &branch]);

    let (far, commit) = commit_on_claim(&remote, &work);
    // Not pushed at all.
    let (status, body) = pod.complete(&work, &commit);
    assert_eq!(status, 400, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&commit) && message.contains(&attempt_ref) && message.contains("not at"),
        "{body}"
    );
    // Pushed, but to another ref of the remote.
    let bare = remote.bare().display().to_string();
    git(
        far.path(),
        &[
            "push",
            "-q",
            &bare,
            &format!("{commit}:refs/heads/elsewhere"),
        ],
    );
    let (status, body) = pod.complete(&work, &commit);
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        git(repo.path(), &["rev-parse", &branch]),
        before,
        "the branch moved"
    );
    // The attempt ref names another commit (its parent): refused, naming both.
    git(
        far.path(),
        &["push", "-q", &bare, &format!("{commit}~1:{attempt_ref}")],
    );
    let (status, body) = pod.complete(&work, &commit);
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("names"),
        "{body}"
    );
    assert_eq!(
        git(repo.path(), &["rev-parse", &branch]),
        before,
        "the branch moved"
    );

    // At the attempt ref: fetched into the same name here, and the branch moves to it.
    git(
        far.path(),
        &[
            "push",
            "-q",
            "-f",
            &bare,
            &format!("{commit}:{attempt_ref}"),
        ],
    );
    let (status, body) = pod.complete(&work, &commit);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["branch_head"], commit.as_str(), "{body}");
    assert_eq!(git(repo.path(), &["rev-parse", &branch]), commit);
    assert_eq!(git(repo.path(), &["rev-parse", &attempt_ref]), commit);
    server.terminate();
}

#[test]
fn a_report_after_the_claim_expired_is_refused_and_its_ref_goes_on_the_remote() {
    let (repo, _) = workspace(CODER, 2);
    no_supervised_pods(&repo);
    let remote = with_remote(&repo);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let pod = ApiPod::register(&repo, &server, "late");
    let work = pod.claim();
    let a = &work["assignment"];
    let attempt_ref = format!("refs/yoi/attempts/{id}/{}.{}", a["attempt"], a["fence"]);
    let branch = work["branch"].as_str().unwrap().to_string();
    let before = git(repo.path(), &["rev-parse", &branch]);
    let (far, commit) = commit_on_claim(&remote, &work);
    let bare = remote.bare().display().to_string();
    git(
        far.path(),
        &["push", "-q", &bare, &format!("{commit}:{attempt_ref}")],
    );

    // No heartbeat: the lease runs out and the sweep hands the step out again.
    until("the claim to expire", || {
        assignments(&server, &repo, &id)
            .iter()
            .any(|r| r["id"] == a["id"] && r["status"] == "expired")
    });
    let (status, body) = pod.complete(&work, &commit);
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "stale_fence", "{body}");
    assert_eq!(
        git(repo.path(), &["rev-parse", &branch]),
        before,
        "the branch moved"
    );
    until("the expired attempt's ref to go on the remote", || {
        remote.refs(&attempt_ref).is_empty()
    });
    assert!(git(repo.path(), &["for-each-ref", &attempt_ref]).is_empty());
    server.terminate();
}

#[test]
fn a_remote_the_repository_lacks_refuses_the_start_naming_the_file_and_key() {
    let (repo, _) = workspace(CODER, 30);
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("transport = \"server\"", "transport = \"remote\"")
        .replace("remote = \"origin\"", "remote = \"upstream\"");
    std::fs::write(&config, text).unwrap();
    let out = repo.yoi(&["serve", "--listen", "127.0.0.1:0"]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stderr.contains("workspace.toml")
            && out
                .stderr
                .contains("`pods.remote` = `upstream` names no remote"),
        "{}",
        out.stderr
    );
    // An unknown transport is refused when the file is read, naming its line.
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("transport = \"remote\"", "transport = \"carrier-pigeon\"");
    std::fs::write(&config, text).unwrap();
    let out = repo.yoi(&["serve", "--listen", "127.0.0.1:0"]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stderr.contains("workspace.toml") && out.stderr.contains("carrier-pigeon"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_report_while_the_remote_is_down_changes_nothing_and_is_taken_once_it_is_back() {
    let (repo, _) = workspace(CODER, 30);
    no_supervised_pods(&repo);
    let remote = with_remote(&repo);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let pod = ApiPod::register(&repo, &server, "patient");
    let work = pod.claim();
    let a = &work["assignment"];
    let attempt_ref = format!("refs/yoi/attempts/{id}/{}.{}", a["attempt"], a["fence"]);
    let branch = work["branch"].as_str().unwrap().to_string();
    let before = git(repo.path(), &["rev-parse", &branch]);
    let (far, commit) = commit_on_claim(&remote, &work);
    let bare = remote.bare().display().to_string();
    git(
        far.path(),
        &["push", "-q", &bare, &format!("{commit}:{attempt_ref}")],
    );

    remote.set_down(true);
    let (status, body) = pod.complete(&work, &commit);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "remote_unreachable", "{body}");
    assert_eq!(
        git(repo.path(), &["rev-parse", &branch]),
        before,
        "the branch moved"
    );
    let rows = assignments(&server, &repo, &id);
    assert!(
        rows.iter()
            .any(|r| r["id"] == a["id"] && r["status"] == "claimed"),
        "the claim did not stay live: {rows:?}"
    );

    remote.set_down(false);
    let (status, body) = pod.complete(&work, &commit);
    assert_eq!(status, 200, "{body}");
    assert_eq!(git(repo.path(), &["rev-parse", &branch]), commit);
    server.terminate();
}
