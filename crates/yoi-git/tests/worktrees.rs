mod common;

use std::path::Path;

use common::{canon, git, git_worktrees, large_repo, small_repo};
use yoi_git::{
    add_worktree, create_branch, is_dirty, list_worktrees, list_worktrees_with, prune_worktrees,
    remove_worktree, uncommitted_changes, GitError, StatusOf,
};

fn start(repo: &Path, head: &str, wt: &Path, branch: &str) {
    create_branch(repo, branch, head).unwrap();
    add_worktree(repo, wt, branch).unwrap();
}

#[test]
fn add_worktree_is_seen_by_git_as_a_clean_checkout_of_the_branch() {
    let (dir, repo, head) = small_repo();
    let wt = dir.path().join("wt");
    start(&repo, &head, &wt, "yoi/1-work");

    let listed = git_worktrees(&repo);
    assert_eq!(listed.len(), 2);
    assert_eq!(canon(&listed[1].0), canon(&wt));
    assert_eq!(listed[1].1.as_deref(), Some("refs/heads/yoi/1-work"));
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(git(&wt, &["rev-parse", "HEAD"]).trim(), head);
    assert_eq!(git(&repo, &["rev-parse", "yoi/1-work"]).trim(), head);

    // The administrative files git itself writes.
    let dot_git = std::fs::read_to_string(wt.join(".git")).unwrap();
    let admin = Path::new(dot_git.trim().strip_prefix("gitdir: ").unwrap()).to_path_buf();
    assert_eq!(
        canon(admin.parent().unwrap()),
        canon(&repo.join(".git/worktrees"))
    );
    for file in ["HEAD", "commondir", "gitdir", "index"] {
        assert!(admin.join(file).is_file(), "{file} missing");
    }
    assert_eq!(
        std::fs::read_to_string(admin.join("HEAD")).unwrap().trim(),
        "ref: refs/heads/yoi/1-work"
    );
}

#[test]
fn add_worktree_checks_out_executables_and_symlinks() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, repo, head) = small_repo();
    let wt = dir.path().join("wt");
    start(&repo, &head, &wt, "work");
    let mode = std::fs::metadata(wt.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(mode & 0o111, 0, "run.sh lost its executable bit");
    let link = std::fs::symlink_metadata(wt.join("link")).unwrap();
    assert!(link.file_type().is_symlink());
    assert_eq!(
        std::fs::read_link(wt.join("link")).unwrap(),
        Path::new("README.md")
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("src/deep/a.rs")).unwrap(),
        "fn a() {}\n"
    );
}

#[test]
fn add_worktree_refuses_an_unknown_branch_and_an_occupied_folder() {
    let (dir, repo, head) = small_repo();
    let wt = dir.path().join("wt");
    assert!(matches!(
        add_worktree(&repo, &wt, "nope"),
        Err(GitError::UnknownBranch { .. })
    ));
    assert!(!wt.exists());
    std::fs::create_dir(&wt).unwrap();
    std::fs::write(wt.join("keep.txt"), "mine").unwrap();
    create_branch(&repo, "work", &head).unwrap();
    assert!(matches!(
        add_worktree(&repo, &wt, "work"),
        Err(GitError::DestinationExists { .. })
    ));
    assert_eq!(
        std::fs::read_to_string(wt.join("keep.txt")).unwrap(),
        "mine"
    );
    assert_eq!(git_worktrees(&repo).len(), 1);
}

#[test]
fn add_worktree_refuses_a_branch_checked_out_elsewhere() {
    let (dir, repo, head) = small_repo();
    start(&repo, &head, &dir.path().join("wt1"), "work");
    assert!(matches!(
        add_worktree(&repo, &dir.path().join("wt2"), "work"),
        Err(GitError::BranchCheckedOut { .. })
    ));
    assert!(!dir.path().join("wt2").exists());
}

#[test]
fn list_worktrees_reports_path_branch_head_and_dirtiness() {
    let (dir, repo, head) = small_repo();
    let wt = dir.path().join("wt");
    start(&repo, &head, &wt, "work");
    std::fs::write(wt.join("README.md"), "changed\n").unwrap();

    let list = list_worktrees(&repo).unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(canon(&list[0].path), canon(&repo));
    assert_eq!(list[0].branch.as_deref(), Some("main"));
    assert_eq!(list[0].head.as_deref(), Some(head.as_str()));
    assert_eq!(list[0].dirty, Some(false));
    assert_eq!(canon(&list[1].path), canon(&wt));
    assert_eq!(list[1].branch.as_deref(), Some("work"));
    assert_eq!(list[1].head.as_deref(), Some(head.as_str()));
    assert_eq!(list[1].dirty, Some(true));
    assert!(!list[0].prunable && !list[1].prunable);
}

#[test]
fn a_listing_reads_the_status_only_of_the_worktrees_asked_for() {
    let (dir, repo, head) = small_repo();
    let wt = dir.path().join("wt");
    start(&repo, &head, &wt, "work");
    std::fs::write(wt.join("README.md"), "changed\n").unwrap();
    std::fs::write(repo.join("README.md"), "changed in main\n").unwrap();

    let all = list_worktrees(&repo).unwrap();
    assert_eq!((all[0].dirty, all[1].dirty), (Some(true), Some(true)));
    let linked = list_worktrees_with(&repo, StatusOf::Linked).unwrap();
    assert_eq!((linked[0].dirty, linked[1].dirty), (None, Some(true)));
    let bare = list_worktrees_with(&repo, StatusOf::Nothing).unwrap();
    assert_eq!((bare[0].dirty, bare[1].dirty), (None, None));
    // Everything but the status is the same in each.
    for list in [&linked, &bare] {
        let strip = |l: &[yoi_git::WorktreeInfo]| -> Vec<_> {
            l.iter()
                .map(|w| (canon(&w.path), w.branch.clone(), w.head.clone(), w.prunable))
                .collect()
        };
        assert_eq!(strip(list), strip(&all));
    }
}

#[test]
fn list_worktrees_marks_a_worktree_whose_folder_is_gone_as_prunable_like_git() {
    let (dir, repo, head) = small_repo();
    let gone = dir.path().join("gone");
    let locked = dir.path().join("locked");
    start(&repo, &head, &gone, "a");
    start(&repo, &head, &locked, "b");
    git(&repo, &["worktree", "lock", locked.to_str().unwrap()]);
    std::fs::remove_dir_all(&gone).unwrap();
    std::fs::remove_dir_all(&locked).unwrap();

    let list = list_worktrees(&repo).unwrap();
    assert_eq!(list.len(), 3);
    let by_branch = |b: &str| {
        list.iter()
            .find(|w| w.branch.as_deref() == Some(b))
            .unwrap()
    };
    assert!(by_branch("a").prunable);
    assert_eq!(by_branch("a").dirty, None);
    assert!(
        !by_branch("b").prunable,
        "a locked worktree is never prunable"
    );
    // git agrees: its own prune drops exactly the unlocked one.
    git(&repo, &["worktree", "prune"]);
    let left: Vec<_> = git_worktrees(&repo).into_iter().map(|(_, b)| b).collect();
    assert_eq!(
        left,
        [
            Some("refs/heads/main".to_string()),
            Some("refs/heads/b".to_string())
        ]
    );
}

#[test]
fn uncommitted_changes_lists_what_git_status_reports() {
    let (dir, repo, head) = small_repo();
    let wt = dir.path().join("wt");
    start(&repo, &head, &wt, "work");
    assert!(uncommitted_changes(&wt).unwrap().is_empty());
    std::fs::write(wt.join("README.md"), "changed\n").unwrap();
    std::fs::create_dir_all(wt.join("new/deeper")).unwrap();
    std::fs::write(wt.join("new/deeper/x.txt"), "x").unwrap();
    std::fs::write(wt.join("new/y.txt"), "y").unwrap();
    let changes = uncommitted_changes(&wt).unwrap();
    assert_eq!(changes, ["README.md", "new"]);
    let porcelain = git(&wt, &["status", "--porcelain"]);
    let from_git: Vec<&str> = porcelain
        .lines()
        .map(|l| l[3..].trim_end_matches('/'))
        .collect();
    assert_eq!(changes, from_git);
}

#[test]
fn is_dirty_sees_modified_staged_and_untracked_files() {
    let (dir, repo, head) = small_repo();
    let wt = dir.path().join("wt");
    start(&repo, &head, &wt, "work");
    assert!(!is_dirty(&wt).unwrap());

    std::fs::write(wt.join("new.txt"), "x").unwrap();
    assert!(is_dirty(&wt).unwrap(), "untracked file");
    std::fs::remove_file(wt.join("new.txt")).unwrap();
    assert!(!is_dirty(&wt).unwrap());

    std::fs::write(wt.join("src/deep/a.rs"), "changed").unwrap();
    assert!(is_dirty(&wt).unwrap(), "modified file");
    git(&wt, &["add", "src/deep/a.rs"]);
    assert!(is_dirty(&wt).unwrap(), "staged file");
}

#[test]
fn remove_worktree_refuses_a_dirty_worktree_and_names_what_is_dirty() {
    let (dir, repo, head) = small_repo();
    let wt = dir.path().join("wt");
    start(&repo, &head, &wt, "work");
    std::fs::write(wt.join("README.md"), "changed\n").unwrap();
    std::fs::write(wt.join("notes.txt"), "x").unwrap();

    match remove_worktree(&repo, &wt, false).unwrap_err() {
        GitError::Dirty { changes, .. } => {
            assert_eq!(
                changes,
                vec!["README.md".to_string(), "notes.txt".to_string()]
            );
        }
        other => panic!("expected Dirty, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(wt.join("notes.txt")).unwrap(), "x");
    assert_eq!(git_worktrees(&repo).len(), 2);

    remove_worktree(&repo, &wt, true).unwrap();
    assert!(!wt.exists());
    assert_eq!(git_worktrees(&repo).len(), 1);
}

#[test]
fn remove_worktree_removes_a_clean_worktree_and_keeps_its_branch() {
    let (dir, repo, head) = small_repo();
    let wt = dir.path().join("wt");
    start(&repo, &head, &wt, "work");
    remove_worktree(&repo, &wt, false).unwrap();
    assert!(!wt.exists());
    assert_eq!(git_worktrees(&repo).len(), 1);
    assert_eq!(git(&repo, &["rev-parse", "work"]).trim(), head);
    // The branch is free again.
    add_worktree(&repo, &wt, "work").unwrap();
}

#[test]
fn remove_worktree_refuses_the_main_worktree_and_strangers() {
    let (dir, repo, _) = small_repo();
    assert!(matches!(
        remove_worktree(&repo, &repo, true),
        Err(GitError::NotAWorktree { .. })
    ));
    let stranger = dir.path().join("stranger");
    std::fs::create_dir(&stranger).unwrap();
    assert!(matches!(
        remove_worktree(&repo, &stranger, true),
        Err(GitError::NotAWorktree { .. })
    ));
    assert!(stranger.exists());
    assert!(repo.join("README.md").exists());
}

#[test]
fn prune_worktrees_forgets_worktrees_whose_folder_is_gone() {
    let (dir, repo, head) = small_repo();
    let gone = dir.path().join("gone");
    let kept = dir.path().join("kept");
    start(&repo, &head, &gone, "a");
    start(&repo, &head, &kept, "b");
    std::fs::remove_dir_all(&gone).unwrap();

    let pruned = prune_worktrees(&repo).unwrap();
    assert_eq!(pruned.len(), 1);
    let listed: Vec<_> = git_worktrees(&repo).into_iter().map(|(p, _)| p).collect();
    assert_eq!(listed.len(), 2);
    assert_eq!(canon(&listed[1]), canon(&kept));
    // Branch `a` is free again for a new worktree.
    add_worktree(&repo, &gone, "a").unwrap();
}

#[test]
fn worktree_of_a_5000_file_repository_matches_the_base_tree_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let head = large_repo(&repo, 5000);
    let wt = dir.path().join("wt");
    start(&repo, &head, &wt, "big");

    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    // Index entries (mode, blob, path) equal the commit's tree entries.
    let tree: Vec<String> = git(&repo, &["ls-tree", "-r", &head])
        .lines()
        .map(|l| {
            let (meta, path) = l.split_once('\t').unwrap();
            let parts: Vec<_> = meta.split(' ').collect();
            format!("{} {}\t{path}", parts[0], parts[2])
        })
        .collect();
    let index: Vec<String> = git(&wt, &["ls-files", "-s"])
        .lines()
        .map(|l| {
            let (meta, path) = l.split_once('\t').unwrap();
            let parts: Vec<_> = meta.split(' ').collect();
            format!("{} {}\t{path}", parts[0], parts[1])
        })
        .collect();
    assert_eq!(tree.len(), 5002);
    assert_eq!(index, tree);
    assert!(tree
        .iter()
        .any(|l| l.starts_with("100755 ") && l.ends_with("bin/tool.sh")));
    assert!(tree
        .iter()
        .any(|l| l.starts_with("120000 ") && l.ends_with("\tlatest")));

    // The files on disk carry those modes.
    use std::os::unix::fs::PermissionsExt;
    let tool = std::fs::metadata(wt.join("bin/tool.sh")).unwrap();
    assert_ne!(tool.permissions().mode() & 0o111, 0);
    let plain = std::fs::metadata(wt.join("d3/e4/f2/file243.txt")).unwrap();
    assert_eq!(plain.permissions().mode() & 0o111, 0);
    assert!(std::fs::symlink_metadata(wt.join("latest"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(wt.join("d3/e4/f2/file243.txt")).unwrap(),
        "content 243\n"
    );
}

#[test]
fn detached_at_tells_a_missing_folder_a_branch_and_another_commit_apart() {
    let (dir, repo, head) = small_repo();
    let wt = dir.path().join("wt");
    yoi_git::add_worktree_detached(&repo, &wt, &head).unwrap();
    assert_eq!(yoi_git::detached_at(&wt, &head), Ok(()));
    assert_eq!(
        yoi_git::detached_at(&dir.path().join("nowhere"), &head),
        Err(yoi_git::NotDetachedAt::Missing)
    );
    // A commit made in the folder moves its HEAD away from the commit it was handed at.
    std::fs::write(wt.join("late.txt"), "late\n").unwrap();
    git(&wt, &["add", "late.txt"]);
    git(&wt, &["commit", "-qm", "late"]);
    let moved = git(&wt, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(
        yoi_git::detached_at(&wt, &head),
        Err(yoi_git::NotDetachedAt::Elsewhere {
            branch: None,
            head: Some(moved)
        })
    );
    // On a branch, even at the right commit, it is not detached.
    let on_branch = dir.path().join("on-branch");
    start(&repo, &head, &on_branch, "yoi/2-work");
    assert!(matches!(
        yoi_git::detached_at(&on_branch, &head),
        Err(yoi_git::NotDetachedAt::Elsewhere { branch: Some(b), .. }) if b == "yoi/2-work"
    ));
}
