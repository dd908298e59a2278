//! The web dashboard in a real headless Chromium, against a real `yoi serve` on loopback: the
//! one-time login, queueing from the board and watching routing move the card without a
//! reload, a write by another process (`yoi --local`) arriving live, a server restart that
//! loses no update, a disabled button that says why, approving a skill proposal, accepting a
//! workflow offer and invoking the workflow, a keyboard-only run, the core flows with
//! JavaScript off, forged requests refused with nothing written, and a ticket written on the
//! New ticket page, checked before it is marked ready, with JavaScript and without (and with
//! JavaScript, checked as it is typed, its dependency found by search).

#[path = "../../../tests/browser/mod.rs"]
mod browser;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use browser::{screenshot, wait_for, wait_until_text, Driver, BROWSER_TIMEOUT, ROUTING_TIMEOUT};
use fantoccini::{Client, Locator};
use serde_json::json;

const YOI: &str = env!("CARGO_BIN_EXE_yoi");

const BRIEF: &str = "## Intent\nMake the thing work.\n\n## Acceptance criteria\n- it works\n\n## Validation\n`true`\n";

/// A throwaway workspace and, while `server` is set, a `yoi serve` for it.
struct Site {
    _dir: tempfile::TempDir,
    root: PathBuf,
    port: u16,
    server: Option<Child>,
    login: String,
}

impl Site {
    /// A git repository with `yoi init`, no pods, and room for one ticket in progress.
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir(&root).unwrap();
        yoi_testkit::git(&root, &["init", "-q", "-b", "main"]);
        yoi_testkit::git(
            &root,
            &["commit", "-q", "--allow-empty", "-m", "initial commit"],
        );
        let site = Site {
            _dir: dir,
            root,
            port: free_port(),
            server: None,
            login: String::new(),
        };
        site.yoi(&["init"]);
        let cfg = site.root.join(".yoi/workspace.toml");
        let text = std::fs::read_to_string(&cfg).unwrap();
        let text = text
            .replace("coder = 1", "coder = 0")
            .replace("verifier = 1", "verifier = 0")
            .replace("reviewer = 1", "reviewer = 0")
            .replace("max_inprogress = 4", "max_inprogress = 1")
            .replace("retry_backoff_ms = 2000", "retry_backoff_ms = 200");
        assert!(text.contains("max_inprogress = 1"), "{text}");
        std::fs::write(&cfg, text).unwrap();
        site
    }

    /// Run the CLI in the workspace; returns stdout, trimmed.
    fn yoi(&self, args: &[&str]) -> String {
        self.yoi_with_input(args, None)
    }

    fn yoi_with_input(&self, args: &[&str], input: Option<&str>) -> String {
        use std::io::Write;
        let mut child = Command::new(YOI)
            .arg("-C")
            .arg(&self.root)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(i) = input {
            child.stdin.take().unwrap().write_all(i.as_bytes()).unwrap();
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "yoi {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A ticket with a complete brief, marked ready.
    fn ready_ticket(&self, title: &str, depends_on: Option<&str>) -> String {
        let mut args = vec!["ticket", "create", "--title", title, "--body-file", "-"];
        if let Some(d) = depends_on {
            args.extend(["--depends-on", d]);
        }
        let id = self.yoi_with_input(&args, Some(BRIEF));
        self.yoi(&["ticket", "mark-ready", &id]);
        id
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Start `yoi serve` on this site's port, in its own process group; wait for its login
    /// link.
    fn start(&mut self) {
        let mut child = Command::new(YOI)
            .arg("-C")
            .arg(&self.root)
            .args(["serve", "--listen", &format!("127.0.0.1:{}", self.port)])
            .env("YOI_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        assert!(first.starts_with("listening on http://"), "{first}");
        let second = lines.next().unwrap().unwrap();
        let url = second
            .strip_prefix("dashboard: ")
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("no login link: {second}"));
        assert!(url.contains("/login?code="), "{url}");
        self.login = url.to_string();
        self.server = Some(child);
    }

    /// Stop the server (SIGTERM to its group) and wait for it.
    fn stop(&mut self) {
        if let Some(mut c) = self.server.take() {
            unsafe { libc::kill(-(c.id() as i32), libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(20);
            while c.try_wait().unwrap().is_none() {
                assert!(Instant::now() < deadline, "yoi serve did not stop");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    fn thread(&self, id: &str) -> String {
        std::fs::read_to_string(self.root.join(".yoi/tickets").join(id).join("thread.md")).unwrap()
    }

    fn state(&self, id: &str) -> String {
        let item = std::fs::read_to_string(self.root.join(".yoi/tickets").join(id).join("item.md"))
            .unwrap();
        item.lines()
            .find_map(|l| l.strip_prefix("state:"))
            .unwrap_or_default()
            .trim()
            .to_string()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        if let Some(mut c) = self.server.take() {
            unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Where screenshots go: `$YOI_SCREENSHOTS` (the docs use `docs/screenshots`), else the
/// target's temporary folder.
fn shot_path(name: &str) -> PathBuf {
    let dir = std::env::var_os("YOI_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots"));
    dir.join(format!("{name}.png"))
}

/// Log in through the one-time link; the code must leave the address bar.
async fn log_in(c: &Client, site: &Site) {
    c.goto(&site.login).await.unwrap();
    wait_for(c, "main", BROWSER_TIMEOUT).await;
    let url = c.current_url().await.unwrap();
    assert_eq!(url.path(), "/", "the login answers with the board");
    assert!(url.query().is_none(), "the code left the URL: {url}");
}

/// Wait until the live indicator says `state`.
async fn wait_live(c: &Client, state: &str) {
    let css = format!("#live[data-state=\"{state}\"]");
    wait_for(c, &css, BROWSER_TIMEOUT).await;
}

async fn mark_page(c: &Client) {
    c.execute("window.__stay = 'same page'; return 1;", vec![])
        .await
        .unwrap();
}

async fn same_page(c: &Client) -> bool {
    c.execute("return window.__stay === 'same page';", vec![])
        .await
        .unwrap()
        == json!(true)
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

fn card_in(lane: &str, id: &str) -> String {
    format!("ol.cards[data-lane=\"{lane}\"] #t-{id}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_from_the_board_and_watch_routing_move_cards_live() {
    let mut site = Site::new();
    let x = site.ready_ticket("First in line", None);
    let y = site.ready_ticket("Second in line", None);
    site.start();
    let driver = Driver::start();
    let c = driver.session(true).await;
    log_in(&c, &site).await;
    let cookies = c.execute("return document.cookie;", vec![]).await.unwrap();
    assert!(
        !cookies.as_str().unwrap_or("").contains("yoi_session"),
        "the session cookie is HttpOnly: {cookies}"
    );
    wait_live(&c, "live").await;

    // Queue X from the board: routing has room for one, so it goes to in progress.
    click(&c, &format!("#t-{x} input[type=checkbox]")).await;
    click(&c, "#bulk button[value=queue]").await;
    wait_until_text(
        &c,
        ".flash.ok",
        format!("{x}: queued").as_str(),
        BROWSER_TIMEOUT,
    )
    .await;
    wait_for(&c, &card_in("inprogress", &x), ROUTING_TIMEOUT).await;

    // Y waits for capacity.
    click(&c, &format!("#t-{y} input[type=checkbox]")).await;
    click(&c, "#bulk button[value=queue]").await;
    wait_for(&c, &card_in("queued", &y), BROWSER_TIMEOUT).await;
    wait_live(&c, "live").await;
    screenshot(&c, &shot_path("board")).await;

    // Another process returns X to planning; routing then accepts Y. Both cards move without
    // a reload.
    mark_page(&c).await;
    site.yoi(&[
        "--local",
        "ticket",
        "return-to-planning",
        &x,
        "--reason",
        "needs a decision on scope",
    ]);
    wait_for(&c, &card_in("planning", &x), BROWSER_TIMEOUT).await;
    wait_for(&c, &card_in("inprogress", &y), ROUTING_TIMEOUT).await;
    assert!(same_page(&c).await, "the cards moved without a reload");
    let count = c
        .find(Locator::Css("[data-count=\"inprogress\"]"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(count, "1", "the lane count followed");
    assert_eq!(site.state(&y), "inprogress");

    // In progress, a person may retry the step (the store allows it there too).
    c.goto(&format!("{}/tickets/{y}", site.base()))
        .await
        .unwrap();
    let retry = wait_for(&c, "#act-retry", BROWSER_TIMEOUT).await;
    assert!(
        retry.is_enabled().await.unwrap(),
        "retry is offered in progress"
    );
    assert_eq!(retry.text().await.unwrap(), "Retry the step");

    // The queue page says why nothing waits now; take its picture for the docs.
    c.goto(&format!("{}/queue", site.base())).await.unwrap();
    wait_for(&c, "main h1", BROWSER_TIMEOUT).await;
    screenshot(&c, &shot_path("queue")).await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_loses_no_card_update() {
    let mut site = Site::new();
    let z = site.yoi(&["ticket", "create", "--title", "Before the restart"]);
    site.start();
    let driver = Driver::start();
    let c = driver.session(true).await;
    log_in(&c, &site).await;
    wait_live(&c, "live").await;
    mark_page(&c).await;

    site.stop();
    let stopped = Instant::now();
    wait_live(&c, "reconnecting").await;
    assert!(
        stopped.elapsed() < Duration::from_secs(2),
        "`reconnecting` showed {:?} after the server stopped",
        stopped.elapsed()
    );
    // A change while no server runs: it reaches the page once the server is back.
    site.yoi(&[
        "--local",
        "ticket",
        "edit",
        &z,
        "--title",
        "Renamed while the server was down",
    ]);
    site.start();
    wait_until_text(
        &c,
        &format!("#t-{z} .title"),
        "Renamed while the server was down",
        BROWSER_TIMEOUT,
    )
    .await;
    wait_live(&c, "live").await;
    assert!(same_page(&c).await, "caught up without a reload");
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_tickets_queue_button_says_why() {
    let mut site = Site::new();
    let first = site.yoi(&["ticket", "create", "--title", "Decide the schema"]);
    let later = site.ready_ticket("Build on the schema", Some(&first));
    site.start();
    let driver = Driver::start();
    let c = driver.session(true).await;
    log_in(&c, &site).await;
    c.goto(&format!("{}/tickets/{later}", site.base()))
        .await
        .unwrap();
    let button = wait_for(&c, "#act-queue", BROWSER_TIMEOUT).await;
    assert!(
        !button.is_enabled().await.unwrap(),
        "queue is disabled while a blocker is open"
    );
    let why = c
        .find(Locator::Css("#why-queue"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(why.contains(&first), "the reason names the blocker: {why}");
    let described = button.attr("aria-describedby").await.unwrap();
    assert_eq!(described.as_deref(), Some("why-queue"));
    screenshot(&c, &shot_path("ticket")).await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_a_skill_proposal() {
    let mut site = Site::new();
    let folder = site.root.parent().unwrap().join("release-notes");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        "---\nname: release-notes\ndescription: Write release notes from merged tickets.\n---\n\n# Release notes\n\nList what changed.\n",
    )
    .unwrap();
    let out = site.yoi(&["skill", "propose", folder.to_str().unwrap(), "--json"]);
    let proposal: serde_json::Value = serde_json::from_str(&out).unwrap();
    let id = proposal["id"].as_str().unwrap().to_string();
    site.start();
    let driver = Driver::start();
    let c = driver.session(true).await;
    log_in(&c, &site).await;
    c.goto(&format!("{}/skills", site.base())).await.unwrap();
    wait_for(&c, &format!("#p-{id}"), BROWSER_TIMEOUT).await;
    click(&c, &format!("#approve-{id}")).await;
    wait_until_text(&c, ".flash.ok", "approved", BROWSER_TIMEOUT).await;
    assert!(
        site.root
            .join(".yoi/skills/release-notes/SKILL.md")
            .is_file(),
        "the approved skill is in the workspace catalog"
    );
    wait_for(&c, "a[href=\"/skills/release-notes\"]", BROWSER_TIMEOUT).await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_accepts_a_workflow_offer_and_invokes_the_workflow() {
    let mut site = Site::new();
    let said = "Update the changelog under Unreleased before asking for review.";
    let mut tickets = Vec::new();
    for n in 0..3 {
        let id = site.ready_ticket(&format!("Ticket {n}"), None);
        site.yoi(&["ticket", "comment", &id, "-m", said]);
        tickets.push(id);
    }
    let out = site.yoi(&["workflow", "offers", "--detect", "--json"]);
    let offers: serde_json::Value = serde_json::from_str(&out).unwrap();
    let id = offers["offers"][0]["id"].as_str().unwrap().to_string();
    let slug = offers["offers"][0]["name"].as_str().unwrap().to_string();
    site.start();
    let driver = Driver::start();
    let c = driver.session(true).await;
    log_in(&c, &site).await;
    // The inbox links the offer to the workflows page.
    c.goto(&format!("{}/inbox", site.base())).await.unwrap();
    wait_for(&c, "li[data-reason=\"workflow_offer\"]", BROWSER_TIMEOUT).await;
    click(&c, "li[data-reason=\"workflow_offer\"] a.button").await;
    wait_for(&c, &format!("#o-{id} pre.diff"), BROWSER_TIMEOUT).await;
    click(&c, &format!("#accept-{id}")).await;
    wait_until_text(&c, ".flash.ok", "accepted", BROWSER_TIMEOUT).await;
    assert!(
        site.root.join(format!(".yoi/workflow/{slug}.md")).is_file(),
        "the accepted workflow is written"
    );
    // Its page invokes it on a ticket: the person's `/slug` comment.
    click(&c, &format!("a[href=\"/workflows/{slug}\"]")).await;
    wait_for(&c, "#invoke-form", BROWSER_TIMEOUT).await;
    c.find(Locator::Css("#invoke-ticket"))
        .await
        .unwrap()
        .send_keys(&tickets[0])
        .await
        .unwrap();
    click(&c, "#invoke").await;
    wait_until_text(&c, ".flash.ok", "invoked", BROWSER_TIMEOUT).await;
    assert!(
        site.thread(&tickets[0])
            .contains(&format!("workflow: {slug}")),
        "the invocation is the person's comment event"
    );
    c.close().await.unwrap();
}

/// Send one key to whatever has focus.
async fn key(c: &Client, k: &str) {
    c.active_element()
        .await
        .unwrap()
        .send_keys(k)
        .await
        .unwrap();
}

async fn active_attr(c: &Client, name: &str) -> String {
    c.active_element()
        .await
        .unwrap()
        .attr(name)
        .await
        .unwrap()
        .unwrap_or_default()
}

/// Press Tab until the focused element has id `id` (at most `limit` presses).
async fn tab_to(c: &Client, id: &str, limit: usize) {
    let tab = char::from(fantoccini::key::Key::Tab).to_string();
    for _ in 0..limit {
        if active_attr(c, "id").await == id {
            return;
        }
        key(c, &tab).await;
    }
    panic!("#{id} was not reached with {limit} Tab presses");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyboard_only_opens_a_ticket_comments_and_cancels_it() {
    let mut site = Site::new();
    site.yoi(&["ticket", "create", "--title", "Someone else's ticket"]);
    let k = site.yoi(&["ticket", "create", "--title", "Reach me by keys"]);
    site.start();
    let driver = Driver::start();
    let c = driver.session(true).await;
    log_in(&c, &site).await;
    wait_live(&c, "live").await;
    let enter = char::from(fantoccini::key::Key::Enter).to_string();
    // j moves between cards; stop on K's.
    let mut found = false;
    for _ in 0..10 {
        key(&c, "j").await;
        if active_attr(&c, "href").await.ends_with(&k) {
            found = true;
            break;
        }
    }
    assert!(found, "j reached the card");
    key(&c, &enter).await;
    wait_for(&c, "#comment-body", BROWSER_TIMEOUT).await;
    assert!(c.current_url().await.unwrap().path().ends_with(&k));

    tab_to(&c, "comment-body", 200).await;
    key(&c, "Typed without a mouse.").await;
    let tab = char::from(fantoccini::key::Key::Tab).to_string();
    key(&c, &tab).await;
    key(&c, &enter).await;
    wait_until_text(&c, "#thread", "Typed without a mouse.", BROWSER_TIMEOUT).await;

    tab_to(&c, "cancel-resolution", 200).await;
    key(&c, "not needed after all").await;
    key(&c, &tab).await;
    assert_eq!(active_attr(&c, "id").await, "act-cancel");
    key(&c, &enter).await;
    wait_until_text(&c, "#t-state", "Closed", BROWSER_TIMEOUT).await;
    assert_eq!(site.state(&k), "closed");
    assert!(site.thread(&k).contains("Typed without a mouse."));
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_core_flows_work_without_javascript() {
    let mut site = Site::new();
    let a = site.ready_ticket("Queue me without a script", None);
    let b = site.yoi_with_input(
        &[
            "ticket",
            "create",
            "--title",
            "Mark me ready",
            "--body-file",
            "-",
        ],
        Some(BRIEF),
    );
    site.start();
    let driver = Driver::start();
    let c = driver.session(false).await;
    log_in(&c, &site).await;
    let live = c
        .find(Locator::Css("#live"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(live.contains("off"), "no script, no live updates: {live}");

    // Bulk mark-ready from the board.
    click(&c, &format!("#t-{b} input[type=checkbox]")).await;
    click(&c, "#bulk button[value=mark-ready]").await;
    wait_until_text(
        &c,
        ".flash.ok",
        format!("{b}: marked ready").as_str(),
        BROWSER_TIMEOUT,
    )
    .await;
    wait_for(&c, &card_in("ready", &b), BROWSER_TIMEOUT).await;
    assert_eq!(site.state(&b), "ready");

    // Queue from the ticket page, then comment.
    c.goto(&format!("{}/tickets/{a}", site.base()))
        .await
        .unwrap();
    click(&c, "#act-queue").await;
    wait_until_text(
        &c,
        ".flash.ok",
        format!("{a}: queued").as_str(),
        BROWSER_TIMEOUT,
    )
    .await;
    assert!(matches!(site.state(&a).as_str(), "queued" | "inprogress"));
    c.find(Locator::Css("#comment-body"))
        .await
        .unwrap()
        .send_keys("Works without JavaScript.")
        .await
        .unwrap();
    click(&c, "#comment button[type=submit]").await;
    wait_until_text(&c, "#thread", "Works without JavaScript.", BROWSER_TIMEOUT).await;
    assert!(site.thread(&a).contains("Works without JavaScript."));

    for page in ["/queue", "/tickets", "/pods", "/skills", "/doctor"] {
        c.goto(&format!("{}{page}", site.base())).await.unwrap();
        wait_for(&c, "main h1", BROWSER_TIMEOUT).await;
    }
    c.close().await.unwrap();
}

/// A page on another origin that posts a form to the dashboard as soon as it loads.
fn serve_forgery(target: String) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let target = target.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                let mut s = stream;
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let page = format!(
                    "<!doctype html><html><body><form id=f method=post action=\"{target}\"><input name=action value=queue></form><script>document.getElementById('f').submit()</script></body></html>"
                );
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                );
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_posts_and_foreign_hosts_are_refused_and_write_nothing() {
    let mut site = Site::new();
    let t = site.ready_ticket("Do not touch", None);
    site.start();
    let before = site.thread(&t);

    // A logged-in browser visits another site that posts a queue form to the dashboard: the
    // Strict cookie stays home and the post is refused.
    let driver = Driver::start();
    let c = driver.session(true).await;
    log_in(&c, &site).await;
    let evil = serve_forgery(format!("{}/tickets/{t}/act", site.base()));
    c.goto(&evil).await.unwrap();
    wait_until_text(&c, "body", "403", BROWSER_TIMEOUT).await;
    c.close().await.unwrap();

    // The same with a stolen session cookie but no CSRF token, with a wrong one, and from a
    // foreign Origin; and any request naming a foreign Host.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    // The browser used the printed link; `yoi dashboard` makes another, and the used one is
    // refused.
    assert_eq!(agent.get(&site.login).call().unwrap().status(), 401);
    let link = site.yoi(&["dashboard", "--no-open"]);
    assert!(
        link.starts_with(&format!("{}/login?code=", site.base())),
        "{link}"
    );
    let cookie = yoi_testkit::dashboard_session(&link);
    let act = format!("{}/tickets/{t}/act", site.base());
    let post = |body: &str, origin: Option<&str>| {
        let mut r = agent
            .post(&act)
            .header("Cookie", &cookie)
            .header("Content-Type", "application/x-www-form-urlencoded");
        if let Some(o) = origin {
            r = r.header("Origin", o);
        }
        r.send(body.to_string()).unwrap().status().as_u16()
    };
    assert_eq!(post("action=queue", None), 403, "no CSRF token");
    assert_eq!(
        post("action=queue&csrf=0123456789abcdef", None),
        403,
        "a wrong token"
    );
    let page = agent
        .get(&format!("{}/tickets/{t}", site.base()))
        .header("Cookie", &cookie)
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    let token = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    assert_eq!(
        post(
            &format!("action=queue&csrf={token}"),
            Some("http://evil.example")
        ),
        403,
        "a foreign Origin"
    );
    for (method, path) in [
        ("GET", "/".to_string()),
        ("POST", format!("/tickets/{t}/act")),
        ("POST", format!("/api/v1/tickets/{t}/queue")),
    ] {
        let url = format!("{}{path}", site.base());
        let mut res = match method {
            "GET" => agent
                .get(&url)
                .header("Host", "evil.example")
                .header("Cookie", &cookie)
                .call(),
            _ => agent
                .post(&url)
                .header("Host", "evil.example")
                .header("Cookie", &cookie)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .send(format!("action=queue&csrf={token}")),
        }
        .unwrap();
        assert_eq!(
            res.status().as_u16(),
            421,
            "{method} {path} with a foreign Host"
        );
        // The refusal names the file a person would edit to allow the name.
        let body = res.body_mut().read_to_string().unwrap();
        assert!(
            body.contains("[server] allowed_hosts in .yoi/workspace.toml"),
            "{method} {path}: {body}"
        );
    }
    // A session is no API credential: it cannot write through the API (nor read it, as
    // crates/yoi-server/tests/hardening.rs shows).
    let api = agent
        .post(&format!("{}/api/v1/tickets/{t}/queue", site.base()))
        .header("Cookie", &cookie)
        .send_empty()
        .unwrap();
    assert_eq!(api.status(), 401);
    assert_eq!(site.thread(&t), before, "nothing was written");
    assert_eq!(site.state(&t), "ready");
    // With the token, from this origin, the same form works: the refusals above were the
    // checks, not a broken form.
    assert_eq!(post(&format!("action=queue&csrf={token}"), None), 303);
    assert_ne!(site.thread(&t), before);
}

/// Fill `css` (an input or a textarea) with `text`, replacing what it held.
async fn fill(c: &Client, css: &str, text: &str) {
    let e = c.find(Locator::Css(css)).await.unwrap();
    e.clear().await.unwrap();
    e.send_keys(text).await.unwrap();
}

/// A ticket written in the dashboard (docs/dashboard.md, "New ticket"), with JavaScript and
/// without: the brief starts from the section headings; a check of a brief missing its
/// Validation names it and offers no "Create and mark ready"; once complete, the check offers
/// it and the ticket is created ready, its title and brief as typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_written_in_the_dashboard_is_checked_before_it_is_marked_ready() {
    let mut site = Site::new();
    site.start();
    let driver = Driver::start();
    for js in [true, false] {
        let c = driver.session(js).await;
        if !js {
            // The printed link was used by the first session: `yoi dashboard` makes another.
            site.login = site.yoi(&["dashboard", "--no-open"]);
        }
        log_in(&c, &site).await;
        c.goto(&format!("{}/tickets", site.base())).await.unwrap();
        click(&c, "#new-ticket").await;
        wait_for(&c, "#new-body", BROWSER_TIMEOUT).await;
        let start = c
            .find(Locator::Css("#new-body"))
            .await
            .unwrap()
            .prop("value")
            .await
            .unwrap()
            .unwrap_or_default();
        assert!(
            start.contains("## Intent") && start.contains("## Validation"),
            "{start}"
        );
        let title = format!("Written in the dashboard (js {js})");
        fill(&c, "#new-title", &title).await;
        fill(
            &c,
            "#new-body",
            "## Intent\nGreet.\n\n## Acceptance criteria\n- it greets\n",
        )
        .await;
        click(&c, "#check").await;
        wait_until_text(&c, "#lint-missing", "Validation", BROWSER_TIMEOUT).await;
        assert!(
            c.find(Locator::Css("#create-ready")).await.is_err(),
            "no Mark ready before the brief is complete"
        );
        fill(
            &c,
            "#new-body",
            "## Intent\nGreet.\n\n## Acceptance criteria\n- it greets\n\n## Validation\n`true`\n",
        )
        .await;
        click(&c, "#check").await;
        wait_for(&c, "#lint-ready", BROWSER_TIMEOUT).await;
        wait_until_text(&c, "#preview", "it greets", BROWSER_TIMEOUT).await;
        click(&c, "#create-ready").await;
        wait_until_text(&c, ".flash.ok", "created and marked ready", BROWSER_TIMEOUT).await;
        let url = c.current_url().await.unwrap();
        let id = url.path().trim_start_matches("/tickets/").to_string();
        assert_eq!(site.state(&id), "ready", "js {js}");
        let show = site.yoi(&["ticket", "show", &id, "--json"]);
        let show: serde_json::Value = serde_json::from_str(&show).unwrap();
        assert_eq!(show["title"], title.as_str());
        assert!(show["body"].as_str().unwrap().contains("`true`"), "{show}");
        c.close().await.unwrap();
    }
}

/// With JavaScript, the New ticket page checks and previews the brief as it is typed, without a
/// button or a reload, and offers "Create and mark ready" once the brief is complete; the
/// dependency field finds an open ticket by the end of its id and by a word of its title;
/// picking it puts its id in the field, and the ticket is created depending on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_javascript_a_brief_is_checked_as_it_is_typed_and_a_dependency_found_by_search() {
    let mut site = Site::new();
    let dep = site.ready_ticket("Paint the greeting sign", None);
    site.start();
    let driver = Driver::start();
    let c = driver.session(true).await;
    log_in(&c, &site).await;
    c.goto(&format!("{}/tickets/new", site.base()))
        .await
        .unwrap();
    wait_for(&c, "#new-body", BROWSER_TIMEOUT).await;
    mark_page(&c).await;
    fill(&c, "#new-title", "Checked while typed").await;
    fill(
        &c,
        "#new-body",
        "## Intent\nGreet.\n\n## Acceptance criteria\n- it greets warmly\n",
    )
    .await;
    wait_until_text(&c, "#lint-missing", "Validation", BROWSER_TIMEOUT).await;
    wait_until_text(&c, "#preview", "it greets warmly", BROWSER_TIMEOUT).await;
    assert!(
        c.find(Locator::Css("#create-ready")).await.is_err(),
        "no Mark ready before the brief is complete"
    );
    fill(
        &c,
        "#new-body",
        "## Intent\nGreet.\n\n## Acceptance criteria\n- it greets warmly\n\n## Validation\n`true`\n",
    )
    .await;
    wait_for(&c, "#lint-ready", BROWSER_TIMEOUT).await;
    // Offered as soon as the check says the brief is complete, with no button pressed.
    wait_for(&c, "#create-ready", BROWSER_TIMEOUT).await;
    // A dependency is found by the end of its id, as the dashboard shows ids, and by a word.
    // Picking one empties the results, so each search below is seen to answer.
    let pick = format!("#dep-results button[data-id=\"{dep}\"]");
    let tail = &dep[dep.len() - 6..];
    fill(&c, "#new-deps", &tail.to_lowercase()).await;
    wait_for(&c, &pick, BROWSER_TIMEOUT).await;
    click(&c, &pick).await;
    assert!(c.find(Locator::Css(&pick)).await.is_err());
    fill(&c, "#new-deps", "greeting").await;
    wait_for(&c, &pick, BROWSER_TIMEOUT).await;
    assert!(
        same_page(&c).await,
        "the check and the search reloaded nothing"
    );
    click(&c, &pick).await;
    let deps = c
        .find(Locator::Css("#new-deps"))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap_or_default();
    assert_eq!(deps.trim(), dep);
    click(&c, "#create").await;
    wait_until_text(&c, ".flash.ok", "created in planning", BROWSER_TIMEOUT).await;
    let url = c.current_url().await.unwrap();
    let id = url.path().trim_start_matches("/tickets/").to_string();
    let show = site.yoi(&["ticket", "show", &id, "--json"]);
    assert!(show.contains(&dep), "{show}");
    c.close().await.unwrap();
}
