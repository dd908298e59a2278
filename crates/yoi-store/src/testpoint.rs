//! Named points on yoi's write paths, where a deterministic simulation (`crates/yoi-sim`) acts:
//! it crashes there (its hook panics, so nothing after the point runs, as when the process
//! dies) or does something at exactly that moment (another writer moves the target between a
//! merge's check and its update).
//!
//! The hook travels with the workspace it acts on ([`crate::writes::Writes::with_points`]) and
//! is absent outside the simulator: a point then costs one branch. Code reaches a point with
//! `ws.writes.hit(NAME)`. The names are stable; the simulator lists them in its schedules, and
//! [`ALL`] is this list for a test to check against.
//!
//! | point | between |
//! |---|---|
//! | `thread.appending` | whatever the caller wrote before (an assignment row), and a thread event |
//! | `thread.appended` | a thread event appended and fsynced, and the item rewritten |
//! | `files.written` | a mutation's files written, and the index told |
//! | `accept.worktree` | the accepted ticket's worktree made, and its first assignment |
//! | `accept.assignment` | the first assignment created, and the `accept` transition |
//! | `accept.accepted` | the `accept` transition, and the first assignment released to pods |
//! | `merge.before_land` | a merge's plan read, and the target's compare-and-swap |
//! | `merge.landed` | the target moved, and the merge recorded |
//! | `merge.recorded` | the merge row completed, and its attempt and the ticket's `done` written |
//! | `group.durable` | a group commit's files synced and renamed, and the index told |

/// Every point, as the table above lists it.
pub const ALL: [&str; 10] = [
    "thread.appending",
    "thread.appended",
    "files.written",
    "accept.worktree",
    "accept.assignment",
    "accept.accepted",
    "merge.before_land",
    "merge.landed",
    "merge.recorded",
    "group.durable",
];
