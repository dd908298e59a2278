//! Test support shared by yoi's test suites and benchmark programs. yoi itself never shells out
//! to git; its tests do, to build repositories and to check yoi's work against git's own view.

// Fixtures are made fresh by `new()` in every test; a `Default` would only hide that.
#![allow(clippy::new_without_default)]

pub mod child;
pub mod dbus;
pub mod forge;
pub mod git_remote;
pub mod pg;
pub mod receiver;
pub mod repo;
pub mod store;

use std::path::Path;
use std::process::{Command, Output};

/// Run git in `dir` with a fixed identity and no system or user configuration, whatever it
/// exits with. Automatic maintenance is off: since git 2.47 a commit leaves a detached
/// `git maintenance run --auto` behind, which holds `objects/maintenance.lock` for a moment
/// after git returns, so a test that copies or counts the repository's files could see one
/// vanish, and the process outlives the test.
pub fn git_output(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(["-c", "maintenance.auto=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs")
}

/// [`git_output`], which must succeed; returns stdout.
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("git prints UTF-8 here")
}

/// Stage everything in the repository at `dir` and commit it; returns the new commit id.
pub fn commit_all(dir: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", message]);
    git(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// Follow a dashboard login link (`yoi serve` prints one, `yoi dashboard` makes one) as a
/// browser would, and return the session cookie it sets (`yoi_session=…`) for a `Cookie`
/// header. Panics unless the link answers `303` with the cookie.
pub fn dashboard_session(link: &str) -> String {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let res = agent
        .get(link.trim())
        .call()
        .unwrap_or_else(|e| panic!("GET {link}: {e}"));
    assert_eq!(res.status(), 303, "the login link starts a session");
    res.headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .filter(|c| c.starts_with("yoi_session="))
        .unwrap_or_else(|| panic!("no session cookie from {link}"))
        .to_string()
}

/// The wall clock in milliseconds since the Unix epoch: the clock tests give the database index
/// (`yoi_db::Bridge`), which never reads one itself.
pub fn wall_ms() -> i64 {
    yoi_core::time::unix_ms(std::time::SystemTime::now())
}

/// Wait until the file system's clock has moved past every time (modification and change) of
/// `dir` and what it holds: a file made in `probe_in` (on the same file system) from then on
/// gets a later time, as a doctor pass's cache file does when the pass starts. Waits on the
/// clock it is about, not on a guess of its tick; panics after 10 s.
pub fn until_the_file_clock_passes(dir: &Path, probe_in: &Path) {
    use std::os::unix::fs::MetadataExt;
    fn latest(path: &Path) -> i64 {
        let m = std::fs::symlink_metadata(path).unwrap();
        let own = (m.mtime() * 1_000_000_000 + m.mtime_nsec())
            .max(m.ctime() * 1_000_000_000 + m.ctime_nsec());
        if !m.is_dir() {
            return own;
        }
        std::fs::read_dir(path)
            .unwrap()
            .map(|e| latest(&e.unwrap().path()))
            .fold(own, i64::max)
    }
    let last = latest(dir);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        // Unnamed, so the folder it is made in does not change.
        let m = tempfile::tempfile_in(probe_in).unwrap().metadata().unwrap();
        if m.mtime() * 1_000_000_000 + m.mtime_nsec() > last {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the file system's clock did not move past {last}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
