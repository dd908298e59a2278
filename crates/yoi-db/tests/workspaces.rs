//! One database, many workspaces; the server lease; moving a workspace's database (issue 44).
//! Every PostgreSQL case runs on the throwaway cluster of `yoi_testkit::pg`.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;

use yoi_core::{Principal, Role, TicketId, Timestamp};
use yoi_db::{Bridge, DbIndex, Footprint, PodRow, PodState, ReindexMode, Scope, LEASE_MS};
use yoi_store::ops::{self, CreateRequest};
use yoi_store::query::ListFilter;
use yoi_store::{Ctx, DbSetup, StoreError, Workspace};
use yoi_testkit::pg;

const BRIEF: &str =
    "## Intent\nDo it.\n\n## Acceptance criteria\n- done\n\n## Validation\n`true`\n";

fn rt() -> Arc<tokio::runtime::Runtime> {
    Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    )
}

fn alice() -> Ctx {
    Ctx::new(
        Principal::human("alice"),
        Timestamp::parse("2026-12-04T10:00:00Z").unwrap(),
    )
}

/// A new workspace (with its own id) in a temporary folder.
fn new_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    yoi_store::init(dir.path(), "main").unwrap();
    dir
}

/// Open the workspace at `root` on `url` (`None`: its embedded SQLite file) as `footprint`,
/// on a clock of `now`.
fn attach(
    root: &Path,
    url: Option<&str>,
    footprint: Footprint,
    rt: &tokio::runtime::Runtime,
    now: i64,
) -> Result<(Workspace, DbIndex), StoreError> {
    let mut ws = Workspace::open(root).unwrap();
    if let Some(url) = url {
        ws.config.database.url = Some(url.to_string());
    }
    let bridge = Bridge::new(rt.handle().clone(), move || now);
    let (index, _) = DbIndex::attach_as(&mut ws, bridge, ReindexMode::Incremental, footprint)?;
    Ok((ws, index))
}

fn create(ws: &Workspace, title: &str) -> TicketId {
    let req = CreateRequest {
        title: title.into(),
        body: BRIEF.into(),
        depends_on: vec![],
    };
    ops::create(ws, &alice(), &req).unwrap().ticket
}

fn titles(index: &DbIndex, rt: &tokio::runtime::Runtime) -> Vec<String> {
    let mut t: Vec<String> = rt
        .block_on(index.db.list_all(&ListFilter::default(), &[]))
        .unwrap()
        .into_iter()
        .map(|t| t.title)
        .collect();
    t.sort();
    t
}

fn setup_problem(e: StoreError) -> DbSetup {
    match e {
        StoreError::DatabaseSetup { problem } => problem,
        other => panic!("expected a database set-up problem, got {other:?}"),
    }
}

#[test]
fn two_workspaces_keep_their_rows_apart_in_one_postgres_database() {
    let rt = rt();
    let url = pg::database();
    let (a, b) = (new_workspace(), new_workspace());
    let (ws_a, index_a) = attach(a.path(), Some(&url), Footprint::Command, &rt, 1_000).unwrap();
    let (ws_b, index_b) = attach(b.path(), Some(&url), Footprint::Command, &rt, 1_000).unwrap();
    for i in 0..5 {
        create(&ws_a, &format!("A{i}"));
        create(&ws_b, &format!("B{i}"));
    }
    create(&ws_a, "A5");
    assert_eq!(titles(&index_a, &rt), ["A0", "A1", "A2", "A3", "A4", "A5"]);
    assert_eq!(titles(&index_b, &rt), ["B0", "B1", "B2", "B3", "B4"]);
    // Reopening each, as every command does, finds its index in line with its files: nothing
    // re-read, nothing removed, no outbox row added — no churn between the two.
    for _ in 0..3 {
        for dir in [&a, &b] {
            let mut ws = Workspace::open(dir.path()).unwrap();
            ws.config.database.url = Some(url.clone());
            let bridge = Bridge::new(rt.handle().clone(), || 2_000);
            let (_, stats) = DbIndex::attach(&mut ws, bridge).unwrap();
            assert_eq!(
                (stats.reindexed, stats.removed, stats.outbox_added),
                (0, 0, 0),
                "{stats:?}"
            );
        }
    }
    // Each workspace's admin token is its own.
    let (la, lb) = (a.path().join(".yoi/local"), b.path().join(".yoi/local"));
    index_a.ensure_admin_token(&la, "alice", 1_000).unwrap();
    index_b.ensure_admin_token(&lb, "bob", 1_000).unwrap();
    let secret_a = std::fs::read_to_string(la.join("admin.token")).unwrap();
    let secret_b = std::fs::read_to_string(lb.join("admin.token")).unwrap();
    let hash = |s: &str| yoi_db::hash_secret(s.trim());
    let known = |index: &DbIndex, s: &str| {
        rt.block_on(index.db.token_by_hash(&hash(s)))
            .unwrap()
            .is_some()
    };
    assert!(known(&index_a, &secret_a) && known(&index_b, &secret_b));
    assert!(!known(&index_a, &secret_b) && !known(&index_b, &secret_a));
    // Each schema records whose rows it holds.
    assert_eq!(
        rt.block_on(index_a.db.workspace_id()).unwrap(),
        ws_a.config.workspace.id
    );
    assert_ne!(ws_a.config.workspace.id, ws_b.config.workspace.id);
}

#[test]
fn a_database_made_for_another_workspace_is_refused_and_left_as_it_was() {
    let rt = rt();
    let a = new_workspace();
    let (_, index) = attach(a.path(), None, Footprint::Command, &rt, 1_000).unwrap();
    let id = rt.block_on(index.db.workspace_id()).unwrap().unwrap();
    rt.block_on(index.db.close());
    let config = a.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace(&id, "someone_else")).unwrap();
    let problem =
        setup_problem(attach(a.path(), None, Footprint::Command, &rt, 1_000).unwrap_err());
    assert_eq!(
        problem,
        DbSetup::OtherWorkspace {
            url: yoi_db::sqlite_url(&a.path().join(".yoi/local/yoi.db")),
            found: id.clone(),
            expected: "someone_else".into(),
        }
    );
    std::fs::write(&config, text).unwrap();
    let (_, index) = attach(a.path(), None, Footprint::Command, &rt, 1_000).unwrap();
    assert_eq!(rt.block_on(index.db.workspace_id()).unwrap(), Some(id));
}

#[test]
fn postgres_without_a_workspace_id_says_to_run_init() {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".yoi/local")).unwrap();
    std::fs::write(
        dir.path().join(".yoi/workspace.toml"),
        "[router]\nenabled = false\n",
    )
    .unwrap();
    let url = pg::database().replace("postgres://yoi@", "postgres://yoi:hunter2@");
    let err = attach(dir.path(), Some(&url), Footprint::Command, &rt, 1_000).unwrap_err();
    let message = err.to_string();
    assert!(matches!(setup_problem(err), DbSetup::NoWorkspaceId { .. }));
    assert!(message.contains("yoi init"), "{message}");
    assert!(
        !message.contains("hunter2") && message.contains("***"),
        "{message}"
    );
}

#[test]
fn one_server_of_one_clone_holds_the_lease_until_it_stops_or_lapses() {
    let rt = rt();
    let url = pg::database();
    let first = new_workspace();
    // A second clone of the same repository: the same committed workspace.toml, another folder.
    let second = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(second.path().join(".yoi")).unwrap();
    std::fs::copy(
        first.path().join(".yoi/workspace.toml"),
        second.path().join(".yoi/workspace.toml"),
    )
    .unwrap();
    yoi_store::init(second.path(), "main").unwrap();
    let (_, serving) = attach(first.path(), Some(&url), Footprint::Server, &rt, 10_000).unwrap();
    let nonce = serving.server_lease().unwrap().to_string();
    // Another clone's server, and its commands, are refused while the lease is fresh …
    for footprint in [Footprint::Server, Footprint::Command] {
        let err = attach(second.path(), Some(&url), footprint, &rt, 20_000).unwrap_err();
        let message = err.to_string();
        match setup_problem(err) {
            DbSetup::ServedElsewhere {
                root, seconds_ago, ..
            } => {
                let here = std::fs::canonicalize(first.path()).unwrap();
                assert_eq!(root, here.display().to_string());
                assert_eq!(seconds_ago, 10);
            }
            other => panic!("{other:?}"),
        }
        assert!(message.contains("use the API there"), "{message}");
    }
    // … this clone's own commands are not, and a heartbeat keeps the lease …
    attach(first.path(), Some(&url), Footprint::Command, &rt, 20_000).unwrap();
    assert!(rt
        .block_on(
            serving
                .db
                .renew_server_lease(&nonce, Some("10.1.2.3:7311"), 30_000)
        )
        .unwrap());
    let err = attach(
        second.path(),
        Some(&url),
        Footprint::Server,
        &rt,
        30_000 + LEASE_MS - 1,
    );
    assert!(err
        .unwrap_err()
        .to_string()
        .contains("at http://10.1.2.3:7311"));
    // … until it lapses: then the other clone takes it, and the first hears it lost it.
    let (_, taker) = attach(
        second.path(),
        Some(&url),
        Footprint::Server,
        &rt,
        30_000 + LEASE_MS + 1,
    )
    .unwrap();
    assert!(!rt
        .block_on(
            serving
                .db
                .renew_server_lease(&nonce, None, 30_000 + LEASE_MS + 2)
        )
        .unwrap());
    // A server that stops gives it back at once.
    rt.block_on(taker.db.release_server_lease(taker.server_lease().unwrap()))
        .unwrap();
    attach(
        first.path(),
        Some(&url),
        Footprint::Server,
        &rt,
        30_000 + LEASE_MS + 3,
    )
    .unwrap();
}

/// A SQLite workspace with rows the files cannot give back: its admin token, a pod token, a
/// registered pod.
fn sqlite_workspace_with_runtime_rows(rt: &tokio::runtime::Runtime) -> (tempfile::TempDir, String) {
    let dir = new_workspace();
    let (ws, index) = attach(dir.path(), None, Footprint::Command, rt, 1_000).unwrap();
    create(&ws, "Kept");
    index
        .ensure_admin_token(&ws.local_dir(), "alice", 1_000)
        .unwrap();
    let (pod_token, _) = index
        .create_token("coder-pod", &Scope::Pod(Role::Coder), "pod", 1_000)
        .unwrap();
    index
        .register_pod(&PodRow {
            id: "coder-1-abc".into(),
            name: "coder-1".into(),
            role: "coder".into(),
            host: "box".into(),
            pid: Some(42),
            profile: Some("aider".into()),
            state: PodState::Idle,
            registered_ms: 1_000,
            heartbeat_ms: 1_000,
            assignment: None,
            token_id: pod_token.id,
            sandbox: Some("landlock".into()),
            provider: None,
        })
        .unwrap();
    rt.block_on(index.db.close());
    let secret = std::fs::read_to_string(dir.path().join(".yoi/local/admin.token")).unwrap();
    (dir, secret.trim().to_string())
}

#[test]
fn a_workspace_pointed_at_an_empty_database_names_the_copy_instead_of_answering_401() {
    let rt = rt();
    let (dir, _) = sqlite_workspace_with_runtime_rows(&rt);
    let url = pg::database();
    let problem =
        setup_problem(attach(dir.path(), Some(&url), Footprint::Server, &rt, 2_000).unwrap_err());
    assert_eq!(
        problem,
        DbSetup::LeftBehind {
            url: url.clone(),
            old: ".yoi/local/yoi.db".into(),
            tokens: 2,
            pods: 1,
            assignments: 0,
        }
    );
    assert!(
        problem.to_string().contains("yoi db copy --to"),
        "{problem}"
    );
}

#[test]
fn a_copy_keeps_every_row_and_an_interrupted_one_is_run_again() {
    let rt = rt();
    let (dir, secret) = sqlite_workspace_with_runtime_rows(&rt);
    let url = pg::database();
    let (ws, source) = attach(dir.path(), None, Footprint::Command, &rt, 2_000).unwrap();
    // Interrupted after its first table (as a process killed between two tables' commits).
    let mut heard = 0;
    let died = std::panic::catch_unwind(AssertUnwindSafe(|| {
        source.copy_to(&ws, &url, |_| {
            heard += 1;
            panic!("killed after the first table");
        })
    }));
    assert!(died.is_err(), "{:?}", died.map(|r| r.map(|t| t.len())));
    assert_eq!(heard, 1);
    // The move is run again from the start and verifies every table.
    let tables = source.copy_to(&ws, &url, |_| {}).unwrap();
    let names: Vec<&str> = tables.iter().map(|t| t.table.as_str()).collect();
    for t in [
        "tokens",
        "pods",
        "tickets",
        "events",
        "outbox",
        "workspace_meta",
    ] {
        assert!(names.contains(&t), "{t} copied: {names:?}");
    }
    assert!(!names.contains(&"server_lease") && !names.contains(&"_sqlx_migrations"));
    let rows = |t: &str| tables.iter().find(|c| c.table == t).unwrap().rows;
    assert_eq!((rows("tokens"), rows("pods"), rows("tickets")), (2, 1, 1));
    // On the new database: the same admin token, the pod, the ticket; nothing to catch up.
    let mut moved = Workspace::open(dir.path()).unwrap();
    moved.config.database.url = Some(url.clone());
    let (target, stats) =
        DbIndex::attach(&mut moved, Bridge::new(rt.handle().clone(), || 3_000)).unwrap();
    assert_eq!(
        (stats.reindexed, stats.removed, stats.outbox_added),
        (0, 0, 0)
    );
    let admin = rt
        .block_on(target.db.token_by_hash(&yoi_db::hash_secret(&secret)))
        .unwrap()
        .expect("the admin token moved");
    assert!(admin.name.starts_with("admin@"), "{}", admin.name);
    assert!(
        target.pod("coder-1-abc").unwrap().is_some(),
        "the pod moved"
    );
    assert_eq!(titles(&target, &rt), ["Kept"]);
    // Copying back onto the SQLite file the workspace came from is refused: it uses it.
    let again = source.copy_to(&ws, &ws.database_url(), |_| {});
    assert!(again.unwrap_err().to_string().contains("already uses"));
}

#[test]
fn a_role_that_may_not_create_schemas_is_told_what_to_grant_and_a_made_schema_is_used() {
    let rt = rt();
    let url = pg::database();
    let weak_url = url.replace("postgres://yoi@", "postgres://weak:pw@");
    let dir = new_workspace();
    let id = Workspace::open(dir.path())
        .unwrap()
        .config
        .workspace
        .id
        .unwrap();
    let admin = |sql: String| {
        rt.block_on(async {
            let pool = sqlx::AnyPool::connect(&url).await.unwrap();
            sqlx::query(&sql).execute(&pool).await.unwrap();
            pool.close().await;
        })
    };
    admin("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'weak') THEN CREATE ROLE weak LOGIN PASSWORD 'pw'; END IF; END $$".into());
    let problem =
        setup_problem(attach(dir.path(), Some(&weak_url), Footprint::Command, &rt, 1).unwrap_err());
    match &problem {
        DbSetup::CannotCreate { url, schema, .. } => {
            assert_eq!(schema, &format!("yoi_{id}"));
            assert!(url.contains("weak:***@"), "{url}");
        }
        other => panic!("{other:?}"),
    }
    assert!(problem.to_string().contains("AUTHORIZATION"), "{problem}");
    // Nothing was written: no schema appeared.
    let schemas: i64 = rt.block_on(async {
        let pool = sqlx::AnyPool::connect(&url).await.unwrap();
        let n = sqlx::query_scalar::<_, i64>(&format!(
            "SELECT COUNT(*) FROM pg_namespace WHERE nspname = 'yoi_{id}'"
        ))
        .fetch_one(&pool)
        .await
        .unwrap();
        pool.close().await;
        n
    });
    assert_eq!(schemas, 0);
    // A schema an administrator made for the role is used as it is.
    admin(format!("CREATE SCHEMA yoi_{id} AUTHORIZATION weak"));
    let (ws, index) = attach(dir.path(), Some(&weak_url), Footprint::Command, &rt, 1).unwrap();
    create(&ws, "Works");
    assert_eq!(titles(&index, &rt), ["Works"]);
}

#[test]
fn an_unreachable_database_is_one_line_without_its_password() {
    let rt = rt();
    let dir = new_workspace();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://yoi:hunter2@127.0.0.1:{port}/nowhere");
    let message = attach(dir.path(), Some(&url), Footprint::Command, &rt, 1)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains(&format!(
            "cannot open postgres://yoi:***@127.0.0.1:{port}/nowhere"
        )),
        "{message}"
    );
    assert!(
        !message.contains("hunter2") && !message.contains('\n'),
        "{message}"
    );
    assert!(!dir.path().join(".yoi/local/yoi.db").exists());
}
