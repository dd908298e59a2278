//! Workflow offers on a generated history (docs/workflows.md, "Offers"). The history is drawn
//! from a seed — tickets, people's comments (most of them noise), invocations — through the
//! same operations people use, into a real repository and its SQLite index; the detector then
//! reads it back. A pattern repeated on N tickets is exactly one offer, looking again offers
//! nothing, accepting writes the file with an audit entry, rejecting keeps the reason, and no
//! offer writes a file on its own.

mod common;

use std::collections::BTreeSet;

use common::{now, Fixture, BRIEF};
use yoi_core::report::{Report, ReportOutcome};
use yoi_core::{Principal, PrincipalKind, TicketId, Timestamp};
use yoi_engine::assignments::{self as asg, LeaseConfig, PodCaller};
use yoi_engine::skill_format::offer::{OfferKind, OfferStatus};
use yoi_engine::workflows::detect::normalize;
use yoi_engine::workflows::invoke;
use yoi_engine::workflows::offers;
use yoi_store::ops::CommentRequest;
use yoi_store::Ctx;
use yoi_testkit::git;

/// SplitMix64: a seeded, dependency-free generator; every choice comes from it.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: [&str; 12] = [
    "tidy", "the", "parser", "cache", "login", "retry", "docs", "index", "flaky", "ticket",
    "table", "speed",
];

/// A one-off comment no other ticket has (the seed and the ticket make it unique).
fn noise(rng: &mut Rng, n: usize) -> String {
    let words: Vec<&str> = (0..6).map(|_| WORDS[rng.below(12) as usize]).collect();
    format!("Note {n}: {} please.", words.join(" "))
}

fn person(name: &str) -> Ctx {
    Ctx::new(Principal::human(name), now())
}

fn comment(f: &Fixture, ctx: &Ctx, id: &TicketId, body: &str) {
    invoke::comment(
        &f.ws,
        ctx,
        id.as_str(),
        &CommentRequest {
            kind: "comment".into(),
            body: body.into(),
        },
    )
    .unwrap();
}

fn write(f: &Fixture, rel: &str, text: &str) {
    let path = f.repo.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn at(ms: i64) -> Timestamp {
    Timestamp::from_unix_millis(now().unix_millis() + ms)
}

/// Every file under `.yoi/workflow` and `.yoi/flows`, with its content.
fn procedure_files(f: &Fixture) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dir in [".yoi/workflow", ".yoi/flows"] {
        let Ok(entries) = std::fs::read_dir(f.repo.join(dir)) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            out.push((
                format!("{dir}/{}", e.file_name().to_string_lossy()),
                std::fs::read_to_string(e.path()).unwrap(),
            ));
        }
    }
    out.sort();
    out
}

const REPEATED: &str = "Run the OWASP checklist against the diff before asking for review.";

/// `tickets` tickets; `repeat_on` of them (drawn from the seed) get `REPEATED` from one of
/// three people, in a comment between noise comments; the others only noise.
fn generate(f: &Fixture, seed: u64, tickets: usize, repeat_on: usize) -> Vec<TicketId> {
    let mut rng = Rng(seed);
    let people = [person("alice"), person("bob"), person("carol")];
    let ids: Vec<TicketId> = (0..tickets)
        .map(|n| f.queued(&format!("Generated ticket {n}"), BRIEF, &[]))
        .collect();
    let mut chosen = BTreeSet::new();
    while chosen.len() < repeat_on {
        chosen.insert(rng.below(tickets as u64) as usize);
    }
    let mut n = 0;
    for (i, id) in ids.iter().enumerate() {
        for _ in 0..rng.below(3) {
            n += 1;
            let who = &people[rng.below(3) as usize];
            comment(f, who, id, &noise(&mut rng, n));
        }
        if chosen.contains(&i) {
            let who = &people[rng.below(3) as usize];
            // The same instruction, written a little differently each time.
            let text = match rng.below(3) {
                0 => REPEATED.to_string(),
                1 => REPEATED
                    .replace("Run the", "Run  the")
                    .trim_end_matches('.')
                    .into(),
                _ => format!("{}\n", REPEATED.replace("OWASP", "`OWASP`")),
            };
            comment(f, who, id, &text);
        }
        for _ in 0..rng.below(2) {
            n += 1;
            let who = &people[rng.below(3) as usize];
            comment(f, who, id, &noise(&mut rng, n));
        }
    }
    ids
}

#[test]
fn an_instruction_repeated_on_n_tickets_is_offered_once_and_written_only_when_accepted() {
    // Three seeds; the assertions that depend on the draw name theirs.
    for seed in [7u64, 42, 1234] {
        let f = Fixture::new();
        generate(&f, seed, 7, 3);
        let before = procedure_files(&f);

        let first = offers::detect(&f.ws, &f.db, now()).unwrap();
        assert_eq!(first.offered.len(), 1, "seed {seed}: {:#?}", first.offered);
        let o = &first.offered[0];
        assert_eq!(o.kind, OfferKind::NewWorkflow);
        assert_eq!(o.tickets.len(), 3, "it cites the tickets it came from");
        // As one of the people first wrote it (the variants differ in spaces and marks).
        assert!(
            normalize(&o.content).contains(&normalize(REPEATED)),
            "{}",
            o.content
        );
        for t in &o.tickets {
            assert!(o.content.contains(t.as_str()), "the draft cites {t}");
        }
        assert!(
            o.diff.starts_with("--- /dev/null\n+++ b/.yoi/workflow/"),
            "{}",
            o.diff
        );
        // Offering writes no workflow file.
        assert_eq!(procedure_files(&f), before);

        // It is in the inbox, with the diff.
        let inbox = yoi_engine::inbox::inbox(&f.ws, &f.db).unwrap();
        let entry = inbox
            .entries
            .iter()
            .find(|e| e.reason == yoi_core::inbox::InboxReason::WorkflowOffer)
            .expect("an inbox entry");
        assert_eq!(entry.key, format!("workflow_offer:{}", o.id));
        assert!(entry.detail.contains("```diff\n--- /dev/null"));

        // Looking again offers nothing new.
        let again = offers::detect(&f.ws, &f.db, now()).unwrap();
        assert!(
            again.offered.is_empty(),
            "seed {seed}: {:#?}",
            again.offered
        );
        assert_eq!(offers::list(&f.ws).unwrap().count, 1);

        // Nobody but a person decides: the service's, the orchestrator's or a pod's name is
        // refused and nothing is written.
        for who in ["yoi", "yoi-orchestrator", "pod:coder/c1", "intake:i", ""] {
            let err = offers::accept(&f.ws, &o.id, who, now()).unwrap_err();
            assert_eq!(
                err.class(),
                yoi_core::ErrorClass::NotPermitted,
                "{who}: {err}"
            );
            assert!(offers::reject(&f.ws, &o.id, who, "no", now()).is_err());
        }
        assert!(!f.repo.join(&o.target).exists());

        // Accepting writes the file, audited, and the workflow is usable.
        let done = offers::accept(&f.ws, &o.id, "alice", now()).unwrap();
        assert_eq!(done.status, OfferStatus::Accepted);
        let written = std::fs::read_to_string(f.repo.join(&o.target)).unwrap();
        assert_eq!(written, o.content);
        let wf = yoi_engine::workflows::lookup(&f.ws, &o.name).unwrap();
        assert!(wf.user_invocable && !wf.auto_invoke);
        let audit = std::fs::read_to_string(
            f.repo
                .join(".yoi/workflow-offers")
                .join(&o.id)
                .join("audit.md"),
        )
        .unwrap();
        assert!(
            audit.contains("event: workflow_offer_accepted") && audit.contains("author: alice")
        );
        assert!(yoi_engine::inbox::inbox(&f.ws, &f.db)
            .unwrap()
            .entries
            .iter()
            .all(|e| e.reason != yoi_core::inbox::InboxReason::WorkflowOffer));
        // The instruction is a workflow now: nothing more is offered for it.
        assert!(offers::detect(&f.ws, &f.db, now())
            .unwrap()
            .offered
            .is_empty());
    }
}

#[test]
fn below_the_threshold_nothing_is_offered_and_pods_comments_do_not_count() {
    let f = Fixture::new();
    let ids = generate(&f, 99, 6, 2);
    // A pod saying the same thing on a third ticket is not a person's instruction.
    let pod = Ctx::new(
        Principal {
            kind: PrincipalKind::Intake,
            name: "intake/i".into(),
        },
        now(),
    );
    let third = ids
        .iter()
        .find(|id| {
            !f.ws
                .read_thread(id)
                .unwrap()
                .events
                .iter()
                .any(|e| e.body.contains("OWASP"))
        })
        .unwrap();
    comment(&f, &pod, third, REPEATED);
    assert!(offers::detect(&f.ws, &f.db, now())
        .unwrap()
        .offered
        .is_empty());
    // A person's brief saying it is a third ticket.
    f.queued(
        "Third",
        &format!("{BRIEF}\n## Notes\n\n- {REPEATED}\n"),
        &[],
    );
    let got = offers::detect(&f.ws, &f.db, now()).unwrap();
    assert_eq!(got.offered.len(), 1, "{:#?}", got.offered);
    assert!(got.offered[0]
        .why
        .contains("2 in people's comments, 1 in briefs"));
}

#[test]
fn often_invoked_workflows_are_offered_auto_invoke_and_the_same_order_a_flow() {
    let f = Fixture::new();
    write(
        &f,
        ".yoi/workflow/precheck.md",
        "---\ndescription: Check the change.\n---\n\nPRECHECK body.\n",
    );
    write(
        &f,
        ".yoi/workflow/perf-review.md",
        "---\ndescription: Look at speed.\nrole: reviewer\n---\n\nPERF body.\n",
    );
    let mut rng = Rng(5);
    let people = [person("alice"), person("bob")];
    // Five invocations of /precheck on four tickets (auto_invoke: 5 on 3), and /precheck then
    // /perf-review by hand on three of them (a flow).
    let ids: Vec<TicketId> = (0..4)
        .map(|n| f.queued(&format!("T{n}"), BRIEF, &[]))
        .collect();
    for (i, id) in ids.iter().enumerate() {
        let who = &people[rng.below(2) as usize];
        comment(&f, who, id, "/precheck");
        if i < 3 {
            comment(&f, who, id, "/perf-review mind the cache");
        }
    }
    let before = procedure_files(&f);
    let got = offers::detect(&f.ws, &f.db, now()).unwrap();
    // Four invocations: not yet.
    assert!(
        got.offered.iter().all(|o| o.kind != OfferKind::AutoInvoke),
        "{:#?}",
        got.offered
    );
    let flow = got
        .offered
        .iter()
        .find(|o| o.kind == OfferKind::NewFlow)
        .expect("a flow offer");
    assert_eq!(flow.target, ".yoi/flows/precheck-perf-review.flow.yaml");
    assert!(flow.content.contains("PRECHECK body.") && flow.content.contains("PERF body."));
    comment(&f, &people[0], &ids[3], "/precheck again");
    let got = offers::detect(&f.ws, &f.db, now()).unwrap();
    assert_eq!(got.offered.len(), 1, "{:#?}", got.offered);
    let auto = &got.offered[0];
    assert_eq!(auto.kind, OfferKind::AutoInvoke);
    assert!(auto.diff.contains("+auto_invoke: true"), "{}", auto.diff);
    assert_eq!(procedure_files(&f), before, "offers write nothing");

    // A person edits the file after the offer: accepting would overwrite their edit, so it is
    // refused, and the file stays theirs.
    let original = std::fs::read_to_string(f.repo.join(&auto.target)).unwrap();
    write(&f, &auto.target, &original.replace("PRECHECK", "EDITED"));
    let err = offers::accept(&f.ws, &auto.id, "alice", now()).unwrap_err();
    assert_eq!(err.code(), "conflict", "{err}");
    assert_eq!(err.class(), yoi_core::ErrorClass::Conflict);
    assert!(std::fs::read_to_string(f.repo.join(&auto.target))
        .unwrap()
        .contains("EDITED"));
    let rejected = offers::reject(&f.ws, &auto.id, "alice", "I edited it", now()).unwrap();
    assert_eq!(
        rejected.decision.unwrap().reason.as_deref(),
        Some("I edited it")
    );
    // Rejected is final for that pattern.
    assert!(offers::detect(&f.ws, &f.db, now())
        .unwrap()
        .offered
        .iter()
        .all(|o| o.kind != OfferKind::AutoInvoke));

    // The flow is accepted and checks out as a flow.
    offers::accept(&f.ws, &flow.id, "bob", now()).unwrap();
    let listed = yoi_engine::flows::lookup(&f.ws, "precheck-perf-review");
    assert!(listed.is_ok(), "{:?}", listed.err());
}

fn coder() -> PodCaller {
    PodCaller {
        token_id: "tok-coder".into(),
        role: yoi_core::Role::Coder,
    }
}

#[test]
fn a_failed_run_fixed_by_a_persons_next_comment_is_offered_as_an_improvement() {
    let f = Fixture::new();
    write(
        &f,
        ".yoi/workflow/precheck.md",
        "---\ndescription: Check the change.\n---\n\nPRECHECK body.\n",
    );
    let id = f.queued("Fix it", BRIEF, &[]);
    let alice = person("alice");
    comment(&f, &alice, &id, "/precheck");
    git(&f.repo, &["add", "-A"]);
    git(&f.repo, &["commit", "-q", "-m", "tickets and workflows"]);
    f.accept(&id);
    let lease = LeaseConfig {
        lease_ms: 60_000,
        heartbeat_ms: 3_000,
    };
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
    let first = asg::claim(&f.ws, &f.db, &coder(), &pod, lease, at(1))
        .unwrap()
        .unwrap();
    assert!(first.workflow.is_some());
    let a = &first.assignment;
    asg::fail(
        &f.ws,
        &f.db,
        &coder(),
        &pod,
        &a.id,
        a.fence,
        "the checklist was not found",
        true,
        Some(&Report {
            outcome: ReportOutcome::Failed,
            ..Report::default()
        }),
        at(2),
    )
    .unwrap();
    let fix = "The checklist lives in docs/security/owasp.md, read it from there.";
    comment(&f, &alice, &id, fix);
    // Not yet: the fix has not been seen to work.
    assert!(offers::detect(&f.ws, &f.db, now())
        .unwrap()
        .offered
        .is_empty());
    let second = asg::claim(&f.ws, &f.db, &coder(), &pod, lease, at(3))
        .unwrap()
        .unwrap();
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
        at(4),
    )
    .unwrap();
    let got = offers::detect(&f.ws, &f.db, now()).unwrap();
    assert_eq!(got.offered.len(), 1, "{:#?}", got.offered);
    let o = &got.offered[0];
    assert_eq!(o.kind, OfferKind::ImproveWorkflow);
    assert!(o.diff.contains(&format!("+{fix}")), "{}", o.diff);
    assert_eq!(o.tickets, vec![id.to_string()]);
    offers::accept(&f.ws, &o.id, "alice", now()).unwrap();
    let wf = yoi_engine::workflows::lookup(&f.ws, "precheck").unwrap();
    assert!(wf.body.contains("PRECHECK body.") && wf.body.contains(fix));
    assert!(offers::detect(&f.ws, &f.db, now())
        .unwrap()
        .offered
        .is_empty());
}
