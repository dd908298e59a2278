//! The verifier's attempt: no agent, only the frozen brief's validation commands, each run with
//! `sh -c` in the worktree at the exact commit under test, each its own process group under the
//! step's timeout and the kill ladder.
//!
//! A verifier that ran its commands completes with outcome `done` and one result per command
//! (exit status, duration, whether it timed out, the shared log): the outcome says the checks
//! were run, the results say whether they passed. A stop request during a command fails the
//! attempt, and a lost lease reports nothing. The commands are shell text by design: the
//! brief's author writes them as they would type them.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use yoi_core::report::{CheckResult, Report, ReportOutcome, Usage};

use crate::agent_env::agent_env;
use crate::attempt::{
    confirm_claim, lease_of, passing, prepare_run, step_timeout, stream_log, within_lease, Gave,
    Lease, Reported,
};
use crate::client::{Client, ClientError, Work};
use crate::process::{self, Ended, Spec};
use crate::{sandbox, PodSettings};

/// The verifier (no agent): run the frozen brief's validation commands, each with `sh -c` in
/// the worktree at the exact commit under test, with the profile's timeout and the kill ladder
/// for its process group; report each command's exit status, duration and log.
pub(crate) fn run_verify(
    settings: &PodSettings,
    client: &Client,
    pod: &str,
    work: &Work,
    stop: &AtomicBool,
) -> Result<Reported, String> {
    let a = &work.assignment;
    let run_dir = prepare_run(settings, work)?;
    if !confirm_claim(client, pod, a)? {
        return Ok(Reported::Lost);
    }
    let checks = work
        .packet
        .as_ref()
        .and_then(|p| p.get("checks"))
        .cloned()
        .and_then(|c| serde_json::from_value::<yoi_core::packet::ValidationChecks>(c).ok())
        .unwrap_or_default();
    let confined = settings.sandbox.confine_run(
        &a.role,
        std::path::Path::new(&work.workdir),
        &run_dir,
        &settings.profile.state,
    )?;
    let mut env = agent_env(settings, work, &run_dir, &run_dir.join("none"));
    for (k, v) in &confined.env {
        env.retain(|(ek, _)| ek != k);
        env.push((k.clone(), v.clone()));
    }
    let mut lease = Lease::new(client, pod, work, stop);
    let started = Instant::now();
    let mut results = Vec::new();
    let mut log = String::new();
    for (i, command) in checks.commands.iter().enumerate() {
        let out = run_dir.join(format!("check-{}.log", i + 1));
        let spec = Spec {
            argv: vec!["sh".into(), "-c".into(), command.clone()],
            cwd: PathBuf::from(&work.workdir),
            stdin: None,
            env: env.clone(),
            stdout: out.clone(),
            stderr: out.with_extension("err"),
            timeout: step_timeout(settings, work),
            grace: settings.kill_grace,
            sandbox: confined.wrap.clone(),
            // A validation command is bounded by the step's timeout alone: a quiet build is
            // not a stalled agent.
            stall: None,
        };
        let t = Instant::now();
        let ended = process::run(&spec, &mut lease).map_err(|e| format!("starting sh: {e}"))?;
        let exit_code = match ended {
            Ended::Exited(c) => Some(c),
            _ => None,
        };
        let stderr = std::fs::read_to_string(&spec.stderr).unwrap_or_default();
        if let Some(why) = sandbox::setup_failure(exit_code, &stderr) {
            return Err(why);
        }
        if ended == Ended::LeaseLost || lease.lost {
            return Ok(Reported::Lost);
        }
        if ended == Ended::Stopped {
            return Err("the pod was stopped during verification".into());
        }
        let r = CheckResult {
            command: command.clone(),
            exit_code,
            duration_ms: t.elapsed().as_millis() as u64,
            timed_out: ended == Ended::TimedOut,
            log: None,
        };
        log.push_str(&format!(
            "$ {command}\n{}{}[exit {:?}{} after {} ms]\n\n",
            std::fs::read_to_string(&spec.stdout).unwrap_or_default(),
            stderr,
            r.exit_code,
            if r.timed_out { ", timed out" } else { "" },
            r.duration_ms
        ));
        results.push(r);
    }
    let log_path = stream_log(client, pod, a, &log, "");
    for r in &mut results {
        r.log = log_path.clone();
    }
    let failed: Vec<&CheckResult> = results.iter().filter(|r| !r.passed()).collect();
    let summary = match (results.len(), failed.first()) {
        (0, _) => format!(
            "no validation commands to run; {} manual check(s) left to the reviewer",
            checks.manual.len()
        ),
        (n, None) => format!("all {n} validation command(s) passed"),
        (n, Some(f)) => format!(
            "{} of {n} validation command(s) failed; first: `{}` ({})",
            failed.len(),
            f.command,
            match (f.timed_out, f.exit_code) {
                (true, _) => "timed out".to_string(),
                (_, Some(c)) => format!("exit {c}"),
                (_, None) => "killed".to_string(),
            }
        ),
    };
    let report = Report {
        outcome: ReportOutcome::Done,
        summary: Some(summary),
        usage: Some(Usage {
            wall_ms: started.elapsed().as_millis() as u64,
            agent: Some("verify".into()),
            ..Usage::default()
        }),
        log: log_path,
        checks: results,
        manual_checks: checks.manual,
        sandbox: Some(confined.policy.summary()),
        agent: Some(settings.agent_label.clone()),
        ..Report::default()
    };
    // Reported again while the claim may be live, after a network drop or a restart.
    let sent = within_lease(
        client,
        pod,
        a,
        (lease.answered, lease_of(work)),
        3,
        "reporting the verification",
        passing,
        || client.complete(pod, &a.id, a.fence, &report),
    );
    match sent {
        Ok(_) => Ok(Reported::Completed),
        Err(Gave::Lost | Gave::Up(ClientError::Lost { .. })) => Ok(Reported::Lost),
        Err(Gave::Up(e)) => Err(e.to_string()),
    }
}
