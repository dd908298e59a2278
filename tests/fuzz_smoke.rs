//! A short fixed-seed run of every fuzz target (the long runs are `yoi-fuzz`, recorded in
//! BENCHMARKS.md): 0 panics and 0 hangs, or the test names the target, the first panic and
//! the file the input was written to. Two more tests prove the runner counts what it claims to.

use std::time::Duration;

use yoi_tests::fuzz::{self, Budget, Target};

const INPUTS: u64 = 3_000;
const SEED: u64 = 0x11_F022;

fn smoke(name: &str) {
    let target = fuzz::by_name(name).expect("a fuzz target of that name");
    let s = fuzz::run(target, &Budget::new(INPUTS, SEED));
    println!("seed {SEED:#x}: {}", s.line());
    assert_eq!(s.inputs, INPUTS);
    assert_eq!((s.panics, s.hangs), (0, 0), "{}", s.line());
    // The mutants reach past the first syntax check.
    assert!(s.accepted > 0, "no input was accepted: {}", s.line());
}

#[test]
fn fuzz_item_md_never_panics() {
    smoke("item.md");
}

#[test]
fn fuzz_thread_md_never_panics() {
    smoke("thread.md");
}

#[test]
fn fuzz_relations_json_never_panics() {
    smoke("relations.json");
}

#[test]
fn fuzz_plan_jsonl_never_panics() {
    smoke("plan.jsonl");
}

#[test]
fn fuzz_skill_md_never_panics() {
    smoke("SKILL.md");
}

#[test]
fn fuzz_flow_yaml_never_panics() {
    smoke("flow.yaml");
}

#[test]
fn fuzz_workspace_toml_never_panics() {
    smoke("workspace.toml");
}

#[test]
fn fuzz_api_json_never_panics() {
    smoke("api-json");
}

#[test]
fn every_target_has_a_smoke_test() {
    let source = include_str!("fuzz_smoke.rs");
    for t in fuzz::all() {
        assert!(
            source.contains(&format!("smoke(\"{}\")", t.name)),
            "target {} has no smoke test",
            t.name
        );
    }
}

fn seeds() -> Vec<Vec<u8>> {
    vec![b"ok".to_vec(), b"ok too".to_vec()]
}

/// Panics on any input holding a NUL byte, sleeps on one holding `~`.
fn flaky(bytes: &[u8]) -> bool {
    assert!(!bytes.contains(&0), "a NUL byte");
    if bytes.contains(&b'~') {
        std::thread::sleep(Duration::from_millis(30));
    }
    true
}

static FLAKY: Target = Target {
    name: "flaky",
    entry: "a target with planted bugs",
    seeds,
    dict: &["~"],
    run: flaky,
};

#[test]
fn the_runner_counts_panics_and_hangs_and_writes_their_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let mut budget = Budget::new(2_000, SEED);
    budget.hang_after = Duration::from_millis(10);
    // The planted 30 ms sleep must count as a hang, never as stuck: on a loaded machine it can
    // take ten times its length, and the watchdog would end the whole test binary.
    budget.stuck_after = Some(Duration::from_secs(60));
    budget.crash_dir = Some(dir.path().to_path_buf());
    let s = fuzz::run(&FLAKY, &budget);
    assert_eq!(s.inputs, 2_000);
    assert!(s.panics > 0 && s.hangs > 0, "{}", s.line());
    assert!(
        s.first_panic.as_deref().unwrap().contains("a NUL byte"),
        "{}",
        s.line()
    );
    assert!(s.slowest >= Duration::from_millis(10));
    let written: Vec<Vec<u8>> = s
        .written
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(written.iter().any(|w| w.contains(&0)));
    assert!(written.iter().any(|w| w.contains(&b'~')));
}

#[test]
fn a_seed_names_the_same_run() {
    let budget = Budget {
        crash_dir: None,
        ..Budget::new(500, 7)
    };
    let a = fuzz::run(fuzz::by_name("plan.jsonl").unwrap(), &budget);
    let b = fuzz::run(fuzz::by_name("plan.jsonl").unwrap(), &budget);
    assert_eq!((a.accepted, a.bytes), (b.accepted, b.bytes));
}
