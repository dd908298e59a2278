//! Worktrees that leave yoi's ticket files out, and moving a pristine worktree from commit to
//! commit in place, checked against what the git CLI says about the result.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::{git, small_repo};
use yoi_git::{
    add_worktree_sparse, commit_all, discard_worktree, head_of, remove_worktree, reset_detached,
    uncommitted_changes, Identity, Reset,
};

const LEAVE_OUT: &[&str] = &[".yoi/tickets/"];

/// Something done to a worktree that makes it differ from its commit.
type Spoil = dyn Fn(&Path);

fn who() -> Identity {
    Identity {
        name: "yoi pod".into(),
        email: "pod@yoi.invalid".into(),
        time_secs: 1_700_000_000,
    }
}

/// Commit `files` (path, content; `None` deletes) on `main` in `repo` and return the commit id.
fn commit_on_main(repo: &Path, files: &[(&str, Option<&str>)], message: &str) -> String {
    for (path, content) in files {
        let full = repo.join(path);
        match content {
            Some(c) => {
                std::fs::create_dir_all(full.parent().unwrap()).unwrap();
                std::fs::write(&full, c).unwrap();
            }
            None => std::fs::remove_file(&full).unwrap(),
        }
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", message]);
    git(repo, &["rev-parse", "HEAD"]).trim().to_string()
}

/// The small repository plus two tickets' files under `.yoi/tickets/` and a workspace file.
fn repo_with_tickets() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let (dir, repo, _) = small_repo();
    let base = commit_on_main(
        &repo,
        &[
            (".yoi/workspace.toml", Some("[workspace]\n")),
            (".yoi/tickets/T1/item.md", Some("---\nid: T1\n---\n")),
            (".yoi/tickets/T1/thread.md", Some("one\n")),
            (".yoi/tickets/T2/item.md", Some("---\nid: T2\n---\n")),
        ],
        "tickets",
    );
    (dir, repo, base)
}

#[test]
fn a_sparse_worktree_leaves_ticket_files_out_and_reads_clean_to_git_and_yoi() {
    let (dir, repo, base) = repo_with_tickets();
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();

    assert!(!wt.join(".yoi/tickets").exists(), "ticket files left out");
    assert_eq!(
        std::fs::read_to_string(wt.join(".yoi/workspace.toml")).unwrap(),
        "[workspace]\n"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("src/deep/a.rs")).unwrap(),
        "fn a() {}\n"
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(uncommitted_changes(&wt).unwrap(), Vec::<String>::new());
    // git marks them skip-worktree (`S`), every other entry is a normal cached one (`H`).
    let flags = git(&wt, &["ls-files", "-v"]);
    for line in flags.lines() {
        let skipped = line.contains(".yoi/tickets/");
        assert_eq!(line.starts_with("S "), skipped, "{line}");
    }
    assert_eq!(flags.lines().filter(|l| l.starts_with("S ")).count(), 3);
    assert_eq!(head_of(&wt).unwrap(), base);
}

#[test]
fn commits_in_a_sparse_worktree_keep_the_left_out_files_and_the_tree_stays_clean() {
    let (dir, repo, base) = repo_with_tickets();
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();

    std::fs::write(wt.join("README.md"), "changed\n").unwrap();
    let first = commit_all(&wt, "pod", &who()).unwrap().expect("a commit");
    // A second round: still clean in between, and the ticket files survive both commits.
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    std::fs::write(wt.join("new.txt"), "new\n").unwrap();
    git(&wt, &["add", "-A"]);
    git(
        &wt,
        &[
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@a.invalid",
            "commit",
            "-q",
            "-m",
            "agent",
        ],
    );
    let second = head_of(&wt).unwrap();
    assert_ne!(first, second);
    assert_eq!(
        git(&repo, &["diff", "--name-only", &base, &second]),
        "README.md\nnew.txt\n"
    );
    assert_eq!(
        git(
            &repo,
            &["show", &format!("{second}:.yoi/tickets/T1/thread.md")]
        ),
        "one\n"
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(commit_all(&wt, "nothing", &who()).unwrap(), None);
}

#[test]
fn a_pristine_worktree_moves_to_another_commit_writing_only_what_differs() {
    let (dir, repo, base) = repo_with_tickets();
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();
    let untouched_inode = std::fs::metadata(wt.join("src/deep/a.rs")).unwrap().ino();
    let next = commit_on_main(
        &repo,
        &[
            ("README.md", Some("moved on\n")),
            ("run.sh", None),
            ("notes/new.md", Some("note\n")),
            (".yoi/tickets/T1/thread.md", Some("one\ntwo\n")),
            (".yoi/tickets/T3/item.md", Some("---\nid: T3\n---\n")),
        ],
        "next",
    );

    let reset = reset_detached(&wt, &next, LEAVE_OUT).unwrap();
    assert_eq!(reset, Reset::Moved { written: 5 });
    assert_eq!(head_of(&wt).unwrap(), next);
    assert_eq!(
        git(&wt, &["status", "--porcelain", "--branch"]),
        "## HEAD (no branch)\n"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "moved on\n"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("notes/new.md")).unwrap(),
        "note\n"
    );
    assert!(!wt.join("run.sh").exists());
    assert!(!wt.join(".yoi/tickets").exists());
    // Paths the move did not change were not rewritten.
    assert_eq!(
        std::fs::metadata(wt.join("src/deep/a.rs")).unwrap().ino(),
        untouched_inode
    );
    // The index is exactly the commit's tree, left-out entries included.
    assert_eq!(git(&wt, &["diff", "--cached", "--name-only", &next]), "");
    assert_eq!(
        git(&wt, &["ls-files", "-v", ".yoi/tickets"])
            .lines()
            .filter(|l| l.starts_with("S "))
            .count(),
        4
    );

    // And back again.
    assert_eq!(
        reset_detached(&wt, &base, LEAVE_OUT).unwrap(),
        Reset::Moved { written: 5 }
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "hello\n"
    );
    assert!(wt.join("run.sh").is_file());
    assert!(!wt.join("notes").exists(), "emptied folders go too");
}

#[test]
fn a_worktree_with_anything_uncommitted_or_ignored_is_not_moved() {
    let (dir, repo, _) = repo_with_tickets();
    let next = commit_on_main(&repo, &[("README.md", Some("moved on\n"))], "next");
    let ignore = commit_on_main(&repo, &[(".gitignore", Some("target/\n"))], "ignore");
    let cases: [(&str, &Spoil); 4] = [
        ("modified", &|wt| {
            std::fs::write(wt.join("src/deep/a.rs"), "x\n").unwrap()
        }),
        ("deleted", &|wt| {
            std::fs::remove_file(wt.join("src/deep/a.rs")).unwrap()
        }),
        ("untracked", &|wt| {
            std::fs::write(wt.join("out.txt"), "x\n").unwrap()
        }),
        ("ignored", &|wt| {
            std::fs::create_dir_all(wt.join("target")).unwrap();
            std::fs::write(wt.join("target/build.o"), "x\n").unwrap();
        }),
    ];
    for (i, (what, spoil)) in cases.iter().enumerate() {
        let wt = dir.path().join(format!("wt{i}"));
        add_worktree_sparse(&repo, &wt, &ignore, LEAVE_OUT).unwrap();
        spoil(&wt);
        let before = git(&wt, &["status", "--porcelain", "--ignored"]);
        let reset = reset_detached(&wt, &next, LEAVE_OUT).unwrap();
        assert!(
            matches!(&reset, Reset::NotPristine { paths } if !paths.is_empty()),
            "{what}: {reset:?}"
        );
        assert_eq!(head_of(&wt).unwrap(), ignore, "{what}: HEAD stays");
        assert_eq!(
            git(&wt, &["status", "--porcelain", "--ignored"]),
            before,
            "{what}: nothing touched"
        );
        remove_worktree(&repo, &wt, true).unwrap();
    }
}

#[test]
fn a_locked_half_made_or_dirty_worktree_is_discarded_with_its_record() {
    let (dir, repo, base) = repo_with_tickets();
    // Locked as a killed checkout leaves it, with untracked files.
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();
    git(
        &repo,
        &[
            "worktree",
            "lock",
            "--reason",
            "initializing",
            wt.to_str().unwrap(),
        ],
    );
    std::fs::write(wt.join("junk.txt"), "x\n").unwrap();
    assert!(
        remove_worktree(&repo, &wt, true).is_err(),
        "git's rules refuse it"
    );
    discard_worktree(&repo, &wt).unwrap();
    assert!(!wt.exists());
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 1);
    // A record whose folder is already gone, and a plain folder.
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();
    std::fs::remove_dir_all(&wt).unwrap();
    discard_worktree(&repo, &wt).unwrap();
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 1);
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();
    remove_worktree(&repo, &wt, false).unwrap();
    std::fs::create_dir_all(wt.join("sub")).unwrap();
    discard_worktree(&repo, &wt).unwrap();
    assert!(!wt.exists());
}
