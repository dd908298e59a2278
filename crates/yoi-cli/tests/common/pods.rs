//! Helpers of the pod and flow tests: workspaces whose pods run the scripted `yoi-fake-agent`,
//! and polling the API until a state is reached.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::server::Server;
use super::Repo;

pub const BRIEF: &str = "## Intent\nAdd a greeting.\n\n## Acceptance criteria\n- hello.txt says hello\n\n## Validation\n`test -f hello.txt`\n";

/// The scripted agent, built by `cargo test --workspace` next to `yoi`.
pub fn fake_agent() -> PathBuf {
    let yoi = PathBuf::from(env!("CARGO_BIN_EXE_yoi"));
    let path = yoi.with_file_name("yoi-fake-agent");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p yoi-tests --bin yoi-fake-agent` (the README's `cargo test --workspace` does)",
        path.display()
    );
    path
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    yoi_testkit::git(dir, args).trim().to_string()
}

/// A workspace whose coder pods run the fake agent with `script`, with a committed base.
pub fn workspace(script: &str, lease_secs: u64) -> (Repo, PathBuf) {
    let repo = Repo::init();
    let script_path = repo.side.path().join("agent-script.txt");
    std::fs::write(&script_path, script).unwrap();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text
        .replace("lease_secs = 60", &format!("lease_secs = {lease_secs}"))
        .replace("heartbeat_secs = 20", "heartbeat_secs = 1")
        .replace("kill_grace_secs = 10", "kill_grace_secs = 2")
        .replace("[pods.agent]\n", "[pods.agent]\ncoder = \"fake\"\n");
    let text = format!(
        "{text}\n[agents.fake]\nprogram = \"{}\"\nargv = [\"{{program}}\", \"{}\"]\nstdin = \"prompt_file\"\noutput = \"text\"\ntimeout_secs = 60\n",
        fake_agent().display(),
        script_path.display()
    );
    std::fs::write(&config, text).unwrap();
    std::fs::write(repo.path().join("README.md"), "base\n").unwrap();
    yoi_testkit::commit_all(repo.path(), "base");
    (repo, script_path)
}

pub fn queued_ticket(repo: &Repo) -> String {
    let id = repo.create("Say hello", BRIEF);
    repo.yoi(&["ticket", "mark-ready", &id]).ok();
    repo.yoi(&["ticket", "queue", &id]).ok();
    id
}

/// Poll the API until `done` says yes (the server reports every state we wait for; the
/// deadline only turns a hang into a failure).
pub fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Wait until the server has done whatever it would do about what the caller has seen: a
/// whole flow sweep (next steps, due merges) began after this call — `flow_sweeps` in
/// `GET /api/v1/router` two past what it is now — and routing has settled. A test asserts
/// that nothing happened after this, not after a while.
pub fn until_swept(server: &Server, repo: &Repo) {
    let router = || {
        let (status, body) = server.get(repo, "/router");
        assert_eq!(status, 200, "{body}");
        body
    };
    let seen = router()["flow_sweeps"]
        .as_u64()
        .expect("the router reports its flow sweeps");
    until("a whole flow sweep and routing to settle", || {
        let now = router();
        now["flow_sweeps"].as_u64().unwrap_or_default() >= seen + 2 && now["settled"] == true
    });
}

pub fn assignments(server: &Server, repo: &Repo, id: &str) -> Vec<serde_json::Value> {
    let (status, body) = server.get(repo, &format!("/assignments?ticket={id}"));
    assert_eq!(status, 200, "{body}");
    body["assignments"].as_array().unwrap().clone()
}

/// The pids of processes whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(needle) {
            out.push(pid);
        }
    }
    out
}

/// A workspace whose reviewer runs `yoi-fake-agent` with `review` as its script, on top of
/// [`workspace`] (whose coder runs `coder`).
pub fn workspace_with_reviewer(coder: &str, review: &str) -> Repo {
    let (repo, _) = workspace(coder, 30);
    let review_path = repo.side.path().join("review-script.txt");
    std::fs::write(&review_path, review).unwrap();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[pods.agent]\ncoder = \"fake\"\n",
        "[pods.agent]\ncoder = \"fake\"\nreviewer = \"fake-review\"\n",
    );
    let text = format!(
        "{text}\n[agents.fake-review]\nprogram = \"{}\"\nargv = [\"{{program}}\", \"{}\"]\nstdin = \"prompt_file\"\noutput = \"text\"\ntimeout_secs = 60\n",
        fake_agent().display(),
        review_path.display()
    );
    std::fs::write(&config, text).unwrap();
    repo
}

pub fn state_of(repo: &Repo, id: &str) -> String {
    let show = repo.yoi(&["ticket", "show", id, "--json"]).ok();
    let show: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    show["state"].as_str().unwrap_or_default().to_string()
}
