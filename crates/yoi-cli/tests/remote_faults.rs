//! Faults of a pod on another host (issue 34, docs/pods.md "Faults"): a real server, a real
//! `yoi pod run --cache DIR` with a workspace, cache and `HOME` of its own, and between them a
//! TCP proxy this test cuts, holds and restores:
//!
//! - the network drops while the agent finishes and comes back within the lease: the push and
//!   the report are made again and taken, in the same attempt;
//! - the network stays down past the lease: the server expires the attempt and hands the step
//!   out again with a new fence; the pod gives its claim up without a report, claims the new
//!   attempt, and the old attempt's commit never reaches the server;
//! - the connection is cut in the middle of the pack upload: no ref is written, the repository
//!   checks clean, and the push made again is taken;
//! - the server is killed in the middle of the pack upload and started again: the same;
//! - two pods under one name: each is its own incarnation (`name@nonce`) working its own claim,
//!   and a second pod given a cache another pod holds is refused before it registers.
//!
//! Each ends with the ticket merged, no live assignment, no attempt ref, doctor clean and no
//! process of the pod left. The transport is plain HTTP on loopback: TLS is `remote_pod`'s.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};

use yoi_testkit::child::Owned;

use common::pods::{
    assignments, git, no_supervised_pods, pod_host, processes_mentioning, processes_working_in,
    queued_ticket, state_of, until, workspace_with_reviewer, PodHost,
};
use common::server::Server;
use common::Repo;

/// What the proxy does with bytes and connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Bytes flow.
    Open,
    /// Connections are held: nothing is forwarded, nothing closed.
    Held,
    /// Every connection is closed, and each new one at once.
    Down,
}

/// What the proxy does by itself once one connection has sent more than a number of bytes
/// to the server (a pack upload).
#[derive(Debug, Clone, Copy)]
enum Trip {
    Cut,
    Hold,
}

struct ProxyState {
    mode: Mode,
    upstream: String,
    conns: Vec<TcpStream>,
    trip: Option<(usize, Trip)>,
}

/// A TCP proxy on loopback between the pod and the server.
struct Proxy {
    addr: String,
    state: Arc<(Mutex<ProxyState>, Condvar)>,
    /// Connections closed at once while down.
    refused: Arc<AtomicUsize>,
    tripped: mpsc::Receiver<()>,
}

impl Proxy {
    fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let state = Arc::new((
            Mutex::new(ProxyState {
                mode: Mode::Open,
                upstream: upstream.to_string(),
                conns: Vec::new(),
                trip: None,
            }),
            Condvar::new(),
        ));
        let refused = Arc::new(AtomicUsize::new(0));
        let (tx, tripped) = mpsc::channel();
        let (st, count) = (state.clone(), refused.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let upstream = {
                    let s = st.0.lock().unwrap();
                    if s.mode == Mode::Down {
                        count.fetch_add(1, Ordering::SeqCst);
                        continue;
                    }
                    s.upstream.clone()
                };
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                {
                    let mut s = st.0.lock().unwrap();
                    s.conns.push(client.try_clone().unwrap());
                    s.conns.push(server.try_clone().unwrap());
                }
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (st1, st2, tx) = (st.clone(), st.clone(), tx.clone());
                std::thread::spawn(move || pump(client, server, &st1, Some(tx)));
                std::thread::spawn(move || pump(s2, c2, &st2, None));
            }
        });
        Proxy {
            addr,
            state,
            refused,
            tripped,
        }
    }

    fn set(&self, mode: Mode) {
        let (lock, cv) = &*self.state;
        let mut s = lock.lock().unwrap();
        s.mode = mode;
        if mode == Mode::Down {
            for c in s.conns.drain(..) {
                let _ = c.shutdown(Shutdown::Both);
            }
        }
        cv.notify_all();
    }

    fn upstream(&self, addr: &str) {
        self.state.0.lock().unwrap().upstream = addr.to_string();
    }

    fn trip_after(&self, bytes: usize, trip: Trip) {
        self.state.0.lock().unwrap().trip = Some((bytes, trip));
    }

    /// Wait until `n` more connections than now were closed while down.
    fn until_refused(&self, n: usize) {
        let seen = self.refused.load(Ordering::SeqCst);
        until("the pod to try the server again", || {
            self.refused.load(Ordering::SeqCst) >= seen + n
        });
    }
}

/// Copy `from` to `to` while the proxy lets bytes through; a client's side (`tripped` given)
/// counts what it sent and trips the proxy past the set number of bytes.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    state: &(Mutex<ProxyState>, Condvar),
    tripped: Option<mpsc::Sender<()>>,
) {
    let mut sent = 0usize;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        {
            let (lock, cv) = state;
            let mut s = lock.lock().unwrap();
            if let (Some(tx), Some((limit, trip))) = (&tripped, s.trip) {
                if sent + n > limit {
                    s.trip = None;
                    match trip {
                        Trip::Hold => s.mode = Mode::Held,
                        Trip::Cut => {
                            s.mode = Mode::Down;
                            for c in s.conns.drain(..) {
                                let _ = c.shutdown(Shutdown::Both);
                            }
                        }
                    }
                    let _ = tx.send(());
                }
            }
            while s.mode == Mode::Held {
                s = cv.wait(s).unwrap();
            }
            if s.mode == Mode::Down {
                break;
            }
        }
        sent += n;
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// The server's repository checks clean (`git fsck`): no half-written object or ref.
fn fsck_clean(repo: &Repo) {
    let fsck = Command::new("git")
        .args(["fsck", "--no-progress", "--no-dangling"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "git fsck: {}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

/// A pod host ([`pod_host`]) whose agent may take two minutes: long enough for a push held
/// at the proxy.
fn host(server_repo: &Repo, script: &str, token_name: &str) -> PodHost {
    pod_host(server_repo, script, token_name, 120)
}

/// `yoi pod run` on `host` through `server` (the proxy's address), its cache `cache` under the
/// host, its stderr in the host's side folder as `NAME-N.log`.
fn pod(host: &PodHost, server: &str, name: &str, cache: &str, once: bool) -> (Owned, PathBuf) {
    static STARTED: AtomicUsize = AtomicUsize::new(0);
    let n = STARTED.fetch_add(1, Ordering::SeqCst);
    let log = host
        .repo
        .side
        .path()
        .join(format!("{name}-{cache}-{n}.log"));
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
        &format!("http://{server}"),
        "--cache",
        cache,
        "--token-file",
    ])
    .arg(&host.token)
    .args(["--wait-ms", "2000"]);
    if once {
        cmd.arg("--once");
    }
    let child = cmd
        .current_dir(host.repo.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", host.repo.path())
        .env("USER", "far")
        .env("YOI_LOG", "info")
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    (Owned(child), log)
}

/// The run folder of the attempt the pod `name` on `host` runs now, once its agent has said
/// it started (the script's `run touch "$YOI_RUN_DIR/started"`).
fn started_run(host: &PodHost, name: &str, skip: &[PathBuf]) -> PathBuf {
    let runs = host
        .repo
        .path()
        .join(".yoi/local/pods")
        .join(name)
        .join("runs");
    let mut found = None;
    until("the agent to start", || {
        found = std::fs::read_dir(&runs).ok().and_then(|d| {
            d.flatten()
                .map(|e| e.path())
                .find(|p| p.join("started").is_file() && !skip.contains(p))
        });
        found.is_some()
    });
    found.unwrap()
}

/// A ticket's assignments with `step`, as (attempt, status).
fn attempts_of(server: &Server, repo: &Repo, id: &str, step: &str) -> Vec<(i64, String)> {
    assignments(server, repo, id)
        .iter()
        .filter(|a| a["step"] == step)
        .map(|a| {
            (
                a["attempt"].as_i64().unwrap_or_default(),
                a["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// No push into the server's repository is still running (git's `receive-pack` for it).
fn until_no_git_of(repo: &Repo) {
    let path = repo.path().display().to_string();
    until("the server's receive-pack to end", || {
        processes_mentioning("receive-pack").into_iter().all(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            !String::from_utf8_lossy(&cmdline).contains(&path)
        })
    });
}

/// The end every fault test checks: the ticket merged with `file` saying `text`, no live
/// assignment, no attempt ref, the repository's objects whole, and (once the server is
/// stopped) doctor clean.
/// The pod (`--once`) exits successfully and leaves nothing running, and the ticket's
/// implement step took exactly one attempt, which completed: a fault that was retried did not
/// cost a second attempt. Returns the pod's log.
fn one_attempt_completed(
    mut child: Owned,
    log: &std::path::Path,
    far: &PodHost,
    server: &Server,
    repo: &Repo,
    id: &str,
) -> String {
    let status = child.wait().unwrap();
    let text = std::fs::read_to_string(log).unwrap();
    assert!(status.success(), "{text}");
    no_process_of(far);
    assert_eq!(
        attempts_of(server, repo, id, "implement"),
        vec![(1, "completed".to_string())]
    );
    text
}

fn ends_clean(mut server: Server, repo: &Repo, ids: &[&str], file: &str, text: &str) {
    for id in ids {
        until("the ticket to be merged", || state_of(repo, id) == "done");
        until("the ticket's assignments to end", || {
            assignments(&server, repo, id).iter().all(|a| {
                !["held", "pending", "claimed"].contains(&a["status"].as_str().unwrap_or(""))
            })
        });
    }
    assert_eq!(git(repo.path(), &["show", &format!("main:{file}")]), text);
    until("the attempt refs to be deleted", || {
        git(repo.path(), &["for-each-ref", "refs/yoi/attempts/"]).is_empty()
    });
    fsck_clean(repo);
    server.terminate();
    server.wait();
    let doctor = repo.yoi(&["doctor", "--json"]);
    assert_eq!(doctor.code, 0, "{}\n{}", doctor.stdout, doctor.stderr);
}

/// A pod that ran without `--once`, stopped as a service manager stops it; its stderr.
fn stop_pod(mut child: Owned, log: &Path, host: &PodHost) -> String {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    let text = std::fs::read_to_string(log).unwrap_or_default();
    assert!(status.success(), "the pod: {status}\n{text}");
    let _ = host;
    text
}

/// No process is left working in the pod's host (the pod, its agents, their git).
fn no_process_of(host: &PodHost) {
    let left = processes_working_in(host.repo.path());
    assert!(
        left.is_empty(),
        "processes left on the pod's host: {left:?}"
    );
}

/// Wait until the pod's log says `what`.
fn until_logged(log: &Path, what: &str) {
    until(what, || {
        std::fs::read_to_string(log).is_ok_and(|t| t.contains(what))
    });
}

/// Waits for the test's `go` file in the attempt's run folder before it finishes.
const GATED: &str = "run touch \"$YOI_RUN_DIR/started\"\nrun while [ ! -f \"$YOI_RUN_DIR/go\" ]; do sleep 0.05; done\n";

/// The server's workspace: the coder is remote, the server's own verifier and reviewer pods
/// take the later steps; leases of `lease_secs`, heartbeats every second.
fn server_workspace(lease_secs: u64) -> Repo {
    let repo = workspace_with_reviewer(
        "write hello.txt hello\\n\ndone greeted\n",
        "say YOI-VERDICT: approve\ndone reviewed\n",
    );
    no_supervised_pods(&repo);
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("lease_secs = 30", &format!("lease_secs = {lease_secs}"));
    std::fs::write(&config, text).unwrap();
    repo
}

#[test]
fn a_network_drop_within_the_lease_retries_the_push_and_the_report_in_the_same_attempt() {
    let repo = server_workspace(30);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let proxy = Proxy::start(&server.addr);
    let far = host(
        &repo,
        &format!("{GATED}write hello.txt hello\\n\ndone greeted from afar\n"),
        "far-coder",
    );
    let (child, log) = pod(&far, &proxy.addr, "far", "cache", false);
    let run = started_run(&far, "far", &[]);
    // Down while the agent ends: its push and its report fail, and are made again.
    proxy.set(Mode::Down);
    std::fs::write(run.join("go"), "").unwrap();
    until_logged(&log, "pushing the result failed");
    proxy.until_refused(2);
    proxy.set(Mode::Open);
    until("the implement step to complete", || {
        attempts_of(&server, &repo, &id, "implement")
            .iter()
            .any(|(_, s)| s == "completed")
    });
    assert_eq!(
        attempts_of(&server, &repo, &id, "implement"),
        vec![(1, "completed".to_string())],
        "one attempt, taken"
    );
    let text = stop_pod(child, &log, &far);
    no_process_of(&far);
    assert!(text.contains("1 completed, 0 failed, 0 lost"), "{text}");
    ends_clean(server, &repo, &[&id], "hello.txt", "hello");
}

#[test]
fn a_network_drop_past_the_lease_expires_the_attempt_and_its_work_never_reaches_the_server() {
    let repo = server_workspace(4);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let proxy = Proxy::start(&server.addr);
    let far = host(
        &repo,
        &format!(
            "attempt 1 {}\nattempt 1 {}\nattempt 1 write stale.txt stale\\n\nattempt 1 done stale work\nattempt 2 write hello.txt hello\\n\nattempt 2 done fresh work\n",
            GATED.lines().next().unwrap(),
            GATED.lines().nth(1).unwrap()
        ),
        "far-coder",
    );
    let (child, log) = pod(&far, &proxy.addr, "far", "cache", false);
    let run = started_run(&far, "far", &[]);
    proxy.set(Mode::Down);
    std::fs::write(run.join("go"), "").unwrap();
    // The server hands the step out again with a new fence once the lease has passed.
    until("the first attempt to expire", || {
        attempts_of(&server, &repo, &id, "implement")
            .iter()
            .any(|(n, s)| *n == 1 && s == "expired")
    });
    proxy.set(Mode::Open);
    until("the ticket to be merged", || state_of(&repo, &id) == "done");
    let rows = attempts_of(&server, &repo, &id, "implement");
    assert!(
        rows.contains(&(1, "expired".to_string())) && rows.contains(&(2, "completed".to_string())),
        "{rows:?}"
    );
    // The pod gave the first claim up once its lease had passed without an answer (`lost`),
    // or, had the network come back first, its push was refused (403) and it failed.
    let text = stop_pod(child, &log, &far);
    no_process_of(&far);
    assert!(
        text.contains("1 completed, 0 failed, 1 lost")
            || text.contains("1 completed, 1 failed, 0 lost"),
        "{text}"
    );
    // The stale attempt's commit is nowhere in the server's repository.
    let stale = Command::new("git")
        .args(["log", "--all", "--format=%H", "--", "stale.txt"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&stale.stdout).trim().is_empty());
    assert!(git(repo.path(), &["ls-tree", "-r", "--name-only", "main"])
        .lines()
        .all(|f| f != "stale.txt"));
    ends_clean(server, &repo, &[&id], "hello.txt", "hello");
}

/// An agent that leaves about 3 MB nobody can compress, so its push is a long pack upload.
const BIG: &str =
    "run head -c 3000000 /dev/urandom > big.bin\nwrite hello.txt hello\\n\ndone a big change\n";

/// Nothing of the cut push reached a ref, and no quarantine of it is left.
fn nothing_half_written(repo: &Repo) {
    until_no_git_of(repo);
    assert_eq!(
        git(repo.path(), &["for-each-ref", "refs/yoi/attempts/"]),
        ""
    );
    let objects = repo.path().join(".git/objects");
    let left: Vec<_> = std::fs::read_dir(&objects)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("incoming-"))
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "quarantines left: {left:?}");
    fsck_clean(repo);
}

#[test]
fn a_push_cut_mid_pack_writes_no_ref_and_the_push_made_again_is_taken() {
    let repo = server_workspace(30);
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let proxy = Proxy::start(&server.addr);
    proxy.trip_after(1_000_000, Trip::Cut);
    let far = host(&repo, BIG, "far-coder");
    let (child, log) = pod(&far, &proxy.addr, "far", "cache", true);
    proxy
        .tripped
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the push's pack never passed the proxy");
    nothing_half_written(&repo);
    proxy.set(Mode::Open);
    let text = one_attempt_completed(child, &log, &far, &server, &repo, &id);
    assert!(text.contains("pushing the result failed"), "{text}");
    ends_clean(server, &repo, &[&id], "hello.txt", "hello");
}

#[test]
fn a_server_killed_mid_push_and_started_again_takes_the_push_made_again() {
    let repo = server_workspace(30);
    let id = queued_ticket(&repo);
    let mut server = Server::spawn(&repo);
    let proxy = Proxy::start(&server.addr);
    proxy.trip_after(1_000_000, Trip::Hold);
    let far = host(&repo, BIG, "far-coder");
    let (child, log) = pod(&far, &proxy.addr, "far", "cache", true);
    // Half the pack is in the server's git when the server dies.
    proxy
        .tripped
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the push's pack never passed the proxy");
    server.kill();
    proxy.set(Mode::Down);
    nothing_half_written(&repo);
    let server = Server::spawn(&repo);
    proxy.upstream(&server.addr);
    proxy.set(Mode::Open);
    one_attempt_completed(child, &log, &far, &server, &repo, &id);
    ends_clean(server, &repo, &[&id], "hello.txt", "hello");
}

#[test]
fn two_pods_under_one_name_are_two_incarnations_and_a_held_cache_refuses_the_second() {
    let repo = server_workspace(30);
    let first = queued_ticket(&repo);
    let second = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let far = host(
        &repo,
        &format!("{GATED}write hello.txt hello\\n\ndone greeted\n"),
        "far-coder",
    );
    let (a, log_a) = pod(&far, &server.addr, "twin", "cache-a", false);
    let run_a = started_run(&far, "twin", &[]);
    // The same cache: refused before it registers.
    let (mut b, log_b) = pod(&far, &server.addr, "twin", "cache-a", false);
    let status = b.wait().unwrap();
    let text = std::fs::read_to_string(&log_b).unwrap();
    assert_eq!(status.code(), Some(1), "{text}");
    assert!(text.contains("in use by another pod"), "{text}");
    // Its own cache: a second incarnation under the same name and token, with its own claim.
    let (b, log_b) = pod(&far, &server.addr, "twin", "cache-b", false);
    let run_b = started_run(&far, "twin", std::slice::from_ref(&run_a));
    let (status, body) = server.get(&repo, "/pods");
    assert_eq!(status, 200, "{body}");
    let twins: Vec<String> = body["pods"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "twin" && p["state"] == "working")
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(twins.len(), 2, "{body}");
    assert_ne!(twins[0], twins[1]);
    for run in [&run_a, &run_b] {
        std::fs::write(run.join("go"), "").unwrap();
    }
    let text_a = stop_pod_when_done(a, &log_a, &far, &server, &repo, &[&first, &second]);
    let text_b = stop_pod(b, &log_b, &far);
    no_process_of(&far);
    assert!(
        text_a.contains("1 completed") || text_a.contains("2 completed"),
        "{text_a}"
    );
    assert!(text_b.contains("completed"), "{text_b}");
    ends_clean(server, &repo, &[&first, &second], "hello.txt", "hello");
}

/// Stop a pod once every ticket in `ids` is done.
fn stop_pod_when_done(
    child: Owned,
    log: &Path,
    host: &PodHost,
    server: &Server,
    repo: &Repo,
    ids: &[&str],
) -> String {
    for id in ids {
        until("the ticket to be merged", || state_of(repo, id) == "done");
        let _ = server;
    }
    stop_pod(child, log, host)
}
