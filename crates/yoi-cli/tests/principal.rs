//! Who a person is, when nothing says so directly: with `YOI_USER`, `[principal] name` and
//! `$USER` all unset, the CLI takes git's `user.name`; with that unset too it refuses, naming
//! where to say it, instead of recording "unknown".

mod common;

use std::process::Command;

use common::Repo;

/// `yoi ARGS` in `repo` with no name in the environment and no user or system git config.
fn anonymous(repo: &Repo, home: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_yoi"))
        .arg("-C")
        .arg(repo.path())
        .args(args)
        .env_remove("USER")
        .env_remove("YOI_USER")
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_CONFIG_GLOBAL")
        .output()
        .unwrap()
}

#[test]
fn the_principal_falls_back_to_git_user_name_and_never_to_unknown() {
    let repo = Repo::init();
    let home = tempfile::tempdir().unwrap();
    let nameless = anonymous(
        &repo,
        home.path(),
        &["ticket", "create", "--title", "Nobody"],
    );
    assert_eq!(nameless.status.code(), Some(2));
    let err = String::from_utf8_lossy(&nameless.stderr);
    assert!(
        err.contains("git's user.name") && err.contains("YOI_USER"),
        "{err}"
    );

    yoi_testkit::git(repo.path(), &["config", "user.name", "Grace Hopper"]);
    let made = anonymous(
        &repo,
        home.path(),
        &["ticket", "create", "--title", "Named"],
    );
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let id = String::from_utf8_lossy(&made.stdout).trim().to_string();
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(thread.contains("author: \"Grace Hopper\""), "{thread}");
    assert!(!thread.contains("unknown"), "{thread}");
}
