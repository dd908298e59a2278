//! `yoi worktree list | remove | prune` on real git repositories. Worktrees are made the way the
//! orchestrator makes them (`git branch yoi/<id>-<slug>`, `git worktree add
//! .worktree/<id>-<slug>`), an in-progress ticket is accepted through the store as the
//! orchestrator does it, and git itself checks what the commands leave behind.

mod common;
use yoi_testkit::repo as git_repo;

use std::path::PathBuf;

use common::{Output, Repo};
use git_repo::{accept_as_orchestrator, git, worktree_on_new_branch};
use yoi_core::Timestamp;
use yoi_store::Workspace;

/// A well-formed ULID that no ticket in these tests has.
const NOBODY: &str = "01JDX3V8Q4R5S6T7V8W9XAYBZC";

/// `git init -b main`, `yoi init`, one commit.
fn repo() -> Repo {
    let repo = Repo::init();
    std::fs::write(repo.path().join("README.md"), "hello\n").unwrap();
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "base"]);
    repo
}

fn root(repo: &Repo) -> PathBuf {
    repo.path().canonicalize().unwrap()
}

fn head(repo: &Repo) -> String {
    git(repo.path(), &["rev-parse", "HEAD"]).trim().to_string()
}

/// A branch and worktree as the orchestrator makes them for ticket `id`: returns the branch and
/// the worktree's path relative to the root.
fn orchestrator_worktree(repo: &Repo, id: &str, slug: &str) -> (String, String) {
    let branch = format!("yoi/{id}-{slug}");
    let rel = format!(".worktree/{id}-{slug}");
    git(repo.path(), &["branch", &branch]);
    git(repo.path(), &["worktree", "add", "-q", &rel, &branch]);
    (branch, rel)
}

/// A ticket made ready and queued through the CLI, then accepted through the store as the
/// orchestrator does it, on a worktree made like the orchestrator's.
fn in_progress(repo: &Repo, title: &str, slug: &str) -> (String, String, String) {
    let id = repo.ready_ticket(title);
    repo.yoi(&["ticket", "queue", &id]).ok();
    let (branch, rel) = orchestrator_worktree(repo, &id, slug);
    let ws = Workspace::open(repo.path()).unwrap();
    let now = Timestamp::from_datetime(yoi_core::time::utc_now_from_system(
        std::time::SystemTime::now(),
    ));
    accept_as_orchestrator(&ws, now, &id, &branch, &rel, &head(repo));
    (id, branch, rel)
}

/// The folders `git worktree list --porcelain` shows, main first.
fn git_worktrees(repo: &Repo) -> Vec<PathBuf> {
    git_repo::git_worktrees(repo.path())
}

/// The commit `refs/heads/<branch>` points at, `None` when there is no such branch.
fn branch_at(repo: &Repo, branch: &str) -> Option<String> {
    git_repo::git_branch(repo.path(), branch)
}

fn refused(out: Output) -> String {
    assert_eq!(
        out.code, 1,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
    out.stderr
}

#[test]
fn list_shows_each_worktree_with_its_ticket_state_and_status() {
    let repo = repo();
    let base = head(&repo);
    let planning = repo.create("Plain", common::COMPLETE_BRIEF);
    let (_, _, active_rel) = in_progress(&repo, "Busy", "busy");
    orchestrator_worktree(&repo, &planning, "plain");
    // A worktree whose ticket does not exist, with a new and a changed file.
    let (_, ghost_rel) = orchestrator_worktree(&repo, NOBODY, "ghost");
    std::fs::write(repo.path().join(&ghost_rel).join("new.txt"), "x\n").unwrap();
    std::fs::write(repo.path().join(&ghost_rel).join("README.md"), "y\n").unwrap();
    // A worktree that names no ticket, outside the repository.
    let outside = tempfile::tempdir().unwrap();
    let side = outside.path().canonicalize().unwrap().join("side");
    worktree_on_new_branch(repo.path(), "feature", &side);

    let out = repo.yoi(&["worktree", "list"]).ok();
    let text = common::normalize(&out.stdout)
        .replace(&base[..12], "[HEAD]")
        .replace(
            outside.path().canonicalize().unwrap().to_str().unwrap(),
            "[OUT]",
        );
    insta::assert_snapshot!("worktree_list", text);

    let out = repo.yoi(&["worktree", "list", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["count"], 4);
    let rows = v["worktrees"].as_array().unwrap();
    let row = |path: &str| {
        rows.iter()
            .find(|r| r["path"] == path)
            .unwrap_or_else(|| panic!("no row for {path} in {rows:#?}"))
            .clone()
    };
    let ghost = row(&ghost_rel);
    assert_eq!(ghost["ticket"], NOBODY);
    assert_eq!(ghost["ticket_state"], serde_json::Value::Null);
    assert_eq!(ghost["dirty"], true);
    assert_eq!(ghost["status"], "dirty");
    assert_eq!(ghost["accepted"], false);
    assert_eq!(ghost["head"], base.as_str());
    assert_eq!(ghost["branch"], format!("yoi/{NOBODY}-ghost"));
    let active = row(&active_rel);
    assert_eq!(active["ticket_state"], "inprogress");
    assert_eq!(active["accepted"], true);
    assert_eq!(active["dirty"], false);
    assert_eq!(active["status"], "clean");
    assert_eq!(active["prunable"], false);
    let plain = row(&format!(".worktree/{planning}-plain"));
    assert_eq!(plain["ticket"], planning.as_str());
    assert_eq!(plain["ticket_state"], "planning");
    assert_eq!(plain["accepted"], false);
    let side = row(side.to_str().unwrap());
    assert_eq!(side["ticket"], serde_json::Value::Null);
    assert_eq!(side["branch"], "feature");
}

#[test]
fn list_without_linked_worktrees_says_so() {
    let repo = repo();
    let out = repo.yoi(&["worktree", "list"]).ok();
    assert_eq!(out.stdout, "no linked worktrees\n");
    let out = repo.yoi(&["worktree", "list", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v, serde_json::json!({ "count": 0, "worktrees": [] }));
}

#[test]
fn remove_takes_a_clean_worktree_away_and_keeps_its_branch() {
    let repo = repo();
    let base = head(&repo);
    let id = repo.create("Plain", common::COMPLETE_BRIEF);
    let (branch, rel) = orchestrator_worktree(&repo, &id, "plain");
    let (other_branch, other_rel) = orchestrator_worktree(&repo, NOBODY, "other");
    assert_eq!(git_worktrees(&repo).len(), 3);

    // By ticket suffix.
    let out = repo.yoi(&["worktree", "remove", &id[20..]]).ok();
    assert_eq!(out.stdout, format!("removed {rel}; branch {branch} kept\n"));
    assert!(!repo.path().join(&rel).exists());
    assert_eq!(
        git_worktrees(&repo),
        [root(&repo), root(&repo).join(&other_rel)]
    );
    assert_eq!(branch_at(&repo, &branch).as_deref(), Some(base.as_str()));

    // By path, from inside the worktree folder, with --json.
    let out = repo
        .yoi_in(
            &repo.path().join(".worktree"),
            &["worktree", "remove", &format!("{NOBODY}-other"), "--json"],
            None,
        )
        .ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["path"], other_rel.as_str());
    assert_eq!(v["branch"], other_branch.as_str());
    assert_eq!(v["discarded"], serde_json::json!([]));
    assert_eq!(git_worktrees(&repo), [root(&repo)]);
    assert_eq!(
        branch_at(&repo, &other_branch).as_deref(),
        Some(base.as_str())
    );
}

#[test]
fn remove_refuses_a_dirty_worktree_naming_the_files_until_forced() {
    let repo = repo();
    let id = repo.create("Plain", common::COMPLETE_BRIEF);
    let (branch, rel) = orchestrator_worktree(&repo, &id, "plain");
    let path = repo.path().join(&rel);
    std::fs::write(path.join("notes.txt"), "half done\n").unwrap();
    std::fs::write(path.join("README.md"), "changed\n").unwrap();

    let err = refused(repo.yoi(&["worktree", "remove", &id]));
    assert_eq!(
        err,
        format!("error: worktree {rel} has uncommitted changes or untracked files: README.md, notes.txt; commit or stash them first, or pass --force to discard them\n")
    );
    assert!(path.join("notes.txt").is_file());
    assert_eq!(git_worktrees(&repo).len(), 2);

    let out = repo.yoi(&["worktree", "remove", &id, "--force"]).ok();
    assert_eq!(
        out.stdout,
        format!(
            "removed {rel}; branch {branch} kept\nnote: discarded uncommitted changes: README.md, notes.txt\n"
        )
    );
    assert!(!path.exists());
    assert_eq!(git_worktrees(&repo), [root(&repo)]);
    assert!(branch_at(&repo, &branch).is_some());
}

#[test]
fn remove_refuses_the_worktree_of_an_in_progress_ticket_until_forced() {
    let repo = repo();
    let (id, branch, rel) = in_progress(&repo, "Busy", "busy");

    let err = refused(repo.yoi(&["worktree", "remove", &id]));
    assert_eq!(
        err,
        format!("error: worktree {rel} belongs to ticket {id}, which is inprogress: the orchestrator and pods use it; cancel the ticket first (`yoi ticket cancel {id} --resolution \"<why>\"`), or pass --force\n")
    );
    // By path too.
    refused(repo.yoi(&["worktree", "remove", &rel]));
    assert_eq!(git_worktrees(&repo).len(), 2);

    let out = repo.yoi(&["worktree", "remove", &rel, "--force"]).ok();
    assert_eq!(
        out.stdout,
        format!("removed {rel}; branch {branch} kept\nnote: ticket {id} is still inprogress without its worktree: re-create it with `git worktree add {rel} {branch}`, or cancel the ticket\n")
    );
    assert_eq!(git_worktrees(&repo), [root(&repo)]);
    assert!(branch_at(&repo, &branch).is_some());
}

#[test]
fn remove_never_takes_the_main_worktree() {
    let repo = repo();
    orchestrator_worktree(&repo, NOBODY, "x");
    let main = root(&repo);
    for target in [".", main.to_str().unwrap()] {
        for force in [false, true] {
            let mut args = vec!["worktree", "remove", target];
            if force {
                args.push("--force");
            }
            let err = refused(repo.yoi(&args));
            assert_eq!(
                err,
                format!(
                    "error: {} is the main worktree of the repository; yoi never removes it\n",
                    main.display()
                )
            );
        }
    }
    assert!(repo.path().join("README.md").is_file());
    assert_eq!(git_worktrees(&repo).len(), 2);
}

#[test]
fn prune_drops_the_records_of_worktrees_whose_folder_is_gone() {
    let repo = repo();
    let id = repo.create("Plain", common::COMPLETE_BRIEF);
    let (branch, rel) = orchestrator_worktree(&repo, &id, "plain");
    let (_, kept_rel) = orchestrator_worktree(&repo, NOBODY, "kept");
    std::fs::remove_dir_all(repo.path().join(&rel)).unwrap();

    let out = repo.yoi(&["worktree", "list", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let gone = v["worktrees"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == rel.as_str())
        .unwrap();
    assert_eq!(gone["status"], "gone");
    assert_eq!(gone["prunable"], true);
    assert_eq!(gone["dirty"], serde_json::Value::Null);
    // Removing it is pointed at prune.
    let err = refused(repo.yoi(&["worktree", "remove", &id]));
    assert!(err.contains("`yoi worktree prune`"), "{err}");

    let out = repo.yoi(&["worktree", "prune"]).ok();
    assert_eq!(
        out.stdout,
        format!("pruned {rel} (its folder was gone); branch {branch} kept\n")
    );
    assert_eq!(
        git_worktrees(&repo),
        [root(&repo), root(&repo).join(&kept_rel)]
    );
    assert!(branch_at(&repo, &branch).is_some());

    let out = repo.yoi(&["worktree", "prune"]).ok();
    assert_eq!(
        out.stdout,
        "nothing to prune: every worktree's folder exists\n"
    );
    let out = repo.yoi(&["worktree", "prune", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v, serde_json::json!({ "count": 0, "pruned": [] }));
}

#[test]
fn remove_explains_a_target_it_cannot_find() {
    let repo = repo();
    let bare = repo.create("No worktree", common::COMPLETE_BRIEF);
    orchestrator_worktree(&repo, NOBODY, "x");
    std::fs::create_dir(repo.path().join("plain-folder")).unwrap();

    let err = refused(repo.yoi(&["worktree", "remove", "ZZZZ"]));
    assert_eq!(err, "error: no ticket matches `ZZZZ`\n");
    let err = refused(repo.yoi(&["worktree", "remove", &bare]));
    assert_eq!(
        err,
        format!("error: ticket {bare} has no worktree (none recorded in its accepted plan, none named after it); `yoi worktree list` shows them\n")
    );
    for target in ["plain-folder", ".worktree/nothing-here", ".yoi"] {
        let err = refused(repo.yoi(&["worktree", "remove", target]));
        assert_eq!(
            err,
            format!(
                "error: `{target}` is not a linked worktree of {}; `yoi worktree list` shows them\n",
                repo.path().display()
            )
        );
    }
    // A full id whose ticket is gone still finds the worktree named after it.
    repo.yoi(&["worktree", "remove", NOBODY]).ok();
    assert_eq!(git_worktrees(&repo), [root(&repo)]);
}

#[test]
fn remove_refuses_a_queued_tickets_worktree_which_an_acceptance_may_be_making() {
    let repo = repo();
    let id = repo.ready_ticket("Routing");
    repo.yoi(&["ticket", "queue", &id]).ok();
    let (branch, rel) = orchestrator_worktree(&repo, &id, "routing");
    let msg = refused(repo.yoi(&["worktree", "remove", &id]));
    assert!(
        msg.contains("which is queued: routing may be accepting it onto this worktree right now"),
        "{msg}"
    );
    assert!(repo.path().join(&rel).is_dir());
    let out = repo.yoi(&["worktree", "remove", &id, "--force"]).ok();
    assert!(
        out.stdout
            .starts_with(&format!("removed {rel}; branch {branch} kept\n")),
        "{}",
        out.stdout
    );
}

/// What `dir` holds, by name, with each file's bytes (folders by name only).
fn contents(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn remove_never_goes_through_a_link_to_the_worktree_or_a_folder_above_it() {
    let repo = repo();
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().canonicalize().unwrap();

    // The worktree's own folder is now a link to where its files went.
    let linked = repo.create("Worktree is a link", common::COMPLETE_BRIEF);
    let (branch, rel) = orchestrator_worktree(&repo, &linked, "linked");
    let path = repo.path().join(&rel);
    let moved = outside.join("moved");
    std::fs::rename(&path, &moved).unwrap();
    std::fs::write(moved.join("notes.txt"), "keep me\n").unwrap();
    std::os::unix::fs::symlink(&moved, &path).unwrap();
    let before = contents(&moved);

    for args in [
        vec!["worktree", "remove", linked.as_str()],
        vec!["worktree", "remove", linked.as_str(), "--force"],
        vec!["worktree", "remove", rel.as_str(), "--force"],
    ] {
        let err = refused(repo.yoi(&args));
        assert!(err.contains("symbolic link"), "{args:?}: {err}");
        assert!(err.contains(&rel), "{args:?} names the link: {err}");
        assert_eq!(
            contents(&moved),
            before,
            "{args:?} changed what the link leads to"
        );
        assert!(std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(git_worktrees(&repo).len(), 2, "git still records it");
        assert!(branch_at(&repo, &branch).is_some());
    }

    // A folder above it, the worktrees folder itself, is a link.
    let above = repo.create("Folder above is a link", common::COMPLETE_BRIEF);
    let (_, above_rel) = orchestrator_worktree(&repo, &above, "above");
    std::fs::remove_file(&path).unwrap();
    let worktrees = repo.path().join(".worktree");
    let elsewhere = outside.join("worktrees");
    std::fs::rename(&worktrees, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &worktrees).unwrap();
    let inside = elsewhere.join(above_rel.strip_prefix(".worktree/").unwrap());
    let before = contents(&inside);

    let err = refused(repo.yoi(&["worktree", "remove", &above, "--force"]));
    assert!(err.contains("symbolic link"), "{err}");
    assert!(err.contains(".worktree"), "{err}");
    assert_eq!(contents(&inside), before);
    assert!(std::fs::symlink_metadata(&worktrees)
        .unwrap()
        .file_type()
        .is_symlink());
}
