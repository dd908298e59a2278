//! Id resolution through the operations: a unique case-insensitive suffix of at least four
//! characters names a ticket everywhere an id is accepted; an ambiguous suffix lists its
//! matches, a short one is refused, and neither writes anything.

use yoi_testkit::store as common;

use common::*;
use yoi_core::id::ResolveError;
use yoi_core::plan::PlanKind;
use yoi_core::relation::RelationKind;
use yoi_store::ops::{self, CommentRequest, CreateRequest, EditRequest, PlanRequest};
use yoi_store::{ErrorClass, StoreError};

/// A fixed ULID-shaped id ending in `tail`.
fn fixed(tail: &str) -> String {
    format!("01JDQ{tail:0>21}")
}

fn note(text: &str) -> CommentRequest {
    CommentRequest {
        kind: "comment".into(),
        body: text.into(),
    }
}

#[test]
fn a_unique_suffix_names_the_ticket_in_every_operation() {
    let fx = Fx::new();
    let main = fx.rename(&fx.create("Main", ""), &fixed("AB12"));
    let other = fx.rename(&fx.create("Other", ""), &fixed("CD34"));
    let m = "ab12";

    let mut outcomes = vec![
        ops::edit(
            &fx.ws,
            &alice(1),
            m,
            &EditRequest {
                title: None,
                body: Some(BRIEF.into()),
            },
        )
        .unwrap(),
        ops::comment(&fx.ws, &alice(1), "AB12", &note("by suffix")).unwrap(),
        ops::add_relation(
            &fx.ws,
            &alice(1),
            "0ab12",
            &yoi_store::ops::RelationRequest {
                kind: RelationKind::Related,
                target: "cd34".into(),
                note: None,
            },
        )
        .unwrap(),
    ];
    assert_eq!(
        fx.ws.read_relations(&main).unwrap().relations[0].target,
        other
    );
    outcomes
        .push(ops::remove_relation(&fx.ws, &alice(1), m, RelationKind::Related, "Cd34").unwrap());
    let (plan_out, record) = ops::add_plan_record(
        &fx.ws,
        &orchestrator(1),
        m,
        &PlanRequest {
            kind: PlanKind::After,
            related: Some("cd34".into()),
            note: None,
            accepted_plan: None,
        },
    )
    .unwrap();
    assert_eq!(record.ticket_id, main);
    assert_eq!(record.related_ticket.as_ref(), Some(&other));
    outcomes.push(plan_out);

    outcomes.push(ops::mark_ready(&fx.ws, &alice(2), m, &plain()).unwrap());
    outcomes.push(ops::queue(&fx.ws, &alice(2), m, &plain()).unwrap());
    outcomes.push(ops::return_to_planning(&fx.ws, &alice(2), m, &reason("wait")).unwrap());
    outcomes.push(ops::mark_ready(&fx.ws, &alice(3), m, &plain()).unwrap());
    outcomes.push(ops::queue(&fx.ws, &alice(3), m, &plain()).unwrap());
    outcomes.push(ops::accept(&fx.ws, &orchestrator(3), m, &plain(), &accept_evidence()).unwrap());
    outcomes.push(ops::complete(&fx.ws, &service(4), m, &plain(), &merge_evidence()).unwrap());
    outcomes.push(ops::close(&fx.ws, &alice(4), m, &resolution("Done.")).unwrap());
    outcomes.push(ops::reopen(&fx.ws, &alice(5), m, &reason("again")).unwrap());
    outcomes.push(ops::cancel(&fx.ws, &alice(5), m, &resolution("Dropped.")).unwrap());
    for out in &outcomes {
        assert_eq!(out.ticket, main, "{}", out.operation);
    }

    let created = ops::create(
        &fx.ws,
        &alice(6),
        &CreateRequest {
            title: "Follow-up".into(),
            body: String::new(),
            depends_on: vec![m.into()],
        },
    )
    .unwrap();
    let rels = fx.ws.read_relations(&created.ticket).unwrap();
    assert_eq!(rels.relations[0].target, main);
}

#[test]
fn a_full_id_in_any_case_resolves() {
    let fx = Fx::new();
    let id = fx.planning("T");
    let lower = id.as_str().to_ascii_lowercase();
    let out = ops::comment(&fx.ws, &alice(1), &lower, &note("lower")).unwrap();
    assert_eq!(out.ticket, id);
    assert_eq!(fx.ws.resolve(&format!("  {lower}  ")).unwrap(), id);
}

#[test]
fn an_ambiguous_suffix_lists_the_matches_and_writes_nothing() {
    let fx = Fx::new();
    let first = fx.rename(&fx.create("First", ""), &fixed("0WXYZ"));
    let second = fx.rename(&fx.create("Second", ""), &fixed("1WXYZ"));
    let before = fx.snapshot();

    let err = ops::comment(&fx.ws, &alice(1), "wxyz", &note("which?")).unwrap_err();
    assert_eq!(err.class(), ErrorClass::Invalid);
    assert_eq!(
        err.to_string(),
        format!("`wxyz` matches 2 tickets: {first}, {second}")
    );
    match err {
        StoreError::Resolve(ResolveError::Ambiguous { matches, .. }) => {
            assert_eq!(matches, vec![first.clone(), second.clone()]);
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    let err = ops::add_relation(
        &fx.ws,
        &alice(1),
        "0wxyz",
        &yoi_store::ops::RelationRequest {
            kind: RelationKind::Related,
            target: "WXYZ".into(),
            note: None,
        },
    )
    .unwrap_err();
    // An ambiguous relation target is refused the same way.
    assert!(matches!(
        err,
        StoreError::Resolve(ResolveError::Ambiguous { .. })
    ));
    let err = ops::queue(&fx.ws, &alice(1), "WXYZ", &plain()).unwrap_err();
    assert!(matches!(
        err,
        StoreError::Resolve(ResolveError::Ambiguous { .. })
    ));
    fx.assert_unchanged(&before);

    // One more character makes it unique.
    let out = ops::comment(&fx.ws, &alice(2), "1wxyz", &note("this one")).unwrap();
    assert_eq!(out.ticket, second);
}

#[test]
fn a_suffix_shorter_than_four_characters_is_refused() {
    let fx = Fx::new();
    let id = fx.rename(&fx.create("T", ""), &fixed("AB12"));
    let before = fx.snapshot();
    let err = ops::comment(&fx.ws, &alice(1), "b12", &note("short")).unwrap_err();
    assert_eq!(err.class(), ErrorClass::Invalid);
    assert!(err.to_string().contains("at least 4"), "{err}");
    assert!(matches!(
        err,
        StoreError::Resolve(ResolveError::TooShort { .. })
    ));
    let err = ops::mark_ready(&fx.ws, &alice(1), "", &plain()).unwrap_err();
    assert!(matches!(
        err,
        StoreError::Resolve(ResolveError::TooShort { .. })
    ));
    fx.assert_unchanged(&before);
    assert_eq!(fx.ws.resolve("ab12").unwrap(), id);
}

#[test]
fn an_unknown_id_is_not_found() {
    let fx = Fx::new();
    fx.rename(&fx.create("T", ""), &fixed("AB12"));
    let before = fx.snapshot();
    for query in ["zzzz", "01JDQ", &fixed("AB13")] {
        let err = ops::comment(&fx.ws, &alice(1), query, &note("?")).unwrap_err();
        assert_eq!(err.class(), ErrorClass::NotFound, "{query}: {err}");
        assert!(err.to_string().contains(query), "{err}");
    }
    fx.assert_unchanged(&before);
}
