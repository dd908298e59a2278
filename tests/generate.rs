//! A generated workspace for benchmarks: TICKETS tickets (states spread evenly, complete
//! briefs) with about RELATIONS `depends_on` relations to older tickets, so there is no cycle.
//!
//! Files are written with yoi-core's renderers directly, so generation is fast. A fixed-seed
//! generator makes every run produce the same workspace; callers print [`SEED`].

use std::path::Path;

use yoi_core::item::Item;
use yoi_core::relation::{Relation, RelationKind, RelationsFile};
use yoi_core::state::State;
use yoi_core::thread::{Event, EventKind};
use yoi_core::{TicketId, Timestamp};

pub const SEED: u64 = 0x5EED_2026_1129;

/// xorshift64*: small, fast and reproducible; not for anything secret.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Write the tickets into the workspace at `root` (already initialised); returns the number of
/// relations made.
pub fn generate(root: &Path, tickets: usize, relations: usize) -> usize {
    generate_in(root, tickets, relations, None)
}

/// [`generate`] with every ticket in `state` (queued tickets are queued by `bench`) instead of
/// states spread evenly; each ticket's brief names its own write scope `src/t<i>/**`.
pub fn generate_in(root: &Path, tickets: usize, relations: usize, state: Option<State>) -> usize {
    let mut rng = Rng(SEED);
    let base = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
    let ids: Vec<TicketId> = (0..tickets)
        .map(|i| {
            TicketId::from_ulid(ulid::Ulid::from_parts(
                base.unix_millis() as u64 + i as u64 * 1000,
                rng.next_u64() as u128,
            ))
        })
        .collect();
    let dir = root.join(".yoi/tickets");
    let mut made = 0;
    let per = relations as f64 / tickets as f64;
    for (i, id) in ids.iter().enumerate() {
        let t = Timestamp::from_unix_millis(id.millis() as i64).to_seconds();
        let mut item = Item::new(format!("Generated ticket {i}"), t, String::new());
        let brief = "## Intent\nExercise the store.\n\n## Acceptance criteria\n- it lists\n\n## Validation\n`yoi ticket list`\n";
        match state {
            None => item.set_body_text(brief),
            Some(_) => item.set_body_text(&format!("{brief}\n## Write scope\n- src/t{i}/**\n")),
        }
        item.state = State::ALL[rng.below(6) as usize];
        if let Some(s) = state {
            item.state = s;
            if s == State::Queued {
                item.queued_by = Some("bench".into());
                item.queued_at = Some(t);
            }
        }
        let tdir = dir.join(id.as_str());
        std::fs::create_dir_all(tdir.join("artifacts")).unwrap();
        std::fs::write(tdir.join("item.md"), item.render()).unwrap();
        let event = Event::new(EventKind::Create, "Ticket created.")
            .with_attr("id", ulid::Ulid::from_parts(id.millis(), 7).to_string())
            .with_attr("author", "bench")
            .with_attr("at", t.to_string());
        std::fs::write(tdir.join("thread.md"), event.render()).unwrap();
        if item.state == State::Closed {
            std::fs::write(tdir.join("resolution.md"), "Generated.\n").unwrap();
        }
        // About `per` dependencies on older tickets, chosen without repeats.
        let want = if i == 0 {
            0
        } else {
            (per * 2.0 * (rng.below(1000) as f64 / 1000.0)).round() as usize
        };
        let mut file = RelationsFile::empty();
        for _ in 0..want.min(i) {
            let target = ids[rng.below(i as u64) as usize].clone();
            if !file.contains(RelationKind::DependsOn, &target) {
                file.relations.push(Relation {
                    ticket_id: id.clone(),
                    kind: RelationKind::DependsOn,
                    target,
                    note: None,
                    author: "bench".into(),
                    at: t,
                });
                made += 1;
            }
        }
        if !file.relations.is_empty() {
            std::fs::write(tdir.join("artifacts/relations.json"), file.render()).unwrap();
        }
    }
    made
}
