//! A team's one PostgreSQL database (issue 44): workspaces served side by side without
//! fighting, one server per workspace across clones, and a workspace moved off SQLite with
//! every token and record — through the real `yoi` binary and real `yoi serve` processes.

mod common;

use common::pods::{git, queued_ticket, state_of, until, workspace_with_reviewer};
use common::server::Server;
use common::{run_yoi_env, Repo};
use yoi_testkit::pg;

/// A repository whose workspace lives in the PostgreSQL database at `url` from its first
/// command (`yoi init`), and uses it from then on through `.yoi/local/database.url`.
fn on_postgres(url: &str) -> Repo {
    let repo = Repo::bare();
    run_yoi_env(repo.path(), &["init"], &[("YOI_DATABASE_URL", url)]).ok();
    std::fs::write(repo.path().join(".yoi/local/database.url"), url).unwrap();
    assert!(!repo.path().join(".yoi/local/yoi.db").exists());
    repo
}

fn json(out: &common::Output) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// GET `/api/v1{path}` on `server` with `token`: the status.
fn status_with(server: &Server, token: &str, path: &str) -> u16 {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    agent
        .get(&format!("http://{}/api/v1{path}", server.addr))
        .header("Authorization", &format!("Bearer {}", token.trim()))
        .call()
        .unwrap()
        .status()
        .as_u16()
}

fn admin_token(repo: &Repo) -> String {
    std::fs::read_to_string(repo.path().join(".yoi/local/admin.token")).unwrap()
}

const NOTE_CODER: &str = "write notes/$YOI_TICKET.md for $YOI_TICKET\\n\ndone wrote the note\n";
const APPROVE: &str = "say YOI-VERDICT: approve\ndone reviewed\n";
const NOTE_BRIEF: &str =
    "## Intent\nLeave a note.\n\n## Acceptance criteria\n- the note exists\n\n## Validation\n`ls notes`\n";

#[test]
fn two_workspaces_serve_side_by_side_on_one_database_under_load_without_churn() {
    let url = pg::database();
    // Two teams' repositories with pods, moved into one database (the second move lands next
    // to the first workspace's rows).
    let (a, b) = (
        workspace_with_reviewer(NOTE_CODER, APPROVE),
        workspace_with_reviewer(NOTE_CODER, APPROVE),
    );
    for repo in [&a, &b] {
        repo.yoi(&["db", "copy", "--to", &url]).ok();
    }
    let (server_a, server_b) = (Server::spawn(&a), Server::spawn(&b));
    // Both teams work at once: creating and queueing through their servers (which route the
    // tickets and hand them to their pods, which claim them), and with local commands that
    // catch their index up with their own files.
    let ids: Vec<Vec<String>> = std::thread::scope(|s| {
        let teams: Vec<_> = [(&a, "A"), (&b, "B")]
            .into_iter()
            .map(|(repo, name)| {
                s.spawn(move || {
                    (0..4)
                        .map(|i| {
                            let id = repo.create(&format!("{name}{i}"), NOTE_BRIEF);
                            repo.yoi(&["ticket", "mark-ready", &id]).ok();
                            repo.yoi(&["ticket", "queue", &id]).ok();
                            repo.yoi(&["--local", "ticket", "list", "--json"]).ok();
                            id
                        })
                        .collect()
                })
            })
            .collect();
        teams.into_iter().map(|t| t.join().unwrap()).collect()
    });
    for (repo, ids) in [(&a, &ids[0]), (&b, &ids[1])] {
        until("every ticket of both workspaces to be merged", || {
            ids.iter().all(|id| state_of(repo, id) == "done")
        });
    }
    for (repo, server, name) in [(&a, &server_a, "A"), (&b, &server_b, "B")] {
        let (status, body) = server.get(repo, "/tickets?state=all&limit=100");
        assert_eq!(status, 200, "{body}");
        let titles: Vec<&str> = body["tickets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["title"].as_str().unwrap())
            .collect();
        assert_eq!(titles.len(), 4, "{titles:?}");
        assert!(titles.iter().all(|t| t.starts_with(name)), "{titles:?}");
        // Every step of every ticket was claimed by this workspace's own pods.
        let assignments = json(&repo.yoi(&["assignment", "list", "--json"]).ok());
        let rows = assignments["assignments"].as_array().unwrap();
        assert!(rows.len() >= 12, "{assignments}");
        let own: Vec<&str> = ids[usize::from(name == "B")]
            .iter()
            .map(|s| s.as_str())
            .collect();
        assert!(
            rows.iter()
                .all(|r| own.contains(&r["ticket"].as_str().unwrap())),
            "{assignments}"
        );
    }
    // Each admin token works on its own server only.
    assert_eq!(status_with(&server_a, &admin_token(&a), "/tickets"), 200);
    assert_eq!(status_with(&server_b, &admin_token(&b), "/tickets"), 200);
    assert_eq!(status_with(&server_a, &admin_token(&b), "/tickets"), 401);
    assert_eq!(status_with(&server_b, &admin_token(&a), "/tickets"), 401);
    // A hundred more commands, the two workspaces taking turns, each catching its index up
    // with its own files: neither ever sees the other's tickets …
    for i in 0..100 {
        let (repo, name) = if i % 2 == 0 { (&a, "A") } else { (&b, "B") };
        let list = json(
            &repo
                .yoi(&["--local", "ticket", "list", "--state", "all", "--json"])
                .ok(),
        );
        let titles = list["tickets"].as_array().unwrap();
        assert_eq!(titles.len(), 4, "{list}");
        assert!(titles
            .iter()
            .all(|t| t["title"].as_str().unwrap().starts_with(name)));
    }
    // … and nothing was ever re-read, removed or announced twice: a catch-up finds each index
    // in line with its files.
    for repo in [&a, &b] {
        let stats = json(&repo.yoi(&["--local", "reindex", "--json"]).ok());
        assert_eq!(
            (
                &stats["reindexed"],
                &stats["removed"],
                &stats["outbox_added"]
            ),
            (&0.into(), &0.into(), &0.into()),
            "{stats}"
        );
    }
}

#[test]
fn a_second_clone_s_server_is_refused_while_the_first_serves_and_starts_once_it_stopped() {
    let url = pg::database();
    let first = on_postgres(&url);
    std::fs::write(first.path().join("README.md"), "base\n").unwrap();
    yoi_testkit::commit_all(first.path(), "base");
    // A second clone of the repository (its committed workspace.toml carries the same id).
    let second = Repo::bare();
    git(
        second.path(),
        &["pull", "-q", first.path().to_str().unwrap(), "main"],
    );
    let clone = second.path().to_path_buf();
    run_yoi_env(&clone, &["init"], &[("YOI_DATABASE_URL", &url)]).ok();
    std::fs::write(clone.join(".yoi/local/database.url"), &url).unwrap();
    let mut serving = Server::start(&first);
    // The clone's server says who serves the workspace, and starts nothing.
    let out = common::run_yoi(&clone, &["serve", "--listen", "127.0.0.1:0"], None);
    assert_ne!(out.code, 0, "{}", out.stdout);
    let root = std::fs::canonicalize(first.path()).unwrap();
    assert!(
        out.stderr.contains(&format!("pid {}", serving.pid()))
            && out.stderr.contains(&root.display().to_string())
            && out.stderr.contains(&format!("at http://{}", serving.addr))
            && out.stderr.contains("use the API there"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("listening"), "{}", out.stdout);
    // So does a command there that would rewrite the index with its own files.
    let out = common::run_yoi(&clone, &["ticket", "list"], None);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("use the API there"), "{}", out.stderr);
    // The first clone's own admin token still works: the clone's `yoi init` made its own.
    assert_eq!(status_with(&serving, &admin_token(&first), "/tickets"), 200);
    // Once the first server stopped (its lease given back), the clone's starts.
    serving.terminate();
    assert!(serving.wait().success());
    let other = Server::spawn(&second);
    let (status, _) = other.get(&second, "/tickets");
    assert_eq!(status, 200);
}

#[test]
fn a_sqlite_workspace_moves_to_postgres_with_every_token_and_record() {
    let repo = workspace_with_reviewer(
        "write hello.txt hello\\n\nsay Tokens: 1.2k sent, 345 received. Cost: $0.01 message, $0.02 session.\ndone added hello.txt\n",
        "say Looks right.\ndone read the change\nsay YOI-VERDICT: approve\n",
    );
    let id = queued_ticket(&repo);
    {
        let _server = Server::spawn(&repo);
        until("the ticket to be merged", || state_of(&repo, &id) == "done");
    }
    repo.yoi(&["token", "create", "--name", "ci-reader", "--scope", "read"])
        .ok();
    let before = |what: &[&str]| json(&repo.yoi(what).ok());
    let tokens = before(&["token", "list", "--json"]);
    let pods = before(&["pod", "list", "--json"]);
    let assignments = before(&["assignment", "list", "--json"]);
    let cost = before(&["ticket", "cost", &id, "--json"]);
    let n = |v: &serde_json::Value, key: &str| v[key].as_array().map_or(0, |a| a.len());
    assert!(n(&assignments, "assignments") >= 3, "{assignments}");
    assert!(n(&pods, "pods") >= 2, "{pods}");
    assert!(n(&tokens, "tokens") >= 2, "{tokens}");
    let url = pg::database();
    // Pointed at the new database without the move, yoi says what would be lost and how to
    // keep it, instead of answering the admin token with 401.
    let out = run_yoi_env(
        repo.path(),
        &["ticket", "list"],
        &[("YOI_DATABASE_URL", &url)],
    );
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("yoi db copy --to") && out.stderr.contains(".yoi/local/yoi.db"),
        "{}",
        out.stderr
    );
    let moved = json(&repo.yoi(&["db", "copy", "--to", &url, "--json"]).ok());
    assert!(moved["rows"].as_u64().unwrap() > 0, "{moved}");
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".yoi/local/database.url"))
            .unwrap()
            .trim(),
        url
    );
    // Everything is there, read from PostgreSQL now.
    let after = |what: &[&str]| json(&repo.yoi(what).ok());
    assert_eq!(after(&["token", "list", "--json"]), tokens);
    assert_eq!(after(&["pod", "list", "--json"]), pods);
    assert_eq!(after(&["assignment", "list", "--json"]), assignments);
    assert_eq!(after(&["ticket", "cost", &id, "--json"]), cost);
    let doctor = repo.yoi(&["doctor", "--json"]);
    assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);
    let server = Server::spawn(&repo);
    assert_eq!(status_with(&server, &admin_token(&repo), "/tickets"), 200);
    assert_eq!(state_of(&repo, &id), "done");
}
