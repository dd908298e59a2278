//! Tickets written by the older system, and malformed files: an old ticket can be read,
//! commented on and moved through its states without losing a key or an event, and a ticket
//! whose item.md is not valid YAML refuses every operation, naming the file and line, and is
//! left as it was.

use yoi_testkit::store as common;

use common::*;
use yoi_core::item::Item;
use yoi_core::plan::PlanKind;
use yoi_core::relation::RelationKind;
use yoi_core::state::State;
use yoi_core::thread::EventKind;
use yoi_core::TicketId;
use yoi_store::ops::{self, CommentRequest, EditRequest, PlanRequest, RelationRequest};
use yoi_store::query::{list, relation_view, ListFilter};
use yoi_store::{ErrorClass, StoreError};

const OLD_ID: &str = "00001KVZKST83";
const OLD_DEP: &str = "00001KVZBCQH4";

const OLD_ITEM: &str = "---
title: 'worker-runtime: add FS persistence feature'
state: 'queued'
created_at: '2026-06-25T14:44:02Z'
updated_at: '2026-06-25T16:39:26Z'
assignee: null
readiness: 'implementation_ready'
risk_flags: ['persistence', 'feature-gating']
repository_id: 'main'
ref_selector: 'develop'
queued_by: 'workspace-panel'
queued_at: '2026-06-25T16:39:26Z'
---

## Intent
Optional `fs-store` feature for worker-runtime.

---

## Requirements
Persist runs under the data folder.

## Acceptance criteria
- `cargo test -p worker-runtime --features fs-store` passes

## Validation
`cargo test -p worker-runtime --features fs-store`
";

const OLD_THREAD: &str = "<!-- event: create author: \"yoi ticket\" at: 2026-06-25T14:44:02Z -->

## Created

Created by LocalTicketBackend create.

---

<!-- event: intake_summary author: hare at: 2026-06-25T16:34:16Z -->

## Intake summary

Accepted intent: optional `fs-store` feature.

---

REST/Backend integration out of scope.

---

<!-- event: state_changed author: hare at: 2026-06-25T16:34:16Z from: planning to: ready reason: \"implementation target validated\" field: state operation_key: ticket-intake-ready:call_7 request_fingerprint: 9c1ee4 repository_id: main ref_selector: develop -->

## State changed

Implementation target `main` at selector `develop` was validated and the Ticket was marked ready.

---

<!-- event: state_changed author: workspace-panel at: 2026-06-25T16:39:26Z from: ready to: queued reason: queued field: state -->

## State changed

Ticket queued for Orchestrator routing.


---
";

const OLD_RELATIONS: &str = r#"{
  "version": 1,
  "relations": [
    {
      "ticket_id": "00001KVZKST83",
      "kind": "depends_on",
      "target": "00001KVZBCQH4",
      "note": "FS persistence is an optional feature on top of the worker-runtime core API.",
      "author": "yoi ticket",
      "at": "2026-06-25T14:47:43Z"
    }
  ]
}
"#;

fn old_dep_item(state: &str) -> String {
    format!(
        "---\ntitle: 'worker-runtime core API'\nstate: '{state}'\ncreated_at: '2026-06-20T09:00:00Z'\nupdated_at: '2026-06-24T09:00:00Z'\nassignee: null\n---\n\n## Background\nCreated by LocalTicketBackend.\n\n## Acceptance criteria\n- TBD\n"
    )
}

/// The older ticket tree: the queued ticket and the dependency it names.
fn old_tree(fx: &Fx, dep_state: &str) -> (TicketId, TicketId) {
    let id = fx.write_ticket(
        OLD_ID,
        &[
            ("item.md", OLD_ITEM),
            ("thread.md", OLD_THREAD),
            ("artifacts/.gitkeep", ""),
            ("artifacts/relations.json", OLD_RELATIONS),
        ],
    );
    let dep = fx.write_ticket(
        OLD_DEP,
        &[
            ("item.md", &old_dep_item(dep_state)),
            (
                "thread.md",
                "<!-- event: create author: \"yoi ticket\" at: 2026-06-20T09:00:00Z -->\n\n## Created\n\nCreated by LocalTicketBackend create.\n\n---\n",
            ),
        ],
    );
    (id, dep)
}

fn assert_old_keys_kept(fx: &Fx, id: &TicketId) {
    let text = fx.read(id, "item.md");
    for line in [
        "assignee: null\n",
        "repository_id: main\n",
        "ref_selector: develop\n",
        "readiness: implementation_ready\n",
        "- persistence\n",
        "- feature-gating\n",
    ] {
        assert!(text.contains(line), "item.md lost `{line}`:\n{text}");
    }
    let item = Item::parse(&text).unwrap();
    assert_eq!(
        item.legacy_keys(),
        vec!["assignee", "repository_id", "ref_selector"]
    );
    assert_eq!(item.effective_target_ref().as_deref(), Some("develop"));
    assert_eq!(item.created_at.to_string(), "2026-06-25T14:44:02Z");
    assert_eq!(item.title, "worker-runtime: add FS persistence feature");
    let original = Item::parse(OLD_ITEM).unwrap();
    assert_eq!(item.body, original.body, "the body is kept byte for byte");
    assert!(item.body.contains("\n---\n"));
}

#[test]
fn an_old_ticket_reads_with_its_keys_events_and_relations() {
    let fx = Fx::new();
    let (id, dep) = old_tree(&fx, "done");
    assert_eq!(fx.ws.ticket_ids().unwrap(), vec![dep.clone(), id.clone()]);
    let ticket = fx.ws.read_ticket(&id).unwrap();
    assert_eq!(ticket.item.state, State::Queued);
    assert_eq!(ticket.item.queued_by.as_deref(), Some("workspace-panel"));
    assert_eq!(
        ticket.item.risk_flags,
        Some(vec![
            "persistence".to_string(),
            "feature-gating".to_string()
        ])
    );
    assert_eq!(
        ticket.item.effective_target_ref().as_deref(),
        Some("develop")
    );

    let thread = &ticket.thread;
    assert!(thread.issues.is_empty(), "{:?}", thread.issues);
    assert_eq!(thread.events.len(), 4);
    assert!(thread.events.iter().all(|e| e.id().is_none()));
    assert_eq!(thread.events[0].author(), Some("yoi ticket"));
    assert_eq!(
        thread.events[1].body,
        "Accepted intent: optional `fs-store` feature.\n\n---\n\nREST/Backend integration out of scope."
    );
    assert_eq!(
        thread.events[2].get("reason"),
        Some("implementation target validated")
    );
    assert_eq!(thread.events[2].get("ref_selector"), Some("develop"));

    assert_eq!(ticket.relations.relations.len(), 1);
    assert_eq!(ticket.relations.relations[0].target, dep);
    let summaries = list(&fx.ws, &ListFilter::default()).unwrap();
    let mine = summaries.iter().find(|s| s.id == id).unwrap();
    assert_eq!(mine.target_ref.as_deref(), Some("develop"));
    let view = relation_view(&fx.ws, &dep).unwrap();
    assert_eq!(view.relations[0].name, "dependency_of");
    assert_eq!(
        view.relations[0].note.as_deref(),
        Some("FS persistence is an optional feature on top of the worker-runtime core API.")
    );
}

#[test]
fn an_old_ticket_can_be_commented_on_and_moved_through_its_states_without_loss() {
    let fx = Fx::new();
    let (id, _dep) = old_tree(&fx, "done");

    ops::comment(
        &fx.ws,
        &alice(0),
        "kst83",
        &CommentRequest {
            kind: "comment".into(),
            body: "Picking this up again.".into(),
        },
    )
    .unwrap();
    // A comment only appends: the older item.md stays byte for byte.
    assert_eq!(fx.read(&id, "item.md"), OLD_ITEM);
    assert!(fx.read(&id, "thread.md").starts_with(OLD_THREAD));

    ops::accept(
        &fx.ws,
        &orchestrator(1),
        "KST83",
        &plain(),
        &accept_evidence(),
    )
    .unwrap();
    ops::complete(&fx.ws, &service(2), OLD_ID, &plain(), &merge_evidence()).unwrap();
    ops::close(
        &fx.ws,
        &alice(3),
        OLD_ID,
        &resolution("Merged into develop."),
    )
    .unwrap();
    ops::reopen(&fx.ws, &alice(4), OLD_ID, &reason("needs a migration")).unwrap();
    assert_old_keys_kept(&fx, &id);

    let thread_text = fx.read(&id, "thread.md");
    assert!(
        thread_text.starts_with(OLD_THREAD),
        "the old events are kept byte for byte"
    );
    let thread = fx.thread(&id);
    assert!(thread.issues.is_empty(), "{:?}", thread.issues);
    let kinds: Vec<&str> = thread.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        vec![
            "create",
            "intake_summary",
            "state_changed",
            "state_changed",
            "comment",
            "decision",
            "state_changed",
            "merge",
            "state_changed",
            "state_changed",
            "close",
            "state_changed"
        ]
    );
    assert!(thread.events[..4].iter().all(|e| e.id().is_none()));
    assert!(thread.events[4..].iter().all(|e| e.id().is_some()));
    assert!(thread.events[1].body.contains("\n---\n"));
    let item = fx.item(&id);
    assert_eq!(item.state, State::Planning);
    assert_eq!(item.updated_at, ts(4));
    assert!(fx.path(&id, "artifacts/.gitkeep").exists());
    assert_eq!(fx.read(&id, "artifacts/relations.json"), OLD_RELATIONS);
}

#[test]
fn an_old_ticket_is_still_blocked_by_its_old_dependency() {
    let fx = Fx::new();
    let (id, dep) = old_tree(&fx, "planning");
    ops::return_to_planning(&fx.ws, &alice(0), OLD_ID, &reason("re-plan")).unwrap();
    ops::mark_ready(&fx.ws, &alice(1), OLD_ID, &plain()).unwrap();
    let before = fx.snapshot();
    let err = ops::queue(&fx.ws, &alice(2), OLD_ID, &plain()).unwrap_err();
    assert_eq!(err.class(), ErrorClass::Conflict);
    assert!(matches!(err, StoreError::Blocked { ref blockers, .. }
        if blockers.len() == 1 && blockers[0].ticket == dep));
    fx.assert_unchanged(&before);
    assert_old_keys_kept(&fx, &id);

    // The dependency's old default body is no brief.
    let err = ops::mark_ready(&fx.ws, &alice(2), OLD_DEP, &plain()).unwrap_err();
    assert!(
        matches!(err, StoreError::BriefIncomplete { ref missing, .. }
        if missing == &["Intent", "Acceptance criteria", "Validation"])
    );
    fx.assert_unchanged(&before);
}

/// item.md whose third line is not valid YAML.
const BROKEN_ITEM: &str = "---\ntitle: Broken\nstate: planning: oops\ncreated_at: 2026-11-29T10:00:00Z\nupdated_at: 2026-11-29T10:00:00Z\n---\n\nbody\n";

fn assert_invalid_item(fx: &Fx, id: &TicketId, err: StoreError) {
    assert_eq!(err.class(), ErrorClass::Corrupt, "{err}");
    let message = err.to_string();
    match err {
        StoreError::Invalid { path, line, reason } => {
            assert_eq!(path, fx.path(id, "item.md"));
            assert_eq!(line, Some(3));
            assert!(reason.contains("invalid YAML"), "{reason}");
            // The parser's own position agrees with the reported line.
            assert!(reason.contains("at line 3 "), "{reason}");
            assert!(!reason.contains("line 2"), "{reason}");
            assert!(
                message.starts_with(&format!("{}:3: ", path.display())),
                "{message}"
            );
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn an_item_that_is_not_yaml_fails_every_operation_naming_file_and_line() {
    let fx = Fx::new();
    let id = fx.queued("Soon broken");
    let other = fx.planning("Other");
    fx.relate(&id, RelationKind::Related, &other);
    fx.write(&id, "item.md", BROKEN_ITEM);
    let before = fx.snapshot();
    let q = id.as_str();

    let results: Vec<(&str, Result<(), StoreError>)> = vec![
        (
            "edit",
            ops::edit(
                &fx.ws,
                &alice(1),
                q,
                &EditRequest {
                    title: Some("Fixed".into()),
                    body: None,
                },
            )
            .map(drop),
        ),
        (
            "comment",
            ops::comment(
                &fx.ws,
                &alice(1),
                q,
                &CommentRequest {
                    kind: "comment".into(),
                    body: "hello".into(),
                },
            )
            .map(drop),
        ),
        (
            "mark-ready",
            ops::mark_ready(&fx.ws, &alice(1), q, &plain()).map(drop),
        ),
        (
            "queue",
            ops::queue(&fx.ws, &alice(1), q, &plain()).map(drop),
        ),
        (
            "return-to-planning",
            ops::return_to_planning(&fx.ws, &alice(1), q, &reason("x")).map(drop),
        ),
        (
            "accept",
            ops::accept(&fx.ws, &orchestrator(1), q, &plain(), &accept_evidence()).map(drop),
        ),
        (
            "complete",
            ops::complete(&fx.ws, &service(1), q, &plain(), &merge_evidence()).map(drop),
        ),
        (
            "close",
            ops::close(&fx.ws, &alice(1), q, &resolution("x")).map(drop),
        ),
        (
            "cancel",
            ops::cancel(&fx.ws, &alice(1), q, &resolution("x")).map(drop),
        ),
        (
            "reopen",
            ops::reopen(&fx.ws, &alice(1), q, &reason("x")).map(drop),
        ),
        (
            "relation add",
            ops::add_relation(
                &fx.ws,
                &alice(1),
                q,
                &RelationRequest {
                    kind: RelationKind::DependsOn,
                    target: other.to_string(),
                    note: None,
                },
            )
            .map(drop),
        ),
        (
            "relation rm",
            ops::remove_relation(&fx.ws, &alice(1), q, RelationKind::Related, other.as_str())
                .map(drop),
        ),
        (
            "plan add",
            ops::add_plan_record(
                &fx.ws,
                &orchestrator(1),
                q,
                &PlanRequest {
                    kind: PlanKind::WaitingCapacity,
                    related: None,
                    note: Some("No free coder.".into()),
                    accepted_plan: None,
                },
            )
            .map(drop),
        ),
        ("relation view", relation_view(&fx.ws, &id).map(drop)),
        ("list", list(&fx.ws, &ListFilter::default()).map(drop)),
    ];
    for (name, result) in results {
        let err = result.err().unwrap_or_else(|| panic!("{name} succeeded"));
        assert_invalid_item(&fx, &id, err);
    }
    fx.assert_unchanged(&before);
    assert_eq!(fx.read(&id, "item.md"), BROKEN_ITEM);
}

#[test]
fn a_broken_ticket_does_not_stop_operations_on_other_tickets() {
    let fx = Fx::new();
    let broken = fx.planning("Broken");
    let fine = fx.ready("Fine");
    fx.write(&broken, "item.md", BROKEN_ITEM);
    let out = ops::queue(&fx.ws, &alice(3), fine.as_str(), &plain()).unwrap();
    assert_eq!(out.to, Some(State::Queued));
    let e = fx.last_event(&fine);
    assert_eq!(e.kind, EventKind::StateChanged);
    assert_eq!(fx.read(&broken, "item.md"), BROKEN_ITEM);
}
