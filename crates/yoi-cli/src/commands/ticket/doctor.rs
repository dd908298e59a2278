//! `yoi ticket doctor [--json] [--fix]`: the engine's one doctor (the same findings as
//! `GET /api/v1/doctor`), printed; exit 1 when errors remain. With the database index attached,
//! the index and outbox checks run too, and `--fix` rebuilds a drifted index. The index is not
//! caught up with the files on the way in, as other commands do: doctor reads every file anyway
//! and catches up itself when it finds the index behind them.

use crate::cli::DoctorArgs;
use crate::context::Env;
use crate::error::CliError;
use crate::output;

pub fn run(env: &Env, a: &DoctorArgs) -> Result<(), CliError> {
    let ws = env.workspace_behind("yoi ticket doctor")?;
    let report = yoi_engine::doctor::run_full(&ws, a.fix)?;
    if a.json {
        output::json(&report);
    } else {
        print_text(&report);
    }
    if report.ok {
        Ok(())
    } else {
        Err(CliError::DoctorFailed)
    }
}

/// The report as text: a large tree's report is tens of thousands of lines.
fn print_text(report: &yoi_engine::store::doctor::Report) {
    output::to_stdout(|out| {
        for f in &report.fixed {
            writeln!(out, "fixed: {f}")?;
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
            writeln!(out, "{sev}[{}] {place}: {}", f.check, f.seen)?;
            writeln!(out, "    expected: {}", f.expected)?;
            if let Some(fix) = &f.fix {
                writeln!(out, "    fix: {fix}")?;
            }
        }
        writeln!(
            out,
            "{}: {} errors, {} warnings",
            if report.ok { "ok" } else { "problems found" },
            report.errors,
            report.warnings
        )
    });
}
