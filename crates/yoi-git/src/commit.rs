//! [`commit_all`]: commit everything a working tree holds that its HEAD does not — modified,
//! deleted and new (not ignored) files — as one commit on its HEAD, like `git add -A && git
//! commit`. A pod uses it for what an agent left uncommitted in its detached worktree; the
//! index is rewritten from the new tree so the worktree reads clean afterwards. It never
//! touches a branch unless HEAD is one (yoi's pod worktrees are detached). A folder the index
//! holds as one entry (a sparse index, [`crate::add_worktree_sparse`]) goes into the commit as
//! that entry's tree, never read and never taken from the files; it stays one entry in the new
//! index.

use std::path::Path;

use gix::object::tree::EntryKind;

use crate::{repo, sparse, status, GitError};

/// Who a commit is by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub email: String,
    /// Seconds since the Unix epoch.
    pub time_secs: i64,
}

impl Identity {
    /// The author and committer line of a commit by this identity.
    pub(crate) fn signature(&self) -> gix::actor::Signature {
        gix::actor::Signature {
            name: self.name.as_str().into(),
            email: self.email.as_str().into(),
            time: gix::date::Time::new(self.time_secs, 0),
        }
    }
}

/// Commit every uncommitted change under `worktree` with `message`, by `who` (author and
/// committer). Returns the new commit id, or `None` when there was nothing to commit.
pub fn commit_all(
    worktree: &Path,
    message: &str,
    who: &Identity,
) -> Result<Option<String>, GitError> {
    let repo = repo::open(worktree)?;
    let fail =
        |action: &'static str| move |e: &dyn std::fmt::Display| GitError::git(worktree, action, e);
    let head = repo.head_id().map_err(|e| fail("read HEAD")(&e))?.detach();
    let head_tree = repo
        .find_commit(head)
        .map_err(|e| fail("read HEAD")(&e))?
        .tree_id()
        .map_err(|e| fail("read HEAD")(&e))?
        .detach();
    let old = repo
        .index_or_empty()
        .map_err(|e| fail("read the index")(&e))?;
    // The folders the index holds as one entry (a sparse index) have nothing on disk: the commit
    // takes each as the index has it, by tree id, and no path under one from the files.
    let folders = sparse::folders(&old);
    let skip: Vec<&str> = folders.iter().map(|(f, _)| f.as_str()).collect();
    let look = status::Look {
        untracked: gix::status::UntrackedFiles::Files,
        ignored: false,
    };
    let mut paths = status::paths(&repo, worktree, look)?;
    paths.retain(|p| !sparse::left_out(p, &skip));
    let committed = repo
        .find_tree(head_tree)
        .map_err(|e| fail("read HEAD")(&e))?;
    let mut moved = Vec::new();
    for (folder, id) in &folders {
        let name = folder.trim_end_matches('/');
        let was = committed
            .clone()
            .lookup_entry_by_path(name)
            .map_err(|e| fail("read HEAD")(&e))?
            .map(|e| e.object_id());
        if was != Some(*id) {
            moved.push((name, *id));
        }
    }
    if paths.is_empty() && moved.is_empty() {
        return Ok(None);
    }
    let mut editor = repo
        .edit_tree(head_tree)
        .map_err(|e| fail("edit the tree")(&e))?;
    for rel in &paths {
        let full = worktree.join(rel);
        let meta = std::fs::symlink_metadata(&full);
        match meta {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                editor
                    .remove(rel.as_str())
                    .map_err(|e| fail("edit the tree")(&e))?;
            }
            Err(e) => return Err(GitError::git(&full, "read a file", e)),
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&full)
                    .map_err(|e| GitError::git(&full, "read a link", e))?;
                let id = repo
                    .write_blob(target.to_string_lossy().as_bytes())
                    .map_err(|e| fail("write a blob")(&e))?;
                editor
                    .upsert(rel.as_str(), EntryKind::Link, id)
                    .map_err(|e| fail("edit the tree")(&e))?;
            }
            Ok(m) if m.is_file() => {
                let bytes =
                    std::fs::read(&full).map_err(|e| GitError::git(&full, "read a file", e))?;
                let id = repo
                    .write_blob(bytes)
                    .map_err(|e| fail("write a blob")(&e))?;
                use std::os::unix::fs::PermissionsExt;
                let kind = if m.permissions().mode() & 0o111 != 0 {
                    EntryKind::BlobExecutable
                } else {
                    EntryKind::Blob
                };
                editor
                    .upsert(rel.as_str(), kind, id)
                    .map_err(|e| fail("edit the tree")(&e))?;
            }
            // A folder reported by status (e.g. a nested repository) is left as it is.
            Ok(_) => {}
        }
    }
    for (name, id) in moved {
        editor
            .upsert(name, EntryKind::Tree, id)
            .map_err(|e| fail("edit the tree")(&e))?;
    }
    let tree = editor
        .write()
        .map_err(|e| fail("write the tree")(&e))?
        .detach();
    if tree == head_tree {
        return Ok(None);
    }
    let sig = who.signature();
    let mut buf = gix::date::parse::TimeBuf::default();
    let sig_ref = sig.to_ref(&mut buf);
    let commit = repo
        .commit_as(sig_ref, sig_ref, "HEAD", message, tree, [head])
        .map_err(|e| fail("write the commit")(&e))?
        .detach();
    let state = sparse::index_of_tree(&repo, worktree, tree, &skip, None)?;
    let mut index = gix::index::File::from_state(state, repo.index_path());
    // Entries the commit did not change keep what the old index knew of them: their stat (so
    // the next status need not read every file again) and the skip-worktree bit of files left
    // out of the worktree in full form, as git writes an index back (without it those would
    // read as deleted).
    for (entry, path) in index.entries_mut_with_paths() {
        if let Some(was) = old.entry_by_path(path) {
            if was.id == entry.id && was.mode == entry.mode {
                entry.stat = was.stat;
                entry.flags |= was.flags & sparse::SKIPPED;
            }
        }
    }
    index
        .write(Default::default())
        .map_err(|e| fail("write the index")(&e))?;
    Ok(Some(commit.to_string()))
}

/// The commit id HEAD of the working tree at `worktree` points at.
pub fn head_of(worktree: &Path) -> Result<String, GitError> {
    let repo = repo::open(worktree)?;
    repo.head_id()
        .map(|id| id.to_string())
        .map_err(|e| GitError::git(worktree, "read HEAD", e))
}

/// How many commits are reachable from `to` but not from `from` (linear history walk).
pub fn commits_between(repo_root: &Path, from: &str, to: &str) -> Result<u32, GitError> {
    let mut n = 0;
    walk_between(repo_root, from, to, |_| {
        n += 1;
        Ok(true)
    })?;
    Ok(n)
}

/// Visit the commits reachable from `to` but not from `from`, newest first, while `visit`
/// returns `true`.
fn walk_between(
    repo_root: &Path,
    from: &str,
    to: &str,
    mut visit: impl FnMut(gix::revision::walk::Info<'_>) -> Result<bool, GitError>,
) -> Result<(), GitError> {
    let repo = repo::open(repo_root)?;
    let f = repo::peel_to_commit(&repo, repo_root, from)?;
    let t = repo::peel_to_commit(&repo, repo_root, to)?;
    let walk = repo
        .rev_walk([t])
        .with_hidden([f])
        .all()
        .map_err(|e| GitError::git(repo_root, "walk the history", e))?;
    for info in walk {
        let info = info.map_err(|e| GitError::git(repo_root, "walk the history", e))?;
        if !visit(info)? {
            break;
        }
    }
    Ok(())
}

/// One commit as a history listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitLine {
    pub id: String,
    /// The first line of the message.
    pub summary: String,
    pub author: String,
    /// Seconds since the Unix epoch (the committer's time).
    pub time: i64,
}

/// The commits reachable from `to` but not from `from`, newest first, at most `limit`.
pub fn commit_log(
    repo_root: &Path,
    from: &str,
    to: &str,
    limit: usize,
) -> Result<Vec<CommitLine>, GitError> {
    let mut out = Vec::new();
    if limit == 0 {
        return Ok(out);
    }
    walk_between(repo_root, from, to, |info| {
        let commit = info
            .object()
            .map_err(|e| GitError::git(repo_root, "read a commit", e))?;
        out.push(CommitLine {
            id: info.id.to_string(),
            summary: commit
                .message()
                .map(|m| m.summary().to_string())
                .unwrap_or_default(),
            author: commit
                .author()
                .map(|a| a.name.to_string())
                .unwrap_or_default(),
            time: commit.time().map(|t| t.seconds).unwrap_or_default(),
        });
        Ok(out.len() < limit)
    })?;
    Ok(out)
}
