//! relations.json and orchestration-plan.jsonl: each file's own validity (per ticket), then the
//! checks across tickets — dangling targets, depends_on/blocks cycles, blockers of queued and
//! in-progress tickets, supersedes/duplicate_of notices, plan records naming missing tickets.
//! The relation graph is built from the files the per-ticket pass already read.

use std::collections::{HashMap, HashSet};

use yoi_core::finding::{Finding, SafeFix};
use yoi_core::plan::{PlanError, PlanRecord};
use yoi_core::relation::{
    format_cycle, RelationGraph, RelationKind, RelationsFile, RelationsFileError,
};
use yoi_core::state::State;
use yoi_core::TicketId;

use super::ticket::TicketScan;
use yoi_store::tickets::{ITEM, PLAN, RELATIONS};
use yoi_store::workspace::Workspace;

/// Most cycles listed; past it one `relations.cycle_limit` warning says there are more.
pub const CYCLE_LIMIT: usize = 32;

fn nth_line_with(text: &str, pattern: &str, n: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(pattern))
        .nth(n)
        .map(|(i, _)| i + 1)
}

/// Line of the `target` of relation `kind -> target` in a pretty-printed relations.json.
fn relation_line(text: &str, kind: RelationKind, target: &TicketId) -> Option<usize> {
    let kind_pat = format!("\"{}\"", kind.as_str());
    let target_pat = format!("\"{target}\"");
    let mut kind_matches = false;
    for (i, l) in text.lines().enumerate() {
        if l.contains("\"kind\"") {
            kind_matches = l.contains(&kind_pat);
        }
        if kind_matches && l.contains("\"target\"") && l.contains(&target_pat) {
            return Some(i + 1);
        }
    }
    nth_line_with(text, &target_pat, 0)
}

fn is_sorted(file: &RelationsFile) -> bool {
    file.relations
        .windows(2)
        .all(|w| (w[0].kind, &w[0].target) <= (w[1].kind, &w[1].target))
}

/// The file is exactly yoi's rendering of its relations except for their order, so sorting it
/// changes nothing but the order.
pub(super) fn only_order_differs(file: &RelationsFile, text: &str) -> bool {
    if is_sorted(file) {
        return false;
    }
    let mut as_written = serde_json::to_string_pretty(file).expect("relations serialize");
    as_written.push('\n');
    as_written == text
}

/// Parse and validate one relations.json; findings for what is wrong with the file itself.
pub(super) fn check_relations_file(
    id: &TicketId,
    rel: &str,
    text: &str,
    out: &mut Vec<Finding>,
) -> Option<RelationsFile> {
    let file = match RelationsFile::parse(text, id) {
        Ok(f) => f,
        Err(e) => {
            let nth_relation = |index: usize| nth_line_with(text, "\"ticket_id\"", index);
            let (check, line, fix) = match &e {
                RelationsFileError::Json { line, .. } => (
                    "relations.parse",
                    Some(*line),
                    format!("repair the JSON at {rel}:{line} by hand, or restore it with `git checkout -- {rel}`"),
                ),
                RelationsFileError::Version { .. } => (
                    "relations.invalid",
                    nth_line_with(text, "\"version\"", 0),
                    "this yoi reads version 1: upgrade yoi, or restore the file from git".into(),
                ),
                RelationsFileError::Owner { index, .. } => (
                    "relations.invalid",
                    nth_relation(*index),
                    format!("set `ticket_id` to {id} in relation {index} of {rel}, or move the relation into its owner's relations.json"),
                ),
                RelationsFileError::SelfTarget { index } => (
                    "relations.invalid",
                    nth_relation(*index),
                    format!("delete relation {index} from {rel}: a ticket cannot relate to itself"),
                ),
                RelationsFileError::NoteTooLarge { index } => (
                    "relations.invalid",
                    nth_relation(*index),
                    format!("shorten the note of relation {index} in {rel}; keep long text in an artifact"),
                ),
                RelationsFileError::Duplicate { target, .. } => (
                    "relations.invalid",
                    nth_line_with(text, &format!("\"{target}\""), 1),
                    format!("delete one of the two entries from {rel}"),
                ),
            };
            out.push(
                Finding::error(check, e.to_string(), "a version 1 relations file owned by this ticket: no self targets, no duplicates")
                    .with_ticket(id.as_str())
                    .at(rel, line)
                    .with_fix(fix),
            );
            return None;
        }
    };
    if !is_sorted(&file) {
        let f = Finding::warning(
            "relations.unsorted",
            format!("{rel} is not sorted by kind and target"),
            "relations sorted by kind, then target (the order yoi writes)",
        )
        .with_ticket(id.as_str())
        .at(rel, None);
        out.push(if only_order_differs(&file, text) {
            f.with_fix("yoi ticket doctor --fix")
                .with_safe_fix(SafeFix::SortRelations {
                    ticket: id.to_string(),
                })
        } else {
            f.with_fix(format!(
                "sort the entries of {rel} by kind, then target (its formatting also differs from yoi's, so doctor --fix leaves it)"
            ))
        });
    }
    Some(file)
}

/// Parse every line of one orchestration-plan.jsonl; findings for each bad line.
pub(super) fn check_plan_file(
    id: &TicketId,
    rel: &str,
    text: &str,
    out: &mut Vec<Finding>,
) -> Vec<(usize, PlanRecord)> {
    let mut records = Vec::new();
    let count = text.lines().count();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<PlanRecord>(raw) {
            Err(e) => {
                let torn = line == count && !text.ends_with('\n');
                let (seen, fix) = if torn {
                    (
                        format!("line {line}: {e} — the last line has no newline: probably a torn append"),
                        format!("delete the incomplete line {line} of {rel} and add the record again"),
                    )
                } else {
                    (
                        format!("line {line}: {e}"),
                        format!("repair line {line} of {rel} by hand"),
                    )
                };
                out.push(
                    Finding::error("plan.parse", seen, "one JSON plan record per line")
                        .with_ticket(id.as_str())
                        .at(rel, Some(line))
                        .with_fix(fix),
                );
            }
            Ok(rec) => match rec.validate(id, line) {
                Ok(()) => records.push((line, rec)),
                Err(PlanError::Invalid { reason, .. }) | Err(PlanError::Json { reason, .. }) => {
                    out.push(
                        Finding::error(
                            "plan.invalid",
                            format!("line {line}: {reason}"),
                            "a plan record that follows its kind's rules",
                        )
                        .with_ticket(id.as_str())
                        .at(rel, Some(line))
                        .with_fix(format!("repair line {line} of {rel} by hand")),
                    );
                }
            },
        }
    }
    records
}

/// The command that removes the relation making `waiter` wait on `blocker`.
fn rm_wait(waiter: &TicketId, blocker: &TicketId, why: &str) -> String {
    if why == "blocked_by" {
        format!("yoi ticket relation rm {blocker} blocks {waiter}")
    } else {
        format!("yoi ticket relation rm {waiter} depends_on {blocker}")
    }
}

pub(super) fn check_workspace(ws: &Workspace, tickets: &[TicketScan]) -> Vec<Finding> {
    let mut out = Vec::new();
    let by_id: HashMap<&TicketId, &TicketScan> = tickets.iter().map(|t| (&t.id, t)).collect();
    let exists: HashSet<&TicketId> = tickets.iter().filter(|t| t.exists).map(|t| &t.id).collect();
    let states: HashMap<&TicketId, State> = tickets
        .iter()
        .filter_map(|t| t.state.map(|s| (&t.id, s)))
        .collect();
    let state_of = |t: &TicketId| states.get(t).copied();
    let rel_of = |id: &TicketId, file: &str| ws.rel(&ws.path_of(id, file));
    let text_of = |id: &TicketId| by_id.get(id).map_or("", |t| t.relations_text.as_str());
    let graph = RelationGraph::new(
        tickets
            .iter()
            .filter_map(|t| t.relations.as_ref())
            .flat_map(|f| f.relations.iter()),
    );

    for t in tickets {
        let Some(file) = &t.relations else { continue };
        // Where a finding points is worked out only for a finding: most relations have none,
        // and finding a relation's line in its file costs more than checking it.
        let rel = || rel_of(&t.id, RELATIONS);
        for r in &file.relations {
            let line = || relation_line(&t.relations_text, r.kind, &r.target);
            if !exists.contains(&r.target) {
                let f = if r.kind.is_ordering() {
                    Finding::error
                } else {
                    Finding::warning
                };
                out.push(
                    f(
                        "relations.dangling",
                        format!("{} {} {}, but ticket {} does not exist", t.id, r.kind, r.target, r.target),
                        "relations point at existing tickets (a missing depends_on target blocks forever)",
                    )
                    .with_ticket(t.id.as_str())
                    .at(rel(), line())
                    .with_fix(format!("yoi ticket relation rm {} {} {}", t.id, r.kind, r.target)),
                );
            }
            if matches!(r.kind, RelationKind::Supersedes | RelationKind::DuplicateOf) {
                let (Some(a), Some(b)) = (state_of(&t.id), state_of(&r.target)) else {
                    continue;
                };
                if a.is_finished() || b.is_finished() {
                    continue;
                }
                let f = if r.kind == RelationKind::Supersedes {
                    Finding::warning(
                        "relations.superseded_active",
                        format!("{} supersedes {}, but both are unfinished ({a} and {b})", t.id, r.target),
                        "the superseded ticket is closed once its replacement takes over",
                    )
                    .with_fix(format!(
                        "verify the replacement, then `yoi ticket cancel {} --resolution \"superseded by {}\"`",
                        r.target, t.id
                    ))
                } else {
                    Finding::warning(
                        "relations.duplicate_active",
                        format!("{} duplicates {}, but both are unfinished ({a} and {b})", t.id, r.target),
                        "a duplicate is closed in favour of the ticket it duplicates",
                    )
                    .with_fix(format!(
                        "avoid a duplicate implementation: `yoi ticket cancel {} --resolution \"duplicate of {}\"`",
                        t.id, r.target
                    ))
                };
                out.push(f.with_ticket(t.id.as_str()).at(rel(), line()));
            }
        }
    }

    let mut cycles = graph.cycles(CYCLE_LIMIT + 1);
    let truncated = cycles.len() > CYCLE_LIMIT;
    cycles.truncate(CYCLE_LIMIT);
    for cycle in &cycles {
        let (a, b) = (&cycle[0], &cycle[1]);
        let via_depends = graph
            .outgoing(a)
            .any(|r| r.kind == RelationKind::DependsOn && &r.target == b);
        let (owner, kind, target) = if via_depends {
            (a, RelationKind::DependsOn, b)
        } else {
            (b, RelationKind::Blocks, a)
        };
        out.push(
            Finding::error(
                "relations.cycle",
                format!("depends_on/blocks cycle: {}", format_cycle(cycle)),
                "depends_on and blocks never form a cycle (every ticket in one waits forever)",
            )
            .with_ticket(a.as_str())
            .at(rel_of(owner, RELATIONS), relation_line(text_of(owner), kind, target))
            .with_fix(format!(
                "break the cycle by removing one of its relations, e.g. `yoi ticket relation rm {owner} {kind} {target}`"
            )),
        );
    }
    if truncated {
        out.push(
            Finding::warning(
                "relations.cycle_limit",
                format!("more than {CYCLE_LIMIT} depends_on/blocks cycles; only the first {CYCLE_LIMIT} are listed"),
                "no cycles",
            )
            .at(ws.rel(&ws.tickets_dir()), None)
            .with_fix("break the listed cycles, then run `yoi ticket doctor` again"),
        );
    }

    let describe = |b: &yoi_core::relation::Blocker| {
        let state = match b.state {
            Some(s) => format!("state: {s}"),
            None if exists.contains(&b.ticket) => "item.md unreadable".into(),
            None => "missing".into(),
        };
        format!("{} via {} ({state})", b.ticket, b.reason_kind)
    };
    for t in tickets {
        let Some(state) = t.state else { continue };
        if !state.is_in_flight() {
            continue;
        }
        let mut blockers = graph.blockers(&t.id, state_of);
        if state == State::Queued {
            blockers.retain(|b| !b.state.is_some_and(State::is_in_flight));
        }
        if blockers.is_empty() {
            continue;
        }
        let names: Vec<String> = blockers.iter().map(describe).collect();
        let rms: Vec<String> = blockers
            .iter()
            .map(|b| format!("`{}`", rm_wait(&t.id, &b.ticket, b.reason_kind.as_str())))
            .collect();
        let f = if state == State::Queued {
            Finding::warning(
                "ticket.blocked_queued",
                format!("{} is queued but blocked by {}", t.id, names.join(", ")),
                "a queued ticket waits only on finished or in-flight tickets (what queue accepts)",
            )
            .with_fix(format!(
                "finish or cancel the blockers, or `yoi ticket return-to-planning {} --reason \"waiting for {}\"`, or drop the relation: {}",
                t.id,
                blockers[0].ticket,
                rms.join(", ")
            ))
        } else {
            // Accept refuses a blocked ticket and adding a blocker to one in progress is refused,
            // so this is a blocker reopened after the work started (or a hand edit): worth a
            // person's look, since the work may need what the blocker will change, but nothing
            // is broken and the flow goes on.
            Finding::warning(
                "ticket.blocked_inprogress",
                format!("{} is in progress but blocked by {}", t.id, names.join(", ")),
                "an in-progress ticket has no open blocker (accept refuses one, and so does adding one)",
            )
            .with_fix(format!(
                "a blocker was reopened after the work started: finish the blockers, return the ticket to planning (`yoi ticket return-to-planning {} --reason R`), or drop the relation if it no longer holds: {}",
                t.id,
                rms.join(", ")
            ))
        };
        out.push(f.with_ticket(t.id.as_str()).at(rel_of(&t.id, ITEM), None));
    }

    for t in tickets {
        let rel = rel_of(&t.id, PLAN);
        for (line, rec) in &t.plan {
            let Some(other) = &rec.related_ticket else {
                continue;
            };
            if exists.contains(other) {
                continue;
            }
            out.push(
                Finding::warning(
                    "plan.missing_related",
                    format!("the {} record {} names ticket {other}, which does not exist", rec.kind, rec.id),
                    "plan records name existing tickets",
                )
                .with_ticket(t.id.as_str())
                .at(rel.clone(), Some(*line))
                .with_fix(format!(
                    "plan records are append-only history: restore {other} from git if it was deleted by mistake; otherwise nothing to do"
                )),
            );
        }
    }
    out
}
