//! Committing in a detached worktree and moving a work branch by compare-and-swap, checked
//! against what the git CLI says about the result.

mod common;

use common::{git, small_repo};
use yoi_git::{
    add_worktree_detached, changed_under, commit_all, commit_log, commits_between, create_branch,
    head_of, is_ancestor, move_branch, GitError, Identity,
};

fn who() -> Identity {
    Identity {
        name: "yoi pod".into(),
        email: "pod@yoi.invalid".into(),
        time_secs: 1_700_000_000,
    }
}

#[test]
fn commit_all_commits_modified_deleted_new_and_executable_files_and_leaves_the_tree_clean() {
    let (dir, repo, base) = small_repo();
    let wt = dir.path().join("wt");
    add_worktree_detached(&repo, &wt, &base).unwrap();
    assert_eq!(
        git(&wt, &["status", "--porcelain", "--branch"])
            .lines()
            .next(),
        Some("## HEAD (no branch)")
    );
    assert_eq!(commit_all(&wt, "nothing", &who()).unwrap(), None);

    std::fs::write(wt.join("README.md"), "changed\n").unwrap();
    std::fs::remove_file(wt.join("src/deep/a.rs")).unwrap();
    std::fs::create_dir_all(wt.join("new/dir")).unwrap();
    std::fs::write(wt.join("new/dir/b.txt"), "new\n").unwrap();
    std::fs::write(wt.join("tool"), "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(wt.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(wt.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(wt.join("debug.log"), "ignored\n").unwrap();

    let commit = commit_all(&wt, "yoi: the agent's leftovers", &who())
        .unwrap()
        .unwrap();
    assert_eq!(git(&wt, &["rev-parse", "HEAD"]).trim(), commit);
    assert_eq!(head_of(&wt).unwrap(), commit);
    assert_eq!(
        git(&wt, &["status", "--porcelain"]),
        "",
        "the worktree reads clean"
    );
    let files = git(&wt, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(files.contains("new/dir/b.txt") && files.contains("tool") && !files.contains("a.rs"));
    assert!(!files.contains("debug.log"), "ignored files stay out");
    assert!(git(&wt, &["ls-tree", "HEAD", "tool"]).starts_with("100755"));
    assert_eq!(
        git(&wt, &["show", "-s", "--format=%an <%ae> %s", "HEAD"]).trim(),
        "yoi pod <pod@yoi.invalid> yoi: the agent's leftovers"
    );
    // No branch moved: main is where it was.
    assert_eq!(git(&repo, &["rev-parse", "main"]).trim(), base);
    assert_eq!(commits_between(&repo, &base, &commit).unwrap(), 1);
}

#[test]
fn move_branch_only_forward_from_the_expected_head_and_never_a_checked_out_branch() {
    let (dir, repo, base) = small_repo();
    create_branch(&repo, "yoi/work", &base).unwrap();
    let wt = dir.path().join("wt");
    add_worktree_detached(&repo, &wt, &base).unwrap();
    std::fs::write(wt.join("x.txt"), "x\n").unwrap();
    let c1 = commit_all(&wt, "one", &who()).unwrap().unwrap();
    assert!(is_ancestor(&repo, &base, &c1).unwrap());
    assert!(!is_ancestor(&repo, &c1, &base).unwrap());

    // From a head it no longer has: refused, nothing moves.
    let err = move_branch(&repo, "yoi/work", &c1, &c1).unwrap_err();
    assert!(matches!(err, GitError::BranchMoved { .. }), "{err}");
    move_branch(&repo, "yoi/work", &base, &c1).unwrap();
    assert_eq!(git(&repo, &["rev-parse", "yoi/work"]).trim(), c1);

    // Not forward: a commit beside the branch is refused.
    let side = dir.path().join("side");
    add_worktree_detached(&repo, &side, &base).unwrap();
    std::fs::write(side.join("y.txt"), "y\n").unwrap();
    let sibling = commit_all(&side, "beside", &who()).unwrap().unwrap();
    let err = move_branch(&repo, "yoi/work", &c1, &sibling).unwrap_err();
    assert!(matches!(err, GitError::NotDescendant { .. }), "{err}");
    assert_eq!(git(&repo, &["rev-parse", "yoi/work"]).trim(), c1);

    // A checked-out branch is never moved under its worktree.
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            dir.path().join("on").to_str().unwrap(),
            "yoi/work",
        ],
    );
    std::fs::write(wt.join("z.txt"), "z\n").unwrap();
    let c2 = commit_all(&wt, "two", &who()).unwrap().unwrap();
    let err = move_branch(&repo, "yoi/work", &c1, &c2).unwrap_err();
    assert!(matches!(err, GitError::BranchCheckedOut { .. }), "{err}");
    assert_eq!(git(&repo, &["rev-parse", "yoi/work"]).trim(), c1);
}

#[test]
fn changed_under_names_each_changed_entry_of_a_folder() {
    let (dir, repo, base) = small_repo();
    let wt = dir.path().join("wt");
    add_worktree_detached(&repo, &wt, &base).unwrap();
    std::fs::create_dir_all(wt.join(".yoi/tickets/A")).unwrap();
    std::fs::write(wt.join(".yoi/tickets/A/item.md"), "x\n").unwrap();
    std::fs::write(wt.join("src/other.rs"), "y\n").unwrap();
    let c = commit_all(&wt, "touch tickets", &who()).unwrap().unwrap();
    assert_eq!(
        changed_under(&repo, &base, &c, ".yoi/tickets").unwrap(),
        [".yoi/tickets/A"]
    );
    assert_eq!(
        changed_under(&repo, &base, &c, "src").unwrap(),
        ["src/other.rs"]
    );
    assert!(changed_under(&repo, &base, &c, "docs").unwrap().is_empty());
}

#[test]
fn commit_log_lists_the_commits_since_a_base_newest_first_as_git_log_does() {
    let (dir, repo, base) = small_repo();
    let wt = dir.path().join("wt");
    add_worktree_detached(&repo, &wt, &base).unwrap();
    let mut made = Vec::new();
    for (i, summary) in ["first change", "second change", "third change"]
        .iter()
        .enumerate()
    {
        std::fs::write(wt.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
        let message = format!("{summary}\n\nA body that the listing leaves out.");
        made.push(commit_all(&wt, &message, &who()).unwrap().unwrap());
    }
    let head = made.last().unwrap().clone();
    let log = commit_log(&repo, &base, &head, 10).unwrap();
    let expected = git(
        &repo,
        &["log", "--format=%H %s", &format!("{base}..{head}")],
    );
    let got: Vec<String> = log
        .iter()
        .map(|c| format!("{} {}", c.id, c.summary))
        .collect();
    assert_eq!(got, expected.lines().collect::<Vec<_>>());
    assert!(log
        .iter()
        .all(|c| c.author == "yoi pod" && c.time == 1_700_000_000));
    assert_eq!(
        commit_log(&repo, &base, &head, 2).unwrap().len(),
        2,
        "at most the limit"
    );
    assert!(commit_log(&repo, &head, &head, 10).unwrap().is_empty());
    assert_eq!(commits_between(&repo, &base, &head).unwrap(), 3);
}
