//! GitHub over REST (github.com, or Enterprise Server by its `/api/v3` root): the [`Forge`]
//! calls as GitHub's OpenAPI description defines them (the tests check every request and
//! answer against it, docs/forge.md).
//!
//! Every GET is conditional: the last `ETag` of a URL is sent as `If-None-Match`, and a 304
//! (which costs nothing against the primary limit) answers with the body kept from before.
//! Both rate limits are honoured: a 403 with `X-RateLimit-Remaining: 0` blocks every call until
//! `X-RateLimit-Reset`; a 403 or 429 with `Retry-After` blocks for that long (a 429 without it,
//! a minute). While blocked, a call returns [`ForgeError::RateLimited`] without sending.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{json, Value};
use yoi_core::forge::gate::{
    CheckKind, CheckResult, Conclusion, Required, RequiredSource, Review, ReviewState,
};
use yoi_core::forge::MergeMethod;

use crate::{
    ChangeRequest, ChangeState, Clock, Comment, Credential, Forge, ForgeError, Issue, LimitKind,
    MergeOutcome, NewChange, Permission, ReviewComment, Secret, StatusState,
};

/// How long a person's permission is trusted before it is asked again.
pub const PERMISSION_TTL_SECS: u64 = 300;

/// Characters left as they are in a path segment or query value.
const KEEP: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn enc(s: &str) -> String {
    utf8_percent_encode(s, KEEP).to_string()
}

/// A branch in a path: its slashes stay (GitHub's `{branch}` spans segments).
fn enc_branch(s: &str) -> String {
    s.split('/').map(enc).collect::<Vec<_>>().join("/")
}

/// A GitHub repository reached with one credential.
pub struct GitHub {
    api: String,
    owner: String,
    repo: String,
    credential: Credential,
    agent: ureq::Agent,
    clock: Clock,
    blocked: Mutex<Option<(LimitKind, u64)>>,
    etags: Mutex<HashMap<String, (String, Value)>>,
    permissions: Mutex<HashMap<String, (Permission, u64)>>,
    requests: std::sync::atomic::AtomicU64,
    /// A GitHub App's installation token and when it ends (Unix seconds).
    installation: Mutex<Option<(Secret, u64)>>,
}

/// An installation token is replaced this long before it ends.
pub const REFRESH_BEFORE_SECS: u64 = 300;

/// One answer: its status and its JSON body (`Null` when empty).
struct Answer {
    status: u16,
    body: Value,
}

impl GitHub {
    /// `api` is the REST root (`https://api.github.com`), `repo` is `OWNER/REPO`.
    pub fn new(api: &str, repo: &str, credential: Credential, clock: Clock) -> GitHub {
        let (owner, name) = repo.split_once('/').unwrap_or((repo, ""));
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(5)))
            .timeout_global(Some(Duration::from_secs(30)))
            .user_agent("yoi")
            .build()
            .into();
        GitHub {
            api: api.trim_end_matches('/').to_string(),
            owner: owner.into(),
            repo: name.into(),
            credential,
            agent,
            clock,
            blocked: Mutex::new(None),
            etags: Mutex::new(HashMap::new()),
            permissions: Mutex::new(HashMap::new()),
            requests: Default::default(),
            installation: Mutex::new(None),
        }
    }

    /// The token to send now (and to push with): the personal access token, or the App's
    /// installation token — a new one asked for with a fresh JWT when none is held or the one
    /// held ends within [`REFRESH_BEFORE_SECS`].
    pub fn current_token(&self) -> Result<Secret, ForgeError> {
        let (app_id, installation_id, key) = match &self.credential {
            Credential::Token(t) => return Ok(t.clone()),
            Credential::App {
                app_id,
                installation_id,
                key,
            } => (*app_id, *installation_id, key),
        };
        let now = (self.clock)();
        let mut held = self.installation.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((token, until)) = held.as_ref() {
            if *until > now + REFRESH_BEFORE_SECS {
                return Ok(token.clone());
            }
        }
        let jwt = crate::credential::app_jwt(app_id, key, now)?;
        let path = format!("/app/installations/{installation_id}/access_tokens");
        let a = self.call_with(&self.api, "POST", &path, &[], Some(json!({})), &jwt)?;
        if a.status != 201 {
            return Err(refused("POST", &path, &a));
        }
        let token = a.body["token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| invalid(&path, "an installation token answer without a token"))?;
        let until = a.body["expires_at"]
            .as_str()
            .and_then(|t| yoi_core::Timestamp::parse(t).ok())
            .map(|t| (t.unix_millis().max(0) / 1000) as u64)
            .ok_or_else(|| invalid(&path, "an installation token answer without expires_at"))?;
        let token = Secret::new(token);
        *held = Some((token.clone(), until));
        Ok(token)
    }

    /// From a workspace's `[forge]` section.
    pub fn from_section(
        section: &yoi_core::forge::ForgeSection,
        credential: Credential,
        clock: Clock,
    ) -> GitHub {
        GitHub::new(&section.api_url, &section.repo, credential, clock)
    }

    /// Requests sent so far (answered or not); a call refused while rate limited sends none.
    pub fn requests_sent(&self) -> u64 {
        self.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Until when (Unix seconds) nothing is sent, if a limit answered.
    pub fn blocked_until(&self) -> Option<(LimitKind, u64)> {
        let now = (self.clock)();
        let b = *self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        b.filter(|(_, until)| *until > now)
    }

    fn repo_path(&self) -> String {
        format!("/repos/{}/{}", enc(&self.owner), enc(&self.repo))
    }

    fn call(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        body: Option<Value>,
    ) -> Result<Answer, ForgeError> {
        self.call_at(&self.api, method, path, query, body)
    }

    /// GraphQL's endpoint: `https://api.github.com/graphql`, or `https://HOST/api/graphql` on
    /// Enterprise Server (whose REST root is `https://HOST/api/v3`).
    fn graphql_root(&self) -> String {
        match self.api.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api"),
            None => self.api.clone(),
        }
    }

    fn call_at(
        &self,
        root: &str,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        body: Option<Value>,
    ) -> Result<Answer, ForgeError> {
        if let Some((kind, until)) = self.blocked_until() {
            return Err(ForgeError::RateLimited { kind, until });
        }
        let token = self.current_token()?;
        self.call_with(root, method, path, query, body, &token)
    }

    fn call_with(
        &self,
        root: &str,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        body: Option<Value>,
        token: &Secret,
    ) -> Result<Answer, ForgeError> {
        if let Some((kind, until)) = self.blocked_until() {
            return Err(ForgeError::RateLimited { kind, until });
        }
        let mut url = format!("{root}{path}");
        for (i, (k, v)) in query.iter().enumerate() {
            url.push(if i == 0 { '?' } else { '&' });
            url.push_str(&format!("{k}={}", enc(v)));
        }
        let auth = format!("Bearer {}", token.expose());
        let etag = (method == "GET")
            .then(|| {
                let cache = self.etags.lock().unwrap_or_else(|e| e.into_inner());
                cache.get(&url).map(|(t, _)| t.clone())
            })
            .flatten();
        let unreachable = |e: ureq::Error| ForgeError::Unreachable {
            url: url.clone(),
            reason: e.to_string(),
        };
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        macro_rules! with_headers {
            ($rb:expr) => {{
                let rb = $rb
                    .header("Authorization", &auth)
                    .header("Accept", "application/vnd.github+json")
                    .header("X-GitHub-Api-Version", "2022-11-28");
                match &etag {
                    Some(t) => rb.header("If-None-Match", t),
                    None => rb,
                }
            }};
        }
        let sent = match method {
            "GET" => with_headers!(self.agent.get(&url)).call(),
            "POST" => with_headers!(self.agent.post(&url)).send_json(body.unwrap_or(Value::Null)),
            "PUT" => with_headers!(self.agent.put(&url)).send_json(body.unwrap_or(Value::Null)),
            "PATCH" => with_headers!(self.agent.patch(&url)).send_json(body.unwrap_or(Value::Null)),
            other => {
                return Err(ForgeError::Invalid {
                    method: other.into(),
                    path: path.into(),
                    reason: "unsupported method".into(),
                })
            }
        };
        let mut resp = sent.map_err(unreachable)?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let new_etag = header("etag");
        let retry_after = header("retry-after").and_then(|v| v.trim().parse::<u64>().ok());
        let remaining = header("x-ratelimit-remaining");
        let reset = header("x-ratelimit-reset").and_then(|v| v.trim().parse::<u64>().ok());
        let text = resp
            .body_mut()
            .with_config()
            .limit(32 * 1024 * 1024)
            .read_to_string()
            .map_err(unreachable)?;
        let now = (self.clock)();
        if status == 403 || status == 429 {
            let limit = match (retry_after, remaining.as_deref(), reset) {
                (Some(secs), _, _) => Some((LimitKind::Secondary, now + secs.max(1))),
                (None, Some("0"), Some(reset)) => Some((LimitKind::Primary, reset.max(now + 1))),
                (None, _, _) if status == 429 => Some((LimitKind::Secondary, now + 60)),
                _ => None,
            };
            if let Some((kind, until)) = limit {
                *self.blocked.lock().unwrap_or_else(|e| e.into_inner()) = Some((kind, until));
                tracing::warn!(%kind, until, path, "the forge's rate limit answered");
                return Err(ForgeError::RateLimited { kind, until });
            }
        }
        if status == 304 {
            let cache = self.etags.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, body)) = cache.get(&url) {
                return Ok(Answer {
                    status: 200,
                    body: body.clone(),
                });
            }
        }
        let parsed = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).map_err(|e| ForgeError::Invalid {
                method: method.into(),
                path: path.into(),
                reason: e.to_string(),
            })?
        };
        if method == "GET" && status == 200 {
            if let Some(t) = new_etag {
                let mut cache = self.etags.lock().unwrap_or_else(|e| e.into_inner());
                cache.insert(url.clone(), (t, parsed.clone()));
            }
        }
        Ok(Answer {
            status,
            body: parsed,
        })
    }

    /// `call`, with anything but 2xx as [`ForgeError::Refused`].
    fn ok(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        body: Option<Value>,
    ) -> Result<Value, ForgeError> {
        let a = self.call(method, path, query, body)?;
        if (200..300).contains(&a.status) {
            Ok(a.body)
        } else {
            Err(refused(method, path, &a))
        }
    }
}

fn refused(method: &str, path: &str, a: &Answer) -> ForgeError {
    ForgeError::Refused {
        method: method.into(),
        path: path.into(),
        status: a.status,
        message: a.body["message"]
            .as_str()
            .unwrap_or("no message")
            .chars()
            .take(300)
            .collect(),
    }
}

fn invalid(path: &str, reason: &str) -> ForgeError {
    ForgeError::Invalid {
        method: "GET".into(),
        path: path.into(),
        reason: reason.into(),
    }
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn change_of(v: &Value, path: &str) -> Result<ChangeRequest, ForgeError> {
    let number = v["number"]
        .as_u64()
        .ok_or_else(|| invalid(path, "a pull request without a number"))?;
    let merged = v["merged_at"].is_string() || v["merged"].as_bool() == Some(true);
    let state = match (v["state"].as_str(), merged) {
        (_, true) => ChangeState::Merged,
        (Some("open"), _) => ChangeState::Open,
        _ => ChangeState::Closed,
    };
    Ok(ChangeRequest {
        number,
        node_id: s(&v["node_id"]),
        url: s(&v["html_url"]),
        head_ref: s(&v["head"]["ref"]),
        head_sha: s(&v["head"]["sha"]),
        base_ref: s(&v["base"]["ref"]),
        state,
        draft: v["draft"].as_bool().unwrap_or(false),
        merge_sha: merged
            .then(|| v["merge_commit_sha"].as_str().map(str::to_string))
            .flatten(),
    })
}

impl Forge for GitHub {
    fn find_change(&self, branch: &str) -> Result<Option<ChangeRequest>, ForgeError> {
        let path = format!("{}/pulls", self.repo_path());
        // `OWNER:BRANCH`: GitHub ignores a bare branch name and lists every pull request.
        let head = format!("{}:{branch}", self.owner);
        let list = self.ok(
            "GET",
            &path,
            &[("head", &head), ("state", "all"), ("per_page", "100")],
            None,
        )?;
        let mut found = Vec::new();
        for v in list.as_array().into_iter().flatten() {
            let c = change_of(v, &path)?;
            if c.head_ref == branch {
                found.push(c);
            }
        }
        // An open one first, else the newest.
        found.sort_by_key(|c| (c.state == ChangeState::Open, c.number));
        Ok(found.pop())
    }

    fn open_change(&self, new: &NewChange) -> Result<ChangeRequest, ForgeError> {
        // Not an earlier attempt's, which ended: this attempt's own.
        let ours = |c: &ChangeRequest| new.earlier.is_none_or(|e| c.number > e);
        if let Some(c) = self.find_change(&new.head)?.filter(ours) {
            return Ok(c);
        }
        let path = format!("{}/pulls", self.repo_path());
        let body = json!({
            "title": new.title,
            "head": new.head,
            "base": new.base,
            "body": new.body,
            "draft": new.draft,
        });
        let a = self.call("POST", &path, &[], Some(body))?;
        match a.status {
            201 => change_of(&a.body, &path),
            // Opened by a call whose answer was lost: find it rather than fail.
            422 => match self.find_change(&new.head)?.filter(ours) {
                Some(c) => Ok(c),
                None => Err(refused("POST", &path, &a)),
            },
            _ => Err(refused("POST", &path, &a)),
        }
    }

    fn mark_ready(&self, change: &ChangeRequest) -> Result<(), ForgeError> {
        // REST cannot change `draft`: this one step is GraphQL's.
        let query = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }";
        let body = json!({ "query": query, "variables": { "id": change.node_id } });
        let root = self.graphql_root();
        let a = self.call_at(&root, "POST", "/graphql", &[], Some(body))?;
        if a.status != 200 {
            return Err(refused("POST", "/graphql", &a));
        }
        if let Some(e) = a.body["errors"].as_array().and_then(|e| e.first()) {
            return Err(ForgeError::Refused {
                method: "POST".into(),
                path: "/graphql".into(),
                status: 200,
                message: e["message"]
                    .as_str()
                    .unwrap_or("a GraphQL error")
                    .chars()
                    .take(300)
                    .collect(),
            });
        }
        match a.body["data"]["markPullRequestReadyForReview"]["pullRequest"]["isDraft"].as_bool() {
            Some(false) => Ok(()),
            _ => Err(invalid(
                "/graphql",
                "markPullRequestReadyForReview did not answer isDraft: false",
            )),
        }
    }

    fn change(&self, number: u64) -> Result<ChangeRequest, ForgeError> {
        let path = format!("{}/pulls/{number}", self.repo_path());
        let v = self.ok("GET", &path, &[], None)?;
        change_of(&v, &path)
    }

    fn checks(&self, sha: &str) -> Result<Vec<CheckResult>, ForgeError> {
        let mut out = Vec::new();
        let runs_path = format!("{}/commits/{}/check-runs", self.repo_path(), enc(sha));
        let runs = self.ok("GET", &runs_path, &[("per_page", "100")], None)?;
        for r in runs["check_runs"].as_array().into_iter().flatten() {
            let conclusion = if r["status"].as_str() == Some("completed") {
                Conclusion::of_check_run(Some(r["conclusion"].as_str().unwrap_or("failure")))
            } else {
                Conclusion::Pending
            };
            let at = r["completed_at"]
                .as_str()
                .or(r["started_at"].as_str())
                .unwrap_or_default();
            out.push(CheckResult {
                name: s(&r["name"]),
                sha: s(&r["head_sha"]),
                kind: CheckKind::CheckRun,
                conclusion,
                at: at.into(),
                url: r["html_url"].as_str().map(str::to_string),
                title: r["output"]["title"].as_str().map(str::to_string),
                summary: r["output"]["summary"].as_str().map(str::to_string),
            });
        }
        let status_path = format!("{}/commits/{}/status", self.repo_path(), enc(sha));
        let combined = self.ok("GET", &status_path, &[("per_page", "100")], None)?;
        // `state: pending` with no statuses at all means "none", not "waiting": only the
        // statuses themselves are read.
        for st in combined["statuses"].as_array().into_iter().flatten() {
            out.push(CheckResult {
                name: s(&st["context"]),
                sha: s(&combined["sha"]),
                kind: CheckKind::Status,
                conclusion: Conclusion::of_status(st["state"].as_str().unwrap_or("error")),
                at: s(&st["updated_at"]),
                url: st["target_url"].as_str().map(str::to_string),
                title: st["description"].as_str().map(str::to_string),
                summary: None,
            });
        }
        Ok(out)
    }

    fn reviews(&self, number: u64) -> Result<Vec<Review>, ForgeError> {
        let path = format!("{}/pulls/{number}/reviews", self.repo_path());
        let list = self.ok("GET", &path, &[("per_page", "100")], None)?;
        Ok(list
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| Review {
                id: r["id"].as_u64().unwrap_or_default(),
                user: s(&r["user"]["login"]),
                state: ReviewState::parse(r["state"].as_str().unwrap_or_default()),
                commit_id: s(&r["commit_id"]),
                body: s(&r["body"]),
            })
            .collect())
    }

    fn required_checks(&self, branch: &str, configured: &[String]) -> Result<Required, ForgeError> {
        let mut checks: Vec<String> = Vec::new();
        let mut unreadable = Vec::new();
        let rules_path = format!("{}/rules/branches/{}", self.repo_path(), enc_branch(branch));
        let rules = self.call("GET", &rules_path, &[("per_page", "100")], None)?;
        match rules.status {
            200 => {
                for rule in rules.body.as_array().into_iter().flatten() {
                    if rule["type"].as_str() == Some("required_status_checks") {
                        for c in rule["parameters"]["required_status_checks"]
                            .as_array()
                            .into_iter()
                            .flatten()
                        {
                            checks.push(s(&c["context"]));
                        }
                    }
                }
            }
            403 | 404 => unreadable.push("rulesets"),
            _ => return Err(refused("GET", &rules_path, &rules)),
        }
        let prot_path = format!(
            "{}/branches/{}/protection/required_status_checks",
            self.repo_path(),
            enc_branch(branch)
        );
        let prot = self.call("GET", &prot_path, &[], None)?;
        match prot.status {
            200 => {
                for c in prot.body["checks"].as_array().into_iter().flatten() {
                    checks.push(s(&c["context"]));
                }
                for c in prot.body["contexts"].as_array().into_iter().flatten() {
                    checks.push(s(c));
                }
            }
            // 404: no classic protection on the branch (or not visible without admin read).
            404 => {}
            403 => unreadable.push("classic branch protection (needs administration: read)"),
            _ => return Err(refused("GET", &prot_path, &prot)),
        }
        checks.retain(|c| !c.is_empty());
        checks.sort();
        checks.dedup();
        let note = (!unreadable.is_empty()).then(|| {
            format!(
                "the forge token cannot read the {} of `{branch}`",
                unreadable.join(" or ")
            )
        });
        if !checks.is_empty() {
            return Ok(Required {
                checks,
                source: RequiredSource::Forge,
                note,
            });
        }
        if !configured.is_empty() {
            return Ok(Required {
                checks: configured.to_vec(),
                source: RequiredSource::Configured,
                note: note.map(|n| format!("{n}: using [forge] required_checks")),
            });
        }
        Ok(Required {
            checks: Vec::new(),
            source: RequiredSource::Reported,
            note: note.map(|n| {
                format!("{n} and [forge] required_checks is empty: every check reported for the head must succeed")
            }),
        })
    }

    fn set_status(
        &self,
        sha: &str,
        context: &str,
        state: StatusState,
        description: &str,
    ) -> Result<(), ForgeError> {
        let path = format!("{}/statuses/{}", self.repo_path(), enc(sha));
        let description: String = description.chars().take(140).collect();
        self.ok(
            "POST",
            &path,
            &[],
            Some(json!({"state": state.as_str(), "context": context, "description": description})),
        )?;
        Ok(())
    }

    fn merge(
        &self,
        number: u64,
        sha: &str,
        method: MergeMethod,
        title: &str,
    ) -> Result<MergeOutcome, ForgeError> {
        let path = format!("{}/pulls/{number}/merge", self.repo_path());
        let a = self.call(
            "PUT",
            &path,
            &[],
            Some(json!({"sha": sha, "merge_method": method.as_str(), "commit_title": title})),
        )?;
        let message = a.body["message"].as_str().unwrap_or_default().to_string();
        match a.status {
            200 if a.body["merged"].as_bool() == Some(true) => Ok(MergeOutcome::Merged {
                sha: s(&a.body["sha"]),
            }),
            409 => Ok(MergeOutcome::HeadMoved { message }),
            405 | 422 => Ok(MergeOutcome::NotMergeable { message }),
            _ => Err(refused("PUT", &path, &a)),
        }
    }

    fn comment(&self, number: u64, body: &str) -> Result<(), ForgeError> {
        let path = format!("{}/issues/{number}/comments", self.repo_path());
        self.ok("POST", &path, &[], Some(json!({ "body": body })))?;
        Ok(())
    }

    fn comments(&self, number: u64) -> Result<Vec<Comment>, ForgeError> {
        let path = format!("{}/issues/{number}/comments", self.repo_path());
        let list = self.ok("GET", &path, &[("per_page", "100")], None)?;
        Ok(list
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| Comment {
                id: c["id"].as_u64().unwrap_or_default(),
                user: s(&c["user"]["login"]),
                body: s(&c["body"]),
            })
            .collect())
    }

    fn review_comments(&self, number: u64) -> Result<Vec<ReviewComment>, ForgeError> {
        let path = format!("{}/pulls/{number}/comments", self.repo_path());
        let list = self.ok("GET", &path, &[("per_page", "100")], None)?;
        Ok(list
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| ReviewComment {
                id: c["id"].as_u64().unwrap_or_default(),
                user: s(&c["user"]["login"]),
                body: s(&c["body"]),
                path: s(&c["path"]),
                line: c["line"].as_u64(),
                commit_id: s(&c["commit_id"]),
                url: s(&c["html_url"]),
            })
            .collect())
    }

    fn close_issue(&self, number: u64, comment: &str) -> Result<bool, ForgeError> {
        let path = format!("{}/issues/{number}", self.repo_path());
        let issue = self.ok("GET", &path, &[], None)?;
        if issue["state"].as_str() == Some("closed") {
            return Ok(false);
        }
        self.comment(number, comment)?;
        self.ok(
            "PATCH",
            &path,
            &[],
            Some(json!({ "state": "closed", "state_reason": "completed" })),
        )?;
        Ok(true)
    }

    fn labeled_issues(&self, label: &str) -> Result<Vec<Issue>, ForgeError> {
        let path = format!("{}/issues", self.repo_path());
        let list = self.ok(
            "GET",
            &path,
            &[("labels", label), ("state", "open"), ("per_page", "100")],
            None,
        )?;
        Ok(list
            .as_array()
            .into_iter()
            .flatten()
            // The issues list holds pull requests too; they carry `pull_request`.
            .filter(|i| i.get("pull_request").is_none())
            .map(|i| Issue {
                number: i["number"].as_u64().unwrap_or_default(),
                title: s(&i["title"]),
                body: s(&i["body"]),
                url: s(&i["html_url"]),
                author: s(&i["user"]["login"]),
            })
            .collect())
    }

    fn labeled_by(&self, number: u64, label: &str) -> Result<Option<String>, ForgeError> {
        let path = format!("{}/issues/{number}/events", self.repo_path());
        let list = self.ok("GET", &path, &[("per_page", "100")], None)?;
        Ok(list
            .as_array()
            .into_iter()
            .flatten()
            .rfind(|e| e["event"] == "labeled" && e["label"]["name"] == label)
            .map(|e| s(&e["actor"]["login"])))
    }

    fn permission(&self, user: &str) -> Result<Permission, ForgeError> {
        let now = (self.clock)();
        if let Some((p, at)) = self
            .permissions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(user)
        {
            if now < at + PERMISSION_TTL_SECS {
                return Ok(*p);
            }
        }
        let path = format!(
            "{}/collaborators/{}/permission",
            self.repo_path(),
            enc(user)
        );
        let a = self.call("GET", &path, &[], None)?;
        let p = match a.status {
            200 => Permission::parse(a.body["permission"].as_str().unwrap_or_default()),
            404 => Permission::None,
            _ => return Err(refused("GET", &path, &a)),
        };
        self.permissions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(user.into(), (p, now));
        Ok(p)
    }
}
