//! Notifications from a real `yoi serve`: a `[[notify]]` webhook (its signing key in the
//! server's environment, never in the file) gets each inbox entry once, signed; an entry
//! recorded while the server is killed (SIGKILL, between the entry and its delivery) is
//! delivered once after the restart and the first one is not sent again; `yoi notify log`
//! shows every delivery with its attempts, and `yoi notify test` sends a sample.

mod common;

use std::time::{Duration, Instant};

use common::server::Server;
use common::Repo;
use yoi_core::Principal;
use yoi_store::ops;
use yoi_store::{Ctx, Workspace};
use yoi_testkit::receiver::Receiver;

const SECRET: &str = "a-key-only-the-environment-holds";
const BRIEF: &str =
    "## Intent\nDo it.\n\n## Acceptance criteria\n- done\n\n## Validation\n`true`\n";

fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A queued ticket whose routing circuit opened (written to the files, as the orchestrator
/// does).
fn stuck(repo: &Repo, title: &str) -> String {
    let id = repo.create(title, BRIEF);
    repo.yoi(&["ticket", "mark-ready", &id]).ok();
    repo.yoi(&["ticket", "queue", &id]).ok();
    let ws = Workspace::open(repo.path()).unwrap();
    let service = Ctx::new(
        Principal::orchestrator(),
        yoi_core::Timestamp::parse("2026-03-01T10:00:00Z").unwrap(),
    );
    ops::attention(&ws, &service, &id, "circuit_open", "Routing stopped.").unwrap();
    id
}

fn log(repo: &Repo) -> serde_json::Value {
    serde_json::from_str(&repo.yoi(&["notify", "log", "--json"]).ok().stdout).unwrap()
}

#[test]
fn each_entry_is_delivered_once_across_a_sigkill_and_the_log_shows_it() {
    let r = Receiver::start(SECRET);
    let repo = Repo::init();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.replace("\nenabled = true\n", "\nenabled = false\n");
    std::fs::write(
        &config,
        format!(
            "{text}\n[[notify]]\nname = \"hook\"\nchannel = \"webhook\"\nurl = \"http://{}/hook\"\nsecret_env = \"YOI_TEST_HOOK_KEY\"\n",
            r.addr
        ),
    )
    .unwrap();
    let env = [("YOI_TEST_HOOK_KEY", SECRET)];
    let first = stuck(&repo, "First");
    let mut server = Server::spawn_with_env(&repo, "127.0.0.1:0", &env);
    until("the first delivery", || r.got("/hook").len() == 1);
    let got = r.got("/hook");
    assert_eq!(got[0].json()["entry"]["ticket"], first.as_str());
    until("the first delivery to be recorded", || {
        log(&repo)["deliveries"][0]["status"] == "delivered"
    });

    // Killed: the second entry is written while no server runs.
    let addr = server.addr.clone();
    server.kill();
    let second = stuck(&repo, "Second");
    let server = Server::spawn_with_env(&repo, &addr, &env);
    until("the second delivery", || r.got("/hook").len() >= 2);
    until("both deliveries to be recorded", || {
        let l = log(&repo);
        l["count"] == 2
            && l["deliveries"]
                .as_array()
                .unwrap()
                .iter()
                .all(|d| d["status"] == "delivered")
    });
    let got = r.got("/hook");
    assert_eq!(got.len(), 2, "one each, nothing sent twice");
    assert_eq!(got[1].json()["entry"]["ticket"], second.as_str());
    assert_ne!(
        got[0].headers["yoi-delivery"],
        got[1].headers["yoi-delivery"]
    );
    let l = log(&repo);
    for d in l["deliveries"].as_array().unwrap() {
        assert_eq!(d["attempts"], 1, "{d}");
        assert_eq!(d["attempt_log"][0]["ok"], true, "{d}");
        assert!(d["attempt_log"][0]["answer"]
            .as_str()
            .unwrap()
            .starts_with("HTTP 200"));
    }
    let table = repo.yoi(&["notify", "log"]).ok().stdout;
    assert!(table.contains("hook delivered circuit_open"), "{table}");
    // The API's delivery log says what the command says.
    let (status, api) = server.get(&repo, "/notify/log?channel=hook");
    assert_eq!(status, 200, "{api}");
    assert_eq!(api, l);
    let (status, _) = server.get(&repo, "/notify/log?limit=0");
    assert_eq!(status, 400);

    // A sample through the same adapter, signed with the key from the environment.
    let out = common::run_yoi_env(repo.path(), &["notify", "test", "hook"], &env).ok();
    assert!(out.stdout.starts_with("sent to hook"), "{}", out.stdout);
    assert_eq!(r.got("/hook").len(), 3);
    assert_eq!(r.got("/hook")[2].json()["entry"]["reason"], "other");
    // Without the key, the test fails and says which variable is missing.
    let bad = repo.yoi(&["notify", "test", "hook"]);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("YOI_TEST_HOOK_KEY"), "{}", bad.stderr);
    let unknown = repo.yoi(&["notify", "test", "nope"]);
    assert_eq!(unknown.code, 1);
    assert!(
        unknown.stderr.contains("configured: hook"),
        "{}",
        unknown.stderr
    );
    drop(server);
}
