//! A ticket tree shaped like a real history: what the older file-based system wrote over two
//! months of work (`shared/reference/older-format-and-lessons.md` §1), repeated until it holds
//! the number of tickets asked for.
//!
//! Unlike [`crate::generate`], whose tickets carry one creation event, these carry what real
//! tickets carried. Over 352 real tickets there were about ten events each (state_changed 1033,
//! implementation_report 717, decision 404, review 370, close 342, create 329, plan 205,
//! intake_summary 190, comment 38), with implementation reports and routing decisions running to
//! kilobytes. Almost all were closed with a resolution.md; 38% had an orchestration plan, 20% a
//! relations.json (mostly `related`), and 31% an extra Markdown artifact. The files are written
//! as that system wrote them: 13-character ids, single-quoted YAML, `assignee: null`, events
//! without ids, legacy `review` events, and blank lines before `---`.
//!
//! The same seed gives the same tree; callers print [`crate::generate::SEED`].

use std::fmt::Write as _;
use std::path::Path;

use yoi_core::{State, TicketId, Timestamp};

use crate::generate::{Rng, SEED};

/// What [`write_history`] made.
#[derive(Debug, Default, Clone, Copy)]
pub struct HistoryStats {
    pub tickets: usize,
    pub events: usize,
    pub bytes: u64,
    pub relations: usize,
    pub plans: usize,
}

/// Write `tickets` older-format tickets into the workspace at `root` (already initialised).
pub fn write_history(root: &Path, tickets: usize) -> HistoryStats {
    let mut rng = Rng(SEED ^ 0x4157_0000);
    let base = Timestamp::parse("2026-05-01T00:00:00Z")
        .unwrap()
        .unix_millis() as u64;
    let ids: Vec<TicketId> = (0..tickets)
        .map(|i| TicketId::legacy_from_millis(base + i as u64 * 37_000 + rng.below(30_000)))
        .collect();
    let dir = root.join(".yoi/tickets");
    let mut stats = HistoryStats {
        tickets,
        ..HistoryStats::default()
    };
    for (i, id) in ids.iter().enumerate() {
        let t = TicketScript::new(&mut rng, id, i);
        let tdir = dir.join(id.as_str());
        std::fs::create_dir_all(tdir.join("artifacts")).unwrap();
        let mut write = |name: &str, text: &str| {
            stats.bytes += text.len() as u64;
            std::fs::write(tdir.join(name), text).unwrap();
        };
        write("artifacts/.gitkeep", "");
        write("item.md", &t.item());
        let (thread, events) = t.thread(&mut rng);
        stats.events += events;
        write("thread.md", &thread);
        if t.state == "closed" {
            write("resolution.md", RESOLUTION);
        }
        if rng.below(100) < 38 {
            write(
                "artifacts/orchestration-plan.jsonl",
                &t.plan(&mut rng, &ids),
            );
            stats.plans += 1;
        }
        if i > 0 && rng.below(100) < 20 {
            let (json, n) = t.relations(&mut rng, &ids);
            write("artifacts/relations.json", &json);
            stats.relations += n;
        }
        if rng.below(100) < 31 {
            write("artifacts/review-1.md", &paragraphs(&mut rng, 4));
        }
    }
    stats
}

const RESOLUTION: &str = "Completed, reviewed, validated, and merged into develop.\n";

/// One ticket's life: when it was made, where it got to.
struct TicketScript<'a> {
    id: &'a TicketId,
    index: usize,
    created: i64,
    state: &'static str,
    title: String,
}

/// States reached, weighted like the real tree at the time it was untracked (341 of 352 closed).
const END_STATES: [(&str, u64); 6] = [
    ("closed", 960),
    ("done", 10),
    ("inprogress", 8),
    ("queued", 6),
    ("ready", 6),
    ("planning", 10),
];

const AREAS: [&str; 8] = [
    "worker-runtime",
    "ticket-backend",
    "orchestrator",
    "web",
    "cli",
    "merge-requests",
    "intake",
    "docs",
];

const WORDS: [&str; 24] = [
    "the",
    "ticket",
    "worker",
    "runtime",
    "backend",
    "merge",
    "request",
    "lease",
    "validated",
    "branch",
    "worktree",
    "orchestrator",
    "queue",
    "reviewer",
    "fixture",
    "regression",
    "`cargo test`",
    "passes",
    "state",
    "thread",
    "append",
    "atomic",
    "rename",
    "fsync",
];

impl<'a> TicketScript<'a> {
    fn new(rng: &mut Rng, id: &'a TicketId, index: usize) -> Self {
        let mut pick = rng.below(1000);
        let mut state = "closed";
        for (s, w) in END_STATES {
            if pick < w {
                state = s;
                break;
            }
            pick -= w;
        }
        let area = AREAS[rng.below(AREAS.len() as u64) as usize];
        TicketScript {
            id,
            index,
            created: id.millis() as i64 / 1000,
            state,
            title: format!("{area}: {} (history {index})", sentence(rng, 6)),
        }
    }

    fn at(&self, offset_s: i64) -> String {
        Timestamp::from_unix_millis((self.created + offset_s) * 1000)
            .to_seconds()
            .to_string()
    }

    fn item(&self) -> String {
        let mut s = String::from("---\n");
        let _ = writeln!(s, "title: '{}'", self.title.replace('\'', "''"));
        let _ = writeln!(s, "state: '{}'", self.state);
        let _ = writeln!(s, "created_at: '{}'", self.at(0));
        let _ = writeln!(s, "updated_at: '{}'", self.at(90_000));
        s.push_str("assignee: null\n");
        s.push_str("readiness: 'implementation_ready'\n");
        s.push_str("risk_flags: ['persistence', 'prompt-context']\n");
        s.push_str("repository_id: 'main'\nref_selector: 'develop'\n");
        if matches!(self.state, "queued" | "inprogress" | "done" | "closed") {
            s.push_str("queued_by: 'workspace-panel'\n");
            let _ = writeln!(s, "queued_at: '{}'", self.at(7_200));
        }
        s.push_str(
            "---\n\n## Background\n\nThe history tree repeats the shape of real tickets.\n\n",
        );
        s.push_str("## Requirements\n\n- keep every event\n- read the older format\n\n");
        s.push_str("## Acceptance criteria\n\n- `cargo test -p worker-runtime` passes\n");
        s
    }

    /// The thread, with the number of events in it.
    fn thread(&self, rng: &mut Rng) -> (String, usize) {
        let mut t = Thread::default();
        t.event(
            &format!("event: create author: \"yoi ticket\" at: {}", self.at(0)),
            "Created",
            "Created by LocalTicketBackend create.",
        );
        if rng.below(100) < 54 {
            t.event(
                &format!("event: intake_summary author: hare at: {}", self.at(600)),
                "Intake summary",
                &paragraphs(rng, 1),
            );
        }
        let mut clock = 1_200;
        let order = State::ALL.map(State::as_str);
        let reached = order.iter().position(|s| *s == self.state).unwrap_or(0);
        let reasons = [
            "intake_ready",
            "queued",
            "orchestrator_acceptance",
            "merged_and_validated",
            "closed",
        ];
        for step in 0..reached {
            let (from, to) = (order[step], order[step + 1]);
            clock += 3_600 + rng.below(3_600) as i64;
            t.event(
                &format!(
                    "event: state_changed author: hare at: {} from: {from} to: {to} reason: {} field: state",
                    self.at(clock),
                    reasons[step]
                ),
                "State changed",
                &format!("Ticket moved from {from} to {to}.\n"),
            );
            match to {
                "inprogress" => {
                    t.event(
                        &format!("event: decision author: yoi-orchestrator at: {}", self.at(clock + 5)),
                        "Decision",
                        &format!(
                            "Routing decision: implementation_ready\n\n```json\n{{\"intent\":\"{}\",\"write_scope\":[\"crates/{}/**\"],\"validation\":[\"cargo test\"]}}\n```\n\n{}",
                            sentence(rng, 12),
                            self.index % 97,
                            paragraphs(rng, 2)
                        ),
                    );
                    if rng.below(100) < 58 {
                        t.event(
                            &format!("event: plan author: hare at: {}", self.at(clock + 60)),
                            "Plan",
                            &paragraphs(rng, 2),
                        );
                    }
                    for n in 0..(1 + rng.below(3)) {
                        t.event(
                            &format!(
                                "event: implementation_report author: \"worker:codex/w{}\" at: {}",
                                n,
                                self.at(clock + 1_800 * (n as i64 + 1))
                            ),
                            "Implementation report",
                            &{
                                let n = 3 + rng.below(6) as usize;
                                paragraphs(rng, n)
                            },
                        );
                    }
                    if rng.below(100) < 90 {
                        t.event(
                            &format!(
                                "event: review author: reviewer at: {} status: approve",
                                self.at(clock + 7_200)
                            ),
                            "Review: approve",
                            &paragraphs(rng, 2),
                        );
                    }
                    clock += 9_000;
                }
                "closed" => t.event(
                    &format!(
                        "event: close author: hare at: {} status: closed",
                        self.at(clock)
                    ),
                    "Closed",
                    RESOLUTION,
                ),
                _ => {}
            }
        }
        if rng.below(100) < 10 {
            t.event(
                &format!("event: comment author: hare at: {}", self.at(clock + 30)),
                "Comment",
                &paragraphs(rng, 1),
            );
        }
        (t.text, t.events)
    }

    fn plan(&self, rng: &mut Rng, ids: &[TicketId]) -> String {
        let mut s = String::new();
        let at = self.at(3_000);
        let stamp = at
            .replace(['-', ':'], "")
            .replace('T', "-")
            .replace('Z', "");
        let _ = writeln!(
            s,
            "{{\"id\":\"orch-plan-{stamp}-1\",\"ticket_id\":\"{id}\",\"kind\":\"accepted_plan\",\"note\":\"accepted by the orchestrator\",\"accepted_plan\":{{\"summary\":\"{}\",\"branch\":\"work/{id}-history\",\"worktree\":\"<repo>/.worktree/{id}-history\",\"role_plan\":\"coder then reviewer\"}},\"author\":\"yoi-orchestrator\",\"at\":\"{at}\"}}",
            sentence(rng, 14),
            id = self.id.as_str()
        );
        if self.index > 0 && rng.below(100) < 30 {
            let other = &ids[rng.below(self.index as u64) as usize];
            let _ = writeln!(
                s,
                "{{\"id\":\"orch-plan-{stamp}-2\",\"ticket_id\":\"{}\",\"kind\":\"blocked_by\",\"related_ticket\":\"{}\",\"note\":\"do not start until it is merged\",\"author\":\"yoi-orchestrator\",\"at\":\"{at}\"}}",
                self.id.as_str(),
                other.as_str()
            );
        }
        s
    }

    /// relations.json with one to three relations to older tickets, and how many.
    fn relations(&self, rng: &mut Rng, ids: &[TicketId]) -> (String, usize) {
        let mut targets: Vec<(&str, &TicketId)> = Vec::new();
        for _ in 0..(1 + rng.below(3)) {
            let kind = if rng.below(100) < 56 {
                "related"
            } else {
                "depends_on"
            };
            let target = &ids[rng.below(self.index as u64) as usize];
            if !targets.iter().any(|(k, t)| *k == kind && *t == target) {
                targets.push((kind, target));
            }
        }
        targets.sort();
        let rows: Vec<String> = targets
            .iter()
            .map(|(kind, target)| {
                format!(
                    "    {{\n      \"ticket_id\": \"{}\",\n      \"kind\": \"{kind}\",\n      \"target\": \"{}\",\n      \"note\": \"{}\",\n      \"author\": \"yoi ticket\",\n      \"at\": \"{}\"\n    }}",
                    self.id.as_str(),
                    target.as_str(),
                    sentence(rng, 8),
                    self.at(400)
                )
            })
            .collect();
        (
            format!(
                "{{\n  \"version\": 1,\n  \"relations\": [\n{}\n  ]\n}}\n",
                rows.join(",\n")
            ),
            targets.len(),
        )
    }
}

/// thread.md as the older system appended it.
#[derive(Default)]
struct Thread {
    text: String,
    events: usize,
}

impl Thread {
    fn event(&mut self, header: &str, heading: &str, body: &str) {
        if self.events > 0 {
            self.text.push('\n');
        }
        let _ = write!(
            self.text,
            "<!-- {header} -->\n\n## {heading}\n\n{body}\n\n---\n"
        );
        self.events += 1;
    }
}

fn sentence(rng: &mut Rng, words: usize) -> String {
    let mut s = String::new();
    for w in 0..words {
        if w > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    s
}

/// `n` short Markdown paragraphs and lists, a few hundred bytes each.
fn paragraphs(rng: &mut Rng, n: usize) -> String {
    let mut s = String::new();
    for p in 0..n {
        if p > 0 {
            s.push_str("\n\n");
        }
        if p % 3 == 2 {
            for _ in 0..(2 + rng.below(4)) {
                let n = 8 + rng.below(8) as usize;
                let _ = writeln!(s, "- {}", sentence(rng, n));
            }
            s.pop();
        } else {
            let n = 40 + rng.below(50) as usize;
            let _ = write!(s, "{}.", sentence(rng, n));
        }
    }
    s
}
