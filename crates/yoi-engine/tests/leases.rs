//! The engine's assignment rules on a real repository and database, with a fake clock: a claim
//! hands out the ticket worktree, the lease sweep expires a silent claim and hands the step out
//! again in a fresh worktree, three silent attempts open the circuit, a person's retry resumes
//! the step, and doctor names leases past due, silent pods and attempt worktrees left behind.

mod common;

use common::{now, Fixture, BRIEF};
use yoi_core::thread::EventKind;
use yoi_core::{Principal, Timestamp};
use yoi_db::AssignmentStatus;
use yoi_engine::assignments::{self as asg, LeaseConfig, PodCaller};
use yoi_store::Ctx;
use yoi_testkit::git;

const LEASE: LeaseConfig = LeaseConfig {
    lease_ms: 10_000,
    heartbeat_ms: 3_000,
};

/// A pod named `p` on `host`.
const P: asg::PodIntro<'static> = asg::PodIntro {
    name: "p",
    host: "host",
    pid: None,
    profile: None,
    sandbox: None,
    provider: None,
};

fn at(ms: i64) -> Timestamp {
    Timestamp::from_unix_millis(now().unix_millis() + ms)
}

fn coder() -> PodCaller {
    PodCaller {
        token_id: "tok-coder".into(),
        role: yoi_core::Role::Coder,
    }
}

#[test]
fn silent_claims_expire_into_fresh_worktrees_and_three_open_the_circuit_until_a_retry() {
    let f = Fixture::new();
    let id = f.queued("Lease me", BRIEF, &[]);
    f.accept(&id);
    let pod = asg::register_pod(
        &f.db,
        &coder(),
        asg::PodIntro {
            name: "p",
            host: "host",
            profile: Some("script"),
            ..Default::default()
        },
        at(0),
    )
    .unwrap();

    // Attempt 1 works in the ticket worktree, detached at the branch head.
    let work = asg::claim(&f.ws, &f.db, &coder(), &pod.id, LEASE, at(0))
        .unwrap()
        .unwrap();
    let ticket_wt = f.worktree_root().join(format!("{id}-lease-me"));
    assert_eq!(work.workdir, ticket_wt);
    assert_eq!(work.assignment.attempt, 1);
    assert_eq!(git(&ticket_wt, &["rev-parse", "HEAD"]).trim(), f.base);
    // Nothing more to claim while it runs.
    assert!(asg::claim(&f.ws, &f.db, &coder(), &pod.id, LEASE, at(1))
        .unwrap()
        .is_none());

    // Not yet due: nothing expires. Past the lease: attempt 2, fence 2.
    assert!(asg::expire_due(&f.ws, &f.db, at(9_999))
        .unwrap()
        .expired
        .is_empty());
    let out = asg::expire_due(&f.ws, &f.db, at(10_001)).unwrap();
    assert_eq!(out.expired.len(), 1);
    let w2 = asg::claim(&f.ws, &f.db, &coder(), &pod.id, LEASE, at(10_002))
        .unwrap()
        .unwrap();
    assert_eq!((w2.assignment.attempt, w2.assignment.fence), (2, 2));
    assert_eq!(w2.workdir, asg::attempt_dir(&ticket_wt, 2));
    assert_ne!(
        w2.workdir, work.workdir,
        "a re-attempt never shares the earlier attempt's folder"
    );

    // The late heartbeat of attempt 1 is refused.
    let err = asg::heartbeat(
        &f.db,
        &coder(),
        &pod.id,
        &work.assignment.id,
        1,
        LEASE,
        at(10_003),
    )
    .unwrap_err();
    assert!(
        matches!(err, asg::AssignmentError::StaleFence { .. }),
        "{err}"
    );

    // Attempts 2 and 3 go silent too: the third opens the circuit and nothing is handed out.
    // Attempt 2's folder is clean and goes with it; attempt 3 dies with a file it never
    // committed, so its folder is kept for a person.
    asg::expire_due(&f.ws, &f.db, at(20_003)).unwrap();
    assert!(
        !w2.workdir.exists(),
        "an ended attempt's clean worktree is removed"
    );
    let w3 = asg::claim(&f.ws, &f.db, &coder(), &pod.id, LEASE, at(20_004))
        .unwrap()
        .unwrap();
    std::fs::write(w3.workdir.join("unsaved.txt"), "half done\n").unwrap();
    let out = asg::expire_due(&f.ws, &f.db, at(30_005)).unwrap();
    assert!(
        w3.workdir.join("unsaved.txt").is_file(),
        "work is never lost"
    );
    assert_eq!(out.circuits_opened, [id.to_string()]);
    assert!(
        asg::claim(&f.ws, &f.db, &coder(), &pod.id, LEASE, at(30_006))
            .unwrap()
            .is_none()
    );
    let thread = f.ws.read_thread(&id).unwrap();
    let attempts = thread
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Assignment)
        .count();
    let attention = thread
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Attention)
        .count();
    assert_eq!((attempts, attention), (3, 1));

    // Doctor (no server sweeping, pod silent): only the kept attempt worktree is named.
    let findings = yoi_doctor::index_findings(&f.db, &f.ws, at(40_000).unix_millis()).unwrap();
    let checks: Vec<&str> = findings.iter().map(|x| x.check).collect();
    assert_eq!(
        checks
            .iter()
            .filter(|c| **c == "worktree.attempt_leftover")
            .count(),
        1,
        "{checks:?}"
    );

    // A person retries: the step is handed out again.
    let ctx = Ctx::new(Principal::human("alice"), at(40_001));
    yoi_store::ops::retry(&f.ws, &ctx, id.as_str(), Some("fixed the agent")).unwrap();
    let made = asg::resume_after_retry(&f.ws, &f.db, &id, at(40_002)).unwrap();
    assert_eq!(made.len(), 1);
    assert_eq!(
        (made[0].attempt, made[0].fence, made[0].status),
        (4, 4, AssignmentStatus::Pending)
    );
}

#[test]
fn an_expired_attempts_pushed_ref_is_deleted_and_no_other() {
    let f = Fixture::new();
    let id = f.queued("Push me", BRIEF, &[]);
    f.accept(&id);
    let pod = asg::register_pod(&f.db, &coder(), P, at(0)).unwrap();
    let work = asg::claim(&f.ws, &f.db, &coder(), &pod.id, LEASE, at(0))
        .unwrap()
        .unwrap();
    let (attempt, fence) = (work.assignment.attempt, work.assignment.fence);
    // Its own ref, as a remote pod's push leaves it, and one whose name starts the same.
    let pushed = format!("refs/yoi/attempts/{id}/{attempt}.{fence}");
    let other = format!("refs/yoi/attempts/{id}/{attempt}.{fence}0");
    for name in [&pushed, &other] {
        git(&f.repo, &["update-ref", name, &f.base]);
    }
    let out = asg::expire_due(&f.ws, &f.db, at(10_001)).unwrap();
    assert_eq!(out.expired.len(), 1);
    let refs = git(
        &f.repo,
        &["for-each-ref", "--format=%(refname)", "refs/yoi/attempts/"],
    );
    assert_eq!(refs.trim(), other);
}

#[test]
fn doctor_names_a_lease_past_due_and_a_silent_pod() {
    let f = Fixture::new();
    let id = f.queued("Doctor me", BRIEF, &[]);
    f.accept(&id);
    let pod = asg::register_pod(&f.db, &coder(), P, at(0)).unwrap();
    asg::claim(&f.ws, &f.db, &coder(), &pod.id, LEASE, at(0))
        .unwrap()
        .unwrap();
    let findings = |ms: i64| -> Vec<&'static str> {
        yoi_doctor::index_findings(&f.db, &f.ws, at(ms).unix_millis())
            .unwrap()
            .into_iter()
            .map(|x| x.check)
            .filter(|c| c.starts_with("assignment.lease") || c.starts_with("pod."))
            .collect()
    };
    assert!(
        findings(5_000).is_empty(),
        "within its lease nothing is wrong"
    );
    assert_eq!(
        findings(16_000),
        ["assignment.lease_past_due", "pod.silent"]
    );
}

#[test]
fn a_failure_the_pod_calls_final_hands_nothing_out_and_tells_a_person() {
    let f = Fixture::new();
    let id = f.queued("Give up", BRIEF, &[]);
    f.accept(&id);
    let pod = asg::register_pod(&f.db, &coder(), P, at(0)).unwrap();
    let w = asg::claim(&f.ws, &f.db, &coder(), &pod.id, LEASE, at(0))
        .unwrap()
        .unwrap();
    let next = asg::fail(
        &f.ws,
        &f.db,
        &coder(),
        &pod.id,
        &w.assignment.id,
        w.assignment.fence,
        "the agent is not installed",
        false,
        None,
        at(1),
    )
    .unwrap();
    assert_eq!(next, None);
    assert!(asg::claim(&f.ws, &f.db, &coder(), &pod.id, LEASE, at(2))
        .unwrap()
        .is_none());
    let thread = f.ws.read_thread(&id).unwrap();
    let attention: Vec<&str> = thread
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Attention)
        .map(|e| e.body.as_str())
        .collect();
    assert_eq!(attention.len(), 1);
    assert!(
        attention[0].contains("retrying will not help (the agent is not installed)"),
        "{}",
        attention[0]
    );
}
