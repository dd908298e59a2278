//! `yoi-fuzz [TARGET|all] [INPUTS] [SEED]`: fuzz the parsers of user-controlled bytes (issue
//! 11) with the structure-aware mutator of `yoi_tests::fuzz`, one target after another, and
//! print one summary line per target. Defaults: all targets, 1,000,000 inputs each, seed 1.
//! Crashing and hanging inputs are written to `target/fuzz-crashes/<target>-<n>.bin`; the exit
//! status is 1 when any target panicked or hung. The slowest input of each target is kept as
//! `target/fuzz-crashes/<target>-slowest.bin`.
//!
//! `yoi-fuzz replay TARGET FILE…` runs one target on saved inputs and prints, per file, its
//! time and outcome (the panic message, if any), to reproduce a finding.

use std::process::ExitCode;
use std::time::Instant;

use yoi_tests::fuzz::{self, Budget, Target};

fn usage() -> ExitCode {
    let names: Vec<&str> = fuzz::all().iter().map(|t| t.name).collect();
    eprintln!(
        "usage: yoi-fuzz [TARGET|all] [INPUTS] [SEED]\n       yoi-fuzz replay TARGET FILE...\ntargets: {}",
        names.join(", ")
    );
    ExitCode::from(2)
}

fn replay(name: &str, files: &[String]) -> ExitCode {
    let Some(target) = fuzz::by_name(name) else {
        return usage();
    };
    let mut failed = false;
    for f in files {
        let bytes = match std::fs::read(f) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{f}: {e}");
                return ExitCode::from(2);
            }
        };
        let start = Instant::now();
        let outcome = std::panic::catch_unwind(|| (target.run)(&bytes));
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let what = match outcome {
            Ok(true) => "accepted".to_string(),
            Ok(false) => "refused".to_string(),
            Err(_) => {
                failed = true;
                "PANICKED".to_string()
            }
        };
        println!("{f}: {} bytes, {ms:.3} ms, {what}", bytes.len());
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("replay") && args.len() >= 3 {
        return replay(&args[1], &args[2..]);
    }
    if args.len() > 3 || args.iter().any(|a| a == "-h" || a == "--help") {
        return usage();
    }
    let which = args.first().map(String::as_str).unwrap_or("all");
    let targets: Vec<&'static Target> = if which == "all" {
        fuzz::all().iter().collect()
    } else {
        match fuzz::by_name(which) {
            Some(t) => vec![t],
            None => return usage(),
        }
    };
    let parse = |i: usize, default: u64| match args.get(i) {
        None => Some(default),
        Some(s) => s.replace('_', "").parse().ok(),
    };
    let (Some(inputs), Some(seed)) = (parse(1, 1_000_000), parse(2, 1)) else {
        return usage();
    };
    let budget = Budget::new(inputs, seed);
    println!("yoi-fuzz: {inputs} inputs per target, seed {seed}");
    let start = Instant::now();
    let mut failed = false;
    for t in targets {
        let s = fuzz::run(t, &budget);
        failed |= s.panics > 0 || s.hangs > 0;
        println!("{}", s.line());
        let slowest = fuzz::default_crash_dir().join(format!("{}-slowest.bin", t.name));
        if std::fs::create_dir_all(fuzz::default_crash_dir()).is_ok() {
            let _ = std::fs::write(slowest, &s.slowest_bytes);
        }
    }
    println!("total wall {:.1} s", start.elapsed().as_secs_f64());
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
