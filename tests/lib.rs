//! Shared helpers for yoi's end-to-end tests and their helper programs.

pub mod autocannon;
pub mod fuzz;
pub mod generate;
pub mod history;
pub mod merge_corpus;
pub mod thread_life;

use std::path::Path;

use yoi_core::{Principal, Timestamp};
use yoi_store::{Ctx, Workspace};

/// A fixed clock for helper programs: the tests assert content, not times.
pub fn ctx(name: &str) -> Ctx {
    Ctx::new(
        Principal::human(name),
        Timestamp::parse("2026-11-29T10:00:00Z").expect("valid timestamp"),
    )
}

/// A tokio runtime of two workers, as the database bridge of a test or helper program wants.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Open the workspace at `root`, panicking with the reason (helper programs only).
pub fn open(root: &Path) -> Workspace {
    Workspace::open(root).unwrap_or_else(|e| panic!("open workspace {}: {e}", root.display()))
}

/// Run `yoi init` (the binary at `yoi`) in the git repository `root`; returns the admin token it
/// wrote to `.yoi/local/admin.token`.
pub fn yoi_init(yoi: &Path, root: &Path) -> String {
    let init = std::process::Command::new(yoi)
        .arg("init")
        .current_dir(root)
        .output()
        .expect("yoi init runs");
    assert!(
        init.status.success(),
        "yoi init: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    std::fs::read_to_string(root.join(".yoi/local/admin.token"))
        .expect("yoi init wrote the admin token")
        .trim()
        .to_string()
}

/// A fresh git repository holding `tickets` generated tickets (and about twice as many
/// `depends_on` relations, [`generate::generate`]) indexed by `yoi init` (the binary at
/// `yoi`): the folder and the admin token. Prints what was made and how long indexing took.
pub fn generated_workspace(yoi: &Path, tickets: usize) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = dir.path();
    yoi_testkit::git(root, &["init", "-q", "-b", "main"]);
    yoi_store::init(root, "main").expect("yoi's files initialise");
    let made = generate::generate(root, tickets, tickets * 2);
    println!(
        "seed {:#x}: {tickets} tickets, {made} depends_on relations",
        generate::SEED
    );
    let t = std::time::Instant::now();
    let token = yoi_init(yoi, root);
    println!("indexed by `yoi init` in {:.1}s", t.elapsed().as_secs_f64());
    (dir, token)
}

/// A running `yoi serve`: stopped as `yoi` asks to be (SIGTERM, then SIGKILL after 10 s) by
/// [`Served::stop`] or when dropped, so a benchmark that panics leaves no server behind.
pub struct Served(pub std::process::Child);

impl Served {
    /// Stop the server and wait for it.
    pub fn stop(mut self) {
        self.end();
    }

    fn end(&mut self) {
        if !matches!(self.0.try_wait(), Ok(None)) {
            return;
        }
        // SAFETY: signals a child this process started and has not reaped.
        unsafe {
            libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM);
        }
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while matches!(self.0.try_wait(), Ok(None)) {
            if std::time::Instant::now() > until {
                let _ = self.0.kill();
                let _ = self.0.wait();
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl std::ops::Deref for Served {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Served {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.end();
    }
}

/// Start `yoi serve --listen 127.0.0.1:0` in `root` (log level warn, log on this process's
/// stderr); returns the server and the address from its `listening on http://ADDR` line. The
/// child's stdout is read up to that line and then left alone.
pub fn yoi_serve(yoi: &Path, root: &Path) -> (Served, String) {
    let (server, addr, _) = yoi_serve_with_login(yoi, root);
    (server, addr)
}

/// [`yoi_serve`], with the dashboard's one-time login link it prints next (the stdout is read
/// up to that line).
pub fn yoi_serve_with_login(yoi: &Path, root: &Path) -> (Served, String, String) {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut server = Command::new(yoi)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .current_dir(root)
        .env("YOI_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("yoi serve starts");
    // Both lines come in one write, so reading them leaves nothing behind in the buffer.
    let mut lines = std::io::BufReader::new(server.stdout.take().expect("piped stdout")).lines();
    let line = lines.next().and_then(Result::ok).unwrap_or_default();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("yoi serve printed {line:?}"))
        .to_string();
    let login = lines
        .next()
        .and_then(Result::ok)
        .and_then(|l| {
            l.strip_prefix("dashboard: ")
                .and_then(|r| r.split_whitespace().next())
                .map(str::to_string)
        })
        .unwrap_or_default();
    (Served(server), addr, login)
}

/// Turn the router of the workspace at `root` off (`[router] enabled = false`), so a server
/// started on it leaves the tickets as they are.
pub fn disable_routing(root: &Path) {
    let config = root.join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).expect("read workspace.toml");
    std::fs::write(
        &config,
        text.replace("\nenabled = true\n", "\nenabled = false\n"),
    )
    .expect("write workspace.toml");
}

/// [`disable_routing`], and no supervised pods (`coder`, `verifier`, `reviewer` = 0): a server
/// on `root` whose numbers are its own.
pub fn no_routing_no_pods(root: &Path) {
    let config = root.join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).expect("read workspace.toml");
    let text = text
        .replace("enabled = true", "enabled = false")
        .replace("coder = 1", "coder = 0")
        .replace("verifier = 1", "verifier = 0")
        .replace("reviewer = 1", "reviewer = 0");
    std::fs::write(&config, text).expect("write workspace.toml");
}

/// Wait until the router of the server at `addr` has caught up with the backlog and rests
/// (`GET /api/v1/router`), or is off, for at most `limit`; how long that took.
pub fn wait_for_router_rest(
    addr: &str,
    token: &str,
    limit: std::time::Duration,
) -> std::time::Duration {
    let started = std::time::Instant::now();
    let auth = format!("Bearer {token}");
    loop {
        let r: serde_json::Value = ureq::get(&format!("http://{addr}/api/v1/router"))
            .header("Authorization", &auth)
            .call()
            .ok()
            .and_then(|mut r| r.body_mut().read_json().ok())
            .unwrap_or_default();
        let resting = r["caught_up"] == true && r["busy"] == false && r["settled"] == true;
        if resting || r["enabled"] == false || started.elapsed() > limit {
            return started.elapsed();
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// `YOI_BENCH_ROUTING=0` in the environment: [`disable_routing`].
pub fn disable_routing_if_asked(root: &Path) {
    if std::env::var("YOI_BENCH_ROUTING").as_deref() == Ok("0") {
        disable_routing(root);
    }
}

/// `(median, min, max)` of benchmark samples.
pub fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// Run `cmd` in `dir` under GNU time with its output discarded: its wall time in seconds and
/// its peak RSS in KiB. Panics unless it exits with `want_code`.
pub fn timed_peak(dir: &Path, cmd: &[&str], want_code: i32) -> (f64, u64) {
    let t = std::time::Instant::now();
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .args(cmd)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .output()
        .expect("runs");
    let secs = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(want_code), "{cmd:?}: {stderr}");
    let kib = stderr
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0);
    (secs, kib)
}
