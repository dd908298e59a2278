//! What a worktree holds that its HEAD does not, as `git status --porcelain` lists it: paths
//! staged (the index differs from HEAD), modified or deleted (the files differ from the index),
//! and untracked (optionally ignored) ones. Only reads.
//!
//! gix's status compares HEAD with the index by building an index of HEAD's whole tree and
//! diffing the two; gix refuses that for a sparse index, and it would read every tree under a
//! left-out folder. So for a sparse index HEAD and the index are compared here, folder entry by
//! tree id ([`crate::sparse::staged`]), and gix compares only the index with the files, where a
//! folder entry (skip-worktree) is never changed or deleted. An index in full form goes through
//! gix's status as it is.

use std::path::Path;

use gix::progress::Discard;

use crate::{sparse, GitError};

/// Which paths besides the changed tracked ones a status lists.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Look {
    /// Untracked files, each (`Files`) or a wholly untracked folder once (`Collapsed`).
    pub untracked: gix::status::UntrackedFiles,
    /// Ignored files too, an ignored folder once.
    pub ignored: bool,
}

/// The paths the status of the worktree of `repo` (at `root`) lists, sorted, without repeats.
pub(crate) fn paths(
    repo: &gix::Repository,
    root: &Path,
    look: Look,
) -> Result<Vec<String>, GitError> {
    let fail = |e: &dyn std::fmt::Display| GitError::git(root, "read the status", e);
    let index = repo.index_or_empty().map_err(|e| fail(&e))?;
    let sparse_index = index.is_sparse();
    let mut platform = repo
        .status(Discard)
        .map_err(|e| fail(&e))?
        .untracked_files(look.untracked)
        .index(gix::worktree::IndexPersistedOrInMemory::Persisted(
            index.clone(),
        ));
    if look.ignored {
        platform = platform.dirwalk_options(|o| {
            o.emit_ignored(Some(gix::dir::walk::EmissionMode::CollapseDirectory))
        });
    }
    let mut paths = Vec::new();
    if sparse_index {
        let head_tree = repo.head_tree_id_or_empty().map_err(|e| fail(&e))?.detach();
        paths = sparse::staged(repo, root, head_tree, &index)?;
        for item in platform
            .into_index_worktree_iter(Vec::new())
            .map_err(|e| fail(&e))?
        {
            paths.push(item.map_err(|e| fail(&e))?.rela_path().to_string());
        }
    } else {
        for item in platform.into_iter(Vec::new()).map_err(|e| fail(&e))? {
            paths.push(item.map_err(|e| fail(&e))?.location().to_string());
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}
