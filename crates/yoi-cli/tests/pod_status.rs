//! A pod's own status for a readiness probe (docs/deploy.md, "On Kubernetes"): a real
//! `yoi pod run --cache DIR --status-file PATH` against `yoi serve --tls-self-signed` writes
//! its status as it registers, works and waits, and `yoi pod status --file PATH --max-age AGE`
//! passes while the pod runs and its server answers it, and fails, saying why, when the pod is
//! frozen (its status goes stale), when it has lost its server, and once it has stopped.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::pods::{no_supervised_pods, pod_host, queued_ticket, until, workspace, PodHost};
use common::server::Server;
use yoi_testkit::child::Owned;

/// `yoi pod status ARGS` in `dir`.
fn pod_status(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_yoi"))
        .args(["pod", "status"])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: signals a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, sig) }, 0);
}

#[test]
fn a_pods_status_file_says_ready_while_it_works_and_why_not_when_frozen_cut_off_or_stopped() {
    // The agent takes a moment, so the pod is seen working.
    let (repo, _) = workspace("sleep 1500\nwrite hello.txt hello\\n\ndone greeted\n", 30);
    no_supervised_pods(&repo);
    let id = queued_ticket(&repo);
    let mut server = Server::spawn_tls(&repo);
    let _login = server.stdout_line();

    // The pod host: a folder of its own with the agent's profile, the certificate and a token.
    let PodHost { repo: host, token } = pod_host(
        &repo,
        "sleep 1500\nwrite hello.txt hello\\n\ndone greeted\n",
        "probed",
        60,
    );
    let h = host.path();

    // Before the pod runs there is no status: not ready.
    let none = pod_status(h, &["--file", "run/status.json"]);
    assert_eq!(none.status.code(), Some(1), "{}", text(&none));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("no pod status at run/status.json"),
        "{}",
        text(&none)
    );

    let log = h.join("pod.log");
    let mut pod = Owned(
        Command::new(env!("CARGO_BIN_EXE_yoi"))
            .args([
                "pod", "run", "--role", "coder", "--agent", "fake", "--name", "probed",
            ])
            .args(["--server", &format!("https://{}", server.addr)])
            .args([
                "--ca",
                "server.pem",
                "--cache",
                "cache",
                "--token-file",
                "token",
            ])
            .args(["--wait-ms", "300", "--status-file", "run/status.json"])
            .current_dir(h)
            .env("HOME", h)
            .env_remove("YOI_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let status_json = || -> serde_json::Value {
        std::fs::read_to_string(h.join("run/status.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    };

    // Working on the ticket: ready, and the status names the claim.
    until("the pod's status to say it works on the ticket", || {
        status_json()["state"] == "working"
    });
    let working = status_json();
    assert_eq!(working["ticket"], id.as_str(), "{working}");
    assert_eq!(working["role"], "coder");
    assert_eq!(working["pid"], pod.id());
    assert!(working["pod"].as_str().unwrap().starts_with("probed@"));
    assert!(working["lease_ms"].as_i64().unwrap() > 0);
    let ok = pod_status(h, &["--file", "run/status.json", "--max-age", "30s"]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    let said = String::from_utf8_lossy(&ok.stdout);
    assert!(said.starts_with("ready: pod probed@"), "{said}");
    assert!(said.contains(&format!("(coder) working on {id}")), "{said}");
    assert!(!std::fs::read_to_string(h.join("run/status.json"))
        .unwrap()
        .contains(std::fs::read_to_string(&token).unwrap().trim()));

    // The attempt is reported; the pod waits for more, idle and ready.
    until("the pod to go back to waiting", || {
        status_json()["state"] == "idle"
    });
    // The file is rewritten every 5 s and at each change, so on a busy machine the answer it
    // last recorded can be more than the 2 s allowed here by the time the probe reads it: ask
    // until a fresh write passes, as a probe that runs every few seconds would.
    let mut ok = None;
    until("the idle pod to pass the check", || {
        let out = pod_status(
            h,
            &["--file", "run/status.json", "--max-age", "2s", "--json"],
        );
        let passed = out.status.code() == Some(0);
        ok = Some(out);
        passed
    });
    let ok = ok.unwrap();
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(v["ready"], true, "{v}");
    assert_eq!(v["status"]["state"], "idle");
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("attempt timing"));

    // Frozen (SIGSTOP): its status goes stale and the probe fails; thawed, it is ready again.
    signal(pod.id(), libc::SIGSTOP);
    let mut stale = None;
    until("the frozen pod's status to fail the check", || {
        let out = pod_status(h, &["--file", "run/status.json", "--max-age", "2s"]);
        let failed = out.status.code() == Some(1);
        stale = Some(out);
        failed
    });
    let stale = stale.unwrap();
    let why = String::from_utf8_lossy(&stale.stderr);
    assert!(
        why.contains("not ready: the pod's status is") && why.contains("stopped or stuck"),
        "{}",
        text(&stale)
    );
    signal(pod.id(), libc::SIGCONT);
    until("the thawed pod to be ready again", || {
        pod_status(h, &["--file", "run/status.json", "--max-age", "2s"])
            .status
            .success()
    });

    // The server is gone: the pod keeps running and writing, but nobody answers it.
    server.kill();
    let mut cut = None;
    until("the cut-off pod to fail the check", || {
        let out = pod_status(h, &["--file", "run/status.json", "--max-age", "2s"]);
        let failed = out.status.code() == Some(1);
        cut = Some(out);
        failed
    });
    let cut = cut.unwrap();
    let why = String::from_utf8_lossy(&cut.stderr);
    assert!(
        why.contains("had not answered the pod for")
            && why.contains("last error: a claim got no answer"),
        "{}",
        text(&cut)
    );
    assert!(matches!(pod.try_wait(), Ok(None)), "the pod ended");

    // Stopped: the last status says so, and the probe fails at once (no such process).
    signal(pod.id(), libc::SIGTERM);
    assert!(
        pod.wait().unwrap().success(),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    assert_eq!(status_json()["state"], "stopped");
    let gone = pod_status(h, &["--file", "run/status.json", "--max-age", "1h"]);
    assert_eq!(gone.status.code(), Some(1), "{}", text(&gone));
    assert!(
        String::from_utf8_lossy(&gone.stderr)
            .contains("is not running; its last status says stopped"),
        "{}",
        text(&gone)
    );

    // A bad age is a usage error that names the flag.
    let bad = pod_status(h, &["--file", "run/status.json", "--max-age", "soon"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--max-age"));
}
