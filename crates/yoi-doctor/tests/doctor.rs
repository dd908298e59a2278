//! `yoi ticket doctor`'s engine against real workspaces in temporary folders: each test makes
//! valid tickets with the store's own operations, breaks one file by hand, and asserts the exact
//! finding (check id, severity, ticket, line). `--fix` is checked to repair only what loses
//! nothing, and to leave item.md and thread.md byte for byte.

mod common;
use common as doctor_check;
use doctor_check::check;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;
use yoi_core::finding::{Finding, SafeFix, Severity};
use yoi_core::item::Item;
use yoi_core::principal::Principal;
use yoi_core::relation::{Relation, RelationKind, RelationsFile};
use yoi_core::state::State;
use yoi_core::thread::{Event, EventKind};
use yoi_core::{TicketId, Timestamp};
use yoi_doctor::{self as doctor, Report};
use yoi_store::ops::{self, AcceptEvidence, CreateRequest, PlanRequest, RelationRequest};
use yoi_store::ops::{Ctx, TransitionRequest};
use yoi_store::Workspace;

const RELATIONS: &str = "artifacts/relations.json";
const PLAN: &str = "artifacts/orchestration-plan.jsonl";
const BRIEF: &str =
    "## Intent\nShip it.\n\n## Acceptance criteria\n- it works\n\n## Validation\n- cargo test\n";

struct Fx {
    _dir: TempDir,
    ws: Workspace,
}

fn setup() -> Fx {
    setup_in(tempfile::tempdir().unwrap())
}

fn setup_in(dir: TempDir) -> Fx {
    yoi_store::init(dir.path(), "main").unwrap();
    let ws = Workspace::open(dir.path()).unwrap();
    Fx { _dir: dir, ws }
}

fn now() -> Timestamp {
    Timestamp::parse("2026-11-29T10:00:00Z").unwrap()
}

fn human() -> Ctx {
    Ctx::new(Principal::human("alice"), now())
}

fn create(ws: &Workspace, title: &str) -> TicketId {
    create_with(ws, title, BRIEF, &[])
}

fn create_with(ws: &Workspace, title: &str, body: &str, deps: &[&TicketId]) -> TicketId {
    let req = CreateRequest {
        title: title.into(),
        body: body.into(),
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
    };
    ops::create(ws, &human(), &req).unwrap().ticket
}

fn relate(ws: &Workspace, from: &TicketId, kind: RelationKind, to: &TicketId) {
    let req = RelationRequest {
        kind,
        target: to.to_string(),
        note: None,
    };
    ops::add_relation(ws, &human(), from.as_str(), &req).unwrap();
}

fn ready(ws: &Workspace, id: &TicketId) {
    ops::mark_ready(ws, &human(), id.as_str(), &TransitionRequest::default()).unwrap();
}

fn queued(ws: &Workspace, id: &TicketId) {
    ready(ws, id);
    ops::queue(ws, &human(), id.as_str(), &TransitionRequest::default()).unwrap();
}

fn cancel(ws: &Workspace, id: &TicketId) {
    let req = TransitionRequest {
        resolution: Some("Not needed.".into()),
        ..TransitionRequest::default()
    };
    ops::cancel(ws, &human(), id.as_str(), &req).unwrap();
}

fn accept(ws: &Workspace, id: &TicketId) {
    let ctx = Ctx::new(Principal::orchestrator(), now());
    let ev = AcceptEvidence {
        branch: format!("yoi/{id}-x"),
        worktree: format!(".worktree/{id}-x"),
        base_commit: "0123456789abcdef".into(),
        assignment: "asg-1".into(),
        decision: "Routing decision: implementation_ready".into(),
    };
    ops::accept(ws, &ctx, id.as_str(), &TransitionRequest::default(), &ev).unwrap();
}

fn path(ws: &Workspace, id: &TicketId, file: &str) -> PathBuf {
    ws.ticket_dir(id).join(file)
}

fn rel(ws: &Workspace, id: &TicketId, file: &str) -> String {
    ws.rel(&path(ws, id, file))
}

fn read(ws: &Workspace, id: &TicketId, file: &str) -> String {
    fs::read_to_string(path(ws, id, file)).unwrap()
}

fn write(ws: &Workspace, id: &TicketId, file: &str, text: &str) {
    fs::write(path(ws, id, file), text).unwrap();
}

/// Replace exactly one occurrence of `from` in a ticket file.
fn edit(ws: &Workspace, id: &TicketId, file: &str, from: &str, to: &str) {
    let text = read(ws, id, file);
    assert_eq!(text.matches(from).count(), 1, "`{from}` in {file}:\n{text}");
    write(ws, id, file, &text.replacen(from, to, 1));
}

fn doctor(ws: &Workspace) -> Report {
    check(ws, false)
}

fn dump(r: &Report) -> String {
    r.findings
        .iter()
        .map(|f| {
            format!(
                "{:?} {} {:?}:{:?} {}",
                f.severity, f.check, f.path, f.line, f.seen
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn all<'a>(r: &'a Report, check: &str) -> Vec<&'a Finding> {
    r.findings.iter().filter(|f| f.check == check).collect()
}

/// The one finding with this check id (the test fails if there are none or several).
fn only<'a>(r: &'a Report, check: &str) -> &'a Finding {
    let found = all(r, check);
    assert_eq!(found.len(), 1, "expected one `{check}`, got:\n{}", dump(r));
    found[0]
}

/// Assert the report holds exactly these check ids (in any order, with repeats).
fn assert_checks(r: &Report, expected: &[&str]) {
    let mut got: Vec<&str> = r.findings.iter().map(|f| f.check).collect();
    got.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert_eq!(got, want, "findings:\n{}", dump(r));
}

const E: Severity = Severity::Error;
const W: Severity = Severity::Warning;

/// Assert a ticket finding's severity, ticket, file (relative to the ticket folder) and line.
fn is(f: &Finding, severity: Severity, ticket: &TicketId, file: &str, line: Option<usize>) {
    let path = format!(".yoi/tickets/{ticket}/{file}");
    let path = path.trim_end_matches('/');
    assert_eq!(f.severity, severity, "{f:?}");
    assert_eq!(f.ticket.as_deref(), Some(ticket.as_str()), "{f:?}");
    assert_eq!(f.path.as_deref(), Some(path), "{f:?}");
    assert_eq!(f.line, line, "{f:?}");
}

/// Assert a finding that belongs to no ticket: severity and path, no line.
fn is_loose(f: &Finding, severity: Severity, path: &str) {
    assert_eq!(f.severity, severity, "{f:?}");
    assert_eq!(f.ticket, None, "{f:?}");
    assert_eq!(f.path.as_deref(), Some(path), "{f:?}");
    assert_eq!(f.line, None, "{f:?}");
}

/// A thread event header line as the store writes it.
fn event_text(attrs: &[(&str, &str)], kind: &str, body: &str) -> String {
    let mut e = Event::new(EventKind::from(kind.to_string()), body);
    for (k, v) in attrs {
        e.set(k, *v);
    }
    e.render()
}

fn append(ws: &Workspace, id: &TicketId, file: &str, text: &str) {
    let mut t = read(ws, id, file);
    t.push_str(text);
    write(ws, id, file, &t);
}

/// 1-based line of the first line of `file` containing `needle`.
fn line_of(ws: &Workspace, id: &TicketId, file: &str, needle: &str) -> usize {
    read(ws, id, file)
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not in {file}"))
        + 1
}

// ---------------------------------------------------------------------------------------------
// A clean workspace

#[test]
fn clean_workspace_reports_ok_with_no_findings() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "planning ticket");
    let b = create(ws, "ready ticket");
    ready(ws, &b);
    let d = create(ws, "queued first");
    queued(ws, &d);
    let c = create_with(ws, "queued behind d", BRIEF, &[&d]);
    queued(ws, &c);
    let e = create(ws, "cancelled");
    cancel(ws, &e);
    let f = create(ws, "accepted");
    queued(ws, &f);
    accept(ws, &f);
    relate(ws, &a, RelationKind::Related, &b);
    relate(ws, &b, RelationKind::Blocks, &a);
    let plan = PlanRequest {
        kind: yoi_core::plan::PlanKind::After,
        related: Some(d.to_string()),
        note: Some("after d".into()),
        accepted_plan: None,
    };
    ops::add_plan_record(ws, &human(), c.as_str(), &plan).unwrap();

    let report = doctor(ws);
    assert!(report.findings.is_empty(), "{}", dump(&report));
    assert!(report.ok);
    assert_eq!((report.errors, report.warnings), (0, 0));
    assert!(report.fixed.is_empty());

    let json = serde_json::to_value(&report).unwrap();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["ok", "errors", "warnings", "findings", "fixed"]);

    // --fix on a clean workspace changes nothing and reports nothing.
    let fixed = check(ws, true);
    assert!(fixed.findings.is_empty() && fixed.fixed.is_empty());
}

#[test]
fn every_state_of_the_lifecycle_is_clean() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    queued(ws, &a);
    accept(ws, &a);
    let merge = ops::MergeEvidence {
        target_ref: "main".into(),
        before: "1111111".into(),
        after: "2222222".into(),
        commit: "2222222".into(),
    };
    let service = Ctx::new(Principal::service(), now());
    let none = TransitionRequest::default();
    ops::complete(ws, &service, a.as_str(), &none, &merge).unwrap();
    assert!(doctor(ws).findings.is_empty(), "{}", dump(&doctor(ws)));
    let close = TransitionRequest {
        resolution: Some("Merged.".into()),
        ..TransitionRequest::default()
    };
    ops::close(ws, &human(), a.as_str(), &close).unwrap();
    assert!(doctor(ws).findings.is_empty(), "{}", dump(&doctor(ws)));
    let reopen = TransitionRequest {
        reason: Some("regressed".into()),
        ..TransitionRequest::default()
    };
    ops::reopen(ws, &human(), a.as_str(), &reopen).unwrap();
    assert!(doctor(ws).findings.is_empty(), "{}", dump(&doctor(ws)));
}

#[test]
fn finding_json_carries_every_field_that_is_known() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    edit(ws, &a, "item.md", "state: planning", "state: waiting");
    let report = doctor(ws);
    let json = serde_json::to_value(&report).unwrap();
    let f = &json["findings"][0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["check"], "item.state");
    assert_eq!(f["ticket"], a.as_str());
    assert_eq!(f["path"], rel(ws, &a, "item.md"));
    assert_eq!(f["line"], 3);
    assert!(f["seen"].as_str().unwrap().contains("waiting"));
    assert!(f["expected"].as_str().unwrap().contains("planning"));
    assert!(f["fix"].as_str().unwrap().contains("state:"));
    assert_eq!(json["ok"], false);
}

// ---------------------------------------------------------------------------------------------
// Folders and stray files

#[test]
fn folder_holding_item_md_under_a_name_that_is_not_an_id_is_an_error() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let item = read(ws, &a, "item.md");
    let lower = ws.tickets_dir().join(a.as_str().to_ascii_lowercase());
    fs::create_dir(&lower).unwrap();
    fs::write(lower.join("item.md"), &item).unwrap();
    let named = ws.tickets_dir().join("fix-login");
    fs::create_dir(&named).unwrap();
    fs::write(named.join("item.md"), &item).unwrap();

    let report = doctor(ws);
    assert_checks(&report, &["ticket.dir_name", "ticket.dir_name"]);
    let lower_rel = ws.rel(&lower);
    let f = all(&report, "ticket.dir_name")
        .into_iter()
        .find(|f| f.path.as_deref() == Some(lower_rel.as_str()))
        .unwrap();
    is_loose(f, E, &lower_rel);
    assert!(f.fix.as_deref().unwrap().contains(a.as_str()), "{f:?}");
    let f = all(&report, "ticket.dir_name")
        .into_iter()
        .find(|f| f.path.as_deref() == Some(".yoi/tickets/fix-login"))
        .unwrap();
    assert!(f.seen.contains("not a ticket id"), "{f:?}");
    assert!(!report.ok);
}

#[test]
fn ticket_folder_without_item_md_is_an_error() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    fs::remove_file(path(ws, &a, "item.md")).unwrap();
    let report = doctor(ws);
    let f = only(&report, "ticket.missing_item");
    is(f, E, &a, "", None);
    assert!(f.seen.contains("thread.md"), "{f:?}");
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

#[test]
fn stray_files_in_the_tickets_root_and_in_ticket_folders_are_warnings() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    fs::write(ws.tickets_dir().join("notes.txt"), "todo").unwrap();
    fs::create_dir(ws.tickets_dir().join("drafts")).unwrap();
    write(ws, &a, "scratch.md", "thinking");
    // Free-form evidence inside artifacts/ and a .gitkeep in the root are fine.
    write(ws, &a, "artifacts/review-notes.md", "ok");
    fs::write(ws.tickets_dir().join(".gitkeep"), "").unwrap();

    let report = doctor(ws);
    assert_checks(
        &report,
        &[
            "layout.stray_file",
            "layout.stray_file",
            "layout.stray_file",
        ],
    );
    let by_path = |p: &str| {
        report
            .findings
            .iter()
            .find(|f| f.path.as_deref() == Some(p))
            .unwrap_or_else(|| panic!("no finding at {p}:\n{}", dump(&report)))
    };
    is_loose(
        by_path(".yoi/tickets/notes.txt"),
        W,
        ".yoi/tickets/notes.txt",
    );
    is_loose(by_path(".yoi/tickets/drafts"), W, ".yoi/tickets/drafts");
    is(
        by_path(&rel(ws, &a, "scratch.md")),
        W,
        &a,
        "scratch.md",
        None,
    );
    assert!(report.ok);
}

#[test]
fn staging_folder_of_an_interrupted_create_is_reported_and_never_removed() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "kept as the template");
    // What an interrupted create leaves: a hidden folder holding the only copy of the ticket.
    let ghost = TicketId::from_ulid(ulid::Ulid::from_parts(1_800_000_000_000, 7));
    let staging = ws.tickets_dir().join(format!(".new-{ghost}"));
    fs::create_dir_all(staging.join("artifacts")).unwrap();
    let mut item = Item::new("half-created".into(), now(), String::new());
    item.set_body_text("only copy");
    fs::write(staging.join("item.md"), item.render()).unwrap();
    fs::write(staging.join("thread.md"), read(ws, &a, "thread.md")).unwrap();

    let report = doctor(ws);
    let f = only(&report, "layout.staging_dir");
    is_loose(f, W, &ws.rel(&staging));
    assert!(f.seen.contains("half-created"), "{f:?}");
    assert!(f.fix.as_deref().unwrap().contains("mv"), "{f:?}");
    assert_eq!(f.safe_fix, None);

    let fixed = check(ws, true);
    assert!(fixed.fixed.is_empty(), "{:?}", fixed.fixed);
    assert!(
        staging.join("item.md").is_file(),
        "--fix must keep the staging folder"
    );
    only(&fixed, "layout.staging_dir");
}

// ---------------------------------------------------------------------------------------------
// Temporary files of interrupted atomic writes

#[test]
fn temp_leftover_is_removed_by_fix_when_the_real_file_is_intact() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let b = create(ws, "b");
    relate(ws, &a, RelationKind::Related, &b);
    let temp = path(ws, &a, ".item.md.tmp.4242.0");
    fs::write(&temp, "---\ntitle: half").unwrap();
    let temp2 = path(ws, &a, "artifacts/.relations.json.tmp.4242.1");
    fs::write(&temp2, "{").unwrap();

    let report = doctor(ws);
    assert_checks(&report, &["layout.temp_file", "layout.temp_file"]);
    let f = report
        .findings
        .iter()
        .find(|f| f.path.as_deref() == Some(ws.rel(&temp).as_str()))
        .unwrap();
    is(f, W, &a, ".item.md.tmp.4242.0", None);
    assert_eq!(
        f.safe_fix,
        Some(SafeFix::RemoveTempFile {
            path: ws.rel(&temp)
        })
    );
    assert_eq!(f.fix.as_deref(), Some("yoi ticket doctor --fix"));

    let fixed = check(ws, true);
    assert_eq!(fixed.fixed.len(), 2, "{:?}", fixed.fixed);
    assert!(fixed.fixed[0].contains(".tmp.4242"), "{:?}", fixed.fixed);
    assert!(!temp.exists() && !temp2.exists());
    assert!(fixed.findings.is_empty(), "{}", dump(&fixed));
    assert!(doctor(ws).findings.is_empty());
}

#[test]
fn temp_leftover_is_kept_when_the_real_file_is_missing_or_broken() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let good_item = read(ws, &a, "item.md");
    // The real item.md is broken; the temporary file holds the only good copy.
    write(ws, &a, "item.md", "---\ntitle: [torn\n");
    let temp = path(ws, &a, ".item.md.tmp.77.3");
    fs::write(&temp, &good_item).unwrap();
    // A temporary file in the tickets root has no real file at all.
    let stray_temp = ws.tickets_dir().join(".index.tmp.77.4");
    fs::write(&stray_temp, "x").unwrap();

    let report = doctor(ws);
    let temps = all(&report, "layout.temp_file");
    assert_eq!(temps.len(), 2, "{}", dump(&report));
    assert!(
        temps.iter().all(|f| f.safe_fix.is_none()),
        "{}",
        dump(&report)
    );
    let f = temps
        .iter()
        .find(|f| f.ticket.as_deref() == Some(a.as_str()))
        .unwrap();
    assert!(f.fix.as_deref().unwrap().contains("rename"), "{f:?}");
    only(&report, "item.parse");

    let fixed = check(ws, true);
    assert!(fixed.fixed.is_empty(), "{:?}", fixed.fixed);
    assert_eq!(fs::read_to_string(&temp).unwrap(), good_item);
    assert!(stray_temp.exists());
}

// ---------------------------------------------------------------------------------------------
// item.md

#[test]
fn item_md_that_does_not_parse_is_an_error_with_its_line() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    edit(ws, &a, "item.md", "title: a", "title: a: b");
    let report = doctor(ws);
    let f = only(&report, "item.parse");
    is(f, E, &a, "item.md", Some(2));
    assert!(f.seen.contains("invalid YAML"), "{f:?}");
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));

    write(ws, &a, "item.md", "title: no frontmatter\n");
    let f = doctor(ws);
    let f = only(&f, "item.parse");
    assert_eq!(f.line, Some(1));
}

#[test]
fn item_md_without_a_required_key_is_an_error_naming_the_key() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let text = read(ws, &a, "item.md");
    let updated = text.lines().find(|l| l.starts_with("updated_at:")).unwrap();
    edit(ws, &a, "item.md", &format!("{updated}\n"), "");
    let report = doctor(ws);
    let f = only(&report, "item.required_key");
    is(f, E, &a, "item.md", None);
    assert!(f.seen.contains("`updated_at` is missing"), "{f:?}");
    // The suggestion takes the time of the thread's last event.
    assert!(
        f.fix.as_deref().unwrap().contains("2026-11-29T10:00:00Z"),
        "{f:?}"
    );

    let b = create(ws, "b");
    edit(ws, &b, "item.md", "title: b", "title: ''");
    let report = doctor(ws);
    let f = all(&report, "item.required_key")
        .into_iter()
        .find(|f| f.ticket.as_deref() == Some(b.as_str()))
        .unwrap();
    is(f, E, &b, "item.md", Some(2));
    assert!(f.seen.contains("`title` is empty"), "{f:?}");
}

#[test]
fn item_md_with_an_unknown_state_is_an_error_on_the_state_line() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    ready(ws, &a);
    edit(ws, &a, "item.md", "state: ready", "state: waiting");
    let report = doctor(ws);
    let f = only(&report, "item.state");
    is(f, E, &a, "item.md", Some(3));
    // The suggestion takes the thread's last state change.
    assert!(f.fix.as_deref().unwrap().contains("state: ready"), "{f:?}");
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

#[test]
fn legacy_keys_are_warnings_that_say_how_they_are_mapped() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    edit(
        ws,
        &a,
        "item.md",
        "state: planning\n",
        "state: planning\nref_selector: develop\nassignee: null\nworkflow_state: ready\n",
    );
    let report = doctor(ws);
    assert_checks(&report, &["item.legacy_key"; 3]);
    let by_line = |l: usize| {
        report
            .findings
            .iter()
            .find(|f| f.line == Some(l))
            .unwrap_or_else(|| panic!("nothing at line {l}:\n{}", dump(&report)))
    };
    let f = by_line(4);
    is(f, W, &a, "item.md", Some(4));
    assert!(f.seen.contains("ref_selector: develop"), "{f:?}");
    assert!(
        f.expected.contains("target_ref") && f.expected.contains("develop"),
        "{f:?}"
    );
    assert!(
        by_line(5).expected.contains("assignments"),
        "{:?}",
        by_line(5)
    );
    assert!(by_line(6)
        .expected
        .contains("`state`, which is set and wins"));
    assert!(report.ok);
}

#[test]
fn unknown_keys_are_warnings_with_their_line() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    edit(
        ws,
        &a,
        "item.md",
        "state: planning\n",
        "state: planning\nowner: bob\n",
    );
    let report = doctor(ws);
    let f = only(&report, "item.unknown_key");
    is(f, W, &a, "item.md", Some(4));
    assert!(f.seen.contains("owner: bob"), "{f:?}");
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

#[test]
fn queued_fields_must_match_the_state() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "queued without queued_by");
    queued(ws, &a);
    let text = read(ws, &a, "item.md");
    let qb = text.lines().find(|l| l.starts_with("queued_by:")).unwrap();
    edit(ws, &a, "item.md", &format!("{qb}\n"), "");
    let b = create(ws, "planning with queued_at");
    edit(
        ws,
        &b,
        "item.md",
        "state: planning\n",
        "state: planning\nqueued_at: 2026-11-29T10:00:00Z\n",
    );

    let report = doctor(ws);
    assert_checks(&report, &["item.queued_fields", "item.queued_fields"]);
    let of = |id: &TicketId| {
        *all(&report, "item.queued_fields")
            .iter()
            .find(|f| f.ticket.as_deref() == Some(id.as_str()))
            .unwrap()
    };
    let f = of(&a);
    is(f, W, &a, "item.md", Some(3));
    assert!(f.seen.contains("queued_by is missing"), "{f:?}");
    assert!(
        f.fix.as_deref().unwrap().contains("queued_by: alice"),
        "{f:?}"
    );
    let f = of(&b);
    is(f, W, &b, "item.md", Some(4));
    assert!(f.seen.contains("planning but still has queued_at"), "{f:?}");
}

// ---------------------------------------------------------------------------------------------
// resolution.md

#[test]
fn closed_yoi_ticket_without_resolution_is_an_error() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    cancel(ws, &a);
    fs::remove_file(path(ws, &a, "resolution.md")).unwrap();
    let report = doctor(ws);
    let f = only(&report, "resolution.missing");
    is(f, E, &a, "resolution.md", None);
    let close_line = line_of(ws, &a, "thread.md", "event: close");
    assert!(
        f.fix
            .as_deref()
            .unwrap()
            .contains(&format!("line {close_line}")),
        "{f:?}"
    );
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

#[test]
fn closed_legacy_ticket_without_resolution_is_only_a_warning() {
    let fx = setup();
    let ws = &fx.ws;
    let id = TicketId::parse("00001KXKMX0QM").unwrap();
    fs::create_dir_all(path(ws, &id, "artifacts")).unwrap();
    write(
        ws,
        &id,
        "item.md",
        "---\ntitle: 'old'\nstate: 'closed'\ncreated_at: '2026-07-15T19:43:46Z'\nupdated_at: '2026-07-16T10:00:00Z'\n---\n",
    );
    write(
        ws,
        &id,
        "thread.md",
        &event_text(
            &[
                ("id", "01JD0000000000000000000001"),
                ("author", "hare"),
                ("at", "2026-07-15T19:43:46Z"),
            ],
            "create",
            "Created.",
        ),
    );
    let report = doctor(ws);
    let f = only(&report, "resolution.missing");
    is(f, W, &id, "resolution.md", None);
    assert!(report.ok, "{}", dump(&report));
}

#[test]
fn resolution_on_a_ticket_that_is_not_closed_is_a_warning() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    write(ws, &a, "resolution.md", "Done.\n");
    let report = doctor(ws);
    let f = only(&report, "resolution.unexpected");
    is(f, W, &a, "resolution.md", None);
    assert_eq!(report.findings.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// thread.md

#[test]
fn missing_thread_is_created_empty_by_fix() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    fs::remove_file(path(ws, &a, "thread.md")).unwrap();
    let report = doctor(ws);
    let f = only(&report, "thread.missing");
    is(f, W, &a, "thread.md", None);
    assert_eq!(
        f.safe_fix,
        Some(SafeFix::CreateFile {
            path: rel(ws, &a, "thread.md")
        })
    );
    let fixed = check(ws, true);
    assert_eq!(
        fixed.fixed,
        vec![format!("created empty {}", rel(ws, &a, "thread.md"))]
    );
    assert_eq!(read(ws, &a, "thread.md"), "");
    assert!(fixed.findings.is_empty(), "{}", dump(&fixed));
}

#[test]
fn missing_thread_with_a_temporary_copy_is_left_for_a_person() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let thread = read(ws, &a, "thread.md");
    fs::remove_file(path(ws, &a, "thread.md")).unwrap();
    // Creating an empty thread.md would make this copy look like a removable leftover.
    let temp = path(ws, &a, ".thread.md.tmp.5.0");
    fs::write(&temp, &thread).unwrap();
    let report = doctor(ws);
    assert_checks(&report, &["thread.missing", "layout.temp_file"]);
    assert!(
        report.findings.iter().all(|f| f.safe_fix.is_none()),
        "{}",
        dump(&report)
    );
    assert!(only(&report, "thread.missing")
        .fix
        .as_deref()
        .unwrap()
        .contains("rename"));
    let fixed = check(ws, true);
    assert!(fixed.fixed.is_empty(), "{:?}", fixed.fixed);
    assert!(!path(ws, &a, "thread.md").exists());
    assert_eq!(fs::read_to_string(&temp).unwrap(), thread);
}

#[test]
fn missing_artifacts_folder_is_created_by_fix() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    fs::remove_dir(path(ws, &a, "artifacts")).unwrap();
    let report = doctor(ws);
    let f = only(&report, "layout.artifacts_missing");
    is(f, W, &a, "artifacts", None);
    let fixed = check(ws, true);
    assert_eq!(fixed.fixed.len(), 1);
    assert!(path(ws, &a, "artifacts").is_dir());
    assert!(fixed.findings.is_empty(), "{}", dump(&fixed));
}

#[test]
fn malformed_event_header_is_an_error_with_its_line() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    append(
        ws,
        &a,
        "thread.md",
        "\n<!-- event: comment author: bob at: 2026-11-29T11:00:00Z\n\n## Comment\n\nhi\n\n---\n",
    );
    let line = line_of(ws, &a, "thread.md", "author: bob");
    let report = doctor(ws);
    let f = only(&report, "thread.malformed_header");
    is(f, E, &a, "thread.md", Some(line));
    assert!(f.seen.contains("-->"), "{f:?}");
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

#[test]
fn torn_append_is_an_unterminated_event_error() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let full = event_text(
        &[
            ("id", "01JD0000000000000000000009"),
            ("author", "bob"),
            ("at", "2026-11-29T11:00:00Z"),
        ],
        "comment",
        "a long comment that was cut",
    );
    // Cut the append in the middle of the body: no closing `---`.
    let torn = &full[..full.find("that was").unwrap()];
    append(ws, &a, "thread.md", &format!("\n{torn}"));
    let line = line_of(ws, &a, "thread.md", "01JD0000000000000000000009");
    let report = doctor(ws);
    let f = only(&report, "thread.unterminated");
    is(f, E, &a, "thread.md", Some(line));
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

#[test]
fn text_outside_events_is_a_stray_text_warning() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let thread = read(ws, &a, "thread.md");
    write(
        ws,
        &a,
        "thread.md",
        &format!("notes typed by hand\n\n{thread}"),
    );
    let report = doctor(ws);
    let f = only(&report, "thread.stray_text");
    is(f, W, &a, "thread.md", Some(1));
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

#[test]
fn events_without_author_or_valid_time_are_errors() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let no_author = event_text(
        &[
            ("id", "01JD0000000000000000000001"),
            ("at", "2026-11-29T11:00:00Z"),
        ],
        "comment",
        "who wrote this?",
    );
    let no_at = event_text(
        &[("id", "01JD0000000000000000000002"), ("author", "bob")],
        "comment",
        "when?",
    );
    let bad_at = event_text(
        &[
            ("id", "01JD0000000000000000000003"),
            ("author", "bob"),
            ("at", "yesterday"),
        ],
        "comment",
        "yesterday",
    );
    append(
        ws,
        &a,
        "thread.md",
        &format!("\n{no_author}\n{no_at}\n{bad_at}"),
    );
    let report = doctor(ws);
    let line = |needle| Some(line_of(ws, &a, "thread.md", needle));
    let f = only(&report, "thread.event_author");
    is(f, E, &a, "thread.md", line("0000000001"));
    let at = all(&report, "thread.event_at");
    assert_eq!(at.len(), 2, "{}", dump(&report));
    is(at[0], E, &a, "thread.md", line("0000000002"));
    is(at[1], E, &a, "thread.md", line("0000000003"));
    assert!(at[1].seen.contains("yesterday"), "{:?}", at[1]);
    assert_eq!(report.findings.len(), 3, "{}", dump(&report));
}

#[test]
fn events_without_id_are_one_warning_per_thread() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let legacy = event_text(
        &[("author", "hare"), ("at", "2026-11-29T11:00:00Z")],
        "comment",
        "old",
    );
    append(ws, &a, "thread.md", &format!("\n{legacy}\n{legacy}"));
    let report = doctor(ws);
    let f = only(&report, "thread.event_id");
    let first = line_of(ws, &a, "thread.md", "author: hare");
    is(f, W, &a, "thread.md", Some(first));
    assert!(f.seen.starts_with("2 of 3 events"), "{f:?}");
    assert!(report.ok);
}

#[test]
fn duplicate_event_ids_are_an_error_at_the_second_event() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let thread = read(ws, &a, "thread.md");
    append(ws, &a, "thread.md", &format!("\n{thread}"));
    let report = doctor(ws);
    let f = only(&report, "thread.duplicate_id");
    let second = thread.lines().count() + 2;
    is(f, E, &a, "thread.md", Some(second));
    assert!(f.seen.contains("line 1"), "{f:?}");
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

#[test]
fn state_changed_without_reason_or_with_a_bad_state_is_an_error() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    ready(ws, &a);
    edit(ws, &a, "thread.md", " reason: marked_ready", "");
    let report = doctor(ws);
    let f = only(&report, "thread.state_changed_fields");
    let line = line_of(ws, &a, "thread.md", "event: state_changed");
    is(f, E, &a, "thread.md", Some(line));
    assert!(f.seen.contains("`reason` is missing"), "{f:?}");

    edit(ws, &a, "thread.md", "from: planning", "from: drafting");
    let report = doctor(ws);
    let f = only(&report, "thread.state_changed_fields");
    assert!(f.seen.contains("`from: drafting` is not a state"), "{f:?}");
}

#[test]
fn last_state_change_differing_from_item_state_is_a_warning() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    ready(ws, &a);
    // As if `queue` appended its event and died before rewriting item.md.
    let queued_event = event_text(
        &[
            ("id", "01JD0000000000000000000042"),
            ("author", "alice"),
            ("at", "2026-11-29T10:00:00Z"),
            ("from", "ready"),
            ("to", "queued"),
            ("reason", "queued"),
        ],
        "state_changed",
        "Queued.",
    );
    append(ws, &a, "thread.md", &format!("\n{queued_event}"));
    let report = doctor(ws);
    let f = only(&report, "thread.state_mismatch");
    let line = line_of(ws, &a, "thread.md", "0000000042");
    is(f, W, &a, "thread.md", Some(line));
    assert!(
        f.seen.contains("to queued") && f.seen.contains("says ready"),
        "{f:?}"
    );
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

// ---------------------------------------------------------------------------------------------
// relations.json

#[test]
fn relations_json_that_does_not_parse_is_an_error_with_its_line() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    write(
        ws,
        &a,
        RELATIONS,
        "{\n  \"version\": 1,\n  \"relations\": [\n    oops\n  ]\n}\n",
    );
    let report = doctor(ws);
    let f = only(&report, "relations.parse");
    is(f, E, &a, RELATIONS, Some(4));
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

#[test]
fn relation_owned_by_another_ticket_is_invalid() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let b = create(ws, "b");
    let c = create(ws, "c");
    relate(ws, &a, RelationKind::Related, &b);
    relate(ws, &a, RelationKind::Related, &c);
    let text = read(ws, &a, RELATIONS);
    // Change the owner of the second relation.
    let at = text.rfind(&format!("\"ticket_id\": \"{a}\"")).unwrap();
    let broken = format!(
        "{}\"ticket_id\": \"{b}\"{}",
        &text[..at],
        &text[at + 15 + a.as_str().len()..]
    );
    write(ws, &a, RELATIONS, &broken);
    let report = doctor(ws);
    let f = only(&report, "relations.invalid");
    let line = broken
        .lines()
        .position(|l| l.contains(&format!("\"ticket_id\": \"{b}\"")))
        .unwrap()
        + 1;
    is(f, E, &a, RELATIONS, Some(line));
    assert!(f.seen.contains("belongs to"), "{f:?}");
}

#[test]
fn relation_to_a_missing_ticket_is_dangling() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let b = create(ws, "b");
    let c = create(ws, "c");
    relate(ws, &a, RelationKind::DependsOn, &b);
    relate(ws, &a, RelationKind::Related, &c);
    fs::remove_dir_all(ws.ticket_dir(&b)).unwrap();
    fs::remove_dir_all(ws.ticket_dir(&c)).unwrap();
    let report = doctor(ws);
    let dangling = all(&report, "relations.dangling");
    assert_eq!(dangling.len(), 2, "{}", dump(&report));
    let dep = dangling
        .iter()
        .find(|f| f.seen.contains("depends_on"))
        .unwrap();
    let line = line_of(ws, &a, RELATIONS, &format!("\"target\": \"{b}\""));
    is(dep, E, &a, RELATIONS, Some(line));
    assert_eq!(
        dep.fix.as_deref(),
        Some(format!("yoi ticket relation rm {a} depends_on {b}").as_str())
    );
    let related = dangling
        .iter()
        .find(|f| f.seen.contains("related"))
        .unwrap();
    assert_eq!(related.severity, W);

    // The suggested command works even though the target is gone.
    ops::remove_relation(
        ws,
        &human(),
        a.as_str(),
        RelationKind::DependsOn,
        b.as_str(),
    )
    .unwrap();
    ops::remove_relation(ws, &human(), a.as_str(), RelationKind::Related, c.as_str()).unwrap();
    assert!(doctor(ws).findings.is_empty());
}

fn relation(from: &TicketId, kind: RelationKind, to: &TicketId) -> Relation {
    Relation {
        ticket_id: from.clone(),
        kind,
        target: to.clone(),
        note: None,
        author: "alice".into(),
        at: now(),
    }
}

/// Write relations.json in the given order, formatted exactly as yoi formats it.
fn write_relations_unsorted(ws: &Workspace, id: &TicketId, relations: Vec<Relation>) {
    let file = RelationsFile {
        version: 1,
        relations,
    };
    let mut text = serde_json::to_string_pretty(&file).unwrap();
    text.push('\n');
    write(ws, id, RELATIONS, &text);
}

#[test]
fn unsorted_relations_are_sorted_by_fix_without_other_changes() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let b = create(ws, "b");
    let c = create(ws, "c");
    write_relations_unsorted(
        ws,
        &a,
        vec![
            relation(&a, RelationKind::Related, &c),
            relation(&a, RelationKind::DependsOn, &b),
        ],
    );
    let report = doctor(ws);
    let f = only(&report, "relations.unsorted");
    is(f, W, &a, RELATIONS, None);
    assert_eq!(
        f.safe_fix,
        Some(SafeFix::SortRelations {
            ticket: a.to_string()
        })
    );
    let before = ws.read_relations(&a).unwrap();
    let fixed = check(ws, true);
    assert_eq!(fixed.fixed.len(), 1, "{:?}", fixed.fixed);
    assert!(fixed.findings.is_empty(), "{}", dump(&fixed));
    let after = ws.read_relations(&a).unwrap();
    let mut sorted = before.clone();
    sorted.sort();
    assert_eq!(after, sorted);
    assert_eq!(read(ws, &a, RELATIONS), before.render());
}

#[test]
fn unsorted_relations_in_another_format_are_reported_but_left_alone() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let b = create(ws, "b");
    let c = create(ws, "c");
    let file = RelationsFile {
        version: 1,
        relations: vec![
            relation(&a, RelationKind::Related, &c),
            relation(&a, RelationKind::DependsOn, &b),
        ],
    };
    let compact = serde_json::to_string(&file).unwrap();
    write(ws, &a, RELATIONS, &compact);
    let report = doctor(ws);
    let f = only(&report, "relations.unsorted");
    assert_eq!(f.safe_fix, None);
    let fixed = check(ws, true);
    assert!(fixed.fixed.is_empty());
    assert_eq!(read(ws, &a, RELATIONS), compact);
}

#[test]
fn dependency_cycles_are_errors_shown_once_each() {
    let fx = setup();
    let ws = &fx.ws;
    let mut ids: Vec<TicketId> = (0..5).map(|i| create(ws, &format!("t{i}"))).collect();
    ids.sort();
    let [a, b, c, d, e] = [&ids[0], &ids[1], &ids[2], &ids[3], &ids[4]];
    // a -> b -> a through depends_on; c -> d -> e -> c through a mix of depends_on and blocks.
    write_relations_unsorted(ws, a, vec![relation(a, RelationKind::DependsOn, b)]);
    write_relations_unsorted(ws, b, vec![relation(b, RelationKind::DependsOn, a)]);
    write_relations_unsorted(ws, c, vec![relation(c, RelationKind::DependsOn, d)]);
    write_relations_unsorted(ws, e, vec![relation(e, RelationKind::Blocks, d)]);
    write_relations_unsorted(
        ws,
        e,
        vec![
            relation(e, RelationKind::Blocks, d),
            relation(e, RelationKind::DependsOn, c),
        ],
    );
    let report = doctor(ws);
    let cycles = all(&report, "relations.cycle");
    assert_eq!(cycles.len(), 2, "{}", dump(&report));
    let two = format!("depends_on/blocks cycle: {a} -> {b} -> {a}");
    let f = cycles
        .iter()
        .find(|f| f.seen == two)
        .unwrap_or_else(|| panic!("{}", dump(&report)));
    let line = line_of(ws, a, RELATIONS, &format!("\"target\": \"{b}\""));
    is(f, E, a, RELATIONS, Some(line));
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains(&format!("yoi ticket relation rm {a} depends_on {b}")));
    let three = format!("depends_on/blocks cycle: {c} -> {d} -> {e} -> {c}");
    let f = cycles
        .iter()
        .find(|f| f.seen == three)
        .unwrap_or_else(|| panic!("{}", dump(&report)));
    assert_eq!(f.ticket.as_deref(), Some(c.as_str()));
    assert!(!report.ok);
}

#[test]
fn more_than_32_cycles_are_capped_with_a_warning() {
    let fx = setup();
    let ws = &fx.ws;
    let tickets = ws.tickets_dir();
    // 33 independent two-ticket cycles, written directly (operations refuse cycles).
    for i in 0..33u64 {
        let x = TicketId::from_ulid(ulid::Ulid::from_parts(1_800_000_000_000 + i, 1));
        let y = TicketId::from_ulid(ulid::Ulid::from_parts(1_800_000_000_000 + i, 2));
        for (me, other) in [(&x, &y), (&y, &x)] {
            write_plain_ticket(
                &tickets,
                me,
                State::Planning,
                &[relation(me, RelationKind::DependsOn, other)],
            );
        }
    }
    let report = doctor(ws);
    assert_eq!(
        all(&report, "relations.cycle").len(),
        32,
        "{}",
        dump(&report)
    );
    let f = only(&report, "relations.cycle_limit");
    is_loose(f, W, ".yoi/tickets");
    assert_eq!(report.findings.len(), 33);
}

// ---------------------------------------------------------------------------------------------
// Blockers and notices

#[test]
fn queued_ticket_with_a_blocker_queue_would_refuse_is_a_warning() {
    let fx = setup();
    let ws = &fx.ws;
    let blocker = create(ws, "blocker");
    let in_flight = create(ws, "in flight");
    queued(ws, &in_flight);
    let a = create(ws, "a");
    queued(ws, &a);
    // Relations added after queueing: one to a planning ticket, one to a queued one.
    relate(ws, &a, RelationKind::DependsOn, &blocker);
    relate(ws, &a, RelationKind::DependsOn, &in_flight);
    let report = doctor(ws);
    let f = only(&report, "ticket.blocked_queued");
    is(f, W, &a, "item.md", None);
    assert!(
        f.seen
            .contains(&format!("{blocker} via depends_on (state: planning)")),
        "{f:?}"
    );
    assert!(
        !f.seen.contains(in_flight.as_str()),
        "in-flight blockers are normal: {f:?}"
    );
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains(&format!("yoi ticket relation rm {a} depends_on {blocker}")));
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

#[test]
fn in_progress_ticket_whose_blocker_was_reopened_is_a_warning() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    // The blocker was cancelled, so it did not hold `a` back; `a` started; then the blocker
    // was reopened (the only way there: adding a blocker to a started ticket is refused).
    let blocker = create(ws, "blocker");
    cancel(ws, &blocker);
    relate(ws, &blocker, RelationKind::Blocks, &a);
    queued(ws, &a);
    accept(ws, &a);
    let req = TransitionRequest {
        reason: Some("needed after all".into()),
        ..TransitionRequest::default()
    };
    ops::reopen(ws, &human(), blocker.as_str(), &req).unwrap();
    let report = doctor(ws);
    let f = only(&report, "ticket.blocked_inprogress");
    is(f, W, &a, "item.md", None);
    assert!(
        f.seen
            .contains(&format!("{blocker} via blocked_by (state: planning)")),
        "{f:?}"
    );
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains(&format!("yoi ticket relation rm {blocker} blocks {a}")));
    assert_eq!(report.findings.len(), 1, "{}", dump(&report));
}

#[test]
fn supersedes_and_duplicate_of_with_both_ends_active_are_warnings() {
    let fx = setup();
    let ws = &fx.ws;
    let new = create(ws, "new");
    let old = create(ws, "old");
    let dup = create(ws, "dup");
    let orig = create(ws, "orig");
    relate(ws, &new, RelationKind::Supersedes, &old);
    relate(ws, &dup, RelationKind::DuplicateOf, &orig);
    let report = doctor(ws);
    assert_checks(
        &report,
        &["relations.superseded_active", "relations.duplicate_active"],
    );
    let f = only(&report, "relations.superseded_active");
    let line = line_of(ws, &new, RELATIONS, "\"target\"");
    is(f, W, &new, RELATIONS, Some(line));
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains(&format!("yoi ticket cancel {old}")));
    let f = only(&report, "relations.duplicate_active");
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains(&format!("yoi ticket cancel {dup}")));
    // Once the retired tickets are closed, nothing is left to say.
    cancel(ws, &old);
    cancel(ws, &dup);
    assert!(doctor(ws).findings.is_empty(), "{}", dump(&doctor(ws)));
}

// ---------------------------------------------------------------------------------------------
// orchestration-plan.jsonl

#[test]
fn plan_lines_that_do_not_parse_or_break_rules_are_errors_with_their_line() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let b = create(ws, "b");
    let plan = PlanRequest {
        kind: yoi_core::plan::PlanKind::Before,
        related: Some(b.to_string()),
        note: None,
        accepted_plan: None,
    };
    ops::add_plan_record(ws, &human(), a.as_str(), &plan).unwrap();
    let bad_rule = format!(
        "{{\"id\":\"p2\",\"ticket_id\":\"{a}\",\"kind\":\"after\",\"author\":\"x\",\"at\":\"2026-11-29T10:00:00Z\"}}\n"
    );
    append(ws, &a, PLAN, &bad_rule);
    append(ws, &a, PLAN, "{\"id\":\"p3\",\"ticket_");
    let report = doctor(ws);
    let f = only(&report, "plan.invalid");
    is(f, E, &a, PLAN, Some(2));
    assert!(f.seen.contains("needs `related_ticket`"), "{f:?}");
    let f = only(&report, "plan.parse");
    is(f, E, &a, PLAN, Some(3));
    assert!(f.seen.contains("torn append"), "{f:?}");
    assert_eq!(report.findings.len(), 2, "{}", dump(&report));
}

#[test]
fn plan_record_naming_a_missing_ticket_is_a_warning() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let b = create(ws, "b");
    let plan = PlanRequest {
        kind: yoi_core::plan::PlanKind::ConflictsWith,
        related: Some(b.to_string()),
        note: None,
        accepted_plan: None,
    };
    ops::add_plan_record(ws, &human(), a.as_str(), &plan).unwrap();
    fs::remove_dir_all(ws.ticket_dir(&b)).unwrap();
    let report = doctor(ws);
    let f = only(&report, "plan.missing_related");
    is(f, W, &a, PLAN, Some(1));
    assert!(f.seen.contains(b.as_str()), "{f:?}");
    assert!(report.ok);
}

// ---------------------------------------------------------------------------------------------
// --fix as a whole

fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(root).unwrap() {
        let dir = entry.unwrap().path();
        for name in ["item.md", "thread.md"] {
            if let Ok(bytes) = fs::read(dir.join(name)) {
                out.insert(dir.join(name), bytes);
            }
        }
    }
    out
}

#[test]
fn fix_repairs_only_lossless_problems_and_never_changes_item_or_thread() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    let b = create(ws, "b");
    let c = create(ws, "c");
    let d = create(ws, "d");
    // Repairable: temp files, a missing artifacts folder, unsorted relations, a missing thread.
    fs::write(path(ws, &a, ".item.md.tmp.9.0"), "partial").unwrap();
    fs::write(path(ws, &a, ".thread.md.tmp.9.1"), "partial").unwrap();
    fs::remove_dir(path(ws, &b, "artifacts")).unwrap();
    write_relations_unsorted(
        ws,
        &c,
        vec![
            relation(&c, RelationKind::Related, &a),
            relation(&c, RelationKind::DependsOn, &b),
        ],
    );
    fs::remove_file(path(ws, &d, "thread.md")).unwrap();
    // Not repairable: an unknown key in item.md and stray text in a thread stay as they are.
    edit(
        ws,
        &a,
        "item.md",
        "state: planning\n",
        "state: planning\nowner: bob\n",
    );
    let thread_b = read(ws, &b, "thread.md");
    write(ws, &b, "thread.md", &format!("stray\n{thread_b}"));

    let before = snapshot(&ws.tickets_dir());
    let report = check(ws, true);
    assert_eq!(report.fixed.len(), 5, "{:?}", report.fixed);
    assert_checks(&report, &["item.unknown_key", "thread.stray_text"]);
    let after = snapshot(&ws.tickets_dir());
    for (p, bytes) in &before {
        assert_eq!(after.get(p), Some(bytes), "{} changed", p.display());
    }
    assert_eq!(after.get(&path(ws, &d, "thread.md")).map(Vec::len), Some(0));
    // A second run has nothing left to fix.
    assert!(check(ws, true).fixed.is_empty());
}

#[test]
fn fix_waits_for_the_workspace_lock() {
    let fx = setup();
    let ws = &fx.ws;
    let a = create(ws, "a");
    fs::write(path(ws, &a, ".item.md.tmp.9.0"), "partial").unwrap();
    let mut impatient = ws.clone();
    impatient.config.workspace.lock_timeout_secs = 0;
    let held = ws.lock().unwrap();
    let err = doctor::run(&impatient, true).unwrap_err();
    assert!(matches!(err, yoi_store::StoreError::Locked { .. }), "{err}");
    assert!(path(ws, &a, ".item.md.tmp.9.0").exists());
    // Checking without fixing needs no lock.
    assert_eq!(doctor::run(&impatient, false).unwrap().warnings, 1);
    drop(held);
    assert_eq!(check(ws, true).fixed.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// The older ticket format

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

#[test]
fn legacy_ticket_tree_passes_with_warnings_only() {
    let fx = setup();
    let ws = &fx.ws;
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../yoi-store/tests/fixtures/legacy-tree");
    copy_tree(&fixture, &ws.tickets_dir());
    assert_eq!(ws.ticket_ids().unwrap().len(), 4);

    let report = doctor(ws);
    assert_eq!(report.errors, 0, "{}", dump(&report));
    assert!(report.ok);
    // The older format is recognised, not silently accepted.
    assert!(
        all(&report, "item.legacy_key").len() >= 10,
        "{}",
        dump(&report)
    );
    assert_eq!(
        all(&report, "thread.event_id").len(),
        4,
        "{}",
        dump(&report)
    );
    let ref_selector = all(&report, "item.legacy_key")
        .into_iter()
        .find(|f| f.seen.contains("ref_selector"))
        .unwrap();
    assert!(ref_selector.expected.contains("target_ref"));
    let no_resolution = only(&report, "resolution.missing");
    assert_eq!(no_resolution.ticket.as_deref(), Some("00001KXKMX0QM"));
    assert_eq!(no_resolution.severity, W);
    only(&report, "layout.stray_file"); // .ticket-backend.lock
                                        // Bodies with unescaped rules stay whole: no stray text, no torn events.
    assert!(all(&report, "thread.stray_text").is_empty());
    assert!(all(&report, "thread.unterminated").is_empty());

    // --fix leaves an older tree as it is: nothing in it is a lossless repair.
    let before = snapshot(&ws.tickets_dir());
    let fixed = check(ws, true);
    assert!(fixed.fixed.is_empty(), "{:?}", fixed.fixed);
    assert_eq!(snapshot(&ws.tickets_dir()), before);
}

// ---------------------------------------------------------------------------------------------
// Scale

/// Write a ticket the way the store does, without locks or fsync (for building big trees).
fn write_plain_ticket(tickets: &Path, id: &TicketId, state: State, relations: &[Relation]) {
    let dir = tickets.join(id.as_str());
    fs::create_dir_all(dir.join("artifacts")).unwrap();
    let mut item = Item::new(format!("ticket {id}"), now(), String::new());
    item.set_body_text(BRIEF);
    item.state = state;
    fs::write(dir.join("item.md"), item.render()).unwrap();
    let create = Event::new(EventKind::Create, "Ticket created.")
        .with_attr("id", ulid::Ulid::from_parts(id.millis(), 99).to_string())
        .with_attr("author", "alice")
        .with_attr("at", now().to_string());
    fs::write(dir.join("thread.md"), create.render()).unwrap();
    if !relations.is_empty() {
        let file = RelationsFile {
            version: 1,
            relations: relations.to_vec(),
        };
        fs::write(dir.join(RELATIONS), file.render()).unwrap();
    }
}

#[test]
fn doctor_is_clean_on_ten_thousand_tickets_chained_by_twenty_thousand_relations() {
    // Scale, not speed (BENCHMARKS.md measures speed): a 10,000-deep dependency chain must not
    // overflow the cycle search or produce a finding.
    // Building 40,000 files costs far more than checking them on a slow virtual disk, so the
    // tree goes to memory when the machine has it; doctor reads page-cached files either way.
    let shm = Path::new("/dev/shm");
    let dir = match shm.is_dir() {
        true => tempfile::tempdir_in(shm).unwrap_or_else(|_| tempfile::tempdir().unwrap()),
        false => tempfile::tempdir().unwrap(),
    };
    let fx = setup_in(dir);
    let ws = &fx.ws;
    let tickets = ws.tickets_dir();
    let ids: Vec<TicketId> = (0..10_000u64)
        .map(|i| TicketId::from_ulid(ulid::Ulid::from_parts(1_800_000_000_000 + i, u128::from(i))))
        .collect();
    let mut relations = 0;
    for (i, id) in ids.iter().enumerate() {
        // Each ticket depends on the two before it: 19,997 relations, no cycles.
        let rels: Vec<Relation> = [i.checked_sub(1), i.checked_sub(2)]
            .into_iter()
            .flatten()
            .map(|j| relation(id, RelationKind::DependsOn, &ids[j]))
            .collect();
        relations += rels.len();
        write_plain_ticket(&tickets, id, State::Planning, &rels);
    }
    assert!(relations >= 19_990);

    let report = doctor::run(ws, false).unwrap();
    assert!(report.findings.is_empty(), "{}", dump(&report));
}
