//! The webhook receiver `POST /forge/github/events` of a real `yoi serve` (docs/forge.md), fed
//! the real example payloads of npm `@octokit/webhooks-examples` (found through
//! `YOI_WEBHOOK_EXAMPLES`; the test fails without it): signed ones are accepted, a wrong or
//! missing signature is 401 and recorded nowhere, a redelivery does nothing, an event yoi does
//! not use is acknowledged and ignored, and a body over 25 MiB is 413. Delivery ids and the
//! check results webhooks carry are kept in the database: a redelivery after a restart does
//! nothing, and of reordered results the newer stays. `POST /api/v1/forge/sync` runs a pass
//! for a person only.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Instant;

use common::{Backend, Server};
use serde_json::Value;
use yoi_core::forge::ForgeSection;

const SECRET: &str = "webhook-secret-for-tests";
const PATH: &str = "/forge/github/events";

fn examples() -> Vec<Value> {
    let path = std::env::var("YOI_WEBHOOK_EXAMPLES").unwrap_or_else(|_| {
        panic!(
            "YOI_WEBHOOK_EXAMPLES is not set: it must name @octokit/webhooks-examples' \
             api.github.com/index.json. Install it with `npm install --prefix target/octokit \
             @octokit/webhooks-examples@7.6.1` (.ci/run does)"
        )
    });
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_slice::<Vec<Value>>(&text).unwrap()
}

fn private(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn section() -> ForgeSection {
    let mut f = ForgeSection::new("acme/widgets");
    // Nothing is asked of the forge here: no ticket has a pull request.
    f.api_url = "http://127.0.0.1:9".into();
    f.token_file = Some(".yoi/local/github-token".into());
    f.webhook_secret_file = Some(".yoi/local/webhook-secret".into());
    f
}

fn server() -> Server {
    Server::start_configured(Backend::Sqlite, |ws| {
        let local = ws.root().join(".yoi/local");
        std::fs::create_dir_all(&local).unwrap();
        private(&local.join("github-token"), "ghp_webhook_test");
        private(&local.join("webhook-secret"), SECRET);
        ws.config.forge = Some(section());
    })
}

fn sign(body: &[u8]) -> String {
    format!(
        "sha256={}",
        yoi_core::hmac_sha256_hex(SECRET.as_bytes(), body)
    )
}

fn deliver(
    s: &Server,
    event: &str,
    id: &str,
    body: &[u8],
    signature: Option<&str>,
) -> common::Resp {
    let mut r = s
        .post(PATH)
        .header("X-GitHub-Event", event)
        .header("X-GitHub-Delivery", id)
        .raw(body.to_vec());
    if let Some(sig) = signature {
        r = r.header("X-Hub-Signature-256", sig);
    }
    r.send()
}

#[test]
fn the_real_example_payloads_signed_are_accepted() {
    let s = server();
    let all = examples();
    let mut n = 0;
    let mut times = Vec::new();
    for name in [
        "pull_request",
        "pull_request_review",
        "check_run",
        "check_suite",
        "status",
        "issues",
        "issue_comment",
    ] {
        let kind = all.iter().find(|k| k["name"] == name).unwrap();
        let list = kind["examples"].as_array().unwrap();
        assert!(!list.is_empty(), "{name}");
        for example in list {
            n += 1;
            let body = serde_json::to_vec(example).unwrap();
            let started = Instant::now();
            let r = deliver(&s, name, &format!("d-{n}"), &body, Some(&sign(&body)));
            times.push(started.elapsed());
            assert_eq!(r.status, 202, "{name}: {}", r.text);
            assert_eq!(r.json["status"], "accepted");
        }
    }
    times.sort();
    let p99 = times[(times.len() * 99 / 100).min(times.len() - 1)];
    eprintln!(
        "{} deliveries; the receiver's answer p99 {:?}",
        times.len(),
        p99
    );
    s.stop();
}

#[test]
fn a_bad_signature_a_redelivery_an_unknown_event_and_an_oversized_body() {
    let s = server();
    let all = examples();
    let pr = &all.iter().find(|k| k["name"] == "pull_request").unwrap()["examples"][0];
    let body = serde_json::to_vec(pr).unwrap();
    // Wrong and missing signatures: 401, and the delivery is not remembered.
    let r = deliver(
        &s,
        "pull_request",
        "same",
        &body,
        Some(&sign(b"other body")),
    );
    assert_eq!(r.status, 401, "{}", r.text);
    let r = deliver(&s, "pull_request", "same", &body, None);
    assert_eq!(r.status, 401);
    let r = deliver(&s, "pull_request", "same", &body, Some("sha256=zz"));
    assert_eq!(r.status, 401);
    // The same delivery properly signed is the first one recorded; its redelivery is a no-op.
    let r = deliver(&s, "pull_request", "same", &body, Some(&sign(&body)));
    assert_eq!(r.status, 202, "{}", r.text);
    let r = deliver(&s, "pull_request", "same", &body, Some(&sign(&body)));
    assert_eq!(r.status, 200);
    assert_eq!(r.json["status"], "duplicate");
    // An event yoi does not use, with its real payload: acknowledged and ignored.
    let star = &all.iter().find(|k| k["name"] == "star").unwrap()["examples"][0];
    let body = serde_json::to_vec(star).unwrap();
    let r = deliver(&s, "star", "star-1", &body, Some(&sign(&body)));
    assert_eq!(r.status, 202);
    assert_eq!(r.json["status"], "ignored");
    // Over 25 MiB: 413, whatever the signature.
    let big = vec![b' '; 25 * 1024 * 1024 + 1];
    let r = deliver(&s, "pull_request", "big", &big, Some(&sign(&big)));
    assert_eq!(r.status, 413);
    s.stop();
}

#[test]
fn a_forge_whose_token_file_others_can_read_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    yoi_store::init(dir.path(), "main").unwrap();
    let mut ws = yoi_store::Workspace::open(dir.path()).unwrap();
    std::fs::write(dir.path().join("token"), "ghp_x").unwrap();
    std::fs::set_permissions(
        dir.path().join("token"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let mut f = ForgeSection::new("acme/widgets");
    f.token_file = Some("token".into());
    ws.config.forge = Some(f);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let err = rt
        .block_on(yoi_server::serve(
            ws,
            yoi_server::ServeOptions {
                orchestrate: false,
                listen: "127.0.0.1:0".parse().unwrap(),
                pods: None,
            },
            async {},
            |_, _| panic!("it must not start"),
        ))
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("[forge]") && text.contains("chmod 600"),
        "{text}"
    );
    assert!(!text.contains("ghp_x"));
}

/// `POST /api/v1/forge/sync` runs a pass of the forge driver for a person and for nobody else;
/// without `[forge]`, or with `import_only` and no `import_label`, it is refused (422) with the
/// words `yoi forge sync` prints.
#[test]
fn a_forge_pass_is_run_for_a_person_only_and_refused_without_a_forge() {
    let s = server();
    for scope in ["read", "pod:coder", "pod:intake", "pod:orchestrator"] {
        s.post("/api/v1/forge/sync")
            .token(s.tokens.for_scope(scope))
            .send()
            .expect_error(403, "forbidden");
    }
    s.post("/api/v1/forge/sync")
        .send()
        .expect_error(401, "unauthorized");
    // Nothing is pending and no label is imported: a pass that did nothing.
    let done = s
        .post("/api/v1/forge/sync")
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let none: Vec<String> = Vec::new();
    assert_eq!(
        done,
        serde_json::json!({
            "imported": {"created": none, "edited": none, "refused": none},
            "pass": {"pushed": none, "opened": none, "waiting": none, "merged": none, "sent_back": none, "retried": none},
        })
    );
    // A parameter that does not parse is a JSON 400, like every route's.
    s.post("/api/v1/forge/sync?import_only=maybe")
        .token(&s.tokens.human)
        .send()
        .expect_error(400, "invalid");
    let e = s
        .post("/api/v1/forge/sync?import_only=true")
        .token(&s.tokens.human)
        .send()
        .expect_error(422, "refused");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("names no import_label"),
        "{e}"
    );
    s.stop();
    let plain = Server::start(Backend::Sqlite);
    let e = plain
        .post("/api/v1/forge/sync")
        .token(&plain.tokens.human)
        .send()
        .expect_error(422, "refused");
    assert_eq!(
        e["message"],
        "no [forge] section in .yoi/workspace.toml: see docs/forge.md to set one up"
    );
    plain.stop();
}

#[test]
fn a_tickets_forge_status_is_served_to_readers() {
    let s = server();
    let id = s.create("Say hello", common::COMPLETE_BRIEF);
    let st = s
        .get(&format!("/api/v1/tickets/{id}/forge"))
        .token(&s.tokens.read)
        .send()
        .expect(200);
    assert_eq!(st["ticket"], id.as_str());
    assert_eq!(st["configured"], true);
    assert_eq!(st["state"], "none");
    assert_eq!(st["events"], serde_json::json!([]));
    s.get(&format!("/api/v1/tickets/{id}/forge"))
        .send()
        .expect_error(401, "unauthorized");
    s.get("/api/v1/tickets/NOPE/forge")
        .token(&s.tokens.read)
        .send()
        .expect_error(404, "not_found");
    s.stop();
}

#[test]
fn reordered_check_results_keep_the_newer_and_a_redelivery_after_a_restart_does_nothing() {
    let s = server();
    let sha = "c".repeat(40);
    let status = |state: &str, at: &str| {
        serde_json::to_vec(&serde_json::json!({
            "id": 1, "sha": sha, "name": "acme/widgets", "context": "ci", "state": state,
            "description": null, "target_url": "https://ci.example/1",
            "created_at": at, "updated_at": at,
        }))
        .unwrap()
    };
    let pending = status("pending", "2026-12-01T10:00:01Z");
    let success = status("success", "2026-12-01T10:00:05Z");
    // The newer result arrives first, the older one after it.
    let r = deliver(&s, "status", "st-new", &success, Some(&sign(&success)));
    assert_eq!(r.status, 202, "{}", r.text);
    let r = deliver(&s, "status", "st-old", &pending, Some(&sign(&pending)));
    assert_eq!(r.status, 202, "{}", r.text);
    let kept = |admin: &common::Admin| admin.rt.block_on(admin.db.forge_checks_of(&sha)).unwrap();
    let now = kept(s.admin());
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].conclusion.as_str(), "success");
    assert_eq!(now[0].url.as_deref(), Some("https://ci.example/1"));
    // A bad signature keeps nothing.
    let failure = status("failure", "2026-12-01T10:00:09Z");
    let r = deliver(&s, "status", "st-bad", &failure, Some(&sign(b"x")));
    assert_eq!(r.status, 401);
    assert_eq!(kept(s.admin())[0].conclusion.as_str(), "success");
    // After a restart, both deliveries are known: redelivered, they do nothing.
    let stopped = s.stop();
    let s = stopped.restart(false, |ws| ws.config.forge = Some(section()));
    for (id, body) in [("st-new", &success), ("st-old", &pending)] {
        let r = deliver(&s, "status", id, body, Some(&sign(body)));
        assert_eq!(r.status, 200, "{id}: {}", r.text);
        assert_eq!(r.json["status"], "duplicate");
    }
    // The delivery the bad signature carried was never remembered: signed, it is taken.
    let r = deliver(&s, "status", "st-bad", &failure, Some(&sign(&failure)));
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(kept(s.admin())[0].conclusion.as_str(), "failure");
    s.stop();
}
