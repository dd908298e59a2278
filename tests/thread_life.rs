//! Generated lives of a queued ticket's thread, for what routing reads of it: the
//! orchestrator's decisions (waiting, failed acceptances at several steps, ready, circuit
//! openings), people's decision comments that must not count, retries, attention events,
//! moves out of the queue and back (each move into `queued` starts a new circuit window), a
//! latest move that is not into `queued` (as a hand edit leaves it), decisions written before
//! events carried data, events without an id, and the comments, reports and reviews that make
//! up most of a long life. Seeded ([`crate::generate::Rng`]); the same seed gives the same
//! events.

use std::path::Path;

use yoi_core::decision::RoutingDecision;
use yoi_core::thread::{render_thread, Event, EventKind};
use yoi_core::Principal;

use crate::generate::Rng;

/// `n` events of a queued ticket's life, the `k`th written at second `from + k` of a day in
/// March 2026. Most events carry an id `<tag>-<k>`, unique across tickets with distinct tags.
pub fn life(rng: &mut Rng, tag: &str, n: usize, from: usize) -> Vec<Event> {
    let orchestrator = Principal::orchestrator().author();
    let steps = ["add_worktree", "accept", "resolve_target_ref"];
    let decision = |d: &RoutingDecision, by: &str| {
        Event::new(EventKind::Decision, &d.render_event()).with_attr("author", by)
    };
    let failed = |rng: &mut Rng| RoutingDecision::AcceptanceFailed {
        step: steps[rng.below(steps.len() as u64) as usize].into(),
        error: "boom".into(),
        attempt: 1 + rng.below(4) as u32,
    };
    let moved = |from: &str, to: &str, by: &str| {
        Event::new(EventKind::StateChanged, &format!("Moved to {to}."))
            .with_attr("author", by)
            .with_attr("from", from)
            .with_attr("to", to)
    };
    (0..n)
        .map(|i| {
            let k = from + i;
            let roll = rng.below(100);
            let e = match roll {
                0..=39 => Event::new(
                    EventKind::Comment,
                    &format!("Comment {k}: **progress** on `the thing`."),
                )
                .with_attr("author", "alice"),
                40..=49 => {
                    let d = match rng.below(3) {
                        0 => RoutingDecision::WaitingCapacity {
                            in_progress: 1 + rng.below(4) as usize,
                            max: 4,
                        },
                        1 => RoutingDecision::WaitingConflict { with: vec![] },
                        _ => RoutingDecision::CircuitOpen { failures: 3 },
                    };
                    decision(&d, &orchestrator)
                }
                50..=61 => decision(&failed(rng), &orchestrator),
                62..=64 => decision(
                    &RoutingDecision::ImplementationReady {
                        branch: format!("yoi/b-{k}"),
                        base_commit: "abc".into(),
                    },
                    &orchestrator,
                ),
                65..=67 => Event::new(EventKind::Attention, "Routing stopped.")
                    .with_attr("author", orchestrator.clone())
                    .with_attr(
                        yoi_store::ops::ATTENTION_REASON,
                        yoi_store::ops::CIRCUIT_OPEN,
                    ),
                68..=69 => Event::new(EventKind::Attention, "Look at this.")
                    .with_attr("author", "alice")
                    .with_attr(yoi_store::ops::ATTENTION_REASON, "question"),
                70..=73 => {
                    Event::new(EventKind::Retry, "Retry requested.").with_attr("author", "alice")
                }
                74..=77 => decision(&failed(rng), "human:mallory"),
                78..=81 => moved("planning", "queued", "alice"),
                82..=84 => moved("queued", "inprogress", &orchestrator),
                85..=86 => {
                    // A decision written before events carried data: prose only.
                    Event::new(EventKind::Decision, &failed(rng).render())
                        .with_attr("author", orchestrator.clone())
                }
                87..=90 => Event::new(EventKind::Assignment, &format!("Attempt {k} ended."))
                    .with_attr("author", "yoi"),
                91..=94 => Event::new(EventKind::ImplementationReport, "Changed `src/lib.rs`.")
                    .with_attr("author", "pod:coder"),
                _ => Event::new(EventKind::Review, "Request changes: untested.")
                    .with_attr("author", "pod:reviewer"),
            };
            let at = format!(
                "2026-03-{:02}T{:02}:{:02}:{:02}Z",
                2 + k / 86_400 % 27,
                k / 3600 % 24,
                k / 60 % 60,
                k % 60
            );
            let mut e = e.with_attr("at", at);
            if rng.below(20) != 0 {
                e.attrs.insert(0, ("id".into(), format!("{tag}-{k}")));
            }
            e
        })
        .collect()
}

/// Three failed acceptances in a row by the orchestrator and the circuit opened: a thread
/// ending so is routed `circuit_open`.
pub fn circuit_opened(tag: &str, from: usize) -> Vec<Event> {
    let orchestrator = Principal::orchestrator().author();
    let mut out: Vec<Event> = (1..=3)
        .map(|attempt| {
            let d = RoutingDecision::AcceptanceFailed {
                step: "add_worktree".into(),
                error: "boom".into(),
                attempt,
            };
            Event::new(EventKind::Decision, &d.render_event()).with_attr("author", &orchestrator)
        })
        .collect();
    out.push(
        Event::new(EventKind::Attention, "Routing stopped.")
            .with_attr("author", orchestrator.clone())
            .with_attr(
                yoi_store::ops::ATTENTION_REASON,
                yoi_store::ops::CIRCUIT_OPEN,
            ),
    );
    for (i, e) in out.iter_mut().enumerate() {
        e.attrs
            .insert(0, ("id".into(), format!("{tag}-open-{}", from + i)));
    }
    out
}

/// Append `events` to `id`'s thread.md by hand, as a `git pull` would bring them.
pub fn append(root: &Path, id: &str, events: &[Event]) {
    if events.is_empty() {
        return;
    }
    let path = root.join(".yoi/tickets").join(id).join("thread.md");
    let mut text = std::fs::read_to_string(&path).unwrap();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push('\n');
    text.push_str(&render_thread(events));
    std::fs::write(&path, text).unwrap();
}
