//! A stateful fake GitHub on loopback (docs/forge.md, "Tests"). Every request yoi makes is
//! checked against GitHub's official OpenAPI description ([`openapi`]) — its operation, path
//! and query parameters and its JSON body — and so is every answer the fake gives; anything
//! the description does not allow is a violation, and a fake dropped with violations fails the
//! test. Pushes go to a real `git http-backend` behind basic auth (the token as password), so
//! a branch really lands in a bare repository, which is where the fake reads heads from and
//! where its merges happen.
//!
//! The test drives the rest: check runs and statuses, reviews, permissions, required checks,
//! a person's push, and faults (a status, either rate limit, a lost answer, a request held
//! while the test kills its sender). Each check run and status also makes the webhook GitHub
//! would send for it ([`FakeGitHub::take_webhooks`]), for the test to deliver — or drop,
//! repeat or reorder — as it pleases.

pub mod http;
pub mod openapi;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};

use serde_json::{json, Value};

use http::{Request, Response, Server};

/// A fault the fake answers the next matching API request with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// This status and a `message`.
    Status(u16),
    /// The primary limit: 403, `X-RateLimit-Remaining: 0`, `X-RateLimit-Reset: reset`.
    PrimaryLimit { reset: u64 },
    /// The secondary limit: 403 or 429 with `Retry-After`.
    SecondaryLimit { status: u16, retry_after: u64 },
    /// Carry the request out, then close without answering (a lost response).
    DropAnswer,
    /// Hold the request, nothing done yet, until [`FakeGitHub::release`]; then carry it out
    /// and answer — into a closed connection when its sender died meanwhile.
    Hold,
}

/// A webhook delivery the fake would send: the event, its `X-GitHub-Delivery` id and the
/// JSON body (unsigned: the test signs it with its secret).
#[derive(Debug, Clone)]
pub struct Webhook {
    pub event: String,
    pub delivery: String,
    pub body: Vec<u8>,
}

/// Requests held by [`Fault::Hold`]: how many arrived, and whether they may go on.
#[derive(Default)]
struct Holds {
    arrived: u64,
    released: bool,
}

/// One request the fake received and what it answered.
#[derive(Debug, Clone)]
pub struct Logged {
    pub method: String,
    pub path: String,
    pub query: String,
    pub status: u16,
    pub body: Value,
}

#[derive(Debug, Clone)]
pub struct Pull {
    pub number: u64,
    pub id: u64,
    pub title: String,
    pub body: String,
    pub head: String,
    pub head_sha: String,
    pub base: String,
    pub state: String,
    pub draft: bool,
    pub merged: bool,
    pub merge_sha: Option<String>,
    pub merge_method: Option<String>,
}

#[derive(Debug, Clone)]
pub struct StatusRec {
    pub sha: String,
    pub context: String,
    pub state: String,
    pub description: String,
    pub at: String,
}

/// An issue of the fake: (number, title, body, author, labels, `labeled` events as (label,
/// actor)).
type IssueRec = (
    u64,
    String,
    String,
    String,
    Vec<String>,
    Vec<(String, String)>,
);

#[derive(Default)]
struct State {
    owner: String,
    repo: String,
    token: String,
    root: PathBuf,
    base_url: String,
    next_number: u64,
    next_id: u64,
    tick: u64,
    pulls: Vec<Pull>,
    check_runs: Vec<Value>,
    statuses: Vec<StatusRec>,
    reviews: Vec<(u64, Value)>,
    comments: Vec<(u64, Value)>,
    /// Issues, as [`IssueRec`].
    issues: Vec<IssueRec>,
    permissions: HashMap<String, String>,
    rules: HashMap<String, Vec<String>>,
    protection: HashMap<String, Vec<String>>,
    protection_forbidden: bool,
    rules_forbidden: bool,
    faults: VecDeque<(String, String, Fault)>,
    log: Vec<Logged>,
    violations: Vec<String>,
    not_modified: u64,
    webhooks: Vec<Webhook>,
    /// A GitHub App: (app id, installation id, its public key in PEM).
    app: Option<(u64, u64, PathBuf)>,
    /// Installation tokens issued, oldest first; only the newest is accepted.
    installation_tokens: Vec<String>,
    /// `expires_at` of the next installation token (Unix seconds).
    token_expiry: u64,
    /// Review comments on lines of a pull request's diff: (pull number, comment).
    review_comments: Vec<(u64, Value)>,
    /// Issues closed, with their `state_reason`.
    closed_issues: HashMap<u64, String>,
}

pub struct FakeGitHub {
    server: Option<Server>,
    state: Arc<Mutex<State>>,
    holds: Arc<(Mutex<Holds>, Condvar)>,
    dir: tempfile::TempDir,
    owner: String,
    repo: String,
}

impl FakeGitHub {
    /// A fake holding `owner/repo` (a bare repository with `main` at `seed`'s `main`, or empty)
    /// that accepts `token`.
    pub fn start(owner: &str, repo: &str, token: &str, seed: Option<&Path>) -> FakeGitHub {
        // Load (or fail on) the description before anything is served.
        openapi::description();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("git");
        let bare = root.join(owner).join(format!("{repo}.git"));
        std::fs::create_dir_all(&bare).unwrap();
        crate::git(&bare, &["init", "-q", "--bare", "-b", "main"]);
        if let Some(seed) = seed {
            crate::git(
                seed,
                &["push", "-q", bare.to_str().unwrap(), "main:refs/heads/main"],
            );
        }
        let state = Arc::new(Mutex::new(State {
            owner: owner.into(),
            repo: repo.into(),
            token: token.into(),
            root,
            next_number: 1,
            next_id: 1000,
            ..Default::default()
        }));
        let s = state.clone();
        let holds: Arc<(Mutex<Holds>, Condvar)> = Arc::default();
        let h = holds.clone();
        let server = Server::start(Arc::new(move |req: &Request| {
            hold_if_asked(&s, &h, req);
            handle(&s, req)
        }));
        state.lock().unwrap().base_url = format!("http://{}", server.addr());
        FakeGitHub {
            server: Some(server),
            state,
            holds,
            dir,
            owner: owner.into(),
            repo: repo.into(),
        }
    }

    /// The REST root to configure as `api_url`.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.server.as_ref().unwrap().addr())
    }

    /// The repository's git URL (basic auth: any user, the token as password).
    pub fn git_url(&self) -> String {
        format!("{}/git/{}/{}.git", self.api_url(), self.owner, self.repo)
    }

    /// The bare repository behind `git_url`.
    pub fn bare(&self) -> PathBuf {
        self.state
            .lock()
            .unwrap()
            .root
            .join(&self.owner)
            .join(format!("{}.git", self.repo))
    }

    /// The commit a branch of the bare repository points at.
    pub fn branch(&self, name: &str) -> Option<String> {
        rev(&self.bare(), name)
    }

    pub fn pulls(&self) -> Vec<Pull> {
        self.state.lock().unwrap().pulls.clone()
    }

    /// A person closes pull request `number` without merging it.
    pub fn close_pull(&self, number: u64) {
        let mut s = self.state.lock().unwrap();
        s.tick += 1;
        let p = s.pulls.iter_mut().find(|p| p.number == number).unwrap();
        p.state = "closed".into();
    }

    pub fn statuses(&self) -> Vec<StatusRec> {
        self.state.lock().unwrap().statuses.clone()
    }

    /// Every conversation comment: (number, author, body).
    pub fn comments(&self) -> Vec<(u64, String, String)> {
        self.state
            .lock()
            .unwrap()
            .comments
            .iter()
            .map(|(n, c)| {
                (
                    *n,
                    c["user"]["login"].as_str().unwrap_or_default().to_string(),
                    c["body"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    /// An open issue by `author`; its number.
    pub fn add_issue(&self, title: &str, body: &str, author: &str) -> u64 {
        let mut s = self.state.lock().unwrap();
        let n = s.next_number;
        s.next_number += 1;
        s.tick += 1;
        s.issues
            .push((n, title.into(), body.into(), author.into(), vec![], vec![]));
        n
    }

    /// A person edits issue `number`'s title and text.
    pub fn edit_issue(&self, number: u64, title: &str, body: &str) {
        let mut s = self.state.lock().unwrap();
        s.tick += 1;
        if let Some(i) = s.issues.iter_mut().find(|i| i.0 == number) {
            i.1 = title.into();
            i.2 = body.into();
        }
    }

    /// `actor` applies `label` to issue `number`.
    pub fn label_issue(&self, number: u64, label: &str, actor: &str) {
        let mut s = self.state.lock().unwrap();
        s.tick += 1;
        if let Some(i) = s.issues.iter_mut().find(|i| i.0 == number) {
            i.4.push(label.into());
            i.5.push((label.into(), actor.into()));
        }
    }

    /// `user`'s review comment on `path` line `line` of pull request `number`'s diff at
    /// `commit`; its id.
    pub fn add_review_comment(
        &self,
        number: u64,
        user: &str,
        path: &str,
        line: u64,
        commit: &str,
        body: &str,
    ) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.tick += 1;
        let id = s.next_id();
        let url = format!(
            "{}/{}/{}/pull/{number}#discussion_r{id}",
            s.base_url, s.owner, s.repo
        );
        let c = json!({
            "id": id, "node_id": format!("PRRC_{id}"), "pull_request_review_id": null,
            "diff_hunk": format!("@@ -1 +1 @@\n+{path}"), "path": path, "line": line,
            "original_line": line, "side": "RIGHT", "position": 1, "original_position": 1,
            "commit_id": commit, "original_commit_id": commit, "user": s.user_json(user),
            "body": body, "created_at": stamp(s.tick), "updated_at": stamp(s.tick),
            "html_url": url, "author_association": "COLLABORATOR",
            "url": format!("{}/repos/{}/{}/pulls/comments/{id}", s.base_url, s.owner, s.repo),
            "pull_request_url": format!("{}/repos/{}/{}/pulls/{number}", s.base_url, s.owner, s.repo),
            "_links": {"self": {"href": url}, "html": {"href": url}, "pull_request": {"href": url}},
        });
        s.review_comments.push((number, c));
        id
    }

    /// A GitHub App installed on the repository: installation tokens are issued for a JWT its
    /// key signed (checked with `public_key_pem` by `openssl`), and then accepted as the token,
    /// the newest one only.
    pub fn set_app(&self, app_id: u64, installation_id: u64, public_key_pem: &Path) {
        let mut s = self.state.lock().unwrap();
        s.app = Some((app_id, installation_id, public_key_pem.to_path_buf()));
        if s.token_expiry == 0 {
            s.token_expiry = 4_000_000_000;
        }
    }

    /// The `expires_at` (Unix seconds) of the installation tokens issued from now on.
    pub fn set_token_expiry(&self, unix: u64) {
        self.state.lock().unwrap().token_expiry = unix;
    }

    /// Installation tokens issued so far.
    pub fn installation_tokens(&self) -> Vec<String> {
        self.state.lock().unwrap().installation_tokens.clone()
    }

    /// An issue's state: `open`, or `closed` with its reason (`closed completed`).
    pub fn issue_state(&self, number: u64) -> String {
        match self.state.lock().unwrap().closed_issues.get(&number) {
            Some(reason) => format!("closed {reason}"),
            None => "open".into(),
        }
    }

    /// A person's comment on pull request (or issue) `number`.
    pub fn add_comment(&self, number: u64, user: &str, body: &str) {
        let mut s = self.state.lock().unwrap();
        s.tick += 1;
        let id = s.next_id();
        let c = s.comment_json(id, user, body);
        s.comments.push((number, c));
    }

    pub fn requests(&self) -> Vec<Logged> {
        self.state.lock().unwrap().log.clone()
    }

    /// Requests answered 304 Not Modified.
    pub fn not_modified(&self) -> u64 {
        self.state.lock().unwrap().not_modified
    }

    /// What the description did not allow, so far.
    pub fn violations(&self) -> Vec<String> {
        self.state.lock().unwrap().violations.clone()
    }

    /// The violations so far, forgotten (a test that provokes them on purpose).
    pub fn take_violations(&self) -> Vec<String> {
        std::mem::take(&mut self.state.lock().unwrap().violations)
    }

    /// Answer the next API request whose method is `method` and whose path contains `path`
    /// with `fault`.
    pub fn fault(&self, method: &str, path: &str, fault: Fault) {
        let mut s = self.state.lock().unwrap();
        s.faults.push_back((method.into(), path.into(), fault));
    }

    /// Block until a request held by [`Fault::Hold`] has arrived (two minutes at most).
    pub fn wait_held(&self) {
        let (lock, cv) = &*self.holds;
        let guard = lock.lock().unwrap();
        let (guard, timeout) = cv
            .wait_timeout_while(guard, std::time::Duration::from_secs(120), |h| {
                h.arrived == 0
            })
            .unwrap();
        assert!(
            !timeout.timed_out() && guard.arrived > 0,
            "no request arrived at the hold"
        );
    }

    /// Let every held request (and any later one) go on.
    pub fn release(&self) {
        let (lock, cv) = &*self.holds;
        lock.lock().unwrap().released = true;
        cv.notify_all();
    }

    /// The webhooks GitHub would have sent since the last call, oldest first.
    pub fn take_webhooks(&self) -> Vec<Webhook> {
        std::mem::take(&mut self.state.lock().unwrap().webhooks)
    }

    /// A check run for `sha`: `conclusion` None while it runs.
    pub fn add_check_run(&self, sha: &str, name: &str, conclusion: Option<&str>) {
        let mut s = self.state.lock().unwrap();
        s.tick += 1;
        let id = s.next_id();
        let at = stamp(s.tick);
        let url = format!("{}/{}/{}/runs/{id}", s.base_url, s.owner, s.repo);
        let run = json!({
            "id": id,
            "name": name,
            "head_sha": sha,
            "status": if conclusion.is_some() { "completed" } else { "in_progress" },
            "conclusion": conclusion,
            "started_at": at,
            "completed_at": conclusion.map(|_| at.clone()),
            "html_url": url,
            "output": {"title": format!("{name}: {}", conclusion.unwrap_or("running")), "summary": format!("{name} summary"), "annotations_count": 0, "annotations_url": format!("{url}/annotations")},
        });
        s.check_runs.push(run.clone());
        let action = if conclusion.is_some() {
            "completed"
        } else {
            "created"
        };
        let body = json!({"action": action, "check_run": run,
                          "repository": s.repo_json(), "sender": s.user_json("ci-bot")});
        s.webhook("check_run", body);
    }

    /// A legacy commit status for `sha`, as a CI system would post it.
    pub fn add_status(&self, sha: &str, context: &str, state: &str) {
        let mut s = self.state.lock().unwrap();
        s.tick += 1;
        let at = stamp(s.tick);
        s.statuses.push(StatusRec {
            sha: sha.into(),
            context: context.into(),
            state: state.into(),
            description: String::new(),
            at: at.clone(),
        });
        let id = s.next_id();
        let body = json!({"id": id, "sha": sha, "name": format!("{}/{}", s.owner, s.repo),
                          "context": context, "state": state, "description": null,
                          "target_url": null, "created_at": at, "updated_at": at,
                          "repository": s.repo_json(), "sender": s.user_json("ci-bot")});
        s.webhook("status", body);
    }

    /// A review on pull request `number` by `user` for `commit`.
    pub fn add_review(&self, number: u64, user: &str, state: &str, commit: &str) {
        let mut s = self.state.lock().unwrap();
        s.tick += 1;
        let id = s.next_id();
        let at = stamp(s.tick);
        s.reviews.push((
            number,
            json!({"id": id, "user": {"login": user}, "state": state, "commit_id": commit, "body": "", "submitted_at": at, "author_association": "COLLABORATOR"}),
        ));
    }

    pub fn set_permission(&self, user: &str, permission: &str) {
        self.state
            .lock()
            .unwrap()
            .permissions
            .insert(user.into(), permission.into());
    }

    /// Required checks of `branch` by a ruleset.
    pub fn set_ruleset_checks(&self, branch: &str, checks: &[&str]) {
        self.state.lock().unwrap().rules.insert(
            branch.into(),
            checks.iter().map(|c| c.to_string()).collect(),
        );
    }

    /// Required checks of `branch` by classic protection.
    pub fn set_protection_checks(&self, branch: &str, checks: &[&str]) {
        self.state.lock().unwrap().protection.insert(
            branch.into(),
            checks.iter().map(|c| c.to_string()).collect(),
        );
    }

    /// The token may read neither rulesets nor classic protection.
    pub fn forbid_required_checks(&self) {
        let mut s = self.state.lock().unwrap();
        s.protection_forbidden = true;
        s.rules_forbidden = true;
    }

    /// A person's commit on `branch` (creating `file`), pushed straight to the bare repository.
    pub fn push_as_person(&self, branch: &str, file: &str, text: &str) -> String {
        let work = self
            .dir
            .path()
            .join(format!("person-{}", self.state.lock().unwrap().next_id()));
        let bare = self.bare();
        crate::git(
            self.dir.path(),
            &[
                "clone",
                "-q",
                bare.to_str().unwrap(),
                work.to_str().unwrap(),
            ],
        );
        crate::git(&work, &["checkout", "-q", branch]);
        std::fs::write(work.join(file), text).unwrap();
        crate::git(&work, &["add", file]);
        crate::git(&work, &["commit", "-q", "-m", &format!("person: {file}")]);
        crate::git(&work, &["push", "-q", "origin", branch]);
        rev(&bare, branch).unwrap()
    }

    /// Fail unless the description allowed every request and answer so far.
    #[track_caller]
    pub fn assert_conforming(&self) {
        let v = self.violations();
        assert!(
            v.is_empty(),
            "requests or answers the OpenAPI description does not allow:\n{}",
            v.join("\n")
        );
    }
}

impl Drop for FakeGitHub {
    fn drop(&mut self) {
        // A request still held would keep its connection thread, which the server joins.
        self.release();
        // Stop serving (joining every connection and its git process) before the check.
        self.server.take();
        if !std::thread::panicking() {
            self.assert_conforming();
        }
    }
}

impl State {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Whether `token` may call the API and push: the personal token (until an App is
    /// installed), or the newest installation token.
    fn accepts(&self, token: &str) -> bool {
        (self.app.is_none() && token == self.token)
            || self.installation_tokens.last().map(String::as_str) == Some(token)
    }

    fn webhook(&mut self, event: &str, body: Value) {
        let n = self.next_id();
        self.webhooks.push(Webhook {
            event: event.into(),
            delivery: format!("00000000-0000-4000-8000-{n:012}"),
            body: body.to_string().into_bytes(),
        });
    }

    fn bare(&self) -> PathBuf {
        self.root
            .join(&self.owner)
            .join(format!("{}.git", self.repo))
    }

    fn repo_json(&self) -> Value {
        json!({
            "id": 1, "name": self.repo, "full_name": format!("{}/{}", self.owner, self.repo),
            "owner": self.user_json(&self.owner),
            "html_url": format!("{}/{}/{}", self.base_url, self.owner, self.repo),
            "private": false, "default_branch": "main",
        })
    }

    fn comment_json(&self, id: u64, user: &str, body: &str) -> Value {
        json!({"id": id, "body": body, "user": self.user_json(user),
               "created_at": stamp(self.tick), "updated_at": stamp(self.tick),
               "author_association": "NONE",
               "html_url": format!("{}/{}/{}/issues#issuecomment-{id}", self.base_url, self.owner, self.repo)})
    }

    fn user_json(&self, login: &str) -> Value {
        json!({"login": login, "id": 7, "type": "User",
               "html_url": format!("{}/{login}", self.base_url)})
    }

    fn pull_json(&self, p: &Pull) -> Value {
        let url = format!(
            "{}/repos/{}/{}/pulls/{}",
            self.base_url, self.owner, self.repo, p.number
        );
        let side = |r: &str, sha: &str| {
            json!({"label": format!("{}:{r}", self.owner), "ref": r, "sha": sha,
                   "repo": self.repo_json(), "user": self.user_json(&self.owner)})
        };
        let base_sha = rev(&self.bare(), &p.base).unwrap_or_default();
        json!({
            "url": url, "id": p.id, "node_id": format!("PR_kw{}", p.id), "number": p.number,
            "state": p.state, "title": p.title,
            "body": p.body, "draft": p.draft, "locked": false,
            "html_url": format!("{}/{}/{}/pull/{}", self.base_url, self.owner, self.repo, p.number),
            "user": self.user_json("yoi-bot"),
            "head": side(&p.head, &p.head_sha), "base": side(&p.base, &base_sha),
            "merged": p.merged, "merged_at": p.merged.then(|| stamp(self.tick)),
            "closed_at": (p.state == "closed").then(|| stamp(self.tick)),
            "merge_commit_sha": p.merge_sha, "mergeable": true, "mergeable_state": "clean",
            "created_at": stamp(1), "updated_at": stamp(self.tick),
            "author_association": "OWNER",
        })
    }

    /// Move open pull requests' heads to where their branches are now, as GitHub does on push.
    fn refresh_heads(&mut self) {
        if !self.pulls.iter().any(|p| p.state == "open") {
            return;
        }
        // One git call for every branch, not one per pull request: a fake with a hundred open
        // pull requests answers each request as fast as with one.
        let out = crate::git_output(
            &self.bare(),
            &[
                "for-each-ref",
                "--format=%(refname:lstrip=2) %(objectname)",
                "refs/heads",
            ],
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let heads: HashMap<&str, &str> = text.lines().filter_map(|l| l.rsplit_once(' ')).collect();
        for p in self.pulls.iter_mut().filter(|p| p.state == "open") {
            if let Some(sha) = heads.get(p.head.as_str()) {
                p.head_sha = sha.to_string();
            }
        }
    }
}

fn stamp(tick: u64) -> String {
    format!(
        "2026-12-01T{:02}:{:02}:{:02}Z",
        (tick / 3600) % 24,
        (tick / 60) % 60,
        tick % 60
    )
}

fn rev(bare: &Path, branch: &str) -> Option<String> {
    let out = crate::git_output(
        bare,
        &[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}^{{commit}}"),
        ],
    );
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn json_response(status: u16, body: &Value, extra: Vec<(String, String)>) -> Response {
    let mut headers = vec![(
        "Content-Type".to_string(),
        "application/json; charset=utf-8".to_string(),
    )];
    headers.extend(extra);
    Response::Full {
        status,
        headers,
        body: if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        },
    }
}

/// Wait at a [`Fault::Hold`] meant for `req` until the test releases it; the fault is used up.
fn hold_if_asked(state: &Arc<Mutex<State>>, holds: &(Mutex<Holds>, Condvar), req: &Request) {
    {
        let mut s = state.lock().unwrap();
        let pos = s.faults.iter().position(|(m, p, f)| {
            *f == Fault::Hold && *m == req.method && req.path.contains(p.as_str())
        });
        match pos {
            Some(i) => s.faults.remove(i),
            None => return,
        };
    }
    let (lock, cv) = holds;
    let mut h = lock.lock().unwrap();
    h.arrived += 1;
    cv.notify_all();
    while !h.released {
        h = cv.wait(h).unwrap();
    }
}

fn handle(state: &Arc<Mutex<State>>, req: &Request) -> Response {
    if let Some(rest) = req.path.strip_prefix("/git/") {
        return git_backend(state, req, rest);
    }
    let mut s = state.lock().unwrap();
    let bearer = req.header("authorization").and_then(|a| {
        a.strip_prefix("Bearer ")
            .or_else(|| a.strip_prefix("token "))
    });
    let app_call = req.path.starts_with("/app/installations/");
    let token_ok = match (app_call, &s.app, bearer) {
        (true, Some(app), Some(jwt)) => {
            let scratch = s.root.clone();
            match jwt_ok(app, jwt, &scratch) {
                Ok(()) => true,
                Err(why) => {
                    s.violations
                        .push(format!("{} {}: a bad JWT: {why}", req.method, req.path));
                    false
                }
            }
        }
        (true, _, _) => false,
        (false, _, Some(t)) => s.accepts(t),
        (false, _, None) => false,
    };
    let limit_headers = |remaining: &str, reset: u64| {
        vec![
            ("X-RateLimit-Limit".to_string(), "5000".to_string()),
            ("X-RateLimit-Remaining".to_string(), remaining.to_string()),
            ("X-RateLimit-Reset".to_string(), reset.to_string()),
            ("X-RateLimit-Resource".to_string(), "core".to_string()),
        ]
    };
    let log = |s: &mut State, status: u16, body: &Value| {
        s.log.push(Logged {
            method: req.method.clone(),
            path: req.path.clone(),
            query: req.raw_query.clone(),
            status,
            body: serde_json::from_slice(&req.body).unwrap_or(Value::Null),
        });
        let _ = body;
    };
    if !token_ok {
        let body = json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"});
        log(&mut s, 401, &body);
        return json_response(401, &body, vec![]);
    }
    let pos = s
        .faults
        .iter()
        .position(|(m, p, _)| *m == req.method && req.path.contains(p.as_str()));
    let fault = pos.and_then(|i| s.faults.remove(i)).map(|(_, _, f)| f);
    let drop_answer = fault == Some(Fault::DropAnswer);
    match fault {
        Some(Fault::Status(code)) => {
            let body = json!({"message": "fault injected by the test"});
            log(&mut s, code, &body);
            return json_response(code, &body, vec![]);
        }
        Some(Fault::PrimaryLimit { reset }) => {
            let body = json!({"message": "API rate limit exceeded for user.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"});
            log(&mut s, 403, &body);
            return json_response(403, &body, limit_headers("0", reset));
        }
        Some(Fault::SecondaryLimit {
            status,
            retry_after,
        }) => {
            let body = json!({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"});
            log(&mut s, status, &body);
            let mut h = limit_headers("4000", 0);
            h.push(("Retry-After".into(), retry_after.to_string()));
            return json_response(status, &body, h);
        }
        _ => {}
    }
    if req.path == "/graphql" {
        let (status, body) = graphql(&mut s, req);
        log(&mut s, status, &body);
        return json_response(status, &body, limit_headers("4999", 0));
    }
    let desc = openapi::description();
    let Some(op) = desc.operation(&req.method, &req.path) else {
        let v = format!(
            "{} {}: no operation of the description",
            req.method, req.path
        );
        s.violations.push(v);
        let body = json!({"message": "Not Found"});
        log(&mut s, 404, &body);
        return json_response(404, &body, vec![]);
    };
    let mut problems = check_request(req, &op);
    let (status, body) = if problems.is_empty() {
        let params: HashMap<String, String> = op.params.iter().cloned().collect();
        let sent: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        route(&mut s, &req.method, op.template, &params, req, &sent)
    } else {
        (422, json!({"message": "Validation Failed", "errors": []}))
    };
    // The answer is built from the schema of its status, and checked against it.
    let body = match response_schema(op.op, status) {
        Some(schema) if !body.is_null() => desc.answer(schema, body),
        _ => body,
    };
    match op.op["responses"].get(status.to_string()) {
        Some(r) => {
            if let Some(schema) = r["content"]["application/json"]["schema"].as_object() {
                let mut e = Vec::new();
                openapi::validate(&Value::Object(schema.clone()), &body, "", &mut e);
                problems.extend(e.into_iter().map(|e| format!("answer {status}{e}")));
            }
        }
        None if matches!(status, 401 | 403 | 404 | 429 | 500..=599) => {}
        None => problems.push(format!(
            "answer {status} is not a status the operation lists"
        )),
    }
    for p in problems {
        s.violations.push(format!(
            "{} {} ({}): {p}",
            req.method, req.path, op.template
        ));
    }
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let etag = format!("\"{:016x}\"", {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        h.finish()
    });
    let mut headers = limit_headers("4999", 0);
    if req.method == "GET" && status == 200 {
        if req.header("if-none-match") == Some(etag.as_str()) {
            s.not_modified += 1;
            log(&mut s, 304, &Value::Null);
            headers.push(("ETag".into(), etag));
            return Response::Full {
                status: 304,
                headers,
                body: Vec::new(),
            };
        }
        headers.push(("ETag".into(), etag));
    }
    log(&mut s, status, &body);
    if drop_answer {
        return Response::Drop;
    }
    json_response(status, &body, headers)
}

fn response_schema(op: &Value, status: u16) -> Option<&Value> {
    let s = &op["responses"][status.to_string()]["content"]["application/json"]["schema"];
    s.is_object().then_some(s)
}

/// Query parameters, path parameters and the JSON body, against the operation.
fn check_request(req: &Request, op: &openapi::Operation<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let params = op.op["parameters"].as_array().cloned().unwrap_or_default();
    let declared = |name: &str, place: &str| {
        params
            .iter()
            .find(|p| p["name"] == name && p["in"] == place)
            .cloned()
    };
    let check_value = |p: &Value, raw: &str, out: &mut Vec<String>| {
        let schema = &p["schema"];
        let value = match schema["type"].as_str() {
            Some("integer") => match raw.parse::<i64>() {
                Ok(n) => json!(n),
                Err(_) => {
                    out.push(format!(
                        "parameter `{}`: `{raw}` is not an integer",
                        p["name"]
                    ));
                    return;
                }
            },
            Some("boolean") => json!(raw == "true"),
            _ => json!(raw),
        };
        openapi::validate(schema, &value, &format!("parameter {}", p["name"]), out);
    };
    for (k, v) in &req.query {
        match declared(k, "query") {
            Some(p) => check_value(&p, v, &mut out),
            None => out.push(format!("query parameter `{k}` is not declared")),
        }
    }
    for p in &params {
        if p["in"] == "query"
            && p["required"] == true
            && req.query(p["name"].as_str().unwrap_or("")).is_none()
        {
            out.push(format!("required query parameter {} is missing", p["name"]));
        }
    }
    for (k, v) in &op.params {
        if let Some(p) = declared(k, "path") {
            check_value(&p, &http::decode(v), &mut out);
        }
    }
    let rb = &op.op["requestBody"];
    if req.body.is_empty() {
        if rb["required"] == true {
            out.push("the request body is required".into());
        }
    } else {
        match serde_json::from_slice::<Value>(&req.body) {
            Ok(v) => match rb["content"]["application/json"]["schema"].as_object() {
                Some(schema) => {
                    openapi::validate(&Value::Object(schema.clone()), &v, "body", &mut out)
                }
                None => out.push("the operation takes no JSON body".into()),
            },
            Err(e) => out.push(format!("the body is not JSON: {e}")),
        }
    }
    out
}

fn route(
    s: &mut State,
    method: &str,
    template: &str,
    p: &HashMap<String, String>,
    req: &Request,
    sent: &Value,
) -> (u16, Value) {
    let num = |k: &str| p.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let seg = |k: &str| p.get(k).map(|v| http::decode(v)).unwrap_or_default();
    let not_found = || {
        (
            404,
            json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}),
        )
    };
    if method == "POST" && template == "/app/installations/{installation_id}/access_tokens" {
        if s.app.as_ref().map(|a| a.1) != Some(num("installation_id")) {
            return not_found();
        }
        let n = s.next_id();
        let token = format!("ghs_fake_installation_{n}");
        s.installation_tokens.push(token.clone());
        let expires =
            yoi_core::Timestamp::from_unix_millis(s.token_expiry as i64 * 1000).to_string();
        return (
            201,
            json!({"token": token, "expires_at": expires,
                   "permissions": {"contents": "write", "pull_requests": "write", "statuses": "write", "checks": "read", "metadata": "read"},
                   "repository_selection": "selected"}),
        );
    }
    if seg("owner") != s.owner || seg("repo") != s.repo {
        return not_found();
    }
    s.refresh_heads();
    match (method, template.trim_start_matches("/repos/{owner}/{repo}")) {
        ("GET", "/pulls") => {
            let state = req.query("state").unwrap_or("open");
            // GitHub ignores a `head` without `OWNER:` and lists every pull request.
            let head = req.query("head").and_then(|h| h.split_once(':'));
            let list: Vec<Value> = s
                .pulls
                .iter()
                .filter(|pr| state == "all" || pr.state == state)
                .filter(|pr| head.is_none_or(|(o, b)| o == s.owner && pr.head == b))
                .map(|pr| s.pull_json(pr))
                .collect();
            (200, Value::Array(list))
        }
        ("POST", "/pulls") => {
            let head = sent["head"].as_str().unwrap_or_default().to_string();
            let base = sent["base"].as_str().unwrap_or_default().to_string();
            if s.pulls
                .iter()
                .any(|pr| pr.head == head && pr.state == "open")
            {
                return (
                    422,
                    json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom", "message": format!("A pull request already exists for {}:{head}.", s.owner)}]}),
                );
            }
            let (Some(head_sha), Some(_)) = (rev(&s.bare(), &head), rev(&s.bare(), &base)) else {
                return (
                    422,
                    json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "field": "head", "code": "invalid"}]}),
                );
            };
            let number = s.next_number;
            s.next_number += 1;
            s.tick += 1;
            let id = s.next_id();
            let pr = Pull {
                number,
                id,
                title: sent["title"].as_str().unwrap_or_default().into(),
                body: sent["body"].as_str().unwrap_or_default().into(),
                head,
                head_sha,
                base,
                state: "open".into(),
                draft: sent["draft"].as_bool().unwrap_or(false),
                merged: false,
                merge_sha: None,
                merge_method: None,
            };
            let v = s.pull_json(&pr);
            s.pulls.push(pr);
            (201, v)
        }
        ("GET", "/pulls/{pull_number}") => {
            match s.pulls.iter().find(|pr| pr.number == num("pull_number")) {
                Some(pr) => (200, s.pull_json(pr)),
                None => not_found(),
            }
        }
        ("PUT", "/pulls/{pull_number}/merge") => merge(s, num("pull_number"), sent),
        ("GET", "/commits/{ref}/check-runs") => {
            let sha = rev(&s.bare(), &seg("ref")).unwrap_or(seg("ref"));
            let runs: Vec<Value> = s
                .check_runs
                .iter()
                .filter(|r| r["head_sha"] == sha.as_str())
                .cloned()
                .collect();
            (200, json!({"total_count": runs.len(), "check_runs": runs}))
        }
        ("GET", "/commits/{ref}/status") => {
            let sha = rev(&s.bare(), &seg("ref")).unwrap_or(seg("ref"));
            let statuses: Vec<Value> = s
                .statuses
                .iter()
                .filter(|st| st.sha == sha)
                .map(|st| json!({"context": st.context, "state": st.state, "description": st.description, "created_at": st.at, "updated_at": st.at, "target_url": null}))
                .collect();
            let combined =
                if statuses.is_empty() || statuses.iter().any(|x| x["state"] == "pending") {
                    "pending"
                } else if statuses.iter().all(|x| x["state"] == "success") {
                    "success"
                } else {
                    "failure"
                };
            (
                200,
                json!({"state": combined, "sha": sha, "total_count": statuses.len(), "statuses": statuses, "repository": s.repo_json()}),
            )
        }
        ("POST", "/statuses/{sha}") => {
            s.tick += 1;
            let at = stamp(s.tick);
            let rec = StatusRec {
                sha: seg("sha"),
                context: sent["context"].as_str().unwrap_or("default").into(),
                state: sent["state"].as_str().unwrap_or_default().into(),
                description: sent["description"].as_str().unwrap_or_default().into(),
                at: at.clone(),
            };
            let v = json!({"context": rec.context, "state": rec.state, "description": rec.description, "created_at": at, "updated_at": at, "creator": s.user_json("yoi-bot")});
            s.statuses.push(rec);
            (201, v)
        }
        ("GET", "/pulls/{pull_number}/reviews") => {
            let n = num("pull_number");
            let list: Vec<Value> = s
                .reviews
                .iter()
                .filter(|(k, _)| *k == n)
                .map(|(_, r)| r.clone())
                .collect();
            (200, Value::Array(list))
        }
        ("GET", "/rules/branches/{branch}") => {
            if s.rules_forbidden {
                return not_found();
            }
            let checks = s.rules.get(&seg("branch")).cloned().unwrap_or_default();
            if checks.is_empty() {
                return (200, json!([]));
            }
            let list: Vec<Value> = checks.iter().map(|c| json!({"context": c})).collect();
            (
                200,
                json!([{"type": "required_status_checks", "ruleset_source_type": "Repository", "ruleset_source": format!("{}/{}", s.owner, s.repo), "ruleset_id": 1, "parameters": {"strict_required_status_checks_policy": false, "required_status_checks": list}}]),
            )
        }
        ("GET", "/branches/{branch}/protection/required_status_checks") => {
            if s.protection_forbidden {
                return (
                    403,
                    json!({"message": "Resource not accessible by personal access token", "documentation_url": "https://docs.github.com/rest"}),
                );
            }
            match s.protection.get(&seg("branch")) {
                Some(checks) => (
                    200,
                    json!({"strict": false, "contexts": checks, "checks": checks.iter().map(|c| json!({"context": c, "app_id": null})).collect::<Vec<_>>()}),
                ),
                None => (
                    404,
                    json!({"message": "Branch not protected", "documentation_url": "https://docs.github.com/rest"}),
                ),
            }
        }
        ("POST", "/issues/{issue_number}/comments") => {
            let n = num("issue_number");
            let body = sent["body"].as_str().unwrap_or_default().to_string();
            s.tick += 1;
            let id = s.next_id();
            let c = s.comment_json(id, "yoi-bot", &body);
            s.comments.push((n, c.clone()));
            (201, c)
        }
        ("GET", "/issues") => {
            let labels: Vec<&str> = req
                .query("labels")
                .map(|l| l.split(',').collect())
                .unwrap_or_default();
            let list: Vec<Value> = s
                .issues
                .iter()
                .filter(|i| labels.iter().all(|l| i.4.iter().any(|x| x == l)))
                .filter(|i| {
                    let closed = s.closed_issues.contains_key(&i.0);
                    match req.query("state").unwrap_or("open") {
                        "all" => true,
                        "closed" => closed,
                        _ => !closed,
                    }
                })
                .map(|i| {
                    json!({
                        "id": i.0 + 5000, "number": i.0, "title": i.1, "body": i.2, "state": "open",
                        "user": s.user_json(&i.3),
                        "labels": i.4.iter().map(|l| json!({"name": l})).collect::<Vec<_>>(),
                        "html_url": format!("{}/{}/{}/issues/{}", s.base_url, s.owner, s.repo, i.0),
                        "created_at": stamp(1), "updated_at": stamp(s.tick),
                        "author_association": "NONE",
                    })
                })
                .collect();
            (200, Value::Array(list))
        }
        ("GET", "/pulls/{pull_number}/comments") => {
            let n = num("pull_number");
            let list: Vec<Value> = s
                .review_comments
                .iter()
                .filter(|(k, _)| *k == n)
                .map(|(_, c)| c.clone())
                .collect();
            (200, Value::Array(list))
        }
        ("GET", "/issues/{issue_number}") | ("PATCH", "/issues/{issue_number}") => {
            let n = num("issue_number");
            if method == "PATCH" && sent["state"] == "closed" {
                let reason = sent["state_reason"].as_str().unwrap_or("completed");
                s.closed_issues.insert(n, reason.to_string());
                s.tick += 1;
            }
            let Some(i) = s.issues.iter().find(|i| i.0 == n) else {
                return not_found();
            };
            let closed = s.closed_issues.get(&n);
            (
                200,
                json!({
                    "id": i.0 + 5000, "node_id": format!("I_{}", i.0), "number": i.0,
                    "title": i.1, "body": i.2,
                    "state": if closed.is_some() { "closed" } else { "open" },
                    "state_reason": closed,
                    "user": s.user_json(&i.3),
                    "labels": i.4.iter().map(|l| json!({"name": l})).collect::<Vec<_>>(),
                    "html_url": format!("{}/{}/{}/issues/{}", s.base_url, s.owner, s.repo, i.0),
                    "created_at": stamp(1), "updated_at": stamp(s.tick),
                    "closed_at": closed.map(|_| stamp(s.tick)),
                    "author_association": "NONE",
                }),
            )
        }
        ("GET", "/issues/{issue_number}/events") => {
            let n = num("issue_number");
            let Some(issue) = s.issues.iter().find(|i| i.0 == n) else {
                return not_found();
            };
            let list: Vec<Value> = issue
                .5
                .iter()
                .enumerate()
                .map(|(k, (label, actor))| {
                    json!({
                        "id": 9000 + k, "event": "labeled", "actor": s.user_json(actor),
                        "label": {"name": label, "color": "ededed"},
                        "commit_id": null, "commit_url": null, "created_at": stamp(s.tick),
                        "performed_via_github_app": null,
                    })
                })
                .collect();
            (200, Value::Array(list))
        }
        ("GET", "/issues/{issue_number}/comments") => {
            let n = num("issue_number");
            let list: Vec<Value> = s
                .comments
                .iter()
                .filter(|(k, _)| *k == n)
                .map(|(_, c)| c.clone())
                .collect();
            (200, Value::Array(list))
        }
        ("GET", "/collaborators/{username}/permission") => {
            let user = seg("username");
            match s.permissions.get(&user) {
                Some(perm) => {
                    let u = s.user_json(&user);
                    (
                        200,
                        json!({"permission": perm, "role_name": perm, "user": u}),
                    )
                }
                None => (
                    404,
                    json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}),
                ),
            }
        }
        _ => {
            s.violations.push(format!(
                "{method} {template}: the fake does not serve this operation"
            ));
            not_found()
        }
    }
}

/// GraphQL, outside the REST description: only `markPullRequestReadyForReview` (REST cannot
/// change `draft`), with its `pullRequestId` variable; anything else is a violation.
fn graphql(s: &mut State, req: &Request) -> (u16, Value) {
    let sent: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let query = sent["query"].as_str().unwrap_or_default();
    if req.method != "POST"
        || !query.trim_start().starts_with("mutation")
        || !query.contains("markPullRequestReadyForReview(input: {pullRequestId: $id})")
    {
        s.violations.push(format!(
            "{} /graphql: not the ready-for-review mutation: {query}",
            req.method
        ));
        return (
            200,
            json!({"errors": [{"message": "the fake knows one mutation"}]}),
        );
    }
    let id = sent["variables"]["id"].as_str().unwrap_or_default();
    let Some(p) = s.pulls.iter_mut().find(|p| format!("PR_kw{}", p.id) == id) else {
        return (
            200,
            json!({"data": {"markPullRequestReadyForReview": null}, "errors": [{"type": "NOT_FOUND", "message": format!("Could not resolve to a node with the global id of '{id}'")}]}),
        );
    };
    p.draft = false;
    let number = p.number;
    s.tick += 1;
    (
        200,
        json!({"data": {"markPullRequestReadyForReview": {"pullRequest": {"number": number, "isDraft": false}}}}),
    )
}

/// A real merge in the bare repository: only if the head is exactly `sha` (409 otherwise).
fn merge(s: &mut State, number: u64, sent: &Value) -> (u16, Value) {
    let Some(i) = s.pulls.iter().position(|pr| pr.number == number) else {
        return (
            404,
            json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}),
        );
    };
    let pr = s.pulls[i].clone();
    if pr.state != "open" {
        return (
            405,
            json!({"message": "Pull Request is not mergeable", "documentation_url": "https://docs.github.com/rest"}),
        );
    }
    if let Some(sha) = sent["sha"].as_str() {
        if sha != pr.head_sha {
            return (
                409,
                json!({"message": "Head branch was modified. Review and try the merge again.", "documentation_url": "https://docs.github.com/rest"}),
            );
        }
    }
    let bare = s.bare();
    let base = rev(&bare, &pr.base).unwrap_or_default();
    let tree = crate::git_output(&bare, &["merge-tree", "--write-tree", &base, &pr.head_sha]);
    if !tree.status.success() {
        return (
            405,
            json!({"message": "Pull Request is not mergeable", "documentation_url": "https://docs.github.com/rest"}),
        );
    }
    let tree = String::from_utf8_lossy(&tree.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let method = sent["merge_method"].as_str().unwrap_or("merge").to_string();
    let title = sent["commit_title"].as_str().unwrap_or("Merge").to_string();
    let mut args = vec!["commit-tree".to_string(), tree, "-p".into(), base.clone()];
    if method == "merge" {
        args.extend(["-p".into(), pr.head_sha.clone()]);
    }
    args.extend(["-m".into(), title]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let merged = crate::git(&bare, &args).trim().to_string();
    crate::git(
        &bare,
        &[
            "update-ref",
            &format!("refs/heads/{}", pr.base),
            &merged,
            &base,
        ],
    );
    s.tick += 1;
    let p = &mut s.pulls[i];
    p.state = "closed".into();
    p.merged = true;
    p.merge_sha = Some(merged.clone());
    p.merge_method = Some(method);
    (
        200,
        json!({"sha": merged, "merged": true, "message": "Pull Request successfully merged"}),
    )
}

/// `git http-backend` as CGI, behind basic auth with the token as password.
fn git_backend(state: &Arc<Mutex<State>>, req: &Request, rest: &str) -> Response {
    let root = state.lock().unwrap().root.clone();
    let user = req
        .header("authorization")
        .and_then(|a| a.strip_prefix("Basic "))
        .and_then(|b| base64_decode(b.trim()))
        .and_then(|up| {
            let (u, p) = up.split_once(':')?;
            state.lock().unwrap().accepts(p).then(|| u.to_string())
        });
    let Some(user) = user else {
        return Response::Full {
            status: 401,
            headers: vec![(
                "WWW-Authenticate".into(),
                "Basic realm=\"fake github\"".into(),
            )],
            body: b"authentication required\n".to_vec(),
        };
    };
    http_backend(&root, &format!("/{rest}"), &user, req)
}

/// Run git's own `http-backend` as CGI for `req`, for the repositories under `root`, as `user`
/// (already authenticated), and turn its output into the answer. The fake forge and the test
/// remote (`git_remote`) both serve git this way.
pub(crate) fn http_backend(root: &Path, path_info: &str, user: &str, req: &Request) -> Response {
    let mut cmd = Command::new("git");
    cmd.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", path_info)
        .env("REQUEST_METHOD", &req.method)
        .env("QUERY_STRING", &req.raw_query)
        .env("REMOTE_USER", user)
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("CONTENT_LENGTH", req.body.len().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (h, env) in [
        ("content-type", "CONTENT_TYPE"),
        ("content-encoding", "HTTP_CONTENT_ENCODING"),
        ("git-protocol", "GIT_PROTOCOL"),
    ] {
        if let Some(v) = req.header(h) {
            cmd.env(env, v);
        }
    }
    let mut child = cmd.spawn().expect("git http-backend starts");
    let mut stdin = child.stdin.take().unwrap();
    let body = req.body.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(&body);
    });
    let out = child.wait_with_output().expect("git http-backend runs");
    let _ = writer.join();
    let text = out.stdout;
    let split = text
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| text.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let Some((i, n)) = split else {
        return Response::Full {
            status: 500,
            headers: vec![],
            body: out.stderr,
        };
    };
    let mut status = 200;
    let mut headers = Vec::new();
    for line in String::from_utf8_lossy(&text[..i]).lines() {
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("status") {
                status = v
                    .trim()
                    .split(' ')
                    .next()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(500);
            } else {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
    }
    Response::Full {
        status,
        headers,
        body: text[i + n..].to_vec(),
    }
}

/// Standard or URL-safe base64 to text (basic auth's credentials, a JWT's parts).
pub(crate) fn base64_decode(s: &str) -> Option<String> {
    String::from_utf8(base64_bytes(s)?).ok()
}

/// Standard or URL-safe base64, padded or not.
fn base64_bytes(s: &str) -> Option<Vec<u8>> {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in s.bytes().filter(|c| *c != b'=') {
        let c = match c {
            b'-' => b'+',
            b'_' => b'/',
            c => c,
        };
        let v = T.iter().position(|t| *t == c)? as u32;
        bits = (bits << 6) | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    Some(out)
}

/// Whether `jwt` is a GitHub App JWT the fake's App signed: RS256, `iss` the App's id, valid
/// ten minutes at most, and its signature verified by `openssl` with the App's public key.
fn jwt_ok(app: &(u64, u64, PathBuf), jwt: &str, scratch: &Path) -> Result<(), String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, payload, sig] = parts[..] else {
        return Err("not three parts".into());
    };
    let json = |p: &str| {
        base64_bytes(p)
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .ok_or_else(|| format!("`{p}` is not base64url JSON"))
    };
    let (h, c) = (json(header)?, json(payload)?);
    if h["alg"] != "RS256" {
        return Err(format!("alg {}", h["alg"]));
    }
    if c["iss"] != app.0.to_string().as_str() && c["iss"] != app.0 {
        return Err(format!("iss {}", c["iss"]));
    }
    let (iat, exp) = (
        c["iat"].as_u64().unwrap_or(0),
        c["exp"].as_u64().unwrap_or(0),
    );
    if exp <= iat || exp - iat > 600 {
        return Err(format!("iat {iat} exp {exp}: at most ten minutes"));
    }
    let input = scratch.join("jwt-input");
    let signature = scratch.join("jwt-signature");
    std::fs::write(&input, format!("{header}.{payload}")).map_err(|e| e.to_string())?;
    std::fs::write(
        &signature,
        base64_bytes(sig).ok_or("signature not base64url")?,
    )
    .map_err(|e| e.to_string())?;
    let out = Command::new("openssl")
        .args(["dgst", "-sha256", "-verify"])
        .arg(&app.2)
        .arg("-signature")
        .arg(&signature)
        .arg(&input)
        .output()
        .map_err(|e| format!("openssl: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "the signature does not verify: {}",
            String::from_utf8_lossy(&out.stdout)
        ))
    }
}
