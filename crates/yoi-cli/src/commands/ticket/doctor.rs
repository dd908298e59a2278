//! `yoi ticket doctor [--json] [--fix]`: the engine's one doctor (the same findings as
//! `GET /api/v1/doctor`), printed; exit 1 when errors remain. With the database index attached,
//! the index and outbox checks run too, and `--fix` rebuilds a drifted index.

use crate::cli::DoctorArgs;
use crate::context::Env;
use crate::error::CliError;
use crate::output;

pub fn run(env: &Env, a: &DoctorArgs) -> Result<(), CliError> {
    let ws = env.workspace("yoi ticket doctor")?;
    let report = yoi_engine::doctor::run_full(&ws, a.fix)?;
    if a.json {
        output::json(&report);
    } else {
        for f in &report.fixed {
            println!("fixed: {f}");
        }
        for f in &report.findings {
            let sev = match f.severity {
                yoi_core::finding::Severity::Error => "error",
                yoi_core::finding::Severity::Warning => "warning",
            };
            let place = match (&f.path, f.line) {
                (Some(p), Some(l)) => format!("{p}:{l}"),
                (Some(p), None) => p.clone(),
                _ => f.ticket.clone().unwrap_or_default(),
            };
            println!("{sev}[{}] {place}: {}", f.check, f.seen);
            println!("    expected: {}", f.expected);
            if let Some(fix) = &f.fix {
                println!("    fix: {fix}");
            }
        }
        println!(
            "{}: {} errors, {} warnings",
            if report.ok { "ok" } else { "problems found" },
            report.errors,
            report.warnings
        );
    }
    if report.ok {
        Ok(())
    } else {
        Err(CliError::DoctorFailed)
    }
}
