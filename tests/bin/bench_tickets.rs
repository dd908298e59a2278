//! `yoi-bench-tickets YOI_BINARY [TICKETS] [RELATIONS]`: generate a workspace with TICKETS
//! tickets (default 10,000) and about RELATIONS depends_on relations (default 20,000), then time
//! `yoi ticket list --json`, `yoi ticket list --ready` and `yoi ticket doctor` (median of 5).
//!
//! The workspace comes from [`yoi_tests::generate`] (fixed seed, printed).

use std::process::Command;
use std::time::Instant;

use yoi_tests::generate::{generate, SEED};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let yoi = std::fs::canonicalize(
        args.get(1)
            .expect("usage: yoi-bench-tickets YOI_BINARY [TICKETS] [RELATIONS]"),
    )
    .expect("YOI_BINARY exists");
    let tickets: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(10_000);
    let relations: usize = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(20_000);
    // YOI_BENCH_KEEP=1 keeps the workspace afterwards (for profiling) and prints where it is.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    if std::env::var_os("YOI_BENCH_KEEP").is_some() {
        println!("workspace kept at {}", root.display());
    }
    let status = Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(status.success());
    yoi_store::init(root, "main").unwrap();
    let start = Instant::now();
    let made = generate(root, tickets, relations);
    println!(
        "seed {SEED:#x}: generated {tickets} tickets and {made} depends_on relations in {:.1}s",
        start.elapsed().as_secs_f64()
    );
    // The first command builds the database index from nothing.
    let t = Instant::now();
    let out = Command::new(&yoi)
        .args(["reindex"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "first index build (yoi reindex on an empty database) {:.3}s",
        t.elapsed().as_secs_f64()
    );
    for (label, cmd) in [
        ("yoi ticket list --json", vec!["ticket", "list", "--json"]),
        ("yoi ticket list --ready", vec!["ticket", "list", "--ready"]),
        (
            "yoi ticket list --blocked",
            vec!["ticket", "list", "--blocked", "--json"],
        ),
        (
            "yoi ticket list --search",
            vec!["ticket", "list", "--search", "ticket 42", "--json"],
        ),
        ("yoi reindex (no change)", vec!["reindex"]),
        ("yoi reindex --full", vec!["reindex", "--full"]),
        ("yoi ticket doctor", vec!["ticket", "doctor"]),
    ] {
        let mut times = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let out = Command::new(&yoi)
                .args(&cmd)
                .current_dir(root)
                .output()
                .unwrap();
            times.push(t.elapsed().as_secs_f64());
            assert!(
                out.status.success() || label.contains("doctor"),
                "{label}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "{label:<26} median {:.3}s  (min {:.3}s, max {:.3}s)",
            times[2], times[0], times[4]
        );
    }
    if std::env::var_os("YOI_BENCH_KEEP").is_some() {
        let _ = dir.keep();
    }
}
