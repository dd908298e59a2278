//! The one doctor: everything `yoi ticket doctor` and `GET /api/v1/doctor` report, so the two
//! give the same findings for one workspace (`tests/doctor_parity` in the CLI checks it).
//!
//! [`run_full`] is the store's doctor — files, relations, cycles, plan records, worktrees and
//! branches, and with an attached index the index, outbox and assignment checks — plus the
//! skill catalog's findings (invalid, shadowed, unreadable sources). Counts and `ok` are taken
//! over all of them. It never prints and never decides an exit code; `--fix` applies only the
//! store's safe repairs (skills have none).

use yoi_db::DbIndex;
use yoi_store::{StoreError, Workspace};

pub use yoi_doctor::{ticket_findings, Report};

/// Check the workspace (and the database `index`, when the caller has one); with `fix`, first
/// apply the repairs that cannot lose anything.
pub fn run_full(ws: &Workspace, index: Option<&DbIndex>, fix: bool) -> Result<Report, StoreError> {
    let report = yoi_doctor::run_attached(ws, index, fix)?;
    let mut findings = report.findings;
    findings.extend(crate::skills::findings(&crate::skills::load_catalog(ws)));
    Ok(Report::new(findings, report.fixed))
}
