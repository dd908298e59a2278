//! The API codes of the store's rules and the engine's assignment errors: every `Refusal` and
//! `Permission` answers its class's code naming its rule in `details.reason`, every
//! `AssignmentError` its own code, each listed in docs/api.md (the helpers are the parent's).

use super::*;

const N_REFUSAL: usize = 13;
fn tag_refusal(e: &Refusal) -> usize {
    match e {
        Refusal::PacketFrozen { .. } => 0,
        Refusal::RewriteUnreadable { .. } => 1,
        Refusal::AcceptedPlanIsTheRouters => 2,
        Refusal::BlockerAfterStart { .. } => 3,
        Refusal::NestedGroup => 4,
        Refusal::GroupFailed { .. } => 5,
        Refusal::BadKeyFile { .. } => 6,
        Refusal::NeverAccepted { .. } => 7,
        Refusal::AcceptedPlanIncomplete { .. } => 8,
        Refusal::NotReadyToAccept { .. } => 9,
        Refusal::BidiControl { .. } => 10,
        Refusal::NoBudgetAmount => 11,
        Refusal::NoOpenQuestion { .. } => 12,
    }
}

/// Every refusal answers 422 `refused` naming its rule, documented, and no two rules share a
/// name.
#[test]
fn refusal() {
    let cases: &[Case<Refusal>] = cases![
        Refusal::PacketFrozen { state: State::Inprogress } => Refused 1 422,
        Refusal::RewriteUnreadable { path: s("item.md"), problem: s("bad YAML") } => Refused 1 422,
        Refusal::AcceptedPlanIsTheRouters => Refused 1 422,
        Refusal::BlockerAfterStart {
            blocked: id(),
            blocker: other(),
            blocker_state: State::Ready,
        } => Refused 1 422,
        Refusal::NestedGroup => Refused 1 422,
        Refusal::GroupFailed { message: s("disk full") } => Refused 1 422,
        Refusal::BadKeyFile { path: path() } => Refused 1 422,
        Refusal::NeverAccepted { ticket: id() } => Refused 1 422,
        Refusal::AcceptedPlanIncomplete { ticket: id() } => Refused 1 422,
        Refusal::NotReadyToAccept { message: s("blocked") } => Refused 1 422,
        Refusal::BidiControl { field: s("title"), position: 5, code_point: 0x202E } => Refused 1 422,
        Refusal::NoBudgetAmount => Refused 1 422,
        Refusal::NoOpenQuestion { ticket: id() } => Refused 1 422,
    ];
    check(
        "Refusal",
        N_REFUSAL,
        tag_refusal,
        |r| StoreError::Refused { reason: r.clone() }.class(),
        cases,
        |make, what, want| {
            store(&|| StoreError::Refused { reason: make() }, what, want);
            documented(make().code(), what);
        },
    );
    distinct("Refusal", cases.iter().map(|(make, _)| make().code()));
}

const N_PERMISSION: usize = 7;
fn tag_permission(e: &Permission) -> usize {
    match e {
        Permission::SubmitPacket { .. } => 0,
        Permission::Retry { .. } => 1,
        Permission::RaiseAttention { .. } => 2,
        Permission::RecordAttempt { .. } => 3,
        Permission::ActivateForOwnAssignment { .. } => 4,
        Permission::AddBudget { .. } => 5,
        Permission::Answer { .. } => 6,
    }
}

/// Every principal refusal answers 403 `forbidden` naming its rule, documented, and no two
/// rules share a name.
#[test]
fn permission() {
    let cases: &[Case<Permission>] = cases![
        Permission::SubmitPacket { kind: PrincipalKind::Pod } => NotPermitted 1 403,
        Permission::Retry { kind: PrincipalKind::Pod } => NotPermitted 1 403,
        Permission::RaiseAttention { kind: PrincipalKind::Human } => NotPermitted 1 403,
        Permission::RecordAttempt { kind: PrincipalKind::Human } => NotPermitted 1 403,
        Permission::ActivateForOwnAssignment { own: s("asg-1") } => NotPermitted 1 403,
        Permission::AddBudget { kind: PrincipalKind::Pod } => NotPermitted 1 403,
        Permission::Answer { kind: PrincipalKind::Pod } => NotPermitted 1 403,
    ];
    check(
        "Permission",
        N_PERMISSION,
        tag_permission,
        |r| StoreError::NotPermitted { reason: r.clone() }.class(),
        cases,
        |make, what, want| {
            store(&|| StoreError::NotPermitted { reason: make() }, what, want);
            documented(make().code(), what);
        },
    );
    distinct("Permission", cases.iter().map(|(make, _)| make().code()));
}

fn distinct<'a>(name: &str, codes: impl Iterator<Item = &'a str>) {
    let mut seen = BTreeSet::new();
    for code in codes {
        assert!(seen.insert(code), "{name}: two rules are called `{code}`");
    }
}

const N_ASSIGNMENT: usize = 11;
fn tag_assignment(e: &AssignmentError) -> usize {
    match e {
        AssignmentError::NotFound { .. } => 0,
        AssignmentError::StaleFence { .. } => 1,
        AssignmentError::NotYours { .. } => 2,
        AssignmentError::WrongRole { .. } => 3,
        AssignmentError::UnknownPod { .. } => 4,
        AssignmentError::BadResult { .. } => 5,
        AssignmentError::TouchesTickets { .. } => 6,
        AssignmentError::Prepare { .. } => 7,
        AssignmentError::Store(_) => 8,
        AssignmentError::Git(_) => 9,
        AssignmentError::RemoteUnreachable { .. } => 10,
    }
}

#[test]
fn assignment_error() {
    check(
        "AssignmentError",
        N_ASSIGNMENT,
        tag_assignment,
        AssignmentError::class,
        cases![
            AssignmentError::NotFound { id: s("asg-1") } => NotFound 1 404,
            AssignmentError::StaleFence {
                id: s("asg-1"),
                fence: 1,
                current: 2,
                status: AssignmentStatus::Claimed,
            } => Conflict 1 409,
            AssignmentError::NotYours { id: s("asg-1"), pod: s("coder-1") } => NotPermitted 1 403,
            AssignmentError::WrongRole {
                token_role: s("reviewer"),
                role: s("coder"),
                action: "claim",
            } => NotPermitted 1 403,
            AssignmentError::UnknownPod { pod: s("coder-9") } => NotFound 1 404,
            AssignmentError::BadResult { id: s("asg-1"), reason: s("no commit") } => Invalid 2 400,
            AssignmentError::TouchesTickets { id: s("asg-1"), paths: vec![s(".yoi/tickets/x")] }
                => Refused 1 422,
            AssignmentError::Prepare { id: s("asg-1"), reason: s("io") } => Internal 1 500,
            AssignmentError::Store(StoreError::Blocked { ticket: id(), blockers: vec![] })
                => Conflict 1 409,
            AssignmentError::Git(GitError::Dirty { path: path(), changes: vec![s("a.txt")] })
                => Conflict 1 409,
            AssignmentError::RemoteUnreachable { remote: s("origin"), reason: s("refused") }
                => Busy 1 503,
        ],
        |make, what, want| {
            let answer = api(make(), what, want);
            assert_eq!(answer.code, make().code(), "{what}: API code");
        },
    );
}
