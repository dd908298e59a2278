//! `yoi-bench-sandbox YOI_BINARY [RUNS]`: what the sandbox costs each agent start (issue 38:
//! goal p50 ≤ 20 ms).
//!
//! In a real workspace (git, `yoi init`, a ticket worktree, a pod's run folder, a home with
//! credential folders), the policy a coder pod would build is made by yoi-pod's own code, then
//! `true` is started RUNS times (default 200) each way, alternating: directly, through the
//! launcher with Landlock alone, and through the launcher with Landlock and namespaces (what
//! this machine's pods get). Each start is timed from spawn to exit. Then the same again under
//! the load of a working team: one thread creating tickets through the CLI (writes arriving,
//! the index catching up) and one running sandboxed `git status` in the worktree (an agent at
//! work), for the whole measurement. Prints p50, p90 and p99 per way, idle and loaded.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn run(cmd: &mut Command) -> f64 {
    let t = Instant::now();
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("starts");
    assert!(status.success(), "{cmd:?} failed: {status}");
    t.elapsed().as_secs_f64() * 1000.0
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn measure(yoi: &Path, ways: &[(&str, Option<String>)], runs: usize) {
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
    for _ in 0..runs {
        for (i, (_, policy)) in ways.iter().enumerate() {
            let ms = match policy {
                None => run(&mut Command::new("true")),
                Some(p) => run(Command::new(yoi).args(["__sandbox", p, "--", "true"])),
            };
            times[i].push(ms);
        }
    }
    for (i, (name, _)) in ways.iter().enumerate() {
        let v = &mut times[i];
        println!(
            "  {name:<34} p50 {:6.2} ms   p90 {:6.2} ms   p99 {:6.2} ms",
            pct(v, 0.5),
            pct(v, 0.9),
            pct(v, 0.99)
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-sandbox YOI_BINARY [RUNS]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let runs: usize = args.get(2).map(|s| s.parse().expect(usage)).unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let home = dir.path().join("home");
    for d in [".ssh", ".aws", ".config/gh"] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    std::fs::create_dir_all(&root).unwrap();
    yoi_testkit::git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "bench\n").unwrap();
    yoi_testkit::commit_all(&root, "base");
    let status = Command::new(&yoi)
        .arg("init")
        .current_dir(&root)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let wt = root.join(".worktree/bench");
    yoi_testkit::git(
        &root,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            &wt.display().to_string(),
        ],
    );
    let run_dir = root.join(".yoi/local/pods/bench/runs/a1");
    std::fs::create_dir_all(&run_dir).unwrap();
    let launcher = vec![yoi.display().to_string(), "__sandbox".to_string()];
    let probe = yoi_pod::sandbox::Sandbox::probe(&launcher).unwrap();
    println!(
        "machine: landlock v{}, namespaces {}, root {}",
        probe.landlock_abi, probe.namespaces, probe.root
    );
    let mut sandbox = yoi_pod::sandbox::Sandbox {
        launcher,
        probe,
        section: Default::default(),
        home: Some(home.clone()),
        proxy: Default::default(),
    };
    let state = ["~/.aider/".to_string()];
    let full = sandbox.policy("coder", &wt, &run_dir, &state).unwrap();
    sandbox.probe.namespaces = false;
    let landlock_only = sandbox.policy("coder", &wt, &run_dir, &state).unwrap();
    println!(
        "policy: {} read roots denied, {} write paths",
        full.deny_read.len(),
        full.write.len()
    );
    let ways = [
        ("true, directly", None),
        (
            "through the launcher, Landlock",
            Some(serde_json::to_string(&landlock_only).unwrap()),
        ),
        (
            "through the launcher, + namespaces",
            Some(serde_json::to_string(&full).unwrap()),
        ),
    ];
    println!("idle, {runs} starts each:");
    measure(&yoi, &ways, runs);

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, yoi, root) = (stop.clone(), yoi.clone(), root.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                let _ = Command::new(&yoi)
                    .args([
                        "--local",
                        "ticket",
                        "create",
                        "--title",
                        &format!("Load {n}"),
                    ])
                    .current_dir(&root)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
            n
        })
    };
    let agent = {
        let (stop, yoi, wt) = (stop.clone(), yoi.clone(), wt.clone());
        let policy = ways[2].1.clone().unwrap();
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let _ = Command::new(&yoi)
                    .args(["__sandbox", &policy, "--", "git", "status", "--porcelain"])
                    .current_dir(&wt)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        })
    };
    println!("under load (tickets written through the CLI, a sandboxed agent running git status):");
    measure(&yoi, &ways, runs);
    stop.store(true, Ordering::SeqCst);
    let written = writer.join().unwrap();
    agent.join().unwrap();
    println!("  ({written} tickets written meanwhile)");
}
