//! The pod's side of the protocol (docs/pods.md): one blocking HTTP call per operation, with the
//! pod token. A 409 on a fenced call is [`ClientError::Lost`]: the claim is gone and the agent
//! must be stopped at once.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use thiserror::Error;
use yoi_core::report::Report;

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("the server answered {status}: {message}")]
    Refused { status: u16, message: String },
    /// The claim is no longer this pod's (409): lease lost, late, or cancelled.
    #[error("the claim is lost: {message}")]
    Lost { message: String },
    #[error("the server at {url} did not answer: {reason}")]
    Unreachable { url: String, reason: String },
}

/// What registration answers.
#[derive(Debug, Clone, Deserialize)]
pub struct Registration {
    pub pod: PodInfo,
    pub lease_ms: i64,
    pub heartbeat_ms: i64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PodInfo {
    pub id: String,
    pub role: String,
}

/// A claimed assignment with where to work and the brief.
#[derive(Debug, Clone, Deserialize)]
pub struct Work {
    pub assignment: AssignmentInfo,
    pub ticket: String,
    pub title: String,
    pub workdir: String,
    pub branch: String,
    pub head_commit: String,
    /// Where the ticket branch began, when the server says.
    #[serde(default)]
    pub base_commit: Option<String>,
    pub packet: Option<Value>,
    pub lease_ms: i64,
    pub heartbeat_ms: i64,
    /// What the last verification or review said, for a new round.
    #[serde(default)]
    pub feedback: Option<String>,
    /// The agent's own token, good for this claim only (never the pod's token).
    #[serde(default)]
    pub agent_token: Option<String>,
    /// The earlier attempt whose work this one starts from (the folder is detached at its
    /// commit; `head_commit` stays the head the result must descend from).
    #[serde(default)]
    pub kept: Option<KeptWork>,
    /// The workflows a person invoked that this attempt carries, rendered by the server.
    #[serde(default)]
    pub workflow: Option<String>,
    /// The workflows this attempt's agent may invoke itself.
    #[serde(default)]
    pub invocable: Vec<Invocable>,
    /// Questions agents asked on this ticket and the answers people gave, oldest first.
    #[serde(default)]
    pub answered: Vec<Answered>,
    /// The claim goes through a remote of the repository (`[pods] transport = "remote"`):
    /// `remote_git` says where, and the server's own git is not used.
    #[serde(default)]
    pub remote: bool,
    #[serde(default)]
    pub remote_git: Option<ClaimRemote>,
}

/// Where a claim under `[pods] transport = "remote"` fetches from and pushes to.
#[derive(Debug, Clone, Deserialize)]
pub struct ClaimRemote {
    /// The remote's name in the server's repository, for messages.
    pub name: String,
    /// The URL to fetch from and push to, with this host's own git credentials.
    pub url: String,
    /// The ref naming `head_commit`, and the one naming a kept attempt's start.
    pub head_ref: String,
    #[serde(default)]
    pub start_ref: Option<String>,
    /// The attempt ref a coder pushes its result to.
    pub push_ref: String,
}

/// A question an agent asked and a person's answer, as the server hands them out.
#[derive(Debug, Clone, Deserialize)]
pub struct Answered {
    /// Who asked: the step and attempt.
    pub step: String,
    pub attempt: i64,
    pub question: String,
    pub answer: String,
    /// The person who answered.
    pub by: String,
}

/// A workflow the agent may invoke (`auto_invoke: true`), as the server lists it.
#[derive(Debug, Clone, Deserialize)]
pub struct Invocable {
    pub slug: String,
    pub description: String,
}

impl Work {
    /// The commit the folder is detached at when the agent starts.
    pub fn start(&self) -> &str {
        self.kept
            .as_ref()
            .map_or(self.head_commit.as_str(), |k| k.commit.as_str())
    }
}

/// An earlier attempt's work this one starts from (docs/pods.md, "Retries keep the work").
#[derive(Debug, Clone, Deserialize)]
pub struct KeptWork {
    pub attempt: i64,
    pub commit: String,
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AssignmentInfo {
    pub id: String,
    pub step: String,
    pub role: String,
    pub attempt: i64,
    pub fence: i64,
}

#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    base: String,
    token: String,
    /// When the server last answered a call (below 500), for the pod's status file.
    answered: crate::status::Answered,
}

impl Client {
    /// A client for the server at `base` (`http://127.0.0.1:7311`, `https://host:7311`),
    /// accepting for `https://` only the certificates `trust` accepts.
    pub fn new(base: &str, token: &str, trust: &crate::tls::Trust) -> Client {
        let agent = trust.agent(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_connect(Some(Duration::from_secs(5)))
                .timeout_global(Some(Duration::from_secs(60))),
        );
        Client {
            agent,
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
            answered: crate::status::Answered::default(),
        }
    }

    /// When the server last answered this client's calls (or [`Client::server_answered`] said
    /// so for a git fetch or push).
    pub fn answered(&self) -> crate::status::Answered {
        self.answered.clone()
    }

    /// The server answered now (over git, which this client does not see).
    pub fn server_answered(&self) {
        self.answered.now();
    }

    fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Option<T>, ClientError> {
        let url = format!("{}/api/v1{path}", self.base);
        let auth = format!("Bearer {}", self.token);
        let unreachable = |e: ureq::Error| ClientError::Unreachable {
            url: url.clone(),
            reason: e.to_string(),
        };
        let mut resp = match (method, body) {
            ("GET", _) => self.agent.get(&url).header("Authorization", &auth).call(),
            (_, Some(b)) => self
                .agent
                .post(&url)
                .header("Authorization", &auth)
                .send_json(b),
            (_, None) => self
                .agent
                .post(&url)
                .header("Authorization", &auth)
                .send_empty(),
        }
        .map_err(unreachable)?;
        let status = resp.status().as_u16();
        if status < 500 {
            self.answered.now();
        }
        if status == 204 {
            return Ok(None);
        }
        let text = resp.body_mut().read_to_string().map_err(unreachable)?;
        if (200..300).contains(&status) {
            return serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| ClientError::Unreachable {
                    url: url.clone(),
                    reason: format!("unreadable answer: {e}"),
                });
        }
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
            .unwrap_or(text);
        if status == 409 {
            return Err(ClientError::Lost { message });
        }
        Err(ClientError::Refused { status, message })
    }

    pub fn register(
        &self,
        name: &str,
        host: &str,
        pid: u32,
        profile: &str,
        sandbox: &str,
        provider: Option<&str>,
    ) -> Result<Registration, ClientError> {
        let body = json!({ "name": name, "host": host, "pid": pid, "profile": profile, "sandbox": sandbox, "provider": provider });
        self.call("POST", "/pods", Some(body))?
            .ok_or_else(|| ClientError::Refused {
                status: 204,
                message: "registration answered nothing".into(),
            })
    }

    /// Wait up to `wait_ms` for work; `None` when there was none.
    /// Claim work; `remote` when the pod works without the server's disk (`--cache`), so a
    /// server whose pods go through a remote of the repository pushes the claim's commits
    /// there first and says where.
    pub fn claim(
        &self,
        pod: &str,
        wait_ms: u64,
        remote: bool,
    ) -> Result<Option<Work>, ClientError> {
        let mut body = json!({ "pod": pod, "wait_ms": wait_ms });
        if remote {
            body["remote"] = Value::Bool(true);
        }
        self.call("POST", "/assignments/claim", Some(body))
    }

    pub fn heartbeat(&self, pod: &str, id: &str, fence: i64) -> Result<(), ClientError> {
        self.heartbeat_with(pod, id, fence, None).map(|_| ())
    }

    /// A heartbeat carrying the attempt's usage so far (from an agent that streams it); `Some`
    /// reason when the server says to stop the agent now (a budget passed).
    pub fn heartbeat_with(
        &self,
        pod: &str,
        id: &str,
        fence: i64,
        usage: Option<&yoi_core::report::Usage>,
    ) -> Result<Option<String>, ClientError> {
        let mut body = json!({ "pod": pod, "fence": fence });
        if let Some(u) = usage {
            body["usage"] = serde_json::to_value(u).unwrap_or(Value::Null);
        }
        let reply: Option<Value> =
            self.call("POST", &format!("/assignments/{id}/heartbeat"), Some(body))?;
        Ok(reply.and_then(|v| v["stop"].as_str().map(str::to_string)))
    }

    pub fn log(
        &self,
        pod: &str,
        id: &str,
        fence: i64,
        text: &str,
    ) -> Result<Option<String>, ClientError> {
        let v: Option<Value> = self.call(
            "POST",
            &format!("/assignments/{id}/log"),
            Some(json!({ "pod": pod, "fence": fence, "text": text })),
        )?;
        Ok(v.and_then(|v| v["log"].as_str().map(str::to_string)))
    }

    pub fn complete(
        &self,
        pod: &str,
        id: &str,
        fence: i64,
        report: &Report,
    ) -> Result<Value, ClientError> {
        let v: Option<Value> = self.call(
            "POST",
            &format!("/assignments/{id}/complete"),
            Some(json!({ "pod": pod, "fence": fence, "report": report })),
        )?;
        Ok(v.unwrap_or(Value::Null))
    }

    pub fn fail(
        &self,
        pod: &str,
        id: &str,
        fence: i64,
        reason: &str,
        retryable: bool,
        report: Option<&Report>,
    ) -> Result<(), ClientError> {
        self.call::<Value>(
            "POST",
            &format!("/assignments/{id}/fail"),
            Some(json!({ "pod": pod, "fence": fence, "reason": reason, "retryable": retryable, "report": report })),
        )
        .map(|_| ())
    }

    /// The skill catalog: name and description of each skill (bodies are activated on demand).
    pub fn skills(&self) -> Result<Vec<(String, String)>, ClientError> {
        let v: Option<Value> = self.call("GET", "/skills", None)?;
        Ok(v.and_then(|v| v["skills"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter(|s| s["valid"].as_bool().unwrap_or(true))
            .map(|s| {
                (
                    s["name"].as_str().unwrap_or_default().to_string(),
                    s["description"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect())
    }
}
