//! Landing a fast-forward on a target branch that the main worktree has checked out, checked
//! against what the git CLI says about the result.

mod common;

use common::{git, small_repo};
use yoi_git::{changed_paths, land, plan_merge, Landed, MergePlan};

/// A work commit on branch `work` (made in a linked worktree): modifies, adds, deletes, adds an
/// executable and a file under `.yoi/`. Returns its id.
fn work_commit(repo: &std::path::Path) -> String {
    let wt = repo.parent().unwrap().join("work");
    git(
        repo,
        &["worktree", "add", "-q", "-b", "work", wt.to_str().unwrap()],
    );
    std::fs::write(wt.join("README.md"), "hello, merged\n").unwrap();
    std::fs::create_dir_all(wt.join("new/deeper")).unwrap();
    std::fs::write(wt.join("new/deeper/b.txt"), "b\n").unwrap();
    std::fs::remove_file(wt.join("src/deep/a.rs")).unwrap();
    std::fs::write(wt.join("tool"), "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(wt.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(wt.join(".yoi/skills")).unwrap();
    std::fs::write(wt.join(".yoi/skills/x.md"), "x\n").unwrap();
    git(&wt, &["add", "-A"]);
    git(&wt, &["commit", "-q", "-m", "work"]);
    let c = git(&wt, &["rev-parse", "HEAD"]).trim().to_string();
    git(repo, &["worktree", "remove", wt.to_str().unwrap()]);
    c
}

#[test]
fn a_fast_forward_lands_and_brings_the_checked_out_main_worktree_along_clean() {
    let (_dir, repo, base) = small_repo();
    let c = work_commit(&repo);
    let changed = changed_paths(&repo, &base, &c).unwrap();
    assert_eq!(
        changed,
        [
            ".yoi/skills/x.md",
            "README.md",
            "new/deeper/b.txt",
            "src/deep/a.rs",
            "tool"
        ]
    );
    let plan = plan_merge(&repo, "main", &c).unwrap();
    assert_eq!(
        plan,
        MergePlan::FastForward {
            before: base.clone(),
            after: c.clone(),
            changed: changed.clone()
        }
    );
    // An unrelated uncommitted change in the main worktree does not stop the merge and is kept.
    std::fs::write(repo.join("run.sh"), "#!/bin/sh\necho mine\n").unwrap();
    let landed = land(&repo, "main", &base, &c, &changed, &[]).unwrap();
    assert!(
        matches!(landed, Landed::Moved { ref worktrees } if worktrees.len() == 1),
        "{landed:?}"
    );
    assert_eq!(git(&repo, &["rev-parse", "main"]).trim(), c);
    // The index is the merged tree, also to git's tree cache (which `git commit` wrote there).
    assert_eq!(
        git(&repo, &["write-tree"]).trim(),
        git(&repo, &["rev-parse", &format!("{c}^{{tree}}")]).trim()
    );
    // git sees exactly the person's own change, nothing of the merge.
    assert_eq!(git(&repo, &["status", "--porcelain"]), " M run.sh\n");
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).unwrap(),
        "hello, merged\n"
    );
    assert!(!repo.join("src/deep/a.rs").exists() && !repo.join("src/deep").exists());
    assert_eq!(
        git(&repo, &["ls-files", "-s", "tool"]).split(' ').next(),
        Some("100755")
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("run.sh")).unwrap(),
        "#!/bin/sh\necho mine\n"
    );
    // Already in: nothing to do.
    assert_eq!(
        plan_merge(&repo, "main", &base).unwrap(),
        MergePlan::AlreadyMerged { before: c }
    );
}

#[test]
fn a_dirty_path_the_merge_changes_defers_it_and_nothing_is_written() {
    let (_dir, repo, base) = small_repo();
    let c = work_commit(&repo);
    let changed = changed_paths(&repo, &base, &c).unwrap();
    std::fs::write(repo.join("README.md"), "my edit\n").unwrap();
    // An untracked file exactly where the merge writes one blocks it; one beside it does not.
    std::fs::create_dir_all(repo.join("new/deeper")).unwrap();
    std::fs::write(repo.join("new/deeper/b.txt"), "mine\n").unwrap();
    std::fs::write(repo.join("new/mine.txt"), "mine\n").unwrap();
    // A staged change counts too, even when the file on disk is back as committed.
    std::fs::write(repo.join("run.sh"), "staged\n").unwrap();
    git(&repo, &["add", "run.sh"]);
    let landed = land(&repo, "main", &base, &c, &changed, &[]).unwrap();
    assert_eq!(
        landed,
        Landed::Deferred {
            worktree: repo.clone(),
            dirty: vec!["README.md".into(), "new/deeper/b.txt".into()]
        }
    );
    assert_eq!(git(&repo, &["rev-parse", "main"]).trim(), base);
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).unwrap(),
        "my edit\n"
    );
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        " M README.md\nM  run.sh\n?? new/\n"
    );
}

#[test]
fn a_target_moved_by_someone_else_is_refused_by_compare_and_swap() {
    let (_dir, repo, base) = small_repo();
    let c = work_commit(&repo);
    let changed = changed_paths(&repo, &base, &c).unwrap();
    std::fs::write(repo.join("other.txt"), "theirs\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "theirs"]);
    let theirs = git(&repo, &["rev-parse", "main"]).trim().to_string();
    assert!(land(&repo, "main", &base, &c, &changed, &[]).is_err());
    assert_eq!(git(&repo, &["rev-parse", "main"]).trim(), theirs);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert_eq!(
        plan_merge(&repo, "main", &c).unwrap(),
        MergePlan::Diverged { before: theirs }
    );
}

#[test]
fn paths_under_yoi_are_never_written_into_a_worktree() {
    let (_dir, repo, base) = small_repo();
    let c = work_commit(&repo);
    let changed = changed_paths(&repo, &base, &c).unwrap();
    land(&repo, "main", &base, &c, &changed, &[".yoi/"]).unwrap();
    assert!(!repo.join(".yoi/skills/x.md").exists());
    assert_eq!(git(&repo, &["rev-parse", "main"]).trim(), c);
}

#[test]
fn a_staged_change_in_a_path_the_merge_changes_defers_it() {
    let (_dir, repo, base) = small_repo();
    let c = work_commit(&repo);
    let changed = changed_paths(&repo, &base, &c).unwrap();
    std::fs::write(repo.join("README.md"), "staged edit\n").unwrap();
    git(&repo, &["add", "README.md"]);
    // Back on disk as committed; the index still holds the edit.
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    let landed = land(&repo, "main", &base, &c, &changed, &[]).unwrap();
    assert!(
        matches!(&landed, Landed::Deferred { dirty, .. } if dirty == &["README.md".to_string()]),
        "{landed:?}"
    );
    assert_eq!(git(&repo, &["rev-parse", "main"]).trim(), base);
}
