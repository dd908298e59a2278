//! One agent's attempt at a step: fill the profile's argv, run it with its prompt file,
//! environment and timeout, read what it said against the output contract, settle its commits
//! when it codes, and complete or fail the assignment with the report.
//!
//! The outcome comes from the contract's `YOI-RESULT` line, never from the exit code alone: a
//! missing or malformed contract fails the attempt whatever the exit code, and so do a timeout,
//! a stop request and an error the agent itself reported. A reviewer's `done` counts only with
//! a verdict and an untouched worktree. An attempt whose lease was lost reports nothing.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;
use yoi_core::Role;

use yoi_core::report::{CostSource, Report, ReportOutcome, Usage, Verdict};

use crate::agent_env::agent_env;
use crate::attempt::{confirm_claim, prepare_run, step_timeout, stream_log, Lease, Reported};
use crate::client::{Client, ClientError, Work};
use crate::process::{self, Ended, Spec};
use crate::prompt::render_prompt;
use crate::worktree::{bring_in_commits, review_problem, settle_commits};
use crate::{contract, profiles, sandbox, PodSettings};

pub(crate) fn run_one(
    settings: &PodSettings,
    client: &Client,
    pod: &str,
    work: &Work,
    stop: &AtomicBool,
) -> Result<Reported, String> {
    let a = &work.assignment;
    let run_dir = prepare_run(settings, work)?;
    let skills = client.skills().unwrap_or_default();
    let prompt_file = run_dir.join("prompt.md");
    std::fs::write(&prompt_file, render_prompt(work, &skills)).map_err(|e| e.to_string())?;

    // Do not start the agent until the server confirms the claim.
    if !confirm_claim(client, pod, a)? {
        return Ok(Reported::Lost);
    }
    let p = &settings.profile;
    let vars = profiles::Vars {
        program: p.program.clone(),
        prompt_file: prompt_file.display().to_string(),
        worktree: work.workdir.clone(),
        run_dir: run_dir.display().to_string(),
        ticket: work.ticket.clone(),
        step: a.step.clone(),
        attempt: a.attempt.to_string(),
        assignment: a.id.clone(),
        model: p.model.clone(),
        follow_up_file: String::new(),
    };
    let template = if Role::Reviewer.is(&a.role) && !p.reviewer_argv.is_empty() {
        &p.reviewer_argv
    } else {
        &p.argv
    };
    let model_args: &[String] = if p.model.is_some() {
        &p.model_argv
    } else {
        &[]
    };
    let argv = template
        .iter()
        .chain(model_args)
        .chain(&p.extra_args)
        .map(|e| profiles::fill(e, &vars))
        .collect::<Result<Vec<_>, _>>()?;
    let confined = settings.sandbox.confine_run(
        &a.role,
        std::path::Path::new(&work.workdir),
        &run_dir,
        &p.state,
    )?;
    let mut env = agent_env(settings, work, &run_dir, &prompt_file);
    for (k, v) in &confined.env {
        env.retain(|(ek, _)| ek != k);
        env.push((k.clone(), v.clone()));
    }
    let spec = Spec {
        argv,
        cwd: PathBuf::from(&work.workdir),
        stdin: (p.stdin != "null").then(|| prompt_file.clone()),
        env,
        stdout: run_dir.join("stdout.log"),
        stderr: run_dir.join("stderr.log"),
        timeout: step_timeout(settings, work),
        grace: settings.kill_grace,
        sandbox: confined.wrap.clone(),
    };
    let mut lease = Lease::new(client, pod, work, stop);
    let started = Instant::now();
    tracing::info!(assignment = %a.id, ticket = %work.ticket, attempt = a.attempt, "running the agent");
    let ended = process::run(&spec, &mut lease)
        .map_err(|e| format!("starting {:?}: {e}", spec.argv.first()))?;
    let wall_ms = started.elapsed().as_millis() as u64;
    let stdout = std::fs::read_to_string(&spec.stdout).unwrap_or_default();
    let stderr = std::fs::read_to_string(&spec.stderr).unwrap_or_default();
    if ended == Ended::LeaseLost || lease.lost {
        return Ok(Reported::Lost);
    }
    let log = stream_log(client, pod, a, &stdout, &stderr);
    let result_file = p
        .result_file
        .as_deref()
        .and_then(|f| profiles::fill(f, &vars).ok())
        .and_then(|f| std::fs::read_to_string(f).ok());
    let said = contract::read_output(&p.output, &stdout, result_file.as_deref());
    let usage = Usage {
        wall_ms,
        tokens_in: said.tokens_in,
        tokens_out: said.tokens_out,
        tokens_cached: said.tokens_cached,
        cost_usd: said.cost_usd,
        cost_source: if said.cost_usd.is_some() {
            CostSource::Reported
        } else {
            CostSource::None
        },
        agent: Some(settings.profile_name.clone()),
        model: p.model.clone(),
    };
    let exit_code = match ended {
        Ended::Exited(c) => Some(c),
        _ => None,
    };
    let failure = match ended {
        Ended::TimedOut => Some(format!(
            "the agent ran past its timeout of {}s and was killed",
            p.timeout_secs
        )),
        Ended::Stopped => Some("the pod was stopped before the agent finished".to_string()),
        _ => sandbox::setup_failure(exit_code, &stderr).or_else(|| said.agent_error.clone()),
    };
    let contract = contract::read_contract(&said.final_message);
    let (commit, agent_commits) = if Role::Coder.is(&a.role) {
        bring_in_commits(work, &confined.objects)?;
        settle_commits(work, &settings.profile_name)?
    } else {
        (None, 0)
    };
    let mut report = Report {
        outcome: ReportOutcome::Failed,
        summary: None,
        commit,
        agent_commits,
        usage: Some(usage),
        log,
        exit_code,
        sandbox: Some(confined.policy.summary()),
        ..Report::default()
    };
    let reason = match (&failure, &contract) {
        (Some(f), _) => Some(f.clone()),
        (None, Err(e)) => Some(match exit_code {
            Some(c) if c != 0 => format!("the agent exited with {c} and {e}"),
            _ => e.clone(),
        }),
        (None, Ok(c)) => {
            report.outcome = c.result;
            report.summary = c.summary.clone();
            report.findings = c.findings.clone();
            report.verdict = c.verdict.as_deref().and_then(Verdict::parse);
            if Role::Reviewer.is(&a.role) && c.result == ReportOutcome::Done {
                review_problem(work, c.verdict.as_deref())
            } else {
                None
            }
        }
    };
    let sent = match reason {
        None => client
            .complete(pod, &a.id, a.fence, &report)
            .map(|_| Reported::Completed),
        Some(reason) => client
            .fail(pod, &a.id, a.fence, &reason, true, Some(&report))
            .map(|_| Reported::Failed),
    };
    match sent {
        Ok(r) => Ok(r),
        Err(ClientError::Lost { .. }) => Ok(Reported::Lost),
        Err(e) => Err(e.to_string()),
    }
}
