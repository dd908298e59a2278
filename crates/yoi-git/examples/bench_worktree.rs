#![allow(clippy::disallowed_macros)] // a benchmark program prints its results
//! Times yoi's create-branch + add-worktree against `git worktree add -b` on a repository of
//! 5,000 files in nested folders (plus an executable and a symlink).
//!
//! `cargo run --release -p yoi-git --example bench_worktree`
//! Each side runs 10 times with fresh branch names; worktrees are removed between runs (not
//! timed). Prints both medians and the ratio yoi / git.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const FILES: usize = 5000;
const RUNS: usize = 10;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "maintenance.auto=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn build_repo(repo: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(repo).unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    for i in 0..FILES {
        let folder = repo.join(format!("d{}/e{}/f{}", i % 10, (i / 10) % 10, (i / 100) % 5));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!("file{i}.txt")),
            format!("content {i}\n"),
        )
        .unwrap();
    }
    std::fs::create_dir_all(repo.join("bin")).unwrap();
    std::fs::write(repo.join("bin/tool.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(
        repo.join("bin/tool.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink("d0/e0/f0/file0.txt", repo.join("latest")).unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "base"]);
    git(repo, &["rev-parse", "HEAD"]).trim().to_string()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let head = build_repo(&repo);
    let wt = dir.path().join("wt");

    let mut yoi = Vec::new();
    let mut git_times = Vec::new();
    // Interleave the two so neither side benefits from a warmer page cache.
    for run in 0..RUNS {
        let branch = format!("yoi-{run}");
        let t = Instant::now();
        yoi_git::create_branch(&repo, &branch, &head).unwrap();
        yoi_git::add_worktree(&repo, &wt, &branch).unwrap();
        yoi.push(t.elapsed());
        git(
            &repo,
            &["worktree", "remove", "--force", wt.to_str().unwrap()],
        );

        let branch = format!("git-{run}");
        let t = Instant::now();
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &branch,
                wt.to_str().unwrap(),
                &head,
            ],
        );
        git_times.push(t.elapsed());
        git(
            &repo,
            &["worktree", "remove", "--force", wt.to_str().unwrap()],
        );
    }
    let (y, g) = (median(yoi), median(git_times));
    println!(
        "files: {} (+ executable + symlink), runs: {RUNS} each",
        FILES
    );
    println!(
        "yoi create_branch + add_worktree: median {:.2} ms",
        y.as_secs_f64() * 1e3
    );
    println!(
        "git worktree add -b:              median {:.2} ms",
        g.as_secs_f64() * 1e3
    );
    println!("ratio yoi/git: {:.2}", y.as_secs_f64() / g.as_secs_f64());
}
