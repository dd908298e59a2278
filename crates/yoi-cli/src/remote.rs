//! The ticket mutations through the workspace's running server (`.yoi/local/server.json`).
//!
//! One function per operation, each one HTTP request with the local human's admin token
//! (`.yoi/local/admin.token`) and `--op-id` as the `Idempotency-Key`. The server runs the same
//! store operation the CLI would, so the answers print exactly as in local mode: a success body
//! is the store's `Outcome`, and an error body's `message` is the store error's text, classified
//! for the exit code by [`CliError::Api`]'s HTTP status. Nothing here decides a rule.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use yoi_core::plan::PlanRecord;
use yoi_core::relation::RelationKind;
use yoi_core::state::{Operation, State};
use yoi_core::TicketId;
use yoi_engine::db::ADMIN_TOKEN_FILE;
use yoi_engine::person_ops::PersonOp;
use yoi_engine::store::ops::{
    CommentRequest, CreateRequest, EditRequest, PlanRequest, RelationRequest, TransitionRequest,
};
use yoi_engine::store::query::{ListFilter, TicketSummary};
use yoi_engine::store::server_file::{self, ServerInfo};
use yoi_engine::store::tickets::BrokenTicket;
use yoi_engine::store::Outcome;

use crate::error::CliError;

/// A client for the server named by server.json.
pub struct Remote {
    agent: ureq::Agent,
    server: ServerInfo,
    token: String,
    op_id: Option<String>,
}

impl Remote {
    /// The workspace's server if one is running and answering; `None` means work on the files.
    /// A running server without a readable admin token is an error, not a silent fallback.
    pub fn find(local_dir: &Path, op_id: Option<String>) -> Result<Option<Remote>, CliError> {
        let Some(server) = server_file::live(local_dir) else {
            return Ok(None);
        };
        let token = std::fs::read_to_string(local_dir.join(ADMIN_TOKEN_FILE))
            .map(|t| t.trim().to_string())
            .unwrap_or_default();
        if token.is_empty() {
            return Err(CliError::Refused(format!(
                "a yoi server (pid {}) is serving this workspace at {}, but .yoi/local/{ADMIN_TOKEN_FILE} is missing or empty; run `yoi init` to write it, or pass --local to work on the files",
                server.pid, server.address
            )));
        }
        // With TLS, exactly the certificate the server wrote into server.json.
        let trust = match &server.tls_fingerprint {
            Some(pin) => {
                yoi_pod::tls::Trust::Pin(yoi_pod::tls::parse_pin(pin).map_err(CliError::Refused)?)
            }
            None => yoi_pod::tls::Trust::Roots,
        };
        let agent = trust.agent(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_connect(Some(std::time::Duration::from_secs(5))),
        );
        Ok(Some(Remote {
            agent,
            server,
            token,
            op_id,
        }))
    }

    /// A one-time dashboard login URL from the server, for the admin token's person.
    pub fn dashboard_login(&self) -> Result<String, CliError> {
        let link: Value = self.send("POST", "/dashboard/login".into(), None)?;
        let path = link["path"].as_str().unwrap_or("/login");
        // A browser cannot open `0.0.0.0`: the link names an address it can reach.
        let address = match self.server.address.parse::<std::net::SocketAddr>() {
            Ok(a) => yoi_server::listen::reachable(a).to_string(),
            Err(_) => self.server.address.clone(),
        };
        let scheme = if self.server.tls_fingerprint.is_some() {
            "https"
        } else {
            "http"
        };
        Ok(format!("{scheme}://{address}{path}"))
    }

    /// Tickets as `GET /tickets` lists them: `limit` tickets after `after`, or (no limit) every
    /// page, each handed to `on_page` with the broken tickets the first page names as it
    /// arrives, so a long list is written while the rest is still being read. Returns where the
    /// next page starts when the limit stopped the reading. The server reads every ticket file
    /// written before the request into its index first, so the answer is the one a local read
    /// would give.
    pub fn list_pages(
        &self,
        filter: &ListFilter,
        words: &[String],
        after: Option<&str>,
        limit: Option<usize>,
        mut on_page: impl FnMut(Vec<TicketSummary>, Vec<BrokenTicket>) -> Result<(), CliError>,
    ) -> Result<Option<TicketId>, CliError> {
        #[derive(serde::Deserialize)]
        struct Page {
            tickets: Vec<TicketSummary>,
            next: Option<String>,
            /// On the first page only.
            #[serde(default)]
            broken: Vec<BrokenTicket>,
        }
        let mut query = Vec::new();
        if let Some(states) = &filter.states {
            let names: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
            query.push(("state", names.join(",")));
        }
        if filter.ready {
            query.push(("ready", "true".into()));
        }
        if filter.blocked {
            query.push(("blocked", "true".into()));
        }
        if !words.is_empty() {
            query.push(("search", words.join(" ")));
        }
        let mut listed = 0;
        let mut cursor = after.map(str::to_string);
        loop {
            let page_size = limit.map_or(1000, |l| l.saturating_sub(listed).clamp(1, 1000));
            let mut q = query.clone();
            q.push(("limit", page_size.to_string()));
            if let Some(c) = &cursor {
                q.push(("after", c.clone()));
            }
            let encoded = serde_urlencoded::to_string(&q).map_err(|e| self.unreachable(e))?;
            let page: Page = self.send("GET", format!("/tickets?{encoded}"), None)?;
            listed += page.tickets.len();
            on_page(page.tickets, page.broken)?;
            match page.next {
                Some(n) if limit.is_none_or(|l| listed < l) => cursor = Some(n),
                Some(n) => return Ok(Some(TicketId::parse(&n).map_err(|e| self.unreachable(e))?)),
                None => return Ok(None),
            }
        }
    }

    pub fn create(&self, req: &CreateRequest) -> Result<Outcome, CliError> {
        let body = json!({ "title": req.title, "body": req.body, "depends_on": req.depends_on });
        self.send("POST", "/tickets".into(), Some(body))
    }

    pub fn edit(&self, id: &str, req: &EditRequest) -> Result<Outcome, CliError> {
        // Only what changes: the API refuses a `null` title or body.
        let mut body = serde_json::Map::new();
        if let Some(title) = &req.title {
            body.insert("title".into(), json!(title));
        }
        if let Some(text) = &req.body {
            body.insert("body".into(), json!(text));
        }
        self.send("PATCH", ticket_path(id, ""), Some(body.into()))
    }

    pub fn comment(&self, id: &str, req: &CommentRequest) -> Result<Outcome, CliError> {
        let body = json!({ "kind": req.kind, "body": req.body });
        self.send("POST", ticket_path(id, "/comments"), Some(body))
    }

    pub fn add_budget(
        &self,
        id: &str,
        usd: Option<f64>,
        tokens: Option<u64>,
        note: Option<&str>,
    ) -> Result<Outcome, CliError> {
        let body = json!({ "add_usd": usd, "add_tokens": tokens, "note": note });
        self.send("POST", ticket_path(id, "/budget"), Some(body))
    }

    pub fn answer(&self, id: &str, message: &str) -> Result<Outcome, CliError> {
        let body = json!({ "message": message });
        self.send("POST", ticket_path(id, "/answer"), Some(body))
    }

    pub fn retry(&self, id: &str, reason: Option<&str>) -> Result<Outcome, CliError> {
        let body = json!({ "reason": reason });
        self.send("POST", ticket_path(id, "/retry"), Some(body))
    }

    /// One forge pass in the server, with the credential it holds (`POST /forge/sync`).
    pub fn forge_sync(
        &self,
        import_only: bool,
    ) -> Result<yoi_server::forge::ForgeSynced, CliError> {
        let path = if import_only {
            "/forge/sync?import_only=true"
        } else {
            "/forge/sync"
        };
        self.send("POST", path.into(), None)
    }

    /// A state operation; `Accept` and `Complete` have no route (yoi itself performs them).
    pub fn transition(
        &self,
        op: Operation,
        id: &str,
        req: &TransitionRequest,
    ) -> Result<Outcome, CliError> {
        let Some(person) = PersonOp::of_transition(op) else {
            return Err(not_a_human_operation(op));
        };
        let route = person
            .spec()
            .path
            .strip_prefix("/tickets/{id}")
            .expect("a state operation's route is below its ticket (person_ops tests it)");
        let body = json!({
            "reason": req.reason,
            "resolution": req.resolution,
            "expected_state": req.expected.map(State::as_str),
        });
        self.send("POST", ticket_path(id, route), Some(body))
    }

    pub fn add_relation(&self, id: &str, req: &RelationRequest) -> Result<Outcome, CliError> {
        let body = json!({ "kind": req.kind.to_string(), "target": req.target, "note": req.note });
        self.send("POST", ticket_path(id, "/relations"), Some(body))
    }

    pub fn remove_relation(
        &self,
        id: &str,
        kind: RelationKind,
        target: &str,
    ) -> Result<Outcome, CliError> {
        let rest = format!(
            "/relations/{}/{}",
            segment(&kind.to_string()),
            segment(target)
        );
        self.send("DELETE", ticket_path(id, &rest), None)
    }

    pub fn add_plan_record(
        &self,
        id: &str,
        req: &PlanRequest,
    ) -> Result<(Outcome, PlanRecord), CliError> {
        #[derive(serde::Deserialize)]
        struct Added {
            outcome: Outcome,
            record: PlanRecord,
        }
        let body =
            json!({ "kind": req.kind.to_string(), "related": req.related, "note": req.note });
        let added: Added = self.send("POST", ticket_path(id, "/plan"), Some(body))?;
        Ok((added.outcome, added.record))
    }

    /// One request; a 2xx body is parsed as `T`, anything else becomes [`CliError::Api`].
    fn send<T: DeserializeOwned>(
        &self,
        method: &str,
        path: String,
        body: Option<Value>,
    ) -> Result<T, CliError> {
        let url = format!("{}/api/v1{path}", self.server.base_url());
        let auth = format!("Bearer {}", self.token);
        let mut request = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("Authorization", &auth);
        if let Some(op) = &self.op_id {
            request = request.header("Idempotency-Key", op);
        }
        let sent = match body {
            Some(b) => {
                let request = request
                    .header("Content-Type", "application/json")
                    .body(b.to_string())
                    .map_err(|e| self.unreachable(e))?;
                self.agent.run(request)
            }
            None => {
                let request = request.body(()).map_err(|e| self.unreachable(e))?;
                self.agent.run(request)
            }
        };
        let mut response = sent.map_err(|e| self.unreachable(e))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| self.unreachable(e))?;
        if (200..300).contains(&status) {
            return serde_json::from_str(&text).map_err(|e| {
                self.unreachable(format!(
                    "the server's answer is not what this yoi expects: {e}"
                ))
            });
        }
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| format!("the server answered {status}"));
        let message = if status == 401 {
            format!("the server refused .yoi/local/{ADMIN_TOKEN_FILE} ({message}); run `yoi init` to renew it, or pass --local")
        } else {
            message
        };
        Err(CliError::Api { status, message })
    }

    fn unreachable(&self, reason: impl std::fmt::Display) -> CliError {
        CliError::Server {
            pid: self.server.pid,
            address: self.server.address.clone(),
            reason: reason.to_string(),
        }
    }
}

pub(crate) fn not_a_human_operation(op: Operation) -> CliError {
    CliError::Refused(format!(
        "{} is performed by yoi itself, not through the CLI",
        op.to_state()
    ))
}

fn ticket_path(id: &str, rest: &str) -> String {
    format!("/tickets/{}{rest}", segment(id))
}

/// Percent-encode one path segment (everything but RFC 3986 unreserved characters).
fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::segment;

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(segment("01KB7ABC"), "01KB7ABC");
        assert_eq!(segment("a/b c%"), "a%2Fb%20c%25");
        assert_eq!(segment("é"), "%C3%A9");
    }
}
