mod common;

use common::{git, small_repo};
use yoi_git::{
    add_worktree, branch_exists, create_branch, delete_branch, delete_ref_at, delete_refs_under,
    discover, list_branches, refs_under_at, resolve_commit, BranchOutcome, GitError,
};

#[test]
fn discover_finds_the_workdir_and_branch_from_a_subfolder() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "trunk"]);
    let sub = dir.path().join("a/b");
    std::fs::create_dir_all(&sub).unwrap();
    let info = discover(&sub).unwrap();
    assert_eq!(common::canon(&info.workdir), common::canon(dir.path()));
    assert_eq!(info.branch.as_deref(), Some("trunk"));
}

#[test]
fn discover_refuses_a_plain_folder() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        discover(dir.path()),
        Err(GitError::NotARepository { .. })
    ));
}

#[test]
fn resolve_commit_agrees_with_git_rev_parse() {
    let (_dir, repo, head) = small_repo();
    git(&repo, &["branch", "side"]);
    assert_eq!(resolve_commit(&repo, "main").unwrap(), head);
    assert_eq!(resolve_commit(&repo, "refs/heads/side").unwrap(), head);
    assert_eq!(resolve_commit(&repo, "HEAD").unwrap(), head);
    assert_eq!(resolve_commit(&repo, &head).unwrap(), head);
}

#[test]
fn resolve_commit_names_an_unknown_ref() {
    let (_dir, repo, _) = small_repo();
    let err = resolve_commit(&repo, "no-such-branch").unwrap_err();
    match &err {
        GitError::UnknownRev { rev, .. } => assert_eq!(rev, "no-such-branch"),
        other => panic!("expected UnknownRev, got {other:?}"),
    }
    assert!(err.to_string().contains("no-such-branch"));
}

#[test]
fn create_branch_points_the_new_branch_at_the_commit() {
    let (_dir, repo, head) = small_repo();
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "second"]);
    assert_eq!(
        create_branch(&repo, "yoi/1-work", &head).unwrap(),
        BranchOutcome::Created
    );
    assert_eq!(
        git(&repo, &["rev-parse", "refs/heads/yoi/1-work"]).trim(),
        head
    );
}

#[test]
fn create_branch_reuses_a_free_branch_at_the_same_commit() {
    let (_dir, repo, head) = small_repo();
    create_branch(&repo, "work", &head).unwrap();
    assert_eq!(
        create_branch(&repo, "work", &head).unwrap(),
        BranchOutcome::Reused
    );
}

#[test]
fn create_branch_refuses_an_existing_branch_at_another_commit() {
    let (_dir, repo, base) = small_repo();
    git(&repo, &["branch", "work"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "second"]);
    let newer = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    match create_branch(&repo, "work", &newer).unwrap_err() {
        GitError::BranchExists {
            branch,
            points_at,
            wanted,
        } => {
            assert_eq!(branch, "work");
            assert_eq!(points_at, base);
            assert_eq!(wanted, newer);
        }
        other => panic!("expected BranchExists, got {other:?}"),
    }
    assert_eq!(git(&repo, &["rev-parse", "work"]).trim(), base);
}

#[test]
fn create_branch_refuses_a_branch_checked_out_in_a_worktree() {
    let (dir, repo, head) = small_repo();
    create_branch(&repo, "work", &head).unwrap();
    let wt = dir.path().join("wt");
    add_worktree(&repo, &wt, "work").unwrap();
    match create_branch(&repo, "work", &head).unwrap_err() {
        GitError::BranchCheckedOut {
            branch,
            points_at,
            worktrees,
        } => {
            assert_eq!(branch, "work");
            assert_eq!(points_at, head);
            let worktrees: Vec<_> = worktrees.iter().map(|p| common::canon(p)).collect();
            assert_eq!(worktrees, vec![common::canon(&wt)]);
        }
        other => panic!("expected BranchCheckedOut, got {other:?}"),
    }
}

#[test]
fn create_branch_refuses_the_branch_checked_out_in_the_main_worktree() {
    let (_dir, repo, head) = small_repo();
    assert!(matches!(
        create_branch(&repo, "main", &head),
        Err(GitError::BranchCheckedOut { .. })
    ));
}

#[test]
fn create_branch_rejects_invalid_names_and_unknown_commits() {
    let (_dir, repo, head) = small_repo();
    assert!(matches!(
        create_branch(&repo, "bad..name", &head),
        Err(GitError::InvalidBranchName { .. })
    ));
    assert!(matches!(
        create_branch(&repo, "ok", &"0".repeat(40)),
        Err(GitError::UnknownRev { .. })
    ));
    assert!(git(&repo, &["branch", "--list", "ok"]).trim().is_empty());
}

#[test]
fn delete_branch_removes_a_free_branch_at_the_expected_commit() {
    let (_dir, repo, head) = small_repo();
    create_branch(&repo, "yoi/t-1", &head).unwrap();
    delete_branch(&repo, "yoi/t-1", &head).unwrap();
    assert_eq!(git(&repo, &["branch", "--list", "yoi/t-1"]), "");
    let err = delete_branch(&repo, "yoi/t-1", &head).unwrap_err();
    assert!(matches!(err, GitError::UnknownBranch { .. }), "{err}");
}

#[test]
fn delete_branch_keeps_a_moved_or_checked_out_branch() {
    let (dir, repo, head) = small_repo();
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "second"]);
    let second = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    create_branch(&repo, "moved", &second).unwrap();
    let err = delete_branch(&repo, "moved", &head).unwrap_err();
    assert!(matches!(err, GitError::BranchMoved { .. }), "{err}");
    create_branch(&repo, "busy", &head).unwrap();
    add_worktree(&repo, &dir.path().join("wt"), "busy").unwrap();
    let err = delete_branch(&repo, "busy", &head).unwrap_err();
    assert!(matches!(err, GitError::BranchCheckedOut { .. }), "{err}");
    assert_ne!(git(&repo, &["branch", "--list", "moved"]), "");
    assert_ne!(git(&repo, &["branch", "--list", "busy"]), "");
}

#[test]
fn list_branches_agrees_with_git_branch_list_and_filters_by_prefix() {
    let (_dir, repo, head) = small_repo();
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "second"]);
    let second = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    create_branch(&repo, "yoi/01B-b", &head).unwrap();
    git(&repo, &["branch", "yoi/01A-a"]);
    git(&repo, &["branch", "feature"]);
    git(&repo, &["pack-refs", "--all"]);
    git(&repo, &["branch", "yoi/01C-c", &head]);

    let all = list_branches(&repo, "").unwrap();
    let names: Vec<&str> = all.iter().map(|b| b.name.as_str()).collect();
    let from_git = git(&repo, &["branch", "--list", "--format=%(refname:short)"]);
    let mut expected: Vec<&str> = from_git.lines().collect();
    expected.sort();
    assert_eq!(names, expected);
    assert_eq!(
        names,
        ["feature", "main", "yoi/01A-a", "yoi/01B-b", "yoi/01C-c"]
    );

    let ours = list_branches(&repo, "yoi/").unwrap();
    let pairs: Vec<(&str, &str)> = ours
        .iter()
        .map(|b| (b.name.as_str(), b.head.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("yoi/01A-a", second.as_str()),
            ("yoi/01B-b", head.as_str()),
            ("yoi/01C-c", head.as_str()),
        ]
    );
}

#[test]
fn branch_exists_sees_loose_and_packed_branches_only() {
    let (_dir, repo, head) = small_repo();
    create_branch(&repo, "yoi/01A-a", &head).unwrap();
    git(&repo, &["branch", "packed"]);
    git(&repo, &["pack-refs", "--all"]);
    git(&repo, &["tag", "v1"]);
    assert!(branch_exists(&repo, "yoi/01A-a").unwrap());
    assert!(branch_exists(&repo, "packed").unwrap());
    assert!(branch_exists(&repo, "main").unwrap());
    assert!(
        !branch_exists(&repo, "v1").unwrap(),
        "a tag is not a branch"
    );
    assert!(!branch_exists(&repo, "yoi/01A").unwrap());
    assert!(matches!(
        branch_exists(&repo, "-bad"),
        Err(GitError::InvalidBranchName { .. })
    ));
}

#[test]
fn list_branches_of_a_repository_without_commits_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    assert!(list_branches(dir.path(), "").unwrap().is_empty());
    assert!(!branch_exists(dir.path(), "main").unwrap());
}

#[test]
fn a_ref_listed_at_a_commit_is_deleted_only_while_it_still_names_it() {
    let (_dir, repo, head) = small_repo();
    let name = "refs/yoi/attempts/T1/1.1";
    git(&repo, &["update-ref", name, &head]);
    let listed = refs_under_at(&repo, "refs/yoi/attempts/").unwrap();
    assert_eq!(listed, vec![(name.to_string(), head.clone())]);
    // A push to the name after the look: the deletion judged on the look leaves it.
    std::fs::write(repo.join("more.txt"), "more\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "newer"]);
    let newer = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    git(&repo, &["update-ref", name, &newer]);
    assert!(!delete_ref_at(&repo, name, &head).unwrap());
    assert_eq!(git(&repo, &["rev-parse", name]).trim(), newer);
    // At the value it names, it goes; gone, nothing is deleted; a branch is refused.
    assert!(delete_ref_at(&repo, name, &newer).unwrap());
    assert!(refs_under_at(&repo, "refs/yoi/").unwrap().is_empty());
    assert!(!delete_ref_at(&repo, name, &newer).unwrap());
    assert!(delete_ref_at(&repo, "refs/heads/main", &newer).is_err());
}

#[test]
fn delete_refs_under_clears_one_tickets_attempt_refs_and_refuses_branches() {
    let (_dir, repo, head) = small_repo();
    for r in [
        "refs/yoi/attempts/T1/1.1",
        "refs/yoi/attempts/T1/2.2",
        "refs/yoi/attempts/T12/1.1",
    ] {
        git(&repo, &["update-ref", r, &head]);
    }
    assert_eq!(
        delete_refs_under(&repo, "refs/yoi/attempts/T1/").unwrap(),
        2
    );
    let left = git(&repo, &["for-each-ref", "--format=%(refname)", "refs/yoi/"]);
    assert_eq!(
        left.trim(),
        "refs/yoi/attempts/T12/1.1",
        "another ticket's ref stays"
    );
    assert_eq!(
        delete_refs_under(&repo, "refs/yoi/attempts/T1/").unwrap(),
        0
    );
    for bad in ["refs/heads/", "refs/tags/", "HEAD", "refs/yoi/attempts/T12"] {
        assert!(delete_refs_under(&repo, bad).is_err(), "{bad}");
    }
    assert!(branch_exists(&repo, "main").unwrap());
}
