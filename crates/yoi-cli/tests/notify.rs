//! Notifications from a real `yoi serve`: a `[[notify]]` webhook (its signing key in the
//! server's environment, never in the file) gets each inbox entry once, signed; an entry
//! recorded while the server is killed (SIGKILL, between the entry and its delivery) is
//! delivered once after the restart and the first one is not sent again; `yoi notify log`
//! shows every delivery with its attempts, and `yoi notify test` sends a sample. An agent's
//! question recorded while the server is killed reaches the webhook and a desktop (a private
//! session D-Bus with a real notification server on it) once each, and its answer closes it.

mod common;

use std::time::{Duration, Instant};

use common::server::Server;
use common::Repo;
use yoi_core::Principal;
use yoi_store::ops;
use yoi_store::{Ctx, Workspace};
use yoi_testkit::dbus::{Notifications, SessionBus};
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

/// An in-progress ticket (accepted by the service on a branch nobody works on: routing is off).
fn in_progress(repo: &Repo, title: &str) -> String {
    let id = repo.create(title, BRIEF);
    repo.yoi(&["ticket", "mark-ready", &id]).ok();
    repo.yoi(&["ticket", "queue", &id]).ok();
    let ws = Workspace::open(repo.path()).unwrap();
    let ev = ops::AcceptEvidence {
        branch: format!("yoi/{id}-q"),
        worktree: format!(".worktree/{id}-q"),
        base_commit: "0123456789abcdef".into(),
        assignment: "asg-1".into(),
        decision: "Routing decision: implementation_ready".into(),
    };
    ops::accept(&ws, &service(), &id, &Default::default(), &ev).unwrap();
    id
}

fn service() -> Ctx {
    Ctx::new(
        Principal::orchestrator(),
        yoi_core::Timestamp::parse("2026-03-01T10:00:00Z").unwrap(),
    )
}

#[test]
fn a_question_asked_while_the_server_is_killed_reaches_the_webhook_and_the_desktop_once() {
    let r = Receiver::start(SECRET);
    let bus = SessionBus::start();
    let desk = Notifications::start(&bus, &["body"]);
    let repo = Repo::init();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.replace("\nenabled = true\n", "\nenabled = false\n");
    std::fs::write(
        &config,
        format!(
            "{text}\n[[notify]]\nname = \"hook\"\nchannel = \"webhook\"\nurl = \"http://{}/hook\"\nsecret_env = \"YOI_TEST_HOOK_KEY\"\n\n\
             [[notify]]\nname = \"desk\"\nchannel = \"desktop\"\n",
            r.addr
        ),
    )
    .unwrap();
    let env = [
        ("YOI_TEST_HOOK_KEY", SECRET),
        ("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str()),
    ];
    let id = in_progress(&repo, "Which port?");
    let mut server = Server::spawn_with_env(&repo, "127.0.0.1:0", &env);
    let addr = server.addr.clone();
    server.kill();

    // The agent's question is recorded while no server runs (between the entry and its
    // delivery), as the service writes it.
    let ws = Workspace::open(repo.path()).unwrap();
    let attrs = [
        ("step", "implement".to_string()),
        ("attempt", "1".to_string()),
    ];
    ops::ask(&ws, &service(), &id, &attrs, &["Port 8080 or 9090?".into()]).unwrap();
    let mut server = Server::spawn_with_env(&repo, &addr, &env);
    until("the question on both channels", || {
        r.got("/hook").len() == 1 && desk.got().len() == 1
    });
    until("both deliveries to be recorded", || {
        let l = log(&repo);
        l["count"] == 2
            && l["deliveries"]
                .as_array()
                .unwrap()
                .iter()
                .all(|d| d["status"] == "delivered")
    });
    let hook = r.got("/hook")[0].json();
    assert_eq!(hook["entry"]["reason"], "agent_question");
    assert_eq!(hook["entry"]["ticket"], id.as_str());
    let n = &desk.got()[0];
    assert_eq!(n["summary"], "Agent asks: Which port?", "{n}");
    assert!(
        n["body"].as_str().unwrap().contains("Port 8080 or 9090?"),
        "{n}"
    );
    assert!(
        n["body"]
            .as_str()
            .unwrap()
            .contains(&format!("yoi ticket answer {id}")),
        "{n}"
    );

    // Killed again once both are recorded, then a second entry: it arrives on both channels
    // and the question is not sent again.
    server.kill();
    let other = stuck(&repo, "Second");
    let server = Server::spawn_with_env(&repo, &addr, &env);
    until("the second entry on both channels", || {
        r.got("/hook").len() >= 2 && desk.got().len() >= 2
    });
    until("all four deliveries to be recorded", || {
        let l = log(&repo);
        l["count"] == 4
            && l["deliveries"]
                .as_array()
                .unwrap()
                .iter()
                .all(|d| d["status"] == "delivered")
    });
    assert_eq!((r.got("/hook").len(), desk.got().len()), (2, 2));
    assert_eq!(r.got("/hook")[1].json()["entry"]["ticket"], other.as_str());
    let l = log(&repo);
    for d in l["deliveries"].as_array().unwrap() {
        assert_eq!(d["attempts"], 1, "{d}");
    }
    let desk_answers: Vec<&str> = l["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["channel"] == "desk")
        .map(|d| d["attempt_log"][0]["answer"].as_str().unwrap())
        .collect();
    assert_eq!(desk_answers.len(), 2);
    assert!(
        desk_answers
            .iter()
            .all(|a| a.starts_with("D-Bus Notify: id ")),
        "{desk_answers:?}"
    );
    // The receiver saw each key once.
    let keys: std::collections::BTreeSet<String> = desk
        .got()
        .iter()
        .map(|n| {
            n["hints"]["x-yoi-delivery"]["value"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(keys.len(), 2);

    // The answer closes the entry; nothing more is sent for it.
    repo.yoi(&["ticket", "answer", &id, "--message", "9090."])
        .ok();
    let inbox: serde_json::Value =
        serde_json::from_str(&repo.yoi(&["inbox", "--json"]).ok().stdout).unwrap();
    assert!(
        !inbox.to_string().contains("agent_question"),
        "the question's entry closed: {inbox}"
    );
    assert_eq!((r.got("/hook").len(), desk.got().len()), (2, 2));

    // A sample to the desktop through the same adapter, on the bus in the environment.
    let out = common::run_yoi_env(repo.path(), &["notify", "test", "desk"], &env).ok();
    assert!(out.stdout.starts_with("sent to desk"), "{}", out.stdout);
    assert!(out.stdout.contains("D-Bus Notify: id 3"), "{}", out.stdout);
    assert_eq!(desk.got().len(), 3);
    assert_eq!(desk.got()[2]["app_name"], "yoi");
    drop(server);
}
