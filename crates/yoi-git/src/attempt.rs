//! An attempt's git, kept off the main repository's: an agent runs with its own object folder
//! (`GIT_OBJECT_DIRECTORY`, the main one borrowed read-only as an alternate) and may write only
//! its worktree's administrative folder, so it can commit but never touch the main
//! repository's config, hooks, refs or existing objects. When it ends, the pod brings in what
//! its commits need ([`import_objects`]) — each object checked against its id as it is written
//! — and the server moves the branch by compare-and-swap, as for any attempt.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use gix::objs::{Find, Kind};

use crate::{repo, GitError};

/// Where a linked worktree's git lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeLayout {
    /// The main working tree (the repository root).
    pub main_root: PathBuf,
    /// The worktree's administrative folder (`.git/worktrees/NAME`: its HEAD, index, logs).
    pub admin_dir: PathBuf,
    /// The repository's shared git folder (`.git`).
    pub common_dir: PathBuf,
    /// Every other linked worktree of the repository.
    pub other_worktrees: Vec<PathBuf>,
}

/// The layout of the linked worktree at `worktree`, every path canonical.
pub fn worktree_layout(worktree: &Path) -> Result<WorktreeLayout, GitError> {
    let repo = repo::open(worktree)?;
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let common_dir = canon(repo.common_dir());
    let admin_dir = canon(repo.git_dir());
    if admin_dir == common_dir {
        return Err(GitError::NotAWorktree {
            repo: common_dir,
            path: worktree.to_path_buf(),
        });
    }
    let main = repo
        .main_repo()
        .map_err(|e| GitError::git(worktree, "open the main worktree", e))?;
    let main_root = main.workdir().map(canon).ok_or_else(|| GitError::Bare {
        path: common_dir.clone(),
    })?;
    let me = canon(worktree);
    let mut other_worktrees = Vec::new();
    for proxy in main
        .worktrees()
        .map_err(|e| GitError::git(worktree, "list worktrees", e))?
    {
        if let Ok(base) = proxy.base() {
            let base = canon(&base);
            if base != me {
                other_worktrees.push(base);
            }
        }
    }
    Ok(WorktreeLayout {
        main_root,
        admin_dir,
        common_dir,
        other_worktrees,
    })
}

/// The environment that sends an attempt's new objects to `objects` and reads the main
/// repository's (`common_dir/objects`) as an alternate.
pub fn attempt_git_env(objects: &Path, common_dir: &Path) -> Vec<(String, String)> {
    vec![
        ("GIT_OBJECT_DIRECTORY".into(), objects.display().to_string()),
        (
            "GIT_ALTERNATE_OBJECT_DIRECTORIES".into(),
            common_dir.join("objects").display().to_string(),
        ),
    ]
}

/// The commit HEAD of the worktree at `worktree` names, read without peeling it (the commit
/// may still be only in the attempt's own object folder).
pub fn head_unpeeled(worktree: &Path) -> Result<String, GitError> {
    let repo = repo::open(worktree)?;
    repo.head()
        .map_err(|e| GitError::git(worktree, "read HEAD", e))?
        .id()
        .map(|id| id.to_string())
        .ok_or_else(|| GitError::git(worktree, "read HEAD", "HEAD names no commit"))
}

/// Copy into the repository of `worktree` every object reachable from `head` that it lacks,
/// reading them from the attempt's object folder `from`. Each is written through the
/// repository (so its id is computed again) and refused when that id differs from the one it
/// was asked for. Returns how many objects were brought in.
pub fn import_objects(worktree: &Path, from: &Path, head: &str) -> Result<usize, GitError> {
    let repo = repo::open(worktree)?;
    let fail =
        |action: &'static str| move |e: &dyn std::fmt::Display| GitError::git(from, action, e);
    let head = gix::ObjectId::from_hex(head.as_bytes()).map_err(|e| fail("read the head")(&e))?;
    if repo.has_object(head) {
        return Ok(0);
    }
    let attempt = gix::odb::at(from, repo.object_hash())
        .map_err(|e| fail("open the attempt's objects")(&e))?;
    let hash = repo.object_hash();
    let mut seen = HashSet::new();
    let mut stack = vec![head];
    let mut found: Vec<(gix::ObjectId, Kind, Vec<u8>)> = Vec::new();
    let mut buf = Vec::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) || repo.has_object(id) {
            continue;
        }
        let data = attempt
            .try_find(&id, &mut buf)
            .map_err(|e| fail("read an object of the attempt")(&e))?
            .ok_or_else(|| {
                fail("read an object of the attempt")(&format!(
                    "object {id} is in neither the attempt's objects nor the repository"
                ))
            })?;
        let kind = data.kind;
        match kind {
            Kind::Commit => {
                let mut iter = gix::objs::CommitRefIter::from_bytes(data.data, hash);
                stack.push(
                    iter.tree_id()
                        .map_err(|e| fail("parse a commit of the attempt")(&e))?,
                );
                stack.extend(gix::objs::CommitRefIter::from_bytes(data.data, hash).parent_ids());
            }
            Kind::Tree => {
                for entry in gix::objs::TreeRefIter::from_bytes(data.data, hash) {
                    let entry = entry.map_err(|e| fail("parse a tree of the attempt")(&e))?;
                    if !entry.mode.is_commit() {
                        stack.push(entry.oid.to_owned());
                    }
                }
            }
            Kind::Tag => {
                let target = gix::objs::TagRefIter::from_bytes(data.data, hash)
                    .target_id()
                    .map_err(|e| fail("parse a tag of the attempt")(&e))?;
                stack.push(target);
            }
            Kind::Blob => {}
        }
        found.push((id, kind, data.data.to_vec()));
    }
    // What was found last (blobs, trees) is written first: a commit is never in the repository
    // before its tree.
    use gix::objs::Write;
    for (id, kind, data) in found.iter().rev() {
        let written = repo
            .objects
            .write_buf(*kind, data)
            .map_err(|e| fail("write an object into the repository")(&e))?;
        if written != *id {
            return Err(fail("write an object into the repository")(&format!(
                "the attempt's object {id} hashes to {written}; it is refused"
            )));
        }
    }
    Ok(found.len())
}
