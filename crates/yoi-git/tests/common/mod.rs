//! Real repositories made with the git CLI, and git's own view of them to check yoi against.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
pub use yoi_testkit::git;

/// A repository on branch `main` with one commit: a few files, a nested folder, an executable
/// and a symlink. Returns (tempdir holding it, repo path, commit id).
pub fn small_repo() -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    std::fs::create_dir_all(repo.join("src/deep")).unwrap();
    std::fs::write(repo.join("src/deep/a.rs"), "fn a() {}\n").unwrap();
    write_executable(&repo.join("run.sh"));
    std::os::unix::fs::symlink("README.md", repo.join("link")).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    let head = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    (dir, repo, head)
}

/// A repository on `main` with `files` files spread over nested folders, plus `bin/tool.sh`
/// (executable) and `latest` (a symlink). Returns the commit id.
pub fn large_repo(repo: &Path, files: usize) -> String {
    std::fs::create_dir_all(repo).unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    for i in 0..files {
        let folder = repo.join(format!("d{}/e{}/f{}", i % 10, (i / 10) % 10, (i / 100) % 5));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!("file{i}.txt")),
            format!("content {i}\n"),
        )
        .unwrap();
    }
    std::fs::create_dir_all(repo.join("bin")).unwrap();
    write_executable(&repo.join("bin/tool.sh"));
    std::os::unix::fs::symlink("d0/e0/f0/file0.txt", repo.join("latest")).unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "base"]);
    git(repo, &["rev-parse", "HEAD"]).trim().to_string()
}

fn write_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `(worktree path, branch ref)` pairs from `git worktree list --porcelain`.
pub fn git_worktrees(repo: &Path) -> Vec<(PathBuf, Option<String>)> {
    let mut out = Vec::new();
    for block in git(repo, &["worktree", "list", "--porcelain"]).split("\n\n") {
        let mut path = None;
        let mut branch = None;
        for line in block.lines() {
            if let Some(p) = line.strip_prefix("worktree ") {
                path = Some(PathBuf::from(p));
            }
            if let Some(b) = line.strip_prefix("branch ") {
                branch = Some(b.to_string());
            }
        }
        if let Some(path) = path {
            out.push((path, branch));
        }
    }
    out
}

pub fn canon(p: &Path) -> PathBuf {
    p.canonicalize().unwrap()
}
