//! One chromedriver process per [`Driver`], and the browser sessions it hands out.
//!
//! chromedriver runs in its own process group with `HOME`, `TMPDIR` and the XDG directories
//! pointing into the driver's temporary directory, so neither it nor Chromium writes into the
//! real home directory or leaves profile directories in `/tmp`. Every process it starts
//! inherits a marker variable naming that directory; [`DriverTrace`] finds processes by group or
//! by marker, and dropping the driver kills and waits for both before the directory is removed.

use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{json, Value};

use super::procs::{self, Proc};
use super::INSTALL_HINT;

/// Flags for every Chromium session; `--no-sandbox` because the tests run as root. Chromium's
/// crash handler (`chrome_crashpad_handler`) still starts and daemonises itself into its own
/// session, out of the driver's process group: the environment marker is what finds it. (Turning
/// it off with `--disable-crashpad-for-testing` leaves every navigation hanging in Chromium 148.)
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
];

/// The environment variable every process started by a driver inherits.
pub(crate) const MARKER_KEY: &str = "YOI_BROWSER_DRIVER";

/// How long chromedriver may take to report it is listening and ready.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// How long dropping a driver waits for its processes to disappear after SIGKILL.
const REAP_TIMEOUT: Duration = Duration::from_secs(10);

/// A page load longer than this fails the navigation instead of hanging the test for WebDriver's
/// default five minutes.
const PAGE_LOAD_TIMEOUT: Duration = Duration::from_secs(30);

/// A running chromedriver on a loopback port. Dropping it kills chromedriver and every browser
/// it started, and waits until they are gone.
pub struct Driver {
    child: Child,
    port: u16,
    url: String,
    chromium: PathBuf,
    trace: DriverTrace,
    // Declared last so it is removed only after `drop` has reaped every process writing into it.
    home: tempfile::TempDir,
}

/// Enough to find a driver's processes after the driver itself is gone.
#[derive(Debug, Clone)]
pub struct DriverTrace {
    pgid: i32,
    marker: String,
}

impl DriverTrace {
    /// The trace another process printed (`pgid` and `marker`), to find its driver's processes.
    pub fn parse(text: &str) -> Option<DriverTrace> {
        let (pgid, marker) = text.trim().split_once(' ')?;
        Some(DriverTrace {
            pgid: pgid.parse().ok()?,
            marker: marker.to_string(),
        })
    }

    /// The form [`DriverTrace::parse`] reads.
    pub fn to_line(&self) -> String {
        format!("{} {}", self.pgid, self.marker)
    }

    /// chromedriver's process group, which Chromium and its helpers join.
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Every live process in the driver's group or carrying its environment marker.
    pub fn alive(&self) -> Vec<Proc> {
        procs::find(self.pgid, &self.marker)
    }

    /// SIGKILL whatever is still alive until nothing is, or `timeout` passes; returns the rest.
    fn reap(&self, timeout: Duration) -> Vec<Proc> {
        let until = Instant::now() + timeout;
        loop {
            let alive = self.alive();
            if alive.is_empty() || Instant::now() >= until {
                return alive;
            }
            for p in &alive {
                // SAFETY: kill only sends a signal; a process already gone answers ESRCH.
                unsafe {
                    libc::kill(p.pid, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Driver {
    /// Start chromedriver on a free loopback port and wait until its `/status` reports ready.
    /// Panics, naming the install command, when `chromedriver` or `chromium` is not on `PATH`.
    /// Call it on the thread that keeps the driver: chromedriver dies with that thread.
    pub fn start() -> Driver {
        let chromedriver = find_binary("chromedriver");
        let chromium = find_binary("chromium");
        sweep_orphans();
        let home = tempfile::Builder::new()
            .prefix("yoi-browser-")
            .tempdir()
            .expect("create the browser harness's temporary directory");
        let dirs = ["tmp", "config", "cache"].map(|name| home.path().join(name));
        for dir in &dirs {
            fs::create_dir(dir).expect("create the browser harness's directories");
        }
        let [tmp, config, cache] = dirs;
        let marker_value = home.path().display().to_string();
        let stderr_path = home.path().join("chromedriver.stderr");
        let port = free_port();

        let mut command = Command::new(&chromedriver);
        command
            .arg(format!("--port={port}"))
            .env("HOME", home.path())
            .env("TMPDIR", &tmp)
            .env("XDG_CONFIG_HOME", &config)
            .env("XDG_CACHE_HOME", &cache)
            .env(MARKER_KEY, &marker_value)
            .env(procs::OWNER_KEY, procs::own_token())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr_path).expect("create chromedriver's stderr file"))
            .process_group(0);
        // chromedriver dies with the thread that started it, even when this process is killed
        // outright and `Drop` never runs; the browsers it leaves are swept by the next start.
        // So a driver is started on the thread that keeps it (a test's own thread), never on a
        // pool thread that may end first, such as tokio's `spawn_blocking`.
        // SAFETY: prctl only sets a flag on the child; it allocates nothing between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start {}: {e}; install it with `{INSTALL_HINT}`",
                chromedriver.display()
            )
        });
        let stdout = child.stdout.take().expect("chromedriver's stdout is piped");
        let pgid = i32::try_from(child.id()).expect("a pid fits in i32");
        // Built before waiting, so a failed start still kills what it started.
        let driver = Driver {
            child,
            port,
            url: format!("http://127.0.0.1:{port}"),
            chromium,
            trace: DriverTrace {
                pgid,
                marker: format!("{MARKER_KEY}={marker_value}"),
            },
            home,
        };
        driver.await_ready(stdout, &stderr_path);
        driver
    }

    /// The WebDriver endpoint, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The loopback port chromedriver listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What finds this driver's processes, also after the driver is dropped.
    pub fn trace(&self) -> DriverTrace {
        self.trace.clone()
    }

    /// A new headless browser session; with `js == false` JavaScript is disabled for every page.
    pub async fn session(&self, js: bool) -> Client {
        let mut options = json!({
            "binary": self.chromium,
            "args": CHROMIUM_FLAGS,
        });
        if !js {
            options["prefs"] = json!({ "profile.managed_default_content_settings.javascript": 2 });
        }
        let Value::Object(capabilities) = json!({
            "browserName": "chrome",
            "goog:chromeOptions": options,
            "timeouts": { "pageLoad": PAGE_LOAD_TIMEOUT.as_millis() },
        }) else {
            unreachable!("a JSON object literal");
        };
        ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "chromedriver at {} refused a session (js: {js}): {e}\n{}",
                    self.url,
                    self.stderr_tail()
                )
            })
    }

    /// Wait for chromedriver's "started successfully" line, then for `/status` to say ready.
    fn await_ready(&self, stdout: ChildStdout, stderr_path: &Path) {
        let until = Instant::now() + STARTUP_TIMEOUT;
        let (lines_tx, lines) = mpsc::channel();
        // The reader keeps draining after startup so chromedriver never blocks on a full pipe;
        // it ends when the last process holding the pipe (Chromium inherits it) is gone.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = lines_tx.send(line);
            }
        });
        let mut seen = Vec::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) if line.contains("started successfully") => break,
                Ok(line) => seen.push(line),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "chromedriver on port {} exited before it was ready\nstdout: {}\n{}",
                    self.port,
                    seen.join("\n"),
                    read_tail(stderr_path)
                ),
                Err(RecvTimeoutError::Timeout) => panic!(
                    "chromedriver on port {} did not start within {STARTUP_TIMEOUT:?}\nstdout: {}",
                    self.port,
                    seen.join("\n")
                ),
            }
        }
        let status_url = format!("{}/status", self.url);
        loop {
            let status = ureq::get(&status_url)
                .call()
                .map_err(|e| e.to_string())
                .and_then(|mut r| r.body_mut().read_json::<Value>().map_err(|e| e.to_string()));
            match status {
                Ok(body) if body["value"]["ready"] == json!(true) => return,
                _ if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
                other => panic!("chromedriver at {status_url} never reported ready: {other:?}"),
            }
        }
    }

    fn stderr_tail(&self) -> String {
        read_tail(&self.home.path().join("chromedriver.stderr"))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // SAFETY: kill only sends a signal; the negative pid addresses chromedriver's own group.
        unsafe {
            libc::kill(-self.trace.pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
        let left = self.trace.reap(REAP_TIMEOUT);
        if left.is_empty() {
            return;
        }
        let message = format!("browser processes survived SIGKILL for {REAP_TIMEOUT:?}: {left:?}");
        // A second panic while unwinding would abort the test binary and hide the first one.
        if std::thread::panicking() {
            eprintln!("{message}");
        } else {
            panic!("{message}");
        }
    }
}

/// SIGKILL every browser process whose owning test process is gone (a test binary killed with
/// SIGKILL never runs `Drop`), and remove the temporary directories they used.
fn sweep_orphans() {
    let orphans = procs::orphans();
    for (p, _) in &orphans {
        // SAFETY: kill only sends a signal; a process already gone answers ESRCH.
        unsafe {
            libc::kill(p.pid, libc::SIGKILL);
        }
    }
    if !orphans.is_empty() {
        eprintln!(
            "killed {} browser processes left by a test process that is gone: {:?}",
            orphans.len(),
            orphans
                .iter()
                .map(|(p, _)| (p.pid, &p.comm))
                .collect::<Vec<_>>()
        );
    }
    let tmp = std::env::temp_dir();
    for dir in orphans.iter().filter_map(|(_, home)| home.as_deref()) {
        let dir = Path::new(dir);
        let ours = dir.parent() == Some(tmp.as_path())
            && dir
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("yoi-browser-"));
        if ours {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

/// `name` on `PATH`, or a panic that says how to install it.
fn find_binary(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!("`{name}` is not on PATH; the browser tests need it: `{INSTALL_HINT}`")
        })
}

/// A loopback port nothing listens on right now. chromedriver binds it moments later; losing
/// that race to another process shows up as chromedriver exiting before it is ready.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("bind a loopback port")
        .port()
}

fn read_tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let start = text.len().saturating_sub(4000);
    let start = (start..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{} (last 4000 bytes):\n{}", path.display(), &text[start..])
}
