//! `yoi-bench-cli-read YOI_BINARY [TICKETS] [RUNS]`: a CLI read without a server against
//! `git status` on the same tree, and the same read through a running server (issue 16
//! item 1).
//!
//! A workspace of TICKETS generated tickets (default 10,000) is indexed by `yoi init` and its
//! tickets are committed, as a repository that tracks them is. Then, alternating, RUNS times
//! each (default 9): `git status --porcelain` (git's own freshness check: a stat of every
//! tracked file against its index) and `yoi --local ticket list --ready --json` (the index's
//! freshness check, then the query). Prints medians, the spread and the ratio, and the peak
//! memory of one `yoi` read.
//!
//! Then `yoi serve` runs for the workspace and `yoi ticket list --ready --json` (answered by
//! the server) is timed RUNS times twice: with nothing written between reads, and with a
//! ticket's title edited by hand in item.md just before each read (the server reads the
//! change into its index before it answers; the first read after it is answered afresh).

use std::process::Command;

use yoi_tests::median;

/// Run `cmd` in `dir`; its wall time in seconds and its peak RSS in KiB (GNU time).
fn timed(dir: &std::path::Path, cmd: &[&str]) -> (f64, u64) {
    yoi_tests::timed_peak(dir, cmd, 0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-cli-read YOI_BINARY [TICKETS] [RUNS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let tickets: usize = args
        .get(2)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(10_000);
    let runs: usize = args.get(3).map(|s| s.parse().expect(usage)).unwrap_or(9);
    let (dir, _) = yoi_tests::generated_workspace(&yoi, tickets);
    let root = dir.path();
    yoi_testkit::git(root, &["add", "-A", ".yoi"]);
    yoi_testkit::git(root, &["commit", "-qm", "tickets"]);
    let yoi = yoi.display().to_string();
    let read = [
        yoi.as_str(),
        "--local",
        "ticket",
        "list",
        "--ready",
        "--json",
    ];
    let status = ["git", "status", "--porcelain"];
    // Warm the page cache for both.
    timed(root, &status);
    timed(root, &read);
    let (mut git, mut ours, mut peak) = (Vec::new(), Vec::new(), 0);
    for _ in 0..runs {
        git.push(timed(root, &status).0);
        let (s, kib) = timed(root, &read);
        ours.push(s);
        peak = peak.max(kib);
    }
    let (g, glo, ghi) = median(git);
    let (y, ylo, yhi) = median(ours);
    println!("{runs} runs each, alternating, warm page cache");
    println!(
        "  git status --porcelain: median {:.1} ms (min {:.1}, max {:.1})",
        g * 1e3,
        glo * 1e3,
        ghi * 1e3
    );
    println!(
        "  yoi --local ticket list --ready --json: median {:.1} ms (min {:.1}, max {:.1}), peak RSS {:.1} MiB",
        y * 1e3,
        ylo * 1e3,
        yhi * 1e3,
        peak as f64 / 1024.0
    );
    println!("  ratio: {:.2}", y / g);

    // A server that does not route, so the tickets stay as the local read saw them.
    yoi_tests::disable_routing(root);
    let (server, _addr) = yoi_tests::yoi_serve(std::path::Path::new(&yoi), root);
    let through = [yoi.as_str(), "ticket", "list", "--ready", "--json"];
    let local_answer = Command::new(&yoi)
        .args(["--local", "ticket", "list", "--ready", "--json"])
        .current_dir(root)
        .output()
        .expect("runs")
        .stdout;
    // The server keeps answers once its database has been quiet for a second.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    timed(root, &through);
    let served = Command::new(&yoi)
        .args(["ticket", "list", "--ready", "--json"])
        .current_dir(root)
        .output()
        .expect("runs")
        .stdout;
    assert!(
        served == local_answer,
        "the server and the files answer the same"
    );
    let (mut quiet, mut peak) = (Vec::new(), 0);
    for _ in 0..runs {
        let (s, kib) = timed(root, &through);
        quiet.push(s);
        peak = peak.max(kib);
    }
    let some = std::fs::read_dir(root.join(".yoi/tickets"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("item.md");
    let original = std::fs::read_to_string(&some).unwrap();
    let mut edited = Vec::new();
    for n in 0..runs {
        let text = original.replacen("title: ", &format!("title: Edit {n} of "), 1);
        std::fs::write(&some, text).unwrap();
        edited.push(timed(root, &through).0);
    }
    std::fs::write(&some, original).unwrap();
    let (q, qlo, qhi) = median(quiet);
    let (e, elo, ehi) = median(edited);
    println!("  through `yoi serve`, yoi ticket list --ready --json:");
    println!(
        "    nothing written between reads: median {:.1} ms (min {:.1}, max {:.1}), peak RSS {:.1} MiB",
        q * 1e3,
        qlo * 1e3,
        qhi * 1e3,
        peak as f64 / 1024.0
    );
    println!(
        "    a title edited by hand before each read: median {:.1} ms (min {:.1}, max {:.1})",
        e * 1e3,
        elo * 1e3,
        ehi * 1e3
    );
    server.stop();
    // `YOI_BENCH_KEEP=1` keeps the workspace for a profile afterwards.
    if std::env::var_os("YOI_BENCH_KEEP").is_some() {
        println!("kept {}", dir.keep().display());
    }
}
