use super::*;

fn id(n: u64) -> TicketId {
    TicketId::legacy_from_millis(1_700_000_000_000 + n)
}

fn rel(from: u64, kind: RelationKind, to: u64) -> Relation {
    Relation {
        ticket_id: id(from),
        kind,
        target: id(to),
        note: None,
        author: "alice".into(),
        at: Timestamp::parse("2026-11-29T10:00:00Z").unwrap(),
    }
}

#[test]
fn file_round_trips_sorted_with_trailing_newline() {
    let mut f = RelationsFile::empty();
    f.relations.push(rel(1, RelationKind::Related, 3));
    f.relations.push(rel(1, RelationKind::DependsOn, 2));
    let text = f.render();
    assert!(text.ends_with("}\n"));
    let parsed = RelationsFile::parse(&text, &id(1)).unwrap();
    assert_eq!(parsed.relations[0].kind, RelationKind::DependsOn);
    assert_eq!(parsed.render(), text);
}

#[test]
fn file_rejects_foreign_owner_self_duplicates_unknown_fields_and_versions() {
    let mut f = RelationsFile::empty();
    f.relations.push(rel(1, RelationKind::DependsOn, 2));
    assert!(matches!(
        RelationsFile::parse(&f.render(), &id(9)),
        Err(RelationsFileError::Owner { .. })
    ));
    let mut s = RelationsFile::empty();
    s.relations.push(rel(1, RelationKind::DependsOn, 1));
    assert!(matches!(
        RelationsFile::parse(&s.render(), &id(1)),
        Err(RelationsFileError::SelfTarget { index: 0 })
    ));
    let mut d = f.clone();
    d.relations.push(rel(1, RelationKind::DependsOn, 2));
    assert!(matches!(
        RelationsFile::parse(&serde_json::to_string(&d).unwrap(), &id(1)),
        Err(RelationsFileError::Duplicate { .. })
    ));
    let unknown = f.render().replace("\"author\"", "\"extra\": 1, \"author\"");
    assert!(matches!(
        RelationsFile::parse(&unknown, &id(1)),
        Err(RelationsFileError::Json { .. })
    ));
    let v2 = f.render().replace("\"version\": 1", "\"version\": 2");
    assert_eq!(
        RelationsFile::parse(&v2, &id(1)),
        Err(RelationsFileError::Version { found: 2 })
    );
}

#[test]
fn blockers_follow_depends_on_and_incoming_blocks_until_finished() {
    let g = RelationGraph::new(&[
        rel(1, RelationKind::DependsOn, 2),
        rel(3, RelationKind::Blocks, 1),
        rel(1, RelationKind::Related, 4),
        rel(1, RelationKind::DependsOn, 5),
    ]);
    let states = |t: &TicketId| {
        if t == &id(2) {
            Some(State::Queued)
        } else if t == &id(3) {
            Some(State::Planning)
        } else if t == &id(5) {
            Some(State::Done)
        } else {
            None
        }
    };
    let b = g.blockers(&id(1), states);
    assert_eq!(b.len(), 2);
    assert_eq!(b[0].ticket, id(2));
    assert_eq!(b[0].reason_kind, "depends_on");
    assert_eq!(b[1].ticket, id(3));
    assert_eq!(b[1].reason_kind, "blocked_by");
    assert_eq!(
        b[0].to_string(),
        format!("{} via depends_on (state: queued)", id(2))
    );
    // A missing ticket blocks.
    let g = RelationGraph::new(&[rel(1, RelationKind::DependsOn, 7)]);
    assert_eq!(g.blockers(&id(1), |_| None)[0].state, None);
}

#[test]
fn cycle_with_reports_the_path_it_would_close() {
    let g = RelationGraph::new(&[
        rel(1, RelationKind::DependsOn, 2),
        rel(2, RelationKind::DependsOn, 3),
    ]);
    let c = g
        .cycle_with(&id(3), RelationKind::DependsOn, &id(1))
        .unwrap();
    assert_eq!(c, vec![id(3), id(1), id(2), id(3)]);
    // `1 blocks 3` means 3 waits on 1: with 1 -> 2 -> 3 that closes a cycle too.
    let c = g.cycle_with(&id(1), RelationKind::Blocks, &id(3)).unwrap();
    assert_eq!(
        format_cycle(&c),
        format_cycle(&[id(3), id(1), id(2), id(3)])
    );
    assert!(g
        .cycle_with(&id(1), RelationKind::DependsOn, &id(3))
        .is_none());
    assert!(g
        .cycle_with(&id(3), RelationKind::Related, &id(1))
        .is_none());
}

#[test]
fn cycles_finds_each_cycle_once_starting_at_the_smallest_id() {
    let g = RelationGraph::new(&[
        rel(2, RelationKind::DependsOn, 3),
        rel(3, RelationKind::DependsOn, 1),
        rel(1, RelationKind::DependsOn, 2),
        rel(5, RelationKind::Blocks, 4),
        rel(4, RelationKind::Blocks, 5),
        rel(6, RelationKind::DependsOn, 1),
    ]);
    let cycles = g.cycles(32);
    assert_eq!(
        cycles,
        vec![vec![id(1), id(2), id(3), id(1)], vec![id(4), id(5), id(4)],]
    );
    assert_eq!(g.cycles(1).len(), 1);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn render_parse_render_is_identity(
            notes in proptest::collection::vec(proptest::option::of(any::<String>()), 0..6),
            author in any::<String>(),
        ) {
            let mut f = RelationsFile::empty();
            for (i, note) in notes.into_iter().enumerate() {
                let mut r = rel(0, RelationKind::ALL[i % 5], 10 + i as u64);
                r.note = note;
                r.author = author.clone();
                f.relations.push(r);
            }
            let once = f.render();
            let parsed = RelationsFile::parse(&once, &id(0)).unwrap();
            prop_assert_eq!(parsed.render(), once);
        }
    }
}

#[test]
fn the_blocked_set_agrees_with_asking_each_ticket_and_runs_keep_their_order() {
    // 60 tickets, relations of every kind at random, some targets unknown (70..80), in random
    // order, so a source's relations are mostly not together.
    let mut x = 7u64;
    let mut next = |n: u64| {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (x >> 33) % n
    };
    let mut rels = Vec::new();
    for _ in 0..400 {
        let a = next(60);
        let b = if next(10) == 0 {
            70 + next(10)
        } else {
            next(60)
        };
        if a != b {
            rels.push(rel(a, RelationKind::ALL[next(5) as usize], b));
        }
    }
    let states: Vec<State> = (0..60).map(|_| State::ALL[next(6) as usize]).collect();
    let state_of = |t: &TicketId| (0..60).find(|&n| &id(n) == t).map(|n| states[n as usize]);
    let g = RelationGraph::new(&rels);
    let set = g.blocked_set(state_of);
    let mut blocked = 0;
    for n in 0..80 {
        let t = id(n);
        assert_eq!(set.contains(&t), g.is_blocked(&t, state_of), "ticket {n}");
        assert_eq!(set.contains(&t), !g.blockers(&t, state_of).is_empty());
        blocked += usize::from(set.contains(&t));
        // Each ticket's runs hold exactly its relations, in the order they were added.
        let out: Vec<&Relation> = rels.iter().filter(|r| r.ticket_id == t).collect();
        assert_eq!(g.outgoing(&t).collect::<Vec<_>>(), out);
        let inc: Vec<&Relation> = rels.iter().filter(|r| r.target == t).collect();
        assert_eq!(g.incoming(&t).collect::<Vec<_>>(), inc);
    }
    assert!(blocked > 10 && blocked < 60, "{blocked} of 60 blocked");
    assert!(
        !set.contains(&id(999)),
        "a ticket no relation names waits on nothing"
    );
}

#[test]
fn cycles_are_one_per_strongly_connected_component_against_reachability() {
    // Sparse random graphs of 30 tickets, relations of every kind: the components found are
    // exactly the pairs that reach each other through waits (a closure computed the slow way),
    // each reported cycle is a real path of waits inside its component, starting at its
    // smallest id, and a limit keeps the components with the smallest ids.
    let mut x = 11u64;
    let mut next = |n: u64| {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (x >> 33) % n
    };
    let mut seen_cycles = 0;
    for round in 0..200 {
        let n = 30u64;
        let mut rels = Vec::new();
        for _ in 0..(20 + round % 60) {
            let (a, b) = (next(n), next(n));
            if a != b {
                rels.push(rel(a, RelationKind::ALL[next(5) as usize], b));
            }
        }
        let g = RelationGraph::new(&rels);
        let waits = |a: u64, b: u64| g.waits_on(&id(a)).iter().any(|(t, _)| t == &id(b));
        let mut reach = vec![vec![false; n as usize]; n as usize];
        for a in 0..n {
            for b in 0..n {
                reach[a as usize][b as usize] = waits(a, b);
            }
        }
        for k in 0..n as usize {
            for a in 0..n as usize {
                for b in 0..n as usize {
                    if reach[a][k] && reach[k][b] {
                        reach[a][b] = true;
                    }
                }
            }
        }
        // The expected components: each node's smallest partner, for nodes on a cycle.
        let mut expected: Vec<Vec<u64>> = Vec::new();
        for a in 0..n {
            let comp: Vec<u64> = (0..n)
                .filter(|&b| {
                    b == a || (reach[a as usize][b as usize] && reach[b as usize][a as usize])
                })
                .collect();
            if comp.len() > 1 && comp[0] == a {
                expected.push(comp);
            }
        }
        let cycles = g.cycles(usize::MAX);
        assert_eq!(cycles.len(), expected.len(), "round {round}");
        for (cycle, comp) in cycles.iter().zip(&expected) {
            assert_eq!(cycle[0], id(comp[0]), "round {round}");
            assert_eq!(cycle.first(), cycle.last(), "round {round}");
            for w in cycle.windows(2) {
                let a = comp
                    .iter()
                    .find(|&&m| id(m) == w[0])
                    .expect("in the component");
                let b = comp
                    .iter()
                    .find(|&&m| id(m) == w[1])
                    .expect("in the component");
                assert!(waits(*a, *b), "round {round}: {a} does not wait on {b}");
            }
        }
        let limited = g.cycles(1);
        assert_eq!(limited.len(), expected.len().min(1));
        assert_eq!(limited.first(), cycles.first());
        seen_cycles += cycles.len();
    }
    assert!(seen_cycles > 50, "only {seen_cycles} cycles in 200 graphs");
}
