use super::*;
use crate::State;

const A: &str = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
const B: &str = "01BX5ZZKBKACTAV9WEVGEMMVRZ";

fn id(s: &str) -> TicketId {
    TicketId::parse(s).unwrap()
}

fn blocker(ticket: &str, reason_kind: &str, state: Option<State>) -> Blocker {
    Blocker {
        ticket: id(ticket),
        reason_kind: crate::relation::BlockerReason::parse(reason_kind).unwrap(),
        state,
    }
}

#[test]
fn blocked_by_dependency_names_each_blocker_and_its_state() {
    let d = RoutingDecision::BlockedByDependency {
        blockers: vec![
            blocker(A, "depends_on", Some(State::Inprogress)),
            blocker(B, "blocked_by", None),
        ],
    };
    assert_eq!(
        d.render(),
        format!(
            "Routing decision: blocked_by_dependency\n\
             Reason: 2 open dependencies must finish first.\n\
             Evidence checked:\n\
             - {A} via depends_on (state: inprogress)\n\
             - {B} via blocked_by (missing or unreadable)\n\
             Next action: wait; the ticket is re-evaluated when a blocker changes state.\n"
        )
    );
}

#[test]
fn return_to_planning_names_missing_sections() {
    let d = RoutingDecision::ReturnToPlanning {
        missing: vec![Section::Intent, Section::Validation],
        flow: vec![],
    };
    assert_eq!(
        d.render(),
        "Routing decision: return_to_planning\n\
         Reason: the brief is missing 2 required sections.\n\
         Evidence checked:\n\
         - missing section: Intent\n\
         - missing section: Validation\n\
         Next action: return the ticket to planning; complete the missing sections and mark it ready again.\n"
    );
}

#[test]
fn waiting_capacity_shows_the_count_and_the_limit() {
    let d = RoutingDecision::WaitingCapacity {
        in_progress: 2,
        max: 2,
    };
    assert_eq!(
        d.render(),
        "Routing decision: waiting_capacity\n\
         Reason: no implementation slot is free.\n\
         Evidence checked:\n\
         - tickets in progress: 2\n\
         - maximum in progress: 2\n\
         Next action: wait; the ticket is re-evaluated when a ticket in progress finishes.\n"
    );
}

#[test]
fn waiting_conflict_names_each_ticket_and_why() {
    let d = RoutingDecision::WaitingConflict {
        with: vec![
            (id(A), "conflicts_with".to_string()),
            (id(B), "write scope overlap on src/**".to_string()),
        ],
    };
    assert_eq!(
        d.render(),
        format!(
            "Routing decision: waiting_conflict\n\
             Reason: 2 tickets in flight conflict with this one.\n\
             Evidence checked:\n\
             - {A}: conflicts_with\n\
             - {B}: write scope overlap on src/**\n\
             Next action: wait; the ticket is re-evaluated when the conflicting work finishes.\n"
        )
    );
}

#[test]
fn implementation_ready_names_branch_and_base_commit() {
    let d = RoutingDecision::ImplementationReady {
        branch: "yoi/01ARZ3NDEK-add-scope".to_string(),
        base_commit: "0123abcd".to_string(),
    };
    assert_eq!(
        d.render(),
        "Routing decision: implementation_ready\n\
         Reason: dependencies are done, the brief is complete, a slot is free and nothing in flight conflicts.\n\
         Evidence checked:\n\
         - branch: yoi/01ARZ3NDEK-add-scope\n\
         - base commit: 0123abcd\n\
         Next action: accept: create the branch and worktree, freeze the IntentPacket, start the first assignment, then move the ticket to inprogress.\n"
    );
}

#[test]
fn acceptance_failed_keeps_a_multi_line_error_on_one_line() {
    let d = RoutingDecision::AcceptanceFailed {
        step: "create_worktree".to_string(),
        error: "path exists\r\nhint: remove it".to_string(),
        attempt: 2,
    };
    assert_eq!(
        d.render(),
        "Routing decision: acceptance_failed\n\
         Reason: acceptance step `create_worktree` failed on attempt 2.\n\
         Evidence checked:\n\
         - step: create_worktree\n\
         - attempt: 2\n\
         - error: path exists\\nhint: remove it\n\
         Next action: the ticket stays queued and acceptance is retried; three failures in a row open the circuit.\n"
    );
}

#[test]
fn circuit_open_counts_failures() {
    let d = RoutingDecision::CircuitOpen { failures: 3 };
    assert_eq!(
        d.render(),
        "Routing decision: circuit_open\n\
         Reason: 3 consecutive failures opened the circuit.\n\
         Evidence checked:\n\
         - consecutive failures: 3\n\
         Next action: no automatic dispatch; a human `retry` closes the circuit.\n"
    );
}

#[test]
fn empty_evidence_is_written_as_none() {
    let d = RoutingDecision::BlockedByDependency { blockers: vec![] };
    assert!(d
        .render()
        .contains("Evidence checked:\n- none\nNext action:"));
}

fn all_variants() -> Vec<RoutingDecision> {
    vec![
        RoutingDecision::BlockedByDependency {
            blockers: vec![blocker(A, "depends_on", Some(State::Ready))],
        },
        RoutingDecision::ReturnToPlanning {
            missing: vec![Section::Validation],
            flow: vec![],
        },
        RoutingDecision::WaitingCapacity {
            in_progress: 1,
            max: 1,
        },
        RoutingDecision::WaitingConflict {
            with: vec![(id(A), "do_not_parallelize".to_string())],
        },
        RoutingDecision::ImplementationReady {
            branch: "yoi/x".to_string(),
            base_commit: "abc".to_string(),
        },
        RoutingDecision::AcceptanceFailed {
            step: "s".to_string(),
            error: "e".to_string(),
            attempt: 1,
        },
        RoutingDecision::CircuitOpen { failures: 3 },
        RoutingDecision::Stopped {
            step: "s".to_string(),
            failures: 6,
        },
    ]
}

#[test]
fn parse_kind_reads_back_every_kind() {
    let variants = all_variants();
    let kinds: Vec<&str> = variants.iter().map(|d| d.kind()).collect();
    assert_eq!(kinds, RoutingDecision::KINDS);
    for d in variants {
        assert_eq!(parse_kind(&d.render()).as_deref(), Some(d.kind()));
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["kind"], d.kind());
    }
    assert_eq!(parse_kind("Routing decision: Not A Kind\n"), None);
    assert_eq!(
        parse_kind("Some comment\nRouting decision: circuit_open"),
        None
    );
    assert_eq!(parse_kind(""), None);
}

#[test]
fn the_data_block_reads_back_every_decision() {
    for d in all_variants() {
        let body = d.render_event();
        let read = read_decision(&body).unwrap();
        assert_eq!(read.kind, d.kind());
        assert_eq!(read.data.as_ref(), Some(&d));
        assert_eq!(prose(&body), d.render().trim_end());
        // The block survives the thread format: written, parsed, and read again.
        let event = crate::thread::Event::new(crate::thread::EventKind::Decision, &body);
        let parsed = crate::thread::parse_thread(&crate::thread::render_thread(&[event]));
        assert_eq!(read_decision(&parsed.events[0].body).unwrap().data, Some(d));
    }
}

#[test]
fn older_decisions_without_data_still_read() {
    let failed = RoutingDecision::AcceptanceFailed {
        step: "add_worktree".into(),
        error: "boom\nsecond line".into(),
        attempt: 2,
    };
    let read = read_decision(&failed.render()).unwrap();
    assert_eq!(read.kind, "acceptance_failed");
    assert_eq!(read.data, None);
    assert_eq!(read.step.as_deref(), Some("add_worktree"));
    assert_eq!(read_decision("a person's note\n"), None);
    // A data block that does not parse falls back to the prose.
    let broken = format!("{}\n{DATA_FENCE}\n{{not json\n```\n", failed.render());
    assert_eq!(
        read_decision(&broken).unwrap().step.as_deref(),
        Some("add_worktree")
    );
}

#[test]
fn reasons_count_in_the_singular_for_one() {
    let one_blocker = RoutingDecision::BlockedByDependency {
        blockers: vec![blocker(A, "depends_on", Some(State::Queued))],
    };
    assert!(one_blocker
        .render()
        .contains("Reason: 1 open dependency must finish first.\n"));
    let one_missing = RoutingDecision::ReturnToPlanning {
        missing: vec![crate::brief::Section::Validation],
        flow: vec![],
    };
    assert!(one_missing
        .render()
        .contains("Reason: the brief is missing 1 required section.\n"));
    let one_conflict = RoutingDecision::WaitingConflict {
        with: vec![(id(A), "conflicts_with".to_string())],
    };
    assert!(one_conflict
        .render()
        .contains("Reason: 1 ticket in flight conflicts with this one.\n"));
}

#[test]
fn a_flow_that_cannot_run_returns_to_planning_with_each_problem() {
    let d = RoutingDecision::ReturnToPlanning {
        missing: vec![],
        flow: vec!["flow `fast` is not defined\nin .yoi/flows".into()],
    };
    let text = d.render();
    assert!(
        text.contains("Reason: the flow the ticket names cannot run."),
        "{text}"
    );
    assert!(
        text.contains("- flow: flow `fast` is not defined\\nin .yoi/flows"),
        "{text}"
    );
    assert!(text.contains("`yoi flow lint`"), "{text}");
    let back = read_decision(&d.render_event()).unwrap();
    assert_eq!(back.data, Some(d));
}

#[test]
fn facts_are_the_evidence_lines_with_the_ticket_they_name_taken_out() {
    let blocked = RoutingDecision::BlockedByDependency {
        blockers: vec![
            blocker(A, "depends_on", Some(State::Queued)),
            blocker(B, "blocked_by", None),
        ],
    };
    let facts = blocked.facts();
    assert_eq!(facts.len(), blocked.evidence().len());
    assert_eq!(facts[0].ticket, Some(id(A)));
    assert_eq!(facts[0].text, "via depends_on (state: queued)");
    assert_eq!(facts[1].ticket, Some(id(B)));
    assert!(facts[1].text.starts_with("via blocked_by"), "{facts:?}");
    let conflict = RoutingDecision::WaitingConflict {
        with: vec![(id(A), "write scope overlap on src/**".into())],
    };
    assert_eq!(
        conflict.facts(),
        vec![Fact {
            ticket: Some(id(A)),
            text: "write scope overlap on src/**".into()
        }]
    );
    let capacity = RoutingDecision::WaitingCapacity {
        in_progress: 4,
        max: 4,
    };
    let facts = capacity.facts();
    assert!(facts.iter().all(|f| f.ticket.is_none()));
    assert_eq!(
        facts.iter().map(|f| f.text.clone()).collect::<Vec<_>>(),
        capacity.evidence()
    );
}
