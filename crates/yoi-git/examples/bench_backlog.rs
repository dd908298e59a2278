#![allow(clippy::disallowed_macros)] // a benchmark program prints its results
//! Does a ticket worktree cost more when the repository holds many tickets? Two repositories of
//! 300 source files, one with no tickets and one with TICKETS committed ticket folders
//! (`.yoi/tickets/<id>/{item.md,thread.md}` plus `artifacts/.gitkeep`); each run adds a
//! worktree detached at HEAD and removes it again (not timed), alternating between the two,
//! once with the ticket files left out (`add_worktree_sparse`, what yoi does) and once with a
//! full checkout (`add_worktree_detached`, what it did). Prints the medians and the ratios.
//!
//! `cargo run --release -p yoi-git --example bench_backlog [TICKETS] [RUNS]`

use std::path::Path;
use std::time::{Duration, Instant};

use yoi_testkit::git;

fn build(repo: &Path, tickets: usize) {
    std::fs::create_dir_all(repo).unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    for i in 0..300 {
        let folder = repo.join(format!("src/m{}", i % 15));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join(format!("f{i}.rs")), format!("// file {i}\n")).unwrap();
    }
    std::fs::create_dir_all(repo.join(".yoi")).unwrap();
    std::fs::write(repo.join(".yoi/workspace.toml"), "[workspace]\n").unwrap();
    for i in 0..tickets {
        let dir = repo.join(format!(".yoi/tickets/01JBENCH{i:018}"));
        std::fs::create_dir_all(dir.join("artifacts")).unwrap();
        std::fs::write(
            dir.join("item.md"),
            format!("---\ntitle: Ticket {i}\nstate: closed\n---\n\n## Intent\nWork {i}.\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("thread.md"),
            format!("<!-- event: create author: bench at: 2026-12-01T00:00:00Z -->\n\n## Created\n\nTicket {i}.\n\n---\n"),
        )
        .unwrap();
        std::fs::write(dir.join("artifacts/.gitkeep"), "").unwrap();
    }
    yoi_testkit::commit_all(repo, "base");
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tickets: usize = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(10_000);
    let runs: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(15);
    let dir = tempfile::tempdir().unwrap();
    let (empty, full) = (dir.path().join("none"), dir.path().join("many"));
    build(&empty, 0);
    build(&full, tickets);
    let leave_out = [".yoi/tickets/"];
    let mut times: [[Vec<Duration>; 2]; 2] = Default::default();
    for run in 0..runs {
        for (r, repo) in [&empty, &full].into_iter().enumerate() {
            for (s, sparse) in [true, false].into_iter().enumerate() {
                let wt = dir.path().join(format!("wt-{r}-{s}-{run}"));
                let start = Instant::now();
                if sparse {
                    yoi_git::add_worktree_sparse(repo, &wt, "HEAD", &leave_out).unwrap();
                } else {
                    yoi_git::add_worktree_detached(repo, &wt, "HEAD").unwrap();
                }
                times[r][s].push(start.elapsed());
                yoi_git::remove_worktree(repo, &wt, true).unwrap();
            }
        }
    }
    let [[none_sparse, none_full], [many_sparse, many_full]] = times.map(|t| t.map(median));
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("{tickets} tickets, 300 source files, median of {runs}:");
    println!(
        "  ticket files left out: no tickets {:.2} ms, {tickets} tickets {:.2} ms ({:.2}x)",
        ms(none_sparse),
        ms(many_sparse),
        ms(many_sparse) / ms(none_sparse)
    );
    println!(
        "  full checkout:         no tickets {:.2} ms, {tickets} tickets {:.2} ms ({:.2}x)",
        ms(none_full),
        ms(many_full),
        ms(many_full) / ms(none_full)
    );
}
