//! Fixtures for tests of the ticket files (the store's, the database's and the doctor's): a real workspace in a temporary folder,
//! fixed clocks and principals, tickets driven to each state through the real operations, a
//! byte snapshot of the ticket tree for "nothing was written" checks, and assertions for the
//! refusals every transition shares (wrong principal, wrong state, blockers).
//!
//! Each test binary uses a different subset of these helpers.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;
use yoi_core::item::Item;
use yoi_core::principal::PrincipalKind;
use yoi_core::relation::RelationKind;
use yoi_core::state::{Operation, State, TransitionError};
use yoi_core::thread::{Event, EventKind, ParsedThread};
use yoi_core::{Principal, TicketId, Timestamp};
use yoi_store::ops::{
    self, AcceptEvidence, CreateRequest, MergeEvidence, RelationRequest, TransitionRequest,
};
use yoi_store::{Ctx, ErrorClass, Outcome, StoreError, Workspace};

/// The moment every fixture starts from.
pub const T0: &str = "2026-11-29T10:00:00Z";

/// A body whose brief has every required section.
pub const BRIEF: &str = "## Intent\nLet people sign in.\n\n## Acceptance criteria\n- a login form exists\n\n## Validation\n`cargo test -p login`\n";

/// `T0` plus `minutes`.
pub fn ts(minutes: i64) -> Timestamp {
    let base = Timestamp::parse(T0).unwrap().datetime();
    Timestamp::from_datetime(base + chrono::Duration::minutes(minutes))
}

pub fn at(principal: Principal, minutes: i64) -> Ctx {
    Ctx::new(principal, ts(minutes))
}

pub fn alice(minutes: i64) -> Ctx {
    at(Principal::human("alice"), minutes)
}

pub fn orchestrator(minutes: i64) -> Ctx {
    at(Principal::orchestrator(), minutes)
}

pub fn service(minutes: i64) -> Ctx {
    at(Principal::service(), minutes)
}

pub fn intake(minutes: i64) -> Ctx {
    at(Principal::intake("scout"), minutes)
}

pub fn coder(minutes: i64) -> Ctx {
    at(Principal::pod("coder", "c1"), minutes)
}

/// Every principal that is not a person.
pub fn non_humans(minutes: i64) -> Vec<Ctx> {
    vec![
        orchestrator(minutes),
        service(minutes),
        intake(minutes),
        coder(minutes),
    ]
}

pub fn with_op(ctx: Ctx, op: &str) -> Ctx {
    ctx.with_op(Some(op.to_string()))
}

pub fn plain() -> TransitionRequest {
    TransitionRequest::default()
}

pub fn reason(text: &str) -> TransitionRequest {
    TransitionRequest {
        reason: Some(text.into()),
        ..TransitionRequest::default()
    }
}

pub fn resolution(text: &str) -> TransitionRequest {
    TransitionRequest {
        resolution: Some(text.into()),
        ..TransitionRequest::default()
    }
}

pub fn expecting(state: State) -> TransitionRequest {
    TransitionRequest {
        expected: Some(state),
        ..TransitionRequest::default()
    }
}

pub fn accept_evidence() -> AcceptEvidence {
    AcceptEvidence {
        branch: "yoi/login".into(),
        worktree: ".worktree/login".into(),
        base_commit: "0123abcd".into(),
        assignment: "asg-1".into(),
        decision: "Routing decision: implementation_ready".into(),
    }
}

pub fn merge_evidence() -> MergeEvidence {
    MergeEvidence {
        target_ref: "main".into(),
        before: "0123abcd".into(),
        after: "4567ef01".into(),
        commit: "89abcdef".into(),
    }
}

pub fn relation(kind: RelationKind, target: &TicketId) -> RelationRequest {
    RelationRequest {
        kind,
        target: target.to_string(),
        note: None,
    }
}

/// A workspace initialised in a fresh temporary folder.
pub struct Fx {
    pub dir: TempDir,
    pub ws: Workspace,
}

/// Every file under the ticket folder, path relative to it, with its bytes.
pub type Snapshot = BTreeMap<PathBuf, Vec<u8>>;

impl Fx {
    pub fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        yoi_store::init(dir.path(), "main").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        Fx { dir, ws }
    }

    pub fn create(&self, title: &str, body: &str) -> TicketId {
        ops::create(
            &self.ws,
            &alice(0),
            &CreateRequest {
                title: title.into(),
                body: body.into(),
                depends_on: Vec::new(),
            },
        )
        .unwrap()
        .ticket
    }

    pub fn planning(&self, title: &str) -> TicketId {
        self.create(title, BRIEF)
    }

    pub fn ready(&self, title: &str) -> TicketId {
        let id = self.planning(title);
        ops::mark_ready(&self.ws, &alice(1), id.as_str(), &plain()).unwrap();
        id
    }

    pub fn queued(&self, title: &str) -> TicketId {
        let id = self.ready(title);
        ops::queue(&self.ws, &alice(2), id.as_str(), &plain()).unwrap();
        id
    }

    pub fn inprogress(&self, title: &str) -> TicketId {
        let id = self.queued(title);
        ops::accept(
            &self.ws,
            &orchestrator(3),
            id.as_str(),
            &plain(),
            &accept_evidence(),
        )
        .unwrap();
        id
    }

    pub fn done(&self, title: &str) -> TicketId {
        let id = self.inprogress(title);
        ops::complete(
            &self.ws,
            &service(4),
            id.as_str(),
            &plain(),
            &merge_evidence(),
        )
        .unwrap();
        id
    }

    pub fn closed(&self, title: &str) -> TicketId {
        let id = self.done(title);
        ops::close(&self.ws, &alice(5), id.as_str(), &resolution("Shipped.")).unwrap();
        id
    }

    /// A ticket in `state`, reached through the real operations.
    pub fn in_state(&self, state: State, title: &str) -> TicketId {
        match state {
            State::Planning => self.planning(title),
            State::Ready => self.ready(title),
            State::Queued => self.queued(title),
            State::Inprogress => self.inprogress(title),
            State::Done => self.done(title),
            State::Closed => self.closed(title),
        }
    }

    pub fn relate(&self, from: &TicketId, kind: RelationKind, to: &TicketId) {
        ops::add_relation(&self.ws, &alice(0), from.as_str(), &relation(kind, to)).unwrap();
    }

    pub fn item(&self, id: &TicketId) -> Item {
        self.ws.read_item(id).unwrap()
    }

    pub fn state(&self, id: &TicketId) -> State {
        self.item(id).state
    }

    pub fn thread(&self, id: &TicketId) -> ParsedThread {
        self.ws.read_thread(id).unwrap()
    }

    pub fn events(&self, id: &TicketId) -> Vec<Event> {
        self.thread(id).events
    }

    pub fn last_event(&self, id: &TicketId) -> Event {
        self.events(id).pop().expect("the thread has events")
    }

    pub fn kinds(&self, id: &TicketId) -> Vec<String> {
        self.events(id)
            .iter()
            .map(|e| e.kind.as_str().to_string())
            .collect()
    }

    pub fn path(&self, id: &TicketId, file: &str) -> PathBuf {
        self.ws.path_of(id, file)
    }

    pub fn read(&self, id: &TicketId, file: &str) -> String {
        fs::read_to_string(self.path(id, file)).unwrap()
    }

    pub fn write(&self, id: &TicketId, file: &str, text: &str) {
        let path = self.path(id, file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// Give a ticket a chosen id by renaming its folder (fresh tickets carry no id inside).
    pub fn rename(&self, id: &TicketId, new_id: &str) -> TicketId {
        let new_id = TicketId::parse(new_id).unwrap();
        fs::rename(self.ws.ticket_dir(id), self.ws.ticket_dir(&new_id)).unwrap();
        new_id
    }

    /// A hand-written ticket folder (files relative to it).
    pub fn write_ticket(&self, id: &str, files: &[(&str, &str)]) -> TicketId {
        let id = TicketId::parse(id).unwrap();
        for (name, text) in files {
            self.write(&id, name, text);
        }
        id
    }

    pub fn snapshot(&self) -> Snapshot {
        let mut out = Snapshot::new();
        let root = self.ws.tickets_dir();
        walk(&root, &root, &mut out);
        out
    }

    /// Assert the ticket tree is byte for byte what it was (no file added, changed or removed).
    pub fn assert_unchanged(&self, before: &Snapshot) {
        let after = self.snapshot();
        let added: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
        let removed: Vec<_> = before.keys().filter(|k| !after.contains_key(*k)).collect();
        let changed: Vec<_> = before
            .iter()
            .filter(|(k, v)| after.get(*k).is_some_and(|a| a != *v))
            .map(|(k, _)| k)
            .collect();
        assert!(
            added.is_empty() && removed.is_empty() && changed.is_empty(),
            "the ticket tree changed: added {added:?}, removed {removed:?}, changed {changed:?}"
        );
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Snapshot) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap().to_path_buf();
        if entry.file_type().unwrap().is_dir() {
            // Folders count too, so an empty new ticket folder is noticed.
            out.insert(rel.join(""), Vec::new());
            walk(root, &path, out);
        } else {
            out.insert(rel, fs::read(&path).unwrap());
        }
    }
}

/// The event with this id (panics, listing the thread, when there is none).
pub fn event_by_id(events: &[Event], id: &str) -> Event {
    events
        .iter()
        .find(|e| e.id() == Some(id))
        .cloned()
        .unwrap_or_else(|| panic!("no event {id} in {events:#?}"))
}

pub fn state_changes(events: &[Event]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::StateChanged)
        .map(|e| {
            (
                e.get("from").unwrap_or("").to_string(),
                e.get("to").unwrap_or("").to_string(),
                e.get("reason").unwrap_or("").to_string(),
            )
        })
        .collect()
}

pub fn assert_forbidden(err: StoreError, op: Operation, kind: PrincipalKind) {
    assert_eq!(err.class(), ErrorClass::NotPermitted, "{err}");
    match err {
        StoreError::Transition {
            source:
                TransitionError::NotPermitted {
                    operation,
                    kind: found,
                    ..
                },
            ..
        } => {
            assert_eq!(operation, op);
            assert_eq!(found, kind);
        }
        other => panic!("expected NotPermitted, got {other:?}"),
    }
}

pub fn assert_wrong_state(err: StoreError, op: Operation, expected: &[State], found: State) {
    assert_eq!(err.class(), ErrorClass::Conflict, "{err}");
    let message = err.to_string();
    let names: Vec<&str> = expected.iter().map(|s| s.as_str()).collect();
    assert!(
        message.ends_with(&format!(
            "{op} needs the ticket in {}, but it is {found}",
            names.join(" or ")
        )),
        "{message}"
    );
    match err {
        StoreError::Transition {
            source:
                TransitionError::WrongState {
                    operation,
                    expected: e,
                    found: f,
                },
            ..
        } => {
            assert_eq!(operation, op);
            assert_eq!(e, expected);
            assert_eq!(f, found);
        }
        other => panic!("expected WrongState, got {other:?}"),
    }
}

pub fn assert_blocked(
    err: StoreError,
    ticket: &TicketId,
    want: &[(&TicketId, &str, Option<State>)],
) {
    assert_eq!(err.class(), ErrorClass::Conflict, "{err}");
    let message = err.to_string();
    match err {
        StoreError::Blocked {
            ticket: t,
            blockers,
        } => {
            assert_eq!(&t, ticket);
            let got: Vec<(&TicketId, &str, Option<State>)> = blockers
                .iter()
                .map(|b| (&b.ticket, b.reason_kind.as_str(), b.state))
                .collect();
            assert_eq!(got, want);
            for b in &blockers {
                assert!(message.contains(&b.to_string()), "{message}");
            }
        }
        other => panic!("expected Blocked, got {other:?}"),
    }
}

/// The state_changed event the outcome points at.
pub fn change_of(fx: &Fx, out: &Outcome) -> Event {
    let e = event_by_id(&fx.events(&out.ticket), out.event_id.as_deref().unwrap());
    assert_eq!(e.kind, EventKind::StateChanged);
    e
}
