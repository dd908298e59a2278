//! `yoi-bench-merge [FILES] [MERGES]`: the merge step's git work on a repository of FILES files
//! (default 800) whose target `main` is checked out in the main worktree, as in a user's clone.
//! Each of MERGES (default 200) ticket commits changes one file on top of main; the timed part is
//! what the service does per merge: `plan_merge` (ancestry, the changed paths) plus `land`
//! (the status of the checked-out worktree, the compare-and-swap of `main`, writing the
//! changed files and index entries). The reference, in the same run on the same repository, is
//! `git merge --ff-only` of an equal commit in the same worktree.

use std::path::Path;
use std::time::Instant;

use yoi_testkit::git;

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// A commit on top of main changing `file`, made in the scratch worktree `work`.
fn ticket_commit(work: &Path, file: &str, n: usize) -> String {
    git(work, &["checkout", "-q", "--detach", "main"]);
    std::fs::write(work.join(file), format!("changed by ticket {n}\n")).unwrap();
    git(work, &["commit", "-q", "-am", &format!("ticket {n}")]);
    git(work, &["rev-parse", "HEAD"]).trim().to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let files: usize = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(800);
    let merges: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let mut names = Vec::new();
    for i in 0..files {
        let folder = format!("d{}/e{}", i % 20, (i / 20) % 10);
        std::fs::create_dir_all(repo.join(&folder)).unwrap();
        let name = format!("{folder}/file{i}.txt");
        std::fs::write(repo.join(&name), format!("content {i}\n")).unwrap();
        names.push(name);
    }
    yoi_testkit::commit_all(&repo, "base");
    git(&repo, &["config", "user.name", "b"]);
    git(&repo, &["config", "user.email", "b@b.invalid"]);
    let work = dir.path().join("work");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            work.to_str().unwrap(),
            "main",
        ],
    );
    // Warm the page cache and git's own caches.
    git(&repo, &["status", "--porcelain"]);

    let mut yoi = Vec::new();
    let mut reference = Vec::new();
    for n in 0..merges {
        let c = ticket_commit(&work, &names[(n * 7) % files], n);
        let t = Instant::now();
        let plan = yoi_git::plan_merge(&repo, "main", &c).unwrap();
        let yoi_git::MergePlan::FastForward {
            before,
            after,
            changed,
        } = plan
        else {
            panic!("not a fast-forward: {plan:?}");
        };
        let landed =
            yoi_git::land(&repo, "main", &before, &after, &changed, &[".yoi/tickets/"]).unwrap();
        yoi.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(
            matches!(landed, yoi_git::Landed::Moved { .. }),
            "{landed:?}"
        );

        let c = ticket_commit(&work, &names[(n * 11 + 3) % files], merges + n);
        let t = Instant::now();
        git(&repo, &["merge", "-q", "--ff-only", &c]);
        reference.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        "",
        "the main worktree is clean"
    );
    yoi.sort_by(|a, b| a.partial_cmp(b).unwrap());
    reference.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{files} files, {merges} merges each: yoi plan_merge + land p50 {:.2} ms, p95 {:.2} ms; `git merge --ff-only` p50 {:.2} ms, p95 {:.2} ms",
        pct(&yoi, 0.5),
        pct(&yoi, 0.95),
        pct(&reference, 0.5),
        pct(&reference, 0.95)
    );
}
