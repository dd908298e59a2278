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
    Some(Proc {
        pid,
        ppid,
        pgid,
        comm,
        state,
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
