//! schemathesis's response-conformance check can fail (issue 41): against a live server it
//! passes with the served document, and fails when the test serves one deliberately wrong
//! answer — the real server's `/healthz` answer with one field more, which the closed `Health`
//! schema does not name — under the same document. The bounded run in `.ci/run` keeps every
//! check; this test shows that one of them is not vacuous, at the cost of two one-request runs.
//!
//! It runs the real schemathesis: `SCHEMATHESIS`, else `target/st-venv/bin/schemathesis`,
//! which `.ci/run` installs from PyPI.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Backend, Server};
use serde_json::{json, Value};

fn schemathesis() -> PathBuf {
    if let Ok(p) = std::env::var("SCHEMATHESIS") {
        return PathBuf::from(p);
    }
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap();
    let p = target.join("st-venv/bin/schemathesis");
    assert!(
        p.is_file(),
        "this test runs schemathesis: `python3 -m venv target/st-venv && target/st-venv/bin/pip install schemathesis==4.32.5`, or set SCHEMATHESIS (.ci/run does)"
    );
    p
}

/// Run schemathesis's response-conformance check on `GET /healthz` at `base` with `doc`; its
/// output, and whether it passed.
fn check_healthz(base: &str, doc: &Value, dir: &Path, name: &str) -> (bool, String) {
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, serde_json::to_string(doc).unwrap()).unwrap();
    let out = Command::new(schemathesis())
        .arg("run")
        .arg(&file)
        .args(["--url", base])
        .args(["--include-path", "/healthz"])
        .args(["--checks", "response_schema_conformance"])
        .args(["--phases", "fuzzing", "--max-examples", "1"])
        .args(["--no-color", "--warnings", "off"])
        .current_dir(dir)
        .output()
        .expect("schemathesis runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// A server of this test that answers `GET /healthz` wrongly: with what the real server at
/// `real` answers, plus a field no schema names. Its address.
fn wrong_healthz(real: &str) -> String {
    let upstream = format!("{real}/healthz");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let answer = move || {
                let upstream = upstream.clone();
                async move {
                    let text = tokio::task::spawn_blocking(move || {
                        ureq::get(&upstream)
                            .call()
                            .unwrap()
                            .body_mut()
                            .read_to_string()
                            .unwrap()
                    })
                    .await
                    .unwrap();
                    let mut health: Value = serde_json::from_str(&text).unwrap();
                    health["surprise"] = json!(true);
                    axum::Json(health)
                }
            };
            let app = axum::Router::new().route("/healthz", axum::routing::get(answer));
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    base
}

#[test]
fn schemathesis_reports_an_answer_the_document_does_not_describe() {
    let s = Server::start(Backend::Sqlite);
    let dir = tempfile::tempdir().unwrap();
    let doc = yoi_server::openapi::document();
    let (passed, out) = check_healthz(&s.base, &doc, dir.path(), "served");
    assert!(passed, "the served document and the answer agree:\n{out}");

    let (passed, out) = check_healthz(&wrong_healthz(&s.base), &doc, dir.path(), "wrong");
    assert!(
        !passed,
        "schemathesis passed an answer with an undocumented field:\n{out}"
    );
    assert!(out.contains("Response violates schema"), "{out}");
    assert!(out.contains("surprise"), "{out}");
}
