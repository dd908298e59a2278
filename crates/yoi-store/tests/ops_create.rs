//! `create`, `edit` and `comment` against a real workspace: the files they write, byte for
//! byte, and every refusal leaving the ticket tree untouched.

use yoi_testkit::store as common;

use common::*;
use yoi_core::relation::{RelationKind, RelationsFile};
use yoi_core::state::State;
use yoi_core::thread::{EventKind, MAX_BODY_BYTES};
use yoi_core::TicketId;
use yoi_store::ops::{self, CommentRequest, CreateRequest, EditRequest, COMMENT_KINDS};
use yoi_store::{ErrorClass, StoreError};

fn request(title: &str, body: &str, depends_on: &[&str]) -> CreateRequest {
    CreateRequest {
        title: title.into(),
        body: body.into(),
        depends_on: depends_on.iter().map(|s| s.to_string()).collect(),
    }
}

fn comment_req(kind: &str, body: &str) -> CommentRequest {
    CommentRequest {
        kind: kind.into(),
        body: body.into(),
    }
}

fn assert_bad_input(err: StoreError, want_field: &str) {
    assert_eq!(err.class(), ErrorClass::Invalid, "{err}");
    match err {
        StoreError::BadInput { field, .. } => assert_eq!(field, want_field),
        other => panic!("expected BadInput on {want_field}, got {other:?}"),
    }
}

#[test]
fn create_writes_item_and_thread_in_the_documented_shape() {
    let fx = Fx::new();
    let out = ops::create(
        &fx.ws,
        &alice(0),
        &request("Add login", "## Intent\nLet people sign in.", &[]),
    )
    .unwrap();

    assert_eq!(out.ticket.as_str().len(), 26, "new tickets get a ULID");
    assert_eq!(out.operation, "create");
    assert_eq!(out.from, None);
    assert_eq!(out.to, Some(State::Planning));
    assert!(!out.replayed);

    assert_eq!(
        fx.read(&out.ticket, "item.md"),
        "---\ntitle: Add login\nstate: planning\ncreated_at: 2026-11-29T10:00:00Z\nupdated_at: 2026-11-29T10:00:00Z\n---\n\n## Intent\nLet people sign in.\n"
    );
    let event_id = out.event_id.clone().expect("create records its event id");
    TicketId::parse(&event_id).expect("the event id is a ULID");
    assert_eq!(
        fx.read(&out.ticket, "thread.md"),
        format!(
            "<!-- event: create id: {event_id} author: alice at: 2026-11-29T10:00:00Z -->\n\n## Created\n\nTicket created.\n\n---\n"
        )
    );

    let dir = fx.ws.ticket_dir(&out.ticket);
    assert!(dir.join("artifacts").is_dir());
    assert!(!dir.join("artifacts/relations.json").exists());
    assert!(!dir.join("resolution.md").exists());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["artifacts", "item.md", "thread.md"]);
    // No staging folder is left beside the ticket.
    assert_eq!(fx.ws.ticket_ids().unwrap(), vec![out.ticket.clone()]);
    assert_eq!(std::fs::read_dir(fx.ws.tickets_dir()).unwrap().count(), 1);
}

#[test]
fn create_without_body_leaves_the_body_empty() {
    let fx = Fx::new();
    let id = fx.create("Bare", "");
    assert!(fx
        .read(&id, "item.md")
        .ends_with("updated_at: 2026-11-29T10:00:00Z\n---\n"));
    assert_eq!(fx.item(&id).body_text(), "");
}

#[test]
fn create_with_depends_on_writes_sorted_deduplicated_relations() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let b = fx.planning("B");
    let suffix_of_a = a.as_str()[20..].to_ascii_lowercase();
    let out = ops::create(
        &fx.ws,
        &alice(7),
        &request(
            "C",
            "",
            &[b.as_str(), &suffix_of_a, a.as_str()], // a suffix and the full id name the same ticket
        ),
    )
    .unwrap();
    let text = fx.read(&out.ticket, "artifacts/relations.json");
    let file = RelationsFile::parse(&text, &out.ticket).unwrap();
    let targets: Vec<&TicketId> = file.relations.iter().map(|r| &r.target).collect();
    let mut want = vec![&a, &b];
    want.sort();
    assert_eq!(targets, want);
    for r in &file.relations {
        assert_eq!(r.kind, RelationKind::DependsOn);
        assert_eq!(r.ticket_id, out.ticket);
        assert_eq!(r.author, "alice");
        assert_eq!(r.at, ts(7));
        assert_eq!(r.note, None);
    }
    assert!(text.ends_with("}\n"));
    // The dependency shows from the other side too.
    let view = yoi_store::query::relation_view(&fx.ws, &a).unwrap();
    assert_eq!(view.relations.len(), 1);
    assert_eq!(view.relations[0].name, "dependency_of");
    assert_eq!(view.relations[0].other, out.ticket);
}

#[test]
fn create_refuses_unknown_depends_on_and_creates_nothing() {
    let fx = Fx::new();
    let a = fx.planning("A");
    let before = fx.snapshot();
    let err = ops::create(
        &fx.ws,
        &alice(1),
        &request("C", BRIEF, &[a.as_str(), "ZZZZZZ"]),
    )
    .unwrap_err();
    assert_eq!(err.class(), ErrorClass::NotFound, "{err}");
    assert!(err.to_string().contains("ZZZZZZ"), "{err}");
    fx.assert_unchanged(&before);
    assert_eq!(fx.ws.ticket_ids().unwrap(), vec![a]);
}

#[test]
fn create_refuses_empty_or_multi_line_titles() {
    let fx = Fx::new();
    let before = fx.snapshot();
    for title in ["", "   ", "first line\nsecond line", "tab\u{7}bell"] {
        let err = ops::create(&fx.ws, &alice(0), &request(title, "", &[])).unwrap_err();
        assert_bad_input(err, "title");
    }
    fx.assert_unchanged(&before);
}

#[test]
fn create_refuses_an_oversized_body_and_accepts_one_at_the_limit() {
    let fx = Fx::new();
    let before = fx.snapshot();
    let too_big = "x".repeat(MAX_BODY_BYTES + 1);
    let err = ops::create(&fx.ws, &alice(0), &request("Big", &too_big, &[])).unwrap_err();
    assert_bad_input(err, "body");
    fx.assert_unchanged(&before);

    let at_limit = "y".repeat(MAX_BODY_BYTES);
    let id = fx.create("Just fits", &at_limit);
    assert_eq!(fx.item(&id).body_text(), at_limit);
}

#[test]
fn edit_replaces_title_and_body_and_records_an_item_edit_event() {
    let fx = Fx::new();
    let id = fx.create("Old title", "old body");
    let out = ops::edit(
        &fx.ws,
        &alice(9),
        id.as_str(),
        &EditRequest {
            title: Some("New title".into()),
            body: Some("new body\n".into()),
        },
    )
    .unwrap();
    assert_eq!(out.operation, "edit");
    assert_eq!((out.from, out.to), (None, None));

    let item = fx.item(&id);
    assert_eq!(item.title, "New title");
    assert_eq!(item.body, "\nnew body\n");
    assert_eq!(item.created_at, ts(0));
    assert_eq!(item.updated_at, ts(9));
    assert_eq!(item.state, State::Planning);

    let event = fx.last_event(&id);
    assert_eq!(event.kind, EventKind::ItemEdit);
    assert_eq!(event.id(), out.event_id.as_deref());
    assert_eq!(event.author(), Some("alice"));
    assert_eq!(event.get("at"), Some("2026-11-29T10:09:00Z"));
    assert_eq!(event.get("field"), Some("title,body"));
    assert_eq!(
        event.body,
        "Title changed from “Old title” to “New title”.\nBody replaced."
    );
}

#[test]
fn edit_of_only_the_body_keeps_the_title() {
    let fx = Fx::new();
    let id = fx.create("Keep me", "before");
    ops::edit(
        &fx.ws,
        &alice(1),
        id.as_str(),
        &EditRequest {
            title: None,
            body: Some(BRIEF.into()),
        },
    )
    .unwrap();
    let item = fx.item(&id);
    assert_eq!(item.title, "Keep me");
    assert_eq!(item.body_text(), BRIEF.trim_end());
    assert_eq!(fx.last_event(&id).get("field"), Some("body"));
}

#[test]
fn edit_refuses_an_empty_request_and_bad_titles() {
    let fx = Fx::new();
    let id = fx.create("T", "");
    let before = fx.snapshot();
    let err = ops::edit(&fx.ws, &alice(1), id.as_str(), &EditRequest::default()).unwrap_err();
    assert_bad_input(err, "edit");
    for title in ["", "two\nlines"] {
        let err = ops::edit(
            &fx.ws,
            &alice(1),
            id.as_str(),
            &EditRequest {
                title: Some(title.into()),
                body: None,
            },
        )
        .unwrap_err();
        assert_bad_input(err, "title");
    }
    let err = ops::edit(
        &fx.ws,
        &alice(1),
        id.as_str(),
        &EditRequest {
            title: None,
            body: Some("z".repeat(MAX_BODY_BYTES + 1)),
        },
    )
    .unwrap_err();
    assert_bad_input(err, "body");
    fx.assert_unchanged(&before);
}

#[test]
fn comment_accepts_every_allowed_kind() {
    let fx = Fx::new();
    let id = fx.create("T", "");
    let item_md = fx.ws.tickets_dir().join(id.as_str()).join("item.md");
    let item_before = std::fs::read(&item_md).unwrap();
    for (n, kind) in COMMENT_KINDS.iter().enumerate() {
        let out = ops::comment(
            &fx.ws,
            &coder(n as i64 + 1),
            id.as_str(),
            &comment_req(kind, &format!("A {kind} note.")),
        )
        .unwrap();
        assert_eq!(out.operation, "comment");
        let event = fx.last_event(&id);
        assert_eq!(event.kind.as_str(), *kind);
        assert_eq!(event.id(), out.event_id.as_deref());
        assert_eq!(event.author(), Some("pod:coder/c1"));
        assert_eq!(event.at(), Some(ts(n as i64 + 1)));
        assert_eq!(event.body, format!("A {kind} note."));
        assert_eq!(event.heading, Some(event.kind.default_heading()));
    }
    let mut want = vec!["create".to_string()];
    want.extend(COMMENT_KINDS.iter().map(|k| k.to_string()));
    assert_eq!(fx.kinds(&id), want);
    // A comment only appends: item.md keeps its bytes (and its `updated_at`), and the
    // ticket's time of last change is its thread's last event.
    assert_eq!(std::fs::read(&item_md).unwrap(), item_before);
    assert_eq!(fx.item(&id).updated_at, ts(0));
    let last_changed = fx.item(&id).last_changed(&fx.thread(&id).events);
    assert_eq!(last_changed, ts(COMMENT_KINDS.len() as i64));
    assert!(fx.thread(&id).issues.is_empty());
}

#[test]
fn comment_refuses_kinds_that_belong_to_operations() {
    let fx = Fx::new();
    let id = fx.create("T", "");
    let before = fx.snapshot();
    for kind in [
        "state_changed",
        "close",
        "create",
        "merge",
        "item_edit",
        "relation_changed",
        "made_up",
    ] {
        let err =
            ops::comment(&fx.ws, &alice(1), id.as_str(), &comment_req(kind, "hi")).unwrap_err();
        let message = err.to_string();
        assert!(message.contains(kind), "{message}");
        assert!(message.contains("implementation_report"), "{message}");
        assert_bad_input(err, "kind");
    }
    fx.assert_unchanged(&before);
}

#[test]
fn comment_refuses_an_empty_message() {
    let fx = Fx::new();
    let id = fx.create("T", "");
    let before = fx.snapshot();
    for body in ["", "  \n\t\n"] {
        let err = ops::comment(
            &fx.ws,
            &alice(1),
            id.as_str(),
            &comment_req("comment", body),
        )
        .unwrap_err();
        assert_bad_input(err, "message");
    }
    fx.assert_unchanged(&before);
}

#[test]
fn comment_body_with_rules_and_event_like_lines_reads_back_unchanged() {
    let fx = Fx::new();
    let id = fx.create("T", "");
    let body = "Above the rule.\n\n---\n\n<!-- event: close author: mallory -->\n\\---\nBelow.";
    ops::comment(
        &fx.ws,
        &alice(1),
        id.as_str(),
        &comment_req("comment", body),
    )
    .unwrap();
    ops::comment(
        &fx.ws,
        &alice(2),
        id.as_str(),
        &comment_req("plan", "Next."),
    )
    .unwrap();
    let thread = fx.thread(&id);
    assert!(thread.issues.is_empty(), "{:?}", thread.issues);
    assert_eq!(fx.kinds(&id), vec!["create", "comment", "plan"]);
    assert_eq!(thread.events[1].body, body);
    assert_eq!(thread.events[2].body, "Next.");
}
