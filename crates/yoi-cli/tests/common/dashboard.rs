//! The dashboard as a browser without JavaScript uses it: a session from `yoi dashboard`'s
//! one-time link, pages, and forms posted with the page's CSRF token.

use super::Repo;

/// A dashboard session started with `yoi dashboard`'s one-time link.
pub struct Dashboard {
    agent: ureq::Agent,
    cookie: String,
    base: String,
}

impl Dashboard {
    pub fn login(repo: &Repo) -> Dashboard {
        let out = repo.yoi(&["dashboard", "--no-open"]).ok();
        let link = out
            .stdout
            .split_whitespace()
            .find(|w| w.contains("/login?code="))
            .unwrap_or_else(|| panic!("a login link: {}", out.stdout))
            .to_string();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .into();
        let res = agent.get(&link).call().unwrap();
        assert_eq!(res.status(), 303, "the login link starts a session");
        let cookie = res.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        let base = link.split("/login").next().unwrap().to_string();
        Dashboard {
            agent,
            cookie,
            base,
        }
    }

    pub fn page(&self, path: &str) -> String {
        let mut res = self
            .agent
            .get(&format!("{}{path}", self.base))
            .header("Cookie", &self.cookie)
            .call()
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        res.body_mut().read_to_string().unwrap()
    }

    /// Submit the form of page `from` that posts to `action`, with `fields` and the page's
    /// CSRF token, as a browser does; the answer's status and where it sends the browser.
    pub fn submit(&self, from: &str, action: &str, fields: &[(&str, &str)]) -> (u16, String) {
        let page = self.page(from);
        assert!(
            page.contains(&format!("action=\"{action}\"")),
            "{from} has a form posting to {action}"
        );
        let csrf = page
            .split("name=\"csrf\" value=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or_else(|| panic!("{from} has a CSRF token"))
            .to_string();
        let mut all: Vec<(&str, &str)> = fields.to_vec();
        all.push(("csrf", &csrf));
        let body = serde_urlencoded::to_string(&all).unwrap();
        let res = self
            .agent
            .post(&format!("{}{action}", self.base))
            .header("Cookie", &self.cookie)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .send(body.as_bytes())
            .unwrap();
        let to = res
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .unwrap_or_default()
            .to_string();
        (res.status().as_u16(), to)
    }
}
