//! Helpers of the pod and flow tests: workspaces whose pods run the scripted `yoi-fake-agent`,
//! and polling the API until a state is reached.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use yoi_testkit::child::Owned;

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

/// `pid`, its parent and its command line, for a failure's message.
pub fn describe_process(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let ppid = stat
        .rsplit_once(')')
        .and_then(|(_, r)| r.split_whitespace().nth(1))
        .unwrap_or("?")
        .to_string();
    let parent = std::fs::read(format!("/proc/{ppid}/cmdline")).unwrap_or_default();
    let words = |b: &[u8]| String::from_utf8_lossy(b).replace('\0', " ");
    format!(
        "{pid} `{}` (parent {ppid} `{}`)",
        words(&cmdline).trim(),
        words(&parent).trim()
    )
}

/// Whether the user `uid` can run `path` (and the interpreter its `#!` line names): every
/// folder above it searchable and the file itself executable, asked of the kernel as that
/// user; else the first place that is not.
pub fn runnable_by(uid: u32, path: &Path) -> Result<(), String> {
    let real = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for place in real.ancestors().collect::<Vec<_>>().into_iter().rev() {
        let ok = as_user(Command::new("test"), Some(uid))
            .arg("-x")
            .arg(place)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(place).map_or(0, |m| m.permissions().mode() & 0o7777);
            return Err(format!(
                "{} is closed to it (mode {mode:o})",
                place.display()
            ));
        }
    }
    let mut head = Vec::new();
    if let Ok(f) = std::fs::File::open(&real) {
        use std::io::Read;
        let _ = f.take(512).read_to_end(&mut head);
    }
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next().unwrap_or_default());
        if let Some(interpreter) = line.split_whitespace().next() {
            runnable_by(uid, Path::new(interpreter))
                .map_err(|e| format!("its interpreter {interpreter}: {e}"))?;
        }
    }
    Ok(())
}

/// The pids of processes whose working directory is in `dir`.
pub fn processes_working_in(dir: &Path) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
        })
        .collect()
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
pub fn own_pod(repo: &Repo, name: &str, extra: &[&str]) -> Owned {
    own_pod_env(repo, name, "fake", extra, &[])
}

pub fn own_pod_env(
    repo: &Repo,
    name: &str,
    agent: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Owned {
    own_pod_as(repo, name, agent, extra, env, None)
}

/// [`own_pod_env`] run by the user `uid` (its token made by that user too), or by the test's
/// own user when `None`.
pub fn own_pod_as(
    repo: &Repo,
    name: &str,
    agent: &str,
    extra: &[&str],
    env: &[(&str, &str)],
    uid: Option<u32>,
) -> Owned {
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains("coder = 0"),
        "the supervisor must not start pods here"
    );
    let token = yoi_as(
        repo,
        uid,
        &["token", "create", "--name", name, "--scope", "pod:coder"],
    );
    as_user(Command::new(env!("CARGO_BIN_EXE_yoi")), uid)
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
        .map(Owned)
        .unwrap()
}

/// `command` run by the user `uid` (with its group of the same number), or unchanged.
pub fn as_user(mut command: Command, uid: Option<u32>) -> Command {
    if let Some(uid) = uid {
        use std::os::unix::process::CommandExt;
        command.uid(uid).gid(uid);
    }
    command
}

/// Run as root, make `host` a second unix user's (`nobody`, 65534) and the server's workspace
/// unreadable to that user, as a home folder on another machine is; check that the user can
/// run yoi and the fake agent and cannot list the workspace. That user's id, or `None` when
/// the test runs as another user (the pod then runs as the test's user).
pub fn second_user_host(server: &Repo, host: &Path) -> Option<u32> {
    // SAFETY: geteuid has no preconditions.
    let uid = (unsafe { libc::geteuid() } == 0).then_some(65534u32)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(server.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    for p in [Path::new(env!("CARGO_BIN_EXE_yoi")), fake_agent().as_path()] {
        if let Err(e) = runnable_by(uid, p) {
            panic!("the second user ({uid}) cannot run {}: {e}", p.display());
        }
    }
    give(host, uid);
    let listed = as_user(Command::new("ls"), Some(uid))
        .arg(server.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(
        !listed.success(),
        "the pod's user reads the server's workspace"
    );
    Some(uid)
}

/// Hand a pod host's folder to the second user.
pub fn give(folder: &Path, uid: u32) {
    let status = Command::new("chown")
        .args(["-R", &format!("{uid}:{uid}")])
        .arg(folder)
        .status()
        .unwrap();
    assert!(status.success());
}

/// `yoi ARGS` in the repository run by `uid` (or the test's own user); its stdout, trimmed,
/// after it succeeded.
pub fn yoi_as(repo: &Repo, uid: Option<u32>, args: &[&str]) -> String {
    let out = as_user(Command::new(env!("CARGO_BIN_EXE_yoi")), uid)
        .args(args)
        .current_dir(repo.path())
        .env("USER", "tester")
        .env_remove("YOI_USER")
        .env_remove("YOI_DATABASE_URL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "yoi {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Where a test pod's stderr goes.
pub fn pod_log(repo: &Repo, name: &str) -> PathBuf {
    repo.path().join(format!(".yoi/local/test-pod-{name}.log"))
}

/// The pod's own share of each attempt, from its log's `attempt timing` lines: (claim → agent
/// start, the agent's run, agent exit → result acknowledged), in milliseconds.
pub fn attempt_timings(log: &str) -> Vec<(u64, u64, u64)> {
    log.lines()
        .filter(|l| l.contains("attempt timing"))
        .filter_map(|l| {
            let field = |name: &str| -> Option<u64> {
                let at = l.find(&format!(" {name}="))? + name.len() + 2;
                let digits: String = l[at..].chars().take_while(|c| c.is_ascii_digit()).collect();
                digits.parse().ok()
            };
            Some((
                field("claim_to_agent_ms")?,
                field("agent_ms")?,
                field("agent_to_ack_ms")?,
            ))
        })
        .collect()
}

pub fn no_supervised_pods(repo: &Repo) {
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("coder = 1", "coder = 0");
    std::fs::write(&config, text).unwrap();
}

/// One HTTP request from `conn`: its request line (with the header that carries the key —
/// `Authorization`, `x-api-key` or `x-goog-api-key` — appended) and its body.
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
        let lower = line.to_ascii_lowercase();
        if ["authorization:", "x-api-key:", "x-goog-api-key:"]
            .iter()
            .any(|h| lower.starts_with(h))
        {
            request.push_str(&line);
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some((request, body))
}

/// The requests a scripted endpoint received (request line, the key's header, body).
pub type Seen = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// An answer of a scripted endpoint: JSON, or server-sent events (a `data` that names its own
/// `type` gets an event of that name; a string is sent as it is).
enum Answer {
    Json(serde_json::Value),
    Events(Vec<serde_json::Value>),
    /// An error status with a JSON body.
    Error(u16, serde_json::Value),
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
                Answer::Error(status, v) => {
                    let v = v.to_string();
                    write!(
                        conn,
                        "HTTP/1.1 {status} Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{v}",
                        v.len()
                    )
                }
                Answer::Events(events) => {
                    let out: String = events
                        .iter()
                        .map(|e| match (e, e["type"].as_str()) {
                            // A bare data line (`[DONE]`).
                            (serde_json::Value::String(s), _) => format!("data: {s}\n\n"),
                            (e, Some(kind)) => format!("event: {kind}\ndata: {e}\n\n"),
                            (e, None) => format!("data: {e}\n\n"),
                        })
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
        let folder = work_folder(body);
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

/// The folder the prompt in a request's JSON body names for the work.
fn work_folder(body: &str) -> &str {
    body.split("Work only inside this folder: ")
        .nth(1)
        .and_then(|r| r.split("\\n").next())
        .unwrap_or("/nonexistent")
}

/// A tool call a scripted endpoint asks for: the tool's name and its arguments, made from the
/// folder the prompt names for the work.
pub type ToolCall = fn(&str) -> (&'static str, serde_json::Value);

/// A scripted Gemini API endpoint on loopback, for the real Gemini CLI: a streamed
/// `generateContent` that offers tools and whose last turn is no function response is
/// answered with the function call `call` makes; every other with the final `reply`. Returns
/// its base URL and the requests it received.
pub fn gemini_endpoint(call: ToolCall, reply: &'static str) -> (String, Seen) {
    let (addr, seen) = scripted_endpoint(move |_, req, body| {
        let answered = req["contents"]
            .as_array()
            .and_then(|c| c.last())
            .and_then(|last| last["parts"].as_array())
            .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some()));
        let part = if req["tools"].is_array() && !answered {
            let (name, args) = call(work_folder(body));
            serde_json::json!({"functionCall": {"name": name, "args": args}})
        } else {
            serde_json::json!({"text": reply})
        };
        let answer = serde_json::json!({
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 700, "candidatesTokenCount": 20, "totalTokenCount": 720},
        });
        match req.get("contents") {
            Some(_) => Answer::Events(vec![answer]),
            None => Answer::Json(serde_json::json!({ "totalTokens": 10 })),
        }
    });
    (format!("http://{addr}"), seen)
}

/// A scripted OpenAI-compatible chat endpoint on loopback, for the real OpenCode: a streamed
/// completion that offers tools and whose last message is no tool result is answered with the
/// tool call `call` makes; every other with the final `reply`, streamed as the API streams,
/// with usage. Returns its base URL (with `/v1`) and the requests it received.
pub fn chat_tool_endpoint(call: ToolCall, reply: &'static str) -> (String, Seen) {
    let (addr, seen) = scripted_endpoint(move |_, req, body| {
        let last_is_tool = req["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["role"] == "tool");
        let (delta, finish) = if req["tools"].is_array() && !last_is_tool {
            let (name, args) = call(work_folder(body));
            (
                serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_yoi", "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}),
                "tool_calls",
            )
        } else {
            (
                serde_json::json!({"role": "assistant", "content": reply}),
                "stop",
            )
        };
        let chunk = |delta: serde_json::Value, finish: Option<&str>| serde_json::json!({"id": "chatcmpl-yoi", "object": "chat.completion.chunk", "created": 1, "model": req["model"], "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        let mut last = chunk(serde_json::json!({}), Some(finish));
        last["usage"] =
            serde_json::json!({"prompt_tokens": 700, "completion_tokens": 20, "total_tokens": 720});
        Answer::Events(vec![chunk(delta, None), last, "[DONE]".into()])
    });
    (format!("http://{addr}/v1"), seen)
}

/// A scripted OpenAI Responses endpoint on loopback, for the real Codex as a coder: a request
/// whose input has no function call output yet is answered with one `exec_command` call of
/// `cmd` (Codex 0.171's shell tool), every other with `reply`, streamed as the API streams,
/// with usage. Returns its base URL (with `/v1`) and the requests it received.
pub fn responses_calling(cmd: &'static str, reply: &'static str) -> (String, Seen) {
    let (addr, seen) = scripted_endpoint(move |_, req, _| {
        let answered = req["input"]
            .as_array()
            .is_some_and(|items| items.iter().any(|i| i["type"] == "function_call_output"));
        let item = if answered {
            serde_json::json!({"type": "message", "id": "msg_yoi", "role": "assistant", "content": [{"type": "output_text", "text": reply, "annotations": []}]})
        } else {
            let args = serde_json::json!({ "cmd": cmd });
            serde_json::json!({"type": "function_call", "id": "fc_yoi", "call_id": "call_yoi", "name": "exec_command", "arguments": args.to_string()})
        };
        Answer::Events(vec![
            serde_json::json!({"type": "response.created", "response": {"id": "resp_yoi"}}),
            serde_json::json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            serde_json::json!({"type": "response.completed", "response": {"id": "resp_yoi", "usage": {"input_tokens": 700, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 720}}}),
        ])
    });
    (format!("http://{addr}/v1"), seen)
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
    model_endpoint_refusing(|_| false, replies)
}

/// [`model_endpoint`] that refuses the requests whose body `refuse` picks with a rate limit:
/// 429 with OpenAI's body for one, which names when to try again (2 s).
pub fn model_endpoint_refusing(
    refuse: impl Fn(&str) -> bool + Send + 'static,
    replies: &[&'static str],
) -> (String, Seen) {
    let replies = replies.to_vec();
    let answered = std::sync::atomic::AtomicUsize::new(0);
    let (addr, seen) = scripted_endpoint(move |_, _, body| {
        if refuse(body) {
            return Answer::Error(
                429,
                serde_json::json!({"error": {
                    "message": "Rate limit reached for gpt-4o-mini in organization org-yoi on tokens per min (TPM): Limit 30000, Used 30000, Requested 812. Please try again in 2s.",
                    "type": "tokens", "param": null, "code": "rate_limit_exceeded"
                }}),
            );
        }
        let n = answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
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
    real_cli(
        "YOI_AIDER",
        "aider",
        "`/usr/bin/python3 -m venv target/aider-0.86.2 && target/aider-0.86.2/bin/pip install aider-chat==0.86.2` (target/aider-0.86.2/bin/aider)",
    )
}

/// A real agent CLI: the path in `var`, else `program` on PATH; a failure naming how to
/// install it (`.ci/run` does) when neither is there — the test fails, it never skips.
pub fn real_cli(var: &str, program: &str, install: &str) -> String {
    if let Ok(p) = std::env::var(var) {
        return p;
    }
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| {
            panic!(
                "this test runs the real {program}: {install}, then set {var} to it (.ci/run does)"
            )
        })
}

/// Who runs yoi — the server, the pod and so the agent — in a real agent's test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAs {
    /// The test's own user: root on CI and in containers.
    Tester,
    /// A normal user: as root, a second unix user (`nobody`, 65534, who owns the workspace and
    /// the home folder); otherwise the test's own user, which already is one.
    NormalUser,
}

impl RunAs {
    /// The uid to switch to, when there is one to switch to.
    pub fn uid(self) -> Option<u32> {
        let root = unsafe { libc::geteuid() } == 0;
        (self == RunAs::NormalUser && root).then_some(65534)
    }
}

/// A ticket implemented by a real agent CLI in yoi's sandbox: a coder pod of the test's own
/// runs `agent` once, with `[agents.AGENT]` set to `config`, as `who`, with `env` (and a home
/// folder with a git identity) in its environment.
pub struct RealCoder {
    pub repo: Repo,
    pub id: String,
    pub server: Server,
    pub home: tempfile::TempDir,
    pub uid: Option<u32>,
}

impl RealCoder {
    pub fn run(agent: &str, config: &str, who: RunAs, env: &[(&str, &str)]) -> RealCoder {
        RealCoder::run_during(agent, config, who, env, |_, _| Box::new(()))
    }

    /// [`RealCoder::run`] with `during` started once the server is up (given the workspace and
    /// the server) and what it returns dropped once the pod has ended: the load of a working
    /// team beside the attempt, for the benchmarks.
    pub fn run_during(
        agent: &str,
        config: &str,
        who: RunAs,
        env: &[(&str, &str)],
        during: impl FnOnce(&Repo, &Server) -> Box<dyn std::any::Any>,
    ) -> RealCoder {
        RealCoder::run_full(agent, config, who, env, &[], false, during)
    }

    /// [`RealCoder::run`] with the server on HTTPS with a certificate of its own
    /// (`--tls-self-signed`), as on a build box: the pod trusts it by the fingerprint the
    /// server recorded, and hands its agent the certificate (docs/security.md, "TLS").
    pub fn run_over_tls(agent: &str, config: &str, who: RunAs, env: &[(&str, &str)]) -> RealCoder {
        RealCoder::run_full(agent, config, who, env, &[], true, |_, _| Box::new(()))
    }

    /// [`RealCoder::run`] with `home_files` (a path under the home folder, its contents) in the
    /// person's home, as their own configuration.
    pub fn run_at_home(
        agent: &str,
        config: &str,
        who: RunAs,
        env: &[(&str, &str)],
        home_files: &[(&str, &str)],
    ) -> RealCoder {
        RealCoder::run_full(agent, config, who, env, home_files, false, |_, _| {
            Box::new(())
        })
    }

    fn run_full(
        agent: &str,
        config: &str,
        who: RunAs,
        env: &[(&str, &str)],
        home_files: &[(&str, &str)],
        tls: bool,
        during: impl FnOnce(&Repo, &Server) -> Box<dyn std::any::Any>,
    ) -> RealCoder {
        let (repo, _) = workspace("", 30);
        no_supervised_pods(&repo);
        let path = repo.path().join(".yoi/workspace.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}\n[agents.{agent}]\n{config}\n")).unwrap();
        let id = queued_ticket(&repo);
        let home = tempfile::tempdir().unwrap();
        // A git identity, as a person running an agent has.
        std::fs::write(
            home.path().join(".gitconfig"),
            "[user]\n\tname = agent user\n\temail = agent@yoi.invalid\n",
        )
        .unwrap();
        for (path, contents) in home_files {
            let path = home.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, contents).unwrap();
        }
        let uid = who.uid();
        if let Some(uid) = uid {
            // yoi and the CLI must be reachable by the second user, as they are by a person
            // who installed them for everyone; say exactly which folder is closed when not.
            let program = config
                .lines()
                .find_map(|l| l.strip_prefix("program = \""))
                .and_then(|l| l.strip_suffix('"'))
                .expect("the profile names its program");
            for p in [env!("CARGO_BIN_EXE_yoi"), program] {
                if let Err(e) = runnable_by(uid, Path::new(p)) {
                    panic!("the second user ({uid}) cannot run {p}: {e}");
                }
            }
            // The workspace and the home folder are the second user's own, as a person's are.
            for p in [repo.path(), home.path()] {
                let status = Command::new("chown")
                    .args(["-R", &format!("{uid}:{uid}")])
                    .arg(p)
                    .status()
                    .unwrap();
                assert!(status.success(), "chown {}", p.display());
            }
        }
        // The server's reflogs need git's identity, which lives in the home folder.
        let home_env = [("HOME", home.path().to_str().unwrap())];
        let server = match tls {
            true => Server::spawn_tls_as(&repo, &home_env, uid),
            false => Server::spawn_as(&repo, "127.0.0.1:0", &home_env, uid),
        };
        let mut env = env.to_vec();
        env.extend(home_env);
        let load = during(&repo, &server);
        let mut pod = own_pod_as(&repo, agent, agent, &["--once"], &env, uid);
        let status = pod.wait().unwrap();
        drop(load);
        assert!(
            status.success(),
            "{status:?}: {}\n{}\nserver: {}",
            std::fs::read_to_string(pod_log(&repo, agent)).unwrap_or_default(),
            run_outputs(&repo),
            server.log_so_far().join("\n")
        );
        let worktrees = std::fs::canonicalize(repo.path())
            .unwrap()
            .join(".worktree");
        let left: Vec<String> = processes_working_in(&worktrees)
            .into_iter()
            .map(describe_process)
            .collect();
        assert_eq!(
            left,
            Vec::<String>::new(),
            "nothing the agent started outlives its attempt"
        );
        RealCoder {
            repo,
            id,
            server,
            home,
            uid,
        }
    }

    /// `file` as the ticket branch has it; a failure shows what the agent printed.
    pub fn on_branch(&self, file: &str) -> String {
        let branch = format!("yoi/{}-say-hello", self.id);
        let out = yoi_testkit::git_output(
            self.repo.path(),
            &[
                "-c",
                "safe.directory=*",
                "show",
                &format!("{branch}:{file}"),
            ],
        );
        assert!(
            out.status.success(),
            "{file} is not on {branch}: {}\n{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.thread(),
            run_outputs(&self.repo)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The uid the server, the pod and the agent ran as.
    pub fn user(&self) -> u32 {
        self.uid.unwrap_or(unsafe { libc::geteuid() })
    }

    /// The uid that owns `file` in the ticket's worktree: who really wrote it.
    pub fn owner_in_worktree(&self, file: &str) -> u32 {
        use std::os::unix::fs::MetadataExt;
        let wt = self
            .repo
            .path()
            .join(format!(".worktree/{}-say-hello", self.id));
        std::fs::metadata(wt.join(file)).unwrap().uid()
    }

    pub fn thread(&self) -> String {
        std::fs::read_to_string(self.repo.ticket_dir(&self.id).join("thread.md")).unwrap()
    }

    /// `yoi ticket cost ID --json`, run by the pod's user.
    pub fn cost(&self) -> serde_json::Value {
        let out = yoi_as(
            &self.repo,
            self.uid,
            &["ticket", "cost", &self.id, "--json"],
        );
        serde_json::from_str(&out).unwrap()
    }
}

/// Claude Code: `YOI_CLAUDE`, else `claude` on PATH. `.ci/run` installs the pinned
/// `@anthropic-ai/claude-code` from npm.
pub fn claude() -> String {
    real_cli(
        "YOI_CLAUDE",
        "claude",
        "`npm install --prefix target/claude-code @anthropic-ai/claude-code@2.1.197` (target/claude-code/node_modules/.bin/claude)",
    )
}

/// Codex: `YOI_CODEX`, else `codex` on PATH. `.ci/run` installs the pinned `@openai/codex`.
pub fn codex() -> String {
    real_cli(
        "YOI_CODEX",
        "codex",
        "`npm install --prefix target/codex @openai/codex@0.171.0` (target/codex/node_modules/.bin/codex)",
    )
}

/// Gemini CLI: `YOI_GEMINI`, else `gemini` on PATH. `.ci/run` installs the pinned
/// `@google/gemini-cli`.
pub fn gemini() -> String {
    real_cli(
        "YOI_GEMINI",
        "gemini",
        "`npm install --prefix target/gemini @google/gemini-cli@0.61.0` (target/gemini/node_modules/.bin/gemini)",
    )
}

/// OpenCode: `YOI_OPENCODE`, else `opencode` on PATH. `.ci/run` installs the pinned
/// `opencode-ai`.
pub fn opencode() -> String {
    real_cli(
        "YOI_OPENCODE",
        "opencode",
        "`npm install --prefix target/opencode opencode-ai@1.18.33` (target/opencode/node_modules/.bin/opencode)",
    )
}

/// One real CLI implementing a ticket: its profile, its scripted endpoint, and what shows that
/// it used its own tool and sent the result back.
pub struct RealCase {
    pub agent: &'static str,
    pub program: fn() -> String,
    /// The scripted endpoint of the CLI's wire protocol: its base URL and the requests it
    /// received. The model's tool call writes `greeting.txt` saying `hello from AGENT`.
    pub endpoint: fn() -> (String, Seen),
    /// A model the CLI knows (Codex offers no tools for its default one with a provider of
    /// yoi's own; Gemini CLI's `auto` first asks a classifier model).
    pub model: Option<&'static str>,
    /// A request that carries the tool call's result and the key from `api_key_env`.
    pub answered: fn(&str) -> bool,
    /// What the attempt says did the work.
    pub agent_label: &'static str,
    /// The ledger's (tokens in, tokens out), when the endpoint's usage fixes them.
    pub tokens: Option<(u64, u64)>,
}

pub const DONE: &str = "I wrote greeting.txt.\n\nYOI-RESULT: done\nYOI-SUMMARY: wrote the greeting";

/// Claude Code, through a `Write` tool call. As root (as CI runs it) it bypasses its
/// permission prompts only when told it is sandboxed: yoi's sandbox says so, nothing in this
/// environment does.
pub fn claude_case() -> RealCase {
    RealCase {
        agent: "claude",
        program: claude,
        endpoint: || anthropic_endpoint("greeting.txt", "hello from claude\n", DONE),
        model: None,
        // It was handed yoi's MCP server with its claim token: the agent's tools are offered.
        answered: |r| {
            r.contains("\"tool_result\"")
                && r.to_ascii_lowercase().contains("x-api-key: sk-yoi-test")
                && r.contains("\"mcp__yoi__my_ticket\"")
                && r.contains("\"mcp__yoi__ask_question\"")
        },
        agent_label: "claude 2.1.197",
        tokens: None,
    }
}

/// Codex, through its own shell tool (`exec_command`), with its own sandbox off inside yoi's
/// (docs/pods.md says why).
pub fn codex_case() -> RealCase {
    RealCase {
        agent: "codex",
        program: codex,
        endpoint: || responses_calling("printf 'hello from codex\\n' > greeting.txt", DONE),
        model: Some("gpt-5-codex"),
        // yoi's MCP server is a tool namespace of its own (`mcp__yoi`).
        answered: |r| {
            r.contains("function_call_output")
                && r.contains("Process exited with code 0")
                && r.contains("Bearer sk-yoi-test")
                && r.contains("\"name\":\"mcp__yoi\"")
                && r.contains("\"name\":\"my_ticket\"")
                && r.contains("\"name\":\"ask_question\"")
        },
        agent_label: "codex-cli 0.171.0",
        tokens: Some((1400, 40)),
    }
}

/// Gemini CLI, through a `write_file` call (a home of its own in the run folder chooses the
/// API-key login).
pub fn gemini_case() -> RealCase {
    RealCase {
        agent: "gemini",
        program: gemini,
        endpoint: || {
            gemini_endpoint(
                |folder| {
                    let path = format!("{folder}/greeting.txt");
                    (
                        "write_file",
                        serde_json::json!({"file_path": path, "content": "hello from gemini\n"}),
                    )
                },
                DONE,
            )
        },
        model: Some("gemini-2.5-pro"),
        // yoi's MCP tools are declared to the model beside its own (`mcp_yoi_my_ticket`).
        answered: |r| {
            r.starts_with("POST /v1beta/models/gemini-2.5-pro:streamGenerateContent")
                && r.contains("functionResponse")
                && r.to_ascii_lowercase()
                    .contains("x-goog-api-key: sk-yoi-test")
                && r.contains("\"name\":\"mcp_yoi_my_ticket\"")
                && r.contains("\"name\":\"mcp_yoi_ask_question\"")
        },
        agent_label: "gemini 0.61.0",
        tokens: Some((1400, 40)),
    }
}

/// OpenCode, through a `write` call to an OpenAI-compatible chat endpoint (a provider `yoi` in
/// a config file of the run folder).
pub fn opencode_case() -> RealCase {
    RealCase {
        agent: "opencode",
        program: opencode,
        endpoint: || {
            chat_tool_endpoint(
                |folder| {
                    let path = format!("{folder}/greeting.txt");
                    (
                        "write",
                        serde_json::json!({"filePath": path, "content": "hello from opencode\n"}),
                    )
                },
                DONE,
            )
        },
        model: Some("m-1"),
        // yoi's MCP tools are offered under the server's name (`yoi_my_ticket`).
        answered: |r| {
            r.starts_with("POST /v1/chat/completions")
                && r.contains("\"role\":\"tool\"")
                && r.contains("Bearer sk-yoi-test")
                && r.contains("\"name\":\"yoi_my_ticket\"")
                && r.contains("\"name\":\"yoi_ask_question\"")
        },
        agent_label: "opencode 1.18.33",
        tokens: Some((1400, 40)),
    }
}

/// Aider's answer in its `whole` edit format: `greeting.txt` saying `hello from aider`, then
/// the trailer lines.
pub const AIDER_REPLY: &str = "greeting.txt\n```\nhello from aider\n```\n\nI created greeting.txt.\n\nYOI-RESULT: done\nYOI-SUMMARY: created greeting.txt\n";

/// `[agents.aider]` for the real Aider against the scripted endpoint at `base`, priced.
pub fn aider_profile(base: &str) -> String {
    format!(
        "program = \"{}\"\nmodel = \"openai/gpt-4o-mini\"\nbase_url = \"{base}\"\napi_key_env = \"TEST_MODEL_KEY\"\nextra_args = [\"--edit-format\", \"whole\", \"--map-tokens\", \"0\"]\ntimeout_secs = 300\n\n[prices.\"openai/gpt-4o-mini\"]\ninput = 0.15\noutput = 0.6",
        aider()
    )
}

/// A host for a remote pod (`yoi pod run --server … --cache …`): a workspace of its own whose
/// `fake` agent runs `script` (for at most `timeout_secs`), a pod token of the server's
/// workspace `server_repo` named `token_name` in `token`, and — when that server made its own
/// certificate — the certificate in `server.pem`. Everything is in the host's own folder, so a
/// second user given that folder has all of it and nothing of the server's.
pub struct PodHost {
    pub repo: Repo,
    /// The pod token's file (`--token-file`).
    pub token: PathBuf,
}

pub fn pod_host(server_repo: &Repo, script: &str, token_name: &str, timeout_secs: u64) -> PodHost {
    pod_host_for(server_repo, script, token_name, timeout_secs, "pod:coder")
}

/// [`pod_host`] for a pod of the role the token's `scope` names (`pod:verifier`, …).
pub fn pod_host_for(
    server_repo: &Repo,
    script: &str,
    token_name: &str,
    timeout_secs: u64,
    scope: &str,
) -> PodHost {
    let repo = Repo::init();
    let script_path = repo.path().join("agent-script.txt");
    std::fs::write(&script_path, script).unwrap();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}\n[agents.fake]\nprogram = \"{}\"\nargv = [\"{{program}}\", \"{}\"]\nstdin = \"prompt_file\"\noutput = \"text\"\ntimeout_secs = {timeout_secs}\n",
            fake_agent().display(),
            script_path.display()
        ),
    )
    .unwrap();
    let cert = server_repo.path().join(".yoi/local/tls/cert.pem");
    if cert.exists() {
        std::fs::copy(&cert, repo.path().join("server.pem")).unwrap();
    }
    let token = server_repo
        .yoi(&["token", "create", "--name", token_name, "--scope", scope])
        .ok()
        .stdout;
    let path = repo.path().join("token");
    std::fs::write(&path, token.trim()).unwrap();
    PodHost { repo, token: path }
}
