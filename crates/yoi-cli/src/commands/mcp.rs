//! `yoi mcp`: an MCP server on stdio for any agent CLI or editor (docs/mcp.md). It is a relay:
//! each JSON-RPC message read from stdin, one per line, is posted to the running server's
//! `/mcp` with the token, and each answer is printed on stdout, one per line. Without a running
//! server it says so on stderr and exits non-zero: the tools are the server's (its scoping, its
//! writer queue, its index), so there is no second implementation to drift from it.

use std::io::{BufRead, Write};

use serde_json::{json, Value};
use yoi_engine::db::ADMIN_TOKEN_FILE;
use yoi_engine::store::server_file;

use crate::cli::McpArgs;
use crate::context::Env;
use crate::error::CliError;

pub fn run(env: &Env, a: &McpArgs) -> Result<(), CliError> {
    // With --server the workspace is not read (an agent's worktree need not be one).
    let ws = match a.server {
        Some(_) => None,
        None => env.files_if_any("yoi mcp")?,
    };
    let local = ws.as_ref().map(|w| w.local_dir());
    // The workspace's own server over TLS: exactly the certificate it wrote into server.json.
    let mut trust = yoi_pod::tls::Trust::Roots;
    let base = match (&a.server, &local) {
        (Some(url), _) => url.trim_end_matches('/').to_string(),
        (None, Some(local)) => match server_file::live(local) {
            Some(info) => {
                if let Some(pin) = &info.tls_fingerprint {
                    trust = yoi_pod::tls::Trust::Pin(
                        yoi_pod::tls::parse_pin(pin).map_err(CliError::Refused)?,
                    );
                }
                info.base_url()
            }
            None => {
                return Err(CliError::Refused(
                    "no yoi server is running for this workspace; start `yoi serve` first (`yoi mcp` forwards every message to its /mcp)".into(),
                ))
            }
        },
        (None, None) => {
            return Err(CliError::Usage(
                "outside a workspace, pass --server URL (and --token-file or YOI_TOKEN)".into(),
            ))
        }
    };
    let token = match &a.token_file {
        Some(f) => Some(std::fs::read_to_string(f).map_err(|e| {
            CliError::Usage(format!("cannot read the token file {}: {e}", f.display()))
        })?),
        None => std::env::var("YOI_TOKEN").ok(),
    }
    .map(|t| t.trim().to_string())
    .filter(|t| !t.is_empty())
    .or_else(|| {
        let local = local.as_ref()?;
        std::fs::read_to_string(local.join(ADMIN_TOKEN_FILE))
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    })
    .ok_or_else(|| {
        CliError::Usage(
            "no token: pass --token-file FILE, set YOI_TOKEN, or run inside a workspace with .yoi/local/admin.token".into(),
        )
    })?;
    let agent = trust.agent(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(std::time::Duration::from_secs(5))),
    );
    let url = format!("{base}/mcp");
    let mut version: Option<String> = None;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| CliError::Refused(format!("reading stdin: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let sent: Option<Value> = serde_json::from_str(&line).ok();
        let id = sent.as_ref().and_then(|m| m.get("id")).cloned();
        let mut req = agent
            .post(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(v) = &version {
            req = req.header("MCP-Protocol-Version", v);
        }
        let mut resp = req.send(line.as_bytes()).map_err(|e| {
            CliError::Refused(format!(
                "the yoi server at {base} did not answer ({e}); is `yoi serve` still running?"
            ))
        })?;
        let status = resp.status().as_u16();
        let body = resp.body_mut().read_to_string().unwrap_or_default();
        if status == 202 || body.trim().is_empty() {
            continue;
        }
        let answer: Value = match serde_json::from_str::<Value>(&body) {
            Ok(v) if v.get("jsonrpc").is_some() => v,
            // A refusal of the HTTP request itself (401, 403, 413): the API's error body.
            other => {
                let message = other
                    .ok()
                    .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                    .unwrap_or(body);
                eprintln!("yoi mcp: the server refused ({status}): {message}");
                let Some(id) = id else { continue };
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32001, "message": format!("HTTP {status}: {message}")}})
            }
        };
        if let Some(v) = answer["result"]["protocolVersion"].as_str() {
            version = Some(v.to_string());
        }
        let text = serde_json::to_string(&answer).unwrap_or_default();
        writeln!(out, "{text}")
            .and_then(|_| out.flush())
            .map_err(|e| CliError::Refused(format!("writing stdout: {e}")))?;
    }
    Ok(())
}
