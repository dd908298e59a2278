//! A real session D-Bus for the desktop notification tests, and a real notification server on
//! it. [`SessionBus`] is `dbus-daemon` (Debian's `dbus`) on a socket in a temporary folder, with
//! a configuration of its own: a session bus that activates no service, so whatever the machine
//! has installed never answers in the test's place. [`Notifications`] owns
//! `org.freedesktop.Notifications` on it — a Python script on jeepney (PyPI), an implementation
//! of the protocol independent of yoi's — and records every `Notify` it answers.
//!
//! Both run in their own process group with `PR_SET_PDEATHSIG`, and are killed with it when
//! dropped (a panicking test included), so no daemon outlives its test.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A private session bus. Killed when dropped.
pub struct SessionBus {
    child: Child,
    /// The bus's address, as `DBUS_SESSION_BUS_ADDRESS` holds it.
    pub address: String,
    _dir: tempfile::TempDir,
}

impl SessionBus {
    pub fn start() -> SessionBus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("session.conf");
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
                dir.path().join("bus").display()
            ),
        )
        .unwrap();
        let mut cmd = Command::new("dbus-daemon");
        cmd.arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--nopidfile", "--print-address"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        let mut child = spawn_owned(&mut cmd).unwrap_or_else(|e| {
            panic!("cannot run dbus-daemon ({e}): install it with `apt-get install -y dbus` (.ci/run does)")
        });
        let address = first_line(&mut child, "dbus-daemon --print-address");
        assert!(address.starts_with("unix:path="), "{address}");
        SessionBus {
            child,
            address,
            _dir: dir,
        }
    }
}

impl Drop for SessionBus {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// A notification server owning `org.freedesktop.Notifications` on a bus. Killed when dropped.
pub struct Notifications {
    child: Child,
    record: PathBuf,
    _dir: tempfile::TempDir,
}

impl Notifications {
    /// Own the name on `bus`, answering `GetCapabilities` with `capabilities`; returns once the
    /// name is owned. The Python is `YOI_DBUS_PY` (a Python with jeepney), else `python3`.
    pub fn start(bus: &SessionBus, capabilities: &[&str]) -> Notifications {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("notifications.py");
        std::fs::write(&script, include_str!("dbus_notifications.py")).unwrap();
        let record = dir.path().join("notify.jsonl");
        let python = std::env::var("YOI_DBUS_PY").unwrap_or_else(|_| "python3".into());
        let mut cmd = Command::new(&python);
        cmd.arg(&script)
            .arg(&bus.address)
            .arg(&record)
            .arg(capabilities.join(","))
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        let mut child = spawn_owned(&mut cmd)
            .unwrap_or_else(|e| panic!("cannot run `{python}` ({e}); {}", install_hint()));
        let line = first_line(&mut child, "the notification server");
        assert_eq!(
            line,
            "ready",
            "the notification server did not start; {}",
            install_hint()
        );
        Notifications {
            child,
            record,
            _dir: dir,
        }
    }

    /// Every `Notify` answered so far, in order (the JSON the script wrote).
    pub fn got(&self) -> Vec<serde_json::Value> {
        read_lines(&self.record)
    }

    /// Wait until `n` notifications arrived (at most `within`), then return them all.
    pub fn wait_for(&self, n: usize, within: Duration) -> Vec<serde_json::Value> {
        let deadline = Instant::now() + within;
        loop {
            let got = self.got();
            if got.len() >= n || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Notifications {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

fn install_hint() -> &'static str {
    "it needs jeepney from PyPI: `python3 -m venv V && V/bin/pip install jeepney==0.9.0` and set YOI_DBUS_PY=V/bin/python (.ci/run does)"
}

fn read_lines(path: &Path) -> Vec<serde_json::Value> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| l.ends_with('}'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Spawn in a process group of its own, killed by the kernel if the spawning thread dies
/// without dropping it (a SIGKILLed test).
fn spawn_owned(cmd: &mut Command) -> std::io::Result<Child> {
    cmd.process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// The first line `child` prints, read in a thread so a child that hangs fails the test after
/// 30 seconds instead of holding it.
fn first_line(child: &mut Child, what: &str) -> String {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(line) => line.trim().to_string(),
        Err(_) => {
            kill_group(child);
            panic!("{what} printed nothing within 30 s");
        }
    }
}

fn kill_group(child: &mut Child) {
    // SAFETY: a plain kill(2) of the child's own process group.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
}
