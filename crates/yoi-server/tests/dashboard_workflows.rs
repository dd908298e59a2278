//! The dashboard's workflows page against a real server, as a browser without JavaScript uses
//! it (forms and redirects, the session cookie and its CSRF token): each workflow with its
//! flags, requires and how often people invoked it; a workflow's page invokes it on a ticket as
//! the person's `/<slug>` comment; pending offers with their diff, accepted or rejected only by
//! a form that carries the session's token — a forged post writes nothing.

mod common;

use common::dashboard::{browser, csrf, log_in, page};
use common::{Backend, Server};
use serde_json::json;

/// Post a form; the status and where it sends the browser.
fn post(s: &Server, cookie: &str, path: &str, form: &str) -> (u16, String) {
    let res = browser()
        .post(&format!("{}{path}", s.base))
        .header("Cookie", cookie)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .send(form.to_string())
        .unwrap();
    let to = res
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_string())
        .unwrap_or_default();
    (res.status().as_u16(), to)
}

#[test]
fn the_workflows_page_lists_invokes_and_decides_offers() {
    let s = Server::start(Backend::Sqlite);
    let dir = s.root().join(".yoi/workflow");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("precheck.md"),
        "---\ndescription: Check the change first.\nrequires: [yoi-review]\n---\n\nPRECHECK body.\n",
    )
    .unwrap();
    let cookie = log_in(&s);
    let html = page(&s, &cookie, "/workflows");
    assert!(html.contains("href=\"/workflows/precheck\""), "{html}");
    assert!(html.contains("yoi-review"), "requires are shown");
    assert!(html.contains("0 on 0 ticket(s)"), "{html}");
    assert!(html.contains("id=\"offers-empty\""));
    assert!(
        page(&s, &cookie, "/").contains("href=\"/workflows\""),
        "every page links it"
    );

    // Invoke from the workflow's page: the person's comment `/precheck words`.
    let ticket = s.create("Check me", common::COMPLETE_BRIEF);
    let wf = page(&s, &cookie, "/workflows/precheck");
    assert!(wf.contains("PRECHECK body."), "{wf}");
    let token = csrf(&wf);
    let (status, to) = post(
        &s,
        &cookie,
        "/workflows/precheck/invoke",
        &format!("csrf={token}&ticket={ticket}&words=mind+the+login"),
    );
    assert_eq!(
        (status, to.as_str()),
        (303, format!("/tickets/{ticket}#thread").as_str())
    );
    let shown = s.show(&ticket);
    let last = shown["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["body"], "/precheck mind the login", "{last:#}");
    assert!(page(&s, &cookie, "/workflows").contains("1 on 1 ticket(s)"));

    // An offer: the same instruction on three tickets.
    for n in 0..3 {
        let id = s.create(&format!("T{n}"), common::COMPLETE_BRIEF);
        s.post(&format!("/api/v1/tickets/{id}/comments"))
            .token(&s.tokens.human)
            .json(json!({ "body": "Update the changelog under Unreleased before review." }))
            .send()
            .expect(200);
    }
    let found = s
        .post("/api/v1/workflow-offers/detect")
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let id = found["offered"][0]["id"].as_str().unwrap().to_string();
    let target = found["offered"][0]["target"].as_str().unwrap().to_string();
    let html = page(&s, &cookie, "/workflows");
    assert!(html.contains(&format!("id=\"o-{id}\"")), "{html}");
    assert!(html.contains("id=\"offers-pending\">1<"), "{html}");
    assert!(
        html.contains("<span class=\"dadd\">+ Update the changelog"),
        "{html}"
    );

    // Forged: no token, a wrong token. Nothing is written.
    let path = format!("/workflows/offers/{id}/accept");
    assert_eq!(post(&s, &cookie, &path, "").0, 403);
    assert_eq!(post(&s, &cookie, &path, "csrf=0123456789abcdef").0, 403);
    assert!(!s.root().join(&target).exists());

    let token = csrf(&html);
    let (status, to) = post(&s, &cookie, &path, &format!("csrf={token}"));
    assert_eq!((status, to), (303, format!("/workflows#o-{id}")));
    assert!(s.root().join(&target).is_file());
    let html = page(&s, &cookie, "/workflows");
    assert!(html.contains("accepted; "), "the flash says so: {html}");
    assert!(html.contains("data-status=\"accepted\""), "{html}");
    assert!(
        !html.contains(&format!("id=\"accept-{id}\"")),
        "no control once decided"
    );
}
