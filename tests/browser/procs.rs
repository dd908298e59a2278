//! What `/proc` says about the processes a driver started: members of its process group, and
//! processes whose environment carries its marker (those that left the group, such as a
//! daemonised helper, still inherit the environment). Zombies count as gone: they hold nothing
//! but a pid, and whoever adopted them reaps them.

use std::fs;

/// One live process, as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub comm: String,
    pub state: char,
    /// Clock ticks since boot when it started: with the pid, names the process for good.
    pub start: u64,
}

/// Every live process in group `pgid` or with `marker` (a `KEY=VALUE` entry) in its environment.
pub(crate) fn find(pgid: i32, marker: &str) -> Vec<Proc> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<Proc> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .filter(|p| !matches!(p.state, 'Z' | 'X'))
        .filter(|p| p.pgid == pgid || has_marker(p.pid, marker))
        .collect();
    found.sort_by_key(|p| p.pid);
    found
}

fn stat(pid: i32) -> Option<Proc> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `comm` sits in parentheses and may itself contain spaces or parentheses.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text[open + 1..close].to_string();
    let mut rest = text[close + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgid = rest.next()?.parse().ok()?;
    // Field 22; `state`, `ppid` and `pgid` were fields 3 to 5.
    let start = rest.nth(16)?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        pgid,
        comm,
        state,
        start,
    })
}

fn has_marker(pid: i32, marker: &str) -> bool {
    fs::read(format!("/proc/{pid}/environ"))
        .map(|env| {
            env.split(|b| *b == 0)
                .any(|entry| entry == marker.as_bytes())
        })
        .unwrap_or(false)
}

/// The environment variable naming the test process that owns a driver, as `PID:STARTTIME`
/// (the start time tells a live owner from a later process that reuses its pid).
pub(crate) const OWNER_KEY: &str = "YOI_BROWSER_OWNER";

/// This process as an owner: `PID:STARTTIME` from `/proc/self/stat`.
pub(crate) fn own_token() -> String {
    let pid = std::process::id() as i32;
    format!("{pid}:{}", start_time(pid).unwrap_or_default())
}

/// A process's start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
fn start_time(pid: i32) -> Option<u64> {
    stat(pid).map(|p| p.start)
}

/// Whether the owner a token names is still the same running process.
fn owner_alive(token: &str) -> bool {
    let Some((pid, start)) = token.split_once(':') else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<i32>(), start.parse::<u64>()) else {
        return false;
    };
    start_time(pid) == Some(start)
}

/// Every live process carrying an owner marker whose owner is gone: browsers left behind by a
/// test binary that was killed outright, so its drivers' `Drop` never ran. Returns them with
/// the driver directory their marker names.
pub(crate) fn orphans() -> Vec<(Proc, Option<String>)> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let owner_prefix = format!("{OWNER_KEY}=");
    let driver_prefix = format!("{}=", super::driver::MARKER_KEY);
    let mut found = Vec::new();
    for pid in entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
    {
        let Ok(env) = fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let mut owner = None;
        let mut home = None;
        for entry in env.split(|b| *b == 0) {
            let entry = String::from_utf8_lossy(entry);
            if let Some(token) = entry.strip_prefix(&owner_prefix) {
                owner = Some(token.to_string());
            } else if let Some(dir) = entry.strip_prefix(&driver_prefix) {
                home = Some(dir.to_string());
            }
        }
        let Some(owner) = owner else { continue };
        if owner_alive(&owner) {
            continue;
        }
        if let Some(p) = stat(pid).filter(|p| !matches!(p.state, 'Z' | 'X')) {
            found.push((p, home));
        }
    }
    found
}
