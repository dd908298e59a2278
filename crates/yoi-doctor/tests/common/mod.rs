//! Doctor as the tests run it: every finding must name a documented check, say what was seen and
//! expected, and how to fix it, and the report's counts must agree with its findings.

#![allow(dead_code)]

use yoi_doctor::{self as doctor, Report, CHECKS};
use yoi_store::Workspace;

/// `doctor::run(ws, fix)` with the invariants above asserted on the report.
pub fn check(ws: &Workspace, fix: bool) -> Report {
    let report = doctor::run(ws, fix).unwrap();
    for f in &report.findings {
        assert!(
            CHECKS.iter().any(|c| c.id == f.check),
            "undocumented check id {}",
            f.check
        );
        assert!(!f.seen.is_empty() && !f.expected.is_empty(), "{f:?}");
        assert!(f.fix.is_some(), "every finding says how to fix it: {f:?}");
    }
    let errors = report.findings.iter().filter(|f| f.is_error()).count();
    assert_eq!(report.errors, errors);
    assert_eq!(report.warnings, report.findings.len() - errors);
    assert_eq!(report.ok, errors == 0);
    report
}
