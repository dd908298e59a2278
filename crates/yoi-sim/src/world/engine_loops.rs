//! The engine's background loops, driven one step at a time on the simulated clock, as the
//! server's loops drive them: the router's `Orchestrator::step`, and the service's sweep,
//! which is `expire_due` then `flow_tick` (with its merges) then a notification sweep, as
//! `yoi serve` runs them every second.
//!
//! A loop's error is a line of the trace, not a violation: the server logs it and goes on,
//! and whether the step left the workspace right is for the checks after it (the reference
//! model takes the router's and the service's edges from here). The orchestrator's holds live
//! in the world's `Live`, so a restart drops them as a process's death would.

use std::any::Any;

use yoi_engine::assignments as asg;
use yoi_engine::routing::{PassHooks, StepEnv};

use super::World;

impl World {
    pub(super) fn route(&mut self) {
        let now = self.now();
        let live = self.live.as_mut().expect("the world is running");
        let turn = || -> Box<dyn Any> { Box::new(()) };
        let stop = || false;
        let clock = move || now;
        let env = StepEnv {
            ws: &live.ws,
            db: &live.db,
            hooks: PassHooks {
                turn: &turn,
                stop: &stop,
                clock: &clock,
            },
        };
        let out = live.orch.step(&env, now);
        let status = live.orch.status().clone();
        self.note(format!(
            "  routed {} (accepted so far {}, last error {:?})",
            out.routed, status.accepted, status.last_error
        ));
    }

    pub(super) fn sweep(&mut self) {
        let now = self.now();
        let l = self.live();
        let expired = asg::expire_due(&l.ws, &l.db, now);
        let ticked = asg::flow_tick(&l.ws, &l.db, now);
        match expired {
            Ok(o) if !o.expired.is_empty() => self.note(format!("  expired {:?}", o.expired)),
            Ok(_) => {}
            Err(e) => self.note(format!("  the lease sweep failed: {e}")),
        }
        match ticked {
            Ok(t) if t != Default::default() => self.note(format!("  {t:?}")),
            Ok(_) => {}
            Err(e) => self.note(format!("  the flow tick failed: {e}")),
        }
        self.notify();
    }
}
