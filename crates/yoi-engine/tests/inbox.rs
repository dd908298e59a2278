//! The inbox on a real workspace and its SQLite index: an attention event is one entry however
//! often it is raised, the condition clearing closes it, the service returning a ticket to
//! planning is an entry until the ticket moves on, pending skill proposals are entries, and a
//! deleted database loses nothing a thread records.

mod common;

use std::collections::BTreeMap;

use common::{now, Fixture, BRIEF};
use yoi_core::inbox::InboxReason;
use yoi_core::Principal;
use yoi_engine::inbox;
use yoi_store::ops::{self, TransitionRequest};
use yoi_store::Ctx;

fn service() -> Ctx {
    Ctx::new(Principal::orchestrator(), now())
}

#[test]
fn an_open_circuit_is_one_entry_however_often_raised_and_a_retry_closes_it() {
    let f = Fixture::new();
    let id = f.queued("Stuck", BRIEF, &[]);
    ops::attention(&f.ws, &service(), id.as_str(), "circuit_open", "First.").unwrap();
    ops::attention(&f.ws, &service(), id.as_str(), "circuit_open", "Again.").unwrap();

    let got = inbox::inbox(&f.ws, &f.db).unwrap();
    assert_eq!(got.count, 1, "{got:#?}");
    let e = &got.entries[0];
    assert_eq!(e.reason, InboxReason::CircuitOpen);
    assert_eq!(e.ticket.as_deref(), Some(id.as_str()));
    assert_eq!(e.title, "Stuck");
    assert_eq!(e.detail, "Again.");
    assert_eq!(e.command, format!("yoi ticket retry {id}"));
    assert_eq!(e.action.href, format!("/tickets/{id}"));
    assert!(
        e.key.starts_with(&format!("{id}:circuit_open:")),
        "{}",
        e.key
    );
    assert_eq!(inbox::of_ticket(&f.db, &id).unwrap(), got.entries);

    ops::retry(&f.ws, &f.human(), id.as_str(), Some("fixed the disk")).unwrap();
    assert_eq!(inbox::inbox(&f.ws, &f.db).unwrap().count, 0);

    // A new circuit after the retry is a new episode: a new key.
    ops::attention(&f.ws, &service(), id.as_str(), "circuit_open", "Third.").unwrap();
    let again = inbox::inbox(&f.ws, &f.db).unwrap();
    assert_eq!(again.count, 1);
    assert_ne!(again.entries[0].key, e.key);
}

#[test]
fn a_retry_leaves_a_deferred_merge_open_and_cancelling_the_ticket_closes_everything() {
    let f = Fixture::new();
    let id = f.queued("Deferred", BRIEF, &[]);
    ops::attention(
        &f.ws,
        &service(),
        id.as_str(),
        "merge_deferred",
        "Dirty checkout.",
    )
    .unwrap();
    ops::attention(
        &f.ws,
        &service(),
        id.as_str(),
        "rounds_exhausted",
        "Used up.",
    )
    .unwrap();
    let reasons = |f: &Fixture| -> Vec<InboxReason> {
        inbox::inbox(&f.ws, &f.db)
            .unwrap()
            .entries
            .iter()
            .map(|e| e.reason)
            .collect()
    };
    assert_eq!(
        reasons(&f),
        vec![InboxReason::MergeDeferred, InboxReason::RoundsExhausted]
    );
    ops::retry(&f.ws, &f.human(), id.as_str(), None).unwrap();
    assert_eq!(reasons(&f), vec![InboxReason::MergeDeferred]);

    let req = TransitionRequest {
        resolution: Some("not needed".into()),
        ..TransitionRequest::default()
    };
    ops::cancel(&f.ws, &f.human(), id.as_str(), &req).unwrap();
    assert_eq!(reasons(&f), Vec::<InboxReason>::new());
}

#[test]
fn the_service_returning_a_ticket_to_planning_waits_until_a_person_moves_it() {
    let f = Fixture::new();
    let id = f.queued("Bounced", BRIEF, &[]);
    let req = TransitionRequest {
        reason: Some("the brief lacks ## Validation".into()),
        ..TransitionRequest::default()
    };
    ops::return_to_planning(&f.ws, &service(), id.as_str(), &req).unwrap();
    let got = inbox::inbox(&f.ws, &f.db).unwrap();
    assert_eq!(got.count, 1, "{got:#?}");
    assert_eq!(got.entries[0].reason, InboxReason::RoutingFailed);
    assert!(
        got.entries[0]
            .detail
            .contains("the brief lacks ## Validation"),
        "{}",
        got.entries[0].detail
    );

    ops::mark_ready(
        &f.ws,
        &f.human(),
        id.as_str(),
        &TransitionRequest::default(),
    )
    .unwrap();
    assert_eq!(inbox::inbox(&f.ws, &f.db).unwrap().count, 0);

    // A person returning a ticket to planning asks nothing of anyone.
    ops::return_to_planning(&f.ws, &f.human(), id.as_str(), &req).unwrap();
    assert_eq!(inbox::inbox(&f.ws, &f.db).unwrap().count, 0);
}

#[test]
fn a_pending_skill_proposal_is_an_entry_until_it_is_decided() {
    let f = Fixture::new();
    let files = BTreeMap::from([(
        "SKILL.md".to_string(),
        "---\nname: tidy\ndescription: Keep things tidy.\n---\nTidy up.\n".to_string(),
    )]);
    let p = yoi_engine::skills::propose_files(&f.ws, "tidy", &files, "pod:coder-1", now()).unwrap();
    let got = inbox::inbox(&f.ws, &f.db).unwrap();
    assert_eq!(got.count, 1);
    let e = &got.entries[0];
    assert_eq!(
        (e.reason, e.ticket.as_deref(), e.key.clone()),
        (
            InboxReason::SkillProposal,
            None,
            format!("skill_proposal:{}", p.id)
        )
    );
    assert_eq!(e.action.href, format!("/skills#p-{}", p.id));
    yoi_engine::skills::approve(&f.ws, &p.id, "alice", now()).unwrap();
    assert_eq!(inbox::inbox(&f.ws, &f.db).unwrap().count, 0);
}

#[test]
fn deleting_the_database_loses_no_entry_a_thread_records() {
    let f = Fixture::new();
    let id = f.queued("Kept", BRIEF, &[]);
    ops::attention(&f.ws, &service(), id.as_str(), "circuit_open", "Stopped.").unwrap();
    let before = inbox::inbox(&f.ws, &f.db).unwrap();
    assert_eq!(before.count, 1);

    let db = f.ws.local_dir().join("yoi.db");
    assert!(db.is_file(), "{}", db.display());
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut ws = yoi_store::Workspace::open(&f.repo).unwrap();
    let (fresh, _) = yoi_db::DbIndex::attach(
        &mut ws,
        yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
    )
    .unwrap();
    assert!(db.is_file(), "a new database was made");
    assert_eq!(inbox::inbox(&ws, &fresh).unwrap(), before);
}

#[test]
fn a_ticket_whose_files_cannot_be_read_is_a_doctor_error_until_they_read_again() {
    let f = Fixture::new();
    let id = f.queued("Fine for now", BRIEF, &[]);
    let item = f.ws.root().join(format!(".yoi/tickets/{id}/item.md"));
    let good = std::fs::read_to_string(&item).unwrap();
    std::fs::write(&item, "---\ntitle: [unclosed\n---\nbody\n").unwrap();
    f.db.reindex(&f.ws, yoi_db::ReindexMode::Incremental)
        .unwrap();

    let got = inbox::inbox(&f.ws, &f.db).unwrap();
    let e = got
        .entries
        .iter()
        .find(|e| e.reason == InboxReason::DoctorError)
        .unwrap_or_else(|| panic!("{got:#?}"));
    assert_eq!(e.ticket.as_deref(), Some(id.as_str()));
    assert_eq!(e.key, format!("{id}:doctor_error:item.parse"));
    assert!(e.detail.contains("item.md"), "{}", e.detail);
    assert!(e.command.starts_with("yoi ticket doctor"), "{}", e.command);
    assert_eq!(e.action.href, "/doctor");
    assert!(!e.since.is_empty());

    std::fs::write(&item, good).unwrap();
    f.db.reindex(&f.ws, yoi_db::ReindexMode::Incremental)
        .unwrap();
    let after = inbox::inbox(&f.ws, &f.db).unwrap();
    assert!(
        after
            .entries
            .iter()
            .all(|e| e.reason != InboxReason::DoctorError),
        "{after:#?}"
    );
}
