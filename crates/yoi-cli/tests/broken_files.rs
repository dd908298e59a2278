//! Issue 38, items 7 and 8, with the real `yoi` binary and a real `yoi serve` on loopback: a
//! ticket whose files are damaged (item.md bad YAML, not UTF-8 or missing; thread.md not UTF-8;
//! relations.json or orchestration-plan.jsonl not JSON, not UTF-8 or torn) stays listed by the
//! CLI and the API, shows as a broken card on the board and the queue, a broken row in the
//! tickets table and a page of its own, is named by doctor and answered `corrupt_file` with its
//! path, while every page keeps serving and routing goes on for the others (a broken blocker
//! still blocks); a symbolic link for a ticket folder, item.md or thread.md is neither read nor
//! written through, is listed as a broken ticket and is doctor's `layout.symlink`, which never
//! shows what the link leads to.

mod common;

use std::path::Path;

use common::server::Server;
use common::Repo;
use serde_json::Value;

/// The damage each broken ticket carries: (name, file, line of the damage, doctor check).
const DAMAGE: [(&str, &str, Option<u64>, &str); 8] = [
    ("yaml", "item.md", Some(4), "item.parse"),
    ("utf8", "item.md", Some(10), "file.unreadable"),
    ("missing", "item.md", None, "ticket.missing_item"),
    ("thread", "thread.md", Some(8), "file.unreadable"),
    ("relations", RELATIONS, Some(3), "relations.parse"),
    ("relations-utf8", RELATIONS, Some(2), "file.unreadable"),
    ("plan-torn", PLAN, Some(2), "plan.parse"),
    ("plan-utf8", PLAN, Some(1), "file.unreadable"),
];

const RELATIONS: &str = "artifacts/relations.json";
const PLAN: &str = "artifacts/orchestration-plan.jsonl";

/// One plan record of ticket `id`, as yoi writes it (a line of its own).
fn plan_line(id: &str) -> String {
    format!(
        "{{\"id\":\"01JDX3V8Q4R5S6T7V8W9XAYBZC\",\"ticket_id\":\"{id}\",\"kind\":\"waiting_capacity\",\"note\":\"no free slot\",\"at\":\"2026-12-01T10:00:00Z\",\"author\":\"orchestrator\"}}\n"
    )
}

/// Damage `file` of ticket `id` as `kind` says.
fn damage(repo: &Repo, id: &str, kind: &str) {
    let dir = repo.ticket_dir(id);
    let item = dir.join("item.md");
    match kind {
        "yaml" => {
            let text = std::fs::read_to_string(&item).unwrap();
            let broken = text.replace("state: planning", "state: [planning");
            assert_ne!(text, broken);
            std::fs::write(&item, broken).unwrap();
        }
        "utf8" => append(&item, b"Body \xff\xfe broken\n"),
        "missing" => std::fs::remove_file(&item).unwrap(),
        "thread" => append(&dir.join("thread.md"), b"bad \xff bytes\n"),
        // Not JSON: a hand edit that left a bare word on line 3.
        "relations" => std::fs::write(
            dir.join(RELATIONS),
            "{\n  \"version\": 1,\n  oops\n  \"relations\": []\n}\n",
        )
        .unwrap(),
        "relations-utf8" => std::fs::write(
            dir.join(RELATIONS),
            b"{\n  \"version\": 1, \"relations\": [] \xff\n}\n",
        )
        .unwrap(),
        // A record, then an append torn before its newline.
        "plan-torn" => std::fs::write(
            dir.join(PLAN),
            format!("{}{{\"id\":\"01JDX3V8Q4R5S6T7V8W9XAYB", plan_line(id)),
        )
        .unwrap(),
        "plan-utf8" => std::fs::write(dir.join(PLAN), b"{\"id\": \"\xff\"}\n").unwrap(),
        _ => unreachable!(),
    }
}

fn append(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

/// A workspace with one healthy ticket and one ticket per kind of damage: (healthy, broken by
/// kind). The healthy one depends on each broken one.
fn damaged_workspace() -> (Repo, String, Vec<(&'static str, String)>) {
    let repo = Repo::init();
    let ok = repo.create("Healthy", "## Intent\nx\n");
    let mut broken = Vec::new();
    for (kind, ..) in DAMAGE {
        let id = repo.create(&format!("Broken {kind}"), "## Intent\nx\n");
        repo.yoi(&["ticket", "relation", "add", &ok, "depends_on", &id])
            .ok();
        broken.push((kind, id));
    }
    for (kind, id) in &broken {
        damage(&repo, id, kind);
    }
    (repo, ok, broken)
}

fn line_of(kind: &str) -> Option<u64> {
    DAMAGE.iter().find(|d| d.0 == kind).unwrap().2
}

fn file_of(kind: &str) -> &'static str {
    DAMAGE.iter().find(|d| d.0 == kind).unwrap().1
}

fn check_of(kind: &str) -> &'static str {
    DAMAGE.iter().find(|d| d.0 == kind).unwrap().3
}

/// `yoi ticket list` (and `--json`) names every broken ticket: a stderr line with file and
/// line, a `broken` entry with the doctor check; the healthy ticket is listed as before.
fn assert_list_names_the_broken(repo: &Repo, ok: &str, broken: &[(&str, String)]) {
    let out = repo.yoi(&["ticket", "list"]).ok();
    assert!(out.stdout.contains(ok), "{}", out.stdout);
    for (kind, id) in broken {
        let line = out
            .stderr
            .lines()
            .find(|l| l.contains(id.as_str()))
            .unwrap_or_else(|| panic!("no stderr line for {kind}: {}", out.stderr));
        let at = match line_of(kind) {
            Some(n) => format!(".yoi/tickets/{id}/{}:{n})", file_of(kind)),
            None => format!(".yoi/tickets/{id}/{})", file_of(kind)),
        };
        assert!(line.starts_with("broken: "), "{line}");
        assert!(line.contains(&at), "{kind}: {line} lacks {at}");
        assert!(line.contains(check_of(kind)), "{line}");
    }
    let out = repo.yoi(&["ticket", "list", "--json"]).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["count"], 1, "{v}");
    let listed = v["broken"].as_array().expect("a broken array");
    assert_eq!(listed.len(), broken.len(), "{v}");
    for (kind, id) in broken {
        let b = listed.iter().find(|b| b["id"] == id.as_str()).unwrap();
        assert_eq!(
            b["path"],
            format!(".yoi/tickets/{id}/{}", file_of(kind)).as_str()
        );
        assert_eq!(b["line"].as_u64(), line_of(kind), "{kind}: {b}");
        assert_eq!(b["check"], check_of(kind), "{kind}: {b}");
    }
}

/// Doctor names each damage with the check and the file the list gives, and agrees with the
/// index about which tickets it holds (no `index.*` finding).
fn assert_doctor_names_the_damage(repo: &Repo, broken: &[(&str, String)]) {
    let out = repo.yoi(&["ticket", "doctor", "--json"]);
    assert_eq!(out.code, 1, "damage is an error: {}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    for (kind, id) in broken {
        // A missing item.md is reported at its folder.
        let path = match kind {
            &"missing" => format!(".yoi/tickets/{id}"),
            _ => format!(".yoi/tickets/{id}/{}", file_of(kind)),
        };
        assert!(
            findings.iter().any(|f| f["check"] == check_of(kind)
                && f["path"] == path.as_str()
                && f["severity"] == "error"),
            "{kind}: no {} error at {path}: {report}",
            check_of(kind)
        );
    }
    let index: Vec<&Value> = findings
        .iter()
        .filter(|f| f["check"].as_str().unwrap().starts_with("index."))
        .collect();
    assert!(index.is_empty(), "doctor and the index disagree: {index:?}");
}

#[test]
fn every_kind_of_broken_file_stays_listed_by_the_cli() {
    let (repo, ok, broken) = damaged_workspace();
    assert_list_names_the_broken(&repo, &ok, &broken);
    assert_doctor_names_the_damage(&repo, &broken);
    // Every relation of the workspace is still listed, a damaged relations.json named apart.
    let out = repo.yoi(&["ticket", "relation", "list", "--json"]).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["count"], broken.len(), "the healthy one's: {v}");
    for (kind, id) in broken.iter().filter(|(_, id)| {
        std::fs::read(repo.ticket_dir(id).join(RELATIONS)).is_ok_and(|b| !b.is_empty())
    }) {
        let at = format!(".yoi/tickets/{id}/{RELATIONS}:{}", line_of(kind).unwrap());
        assert!(
            out.stderr
                .lines()
                .any(|l| l.starts_with("broken: ") && l.contains(&at)),
            "{kind}: {}",
            out.stderr
        );
    }
    // Showing one, by its id or a suffix of it, names the file: a corrupt-file error (exit 1),
    // never "no such ticket".
    for (kind, id) in &broken {
        let out = repo.yoi(&["ticket", "show", &id[id.len() - 8..]]);
        assert_eq!(out.code, 1, "{kind}: {}", out.stderr);
        assert!(out.stderr.contains(id.as_str()), "{kind}: {}", out.stderr);
        let out = repo.yoi(&["ticket", "show", id]);
        assert_eq!(out.code, 1, "{kind}: {}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!(".yoi/tickets/{id}/{}", file_of(kind))),
            "{kind}: {}",
            out.stderr
        );
    }
}

/// A one-time login link from `yoi dashboard`, visited: the session cookie's `name=value`.
fn log_in(repo: &Repo) -> String {
    let out = repo.yoi(&["dashboard", "--no-open"]).ok();
    let link = out.stdout.lines().last().unwrap().trim().to_string();
    let res = browser().get(&link).call().unwrap();
    assert_eq!(res.status(), 303, "the login link starts a session");
    let set = res.headers().get("set-cookie").unwrap().to_str().unwrap();
    set.split(';').next().unwrap().to_string()
}

fn browser() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into()
}

fn page(server: &Server, cookie: &str, path: &str) -> (u16, String) {
    let mut res = browser()
        .get(&format!("http://{}{path}", server.addr))
        .header("Cookie", cookie)
        .call()
        .unwrap();
    let status = res.status().as_u16();
    (status, res.body_mut().read_to_string().unwrap())
}

#[test]
fn every_kind_of_broken_file_stays_on_the_api_the_board_the_queue_and_its_page() {
    let (repo, ok, broken) = damaged_workspace();
    let server = Server::start(&repo);
    // Through the server, the CLI lists the same.
    assert_list_names_the_broken(&repo, &ok, &broken);

    let (status, list) = server.get(&repo, "/tickets?state=all");
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["count"], 1, "{list}");
    assert_eq!(list["broken"].as_array().unwrap().len(), broken.len());
    for (kind, id) in &broken {
        let (status, body) = server.get(&repo, &format!("/tickets/{id}"));
        assert_eq!(body["error"]["code"], "corrupt_file", "{kind}: {body}");
        assert_ne!(status, 404, "{kind}");
        let path = body["error"]["details"]["path"].as_str().unwrap();
        assert!(
            path.ends_with(&format!(".yoi/tickets/{id}/{}", file_of(kind))),
            "{kind}: {path}"
        );
        assert_eq!(body["error"]["details"]["line"].as_u64(), line_of(kind));
    }

    let cookie = log_in(&repo);
    for path in ["/", "/queue", "/doctor", "/tickets", "/pods", "/skills"] {
        let (status, _) = page(&server, &cookie, path);
        assert_eq!(status, 200, "{path} keeps serving");
    }
    let (_, board) = page(&server, &cookie, "/");
    let (_, queue) = page(&server, &cookie, "/queue");
    let (_, doctor) = page(&server, &cookie, "/doctor");
    let (_, table) = page(&server, &cookie, "/tickets?state=ready");
    for (kind, id) in &broken {
        let anchor = format!("f-{id}-{}", check_of(kind));
        // The tickets table shows them as broken rows, whatever its filter.
        for (name, html) in [("board", &board), ("queue", &queue), ("tickets", &table)] {
            assert!(
                html.contains(&format!("id=\"broken-{id}\"")),
                "{name} lacks the broken card of {kind}"
            );
            assert!(
                html.contains(&format!("href=\"/doctor#{anchor}\"")),
                "{name}'s card of {kind} links to its finding"
            );
        }
        assert!(doctor.contains(&format!("id=\"{anchor}\"")), "{anchor}");
        let (status, html) = page(&server, &cookie, &format!("/tickets/{id}"));
        assert_eq!(status, 200, "{kind}: {html}");
        assert!(html.contains("yoi cannot read this ticket"), "{html}");
        assert!(
            html.contains(&format!(".yoi/tickets/{id}/{}", file_of(kind))),
            "{kind}: the page names the file"
        );
        assert!(
            html.contains(&format!("<code>{}</code>", check_of(kind))),
            "{kind}: the page shows doctor's finding"
        );
    }
    // The healthy ticket's page is the usual one, though it depends on every broken one.
    let (status, html) = page(&server, &cookie, &format!("/tickets/{ok}"));
    assert_eq!(status, 200);
    assert!(!html.contains("yoi cannot read this ticket"));
    for (_, id) in &broken {
        assert!(
            html.contains(id.as_str()),
            "its page names the blocker {id}"
        );
    }
    for what in ["relations", "blockers"] {
        let (status, view) = server.get(&repo, &format!("/tickets/{ok}/{what}"));
        assert_eq!(status, 200, "{what}: {view}");
        assert_eq!(
            view["blockers"].as_array().unwrap().len(),
            broken.len(),
            "{what}: every broken one blocks: {view}"
        );
    }
}

/// Outside the repository: what links in the tickets folder point at.
fn outside_secret(dir: &Path) -> std::path::PathBuf {
    let outside = dir.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("item.md"), "SECRET-ITEM\n").unwrap();
    std::fs::write(outside.join("thread.md"), "SECRET-THREAD\n").unwrap();
    std::fs::write(outside.join("notes.txt"), "SECRET-NOTES\n").unwrap();
    outside
}

#[test]
fn links_in_the_tickets_folder_are_never_followed_and_doctor_names_them() {
    let repo = Repo::init();
    let outside = outside_secret(repo.side.path());
    let before = common_tree(&outside);
    let item_link = repo.create("Item is a link", "## Intent\nx\n");
    let thread_link = repo.create("Thread is a link", "## Intent\nx\n");
    let folder_link = repo.create("Folder is a link", "## Intent\nx\n");
    let artifacts_link = repo.create("Artifacts is a link", "## Intent\nx\n");
    let dir = |id: &str| repo.ticket_dir(id);
    std::fs::remove_file(dir(&item_link).join("item.md")).unwrap();
    std::os::unix::fs::symlink(outside.join("item.md"), dir(&item_link).join("item.md")).unwrap();
    std::fs::remove_file(dir(&thread_link).join("thread.md")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("thread.md"),
        dir(&thread_link).join("thread.md"),
    )
    .unwrap();
    std::fs::remove_dir_all(dir(&folder_link)).unwrap();
    std::os::unix::fs::symlink(&outside, dir(&folder_link)).unwrap();
    std::fs::remove_dir_all(dir(&artifacts_link).join("artifacts")).unwrap();
    std::os::unix::fs::symlink(&outside, dir(&artifacts_link).join("artifacts")).unwrap();

    for id in [&item_link, &thread_link, &folder_link] {
        // Reads are refused with an error naming the link.
        let out = repo.yoi(&["ticket", "show", id]);
        assert_eq!(out.code, 1, "{id}: {}", out.stdout);
        assert!(out.stderr.contains("symbolic link"), "{}", out.stderr);
        assert!(!out.stdout.contains("SECRET"), "{}", out.stdout);
        // Writes are refused and nothing outside changes.
        for args in [
            vec!["ticket", "comment", id.as_str(), "-m", "through the link"],
            vec!["ticket", "edit", id.as_str(), "--title", "Renamed"],
            vec!["ticket", "mark-ready", id.as_str()],
        ] {
            let out = repo.yoi(&args);
            assert_ne!(out.code, 0, "{args:?} was refused: {}", out.stdout);
            assert_eq!(common_tree(&outside), before, "{args:?} wrote through");
        }
    }
    assert_eq!(
        std::fs::read_link(dir(&item_link).join("item.md")).unwrap(),
        outside.join("item.md"),
        "the link itself is left as it was"
    );

    // The broken ones stay listed, as links: the linked folder too, named by its own path.
    let out = repo.yoi(&["ticket", "list", "--json"]).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    for (id, path) in [
        (&item_link, format!(".yoi/tickets/{item_link}/item.md")),
        (
            &thread_link,
            format!(".yoi/tickets/{thread_link}/thread.md"),
        ),
        (&folder_link, format!(".yoi/tickets/{folder_link}")),
        (
            &artifacts_link,
            format!(".yoi/tickets/{artifacts_link}/artifacts/relations.json"),
        ),
    ] {
        let b = v["broken"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == id.as_str())
            .unwrap_or_else(|| panic!("{id} is listed as broken: {v}"));
        assert_eq!(b["check"], "layout.symlink", "{b}");
        assert_eq!(b["path"], path.as_str(), "{b}");
    }
    assert!(!out.stdout.contains("SECRET") && !out.stderr.contains("SECRET"));
    let out = repo.yoi(&["ticket", "list"]).ok();
    assert!(
        out.stderr.lines().any(|l| l.starts_with("broken: ")
            && l.contains(&format!("(.yoi/tickets/{folder_link})"))
            && l.contains("layout.symlink")),
        "{}",
        out.stderr
    );

    // Doctor: an error per link, naming where it points, never what is there.
    let out = repo.yoi(&["ticket", "doctor", "--json"]);
    assert_eq!(out.code, 1, "links are errors");
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let links: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "layout.symlink")
        .collect();
    let mut paths: Vec<&str> = links.iter().map(|f| f["path"].as_str().unwrap()).collect();
    paths.sort();
    let mut want = [
        format!(".yoi/tickets/{item_link}/item.md"),
        format!(".yoi/tickets/{thread_link}/thread.md"),
        format!(".yoi/tickets/{folder_link}"),
        format!(".yoi/tickets/{artifacts_link}/artifacts"),
    ];
    want.sort();
    assert_eq!(paths, want.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(links.len(), 4, "{links:?}");
    assert!(links.iter().all(|f| f["severity"] == "error"));
    assert!(
        !report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["check"].as_str().unwrap().starts_with("index.")),
        "doctor and the index agree about the linked ones: {report}"
    );
    assert!(!out.stdout.contains("SECRET"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("notes.txt"),
        "doctor never lists a linked folder's contents"
    );
    assert_eq!(common_tree(&outside), before);
}

/// Every file under `dir` with its bytes.
fn common_tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_linked_skill_folder_is_not_loaded_and_doctor_names_it() {
    let repo = Repo::init();
    let outside = repo.side.path().join("evil");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("SKILL.md"),
        "---\nname: evil\ndescription: SECRET-SKILL, read through a link\n---\nSECRET-SKILL body\n",
    )
    .unwrap();
    std::fs::create_dir_all(repo.path().join(".yoi/skills")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.path().join(".yoi/skills/evil")).unwrap();

    let out = repo.yoi(&["skill", "list", "--json"]).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        !v["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "evil"),
        "{v}"
    );
    assert!(!out.stdout.contains("SECRET-SKILL"));
    let out = repo.yoi(&["skill", "show", "evil"]);
    assert_ne!(out.code, 0, "a linked skill cannot be read");
    assert!(!out.stdout.contains("SECRET-SKILL"));

    let out = repo.yoi(&["ticket", "doctor", "--json"]);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let f = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "layout.symlink")
        .unwrap_or_else(|| panic!("no layout.symlink: {report}"));
    assert_eq!(f["path"], ".yoi/skills/evil");
    assert_eq!(f["severity"], "error");
    assert!(!out.stdout.contains("SECRET-SKILL"), "{}", out.stdout);

    // Approving a skill of that name replaces the link; nothing is written where it led.
    let before = common_tree(&outside);
    let proposed = repo.side.path().join("proposal/evil");
    std::fs::create_dir_all(&proposed).unwrap();
    std::fs::write(
        proposed.join("SKILL.md"),
        "---\nname: evil\ndescription: The real skill, approved over a planted link.\n---\nBody\n",
    )
    .unwrap();
    let out = repo
        .yoi(&["skill", "propose", proposed.to_str().unwrap(), "--json"])
        .ok();
    let id: Value = serde_json::from_str(&out.stdout).unwrap();
    repo.yoi(&["skill", "approve", id["id"].as_str().unwrap()])
        .ok();
    let placed = repo.path().join(".yoi/skills/evil");
    assert!(std::fs::symlink_metadata(&placed).unwrap().is_dir());
    assert_eq!(common_tree(&outside), before, "nothing written through");

    // A skills folder that is itself a link loads nothing and is reported.
    let skills = repo.path().join(".yoi/skills");
    std::fs::rename(&skills, repo.side.path().join("moved-skills")).unwrap();
    std::os::unix::fs::symlink(repo.side.path().join("moved-skills"), &skills).unwrap();
    let out = repo.yoi(&["skill", "list", "--json"]).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        !v["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "evil"),
        "{v}"
    );
    let out = repo.yoi(&["ticket", "doctor", "--json"]);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["check"] == "layout.symlink" && f["path"] == ".yoi/skills"),
        "{report}"
    );
}

/// `GET /api/v1/router` until routing reports a fixed point.
fn settle(repo: &Repo, server: &Server) {
    let start = std::time::Instant::now();
    loop {
        let (_, status) = server.get(repo, "/router");
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

fn state_of(server: &Server, repo: &Repo, id: &str) -> String {
    let (_, list) = server.get(repo, "/tickets?state=all");
    list["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .map(|t| t["state"].as_str().unwrap().to_string())
        .unwrap_or_else(|| format!("not listed: {list}"))
}

/// The orchestrator's decision bodies in ticket `id`'s thread.
fn decisions(repo: &Repo, id: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo.ticket_dir(id).join("thread.md")).unwrap();
    text.split("<!-- event: ")
        .filter(|e| e.starts_with("decision ") && e.contains("author: yoi-orchestrator"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_damaged_relations_or_plan_file_stops_no_routing_and_its_ticket_still_blocks() {
    let repo = Repo::init();
    std::fs::write(repo.path().join("README.md"), "hello\n").unwrap();
    yoi_testkit::repo::git(repo.path(), &["add", "-A"]);
    yoi_testkit::repo::git(repo.path(), &["commit", "-q", "-m", "base"]);
    // A finished blocker whose relations.json is then damaged, and a queued ticket waiting on it.
    let blocker = repo.ready_ticket("Finished blocker");
    let waiter = repo.ready_ticket("Waits on the finished blocker");
    repo.yoi(&["ticket", "relation", "add", &waiter, "depends_on", &blocker])
        .ok();
    repo.yoi(&[
        "ticket",
        "cancel",
        &blocker,
        "--resolution",
        "Done elsewhere.",
    ])
    .ok();
    repo.yoi(&["ticket", "queue", &waiter]).ok();
    // Queued tickets whose own relations.json and plan file are damaged, and a healthy one.
    let own_relations = repo.ready_ticket("Own relations damaged");
    let own_plan = repo.ready_ticket("Own plan torn");
    let routable = repo.ready_ticket("Routable");
    for id in [&own_relations, &own_plan, &routable] {
        repo.yoi(&["ticket", "queue", id]).ok();
    }
    let relations = |id: &str| repo.ticket_dir(id).join(RELATIONS);
    assert!(
        !relations(&blocker).exists(),
        "the blocker owns no relation yet"
    );
    for id in [&blocker, &own_relations] {
        damage(&repo, id, "relations");
    }
    damage(&repo, &own_plan, "plan-torn");

    // A routing server (the default configuration: no pods are started).
    let server = Server::spawn(&repo);
    settle(&repo, &server);
    assert_eq!(state_of(&server, &repo, &routable), "inprogress");
    let (_, list) = server.get(&repo, "/tickets?state=all");
    let broken: Vec<&str> = list["broken"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    let mut want = vec![blocker.as_str(), own_relations.as_str(), own_plan.as_str()];
    want.sort();
    assert_eq!(broken, want, "{list}");
    for id in [&own_relations, &own_plan] {
        assert!(
            decisions(&repo, id).is_empty(),
            "a broken ticket is not routed"
        );
        let file = repo.ticket_dir(id).join("item.md");
        assert!(std::fs::read_to_string(file)
            .unwrap()
            .contains("state: queued"));
    }
    // The finished blocker is broken, so it blocks: safe side.
    let waits = decisions(&repo, &waiter);
    let last = waits.last().expect("the waiter was routed");
    assert!(last.contains("blocked_by_dependency"), "{last}");
    assert!(last.contains(blocker.as_str()), "{last}");
    // So does the queue gate, and both pages keep serving with the broken cards.
    let late = repo.ready_ticket("Queued after the damage");
    repo.yoi(&["ticket", "relation", "add", &late, "depends_on", &blocker])
        .ok();
    let out = repo.yoi(&["ticket", "queue", &late]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stderr
            .contains(&format!("{blocker} via depends_on (missing or unreadable)")),
        "{}",
        out.stderr
    );
    let cookie = log_in(&repo);
    for path in ["/", "/queue", "/tickets", "/doctor"] {
        let (status, html) = page(&server, &cookie, path);
        assert_eq!(status, 200, "{path} keeps serving");
        if path != "/doctor" {
            for id in &want {
                assert!(
                    html.contains(&format!("id=\"broken-{id}\"")),
                    "{path}: {id}"
                );
            }
        }
    }
    for id in &want {
        let (status, html) = page(&server, &cookie, &format!("/tickets/{id}"));
        assert_eq!(status, 200);
        assert!(html.contains("yoi cannot read this ticket"), "{id}");
    }

    // Repaired, the blocker is finished again: the late ticket queues and is routed.
    std::fs::remove_file(relations(&blocker)).unwrap();
    repo.yoi(&["ticket", "queue", &late]).ok();
    settle(&repo, &server);
    assert_eq!(state_of(&server, &repo, &late), "inprogress");

    // Damage made while the server runs is noticed: the in-progress ticket whose plan file
    // is torn now is listed as broken, and the pages keep serving.
    damage(&repo, &routable, "plan-torn");
    let start = std::time::Instant::now();
    loop {
        let (_, list) = server.get(&repo, "/tickets?state=all");
        let listed = list["broken"].as_array().is_some_and(|b| {
            b.iter()
                .any(|b| b["id"] == routable.as_str() && b["check"] == "plan.parse")
        });
        if listed {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the server never noticed the torn plan: {list}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for path in ["/", "/queue", "/tickets"] {
        let (status, html) = page(&server, &cookie, path);
        assert_eq!(status, 200, "{path} keeps serving");
        assert!(
            html.contains(&format!("id=\"broken-{routable}\"")),
            "{path}"
        );
    }
}
