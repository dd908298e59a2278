//! `cancel` of an in-progress ticket and its worktree, on real git repositories: a clean
//! worktree is removed after the state change, a dirty one is kept, a missing one is reported,
//! a folder that is not a worktree is left alone; the branch is always kept. git itself checks
//! the result.

use yoi_testkit::repo as git_repo;

use git_repo::{cancel_ticket, git, GitFx, NoGitFx};
use yoi_core::state::State;
use yoi_core::thread::{Event, EventKind};
use yoi_core::TicketId;
use yoi_store::Outcome;

fn close_event(fx: &GitFx, id: &TicketId) -> Event {
    let events = fx.ws.read_thread(id).unwrap().events;
    let close = events.last().unwrap().clone();
    assert_eq!(close.kind, EventKind::Close);
    close
}

/// Asserts that the cancel closed the ticket and left exactly one note, `note`.
fn assert_closed_with_note(out: &Outcome, note: String) {
    assert_eq!(out.to, Some(State::Closed));
    assert_eq!(out.notes, [note]);
}

#[test]
fn cancel_removes_a_clean_worktree_and_keeps_the_branch() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix x", "fix-x");
    assert_eq!(
        fx.git_worktrees(),
        [fx.root().to_path_buf(), t.path.clone()]
    );

    let out = fx.cancel(&t.id);

    assert_eq!(
        (out.from, out.to),
        (Some(State::Inprogress), Some(State::Closed))
    );
    assert_eq!(
        out.notes,
        [format!(
            "removed the worktree {} (it was clean); the branch {} is kept",
            t.worktree, t.branch
        )]
    );
    assert!(!t.path.exists());
    assert_eq!(fx.git_worktrees(), [fx.root().to_path_buf()]);
    assert_eq!(fx.git_branch(&t.branch).as_deref(), Some(fx.head.as_str()));
    let close = close_event(&fx, &t.id);
    assert_eq!(close.get("status"), Some("cancelled"));
    assert_eq!(close.get("worktree"), Some("removed"));
    assert_eq!(
        close.body,
        format!(
            "Not needed.\n\nThe worktree `{}` was clean and is removed. The branch `{}` is kept.",
            t.worktree, t.branch
        )
    );
    // resolution.md holds the resolution alone.
    assert_eq!(
        fx.ws.read_resolution(&t.id).unwrap().as_deref(),
        Some("Not needed.")
    );
    assert_eq!(fx.ws.read_item(&t.id).unwrap().state, State::Closed);
}

#[test]
fn cancel_keeps_a_dirty_worktree_and_says_so() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix y", "fix-y");
    std::fs::write(t.path.join("notes.txt"), "half done\n").unwrap();
    std::fs::write(t.path.join("README.md"), "changed\n").unwrap();

    let out = fx.cancel(&t.id);

    assert_closed_with_note(
        &out,
        format!(
            "kept the worktree {}: it has uncommitted changes (2 files); the branch {} is kept",
            t.worktree, t.branch
        ),
    );
    assert_eq!(
        std::fs::read_to_string(t.path.join("notes.txt")).unwrap(),
        "half done\n"
    );
    assert_eq!(
        git(&t.path, &["status", "--porcelain"]),
        " M README.md\n?? notes.txt\n"
    );
    assert_eq!(
        fx.git_worktrees(),
        [fx.root().to_path_buf(), t.path.clone()]
    );
    assert!(fx.git_branch(&t.branch).is_some());
    let close = close_event(&fx, &t.id);
    assert_eq!(close.get("worktree"), Some("kept-dirty"));
    assert!(
        close.body.ends_with(&format!(
            "The worktree `{}` is kept: it has uncommitted changes (2 files). The branch `{}` is kept.",
            t.worktree, t.branch
        )),
        "{}",
        close.body
    );
    assert_eq!(fx.ws.read_item(&t.id).unwrap().state, State::Closed);
}

#[test]
fn cancel_succeeds_when_the_worktree_folder_was_deleted_by_hand() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix z", "fix-z");
    std::fs::remove_dir_all(&t.path).unwrap();

    let out = fx.cancel(&t.id);

    assert_closed_with_note(
        &out,
        format!(
            "the worktree {} was already gone; `git worktree prune` drops its record; the branch {} is kept",
            t.worktree, t.branch
        ),
    );
    assert_eq!(close_event(&fx, &t.id).get("worktree"), Some("missing"));
    assert!(fx.git_branch(&t.branch).is_some());
    // cancel leaves git's record alone; git still lists it until it is pruned.
    assert_eq!(fx.git_worktrees().len(), 2);
}

#[test]
fn cancel_says_when_the_branch_is_gone_too() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix w", "fix-w");
    git(fx.root(), &["worktree", "remove", &t.worktree]);
    git(fx.root(), &["branch", "-D", &t.branch]);

    let out = fx.cancel(&t.id);

    assert_eq!(
        out.notes,
        [format!(
            "the worktree {} was already gone; the branch {} no longer exists",
            t.worktree, t.branch
        )]
    );
    assert!(close_event(&fx, &t.id)
        .body
        .ends_with(&format!("The branch `{}` no longer exists.", t.branch)));
}

#[test]
fn cancel_never_removes_a_folder_that_is_not_a_worktree() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix v", "fix-v");
    git(fx.root(), &["worktree", "remove", &t.worktree]);
    std::fs::create_dir_all(&t.path).unwrap();
    std::fs::write(t.path.join("mine.txt"), "keep me").unwrap();

    let out = fx.cancel(&t.id);

    assert_closed_with_note(
        &out,
        format!(
            "left {} alone: it is not a worktree of this repository; the branch {} is kept",
            t.worktree, t.branch
        ),
    );
    assert_eq!(
        std::fs::read_to_string(t.path.join("mine.txt")).unwrap(),
        "keep me"
    );
    assert_eq!(
        close_event(&fx, &t.id).get("worktree"),
        Some("kept-unregistered")
    );
}

#[test]
fn cancel_outside_inprogress_has_no_notes_and_touches_no_worktree() {
    let fx = GitFx::new();
    let busy = fx.accepted("Busy", "busy");
    let queued = fx.queued("Waiting");

    let out = fx.cancel(&queued);

    assert_eq!(out.from, Some(State::Queued));
    assert!(out.notes.is_empty());
    let json = serde_json::to_value(&out).unwrap();
    assert!(json.get("notes").is_none(), "{json}");
    let close = close_event(&fx, &queued);
    assert_eq!(close.get("worktree"), None);
    assert_eq!(close.body, "Not needed.");
    assert!(busy.path.is_dir());
}

#[test]
fn cancel_notes_are_in_the_json_outcome() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix u", "fix-u");
    let out = fx.cancel(&t.id);
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(json["notes"], serde_json::json!(out.notes));
    assert_eq!(json["notes"].as_array().unwrap().len(), 1);
}

#[test]
fn cancel_outside_a_git_repository_leaves_folders_alone() {
    let fx = NoGitFx::new();
    let folder = fx.root().join(&fx.worktree);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("f.txt"), "x").unwrap();

    let out = cancel_ticket(&fx.ws, &fx.id);

    assert_eq!(out.to, Some(State::Closed));
    assert!(out.notes.is_empty());
    assert!(folder.join("f.txt").is_file());
    let close = fx.ws.read_thread(&fx.id).unwrap().events.pop().unwrap();
    assert_eq!(close.get("worktree"), None);
    assert_eq!(close.body, "Not needed.");
}

#[test]
fn cancel_never_inspects_or_removes_a_worktree_through_a_link() {
    let fx = GitFx::new();
    let t = fx.accepted("Fix l", "fix-l");
    // The recorded path now leads, through a link, to a clean worktree elsewhere.
    let elsewhere = fx.root().parent().unwrap().join("moved-worktree");
    git(
        fx.root(),
        &["worktree", "move", &t.worktree, elsewhere.to_str().unwrap()],
    );
    std::os::unix::fs::symlink(&elsewhere, &t.path).unwrap();

    let out = fx.cancel(&t.id);

    assert_eq!(out.to, Some(State::Closed));
    assert_eq!(out.notes.len(), 1, "{:?}", out.notes);
    assert!(out.notes[0].contains("symbolic link"), "{:?}", out.notes);
    assert!(elsewhere.join(".git").exists(), "the worktree is kept");
    assert!(std::fs::symlink_metadata(&t.path)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        close_event(&fx, &t.id).get("worktree"),
        Some("kept-unreadable")
    );
}
