//! Relations: forward storage in the source ticket, thread audit, and every write-time refusal
//! (self, unknown target, duplicate, a depends_on/blocks cycle shown as a path, a new blocker of
//! a ticket in progress, a missing relation to remove).

use yoi_testkit::store as common;

use common::*;
use yoi_core::relation::{RelationKind, RelationsFile};
use yoi_core::thread::EventKind;
use yoi_core::TicketId;
use yoi_store::ops::{self, RelationRequest};
use yoi_store::query::relation_view;
use yoi_store::{ErrorClass, StoreError};

fn add(fx: &Fx, from: &TicketId, kind: RelationKind, to: &TicketId) -> Result<(), StoreError> {
    ops::add_relation(&fx.ws, &alice(2), from.as_str(), &relation(kind, to)).map(|_| ())
}

fn assert_cycle(err: StoreError, want: &[&TicketId]) {
    assert_eq!(err.class(), ErrorClass::Conflict, "{err}");
    let want_text = want
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(" -> ");
    assert!(err.to_string().ends_with(&want_text), "{err}");
    match err {
        StoreError::Cycle { cycle, .. } => assert_eq!(cycle, want_text),
        other => panic!("expected Cycle, got {other:?}"),
    }
}

#[test]
fn add_relation_stores_it_forward_and_records_a_thread_event() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    let out = ops::add_relation(
        &fx.ws,
        &alice(4),
        a.as_str(),
        &RelationRequest {
            kind: RelationKind::DependsOn,
            target: b.to_string(),
            note: Some("B defines the API.".into()),
        },
    )
    .unwrap();
    assert_eq!(out.operation, "relation_add");
    assert_eq!(out.ticket, a);

    let file = RelationsFile::parse(&fx.read(&a, "artifacts/relations.json"), &a).unwrap();
    assert_eq!(file.relations.len(), 1);
    let r = &file.relations[0];
    assert_eq!((r.kind, &r.target), (RelationKind::DependsOn, &b));
    assert_eq!(r.note.as_deref(), Some("B defines the API."));
    assert_eq!((r.author.as_str(), r.at), ("alice", ts(4)));
    // Nothing is stored on the target: the inverse is derived.
    assert!(!fx.path(&b, "artifacts/relations.json").exists());

    let event = fx.last_event(&a);
    assert_eq!(event.kind, EventKind::RelationChanged);
    assert_eq!(event.id(), out.event_id.as_deref());
    assert_eq!(event.get("action"), Some("add"));
    assert_eq!(event.get("kind"), Some("depends_on"));
    assert_eq!(event.get("target"), Some(b.as_str()));
    assert_eq!(
        event.body,
        format!("Added depends_on {b}.\n\nB defines the API.")
    );
    assert_eq!(fx.item(&a).updated_at, ts(4));
    assert_eq!(fx.kinds(&b), vec!["create"]);
}

#[test]
fn relations_list_from_both_ends() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    let c = fx.planning("C");
    fx.relate(&a, RelationKind::DependsOn, &b);
    fx.relate(&a, RelationKind::Related, &c);
    fx.relate(&c, RelationKind::Blocks, &a);

    let view = relation_view(&fx.ws, &a).unwrap();
    let mut names: Vec<(String, &str, TicketId)> = view
        .relations
        .iter()
        .map(|r| (r.name.clone(), r.direction, r.other.clone()))
        .collect();
    names.sort();
    let mut want = vec![
        ("depends_on".to_string(), "outgoing", b.clone()),
        ("related".to_string(), "outgoing", c.clone()),
        ("blocked_by".to_string(), "incoming", c.clone()),
    ];
    want.sort();
    assert_eq!(names, want);

    let view = relation_view(&fx.ws, &b).unwrap();
    assert_eq!(view.relations.len(), 1);
    assert_eq!(view.relations[0].name, "dependency_of");
    assert_eq!(view.relations[0].direction, "incoming");
    assert_eq!(view.relations[0].other, a);
}

#[test]
fn remove_relation_deletes_it_and_records_a_thread_event() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    fx.relate(&a, RelationKind::DependsOn, &b);
    fx.relate(&a, RelationKind::Related, &b);
    let out = ops::remove_relation(
        &fx.ws,
        &alice(6),
        a.as_str(),
        RelationKind::DependsOn,
        b.as_str(),
    )
    .unwrap();
    assert_eq!(out.operation, "relation_rm");
    let file = fx.ws.read_relations(&a).unwrap();
    assert_eq!(file.relations.len(), 1);
    assert_eq!(file.relations[0].kind, RelationKind::Related);
    let event = fx.last_event(&a);
    assert_eq!(event.kind, EventKind::RelationChanged);
    assert_eq!(event.get("action"), Some("remove"));
    assert_eq!(event.get("kind"), Some("depends_on"));
    assert_eq!(event.get("target"), Some(b.as_str()));
    assert_eq!(event.body, format!("Removed depends_on {b}."));
    assert_eq!(fx.item(&a).updated_at, ts(6));
    let actions: Vec<String> = fx
        .events(&a)
        .iter()
        .filter(|e| e.kind == EventKind::RelationChanged)
        .map(|e| format!("{} {}", e.get("action").unwrap(), e.get("kind").unwrap()))
        .collect();
    assert_eq!(
        actions,
        vec!["add depends_on", "add related", "remove depends_on"]
    );
}

#[test]
fn remove_relation_accepts_the_exact_id_of_a_deleted_target() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    fx.relate(&a, RelationKind::DependsOn, &b);
    std::fs::remove_dir_all(fx.ws.ticket_dir(&b)).unwrap();
    ops::remove_relation(
        &fx.ws,
        &alice(6),
        a.as_str(),
        RelationKind::DependsOn,
        &b.as_str().to_ascii_lowercase(),
    )
    .unwrap();
    assert!(fx.ws.read_relations(&a).unwrap().relations.is_empty());
}

#[test]
fn self_relation_is_refused() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let before = fx.snapshot();
    for kind in RelationKind::ALL {
        let err = add(&fx, &a, kind, &a).unwrap_err();
        assert_eq!(err.class(), ErrorClass::Refused, "{err}");
        assert!(matches!(err, StoreError::SelfRelation { ref ticket } if ticket == &a));
    }
    fx.assert_unchanged(&before);
}

#[test]
fn a_new_blocker_of_a_ticket_in_progress_is_refused_and_a_finished_one_is_not() {
    let fx = Fx::new();
    let started = fx.inprogress("Started");
    let open = fx.planning("Open");
    let done = fx.done("Finished");
    let before = fx.snapshot();
    // Either direction: the started ticket depends on an open one, or an open one blocks it.
    for err in [
        add(&fx, &started, RelationKind::DependsOn, &open).unwrap_err(),
        add(&fx, &open, RelationKind::Blocks, &started).unwrap_err(),
    ] {
        assert_eq!(err.class(), ErrorClass::Refused, "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&format!("{started} is in progress")),
            "{text}"
        );
        assert!(
            text.contains(&format!("{open} (planning) would block it")),
            "{text}"
        );
        assert!(text.contains("return-to-planning"), "{text}");
    }
    fx.assert_unchanged(&before);
    // A finished blocker holds nothing back; neither does a non-ordering relation, nor a
    // started ticket blocking an open one.
    add(&fx, &started, RelationKind::DependsOn, &done).unwrap();
    add(&fx, &started, RelationKind::Related, &open).unwrap();
    add(&fx, &open, RelationKind::DependsOn, &started).unwrap();
}

#[test]
fn unknown_target_is_refused() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let before = fx.snapshot();
    let err = ops::add_relation(
        &fx.ws,
        &alice(2),
        a.as_str(),
        &RelationRequest {
            kind: RelationKind::Related,
            target: "00000000000000000000000000".into(),
            note: None,
        },
    )
    .unwrap_err();
    assert_eq!(err.class(), ErrorClass::NotFound, "{err}");
    fx.assert_unchanged(&before);
}

#[test]
fn duplicate_relation_is_refused() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    fx.relate(&a, RelationKind::Related, &b);
    let before = fx.snapshot();
    let err = add(&fx, &a, RelationKind::Related, &b).unwrap_err();
    assert_eq!(err.class(), ErrorClass::Conflict);
    assert_eq!(
        err.to_string(),
        format!("ticket {a} already has related {b}")
    );
    fx.assert_unchanged(&before);
    // The same pair under another kind is a different relation.
    add(&fx, &a, RelationKind::DependsOn, &b).unwrap();
}

#[test]
fn depends_on_that_closes_a_two_cycle_is_refused() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    fx.relate(&a, RelationKind::DependsOn, &b);
    let before = fx.snapshot();
    let err = add(&fx, &b, RelationKind::DependsOn, &a).unwrap_err();
    assert_cycle(err, &[&b, &a, &b]);
    fx.assert_unchanged(&before);
}

#[test]
fn depends_on_that_closes_a_three_cycle_is_refused_with_the_cycle_shown() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    let c = fx.planning("C");
    fx.relate(&a, RelationKind::DependsOn, &b);
    fx.relate(&b, RelationKind::DependsOn, &c);
    let before = fx.snapshot();
    let err = add(&fx, &c, RelationKind::DependsOn, &a).unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("{c} depends_on {a} would close a cycle: ")),
        "{message}"
    );
    assert_cycle(err, &[&c, &a, &b, &c]);
    fx.assert_unchanged(&before);
}

#[test]
fn blocks_that_closes_a_cycle_is_refused() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    fx.relate(&a, RelationKind::Blocks, &b); // b waits on a
    let before = fx.snapshot();
    let err = add(&fx, &b, RelationKind::Blocks, &a).unwrap_err(); // a would wait on b
    assert_cycle(err, &[&a, &b, &a]);
    fx.assert_unchanged(&before);
}

#[test]
fn a_cycle_mixing_blocks_and_depends_on_is_refused() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    let c = fx.planning("C");
    fx.relate(&a, RelationKind::DependsOn, &b); // a waits on b
    fx.relate(&c, RelationKind::Blocks, &b); // b waits on c
    let before = fx.snapshot();
    // a blocks c: c would wait on a, closing c -> a -> b -> c.
    let err = add(&fx, &a, RelationKind::Blocks, &c).unwrap_err();
    assert_cycle(err, &[&c, &a, &b, &c]);
    // c depends_on a closes the same loop from the other kind.
    let err = add(&fx, &c, RelationKind::DependsOn, &a).unwrap_err();
    assert_cycle(err, &[&c, &a, &b, &c]);
    // Depending on a ticket that already blocks you is the same wait, not a cycle.
    fx.assert_unchanged(&before);
    add(&fx, &b, RelationKind::DependsOn, &c).unwrap();
}

#[test]
fn related_supersedes_and_duplicate_of_never_form_cycles() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    fx.relate(&a, RelationKind::DependsOn, &b);
    for kind in [
        RelationKind::Related,
        RelationKind::Supersedes,
        RelationKind::DuplicateOf,
    ] {
        add(&fx, &b, kind, &a).unwrap();
        add(&fx, &a, kind, &b).unwrap();
    }
    assert_eq!(fx.ws.read_relations(&a).unwrap().relations.len(), 4);
    assert_eq!(fx.ws.read_relations(&b).unwrap().relations.len(), 3);
}

#[test]
fn removing_a_missing_relation_is_refused() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    fx.relate(&a, RelationKind::Related, &b);
    let before = fx.snapshot();
    let err = ops::remove_relation(
        &fx.ws,
        &alice(3),
        a.as_str(),
        RelationKind::DependsOn,
        b.as_str(),
    )
    .unwrap_err();
    assert_eq!(err.class(), ErrorClass::NotFound);
    assert_eq!(err.to_string(), format!("ticket {a} has no depends_on {b}"));
    // Relations are owned by their source: b has no `related` of its own to remove.
    let err = ops::remove_relation(
        &fx.ws,
        &alice(3),
        b.as_str(),
        RelationKind::Related,
        a.as_str(),
    )
    .unwrap_err();
    assert!(matches!(err, StoreError::NoSuchRelation { .. }));
    fx.assert_unchanged(&before);
}

#[test]
fn an_oversized_relation_note_is_refused() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    let before = fx.snapshot();
    let err = ops::add_relation(
        &fx.ws,
        &alice(2),
        a.as_str(),
        &RelationRequest {
            kind: RelationKind::Related,
            target: b.to_string(),
            note: Some("n".repeat(yoi_core::relation::MAX_NOTE_BYTES + 1)),
        },
    )
    .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Invalid);
    assert!(matches!(err, StoreError::BadInput { ref field, .. } if field == "note"));
    fx.assert_unchanged(&before);
}
