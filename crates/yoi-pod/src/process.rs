//! Running one child, an agent or one of the verifier's commands: its argv as given (this module
//! never builds or splits a shell string; the verifier's commands, shell text by design, arrive
//! as `sh -c COMMAND`) in its own process group, with only the environment it is handed, stdin
//! from a file or `/dev/null`, stdout and stderr into files (the child never blocks on a full
//! pipe). A timeout, or a stop request that outlasts the grace period, takes the kill ladder —
//! SIGTERM to the whole group, a grace period, SIGKILL; a lost lease takes SIGKILL to the group
//! at once. However the run ended, what is left of the group is then killed and waited for (a
//! few seconds at most), so a grandchild the agent left running (a dev server, an MCP helper)
//! does not outlive its run; and should the pod itself die, the kernel kills the process it
//! started.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// The file given as stdin; `None` is `/dev/null`.
    pub stdin: Option<PathBuf>,
    /// The whole environment of the child (nothing else is inherited).
    pub env: Vec<(String, String)>,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    pub timeout: Duration,
    pub grace: Duration,
    /// Run `argv` through the sandbox launcher: its program and leading arguments, then the
    /// policy (JSON); `None` runs `argv` itself (the launcher's own tests, `mode = "off"`).
    pub sandbox: Option<(Vec<String>, String)>,
    /// End the run when it makes no progress for this long: nothing new on stdout or stderr
    /// and no change in the working directory (`[pods] stall_secs`); `None` never.
    pub stall: Option<Duration>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Exited by itself with this code (a signal death is 128 + the signal).
    Exited(i32),
    /// The timeout fired; the group was killed.
    TimedOut,
    /// The lease was lost; the group was killed at once.
    LeaseLost,
    /// The pod is stopping and the agent did not finish within its grace; the group was killed.
    Stopped,
    /// No progress (output or a change in the working directory) for the stall limit; the
    /// group was killed.
    Stalled,
    /// The owner asked to end it now (its watch's [`Watch::end_now`], such as a budget passed
    /// while it ran); the group got the kill ladder.
    Halted,
}

/// What the runner asks its owner while the agent runs, about every 100 ms.
pub trait Watch {
    /// `false` when the lease is lost: kill at once.
    fn keep(&mut self) -> bool;
    /// The pod is stopping: let the agent finish within its grace, then kill.
    fn stopping(&self) -> bool;
    /// End the run now (SIGTERM, then SIGKILL after the grace): the owner's reason, such as a
    /// budget passed while it ran.
    fn end_now(&self) -> bool {
        false
    }
}

/// Start `spec`, watch it, and return how it ended once its whole process group is gone.
pub fn run(spec: &Spec, watch: &mut dyn Watch) -> std::io::Result<Ended> {
    use std::os::unix::process::CommandExt;
    if spec.argv.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "empty argv",
        ));
    }
    let argv: Vec<String> = match &spec.sandbox {
        Some((launcher, policy)) => launcher
            .iter()
            .cloned()
            .chain([policy.clone(), "--".to_string()])
            .chain(spec.argv.iter().cloned())
            .collect(),
        None => spec.argv.clone(),
    };
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty argv"))?;
    let stdin = match &spec.stdin {
        Some(p) => Stdio::from(File::open(p)?),
        None => Stdio::null(),
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(stdin)
        .stdout(File::create(&spec.stdout)?)
        .stderr(File::create(&spec.stderr)?)
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; it asks the kernel to SIGKILL the agent when the pod
    // (the thread that started it) dies, so even a SIGKILLed pod leaves no agent running.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    let pgid = child.id() as i32;
    let started = Instant::now();
    let mut stop_seen: Option<Instant> = None;
    let mut progress = Progress::new(spec);
    let ended = loop {
        if let Some(status) = child.try_wait()? {
            use std::os::unix::process::ExitStatusExt;
            let code = status
                .code()
                .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
            break Ended::Exited(code);
        }
        if !watch.keep() {
            signal_group(pgid, libc::SIGKILL);
            break Ended::LeaseLost;
        }
        if watch.end_now() {
            kill_ladder(pgid, &mut child, spec.grace);
            break Ended::Halted;
        }
        if started.elapsed() >= spec.timeout {
            kill_ladder(pgid, &mut child, spec.grace);
            break Ended::TimedOut;
        }
        if let Some(limit) = spec.stall {
            if progress.idle_for() >= limit {
                kill_ladder(pgid, &mut child, spec.grace);
                break Ended::Stalled;
            }
        }
        if watch.stopping() {
            let since = *stop_seen.get_or_insert_with(Instant::now);
            if since.elapsed() >= spec.grace {
                kill_ladder(pgid, &mut child, spec.grace);
                break Ended::Stopped;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Whatever ended the leader, nothing of its group may stay behind.
    let _ = child.try_wait();
    reap_group(pgid, spec.grace);
    let _ = child.wait();
    Ok(ended)
}

/// What counts as progress: stdout or stderr grew, or the working directory changed (the
/// folder itself or an entry at its top: a file written there, a folder beneath it gaining or
/// losing an entry). Looked at about once a second.
struct Progress {
    files: [std::path::PathBuf; 2],
    cwd: std::path::PathBuf,
    seen: (u64, Option<std::time::SystemTime>),
    last_change: Instant,
    last_look: Instant,
}

impl Progress {
    fn new(spec: &Spec) -> Self {
        let mut p = Progress {
            files: [spec.stdout.clone(), spec.stderr.clone()],
            cwd: spec.cwd.clone(),
            seen: (0, None),
            last_change: Instant::now(),
            last_look: Instant::now(),
        };
        p.seen = p.look();
        p
    }

    /// Output bytes so far and the newest change time in the working directory's top.
    fn look(&self) -> (u64, Option<std::time::SystemTime>) {
        let bytes = self
            .files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        let mtime = |p: &std::path::Path| std::fs::symlink_metadata(p).and_then(|m| m.modified());
        let mut newest = mtime(&self.cwd).ok();
        if let Ok(entries) = std::fs::read_dir(&self.cwd) {
            for e in entries.flatten().take(10_000) {
                if let Ok(t) = mtime(&e.path()) {
                    newest = newest.max(Some(t));
                }
            }
        }
        (bytes, newest)
    }

    /// How long since the last progress was seen.
    fn idle_for(&mut self) -> Duration {
        if self.last_look.elapsed() >= Duration::from_secs(1) {
            self.last_look = Instant::now();
            let now = self.look();
            if now != self.seen {
                self.seen = now;
                self.last_change = Instant::now();
            }
        }
        self.last_change.elapsed()
    }
}

fn signal_group(pgid: i32, sig: i32) {
    // SAFETY: killpg only sends a signal; a stale group answers ESRCH, which is ignored.
    unsafe {
        libc::killpg(pgid, sig);
    }
}

fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 checks for existence without delivering anything.
    unsafe { libc::killpg(pgid, 0) == 0 }
}

/// SIGTERM to the group, up to `grace` for the leader to exit, then SIGKILL to the group.
fn kill_ladder(pgid: i32, child: &mut std::process::Child, grace: Duration) {
    signal_group(pgid, libc::SIGTERM);
    let until = Instant::now() + grace;
    while Instant::now() < until {
        if matches!(child.try_wait(), Ok(Some(_))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    signal_group(pgid, libc::SIGKILL);
}

/// Kill what is left of the group and wait until it is gone (at most `grace` plus a second;
/// members that are zombies of other parents count as gone once killed).
fn reap_group(pgid: i32, grace: Duration) {
    if !group_alive(pgid) {
        return;
    }
    signal_group(pgid, libc::SIGTERM);
    let until = Instant::now() + grace.min(Duration::from_secs(2));
    while group_alive(pgid) && Instant::now() < until {
        if only_zombies(pgid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    signal_group(pgid, libc::SIGKILL);
    let until = Instant::now() + Duration::from_secs(1);
    while group_alive(pgid) && !only_zombies(pgid) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether every process of group `pgid` is a zombie (dead, waiting for its parent).
fn only_zombies(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces) start after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // state is field 3, pgrp field 5 (1-based in proc(5)); here index 0 and 2.
        if fields.get(2).and_then(|p| p.parse::<i32>().ok()) == Some(pgid)
            && fields.first() != Some(&"Z")
        {
            return false;
        }
    }
    true
}
