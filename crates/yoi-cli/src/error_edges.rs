//! Every library error at both edges: for a value of every variant of every error enum, the
//! class it reports, the exit code and HTTP status the one table (`yoi_engine::edge`) gives that
//! class, and — where the value reaches a frontend — the exit code `CliError` really answers and
//! the status `ApiError` really answers, directly and inside the errors that carry it.
//!
//! Each enum has a `tag_*` function with an exhaustive match: a new variant does not compile
//! until it has an index, and the test then fails until the table has a case for it.
//!
//! The API's `error.code` comes from the error itself (`StoreError::code`, the engine errors'
//! `code`; a refusal's rule, `Refusal::code` or `Permission::code`, as `details.reason`): the
//! tests check that `ApiError` answers it and that docs/api.md lists every code answered, so a
//! new refusal cannot reach a client without a documented code.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::path::PathBuf;
use std::time::Duration;

use yoi_core::id::{IdError, ResolveError};
use yoi_core::plan::PlanError;
use yoi_core::relation::{RelationKind, RelationsFileError};
use yoi_core::state::TransitionError;
use yoi_core::thread::AttrError;
use yoi_core::{ErrorClass as C, Operation, PrincipalKind, State, TicketId};
use yoi_db::AssignmentStatus;
use yoi_engine::assignments::AssignmentError;
use yoi_engine::edge::edge;
use yoi_engine::routing::AcceptError;
use yoi_engine::skills::SkillError;
use yoi_git::GitError;
use yoi_server::error::details::ErrorDetails;
use yoi_server::error::ApiError;
use yoi_skills::{
    ActivateError, ParseError, ProposalError, ProposalStatus, RecorderError, ResourceError,
};
use yoi_store::error::{DbSetup, Permission, Refusal};
use yoi_store::worktrees::WorktreeError;
use yoi_store::StoreError;

use crate::error::CliError;

/// The class, CLI exit code and HTTP status one value must answer.
type Want = (C, u8, u16);
/// A value, made afresh for every edge it is checked at (the errors are not `Clone`).
type Case<E> = (fn() -> E, Want);
/// Checks the frontends a value reaches.
type Frontends<E> = fn(&dyn Fn() -> E, &str, Want);

/// `value => Class exit status, …` as a slice of [`Case`]s.
macro_rules! cases {
    ($($e:expr => $class:ident $exit:literal $status:literal),* $(,)?) => {
        &[$(((|| $e) as fn() -> _, (C::$class, $exit, $status))),*]
    };
}

fn id() -> TicketId {
    TicketId::parse("00001KXKMX0QM").unwrap()
}

fn other() -> TicketId {
    TicketId::parse("00001KXKMX0QN").unwrap()
}

fn path() -> PathBuf {
    PathBuf::from("/w/.worktree/x")
}

fn s(text: &str) -> String {
    text.to_string()
}

/// Asserts class and edge of every case, the frontends it reaches, and that the cases cover
/// every variant (`tag` gives each variant a distinct index below `n`).
fn check<E: Debug + 'static>(
    name: &str,
    n: usize,
    tag: fn(&E) -> usize,
    class: fn(&E) -> C,
    cases: &[Case<E>],
    frontends: Frontends<E>,
) {
    let mut covered = BTreeSet::new();
    for &(make, want) in cases {
        let e = make();
        let what = format!("{name}: {e:?}");
        covered.insert(tag(&e));
        assert_eq!(class(&e), want.0, "{what}: class");
        let edge = edge(want.0);
        assert_eq!(
            (edge.exit_code, edge.http_status),
            (want.1, want.2),
            "{what}: edge of {:?}",
            want.0
        );
        frontends(&make, &what, want);
    }
    assert_eq!(
        covered,
        (0..n).collect::<BTreeSet<_>>(),
        "{name}: variants without a case"
    );
}

fn cli(e: impl Into<CliError>, what: &str, want: Want) {
    assert_eq!(
        e.into().exit_code(),
        i32::from(want.1),
        "{what}: CLI exit code"
    );
}

fn api(e: impl Into<ApiError>, what: &str, want: Want) -> ApiError {
    let answer = e.into();
    assert_eq!(answer.status.as_u16(), want.2, "{what}: HTTP status");
    documented(answer.code, what);
    assert!(
        yoi_server::error::CODES.contains(&answer.code),
        "{what}: the code `{}` is not in yoi_server::error::CODES, the document's enumeration",
        answer.code
    );
    answer
}

/// docs/api.md names every code a client can be answered.
fn documented(code: &str, what: &str) {
    const API_DOC: &str = include_str!("../../../docs/api.md");
    assert!(
        API_DOC.contains(&format!("`{code}`")),
        "{what}: the code `{code}` is not in docs/api.md"
    );
}

/// No frontend takes this error directly.
fn none<E>(_: &dyn Fn() -> E, _: &str, _: Want) {}

/// A store error at both frontends, directly and inside every error that carries one.
fn store(make: &dyn Fn() -> StoreError, what: &str, want: Want) {
    assert_eq!(make().class(), want.0, "{what}: class as a StoreError");
    cli(make(), what, want);
    let answer = api(make(), what, want);
    assert_eq!(answer.code, make().code(), "{what}: API code");
    let reason = match &answer.details {
        Some(ErrorDetails::Rule(rule)) => Some(rule.reason),
        _ => None,
    };
    // An answer that hides its message (internal and set-up errors) carries no details either.
    let rule = make().reason().filter(|_| !edge(want.0).hide_message);
    assert_eq!(reason, rule, "{what}: API details.reason");
    if let Some(reason) = reason {
        assert!(
            yoi_server::error::details::RULES.contains(&reason),
            "{what}: the rule `{reason}` is not in yoi_server::error::details::RULES, the document's enumeration"
        );
    }
    let answer = api(AssignmentError::Store(make()), what, want);
    assert_eq!(
        answer.code,
        make().code(),
        "{what}: API code as an AssignmentError"
    );
    let worktree = WorktreeError::Store(make());
    assert_eq!(worktree.class(), want.0, "{what}: class as a WorktreeError");
    cli(worktree, what, want);
    skill(&|| SkillError::Store(make()), what, want);
    let accept = AcceptError::Store(make());
    assert_eq!(accept.class(), want.0, "{what}: class as an AcceptError");
}

fn skill(make: &dyn Fn() -> SkillError, what: &str, want: Want) {
    assert_eq!(make().class(), want.0, "{what}: class as a SkillError");
    cli(make(), what, want);
    let answer = api(make(), what, want);
    assert_eq!(answer.code, make().code(), "{what}: API code");
}

fn git(make: &dyn Fn() -> GitError, what: &str, want: Want) {
    cli(make(), what, want);
    let worktree = WorktreeError::Git(make());
    assert_eq!(worktree.class(), want.0, "{what}: class as a WorktreeError");
    cli(worktree, what, want);
}

// The rules of refusals and the engine's assignment errors, with their API codes.
mod codes;
// Workflows and their offers.
mod workflows;

// ---- yoi_core -------------------------------------------------------------------------------

const N_ID: usize = 3;
fn tag_id(e: &IdError) -> usize {
    match e {
        IdError::Length { .. } => 0,
        IdError::Character { .. } => 1,
        IdError::Overflow { .. } => 2,
    }
}

#[test]
fn id_error() {
    check(
        "IdError",
        N_ID,
        tag_id,
        IdError::class,
        cases![
            IdError::Length { value: s("AB"), len: 2 } => Invalid 2 400,
            IdError::Character { value: s("00001KXKMX0QI"), ch: 'I' } => Invalid 2 400,
            IdError::Overflow { value: s("Z0001KXKMX0QM") } => Invalid 2 400,
        ],
        |make, what, want| store(&|| StoreError::BadId(make()), what, want),
    );
}

const N_RESOLVE: usize = 3;
fn tag_resolve(e: &ResolveError) -> usize {
    match e {
        ResolveError::NotFound { .. } => 0,
        ResolveError::TooShort { .. } => 1,
        ResolveError::Ambiguous { .. } => 2,
    }
}

#[test]
fn resolve_error() {
    check(
        "ResolveError",
        N_RESOLVE,
        tag_resolve,
        ResolveError::class,
        cases![
            ResolveError::NotFound { query: s("ABCD") } => NotFound 1 404,
            ResolveError::TooShort { query: s("AB") } => Invalid 2 400,
            ResolveError::Ambiguous { query: s("X0QM"), matches: vec![id(), other()] }
                => Invalid 2 400,
        ],
        |make, what, want| store(&|| StoreError::Resolve(make()), what, want),
    );
}

const N_TRANSITION: usize = 4;
fn tag_transition(e: &TransitionError) -> usize {
    match e {
        TransitionError::WrongState { .. } => 0,
        TransitionError::NotPermitted { .. } => 1,
        TransitionError::NoEdge { .. } => 2,
        TransitionError::Unchanged { .. } => 3,
    }
}

#[test]
fn transition_error() {
    check(
        "TransitionError",
        N_TRANSITION,
        tag_transition,
        TransitionError::class,
        cases![
            TransitionError::WrongState {
                operation: Operation::Queue,
                expected: vec![State::Ready],
                found: State::Planning,
            } => Conflict 1 409,
            TransitionError::NotPermitted {
                operation: Operation::Queue,
                principal: s("router"),
                kind: PrincipalKind::Orchestrator,
                allowed: vec![PrincipalKind::Human],
            } => NotPermitted 1 403,
            TransitionError::NoEdge { from: State::Done, to: State::Ready } => Conflict 1 409,
            TransitionError::Unchanged { state: State::Closed } => Conflict 1 409,
        ],
        |make, what, want| {
            let wrapped = || StoreError::Transition {
                ticket: id(),
                source: make(),
            };
            store(&wrapped, what, want)
        },
    );
}

const N_ATTR: usize = 6;
fn tag_attr(e: &AttrError) -> usize {
    match e {
        AttrError::BadKey { .. } => 0,
        AttrError::Multiline { .. } => 1,
        AttrError::TooLong { .. } => 2,
        AttrError::Duplicate { .. } => 3,
        AttrError::BodyTooLarge => 4,
        AttrError::BadHeading => 5,
    }
}

#[test]
fn attr_error() {
    check(
        "AttrError",
        N_ATTR,
        tag_attr,
        AttrError::class,
        cases![
            AttrError::BadKey { key: s("a b") } => Invalid 2 400,
            AttrError::Multiline { key: s("reason") } => Invalid 2 400,
            AttrError::TooLong { key: s("reason") } => Invalid 2 400,
            AttrError::Duplicate { key: s("op") } => Invalid 2 400,
            AttrError::BodyTooLarge => TooLarge 1 413,
            AttrError::BadHeading => Invalid 2 400,
        ],
        none,
    );
}

const N_PLAN: usize = 2;
fn tag_plan(e: &PlanError) -> usize {
    match e {
        PlanError::Json { .. } => 0,
        PlanError::Invalid { .. } => 1,
    }
}

#[test]
fn plan_error() {
    check(
        "PlanError",
        N_PLAN,
        tag_plan,
        PlanError::class,
        cases![
            PlanError::Json { line: 2, reason: s("expected value") } => Corrupt 1 500,
            PlanError::Invalid { line: 3, reason: s("needs `related_ticket`") } => Corrupt 1 500,
        ],
        none,
    );
}

const N_RELATIONS_FILE: usize = 6;
fn tag_relations_file(e: &RelationsFileError) -> usize {
    match e {
        RelationsFileError::Json { .. } => 0,
        RelationsFileError::Version { .. } => 1,
        RelationsFileError::Owner { .. } => 2,
        RelationsFileError::SelfTarget { .. } => 3,
        RelationsFileError::Duplicate { .. } => 4,
        RelationsFileError::NoteTooLarge { .. } => 5,
    }
}

#[test]
fn relations_file_error() {
    check(
        "RelationsFileError",
        N_RELATIONS_FILE,
        tag_relations_file,
        RelationsFileError::class,
        cases![
            RelationsFileError::Json { line: 1, reason: s("EOF") } => Corrupt 1 500,
            RelationsFileError::Version { found: 2 } => Corrupt 1 500,
            RelationsFileError::Owner { index: 0, expected: id(), found: other() }
                => Corrupt 1 500,
            RelationsFileError::SelfTarget { index: 0 } => Corrupt 1 500,
            RelationsFileError::Duplicate { kind: RelationKind::DependsOn, target: other() }
                => Corrupt 1 500,
            RelationsFileError::NoteTooLarge { index: 1 } => Corrupt 1 500,
        ],
        none,
    );
}

// ---- yoi_store ------------------------------------------------------------------------------

const N_STORE: usize = 22;
fn tag_store(e: &StoreError) -> usize {
    match e {
        StoreError::Io { .. } => 0,
        StoreError::Invalid { .. } => 1,
        StoreError::Locked { .. } => 2,
        StoreError::NotInitialized { .. } => 3,
        StoreError::BadId(_) => 4,
        StoreError::Resolve(_) => 5,
        StoreError::Transition { .. } => 6,
        StoreError::StaleState { .. } => 7,
        StoreError::Blocked { .. } => 8,
        StoreError::BriefIncomplete { .. } => 9,
        StoreError::BadInput { .. } => 10,
        StoreError::ConflictingReplay { .. } => 11,
        StoreError::Refused { .. } => 12,
        StoreError::NotPermitted { .. } => 13,
        StoreError::SelfRelation { .. } => 14,
        StoreError::DuplicateRelation { .. } => 15,
        StoreError::NoSuchRelation { .. } => 16,
        StoreError::Cycle { .. } => 17,
        StoreError::Database { .. } => 18,
        StoreError::DatabaseTooNew { .. } => 19,
        StoreError::NotGit { .. } => 20,
        StoreError::DatabaseSetup { .. } => 21,
    }
}

#[test]
fn store_error() {
    check(
        "StoreError",
        N_STORE,
        tag_store,
        StoreError::class,
        cases![
            StoreError::Io { path: path(), source: std::io::Error::other("disk full") }
                => Internal 1 500,
            StoreError::Invalid { path: path(), line: Some(3), reason: s("bad") } => Corrupt 1 500,
            StoreError::Locked {
                path: path(),
                holder: Some(s("pid 7")),
                waited: Duration::from_secs(10),
            } => Busy 1 503,
            StoreError::NotInitialized { root: path() } => Setup 1 500,
            StoreError::BadId(IdError::Length { value: s("AB"), len: 2 }) => Invalid 2 400,
            StoreError::Resolve(ResolveError::NotFound { query: s("ABCD") }) => NotFound 1 404,
            StoreError::Transition {
                ticket: id(),
                source: TransitionError::NotPermitted {
                    operation: Operation::Queue,
                    principal: s("router"),
                    kind: PrincipalKind::Orchestrator,
                    allowed: vec![PrincipalKind::Human],
                },
            } => NotPermitted 1 403,
            StoreError::StaleState { ticket: id(), expected: State::Ready, found: State::Queued }
                => Conflict 1 409,
            StoreError::Blocked { ticket: id(), blockers: vec![] } => Conflict 1 409,
            StoreError::BriefIncomplete { ticket: id(), missing: vec![s("Intent")] }
                => Refused 1 422,
            StoreError::BadInput { field: s("title"), reason: s("empty") } => Invalid 2 400,
            StoreError::ConflictingReplay { op: s("op-1"), ticket: id().to_string() }
                => Conflict 1 409,
            StoreError::Refused { reason: Refusal::NestedGroup } => Refused 1 422,
            StoreError::NotPermitted {
                reason: Permission::Retry { kind: PrincipalKind::Pod },
            } => NotPermitted 1 403,
            StoreError::SelfRelation { ticket: id() } => Refused 1 422,
            StoreError::DuplicateRelation {
                ticket: id(),
                kind: RelationKind::DependsOn,
                target: other(),
            } => Conflict 1 409,
            StoreError::NoSuchRelation { ticket: id(), kind: RelationKind::Blocks, target: other() }
                => NotFound 1 404,
            StoreError::Cycle {
                ticket: id(),
                kind: RelationKind::DependsOn,
                target: other(),
                cycle: s("A -> B -> A"),
            } => Conflict 1 409,
            StoreError::Database { reason: s("closed") } => Internal 1 500,
            StoreError::DatabaseTooNew { url: s("sqlite://x"), found: 9, known: 3 } => Setup 1 500,
            StoreError::NotGit { what: s("/w") } => Setup 1 500,
            StoreError::DatabaseSetup { problem: DbSetup::NoWorkspaceId { url: s("postgres://x") } }
                => Setup 1 500,
            StoreError::DatabaseSetup { problem: DbSetup::ServedElsewhere {
                workspace: s("w1"), host: s("box"), root: s("/w"), pid: 7,
                address: Some(s("10.0.0.2:7311")), seconds_ago: 2, lease_secs: 30,
            } } => Conflict 1 409,
        ],
        store,
    );
}

const N_WORKTREE: usize = 8;
fn tag_worktree(e: &WorktreeError) -> usize {
    match e {
        WorktreeError::Store(_) => 0,
        WorktreeError::Git(_) => 1,
        WorktreeError::MainWorktree { .. } => 2,
        WorktreeError::NotAWorktree { .. } => 3,
        WorktreeError::NoWorktree { .. } => 4,
        WorktreeError::Gone { .. } => 5,
        WorktreeError::Dirty { .. } => 6,
        WorktreeError::InProgress { .. } => 7,
    }
}

#[test]
fn worktree_error() {
    check(
        "WorktreeError",
        N_WORKTREE,
        tag_worktree,
        WorktreeError::class,
        cases![
            WorktreeError::Store(StoreError::bad_input("ticket", "too short")) => Invalid 2 400,
            WorktreeError::Git(GitError::Bare { path: path() }) => Setup 1 500,
            WorktreeError::MainWorktree { path: s("/w") } => Refused 1 422,
            WorktreeError::NotAWorktree { target: s("x"), repo: path() } => NotFound 1 404,
            WorktreeError::NoWorktree { ticket: id() } => NotFound 1 404,
            WorktreeError::Gone { path: s(".worktree/x") } => NotFound 1 404,
            WorktreeError::Dirty { path: s(".worktree/x"), changes: vec![s("a.txt")] }
                => Conflict 1 409,
            WorktreeError::InProgress {
                ticket: id(),
                path: s(".worktree/x"),
                state: State::Inprogress,
            } => Conflict 1 409,
        ],
        |make, what, want| cli(make(), what, want),
    );
}

// ---- yoi_git --------------------------------------------------------------------------------

const N_GIT: usize = 14;
fn tag_git(e: &GitError) -> usize {
    match e {
        GitError::NotARepository { .. } => 0,
        GitError::Bare { .. } => 1,
        GitError::Open { .. } => 2,
        GitError::UnknownRev { .. } => 3,
        GitError::InvalidBranchName { .. } => 4,
        GitError::UnknownBranch { .. } => 5,
        GitError::BranchExists { .. } => 6,
        GitError::BranchMoved { .. } => 7,
        GitError::BranchCheckedOut { .. } => 8,
        GitError::DestinationExists { .. } => 9,
        GitError::NotAWorktree { .. } => 10,
        GitError::Dirty { .. } => 11,
        GitError::Git { .. } => 12,
        GitError::NotDescendant { .. } => 13,
    }
}

#[test]
fn git_error() {
    check(
        "GitError",
        N_GIT,
        tag_git,
        GitError::class,
        cases![
            GitError::NotARepository { path: path(), reason: s("no .git") } => Setup 1 500,
            GitError::Bare { path: path() } => Setup 1 500,
            GitError::Open { path: path(), reason: s("broken") } => Internal 1 500,
            GitError::UnknownRev { repo: path(), rev: s("nope"), reason: s("unknown") }
                => NotFound 1 404,
            GitError::InvalidBranchName { name: s("-x"), reason: s("dash") } => Invalid 2 400,
            GitError::UnknownBranch { repo: path(), branch: s("yoi/x") } => NotFound 1 404,
            GitError::BranchExists { branch: s("yoi/x"), points_at: s("a1"), wanted: s("b2") }
                => Conflict 1 409,
            GitError::BranchMoved { branch: s("yoi/x"), points_at: s("a1"), expected: s("b2") }
                => Conflict 1 409,
            GitError::BranchCheckedOut {
                branch: s("yoi/x"),
                points_at: s("a1"),
                worktrees: vec![path()],
            } => Conflict 1 409,
            GitError::DestinationExists { path: path() } => Conflict 1 409,
            GitError::NotAWorktree { repo: path(), path: path() } => NotFound 1 404,
            GitError::Dirty { path: path(), changes: vec![s("a.txt")] } => Conflict 1 409,
            GitError::Git { path: path(), action: "read HEAD", reason: s("io") } => Internal 1 500,
            GitError::NotDescendant { branch: s("yoi/x"), head: s("a1"), commit: s("b2") }
                => Conflict 1 409,
        ],
        git,
    );
}

// ---- yoi_skills -----------------------------------------------------------------------------

const N_PROPOSAL: usize = 21;
fn tag_proposal(e: &ProposalError) -> usize {
    match e {
        ProposalError::MissingField { .. } => 0,
        ProposalError::ParentComponent { .. } => 1,
        ProposalError::NotADirectory { .. } => 2,
        ProposalError::InvalidName { .. } => 3,
        ProposalError::MissingSkillFile => 4,
        ProposalError::Symlink { .. } => 5,
        ProposalError::SpecialFile { .. } => 6,
        ProposalError::NonUtf8Name { .. } => 7,
        ProposalError::TooLarge { .. } => 8,
        ProposalError::TooManyFiles { .. } => 9,
        ProposalError::TooDeep { .. } => 10,
        ProposalError::BadId { .. } => 11,
        ProposalError::NotFound { .. } => 12,
        ProposalError::Corrupt { .. } => 13,
        ProposalError::Busy { .. } => 14,
        ProposalError::AlreadyDecided { .. } => 15,
        ProposalError::Invalid { .. } => 16,
        ProposalError::Tampered { .. } => 17,
        ProposalError::RestoreFailed { .. } => 18,
        ProposalError::Io { .. } => 19,
        ProposalError::BadFileName { .. } => 20,
    }
}

#[test]
fn proposal_error() {
    check(
        "ProposalError",
        N_PROPOSAL,
        tag_proposal,
        ProposalError::class,
        cases![
            ProposalError::MissingField { field: "reason" } => Invalid 2 400,
            ProposalError::ParentComponent { path: s("../x") } => Invalid 2 400,
            ProposalError::BadFileName { path: s("a/"), reason: "names a folder" } => Invalid 2 400,
            ProposalError::NotADirectory { path: s("x.md") } => Invalid 2 400,
            ProposalError::InvalidName { name: s("Bad_Name") } => Invalid 2 400,
            ProposalError::MissingSkillFile => Invalid 2 400,
            ProposalError::Symlink { path: s("link") } => Invalid 2 400,
            ProposalError::SpecialFile { path: s("fifo") } => Invalid 2 400,
            ProposalError::NonUtf8Name { path: s("?") } => Invalid 2 400,
            ProposalError::TooLarge { limit: 1024 } => TooLarge 1 413,
            ProposalError::TooManyFiles { limit: 10 } => TooLarge 1 413,
            ProposalError::TooDeep { path: s("a/b/c"), limit: 2 } => TooLarge 1 413,
            ProposalError::BadId { id: s("nope") } => Invalid 2 400,
            ProposalError::NotFound { id: s("prop-1") } => NotFound 1 404,
            ProposalError::Corrupt { id: s("prop-1"), reason: s("bad json") } => Corrupt 1 500,
            ProposalError::Busy { id: s("prop-1"), lock: ".deciding" } => Busy 1 503,
            ProposalError::AlreadyDecided { id: s("prop-1"), status: ProposalStatus::Approved }
                => Conflict 1 409,
            ProposalError::Invalid { id: s("prop-1"), errors: 2 } => Refused 1 422,
            ProposalError::Tampered { id: s("prop-1"), expected: s("a1"), found: s("b2") }
                => Conflict 1 409,
            ProposalError::RestoreFailed { kept_at: s("/w/.old"), reason: s("io") }
                => Internal 1 500,
            ProposalError::Io { action: "read", path: s("SKILL.md"), reason: s("io") }
                => Internal 1 500,
        ],
        |make, what, want| skill(&|| SkillError::Proposal(make()), what, want),
    );
}

const N_PARSE: usize = 9;
fn tag_parse(e: &ParseError) -> usize {
    match e {
        ParseError::TooLarge { .. } => 0,
        ParseError::ByteOrderMark => 1,
        ParseError::NotUtf8 { .. } => 2,
        ParseError::MissingFrontmatter => 3,
        ParseError::Unclosed => 4,
        ParseError::FrontmatterTooLarge { .. } => 5,
        ParseError::Yaml { .. } => 6,
        ParseError::NotMapping { .. } => 7,
        ParseError::DuplicateKey { .. } => 8,
    }
}

#[test]
fn parse_error() {
    check(
        "ParseError",
        N_PARSE,
        tag_parse,
        ParseError::class,
        cases![
            ParseError::TooLarge { limit: 1024 } => Corrupt 1 500,
            ParseError::ByteOrderMark => Corrupt 1 500,
            ParseError::NotUtf8 { offset: 4, line: 1 } => Corrupt 1 500,
            ParseError::MissingFrontmatter => Corrupt 1 500,
            ParseError::Unclosed => Corrupt 1 500,
            ParseError::FrontmatterTooLarge { bytes: 2048, limit: 1024 } => Corrupt 1 500,
            ParseError::Yaml { line: Some(2), reason: s("bad indent") } => Corrupt 1 500,
            ParseError::NotMapping { found: "a list" } => Corrupt 1 500,
            ParseError::DuplicateKey { key: s("name"), line: Some(3) } => Corrupt 1 500,
        ],
        none,
    );
}

const N_ACTIVATE: usize = 5;
fn tag_activate(e: &ActivateError) -> usize {
    match e {
        ActivateError::UnknownSkill { .. } => 0,
        ActivateError::InvalidSkill { .. } => 1,
        ActivateError::MissingWho => 2,
        ActivateError::Listing { .. } => 3,
        ActivateError::NotRecorded { .. } => 4,
    }
}

#[test]
fn activate_error() {
    check(
        "ActivateError",
        N_ACTIVATE,
        tag_activate,
        ActivateError::class,
        cases![
            ActivateError::UnknownSkill { name: s("nope") } => NotFound 1 404,
            ActivateError::InvalidSkill { name: s("broken"), errors: 1 } => Refused 1 422,
            ActivateError::MissingWho => Invalid 2 400,
            ActivateError::Listing { name: s("x"), reason: s("io") } => Internal 1 500,
            ActivateError::NotRecorded {
                name: s("x"),
                source: RecorderError { reason: s("database closed") },
            } => Internal 1 500,
        ],
        |make, what, want| skill(&|| SkillError::Activate(make()), what, want),
    );
}

const N_RESOURCE: usize = 9;
fn tag_resource(e: &ResourceError) -> usize {
    match e {
        ResourceError::UnknownSkill { .. } => 0,
        ResourceError::InvalidSkill { .. } => 1,
        ResourceError::AbsolutePath { .. } => 2,
        ResourceError::Traversal { .. } => 3,
        ResourceError::OutsideSkill { .. } => 4,
        ResourceError::NotFound { .. } => 5,
        ResourceError::NotAFile { .. } => 6,
        ResourceError::TooLarge { .. } => 7,
        ResourceError::Io { .. } => 8,
    }
}

#[test]
fn resource_error() {
    check(
        "ResourceError",
        N_RESOURCE,
        tag_resource,
        ResourceError::class,
        cases![
            ResourceError::UnknownSkill { name: s("nope") } => NotFound 1 404,
            ResourceError::InvalidSkill { name: s("broken") } => Refused 1 422,
            ResourceError::AbsolutePath { path: s("/etc/passwd") } => Invalid 2 400,
            ResourceError::Traversal { path: s("../x") } => Invalid 2 400,
            ResourceError::OutsideSkill { path: s("link") } => Invalid 2 400,
            ResourceError::NotFound { path: s("references/x.md") } => NotFound 1 404,
            ResourceError::NotAFile { path: s("references") } => Invalid 2 400,
            ResourceError::TooLarge { path: s("big.bin"), size: 10, limit: 1 } => TooLarge 1 413,
            ResourceError::Io { path: s("x.md"), reason: s("io") } => Internal 1 500,
        ],
        |make, what, want| skill(&|| SkillError::Resource(make()), what, want),
    );
}

// ---- yoi_engine -----------------------------------------------------------------------------

const N_ACCEPT: usize = 3;
fn tag_accept(e: &AcceptError) -> usize {
    match e {
        AcceptError::NotReady { .. } => 0,
        AcceptError::Failed { .. } => 1,
        AcceptError::Store(_) => 2,
    }
}

#[test]
fn accept_error() {
    check(
        "AcceptError",
        N_ACCEPT,
        tag_accept,
        AcceptError::class,
        cases![
            AcceptError::NotReady { ticket: id(), kind: "needs_human" } => Conflict 1 409,
            AcceptError::Failed {
                ticket: id(),
                step: "add_worktree",
                error: s("io"),
                cleanup: vec![],
            } => Internal 1 500,
            AcceptError::Store(StoreError::StaleState {
                ticket: id(),
                expected: State::Queued,
                found: State::Closed,
            }) => Conflict 1 409,
        ],
        none,
    );
}

const N_SKILL: usize = 6;
fn tag_skill(e: &SkillError) -> usize {
    match e {
        SkillError::Activate(_) => 0,
        SkillError::Resource(_) => 1,
        SkillError::Proposal(_) => 2,
        SkillError::Store(_) => 3,
        SkillError::Unknown { .. } => 4,
        SkillError::NotForAgents { .. } => 5,
    }
}

#[test]
fn skill_error() {
    check(
        "SkillError",
        N_SKILL,
        tag_skill,
        SkillError::class,
        cases![
            SkillError::Activate(ActivateError::MissingWho) => Invalid 2 400,
            SkillError::Resource(ResourceError::Traversal { path: s("../x") }) => Invalid 2 400,
            SkillError::Proposal(ProposalError::AlreadyDecided {
                id: s("prop-1"),
                status: ProposalStatus::Rejected,
            }) => Conflict 1 409,
            SkillError::Store(StoreError::Locked {
                path: path(),
                holder: None,
                waited: Duration::from_secs(1),
            }) => Busy 1 503,
            SkillError::Unknown { name: s("nope") } => NotFound 1 404,
            SkillError::NotForAgents { name: s("people-only") } => NotPermitted 1 403,
        ],
        skill,
    );
}
