//! `yoi inbox` end to end: an agent that reports `blocked` (the scripted `yoi-fake-agent` run
//! by a real supervised pod) stops its step and waits in the inbox as `agent_blocked`, told
//! apart from a failing step; a person's `yoi ticket retry` closes that entry. The JSON and the
//! table say the same, and an empty inbox says so.

mod common;

use common::pods::*;
use common::server::Server;
use serde_json::Value;

fn inbox(repo: &common::Repo) -> Value {
    let out = repo.yoi(&["inbox", "--json"]).ok();
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn an_agent_that_reports_blocked_waits_in_the_inbox_until_a_person_retries() {
    let (repo, _script) = workspace("blocked which greeting: hello or hi?\n", 60);
    let empty = repo.yoi(&["inbox"]).ok();
    assert_eq!(empty.stdout, "nothing waits on you\n");

    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    until("the blocked agent to reach the inbox", || {
        inbox(&repo)["count"] == 1
    });
    let got = inbox(&repo);
    let e = &got["entries"][0];
    assert_eq!(e["reason"], "agent_blocked", "{got}");
    assert_eq!(e["ticket"], id.as_str());
    assert_eq!(e["command"], format!("yoi ticket retry {id}"));
    assert!(
        e["detail"].as_str().unwrap().contains("which greeting"),
        "{got}"
    );
    let key = e["key"].as_str().unwrap().to_string();

    let table = repo.yoi(&["inbox"]).ok().stdout;
    assert!(table.starts_with("REASON"), "{table}");
    assert!(
        table.contains("agent_blocked") && table.contains(&id),
        "{table}"
    );

    repo.yoi(&["ticket", "retry", &id]).ok();
    // The retry closes this episode at once; the step handed out again may block again,
    // which is a new episode with a key of its own.
    let after = inbox(&repo);
    assert!(
        after["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["key"] != key.as_str()),
        "{after}"
    );
    drop(server);
}
