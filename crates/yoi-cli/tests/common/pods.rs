//! Helpers of the pod and flow tests: workspaces whose pods run the scripted `yoi-fake-agent`,
//! and polling the API until a state is reached.

use std::path::{Path, PathBuf};
use std::process::Command;
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

/// A pod of the test's own (not supervised), with a fresh coder token.
pub fn own_pod(repo: &Repo, name: &str, extra: &[&str]) -> std::process::Child {
    own_pod_env(repo, name, "fake", extra, &[])
}

pub fn own_pod_env(
    repo: &Repo,
    name: &str,
    agent: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> std::process::Child {
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains("coder = 0"),
        "the supervisor must not start pods here"
    );
    let token = repo
        .yoi(&["token", "create", "--name", name, "--scope", "pod:coder"])
        .ok()
        .stdout
        .trim()
        .to_string();
    Command::new(env!("CARGO_BIN_EXE_yoi"))
        .args([
            "pod",
            "run",
            "--role",
            "coder",
            "--name",
            name,
            "--agent",
            agent,
            "--wait-ms",
            "2000",
        ])
        .args(extra)
        .current_dir(repo.path())
        .env("YOI_TOKEN", &token)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stderr(std::fs::File::create(pod_log(repo, name)).unwrap())
        .spawn()
        .unwrap()
}

/// Where a test pod's stderr goes.
pub fn pod_log(repo: &Repo, name: &str) -> PathBuf {
    repo.path().join(format!(".yoi/local/test-pod-{name}.log"))
}

pub fn no_supervised_pods(repo: &Repo) {
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("coder = 1", "coder = 0");
    std::fs::write(&config, text).unwrap();
}

/// One HTTP request from `conn`: its request line (with the `Authorization` header the client
/// sent appended) and its body.
fn read_request(conn: &std::net::TcpStream) -> Option<(String, Vec<u8>)> {
    use std::io::{BufRead, BufReader, Read};
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut len = 0usize;
    let mut request = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if request.is_empty() {
            request = line.clone();
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if line.to_ascii_lowercase().starts_with("authorization:")
            || line.to_ascii_lowercase().starts_with("x-api-key:")
        {
            request.push_str(&line);
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some((request, body))
}

/// The requests a scripted endpoint received (request line, `Authorization`/`x-api-key`, body).
pub type Seen = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// An answer of a scripted endpoint: JSON, or server-sent events (each `data` names its own
/// `type`, which is also the event's name).
enum Answer {
    Json(serde_json::Value),
    Events(Vec<serde_json::Value>),
}

/// A scripted model endpoint on loopback: `answer` gets the n-th request's JSON body (and n)
/// and says what to send back. Returns its address and the requests it received.
fn scripted_endpoint(
    answer: impl Fn(usize, &serde_json::Value, &str) -> Answer + Send + 'static,
) -> (std::net::SocketAddr, Seen) {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Default::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let Some((request, body)) = read_request(&conn) else {
                continue;
            };
            let text = String::from_utf8_lossy(&body).to_string();
            let n = {
                let mut seen = log.lock().unwrap();
                seen.push(format!("{request}{text}"));
                seen.len() - 1
            };
            let req: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let _ = match answer(n, &req, &text) {
                Answer::Json(v) => {
                    let v = v.to_string();
                    write!(
                        conn,
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{v}",
                        v.len()
                    )
                }
                Answer::Events(events) => {
                    let out: String = events
                        .iter()
                        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
                        .collect();
                    write!(
                        conn,
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{out}"
                    )
                }
            };
        }
    });
    (addr, seen)
}

/// A scripted Anthropic Messages endpoint on loopback, for the real Claude Code: a request
/// that offers tools and carries no tool result yet is answered with one `Write` of `file`
/// (with `text`) in the folder the prompt names; every other with the final `reply`, streamed
/// as the API streams. Returns its base URL and the requests it received.
pub fn anthropic_endpoint(
    file: &'static str,
    text: &'static str,
    reply: &'static str,
) -> (String, Seen) {
    let (addr, seen) = scripted_endpoint(move |_, req, body| {
        if !req["stream"].as_bool().unwrap_or(false) {
            return Answer::Json(serde_json::json!({ "input_tokens": 10 }));
        }
        let folder = body
            .split("Work only inside this folder: ")
            .nth(1)
            .and_then(|r| r.split("\\n").next())
            .unwrap_or("/nonexistent");
        let (block, delta, stop) = if req["tools"].is_array() && !body.contains("\"tool_result\"") {
            let input =
                serde_json::json!({ "file_path": format!("{folder}/{file}"), "content": text });
            (
                serde_json::json!({"type": "tool_use", "id": "toolu_yoi", "name": "Write", "input": {}}),
                serde_json::json!({"type": "input_json_delta", "partial_json": input.to_string()}),
                "tool_use",
            )
        } else {
            (
                serde_json::json!({"type": "text", "text": ""}),
                serde_json::json!({"type": "text_delta", "text": reply}),
                "end_turn",
            )
        };
        Answer::Events(vec![
            serde_json::json!({"type": "message_start", "message": {"id": "msg_yoi", "type": "message", "role": "assistant", "model": req["model"], "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 700, "output_tokens": 1}}}),
            serde_json::json!({"type": "content_block_start", "index": 0, "content_block": block}),
            serde_json::json!({"type": "content_block_delta", "index": 0, "delta": delta}),
            serde_json::json!({"type": "content_block_stop", "index": 0}),
            serde_json::json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 20}}),
            serde_json::json!({"type": "message_stop"}),
        ])
    });
    (format!("http://{addr}"), seen)
}

/// A scripted OpenAI Responses endpoint on loopback, for the real Codex: every request is
/// answered with `reply` as the assistant's message, streamed as the API streams, with usage.
/// Returns its base URL (with `/v1`) and the requests it received.
pub fn responses_endpoint(reply: &'static str) -> (String, Seen) {
    let (addr, seen) = scripted_endpoint(move |_, _, _| {
        Answer::Events(vec![
            serde_json::json!({"type": "response.created", "response": {"id": "resp_yoi"}}),
            serde_json::json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": "msg_yoi", "role": "assistant", "content": [{"type": "output_text", "text": reply, "annotations": []}]}}),
            serde_json::json!({"type": "response.completed", "response": {"id": "resp_yoi", "usage": {"input_tokens": 700, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 720}}}),
        ])
    });
    (format!("http://{addr}/v1"), seen)
}

/// A scripted OpenAI-compatible endpoint on loopback: the n-th chat completion answers
/// `replies[n]` (the last one once they run out). Returns its base URL and the request bodies
/// it received.
pub fn model_endpoint(replies: &[&'static str]) -> (String, Seen) {
    let replies = replies.to_vec();
    let (addr, seen) = scripted_endpoint(move |n, _, _| {
        Answer::Json(serde_json::json!({
            "id": "chatcmpl-yoi", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
            "choices": [{ "index": 0, "message": { "role": "assistant", "content": replies[n.min(replies.len() - 1)] }, "finish_reason": "stop" }],
            "usage": { "prompt_tokens": 812, "completion_tokens": 41, "total_tokens": 853 }
        }))
    });
    (format!("http://{addr}/v1"), seen)
}

/// What every run of every pod printed, for a failure's message.
pub fn run_outputs(repo: &Repo) -> String {
    let mut out = String::new();
    let pods = repo.path().join(".yoi/local/pods");
    for pod in std::fs::read_dir(pods).into_iter().flatten().flatten() {
        for run in std::fs::read_dir(pod.path().join("runs"))
            .into_iter()
            .flatten()
            .flatten()
        {
            for f in ["stdout.log", "stderr.log"] {
                let text = std::fs::read_to_string(run.path().join(f)).unwrap_or_default();
                out.push_str(&format!("--- {}/{f}\n{text}\n", run.path().display()));
            }
        }
    }
    out
}

/// Aider: `YOI_AIDER`, else `aider` on PATH. `.ci/run` installs `aider-chat` from PyPI.
pub fn aider() -> String {
    if let Ok(p) = std::env::var("YOI_AIDER") {
        return p;
    }
    let on_path = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join("aider"))
        .find(|p| p.is_file());
    match on_path {
        Some(p) => p.display().to_string(),
        None => panic!(
            "this test runs the real Aider: `python3 -m venv target/aider && target/aider/bin/pip install aider-chat`, then set YOI_AIDER=target/aider/bin/aider (.ci/run does)"
        ),
    }
}
