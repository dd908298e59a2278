//! The MCP server (docs/mcp.md) driven by a client nobody here wrote: the official Python SDK
//! (PyPI `mcp`, pinned in .ci/run), over streamable HTTP at `/mcp` and over stdio through
//! `yoi mcp`, against a real `yoi serve`. The Python side (`tests/mcp/client.py`) calls every
//! tool with good and bad arguments, checks that refusals write nothing, checks the protocol
//! errors, and counts each audience's `tools/list` with tiktoken's `cl100k_base`. This side sets
//! up a claimed attempt for the agent token, ends the claim, and checks that the token is then
//! refused, and that `yoi mcp` without a server says so.
//!
//! The official TypeScript SDK (npm `@modelcontextprotocol/sdk`, pinned; found through
//! YOI_MCP_TS) runs `tests/mcp/client.mjs` against the same server: a person over HTTP, the agent
//! over stdio.
//!
//! The SDK's interpreter comes from YOI_MCP_PY (the venv .ci/run makes); the test fails without
//! it. tiktoken downloads its encoding files on first use, which this machine cannot; the same
//! file (identical SHA-256, which tiktoken verifies) ships inside the pinned `bpe-openai`
//! package, and the test puts it where tiktoken's cache looks.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::pods::{no_supervised_pods, queued_ticket};
use common::server::Server;
use common::Repo;
use serde_json::{json, Value};

const INSTALL: &str = "python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install mcp==1.26.0 tiktoken==0.12.0 bpe-openai==0.1.4, then YOI_MCP_PY=$PWD/target/mcp-venv/bin/python (.ci/run does this)";

fn python() -> PathBuf {
    let py = std::env::var("YOI_MCP_PY").unwrap_or_else(|_| {
        panic!("YOI_MCP_PY is not set: the MCP tests need the official Python SDK; install it with {INSTALL}")
    });
    let py = PathBuf::from(py);
    assert!(
        py.is_file(),
        "YOI_MCP_PY={} does not exist; install it with {INSTALL}",
        py.display()
    );
    py
}

const TS_INSTALL: &str = "mkdir -p target/mcp-ts && cd target/mcp-ts && echo '{\"private\": true}' > package.json && npm install @modelcontextprotocol/sdk@1.32.2, then YOI_MCP_TS=$PWD (.ci/run does this)";

/// The folder the official TypeScript SDK is installed in (YOI_MCP_TS).
fn typescript_sdk() -> PathBuf {
    let dir = PathBuf::from(std::env::var("YOI_MCP_TS").unwrap_or_else(|_| {
        panic!("YOI_MCP_TS is not set: the MCP tests need the official TypeScript SDK; install it with {TS_INSTALL}")
    }));
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk/package.json")
            .is_file(),
        "YOI_MCP_TS={} has no @modelcontextprotocol/sdk; install it with {TS_INSTALL}",
        dir.display()
    );
    dir
}

/// tiktoken's cache with `cl100k_base` in it, from the copy `bpe-openai` ships.
fn tiktoken_cache(py: &Path) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tiktoken-cache");
    std::fs::create_dir_all(&dir).unwrap();
    let script = r#"
import gzip, hashlib, os, sys, importlib.resources as r
data = gzip.decompress((r.files("bpe_openai") / "data" / "cl100k_base.tiktoken.gz").read_bytes())
assert hashlib.sha256(data).hexdigest() == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
open(os.path.join(sys.argv[1], hashlib.sha1(url.encode()).hexdigest()), "wb").write(data)
"#;
    let out = Command::new(py)
        .args(["-c", script])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "seeding tiktoken's cache: {}\ninstall with {INSTALL}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

fn client(py: &Path, env: &[(&str, String)]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let cache = tiktoken_cache(py);
    let mut cmd = Command::new(py);
    cmd.arg(script).env("TIKTOKEN_CACHE_DIR", cache);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the MCP client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap()
}

fn http() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

fn post(server: &Server, token: &str, path: &str, body: Value) -> (u16, Value) {
    let mut resp = http()
        .post(&format!("http://{}/api/v1{path}", server.addr))
        .header("Authorization", &format!("Bearer {token}"))
        .send_json(body)
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[test]
fn the_official_sdks_use_every_tool_over_http_and_stdio_within_scope() {
    let py = python();
    let repo = Repo::init();
    no_supervised_pods(&repo);
    let skill = repo.path().join(".yoi/skills/deploy-notes");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deploy-notes\ndescription: How to write deploy notes.\n---\nWrite deploy notes in NOTES.md.\n",
    )
    .unwrap();
    std::fs::create_dir_all(skill.join("references")).unwrap();
    std::fs::write(skill.join("references/format.md"), "One line per change.\n").unwrap();
    std::fs::write(repo.path().join("README.md"), "base\n").unwrap();
    yoi_testkit::commit_all(repo.path(), "base");
    let own = queued_ticket(&repo);
    let other = repo.create("Someone else's", common::COMPLETE_BRIEF);
    let server = Server::spawn(&repo);
    let token = |name: &str, scope: &str| {
        repo.yoi(&["token", "create", "--name", name, "--scope", scope])
            .ok()
            .stdout
            .trim()
            .to_string()
    };
    let coder = token("c1", "pod:coder");
    let read = token("reader", "read");
    let human = std::fs::read_to_string(repo.path().join(".yoi/local/admin.token"))
        .unwrap()
        .trim()
        .to_string();
    let (status, pod) = post(&server, &coder, "/pods", json!({ "name": "c" }));
    assert_eq!(status, 201, "{pod}");
    let (status, work) = post(
        &server,
        &coder,
        "/assignments/claim",
        json!({ "pod": pod["pod"]["id"], "wait_ms": 20000 }),
    );
    assert_eq!(status, 200, "{work}");
    let agent = work["agent_token"].as_str().unwrap().to_string();
    let assignment = work["assignment"]["id"].as_str().unwrap().to_string();
    let env = vec![
        ("YOI_MCP_URL", format!("http://{}/mcp", server.addr)),
        ("YOI_REPO", repo.path().display().to_string()),
        ("YOI_BIN", env!("CARGO_BIN_EXE_yoi").to_string()),
        ("HUMAN", human.clone()),
        ("READ", read),
        ("AGENT", agent.clone()),
        ("OWN", own.clone()),
        ("OTHER", other.clone()),
        ("ASSIGNMENT", assignment.clone()),
    ];
    // The official TypeScript SDK too: a person over HTTP, the agent over stdio.
    let ts = typescript_sdk();
    let out = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.mjs"))
        .env("YOI_MCP_TS", &ts)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the TypeScript MCP client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let measured = client(&py, &env);
    eprintln!("{measured}");
    for who in ["person", "read", "agent"] {
        let n = measured["tools_list_tokens"][who].as_u64().unwrap();
        assert!(n > 0 && n <= 2000, "{who}: {n} tokens");
    }

    // What the agent did is in its ticket's thread, by its pod; the question is in the inbox.
    let thread = std::fs::read_to_string(repo.ticket_dir(&own).join("thread.md")).unwrap();
    assert!(thread.contains("Halfway: tests written."), "{thread}");
    assert!(thread.contains("Which locale is the default?"), "{thread}");
    let (_, inbox) = server.get(&repo, "/inbox");
    assert!(
        inbox["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["ticket"] == own.as_str() && e["reason"] == "agent_question"),
        "{inbox}"
    );
    // The other ticket was never touched by the agent.
    let theirs = std::fs::read_to_string(repo.ticket_dir(&other).join("thread.md")).unwrap();
    assert!(!theirs.contains("pod:"), "{theirs}");

    // The claim ends: the agent's token can do nothing any more, over either transport.
    let (status, body) = post(
        &server,
        &coder,
        &format!("/assignments/{assignment}/fail"),
        json!({
            "pod": pod["pod"]["id"],
            "fence": work["assignment"]["fence"],
            "reason": "stopped by the test",
            "retryable": false
        }),
    );
    assert_eq!(status, 200, "{body}");
    let mut ended = env.clone();
    ended.push(("PHASE", "ended".into()));
    assert_eq!(client(&py, &ended)["ended"], "refused");

    // Without a running server `yoi mcp` says so and exits non-zero.
    drop(server);
    // (It may exit before reading its input, so a failed write to its stdin is no error.)
    let mut child = Command::new(env!("CARGO_BIN_EXE_yoi"))
        .arg("mcp")
        .current_dir(repo.path())
        .env_remove("YOI_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(stderr.contains("no yoi server is running"), "{stderr}");
    assert!(out.stdout.is_empty(), "{out:?}");
}

/// A pod's agent asks its question through the MCP tool instead of the `YOI-QUESTION:` line: a
/// real supervised pod runs the scripted agent, which pipes `initialize` and `ask_question` into
/// `yoi mcp --server $YOI_SERVER` with the claim token the pod gave it, then ends `blocked`. The
/// attempt ends blocked (no failure), the inbox shows `agent_question`, and after a person's
/// answer the next attempt is told it and the ticket merges.
#[test]
fn a_pods_agent_asks_through_the_mcp_tool_and_is_answered() {
    let yoi = env!("CARGO_BIN_EXE_yoi");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fake","version":"1"}}}"#;
    let ask = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_question","arguments":{"questions":["Which greeting: hello or hi?"]}}}"#;
    let repo = common::pods::workspace_with_reviewer(
        &format!(
            "attempt 1 run printf '%s\\n' '{init}' '{ask}' | {yoi} mcp --server \"$YOI_SERVER\" > \"$YOI_RUN_DIR/mcp.seen\"\n\
             attempt 1 run grep -q '\"isError\":false' \"$YOI_RUN_DIR/mcp.seen\"\n\
             attempt 1 blocked asked through MCP\n\
             attempt 2 run grep -q 'Answered by' \"$YOI_RUN_DIR/prompt.seen\"\n\
             attempt 2 write hello.txt hello\\n\n\
             attempt 2 done wrote the greeting the person chose\n"
        ),
        "say Looks right.\ndone read the change\nsay YOI-VERDICT: approve\n",
    );
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let inbox =
        || -> Value { serde_json::from_str(&repo.yoi(&["inbox", "--json"]).ok().stdout).unwrap() };
    common::pods::until("the question to reach the inbox", || inbox()["count"] == 1);
    let got = inbox();
    let e = &got["entries"][0];
    assert_eq!(e["reason"], "agent_question", "{got}");
    assert_eq!(e["ticket"], id.as_str());
    assert_eq!(e["detail"], "- Which greeting: hello or hi?", "{got}");
    common::pods::until_swept(&server, &repo);
    let rows = common::pods::assignments(&server, &repo, &id);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "blocked", "{rows:?}");
    assert_eq!(common::pods::state_of(&repo, &id), "inprogress");
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert_eq!(thread.matches("event: question ").count(), 1, "{thread}");

    repo.yoi(&["ticket", "answer", &id, "Say hello, in lower case."])
        .ok();
    common::pods::until("the ticket to be done", || {
        common::pods::state_of(&repo, &id) == "done"
    });
    let rows = common::pods::assignments(&server, &repo, &id);
    let second = rows
        .iter()
        .find(|a| a["step"] == "implement" && a["attempt"] == 2)
        .expect("the step was handed out again");
    assert_eq!(second["status"], "completed", "{rows:?}");
    drop(server);
}
