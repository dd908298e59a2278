//! `yoi inbox` end to end: an agent that reports `blocked` (the scripted `yoi-fake-agent` run
//! by a real supervised pod) stops its step and waits in the inbox as `agent_blocked`, told
//! apart from a failing step; a person's `yoi ticket retry` closes that entry. The JSON and the
//! table say the same, and an empty inbox says so. An agent that asks a question waits as
//! `agent_question` until a person answers — on the command line or in the ticket page's form —
//! and its next attempt is told the answer.

mod common;

use common::pods::*;
use common::server::Server;
use serde_json::Value;
use yoi_testkit::receiver::Receiver;

const HOOK_KEY: &str = "a-key-only-the-environment-holds";

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

/// A coder that asks which greeting on its first attempt and writes one on its second (after
/// checking its prompt holds an answer), and a reviewer that approves.
fn asking_workspace() -> common::Repo {
    workspace_with_reviewer(
        "attempt 1 say Two greetings fit the brief.\n\
         attempt 1 say YOI-QUESTION: Which greeting: hello or hi?\n\
         attempt 1 blocked the brief allows two greetings\n\
         attempt 2 run grep -q 'Answered by' \"$YOI_RUN_DIR/prompt.seen\"\n\
         attempt 2 write hello.txt hello\\n\n\
         attempt 2 done wrote the greeting the person chose\n",
        "say Looks right.\ndone read the change\nsay YOI-VERDICT: approve\n",
    )
}

/// An agent asks (docs/inbox.md, "Agents ask"): a real supervised pod runs the scripted agent,
/// whose first attempt ends `YOI-RESULT: blocked` with a `YOI-QUESTION:` line. The attempt
/// ends `blocked` (no failure), the thread holds the question, the inbox one `agent_question`
/// entry; nothing is handed out until a person answers with `yoi ticket answer`; then the step's
/// next attempt begins its prompt with the question and the answer, does what the answer says,
/// and the ticket merges.
#[test]
fn an_agent_asks_a_person_answers_and_the_next_attempt_is_told_and_merges() {
    let repo = asking_workspace();
    // A webhook that wants questions and merged tickets, and nothing else.
    let hook = Receiver::start(HOOK_KEY);
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}\n[[notify]]\nname = \"hook\"\nchannel = \"webhook\"\nurl = \"http://{}/hook\"\nsecret_env = \"YOI_TEST_HOOK_KEY\"\nreasons = [\"agent_question\", \"done\"]\n",
            hook.addr
        ),
    )
    .unwrap();
    let id = queued_ticket(&repo);
    let server = Server::spawn_with_env(&repo, "127.0.0.1:0", &[("YOI_TEST_HOOK_KEY", HOOK_KEY)]);
    until("the question to reach the inbox", || {
        inbox(&repo)["count"] == 1
    });
    let got = inbox(&repo);
    let e = &got["entries"][0];
    assert_eq!(e["reason"], "agent_question", "{got}");
    assert_eq!(e["ticket"], id.as_str());
    assert_eq!(e["action"]["label"], "Answer");
    assert!(
        e["command"]
            .as_str()
            .unwrap()
            .starts_with(&format!("yoi ticket answer {id}")),
        "{got}"
    );
    assert_eq!(e["detail"], "- Which greeting: hello or hi?", "{got}");

    // The attempt ended `blocked`, not failed, and nothing else was handed out.
    until_swept(&server, &repo);
    let rows = assignments(&server, &repo, &id);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "blocked", "{rows:?}");
    assert_eq!(state_of(&repo, &id), "inprogress");
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(
        thread.contains("event: question ") && thread.contains("step: implement"),
        "{thread}"
    );

    // An empty answer is bad input (exit 2) and changes nothing.
    let empty = repo.yoi(&["ticket", "answer", &id, "--message", "  "]);
    assert_eq!(empty.code, 2, "{}", empty.stderr);
    assert_eq!(inbox(&repo)["count"], 1);

    repo.yoi(&["ticket", "answer", &id, "Say hello, in lower case."])
        .ok();
    // The entry closed with the answer, and a second answer finds no question open.
    assert_eq!(inbox(&repo)["count"], 0);
    let again = repo.yoi(&["ticket", "answer", &id, "--message", "again"]);
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert!(
        again.stderr.contains("no open question"),
        "{}",
        again.stderr
    );

    until("the ticket to be done", || state_of(&repo, &id) == "done");
    let rows = assignments(&server, &repo, &id);
    let second = rows
        .iter()
        .find(|a| a["step"] == "implement" && a["attempt"] == 2)
        .expect("the step was handed out again");
    assert_eq!(second["status"], "completed");
    let prompt = std::fs::read_to_string(
        repo.path()
            .join(".yoi/local/pods/coder-0/runs")
            .join(second["id"].as_str().unwrap())
            .join("prompt.seen"),
    )
    .unwrap();
    let q = prompt
        .find("Which greeting: hello or hi?")
        .expect("the question");
    let a = prompt
        .find("Say hello, in lower case.")
        .expect("the answer");
    let brief = prompt.find("hello.txt says hello").expect("the brief");
    assert!(q < a && a < brief, "{prompt}");
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(thread.contains("event: answer "), "{thread}");

    // The webhook heard of the question once and of the merge once, in that order.
    until("the done notification", || hook.got("/hook").len() >= 2);
    until_swept(&server, &repo);
    let got = hook.got("/hook");
    assert_eq!(got.len(), 2, "one each, nothing twice");
    let (asked, done) = (got[0].json(), got[1].json());
    assert_eq!(asked["event"], "inbox.entry_opened");
    assert_eq!(asked["entry"]["reason"], "agent_question");
    assert_eq!(done["event"], "ticket.done");
    assert_eq!(done["entry"]["reason"], "done");
    assert_eq!(done["entry"]["ticket"], id.as_str());
    assert_eq!(done["entry"]["title"], "Say hello");
    assert!(done["link"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/tickets/{id}")));
    drop(server);
}

/// A client that keeps every status and follows no redirect, like a form post in a browser
/// without JavaScript.
fn browser() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into()
}

/// The `value` of the first `name="NAME"` input after `from` in `html`.
fn input_value(html: &str, from: usize, name: &str) -> String {
    let at = from
        + html[from..]
            .find(&format!("name=\"{name}\" value=\""))
            .unwrap();
    let rest = &html[at + name.len() + 15..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// The same question answered on the ticket page, as a person without JavaScript would: the
/// "Needs you" banner shows the question and an answer form (with its CSRF token); posting it
/// closes the entry and the step goes on to the merge.
#[test]
fn the_ticket_page_shows_the_question_and_its_answer_form_answers_it() {
    let repo = asking_workspace();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    until("the question to reach the inbox", || {
        inbox(&repo)["count"] == 1
    });

    let token = std::fs::read_to_string(repo.path().join(".yoi/local/admin.token")).unwrap();
    let base = format!("http://{}", server.addr);
    let mut link = browser()
        .post(&format!("{base}/api/v1/dashboard/login"))
        .header("Authorization", &format!("Bearer {}", token.trim()))
        .send_empty()
        .unwrap();
    let link: serde_json::Value = link.body_mut().read_json().unwrap();
    let res = browser()
        .get(&format!("{base}{}", link["path"].as_str().unwrap()))
        .call()
        .unwrap();
    assert_eq!(res.status(), 303);
    let cookie = res.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_string();
    let html = browser()
        .get(&format!("{base}/tickets/{id}"))
        .header("Cookie", &cookie)
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert!(html.contains("Needs you: Agent asks"), "{html}");
    assert!(
        html.contains("<blockquote class=\"question\" id=\"question\">- Which greeting: hello or hi?</blockquote>"),
        "{html}"
    );
    let form = html
        .find(&format!("action=\"/tickets/{id}/answer\""))
        .expect("an answer form");
    let csrf = input_value(&html, form, "csrf");
    let op = input_value(&html, form, "op");

    // Without its CSRF token the form changes nothing.
    let forged = browser()
        .post(&format!("{base}/tickets/{id}/answer"))
        .header("Cookie", &cookie)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .send("message=hi")
        .unwrap();
    assert_ne!(forged.status(), 303);
    assert_eq!(inbox(&repo)["count"], 1);

    let body = format!("csrf={csrf}&op={op}&message=Say+hello%2C+in+lower+case.");
    let posted = browser()
        .post(&format!("{base}/tickets/{id}/answer"))
        .header("Cookie", &cookie)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .send(&body)
        .unwrap();
    assert_eq!(posted.status(), 303);
    assert_eq!(inbox(&repo)["count"], 0);
    let html = browser()
        .get(&format!("{base}/tickets/{id}"))
        .header("Cookie", &cookie)
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert!(
        html.contains("answered; the step is handed out again"),
        "{html}"
    );
    assert!(!html.contains("id=\"needs-you\""), "{html}");

    until("the ticket to be done", || state_of(&repo, &id) == "done");
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(thread.contains("Say hello, in lower case."), "{thread}");
    drop(server);
}

/// An agent that cannot run on the pod (its program is not installed) stops its step after one
/// attempt and waits in the inbox as `agent_unusable`, naming the program — instead of failing
/// three times over and showing as a failing step. A retry closes the entry.
#[test]
fn an_agent_that_is_not_installed_stops_its_step_and_waits_as_agent_unusable() {
    let (repo, _script) = workspace("done never runs\n", 60);
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let missing = repo.side.path().join("no-such-agent");
    let text = text.replace(
        &format!("program = \"{}\"", fake_agent().display()),
        &format!("program = \"{}\"", missing.display()),
    );
    assert!(text.contains("no-such-agent"), "{text}");
    std::fs::write(&config, text).unwrap();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    until("the unusable agent to reach the inbox", || {
        inbox(&repo)["count"] == 1
    });
    let got = inbox(&repo);
    let e = &got["entries"][0];
    assert_eq!(e["reason"], "agent_unusable", "{got}");
    assert_eq!(e["ticket"], id.as_str());
    let detail = e["detail"].as_str().unwrap();
    assert!(
        detail.contains("no-such-agent") && detail.contains("is not installed here"),
        "{detail}"
    );
    assert!(e["command"].as_str().unwrap().contains("yoi ticket retry"));
    until_swept(&server, &repo);
    let rows = assignments(&server, &repo, &id);
    assert_eq!(rows.len(), 1, "not handed out again: {rows:?}");
    assert_eq!(rows[0]["status"], "failed");

    repo.yoi(&["ticket", "retry", &id]).ok();
    let after = inbox(&repo);
    assert!(
        after["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["key"] != e["key"]),
        "{after}"
    );
    drop(server);
}

#[path = "../../../tests/browser/mod.rs"]
mod browser;

/// The question answered in a real headless Chromium (JavaScript on, the page live): the
/// banner shows the question, the person types the answer and presses **Answer**, and the step
/// goes on to the merge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_answers_the_question_on_the_ticket_page_in_chromium() {
    use browser::{wait_for, wait_until_text, Driver, BROWSER_TIMEOUT};
    use fantoccini::Locator;
    let repo = asking_workspace();
    let id = queued_ticket(&repo);
    let server = Server::spawn(&repo);
    let inbox_of = |r: &common::Repo| inbox(r);
    tokio::task::block_in_place(|| {
        until("the question to reach the inbox", || {
            inbox_of(&repo)["count"] == 1
        })
    });
    let link = repo.yoi(&["dashboard", "--no-open"]).ok().stdout;
    let driver = Driver::start();
    let c = driver.session(true).await;
    c.goto(link.trim()).await.unwrap();
    wait_for(&c, "main", BROWSER_TIMEOUT).await;
    c.goto(&format!("http://{}/tickets/{id}", server.addr))
        .await
        .unwrap();
    wait_until_text(
        &c,
        "#question",
        "Which greeting: hello or hi?",
        BROWSER_TIMEOUT,
    )
    .await;
    c.find(Locator::Css("#answer-message"))
        .await
        .unwrap()
        .send_keys("Say hello, in lower case.")
        .await
        .unwrap();
    c.find(Locator::Css("#act-answer"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_until_text(&c, ".flash.ok", "answered", BROWSER_TIMEOUT).await;
    c.close().await.unwrap();
    tokio::task::block_in_place(|| {
        until("the ticket to be done", || state_of(&repo, &id) == "done")
    });
    let thread = std::fs::read_to_string(repo.ticket_dir(&id).join("thread.md")).unwrap();
    assert!(thread.contains("Say hello, in lower case."), "{thread}");
    drop(server);
}
