//! The router's step functions on real git repositories: decisions in order (blockers, brief,
//! capacity, conflicts), decisions written once per situation, and acceptance that is all or
//! nothing, with a failure injected at every step.

use yoi_core::decision::{parse_kind, RoutingDecision};
use yoi_core::packet::FrozenPacket;
use yoi_core::plan::PlanKind;
use yoi_core::thread::EventKind;
use yoi_core::State;
use yoi_db::{Assignment, AssignmentStatus};
use yoi_engine::routing::{self as router, AcceptError, FailAt};
use yoi_store::ops::{self, CreateRequest, EditRequest, PlanRequest, TransitionRequest};
use yoi_testkit::git;

mod common;

use common::{now, Fixture, BRIEF};

#[test]
fn only_queued_tickets_are_routed() {
    let f = Fixture::new();
    let out = ops::create(
        &f.ws,
        &f.human(),
        &CreateRequest {
            title: "draft".into(),
            body: BRIEF.into(),
            depends_on: vec![],
        },
    )
    .unwrap();
    assert_eq!(router::decide(&f.ws, &out.ticket, 2).unwrap(), None);
}

#[test]
fn blocked_by_an_open_dependency_names_it_and_is_written_once() {
    let f = Fixture::new();
    let dep = f.queued("first", BRIEF, &[]);
    let id = f.queued("second", BRIEF, &[&dep]);
    let d = router::decide(&f.ws, &id, 2).unwrap().unwrap();
    let RoutingDecision::BlockedByDependency { blockers } = &d else {
        panic!("expected blocked, got {d:?}");
    };
    assert_eq!(blockers.len(), 1);
    assert_eq!(blockers[0].ticket, dep);
    assert_eq!(blockers[0].state, Some(State::Queued));
    assert!(router::record(&f.ws, Some(&f.db), &id, &d, now()).unwrap());
    let again = router::decide(&f.ws, &id, 2).unwrap().unwrap();
    assert!(!router::record(&f.ws, Some(&f.db), &id, &again, now()).unwrap());
    let decisions = f.decisions(&id);
    assert_eq!(decisions.len(), 1);
    assert!(decisions[0].contains(&format!("{dep} via depends_on (state: queued)")));
    assert_eq!(
        parse_kind(&decisions[0]).as_deref(),
        Some("blocked_by_dependency")
    );
    assert_eq!(f.state(&id), State::Queued);
}

#[test]
fn an_incomplete_brief_returns_the_ticket_to_planning_naming_the_sections() {
    let f = Fixture::new();
    let id = f.queued("thin", BRIEF, &[]);
    ops::edit(
        &f.ws,
        &f.human(),
        id.as_str(),
        &EditRequest {
            title: None,
            body: Some("## Intent\nMake it work.\n".into()),
        },
    )
    .unwrap();
    let d = router::decide(&f.ws, &id, 2).unwrap().unwrap();
    assert_eq!(d.kind(), "return_to_planning");
    assert!(router::record(&f.ws, Some(&f.db), &id, &d, now()).unwrap());
    assert_eq!(f.state(&id), State::Planning);
    let decisions = f.decisions(&id);
    assert_eq!(decisions.len(), 1);
    assert!(decisions[0].contains("missing section: Acceptance criteria"));
    assert!(decisions[0].contains("missing section: Validation"));
    let thread = f.ws.read_thread(&id).unwrap();
    let moved = thread
        .events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::StateChanged)
        .unwrap();
    assert_eq!(moved.get("to"), Some("planning"));
    let reason = moved.get("reason").unwrap();
    assert!(
        reason.contains("Acceptance criteria") && reason.contains("Validation"),
        "{reason}"
    );
    assert_eq!(router::decide(&f.ws, &id, 2).unwrap(), None);
}

#[test]
fn a_full_set_of_slots_waits_for_capacity() {
    let f = Fixture::new();
    let running = f.queued("running", BRIEF, &[]);
    f.accept(&running);
    let id = f.queued("waiting", BRIEF, &[]);
    let d = router::decide(&f.ws, &id, 1).unwrap().unwrap();
    assert_eq!(
        d,
        RoutingDecision::WaitingCapacity {
            in_progress: 1,
            max: 1
        }
    );
    assert!(router::record(&f.ws, Some(&f.db), &id, &d, now()).unwrap());
    assert!(!router::record(&f.ws, Some(&f.db), &id, &d, now()).unwrap());
    assert_eq!(f.decisions(&id).len(), 1);
    assert_eq!(
        router::decide(&f.ws, &id, 2).unwrap().unwrap().kind(),
        "implementation_ready"
    );
}

#[test]
fn a_conflicts_with_plan_record_waits_for_the_work_in_progress() {
    let f = Fixture::new();
    let running = f.queued("running", BRIEF, &[]);
    f.accept(&running);
    let id = f.queued("waiting", BRIEF, &[]);
    ops::add_plan_record(
        &f.ws,
        &f.human(),
        id.as_str(),
        &PlanRequest {
            kind: PlanKind::ConflictsWith,
            related: Some(running.to_string()),
            note: Some("same module".into()),
            accepted_plan: None,
        },
    )
    .unwrap();
    let d = router::decide(&f.ws, &id, 5).unwrap().unwrap();
    assert_eq!(
        d,
        RoutingDecision::WaitingConflict {
            with: vec![(running, "conflicts_with".into())]
        }
    );
}

#[test]
fn overlapping_write_scopes_wait_for_the_work_in_progress() {
    let f = Fixture::new();
    let running = f.queued(
        "running",
        &format!("{BRIEF}\n## Write scope\n- `src/**`\n"),
        &[],
    );
    f.accept(&running);
    let id = f.queued(
        "waiting",
        &format!("{BRIEF}\n## Write scope\n- `src/lib.rs`\n"),
        &[],
    );
    let d = router::decide(&f.ws, &id, 5).unwrap().unwrap();
    let RoutingDecision::WaitingConflict { with } = &d else {
        panic!("expected a conflict, got {d:?}");
    };
    assert_eq!(with.len(), 1);
    assert_eq!(with[0].0, running);
    assert!(
        with[0].1.starts_with("write scope overlap"),
        "{}",
        with[0].1
    );
}

#[test]
fn accepting_a_ready_ticket_makes_branch_worktree_and_frozen_packet() {
    let f = Fixture::new();
    let id = f.queued("Add the Router!", BRIEF, &[]);
    let d = router::decide(&f.ws, &id, 2).unwrap().unwrap();
    let branch = format!("yoi/{id}-add-the-router");
    assert_eq!(
        d,
        RoutingDecision::ImplementationReady {
            branch: branch.clone(),
            base_commit: f.base.clone()
        }
    );
    let accepted = router::accept_ticket(&f.ws, &f.db, &id, &d, &f.worktree_root(), now()).unwrap();
    assert!(accepted.branch_created);
    assert!(accepted.assignment.starts_with("asg-"));
    assert_eq!(f.state(&id), State::Inprogress);
    let assignments = f.assignments(&id);
    assert_eq!(assignments.len(), 1);
    let a = &assignments[0];
    assert_eq!(
        (a.id.as_str(), a.step.as_str(), a.role.as_str(), a.status),
        (
            accepted.assignment.as_str(),
            "implement",
            "coder",
            AssignmentStatus::Pending
        )
    );

    let wt = f.worktree_root().join(format!("{id}-add-the-router"));
    assert_eq!(accepted.worktree, wt);
    let list = git(&f.repo, &["worktree", "list", "--porcelain"]);
    assert!(
        list.contains(&format!("worktree {}", wt.display())),
        "{list}"
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(git(&f.repo, &["rev-parse", &branch]).trim(), f.base);
    assert_eq!(git(&wt, &["rev-parse", "HEAD"]).trim(), f.base);

    let text = std::fs::read_to_string(f.ws.path_of(&id, "artifacts/intent-packet.json")).unwrap();
    let frozen: FrozenPacket = serde_json::from_str(&text).unwrap();
    assert!(frozen.verify());
    assert_eq!(frozen.content_hash.len(), 64);
    assert_eq!(frozen.content_hash, accepted.packet_hash);
    assert_eq!(frozen.packet.intent, "Make it work.");

    let decisions = f.decisions(&id);
    assert_eq!(decisions.len(), 1);
    assert_eq!(
        parse_kind(&decisions[0]).as_deref(),
        Some("implementation_ready")
    );
    // The decision hands out the frozen brief, rendered, with its hash.
    assert!(
        decisions[0].contains(&format!(
            "IntentPacket (frozen to artifacts/intent-packet.json, sha256 {}):",
            frozen.content_hash
        )),
        "{}",
        decisions[0]
    );
    assert!(
        decisions[0].contains("### Intent\n\nMake it work.\n"),
        "{}",
        decisions[0]
    );
    assert!(
        decisions[0].contains("### Validation\n\n- `cargo test`"),
        "{}",
        decisions[0]
    );
    let plan = f.ws.read_plan(&id).unwrap();
    assert!(plan.iter().any(|r| r.kind == PlanKind::AcceptedPlan));
}

#[test]
fn a_failure_at_any_acceptance_step_undoes_everything_and_keeps_the_ticket_queued() {
    for step in FailAt::ALL {
        let f = Fixture::new();
        let id = f.queued("fragile", BRIEF, &[]);
        let d = router::decide(&f.ws, &id, 2).unwrap().unwrap();
        for attempt in 1..=2 {
            let err = router::accept_ticket_failing_at(
                &f.ws,
                &f.db,
                &id,
                &d,
                &f.worktree_root(),
                now(),
                step,
            )
            .unwrap_err();
            let AcceptError::Failed {
                step: failed,
                cleanup,
                ..
            } = &err
            else {
                panic!("{step:?}: expected a failed step, got {err}");
            };
            assert_eq!(*failed, step.as_str());
            assert!(cleanup.is_empty(), "{step:?}: {cleanup:?}");

            let list = git(&f.repo, &["worktree", "list", "--porcelain"]);
            assert_eq!(list.matches("worktree ").count(), 1, "{step:?}: {list}");
            assert!(!f.worktree_root().join(format!("{id}-fragile")).exists());
            assert_eq!(git(&f.repo, &["branch", "--list", "yoi/*"]), "", "{step:?}");
            assert!(!f.ws.path_of(&id, "artifacts/intent-packet.json").exists());
            assert_eq!(f.assignments(&id), Vec::new(), "{step:?}");
            assert_eq!(f.state(&id), State::Queued, "{step:?}");

            let decisions = f.decisions(&id);
            assert_eq!(decisions.len(), attempt, "{step:?}");
            let last = decisions.last().unwrap();
            assert_eq!(parse_kind(last).as_deref(), Some("acceptance_failed"));
            assert!(last.contains(&format!("step: {}", step.as_str())), "{last}");
            assert!(last.contains(&format!("attempt: {attempt}")), "{last}");
        }
        // After the failures, a clean acceptance still goes through.
        router::accept_ticket(&f.ws, &f.db, &id, &d, &f.worktree_root(), now()).unwrap();
        assert_eq!(f.state(&id), State::Inprogress);
        assert_eq!(f.assignments(&id).len(), 1);
    }
}

#[test]
fn leftovers_of_a_killed_acceptance_are_cleared_and_anything_else_is_left_alone() {
    let f = Fixture::new();
    let id = f.queued("Interrupted", BRIEF, &[]);
    let d = router::decide(&f.ws, &id, 2).unwrap().unwrap();
    let RoutingDecision::ImplementationReady { branch, .. } = &d else {
        panic!("{d:?}")
    };
    // What an acceptance killed before the store's `accept` leaves: branch, clean worktree,
    // a pending assignment; the ticket still queued.
    let wt = f.worktree_root().join(format!("{id}-interrupted"));
    yoi_git::create_branch(&f.repo, branch, &f.base).unwrap();
    std::fs::create_dir_all(f.worktree_root()).unwrap();
    yoi_git::add_worktree(&f.repo, &wt, branch).unwrap();
    f.db.create_assignment(&Assignment {
        id: "asg-left-behind".into(),
        ticket: id.to_string(),
        step: "implement".into(),
        role: "coder".into(),
        attempt: 1,
        fence: 1,
        status: AssignmentStatus::Pending,
        lease_until_ms: None,
        created_ms: 1,
        updated_ms: 1,
        ..Default::default()
    })
    .unwrap();

    let accepted = router::accept_ticket(&f.ws, &f.db, &id, &d, &f.worktree_root(), now()).unwrap();
    assert!(
        !accepted.branch_created,
        "the branch at the base commit is reused"
    );
    assert_eq!(accepted.worktree, wt);
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    let assignments = f.assignments(&id);
    assert_eq!(assignments.len(), 1);
    assert_eq!(assignments[0].id, accepted.assignment);

    // A worktree at the path holding someone's work is not a leftover: the step fails and the
    // work stays.
    let other = f.queued("Interrupted too", BRIEF, &[]);
    let d = router::decide(&f.ws, &other, 5).unwrap().unwrap();
    let RoutingDecision::ImplementationReady { branch, .. } = &d else {
        panic!("{d:?}")
    };
    let wt = f.worktree_root().join(format!("{other}-interrupted-too"));
    yoi_git::create_branch(&f.repo, branch, &f.base).unwrap();
    yoi_git::add_worktree(&f.repo, &wt, branch).unwrap();
    std::fs::write(wt.join("notes.txt"), "precious\n").unwrap();
    let err =
        router::accept_ticket(&f.ws, &f.db, &other, &d, &f.worktree_root(), now()).unwrap_err();
    assert!(
        matches!(&err, AcceptError::Failed { step, .. } if *step == "add_worktree"),
        "{err}"
    );
    assert!(err.to_string().contains("left alone"), "{err}");
    assert_eq!(
        std::fs::read_to_string(wt.join("notes.txt")).unwrap(),
        "precious\n"
    );
    assert_eq!(f.state(&other), State::Queued);
}

#[test]
fn a_ticket_accepted_again_never_gets_a_folder_an_earlier_acceptance_was_given() {
    let f = Fixture::new();
    let id = f.queued("Again", BRIEF, &[]);
    let first = f.accept(&id);
    assert_eq!(
        first.worktree,
        f.worktree_root().join(format!("{id}-again"))
    );
    let requeue = || {
        let ctx = f.human();
        let back = TransitionRequest {
            reason: Some("rethink".into()),
            ..TransitionRequest::default()
        };
        ops::return_to_planning(&f.ws, &ctx, id.as_str(), &back).unwrap();
        let req = TransitionRequest::default();
        ops::mark_ready(&f.ws, &ctx, id.as_str(), &req).unwrap();
        ops::queue(&f.ws, &ctx, id.as_str(), &req).unwrap();
    };

    // Nothing was done in the first folder: it goes, and the new acceptance works next to it,
    // where no pod of the first acceptance (its claim cancelled, maybe still running) can be.
    requeue();
    let second = f.accept(&id);
    assert_eq!(
        second.worktree,
        f.worktree_root().join(format!("{id}-again-2"))
    );
    assert!(!first.worktree.exists());
    assert_eq!(git(&second.worktree, &["status", "--porcelain"]), "");

    // A stale pod commits in the second folder after the ticket went back: the folder keeps
    // its commit, and the third acceptance works in a third folder at the base commit.
    std::fs::write(second.worktree.join("stale.txt"), "late\n").unwrap();
    git(&second.worktree, &["add", "stale.txt"]);
    git(&second.worktree, &["commit", "-qm", "stale work"]);
    let stale = git(&second.worktree, &["rev-parse", "HEAD"]);
    requeue();
    let third = f.accept(&id);
    assert_eq!(
        third.worktree,
        f.worktree_root().join(format!("{id}-again-3"))
    );
    assert_eq!(git(&second.worktree, &["rev-parse", "HEAD"]), stale);
    assert_eq!(
        git(&third.worktree, &["rev-parse", "HEAD"]).trim(),
        third.base_commit
    );
    assert_eq!(f.state(&id), State::Inprogress);
    let rows = f.assignments(&id);
    let live: Vec<_> = rows
        .iter()
        .filter(|a| a.id == third.assignment)
        .map(|a| a.workdir.clone())
        .collect();
    assert_eq!(live, vec![Some(third.worktree.display().to_string())]);
}

/// A person takes `id` back to planning, maybe retitles it, and queues it again.
fn requeue(f: &Fixture, id: &yoi_core::TicketId, title: Option<&str>) {
    let ctx = f.human();
    let back = TransitionRequest {
        reason: Some("rethink".into()),
        ..TransitionRequest::default()
    };
    ops::return_to_planning(&f.ws, &ctx, id.as_str(), &back).unwrap();
    if let Some(title) = title {
        let edit = EditRequest {
            title: Some(title.into()),
            body: None,
        };
        ops::edit(&f.ws, &ctx, id.as_str(), &edit).unwrap();
    }
    let req = TransitionRequest::default();
    ops::mark_ready(&f.ws, &ctx, id.as_str(), &req).unwrap();
    ops::queue(&f.ws, &ctx, id.as_str(), &req).unwrap();
}

#[test]
fn a_ticket_accepted_again_goes_on_on_its_branch_and_an_untouched_one_moves_to_the_new_base() {
    let f = Fixture::new();
    let id = f.queued("Again", BRIEF, &[]);
    let first = f.accept(&id);

    // Work lands on the branch (as the server records a coder's result), then the ticket goes
    // back, is retitled and queued again: the new acceptance is on the same branch, from its
    // head, so nothing of the first attempt (nor of its pull request) is left behind.
    std::fs::write(first.worktree.join("work.txt"), "work\n").unwrap();
    git(&first.worktree, &["add", "work.txt"]);
    git(&first.worktree, &["commit", "-qm", "work"]);
    let work = git(&first.worktree, &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    git(
        &f.repo,
        &["update-ref", &format!("refs/heads/{}", first.branch), &work],
    );
    requeue(&f, &id, Some("Again, better"));
    let d = router::decide(&f.ws, &id, 10).unwrap().unwrap();
    assert_eq!(
        d,
        RoutingDecision::ImplementationReady {
            branch: first.branch.clone(),
            base_commit: work.clone(),
        }
    );
    let second = f.accept(&id);
    assert_eq!(
        (second.branch.as_str(), second.branch_created),
        (first.branch.as_str(), false)
    );
    assert_eq!(git(&second.worktree, &["rev-parse", "HEAD"]).trim(), work);
    let rows = f.assignments(&id);
    let live = rows.iter().find(|a| a.id == second.assignment).unwrap();
    assert_eq!(live.head_commit.as_deref(), Some(work.as_str()));

    // A ticket whose branch holds nothing of its own, while its target moved on: accepted again
    // from the new target, its branch moved there (it held nothing to keep).
    let other = f.queued("Untouched", BRIEF, &[]);
    let made = f.accept(&other);
    std::fs::write(f.repo.join("README.md"), "moved on\n").unwrap();
    git(&f.repo, &["commit", "-qam", "the target moves"]);
    let target = git(&f.repo, &["rev-parse", "HEAD"]).trim().to_string();
    requeue(&f, &other, None);
    let again = f.accept(&other);
    assert_eq!(again.branch, made.branch);
    assert_eq!(again.base_commit, target);
    assert_eq!(
        git(
            &f.repo,
            &["rev-parse", &format!("refs/heads/{}", made.branch)]
        )
        .trim(),
        target
    );
    assert_eq!(f.state(&other), State::Inprogress);
}
