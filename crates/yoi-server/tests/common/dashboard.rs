//! The dashboard as a browser without JavaScript uses it: a session from the one-time login
//! link the API makes for the human token, and its pages.

use super::Server;

/// An HTTP client that does not follow redirects and returns every status as a response.
pub fn browser() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into()
}

/// A dashboard session for the human token's person: the `name=value` of its cookie.
pub fn log_in(s: &Server) -> String {
    let link = s
        .post("/api/v1/dashboard/login")
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let url = format!("{}{}", s.base, link["path"].as_str().unwrap());
    let res = browser().get(&url).call().unwrap();
    assert_eq!(res.status(), 303, "the login link starts a session");
    let set = res.headers()["set-cookie"].to_str().unwrap().to_string();
    set.split(';').next().unwrap().to_string()
}

/// The HTML of dashboard page `path`, which must answer 200.
pub fn page(s: &Server, cookie: &str, path: &str) -> String {
    let mut res = browser()
        .get(&format!("{}{path}", s.base))
        .header("Cookie", cookie)
        .call()
        .unwrap();
    assert_eq!(res.status(), 200, "{path}");
    res.body_mut().read_to_string().unwrap()
}

/// The CSRF token of the first form in `html`.
pub fn csrf(html: &str) -> String {
    html.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("a form with the CSRF token")
        .to_string()
}
