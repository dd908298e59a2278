//! The claim protocol in the database, on SQLite and on a real PostgreSQL: concurrent claimers
//! never share a row, the schema allows one live attempt per step, and every fenced statement
//! changes nothing unless it holds the live claim.

use yoi_testkit::on_both_backends;
use yoi_testkit::pg::{self, Backend};

use std::sync::{Arc, Barrier};

use yoi_db::{Assignment, AssignmentStatus, Db, Finish, PodRow, PodState};

struct Fx {
    _dir: tempfile::TempDir,
    db: Db,
    rt: Arc<tokio::runtime::Runtime>,
}

impl Fx {
    fn new(b: Backend) -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let url = match b {
            Backend::Sqlite => yoi_db::sqlite_url(&dir.path().join("yoi.db")),
            Backend::Postgres => pg::database(),
        };
        let rt = Arc::new(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
        );
        let db = rt.block_on(Db::open(&url)).unwrap();
        Fx { _dir: dir, db, rt }
    }

    fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.rt.block_on(f)
    }
}

fn pending(id: &str, ticket: &str, attempt: i64) -> Assignment {
    Assignment {
        id: id.into(),
        ticket: ticket.into(),
        step: "implement".into(),
        role: "coder".into(),
        attempt,
        fence: attempt,
        status: AssignmentStatus::Pending,
        created_ms: 1,
        updated_ms: 1,
        ..Assignment::default()
    }
}

fn done() -> Finish {
    Finish {
        status: AssignmentStatus::Completed,
        result: Some("{}".into()),
        usage: None,
        error: None,
        log_path: None,
    }
}

on_both_backends!(
    fifty_claimers_race_for_one_assignment_and_exactly_one_wins,
    the_schema_allows_one_live_attempt_per_step,
    fenced_statements_change_nothing_unless_they_hold_the_live_claim,
    the_sweep_expires_only_claims_past_their_lease,
    a_held_assignment_is_claimable_only_once_released,
    a_group_of_claims_pairs_each_pod_with_its_own_row_in_ask_order,
    groups_racing_for_the_same_rows_never_share_one,
);

fn pod_row(id: &str, role: &str) -> PodRow {
    PodRow {
        id: id.into(),
        name: id.into(),
        role: role.into(),
        host: "h".into(),
        pid: None,
        profile: None,
        state: PodState::Idle,
        registered_ms: 1,
        heartbeat_ms: 1,
        assignment: None,
        token_id: "tok".into(),
        sandbox: None,
        provider: None,
    }
}

fn a_group_of_claims_pairs_each_pod_with_its_own_row_in_ask_order(b: Backend) {
    let fx = Fx::new(b);
    for (i, t) in ["T1", "T2", "T3"].iter().enumerate() {
        let mut a = pending(&format!("asg-c{i}"), t, 1);
        a.created_ms = 10 + i as i64;
        fx.run(fx.db.create_assignment(&a)).unwrap();
    }
    let mut r = pending("asg-r", "T9", 1);
    r.role = "reviewer".into();
    fx.run(fx.db.create_assignment(&r)).unwrap();
    for (p, role) in [
        ("c1@x", "coder"),
        ("c2@x", "coder"),
        ("r1@x", "reviewer"),
        ("c3@x", "coder"),
        ("c4@x", "coder"),
        ("r2@x", "reviewer"),
    ] {
        fx.run(fx.db.register_pod(&pod_row(p, role))).unwrap();
    }
    let asks = [
        ("coder", "c1@x"),
        ("coder", "c2@x"),
        ("reviewer", "r1@x"),
        ("coder", "c3@x"),
        ("coder", "c4@x"),
        ("reviewer", "r2@x"),
    ];
    let got = fx
        .run(fx.db.claim_assignments(&asks, 50_000, 2_000))
        .unwrap();
    let ids: Vec<Option<&str>> = got
        .iter()
        .map(|a| a.as_ref().map(|a| a.id.as_str()))
        .collect();
    // Oldest first, each pod its own row, the role's work only; the rest get nothing.
    assert_eq!(
        ids,
        [
            Some("asg-c0"),
            Some("asg-c1"),
            Some("asg-r"),
            Some("asg-c2"),
            None,
            None
        ]
    );
    for (a, (_, pod)) in got.iter().zip(asks) {
        if let Some(a) = a {
            assert_eq!(a.claimed_by.as_deref(), Some(pod));
            assert_eq!(a.status, AssignmentStatus::Claimed);
            assert_eq!(a.lease_until_ms, Some(50_000));
            let row = fx.run(fx.db.pod(pod)).unwrap().unwrap();
            assert_eq!(row.state, PodState::Working);
            assert_eq!(row.assignment.as_deref(), Some(a.id.as_str()));
        }
    }
    // The pods that got nothing are left as they were.
    assert_eq!(
        fx.run(fx.db.pod("c4@x")).unwrap().unwrap().state,
        PodState::Idle
    );
}

fn groups_racing_for_the_same_rows_never_share_one(b: Backend) {
    let fx = Arc::new(Fx::new(b));
    for i in 0..30 {
        fx.run(
            fx.db
                .create_assignment(&pending(&format!("asg-{i:02}"), &format!("T{i}"), 1)),
        )
        .unwrap();
    }
    let start = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|g| {
            let (fx, start) = (fx.clone(), start.clone());
            std::thread::spawn(move || {
                let pods: Vec<String> = (0..6).map(|i| format!("g{g}-p{i}")).collect();
                let asks: Vec<(&str, &str)> = pods.iter().map(|p| ("coder", p.as_str())).collect();
                start.wait();
                fx.run(fx.db.claim_assignments(&asks, 50_000, 2_000))
                    .unwrap()
                    .into_iter()
                    .flatten()
                    .map(|a| (a.id, a.claimed_by.unwrap()))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut won: Vec<(String, String)> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    won.sort();
    // 48 asks for 30 rows: every row claimed once, by the pod the database says holds it.
    assert_eq!(won.len(), 30, "{won:?}");
    won.dedup_by(|a, b| a.0 == b.0);
    assert_eq!(won.len(), 30, "a row was handed out twice");
    for (id, pod) in &won {
        let row = fx.run(fx.db.assignment(id)).unwrap().unwrap();
        assert_eq!(row.claimed_by.as_deref(), Some(pod.as_str()));
    }
}

fn a_held_assignment_is_claimable_only_once_released(b: Backend) {
    let fx = Fx::new(b);
    let held = Assignment {
        status: AssignmentStatus::Held,
        ..pending("asg-held", "T1", 1)
    };
    fx.run(fx.db.create_assignment(&held)).unwrap();
    assert_eq!(
        fx.run(fx.db.claim_assignment("coder", "pod", 10_000, 1_000))
            .unwrap(),
        None
    );
    // It is live: no second attempt of the step fits beside it.
    assert!(fx
        .run(fx.db.create_assignment(&pending("asg-2", "T1", 2)))
        .is_err());
    assert_eq!(fx.run(fx.db.tickets_with_held()).unwrap(), ["T1"]);
    assert_eq!(fx.run(fx.db.release_held("T1", 2_000)).unwrap(), 1);
    let claimed = fx
        .run(fx.db.claim_assignment("coder", "pod", 10_000, 3_000))
        .unwrap()
        .unwrap();
    assert_eq!(claimed.id, "asg-held");
}

fn fifty_claimers_race_for_one_assignment_and_exactly_one_wins(b: Backend) {
    let fx = Arc::new(Fx::new(b));
    fx.run(fx.db.create_assignment(&pending("asg-race", "T1", 1)))
        .unwrap();
    let start = Arc::new(Barrier::new(50));
    let threads: Vec<_> = (0..50)
        .map(|i| {
            let (fx, start) = (fx.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                fx.run(
                    fx.db
                        .claim_assignment("coder", &format!("pod-{i}"), 10_000, 1_000),
                )
                .unwrap()
            })
        })
        .collect();
    let won: Vec<Assignment> = threads
        .into_iter()
        .filter_map(|t| t.join().unwrap())
        .collect();
    assert_eq!(won.len(), 1, "exactly one claim: {won:?}");
    let row = fx.run(fx.db.assignment("asg-race")).unwrap().unwrap();
    assert_eq!(row.status, AssignmentStatus::Claimed);
    assert_eq!(row.claimed_by, won[0].claimed_by);
    // Another role's pods see nothing.
    fx.run(fx.db.create_assignment(&pending("asg-other", "T2", 1)))
        .unwrap();
    assert_eq!(
        fx.run(fx.db.claim_assignment("reviewer", "pod-r", 10_000, 1_000))
            .unwrap(),
        None
    );
}

fn the_schema_allows_one_live_attempt_per_step(b: Backend) {
    let fx = Fx::new(b);
    fx.run(fx.db.create_assignment(&pending("asg-1", "T1", 1)))
        .unwrap();
    let err = fx
        .run(fx.db.create_assignment(&pending("asg-2", "T1", 2)))
        .unwrap_err();
    assert!(err.to_string().contains("database"), "{err}");
    // Once the first has ended, the next attempt fits — inserted with the end, atomically.
    fx.run(fx.db.claim_assignment("coder", "pod", 10_000, 1_000))
        .unwrap()
        .unwrap();
    let next = pending("asg-2", "T1", 2);
    fx.run(
        fx.db
            .finish_assignment("asg-1", 1, Some("pod"), &done(), Some(&next), 2_000),
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        fx.run(fx.db.assignment("asg-2")).unwrap().unwrap().status,
        AssignmentStatus::Pending
    );
}

fn fenced_statements_change_nothing_unless_they_hold_the_live_claim(b: Backend) {
    let fx = Fx::new(b);
    fx.run(fx.db.create_assignment(&pending("asg-1", "T1", 1)))
        .unwrap();
    fx.run(fx.db.claim_assignment("coder", "pod-a", 10_000, 1_000))
        .unwrap()
        .unwrap();
    let before = fx.run(fx.db.assignment("asg-1")).unwrap().unwrap();
    // Wrong fence, wrong pod, expired lease: nothing.
    assert_eq!(
        fx.run(
            fx.db
                .heartbeat_assignment("asg-1", 7, "pod-a", 20_000, 2_000)
        )
        .unwrap(),
        None
    );
    assert_eq!(
        fx.run(
            fx.db
                .heartbeat_assignment("asg-1", 1, "pod-b", 20_000, 2_000)
        )
        .unwrap(),
        None
    );
    assert_eq!(
        fx.run(
            fx.db
                .heartbeat_assignment("asg-1", 1, "pod-a", 30_000, 10_001)
        )
        .unwrap(),
        None
    );
    assert_eq!(
        fx.run(
            fx.db
                .finish_assignment("asg-1", 7, Some("pod-a"), &done(), None, 2_000)
        )
        .unwrap(),
        None
    );
    assert_eq!(
        fx.run(
            fx.db
                .finish_assignment("asg-1", 1, Some("pod-b"), &done(), None, 2_000)
        )
        .unwrap(),
        None
    );
    assert_eq!(
        fx.run(
            fx.db
                .finish_assignment("asg-1", 1, Some("pod-a"), &done(), None, 10_001)
        )
        .unwrap(),
        None
    );
    assert_eq!(fx.run(fx.db.assignment("asg-1")).unwrap().unwrap(), before);
    // The holder extends and finishes; then even the holder is refused.
    let hb = fx
        .run(
            fx.db
                .heartbeat_assignment("asg-1", 1, "pod-a", 20_000, 2_000),
        )
        .unwrap()
        .unwrap();
    assert_eq!(hb.lease_until_ms, Some(20_000));
    fx.run(
        fx.db
            .finish_assignment("asg-1", 1, Some("pod-a"), &done(), None, 3_000),
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        fx.run(
            fx.db
                .finish_assignment("asg-1", 1, Some("pod-a"), &done(), None, 3_000)
        )
        .unwrap(),
        None
    );
    assert_eq!(
        fx.run(
            fx.db
                .heartbeat_assignment("asg-1", 1, "pod-a", 20_000, 3_000)
        )
        .unwrap(),
        None
    );
}

fn the_sweep_expires_only_claims_past_their_lease(b: Backend) {
    let fx = Fx::new(b);
    for (id, t) in [("asg-1", "T1"), ("asg-2", "T2")] {
        fx.run(fx.db.create_assignment(&pending(id, t, 1))).unwrap();
    }
    fx.run(fx.db.claim_assignment("coder", "pod-a", 5_000, 1_000))
        .unwrap()
        .unwrap();
    fx.run(fx.db.claim_assignment("coder", "pod-b", 50_000, 1_000))
        .unwrap()
        .unwrap();
    let due = fx.run(fx.db.expired_claims(6_000)).unwrap();
    assert_eq!(
        due.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
        ["asg-1"]
    );
    let expire = Finish {
        status: AssignmentStatus::Expired,
        result: None,
        usage: None,
        error: Some("lease".into()),
        log_path: None,
    };
    // The sweep's guard: a claim whose lease has not run out is not expired.
    assert_eq!(
        fx.run(
            fx.db
                .finish_assignment("asg-2", 1, None, &expire, None, 6_000)
        )
        .unwrap(),
        None
    );
    let next = pending("asg-1b", "T1", 2);
    let row = fx
        .run(
            fx.db
                .finish_assignment("asg-1", 1, None, &expire, Some(&next), 6_000),
        )
        .unwrap()
        .unwrap();
    assert_eq!(row.status, AssignmentStatus::Expired);
    // A late result of the expired claim is refused.
    assert_eq!(
        fx.run(
            fx.db
                .finish_assignment("asg-1", 1, Some("pod-a"), &done(), None, 6_500)
        )
        .unwrap(),
        None
    );
    let claimed = fx
        .run(fx.db.claim_assignment("coder", "pod-c", 60_000, 7_000))
        .unwrap()
        .unwrap();
    assert_eq!(
        (claimed.id.as_str(), claimed.attempt, claimed.fence),
        ("asg-1b", 2, 2)
    );
}
