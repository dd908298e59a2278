//! Worktrees that leave yoi's ticket files out, and moving a pristine worktree from commit to
//! commit in place, checked against what the git CLI says about the result.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::{git, small_repo};
use yoi_git::{
    add_worktree_detached, add_worktree_sparse, commit_all, discard_worktree, head_of, land,
    merge_three_way, plan_merge, remove_worktree, reset_detached, uncommitted_changes, Identity,
    Landed, MergePlan, Reset, ThreeWay,
};
use yoi_testkit::git_output;

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

    // README.md, run.sh and notes/new.md; the ticket folder is one entry, however much changed.
    let reset = reset_detached(&wt, &next, LEAVE_OUT).unwrap();
    assert_eq!(reset, Reset::Moved { written: 3 });
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
        Reset::Moved { written: 3 }
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

/// The small repository plus `n` tickets (`item.md`, `thread.md` each) and a workspace file.
fn repo_with_many_tickets(n: usize) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let (dir, repo, _) = small_repo();
    let mut files = vec![(
        ".yoi/workspace.toml".to_string(),
        "[workspace]\n".to_string(),
    )];
    for i in 0..n {
        files.push((
            format!(".yoi/tickets/T{i:02}/item.md"),
            format!("---\nid: T{i}\n---\n"),
        ));
        files.push((
            format!(".yoi/tickets/T{i:02}/thread.md"),
            format!("ticket {i}\n"),
        ));
    }
    let files: Vec<(&str, Option<&str>)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), Some(c.as_str())))
        .collect();
    let base = commit_on_main(&repo, &files, "tickets");
    (dir, repo, base)
}

/// The tree id of `rev:.yoi/tickets`, as git says.
fn tickets_tree(repo: &Path, rev: &str) -> String {
    git(repo, &["rev-parse", &format!("{rev}:.yoi/tickets")])
        .trim()
        .to_string()
}

/// Whether git exits with success for `args` in `dir`.
fn git_succeeds(dir: &Path, args: &[&str]) -> bool {
    git_output(dir, args).status.success()
}

/// `git fsck` finds nothing wrong and says nothing (dangling objects are no fault).
#[track_caller]
fn assert_fsck_clean(dir: &Path) {
    let out = git_output(dir, &["fsck", "--no-dangling", "--no-progress"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success() && said.is_empty(), "git fsck: {said}");
}

/// The entries of the worktree's index file as gix reads it: (path, mode, id, skip-worktree),
/// and whether it is a sparse index.
fn index_on_disk(wt: &Path) -> (Vec<(String, u32, String, bool)>, bool) {
    let repo = gix::open(wt).unwrap();
    let index = repo.open_index().unwrap();
    let entries = index
        .entries()
        .iter()
        .map(|e| {
            (
                e.path(&index).to_string(),
                e.mode.bits(),
                e.id.to_string(),
                e.flags.contains(gix::index::entry::Flags::SKIP_WORKTREE),
            )
        })
        .collect();
    (entries, index.is_sparse())
}

/// `git ls-files -s` for the ticket folder, and `git ls-tree -r` of `rev` for it, in one shape.
fn staged_and_committed_tickets(wt: &Path, rev: &str) -> (String, String) {
    let staged = git(wt, &["ls-files", "-s", ".yoi/tickets"])
        .lines()
        .map(|l| {
            let (meta, path) = l.split_once('\t').unwrap();
            let mut m = meta.split(' ');
            format!("{} {} {path}", m.next().unwrap(), m.next().unwrap())
        })
        .collect::<Vec<_>>()
        .join("\n");
    let committed = git(wt, &["ls-tree", "-r", rev, ".yoi/tickets"])
        .lines()
        .map(|l| {
            let (meta, path) = l.split_once('\t').unwrap();
            let mut m = meta.split(' ');
            let mode = m.next().unwrap();
            let _kind = m.next();
            format!("{mode} {} {path}", m.next().unwrap())
        })
        .collect::<Vec<_>>()
        .join("\n");
    (staged, committed)
}

fn agent_commits_with_git(wt: &Path, message: &str) {
    git(wt, &["add", "-A"]);
    git(
        wt,
        &[
            "-c",
            "user.name=agent",
            "-c",
            "user.email=agent@a.invalid",
            "commit",
            "-q",
            "-m",
            message,
        ],
    );
}

#[test]
fn a_sparse_worktree_holds_the_ticket_folder_as_one_index_entry_in_gits_format() {
    let (dir, repo, base) = repo_with_many_tickets(12);
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();

    let (entries, sparse) = index_on_disk(&wt);
    assert!(sparse, "gix reads it back as a sparse index");
    let raw = std::fs::read(gix::open(&wt).unwrap().index_path()).unwrap();
    assert!(
        raw.windows(4).any(|w| w == b"sdir"),
        "the index carries git's sdir extension"
    );
    let folders: Vec<_> = entries.iter().filter(|e| e.1 == 0o040000).collect();
    assert_eq!(
        folders,
        [&(
            ".yoi/tickets/".to_string(),
            0o040000,
            tickets_tree(&repo, &base),
            true
        )]
    );
    // Only the folder entry stands for the 24 ticket files.
    let files = git(&repo, &["ls-tree", "-r", "--name-only", &base]);
    let outside = files
        .lines()
        .filter(|p| !p.starts_with(".yoi/tickets/"))
        .count();
    assert_eq!(entries.len(), outside + 1);
    assert!(
        !wt.join(".yoi/tickets").exists(),
        "no ticket file is written"
    );

    // git expands the folder entry in memory and finds everything as committed.
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert!(git_succeeds(&wt, &["diff", "--cached", "--quiet"]));
    assert!(git_succeeds(&wt, &["diff", "--quiet"]));
    let listed = git(&wt, &["ls-files", ".yoi/tickets"]);
    assert_eq!(listed.lines().count(), 24, "{listed}");
    let (staged, committed) = staged_and_committed_tickets(&wt, &base);
    assert_eq!(staged, committed);
    assert_eq!(
        git(&wt, &["write-tree"]).trim(),
        git(&repo, &["rev-parse", &format!("{base}^{{tree}}")]).trim()
    );
    assert!(!wt.join(".yoi/tickets").exists());
    assert_fsck_clean(&wt);
    assert_eq!(uncommitted_changes(&wt).unwrap(), Vec::<String>::new());
}

#[test]
fn an_agents_git_commit_in_a_sparse_worktree_keeps_the_tickets_tree() {
    let (dir, repo, base) = repo_with_many_tickets(12);
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();

    std::fs::write(wt.join("src/deep/a.rs"), "fn a() { 1 }\n").unwrap();
    std::fs::write(wt.join("src/b.rs"), "fn b() {}\n").unwrap();
    agent_commits_with_git(&wt, "agent");
    let commit = head_of(&wt).unwrap();
    assert_ne!(commit, base);
    assert_eq!(tickets_tree(&repo, &commit), tickets_tree(&repo, &base));
    assert_eq!(
        git(&repo, &["diff", "--name-only", &base, &commit]),
        "src/b.rs\nsrc/deep/a.rs\n"
    );
    assert!(!wt.join(".yoi/tickets").exists());
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert_fsck_clean(&wt);

    // git wrote the index back in full form; yoi reads that too and commits on top of it.
    let (entries, _) = index_on_disk(&wt);
    assert!(entries.iter().all(|e| e.1 != 0o040000), "git expanded it");
    assert_eq!(uncommitted_changes(&wt).unwrap(), Vec::<String>::new());
    std::fs::write(wt.join("README.md"), "by yoi\n").unwrap();
    let second = commit_all(&wt, "pod", &who()).unwrap().expect("a commit");
    assert_eq!(tickets_tree(&repo, &second), tickets_tree(&repo, &base));
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert!(!wt.join(".yoi/tickets").exists());
}

#[test]
fn yois_commit_in_a_sparse_worktree_keeps_the_tickets_tree_and_the_index_sparse() {
    let (dir, repo, base) = repo_with_many_tickets(12);
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();

    std::fs::write(wt.join("src/deep/a.rs"), "fn a() { 2 }\n").unwrap();
    std::fs::remove_file(wt.join("run.sh")).unwrap();
    std::fs::write(wt.join("new.txt"), "new\n").unwrap();
    assert_eq!(
        uncommitted_changes(&wt).unwrap(),
        ["new.txt", "run.sh", "src/deep/a.rs"]
    );
    let commit = commit_all(&wt, "pod", &who()).unwrap().expect("a commit");
    assert_eq!(head_of(&wt).unwrap(), commit);
    assert_eq!(tickets_tree(&repo, &commit), tickets_tree(&repo, &base));
    assert_eq!(
        git(&repo, &["diff", "--name-only", &base, &commit]),
        "new.txt\nrun.sh\nsrc/deep/a.rs\n"
    );
    let (entries, sparse) = index_on_disk(&wt);
    assert!(sparse);
    assert_eq!(
        entries.iter().filter(|e| e.1 == 0o040000).count(),
        1,
        "still one folder entry"
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(
        git(&wt, &["write-tree"]).trim(),
        git(&repo, &["rev-parse", &format!("{commit}^{{tree}}")]).trim()
    );
    assert!(!wt.join(".yoi/tickets").exists());
    assert_fsck_clean(&wt);
    assert_eq!(commit_all(&wt, "nothing", &who()).unwrap(), None);
}

#[test]
fn yois_status_of_a_sparse_index_agrees_with_git_when_head_moves_under_it() {
    let (dir, repo, base) = repo_with_many_tickets(12);
    let next = commit_on_main(
        &repo,
        &[
            ("README.md", Some("moved on\n")),
            (".yoi/tickets/T03/thread.md", Some("more\n")),
            (".yoi/tickets/T99/item.md", Some("---\nid: T99\n---\n")),
            (".yoi/tickets/T05/item.md", None),
        ],
        "next",
    );
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();
    // HEAD moves, the index stays at `base`: every difference, tickets included, is staged.
    git(&wt, &["update-ref", "--no-deref", "HEAD", &next]);
    std::fs::write(wt.join("src/deep/a.rs"), "changed\n").unwrap();
    std::fs::write(wt.join("untracked.txt"), "u\n").unwrap();

    let yoi = uncommitted_changes(&wt).unwrap();
    // --no-optional-locks: git must not write its expanded index back before yoi looks again.
    let porcelain = git(
        &wt,
        &[
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--no-renames",
        ],
    );
    let mut from_git: Vec<String> = porcelain.lines().map(|l| l[3..].to_string()).collect();
    from_git.sort();
    assert_eq!(yoi, from_git);
    assert!(
        yoi.contains(&".yoi/tickets/T99/item.md".to_string()),
        "{yoi:?}"
    );
    assert_eq!(
        index_on_disk(&wt)
            .0
            .iter()
            .filter(|e| e.1 == 0o040000)
            .count(),
        1
    );

    // A commit takes the index's folder, as git's would: the tickets stay as at `base`.
    let commit = commit_all(&wt, "pod", &who()).unwrap().expect("a commit");
    assert_eq!(tickets_tree(&repo, &commit), tickets_tree(&repo, &base));
    assert_eq!(
        git(&repo, &["show", &format!("{commit}:src/deep/a.rs")]),
        "changed\n"
    );
}

#[test]
fn moving_a_sparse_worktree_sets_the_folder_entry_to_the_new_commits_tickets() {
    let (dir, repo, base) = repo_with_many_tickets(12);
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();
    let next = commit_on_main(
        &repo,
        &[
            ("src/deep/a.rs", Some("fn a() { 3 }\n")),
            (".yoi/tickets/T03/thread.md", Some("more\n")),
            (".yoi/tickets/T42/item.md", Some("---\nid: T42\n---\n")),
        ],
        "next",
    );
    assert_ne!(tickets_tree(&repo, &next), tickets_tree(&repo, &base));

    assert_eq!(
        reset_detached(&wt, &next, LEAVE_OUT).unwrap(),
        Reset::Moved { written: 1 }
    );
    let (entries, sparse) = index_on_disk(&wt);
    assert!(sparse);
    let folder: Vec<_> = entries.iter().filter(|e| e.1 == 0o040000).collect();
    assert_eq!(folder.len(), 1);
    assert_eq!(folder[0].2, tickets_tree(&repo, &next));
    assert_eq!(
        git(&wt, &["write-tree"]).trim(),
        git(&repo, &["rev-parse", &format!("{next}^{{tree}}")]).trim()
    );
    let (staged, committed) = staged_and_committed_tickets(&wt, &next);
    assert_eq!(staged, committed);
    assert!(staged.contains(".yoi/tickets/T42/item.md"));
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert!(!wt.join(".yoi/tickets").exists(), "still no ticket file");
    assert_fsck_clean(&wt);
}

#[test]
fn moving_a_worktree_git_wrote_back_in_full_folds_the_tickets_into_one_entry_again() {
    let (dir, repo, base) = repo_with_many_tickets(12);
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();
    // git writes the index back expanded, with its tree cache describing every folder.
    std::fs::write(wt.join("src/b.rs"), "fn b() {}\n").unwrap();
    agent_commits_with_git(&wt, "agent");
    assert!(index_on_disk(&wt).0.iter().all(|e| e.1 != 0o040000));
    let next = commit_on_main(
        &repo,
        &[
            ("src/deep/a.rs", Some("fn a() { 4 }\n")),
            (
                ".yoi/tickets/T07/item.md",
                Some("---\nid: T7\nstate: done\n---\n"),
            ),
        ],
        "next",
    );

    assert!(matches!(
        reset_detached(&wt, &next, LEAVE_OUT).unwrap(),
        Reset::Moved { .. }
    ));
    assert_eq!(head_of(&wt).unwrap(), next);
    let (entries, sparse) = index_on_disk(&wt);
    assert!(sparse);
    assert!(!entries
        .iter()
        .any(|e| e.0.starts_with(".yoi/tickets/") && e.1 != 0o040000));
    // A stale tree cache would make git write the tree it had before the move.
    assert_eq!(
        git(&wt, &["write-tree"]).trim(),
        git(&repo, &["rev-parse", &format!("{next}^{{tree}}")]).trim()
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert!(!wt.join("src/b.rs").exists());
    assert!(!wt.join(".yoi/tickets").exists());
    // And git commits correctly on top of the moved index.
    std::fs::write(wt.join("README.md"), "after the move\n").unwrap();
    agent_commits_with_git(&wt, "agent again");
    let after = head_of(&wt).unwrap();
    assert_eq!(tickets_tree(&repo, &after), tickets_tree(&repo, &next));
    assert_eq!(
        git(&repo, &["diff", "--name-only", &next, &after]),
        "README.md\n"
    );
    assert_fsck_clean(&wt);
}

#[test]
fn moving_a_full_checkout_with_the_tickets_left_out_removes_their_files() {
    let (dir, repo, base) = repo_with_many_tickets(12);
    let wt = dir.path().join("wt");
    add_worktree_detached(&repo, &wt, &base).unwrap();
    assert!(wt.join(".yoi/tickets/T03/thread.md").is_file());
    let next = commit_on_main(&repo, &[("README.md", Some("next\n"))], "next");

    assert_eq!(
        reset_detached(&wt, &next, LEAVE_OUT).unwrap(),
        Reset::Moved { written: 1 }
    );
    assert!(
        !wt.join(".yoi/tickets").exists(),
        "the checked-out ticket files went"
    );
    assert!(wt.join(".yoi/workspace.toml").is_file());
    let (entries, sparse) = index_on_disk(&wt);
    assert!(sparse);
    assert!(entries.contains(&(
        ".yoi/tickets/".to_string(),
        0o040000,
        tickets_tree(&repo, &next),
        true
    )));
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(
        git(&wt, &["write-tree"]).trim(),
        git(&repo, &["rev-parse", &format!("{next}^{{tree}}")]).trim()
    );
}

#[test]
fn merging_a_sparse_worktrees_work_carries_the_tickets_unchanged() {
    let (dir, repo, base) = repo_with_many_tickets(12);
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();
    std::fs::write(wt.join("src/deep/a.rs"), "fn a() { 5 }\n").unwrap();
    let work = commit_all(&wt, "pod", &who()).unwrap().expect("a commit");

    // Fast-forward: main (checked out in the main worktree) moves; its ticket files stay.
    let MergePlan::FastForward {
        before,
        after,
        changed,
    } = plan_merge(&repo, "main", &work).unwrap()
    else {
        panic!("a fast-forward");
    };
    assert_eq!(changed, ["src/deep/a.rs"]);
    let landed = land(&repo, "main", &before, &after, &changed, LEAVE_OUT).unwrap();
    assert!(matches!(landed, Landed::Moved { .. }), "{landed:?}");
    assert_eq!(tickets_tree(&repo, "main"), tickets_tree(&repo, &base));
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    // git's commit left a tree cache in the main worktree's index; a stale one would make git
    // write the tree from before the merge.
    assert_eq!(
        git(&repo, &["write-tree"]).trim(),
        git(&repo, &["rev-parse", "main^{tree}"]).trim()
    );
    assert_eq!(
        std::fs::read_to_string(repo.join(".yoi/tickets/T03/thread.md")).unwrap(),
        "ticket 3\n"
    );

    // Diverged: main records a new ticket meanwhile; the merge keeps main's tickets as they are.
    std::fs::write(wt.join("README.md"), "more work\n").unwrap();
    let more = commit_all(&wt, "pod", &who()).unwrap().expect("a commit");
    let target = commit_on_main(
        &repo,
        &[(".yoi/tickets/T50/item.md", Some("---\nid: T50\n---\n"))],
        "a new ticket",
    );
    let merged = merge_three_way(&repo, &target, &more, "merge", &who()).unwrap();
    let ThreeWay::Clean {
        commit, changed, ..
    } = merged
    else {
        panic!("a clean merge: {merged:?}");
    };
    assert_eq!(changed, ["README.md"]);
    assert_eq!(tickets_tree(&repo, &commit), tickets_tree(&repo, &target));
    assert_fsck_clean(&repo);
}

#[test]
fn git_gives_no_sparse_index_advice_in_any_worktree() {
    let (dir, repo, base) = repo_with_many_tickets(12);
    let shared_before = git(&repo, &["config", "--list", "--local"]);
    let wt = dir.path().join("wt");
    add_worktree_sparse(&repo, &wt, &base, LEAVE_OUT).unwrap();
    let sparse_index = std::fs::read(gix::open(&wt).unwrap().index_path()).unwrap();

    // Commands that expand the sparse index without writing it back: without the setting, each
    // advises on stderr to look for stray files and to run `git clean`. In the main worktree,
    // fsck and repack read the linked worktrees' indexes too.
    let quiet = |dir: &Path, args: &[&str]| {
        let out = git_output(dir, args);
        assert!(out.status.success(), "git {args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "git {args:?}");
    };
    quiet(&wt, &["ls-files"]);
    quiet(&wt, &["diff", "--stat"]);
    quiet(&wt, &["diff", "--cached", "--stat"]);
    quiet(&repo, &["fsck", "--no-dangling", "--no-progress"]);
    quiet(&repo, &["repack", "-a", "-d", "-q"]);
    let index = gix::open(&wt).unwrap().index_path();
    assert_eq!(
        std::fs::read(&index).unwrap(),
        sparse_index,
        "git wrote none back"
    );

    // The repository's settings gained that one; a second worktree finds it there.
    let shared_after = git(&repo, &["config", "--list", "--local"]);
    assert_eq!(
        shared_after,
        format!("{shared_before}advice.sparseindexexpanded=false\n")
    );
    let second = dir.path().join("second");
    add_worktree_sparse(&repo, &second, &base, LEAVE_OUT).unwrap();
    assert_eq!(git(&repo, &["config", "--list", "--local"]), shared_after);

    // `git prune` advises whatever the config says; a detached auto gc keeps that in gc.log,
    // which holds automatic gc back. yoi removes a log that holds only that advice, and keeps
    // one that reports anything else.
    std::fs::write(repo.join("loose.txt"), "a loose object").unwrap();
    git(&repo, &["hash-object", "-w", "loose.txt"]);
    let prune = git_output(&repo, &["prune", "--expire=now"]);
    let advice = String::from_utf8_lossy(&prune.stderr).into_owned();
    assert!(advice.contains("sparse index"), "{advice:?}");
    let gc_log = repo.join(".git/gc.log");
    std::fs::write(&gc_log, &advice).unwrap();
    add_worktree_sparse(&repo, &dir.path().join("third"), &base, LEAVE_OUT).unwrap();
    assert!(!gc_log.exists(), "a log of the advice alone is removed");
    let failure = format!("{advice}error: bad object 0123\n");
    std::fs::write(&gc_log, &failure).unwrap();
    add_worktree_sparse(&repo, &dir.path().join("fourth"), &base, LEAVE_OUT).unwrap();
    assert_eq!(std::fs::read_to_string(&gc_log).unwrap(), failure);
}
