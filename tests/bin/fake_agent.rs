//! `yoi-fake-agent SCRIPT`: a scripted stand-in for a coding agent CLI, for the pod tests. It
//! reads its prompt from stdin (like most agent CLIs) into `prompt.seen` in its run folder (into
//! `follow-up.seen` when `prompt.seen` is there already: a second turn of the same run, such as
//! the pod's follow-up asking for the trailer lines, which a profile's `follow_up` argv runs with
//! a script of its own), then follows SCRIPT line by line, deterministically:
//!
//! - `write PATH TEXT…` — write TEXT (with `\n` for line breaks) to PATH, relative to the cwd;
//! - `commit MESSAGE…` — `git add -A && git commit -m MESSAGE` (the agent committing itself);
//! - `say TEXT…` — print TEXT on stdout (the final message the contract is read from);
//! - `done SUMMARY…` / `blocked SUMMARY…` / `failed SUMMARY…` — print the YOI- trailers;
//! - `sleep MS` — sleep;
//! - `ignore-sigterm` — from now on SIGTERM does nothing (only SIGKILL ends it);
//! - `grandchild SECS` — start `sleep SECS` in the background and leave it running;
//! - `pidfile PATH` — write this process's pid to PATH;
//! - `exit CODE` — exit with CODE;
//! - `api METHOD PATH [BODY]` — call `$YOI_SERVER/api/v1PATH` with `$YOI_TOKEN` and append
//!   `STATUS PATH` to `api.seen` in the run folder (what the agent's own token may do);
//! - `keep-token` — save `$YOI_TOKEN` to `token.seen` in the run folder;
//! - `run COMMAND…` — `sh -c COMMAND` in the cwd (fails the agent if it fails);
//! - `attempt N LINE` — run LINE only when `$YOI_ATTEMPT` is N (a round-by-round script);
//! - `step NAME LINE` — run LINE only in step NAME (`$YOI_STEP`: implement, integrate, …).
//!
//! `$YOI_TICKET` in a line is replaced by the ticket id.

use std::io::{Read, Write};
use std::process::Command;

fn main() {
    let script = std::env::args()
        .nth(1)
        .expect("usage: yoi-fake-agent SCRIPT");
    let mut prompt = String::new();
    let _ = std::io::stdin().read_to_string(&mut prompt);
    if let Ok(dir) = std::env::var("YOI_RUN_DIR") {
        let first = std::path::Path::new(&dir).join("prompt.seen");
        let seen = if first.exists() {
            first.with_file_name("follow-up.seen")
        } else {
            first
        };
        let _ = std::fs::write(seen, &prompt);
    }
    let text = std::fs::read_to_string(&script).expect("the script is readable");
    let mut out = std::io::stdout();
    let attempt = std::env::var("YOI_ATTEMPT").unwrap_or_default();
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(rest) = line.strip_prefix("attempt ") {
            let (n, rest) = rest.split_once(' ').unwrap_or((rest, ""));
            if n != attempt {
                continue;
            }
            line = rest;
        }
        if let Some(rest) = line.strip_prefix("step ") {
            let (n, rest) = rest.split_once(' ').unwrap_or((rest, ""));
            if std::env::var("YOI_STEP").unwrap_or_default() != n {
                continue;
            }
            line = rest;
        }
        let (cmd, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.replace(
            "$YOI_TICKET",
            &std::env::var("YOI_TICKET").unwrap_or_default(),
        );
        let rest = rest.as_str();
        let rest = rest.replace("\\n", "\n");
        match cmd {
            "" => {}
            "write" => {
                let (path, body) = rest.split_once(' ').unwrap_or((&rest, ""));
                if let Some(parent) = std::path::Path::new(path).parent() {
                    std::fs::create_dir_all(parent).unwrap();
                }
                std::fs::write(path, body).unwrap();
            }
            "commit" => {
                let git = |args: &[&str]| {
                    let ok = Command::new("git")
                        .args([
                            "-c",
                            "user.name=fake agent",
                            "-c",
                            "user.email=agent@fake.invalid",
                            // No detached maintenance process left behind.
                            "-c",
                            "maintenance.auto=false",
                        ])
                        .args(args)
                        .status()
                        .unwrap()
                        .success();
                    assert!(ok, "git {args:?}");
                };
                git(&["add", "-A"]);
                git(&["commit", "-q", "-m", &rest]);
            }
            "say" => writeln!(out, "{rest}").unwrap(),
            "done" | "blocked" | "failed" => {
                writeln!(out, "YOI-RESULT: {cmd}\nYOI-SUMMARY: {rest}").unwrap();
            }
            "sleep" => std::thread::sleep(std::time::Duration::from_millis(rest.parse().unwrap())),
            "ignore-sigterm" => unsafe {
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
            },
            "grandchild" => {
                // Deliberately left running: the pod must reap it with the agent's group.
                #[allow(clippy::zombie_processes)]
                let _child = Command::new("sleep").arg(&rest).spawn().unwrap();
            }
            "pidfile" => std::fs::write(&rest, std::process::id().to_string()).unwrap(),
            "exit" => std::process::exit(rest.parse().unwrap()),
            "api" => {
                let mut parts = rest.splitn(3, ' ');
                let (method, path) = (parts.next().unwrap(), parts.next().unwrap());
                let body = parts.next().unwrap_or("{}");
                let url = format!("{}/api/v1{path}", std::env::var("YOI_SERVER").unwrap());
                let auth = format!("Bearer {}", std::env::var("YOI_TOKEN").unwrap_or_default());
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build()
                    .into();
                let status = match method {
                    "GET" => agent.get(&url).header("Authorization", &auth).call(),
                    _ => agent
                        .post(&url)
                        .header("Authorization", &auth)
                        .header("Content-Type", "application/json")
                        .send(body),
                }
                .map(|r| r.status().as_u16())
                .unwrap_or(0);
                let seen =
                    std::path::Path::new(&std::env::var("YOI_RUN_DIR").unwrap()).join("api.seen");
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(seen)
                    .unwrap();
                writeln!(f, "{status} {path}").unwrap();
            }
            "run" => {
                let ok = Command::new("sh")
                    .args(["-c", rest.as_str()])
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "`{rest}` failed");
            }
            "keep-token" => {
                let seen =
                    std::path::Path::new(&std::env::var("YOI_RUN_DIR").unwrap()).join("token.seen");
                std::fs::write(seen, std::env::var("YOI_TOKEN").unwrap_or_default()).unwrap();
            }
            other => panic!("unknown script command {other:?}"),
        }
        out.flush().unwrap();
    }
}
