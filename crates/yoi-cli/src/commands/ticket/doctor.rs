//! `yoi ticket doctor [--json] [--fix] [--no-cache]`: the engine's one doctor (the same findings as
//! `GET /api/v1/doctor`), printed; exit 1 when errors remain. With the database index attached,
//! the index and outbox checks run too, and `--fix` rebuilds a drifted index. The index is not
//! caught up with the files on the way in, as other commands do: doctor reads every file anyway
//! and catches up itself when it finds the index behind them. In a clone with no database yet
//! (a fresh `git clone`), doctor checks the files alone and makes no database: building a
//! whole index is not a check, and would cost the first doctor of a large clone seconds.

use crate::cli::DoctorArgs;
use crate::context::Env;
use crate::error::CliError;
use crate::output;

pub fn run(env: &Env, a: &DoctorArgs) -> Result<(), CliError> {
    return_freed_memory();
    let (mut ws, index) = env.workspace_behind_if_any("yoi ticket doctor")?;
    if a.no_cache {
        ws.config.doctor.cache = false;
    }
    let report = yoi_engine::doctor::run_full(&ws, index.as_ref(), a.fix)?;
    if a.json {
        output::json(&report);
    } else {
        print_text(&report);
    }
    let ok = report.ok;
    // The process ends next; freeing a large tree's tens of thousands of findings one by one
    // would only delay that.
    std::mem::forget(report);
    if ok {
        Ok(())
    } else {
        Err(CliError::DoctorFailed)
    }
}

/// Have the allocator hand memory freed in large blocks back to the system. glibc raises its
/// trim threshold each time a large block is freed, and then keeps what a pass over a large
/// tree freed on the way (file texts, each span's rows): about 4 MiB of the peak at 10,000
/// tickets. A fixed threshold (its starting value) ends that.
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
    }
}

/// The report as text: a large tree's report is tens of thousands of lines.
fn print_text(report: &yoi_engine::doctor::Report) {
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
