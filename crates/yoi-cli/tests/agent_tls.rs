//! The agent's own HTTPS to its server (docs/security.md, "TLS"): under `yoi serve
//! --tls-self-signed`, the supervised coder (which trusts the server by `--pin`) hands its
//! agent the server's certificate, so a Node program (`NODE_EXTRA_CA_CERTS`) and a Python one
//! (`SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`) reach `$YOI_SERVER` with their own TLS and their
//! normal verification, names included. The scripted agent runs the real `node` and `python3`;
//! either failing fails the attempt, and the ticket would not merge. The supervised pods'
//! tokens have an end (renewed while the server runs).

mod common;

use std::process::Command;

use common::pods::{queued_ticket, state_of, until, workspace_with_reviewer};
use common::server::Server;

#[test]
fn a_node_and_a_python_program_of_the_agent_trust_the_self_signed_server() {
    for program in ["node", "python3"] {
        let found = Command::new(program).arg("--version").output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "this test runs the real `{program}`; install it"
        );
    }
    let node = "run node -e \"require('https').get(process.env.YOI_SERVER + '/api/v1/skills', {headers: {Authorization: 'Bearer ' + process.env.YOI_TOKEN}}, r => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', e => { console.error(e.message); process.exit(1) })\"";
    let python = "run python3 -c \"import os, urllib.request as u; u.urlopen(u.Request(os.environ['YOI_SERVER'] + '/api/v1/skills', headers={'Authorization': 'Bearer ' + os.environ['YOI_TOKEN']}))\"";
    let repo = workspace_with_reviewer(
        &format!(
            "{node}\n{python}\nwrite hello.txt hello\\n\ndone reached the server over https\n"
        ),
        "say YOI-VERDICT: approve\ndone reviewed\n",
    );
    let id = queued_ticket(&repo);
    let started_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut server = Server::spawn_tls(&repo);
    let _login = server.stdout_line();
    assert!(server.stdout_line().starts_with("tls: sha256:"));
    // The supervised pods' tokens end by themselves, 15 minutes ahead (renewed while the
    // server runs).
    // The supervisor makes its pods' tokens after the server has printed its lines, so wait
    // for them rather than read the list once.
    let supervised = || -> Vec<serde_json::Value> {
        let tokens = repo.yoi(&["token", "list", "--json"]).ok().stdout;
        let tokens: serde_json::Value = serde_json::from_str(&tokens).unwrap();
        tokens["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| {
                t["name"].as_str().unwrap_or("").starts_with("supervisor-")
                    && t["revoked_ms"].is_null()
            })
            .cloned()
            .collect()
    };
    until("the supervised pods' tokens", || !supervised().is_empty());
    let supervised = supervised();
    for t in supervised {
        let ends = t["expires_ms"].as_i64().unwrap_or_else(|| panic!("{t}"));
        assert!(
            ends > started_ms && ends <= started_ms + 15 * 60_000 + 60_000,
            "{t}"
        );
    }
    until("the ticket to be merged", || {
        let state = state_of(&repo, &id);
        assert_ne!(state, "planning", "the coder's attempts failed");
        state == "done"
    });
    // What the agent was given: the server's certificate, and a bundle of roots plus it.
    let runs = repo.path().join(".yoi/local/pods/coder-0/runs");
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("server-ca.pem").is_file())
        .expect("the attempt's run folder holds server-ca.pem");
    let ca = std::fs::read_to_string(run.join("server-ca.pem")).unwrap();
    let cert = std::fs::read_to_string(repo.path().join(".yoi/local/tls/cert.pem")).unwrap();
    assert_eq!(ca.trim(), cert.trim());
    let bundle = std::fs::read_to_string(run.join("ca-bundle.pem")).unwrap();
    assert!(bundle.trim_end().ends_with(cert.trim()));
    assert!(bundle.matches("BEGIN CERTIFICATE").count() > 1);
    server.terminate();
    server.wait();
}
