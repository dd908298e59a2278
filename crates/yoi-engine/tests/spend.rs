//! Spending within limits (docs/budgets.md) on a real repository and database, with a fake
//! clock: a rate limit pauses its provider and is never counted towards the circuit, a ticket
//! over its budget holds its next step until a person adds to it, a daily limit pauses every
//! agent until the next UTC day, and the governor keeps a profile to its limit of runs at once.

mod common;

use common::{Fixture, BRIEF};
use yoi_core::report::{RateLimit, Report, ReportOutcome, Usage};
use yoi_core::thread::EventKind;
use yoi_core::{Principal, Role, TicketId, Timestamp};
use yoi_db::AssignmentStatus;
use yoi_engine::assignments::{self as asg, LeaseConfig, PodCaller};
use yoi_engine::spend;
use yoi_store::{ops, Ctx};

const LEASE: LeaseConfig = LeaseConfig {
    lease_ms: 600_000,
    heartbeat_ms: 200_000,
};

/// 2026-03-01T23:58:00Z plus `ms`.
fn at(ms: i64) -> Timestamp {
    Timestamp::from_unix_millis(
        Timestamp::parse("2026-03-01T23:58:00Z")
            .unwrap()
            .unix_millis()
            + ms,
    )
}

fn caller(role: Role) -> PodCaller {
    PodCaller {
        token_id: format!("tok-{role}"),
        role,
    }
}

fn pod(f: &Fixture, role: Role, name: &str, profile: &str, provider: Option<&str>) -> String {
    asg::register_pod(
        &f.db,
        &caller(role),
        asg::PodIntro {
            name,
            host: "host",
            profile: Some(profile),
            provider,
            ..Default::default()
        },
        at(0),
    )
    .unwrap()
    .id
}

fn spent(usd: f64) -> Report {
    Report {
        outcome: ReportOutcome::Done,
        usage: Some(Usage {
            tokens_in: 1000,
            tokens_out: 100,
            cost_usd: Some(usd),
            ..Usage::default()
        }),
        ..Report::default()
    }
}

fn attention_reasons(f: &Fixture, id: &TicketId) -> Vec<String> {
    f.ws.read_thread(id)
        .unwrap()
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Attention)
        .map(|e| e.get("reason").unwrap_or_default().to_string())
        .collect()
}

fn limited(resets_at_ms: Option<i64>) -> Report {
    Report {
        outcome: ReportOutcome::Failed,
        rate_limit: Some(RateLimit {
            resets_at_ms,
            message: "429 Too Many Requests".into(),
        }),
        ..Report::default()
    }
}

#[test]
fn rate_limits_pause_the_provider_back_off_and_never_open_the_circuit() {
    let f = Fixture::new();
    let id = f.queued("Limited", BRIEF, &[]);
    f.accept(&id);
    let coder = caller(Role::Coder);
    let p = pod(&f, Role::Coder, "claude-1", "claude", Some("anthropic"));
    let mut t = 0;
    // Four rate limits in a row: more than the three failures that open a circuit.
    let mut pauses = Vec::new();
    for round in 0..4 {
        let w = asg::claim(&f.ws, &f.db, &coder, &p, LEASE, at(t))
            .unwrap()
            .unwrap();
        assert_eq!(w.assignment.attempt, round + 1);
        // The first names its reset; the others leave yoi to back off.
        let resets = (round == 0).then_some(at(t + 5_000).unix_millis());
        let next = asg::fail(
            &f.ws,
            &f.db,
            &coder,
            &p,
            &w.assignment.id,
            w.assignment.fence,
            "rate limited",
            true,
            Some(&limited(resets)),
            at(t + 1),
        )
        .unwrap();
        assert!(next.is_some(), "the step is handed out again at once");
        let pause =
            f.db.pauses()
                .unwrap()
                .into_iter()
                .find(|p| p.subject == "provider:anthropic")
                .unwrap();
        assert_eq!(pause.strikes, round + 1);
        pauses.push(pause.until_ms - at(t + 1).unix_millis());
        // While paused the pod claims nothing; once the pause ends it does.
        assert!(asg::claim(&f.ws, &f.db, &coder, &p, LEASE, at(t + 2))
            .unwrap()
            .is_none());
        t = pause.until_ms - at(0).unix_millis();
    }
    // The named reset, then a minute doubled for each limit in a row.
    assert_eq!(pauses, [4_999, 120_000, 240_000, 480_000]);
    let rows = f.assignments(&id);
    assert_eq!(
        rows.iter()
            .filter(|a| a.status == AssignmentStatus::RateLimited)
            .count(),
        4
    );
    assert!(attention_reasons(&f, &id).is_empty(), "no circuit opened");
    let thread =
        std::fs::read_to_string(f.repo.join(format!(".yoi/tickets/{id}/thread.md"))).unwrap();
    assert_eq!(
        thread.matches("outcome: rate_limited").count(),
        4,
        "{thread}"
    );
    // The fifth attempt gets through: the strikes are forgotten.
    let w = asg::claim(&f.ws, &f.db, &coder, &p, LEASE, at(t))
        .unwrap()
        .unwrap();
    assert_eq!(w.assignment.attempt, 5);
    asg::complete(
        &f.ws,
        &f.db,
        &coder,
        &p,
        &w.assignment.id,
        w.assignment.fence,
        &spent(0.01),
        at(t + 1),
    )
    .unwrap();
    assert!(f.db.pauses().unwrap().is_empty());
}

#[test]
fn a_ticket_over_its_budget_holds_its_next_step_until_a_person_adds_to_it() {
    let mut f = Fixture::new();
    f.ws.config.budget.ticket_usd = Some(0.10);
    let id = f.queued("Costly", BRIEF, &[]);
    f.accept(&id);
    let coder = caller(Role::Coder);
    let c = pod(&f, Role::Coder, "c", "fake", None);
    let w = asg::claim(&f.ws, &f.db, &coder, &c, LEASE, at(0))
        .unwrap()
        .unwrap();
    asg::complete(
        &f.ws,
        &f.db,
        &coder,
        &c,
        &w.assignment.id,
        w.assignment.fence,
        &spent(0.09),
        at(1),
    )
    .unwrap();
    // Past the soft share (80%): said once, nothing held.
    assert_eq!(attention_reasons(&f, &id), ["budget_near"]);
    assert!(f.db.budget_holds().unwrap().is_empty());
    // The verify step costs the rest and more.
    let verifier = caller(Role::Verifier);
    let v = pod(&f, Role::Verifier, "v", "verify", None);
    let w = asg::claim(&f.ws, &f.db, &verifier, &v, LEASE, at(2))
        .unwrap()
        .unwrap();
    assert_eq!(w.assignment.step, "verify");
    let mut report = spent(0.02);
    report.checks = vec![yoi_core::report::CheckResult {
        command: "cargo test".into(),
        exit_code: Some(0),
        duration_ms: 1,
        timed_out: false,
        log: None,
    }];
    asg::complete(
        &f.ws,
        &f.db,
        &verifier,
        &v,
        &w.assignment.id,
        w.assignment.fence,
        &report,
        at(3),
    )
    .unwrap();
    assert_eq!(
        attention_reasons(&f, &id),
        ["budget_near", "budget_reached"]
    );
    assert_eq!(
        f.db.spent_on_ticket(id.as_str()).unwrap().cost_micros,
        110_000
    );
    // The next step waits; the ticket stays in progress.
    let reviewer = caller(Role::Reviewer);
    let r = pod(&f, Role::Reviewer, "r", "fake", None);
    let next: Vec<_> = f
        .assignments(&id)
        .into_iter()
        .filter(|a| a.status == AssignmentStatus::Pending)
        .collect();
    assert_eq!(next.len(), 1, "the next step is handed out");
    assert!(asg::claim(&f.ws, &f.db, &reviewer, &r, LEASE, at(4))
        .unwrap()
        .is_none());
    assert!(spend::release_held(&f.ws, &f.db).unwrap().is_empty());
    assert_eq!(f.state(&id), yoi_core::State::Inprogress);
    // A pod may not add to the budget; a person may, and the step goes on.
    let pod_ctx = Ctx::new(Principal::pod("coder", "c"), at(5));
    assert!(ops::add_budget(&f.ws, &pod_ctx, id.as_str(), Some(1.0), None, None).is_err());
    ops::add_budget(
        &f.ws,
        &f.human(),
        id.as_str(),
        Some(0.50),
        None,
        Some("worth it"),
    )
    .unwrap();
    assert_eq!(spend::release_held(&f.ws, &f.db).unwrap(), [id.to_string()]);
    let w = asg::claim(&f.ws, &f.db, &reviewer, &r, LEASE, at(6))
        .unwrap()
        .unwrap();
    assert_eq!(w.assignment.step, "review");
    let limit = spend::ticket_limit(&f.ws, &f.ws.read_thread(&id).unwrap());
    assert_eq!(limit.usd, Some(0.60));
}

#[test]
fn a_daily_limit_pauses_every_agent_until_the_next_utc_day() {
    let mut f = Fixture::new();
    f.ws.config.budget.day_usd = Some(1.0);
    let a = f.queued("Today A", BRIEF, &[]);
    let b = f.queued("Today B", BRIEF, &[]);
    f.accept(&a);
    f.accept(&b);
    let coder = caller(Role::Coder);
    let p1 = pod(&f, Role::Coder, "p1", "fake", None);
    let p2 = pod(&f, Role::Coder, "p2", "other", None);
    // 23:58:01: an attempt that spends the whole day's budget.
    let w = asg::claim(&f.ws, &f.db, &coder, &p1, LEASE, at(1_000))
        .unwrap()
        .unwrap();
    asg::complete(
        &f.ws,
        &f.db,
        &coder,
        &p1,
        &w.assignment.id,
        w.assignment.fence,
        &spent(1.5),
        at(2_000),
    )
    .unwrap();
    let pause =
        f.db.pauses()
            .unwrap()
            .into_iter()
            .find(|p| p.subject == "*")
            .unwrap();
    assert_eq!(
        Timestamp::from_unix_millis(pause.until_ms),
        Timestamp::parse("2026-03-02T00:00:00Z").unwrap()
    );
    // Before midnight no agent starts work, whichever profile; after it, they do.
    assert!(asg::claim(&f.ws, &f.db, &coder, &p2, LEASE, at(110_000))
        .unwrap()
        .is_none());
    let w = asg::claim(&f.ws, &f.db, &coder, &p2, LEASE, at(120_001))
        .unwrap()
        .unwrap();
    assert_eq!(w.assignment.ticket, b.as_str());
}

#[test]
fn the_governor_keeps_a_profile_and_a_provider_to_their_runs_at_once() {
    let mut f = Fixture::new();
    f.ws.config.governor.agents.insert("fake".into(), 1);
    f.ws.config.governor.providers.insert("acme".into(), 2);
    let ids: Vec<TicketId> = (0..4)
        .map(|i| f.queued(&format!("T{i}"), BRIEF, &[]))
        .collect();
    for id in &ids {
        f.accept(id);
    }
    let coder = caller(Role::Coder);
    let fakes = [
        pod(&f, Role::Coder, "f1", "fake", None),
        pod(&f, Role::Coder, "f2", "fake", None),
    ];
    let acme = [
        pod(&f, Role::Coder, "a1", "x", Some("acme")),
        pod(&f, Role::Coder, "a2", "y", Some("acme")),
        pod(&f, Role::Coder, "a3", "z", Some("acme")),
    ];
    // One claim wave for all five pods at once.
    let asks: Vec<(PodCaller, String)> = fakes
        .iter()
        .chain(&acme)
        .map(|p| (coder.clone(), p.clone()))
        .collect();
    let got: Vec<bool> = asg::claim_many(&f.ws, &f.db, &asks, LEASE, at(0))
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().is_some())
        .collect();
    assert_eq!(got, [true, false, true, true, false]);
    // The limits hold across waves too, until a run ends.
    assert!(asg::claim(&f.ws, &f.db, &coder, &fakes[1], LEASE, at(1))
        .unwrap()
        .is_none());
    let running =
        f.db.open_assignments()
            .unwrap()
            .into_iter()
            .find(|a| a.claimed_by.as_deref() == Some(fakes[0].as_str()))
            .unwrap();
    asg::complete(
        &f.ws,
        &f.db,
        &coder,
        &fakes[0],
        &running.id,
        running.fence,
        &spent(0.0),
        at(2),
    )
    .unwrap();
    assert!(asg::claim(&f.ws, &f.db, &coder, &fakes[1], LEASE, at(3))
        .unwrap()
        .is_some());
}
