//! The GitHub client against the fake GitHub on loopback, whose every request and answer is
//! checked against GitHub's OpenAPI description, with pushes to a real `git http-backend`.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use yoi_core::forge::gate::{Conclusion, RequiredSource};
use yoi_core::forge::MergeMethod;
use yoi_forge::github::GitHub;
use yoi_forge::push::{self, Push, Pushed};
use yoi_forge::{
    ChangeState, Credential, Forge, ForgeError, LimitKind, MergeOutcome, NewChange, Permission,
    Secret, StatusState,
};
use yoi_testkit::forge::{FakeGitHub, Fault};
use yoi_testkit::git;

const TOKEN: &str = "ghp_test_token_never_shown";

struct Setup {
    fake: FakeGitHub,
    gh: GitHub,
    clock: Arc<AtomicU64>,
    repo: tempfile::TempDir,
    scratch: tempfile::TempDir,
}

fn setup() -> Setup {
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(repo.path().join("README"), "hello\n").unwrap();
    git(repo.path(), &["add", "README"]);
    git(repo.path(), &["commit", "-q", "-m", "first"]);
    let fake = FakeGitHub::start("acme", "widgets", TOKEN, Some(repo.path()));
    git(repo.path(), &["remote", "add", "origin", &fake.git_url()]);
    let clock = Arc::new(AtomicU64::new(1_000_000));
    let c = clock.clone();
    let gh = GitHub::new(
        &fake.api_url(),
        "acme/widgets",
        Credential::Token(Secret::new(TOKEN)),
        Arc::new(move || c.load(Ordering::SeqCst)),
    );
    Setup {
        fake,
        gh,
        clock,
        repo,
        scratch: tempfile::tempdir().unwrap(),
    }
}

fn commit(repo: &Path, branch: &str, file: &str) -> String {
    git(repo, &["checkout", "-q", "-B", branch]);
    std::fs::write(repo.join(file), file).unwrap();
    git(repo, &["add", file]);
    git(repo, &["commit", "-q", "-m", file]);
    git(repo, &["rev-parse", "HEAD"]).trim().to_string()
}

fn push_branch(s: &Setup, branch: &str, sha: &str, lease: Option<&str>) -> Pushed {
    let token = Secret::new(TOKEN);
    push::push(&Push {
        repo: s.repo.path(),
        remote: "origin",
        branch,
        sha,
        lease,
        user: "x-access-token",
        token: &token,
        scratch: s.scratch.path(),
    })
    .unwrap()
}

fn new_change(branch: &str) -> NewChange {
    NewChange {
        title: "Fix login".into(),
        head: branch.into(),
        base: "main".into(),
        body: "The brief.".into(),
        draft: false,
        earlier: None,
    }
}

#[test]
fn a_push_lands_through_the_credential_helper_and_leaves_the_token_nowhere() {
    let s = setup();
    let sha = commit(s.repo.path(), "yoi/t1", "a.txt");
    assert_eq!(push_branch(&s, "yoi/t1", &sha, None), Pushed::Done);
    assert_eq!(s.fake.branch("yoi/t1").as_deref(), Some(sha.as_str()));
    let config = std::fs::read_to_string(s.repo.path().join(".git/config")).unwrap();
    assert!(!config.contains(TOKEN), "{config}");
    assert_eq!(
        std::fs::read_dir(s.scratch.path()).unwrap().count(),
        0,
        "the helper's credential file is removed after the push"
    );
    // A wrong token is refused by the git server: the push fails, naming no token.
    let wrong = Secret::new("ghp_wrong");
    let err = push::push(&Push {
        repo: s.repo.path(),
        remote: "origin",
        branch: "yoi/t1",
        sha: &sha,
        lease: Some(&sha),
        user: "x-access-token",
        token: &wrong,
        scratch: s.scratch.path(),
    })
    .unwrap_err();
    assert!(matches!(err, ForgeError::Push { .. }), "{err}");
    assert!(!err.to_string().contains("ghp_wrong"), "{err}");
}

#[test]
fn a_persons_push_is_never_overwritten_by_the_lease() {
    let s = setup();
    let ours = commit(s.repo.path(), "yoi/t2", "a.txt");
    assert_eq!(push_branch(&s, "yoi/t2", &ours, None), Pushed::Done);
    let theirs = s.fake.push_as_person("yoi/t2", "person.txt", "mine\n");
    let next = commit(s.repo.path(), "yoi/t2", "b.txt");
    let refused = push_branch(&s, "yoi/t2", &next, Some(&ours));
    assert!(
        matches!(refused, Pushed::LeaseRefused { .. }),
        "{refused:?}"
    );
    assert_eq!(s.fake.branch("yoi/t2").as_deref(), Some(theirs.as_str()));
    // Fetch their commit, build on it, and the push with the new lease keeps it.
    let token = Secret::new(TOKEN);
    let p = Push {
        repo: s.repo.path(),
        remote: "origin",
        branch: "yoi/t2",
        sha: "",
        lease: None,
        user: "x-access-token",
        token: &token,
        scratch: s.scratch.path(),
    };
    assert_eq!(push::fetch(&p).unwrap().as_deref(), Some(theirs.as_str()));
    git(s.repo.path(), &["merge", "-q", "--no-edit", &theirs]);
    let merged = git(s.repo.path(), &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    assert_eq!(
        push_branch(&s, "yoi/t2", &merged, Some(&theirs)),
        Pushed::Done
    );
    let log = git(&s.fake.bare(), &["log", "--format=%H", "yoi/t2"]);
    assert!(log.contains(&theirs), "the person's commit survives");
}

#[test]
fn opening_twice_or_after_a_lost_answer_gives_one_pull_request() {
    let s = setup();
    let sha = commit(s.repo.path(), "yoi/t3", "a.txt");
    push_branch(&s, "yoi/t3", &sha, None);
    // Another branch's pull request must not be taken for this one.
    let other = commit(s.repo.path(), "yoi/other", "o.txt");
    push_branch(&s, "yoi/other", &other, None);
    s.gh.open_change(&new_change("yoi/other")).unwrap();
    assert_eq!(s.gh.find_change("yoi/t3").unwrap(), None);
    s.fake.fault("POST", "/pulls", Fault::DropAnswer);
    let err = s.gh.open_change(&new_change("yoi/t3")).unwrap_err();
    assert!(err.is_transient(), "{err}");
    let pr = s.gh.open_change(&new_change("yoi/t3")).unwrap();
    let again = s.gh.open_change(&new_change("yoi/t3")).unwrap();
    assert_eq!(pr, again);
    assert_eq!(pr.head_sha, sha);
    assert_eq!(pr.head_ref, "yoi/t3");
    assert_eq!(pr.state, ChangeState::Open);
    let pulls = s.fake.pulls();
    assert_eq!(pulls.iter().filter(|p| p.head == "yoi/t3").count(), 1);
    // Every list asked for `OWNER:BRANCH`.
    for r in s
        .fake
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/pulls"))
    {
        assert!(r.query.contains("head=acme%3Ayoi"), "{}", r.query);
    }
    s.fake.assert_conforming();
}

#[test]
fn checks_of_both_kinds_come_back_with_their_sha_and_statuses_are_posted() {
    let s = setup();
    let sha = commit(s.repo.path(), "yoi/t4", "a.txt");
    push_branch(&s, "yoi/t4", &sha, None);
    // No statuses at all: combined `pending` means none, not waiting.
    assert!(s.gh.checks(&sha).unwrap().is_empty());
    s.fake.add_check_run(&sha, "build", Some("success"));
    s.fake.add_check_run(&sha, "e2e", None);
    s.fake.add_status(&sha, "ci/legacy", "failure");
    s.gh.set_status(&sha, "yoi/verify", StatusState::Success, "verified by yoi")
        .unwrap();
    let checks = s.gh.checks(&sha).unwrap();
    let find = |n: &str| checks.iter().find(|c| c.name == n).unwrap();
    assert_eq!(find("build").conclusion, Conclusion::Success);
    assert_eq!(find("e2e").conclusion, Conclusion::Pending);
    assert_eq!(find("ci/legacy").conclusion, Conclusion::Failure);
    assert_eq!(find("yoi/verify").conclusion, Conclusion::Success);
    assert!(checks.iter().all(|c| c.sha == sha));
    assert_eq!(find("build").title.as_deref(), Some("build: success"));
    let posted = s.fake.statuses();
    assert!(posted
        .iter()
        .any(|p| p.context == "yoi/verify" && p.sha == sha));
    s.fake.assert_conforming();
}

#[test]
fn required_checks_come_from_rulesets_and_protection_and_degrade_visibly() {
    let s = setup();
    s.fake.set_ruleset_checks("main", &["build"]);
    s.fake.set_protection_checks("main", &["lint"]);
    let r = s.gh.required_checks("main", &[]).unwrap();
    assert_eq!(r.checks, vec!["build", "lint"]);
    assert_eq!(r.source, RequiredSource::Forge);
    assert_eq!(r.note, None);
    s.fake.forbid_required_checks();
    let r = s.gh.required_checks("main", &["ci".into()]).unwrap();
    assert_eq!(r.source, RequiredSource::Configured);
    assert_eq!(r.checks, vec!["ci"]);
    assert!(r.note.unwrap().contains("cannot read"));
    let r = s.gh.required_checks("main", &[]).unwrap();
    assert_eq!(r.source, RequiredSource::Reported);
    assert!(r.note.unwrap().contains("every check reported"));
    s.fake.assert_conforming();
}

#[test]
fn a_merge_passes_the_head_and_a_moved_head_is_refused_with_409() {
    let s = setup();
    let sha = commit(s.repo.path(), "yoi/t5", "a.txt");
    push_branch(&s, "yoi/t5", &sha, None);
    let pr = s.gh.open_change(&new_change("yoi/t5")).unwrap();
    let moved = s.fake.push_as_person("yoi/t5", "late.txt", "late\n");
    let out =
        s.gh.merge(pr.number, &sha, MergeMethod::Merge, "Fix login")
            .unwrap();
    assert!(matches!(out, MergeOutcome::HeadMoved { .. }), "{out:?}");
    assert!(!s.fake.pulls()[0].merged);
    let out =
        s.gh.merge(pr.number, &moved, MergeMethod::Merge, "Fix login")
            .unwrap();
    let MergeOutcome::Merged { sha: merged } = out else {
        panic!("{out:?}")
    };
    assert_eq!(s.fake.branch("main").as_deref(), Some(merged.as_str()));
    let after = s.gh.change(pr.number).unwrap();
    assert_eq!(after.state, ChangeState::Merged);
    assert_eq!(after.merge_sha.as_deref(), Some(merged.as_str()));
    let sent = s.fake.requests();
    let merges: Vec<_> = sent.iter().filter(|r| r.path.ends_with("/merge")).collect();
    assert_eq!(merges.len(), 2);
    assert_eq!(merges[0].body["sha"], sha.as_str());
    assert_eq!(merges[1].status, 200);
    s.fake.assert_conforming();
}

#[test]
fn rate_limits_stop_every_call_until_the_time_named() {
    let s = setup();
    let now = s.clock.load(Ordering::SeqCst);
    s.fake
        .fault("GET", "/pulls", Fault::PrimaryLimit { reset: now + 600 });
    let err = s.gh.find_change("x").unwrap_err();
    assert_eq!(
        err,
        ForgeError::RateLimited {
            kind: LimitKind::Primary,
            until: now + 600
        }
    );
    let sent = s.gh.requests_sent();
    s.clock.store(now + 599, Ordering::SeqCst);
    assert!(matches!(
        s.gh.permission("bob"),
        Err(ForgeError::RateLimited { .. })
    ));
    assert_eq!(
        s.gh.requests_sent(),
        sent,
        "nothing is sent before the reset"
    );
    s.clock.store(now + 600, Ordering::SeqCst);
    assert_eq!(s.gh.find_change("x").unwrap(), None);
    // The secondary limit, as 429 and as 403, with Retry-After.
    for status in [429, 403] {
        let now = s.clock.load(Ordering::SeqCst);
        s.fake.fault(
            "GET",
            "/pulls",
            Fault::SecondaryLimit {
                status,
                retry_after: 30,
            },
        );
        let err = s.gh.find_change("x").unwrap_err();
        assert_eq!(
            err,
            ForgeError::RateLimited {
                kind: LimitKind::Secondary,
                until: now + 30
            }
        );
        let sent = s.gh.requests_sent();
        assert!(s.gh.find_change("x").is_err());
        assert_eq!(s.gh.requests_sent(), sent);
        s.clock.store(now + 30, Ordering::SeqCst);
        assert_eq!(s.gh.find_change("x").unwrap(), None);
    }
}

#[test]
fn an_unchanged_list_is_answered_304_and_read_from_before() {
    let s = setup();
    let sha = commit(s.repo.path(), "yoi/t6", "a.txt");
    push_branch(&s, "yoi/t6", &sha, None);
    s.gh.open_change(&new_change("yoi/t6")).unwrap();
    let first = s.gh.find_change("yoi/t6").unwrap();
    let before = s.fake.not_modified();
    let second = s.gh.find_change("yoi/t6").unwrap();
    assert_eq!(first, second);
    assert_eq!(s.fake.not_modified(), before + 1);
}

#[test]
fn a_persons_permission_is_asked_and_kept_briefly() {
    let s = setup();
    s.fake.set_permission("carol", "write");
    s.fake.set_permission("dave", "read");
    assert!(s.gh.permission("carol").unwrap().can_push());
    assert_eq!(s.gh.permission("dave").unwrap(), Permission::Read);
    assert_eq!(s.gh.permission("mallory").unwrap(), Permission::None);
    let sent = s.gh.requests_sent();
    s.gh.permission("carol").unwrap();
    assert_eq!(s.gh.requests_sent(), sent, "cached");
    s.clock
        .fetch_add(yoi_forge::github::PERMISSION_TTL_SECS, Ordering::SeqCst);
    s.gh.permission("carol").unwrap();
    assert_eq!(s.gh.requests_sent(), sent + 1, "asked again after the TTL");
}

#[test]
fn a_5xx_is_transient_and_a_wrong_token_is_not() {
    let s = setup();
    s.fake.fault("GET", "/pulls", Fault::Status(502));
    let err = s.gh.find_change("x").unwrap_err();
    assert!(err.is_transient(), "{err}");
    let bad = GitHub::new(
        &s.fake.api_url(),
        "acme/widgets",
        Credential::Token(Secret::new("ghp_wrong")),
        Arc::new(|| 0),
    );
    let err = bad.find_change("x").unwrap_err();
    assert!(
        matches!(err, ForgeError::Refused { status: 401, .. }),
        "{err}"
    );
    assert!(!err.is_transient());
    assert!(!err.to_string().contains("ghp_wrong"));
}

#[test]
fn the_fake_refuses_a_request_the_description_does_not_allow() {
    let s = setup();
    // A query parameter the list operation does not declare, and a body field of a wrong type.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let auth = format!("Bearer {TOKEN}");
    let r = agent
        .get(&format!(
            "{}/repos/acme/widgets/pulls?branch=x",
            s.fake.api_url()
        ))
        .header("Authorization", &auth)
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 422);
    let r = agent
        .post(&format!("{}/repos/acme/widgets/pulls", s.fake.api_url()))
        .header("Authorization", &auth)
        .send_json(serde_json::json!({"title": 7, "head": "x", "base": "main"}))
        .unwrap();
    assert_eq!(r.status().as_u16(), 422);
    let v = s.fake.violations();
    assert!(
        v.iter().any(|v| v.contains("`branch` is not declared")),
        "{v:?}"
    );
    assert!(v.iter().any(|v| v.contains("body/title")), "{v:?}");
    // These were the point of the test; the fake must not fail it when dropped.
    s.fake.take_violations();
}

#[test]
fn the_description_checks_answers_too() {
    use yoi_testkit::forge::openapi::{description, validate};
    let d = description();
    let op = d
        .operation("GET", "/repos/acme/widgets/pulls/7")
        .expect("the operation");
    assert_eq!(op.template, "/repos/{owner}/{repo}/pulls/{pull_number}");
    let schema = &op.op["responses"]["200"]["content"]["application/json"]["schema"];
    let full = d.answer(schema, serde_json::json!({"number": 7, "state": "open"}));
    let mut e = Vec::new();
    validate(schema, &full, "", &mut e);
    assert!(e.is_empty(), "{e:?}");
    let mut broken = full.clone();
    broken.as_object_mut().unwrap().remove("head");
    broken["state"] = "merged".into();
    validate(schema, &broken, "", &mut e);
    assert!(e.iter().any(|e| e.contains("`head` is missing")), "{e:?}");
    assert!(e.iter().any(|e| e.contains("/state")), "{e:?}");
    // A branch with a slash is one multi-segment parameter.
    let op = d
        .operation("GET", "/repos/acme/widgets/rules/branches/yoi/abc")
        .unwrap();
    assert_eq!(op.params[2], ("branch".to_string(), "yoi/abc".to_string()));
}
