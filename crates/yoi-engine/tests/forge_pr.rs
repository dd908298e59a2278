//! A flow that ends in a pull request (docs/forge.md), against the fake GitHub on loopback
//! (every request and answer checked against GitHub's OpenAPI description, pushes to a real
//! `git http-backend`): the approved commit is pushed and merged with exactly its SHA, and only
//! when the gate is open for it; a lost answer gives one pull request; a failing required check
//! is a round; a person's push is never overwritten.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::{now, Fixture, BRIEF};
use yoi_core::forge::{EndMode, ForgeSection};
use yoi_core::inbox::InboxReason;
use yoi_core::report::{CheckResult, Report, ReportOutcome, Verdict};
use yoi_core::{State, Timestamp};
use yoi_db::AssignmentStatus;
use yoi_engine::assignments::{self as asg, ForgeEnv, LeaseConfig, PodCaller, Work};
use yoi_forge::github::GitHub;
use yoi_forge::{Credential, Secret};
use yoi_testkit::forge::{FakeGitHub, Fault};
use yoi_testkit::git;

const TOKEN: &str = "ghp_engine_test_token";
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
        role: yoi_core::Role::parse(role).unwrap(),
    }
}

fn claim(f: &Fixture, role: &str, ms: i64) -> Option<(String, Work)> {
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
    asg::claim(&f.ws, &f.db, &caller(role), &id, LEASE, at(ms))
        .unwrap()
        .map(|w| (id, w))
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

struct Setup {
    f: Fixture,
    fake: FakeGitHub,
    gh: GitHub,
    section: ForgeSection,
    _clock: Arc<AtomicU64>,
}

fn setup(configure: impl FnOnce(&mut ForgeSection)) -> Setup {
    let mut f = Fixture::new();
    let fake = FakeGitHub::start("acme", "widgets", TOKEN, Some(&f.repo));
    git(&f.repo, &["remote", "add", "origin", &fake.git_url()]);
    let mut section = ForgeSection::new("acme/widgets");
    section.api_url = fake.api_url();
    section.mode = EndMode::Pr;
    configure(&mut section);
    f.ws.config.forge = Some(section.clone());
    let clock = Arc::new(AtomicU64::new(1_000_000));
    let c = clock.clone();
    let gh = GitHub::new(
        &fake.api_url(),
        "acme/widgets",
        Credential::Token(Secret::new(TOKEN)),
        Arc::new(move || c.load(Ordering::SeqCst)),
    );
    Setup {
        f,
        fake,
        gh,
        section,
        _clock: clock,
    }
}

impl Setup {
    fn tick(&self, ms: i64) -> asg::ForgeTick {
        let token = Secret::new(TOKEN);
        let env = ForgeEnv {
            forge: &self.gh,
            section: &self.section,
            token: &token,
            scratch: self.f.ws.local_dir().join("forge"),
        };
        asg::forge_tick(&self.f.ws, &self.f.db, &env, at(ms)).unwrap()
    }

    /// Implement (a commit), verify (passes), review (approves): the `pr` step is pending at
    /// the approved commit, which is returned.
    fn approved(&self, title: &str, start_ms: i64) -> (yoi_core::TicketId, String) {
        let f = &self.f;
        let id = f.queued(title, BRIEF, &[]);
        git(&f.repo, &["add", "-A"]);
        git(&f.repo, &["commit", "-q", "-m", "tickets"]);
        f.accept(&id);
        let head = self.implement(start_ms, "hello.txt");
        self.verify_and_review(start_ms + 10);
        (id, head)
    }

    /// [`Setup::approved`], routed with room for `capacity` tickets in progress.
    fn approved_among(
        &self,
        title: &str,
        start_ms: i64,
        capacity: usize,
    ) -> (yoi_core::TicketId, String) {
        let f = &self.f;
        let id = f.queued(title, BRIEF, &[]);
        git(&f.repo, &["add", "-A"]);
        git(&f.repo, &["commit", "-q", "-m", "tickets"]);
        let d = yoi_engine::routing::decide(&f.ws, &id, capacity)
            .unwrap()
            .unwrap();
        yoi_engine::routing::accept_ticket(&f.ws, &f.db, &id, &d, &f.worktree_root(), now())
            .unwrap();
        let head = self.implement(start_ms, "hello.txt");
        self.verify_and_review(start_ms + 10);
        (id, head)
    }

    fn implement(&self, ms: i64, file: &str) -> String {
        let (pod, work) = claim(&self.f, "coder", ms).expect("coder work");
        let dir = &work.workdir;
        std::fs::write(dir.join(file), format!("{file}\n")).unwrap();
        git(dir, &["add", file]);
        git(dir, &["commit", "-q", "-m", file]);
        let head = git(dir, &["rev-parse", "HEAD"]).trim().to_string();
        let done = Report {
            outcome: ReportOutcome::Done,
            commit: Some(head.clone()),
            summary: Some("done".into()),
            ..Report::default()
        };
        finish(&self.f, "coder", &pod, &work, &done, ms + 1);
        head
    }

    fn verify_and_review(&self, ms: i64) {
        let (pod, work) = claim(&self.f, "verifier", ms).expect("verifier work");
        let passed = Report {
            outcome: ReportOutcome::Done,
            checks: vec![CheckResult {
                command: "cargo test".into(),
                exit_code: Some(0),
                duration_ms: 1,
                timed_out: false,
                log: None,
            }],
            ..Report::default()
        };
        finish(&self.f, "verifier", &pod, &work, &passed, ms + 1);
        let (pod, work) = claim(&self.f, "reviewer", ms + 2).expect("reviewer work");
        let approve = Report {
            outcome: ReportOutcome::Done,
            verdict: Some(Verdict::Approve),
            summary: Some("good".into()),
            ..Report::default()
        };
        finish(&self.f, "reviewer", &pod, &work, &approve, ms + 3);
    }

    fn pr_row(&self, id: &yoi_core::TicketId) -> Option<yoi_db::Assignment> {
        self.f
            .assignments(id)
            .into_iter()
            .find(|a| a.step == "pr" && a.status.is_live())
    }

    fn forge_events(&self, id: &yoi_core::TicketId) -> Vec<(String, String)> {
        self.f
            .ws
            .read_thread(id)
            .unwrap()
            .events
            .into_iter()
            .filter(|e| e.kind.as_str() == "forge_pr")
            .map(|e| (e.get("action").unwrap_or("").to_string(), e.body.clone()))
            .collect()
    }
}

#[test]
fn an_approved_ticket_is_pushed_opened_and_merged_with_its_exact_head() {
    let s = setup(|_| {});
    s.fake.set_ruleset_checks("main", &["ci"]);
    let (id, head) = s.approved("Say hello", 0);
    // The local merge never takes the `pr` step.
    let local = asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    assert!(local.done.is_empty(), "{local:?}");
    let pr = s.pr_row(&id).expect("the pr step is pending");
    assert_eq!(pr.head_commit.as_deref(), Some(head.as_str()));

    // First pass: pushed, opened, verdicts posted; `ci` has not reported: waiting.
    let t = s.tick(200);
    assert_eq!(t.pushed, vec![id.to_string()]);
    assert_eq!(t.opened, vec![id.to_string()]);
    assert_eq!(t.waiting.len(), 1, "{t:?}");
    let pulls = s.fake.pulls();
    assert_eq!(pulls.len(), 1);
    let branch = pulls[0].head.clone();
    assert_eq!(s.fake.branch(&branch).as_deref(), Some(head.as_str()));
    assert_eq!(pulls[0].head_sha, head);
    assert!(pulls[0].body.contains("Make it work."), "{}", pulls[0].body);
    let statuses = s.fake.statuses();
    for ctx in ["yoi/verify", "yoi/review"] {
        assert!(statuses
            .iter()
            .any(|st| st.context == ctx && st.sha == head && st.state == "success"));
    }
    // Why it waits is recorded, and read back as the ticket's forge status.
    let st = asg::pr::status(&s.f.ws, &s.f.db, id.as_str()).unwrap();
    assert_eq!(st.state, "open");
    assert_eq!(st.badge, asg::pr::Badge::Open);
    assert_eq!(st.number, Some(pulls[0].number));
    assert_eq!(st.remote_head.as_deref(), Some(head.as_str()));
    let gate = st.gate.expect("the gate is recorded");
    assert!(!gate.open);
    assert_eq!(
        gate.blockers,
        vec![yoi_core::forge::gate::Blocker::CheckMissing { name: "ci".into() }]
    );
    // Green on another commit does not count; pending at the head does not either.
    s.fake.add_check_run(&s.f.base, "ci", Some("success"));
    s.fake.add_check_run(&head, "ci", None);
    let t = s.tick(300);
    assert_eq!(t.merged, Vec::<String>::new());
    assert!(!s.fake.pulls()[0].merged);
    // The checks table holds what was reported for the head, each with its SHA, and nothing
    // reported for another commit.
    let st = asg::pr::status(&s.f.ws, &s.f.db, id.as_str()).unwrap();
    let table: Vec<(&str, &str)> = st
        .checks
        .iter()
        .map(|c| (c.name.as_str(), c.conclusion.as_str()))
        .collect();
    assert_eq!(
        table,
        [
            ("ci", "pending"),
            ("yoi/review", "success"),
            ("yoi/verify", "success")
        ]
    );
    assert!(st.checks.iter().all(|c| c.sha == head));
    // Green at the head: merged with exactly that SHA.
    s.fake.add_check_run(&head, "ci", Some("success"));
    let t = s.tick(400);
    assert_eq!(t.merged, vec![id.to_string()]);
    let merged = &s.fake.pulls()[0];
    assert!(merged.merged);
    let merge_call = s
        .fake
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/merge"))
        .unwrap();
    assert_eq!(merge_call.body["sha"], head.as_str());
    // The flow marks the ticket done; the thread names the pull request and the merge.
    asg::flow_tick(&s.f.ws, &s.f.db, at(500)).unwrap();
    assert_eq!(s.f.state(&id), State::Done);
    let events = s.forge_events(&id);
    let actions: Vec<&str> = events.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(
        actions,
        ["pushed", "opened", "waiting", "waiting", "merged"]
    );
    let st = asg::pr::status(&s.f.ws, &s.f.db, id.as_str()).unwrap();
    assert_eq!(st.state, "merged");
    assert_eq!(st.badge, asg::pr::Badge::Merged);
    assert!(st
        .checks
        .iter()
        .any(|c| c.name == "ci" && c.conclusion.as_str() == "success"));
    assert_eq!(st.merged_sha, merged.merge_sha);
    assert_eq!(st.merge_method.as_deref(), Some("merge"));
    assert!(events[4].1.contains(merged.merge_sha.as_deref().unwrap()));
    // The token is nowhere in the thread or the repository's configuration.
    let thread = std::fs::read_to_string(
        s.f.repo
            .join(".yoi/tickets")
            .join(id.as_str())
            .join("thread.md"),
    )
    .unwrap();
    assert!(!thread.contains(TOKEN));
    let config = std::fs::read_to_string(s.f.repo.join(".git/config")).unwrap();
    assert!(!config.contains(TOKEN));
    // Another pass does nothing more: one pull request, merged once.
    let t = s.tick(600);
    assert!(t.merged.is_empty() && t.opened.is_empty());
    assert_eq!(s.fake.pulls().len(), 1);
}

#[test]
fn a_lost_answer_and_a_forge_outage_still_give_one_pull_request() {
    let s = setup(|_| {});
    let (id, _head) = s.approved("Say hello", 0);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    s.fake.fault("POST", "/pulls", Fault::DropAnswer);
    let t = s.tick(200);
    assert_eq!(t.retried.len(), 1, "{t:?}");
    s.fake.fault("GET", "/pulls", Fault::Status(502));
    let t = s.tick(300);
    assert_eq!(t.retried.len(), 1, "{t:?}");
    let t = s.tick(400);
    assert_eq!(t.opened, vec![id.to_string()]);
    // No checks are configured or reported, so yoi's own verdicts decide: merged.
    assert_eq!(t.merged, vec![id.to_string()]);
    assert_eq!(s.fake.pulls().len(), 1);
}

#[test]
fn a_failing_required_check_is_a_round_with_its_output() {
    let s = setup(|f| f.required_checks = vec!["ci".into()]);
    s.fake.forbid_required_checks();
    let (id, head) = s.approved("Say hello", 0);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    s.tick(200);
    s.fake.add_check_run(&head, "ci", Some("failure"));
    let t = s.tick(300);
    assert_eq!(t.sent_back, vec![id.to_string()], "{t:?}");
    assert!(!s.fake.pulls()[0].merged);
    let rows = s.f.assignments(&id);
    let pr = rows.iter().find(|a| a.step == "pr").unwrap();
    assert_eq!(pr.status, AssignmentStatus::Failed);
    let why = pr.error.clone().unwrap_or_default();
    assert!(
        why.contains("`ci` concluded failure") && why.contains("ci: failure"),
        "{why}"
    );
    assert!(rows
        .iter()
        .any(|a| a.step == "implement" && a.status.is_live()));
}

#[test]
fn a_persons_push_to_the_pull_request_is_kept_and_built_on() {
    let s = setup(|_| {});
    s.fake.set_ruleset_checks("main", &["ci"]);
    let (id, head) = s.approved("Say hello", 0);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    s.tick(200);
    let branch = s.fake.pulls()[0].head.clone();
    let theirs = s.fake.push_as_person(&branch, "person.txt", "mine\n");
    let t = s.tick(300);
    assert_eq!(t.sent_back, vec![id.to_string()], "{t:?}");
    let actions: Vec<String> = s.forge_events(&id).into_iter().map(|(a, _)| a).collect();
    assert_eq!(actions, ["pushed", "opened", "waiting", "person_pushed"]);
    assert_eq!(s.fake.branch(&branch).as_deref(), Some(theirs.as_str()));
    assert_eq!(
        git(
            &s.f.repo,
            &["rev-parse", &format!("refs/yoi/forge/{branch}")]
        )
        .trim(),
        theirs
    );
    // The coder's integrate round merges their commit; verified and reviewed again, the next
    // push is a fast-forward of theirs under the new lease.
    let (pod, work) = claim(&s.f, "coder", 400).expect("integrate work");
    assert_eq!(work.assignment.step, "integrate");
    git(&work.workdir, &["merge", "-q", "--no-edit", &theirs]);
    std::fs::write(work.workdir.join("more.txt"), "more\n").unwrap();
    git(&work.workdir, &["add", "more.txt"]);
    git(&work.workdir, &["commit", "-q", "-m", "more"]);
    let merged = git(&work.workdir, &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    let done = Report {
        outcome: ReportOutcome::Done,
        commit: Some(merged.clone()),
        summary: Some("merged the person's commit".into()),
        ..Report::default()
    };
    finish(&s.f, "coder", &pod, &work, &done, 401);
    s.verify_and_review(410);
    asg::flow_tick(&s.f.ws, &s.f.db, at(500)).unwrap();
    let t = s.tick(600);
    assert_eq!(t.pushed, vec![id.to_string()], "{t:?}");
    assert_eq!(s.fake.branch(&branch).as_deref(), Some(merged.as_str()));
    let log = git(&s.fake.bare(), &["log", "--format=%H", &branch]);
    assert!(log.contains(&theirs) && log.contains(&head));
    assert_eq!(s.fake.pulls().len(), 1);
}

/// A ticket returned to planning while its pull request is open, then queued and accepted
/// again, goes on on the branch it had (docs/routing.md): the new attempt starts at the
/// branch's head, its head is pushed to the same pull request under the lease of yoi's last
/// push (no second pull request, no person's push made up, no round sent back), the people on
/// it are told once, and it merges with exactly the new head.
#[test]
fn a_ticket_accepted_again_goes_on_with_its_open_pull_request() {
    use yoi_store::ops::{self, TransitionRequest};
    let s = setup(|_| {});
    s.fake.set_ruleset_checks("main", &["ci"]);
    let (id, first) = s.approved("Say hello", 0);
    let t = s.tick(100);
    assert_eq!(t.opened, vec![id.to_string()], "{t:?}");
    let pull = s.fake.pulls()[0].clone();
    assert_eq!(pull.head_sha, first);

    let ctx = s.f.human();
    let back = TransitionRequest {
        reason: Some("the brief needs another look".into()),
        ..TransitionRequest::default()
    };
    ops::return_to_planning(&s.f.ws, &ctx, id.as_str(), &back).unwrap();
    assert!(s.pr_row(&id).is_none(), "the pr step ends with the return");
    // The pull request is left as it is while the ticket is in planning.
    let t = s.tick(150);
    assert_eq!(t, asg::ForgeTick::default());
    let req = TransitionRequest::default();
    ops::mark_ready(&s.f.ws, &ctx, id.as_str(), &req).unwrap();
    ops::queue(&s.f.ws, &ctx, id.as_str(), &req).unwrap();

    // Accepted again: on the same branch, from its head (the first attempt's work is kept).
    let again = s.f.accept(&id);
    assert_eq!(again.branch, pull.head);
    assert_eq!(again.base_commit, first);
    assert!(!again.branch_created);
    let second = s.implement(200, "again.txt");
    assert_eq!(
        git(&s.f.repo, &["rev-parse", &format!("{second}^")]).trim(),
        first
    );
    s.verify_and_review(210);

    let t = s.tick(300);
    assert_eq!(t.pushed, vec![id.to_string()], "{t:?}");
    assert!(t.opened.is_empty() && t.sent_back.is_empty(), "{t:?}");
    let pulls = s.fake.pulls();
    assert_eq!(pulls.len(), 1, "one pull request per ticket");
    assert_eq!(pulls[0].number, pull.number);
    assert_eq!(pulls[0].head_sha, second);
    let told: Vec<_> = s
        .fake
        .comments()
        .into_iter()
        .filter(|(n, _, body)| *n == pull.number && body.contains("accepted ticket"))
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].2.contains(&second), "{}", told[0].2);

    // Green at the new head: merged with exactly it, and said once only.
    s.fake.add_check_run(&second, "ci", Some("success"));
    let t = s.tick(400);
    assert_eq!(t.merged, vec![id.to_string()], "{t:?}");
    let merge_call = s
        .fake
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/merge"))
        .unwrap();
    assert_eq!(merge_call.body["sha"], second.as_str());
    asg::flow_tick(&s.f.ws, &s.f.db, at(500)).unwrap();
    assert_eq!(s.f.state(&id), State::Done);
    let actions: Vec<String> = s.forge_events(&id).into_iter().map(|(a, _)| a).collect();
    assert_eq!(
        actions,
        [
            "pushed",
            "opened",
            "waiting",
            "pushed",
            "continued",
            "waiting",
            "merged"
        ]
    );
    let comments = s.fake.comments().len();
    s.tick(600);
    assert_eq!(s.fake.comments().len(), comments);
    s.fake.assert_conforming();
}

/// A pull request a person closed while the ticket was back in planning was the earlier
/// attempt's: accepted again, the ticket opens a pull request of its own for the branch (the
/// closed one is never taken for it, nor reopened), and nobody is asked about the closed one.
#[test]
fn a_pull_request_closed_before_the_ticket_is_accepted_again_gives_way_to_a_new_one() {
    use yoi_store::ops::{self, TransitionRequest};
    let s = setup(|_| {});
    s.fake.set_ruleset_checks("main", &["ci"]);
    let (id, first) = s.approved("Say hello", 0);
    s.tick(100);
    let old = s.fake.pulls()[0].clone();
    let ctx = s.f.human();
    let back = TransitionRequest {
        reason: Some("start over".into()),
        ..TransitionRequest::default()
    };
    ops::return_to_planning(&s.f.ws, &ctx, id.as_str(), &back).unwrap();
    s.fake.close_pull(old.number);
    let req = TransitionRequest::default();
    ops::mark_ready(&s.f.ws, &ctx, id.as_str(), &req).unwrap();
    ops::queue(&s.f.ws, &ctx, id.as_str(), &req).unwrap();
    let again = s.f.accept(&id);
    assert_eq!(again.base_commit, first);
    let second = s.implement(200, "again.txt");
    s.verify_and_review(210);

    let t = s.tick(300);
    assert_eq!(t.opened, vec![id.to_string()], "{t:?}");
    let pulls = s.fake.pulls();
    assert_eq!(pulls.len(), 2);
    assert_eq!(pulls[0].state, "closed", "never reopened");
    assert_eq!(
        (pulls[1].head.as_str(), pulls[1].head_sha.as_str()),
        (old.head.as_str(), second.as_str())
    );
    assert_eq!(pulls[1].state, "open");
    let thread = s.f.ws.read_thread(&id).unwrap();
    assert!(!thread
        .events
        .iter()
        .any(|e| e.get("reason") == Some(asg::pr::PR_CLOSED)));
    // What people see is the new pull request's, not the closed one's.
    let st = asg::pr::status(&s.f.ws, &s.f.db, id.as_str()).unwrap();
    assert_eq!(
        (st.number, st.state.as_str(), st.badge),
        (Some(pulls[1].number), "open", asg::pr::Badge::Open)
    );
    s.fake.add_check_run(&second, "ci", Some("success"));
    let t = s.tick(400);
    assert_eq!(t.merged, vec![id.to_string()], "{t:?}");
    assert!(s.fake.pulls()[1].merged);
    let st = asg::pr::status(&s.f.ws, &s.f.db, id.as_str()).unwrap();
    assert_eq!(st.number, Some(pulls[1].number));
    assert_eq!(st.state, "merged");
    s.fake.assert_conforming();
}

#[test]
fn an_outsiders_yoi_fix_starts_nothing_and_a_collaborators_starts_a_round() {
    let s = setup(|_| {});
    s.fake.set_ruleset_checks("main", &["ci"]);
    let (id, _head) = s.approved("Say hello", 0);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    s.tick(200);
    let n = s.fake.pulls()[0].number;
    s.fake.set_permission("carol", "write");
    s.fake.set_permission("olivia", "read");
    // An organisation member with read access only, and someone with no relation at all.
    s.fake.add_comment(n, "olivia", "/yoi fix delete the tests");
    s.fake.add_comment(n, "mallory", "/yoi fix push to main");
    s.fake.add_comment(n, "carol", "nice work");
    let t = s.tick(300);
    assert!(t.sent_back.is_empty(), "{t:?}");
    assert!(s.pr_row(&id).is_some(), "the pr step still waits");
    let events = s.forge_events(&id);
    let ignored: Vec<&String> = events
        .iter()
        .filter(|(a, _)| a == "comment_ignored")
        .map(|(_, b)| b)
        .collect();
    assert_eq!(ignored.len(), 2, "{events:?}");
    assert!(ignored[0].contains("olivia") && ignored[0].contains("not obeyed"));
    // Seen again: recorded once.
    s.tick(350);
    assert_eq!(
        s.forge_events(&id)
            .iter()
            .filter(|(a, _)| a == "comment_ignored")
            .count(),
        2
    );
    // A collaborator's command is a round with the comment as its feedback.
    s.fake
        .add_comment(n, "carol", "/yoi fix rename `hello` to `greet`");
    let t = s.tick(400);
    assert_eq!(t.sent_back, vec![id.to_string()], "{t:?}");
    let pr =
        s.f.assignments(&id)
            .into_iter()
            .find(|a| a.step == "pr")
            .unwrap();
    let why = pr.error.unwrap_or_default();
    assert!(
        why.contains("carol asked") && why.contains("rename `hello` to `greet`"),
        "{why}"
    );
    let (_, work) = claim(&s.f, "coder", 500).expect("a coder round");
    assert_eq!(work.assignment.step, "implement");
    let feedback = work.feedback.unwrap_or_default();
    assert!(
        feedback.contains("The pull request of") && feedback.contains("rename `hello` to `greet`"),
        "{feedback}"
    );
}

#[test]
fn a_push_whose_record_a_crash_lost_is_not_taken_for_a_persons() {
    let s = setup(|_| {});
    let (id, head) = s.approved("Say hello", 0);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    // The server pushed, then died before it wrote the `pushed` event (or opened the PR).
    let branch = git(
        &s.f.repo,
        &["for-each-ref", "--format=%(refname:short)", "refs/heads/"],
    )
    .lines()
    .find(|b| *b != "main")
    .expect("the ticket branch")
    .to_string();
    let token = Secret::new(TOKEN);
    let scratch = s.f.ws.local_dir().join("forge");
    let pushed = yoi_forge::push::push(&yoi_forge::push::Push {
        repo: &s.f.repo,
        remote: "origin",
        branch: &branch,
        sha: &head,
        lease: None,
        user: "x-access-token",
        token: &token,
        scratch: &scratch,
    })
    .unwrap();
    assert_eq!(pushed, yoi_forge::push::Pushed::Done);
    // The restarted driver finds its own push, records it, and goes on: one PR, no round.
    let t = s.tick(200);
    assert!(t.sent_back.is_empty(), "{t:?}");
    assert_eq!(t.pushed, vec![id.to_string()]);
    assert_eq!(t.merged, vec![id.to_string()]);
    let actions: Vec<String> = s.forge_events(&id).into_iter().map(|(a, _)| a).collect();
    assert_eq!(actions, ["pushed", "opened", "merged"]);
    assert_eq!(s.fake.pulls().len(), 1);
}

/// Reconciling open pull requests when nothing changed: every read is conditional and the
/// forge answers 304 (which costs nothing against the primary limit), and nothing is written.
/// 8 open pull requests, or as many as `YOI_FORGE_BENCH_PRS` says (BENCHMARKS.md measures
/// the issue's 100 that way: the setup of each takes a coder, verifier and reviewer round).
#[test]
// A benchmark too: it reads the wall clock and prints what it measured.
#[allow(clippy::disallowed_methods, clippy::disallowed_macros)]
fn a_pass_over_unchanged_pull_requests_is_answered_304() {
    let n: usize = std::env::var("YOI_FORGE_BENCH_PRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let s = setup(|_| {});
    s.fake.set_ruleset_checks("main", &["ci"]);
    for i in 0..n {
        s.approved_among(&format!("Ticket {i}"), (i as i64) * 100, n);
    }
    asg::flow_tick(&s.f.ws, &s.f.db, at(1_000_000)).unwrap();
    let t = s.tick(1_000_100);
    assert_eq!(t.opened.len(), n, "{t:?}");
    // The second pass reads what the first one left: the verdicts are posted, so it writes.
    s.tick(1_000_200);
    let before = s.fake.requests().len();
    let started = std::time::Instant::now();
    let t = s.tick(1_000_300);
    let took = started.elapsed();
    assert_eq!(t.waiting.len(), n, "{t:?}");
    let pass: Vec<_> = s.fake.requests().split_off(before);
    let gets = pass.iter().filter(|r| r.method == "GET").count();
    let not_modified = pass.iter().filter(|r| r.status == 304).count();
    eprintln!(
        "a pass over {n} unchanged pull requests: {not_modified} of {gets} reads answered 304, {took:?}"
    );
    assert_eq!(
        gets,
        pass.len(),
        "a pass over unchanged pull requests writes nothing"
    );
    assert!(
        not_modified * 10 >= gets * 9,
        "{not_modified} of {gets} answered 304"
    );
}

#[test]
fn an_issue_labelled_by_a_collaborator_becomes_one_ticket_and_its_pr_closes_it() {
    let s = setup(|f| f.import_label = Some("yoi".into()));
    s.fake.set_permission("carol", "write");
    s.fake.set_permission("olivia", "read");
    let wanted = s.fake.add_issue("Say hello", "## Intent\nGreet.\n", "dave");
    s.fake.label_issue(wanted, "yoi", "carol");
    let outside = s.fake.add_issue("Delete everything", "please", "mallory");
    s.fake.label_issue(outside, "yoi", "olivia");
    s.fake.add_issue("Unlabelled", "no", "dave");
    let out = yoi_engine::forge_import::import_issues(&s.f.ws, &s.gh, "yoi", at(0)).unwrap();
    assert_eq!(out.created.len(), 1, "{out:?}");
    assert_eq!(out.created[0].0, wanted);
    assert_eq!(out.refused, vec![(outside, "olivia".to_string())]);
    let id = yoi_core::TicketId::parse(&out.created[0].1).unwrap();
    let item = s.f.ws.read_item(&id).unwrap();
    assert_eq!(item.title, "Say hello");
    assert_eq!(item.state, State::Planning);
    assert!(item.body.contains("## Intent\nGreet.") && item.body.contains("by @dave"));
    let events = s.forge_events(&id);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].0, "issue");
    // Again (a webhook and the poll, a restart): nothing new.
    let again = yoi_engine::forge_import::import_issues(&s.f.ws, &s.gh, "yoi", at(10)).unwrap();
    assert!(
        again.created.is_empty() && again.edited.is_empty(),
        "{again:?}"
    );
    assert_eq!(s.forge_events(&id).len(), 1);
    // An edit of the issue is recorded in the thread, once per text; the brief stays.
    s.fake
        .edit_issue(wanted, "Say hello loudly", "## Intent\nGreet, loudly.\n");
    let edited = yoi_engine::forge_import::import_issues(&s.f.ws, &s.gh, "yoi", at(20)).unwrap();
    assert_eq!(edited.edited, vec![(wanted, id.to_string())], "{edited:?}");
    assert!(edited.created.is_empty());
    let again = yoi_engine::forge_import::import_issues(&s.f.ws, &s.gh, "yoi", at(30)).unwrap();
    assert!(again.edited.is_empty(), "{again:?}");
    let events = s.forge_events(&id);
    let actions: Vec<&str> = events.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(actions, ["issue", "issue_edited"]);
    assert!(
        events[1].1.contains("**Say hello loudly**") && events[1].1.contains("> Greet, loudly."),
        "{}",
        events[1].1
    );
    let item = s.f.ws.read_item(&id).unwrap();
    assert_eq!(item.title, "Say hello");
    assert!(item.body.contains("## Intent\nGreet.\n") && !item.body.contains("loudly"));
    // Its pull request says it closes the issue.
    let rec = asg::pr::pr_record(&s.f.ws, &id).unwrap();
    assert_eq!(rec.issue, Some(wanted));
    assert!(yoi_core::forge::pr_body(&item.body, id.as_str(), rec.issue)
        .contains(&format!("Closes #{wanted}")));
}

#[test]
fn failing_checks_use_the_rounds_and_then_a_person_decides() {
    let mut s = setup(|f| f.required_checks = vec!["ci".into()]);
    s.f.ws.config.flow.max_rounds = 1;
    s.fake.forbid_required_checks();
    let (id, head) = s.approved("Say hello", 0);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    s.tick(200);
    s.fake.add_check_run(&head, "ci", Some("failure"));
    // Round 1 of 1.
    assert_eq!(s.tick(300).sent_back, vec![id.to_string()]);
    let fixed = s.implement(400, "fix.txt");
    s.verify_and_review(410);
    asg::flow_tick(&s.f.ws, &s.f.db, at(500)).unwrap();
    s.tick(600);
    s.fake.add_check_run(&fixed, "ci", Some("failure"));
    // The rounds are used: nothing is handed out, a person is told.
    let t = s.tick(700);
    assert!(t.sent_back.is_empty(), "{t:?}");
    let rows = s.f.assignments(&id);
    assert!(!rows.iter().any(|a| a.status.is_live()), "{rows:?}");
    let thread = s.f.ws.read_thread(&id).unwrap();
    assert!(thread
        .events
        .iter()
        .any(|e| e.get("reason") == Some("checks_failing")));
    assert!(!s.fake.pulls()[0].merged);
    // The inbox says it is the checks, with their output, and what to do.
    let inbox = yoi_engine::inbox::inbox(&s.f.ws, &s.f.db).unwrap();
    let reasons: Vec<_> = inbox.entries.iter().map(|e| e.reason).collect();
    assert_eq!(reasons, vec![InboxReason::ChecksFailing], "{inbox:?}");
    let entry = &inbox.entries[0];
    assert_eq!(entry.reason.label(), "Checks failing after the fix rounds");
    assert!(
        entry.detail.contains("after 1 fix rounds"),
        "{}",
        entry.detail
    );
    assert!(
        entry.detail.contains("`ci` concluded failure"),
        "{}",
        entry.detail
    );
    assert_eq!(entry.command, format!("yoi ticket retry {id}"));
}

#[test]
fn a_change_request_on_the_head_closes_the_review_entry_and_starts_a_round() {
    let s = setup(|f| f.required_approvals = 1);
    let (id, head) = s.approved("Say hello", 0);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    s.tick(200);
    let entries = || yoi_engine::inbox::inbox(&s.f.ws, &s.f.db).unwrap().entries;
    let reasons = || entries().iter().map(|e| e.reason).collect::<Vec<_>>();
    assert_eq!(reasons(), vec![InboxReason::PrReview]);
    let number = s.fake.pulls()[0].number;
    s.fake
        .add_review(number, "alice", "CHANGES_REQUESTED", &head);
    let t = s.tick(300);
    assert_eq!(t.sent_back, vec![id.to_string()], "{t:?}");
    // The coder works next, not a reviewer: nothing waits for a person's review.
    assert!(
        !reasons().contains(&InboxReason::PrReview),
        "{:?}",
        entries()
    );
}

#[test]
fn a_pull_request_waiting_for_approval_is_in_the_inbox_until_it_merges() {
    let s = setup(|f| f.required_approvals = 1);
    let (id, head) = s.approved("Say hello", 0);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    // No required checks (the ruleset names none, and none reported): only a person's
    // approval for the head is missing.
    let t = s.tick(200);
    assert_eq!(t.waiting.len(), 1, "{t:?}");
    let entries = || yoi_engine::inbox::inbox(&s.f.ws, &s.f.db).unwrap().entries;
    let open = entries();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].reason, InboxReason::PrReview);
    assert_eq!(open[0].reason.label(), "PR waits for your review");
    let number = s.fake.pulls()[0].number;
    assert!(
        open[0].detail.contains(&format!("Pull request #{number}"))
            && open[0].detail.contains(&head),
        "{}",
        open[0].detail
    );
    assert_eq!(
        open[0].command,
        format!(
            "yoi forge status {id}   # review (or merge) the pull request it links, on the forge"
        )
    );
    // Another pass says it once: still one entry, one event.
    s.tick(300);
    assert_eq!(entries().len(), 1);
    let said = |reason: &str| {
        s.f.ws
            .read_thread(&id)
            .unwrap()
            .events
            .iter()
            .filter(|e| e.get("reason") == Some(reason))
            .count()
    };
    assert_eq!(said("pr_review"), 1);
    // An approval for an older commit does not count (the entry stays: the head still waits
    // for a review); one for the head merges it.
    s.fake.add_review(number, "alice", "APPROVED", &s.f.base);
    s.tick(400);
    assert!(!s.fake.pulls()[0].merged);
    let open = entries();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].reason, InboxReason::PrReview);
    s.fake.add_review(number, "alice", "APPROVED", &head);
    assert_eq!(s.tick(500).merged, vec![id.to_string()]);
    asg::flow_tick(&s.f.ws, &s.f.db, at(600)).unwrap();
    assert_eq!(s.f.state(&id), State::Done);
    assert!(entries().is_empty(), "{:?}", entries());
}

#[test]
fn a_pull_request_a_person_merges_is_in_the_inbox_once_its_gate_opens() {
    let s = setup(|f| f.merge = yoi_core::forge::Merger::Person);
    let (id, _head) = s.approved("Say hello", 0);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    let t = s.tick(200);
    assert!(t.waiting[0].1.open, "{t:?}");
    let entries = yoi_engine::inbox::inbox(&s.f.ws, &s.f.db).unwrap().entries;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].reason, InboxReason::PrReview);
    assert!(
        entries[0].detail.contains("ready for you to merge"),
        "{}",
        entries[0].detail
    );
    assert!(!s.fake.pulls()[0].merged, "yoi does not merge");
    let st = asg::pr::status(&s.f.ws, &s.f.db, id.as_str()).unwrap();
    assert_eq!(st.badge, asg::pr::Badge::ReadyToMerge);
}

#[test]
fn check_results_outlive_the_index_and_a_late_older_one_never_overwrites_a_newer() {
    use yoi_core::forge::gate::{CheckKind, CheckResult, Conclusion};
    let s = setup(|_| {});
    let result = |conclusion, at: &str| CheckResult {
        name: "ci".into(),
        sha: "a".repeat(40),
        kind: CheckKind::CheckRun,
        conclusion,
        at: at.into(),
        url: None,
        title: None,
        summary: None,
    };
    let db = &s.f.db;
    let sha = "a".repeat(40);
    // Finished at :02, then the "in progress" of :01 arrives late (a reordered webhook).
    db.forge_checks_record(
        &[result(Conclusion::Success, "2026-12-01T00:00:02Z")],
        "webhook",
        1,
    )
    .unwrap();
    let late = db
        .forge_checks_record(
            &[result(Conclusion::Pending, "2026-12-01T00:00:01Z")],
            "webhook",
            2,
        )
        .unwrap();
    assert_eq!(late, 0, "the older result is not written");
    // Same time: a conclusion beats "pending", never the other way round.
    db.forge_checks_record(
        &[result(Conclusion::Pending, "2026-12-01T00:00:02Z")],
        "poll",
        3,
    )
    .unwrap();
    assert_eq!(
        db.forge_checks_of(&sha).unwrap()[0].conclusion,
        Conclusion::Success
    );
    // A re-run that failed later does replace it.
    db.forge_checks_record(
        &[result(Conclusion::Failure, "2026-12-01T00:00:09Z")],
        "poll",
        4,
    )
    .unwrap();
    // A second index over the same database (a restarted server) reads what was kept.
    let mut ws = yoi_store::Workspace::open(&s.f.repo).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (again, _) = yoi_db::DbIndex::attach(
        &mut ws,
        yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
    )
    .unwrap();
    let kept = again.forge_checks_of(&sha).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].conclusion, Conclusion::Failure);
    assert_eq!(kept[0].at, "2026-12-01T00:00:09Z");
    assert!(again.forge_checks_of(&"b".repeat(40)).unwrap().is_empty());
}

#[test]
fn line_comments_reach_the_thread_and_the_round_and_the_issue_closes_with_the_merge() {
    use yoi_store::ops::{self, TransitionRequest};
    let s = setup(|f| f.import_label = Some("yoi".into()));
    s.fake.set_ruleset_checks("main", &["ci"]);
    s.fake.set_permission("carol", "write");
    let issue = s.fake.add_issue("Say hello", BRIEF, "dave");
    s.fake.label_issue(issue, "yoi", "carol");
    let out = yoi_engine::forge_import::import_issues(&s.f.ws, &s.gh, "yoi", at(0)).unwrap();
    let id = yoi_core::TicketId::parse(&out.created[0].1).unwrap();
    let ctx = s.f.human();
    let req = TransitionRequest::default();
    ops::mark_ready(&s.f.ws, &ctx, id.as_str(), &req).unwrap();
    ops::queue(&s.f.ws, &ctx, id.as_str(), &req).unwrap();
    git(&s.f.repo, &["add", "-A"]);
    git(&s.f.repo, &["commit", "-q", "-m", "tickets"]);
    s.f.accept(&id);
    let head = s.implement(10, "hello.txt");
    s.verify_and_review(20);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    s.tick(200);
    let pr = s.fake.pulls()[0].clone();
    assert!(pr.body.contains(&format!("Closes #{issue}")), "{}", pr.body);
    // Carol asks for changes, with a comment on a line of the diff.
    let comment =
        s.fake
            .add_review_comment(pr.number, "carol", "hello.txt", 1, &head, "Say it louder.");
    s.fake
        .add_review(pr.number, "carol", "CHANGES_REQUESTED", &head);
    assert_eq!(s.tick(300).sent_back, vec![id.to_string()]);
    let thread = s.f.ws.read_thread(&id).unwrap();
    let line = thread
        .events
        .iter()
        .find(|e| e.get("action") == Some("review_comment"))
        .expect("the line comment is in the thread");
    assert_eq!(line.get("user"), Some("carol"));
    assert_eq!(line.get("path"), Some("hello.txt"));
    assert_eq!(line.get("line"), Some("1"));
    assert_eq!(line.get("commit"), Some(head.as_str()));
    assert_eq!(line.get("comment"), Some(comment.to_string().as_str()));
    assert!(line.body.contains("carol on `hello.txt:1`") && line.body.contains("Say it louder."));
    // The round's feedback names the file and line.
    let rows = s.f.assignments(&id);
    let failed = rows
        .iter()
        .find(|a| a.step == "pr" && a.status == AssignmentStatus::Failed)
        .unwrap();
    let why = failed.error.clone().unwrap_or_default();
    assert!(
        why.contains("carol requested changes") && why.contains("hello.txt:1: Say it louder."),
        "{why}"
    );
    // Seen again next pass: written once.
    let fixed = s.implement(400, "louder.txt");
    s.verify_and_review(410);
    asg::flow_tick(&s.f.ws, &s.f.db, at(500)).unwrap();
    s.fake.add_review(pr.number, "carol", "APPROVED", &fixed);
    s.tick(550);
    s.fake.add_check_run(&fixed, "ci", Some("success"));
    let t = s.tick(600);
    assert_eq!(t.merged, vec![id.to_string()], "{t:?}");
    let comments = s
        .forge_events(&id)
        .iter()
        .filter(|(a, _)| a == "review_comment")
        .count();
    assert_eq!(comments, 1);
    // The issue closed with the merge (into `main`), said on the issue and in the thread.
    assert_eq!(s.fake.issue_state(issue), "closed completed");
    assert!(s
        .fake
        .comments()
        .iter()
        .any(|(n, _, body)| *n == issue && body.contains(&format!("pull request #{}", pr.number))));
    let closed: Vec<_> = s
        .forge_events(&id)
        .into_iter()
        .filter(|(a, _)| a == "issue_closed")
        .collect();
    assert_eq!(closed.len(), 1, "{closed:?}");
    asg::flow_tick(&s.f.ws, &s.f.db, at(700)).unwrap();
    assert_eq!(s.f.state(&id), State::Done);
    // A later pass closes nothing twice.
    s.tick(800);
    let patches = s
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH")
        .count();
    assert_eq!(patches, 1);
}

#[test]
fn open_early_pushes_a_draft_at_the_first_commit_and_marks_it_ready_once_verified() {
    let s = setup(|f| f.open = yoi_core::forge::OpenWhen::Early);
    let f = &s.f;
    let id = f.queued("Say hello", BRIEF, &[]);
    git(&f.repo, &["add", "-A"]);
    git(&f.repo, &["commit", "-q", "-m", "tickets"]);
    f.accept(&id);
    // Nothing committed yet: nothing pushed, nothing opened.
    let t = s.tick(5);
    assert!(t.pushed.is_empty() && t.opened.is_empty(), "{t:?}");
    assert!(s.fake.pulls().is_empty());
    // The coder's first commit: pushed, and a draft opened for it, before any verdict.
    let head = s.implement(10, "hello.txt");
    let t = s.tick(20);
    assert_eq!(t.pushed, vec![id.to_string()], "{t:?}");
    assert_eq!(t.opened, vec![id.to_string()]);
    let pulls = s.fake.pulls();
    assert_eq!(pulls.len(), 1);
    assert!(pulls[0].draft);
    assert_eq!(pulls[0].head_sha, head);
    assert!(
        s.fake.statuses().is_empty(),
        "no verdict is posted before there is one"
    );
    // Again: nothing new.
    let t = s.tick(25);
    assert!(t.pushed.is_empty() && t.opened.is_empty(), "{t:?}");
    // Verified and reviewed: marked ready (GraphQL), then merged with its head.
    s.verify_and_review(30);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    let t = s.tick(200);
    assert_eq!(t.merged, vec![id.to_string()], "{t:?}");
    let pulls = s.fake.pulls();
    assert_eq!(pulls.len(), 1, "one pull request, the draft");
    assert!(!pulls[0].draft && pulls[0].merged);
    let ready: Vec<_> = s
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.path == "/graphql")
        .collect();
    assert_eq!(ready.len(), 1);
    assert_eq!(
        ready[0].body["variables"]["id"],
        format!("PR_kw{}", pulls[0].id)
    );
    let actions: Vec<String> = s.forge_events(&id).into_iter().map(|(a, _)| a).collect();
    assert_eq!(
        actions,
        ["pushed", "opened", "ready", "merged"],
        "{actions:?}"
    );
}

#[test]
fn a_github_app_pushes_and_merges_with_installation_tokens_renewed_before_they_end() {
    use std::os::unix::fs::PermissionsExt;
    use yoi_forge::Forge;
    let s = setup(|_| {});
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("app.pem");
    let public = keys.path().join("app.pub.pem");
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl runs");
        assert!(out.status.success(), "{out:?}");
    };
    // A key as GitHub hands it out: PKCS#1 PEM.
    openssl(&[
        "genrsa",
        "-traditional",
        "-out",
        key.to_str().unwrap(),
        "2048",
    ]);
    openssl(&[
        "rsa",
        "-in",
        key.to_str().unwrap(),
        "-pubout",
        "-out",
        public.to_str().unwrap(),
    ]);
    assert!(std::fs::read_to_string(&key)
        .unwrap()
        .contains("BEGIN RSA PRIVATE KEY"));
    let start = s._clock.load(Ordering::SeqCst);
    s.fake.set_app(42, 7, &public);
    s.fake.set_token_expiry(start + 3600);
    let mut section = s.section.clone();
    section.app_id = Some(42);
    section.app_installation_id = Some(7);
    section.app_private_key_file = Some(key.to_str().unwrap().into());
    // A key file others may read is refused, naming the fix.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = yoi_forge::credential::resolve(&section, s.f.ws.root(), None).unwrap_err();
    assert!(err.to_string().contains("chmod 600"), "{err}");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let credential = yoi_forge::credential::resolve(&section, s.f.ws.root(), None).unwrap();
    assert!(!format!("{credential:?}").contains("PRIVATE"));
    let c = s._clock.clone();
    let gh = GitHub::new(
        &s.fake.api_url(),
        "acme/widgets",
        credential,
        Arc::new(move || c.load(Ordering::SeqCst)),
    );
    let (id, head) = s.approved("Say hello", 0);
    asg::flow_tick(&s.f.ws, &s.f.db, at(100)).unwrap();
    // One pass: the token is asked for with a JWT, and the push and every call use it (the
    // fake takes no other credential once the App is installed).
    let token = gh.current_token().unwrap();
    let env = ForgeEnv {
        forge: &gh,
        section: &s.section,
        token: &token,
        scratch: s.f.ws.local_dir().join("forge"),
    };
    let t = asg::forge_tick(&s.f.ws, &s.f.db, &env, at(200)).unwrap();
    assert_eq!(t.merged, vec![id.to_string()], "{t:?}");
    assert_eq!(s.fake.pulls()[0].head_sha, head);
    assert_eq!(s.fake.installation_tokens().len(), 1);
    // Held while it has more than five minutes left…
    s._clock.store(start + 3600 - 301, Ordering::SeqCst);
    assert_eq!(gh.current_token().unwrap().expose(), token.expose());
    // …and renewed before it ends: the next call goes out with the new one.
    s.fake.set_token_expiry(start + 7200);
    s._clock.store(start + 3600 - 299, Ordering::SeqCst);
    gh.change(s.fake.pulls()[0].number).unwrap();
    let issued = s.fake.installation_tokens();
    assert_eq!(issued.len(), 2, "{issued:?}");
    assert_eq!(gh.current_token().unwrap().expose(), issued[1]);
    // No token in the thread.
    let thread = std::fs::read_to_string(
        s.f.repo
            .join(".yoi/tickets")
            .join(id.as_str())
            .join("thread.md"),
    )
    .unwrap();
    assert!(!thread.contains("ghs_fake"));
}

/// The push + open benchmark (BENCHMARKS.md): one pass pushes and opens N verified tickets
/// (and posts their verdicts, reads checks and evaluates the gate), against the fake on
/// loopback; a plain `git push` of an equivalent new commit through the same credential helper
/// is timed beside it. What the pass adds on top of the push must stay under a second.
#[test]
// A benchmark: it reads the wall clock and prints what it measured, as the engine never does.
#[allow(clippy::disallowed_methods, clippy::disallowed_macros)]
fn push_and_open_of_a_verified_ticket_costs_little_on_top_of_the_push() {
    use std::time::Instant;
    const N: usize = 8;
    let s = setup(|_| {});
    s.fake.set_ruleset_checks("main", &["ci"]);
    for i in 0..N {
        s.approved(&format!("Ticket {i}"), (i as i64) * 100);
    }
    asg::flow_tick(&s.f.ws, &s.f.db, at(10_000)).unwrap();
    // The git push alone: an equivalent new commit on a branch of its own, each time.
    let token = Secret::new(TOKEN);
    let scratch = s.f.ws.local_dir().join("forge");
    let mut pushes = Vec::new();
    for i in 0..N {
        let branch = format!("bench/{i}");
        git(&s.f.repo, &["branch", &branch, "main"]);
        let work = s.f.repo.parent().unwrap().join(format!("bench-{i}"));
        git(
            &s.f.repo,
            &["worktree", "add", "-q", work.to_str().unwrap(), &branch],
        );
        std::fs::write(work.join("hello.txt"), format!("hello {i}\n")).unwrap();
        git(&work, &["add", "hello.txt"]);
        git(&work, &["commit", "-q", "-m", "bench"]);
        let sha = git(&work, &["rev-parse", "HEAD"]).trim().to_string();
        let started = Instant::now();
        let pushed = yoi_forge::push::push(&yoi_forge::push::Push {
            repo: &s.f.repo,
            remote: "origin",
            branch: &branch,
            sha: &sha,
            lease: None,
            user: "x-access-token",
            token: &token,
            scratch: &scratch,
        })
        .unwrap();
        pushes.push(started.elapsed());
        assert_eq!(pushed, yoi_forge::push::Pushed::Done);
    }
    let started = Instant::now();
    let t = s.tick(10_100);
    let pass = started.elapsed();
    assert_eq!(t.pushed.len(), N, "{t:?}");
    assert_eq!(t.opened.len(), N, "{t:?}");
    pushes.sort();
    let push_median = pushes[N / 2];
    let per_ticket = pass / N as u32;
    let on_top = per_ticket.saturating_sub(push_median);
    eprintln!(
        "push + open of {N} verified tickets in one pass: {pass:?} ({per_ticket:?} a ticket); \
         a git push alone: median {push_median:?}, max {:?}; on top of the push: {on_top:?} a ticket",
        pushes[N - 1]
    );
}
