#![allow(clippy::disallowed_macros)] // a benchmark program prints its results
//! Catalog load benchmark: 1,000 generated skills, loaded and linted 5 times; prints the median.
//!
//! Run with `cargo run --release -p yoi-skills --example bench_catalog`. Goal: ≤ 200 ms.

use std::fs;
use std::time::Instant;

use yoi_skills::{Catalog, CatalogConfig};

const SKILLS: usize = 1_000;
const RUNS: usize = 5;

fn main() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join(".yoi/skills");
    for i in 0..SKILLS {
        let name = format!("skill-{i:04}");
        let dir = root.join(&name);
        fs::create_dir_all(dir.join("references")).expect("create skill dir");
        let body: String = (0..40)
            .map(|line| format!("Step {line}: see [notes](references/notes.md) for detail.\n"))
            .collect();
        let text = format!(
            "---\nname: {name}\ndescription: Generated skill number {i} for the catalog benchmark. \
             Use when measuring load time.\nlicense: MIT\nmetadata:\n  author: bench\n  \
             version: \"1.0\"\nallowed-tools: Read Bash(git:*)\n---\n\n# {name}\n\n{body}"
        );
        fs::write(dir.join("SKILL.md"), text).expect("write SKILL.md");
        fs::write(dir.join("references/notes.md"), "notes").expect("write notes");
    }

    let config = CatalogConfig::new(tmp.path());
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        let catalog = Catalog::load(&config);
        let elapsed = start.elapsed();
        assert_eq!(
            catalog.valid_skills().count(),
            SKILLS + yoi_skills::builtins().len()
        );
        times.push(elapsed);
    }
    times.sort();
    let median = times[RUNS / 2];
    println!(
        "catalog load+lint of {SKILLS} skills: median {:.1} ms over {RUNS} runs (min {:.1}, max {:.1})",
        median.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[RUNS - 1].as_secs_f64() * 1e3,
    );
}
