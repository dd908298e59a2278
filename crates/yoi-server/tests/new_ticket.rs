//! Tickets written in the dashboard, as a person without JavaScript uses it (plain form posts
//! with the session's cookie and CSRF token): the "New ticket" page starts from every section's
//! heading; "Preview and check" shows the brief rendered and the lint, and offers "Create and
//! mark ready" only once every required section is filled; a brief with a section missing is
//! created in planning and never marked ready; creating with a dependency records it; and the
//! edit form of a planning ticket checks an edit without saving it.

mod common;

use common::dashboard::{browser, log_in, page};
use common::{Backend, Server};

/// Post a form; the status and (for a redirect) where it goes, else the page.
fn post(s: &Server, cookie: &str, path: &str, fields: &[(&str, &str)]) -> (u16, String) {
    let body = serde_urlencoded::to_string(fields).unwrap();
    let mut res = browser()
        .post(&format!("{}{path}", s.base))
        .header("Cookie", cookie)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .send(&body)
        .unwrap();
    let status = res.status().as_u16();
    if status == 303 {
        let to = res.headers()["location"].to_str().unwrap().to_string();
        return (status, to);
    }
    (status, res.body_mut().read_to_string().unwrap())
}

/// The `value` of the input `name` in `html`.
fn value_of(html: &str, name: &str) -> String {
    let at = html
        .find(&format!("name=\"{name}\" value=\""))
        .unwrap_or_else(|| panic!("no {name} in {html}"));
    let rest = &html[at + name.len() + 15..];
    rest[..rest.find('"').unwrap()].to_string()
}

const MISSING_VALIDATION: &str =
    "## Intent\nSay hello.\n\n## Acceptance criteria\n- hello.txt says hello\n\n## Validation\n<!-- a command -->\n";

#[test]
fn a_brief_is_previewed_and_checked_and_only_a_complete_one_is_offered_to_mark_ready() {
    let s = Server::start(Backend::Sqlite);
    let cookie = log_in(&s);
    let tickets = page(&s, &cookie, "/tickets");
    assert!(tickets.contains("href=\"/tickets/new\""), "{tickets}");
    let new = page(&s, &cookie, "/tickets/new");
    for h in [
        "## Intent",
        "## Acceptance criteria",
        "## Validation",
        "## Write scope",
    ] {
        assert!(new.contains(h), "the brief starts from {h}: {new}");
    }
    assert!(!new.contains("id=\"create-ready\""), "{new}");
    let csrf = value_of(&new, "csrf");
    let op = value_of(&new, "op");

    // A brief whose Validation holds only its comment: the lint names it, nothing is offered.
    let (status, checked) = post(
        &s,
        &cookie,
        "/tickets/new",
        &[
            ("csrf", &csrf),
            ("op", &op),
            ("title", "Say hello"),
            ("body", MISSING_VALIDATION),
            ("intent", "check"),
        ],
    );
    assert_eq!(status, 200, "{checked}");
    assert!(
        checked.contains("id=\"lint-missing\">Missing before it can be marked ready: Validation."),
        "{checked}"
    );
    assert!(!checked.contains("id=\"create-ready\""), "{checked}");
    assert!(
        checked.contains("<li>hello.txt says hello</li>"),
        "the preview: {checked}"
    );
    assert!(
        checked.contains("value=\"Say hello\""),
        "what was typed stays"
    );
    assert_eq!(
        s.get("/api/v1/tickets")
            .token(&s.tokens.read)
            .send()
            .expect(200)["tickets"]
            .as_array()
            .unwrap()
            .len(),
        0,
        "a check writes nothing"
    );

    // Created as it is: planning, and marking it ready is refused by the same rule.
    let (status, to) = post(
        &s,
        &cookie,
        "/tickets/new",
        &[
            ("csrf", &csrf),
            ("op", &op),
            ("title", "Say hello"),
            ("body", MISSING_VALIDATION),
            ("intent", "create_ready"),
        ],
    );
    assert_eq!(status, 303);
    let first = to.trim_start_matches("/tickets/").to_string();
    assert_eq!(s.show(&first)["state"], "planning");
    let shown = page(&s, &cookie, &to);
    assert!(shown.contains("created, but not marked ready"), "{shown}");

    // A complete brief with a dependency: offered, created and marked ready.
    let complete = MISSING_VALIDATION.replace("<!-- a command -->", "`test -f hello.txt`");
    let fresh = page(&s, &cookie, "/tickets/new");
    let op2 = value_of(&fresh, "op");
    let (_, checked) = post(
        &s,
        &cookie,
        "/tickets/new",
        &[
            ("csrf", &csrf),
            ("op", &op2),
            ("title", "Say hello twice"),
            ("body", &complete),
            ("depends_on", &first),
            ("intent", "check"),
        ],
    );
    assert!(checked.contains("id=\"lint-ready\""), "{checked}");
    assert!(checked.contains("id=\"create-ready\""), "{checked}");
    assert!(
        checked.contains(&format!("<option value=\"{first}\">")),
        "{checked}"
    );
    let form = [
        ("csrf", csrf.as_str()),
        ("op", op2.as_str()),
        ("title", "Say hello twice"),
        ("body", complete.as_str()),
        ("depends_on", first.as_str()),
        ("intent", "create_ready"),
    ];
    let (status, to) = post(&s, &cookie, "/tickets/new", &form);
    assert_eq!(status, 303);
    let second = to.trim_start_matches("/tickets/").to_string();
    let shown = s.show(&second);
    assert_eq!(shown["state"], "ready", "{shown}");
    assert_eq!(shown["title"], "Say hello twice");
    assert!(
        shown.to_string().contains(&first),
        "the dependency: {shown}"
    );
    // The same form sent again replays: still one ticket of that title.
    let (status, again) = post(&s, &cookie, "/tickets/new", &form);
    assert_eq!((status, again), (303, to));

    // Without the session's token nothing happens.
    let (status, _) = post(
        &s,
        &cookie,
        "/tickets/new",
        &[("title", "x"), ("intent", "create")],
    );
    assert_ne!(status, 303);
}

#[test]
fn an_edit_of_a_planning_ticket_is_checked_before_it_is_saved() {
    let s = Server::start(Backend::Sqlite);
    let id = s.create("Draft", "## Intent\nSomething.\n");
    let cookie = log_in(&s);
    let ticket = page(&s, &cookie, &format!("/tickets/{id}"));
    assert!(
        ticket.contains(&format!("formaction=\"/tickets/{id}/check\"")),
        "{ticket}"
    );
    let csrf = value_of(&ticket, "csrf");
    let (status, checked) = post(
        &s,
        &cookie,
        &format!("/tickets/{id}/check"),
        &[
            ("csrf", &csrf),
            ("op", "edit-1"),
            ("title", "Draft"),
            (
                "body",
                "## Intent\nSomething.\n\n## Acceptence criteria\n- a\n",
            ),
        ],
    );
    assert_eq!(status, 200, "{checked}");
    assert!(
        checked.contains("Missing before it can be marked ready: Acceptance criteria, Validation."),
        "{checked}"
    );
    assert!(
        checked.contains("“Acceptence criteria” is no section yoi knows"),
        "{checked}"
    );
    assert!(
        checked.contains(&format!("action=\"/tickets/{id}/edit\"")),
        "the same form saves: {checked}"
    );
    assert_eq!(
        s.show(&id)["body"].as_str().unwrap().trim(),
        "## Intent\nSomething.",
        "a check saves nothing"
    );
}
