//! `yoi-bench-tickets YOI_BINARY [TICKETS] [RELATIONS]`: generate a workspace with TICKETS
//! tickets (default 10,000) and about RELATIONS depends_on relations (default 20,000), then time
//! `yoi ticket list --json`, `yoi ticket list --ready` and `yoi ticket doctor` (median of 5).
//!
//! Files are written with yoi-core's renderers directly, so generation is fast; dependencies
//! only point at older tickets, so there is no cycle. A fixed-seed generator makes every run
//! produce the same workspace (the seed is printed).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use yoi_core::item::Item;
use yoi_core::relation::{Relation, RelationKind, RelationsFile};
use yoi_core::state::State;
use yoi_core::thread::{Event, EventKind};
use yoi_core::{TicketId, Timestamp};

const SEED: u64 = 0x5EED_2026_1129;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let yoi = std::fs::canonicalize(
        args.get(1)
            .expect("usage: yoi-bench-tickets YOI_BINARY [TICKETS] [RELATIONS]"),
    )
    .expect("YOI_BINARY exists");
    let tickets: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(10_000);
    let relations: usize = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(20_000);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let status = Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(status.success());
    yoi_store::init(root, "main").unwrap();
    let start = Instant::now();
    let made = generate(root, tickets, relations);
    println!(
        "seed {SEED:#x}: generated {tickets} tickets and {made} depends_on relations in {:.1}s",
        start.elapsed().as_secs_f64()
    );
    // The first command builds the database index from nothing.
    let t = Instant::now();
    let out = Command::new(&yoi)
        .args(["reindex"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "first index build (yoi reindex on an empty database) {:.3}s",
        t.elapsed().as_secs_f64()
    );
    for (label, cmd) in [
        ("yoi ticket list --json", vec!["ticket", "list", "--json"]),
        ("yoi ticket list --ready", vec!["ticket", "list", "--ready"]),
        (
            "yoi ticket list --blocked",
            vec!["ticket", "list", "--blocked", "--json"],
        ),
        (
            "yoi ticket list --search",
            vec!["ticket", "list", "--search", "ticket 42", "--json"],
        ),
        ("yoi reindex (no change)", vec!["reindex"]),
        ("yoi reindex --full", vec!["reindex", "--full"]),
        ("yoi ticket doctor", vec!["ticket", "doctor"]),
    ] {
        let mut times = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let out = Command::new(&yoi)
                .args(&cmd)
                .current_dir(root)
                .output()
                .unwrap();
            times.push(t.elapsed().as_secs_f64());
            assert!(
                out.status.success() || label.contains("doctor"),
                "{label}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "{label:<26} median {:.3}s  (min {:.3}s, max {:.3}s)",
            times[2], times[0], times[4]
        );
    }
}

fn generate(root: &Path, tickets: usize, relations: usize) -> usize {
    let mut rng = Rng(SEED);
    let base = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
    let ids: Vec<TicketId> = (0..tickets)
        .map(|i| {
            TicketId::from_ulid(ulid::Ulid::from_parts(
                base.unix_millis() as u64 + i as u64 * 1000,
                rng.next() as u128,
            ))
        })
        .collect();
    let dir = root.join(".yoi/tickets");
    let mut made = 0;
    let per = relations as f64 / tickets as f64;
    for (i, id) in ids.iter().enumerate() {
        let t = Timestamp::from_unix_millis(id.millis() as i64).to_seconds();
        let mut item = Item::new(format!("Generated ticket {i}"), t, String::new());
        item.set_body_text("## Intent\nExercise the store.\n\n## Acceptance criteria\n- it lists\n\n## Validation\n`yoi ticket list`\n");
        item.state = State::ALL[rng.below(6) as usize];
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
