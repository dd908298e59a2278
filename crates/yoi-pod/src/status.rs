//! The pod's own status, in a file a probe can read (`yoi pod run --status-file PATH`, checked
//! by `yoi pod status --file PATH --max-age 60s`; docs/deploy.md): whether the pod is
//! registered, idle or working, and when the server last answered it.
//!
//! The file is one JSON object ([`PodStatus`]), replaced whole (written beside it, then renamed)
//! at every change of state and every few seconds by a thread of its own, so its age says
//! whether the pod process still runs, and `server_answered_ms` whether the server still
//! answers it: a claim's answer (work or none, at most a long-poll apart), a heartbeat's while
//! an agent runs, a report's, and the git fetches and pushes of a pod without the server's disk.
//! A 5xx is the server failing, not answering. The token is never in it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What the pod is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PodState {
    /// Started, not registered yet.
    Starting,
    /// Registered, waiting for work.
    Idle,
    /// Holding a claim.
    Working,
    /// The pod's run ended (`error` says why when it was not asked to).
    Stopped,
}

impl PodState {
    pub fn as_str(self) -> &'static str {
        match self {
            PodState::Starting => "starting",
            PodState::Idle => "idle",
            PodState::Working => "working",
            PodState::Stopped => "stopped",
        }
    }
}

/// The status file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodStatus {
    /// The pod as the server registered it (`NAME@nonce`), once registered.
    pub pod: Option<String>,
    pub name: String,
    /// The role the server registered it in (its token's), once registered.
    pub role: Option<String>,
    /// The pod process (a probe in the same PID namespace checks that it is alive).
    pub pid: u32,
    pub server: String,
    pub state: PodState,
    /// The claim held, while working.
    pub assignment: Option<String>,
    pub ticket: Option<String>,
    /// When the server last answered the pod (unix ms): registration, a claim (with work or
    /// none), a heartbeat, a report, a git fetch or push.
    pub server_answered_ms: Option<i64>,
    /// How long the server keeps a claim without a heartbeat (from the registration).
    pub lease_ms: Option<i64>,
    /// The last call the server did not answer, or answered with a failure, since it last
    /// answered.
    pub error: Option<String>,
    /// When this was written (unix ms).
    pub written_ms: i64,
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    yoi_core::time::unix_ms(std::time::SystemTime::now())
}

/// When the server last answered (unix ms, 0: never), shared by everything that calls it.
#[derive(Debug, Clone, Default)]
pub struct Answered(Arc<AtomicI64>);

impl Answered {
    /// The server answered now.
    pub fn now(&self) {
        self.0.fetch_max(now_ms(), Ordering::SeqCst);
    }

    pub fn get(&self) -> Option<i64> {
        Some(self.0.load(Ordering::SeqCst)).filter(|&ms| ms > 0)
    }
}

/// The status file of a running pod, rewritten at every change and every `every`.
#[derive(Debug)]
pub struct StatusFile {
    path: PathBuf,
    doc: Mutex<(PodStatus, bool)>,
    answered: Answered,
}

impl StatusFile {
    /// A status of `starting`, written at once, and the thread that rewrites it every `every`
    /// until [`StatusFile::finish`].
    pub fn start(
        path: &Path,
        first: PodStatus,
        answered: Answered,
        every: Duration,
    ) -> Result<Arc<StatusFile>, String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("the status file's folder {}: {e}", dir.display()))?;
        }
        let file = Arc::new(StatusFile {
            path: path.to_path_buf(),
            doc: Mutex::new((first, false)),
            answered,
        });
        file.write()?;
        let ticking = Arc::downgrade(&file);
        std::thread::Builder::new()
            .name("pod-status".into())
            .spawn(move || loop {
                std::thread::sleep(every);
                let Some(file) = ticking.upgrade() else {
                    return;
                };
                if file.finished() {
                    return;
                }
                if let Err(e) = file.write() {
                    tracing::warn!(error = %e, "could not write the pod's status file");
                }
            })
            .map_err(|e| format!("starting the status thread: {e}"))?;
        Ok(file)
    }

    fn finished(&self) -> bool {
        self.doc.lock().map(|d| d.1).unwrap_or(true)
    }

    /// Change the status with `change` and write it.
    pub fn update(&self, change: impl FnOnce(&mut PodStatus)) {
        if let Ok(mut d) = self.doc.lock() {
            if d.1 {
                return;
            }
            change(&mut d.0);
        }
        if let Err(e) = self.write() {
            tracing::warn!(error = %e, "could not write the pod's status file");
        }
    }

    /// The last status: `stopped`, with `error` when the run ended on one; nothing is written
    /// after it.
    pub fn finish(&self, error: Option<String>) {
        self.update(|s| {
            s.state = PodState::Stopped;
            s.assignment = None;
            s.ticket = None;
            if error.is_some() {
                s.error = error;
            }
        });
        if let Ok(mut d) = self.doc.lock() {
            d.1 = true;
        }
    }

    /// Write the status as it is now: beside the file, then renamed over it, so a reader sees
    /// the old one or the new one whole.
    fn write(&self) -> Result<(), String> {
        let text = {
            let mut d = self.doc.lock().map_err(|_| "the status is poisoned")?;
            d.0.server_answered_ms = self.answered.get();
            d.0.written_ms = now_ms();
            serde_json::to_string_pretty(&d.0).map_err(|e| e.to_string())?
        };
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "status".into());
        let tmp = self.path.with_file_name(format!(".{name}.tmp"));
        std::fs::write(&tmp, format!("{text}\n"))
            .and_then(|()| std::fs::rename(&tmp, &self.path))
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// Why a pod's status says it is not ready, if it does not; `now` and `max_age` in ms.
/// `alive` says whether a process of that pid runs (a probe in the pod's PID namespace).
pub fn not_ready(s: &PodStatus, now: i64, max_age: i64, alive: bool) -> Option<String> {
    let age = |ms: i64| format!("{:.0} s", (now - ms).max(0) as f64 / 1000.0);
    if !alive {
        return Some(format!(
            "the pod (pid {}) is not running; its last status says {}",
            s.pid,
            s.state.as_str()
        ));
    }
    if now - s.written_ms > max_age {
        return Some(format!(
            "the pod's status is {} old (allowed {} s): the pod (pid {}) is not writing it, stopped or stuck",
            age(s.written_ms),
            max_age / 1000,
            s.pid
        ));
    }
    let said = s
        .error
        .as_deref()
        .map(|e| format!(" (last error: {e})"))
        .unwrap_or_default();
    match s.state {
        PodState::Stopped => {
            return Some(format!("the pod stopped{said}"));
        }
        PodState::Starting => {
            return Some(format!(
                "the pod has not registered with {} yet{said}",
                s.server
            ))
        }
        PodState::Idle | PodState::Working => {}
    }
    // Judged when the pod wrote it, not now: what happened after that write the file cannot
    // say, and a pod that stopped writing was refused above for that. Judged now, a frozen pod's
    // last answer would go stale a moment before its file and be blamed on the server.
    let silent = |ms: i64| s.written_ms - ms;
    match s.server_answered_ms {
        Some(ms) if silent(ms) <= max_age => None,
        Some(ms) => Some(format!(
            "the server {} had not answered the pod for {:.0} s when it last wrote its status (allowed {} s){said}",
            s.server,
            silent(ms).max(0) as f64 / 1000.0,
            max_age / 1000
        )),
        None => Some(format!(
            "the server {} never answered the pod{said}",
            s.server
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: PodState, written: i64, answered: Option<i64>) -> PodStatus {
        PodStatus {
            pod: Some("p@1".into()),
            name: "p".into(),
            role: Some("coder".into()),
            pid: 1,
            server: "https://h:7311".into(),
            state,
            assignment: None,
            ticket: None,
            server_answered_ms: answered,
            lease_ms: Some(60_000),
            error: None,
            written_ms: written,
        }
    }

    #[test]
    fn a_fresh_status_with_a_server_that_answers_is_ready_and_every_other_one_says_why_not() {
        let now = 1_000_000;
        let ok = status(PodState::Idle, now - 1_000, Some(now - 2_000));
        assert_eq!(not_ready(&ok, now, 60_000, true), None);
        let working = status(PodState::Working, now, Some(now - 59_000));
        assert_eq!(not_ready(&working, now, 60_000, true), None);
        let why = |s: &PodStatus, alive| not_ready(s, now, 60_000, alive).unwrap();
        assert!(why(&ok, false).contains("not running"));
        let stale = status(PodState::Idle, now - 61_000, Some(now - 61_000));
        assert!(
            why(&stale, true).contains("61 s old"),
            "{}",
            why(&stale, true)
        );
        let lost = status(PodState::Working, now, Some(now - 90_000));
        assert!(why(&lost, true).contains("had not answered the pod for 90 s"));
        // The answer is judged as of the file's writing: written 59 s ago, half a second after
        // an answer, is ready (the answer is 59.5 s old now, but was 0.5 s old at the writing).
        let written_after_answer = status(PodState::Idle, now - 59_000, Some(now - 59_500));
        assert_eq!(not_ready(&written_after_answer, now, 60_000, true), None);
        let answer_stale_when_written = status(PodState::Idle, now - 1_000, Some(now - 62_000));
        assert!(why(&answer_stale_when_written, true).contains("61 s when it last wrote"));
        let never = status(PodState::Idle, now, None);
        assert!(why(&never, true).contains("never answered"));
        let starting = status(PodState::Starting, now, None);
        assert!(why(&starting, true).contains("not registered"));
        let mut stopped = status(PodState::Stopped, now, Some(now));
        stopped.error = Some("the server answered 401: token expired".into());
        assert!(why(&stopped, true).contains("stopped (last error: the server answered 401"));
    }

    #[test]
    fn the_file_is_replaced_whole_and_says_stopped_last() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/status.json");
        let answered = Answered::default();
        let file = StatusFile::start(
            &path,
            status(PodState::Starting, 0, None),
            answered.clone(),
            Duration::from_millis(10),
        )
        .unwrap();
        let read = || -> PodStatus {
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
        };
        assert_eq!(read().state, PodState::Starting);
        assert_eq!(read().server_answered_ms, None);
        answered.now();
        file.update(|s| s.state = PodState::Idle);
        let idle = read();
        assert_eq!(idle.state, PodState::Idle);
        assert!(idle.server_answered_ms.is_some());
        file.finish(Some("refused".into()));
        std::thread::sleep(Duration::from_millis(50));
        let last = read();
        assert_eq!(last.state, PodState::Stopped);
        assert_eq!(last.error.as_deref(), Some("refused"));
        // Nothing but the file itself is left in its folder.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("status.json")]);
    }
}
