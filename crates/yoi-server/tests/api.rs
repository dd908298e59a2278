//! The API against a real server: the service routes, create, list, show, edit and comment,
//! doctor, and the request-level refusals (unknown ids and routes, 405, 413), each with its
//! exact status and `error.code` and with the files checked where a refusal must write nothing.
//! These cases run on SQLite; the full flow of every operation runs on SQLite and PostgreSQL.
//! State operations are in `transitions.rs`, relations and plan records in `relations.rs`.

mod common;

use common::{event_kinds, prepare_done_ticket, t, Backend, Server, COMPLETE_BRIEF, UNKNOWN_ID};
use serde_json::{json, Value};

fn ids(list: &Value) -> Vec<String> {
    list["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn health_and_readiness_answer_without_a_token() {
    let s = Server::start(Backend::Sqlite);
    s.create("One", "");
    assert_eq!(
        s.get("/healthz").send().expect(200),
        json!({ "status": "ok" })
    );
    assert_eq!(
        s.get("/readyz").send().expect(200),
        json!({ "status": "ready", "indexed_tickets": 1 })
    );
}

#[test]
fn create_answers_201_with_the_outcome_and_writes_the_ticket() {
    let s = Server::start(Backend::Sqlite);
    let out = s
        .post("/api/v1/tickets")
        .token(&s.tokens.human)
        .json(json!({ "title": "Parse the config", "body": "Some text." }))
        .send()
        .expect(201);
    let id = out["ticket"].as_str().unwrap();
    assert_eq!(out["operation"], "create");
    assert_eq!(out["to"], "planning");
    assert_eq!(out["replayed"], false);
    assert!(out["event_id"].as_str().is_some_and(|e| e.len() == 26));
    let dir = s.root().join(".yoi/tickets").join(id);
    for file in ["item.md", "thread.md"] {
        assert!(dir.join(file).is_file(), "{file} written");
    }
    let shown = s.show(id);
    assert_eq!(shown["title"], "Parse the config");
    assert_eq!(shown["state"], "planning");
    assert_eq!(shown["body"].as_str().unwrap().trim(), "Some text.");
    assert_eq!(event_kinds(&shown), ["create"]);
    assert_eq!(shown["events"][0]["id"], out["event_id"]);
}

#[test]
fn create_records_its_dependencies() {
    let s = Server::start(Backend::Sqlite);
    let dep = s.create("Dependency", "");
    let out = s
        .post("/api/v1/tickets")
        .token(&s.tokens.human)
        .json(json!({ "title": "Dependent", "depends_on": [dep] }))
        .send()
        .expect(201);
    let id = out["ticket"].as_str().unwrap();
    let rel = s
        .get(&t(id, "/relations"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(rel["relations"][0]["kind"], "depends_on");
    assert_eq!(rel["relations"][0]["other"], dep.as_str());
    assert_eq!(rel["blockers"][0]["ticket"], dep.as_str());
}

#[test]
fn create_refuses_bad_input_with_400_and_writes_nothing() {
    let s = Server::start(Backend::Sqlite);
    s.create("Existing", "");
    let before = s.tree();
    let bad: [(&str, &[u8]); 7] = [
        ("not JSON", b"{\"title\": "),
        ("unknown field", br#"{"title": "T", "owner": "bob"}"#),
        ("missing title", br#"{"body": "text"}"#),
        ("wrong type", br#"{"title": 42}"#),
        ("empty title", br#"{"title": "   "}"#),
        ("two-line title", br#"{"title": "a\nb"}"#),
        ("an array", br#"["title"]"#),
    ];
    for (what, body) in bad {
        let resp = s
            .post("/api/v1/tickets")
            .token(&s.tokens.human)
            .raw(body)
            .send();
        assert_eq!(resp.status, 400, "{what}: {}", resp.text);
        resp.expect_error(400, "invalid");
    }
    // A body the request limit accepts but the thread format does not (256 KiB).
    let big = "x".repeat(300 * 1024);
    s.post("/api/v1/tickets")
        .token(&s.tokens.human)
        .json(json!({ "title": "Big", "body": big }))
        .send()
        .expect_error(400, "invalid");
    assert_eq!(s.tree(), before);
}

#[test]
fn create_with_an_unknown_dependency_is_404_and_writes_nothing() {
    let s = Server::start(Backend::Sqlite);
    let before = s.tree();
    s.post("/api/v1/tickets")
        .token(&s.tokens.human)
        .json(json!({ "title": "Dependent", "depends_on": [UNKNOWN_ID] }))
        .send()
        .expect_error(404, "not_found");
    assert_eq!(s.tree(), before);
}

#[test]
fn list_filters_by_state_readiness_and_blockers() {
    let s = Server::start(Backend::Sqlite);
    let planning = s.create("Planning", "");
    let ready = s.ready_ticket("Ready");
    let blocked = s.ready_ticket("Blocked");
    s.post(&t(&blocked, "/relations"))
        .token(&s.tokens.human)
        .json(json!({ "kind": "depends_on", "target": planning }))
        .send()
        .expect(200);
    let cancelled = s.create("Cancelled", "");
    s.post(&t(&cancelled, "/cancel"))
        .token(&s.tokens.human)
        .json(json!({ "resolution": "Not needed." }))
        .send()
        .expect(200);
    let list = |query: &str| {
        s.get(&format!("/api/v1/tickets{query}"))
            .token(&s.tokens.read)
            .send()
            .expect(200)
    };
    let active = list("");
    assert_eq!(active["count"], 3);
    assert_eq!(
        ids(&active),
        [planning.as_str(), ready.as_str(), blocked.as_str()]
    );
    assert!(active.get("next").is_none_or(Value::is_null));
    assert_eq!(
        ids(&list("?state=all")),
        [
            planning.as_str(),
            ready.as_str(),
            blocked.as_str(),
            cancelled.as_str()
        ]
    );
    assert_eq!(ids(&list("?state=closed")), [cancelled.as_str()]);
    assert_eq!(
        ids(&list("?state=planning,closed")),
        [planning.as_str(), cancelled.as_str()]
    );
    assert_eq!(ids(&list("?ready=true")), [ready.as_str()]);
    let b = list("?blocked=true");
    assert_eq!(ids(&b), [blocked.as_str()]);
    assert_eq!(b["tickets"][0]["blockers"][0]["ticket"], planning.as_str());
}

#[test]
fn list_searches_every_word_and_pages_with_a_cursor() {
    let s = Server::start(Backend::Sqlite);
    let mut parsing = Vec::new();
    for i in 0..5 {
        parsing.push(s.create(&format!("Ticket {i} about parsing"), ""));
    }
    let other = s.create("Unrelated", "but the body mentions Parsing");
    s.create("Unrelated too", "");
    let list = |query: &str| {
        s.get(&format!("/api/v1/tickets{query}"))
            .token(&s.tokens.human)
            .send()
            .expect(200)
    };
    assert_eq!(ids(&list("?search=PARSING%203")), [parsing[3].as_str()]);
    let mut all_parsing = parsing.clone();
    all_parsing.push(other.clone());
    assert_eq!(ids(&list("?search=parsing")), all_parsing);
    let page1 = list("?search=parsing&limit=2");
    assert_eq!(ids(&page1), &parsing[..2]);
    assert_eq!(page1["count"], 2);
    assert_eq!(page1["next"], parsing[1].as_str());
    let page2 = list(&format!("?search=parsing&limit=2&after={}", parsing[1]));
    assert_eq!(ids(&page2), &parsing[2..4]);
    let page3 = list(&format!(
        "?search=parsing&limit=2&after={}",
        page2["next"].as_str().unwrap()
    ));
    assert_eq!(ids(&page3), [parsing[4].as_str(), other.as_str()]);
    assert!(page3["next"].is_null(), "last page has no cursor: {page3}");
}

#[test]
fn list_refuses_bad_parameters_with_a_json_400() {
    let s = Server::start(Backend::Sqlite);
    s.create("One", "");
    for query in [
        "?state=sleeping",
        "?limit=many",
        "?ready=perhaps",
        "?colour=blue",
    ] {
        s.get(&format!("/api/v1/tickets{query}"))
            .token(&s.tokens.human)
            .send()
            .expect_error(400, "invalid");
    }
    s.get(&format!("/api/v1/tickets?after={UNKNOWN_ID}"))
        .token(&s.tokens.human)
        .send()
        .expect_error(404, "not_found");
}

#[test]
fn show_returns_the_whole_ticket_by_id_or_suffix() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("Shown", COMPLETE_BRIEF);
    let full = s.show(&id);
    assert_eq!(full["id"], id.as_str());
    assert_eq!(full["missing_brief_sections"], json!([]));
    assert_eq!(full["relations"]["ticket"], id.as_str());
    assert_eq!(full["plan"], json!([]));
    let suffix = &id[id.len() - 6..];
    assert_eq!(s.show(&suffix.to_lowercase()), full);
}

#[test]
fn unknown_ticket_ids_are_404_on_every_ticket_route() {
    let s = Server::start(Backend::Sqlite);
    let other = s.create("Exists", "");
    let before = s.tree();
    let u = UNKNOWN_ID;
    let h = &s.tokens.human;
    let reads = ["", "/relations", "/blockers", "/plan"];
    for rest in reads {
        s.get(&t(u, rest))
            .token(h)
            .send()
            .expect_error(404, "not_found");
    }
    let writes: [(&'static str, String, Value); 11] = [
        ("PATCH", t(u, ""), json!({ "title": "x" })),
        ("POST", t(u, "/comments"), json!({ "body": "x" })),
        ("POST", t(u, "/mark-ready"), json!({})),
        ("POST", t(u, "/queue"), json!({})),
        (
            "POST",
            t(u, "/return-to-planning"),
            json!({ "reason": "x" }),
        ),
        ("POST", t(u, "/close"), json!({ "resolution": "x" })),
        ("POST", t(u, "/cancel"), json!({ "resolution": "x" })),
        ("POST", t(u, "/reopen"), json!({ "reason": "x" })),
        (
            "POST",
            t(u, "/relations"),
            json!({ "kind": "related", "target": other }),
        ),
        (
            "POST",
            t(u, "/plan"),
            json!({ "kind": "after", "related": other }),
        ),
        (
            "DELETE",
            t(u, &format!("/relations/related/{other}")),
            Value::Null,
        ),
    ];
    for (method, path, body) in writes {
        let req = s.request(method, &path).token(h);
        let req = if body.is_null() { req } else { req.json(body) };
        req.send().expect_error(404, "not_found");
    }
    assert_eq!(s.tree(), before);
}

#[test]
fn edit_replaces_title_and_body_and_refuses_an_empty_edit() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("Old title", "Old body.");
    let out = s
        .patch(&t(&id, ""))
        .token(&s.tokens.human)
        .json(json!({ "title": "New title", "body": "New body." }))
        .send()
        .expect(200);
    assert_eq!(out["operation"], "edit");
    assert_eq!(out["replayed"], false);
    let shown = s.show(&id);
    assert_eq!(shown["title"], "New title");
    assert_eq!(shown["body"].as_str().unwrap().trim(), "New body.");
    assert_eq!(event_kinds(&shown), ["create", "item_edit"]);
    let before = s.tree();
    s.patch(&t(&id, ""))
        .token(&s.tokens.human)
        .json(json!({}))
        .send()
        .expect_error(400, "invalid");
    s.patch(&t(&id, ""))
        .token(&s.tokens.human)
        .json(json!({ "state": "done" }))
        .send()
        .expect_error(400, "invalid");
    assert_eq!(s.tree(), before);
}

#[test]
fn comment_appends_an_event_and_refuses_reserved_kinds() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("Discussed", "");
    let out = s
        .post(&t(&id, "/comments"))
        .token(&s.tokens.human)
        .json(json!({ "body": "Looks good." }))
        .send()
        .expect(200);
    assert_eq!(out["operation"], "comment");
    s.post(&t(&id, "/comments"))
        .token(&s.tokens.human)
        .json(json!({ "kind": "decision", "body": "Use serde." }))
        .send()
        .expect(200);
    let shown = s.show(&id);
    assert_eq!(event_kinds(&shown), ["create", "comment", "decision"]);
    assert_eq!(
        shown["events"][1]["body"].as_str().unwrap().trim(),
        "Looks good."
    );
    assert_eq!(shown["events"][1]["id"], out["event_id"]);
    let before = s.tree();
    for body in [
        json!({ "kind": "state_changed", "body": "to done" }),
        json!({ "body": "   " }),
        json!({ "kind": "comment" }),
    ] {
        s.post(&t(&id, "/comments"))
            .token(&s.tokens.human)
            .json(body)
            .send()
            .expect_error(400, "invalid");
    }
    assert_eq!(s.tree(), before);
}

#[test]
fn doctor_is_clean_on_a_fresh_workspace() {
    let s = Server::start(Backend::Sqlite);
    s.ready_ticket("One");
    let report = s
        .get("/api/v1/doctor")
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["errors"], 0);
    assert_eq!(report["fixed"], json!([]));
}

#[test]
fn doctor_checks_the_index_against_the_files() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("Indexed title", "");
    // The server reads every file written behind its back into the index before it answers,
    // so the index can only be made to differ from the files in the database itself.
    let admin = s.admin();
    admin.rt.block_on(async {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&s.database_url).await.unwrap();
        sqlx::query("UPDATE tickets SET title = 'Changed in the index' WHERE id = $1")
            .bind(&id)
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    });
    let report = s
        .get("/api/v1/doctor")
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(report["ok"], false, "{report}");
    let checks: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    assert!(checks.contains(&"index.stale_ticket"), "{report}");
}

/// Titles of every active ticket as `GET /tickets` lists them.
fn listed_titles(s: &Server) -> Vec<String> {
    let page = s
        .get("/api/v1/tickets")
        .token(&s.tokens.read)
        .send()
        .expect(200);
    titles(&page)
}

/// The titles on a page of `GET /tickets`.
fn titles(page: &Value) -> Vec<String> {
    page["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn files_written_behind_the_servers_back_are_in_its_next_answer() {
    check_files_written_behind_the_servers_back_are_in_its_next_answer(Backend::Sqlite);
}

#[test]
fn files_written_behind_the_servers_back_are_in_its_next_answer_on_postgres() {
    check_files_written_behind_the_servers_back_are_in_its_next_answer(Backend::Postgres);
}

fn check_files_written_behind_the_servers_back_are_in_its_next_answer(backend: Backend) {
    let s = Server::start(backend);
    let id = s.create("Indexed title", "");
    let other = s.create("Second ticket", "");
    assert_eq!(listed_titles(&s), ["Indexed title", "Second ticket"]);
    // Wait until the server answers both from memory, so the kept answers are what it would
    // answer next.
    let shown = format!("/api/v1/tickets/{id}");
    let kept = [
        (shown.as_str(), s.tokens.human.as_str()),
        ("/api/v1/tickets", s.tokens.read.as_str()),
    ];
    let answers = s.until_kept(&kept);
    assert_eq!(answers[0]["title"], "Indexed title");
    assert_eq!(titles(&answers[1]), ["Indexed title", "Second ticket"]);

    // An editor saves item.md.
    let item = s.root().join(".yoi/tickets").join(&id).join("item.md");
    let text = std::fs::read_to_string(&item)
        .unwrap()
        .replace("title: Indexed title", "title: Edited by hand");
    std::fs::write(&item, text).unwrap();
    assert_eq!(s.show(&id)["title"], "Edited by hand");
    assert_eq!(listed_titles(&s), ["Edited by hand", "Second ticket"]);
    // And still so once the server answers from memory again.
    let answers = s.until_kept(&kept);
    assert_eq!(answers[0]["title"], "Edited by hand");
    assert_eq!(titles(&answers[1]), ["Edited by hand", "Second ticket"]);

    // Another process creates a ticket on the files (as `yoi --local ticket create` does).
    let ws = s.workspace();
    let ctx = yoi_store::Ctx::new(yoi_core::Principal::human("carol"), yoi_server::auth::now());
    let made = yoi_store::ops::create(
        &ws,
        &ctx,
        &yoi_store::ops::CreateRequest {
            title: "Made on the files".into(),
            body: String::new(),
            depends_on: vec![],
        },
    )
    .unwrap();
    assert_eq!(
        listed_titles(&s),
        ["Edited by hand", "Second ticket", "Made on the files"],
        "{made:?}"
    );

    // A ticket folder removed by hand (e.g. `git checkout` of an older tree) is gone at once.
    std::fs::remove_dir_all(s.root().join(".yoi/tickets").join(&other)).unwrap();
    assert_eq!(listed_titles(&s), ["Edited by hand", "Made on the files"]);
    s.get(&format!("/api/v1/tickets/{other}"))
        .token(&s.tokens.read)
        .send()
        .expect_error(404, "not_found");
}

#[test]
fn a_body_over_one_mebibyte_is_413_and_writes_nothing() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("Target", "");
    let before = s.tree();
    let huge = "x".repeat(yoi_server::MAX_BODY_BYTES + 1024);
    s.post("/api/v1/tickets")
        .token(&s.tokens.human)
        .json(json!({ "title": "Huge", "body": huge }))
        .send()
        .expect_error(413, "too_large");
    s.post(&t(&id, "/comments"))
        .token(&s.tokens.human)
        .json(json!({ "body": huge }))
        .send()
        .expect_error(413, "too_large");
    assert_eq!(s.tree(), before);
}

#[test]
fn unknown_routes_are_json_404() {
    let s = Server::start(Backend::Sqlite);
    // `/` is the dashboard (docs/dashboard.md); any other unknown path is the API's 404.
    for path in [
        "/nothing-here",
        "/api/v1",
        "/api/v2/tickets",
        "/api/v1/ticket",
        "/api/v1/tickets/X/y/z",
    ] {
        s.get(path)
            .token(&s.tokens.human)
            .send()
            .expect_error(404, "not_found");
    }
}

#[test]
fn a_known_route_with_an_unknown_method_is_json_405() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("One", "");
    let before = s.tree();
    for (method, path) in [
        ("DELETE", "/api/v1/tickets".to_string()),
        ("PUT", t(&id, "")),
        ("GET", t(&id, "/queue")),
        ("POST", "/healthz".to_string()),
    ] {
        s.request(method, &path)
            .token(&s.tokens.human)
            .send()
            .expect_error(405, "method_not_allowed");
    }
    assert_eq!(s.tree(), before);
}

/// Every operation in order on one workspace, reading back through the index.
fn full_flow(backend: Backend) {
    let mut done = String::new();
    let s = Server::start_with(backend, |ws| {
        done = prepare_done_ticket(ws, "Already merged")
    });
    let h = &s.tokens.human;
    let dep = s.create("Parser", COMPLETE_BRIEF);
    let id = s.create("Config loader", "Draft.");
    s.patch(&t(&id, ""))
        .token(&s.tokens.intake)
        .json(json!({ "body": COMPLETE_BRIEF }))
        .send()
        .expect(200);
    s.post(&t(&id, "/comments"))
        .token(h)
        .json(json!({ "body": "Start after the parser." }))
        .send()
        .expect(200);
    s.post(&t(&id, "/relations"))
        .token(h)
        .json(json!({ "kind": "depends_on", "target": dep }))
        .send()
        .expect(200);
    s.post(&t(&id, "/plan"))
        .token(h)
        .json(json!({ "kind": "after", "related": dep }))
        .send()
        .expect(200);
    s.post(&t(&id, "/mark-ready"))
        .token(&s.tokens.intake)
        .send()
        .expect(200);
    s.post(&t(&id, "/queue"))
        .token(h)
        .send()
        .expect_error(409, "blocked");
    let blocked = s
        .get("/api/v1/tickets?blocked=true")
        .token(h)
        .send()
        .expect(200);
    assert_eq!(ids(&blocked), [id.as_str()]);
    s.post(&t(&dep, "/mark-ready")).token(h).send().expect(200);
    s.post(&t(&dep, "/queue")).token(h).send().expect(200);
    // A blocker in flight (queued) no longer refuses the queue.
    s.post(&t(&id, "/queue"))
        .token(h)
        .json(json!({ "expected_state": "ready" }))
        .send()
        .expect(200);
    s.post(&t(&id, "/return-to-planning"))
        .token(&s.tokens.orchestrator)
        .json(json!({ "reason": "needs a schema decision" }))
        .send()
        .expect(200);
    s.post(&t(&id, "/cancel"))
        .token(h)
        .json(json!({ "resolution": "Folded into the parser." }))
        .send()
        .expect(200);
    s.post(&t(&id, "/reopen"))
        .token(h)
        .json(json!({ "reason": "Split again." }))
        .send()
        .expect(200);
    s.delete(&t(&id, &format!("/relations/depends_on/{dep}")))
        .token(h)
        .send()
        .expect(200);
    s.post(&t(&done, "/close"))
        .token(h)
        .json(json!({ "resolution": "Released." }))
        .send()
        .expect(200);

    let shown = s.show(&id);
    assert_eq!(shown["state"], "planning");
    assert_eq!(
        event_kinds(&shown),
        [
            "create",
            "item_edit",
            "comment",
            "relation_changed",
            "state_changed",
            "state_changed",
            "state_changed",
            "state_changed",
            "close",
            "state_changed",
            "relation_changed",
        ]
    );
    let all = s
        .get("/api/v1/tickets?state=all")
        .token(h)
        .send()
        .expect(200);
    let states: Vec<(String, String)> = all["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_string(),
                t["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            (done.clone(), "closed".to_string()),
            (dep.clone(), "queued".to_string()),
            (id.clone(), "planning".to_string()),
        ]
    );
    let view = s.get(&t(&id, "/blockers")).token(h).send().expect(200);
    assert_eq!(view["blockers"], json!([]));
    let plan = s.get(&t(&id, "/plan")).token(h).send().expect(200);
    assert_eq!(plan["count"], 1);
    let report = s.get("/api/v1/doctor").token(h).send().expect(200);
    assert_eq!(report["ok"], true, "{report}");
    let stopped = s.stop();
    let after = stopped.doctor();
    assert!(after.ok, "{:#?}", after.findings);
}

#[test]
fn full_flow_on_sqlite() {
    full_flow(Backend::Sqlite);
}

#[test]
fn full_flow_on_postgres() {
    full_flow(Backend::Postgres);
}
