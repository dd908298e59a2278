//! `yoi-bench-doctor YOI_BINARY [TICKETS] [RUNS]`: `yoi ticket doctor` on a tree shaped like a
//! real history (issue 16 item 7), beside reading every ticket file with `cat`.
//!
//! TICKETS older-format tickets (default 10,208, the size of the tree the issue measured) are
//! written by [`yoi_tests::history::write_history`] — about ten events per thread, kilobyte
//! reports, plans, relations and review artifacts — committed, and indexed by `yoi init`.
//! Then, alternating, RUNS times each (default 5): `cat` of every file under `.yoi/tickets`
//! (one `xargs cat`, the cost of reading the bytes) and `yoi ticket doctor --json` with its
//! output to /dev/null (files, relations, plans, worktrees, and the index and outbox against
//! the files) three ways: as a user runs it again (unchanged folders from doctor's cache), with
//! `--no-cache` (every file read and parsed, the cache untouched), and with the cache removed
//! first (every file read, and the whole cache written). Prints medians, the spread, the ratios
//! to `cat` and each doctor's peak RSS (GNU time).

use std::process::Command;
use std::time::Instant;

use yoi_tests::median;

/// Run `sh -c script` in `dir`; its wall time and peak RSS (KiB). It must exit with `want_code`.
fn timed(dir: &std::path::Path, script: &str, want_code: i32) -> (f64, u64) {
    yoi_tests::timed_peak(dir, &["sh", "-c", script], want_code)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-doctor YOI_BINARY [TICKETS] [RUNS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let tickets: usize = args
        .get(2)
        .map(|s| s.parse().expect(usage))
        .unwrap_or(10_208);
    let runs: usize = args.get(3).map(|s| s.parse().expect(usage)).unwrap_or(5);
    // YOI_BENCH_KEEP=1 keeps the tree afterwards (for profiling) and prints where it is.
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = dir.path();
    if std::env::var_os("YOI_BENCH_KEEP").is_some() {
        println!("tree kept at {}", root.display());
    }
    yoi_testkit::git(root, &["init", "-q", "-b", "main"]);
    yoi_store::init(root, "main").expect("yoi's files initialise");
    let stats = yoi_tests::history::write_history(root, tickets);
    println!(
        "seed {:#x}: {} tickets, {} events, {} relations, {} plans, {:.1} MiB of ticket files",
        yoi_tests::generate::SEED,
        stats.tickets,
        stats.events,
        stats.relations,
        stats.plans,
        stats.bytes as f64 / (1 << 20) as f64
    );
    yoi_testkit::git(root, &["add", "-A", ".yoi"]);
    yoi_testkit::git(root, &["commit", "-qm", "tickets"]);
    let t = Instant::now();
    yoi_tests::yoi_init(&yoi, root);
    println!("indexed by `yoi init` in {:.1}s", t.elapsed().as_secs_f64());

    let cat = "find .yoi/tickets -type f -print0 | xargs -0 cat";
    let doctor = format!("'{}' ticket doctor --json", yoi.display());
    let no_cache = format!("'{}' ticket doctor --json --no-cache", yoi.display());
    let rebuilt = format!("rm -f .yoi/local/doctor-cache && {doctor}");
    // The doctor must pass: the tree holds warnings (older format) and no error.
    let report = Command::new(&yoi)
        .args(["ticket", "doctor", "--json"])
        .current_dir(root)
        .output()
        .expect("runs");
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).expect("a JSON report");
    println!(
        "doctor: ok {}, {} errors, {} warnings",
        json["ok"], json["errors"], json["warnings"]
    );
    assert_eq!(
        json["ok"],
        true,
        "{}",
        String::from_utf8_lossy(&report.stdout[..4000.min(report.stdout.len())])
    );
    timed(root, cat, 0);
    let kinds = [
        ("yoi ticket doctor --json (again)", &doctor),
        ("yoi ticket doctor --json --no-cache", &no_cache),
        ("yoi ticket doctor --json, cache removed first", &rebuilt),
    ];
    let mut cats = Vec::new();
    let mut ours = vec![(Vec::new(), 0); kinds.len()];
    for _ in 0..runs {
        cats.push(timed(root, cat, 0).0);
        for ((_, script), (times, peak)) in kinds.iter().zip(&mut ours) {
            let (s, kib) = timed(root, script, 0);
            times.push(s);
            *peak = kib.max(*peak);
        }
    }
    let (c, clo, chi) = median(cats);
    println!("{runs} runs each, alternating, warm page cache");
    println!(
        "  cat every ticket file: median {:.3} s (min {:.3}, max {:.3})",
        c, clo, chi
    );
    for ((name, _), (times, peak)) in kinds.iter().zip(ours) {
        let (d, dlo, dhi) = median(times);
        println!(
            "  {name}: median {d:.3} s (min {dlo:.3}, max {dhi:.3}), ratio {:.2}, peak RSS {:.1} MiB",
            d / c,
            peak as f64 / 1024.0
        );
    }
    if std::env::var_os("YOI_BENCH_KEEP").is_some() {
        let _ = dir.keep();
    }
}
