//! A real `yoi serve` for API tests: a fresh workspace in a temporary folder, one token per
//! scope created through the database, the server running in-process on its own tokio runtime
//! and bound to `127.0.0.1:0`, and a blocking HTTP client that returns 4xx/5xx as responses.
//!
//! The bound address comes back from `serve`'s `on_ready` through a channel, so no test waits
//! on a clock; `stop` shuts the server down through its shutdown future and checks it ended
//! cleanly. Both database backends are available: the embedded SQLite file and a throwaway
//! PostgreSQL database from the store's test cluster.

#![allow(dead_code)]

pub use yoi_testkit::pg;

pub mod dashboard;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use yoi_core::Principal;
use yoi_db::{Db, DbIndex, Scope};
use yoi_engine::doctor::Report;
use yoi_store::{Ctx, Workspace};
pub use yoi_testkit::git;

/// Which database the server indexes into.
pub use yoi_testkit::pg::Backend;

/// A brief with every required section, so `mark-ready` accepts it.
pub const COMPLETE_BRIEF: &str = "## Intent\nMake it work.\n\n## Acceptance criteria\n- it works\n\n## Validation\n`cargo test`\n";

/// The secret of one token per scope, and the author each one writes into threads.
#[derive(Debug, Clone)]
pub struct Tokens {
    pub human: String,
    pub read: String,
    pub coder: String,
    pub intake: String,
    pub orchestrator: String,
}

/// Token names, scopes and principals created for every server.
pub const TOKEN_SPECS: [(&str, &str, &str); 5] = [
    ("alice-laptop", "human", "alice"),
    ("dashboard-reader", "read", "rita"),
    ("coder-pod", "pod:coder", "c1"),
    ("intake-pod", "pod:intake", "triage"),
    ("orchestrator-pod", "pod:orchestrator", "orch"),
];

impl Tokens {
    /// The secret for a scope as spelled in [`TOKEN_SPECS`].
    pub fn for_scope(&self, scope: &str) -> &str {
        match scope {
            "human" => &self.human,
            "read" => &self.read,
            "pod:coder" => &self.coder,
            "pod:intake" => &self.intake,
            "pod:orchestrator" => &self.orchestrator,
            other => panic!("no test token for scope {other}"),
        }
    }
}

pub struct Server {
    pub base: String,
    pub addr: SocketAddr,
    pub tokens: Tokens,
    /// The database URL the server uses (also reachable through `admin`).
    pub database_url: String,
    root: std::path::PathBuf,
    dir: Option<tempfile::TempDir>,
    agent: Option<ureq::Agent>,
    admin: Option<Admin>,
    stop_tx: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), yoi_server::ServerError>>>,
}

/// A second connection to the server's database, for token administration and checks.
pub struct Admin {
    pub rt: tokio::runtime::Runtime,
    pub db: Db,
}

impl Admin {
    /// The database at `url` as workspace `id` sees it (on PostgreSQL: its schema).
    fn open(url: &str, id: Option<&str>) -> Admin {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let db = rt
            .block_on(Db::open_workspace(url, yoi_db::Footprint::Service, id))
            .expect("open the database");
        Admin { rt, db }
    }

    pub fn create_token(&self, name: &str, scope: &str, principal: &str) -> String {
        let scope: Scope = scope.parse().unwrap();
        self.rt
            .block_on(self.db.create_token(name, &scope, principal, 1))
            .expect("create token")
            .1
    }

    pub fn revoke_token(&self, name: &str) {
        assert!(self.rt.block_on(self.db.revoke_token(name, 2)).unwrap());
    }

    /// Skill activations recorded, newest first.
    pub fn activations(&self) -> Vec<yoi_db::ActivationRow> {
        self.rt
            .block_on(self.db.activations(None, 100))
            .expect("read activations")
    }

    /// Doctor with the file and index checks, without touching the index first.
    pub fn doctor(&self, ws: &Workspace) -> Report {
        let index = DbIndex::new(
            self.db.clone(),
            yoi_db::Bridge::new(self.rt.handle().clone(), yoi_testkit::wall_ms),
        );
        yoi_engine::doctor::run_full(ws, Some(&index), false).expect("doctor runs")
    }
}

impl Drop for Admin {
    fn drop(&mut self) {
        self.rt.block_on(self.db.close());
    }
}

impl Server {
    pub fn start(backend: Backend) -> Server {
        Server::start_with(backend, |_| {})
    }

    /// Start a server after `setup` has prepared the workspace with the store's operations
    /// (for states the API cannot reach, such as `done`).
    pub fn start_with(backend: Backend, setup: impl FnOnce(&Workspace)) -> Server {
        let dir = tempfile::tempdir().unwrap();
        yoi_store::init(dir.path(), "main").unwrap();
        Server::start_in(backend, dir, false, |ws| setup(ws))
    }

    /// A server (not routing) on a fresh workspace whose configuration `configure` adjusts
    /// first (e.g. `[server]` limits).
    pub fn start_configured(backend: Backend, configure: impl FnOnce(&mut Workspace)) -> Server {
        let dir = tempfile::tempdir().unwrap();
        yoi_store::init(dir.path(), "main").unwrap();
        Server::start_in(backend, dir, false, configure)
    }

    /// A server with the orchestrator running, on a git repository (`main` with one commit
    /// holding a README and the yoi workspace). `configure` adjusts the configuration the
    /// server runs with (e.g. `router.max_inprogress`); retries back off 20 ms.
    pub fn start_routed(backend: Backend, configure: impl FnOnce(&mut Workspace)) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        git(repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "hello\n").unwrap();
        yoi_store::init(repo, "main").unwrap();
        yoi_testkit::commit_all(repo, "base");
        Server::start_in(backend, dir, true, |ws| {
            ws.config.router.retry_backoff_ms = 20;
            configure(ws)
        })
    }

    fn start_in(
        backend: Backend,
        dir: tempfile::TempDir,
        orchestrate: bool,
        setup: impl FnOnce(&mut Workspace),
    ) -> Server {
        let mut ws = Workspace::open(dir.path()).unwrap();
        if backend == Backend::Postgres {
            ws.config.database.url = Some(pg::database());
        }
        setup(&mut ws);
        let database_url = ws.database_url();
        let admin = Admin::open(&database_url, ws.config.workspace.id.as_deref());
        let secret = |i: usize| {
            let (name, scope, principal) = TOKEN_SPECS[i];
            admin.create_token(name, scope, principal)
        };
        let tokens = Tokens {
            human: secret(0),
            read: secret(1),
            coder: secret(2),
            intake: secret(3),
            orchestrator: secret(4),
        };
        Server::launch(ws, dir, admin, tokens, orchestrate)
    }

    fn launch(
        ws: Workspace,
        dir: tempfile::TempDir,
        admin: Admin,
        tokens: Tokens,
        orchestrate: bool,
    ) -> Server {
        let database_url = ws.database_url();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(yoi_server::serve(
                ws,
                yoi_server::ServeOptions {
                    orchestrate,
                    listen: "127.0.0.1:0".parse().unwrap(),
                    pods: None,
                },
                async move {
                    let _ = stop_rx.await;
                },
                move |addr, _login| {
                    let _ = ready_tx.send(addr);
                },
            ))
        });
        let addr = match ready_rx.recv() {
            Ok(addr) => addr,
            Err(_) => panic!("the server did not start: {:?}", thread.join()),
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // A guard against a hung server, not a synchronisation point.
            .timeout_global(Some(Duration::from_secs(300)))
            .build()
            .into();
        Server {
            base: format!("http://{addr}"),
            addr,
            tokens,
            database_url,
            root: dir.path().to_path_buf(),
            dir: Some(dir),
            agent: Some(agent),
            admin: Some(admin),
            stop_tx: Some(stop_tx),
            thread: Some(thread),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn admin(&self) -> &Admin {
        self.admin.as_ref().unwrap()
    }

    pub fn agent(&self) -> ureq::Agent {
        self.agent.clone().unwrap()
    }

    /// A workspace handle on the same folder (files only, no index), for reading files.
    pub fn workspace(&self) -> Workspace {
        let mut ws = Workspace::open(&self.root).unwrap();
        ws.config.database.url = Some(self.database_url.clone());
        ws
    }

    pub fn get(&self, path: &str) -> Req<'_> {
        Req::new(self, "GET", path)
    }

    pub fn post(&self, path: &str) -> Req<'_> {
        Req::new(self, "POST", path)
    }

    pub fn patch(&self, path: &str) -> Req<'_> {
        Req::new(self, "PATCH", path)
    }

    pub fn delete(&self, path: &str) -> Req<'_> {
        Req::new(self, "DELETE", path)
    }

    pub fn request(&self, method: &'static str, path: &str) -> Req<'_> {
        Req::new(self, method, path)
    }

    /// Create a ticket as the human; returns its id.
    pub fn create(&self, title: &str, body: &str) -> String {
        let out = self
            .post("/api/v1/tickets")
            .token(&self.tokens.human)
            .json(serde_json::json!({ "title": title, "body": body }))
            .send()
            .expect(201);
        out["ticket"].as_str().unwrap().to_string()
    }

    /// Create a ticket with a complete brief and mark it ready; returns its id.
    pub fn ready_ticket(&self, title: &str) -> String {
        let id = self.create(title, COMPLETE_BRIEF);
        self.post(&format!("/api/v1/tickets/{id}/mark-ready"))
            .token(&self.tokens.human)
            .send()
            .expect(200);
        id
    }

    /// The ticket as `GET /tickets/{id}` returns it.
    pub fn show(&self, id: &str) -> Value {
        self.get(&format!("/api/v1/tickets/{id}"))
            .token(&self.tokens.human)
            .send()
            .expect(200)
    }

    /// GET each `(path, token)` again until one round is answered wholly from memory
    /// (`Cache-Status: yoi; hit`); their bodies. That is the fixed point after which the
    /// server keeps these answers, and the tokens that asked, until something it watches
    /// changes (with SQLite, once the database has been quiet for
    /// `yoi_db::read_your_writes::QUIET`). The server says so only when asked, so this polls;
    /// the deadline turns a hang into a failure.
    pub fn until_kept(&self, requests: &[(&str, &str)]) -> Vec<Value> {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let answers: Vec<Resp> = requests
                .iter()
                .map(|(path, token)| self.get(path).token(token).send())
                .collect();
            if answers.iter().all(|r| r.cache_status == "yoi; hit") {
                return answers.into_iter().map(|r| r.expect(200)).collect();
            }
            let statuses: Vec<&str> = answers.iter().map(|r| r.cache_status.as_str()).collect();
            assert!(
                std::time::Instant::now() < deadline,
                "the server never answered {requests:?} from memory: {statuses:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Every file (and folder) under the tickets folder with the SHA-256 of its bytes.
    pub fn tree(&self) -> BTreeMap<String, String> {
        tree_of(&self.root.join(".yoi/tickets"))
    }

    /// Shut the server down through its shutdown future and wait for `serve` to return Ok.
    pub fn stop(mut self) -> Stopped {
        self.shutdown().expect("the server stops cleanly");
        Stopped {
            root: self.root.clone(),
            database_url: self.database_url.clone(),
            admin: self.admin.take().unwrap(),
            tokens: self.tokens.clone(),
            dir: self.dir.take().unwrap(),
        }
    }

    fn shutdown(&mut self) -> Result<(), String> {
        // Close pooled keep-alive connections first: graceful shutdown waits for open ones.
        self.agent.take();
        if let Some(tx) = self.stop_tx.take() {
            let _ = tx.send(());
        }
        match self.thread.take() {
            Some(t) => match t.join() {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err("the server thread panicked".into()),
            },
            None => Ok(()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// What is left after the server stopped: its folder and its database.
pub struct Stopped {
    pub root: std::path::PathBuf,
    pub database_url: String,
    pub admin: Admin,
    tokens: Tokens,
    dir: tempfile::TempDir,
}

impl Stopped {
    /// Start a server again on the same folder and database, with the same tokens.
    pub fn restart(self, orchestrate: bool, configure: impl FnOnce(&mut Workspace)) -> Server {
        let mut ws = self.workspace();
        configure(&mut ws);
        Server::launch(ws, self.dir, self.admin, self.tokens, orchestrate)
    }

    pub fn workspace(&self) -> Workspace {
        let mut ws = Workspace::open(&self.root).unwrap();
        ws.config.database.url = Some(self.database_url.clone());
        ws
    }

    /// Doctor over files and index as the server left them.
    pub fn doctor(&self) -> Report {
        self.admin.doctor(&self.workspace())
    }
}

pub fn tree_of(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                out.insert(format!("{rel}/"), "dir".into());
                walk(base, &path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(rel, yoi_core::sha256_hex(&bytes));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// One request under construction.
pub struct Req<'a> {
    server: &'a Server,
    method: &'static str,
    path: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
}

impl<'a> Req<'a> {
    fn new(server: &'a Server, method: &'static str, path: &str) -> Self {
        Req {
            server,
            method,
            path: path.to_string(),
            headers: Vec::new(),
            body: None,
        }
    }

    pub fn token(self, secret: &str) -> Self {
        self.header("Authorization", &format!("Bearer {secret}"))
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The `Idempotency-Key` header.
    pub fn key(self, key: &str) -> Self {
        self.header("Idempotency-Key", key)
    }

    pub fn json(self, value: Value) -> Self {
        self.raw(serde_json::to_vec(&value).unwrap())
    }

    pub fn raw(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.body = Some(bytes.into());
        self
    }

    pub fn send(self) -> Resp {
        let agent = self.server.agent();
        let url = format!("{}{}", self.server.base, self.path);
        let mut b = ureq::http::Request::builder().method(self.method).uri(&url);
        for (k, v) in &self.headers {
            b = b.header(k.as_str(), v.as_str());
        }
        let result = match self.body {
            Some(body) => agent.run(
                b.header("Content-Type", "application/json")
                    .body(body)
                    .unwrap(),
            ),
            None => agent.run(b.body(()).unwrap()),
        };
        let mut resp =
            result.unwrap_or_else(|e| panic!("{} {}: transport error: {e}", self.method, url));
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let cache_status = resp
            .headers()
            .get("cache-status")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Resp {
            method: self.method,
            path: self.path,
            status,
            content_type,
            cache_status,
            text,
            json,
        }
    }
}

/// A response: status, raw text, and the body parsed as JSON (`Null` when it is not JSON).
#[derive(Debug, Clone)]
pub struct Resp {
    pub method: &'static str,
    pub path: String,
    pub status: u16,
    pub content_type: String,
    /// How the answer met the server's kept ones (`Cache-Status`; empty when it says nothing).
    pub cache_status: String,
    pub text: String,
    pub json: Value,
}

impl Resp {
    /// Assert the status; returns the JSON body.
    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(
            self.status, status,
            "{} {} answered {}: {}",
            self.method, self.path, self.status, self.text
        );
        self.json
    }

    /// Assert the status and the JSON error shape `{ "error": { "code", "message", ... } }`
    /// with this code; returns the error object.
    #[track_caller]
    pub fn expect_error(self, status: u16, code: &str) -> Value {
        assert_eq!(
            self.status, status,
            "{} {} answered {}: {}",
            self.method, self.path, self.status, self.text
        );
        assert!(
            self.content_type.starts_with("application/json"),
            "{} {}: error is not JSON ({}): {}",
            self.method,
            self.path,
            self.content_type,
            self.text
        );
        let err = &self.json["error"];
        assert_eq!(
            err["code"], code,
            "{} {}: wrong error code: {}",
            self.method, self.path, self.text
        );
        assert!(
            err["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{} {}: error without a message: {}",
            self.method,
            self.path,
            self.text
        );
        let keys: Vec<&String> = self.json.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["error"],
            "only `error` at the top level: {}",
            self.text
        );
        err.clone()
    }
}

/// An operation context for preparing a workspace with the store before the server starts.
pub fn ctx(principal: Principal) -> Ctx {
    Ctx::new(principal, yoi_server::auth::now())
}

/// With the store alone (no server): create a ticket and walk it to `done` the way the
/// orchestrator and the merge service would. Returns its id.
pub fn prepare_done_ticket(ws: &Workspace, title: &str) -> String {
    use yoi_store::ops;
    let human = ctx(Principal::human("alice"));
    let req = ops::TransitionRequest::default();
    let id = ops::create(
        ws,
        &human,
        &ops::CreateRequest {
            title: title.into(),
            body: COMPLETE_BRIEF.into(),
            depends_on: Vec::new(),
        },
    )
    .unwrap()
    .ticket
    .to_string();
    ops::mark_ready(ws, &human, &id, &req).unwrap();
    ops::queue(ws, &human, &id, &req).unwrap();
    let evidence = ops::AcceptEvidence {
        branch: format!("yoi/{id}"),
        worktree: format!(".worktree/{id}"),
        base_commit: "0".repeat(40),
        assignment: "asg-1".into(),
        decision: "Implementation ready.".into(),
    };
    ops::accept(ws, &ctx(Principal::orchestrator()), &id, &req, &evidence).unwrap();
    let merge = ops::MergeEvidence {
        target_ref: "refs/heads/main".into(),
        before: "0".repeat(40),
        after: "1".repeat(40),
        commit: "1".repeat(40),
    };
    ops::complete(ws, &ctx(Principal::service()), &id, &req, &merge).unwrap();
    id
}

/// The API path of a ticket, plus `rest` (e.g. `/queue`).
pub fn t(id: &str, rest: &str) -> String {
    format!("/api/v1/tickets/{id}{rest}")
}

/// The kinds of a ticket's thread events, in order, from `GET /tickets/{id}`.
pub fn event_kinds(ticket: &Value) -> Vec<String> {
    ticket["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect()
}

/// A ticket id with a valid shape that names no ticket.
pub const UNKNOWN_ID: &str = "01JZZZZZZZZZZZZZZZZZZZZZZZ";
