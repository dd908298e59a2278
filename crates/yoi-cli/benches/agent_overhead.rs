//! `cargo bench -p yoi-cli --bench agent_overhead [-- RUNS]`: the pod's own share of an attempt
//! with each real agent CLI, next to the CLI's own start time measured alone.
//!
//! For each CLI that `.ci/run` installs (found through `YOI_AIDER`, `YOI_CLAUDE`, `YOI_CODEX`,
//! `YOI_GEMINI`, `YOI_OPENCODE`; one without its variable is reported and left out), RUNS
//! times (default 5): a fresh workspace, a real `yoi serve` and a real `yoi pod run --once`
//! that runs the CLI in yoi's sandbox against its scripted local endpoint, exactly as the
//! `the_real_*` tests do. The pod's log says how the attempt divided (`attempt timing`):
//!
//! - **claim → agent start**: from the claim's answer to the agent's process starting: the run
//!   folder, the skills, the prompt, the claim's confirmation, the endpoint's files, the sandbox;
//! - **agent**: the CLI's whole run (with its turns against the endpoint);
//! - **agent exit → acknowledged**: the log, the commits brought in and settled, the result sent
//!   and answered.
//!
//! Each CLI is run twice as many times: idle, and while a second thread writes as a team does
//! (a ticket created and commented on through the API, back to back). The CLI's start time
//! alone is `PROGRAM --version`, RUNS times. Release build (what `cargo bench` builds); the
//! workspaces name `yoi-fake-agent` for their other roles, so build it first:
//! `cargo build --release -p yoi-tests --bin yoi-fake-agent`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use common::pods::*;
use common::server::Server;
use common::Repo;

struct Cli {
    agent: &'static str,
    var: &'static str,
    /// The profile for a scripted endpoint, and the endpoint (kept alive for the run).
    setup: fn() -> (String, Seen),
}

fn with_endpoint(case: RealCase) -> (String, Seen) {
    let (base, seen) = (case.endpoint)();
    let model = case
        .model
        .map(|m| format!("model = \"{m}\"\n"))
        .unwrap_or_default();
    (
        format!(
            "program = \"{}\"\nbase_url = \"{base}\"\n{model}api_key_env = \"TEST_MODEL_KEY\"\ntimeout_secs = 300",
            (case.program)()
        ),
        seen,
    )
}

const CLIS: &[Cli] = &[
    Cli {
        agent: "aider",
        var: "YOI_AIDER",
        setup: || {
            let (base, seen) = model_endpoint(&[AIDER_REPLY]);
            (aider_profile(&base), seen)
        },
    },
    Cli {
        agent: "claude",
        var: "YOI_CLAUDE",
        setup: || with_endpoint(claude_case()),
    },
    Cli {
        agent: "codex",
        var: "YOI_CODEX",
        setup: || with_endpoint(codex_case()),
    },
    Cli {
        agent: "gemini",
        var: "YOI_GEMINI",
        setup: || with_endpoint(gemini_case()),
    },
    Cli {
        agent: "opencode",
        var: "YOI_OPENCODE",
        setup: || with_endpoint(opencode_case()),
    },
];

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// A team's writes beside the attempt: tickets created and commented on through the API, back
/// to back, until dropped; counts what it wrote.
struct Team {
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
    started: Instant,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the team wrote, over how long it wrote.
#[derive(Default)]
struct Tally {
    writes: AtomicU64,
    ms: AtomicU64,
}

impl Team {
    fn start(repo: &Repo, server: &Server, tally: Arc<Tally>) -> Team {
        let token = std::fs::read_to_string(repo.path().join(".yoi/local/admin.token")).unwrap();
        let token = format!("Bearer {}", token.trim());
        let base = format!("http://{}/api/v1", server.addr);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stop, tally) = (stop.clone(), tally.clone());
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build()
                    .into();
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    n += 1;
                    let mut resp = agent
                        .post(&format!("{base}/tickets"))
                        .header("Authorization", &token)
                        .send_json(serde_json::json!({"title": format!("Team work {n}")}))
                        .unwrap();
                    let made: serde_json::Value = resp.body_mut().read_json().unwrap();
                    let Some(id) = made["ticket"].as_str() else {
                        panic!("creating a ticket under load: {made}");
                    };
                    let status = agent
                        .post(&format!("{base}/tickets/{id}/comments"))
                        .header("Authorization", &token)
                        .send_json(serde_json::json!({"body": "a comment while pods run"}))
                        .unwrap()
                        .status();
                    assert!(status.is_success(), "commenting under load: {status}");
                    tally.writes.fetch_add(2, Ordering::SeqCst);
                }
            })
        };
        Team {
            stop,
            tally,
            started: Instant::now(),
            thread: Some(thread),
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.tally
            .ms
            .fetch_add(self.started.elapsed().as_millis() as u64, Ordering::SeqCst);
    }
}

/// One attempt by `cli`, idle or with a team writing: its (claim → agent, agent, agent → ack).
fn one_attempt(cli: &Cli, loaded: bool, tally: &Arc<Tally>) -> (u64, u64, u64) {
    let (config, _seen) = (cli.setup)();
    let tally = tally.clone();
    let run = RealCoder::run_during(
        cli.agent,
        &config,
        RunAs::Tester,
        &[("TEST_MODEL_KEY", "sk-yoi-test")],
        move |repo, server| -> Box<dyn std::any::Any> {
            if loaded {
                Box::new(Team::start(repo, server, tally))
            } else {
                Box::new(())
            }
        },
    );
    assert!(
        run.on_branch("greeting.txt").starts_with("hello from"),
        "the attempt did its work"
    );
    let log = std::fs::read_to_string(pod_log(&run.repo, cli.agent)).unwrap();
    let timings = attempt_timings(&log);
    assert_eq!(timings.len(), 1, "one attempt, one timing line: {log}");
    timings[0]
}

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    println!("pod overhead per attempt, {runs} runs each, medians in ms (max in brackets)");
    println!(
        "| CLI | load | claim → agent start | agent run | agent exit → acknowledged | pod's share | `--version` alone |"
    );
    println!("|---|---|---|---|---|---|---|");
    for cli in CLIS {
        let Ok(program) = std::env::var(cli.var) else {
            println!(
                "| {} | — | not measured: {} is not set | | | | |",
                cli.agent, cli.var
            );
            continue;
        };
        let version: Vec<u64> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let out = std::process::Command::new(&program)
                    .arg("--version")
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{program} --version");
                t.elapsed().as_millis() as u64
            })
            .collect();
        for loaded in [false, true] {
            let tally = Arc::new(Tally::default());
            let all: Vec<_> = (0..runs)
                .map(|_| one_attempt(cli, loaded, &tally))
                .collect();
            let col = |f: fn(&(u64, u64, u64)) -> u64| {
                let v: Vec<u64> = all.iter().map(f).collect();
                format!("{} ({})", median(v.clone()), v.iter().max().unwrap())
            };
            let load = if loaded {
                let ms = tally.ms.load(Ordering::SeqCst).max(1);
                format!(
                    "{:.0} writes/s",
                    tally.writes.load(Ordering::SeqCst) as f64 * 1000.0 / ms as f64
                )
            } else {
                "idle".into()
            };
            println!(
                "| {} | {load} | {} | {} | {} | {} | {} |",
                cli.agent,
                col(|t| t.0),
                col(|t| t.1),
                col(|t| t.2),
                col(|t| t.0 + t.2),
                median(version.clone())
            );
        }
    }
}
