//! Landing approved work on a target branch: [`plan_merge`] says whether the ticket's commit
//! fast-forwards the target, is already in it, or has diverged; [`land`] moves the target by
//! compare-and-swap and brings a worktree that has the target checked out (often the user's
//! main worktree) along — but only when every path the merge changes is clean there. Otherwise
//! nothing is written and the dirty paths are returned, so a person's uncommitted work is never
//! overwritten.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;
use gix::refs::transaction::PreviousValue;
use gix::refs::Target;

use crate::branch::{branch_at, branch_ref_name, checked_out_in};
use crate::{repo, sparse, GitError};

/// How `commit` relates to the target branch's head `before`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergePlan {
    /// `commit` is `before` or already in its history: nothing to merge.
    AlreadyMerged { before: String },
    /// `before` is an ancestor of `commit`: the target can move to it, changing `changed`.
    FastForward {
        before: String,
        after: String,
        changed: Vec<String>,
    },
    /// Both sides have commits the other lacks; the ticket branch must integrate the target.
    Diverged { before: String },
}

/// What [`plan_merge`] finds for merging `commit` into branch `target`. The common case (the
/// ticket's commit is a few commits ahead of the target) walks only those commits; the target's
/// whole history is walked only to tell "already merged" from "diverged".
pub fn plan_merge(repo_root: &Path, target: &str, commit: &str) -> Result<MergePlan, GitError> {
    let repo = repo::open(repo_root)?;
    let before_id = repo::peel_to_commit(&repo, repo_root, target)?;
    let commit_id = repo::peel_to_commit(&repo, repo_root, commit)?;
    let before = before_id.to_string();
    if before_id == commit_id {
        return Ok(MergePlan::AlreadyMerged { before });
    }
    if reaches(&repo, repo_root, commit_id, before_id)? {
        return Ok(MergePlan::FastForward {
            before,
            after: commit_id.to_string(),
            changed: changed_between(&repo, repo_root, before_id, commit_id)?,
        });
    }
    if reaches(&repo, repo_root, before_id, commit_id)? {
        return Ok(MergePlan::AlreadyMerged { before });
    }
    Ok(MergePlan::Diverged { before })
}

/// Whether `ancestor` is in the history of `from`.
fn reaches(
    repo: &gix::Repository,
    root: &Path,
    from: gix::ObjectId,
    ancestor: gix::ObjectId,
) -> Result<bool, GitError> {
    let walk = repo
        .rev_walk([from])
        .all()
        .map_err(|e| GitError::git(root, "walk the history", e))?;
    for info in walk {
        if info
            .map_err(|e| GitError::git(root, "walk the history", e))?
            .id
            == ancestor
        {
            return Ok(true);
        }
    }
    Ok(false)
}

fn tree_id(
    repo: &gix::Repository,
    root: &Path,
    commit: gix::ObjectId,
) -> Result<gix::ObjectId, GitError> {
    let fail = |e: &dyn std::fmt::Display| GitError::git(root, "read a tree", e);
    let c = repo.find_commit(commit).map_err(|e| fail(&e))?;
    Ok(c.tree_id().map_err(|e| fail(&e))?.detach())
}

/// Every file path whose entry differs between commits `from` and `to` (added, removed,
/// changed content, mode or kind), sorted.
pub fn changed_paths(repo_root: &Path, from: &str, to: &str) -> Result<Vec<String>, GitError> {
    let repo = repo::open(repo_root)?;
    let from = repo::peel_to_commit(&repo, repo_root, from)?;
    let to = repo::peel_to_commit(&repo, repo_root, to)?;
    changed_between(&repo, repo_root, from, to)
}

pub(crate) fn changed_between(
    repo: &gix::Repository,
    root: &Path,
    from: gix::ObjectId,
    to: gix::ObjectId,
) -> Result<Vec<String>, GitError> {
    changed_outside(repo, root, from, to, &[])
}

/// [`changed_between`] without looking into the folders `leave_out` (paths ending in `/`): a
/// left-out folder that differs is neither listed nor read, whatever it holds.
pub(crate) fn changed_outside(
    repo: &gix::Repository,
    root: &Path,
    from: gix::ObjectId,
    to: gix::ObjectId,
    leave_out: &[&str],
) -> Result<Vec<String>, GitError> {
    let mut out = Vec::new();
    let (a, b) = (tree_id(repo, root, from)?, tree_id(repo, root, to)?);
    diff_trees(repo, root, "", Some(a), Some(b), leave_out, &mut out)?;
    out.sort();
    out.dedup();
    Ok(out)
}

type Entries = Vec<(String, gix::objs::tree::EntryMode, gix::ObjectId)>;

fn entries(
    repo: &gix::Repository,
    root: &Path,
    tree: Option<gix::ObjectId>,
) -> Result<Entries, GitError> {
    let Some(tree) = tree else {
        return Ok(Vec::new());
    };
    let fail = |e: &dyn std::fmt::Display| GitError::git(root, "read a tree", e);
    let t = repo.find_tree(tree).map_err(|e| fail(&e))?;
    let decoded = t.decode().map_err(|e| fail(&e))?;
    Ok(decoded
        .entries
        .iter()
        .map(|e| {
            (
                e.filename.to_str_lossy().into_owned(),
                e.mode,
                e.oid.to_owned(),
            )
        })
        .collect())
}

/// Push onto `out` every file path under `prefix` (empty or ending in `/`) whose entry differs
/// between the trees `a` and `b` (`None`: no tree there). Equal subtrees are not read, nor are
/// the folders `leave_out` (paths ending in `/`).
pub(crate) fn diff_trees(
    repo: &gix::Repository,
    root: &Path,
    prefix: &str,
    a: Option<gix::ObjectId>,
    b: Option<gix::ObjectId>,
    leave_out: &[&str],
    out: &mut Vec<String>,
) -> Result<(), GitError> {
    if a == b {
        return Ok(());
    }
    let (left, right) = (entries(repo, root, a)?, entries(repo, root, b)?);
    let mut names: Vec<&str> = left
        .iter()
        .chain(right.iter())
        .map(|(n, _, _)| n.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let l = left.iter().find(|(n, _, _)| n == name);
        let r = right.iter().find(|(n, _, _)| n == name);
        if l.map(|e| (e.1, e.2)) == r.map(|e| (e.1, e.2)) {
            continue;
        }
        let path = format!("{prefix}{name}");
        let sub = |e: Option<&(String, gix::objs::tree::EntryMode, gix::ObjectId)>| {
            e.filter(|e| e.1.is_tree()).map(|e| e.2)
        };
        let (lt, rt) = (sub(l), sub(r));
        let folder = format!("{path}/");
        if (lt.is_some() || rt.is_some()) && !sparse::left_out(&folder, leave_out) {
            diff_trees(repo, root, &folder, lt, rt, leave_out, out)?;
        }
        // A file on either side (a tree replaced by a file counts both ways).
        if l.is_some_and(|e| !e.1.is_tree()) || r.is_some_and(|e| !e.1.is_tree()) {
            out.push(path);
        }
    }
    Ok(())
}

/// What [`land`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landed {
    /// The target moved; these worktrees had it checked out and were brought along.
    Moved { worktrees: Vec<PathBuf> },
    /// Nothing was written: a worktree with the target checked out has uncommitted changes in
    /// paths the merge changes.
    Deferred {
        worktree: PathBuf,
        dirty: Vec<String>,
    },
}

/// Move branch `target` from `before` to `after` (a fast-forward whose changed paths are
/// `changed`), by compare-and-swap on `before`. A worktree with the target checked out is
/// updated in exactly those paths (files and index) when all of them are clean there; paths
/// under any of `untouched` (yoi's own folder) are never written in a worktree.
pub fn land(
    repo_root: &Path,
    target: &str,
    before: &str,
    after: &str,
    changed: &[String],
    untouched: &[&str],
) -> Result<Landed, GitError> {
    let repo = repo::open(repo_root)?;
    let full_name = branch_ref_name(target)?;
    let old = repo::peel_to_commit(&repo, repo_root, before)?;
    let new = repo::peel_to_commit(&repo, repo_root, after)?;
    branch_at(&repo, repo_root, target, &full_name, old)?;
    let worktrees = checked_out_in(&repo, &full_name)?;
    let before_tree = repo
        .find_commit(old)
        .map_err(|e| GitError::git(repo_root, "read the target", e))?
        .tree()
        .map_err(|e| GitError::git(repo_root, "read the target", e))?;
    for wt in &worktrees {
        let dirty = dirty_among(wt, &before_tree, changed)?;
        if !dirty.is_empty() {
            return Ok(Landed::Deferred {
                worktree: wt.clone(),
                dirty,
            });
        }
    }
    repo.reference(
        full_name,
        new,
        PreviousValue::MustExistAndMatch(Target::Object(old)),
        format!("yoi: merge {new} into {target}"),
    )
    .map_err(|e| GitError::git(repo_root, "move the target branch", e))?;
    let writable: Vec<&String> = changed
        .iter()
        .filter(|c| !untouched.iter().any(|u| c.starts_with(u)))
        .collect();
    for wt in &worktrees {
        update_worktree(wt, new, &writable, &[])?;
    }
    Ok(Landed::Moved { worktrees })
}

/// The paths among `changed` that the worktree `wt` (whose HEAD is the tree `head`) does not
/// have exactly as committed: staged (the index entry differs from `head`), modified (the file
/// differs from the index; files whose stat matches the index are taken as unchanged, as git
/// does), or in the way (an untracked file or folder, or a file where the merge needs a
/// folder). Like git's own checkout it looks only at the paths the merge changes, not at the
/// whole worktree.
fn dirty_among(
    wt: &Path,
    head: &gix::Tree<'_>,
    changed: &[String],
) -> Result<Vec<String>, GitError> {
    let repo = repo::open(wt)?;
    let fail = |e: &dyn std::fmt::Display| GitError::git(wt, "read the index", e);
    let index = repo.index_or_empty().map_err(|e| fail(&e))?;
    // A folder the index holds as one entry (a sparse index) has no file on disk to be dirty:
    // its paths are clean while the entry is the folder of `head`.
    let mut folders = Vec::new();
    for (folder, id) in sparse::folders(&index) {
        let committed = head
            .clone()
            .lookup_entry_by_path(folder.trim_end_matches('/'))
            .map_err(|e| fail(&e))?
            .map(|e| e.object_id());
        folders.push((folder, committed == Some(id)));
    }
    let mut dirty = Vec::new();
    for rel in changed {
        if let Some((_, clean)) = folders.iter().find(|(f, _)| rel.starts_with(f.as_str())) {
            if !clean {
                dirty.push(rel.clone());
            }
            continue;
        }
        let committed = head
            .clone()
            .lookup_entry_by_path(rel.as_str())
            .map_err(|e| fail(&e))?
            .filter(|e| !e.mode().is_tree())
            .map(|e| e.object_id());
        let staged = index
            .entry_by_path(rel.as_bytes().as_bstr())
            .map(|e| (e.id, e.stat, e.mode));
        let full = wt.join(rel.as_str());
        let on_disk = std::fs::symlink_metadata(&full).ok();
        // A parent that is a file (or a link) is in the way too.
        let blocked = Path::new(rel.as_str())
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .any(|a| {
                std::fs::symlink_metadata(wt.join(a)).is_ok_and(|m| !m.is_dir())
                    && index
                        .entry_by_path(a.to_string_lossy().as_bytes().as_bstr())
                        .is_none()
            });
        let clean = match (committed, staged, on_disk) {
            _ if blocked => false,
            // Not in HEAD: clean only while nothing is staged or lying there.
            (None, None, None) => true,
            (None, _, _) => false,
            (Some(_), None, _) => false,
            (Some(c), Some((id, _, _)), _) if c != id => false,
            (Some(_), Some(_), None) => false,
            (Some(_), Some((id, stat, _)), Some(m)) => {
                if m.is_dir() {
                    false
                } else {
                    let now = gix::index::fs::Metadata::from_path_no_follow(&full)
                        .ok()
                        .and_then(|m| gix::index::entry::Stat::from_fs(&m).ok());
                    if now.is_some_and(|n| n == stat) {
                        true
                    } else {
                        // The stat moved: compare the content.
                        let bytes = if m.file_type().is_symlink() {
                            std::fs::read_link(&full)
                                .map(|t| t.to_string_lossy().into_owned().into_bytes())
                                .unwrap_or_default()
                        } else {
                            std::fs::read(&full).unwrap_or_default()
                        };
                        gix::objs::compute_hash(repo.object_hash(), gix::objs::Kind::Blob, &bytes)
                            .is_ok_and(|h| h == id)
                    }
                }
            }
        };
        if !clean {
            dirty.push(rel.clone());
        }
    }
    Ok(dirty)
}

/// Write `paths` of commit `commit` into the worktree `wt` — the files and their index entries —
/// removing those the commit does not have. The folders `leave_out` (paths ending in `/`) and
/// those the index already holds as one folder entry get no file: each becomes the folder entry
/// of `commit`'s folder (see [`crate::add_worktree_sparse`]), whatever form it had, and a file
/// still checked out under one is removed. The index is written without git's tree cache.
pub(crate) fn update_worktree(
    wt: &Path,
    commit: gix::ObjectId,
    paths: &[&String],
    leave_out: &[&str],
) -> Result<(), GitError> {
    let repo = repo::open(wt)?;
    let fail = |what: &'static str| move |e: &dyn std::fmt::Display| GitError::git(wt, what, e);
    let tree = repo
        .find_commit(commit)
        .map_err(|e| fail("read the commit")(&e))?
        .tree()
        .map_err(|e| fail("read the tree")(&e))?;
    let mut index = repo.open_index().map_err(|e| fail("read the index")(&e))?;
    let mut folders: Vec<String> = leave_out.iter().map(|p| sparse::folder(p)).collect();
    folders.extend(sparse::folders(&index).into_iter().map(|(f, _)| f));
    folders.sort();
    folders.dedup();
    let skip: Vec<&str> = folders.iter().map(String::as_str).collect();
    index.remove_entries(|_, path, _| paths.iter().any(|p| p.as_bytes() == path.as_bytes()));
    for rel in paths {
        if sparse::left_out(rel, &skip) {
            continue;
        }
        let full = wt.join(rel.as_str());
        let entry = tree
            .clone()
            .lookup_entry_by_path(rel.as_str())
            .map_err(|e| fail("read the tree")(&e))?;
        match std::fs::symlink_metadata(&full) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => std::fs::remove_file(&full).map_err(|e| fail("remove a file")(&e))?,
            Err(_) => {}
        }
        let Some(entry) = entry.filter(|e| !e.mode().is_tree()) else {
            // Gone in the commit: the file is removed, and so are the folders it leaves empty.
            remove_empty_parents(wt, &full);
            continue;
        };
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(|e| fail("make a folder")(&e))?;
        }
        let data = entry
            .object()
            .map_err(|e| fail("read a blob")(&e))?
            .detach()
            .data;
        let mode = match entry.mode().kind() {
            EntryKind::Link => {
                let target = std::path::PathBuf::from(data.to_str_lossy().into_owned());
                std::os::unix::fs::symlink(target, &full).map_err(|e| fail("write a link")(&e))?;
                gix::index::entry::Mode::SYMLINK
            }
            EntryKind::BlobExecutable => {
                std::fs::write(&full, &data).map_err(|e| fail("write a file")(&e))?;
                let mut p = std::fs::metadata(&full)
                    .map_err(|e| fail("write a file")(&e))?
                    .permissions();
                p.set_mode(p.mode() | 0o111);
                std::fs::set_permissions(&full, p).map_err(|e| fail("write a file")(&e))?;
                gix::index::entry::Mode::FILE_EXECUTABLE
            }
            // A submodule entry is recorded, not checked out.
            EntryKind::Commit => gix::index::entry::Mode::COMMIT,
            _ => {
                std::fs::write(&full, &data).map_err(|e| fail("write a file")(&e))?;
                gix::index::entry::Mode::FILE
            }
        };
        let stat = match gix::index::fs::Metadata::from_path_no_follow(&full) {
            Ok(m) => gix::index::entry::Stat::from_fs(&m).unwrap_or_default(),
            Err(_) => gix::index::entry::Stat::default(),
        };
        index.dangerously_push_entry(
            stat,
            entry.object_id(),
            gix::index::entry::Flags::empty(),
            mode,
            rel.as_bytes().as_bstr(),
        );
    }
    for rel in sparse::set_folders(wt, &mut index, &tree, &folders)? {
        let full = wt.join(rel);
        if std::fs::symlink_metadata(&full).is_ok_and(|m| !m.is_dir()) {
            std::fs::remove_file(&full).map_err(|e| fail("remove a file")(&e))?;
        }
        remove_empty_parents(wt, &full);
    }
    index.sort_entries();
    // git's tree cache (written by `git commit`) still describes the old entries; written back
    // as it is, it would make git's next commit there record the trees from before the update.
    index.remove_tree();
    let (state, index_path) = index.into_parts();
    let state = sparse::with_sdir(state, wt)?;
    gix::index::File::from_state(state, index_path)
        .write(Default::default())
        .map_err(|e| fail("write the index")(&e))?;
    Ok(())
}

/// Remove the folders above `full` (a path in the worktree `wt`) that are left empty, up to
/// `wt` itself.
fn remove_empty_parents(wt: &Path, full: &Path) {
    let mut dir = full.parent();
    while let Some(d) = dir.filter(|d| *d != wt) {
        if std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// What a three-way merge of a ticket's commit into a target that moved on found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreeWay {
    /// The trees merged without an unresolved conflict: `commit` is the merge commit (written,
    /// not on any branch), with the target's head `before` as its first parent and the ticket's
    /// commit as its second; `changed` are the paths it changes against `before`.
    Clean {
        before: String,
        commit: String,
        changed: Vec<String>,
    },
    /// At least one conflict is unresolved (content with markers, a failed rename, a binary or
    /// modify/delete clash); nothing was written that anything points at.
    Conflicted { before: String, paths: Vec<String> },
}

/// Merge `commit` into the target's head `before` as git's `ort` strategy does (merge base,
/// rename detection, text merges), with gix. Clean or conflicted is decided by gix's
/// unresolved-conflict check (conflict markers, failed or evasive renames), not by whether the
/// list of conflicts is empty: a conflict gix resolved on its own is clean. On a clean merge
/// the merged tree and a merge commit by `who` with `message` are written to the object
/// database; no reference moves.
pub fn merge_three_way(
    repo_root: &Path,
    before: &str,
    commit: &str,
    message: &str,
    who: &crate::Identity,
) -> Result<ThreeWay, GitError> {
    let mut repo = repo::open(repo_root)?;
    repo.object_cache_size_if_unset(4 * 1024 * 1024);
    let fail = |e: &dyn std::fmt::Display| GitError::git(repo_root, "merge", e);
    let ours = repo::peel_to_commit(&repo, repo_root, before)?;
    let theirs = repo::peel_to_commit(&repo, repo_root, commit)?;
    let options = repo.tree_merge_options().map_err(|e| fail(&e))?;
    let labels = gix::merge::blob::builtin_driver::text::Labels {
        ancestor: Some("base".into()),
        current: Some("target".into()),
        other: Some("ticket".into()),
    };
    let mut outcome = repo
        .merge_commits(ours, theirs, labels, options.into())
        .map_err(|e| fail(&e))?;
    let how = gix::merge::tree::TreatAsUnresolved::default();
    if outcome.tree_merge.has_unresolved_conflicts(how) {
        let mut paths: Vec<String> = outcome
            .tree_merge
            .conflicts
            .iter()
            .filter(|c| c.is_unresolved(how))
            .flat_map(|c| {
                let (a, b) = c.changes_in_resolution();
                [a.location().to_string(), b.location().to_string()]
            })
            .collect();
        paths.sort();
        paths.dedup();
        return Ok(ThreeWay::Conflicted {
            before: ours.to_string(),
            paths,
        });
    }
    let tree = outcome
        .tree_merge
        .tree
        .write()
        .map_err(|e| fail(&e))?
        .detach();
    let sig = who.signature();
    let mut buf = gix::date::parse::TimeBuf::default();
    let sig_ref = sig.to_ref(&mut buf);
    let merged = repo
        .new_commit_as(sig_ref, sig_ref, message, tree, [ours, theirs])
        .map_err(|e| fail(&e))?
        .id;
    Ok(ThreeWay::Clean {
        before: ours.to_string(),
        commit: merged.to_string(),
        changed: changed_between(&repo, repo_root, ours, merged)?,
    })
}

/// The parents of `commit`, first parent first.
pub fn parents_of(repo_root: &Path, commit: &str) -> Result<Vec<String>, GitError> {
    let repo = repo::open(repo_root)?;
    let id = repo::peel_to_commit(&repo, repo_root, commit)?;
    let c = repo
        .find_commit(id)
        .map_err(|e| GitError::git(repo_root, "read a commit", e))?;
    Ok(c.parent_ids().map(|p| p.to_string()).collect())
}
