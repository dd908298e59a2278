//! The smaller holes of issue 38, against a real server on loopback: a dashboard session is
//! not an API credential, the login form checks its origin, API answers carry headers that
//! keep a browser from treating them as pages, titles and names refuse bidirectional controls
//! while pages isolate them, sessions expire, and failed logins are limited per address.

mod common;

use std::time::{Duration, Instant};

use common::{Backend, Server};
use serde_json::json;

/// An HTTP client that does not follow redirects and returns every status as a response.
fn browser() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into()
}

/// A one-time login link for the human token's person (what `yoi dashboard` asks for).
fn login_link(server: &Server) -> String {
    let link = server
        .post("/api/v1/dashboard/login")
        .token(&server.tokens.human)
        .send()
        .expect(200);
    format!("{}{}", server.base, link["path"].as_str().unwrap())
}

/// Visit a login link: the whole `Set-Cookie` header and the `name=value` part of it.
fn log_in(server: &Server) -> (String, String) {
    let res = browser().get(&login_link(server)).call().unwrap();
    assert_eq!(res.status(), 303, "the login link starts a session");
    let set = res
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a session cookie")
        .to_string();
    let pair = set.split(';').next().unwrap().to_string();
    (set, pair)
}

/// GET `path` with only the session cookie: status, `Content-Type`, `Location` and body.
fn get_with_cookie(server: &Server, path: &str, cookie: &str) -> (u16, String, String, String) {
    let mut res = browser()
        .get(&format!("{}{path}", server.base))
        .header("Cookie", cookie)
        .call()
        .unwrap();
    let header = |name: &str| {
        res.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (ct, location) = (header("content-type"), header("location"));
    let status = res.status().as_u16();
    // A stream never ends: read its head only.
    let body = if ct.starts_with("text/event-stream") {
        String::new()
    } else {
        res.body_mut().read_to_string().unwrap_or_default()
    };
    (status, ct, location, body)
}

#[test]
fn a_session_cookie_is_not_an_api_credential_but_the_dashboard_stream_takes_it() {
    let server = Server::start(Backend::Sqlite);
    let (_, cookie) = log_in(&server);
    let (status, _, _, body) = get_with_cookie(&server, "/api/v1/tickets", &cookie);
    assert_eq!(status, 401, "{body}");
    assert!(
        body.contains("session cookie is not an API token"),
        "{body}"
    );
    let (status, _, _, body) = get_with_cookie(&server, "/api/v1/events", &cookie);
    assert_eq!(
        status, 401,
        "the API's event stream refuses the cookie: {body}"
    );
    // The session's secret sent as a bearer token is refused too.
    let secret = cookie.split_once('=').unwrap().1;
    let err = server
        .get("/api/v1/tickets")
        .token(secret)
        .send()
        .expect_error(401, "unauthorized");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("dashboard session is not an API token"),
        "{err}"
    );
    // The dashboard itself, and the stream its script opens, take the session.
    let (status, _, _, _) = get_with_cookie(&server, "/", &cookie);
    assert_eq!(status, 200);
    let (status, ct, _, body) = get_with_cookie(&server, "/live/events?after=0", &cookie);
    assert_eq!(status, 200, "{body}");
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    // Without a session it is the login page, as for every dashboard page.
    let (status, _, location, _) = get_with_cookie(&server, "/live/events", "other=1");
    assert_eq!((status, location.as_str()), (303, "/login"));
}

#[test]
fn no_token_but_a_session_is_named_like_one() {
    let server = Server::start(Backend::Sqlite);
    let admin = server.admin();
    let err = admin
        .rt
        .block_on(
            admin
                .db
                .create_token("session-mine", &"human".parse().unwrap(), "bob", 1),
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("names the dashboard's sessions"),
        "{err}"
    );
}

#[test]
fn the_login_form_refuses_another_origin() {
    let server = Server::start(Backend::Sqlite);
    let post = |origin: &str| {
        browser()
            .post(&format!("{}/login", server.base))
            .header("Origin", origin)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .send(format!("token={}", server.tokens.human))
            .unwrap()
    };
    let res = post("http://evil.example");
    assert_eq!(res.status(), 403);
    assert!(
        res.headers().get("set-cookie").is_none(),
        "no session from a foreign origin"
    );
    let res = post(&server.base);
    assert_eq!(res.status(), 303, "the same form from this origin logs in");
    assert!(res.headers().get("set-cookie").is_some());
}

#[test]
fn api_answers_carry_nosniff_no_store_and_a_csp_that_allows_nothing() {
    let server = Server::start(Backend::Sqlite);
    let agent = browser();
    let check = |path: &str, token: Option<&str>, want: u16| {
        let mut req = agent.get(&format!("{}{path}", server.base));
        if let Some(t) = token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        let res = req.call().unwrap();
        assert_eq!(res.status(), want, "{path}");
        let h = |name: &str| {
            res.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        assert_eq!(h("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(h("cache-control"), "no-store", "{path}");
        assert!(
            h("content-security-policy").starts_with("default-src 'none'"),
            "{path}: {}",
            h("content-security-policy")
        );
    };
    check("/api/v1/tickets", Some(&server.tokens.read), 200);
    check("/api/v1/tickets", None, 401);
    check("/api/v1/openapi.json", None, 200);
    check("/api/v1/skills", Some(&server.tokens.read), 200);
    check("/api/v1/no-such-route", Some(&server.tokens.read), 404);
    check("/healthz", None, 200);
    // Pages keep their own policy.
    let page = agent.get(&format!("{}/login", server.base)).call().unwrap();
    let csp = page.headers().get("content-security-policy").unwrap();
    assert!(csp.to_str().unwrap().starts_with("default-src 'self'"));
}

#[test]
fn bidi_controls_are_refused_in_titles_and_token_names() {
    let server = Server::start(Backend::Sqlite);
    let before = server.tree();
    for c in ['\u{202A}', '\u{202E}', '\u{2066}', '\u{2069}'] {
        let err = server
            .post("/api/v1/tickets")
            .token(&server.tokens.human)
            .json(json!({ "title": format!("Fix {c}login"), "body": "" }))
            .send()
            .expect_error(422, "refused");
        assert_eq!(err["details"]["reason"], "bidi_control", "{err}");
        let message = err["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("U+{:04X}", u32::from(c)))
                && message.contains("at character 5"),
            "{message}"
        );
    }
    assert_eq!(server.tree(), before, "nothing was written");
    let id = server.create("Fine", "");
    let err = server
        .patch(&format!("/api/v1/tickets/{id}"))
        .token(&server.tokens.human)
        .json(json!({ "title": "Fine\u{202E}txt.exe" }))
        .send()
        .expect_error(422, "refused");
    assert_eq!(err["details"]["reason"], "bidi_control", "{err}");
    assert_eq!(server.show(&id)["title"], "Fine");
    // Token names and principals are names people give too.
    let admin = server.admin();
    let refused = admin
        .rt
        .block_on(
            admin
                .db
                .create_token("laptop\u{202E}", &"human".parse().unwrap(), "bob", 1),
        )
        .unwrap_err();
    assert!(
        refused.to_string().contains("bidirectional control U+202E"),
        "{refused}"
    );
}

#[test]
fn bidi_controls_in_bodies_and_threads_are_isolated_in_pages() {
    let server = Server::start(Backend::Sqlite);
    let id = server.create("Isolated", "Run \u{202E}txt.exe\u{202C} please\n");
    server
        .post(&format!("/api/v1/tickets/{id}/comments"))
        .token(&server.tokens.human)
        .json(json!({ "body": "looks \u{2067}odd\u{2069} here" }))
        .send()
        .expect(200);
    let (_, cookie) = log_in(&server);
    let (status, _, _, page) = get_with_cookie(&server, &format!("/tickets/{id}"), &cookie);
    assert_eq!(status, 200);
    assert!(
        page.contains("<bdi>Run \u{202E}txt.exe\u{202C} please</bdi>"),
        "the body's run is isolated: {page}"
    );
    assert!(
        page.contains("<bdi>looks \u{2067}odd\u{2069} here</bdi>"),
        "the comment's run is isolated: {page}"
    );
    assert!(
        page.contains("<bdi>Isolated</bdi>"),
        "the title is isolated"
    );
}

#[test]
fn a_session_ends_after_its_idle_limit_and_its_token_is_revoked() {
    let server = Server::start_configured(Backend::Sqlite, |ws| {
        ws.config.server.session_idle_secs = 1;
    });
    let (set, cookie) = log_in(&server);
    assert!(set.contains("Max-Age=604800"), "{set}");
    assert_eq!(get_with_cookie(&server, "/", &cookie).0, 200);
    // Let the session sit idle past its limit.
    std::thread::sleep(Duration::from_millis(1300));
    let (status, _, location, _) = get_with_cookie(&server, "/", &cookie);
    assert_eq!((status, location.as_str()), (303, "/login"));
    let tokens = server.admin().rt.block_on(server.admin().db.list_tokens());
    let session = tokens
        .unwrap()
        .into_iter()
        .find(|t| t.name.starts_with("session-"))
        .expect("the session's token");
    assert!(
        session.revoked_ms.is_some(),
        "the ended session's token is revoked"
    );
}

#[test]
fn a_busy_session_ends_at_its_absolute_limit() {
    let server = Server::start_configured(Backend::Sqlite, |ws| {
        ws.config.server.session_max_secs = 1;
    });
    let (set, cookie) = log_in(&server);
    assert!(set.contains("Max-Age=1"), "the cookie says so too: {set}");
    let started = Instant::now();
    loop {
        let (status, _, _, _) = get_with_cookie(&server, "/", &cookie);
        if status == 303 {
            break;
        }
        assert_eq!(status, 200);
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "the session outlived its 1 s limit"
        );
        // A request every 100 ms keeps the session busy; the idle limit never ends it.
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[test]
fn failed_logins_are_limited_per_address() {
    let server = Server::start_configured(Backend::Sqlite, |ws| {
        ws.config.server.login_failures_per_minute = 3;
    });
    let agent = browser();
    for _ in 0..3 {
        let res = agent
            .get(&format!("{}/login?code=yoi_wrong", server.base))
            .call()
            .unwrap();
        assert_eq!(res.status(), 401);
    }
    // The next attempt is refused, even with a good link, and so is a pasted token.
    let res = agent.get(&login_link(&server)).call().unwrap();
    assert_eq!(res.status(), 429);
    let wait: u64 = res
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in seconds");
    assert!((1..=60).contains(&wait), "Retry-After: {wait}");
    assert!(res.headers().get("set-cookie").is_none());
    let res = agent
        .post(&format!("{}/login", server.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .send(format!("token={}", server.tokens.human))
        .unwrap();
    assert_eq!(res.status(), 429);
    // The API, which takes tokens and not logins, is not limited.
    server
        .get("/api/v1/tickets")
        .token(&server.tokens.read)
        .send()
        .expect(200);
}
