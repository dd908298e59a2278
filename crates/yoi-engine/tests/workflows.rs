//! Invoking workflows (docs/workflows.md) through the engine with a real repository and
//! database: a person's `/<slug>` comment is carried by the next attempt of the workflow's
//! role, with what it requires before its body; a failed attempt leaves it due for the next
//! one, a completed one uses it up; nobody but a person can invoke, and a refused invocation
//! writes nothing.

mod common;

use common::{now, Fixture, BRIEF};
use yoi_core::report::{Report, ReportOutcome};
use yoi_core::{ErrorClass, Principal, PrincipalKind, TicketId, Timestamp};
use yoi_engine::assignments::{self as asg, LeaseConfig, PodCaller, Work};
use yoi_engine::workflows::invoke;
use yoi_engine::workflows::WorkflowError;
use yoi_store::ops::CommentRequest;
use yoi_store::Ctx;
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

fn write(f: &Fixture, rel: &str, text: &str) {
    let path = f.repo.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A workspace with a skill, a workflow requiring it (and a workflow requiring that one), a
/// workflow people may not invoke, and a queued ticket.
fn setup() -> (Fixture, TicketId) {
    let f = Fixture::new();
    write(
        &f,
        ".yoi/skills/owasp-checklist/SKILL.md",
        "---\nname: owasp-checklist\ndescription: The OWASP top ten.\n---\n\nSKILL-BODY: check A01 to A10.\n",
    );
    write(
        &f,
        ".yoi/workflow/security-precheck.md",
        "---\ndescription: Check a change for security mistakes.\nrequires: [owasp-checklist]\n---\n\nWORKFLOW-BODY: run the checklist against the diff.\n",
    );
    write(
        &f,
        ".yoi/workflow/agents-only.md",
        "---\ndescription: Only agents use this.\nuser_invocable: false\nauto_invoke: true\n---\nx\n",
    );
    let id = f.queued("Say hello", BRIEF, &[]);
    (f, id)
}

fn comment(f: &Fixture, ctx: &Ctx, id: &TicketId, body: &str) -> Result<(), WorkflowError> {
    invoke::comment(
        &f.ws,
        ctx,
        id.as_str(),
        &CommentRequest {
            kind: "comment".into(),
            body: body.into(),
        },
    )
    .map(|_| ())
}

fn accept_and_register(f: &Fixture, id: &TicketId) -> String {
    git(&f.repo, &["add", "-A"]);
    git(&f.repo, &["commit", "-q", "-m", "tickets and workflows"]);
    f.accept(id);
    asg::register_pod(
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
    .id
}

fn claim(f: &Fixture, pod: &str, ms: i64) -> Work {
    asg::claim(&f.ws, &f.db, &coder(), pod, LEASE, at(ms))
        .unwrap()
        .expect("the coder finds work")
}

fn thread_len(f: &Fixture, id: &TicketId) -> usize {
    f.ws.read_thread(id).unwrap().events.len()
}

#[test]
fn a_persons_slash_comment_is_carried_by_the_next_coder_attempt_knowledge_first() {
    let (f, id) = setup();
    comment(
        &f,
        &f.human(),
        &id,
        "/security-precheck focus on the login form\nand the session cookie",
    )
    .unwrap();
    // The invocation is the person's comment, marked with the workflow and its role.
    let ev = f.ws.read_thread(&id).unwrap().events.pop().unwrap();
    assert_eq!(ev.get("workflow"), Some("security-precheck"));
    assert_eq!(ev.get("workflow_role"), Some("coder"));
    assert!(ev
        .body
        .starts_with("/security-precheck focus on the login form"));

    let pod = accept_and_register(&f, &id);
    let work = claim(&f, &pod, 1);
    let text = work
        .workflow
        .clone()
        .expect("the attempt carries the workflow");
    let skill = text.find("SKILL-BODY").expect("the required skill's body");
    let body = text.find("WORKFLOW-BODY").expect("the workflow's body");
    let words = text
        .find("> and the session cookie")
        .expect("the person's words");
    assert!(skill < body && body < words, "{text}");
    assert!(text.starts_with("## Workflow `/security-precheck`, invoked by alice"));
    // The skill body an agent sees through a workflow is an activation, recorded.
    let acts = f.db.activations_of_ticket(id.as_str()).unwrap();
    assert!(
        acts.iter().any(|a| a.skill == "owasp-checklist"
            && a.who == "workflow:security-precheck"
            && a.assignment.as_deref() == Some(work.assignment.id.as_str())),
        "{acts:?}"
    );
}

#[test]
fn a_failed_attempt_leaves_the_workflow_due_and_a_completed_one_uses_it_up() {
    let (f, id) = setup();
    comment(&f, &f.human(), &id, "/security-precheck").unwrap();
    let pod = accept_and_register(&f, &id);
    let first = claim(&f, &pod, 1);
    assert!(first.workflow.is_some());
    let a = &first.assignment;
    asg::fail(
        &f.ws,
        &f.db,
        &coder(),
        &pod,
        &a.id,
        a.fence,
        "the agent gave up",
        true,
        Some(&Report {
            outcome: ReportOutcome::Failed,
            ..Report::default()
        }),
        at(2),
    )
    .unwrap()
    .expect("the step is handed out again");
    let second = claim(&f, &pod, 3);
    assert!(
        second
            .workflow
            .as_deref()
            .unwrap_or("")
            .contains("WORKFLOW-BODY"),
        "the retry carries the workflow again"
    );
    // Handing the same attempt out again gives the same text (nothing is used up by a claim).
    let again =
        yoi_engine::workflows::carry::for_attempt(&f.ws, &f.db, &second.assignment, at(4)).unwrap();
    assert_eq!(again, second.workflow);

    // Once an attempt that carried it completes, no later attempt carries it.
    let dir = &second.workdir;
    std::fs::write(dir.join("hello.txt"), "hello\n").unwrap();
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
            "hello",
        ],
    );
    let head = git(dir, &["rev-parse", "HEAD"]).trim().to_string();
    let s = &second.assignment;
    asg::complete(
        &f.ws,
        &f.db,
        &coder(),
        &pod,
        &s.id,
        s.fence,
        &Report {
            outcome: ReportOutcome::Done,
            commit: Some(head),
            summary: Some("done".into()),
            ..Report::default()
        },
        at(5),
    )
    .unwrap();
    let later = yoi_engine::db::Assignment {
        id: "asg-later".into(),
        attempt: 3,
        ..s.clone()
    };
    assert_eq!(
        yoi_engine::workflows::carry::for_attempt(&f.ws, &f.db, &later, at(6)).unwrap(),
        None
    );
}

#[test]
fn only_a_persons_comment_invokes_and_a_refusal_writes_nothing() {
    let (f, id) = setup();
    // A pod's comment that starts with `/slug` stays the text it is.
    let pod_ctx = Ctx::new(
        Principal {
            kind: PrincipalKind::Intake,
            name: "intake/i".into(),
        },
        now(),
    );
    comment(&f, &pod_ctx, &id, "/security-precheck").unwrap();
    let ev = f.ws.read_thread(&id).unwrap().events.pop().unwrap();
    assert_eq!(ev.get("workflow"), None, "not an invocation");
    // And the explicit invocation is refused for anyone but a person.
    let e =
        invoke::plan_invoke(&f.ws, PrincipalKind::Pod, "security-precheck", "", None).unwrap_err();
    assert_eq!(e.class(), ErrorClass::NotPermitted);

    let before = thread_len(&f, &id);
    let e = comment(&f, &f.human(), &id, "/agents-only now").unwrap_err();
    assert_eq!(e.class(), ErrorClass::Refused);
    assert!(e.to_string().contains("`user_invocable: false`"), "{e}");
    let e = comment(&f, &f.human(), &id, "/no-such-workflow").unwrap_err();
    assert_eq!(e.class(), ErrorClass::NotFound);
    assert!(
        e.to_string().contains(".yoi/workflow/no-such-workflow.md"),
        "{e}"
    );
    assert_eq!(
        thread_len(&f, &id),
        before,
        "a refused invocation writes nothing"
    );

    // Text that only looks like a path is a comment.
    comment(&f, &f.human(), &id, "/usr/bin/env is missing on the runner").unwrap();
    comment(&f, &f.human(), &id, "/ not a command").unwrap();
    assert_eq!(thread_len(&f, &id), before + 2);
}

#[test]
fn a_done_or_closed_ticket_cannot_be_invoked_on() {
    let (f, id) = setup();
    let ctx = f.human();
    yoi_store::ops::cancel(
        &f.ws,
        &ctx,
        id.as_str(),
        &yoi_store::ops::TransitionRequest {
            resolution: Some("not needed".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let e = comment(&f, &ctx, &id, "/security-precheck").unwrap_err();
    assert_eq!(e.class(), ErrorClass::Conflict, "{e}");
}

#[test]
fn parse_invocation_reads_only_a_first_line_slash_word() {
    assert_eq!(
        invoke::parse_invocation("/security-precheck focus here\nmore"),
        Some(("security-precheck", "focus here"))
    );
    assert_eq!(invoke::parse_invocation("/x"), Some(("x", "")));
    assert_eq!(invoke::parse_invocation("/usr/bin/env"), None);
    assert_eq!(invoke::parse_invocation("/ x"), None);
    assert_eq!(invoke::parse_invocation("please /x"), None);
    assert_eq!(invoke::parse_invocation("/Upper"), None);
}

fn agent_ctx(own: &str) -> Ctx {
    Ctx::new(Principal::pod("agent", own), now())
}

#[test]
fn an_auto_invoke_false_workflow_is_never_listed_and_an_agent_cannot_invoke_it_until_a_person_turns_it_on(
) {
    let (f, id) = setup();
    write(
        &f,
        ".yoi/workflow/deep-check.md",
        "---\ndescription: A deeper look.\nrequires: [owasp-checklist]\n---\nDEEP-BODY\n",
    );
    let pod = accept_and_register(&f, &id);
    let work = claim(&f, &pod, 1);
    let own = work.assignment.id.clone();
    assert!(
        work.invocable.iter().all(|w| w.slug != "deep-check"),
        "{:?}",
        work.invocable
    );
    // `agents-only` is auto_invoke for the coder role: listed.
    assert_eq!(
        work.invocable
            .iter()
            .map(|w| w.slug.as_str())
            .collect::<Vec<_>>(),
        vec!["agents-only"]
    );
    let before = thread_len(&f, &id);
    let e = invoke::for_agent(&f.ws, &f.db, &agent_ctx(&own), "deep-check", &own).unwrap_err();
    assert_eq!(e.class(), ErrorClass::NotPermitted, "{e}");
    assert!(e.to_string().contains("`auto_invoke: false`"), "{e}");
    assert_eq!(
        thread_len(&f, &id),
        before,
        "a refused invocation writes nothing"
    );

    // A person turns it on by editing the file: now it is listed and the agent may invoke it.
    write(
        &f,
        ".yoi/workflow/deep-check.md",
        "---\ndescription: A deeper look.\nauto_invoke: true\nrequires: [owasp-checklist]\n---\nDEEP-BODY\n",
    );
    let set = yoi_engine::workflows::set(&f.ws);
    assert!(yoi_engine::workflows::carry::invocable(&set, "coder")
        .iter()
        .any(|w| w.slug == "deep-check"));
    assert!(yoi_engine::workflows::carry::invocable(&set, "reviewer").is_empty());
    let got = invoke::for_agent(&f.ws, &f.db, &agent_ctx(&own), "deep-check", &own).unwrap();
    let skill = got.text.find("SKILL-BODY").unwrap();
    let body = got.text.find("DEEP-BODY").unwrap();
    assert!(skill < body, "{}", got.text);
    let ev = f.ws.read_thread(&id).unwrap().events.pop().unwrap();
    assert_eq!(ev.get("agent_workflow"), Some("deep-check"));
    assert_eq!(ev.get("assignment"), Some(own.as_str()));
    assert_eq!(
        ev.get("workflow"),
        None,
        "no later attempt takes it for a person's"
    );
    // Another attempt's token cannot invoke for this one, nor for an attempt that is over.
    let e =
        invoke::for_agent(&f.ws, &f.db, &agent_ctx("nope"), "deep-check", "asg-nope").unwrap_err();
    assert_eq!(e.class(), ErrorClass::Conflict);
}

#[test]
fn every_workflow_error_has_its_exit_code_status_and_code() {
    let s = |x: &str| x.to_string();
    let cases: Vec<(WorkflowError, u8, u16, &str)> = vec![
        (
            WorkflowError::BadSlug { slug: s("../x") },
            2,
            400,
            "invalid",
        ),
        (WorkflowError::Unknown { slug: s("x") }, 1, 404, "not_found"),
        (
            WorkflowError::Invalid {
                slug: s("x"),
                problems: vec![s("p")],
            },
            1,
            422,
            "invalid_workflow",
        ),
        (
            WorkflowError::NotUserInvocable { slug: s("x") },
            1,
            422,
            "refused",
        ),
        (
            WorkflowError::PersonOnly {
                kind: PrincipalKind::Pod,
            },
            1,
            403,
            "forbidden",
        ),
        (
            WorkflowError::NotAutoInvoke { slug: s("x") },
            1,
            403,
            "forbidden",
        ),
        (
            WorkflowError::AttemptOver { id: s("a") },
            1,
            409,
            "conflict",
        ),
    ];
    for (e, exit, status, code) in cases {
        let edge = yoi_engine::edge::edge(e.class());
        assert_eq!(
            (edge.exit_code, edge.http_status, e.code()),
            (exit, status, code),
            "{e:?}"
        );
    }
}

#[test]
fn a_skill_named_with_a_hash_in_the_brief_or_a_persons_comment_is_given_to_every_attempt() {
    let f = Fixture::new();
    write(
        &f,
        ".yoi/skills/owasp-checklist/SKILL.md",
        "---\nname: owasp-checklist\ndescription: The OWASP top ten.\n---\n\nSKILL-BODY-A\n",
    );
    write(
        &f,
        ".yoi/skills/threat-model/SKILL.md",
        "---\nname: threat-model\ndescription: Threats.\n---\n\nSKILL-BODY-B\n",
    );
    write(
        &f,
        ".yoi/skills/perf-notes/SKILL.md",
        "---\nname: perf-notes\ndescription: Speed.\n---\n\nSKILL-BODY-C\n",
    );
    let brief =
        format!("{BRIEF}\nMind #owasp-checklist here; issue #123 is related.\n\n# heading\n");
    let id = f.queued("Say hello", &brief, &[]);
    comment(&f, &f.human(), &id, "Also see (#threat-model).").unwrap();
    let pod_ctx = Ctx::new(
        Principal {
            kind: PrincipalKind::Intake,
            name: "i".into(),
        },
        now(),
    );
    comment(&f, &pod_ctx, &id, "Agents say #perf-notes").unwrap();
    let pod = accept_and_register(&f, &id);
    let text = claim(&f, &pod, 1).workflow.expect("named skills");
    let a = text.find("SKILL-BODY-A").expect("from the brief");
    let b = text.find("SKILL-BODY-B").expect("from a person's comment");
    assert!(a < b, "{text}");
    assert!(
        !text.contains("SKILL-BODY-C"),
        "an intake pod's text names nothing: {text}"
    );
    assert_eq!(
        yoi_engine::workflows::carry::hash_names("#a-b, x#c (#d) # e #9x #f-"),
        vec!["a-b", "d", "f"]
    );
}

#[test]
fn an_agent_cannot_activate_a_people_only_skill_but_a_workflow_requiring_it_brings_its_body() {
    let (f, id) = setup();
    write(
        &f,
        ".yoi/skills/people-only/SKILL.md",
        "---\nname: people-only\ndescription: Named by people.\ndisable-model-invocation: true\n---\n\nPEOPLE-ONLY-BODY\n",
    );
    write(
        &f,
        ".yoi/workflow/with-people-only.md",
        "---\ndescription: d\nrequires: [people-only]\n---\nWITH-BODY\n",
    );
    comment(&f, &f.human(), &id, "/with-people-only").unwrap();
    let pod = accept_and_register(&f, &id);
    let work = claim(&f, &pod, 1);
    let own = work.assignment.id.clone();
    assert!(work.workflow.unwrap().contains("PEOPLE-ONLY-BODY"));
    let e = yoi_engine::skills::activate_for_agent(
        &f.ws,
        &f.db,
        "people-only",
        "pod:agent/x".into(),
        &own,
        None,
        None,
        at(2),
    )
    .unwrap_err();
    assert_eq!(e.class(), ErrorClass::NotPermitted, "{e}");
    assert!(e.to_string().contains("disable-model-invocation"), "{e}");
}
