//! Named points on yoi's write paths, where a deterministic simulation (`crates/yoi-sim`) acts:
//! it crashes there (its hook panics, so nothing after the point runs, as when the process
//! dies) or does something at exactly that moment (another writer moves the target between a
//! merge's check and its update).
//!
//! The hook is per thread and absent outside the simulator: a point then costs one
//! thread-local read. The names are stable; the simulator lists them in its schedules.
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

use std::cell::RefCell;

type Hook = Box<dyn Fn(&'static str)>;

thread_local! {
    static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
}

/// Reach point `name`: the current thread's hook, if any, runs (and may panic).
pub fn hit(name: &'static str) {
    // The hook is taken out while it runs, so a hook that itself writes (moving a target
    // through the store) does not re-enter itself.
    let Some(hook) = HOOK.with(|h| h.borrow_mut().take()) else {
        return;
    };
    struct Restore(Option<Hook>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(h) = self.0.take() {
                HOOK.with(|slot| {
                    let mut slot = slot.borrow_mut();
                    if slot.is_none() {
                        *slot = Some(h);
                    }
                });
            }
        }
    }
    let restore = Restore(Some(hook));
    if let Some(h) = &restore.0 {
        h(name);
    }
}

/// Run `hook` at every point this thread reaches until [`clear`] (replacing any earlier one).
pub fn install(hook: impl Fn(&'static str) + 'static) {
    HOOK.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
}

/// Remove this thread's hook.
pub fn clear() {
    HOOK.with(|h| *h.borrow_mut() = None);
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;

    #[test]
    fn a_hook_sees_the_points_of_its_own_thread_only_and_does_not_reenter() {
        let seen = Rc::new(Cell::new(0));
        let s = seen.clone();
        install(move |name| {
            assert_eq!(name, "files.written");
            s.set(s.get() + 1);
            // A point reached inside the hook does not call it again.
            hit("files.written");
        });
        hit("files.written");
        std::thread::spawn(|| hit("files.written")).join().unwrap();
        assert_eq!(seen.get(), 1);
        // A panicking hook is put back for the next point.
        let s = seen.clone();
        install(move |_| {
            s.set(s.get() + 1);
            panic!("crash");
        });
        assert!(std::panic::catch_unwind(|| hit("merge.landed")).is_err());
        assert!(std::panic::catch_unwind(|| hit("merge.landed")).is_err());
        assert_eq!(seen.get(), 3);
        clear();
        hit("merge.landed");
        assert_eq!(seen.get(), 3);
    }
}
