//! The CLI with a running `yoi serve`: ticket mutations go through the API and print exactly
//! what local mode prints (successes and refusals, with the same exit codes), the server records
//! the admin token's principal, `--local` still works beside it, and the server's lifecycle —
//! SIGTERM finishes the request in flight, exits 0 and removes server.json; a second server for
//! the same workspace is refused.
//!
//! Each server is the real binary started with `--listen 127.0.0.1:0`; its address is read from
//! its `listening on http://ADDR` line, never guessed or waited for.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use common::server::Server;
use common::{normalize, run_yoi_full, Output, Repo, COMPLETE_BRIEF};

/// One CLI invocation of a comparison script: `$1`, `$2`… stand for the tickets the script
/// created so far, in order.
struct Step {
    args: &'static [&'static str],
    stdin: Option<&'static str>,
    code: i32,
}

const fn step(args: &'static [&'static str], code: i32) -> Step {
    Step {
        args,
        stdin: None,
        code,
    }
}

const fn with_stdin(args: &'static [&'static str], stdin: &'static str, code: i32) -> Step {
    Step {
        args,
        stdin: Some(stdin),
        code,
    }
}

/// Runs a script in one workspace, remembering the tickets it creates.
struct Runner<'a> {
    repo: &'a Repo,
    env: &'a [(&'a str, &'a str)],
    ids: Vec<String>,
}

impl Runner<'_> {
    fn run(&mut self, s: &Step) -> Output {
        let args: Vec<String> = s
            .args
            .iter()
            .map(|a| match a.strip_prefix('$') {
                Some(n) => self.ids[n.parse::<usize>().unwrap() - 1].clone(),
                None => a.to_string(),
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_yoi_full(self.repo.path(), &args, s.stdin, self.env);
        if out.code == 0 && s.args.contains(&"create") {
            let id = match serde_json::from_str::<serde_json::Value>(&out.stdout) {
                Ok(v) => v["ticket"].as_str().unwrap().to_string(),
                Err(_) => out.stdout.trim().to_string(),
            };
            self.ids.push(id);
        }
        out
    }

    /// The output with this workspace's ticket ids as `T1`, `T2`…, then ids and times
    /// normalised.
    fn canonical(&self, out: &Output) -> String {
        let mut text = format!(
            "status: {}\n--- stdout\n{}--- stderr\n{}",
            out.code, out.stdout, out.stderr
        );
        for (i, id) in self.ids.iter().enumerate() {
            text = text.replace(id.as_str(), &format!("T{}", i + 1));
        }
        normalize(&text)
    }
}

/// Run `script` in a local-mode workspace and in one with a running server, comparing every
/// step. The server-mode CLI runs as another user: if a command bypassed the server, the
/// recorded author (printed by `plan add --json` and `show`) would differ.
fn compare_local_and_server(script: &[Step]) {
    let local_repo = Repo::init();
    let server_repo = Repo::init();
    let server = Server::start(&server_repo);
    let mut local = Runner {
        repo: &local_repo,
        env: &[],
        ids: Vec::new(),
    };
    let mut remote = Runner {
        repo: &server_repo,
        env: &[("USER", "mallory")],
        ids: Vec::new(),
    };
    for s in script {
        let a = local.run(s);
        let b = remote.run(s);
        let (a, b) = (local.canonical(&a), remote.canonical(&b));
        assert_eq!(
            a,
            b,
            "`yoi {}` differs between local mode (left) and through the server (right)",
            s.args.join(" ")
        );
        assert!(
            a.starts_with(&format!("status: {}\n", s.code)),
            "`yoi {}`: expected exit {}, got:\n{a}",
            s.args.join(" "),
            s.code
        );
    }
    // Every successful mutation went through the server: the admin token's principal is the
    // author of every event, although the CLI ran as mallory.
    for id in &remote.ids {
        for (kind, author) in authors(&server_repo, id) {
            assert_eq!(author, "tester", "{id}: {kind} event");
        }
    }
    drop(server);
}

#[test]
fn mutations_through_the_server_print_exactly_what_local_mode_prints() {
    compare_local_and_server(&[
        with_stdin(
            &["ticket", "create", "--title", "Parser", "--body-file", "-"],
            COMPLETE_BRIEF,
            0,
        ),
        step(&["ticket", "create", "--title", "Lexer"], 0),
        step(
            &[
                "ticket",
                "create",
                "--title",
                "Docs",
                "--depends-on",
                "$1",
                "--json",
            ],
            0,
        ),
        step(&["ticket", "edit", "$2", "--title", "Lexer v2"], 0),
        step(
            &["ticket", "edit", "$2", "--title", "Lexer v3", "--json"],
            0,
        ),
        with_stdin(
            &["ticket", "edit", "$2", "--body-file", "-"],
            "A new body.\n",
            0,
        ),
        step(&["ticket", "comment", "$1", "-m", "first thought"], 0),
        with_stdin(
            &[
                "ticket", "comment", "$1", "--kind", "decision", "--file", "-", "--json",
            ],
            "Use a table.\n",
            0,
        ),
        step(&["ticket", "mark-ready", "$1"], 0),
        step(&["ticket", "queue", "$1", "--json"], 0),
        step(
            &[
                "ticket",
                "return-to-planning",
                "$1",
                "--reason",
                "needs a decision",
            ],
            0,
        ),
        step(&["ticket", "state", "$1", "ready"], 0),
        step(&["ticket", "state", "$1", "queued", "--json"], 0),
        step(
            &["ticket", "state", "$1", "planning", "--reason", "again"],
            0,
        ),
        step(
            &[
                "ticket", "relation", "add", "$2", "blocks", "$3", "--note", "order",
            ],
            0,
        ),
        step(
            &["ticket", "relation", "add", "$2", "related", "$1", "--json"],
            0,
        ),
        step(&["ticket", "relation", "rm", "$2", "blocks", "$3"], 0),
        step(
            &["ticket", "relation", "rm", "$2", "related", "$1", "--json"],
            0,
        ),
        step(
            &[
                "ticket",
                "plan",
                "add",
                "$1",
                "before",
                "--related",
                "$2",
                "--note",
                "first",
            ],
            0,
        ),
        step(
            &[
                "ticket",
                "plan",
                "add",
                "$1",
                "after",
                "--related",
                "$3",
                "--json",
            ],
            0,
        ),
        step(&["ticket", "cancel", "$2", "--resolution", "not needed"], 0),
        step(
            &[
                "ticket",
                "reopen",
                "$2",
                "--reason",
                "needed after all",
                "--json",
            ],
            0,
        ),
        step(
            &[
                "ticket",
                "cancel",
                "$3",
                "--resolution",
                "duplicate",
                "--json",
            ],
            0,
        ),
        step(
            &["--op-id", "op-42", "ticket", "comment", "$1", "-m", "once"],
            0,
        ),
        step(
            &["--op-id", "op-42", "ticket", "comment", "$1", "-m", "once"],
            0,
        ),
        // The files each mode wrote read back the same.
        step(&["ticket", "show", "$1"], 0),
        step(&["ticket", "show", "$2", "--json"], 0),
        step(&["ticket", "list", "--state", "all"], 0),
        // Reads go to the server too, and print what the local index answers.
        step(&["ticket", "list", "--state", "all", "--json"], 0),
        step(&["ticket", "list", "--json"], 0),
        step(&["ticket", "list", "--ready", "--json"], 0),
        step(&["ticket", "list", "--blocked"], 0),
        step(
            &["ticket", "list", "--state", "all", "--limit", "1", "--json"],
            0,
        ),
        step(
            &[
                "ticket", "list", "--state", "all", "--after", "$1", "--json",
            ],
            0,
        ),
        step(&["ticket", "list", "--search", "parser", "--json"], 0),
        step(&["ticket", "list", "--state", "Closed,DONE"], 0),
        step(&["ticket", "list", "--limit", "0"], 2),
        step(&["ticket", "list", "--after", "nosuchticket"], 1),
    ]);
}

#[test]
fn a_list_through_the_server_has_every_file_written_before_it() {
    let repo = Repo::init();
    let server = Server::start(&repo);
    let id = repo.create("Before the edit", "");
    let _ = repo.yoi(&["ticket", "list", "--json"]).ok();
    // An editor changes the title; the next list, answered by the server, has it, and it is
    // what the files give without the server.
    let item = repo.path().join(".yoi/tickets").join(&id).join("item.md");
    let text = std::fs::read_to_string(&item)
        .unwrap()
        .replace("title: Before the edit", "title: After the edit");
    std::fs::write(&item, text).unwrap();
    // A database this command cannot open: only the server can answer.
    let out = run_yoi_full(
        repo.path(),
        &["ticket", "list", "--json"],
        None,
        &[("YOI_DATABASE_URL", "sqlite:///nonexistent/yoi.db")],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let through_server = out.stdout;
    let listed: serde_json::Value = serde_json::from_str(&through_server).unwrap();
    assert_eq!(
        listed["tickets"][0]["title"], "After the edit",
        "{through_server}"
    );
    let local = repo
        .yoi(&["--local", "ticket", "list", "--json"])
        .ok()
        .stdout;
    assert_eq!(through_server, local);
    drop(server);
}

/// The page `yoi ticket list` shows without `--limit` or `--all`.
const FIRST_PAGE: usize = 100;

#[test]
fn a_long_list_shows_its_first_page_and_all_writes_every_ticket_alike_through_the_server() {
    let repo = Repo::init();
    let ids: Vec<String> = (0..=FIRST_PAGE)
        .map(|i| repo.create(&format!("Ticket {i}"), ""))
        .collect();
    let json = |out: &Output| -> serde_json::Value {
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
    };
    let local_page = repo.yoi(&["--local", "ticket", "list", "--json"]).ok();
    let local_all = repo
        .yoi(&["--local", "ticket", "list", "--json", "--all"])
        .ok();
    let local_text = repo.yoi(&["--local", "ticket", "list"]).ok();
    let server = Server::start(&repo);
    let page = repo.yoi(&["ticket", "list", "--json"]).ok();
    let all = repo.yoi(&["ticket", "list", "--json", "--all"]).ok();
    let text = repo.yoi(&["ticket", "list"]).ok();
    // The server answers what the files answer, byte for byte, both ways.
    assert_eq!(page.stdout, local_page.stdout);
    assert_eq!(all.stdout, local_all.stdout);
    assert_eq!(text.stdout, local_text.stdout);
    // The first page: the oldest hundred, and where the rest starts.
    let v = json(&page);
    assert_eq!(v["count"], FIRST_PAGE);
    assert_eq!(v["tickets"].as_array().unwrap().len(), FIRST_PAGE);
    assert_eq!(v["tickets"][0]["id"], ids[0].as_str());
    assert_eq!(v["next"], ids[FIRST_PAGE - 1].as_str());
    let rest = repo
        .yoi(&["ticket", "list", "--json", "--after", &ids[FIRST_PAGE - 1]])
        .ok();
    assert_eq!(json(&rest)["tickets"][0]["id"], ids[FIRST_PAGE].as_str());
    assert!(json(&rest).get("next").is_none(), "{}", rest.stdout);
    // --all: every ticket, no cursor, the same fields.
    let v = json(&all);
    assert_eq!(v["count"], FIRST_PAGE + 1);
    let listed: Vec<&str> = v["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ids.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(v.get("next").is_none(), "{}", all.stdout);
    assert_eq!(
        v["tickets"][0],
        json(&page)["tickets"][0],
        "a ticket reads the same in both"
    );
    // The table says how to see the rest.
    assert_eq!(
        text.stdout.lines().count(),
        1 + FIRST_PAGE + 1,
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.ends_with(&format!(
            "more: --after {} (or --all for every one)\n",
            ids[FIRST_PAGE - 1]
        )),
        "{}",
        text.stdout
    );
    let everything = repo.yoi(&["ticket", "list", "--all"]).ok();
    assert_eq!(everything.stdout.lines().count(), 1 + FIRST_PAGE + 1);
    assert!(
        !everything.stdout.contains("more:"),
        "{}",
        everything.stdout
    );
    // --all and --limit ask for different things.
    let both = repo.yoi(&["ticket", "list", "--all", "--limit", "5"]);
    assert_eq!(both.code, 2, "{}", both.stderr);
    drop(server);
}

#[test]
fn refusals_through_the_server_give_the_local_message_and_exit_code() {
    compare_local_and_server(&[
        with_stdin(
            &["ticket", "create", "--title", "Alpha", "--body-file", "-"],
            COMPLETE_BRIEF,
            0,
        ),
        step(&["ticket", "create", "--title", "Beta"], 0),
        with_stdin(
            &[
                "ticket",
                "create",
                "--title",
                "Gamma",
                "--depends-on",
                "$1",
                "--body-file",
                "-",
            ],
            COMPLETE_BRIEF,
            0,
        ),
        // Invalid input: exit 2.
        step(&["ticket", "create", "--title", ""], 2),
        step(&["ticket", "comment", "AB", "-m", "too short an id"], 2),
        step(&["ticket", "comment", "$1", "-m", ""], 2),
        step(&["ticket", "edit", "$1"], 2),
        step(&["ticket", "state", "$1", "frozen"], 2),
        step(&["ticket", "relation", "add", "$2", "frobs", "$1"], 2),
        step(&["ticket", "plan", "add", "$1", "nonsense"], 2),
        step(
            &[
                "--op-id",
                "not an id!",
                "ticket",
                "comment",
                "$1",
                "-m",
                "x",
            ],
            2,
        ),
        // Unknown tickets: exit 1.
        step(
            &[
                "ticket",
                "create",
                "--title",
                "Delta",
                "--depends-on",
                "ZZZZZZZZ",
            ],
            1,
        ),
        step(&["ticket", "edit", "ZZZZZZZZ", "--title", "x"], 1),
        step(&["ticket", "comment", "ZZZZZZZZ", "-m", "x"], 1),
        step(&["ticket", "plan", "add", "ZZZZZZZZ", "before"], 1),
        // Guards: exit 1.
        step(&["ticket", "mark-ready", "$2"], 1),
        step(&["ticket", "queue", "$2"], 1),
        step(&["ticket", "mark-ready", "$1"], 0),
        step(&["ticket", "mark-ready", "$1"], 1),
        step(&["ticket", "mark-ready", "$3"], 0),
        step(&["ticket", "queue", "$3"], 1),
        step(&["ticket", "close", "$1", "--resolution", "done"], 1),
        step(&["ticket", "reopen", "$1", "--reason", "why not"], 1),
        step(&["ticket", "state", "$1", "done"], 1),
        step(&["ticket", "state", "$1", "ready"], 1),
        step(&["ticket", "state", "$1", "planning"], 2),
        step(&["ticket", "relation", "add", "$1", "depends_on", "$1"], 1),
        step(&["ticket", "relation", "add", "$1", "depends_on", "$3"], 1),
        step(&["ticket", "relation", "add", "$2", "blocks", "$1"], 0),
        step(&["ticket", "relation", "add", "$2", "blocks", "$1"], 1),
        step(&["ticket", "relation", "rm", "$2", "related", "$1"], 1),
        step(&["ticket", "plan", "add", "$1", "accepted_plan"], 1),
        step(
            &["--op-id", "op-7", "ticket", "comment", "$1", "-m", "once"],
            0,
        ),
        step(
            &["--op-id", "op-7", "ticket", "comment", "$1", "-m", "twice"],
            1,
        ),
    ]);
}

fn show_json(repo: &Repo, id: &str) -> serde_json::Value {
    let out = repo.yoi(&["ticket", "show", id, "--json"]).ok();
    serde_json::from_str(&out.stdout).unwrap()
}

fn authors(repo: &Repo, id: &str) -> Vec<(String, String)> {
    show_json(repo, id)["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["author"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_server_records_the_admin_tokens_principal_and_local_mode_the_user() {
    let repo = Repo::init(); // as USER=tester: the admin token's principal
    let server = Server::start(&repo);
    let as_mallory = [("USER", "mallory")];
    let created = run_yoi_full(
        repo.path(),
        &["ticket", "create", "--title", "Who"],
        None,
        &as_mallory,
    )
    .ok();
    let id = created.stdout.trim().to_string();
    run_yoi_full(
        repo.path(),
        &["ticket", "comment", &id, "-m", "via the API"],
        None,
        &as_mallory,
    )
    .ok();
    run_yoi_full(
        repo.path(),
        &["--local", "ticket", "comment", &id, "-m", "on the files"],
        None,
        &as_mallory,
    )
    .ok();
    assert_eq!(
        authors(&repo, &id),
        vec![
            ("create".to_string(), "tester".to_string()),
            ("comment".to_string(), "tester".to_string()),
            ("comment".to_string(), "mallory".to_string()),
        ]
    );
    drop(server);
}

#[test]
fn local_mode_works_beside_a_running_server_and_the_server_sees_its_writes() {
    let repo = Repo::init();
    let server = Server::start(&repo);
    let id = repo.create("Shared", "");
    let out = repo
        .yoi(&[
            "--local",
            "ticket",
            "comment",
            &id,
            "-m",
            "written on the files",
        ])
        .ok();
    assert_eq!(out.stdout, format!("{id}: comment\n"));
    repo.yoi(&[
        "--local",
        "ticket",
        "edit",
        &id,
        "--title",
        "Shared, edited locally",
    ])
    .ok();

    // The server answers with what the local commands wrote: the ticket from its files and the
    // listing from the database they share.
    let token = std::fs::read_to_string(repo.path().join(".yoi/local/admin.token")).unwrap();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let get = |path: &str| -> serde_json::Value {
        let mut resp = agent
            .get(&format!("http://{}/api/v1{path}", server.addr))
            .header("Authorization", &format!("Bearer {}", token.trim()))
            .call()
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        resp.body_mut().read_json().unwrap()
    };
    let ticket = get(&format!("/tickets/{id}"));
    assert_eq!(ticket["title"], "Shared, edited locally");
    assert_eq!(ticket["events"][1]["body"], "written on the files");
    let listed = get("/tickets?search=edited");
    assert_eq!(listed["tickets"][0]["id"], id.as_str());

    // And mutations through the server carry on after the local ones.
    let out = repo
        .yoi(&["ticket", "comment", &id, "-m", "through the API"])
        .ok();
    assert_eq!(out.stdout, format!("{id}: comment\n"));
    assert_eq!(show_json(&repo, &id)["events"].as_array().unwrap().len(), 4);
}

#[test]
fn sigterm_stops_the_server_with_exit_0_and_removes_server_json() {
    let repo = Repo::init();
    let mut server = Server::start(&repo);
    let server_json = repo.path().join(".yoi/local/server.json");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&server_json).unwrap()).unwrap();
    assert_eq!(info["pid"], server.pid());
    assert_eq!(info["address"], server.addr.as_str());

    server.terminate();
    let status = server.wait();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!server_json.exists());
    // With the server gone the CLI works on the files again (and records the local user).
    let id = run_yoi_full(
        repo.path(),
        &["ticket", "create", "--title", "After"],
        None,
        &[("USER", "mallory")],
    )
    .ok()
    .stdout
    .trim()
    .to_string();
    assert_eq!(
        authors(&repo, &id),
        vec![("create".into(), "mallory".into())]
    );
}

#[test]
fn a_second_server_for_the_same_workspace_is_refused_naming_the_pid() {
    let repo = Repo::init();
    let server = Server::start(&repo);
    let out = repo.yoi(&["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        format!(
            "error: another yoi server (pid {}) is already serving this workspace at {}\n",
            server.pid(),
            server.addr
        )
    );
    assert_eq!(out.stdout, "");
    // The first server is untouched and still serves.
    let id = repo.create("Still served", "");
    let info = std::fs::read_to_string(repo.path().join(".yoi/local/server.json")).unwrap();
    assert!(info.contains(&format!("\"pid\": {}", server.pid())));
    assert_eq!(
        authors(&repo, &id),
        vec![("create".into(), "tester".into())]
    );
}

#[test]
fn a_server_beyond_loopback_needs_plain_http_said_and_then_warns_with_a_reachable_link() {
    let repo = Repo::init();
    let out = repo.yoi(&["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("error: refusing to listen on 0.0.0.0:0: it is not loopback")
            && out.stderr.contains("`[server] plain_http = true`"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "");
    assert!(!repo.path().join(".yoi/local/server.json").exists());

    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("[server]\n"), "{text}");
    std::fs::write(
        &config,
        text.replacen("[server]\n", "[server]\nplain_http = true\n", 1),
    )
    .unwrap();
    let mut server = Server::spawn_at(&repo, "0.0.0.0:0");
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    let dashboard = server.stdout_line();
    assert!(
        dashboard.starts_with("dashboard: http://") && !dashboard.contains("0.0.0.0"),
        "the link names an address a browser can open: {dashboard}"
    );
    assert!(
        dashboard.contains(&format!(":{port}/login?code=")),
        "{dashboard}"
    );
    let warning = server.stdout_line();
    assert!(
        warning.starts_with("warning: serving plain HTTP beyond this machine"),
        "{warning}"
    );
    let link = repo.yoi(&["dashboard", "--no-open"]).ok().stdout;
    assert!(
        !link.contains("0.0.0.0") && link.contains(&format!(":{port}/login?code=")),
        "{link}"
    );
    // The login page says it too.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let page = agent
        .get(&format!("http://127.0.0.1:{port}/login"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert!(page.contains("This server accepts plain HTTP"), "{page}");
}

/// Read one HTTP/1.1 response head (status line and headers) from a raw connection.
fn read_head(conn: &mut BufReader<TcpStream>) -> (u16, Vec<String>) {
    let mut status = String::new();
    conn.read_line(&mut status).unwrap();
    let code = status
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {status:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        conn.read_line(&mut line).unwrap();
        let line = line.trim_end().to_string();
        if line.is_empty() {
            return (code, headers);
        }
        headers.push(line.to_ascii_lowercase());
    }
}

#[test]
fn shutdown_lets_the_request_in_flight_finish() {
    let repo = Repo::init();
    let mut server = Server::start(&repo);
    let id = repo.create("In flight", "");
    let token = std::fs::read_to_string(repo.path().join(".yoi/local/admin.token")).unwrap();
    let body = r#"{"body": "sent across a shutdown"}"#;

    // The request's head goes first with `Expect: 100-continue`; the server answers
    // `100 Continue` only once the handler is reading the body, so the request is in flight.
    let stream = TcpStream::connect(&server.addr).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut conn = BufReader::new(stream);
    write!(
        writer,
        "POST /api/v1/tickets/{id}/comments HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        server.addr,
        token.trim(),
        body.len()
    )
    .unwrap();
    assert_eq!(read_head(&mut conn).0, 100);

    server.terminate();
    server.wait_for_log("shutting down");
    // The server is waiting for this request, not gone.
    assert!(server.child.try_wait().unwrap().is_none());

    writer.write_all(body.as_bytes()).unwrap();
    let (code, headers) = read_head(&mut conn);
    assert_eq!(code, 200);
    let length: usize = headers
        .iter()
        .find_map(|h| h.strip_prefix("content-length:"))
        .expect("a content-length")
        .trim()
        .parse()
        .unwrap();
    let mut answer = vec![0; length];
    conn.read_exact(&mut answer).unwrap();
    let outcome: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(outcome["ticket"], id.as_str());
    assert_eq!(outcome["operation"], "comment");

    let status = server.wait();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!repo.path().join(".yoi/local/server.json").exists());
    let events = show_json(&repo, &id)["events"].clone();
    assert_eq!(events[1]["body"], "sent across a shutdown");
}

#[test]
fn a_stale_admin_token_is_refused_naming_the_file_not_bypassed() {
    let repo = Repo::init();
    let server = Server::start(&repo);
    let token_file = repo.path().join(".yoi/local/admin.token");
    std::fs::write(&token_file, "yoi_not_the_admin_token\n").unwrap();
    let out = repo.yoi(&["ticket", "create", "--title", "Refused"]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "error: the server refused .yoi/local/admin.token (unknown or revoked token); run `yoi init` to renew it, or pass --local\n"
    );
    // A read is refused the same way, not answered from the files behind the server's back.
    let read = repo.yoi(&["ticket", "list"]);
    assert_eq!((read.code, read.stderr.as_str()), (1, out.stderr.as_str()));
    // Nothing was written on the side.
    let listed = repo
        .yoi(&["--local", "ticket", "list", "--state", "all", "--json"])
        .ok();
    assert!(listed.stdout.contains("\"count\": 0"), "{}", listed.stdout);
    drop(server);
}

/// `GET /api/v1/router` with the admin token until it reports a fixed point.
fn settle(repo: &Repo, server: &Server) {
    let token = std::fs::read_to_string(repo.path().join(".yoi/local/admin.token")).unwrap();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let start = std::time::Instant::now();
    loop {
        let mut resp = agent
            .get(format!("http://{}/api/v1/router", server.addr))
            .header("Authorization", format!("Bearer {}", token.trim()))
            .call()
            .unwrap();
        let status: serde_json::Value =
            serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        if status["settled"] == true {
            return;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "routing did not settle: {status}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The orchestrator's decision kinds and bodies of a ticket.
fn routing_decisions(repo: &Repo, id: &str) -> Vec<(String, String)> {
    show_json(repo, id)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "decision" && e["author"] == "yoi-orchestrator")
        .map(|e| {
            let body = e["body"].as_str().unwrap().to_string();
            let kind = body
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("Routing decision: "))
                .unwrap_or("")
                .to_string();
            (kind, body)
        })
        .collect()
}

#[test]
fn a_killed_server_resumes_routing_from_the_outbox_without_duplicates() {
    let repo = Repo::init();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("max_inprogress = 4", "max_inprogress = 3")
        .replace("retry_backoff_ms = 2000", "retry_backoff_ms = 20");
    std::fs::write(&config, text).unwrap();
    std::fs::write(repo.path().join("README.md"), "hello\n").unwrap();
    yoi_testkit::commit_all(repo.path(), "base");

    // Every fourth ticket depends on the one before it.
    let mut ids: Vec<String> = Vec::new();
    for i in 0..16 {
        let id = repo.create(&format!("Task {i}"), COMPLETE_BRIEF);
        if i % 4 == 3 {
            repo.yoi(&["ticket", "relation", "add", &id, "depends_on", &ids[i - 1]])
                .ok();
        }
        repo.yoi(&["ticket", "mark-ready", &id]).ok();
        ids.push(id);
    }
    let mut server = Server::spawn(&repo);
    for id in &ids {
        repo.yoi(&["ticket", "queue", id]).ok();
    }
    // Kill it the moment it has accepted something: mid-routing, events unacknowledged.
    server.wait_for_log("accepted");
    server.kill();
    assert!(repo.path().join(".yoi/local/server.json").exists());

    let server = Server::spawn(&repo);
    settle(&repo, &server);

    let states: Vec<String> = ids
        .iter()
        .map(|id| show_json(&repo, id)["state"].as_str().unwrap().to_string())
        .collect();
    let inprogress: Vec<&String> = ids
        .iter()
        .zip(&states)
        .filter(|(_, s)| *s == "inprogress")
        .map(|(id, _)| id)
        .collect();
    assert_eq!(inprogress.len(), 3, "{states:?}");
    let listed = yoi_testkit::git(repo.path(), &["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("worktree ").count(), 1 + 3, "{listed}");
    for id in &ids {
        let d = routing_decisions(&repo, id);
        assert!(!d.is_empty(), "{id} was never routed");
        for pair in d.windows(2) {
            assert_ne!(pair[0].1, pair[1].1, "{id}: a decision was written twice");
        }
        let ready = d
            .iter()
            .filter(|(k, _)| k == "implementation_ready")
            .count();
        let expected = usize::from(inprogress.contains(&id));
        assert_eq!(ready, expected, "{id}: {d:?}");
    }
    for id in &inprogress {
        let wt = listed
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .find(|p| p.contains(id.as_str()))
            .unwrap_or_else(|| panic!("no worktree for {id}: {listed}"));
        assert_eq!(
            yoi_testkit::git(std::path::Path::new(wt), &["status", "--porcelain"]),
            ""
        );
    }
    let doctor = repo.yoi(&["ticket", "doctor", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
    let errors: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn a_token_created_to_expire_is_refused_after_its_time_and_says_so() {
    let repo = Repo::init();
    let bad = repo.yoi(&[
        "token",
        "create",
        "--name",
        "pod-1",
        "--scope",
        "pod:coder",
        "--expires",
        "3w",
    ]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("such as 30d, 12h or 90m"),
        "{}",
        bad.stderr
    );
    let out = repo
        .yoi(&[
            "token",
            "create",
            "--name",
            "reader",
            "--scope",
            "read",
            "--expires",
            "2s",
        ])
        .ok();
    let secret = out.stdout.trim().to_string();
    assert!(out.stderr.contains(", expires "), "{}", out.stderr);
    let listed = repo.yoi(&["token", "list"]).ok().stdout;
    assert!(listed.contains("live until"), "{listed}");
    let server = Server::start(&repo);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let get = || {
        let mut res = agent
            .get(&format!("http://{}/api/v1/tickets", server.addr))
            .header("Authorization", &format!("Bearer {secret}"))
            .call()
            .unwrap();
        (
            res.status().as_u16(),
            res.body_mut().read_to_string().unwrap(),
        )
    };
    assert_eq!(get().0, 200, "live before its time");
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let (status, body) = get();
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("token `reader` expired at"), "{body}");
    let listed = repo.yoi(&["token", "list"]).ok().stdout;
    assert!(listed.contains("expired"), "{listed}");
}
