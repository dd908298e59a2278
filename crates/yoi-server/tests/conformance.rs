//! schemathesis's response-conformance check can fail (issue 41): against a live server it
//! passes with the served document, and fails once the document is made to disagree with one
//! answer (the `Health` schema loses the `status` field every `/healthz` answer carries, so the
//! closed object meets a field it does not name). The bounded run in `.ci/run` keeps every
//! check; this test shows that one of them is not vacuous.
//!
//! It runs the real schemathesis: `SCHEMATHESIS`, else `target/st-venv/bin/schemathesis`,
//! which `.ci/run` installs from PyPI.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Backend, Server};

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

/// Run schemathesis's response-conformance check on `GET /healthz` with `doc`; its output, and
/// whether it passed.
fn check_healthz(s: &Server, doc: &serde_json::Value, dir: &Path, name: &str) -> (bool, String) {
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, serde_json::to_string(doc).unwrap()).unwrap();
    let out = Command::new(schemathesis())
        .arg("run")
        .arg(&file)
        .args(["--url", &s.base])
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

#[test]
fn schemathesis_reports_an_answer_the_document_does_not_describe() {
    let s = Server::start(Backend::Sqlite);
    let dir = tempfile::tempdir().unwrap();
    let doc = yoi_server::openapi::document();
    let (passed, out) = check_healthz(&s, &doc, dir.path(), "served");
    assert!(passed, "the served document and the answer agree:\n{out}");

    let mut wrong = doc.clone();
    let health = &mut wrong["components"]["schemas"]["Health"];
    health["properties"]
        .as_object_mut()
        .unwrap()
        .remove("status");
    health["required"] = serde_json::json!([]);
    let (passed, out) = check_healthz(&s, &wrong, dir.path(), "wrong");
    assert!(
        !passed,
        "schemathesis passed an answer with an undocumented field:\n{out}"
    );
    assert!(out.contains("Response violates schema"), "{out}");
}
