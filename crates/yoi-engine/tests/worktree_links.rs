//! Issue 38, item 8, for worktrees: a ticket's worktree path (or the worktree folder) planted as
//! a symbolic link is never checked out into, the ticket stays queued, and doctor reports the
//! link as `layout.symlink` without listing what it leads to.

use yoi_core::State;
use yoi_engine::routing::{self as router, AcceptError};

mod common;

use common::{now, Fixture, BRIEF};

/// A folder outside the repository holding one file, and that file's name and bytes.
fn outside() -> (tempfile::TempDir, Vec<(String, Vec<u8>)>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("private.txt"), "SECRET-CONTENT\n").unwrap();
    let listing = listing(dir.path());
    (dir, listing)
}

fn listing(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
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
fn acceptance_never_checks_out_through_a_planted_worktree_link() {
    let f = Fixture::new();
    let (target, before) = outside();

    // The ticket's own worktree path is a link.
    let id = f.queued("Planted", BRIEF, &[]);
    let d = router::decide(&f.ws, &id, 2).unwrap().unwrap();
    std::fs::create_dir_all(f.worktree_root()).unwrap();
    let planted = f.worktree_root().join(format!("{id}-planted"));
    std::os::unix::fs::symlink(target.path(), &planted).unwrap();
    let err = router::accept_ticket(&f.ws, &f.db, &id, &d, &f.worktree_root(), now()).unwrap_err();
    assert!(
        matches!(&err, AcceptError::Failed { step, .. } if *step == "add_worktree"),
        "{err}"
    );
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(f.state(&id), State::Queued);
    assert_eq!(listing(target.path()), before, "nothing written through");

    // Doctor names the link and where it leads, never what is there.
    let report = yoi_engine::doctor::run_full(&f.ws, None, false).unwrap();
    let rel = planted
        .strip_prefix(&f.repo)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let link = report
        .findings
        .iter()
        .find(|x| x.check == "layout.symlink" && x.path.as_deref() == Some(rel.as_str()))
        .unwrap_or_else(|| panic!("no layout.symlink for {rel}: {:?}", report.findings));
    assert!(link.is_error());
    let json = serde_json::to_string(&report.findings).unwrap();
    assert!(!json.contains("SECRET-CONTENT") && !json.contains("private.txt"));

    // The worktree folder itself is a link.
    std::fs::remove_file(&planted).unwrap();
    std::fs::remove_dir(f.worktree_root()).unwrap();
    std::os::unix::fs::symlink(target.path(), f.worktree_root()).unwrap();
    let err = router::accept_ticket(&f.ws, &f.db, &id, &d, &f.worktree_root(), now()).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(f.state(&id), State::Queued);
    assert_eq!(listing(target.path()), before, "nothing written through");
}
