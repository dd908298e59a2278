//! What an attempt decided, written into its `assignment` thread event: a reviewer's verdict
//! and each finding, a verifier's validation commands with their exit status and duration, and
//! the prose checks it left to the reviewer. A clone has `.yoi/tickets/` but not
//! `.yoi/local/`, so what sent a ticket to a fix round or to its merge must be in the thread,
//! not only in the database's copy of the report (docs/formats.md).
//!
//! Lists are bounded ([`MAX_ITEMS`] entries of at most [`MAX_CHARS`] characters each, the rest
//! counted), so a runaway report cannot grow a thread without end; the database keeps it whole.

use yoi_core::report::{CheckResult, Report};

/// Entries of one list written to the thread.
pub const MAX_ITEMS: usize = 50;
/// Characters of one entry written to the thread.
pub const MAX_CHARS: usize = 500;

/// The attributes the event gets: `verdict`, and `checks` as `passed/total`.
pub fn attrs(r: &Report) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(v) = r.verdict {
        out.push(("verdict", v.as_str().to_string()));
    }
    if !r.checks.is_empty() {
        let passed = r.checks.iter().filter(|c| c.passed()).count();
        out.push(("checks", format!("{passed}/{}", r.checks.len())));
    }
    out
}

/// The paragraphs added to the event's body (empty when the report decided nothing).
pub fn body(r: &Report) -> String {
    let mut out = String::new();
    if let Some(v) = r.verdict {
        out.push_str(&format!("\n\nVerdict: {}", v.as_str()));
    }
    list(&mut out, "Findings", &r.findings, |f| one_line(f));
    list(&mut out, "Checks", &r.checks, check);
    list(&mut out, "Left to the reviewer", &r.manual_checks, |m| {
        one_line(m)
    });
    out
}

fn list<T>(out: &mut String, title: &str, items: &[T], show: impl Fn(&T) -> String) {
    if items.is_empty() {
        return;
    }
    out.push_str(&format!("\n\n{title}:"));
    for item in items.iter().take(MAX_ITEMS) {
        out.push_str(&format!("\n- {}", show(item)));
    }
    if items.len() > MAX_ITEMS {
        out.push_str(&format!(
            "\n- and {} more (the whole report is in the database)",
            items.len() - MAX_ITEMS
        ));
    }
}

/// `` `cargo test` exited 0 in 1.2 s (log `path`) ``.
fn check(c: &CheckResult) -> String {
    let took = seconds(c.duration_ms);
    let how = match (c.timed_out, c.exit_code) {
        (true, _) => format!("timed out after {took}"),
        (false, Some(code)) => format!("exited {code} in {took}"),
        (false, None) => format!("was killed or could not start, after {took}"),
    };
    let log = c
        .log
        .as_deref()
        .map(|l| format!(" (output: {})", code(l)))
        .unwrap_or_default();
    format!("{} {how}{log}", code(&one_line(&c.command)))
}

fn seconds(ms: u64) -> String {
    format!("{}.{} s", ms / 1000, (ms % 1000) / 100)
}

/// One line, at most [`MAX_CHARS`] characters.
fn one_line(s: &str) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= MAX_CHARS {
        return flat;
    }
    let mut cut: String = flat.chars().take(MAX_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// A Markdown code span that holds `s` whatever backticks it has.
fn code(s: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for ch in s.chars() {
        run = if ch == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use yoi_core::report::Verdict;

    fn run(
        command: &str,
        exit_code: Option<i32>,
        duration_ms: u64,
        timed_out: bool,
    ) -> CheckResult {
        CheckResult {
            command: command.into(),
            exit_code,
            duration_ms,
            timed_out,
            log: None,
        }
    }

    #[test]
    fn a_review_writes_its_verdict_and_every_finding() {
        let r = Report {
            verdict: Some(Verdict::RequestChanges),
            findings: vec!["src/a.rs:3 unwraps a None".into(), "no test\nfor b".into()],
            ..Report::default()
        };
        assert_eq!(
            body(&r),
            "\n\nVerdict: request_changes\n\nFindings:\n- src/a.rs:3 unwraps a None\n- no test for b"
        );
        assert_eq!(attrs(&r), [("verdict", "request_changes".to_string())]);
    }

    #[test]
    fn a_verify_writes_each_command_with_its_exit_status_and_duration() {
        let mut slow = run("sleep 999", None, 600_000, true);
        slow.log = Some(".yoi/local/runs/x/check-2.log".into());
        let r = Report {
            checks: vec![
                run("cargo test", Some(0), 12_345, false),
                slow,
                run("echo `date`", Some(1), 5, false),
                run("missing-tool", None, 0, false),
            ],
            manual_checks: vec!["The page reads well.".into()],
            ..Report::default()
        };
        assert_eq!(
            body(&r),
            "\n\nChecks:\n\
             - `cargo test` exited 0 in 12.3 s\n\
             - `sleep 999` timed out after 600.0 s (output: `.yoi/local/runs/x/check-2.log`)\n\
             - `` echo `date` `` exited 1 in 0.0 s\n\
             - `missing-tool` was killed or could not start, after 0.0 s\n\n\
             Left to the reviewer:\n- The page reads well."
        );
        assert_eq!(attrs(&r), [("checks", "1/4".to_string())]);
    }

    #[test]
    fn long_lists_and_entries_are_bounded_and_counted() {
        let r = Report {
            findings: (0..60)
                .map(|i| format!("{i} {}", "x".repeat(900)))
                .collect(),
            ..Report::default()
        };
        let b = body(&r);
        assert_eq!(
            b.lines().filter(|l| l.starts_with("- ")).count(),
            MAX_ITEMS + 1
        );
        assert!(b.ends_with("- and 10 more (the whole report is in the database)"));
        let first = b.lines().find(|l| l.starts_with("- 0 ")).unwrap();
        assert_eq!(first.chars().count(), 2 + MAX_CHARS);
        assert!(body(&Report::default()).is_empty());
    }
}
