//! The sparse index of a worktree that leaves folders out (yoi's `.yoi/tickets/`). Each left-out
//! folder is ONE index entry — mode `040000`, the folder's tree id, its path with a trailing `/`,
//! git's skip-worktree bit — and the index carries git's mandatory `sdir` extension: the format
//! `git sparse-checkout` writes with `index.sparse`. Building, comparing and moving such an index
//! never reads a tree under a left-out folder, so what a worktree costs does not grow with what
//! the folder holds.
//!
//! git reads this index as well: in a repository not configured for a sparse index, every git
//! command expands the folder entries in memory into skip-worktree file entries
//! (`ensure_full_index`), and one that writes the index writes that full form back. So everything
//! here reads both forms of a left-out folder — one folder entry, or its files with the
//! skip-worktree bit — and writes the folder entry.
//!
//! git also advises, on every command that expands such an index, to look for files outside the
//! sparse-checkout patterns and to run `git clean`: advice for `git sparse-checkout` users, wrong
//! here, one an agent might follow, and one a detached `git gc` writes into `gc.log`, which stops
//! automatic gc. [`quiet_git`] turns that advice off in the repository's config.
//!
//! Apart from that setting this module only builds and compares index states; it writes no index
//! and no file (the worktree and commit code do, and decide which folders are left out).

use std::path::Path;

use gix::bstr::{BStr, BString, ByteSlice, ByteVec};
use gix::index::entry::{Flags, Mode, Stat};
use gix::objs::tree::EntryKind;

use crate::GitError;

/// The index flags of an entry left out of a worktree (a folder entry or a file under one).
pub(crate) const SKIPPED: Flags = Flags::SKIP_WORKTREE.union(Flags::EXTENDED);

/// Whether `path` lies under one of the folder prefixes `leave_out` (each ending in `/`).
pub(crate) fn left_out(path: &str, leave_out: &[&str]) -> bool {
    leave_out.iter().any(|p| path.starts_with(p))
}

/// `prefix` as a folder path ending in `/`, as a folder entry is named.
pub(crate) fn folder(prefix: &str) -> String {
    format!("{}/", prefix.trim_end_matches('/'))
}

/// The folder entries of `index`: their paths (ending in `/`) and tree ids.
pub(crate) fn folders(index: &gix::index::State) -> Vec<(String, gix::ObjectId)> {
    index
        .entries()
        .iter()
        .filter(|e| e.mode == Mode::DIR)
        .map(|e| (e.path(index).to_str_lossy().into_owned(), e.id))
        .collect()
}

/// The index of `tree` as a worktree that leaves out the folders `leave_out` (paths ending in
/// `/`) holds it: every file an entry, each left-out folder one folder entry whose tree is not
/// read. Path components are checked with `validate` when given, as gix checks the index it
/// builds for a checkout. Sorted; marked sparse (see [`with_sdir`]) when it has a folder entry.
pub(crate) fn index_of_tree(
    repo: &gix::Repository,
    root: &Path,
    tree: gix::ObjectId,
    leave_out: &[&str],
    validate: Option<gix::validate::path::component::Options>,
) -> Result<gix::index::State, GitError> {
    with_sdir(
        entries_of_tree(repo, root, tree, leave_out, validate)?,
        root,
    )
}

/// [`index_of_tree`] in memory only, not marked sparse (it is compared, not written).
fn entries_of_tree(
    repo: &gix::Repository,
    root: &Path,
    tree: gix::ObjectId,
    leave_out: &[&str],
    validate: Option<gix::validate::path::component::Options>,
) -> Result<gix::index::State, GitError> {
    let mut state = gix::index::State::new(repo.object_hash());
    let mut prefix = BString::default();
    walk(
        repo,
        root,
        tree,
        &mut prefix,
        leave_out,
        validate,
        &mut state,
    )?;
    state.sort_entries();
    Ok(state)
}

fn walk(
    repo: &gix::Repository,
    root: &Path,
    tree: gix::ObjectId,
    prefix: &mut BString,
    leave_out: &[&str],
    validate: Option<gix::validate::path::component::Options>,
    state: &mut gix::index::State,
) -> Result<(), GitError> {
    let fail = |e: &dyn std::fmt::Display| GitError::git(root, "read a tree", e);
    let tree = repo.find_tree(tree).map_err(|e| fail(&e))?;
    let decoded = tree.decode().map_err(|e| fail(&e))?;
    for entry in &decoded.entries {
        if let Some(options) = validate {
            let link = (entry.mode.kind() == EntryKind::Link)
                .then_some(gix::validate::path::component::Mode::Symlink);
            gix::validate::path::component(entry.filename, link, options).map_err(|e| {
                GitError::git(
                    root,
                    "read a tree",
                    format!("the path {prefix}{} is invalid: {e}", entry.filename),
                )
            })?;
        }
        let len = prefix.len();
        prefix.push_str(entry.filename);
        if entry.mode.is_tree() {
            prefix.push(b'/');
            if left_out(prefix.to_str_lossy().as_ref(), leave_out) {
                state.dangerously_push_entry(
                    Stat::default(),
                    entry.oid.to_owned(),
                    SKIPPED,
                    Mode::DIR,
                    prefix.as_bstr(),
                );
            } else {
                walk(
                    repo,
                    root,
                    entry.oid.to_owned(),
                    prefix,
                    leave_out,
                    validate,
                    state,
                )?;
            }
        } else {
            state.dangerously_push_entry(
                Stat::default(),
                entry.oid.to_owned(),
                Flags::empty(),
                index_mode(entry.mode.kind()),
                prefix.as_bstr(),
            );
        }
        prefix.truncate(len);
    }
    Ok(())
}

/// The index mode of a tree entry that is not a tree.
pub(crate) fn index_mode(kind: EntryKind) -> Mode {
    match kind {
        EntryKind::Link => Mode::SYMLINK,
        EntryKind::BlobExecutable => Mode::FILE_EXECUTABLE,
        EntryKind::Commit => Mode::COMMIT,
        EntryKind::Tree => Mode::DIR,
        EntryKind::Blob => Mode::FILE,
    }
}

/// `state`, marked as a sparse index when it holds a folder entry, so that writing it writes the
/// `sdir` extension git requires of an index with folder entries (without it git takes the
/// entry for a file called `.yoi/tickets/`).
///
/// gix writes `sdir` only when `State::is_sparse()`, and sets that flag only while decoding an
/// index that has a folder entry or the extension; there is no setter. So a state that got its
/// first folder entry in memory is encoded by gix's own writer and decoded again by gix's own
/// reader, which sets the flag from what it reads. That costs one pass over the entries of an
/// index that is small precisely because its folders are left out.
pub(crate) fn with_sdir(
    state: gix::index::State,
    root: &Path,
) -> Result<gix::index::State, GitError> {
    if state.is_sparse() || !state.entries().iter().any(|e| e.mode == Mode::DIR) {
        return Ok(state);
    }
    let fail = |e: &dyn std::fmt::Display| GitError::git(root, "write the index", e);
    let (timestamp, hash) = (state.timestamp(), state.object_hash());
    let mut bytes = Vec::new();
    let options = gix::index::write::Options {
        extensions: gix::index::write::Extensions::None,
        // A null trailer instead of a checksum: these bytes are read back at once, not stored.
        skip_hash: true,
    };
    gix::index::File::from_state(state, "")
        .write_to(&mut bytes, options)
        .map_err(|e| fail(&e))?;
    let (sparse, _) = gix::index::State::from_bytes(&bytes, timestamp, hash, Default::default())
        .map_err(|e| fail(&e))?;
    debug_assert!(sparse.is_sparse());
    Ok(sparse)
}

/// The paths whose entry differs between `tree` (the tree of HEAD) and `index`: what `git diff
/// --cached --name-only` lists. A folder entry of the index is compared with the tree's folder by
/// tree id; only when they differ are the files under it that differ listed. Paths are files,
/// never folders; unmerged entries count as differing.
pub(crate) fn staged(
    repo: &gix::Repository,
    root: &Path,
    tree: gix::ObjectId,
    index: &gix::index::State,
) -> Result<Vec<String>, GitError> {
    let dirs: Vec<String> = folders(index).into_iter().map(|(p, _)| p).collect();
    let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
    let committed = entries_of_tree(repo, root, tree, &dirs, None)?;
    let (mut a, mut b) = (
        committed.entries().iter().peekable(),
        index.entries().iter().peekable(),
    );
    let mut out = Vec::new();
    let mut differ = |path: &BStr,
                      from: Option<(Mode, gix::ObjectId)>,
                      to: Option<(Mode, gix::ObjectId)>| {
        let dir =
            |side: Option<(Mode, gix::ObjectId)>| side.filter(|s| s.0 == Mode::DIR).map(|s| s.1);
        let (from_dir, to_dir) = (dir(from), dir(to));
        if from_dir.is_some() || to_dir.is_some() {
            let prefix = path.to_str_lossy().into_owned();
            crate::merge::diff_trees(repo, root, &prefix, from_dir, to_dir, &[], &mut out)?;
        }
        if from.is_some_and(|s| s.0 != Mode::DIR) || to.is_some_and(|s| s.0 != Mode::DIR) {
            out.push(path.to_str_lossy().trim_end_matches('/').to_string());
        }
        Ok::<_, GitError>(())
    };
    loop {
        match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(x), Some(y)) => {
                let (px, py) = (x.path(&committed), y.path(index));
                match gix::index::Entry::cmp_filepaths(px, py) {
                    std::cmp::Ordering::Less => {
                        differ(px, Some((x.mode, x.id)), None)?;
                        a.next();
                    }
                    std::cmp::Ordering::Greater => {
                        differ(py, None, Some((y.mode, y.id)))?;
                        b.next();
                    }
                    std::cmp::Ordering::Equal => {
                        let unmerged = y.stage() != gix::index::entry::Stage::Unconflicted;
                        if unmerged || (x.mode, x.id) != (y.mode, y.id) {
                            differ(px, Some((x.mode, x.id)), Some((y.mode, y.id)))?;
                        }
                        a.next();
                        b.next();
                    }
                }
            }
            (Some(x), None) => {
                differ(x.path(&committed), Some((x.mode, x.id)), None)?;
                a.next();
            }
            (None, Some(y)) => {
                differ(y.path(index), None, Some((y.mode, y.id)))?;
                b.next();
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Make each folder of `folders` (paths ending in `/`) in `index` the folder entry of the same
/// folder in `tree`, whatever form it had: the entries under it (a folder entry, or files with or
/// without the skip-worktree bit) are replaced by one folder entry, or by none when `tree` has no
/// such folder. Returns the paths of the entries replaced that were checked out (had no
/// skip-worktree bit): their files are still on disk, for the caller to remove. Leaves `index`
/// unsorted.
pub(crate) fn set_folders(
    root: &Path,
    index: &mut gix::index::State,
    tree: &gix::Tree<'_>,
    folders: &[String],
) -> Result<Vec<String>, GitError> {
    let fail = |e: &dyn std::fmt::Display| GitError::git(root, "read a tree", e);
    let mut checked_out = Vec::new();
    index.remove_entries(|_, path, entry| {
        let Some(path) = path.to_str().ok() else {
            return false;
        };
        let under = folders.iter().any(|f| path.starts_with(f.as_str()));
        if under && !entry.flags.contains(Flags::SKIP_WORKTREE) {
            checked_out.push(path.to_string());
        }
        under
    });
    for f in folders {
        let entry = tree
            .clone()
            .lookup_entry_by_path(f.trim_end_matches('/'))
            .map_err(|e| fail(&e))?;
        if let Some(entry) = entry.filter(|e| e.mode().is_tree()) {
            index.dangerously_push_entry(
                Stat::default(),
                entry.object_id(),
                SKIPPED,
                Mode::DIR,
                f.as_bytes().as_bstr(),
            );
        }
    }
    Ok(checked_out)
}

/// Turn off git's advice about expanding a sparse index (`advice.sparseIndexExpanded`) in the
/// repository's shared config, once, keeping the rest of the file as it was (gix edits it under
/// git's lock). A worktree's own config would not do: git commands in every worktree read the
/// indexes of all of them (`git fsck`, `git repack -a`, the `git gc` that runs now and then),
/// expand yoi's sparse ones and give the advice there too. It is advice for `git sparse-checkout`
/// users only, so nothing else changes for anyone.
pub(crate) fn quiet_git(wt: &gix::Repository) -> Result<(), GitError> {
    clear_advice_gc_log(wt.common_dir());
    if wt.config_snapshot().boolean("advice.sparseIndexExpanded") == Some(false) {
        return Ok(());
    }
    let path = wt.common_dir().join("config");
    let fail = |e: &dyn std::fmt::Display| GitError::git(&path, "write git settings", e);
    // gix reads the file again under the lock: another worktree may have just been added.
    let mut config = wt.config_file_mut(&path).map_err(|e| fail(&e))?;
    if config.boolean("advice.sparseIndexExpanded").ok().flatten() == Some(false) {
        return Ok(());
    }
    config
        .set_raw_value("advice.sparseIndexExpanded", "false")
        .map_err(|e| fail(&e))?;
    config.commit().map_err(|e| fail(&e))
}

/// Remove `gc.log` when all it holds is git's sparse-index advice. `git prune` gives that
/// advice whatever the config says, a detached automatic `git gc` writes it into `gc.log`, and
/// git then runs no automatic gc until the log is a day old. A log that says anything else is
/// git's report of a real failure and stays.
fn clear_advice_gc_log(common_dir: &Path) {
    let log = common_dir.join("gc.log");
    let Ok(text) = std::fs::read_to_string(&log) else {
        return;
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let only_advice = !lines.is_empty()
        && lines.iter().all(|l| l.starts_with("hint:"))
        && text.contains("sparse index");
    if only_advice {
        let _ = std::fs::remove_file(&log);
    }
}
