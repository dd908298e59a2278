//! What happens to yoi from outside: git events on the checked-out target and crashes at
//! yoi's named write points.
//!
//! - **Git events** are another writer's: a commit on the target (a line of the shared file,
//!   which conflicts with coders, or a file apart), an uncommitted edit of the shared file and
//!   its cleanup, and a commit between a merge's check and its compare-and-swap (armed here,
//!   fired by the hook at `merge.before_land`). They touch `shared.txt` and `apart/`, the files
//!   someone outside yoi edits; the tickets' files are yoi's alone to write.
//! - **Crashes** are a panic with [`SimCrash`] from the testpoint hook at the N-th point hit
//!   after `crash N`, so nothing after the point runs, as when the process dies. `World::step`
//!   catches it and restarts the world; the quiet panic hook keeps it out of the output.
//!
//! The hook fires each armed fault once and disarms it, and `Faults::stop` disarms both, so
//! the settling at the end of a schedule runs without faults. A failure of the other writer
//! is the world's, not yoi's: the race commit ignores it, and the git events report it as a
//! `world` violation rather than one of yoi's. The git CLI runs with a fixed identity and no
//! background maintenance, so a seed replays the same commits.

use std::any::Any;
use std::panic;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use std::sync::Arc;

use yoi_engine::store::writes::Writes;

use super::{broken, Broken, World};

/// What a simulated crash unwinds with.
pub struct SimCrash(pub &'static str);

/// The faults the testpoint hook acts on. One world runs on one thread; the fields are atomic
/// only because a workspace's hook must be shareable.
pub(super) struct Faults {
    /// Die at the point this many hits from now (0: not armed).
    countdown: AtomicU32,
    /// Commit on the target at the next `merge.before_land`.
    race: AtomicBool,
    repo: PathBuf,
    commits: AtomicU32,
}

impl Faults {
    /// The faults of the world in `repo`, none armed.
    pub(super) fn new(repo: &Path) -> Arc<Faults> {
        Arc::new(Faults {
            countdown: AtomicU32::new(0),
            race: AtomicBool::new(false),
            repo: repo.to_path_buf(),
            commits: AtomicU32::new(0),
        })
    }

    /// The writes of the world's workspace: every test point they reach acts on these faults.
    pub(super) fn writes(self: &Arc<Faults>) -> Writes {
        let f = self.clone();
        Writes::default().with_points(move |name| {
            if name == "merge.before_land" && f.race.swap(false, SeqCst) {
                let n = f.commits.fetch_add(1, SeqCst) + 1;
                // Another writer: a failure here is the world's, not yoi's.
                let _ = commit_on_target(&f.repo, false, n);
            }
            match f.countdown.load(SeqCst) {
                0 => {}
                1 => {
                    f.countdown.store(0, SeqCst);
                    panic::panic_any(SimCrash(name));
                }
                n => f.countdown.store(n - 1, SeqCst),
            }
        })
    }

    /// Disarm the crash and the race: the faults stop.
    pub(super) fn stop(&self) {
        self.countdown.store(0, SeqCst);
        self.race.store(false, SeqCst);
    }
}

impl World {
    /// Someone else's commit on the target, numbered after every earlier one.
    pub(super) fn target_commit(&mut self, conflict: bool) -> Result<(), Broken> {
        let n = self.faults.commits.fetch_add(1, SeqCst) + 1;
        commit_on_target(&self.repo, conflict, n).map_err(|e| broken("world", e))
    }

    /// An uncommitted edit of the shared file in the checked-out target.
    pub(super) fn dirty_target(&mut self) -> Result<(), Broken> {
        let p = self.repo.join("shared.txt");
        let mut text = std::fs::read_to_string(&p).unwrap_or_default();
        text.push_str("an uncommitted edit\n");
        std::fs::write(&p, text).map_err(|e| broken("world", e.to_string()))
    }

    /// The uncommitted edit of the shared file undone.
    pub(super) fn clean_target(&mut self) -> Result<(), Broken> {
        git(&self.repo, &["checkout", "--", "shared.txt"])
            .map(|_| ())
            .map_err(|e| broken("world", e))
    }

    /// Commit on the target at the next merge's `merge.before_land`.
    pub(super) fn race_next_merge(&mut self) {
        self.faults.race.store(true, SeqCst);
    }

    /// Crash at the `nth` write point from now.
    pub(super) fn arm_crash(&mut self, nth: u32) {
        self.faults.countdown.store(nth, SeqCst);
    }
}

/// The git CLI in `dir`, as the simulation's other writer and its pods' tools; its stdout.
pub(super) fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=sim",
            "-c",
            "user.email=sim@yoi.invalid",
            "-c",
            "commit.gpgsign=false",
            // No detached `git maintenance run --auto` after a commit: it holds
            // `objects/maintenance.lock` for a moment after git returns, and the base
            // repository is copied right after its commit.
            "-c",
            "maintenance.auto=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("git {args:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Someone else's commit on the checked-out target: a line of the shared file, or a file apart.
fn commit_on_target(repo: &Path, conflict: bool, n: u32) -> Result<(), String> {
    let path = if conflict {
        let p = repo.join("shared.txt");
        let mut text = std::fs::read_to_string(&p).unwrap_or_default();
        text.push_str(&format!("target edit {n}\n"));
        std::fs::write(&p, text).map_err(|e| e.to_string())?;
        "shared.txt".to_string()
    } else {
        std::fs::create_dir_all(repo.join("apart")).map_err(|e| e.to_string())?;
        let p = format!("apart/{n}.txt");
        std::fs::write(repo.join(&p), format!("apart {n}\n")).map_err(|e| e.to_string())?;
        p
    };
    git(repo, &["add", "--", &path])?;
    git(
        repo,
        &["commit", "-q", "-m", &format!("target {n}"), "--", &path],
    )?;
    Ok(())
}

/// Keep simulated crashes out of the output; every other panic still reports as it would.
pub(super) fn install_quiet_crashes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<SimCrash>().is_none() {
                default(info);
            }
        }));
    });
}

/// The message of a panic that was not a simulated crash.
pub(super) fn panic_text(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}
