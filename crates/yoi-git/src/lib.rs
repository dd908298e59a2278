//! yoi's git layer, on gix. Everything yoi does to a repository goes through here; the rest of
//! yoi never shells out to git for the repository's content.
//!
//! - [`repo`]: finding a repository and resolving revisions to commit ids;
//! - [`branch`]: creating work branches, refusing to move one that exists elsewhere; listing
//!   them;
//! - [`history`]: ancestry, what changed under a folder, and moving a work branch by
//!   compare-and-swap;
//! - [`worktree`]: adding (on a branch or detached), listing, checking, removing and pruning linked worktrees, refusing to
//!   delete uncommitted work unless forced; the ticket worktrees leave `.yoi/tickets/` out;
//! - [`attempt`]: an attempt's own object folder and bringing its commits in;
//! - [`commit`] and [`merge`]: committing what a worktree holds, landing work on a target;
//! - [`remote`]: a named remote's URL, and pushing, fetching, listing and deleting refs there —
//!   the one place that runs the git CLI, because gix has no push and the repository's own
//!   credential helpers must apply to both directions;
//! - `sparse` and `status` (inside the crate): the sparse index of a worktree that leaves a
//!   folder out (one entry for the folder, git's `sdir` extension) and a status that compares it
//!   with HEAD without reading what the folder holds.
//!
//! Commit ids cross this boundary as lowercase hex strings, paths as `PathBuf`.

pub mod attempt;
pub mod branch;
pub mod commit;
mod error;
pub mod history;
pub mod merge;
pub mod remote;
pub mod repo;
mod sparse;
mod status;
pub mod worktree;

pub use attempt::{
    attempt_git_env, head_unpeeled, import_objects, worktree_layout, WorktreeLayout,
};
pub use branch::{
    branch_exists, create_branch, create_ref, delete_branch, delete_ref, delete_ref_at,
    delete_refs_under, list_branches, refs_under, refs_under_at, BranchInfo, BranchOutcome,
};
pub use commit::{commit_all, commit_log, commits_between, head_of, CommitLine, Identity};
pub use error::GitError;
pub use history::{changed_under, is_ancestor, move_branch, move_branch_back};
pub use merge::{
    changed_paths, land, merge_three_way, parents_of, plan_merge, Landed, MergePlan, ThreeWay,
};
pub use repo::{discover, resolve_commit, user_name, RepoInfo};
pub use worktree::{
    add_worktree, add_worktree_detached, add_worktree_sparse, detached_at, discard_worktree,
    is_dirty, list_worktrees, list_worktrees_with, prune_worktrees, remove_worktree,
    reset_detached, uncommitted_changes, worktree_head, worktree_info, NotDetachedAt, Reset,
    StatusOf, WorktreeInfo,
};
