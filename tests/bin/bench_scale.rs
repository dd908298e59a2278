//! `yoi-bench-scale YOI_BINARY [TICKETS ...]`: issue 45's scale table — what each local command
//! and the server path cost at several sizes of the same seeded tree, beside the references
//! measured on that tree in the same run, and how each grows from one size to the next.
//!
//! For each size (default 1,000, 10,000 and 100,000 tickets) a workspace is made by
//! [`yoi_tests::generated_workspace`] (the seeded generator, about two `depends_on` a ticket,
//! indexed by `yoi init`) and its tickets are committed, as a repository that tracks them is.
//! Then, alternating, `YOI_BENCH_RUNS` rounds (default 5), warm page cache, output discarded:
//!
//! - references: `git status --porcelain`, and `cat` of every file under `.yoi/tickets`;
//! - `yoi --local ticket list --ready --json` (the first page a person sees) and with `--all`;
//! - `yoi --local ticket show ID --json` of one ticket;
//! - `yoi reindex --full`, and `yoi ticket doctor --json` run again (its cache);
//! - the first doctor after a clone: `yoi ticket doctor --json` in a `git clone` of the
//!   repository (made once, not timed), its `.yoi/local` removed before each round, so it has
//!   no database and no doctor cache.
//!
//! Then `yoi serve` runs for the workspace (routing and supervised pods off, so the tickets stay
//! as the local reads saw them) and, once its database has been quiet for a second:
//! `yoi ticket list --ready --json` through it, with and without `--all`, `YOI_BENCH_RUNS`
//! times each; 500 `GET /api/v1/tickets/{id}` of seeded random tickets and 500
//! `GET /api/v1/tickets?limit=50`, one keep-alive client (p50 and p99); and the server's RSS
//! (`VmRSS`) after all of that.
//!
//! Prints a line per measure as it goes, then the table (medians) and, for every pair of
//! consecutive sizes, each measure's growth exponent k in time ∝ tickets^k. Nothing is
//! asserted about speed: it exits 1 only when a command it times fails, and CI runs it at 1,000
//! tickets as a smoke test of the program itself.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use yoi_tests::generate::Rng;
use yoi_tests::median;

/// The measures of one size, in the table's column order: (label, unit, median).
type Row = Vec<(&'static str, &'static str, Option<f64>)>;

/// Commands that failed: the program exits 1 when there were any (CI's smoke test).
static FAILED: AtomicUsize = AtomicUsize::new(0);

/// Run `cmd` in `dir` with its output discarded; its wall time in seconds, or `None` when it
/// exits with a code other than 0 (or 1 when `may_fail`: doctor's findings).
fn run(dir: &Path, cmd: &[&str], may_fail: bool) -> Option<f64> {
    let t = Instant::now();
    let out = Command::new(cmd[0])
        .args(&cmd[1..])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("runs");
    let secs = t.elapsed().as_secs_f64();
    match out.status.code() {
        Some(0) => Some(secs),
        Some(1) if may_fail => Some(secs),
        code => {
            FAILED.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "  {cmd:?} exited {code:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            None
        }
    }
}

/// The median of the samples that ran, or `None` when one failed.
fn med(samples: &[Option<f64>]) -> Option<f64> {
    let v: Option<Vec<f64>> = samples.iter().copied().collect();
    v.filter(|v| !v.is_empty()).map(|v| median(v).0)
}

/// The p-th percentile (0..=100) of `v`, in milliseconds from seconds.
fn percentile_ms(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i] * 1e3
}

/// `VmRSS` of `pid` in MiB.
fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// `n` sequential GETs of `path(i)` with one keep-alive client: p50 and p99 in milliseconds.
fn api_latency(
    addr: &str,
    token: &str,
    n: usize,
    mut path: impl FnMut(usize) -> String,
) -> (f64, f64) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let auth = format!("Bearer {token}");
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let url = format!("http://{addr}/api/v1{}", path(i));
        let t = Instant::now();
        let mut resp = agent
            .get(&url)
            .header("Authorization", &auth)
            .call()
            .expect("the server answers");
        let status = resp.status().as_u16();
        let _ = resp.body_mut().read_to_vec().expect("a body");
        times.push(t.elapsed().as_secs_f64());
        assert_eq!(status, 200, "{url}");
    }
    let p50 = percentile_ms(&mut times, 50.0);
    (p50, percentile_ms(&mut times, 99.0))
}

fn measure(yoi: &Path, tickets: usize, runs: usize) -> Row {
    let (dir, token) = yoi_tests::generated_workspace(yoi, tickets);
    let root = dir.path();
    let t = Instant::now();
    yoi_testkit::git(root, &["add", "-A", ".yoi"]);
    yoi_testkit::git(root, &["commit", "-qm", "tickets"]);
    println!("committed in {:.1}s", t.elapsed().as_secs_f64());
    let mut ids: Vec<String> = std::fs::read_dir(root.join(".yoi/tickets"))
        .expect("the tickets folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    ids.sort();
    let y = yoi.to_str().expect("a UTF-8 path");
    let one = ids[ids.len() / 2].clone();
    let git = ["git", "status", "--porcelain"];
    let cat = [
        "sh",
        "-c",
        "find .yoi/tickets -type f -print0 | xargs -0 cat",
    ];
    let list = [y, "--local", "ticket", "list", "--ready", "--json"];
    let list_all = [y, "--local", "ticket", "list", "--ready", "--json", "--all"];
    let show = [y, "--local", "ticket", "show", &one, "--json"];
    let full = [y, "reindex", "--full"];
    let doctor = [y, "ticket", "doctor", "--json"];
    // Warm the page cache, the index and doctor's cache.
    for cmd in [&git[..], &cat, &list, &show, &doctor] {
        run(root, cmd, true);
    }
    let local: [(&str, &[&str], bool); 8] = [
        ("git status --porcelain", &git, false),
        ("cat of every file", &cat, false),
        ("list --ready --json, no server", &list, false),
        ("  the same, --all", &list_all, false),
        ("show ID --json", &show, false),
        ("reindex --full", &full, false),
        ("doctor --json, again", &doctor, true),
        ("doctor, first after a clone", &[], true),
    ];
    let mut samples = vec![Vec::new(); local.len()];
    let clone = tempfile::tempdir().expect("a temporary folder");
    let copy = clone.path().join("repo");
    for _ in 0..runs {
        for ((_, cmd, may_fail), s) in local.iter().zip(&mut samples) {
            if cmd.is_empty() {
                // A clone as git made it: no .yoi/local, so no database and no cache. Cloned
                // once; each round removes what the last doctor left (removing a clone of
                // 100,000 tickets takes minutes on a disk that discards every freed block).
                if !copy.exists() {
                    let from = root.to_str().expect("a UTF-8 path");
                    let into = copy.to_str().expect("a UTF-8 path");
                    yoi_testkit::git(clone.path(), &["clone", "-q", from, into]);
                }
                let _ = std::fs::remove_dir_all(copy.join(".yoi/local"));
                s.push(run(&copy, &doctor, true));
            } else {
                s.push(run(root, cmd, *may_fail));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&copy);
    let mut row: Row = Vec::new();
    for ((label, _, _), s) in local.iter().zip(&samples) {
        let m = med(s);
        println!("  {label}: median {}", fmt(m, "s"));
        row.push((label, "s", m));
    }

    // Through a server that neither routes nor supervises pods.
    yoi_tests::disable_routing(root);
    let config = root.join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).expect("workspace.toml");
    let quiet: String = text
        .lines()
        .map(|l| match l {
            "coder = 1" => "coder = 0",
            "verifier = 1" => "verifier = 0",
            "reviewer = 1" => "reviewer = 0",
            other => other,
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&config, quiet).expect("write workspace.toml");
    let (server, addr) = yoi_tests::yoi_serve(yoi, root);
    // The server keeps answers once its database has been quiet for a second.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let served = [y, "ticket", "list", "--ready", "--json"];
    let served_all = [y, "ticket", "list", "--ready", "--json", "--all"];
    run(root, &served, false);
    run(root, &served_all, false);
    let (mut first, mut all) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        first.push(run(root, &served, false));
        all.push(run(root, &served_all, false));
    }
    let mut rng = Rng(yoi_tests::generate::SEED);
    let (show50, show99) = api_latency(&addr, &token, 500, |_| {
        format!("/tickets/{}", ids[rng.below(ids.len() as u64) as usize])
    });
    let (list50, list99) = api_latency(&addr, &token, 500, |_| "/tickets?limit=50".into());
    let rss = rss_mib(server.id());
    server.stop();
    let (f, a) = (med(&first), med(&all));
    println!("  through yoi serve: list --ready --json {}", fmt(f, "s"));
    println!(
        "  through yoi serve: list --ready --json --all {}",
        fmt(a, "s")
    );
    println!("  API GET /tickets/{{id}}: p50 {show50:.2} ms, p99 {show99:.2} ms");
    println!("  API GET /tickets?limit=50: p50 {list50:.2} ms, p99 {list99:.2} ms");
    println!("  yoi serve RSS after those: {}", fmt(rss, "MiB"));
    row.push(("served list --ready --json", "s", f));
    row.push(("  the same, --all", "s", a));
    row.push(("API show p99", "ms", Some(show99)));
    row.push(("API list of 50 p99", "ms", Some(list99)));
    row.push(("serve RSS", "MiB", rss));
    // `YOI_BENCH_KEEP=1` keeps each tree (routing and pods off) for a profile afterwards.
    if std::env::var_os("YOI_BENCH_KEEP").is_some() {
        println!("kept {}", dir.keep().display());
        return row;
    }
    let t = Instant::now();
    drop(dir);
    println!("tree removed in {:.1}s", t.elapsed().as_secs_f64());
    row
}

fn fmt(v: Option<f64>, unit: &str) -> String {
    match (v, unit) {
        (None, _) => "—".into(),
        (Some(s), "s") if s < 1.0 => format!("{:.1} ms", s * 1e3),
        (Some(s), "s") => format!("{s:.2} s"),
        (Some(x), u) => format!("{x:.1} {u}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-scale YOI_BINARY [TICKETS ...]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let mut sizes: Vec<usize> = args[2..].iter().map(|s| s.parse().expect(usage)).collect();
    if sizes.is_empty() {
        sizes = vec![1_000, 10_000, 100_000];
    }
    let runs: usize = std::env::var("YOI_BENCH_RUNS")
        .ok()
        .map(|s| s.parse().expect("YOI_BENCH_RUNS is a number"))
        .unwrap_or(5);
    let mut rows = Vec::new();
    for &n in &sizes {
        println!("== {n} tickets, {runs} rounds");
        rows.push(measure(&yoi, n, runs));
    }
    let labels: Vec<&str> = rows[0].iter().map(|(l, _, _)| l.trim()).collect();
    println!();
    println!("| tickets | {} |", labels.join(" | "));
    println!("|---|{}", "---|".repeat(labels.len()));
    for (n, row) in sizes.iter().zip(&rows) {
        let mut cells = Vec::new();
        for (i, (_, unit, v)) in row.iter().enumerate() {
            let mut cell = fmt(*v, unit);
            // The read against git status on the same tree.
            if i == 2 {
                if let (Some(v), Some(g)) = (v, row[0].2) {
                    cell = format!("{cell} ({:.2}×)", v / g);
                }
            }
            cells.push(cell);
        }
        println!("| {n} | {} |", cells.join(" | "));
    }
    for w in 1..sizes.len() {
        let (n0, n1) = (sizes[w - 1] as f64, sizes[w] as f64);
        println!();
        println!(
            "growth exponent {} → {} tickets (time ∝ n^k):",
            sizes[w - 1],
            sizes[w]
        );
        for (i, label) in labels.iter().enumerate() {
            if let (Some(a), Some(b)) = (rows[w - 1][i].2, rows[w][i].2) {
                println!("  {label}: {:.2}", (b / a).ln() / (n1 / n0).ln());
            }
        }
    }
    let failed = FAILED.load(Ordering::Relaxed);
    if failed > 0 {
        eprintln!("{failed} timed commands failed (their errors are above)");
        std::process::exit(1);
    }
}
