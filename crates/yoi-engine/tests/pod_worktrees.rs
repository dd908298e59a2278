//! Where read-only steps run: each pod keeps one worktree (`<worktree_dir>/.pods/<name>`),
//! moved in place to the exact commit of every claim, and checked out afresh when it is not
//! exactly a commit or when another incarnation of the pod used it last. Real repository, real
//! database, the engine's claim and result functions with a fake clock.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::{now, Fixture, BRIEF};
use yoi_core::report::{CheckResult, Report, ReportOutcome, Verdict};
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

fn caller(role: &str) -> PodCaller {
    PodCaller {
        token_id: format!("tok-{role}"),
        role: yoi_core::Role::parse(role).expect("a pod role"),
    }
}

/// Claim as `pod` (of `role`), which must find work.
fn claim(f: &Fixture, role: &str, pod: &str, ms: i64) -> Work {
    asg::claim(&f.ws, &f.db, &caller(role), pod, LEASE, at(ms))
        .unwrap()
        .unwrap_or_else(|| panic!("{role} pod {pod} found no work"))
}

/// The coder's attempt: write `notes/<ticket>.md`, commit it, report it.
fn implement(f: &Fixture, pod: &str, ms: i64) -> (TicketId, String) {
    let work = claim(f, "coder", pod, ms);
    let dir = &work.workdir;
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    std::fs::write(dir.join(format!("notes/{}.md", work.ticket)), "note\n").unwrap();
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
            "note",
        ],
    );
    let head = git(dir, &["rev-parse", "HEAD"]).trim().to_string();
    // The ticket worktree leaves the ticket files out, and the commit keeps them as they were.
    assert!(!dir.join(".yoi/tickets").exists());
    assert!(git(
        dir,
        &["ls-tree", "-r", "--name-only", &head, ".yoi/tickets"]
    )
    .contains(&format!(".yoi/tickets/{}/item.md", work.ticket)));
    assert_eq!(
        git(dir, &["diff", "--name-only", &work.head_commit, &head]),
        format!("notes/{}.md\n", work.ticket)
    );
    let report = Report {
        outcome: ReportOutcome::Done,
        commit: Some(head.clone()),
        ..Report::default()
    };
    let a = &work.assignment;
    asg::complete(
        &f.ws,
        &f.db,
        &caller("coder"),
        pod,
        &a.id,
        a.fence,
        &report,
        at(ms + 1),
    )
    .unwrap();
    (work.ticket, head)
}

fn passed() -> Report {
    Report {
        outcome: ReportOutcome::Done,
        checks: vec![CheckResult {
            command: "cargo test".into(),
            exit_code: Some(0),
            duration_ms: 1,
            timed_out: false,
            log: None,
        }],
        ..Report::default()
    }
}

fn approved() -> Report {
    Report {
        outcome: ReportOutcome::Done,
        verdict: Some(Verdict::Approve),
        ..Report::default()
    }
}

fn finish(f: &Fixture, role: &str, pod: &str, work: &Work, report: &Report, ms: i64) {
    let a = &work.assignment;
    asg::complete(
        &f.ws,
        &f.db,
        &caller(role),
        pod,
        &a.id,
        a.fence,
        report,
        at(ms),
    )
    .unwrap();
}

/// A file in the worktree's private git folder: invisible to status and to a move in place,
/// gone with the worktree when it is checked out afresh.
fn mark(worktree: &Path) -> PathBuf {
    let link = std::fs::read_to_string(worktree.join(".git")).unwrap();
    let admin = PathBuf::from(link.trim().trim_start_matches("gitdir: "));
    let marker = admin.join("yoi-test-marker");
    std::fs::write(&marker, "here\n").unwrap();
    marker
}

/// A fixture with `titles` queued, their files committed (as a team's are), and accepted.
fn accepted(titles: &[&str]) -> Fixture {
    let f = Fixture::new();
    let ids: Vec<TicketId> = titles.iter().map(|t| f.queued(t, BRIEF, &[])).collect();
    git(&f.repo, &["add", "-A"]);
    git(&f.repo, &["commit", "-q", "-m", "tickets"]);
    for id in &ids {
        f.accept(id);
    }
    f
}

/// Register a pod named `name` for `role` at `ms`; its id.
fn reg(f: &Fixture, role: &str, name: &str, ms: i64) -> String {
    asg::register_pod(
        &f.db,
        &caller(role),
        asg::PodIntro {
            name,
            host: "host",
            ..Default::default()
        },
        at(ms),
    )
    .unwrap()
    .id
}

#[test]
fn read_only_steps_reuse_their_pods_worktree_at_each_exact_commit() {
    let f = accepted(&["One", "Two", "Three"]);
    let reg = |role: &str, name: &str| reg(&f, role, name, 0);
    let (coder, verifier, reviewer) = (
        reg("coder", "c"),
        reg("verifier", "v"),
        reg("reviewer", "r"),
    );
    let pods = f.worktree_root().join(".pods");
    let done: Vec<(TicketId, String)> = (0..3).map(|i| implement(&f, &coder, 10 + i)).collect();

    // The first verification checks the pod's worktree out, without the ticket files.
    let v1 = claim(&f, "verifier", &verifier, 20);
    assert_eq!((&v1.ticket, &v1.workdir), (&done[0].0, &pods.join("v")));
    assert_eq!(git(&v1.workdir, &["rev-parse", "HEAD"]).trim(), done[0].1);
    assert_eq!(git(&v1.workdir, &["status", "--porcelain"]), "");
    assert!(
        !v1.workdir.join(".yoi/tickets").exists(),
        "ticket files left out"
    );
    assert!(v1.workdir.join(format!("notes/{}.md", done[0].0)).is_file());
    let readme = std::fs::metadata(v1.workdir.join("README.md"))
        .unwrap()
        .ino();
    let marker = mark(&v1.workdir);
    finish(&f, "verifier", &verifier, &v1, &passed(), 21);
    assert!(
        v1.workdir.is_dir(),
        "a pod's worktree is kept after its step"
    );

    // The next one, of another ticket, moves the same folder in place to its exact commit.
    let v2 = claim(&f, "verifier", &verifier, 30);
    assert_eq!((&v2.ticket, &v2.workdir), (&done[1].0, &pods.join("v")));
    assert_eq!(git(&v2.workdir, &["rev-parse", "HEAD"]).trim(), done[1].1);
    assert_eq!(git(&v2.workdir, &["status", "--porcelain"]), "");
    assert!(v2.workdir.join(format!("notes/{}.md", done[1].0)).is_file());
    assert!(!v2.workdir.join(format!("notes/{}.md", done[0].0)).exists());
    assert!(marker.is_file(), "moved in place, not checked out again");
    assert_eq!(
        std::fs::metadata(v2.workdir.join("README.md"))
            .unwrap()
            .ino(),
        readme,
        "a file the move does not change is not rewritten"
    );

    // A build output left behind: the next claim gets a fresh checkout without it.
    std::fs::create_dir_all(v2.workdir.join("target")).unwrap();
    std::fs::write(v2.workdir.join("target/out.o"), "x\n").unwrap();
    finish(&f, "verifier", &verifier, &v2, &passed(), 31);
    let v3 = claim(&f, "verifier", &verifier, 40);
    assert_eq!((&v3.ticket, &v3.workdir), (&done[2].0, &pods.join("v")));
    assert!(!marker.exists(), "checked out afresh");
    assert!(!v3.workdir.join("target").exists());
    assert_eq!(git(&v3.workdir, &["rev-parse", "HEAD"]).trim(), done[2].1);
    assert_eq!(
        git(&v3.workdir, &["status", "--porcelain", "--ignored"]),
        ""
    );

    // The same pod name registered again (a restarted pod): the folder its earlier
    // incarnation used is not trusted and is checked out afresh.
    let r1 = claim(&f, "reviewer", &reviewer, 50);
    assert_eq!((&r1.ticket, &r1.workdir), (&done[0].0, &pods.join("r")));
    let r_marker = mark(&r1.workdir);
    finish(&f, "reviewer", &reviewer, &r1, &approved(), 51);
    let reviewer_again = reg("reviewer", "r");
    assert_ne!(reviewer_again, reviewer);
    let r2 = claim(&f, "reviewer", &reviewer_again, 60);
    assert_eq!((&r2.ticket, &r2.workdir), (&done[1].0, &pods.join("r")));
    assert!(
        !r_marker.exists(),
        "checked out afresh for the new incarnation"
    );
    assert_eq!(
        std::fs::read_to_string(pods.join("r.pod")).unwrap(),
        reviewer_again
    );
    assert_eq!(git(&r2.workdir, &["rev-parse", "HEAD"]).trim(), done[1].1);
    assert_eq!(git(&r2.workdir, &["status", "--porcelain"]), "");
}

#[test]
fn a_second_pod_of_the_same_name_never_takes_the_folder_of_one_at_work() {
    let f = accepted(&["One", "Two"]);
    let reg = |role: &str, name: &str| reg(&f, role, name, 0);
    let coder = reg("coder", "c");
    let done: Vec<(TicketId, String)> = (0..2).map(|i| implement(&f, &coder, 10 + i)).collect();
    let (first, second) = (reg("verifier", "v"), reg("verifier", "v"));
    let pods = f.worktree_root().join(".pods");

    let busy = claim(&f, "verifier", &first, 20);
    assert_eq!(busy.workdir, pods.join("v"));
    let marker = mark(&busy.workdir);
    // The first still works there: the second gets a worktree of its own for this attempt.
    let other = claim(&f, "verifier", &second, 21);
    assert_eq!(other.ticket, done[1].0);
    assert_ne!(other.workdir, pods.join("v"));
    assert!(marker.is_file(), "the busy folder was not touched");
    assert_eq!(git(&busy.workdir, &["rev-parse", "HEAD"]).trim(), done[0].1);
    assert_eq!(
        git(&other.workdir, &["rev-parse", "HEAD"]).trim(),
        done[1].1
    );
    assert!(!other.workdir.join(".yoi/tickets").exists());
    // Its own worktree goes when its step completes; the pod's folder stays.
    finish(&f, "verifier", &second, &other, &passed(), 22);
    assert!(!other.workdir.exists());
    finish(&f, "verifier", &first, &busy, &passed(), 23);
    assert!(busy.workdir.is_dir());
}

#[test]
fn the_worktrees_of_pods_that_are_gone_are_discarded_and_live_ones_kept() {
    let f = accepted(&["One", "Two", "Three"]);
    let reg = |role: &str, name: &str, ms: i64| reg(&f, role, name, ms);
    let coder = reg("coder", "c", 0);
    for i in 0..3 {
        implement(&f, &coder, 10 + i);
    }
    let pods = f.worktree_root().join(".pods");
    let minute = 60_000;
    // A pod run by hand once, long ago, and one heard from a minute before the last claim.
    let old = reg("verifier", "verifier-host-111", 20);
    let work = claim(&f, "verifier", &old, 20);
    finish(&f, "verifier", &old, &work, &passed(), 21);
    let recent = reg("verifier", "verifier-host-222", 10 * minute);
    let work = claim(&f, "verifier", &recent, 10 * minute);
    finish(&f, "verifier", &recent, &work, &passed(), 10 * minute + 1);
    assert!(pods.join("verifier-host-111").is_dir());

    // A new pod's first checkout tidies up: the one unheard of for over ten minutes goes.
    let new = reg("verifier", "verifier-host-333", 11 * minute);
    let work = claim(&f, "verifier", &new, 11 * minute);
    assert_eq!(work.workdir, pods.join("verifier-host-333"));
    assert!(!pods.join("verifier-host-111").exists());
    assert!(!pods.join("verifier-host-111.pod").exists());
    assert!(
        pods.join("verifier-host-222").is_dir(),
        "heard from a minute ago"
    );
    let listed = git(&f.repo, &["worktree", "list"]);
    assert!(!listed.contains("verifier-host-111"), "{listed}");
    assert!(listed.contains("verifier-host-222"), "{listed}");
}
