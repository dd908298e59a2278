//! A result kept without its output contract (docs/pods.md, "A missing contract"): only a
//! coder's, and only with the change it keeps; a reviewer's step is strict whatever its pod
//! says; and a verify counts only with a result for every validation command of the brief.
//! Real repository, real database, the engine's claim and result functions.

mod common;

use common::{now, Fixture, BRIEF};
use yoi_core::report::{Report, ReportOutcome, Verdict};
use yoi_core::Timestamp;
use yoi_engine::assignments::{self as asg, AssignmentError, LeaseConfig, PodCaller, Work};
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

fn pod(f: &Fixture, role: &str, ms: i64) -> (String, Work) {
    let id = asg::register_pod(
        &f.db,
        &caller(role),
        asg::PodIntro {
            name: role,
            host: "host",
            ..Default::default()
        },
        at(ms),
    )
    .unwrap()
    .id;
    let work = asg::claim(&f.ws, &f.db, &caller(role), &id, LEASE, at(ms))
        .unwrap()
        .unwrap_or_else(|| panic!("the {role} pod found no work"));
    (id, work)
}

/// A ticket with `body`, committed and accepted.
fn accepted(f: &Fixture, title: &str, body: &str) -> yoi_core::TicketId {
    let id = f.queued(title, body, &[]);
    git(&f.repo, &["add", "-A"]);
    git(&f.repo, &["commit", "-q", "-m", "tickets"]);
    f.accept(&id);
    id
}

fn complete(
    f: &Fixture,
    role: &str,
    pod: &str,
    work: &Work,
    report: &Report,
    ms: i64,
) -> Result<asg::Completed, AssignmentError> {
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
}

fn kept(commit: Option<String>) -> Report {
    Report {
        outcome: ReportOutcome::Done,
        commit,
        summary: Some("the last paragraph".into()),
        contract_missing: true,
        follow_up: true,
        ..Report::default()
    }
}

#[test]
fn only_a_coders_change_is_kept_without_its_contract_and_a_reviewer_never_is() {
    let f = Fixture::new();
    let id = accepted(&f, "Say hello", BRIEF);
    let (coder, work) = pod(&f, "coder", 0);

    // Nothing changed: nothing to keep, refused, and the claim is still live.
    let err = complete(&f, "coder", &coder, &work, &kept(None), 1).unwrap_err();
    assert!(
        err.to_string().contains("must carry the change it keeps"),
        "{err}"
    );
    let same = kept(Some(work.head_commit.clone()));
    assert!(complete(&f, "coder", &coder, &work, &same, 2).is_err());

    // A change: kept, and the event says how.
    let dir = &work.workdir;
    let head = commit_files(
        dir,
        &[(
            "hello.txt",
            "hello
",
        )],
        &[],
    );
    let done = complete(&f, "coder", &coder, &work, &kept(Some(head.clone())), 3).unwrap();
    assert!(done.moved);
    assert_eq!(done.branch_head, head);
    let thread = std::fs::read_to_string(
        f.repo
            .join(".yoi/tickets")
            .join(id.as_str())
            .join("thread.md"),
    )
    .unwrap();
    let event = thread
        .lines()
        .find(|l| l.contains("event: assignment ") && l.contains("step: implement"))
        .unwrap();
    assert!(
        event.contains("contract_missing: true") && event.contains("follow_up: true"),
        "{event}"
    );
    assert!(thread.contains("Contract missing:"), "{thread}");

    // The verifier passes it; a reviewer's result without its contract is refused even with
    // a verdict attached.
    let (verifier, vwork) = pod(&f, "verifier", 4);
    let passed = Report {
        outcome: ReportOutcome::Done,
        checks: vec![yoi_core::report::CheckResult {
            command: "cargo test".into(),
            exit_code: Some(0),
            duration_ms: 1,
            timed_out: false,
            log: None,
        }],
        ..Report::default()
    };
    complete(&f, "verifier", &verifier, &vwork, &passed, 5).unwrap();
    let (reviewer, rwork) = pod(&f, "reviewer", 7);
    let verdictless = Report {
        verdict: Some(Verdict::Approve),
        ..kept(None)
    };
    let err = complete(&f, "reviewer", &reviewer, &rwork, &verdictless, 8).unwrap_err();
    assert!(
        err.to_string()
            .contains("a reviewer step never completes without its output contract"),
        "{err}"
    );
    let row = f.db.assignment(&rwork.assignment.id).unwrap().unwrap();
    assert_eq!(row.status.as_str(), "claimed", "nothing changed");
}

#[test]
fn a_verify_without_a_result_for_every_brief_command_is_a_failed_verify() {
    let f = Fixture::new();
    accepted(&f, "Say hello", BRIEF);
    let (coder, work) = pod(&f, "coder", 0);
    let dir = &work.workdir;
    let head = commit_files(
        dir,
        &[(
            "hello.txt",
            "hello
",
        )],
        &[],
    );
    let done = Report {
        outcome: ReportOutcome::Done,
        commit: Some(head),
        summary: Some("done".into()),
        ..Report::default()
    };
    complete(&f, "coder", &coder, &work, &done, 1).unwrap();
    // An agent in the verifier role that says `done` and ran nothing: a failed verify.
    let (verifier, vwork) = pod(&f, "verifier", 2);
    let said_done = Report {
        outcome: ReportOutcome::Done,
        summary: Some("looks fine".into()),
        ..Report::default()
    };
    let answer = complete(&f, "verifier", &verifier, &vwork, &said_done, 3).unwrap();
    assert!(!answer.moved);
    let row = f.db.assignment(&vwork.assignment.id).unwrap().unwrap();
    assert_eq!(row.status.as_str(), "failed");
    let error = row.error.unwrap_or_default();
    assert!(
        error.contains("no result for 1 of the brief's validation commands (`cargo test`)"),
        "{error}"
    );
    // The step is handed out again, and a result for the command completes it.
    let (verifier, vwork) = pod(&f, "verifier", 4);
    assert_eq!(vwork.assignment.attempt, 2);
    let ran = Report {
        checks: vec![yoi_core::report::CheckResult {
            command: "cargo test".into(),
            exit_code: Some(0),
            duration_ms: 1,
            timed_out: false,
            log: None,
        }],
        ..said_done
    };
    complete(&f, "verifier", &verifier, &vwork, &ran, 5).unwrap();
    let row = f.db.assignment(&vwork.assignment.id).unwrap().unwrap();
    assert_eq!(row.status.as_str(), "completed");
}

const SCOPED: &str = "## Intent\nMake it work.\n\n## Acceptance criteria\n- it works\n\n## Validation\n`cargo test`\n\n## Write scope\n- `src/`\n";

/// Commit `files` (path, text) in `dir` and `rm` the paths in `gone`; the new head.
fn commit_files(dir: &std::path::Path, files: &[(&str, &str)], moves: &[(&str, &str)]) -> String {
    for (p, text) in files {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    for (from, to) in moves {
        std::fs::create_dir_all(dir.join(to).parent().unwrap()).unwrap();
        git(dir, &["mv", from, to]);
    }
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
            "work",
        ],
    );
    git(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

fn done_at(commit: String) -> Report {
    Report {
        outcome: ReportOutcome::Done,
        commit: Some(commit),
        summary: Some("did it".into()),
        ..Report::default()
    }
}

#[test]
fn a_change_outside_the_write_scope_gets_one_round_from_its_own_commit_then_merges_once_moved() {
    let f = Fixture::new();
    accepted(&f, "Scoped", SCOPED);
    let (coder, work) = pod(&f, "coder", 0);
    let first = commit_files(
        &work.workdir,
        &[("src/a.rs", "a\n"), ("notes.txt", "n\n")],
        &[],
    );
    let answer = complete(&f, "coder", &coder, &work, &done_at(first.clone()), 1).unwrap();
    assert!(
        !answer.moved,
        "the branch does not take a change outside its scope"
    );
    let row = f.db.assignment(&work.assignment.id).unwrap().unwrap();
    assert_eq!(row.status.as_str(), "failed");
    let error = row.error.unwrap_or_default();
    assert!(
        error.starts_with("the change touches paths outside the brief's write scope: `notes.txt`"),
        "{error}"
    );
    // The round starts from the first attempt's commit; moving the file inside the scope is
    // taken, and the branch moves.
    let (coder, work) = pod(&f, "coder", 2);
    assert_eq!(work.assignment.attempt, 2);
    assert_eq!(git(&work.workdir, &["rev-parse", "HEAD"]).trim(), first);
    let second = commit_files(&work.workdir, &[], &[("notes.txt", "src/notes.txt")]);
    let answer = complete(&f, "coder", &coder, &work, &done_at(second.clone()), 3).unwrap();
    assert!(answer.moved);
    assert_eq!(answer.branch_head, second);
}

#[test]
fn a_change_that_stays_outside_the_scope_goes_to_a_person_and_flag_only_marks_it() {
    let f = Fixture::new();
    let id = accepted(&f, "Scoped", SCOPED);
    let (coder, work) = pod(&f, "coder", 0);
    let first = commit_files(&work.workdir, &[("notes.txt", "n\n")], &[]);
    complete(&f, "coder", &coder, &work, &done_at(first), 1).unwrap();
    let (coder, work) = pod(&f, "coder", 2);
    let second = commit_files(&work.workdir, &[("src/a.rs", "a\n")], &[]);
    complete(&f, "coder", &coder, &work, &done_at(second), 3).unwrap();
    let row = f.db.assignment(&work.assignment.id).unwrap().unwrap();
    assert!(
        row.error.unwrap_or_default().contains("again: `notes.txt`"),
        "the second time names the paths for a person"
    );
    let thread = f.ws.read_thread(&id).unwrap();
    assert!(
        thread
            .events
            .iter()
            .any(|e| e.kind == yoi_core::thread::EventKind::Attention),
        "a person is asked"
    );
    assert!(
        asg::claim(&f.ws, &f.db, &caller("coder"), &coder, LEASE, at(4))
            .unwrap()
            .is_none(),
        "nothing is handed out until a person decides"
    );

    // `flag`: the same change counts, and the event names the paths for the reviewer.
    let mut f = Fixture::new();
    f.ws.config.flow.write_scope = yoi_store::config::WriteScopeRule::Flag;
    let id = accepted(&f, "Scoped", SCOPED);
    let (coder, work) = pod(&f, "coder", 0);
    let head = commit_files(&work.workdir, &[("notes.txt", "n\n")], &[]);
    assert!(
        complete(&f, "coder", &coder, &work, &done_at(head), 1)
            .unwrap()
            .moved
    );
    let thread = std::fs::read_to_string(
        f.repo
            .join(".yoi/tickets")
            .join(id.as_str())
            .join("thread.md"),
    )
    .unwrap();
    assert!(
        thread.contains("outside_write_scope: notes.txt"),
        "{thread}"
    );
}
