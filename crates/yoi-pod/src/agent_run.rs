//! One agent's attempt at a step: fill the profile's argv, run it with its prompt file,
//! environment and timeout, read what it said against the output contract, settle its commits
//! when it codes, and complete or fail the assignment with the report.
//!
//! The outcome comes from the contract's `YOI-RESULT` line, never from the exit code alone: a
//! malformed contract fails the attempt whatever the exit code, and so do a timeout, a stop
//! request and an error the agent itself reported. A reviewer's `done` counts only with a
//! verdict and an untouched worktree. An attempt whose lease was lost reports nothing.
//!
//! An agent that exits 0 and forgets its trailer (no `YOI-RESULT` line, or a reviewer's `done`
//! without its verdict) is asked once for it in a short follow-up turn, when its profile says
//! how to continue a conversation: the same sandbox, environment, worktree and run folder as
//! the first turn, only the argv, stdin, output files and timeout differ, and its usage is
//! added to the attempt's. Without a contract after that, the profile's rule decides
//! ([`ContractRule`]): `strict` fails the attempt; `lenient` completes a coder's attempt that
//! changed something as `done`, flagged `contract_missing`, with the last paragraph of its
//! final message as the summary, and fails one that changed nothing. A reviewer never passes
//! without an explicit verdict.
//!
//! A coder's attempt that fails for a reason that is not about its change (its contract, its
//! timeout, a stop, an error its agent reported) after leaving commits says so
//! (`keep_work`), and the server starts the next attempt from them.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use yoi_agent::profile::{AgentProfile, ContractRule, FOLLOW_UP_TIMEOUT_SECS};
use yoi_core::Role;

use yoi_core::report::{CostSource, Report, ReportOutcome, Usage, Verdict};

use crate::agent_env::agent_env;
use crate::attempt::{
    confirm_claim, lease_of, passing, prepare_run, step_timeout, stream_log, within_lease, Gave,
    Lease, Reported,
};
use crate::client::{Client, ClientError, Work};
use crate::process::{self, Ended, Spec, Watch};
use crate::prompt::render_prompt;
use crate::worktree::{bring_in_commits, review_problem, settle_commits};
use crate::{contract, profiles, sandbox, PodSettings};

/// Why an attempt could not be run at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RunError {
    /// The agent cannot run on this pod — its program is not installed, its profile's endpoint
    /// is wrong — so handing the step out again would fail the same way: a person decides
    /// (`agent_unusable` in the inbox, docs/inbox.md).
    Unusable(String),
    /// Anything else (a folder that could not be written, the server out of reach).
    Other(String),
}

impl From<String> for RunError {
    fn from(e: String) -> RunError {
        RunError::Other(e)
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Unusable(e) | RunError::Other(e) => f.write_str(e),
        }
    }
}

/// Whether `program` is there to run: a path naming a file, or a name found on the `PATH` of
/// the agent's environment `env` (what `yoi agent check` calls installed).
fn installed(program: &str, env: &[(String, String)]) -> bool {
    if program.contains('/') {
        return std::path::Path::new(program).is_file();
    }
    env.iter()
        .find(|(k, _)| k == "PATH")
        .is_some_and(|(_, path)| {
            path.split(':')
                .any(|d| !d.is_empty() && std::path::Path::new(d).join(program).is_file())
        })
}

pub(crate) fn run_one(
    settings: &PodSettings,
    client: &Client,
    pod: &str,
    work: &Work,
    stop: &AtomicBool,
    claimed: Instant,
) -> Result<Reported, RunError> {
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
    // The endpoint the profile names, in what this CLI reads (added as written: a URL is no
    // placeholder).
    let yoi_agent::profile::EndpointSettings {
        args: mut endpoint_args,
        env: mut endpoint_env,
        files: mut endpoint_files,
        model: endpoint_model,
    } = p.endpoint_settings(&settings.env).map_err(|e| {
        RunError::Unusable(format!("agent profile `{}`: {e}", settings.profile_name))
    })?;
    // yoi's MCP server, for the CLIs that take it by flag or file (docs/mcp.md).
    let mcp = p.mcp_settings(&settings.server);
    endpoint_args.extend(mcp.args);
    endpoint_env.extend(mcp.env);
    endpoint_files.extend(mcp.files);
    if let Some(home) = gemini_without_home(settings, &endpoint_env) {
        if let Some(own) = crate::gemini_home::make(&home, &run_dir)? {
            endpoint_env.push(("GEMINI_CLI_HOME".into(), own.display().to_string()));
        }
    }
    for f in &endpoint_files {
        let path = run_dir.join(&f.path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&path, &f.contents).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some((name, at)) = &f.env {
            endpoint_env.push((name.clone(), run_dir.join(at).display().to_string()));
        }
    }
    let vars = profiles::Vars {
        program: p.program.clone(),
        prompt_file: prompt_file.display().to_string(),
        worktree: work.workdir.clone(),
        run_dir: run_dir.display().to_string(),
        ticket: work.ticket.clone(),
        step: a.step.clone(),
        attempt: a.attempt.to_string(),
        assignment: a.id.clone(),
        model: endpoint_model.or_else(|| p.model.clone()),
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
        .chain(endpoint_args.iter().cloned().map(Ok))
        .collect::<Result<Vec<_>, _>>()?;
    let confined = settings.sandbox.confine_run(
        &a.role,
        std::path::Path::new(&work.workdir),
        &run_dir,
        &p.state,
    )?;
    let mut env = agent_env(settings, work, &run_dir, &prompt_file);
    if !installed(&p.program, &env) {
        return Err(RunError::Unusable(format!(
            "agent profile `{}` cannot run on this pod: its program `{}` is not installed here (not a file, nor on the agent's PATH); `yoi agent check {}` says the same",
            settings.profile_name, p.program, settings.profile_name
        )));
    }
    // The agent's own HTTPS to this server trusts what the pod trusts.
    match crate::agent_env::server_trust(settings, &env, &run_dir) {
        Ok(vars) => {
            for (k, v) in vars {
                env.retain(|(ek, _)| *ek != k);
                env.push((k, v));
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "the agent is not given the server's certificate")
        }
    }
    for (k, v) in endpoint_env.iter().chain(&confined.env) {
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
        stall: settings.stall,
    };
    // An agent that streams its usage has it sent with each heartbeat, so a budget passed
    // while it runs stops it (docs/budgets.md).
    let probe = matches!(p.output.as_str(), "claude_stream_json" | "codex_jsonl").then(|| {
        crate::attempt::UsageProbe {
            stdout: spec.stdout.clone(),
            kind: p.output.clone(),
            agent: settings.profile_name.clone(),
            model: vars.model.clone(),
        }
    });
    let mut lease = Lease::new(client, pod, work, stop).probing(probe);
    tracing::info!(assignment = %a.id, ticket = %work.ticket, attempt = a.attempt, "running the agent");
    let agent_started = Instant::now();
    let first = run_turn(&spec, &mut lease, p, &vars)?;
    if first.ended == Ended::LeaseLost || lease.lost {
        return Ok(Reported::Lost);
    }
    let mut usage = Usage {
        agent: Some(settings.profile_name.clone()),
        model: p.model.clone().or_else(|| first.model.clone()),
        ..Usage::default()
    };
    first.add_usage(&mut usage);
    let exit_code = match first.ended {
        Ended::Exited(c) => Some(c),
        _ => None,
    };
    let failure = match first.ended {
        Ended::TimedOut => Some(format!(
            "the agent ran past its timeout of {}s and was killed",
            spec.timeout.as_secs()
        )),
        Ended::Stopped => Some("the pod was stopped before the agent finished".to_string()),
        Ended::Halted => Some(
            lease
                .halted
                .clone()
                .unwrap_or_else(|| "the server said to stop the agent".to_string()),
        ),
        Ended::Stalled => Some(format!(
            "stalled: the agent made no progress (no output, no change in its working directory) for {}s and its process group was ended",
            spec.stall.map_or(0, |s| s.as_secs())
        )),
        _ => sandbox::setup_failure(exit_code, &first.stderr)
            .or_else(|| first.said.agent_error.clone()),
    };
    let reviewer = Role::Reviewer.is(&a.role);
    let mut contract = contract::read_contract(&first.said.final_message);
    let (mut stdout, mut stderr) = (first.stdout.clone(), first.stderr.clone());
    let mut asked = false;
    if failure.is_none()
        && exit_code == Some(0)
        && contract::forgotten(&contract, reviewer)
        && !p.follow_up.is_empty()
        && !lease.stopping()
    {
        asked = true;
        let second = follow_up(
            &spec,
            &mut lease,
            p,
            &vars,
            &run_dir,
            reviewer,
            (model_args, &endpoint_args),
        )?;
        if second.ended == Ended::LeaseLost || lease.lost {
            return Ok(Reported::Lost);
        }
        second.add_usage(&mut usage);
        stdout.push_str(&format!(
            "\n--- follow-up turn (asking for the trailer lines)\n{}",
            second.stdout
        ));
        stderr.push_str(&format!("\n--- follow-up turn\n{}", second.stderr));
        // The answer counts when it has the result line; a reviewer's still needs its verdict,
        // which the review check below asks for.
        let answer = contract::read_contract(&second.said.final_message);
        if answer.is_ok() {
            contract = answer;
        }
    }
    let agent_ended = Instant::now();
    usage.cost_source = if usage.cost_usd.is_some() {
        CostSource::Reported
    } else {
        CostSource::None
    };
    let log = stream_log(client, pod, a, &stdout, &stderr);
    // When the result's push to its attempt ref began (a pod without the server's disk).
    let mut pushing = None;
    let (commit, agent_commits) = if Role::Coder.is(&a.role) {
        bring_in_commits(work, &confined.objects)?;
        let settled = settle_commits(work, &settings.profile_name)?;
        // Without the server's disk, the server finds the result on its attempt ref. A push
        // cut short (a network drop, a restart, a connection lost mid-pack) is made again
        // while the claim may be live; git writes no ref of a pack it did not receive whole.
        if let (Some(r), Some(c)) = (&settings.remote, &settled.0) {
            pushing = Some(Instant::now());
            let pushed = within_lease(
                client,
                pod,
                a,
                (lease.answered, lease_of(work)),
                5,
                "pushing the result",
                |e: &String| !e.contains(" 403"),
                || crate::remote::push(r, &settings.server, &settings.token, pod, work, c),
            );
            match pushed {
                Ok(()) => client.server_answered(),
                Err(Gave::Lost) => return Ok(Reported::Lost),
                Err(Gave::Up(e)) => return Err(RunError::Other(e)),
            }
        }
        settled
    } else {
        (None, 0)
    };
    let changed = commit.is_some();
    let mut report = Report {
        outcome: ReportOutcome::Failed,
        summary: None,
        commit,
        agent_commits,
        usage: Some(usage),
        log,
        exit_code,
        sandbox: Some(confined.policy.summary()),
        agent: Some(settings.agent_label.clone()),
        follow_up: asked,
        ..Report::default()
    };
    let asked_too = if asked {
        ", also after a follow-up turn asking for it"
    } else {
        ""
    };
    let rule = ContractRule::for_role(p.contract, &a.role);
    let reason = match (&failure, &contract) {
        (Some(f), _) => Some(f.clone()),
        (None, Err(e)) => match exit_code {
            Some(c) if c != 0 => Some(format!("the agent exited with {c} and {e}")),
            _ if *e == contract::ContractError::Missing
                && rule == ContractRule::Lenient
                && !reviewer =>
            {
                if changed {
                    report.outcome = ReportOutcome::Done;
                    report.summary = contract::last_paragraph(&first.said.final_message);
                    report.contract_missing = true;
                    None
                } else {
                    Some(format!(
                        "{e}{asked_too}, and the agent changed nothing, so there is no work to keep"
                    ))
                }
            }
            _ => Some(format!("{e}{asked_too} (contract = \"{}\")", rule.as_str())),
        },
        (None, Ok(c)) => {
            report.outcome = c.result;
            report.summary = c.summary.clone();
            report.findings = c.findings.clone();
            report.questions = c.questions.clone();
            report.verdict = c.verdict.as_deref().and_then(Verdict::parse);
            if reviewer && c.result == ReportOutcome::Done {
                review_problem(work, c.verdict.as_deref()).map(|r| format!("{r}{asked_too}"))
            } else {
                None
            }
        }
    };
    // A failure that is not about the change — the contract, the timeout or a stop (the pod
    // killed the group), an error the agent reported — leaves work the next attempt starts
    // from; an agent that exited non-zero or said it failed does not.
    let not_about_the_change = match (&failure, &contract) {
        (Some(_), _) => {
            matches!(
                first.ended,
                Ended::TimedOut | Ended::Stopped | Ended::Stalled | Ended::Halted
            ) || first.said.agent_error.is_some()
        }
        (None, Err(_)) => exit_code == Some(0),
        (None, Ok(_)) => false,
    };
    report.keep_work = reason.is_some() && changed && !reviewer && not_about_the_change;
    // A provider's rate limit or quota is no failure of the work (docs/budgets.md): reported as
    // such, the attempt is not counted and the agent pauses until the limit resets.
    if reason.is_some()
        && !matches!(
            first.ended,
            Ended::Stopped | Ended::LeaseLost | Ended::Halted
        )
    {
        let now_ms = yoi_core::time::unix_ms(std::time::SystemTime::now());
        report.rate_limit =
            crate::rate_limit::detect(&stdout, &stderr, first.said.agent_error.as_deref(), now_ms);
        if report.rate_limit.is_some() {
            report.keep_work = changed && !reviewer;
        }
    }
    // The reason says why where people look: with the end of what the agent wrote on stderr.
    let reason = reason.map(|r| crate::explain::with_stderr(r, &stderr));
    // Reported again while the claim may be live, after a network drop or a restart.
    let again = |what, call: &mut dyn FnMut() -> Result<Reported, ClientError>| {
        within_lease(
            client,
            pod,
            a,
            (lease.answered, lease_of(work)),
            3,
            what,
            passing,
            call,
        )
    };
    let reporting = Instant::now();
    let sent = match reason {
        None => again("reporting the result", &mut || {
            client
                .complete(pod, &a.id, a.fence, &report)
                .map(|_| Reported::Completed)
        }),
        Some(reason) => again("reporting the failure", &mut || {
            client
                .fail(pod, &a.id, a.fence, &reason, true, Some(&report))
                .map(|_| Reported::Failed)
        }),
    };
    // The pod's own share of the attempt, apart from the agent's: what `cargo bench -p yoi-cli --bench agent_overhead` reads.
    tracing::info!(
        assignment = %a.id,
        claim_to_agent_ms = agent_started.duration_since(claimed).as_millis() as u64,
        agent_ms = agent_ended.duration_since(agent_started).as_millis() as u64,
        agent_to_ack_ms = agent_ended.elapsed().as_millis() as u64,
        // A remote coder's push to its attempt ref and the report after it, whose answer comes
        // once the server has moved the branch: push → branch moved.
        push_ms = pushing.map_or(0, |p| reporting.duration_since(p).as_millis() as u64),
        report_ms = reporting.elapsed().as_millis() as u64,
        "attempt timing"
    );
    match sent {
        Ok(r) => Ok(r),
        Err(Gave::Lost | Gave::Up(ClientError::Lost { .. })) => Ok(Reported::Lost),
        Err(Gave::Up(e)) => Err(RunError::Other(e.to_string())),
    }
}

/// One run of the agent: how it ended, how long it took, what it printed and said.
struct Turn {
    ended: Ended,
    wall_ms: u64,
    stdout: String,
    stderr: String,
    said: contract::Said,
    /// The model the agent's stream named.
    model: Option<String>,
}

impl Turn {
    fn add_usage(&self, u: &mut Usage) {
        u.wall_ms += self.wall_ms;
        u.tokens_in += self.said.tokens_in;
        u.tokens_out += self.said.tokens_out;
        u.tokens_cached += self.said.tokens_cached;
        if let Some(c) = self.said.cost_usd {
            u.cost_usd = Some(u.cost_usd.unwrap_or(0.0) + c);
        }
    }
}

/// Run `spec` under the lease and read what the agent said (its result file, when the profile
/// names one, is read after the run).
fn run_turn(
    spec: &Spec,
    lease: &mut Lease,
    p: &AgentProfile,
    vars: &profiles::Vars,
) -> Result<Turn, String> {
    let started = Instant::now();
    let ended =
        process::run(spec, lease).map_err(|e| format!("starting {:?}: {e}", spec.argv.first()))?;
    let wall_ms = started.elapsed().as_millis() as u64;
    let stdout = std::fs::read_to_string(&spec.stdout).unwrap_or_default();
    let stderr = std::fs::read_to_string(&spec.stderr).unwrap_or_default();
    let result_file = p
        .result_file
        .as_deref()
        .and_then(|f| profiles::fill(f, vars).ok())
        .and_then(|f| std::fs::read_to_string(f).ok());
    let mut said = contract::read_output(&p.output, &stdout, result_file.as_deref());
    // A streamed run that ended before its totals (stopped, killed, crashed) still used what
    // its messages said so far.
    let mut model = None;
    if let Some((so_far, named)) = contract::usage_so_far(&p.output, &stdout) {
        let total = |s: &contract::Said| s.tokens_in + s.tokens_out + s.tokens_cached;
        if total(&so_far) > total(&said) {
            said.tokens_in = so_far.tokens_in;
            said.tokens_out = so_far.tokens_out;
            said.tokens_cached = so_far.tokens_cached;
        }
        model = named;
    }
    Ok(Turn {
        ended,
        wall_ms,
        stdout,
        stderr,
        said,
        model,
    })
}

/// The follow-up turn: the profile's `follow_up` argv (with the model and extra arguments)
/// asking for the trailer lines, run exactly as the first turn was — the same sandbox,
/// environment, working directory and run folder — with its own output files and timeout.
fn follow_up(
    first: &Spec,
    lease: &mut Lease,
    p: &AgentProfile,
    vars: &profiles::Vars,
    run_dir: &std::path::Path,
    reviewer: bool,
    (model_args, endpoint_args): (&[String], &[String]),
) -> Result<Turn, String> {
    let question = run_dir.join("follow-up.md");
    std::fs::write(&question, contract::follow_up_question(reviewer))
        .map_err(|e| format!("{}: {e}", question.display()))?;
    let vars = profiles::Vars {
        follow_up_file: question.display().to_string(),
        ..vars.clone()
    };
    let argv = p
        .follow_up
        .iter()
        .chain(model_args)
        .chain(&p.extra_args)
        .map(|e| profiles::fill(e, &vars))
        .chain(endpoint_args.iter().cloned().map(Ok))
        .collect::<Result<Vec<_>, _>>()?;
    let secs = match p.follow_up_timeout_secs {
        0 => FOLLOW_UP_TIMEOUT_SECS,
        s => s,
    };
    let spec = Spec {
        argv,
        stdin: first.stdin.as_ref().map(|_| question.clone()),
        stdout: run_dir.join("follow-up.stdout.log"),
        stderr: run_dir.join("follow-up.stderr.log"),
        timeout: Duration::from_secs(secs).min(first.timeout),
        ..first.clone()
    };
    tracing::info!(argv = ?spec.argv, "asking the agent for its missing trailer lines");
    run_turn(&spec, lease, p, &vars)
}

/// The person's home, when the profile runs Gemini CLI with it: the `gemini` endpoint and no
/// `GEMINI_CLI_HOME` from the endpoint's settings (a `base_url` gives one), the profile or the
/// pod's environment. yoi's MCP server then goes in a home of the run's own
/// ([`crate::gemini_home`]).
fn gemini_without_home(
    settings: &PodSettings,
    endpoint_env: &[(String, String)],
) -> Option<std::path::PathBuf> {
    const VAR: &str = "GEMINI_CLI_HOME";
    let p = &settings.profile;
    if p.endpoint != Some(yoi_agent::profile::Endpoint::Gemini)
        || endpoint_env.iter().any(|(k, _)| k == VAR)
        || p.env.contains_key(VAR)
        || settings.env.iter().any(|(k, _)| k == VAR)
    {
        return None;
    }
    settings
        .env
        .iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, h)| std::path::PathBuf::from(h))
}
