//! The pod runtime behind `yoi pod run` (DESIGN §7, docs/pods.md). A pod registers with the
//! server under its token's role, long-polls for that role's work, and for each assignment:
//! writes the prompt file (the frozen IntentPacket, the step's instructions, the skill catalog
//! as names and descriptions with how to activate one, how to report), heartbeats once before
//! starting the agent and every heartbeat interval after, runs the agent ([`process`]) in the
//! working directory the server handed out, streams its output to the server's log, parses the
//! output contract ([`contract`]), commits what a coder left uncommitted and counts the commits
//! it made itself, and reports. A lost lease (409) kills the agent's group at once and reports
//! nothing. A stop request ends the claiming; the agent in flight gets its grace, then the kill
//! ladder, and its attempt is reported failed so the step is handed out again.
//!
//! The runtime speaks only HTTP to the server and git to its working directory, so a pod on
//! another host works the same; it reads no environment itself (the CLI passes the pod's
//! environment in [`PodSettings::env`]) and prints nothing (it logs with `tracing`).

pub mod client;
pub mod contract;
pub mod process;
pub mod profiles;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use thiserror::Error;
use yoi_core::agent::AgentProfile;
use yoi_core::report::{CheckResult, CostSource, Report, ReportOutcome, Usage, Verdict};

use client::{Client, ClientError, Work};
use process::{Ended, Spec, Watch};

/// Everything a pod needs, decided by its caller.
#[derive(Debug, Clone)]
pub struct PodSettings {
    pub server: String,
    pub token: String,
    /// The pod's name (a nonce is added by the server).
    pub name: String,
    pub host: String,
    pub profile_name: String,
    pub profile: AgentProfile,
    /// Where run folders (prompt, output, scratch) go.
    pub state_dir: PathBuf,
    /// The pod's own environment; the agent gets only what its profile lets through.
    pub env: Vec<(String, String)>,
    pub kill_grace: Duration,
    /// Run one assignment (or wait once for one) and exit.
    pub once: bool,
    /// How long one claim waits for work.
    pub wait_ms: u64,
}

#[derive(Debug, Error)]
pub enum PodError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("{0}")]
    Setup(String),
}

/// What a pod did before it stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodSummary {
    pub pod: String,
    pub completed: u32,
    pub failed: u32,
    pub lost: u32,
}

/// Run the pod until `stop` is set (or after one assignment with `once`).
pub fn run(settings: &PodSettings, stop: &AtomicBool) -> Result<PodSummary, PodError> {
    let client = Client::new(&settings.server, &settings.token);
    let reg = client.register(
        &settings.name,
        &settings.host,
        std::process::id(),
        &settings.profile_name,
    )?;
    let pod = reg.pod.id.clone();
    tracing::info!(pod = %pod, role = %reg.pod.role, agent = %settings.profile_name, "pod registered");
    let mut summary = PodSummary {
        pod: pod.clone(),
        ..PodSummary::default()
    };
    while !stop.load(Ordering::SeqCst) {
        let work = match client.claim(&pod, settings.wait_ms) {
            Ok(w) => w,
            Err(ClientError::Unreachable { reason, .. }) => {
                tracing::warn!(%reason, "the server did not answer a claim; trying again");
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
            // The server's own trouble (a 5xx) is not the pod's: claim again after a pause. A
            // refusal (4xx: bad token, unknown pod) still ends the pod.
            Err(ClientError::Refused { status, message }) if status >= 500 => {
                tracing::warn!(status, %message, "the server failed a claim; trying again");
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let Some(work) = work else {
            if settings.once {
                break;
            }
            continue;
        };
        let ran = if settings.profile_name == VERIFY_PROFILE {
            run_verify(settings, &client, &pod, &work, stop)
        } else {
            run_one(settings, &client, &pod, &work, stop)
        };
        match ran {
            Ok(Reported::Completed) => summary.completed += 1,
            Ok(Reported::Failed) => summary.failed += 1,
            Ok(Reported::Lost) => summary.lost += 1,
            Err(e) => {
                tracing::error!(assignment = %work.assignment.id, error = %e, "the attempt could not be run");
                let _ = client.fail(
                    &pod,
                    &work.assignment.id,
                    work.assignment.fence,
                    &e,
                    true,
                    None,
                );
                summary.failed += 1;
            }
        }
        if settings.once {
            break;
        }
    }
    tracing::info!(pod = %pod, completed = summary.completed, failed = summary.failed, lost = summary.lost, "pod stopped");
    Ok(summary)
}

/// The built-in profile of the verifier: no agent, the brief's validation commands.
pub const VERIFY_PROFILE: &str = "verify";

enum Reported {
    Completed,
    Failed,
    Lost,
}

/// Heartbeats and stop requests while an agent runs.
struct Lease<'a> {
    client: &'a Client,
    pod: &'a str,
    id: &'a str,
    fence: i64,
    every: Duration,
    last: Instant,
    lost: bool,
    stop: &'a AtomicBool,
}

impl<'a> Lease<'a> {
    /// Heartbeats for `work`'s claim every interval the server asked for.
    fn new(client: &'a Client, pod: &'a str, work: &'a Work, stop: &'a AtomicBool) -> Self {
        Lease {
            client,
            pod,
            id: &work.assignment.id,
            fence: work.assignment.fence,
            every: Duration::from_millis(work.heartbeat_ms.max(100) as u64),
            last: Instant::now(),
            lost: false,
            stop,
        }
    }
}

impl Watch for Lease<'_> {
    fn keep(&mut self) -> bool {
        if self.last.elapsed() < self.every {
            return true;
        }
        self.last = Instant::now();
        match self.client.heartbeat(self.pod, self.id, self.fence) {
            Ok(()) => true,
            Err(ClientError::Lost { message }) => {
                tracing::warn!(assignment = %self.id, %message, "lease lost; killing the agent");
                self.lost = true;
                false
            }
            // The server may be restarting: keep going, the lease covers the gap.
            Err(e) => {
                tracing::warn!(assignment = %self.id, error = %e, "heartbeat failed; retrying");
                true
            }
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// The folder the server handed out must be a worktree detached at the head the attempt
/// starts from: an agent never runs on a branch (only the server moves the ticket branch) nor
/// on top of someone else's commits. A folder that is not that fails the attempt, and the step
/// is handed out again in a fresh worktree.
fn check_workdir(work: &Work) -> Result<(), String> {
    let dir = Path::new(&work.workdir);
    match yoi_git::detached_at(dir, &work.head_commit) {
        Ok(()) => Ok(()),
        Err(yoi_git::NotDetachedAt::Missing) => Err(format!(
            "the working directory {} is missing or not a git worktree (`yoi ticket doctor` says how to restore it)",
            dir.display()
        )),
        Err(yoi_git::NotDetachedAt::Elsewhere { branch, head }) => Err(format!(
            "the working directory {} is not detached at {} (branch {branch:?}, head {head:?}); only the server moves the ticket branch",
            dir.display(),
            work.head_commit
        )),
    }
}

/// Check the working directory and make the attempt's run folder (prompt, logs); its path.
fn prepare_run(settings: &PodSettings, work: &Work) -> Result<PathBuf, String> {
    check_workdir(work)?;
    let run_dir = settings.state_dir.join("runs").join(&work.assignment.id);
    std::fs::create_dir_all(&run_dir).map_err(|e| format!("{}: {e}", run_dir.display()))?;
    Ok(run_dir)
}

/// Heartbeat once before starting anything: whether the server still has the claim (a claim
/// it lost never starts an agent or a command).
fn confirm_claim(client: &Client, pod: &str, a: &client::AssignmentInfo) -> Result<bool, String> {
    match client.heartbeat(pod, &a.id, a.fence) {
        Ok(()) => Ok(true),
        Err(ClientError::Lost { .. }) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

fn run_one(
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
    };
    let template = if a.role == "reviewer" && !p.reviewer_argv.is_empty() {
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
    let env = agent_env(settings, work, &run_dir, &prompt_file);
    let spec = Spec {
        argv,
        cwd: PathBuf::from(&work.workdir),
        stdin: (p.stdin != "null").then(|| prompt_file.clone()),
        env,
        stdout: run_dir.join("stdout.log"),
        stderr: run_dir.join("stderr.log"),
        timeout: step_timeout(settings, work),
        grace: settings.kill_grace,
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
        _ => said.agent_error.clone(),
    };
    let contract = contract::read_contract(&said.final_message);
    let (commit, agent_commits) = if a.role == "coder" {
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
            if a.role == "reviewer" && c.result == ReportOutcome::Done {
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

/// Why a reviewer's verdict does not count, if it does not: it must name a verdict, and the
/// reviewer must have left the exact commit it read untouched (HEAD where it was, nothing
/// changed) — a verdict on anything else is void.
fn review_problem(work: &Work, verdict: Option<&str>) -> Option<String> {
    match verdict {
        None => {
            return Some(
                "the reviewer's final message has no `YOI-VERDICT: approve|request_changes` line"
                    .into(),
            )
        }
        Some(v) if Verdict::parse(v).is_none() => {
            return Some(format!(
                "`YOI-VERDICT: {v}` must be approve or request_changes"
            ))
        }
        Some(_) => {}
    }
    let dir = Path::new(&work.workdir);
    match yoi_git::head_of(dir) {
        Ok(h) if h == work.head_commit => {}
        Ok(h) => {
            return Some(format!(
                "the reviewer moved HEAD from {} to {h}; its verdict is void",
                work.head_commit
            ))
        }
        Err(e) => return Some(format!("reading the reviewed worktree: {e}")),
    }
    match yoi_git::uncommitted_changes(dir) {
        Ok(c) if c.is_empty() => None,
        Ok(c) => Some(format!(
            "the reviewer changed {} in a read-only review; its verdict is void",
            c.join(", ")
        )),
        Err(e) => Some(format!("reading the reviewed worktree: {e}")),
    }
}

/// The verifier (no agent): run the frozen brief's validation commands, each with `sh -c` in
/// the worktree at the exact commit under test, with the profile's timeout and the kill ladder
/// for its process group; report each command's exit status, duration and log.
fn run_verify(
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
            env: agent_env(settings, work, &run_dir, &run_dir.join("none")),
            stdout: out.clone(),
            stderr: out.with_extension("err"),
            timeout: step_timeout(settings, work),
            grace: settings.kill_grace,
        };
        let t = Instant::now();
        let ended = process::run(&spec, &mut lease).map_err(|e| format!("starting sh: {e}"))?;
        if ended == Ended::LeaseLost || lease.lost {
            return Ok(Reported::Lost);
        }
        if ended == Ended::Stopped {
            return Err("the pod was stopped during verification".into());
        }
        let r = CheckResult {
            command: command.clone(),
            exit_code: match ended {
                Ended::Exited(c) => Some(c),
                _ => None,
            },
            duration_ms: t.elapsed().as_millis() as u64,
            timed_out: ended == Ended::TimedOut,
            log: None,
        };
        log.push_str(&format!(
            "$ {command}\n{}{}[exit {:?}{} after {} ms]\n\n",
            std::fs::read_to_string(&spec.stdout).unwrap_or_default(),
            std::fs::read_to_string(&spec.stderr).unwrap_or_default(),
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
        ..Report::default()
    };
    match client.complete(pod, &a.id, a.fence, &report) {
        Ok(_) => Ok(Reported::Completed),
        Err(ClientError::Lost { .. }) => Ok(Reported::Lost),
        Err(e) => Err(e.to_string()),
    }
}

/// Count the commits the agent made and commit what it left; the working directory's head.
fn settle_commits(work: &Work, agent: &str) -> Result<(Option<String>, u32), String> {
    let dir = Path::new(&work.workdir);
    let head_now = yoi_git::head_of(dir).map_err(|e| e.to_string())?;
    let agent_commits = if head_now == work.head_commit {
        0
    } else {
        yoi_git::commits_between(dir, &work.head_commit, &head_now).map_err(|e| e.to_string())?
    };
    let who = yoi_git::Identity {
        name: format!("yoi pod ({agent})"),
        email: "pod@yoi.invalid".into(),
        time_secs: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
    };
    let message = format!(
        "{}: {} (attempt {})\n\nYOI-Ticket: {}\nYOI-Assignment: {}\n",
        work.ticket, work.title, work.assignment.attempt, work.ticket, work.assignment.id
    );
    yoi_git::commit_all(dir, &message, &who).map_err(|e| e.to_string())?;
    let head = yoi_git::head_of(dir).map_err(|e| e.to_string())?;
    Ok(((head != work.head_commit).then_some(head), agent_commits))
}

/// Send the run's output to the server's log, in bounded chunks; the log's path.
fn stream_log(
    client: &Client,
    pod: &str,
    a: &client::AssignmentInfo,
    stdout: &str,
    stderr: &str,
) -> Option<String> {
    let mut path = None;
    let text = format!("--- stdout\n{stdout}\n--- stderr\n{stderr}\n");
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let mut end = (at + 200_000).min(bytes.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        match client.log(pod, &a.id, a.fence, &text[at..end]) {
            Ok(p) => path = p.or(path),
            Err(e) => {
                tracing::warn!(assignment = %a.id, error = %e, "could not send the log");
                break;
            }
        }
        at = end;
    }
    path
}

/// The agent's whole environment: PATH, HOME, LANG, TMPDIR and the profile's passthrough names
/// from the pod's environment, the profile's fixed values, `TERM=dumb`, and the `YOI_*`
/// variables of the assignment.
fn agent_env(
    settings: &PodSettings,
    work: &Work,
    run_dir: &Path,
    prompt: &Path,
) -> Vec<(String, String)> {
    let p = &settings.profile;
    let base = ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER"];
    let passes = |name: &str| {
        base.contains(&name)
            || p.env_passthrough
                .iter()
                .any(|pat| match pat.strip_suffix('*') {
                    Some(prefix) => name.starts_with(prefix),
                    None => name == pat,
                })
    };
    let mut env: Vec<(String, String)> = settings
        .env
        .iter()
        .filter(|(k, _)| passes(k) && !k.starts_with("YOI_"))
        .cloned()
        .collect();
    env.push(("TERM".into(), "dumb".into()));
    for (k, v) in &p.env {
        env.retain(|(ek, _)| ek != k);
        env.push((k.clone(), v.clone()));
    }
    git_maintenance_in_foreground(&mut env);
    let a = &work.assignment;
    for (k, v) in [
        ("YOI_SERVER", settings.server.clone()),
        ("YOI_TOKEN", work.agent_token.clone().unwrap_or_default()),
        ("YOI_TICKET", work.ticket.clone()),
        ("YOI_ASSIGNMENT", a.id.clone()),
        ("YOI_STEP", a.step.clone()),
        ("YOI_ATTEMPT", a.attempt.to_string()),
        ("YOI_FENCE", a.fence.to_string()),
        ("YOI_WORKTREE", work.workdir.clone()),
        ("YOI_BRANCH", work.branch.clone()),
        ("YOI_RUN_DIR", run_dir.display().to_string()),
        ("YOI_PROMPT_FILE", prompt.display().to_string()),
    ] {
        env.push((k.to_string(), v));
    }
    env
}

/// Since git 2.47, a commit ends by starting `git maintenance run --auto --detach`, which
/// leaves the agent's process group (it calls `setsid`) and so would outlive the kill ladder,
/// working on the repository's objects after the run ended. Maintenance still runs, but in the
/// foreground, inside the group. Settings given through `GIT_CONFIG_COUNT` are kept: these two
/// are appended after them.
fn git_maintenance_in_foreground(env: &mut Vec<(String, String)>) {
    let count = env
        .iter()
        .position(|(k, _)| k == "GIT_CONFIG_COUNT")
        .map(|at| env.remove(at).1);
    let mut n = match count.as_deref().map(str::parse::<usize>) {
        None => 0,
        Some(Ok(n)) => n,
        // git refuses a malformed count itself; leave it for git to report.
        Some(Err(_)) => {
            env.push(("GIT_CONFIG_COUNT".into(), count.unwrap_or_default()));
            return;
        }
    };
    for key in ["maintenance.autoDetach", "gc.autoDetach"] {
        let (name, value) = (
            format!("GIT_CONFIG_KEY_{n}"),
            format!("GIT_CONFIG_VALUE_{n}"),
        );
        env.retain(|(k, _)| *k != name && *k != value);
        env.push((name, key.into()));
        env.push((value, "false".into()));
        n += 1;
    }
    env.push(("GIT_CONFIG_COUNT".into(), n.to_string()));
}

/// This attempt's step in the flow frozen with the packet, if the packet has one.
fn flow_step(work: &Work) -> Option<yoi_core::flow::Step> {
    let flow = work.packet.as_ref()?.get("flow")?.clone();
    let flow: yoi_core::flow::Flow = serde_json::from_value(flow).ok()?;
    flow.step(&work.assignment.step).cloned()
}

/// How long an attempt may run: the flow step's `timeout`, else the agent profile's.
fn step_timeout(settings: &PodSettings, work: &Work) -> Duration {
    let secs = flow_step(work)
        .and_then(|s| s.timeout_secs)
        .unwrap_or(settings.profile.timeout_secs);
    Duration::from_secs(secs.max(1))
}

/// The prompt file: the step, the frozen brief, the skills, and how to report.
pub fn render_prompt(work: &Work, skills: &[(String, String)]) -> String {
    let a = &work.assignment;
    let mut out = format!(
        "# yoi assignment: {} of ticket {} — {}\n\n\
         You are the **{}** for step `{}` (attempt {}). Work only inside this folder: {}\n\
         It is a git worktree detached at {}. Do not push and do not switch branches; yoi commits what you leave \
         and moves the ticket branch itself. Do not change anything under `.yoi/tickets/`.\n\n",
        a.step, work.ticket, work.title, a.role, a.step, a.attempt, work.workdir, work.head_commit
    );
    if a.role == "reviewer" {
        out.push_str(
            "## Your task: review\n\nRead the change this commit makes for the brief below (`git log` and \
             `git diff` against the target). Change nothing: the folder must stay exactly at this commit, \
             clean, or your verdict is void.\n\n",
        );
    }
    if let Some(template) = flow_step(work).and_then(|s| s.prompt) {
        let vars = [
            ("ticket", work.ticket.as_str()),
            ("title", work.title.as_str()),
            ("step", a.step.as_str()),
            ("commit", work.head_commit.as_str()),
            ("branch", work.branch.as_str()),
        ];
        out.push_str(&format!(
            "## This step\n\n{}\n\n",
            yoi_core::flow::render_prompt(&template, &vars).trim_end()
        ));
    }
    if let Some(f) = &work.feedback {
        out.push_str(&format!(
            "## What the last round found (fix this first)\n\n{f}\n"
        ));
    }
    out.push_str("## The brief (IntentPacket, frozen at acceptance)\n\n");
    match work.packet.as_ref().and_then(|p| p.get("packet")) {
        Some(p) => {
            for (key, title) in [
                ("intent", "Intent"),
                ("binding_decisions", "Binding decisions"),
                ("acceptance_criteria", "Acceptance criteria"),
                ("implementation_latitude", "Implementation latitude"),
                ("escalate_if", "Escalate if"),
                ("validation", "Validation"),
                ("code_map", "Code map"),
                ("critical_risks", "Critical risks"),
                ("write_scope", "Write scope"),
            ] {
                let text = match &p[key] {
                    Value::String(s) if !s.trim().is_empty() => s.trim().to_string(),
                    Value::Array(items) if !items.is_empty() => items
                        .iter()
                        .filter_map(|i| i.as_str())
                        .map(|i| format!("- {i}"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => continue,
                };
                out.push_str(&format!("### {title}\n\n{text}\n\n"));
            }
        }
        None => out.push_str(
            "(no frozen brief was found; ask for one by reporting `YOI-RESULT: blocked`)\n\n",
        ),
    }
    if !skills.is_empty() {
        out.push_str("## Skills you may activate\n\nEach is a folder of instructions; activate one with \
                      `POST $YOI_SERVER/api/v1/skills/NAME/activate` with the header `Authorization: Bearer $YOI_TOKEN` \
                      and the body `{}` when its description fits the task (the token is this attempt's own; \
                      the activation is recorded against it).\n\n");
        for (name, desc) in skills {
            out.push_str(&format!("- `{name}`: {desc}\n"));
        }
        out.push('\n');
    }
    out.push_str(
        "## How to finish\n\nEnd your final message with these lines:\n\n\
         ```\nYOI-RESULT: done | blocked | failed\nYOI-SUMMARY: one sentence on what you did or why you stopped\n",
    );
    if a.role == "reviewer" {
        out.push_str(
            "YOI-VERDICT: approve | request_changes\nYOI-FINDING: one line per problem found (as many as needed)\n",
        );
    }
    out.push_str("```\n");
    out
}

#[cfg(test)]
mod tests {
    use super::git_maintenance_in_foreground;

    fn get<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
        env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    #[test]
    fn an_agent_runs_git_maintenance_in_its_own_process_group() {
        let mut env = vec![("PATH".to_string(), "/bin".to_string())];
        git_maintenance_in_foreground(&mut env);
        assert_eq!(get(&env, "GIT_CONFIG_COUNT"), Some("2"));
        assert_eq!(
            get(&env, "GIT_CONFIG_KEY_0"),
            Some("maintenance.autoDetach")
        );
        assert_eq!(get(&env, "GIT_CONFIG_VALUE_0"), Some("false"));
        assert_eq!(get(&env, "GIT_CONFIG_KEY_1"), Some("gc.autoDetach"));
        assert_eq!(get(&env, "GIT_CONFIG_VALUE_1"), Some("false"));
        assert_eq!(get(&env, "PATH"), Some("/bin"));
    }

    #[test]
    fn settings_the_agent_already_gives_git_are_kept() {
        let mut env: Vec<(String, String)> = [
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "user.name"),
            ("GIT_CONFIG_VALUE_0", "agent"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        git_maintenance_in_foreground(&mut env);
        assert_eq!(get(&env, "GIT_CONFIG_COUNT"), Some("3"));
        assert_eq!(get(&env, "GIT_CONFIG_KEY_0"), Some("user.name"));
        assert_eq!(get(&env, "GIT_CONFIG_VALUE_0"), Some("agent"));
        assert_eq!(
            get(&env, "GIT_CONFIG_KEY_1"),
            Some("maintenance.autoDetach")
        );
        assert_eq!(get(&env, "GIT_CONFIG_KEY_2"), Some("gc.autoDetach"));
        assert_eq!(
            env.iter().filter(|(k, _)| k == "GIT_CONFIG_COUNT").count(),
            1
        );
    }

    #[test]
    fn a_malformed_count_is_left_for_git_to_report() {
        let mut env = vec![("GIT_CONFIG_COUNT".to_string(), "two".to_string())];
        git_maintenance_in_foreground(&mut env);
        assert_eq!(
            env,
            vec![("GIT_CONFIG_COUNT".to_string(), "two".to_string())]
        );
    }
}
