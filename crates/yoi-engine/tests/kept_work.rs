//! Retries keep the work (docs/pods.md): a coder's attempt after one its pod failed for a
//! reason that is not about its change starts from that attempt's commit, and its result still
//! moves the branch by compare-and-swap from the head; an expired attempt's commits, or a
//! failure that keeps nothing, never become the next attempt's start. Real repository, real
//! database, the engine's claim and result functions with a fake clock.

mod common;

use common::{now, Fixture, BRIEF};
use yoi_core::report::{Report, ReportOutcome};
use yoi_core::{TicketId, Timestamp};
use yoi_engine::assignments::{self as asg, LeaseConfig, PodCaller, Work};
use yoi_testkit::git;

const LEASE: LeaseConfig = LeaseConfig {
    lease_ms: 60_000,
    heartbeat_ms: 3_000,
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

/// An accepted ticket and a registered coder pod.
fn accepted() -> (Fixture, TicketId, String) {
    let f = Fixture::new();
    let id = f.queued("Say hello", BRIEF, &[]);
    git(&f.repo, &["add", "-A"]);
    git(&f.repo, &["commit", "-q", "-m", "tickets"]);
    f.accept(&id);
    let pod = asg::register_pod(
        &f.db,
        &coder(),
        asg::PodIntro {
            name: "c",
            host: "host",
            ..Default::default()
        },
        at(0),
    )
    .unwrap()
    .id;
    (f, id, pod)
}

fn claim(f: &Fixture, pod: &str, ms: i64) -> Work {
    asg::claim(&f.ws, &f.db, &coder(), pod, LEASE, at(ms))
        .unwrap()
        .expect("the coder finds work")
}

/// Write `file` in the attempt's folder and commit it there; the new head.
fn commit(work: &Work, file: &str) -> String {
    let dir = &work.workdir;
    std::fs::write(dir.join(file), format!("{file}\n")).unwrap();
    git(dir, &["add", "-A"]);
    git(
        dir,
        &[
            "-c",
            "user.name=c",
            "-c",
            "user.email=c@c.invalid",
            "commit",
            "-q",
            "-m",
            file,
        ],
    );
    git(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

fn fail(f: &Fixture, pod: &str, work: &Work, report: Report, ms: i64) {
    let a = &work.assignment;
    asg::fail(
        &f.ws,
        &f.db,
        &coder(),
        pod,
        &a.id,
        a.fence,
        "the agent ran past its timeout of 2s and was killed",
        true,
        Some(&report),
        at(ms),
    )
    .unwrap()
    .expect("the step is handed out again");
}

fn timed_out(commit: &str, keep_work: bool) -> Report {
    Report {
        outcome: ReportOutcome::Failed,
        commit: Some(commit.to_string()),
        keep_work,
        ..Report::default()
    }
}

/// The server's attempt refs, as `NAME COMMIT` lines.
fn attempt_refs(f: &Fixture) -> String {
    git(
        &f.repo,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/yoi/attempts/",
        ],
    )
    .trim()
    .to_string()
}

#[test]
fn the_next_attempt_starts_from_the_commits_of_one_that_timed_out_and_moves_the_branch_from_the_head(
) {
    let (f, id, pod) = accepted();
    let first = claim(&f, &pod, 1);
    let base = first.head_commit.clone();
    let part1 = commit(&first, "part1.txt");
    fail(&f, &pod, &first, timed_out(&part1, true), 2);
    // The kept commit is under the failed attempt's ref, so a pod without the server's disk
    // can fetch it (docs/pods.md, "Pods on other hosts").
    let a = &first.assignment;
    assert_eq!(
        attempt_refs(&f),
        format!("refs/yoi/attempts/{id}/{}.{} {part1}", a.attempt, a.fence)
    );

    let second = claim(&f, &pod, 3);
    let kept = second
        .kept
        .clone()
        .expect("attempt 2 keeps attempt 1's work");
    assert_eq!((kept.attempt, kept.commit.as_str()), (1, part1.as_str()));
    assert!(kept.reason.unwrap().contains("timeout"));
    assert_eq!(
        git(&second.workdir, &["rev-parse", "HEAD"]).trim(),
        part1,
        "the folder starts at the kept commit"
    );
    assert_eq!(
        second.head_commit, base,
        "the claim is still bound to the head"
    );
    let branch = second.branch.clone();
    assert_eq!(git(&f.repo, &["rev-parse", &branch]).trim(), base);

    // Its result descends from the head through the kept commit and moves the branch.
    let done = commit(&second, "part2.txt");
    let a = &second.assignment;
    let moved = asg::complete(
        &f.ws,
        &f.db,
        &coder(),
        &pod,
        &a.id,
        a.fence,
        &Report {
            outcome: ReportOutcome::Done,
            commit: Some(done.clone()),
            ..Report::default()
        },
        at(4),
    )
    .unwrap();
    assert!(moved.moved);
    assert_eq!(git(&f.repo, &["rev-parse", &branch]).trim(), done);
    assert!(
        attempt_refs(&f).contains(&part1),
        "the ref stays until the ticket is done"
    );
    assert_eq!(
        git(&f.repo, &["log", "--format=%s", &format!("{base}..{done}")]),
        "part2.txt\npart1.txt\n"
    );
}

#[test]
fn an_expired_attempt_or_a_failure_that_keeps_nothing_is_never_the_next_start() {
    // Expired: its pod went silent; whatever it committed stays off.
    let (f, _, pod) = accepted();
    let first = claim(&f, &pod, 1);
    let base = first.head_commit.clone();
    commit(&first, "late.txt");
    let out = asg::expire_due(&f.ws, &f.db, at(1 + LEASE.lease_ms + 1)).unwrap();
    assert_eq!(out.expired.len(), 1);
    let second = claim(&f, &pod, LEASE.lease_ms + 10);
    assert!(second.kept.is_none());
    assert_eq!(git(&second.workdir, &["rev-parse", "HEAD"]).trim(), base);

    // A failure whose pod did not say the work is worth keeping.
    let (f, _, pod) = accepted();
    let first = claim(&f, &pod, 1);
    let base = first.head_commit.clone();
    let c = commit(&first, "broken.txt");
    fail(&f, &pod, &first, timed_out(&c, false), 2);
    assert_eq!(attempt_refs(&f), "", "nothing kept, no ref");
    let second = claim(&f, &pod, 3);
    assert!(second.kept.is_none());
    assert_eq!(git(&second.workdir, &["rev-parse", "HEAD"]).trim(), base);

    // A commit that does not descend from the head the attempt started at.
    let (f, _, pod) = accepted();
    let first = claim(&f, &pod, 1);
    let base = first.head_commit.clone();
    let dir = &first.workdir;
    git(dir, &["checkout", "-q", "--orphan", "elsewhere"]);
    let stray = commit(&first, "stray.txt");
    git(dir, &["checkout", "-q", "--detach", &base]);
    fail(&f, &pod, &first, timed_out(&stray, true), 2);
    assert_eq!(
        attempt_refs(&f),
        "",
        "a stray commit is not kept under a ref"
    );
    let second = claim(&f, &pod, 3);
    assert!(second.kept.is_none());
    assert_eq!(git(&second.workdir, &["rev-parse", "HEAD"]).trim(), base);
}

/// `attempt`'s failure at `ms`, keeping a commit of `file` made in its folder; the commit.
fn fail_keeping(f: &Fixture, pod: &str, work: &Work, file: &str, ms: i64) -> String {
    let kept = commit(work, file);
    fail(f, pod, work, timed_out(&kept, true), ms);
    kept
}

#[test]
fn a_kept_attempts_ref_lasts_while_its_ticket_is_in_progress_and_goes_when_it_leaves() {
    use yoi_store::ops::{self, TransitionRequest};
    let (f, id, pod) = accepted();
    let first = claim(&f, &pod, 1);
    let kept = fail_keeping(&f, &pod, &first, "part1.txt", 2);
    let name = format!("refs/yoi/attempts/{id}/1.{}", first.assignment.fence);
    // The lease sweep leaves it while the ticket is in progress: the next attempt starts there.
    asg::expire_due(&f.ws, &f.db, at(3)).unwrap();
    assert_eq!(attempt_refs(&f), format!("{name} {kept}"));

    // A person cancels the ticket: the next sweep takes every ref of it.
    let ctx = f.human();
    let cancel = TransitionRequest {
        resolution: Some("not needed".into()),
        ..TransitionRequest::default()
    };
    ops::cancel(&f.ws, &ctx, id.as_str(), &cancel).unwrap();
    asg::expire_due(&f.ws, &f.db, at(4)).unwrap();
    assert_eq!(
        attempt_refs(&f),
        "",
        "a cancelled ticket keeps no attempt ref"
    );

    // Returned to planning and accepted again before any sweep ran: the new acceptance, whose
    // attempts start again at 1.1, clears the earlier one's refs itself.
    let (f, id, pod) = accepted();
    let first = claim(&f, &pod, 1);
    fail_keeping(&f, &pod, &first, "part1.txt", 2);
    assert_ne!(attempt_refs(&f), "");
    let ctx = f.human();
    let back = TransitionRequest {
        reason: Some("the brief was wrong".into()),
        ..TransitionRequest::default()
    };
    ops::return_to_planning(&f.ws, &ctx, id.as_str(), &back).unwrap();
    let req = TransitionRequest::default();
    ops::mark_ready(&f.ws, &ctx, id.as_str(), &req).unwrap();
    ops::queue(&f.ws, &ctx, id.as_str(), &req).unwrap();
    f.accept(&id);
    assert_eq!(
        attempt_refs(&f),
        "",
        "an earlier acceptance's refs go with it"
    );
}
