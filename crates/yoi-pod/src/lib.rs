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
//!
//! [`run`] here is the claim loop. What every attempt shares (its run folder, the heartbeat
//! before it starts and while it runs, its log) is in `attempt`; `agent_run` runs an agent's
//! step and `verify` the verifier's commands; `worktree` holds what the pod checks and commits
//! in the folder it was handed; `agent_env` builds the agent's environment and `prompt` its
//! prompt file.

mod agent_env;
mod agent_run;
mod attempt;
pub mod client;
pub mod contract;
mod explain;
mod gemini_home;
pub mod process;
pub mod profiles;
pub mod prompt;
pub mod rate_limit;
pub mod remote;
pub mod sandbox;
pub mod status;
pub mod tls;
mod verify;
mod worktree;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use thiserror::Error;
use yoi_agent::profile::AgentProfile;

use agent_run::RunError;
use attempt::Reported;
use client::{Client, ClientError};
use yoi_core::report::Report;

pub use prompt::render_prompt;

/// Everything a pod needs, decided by its caller.
#[derive(Debug, Clone)]
pub struct PodSettings {
    pub server: String,
    /// Which certificate an `https://` server may show (`--ca`, `--pin`; the web's roots).
    pub trust: tls::Trust,
    /// Work in a cache of the pod's own, fetched and pushed over the server's git, instead of
    /// the folder the claim names (`--cache DIR`).
    pub remote: Option<remote::RemoteGit>,
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
    /// End an agent that makes no progress for this long (`None`: never).
    pub stall: Option<Duration>,
    /// Run one assignment (or wait once for one) and exit.
    pub once: bool,
    /// How long one claim waits for work.
    pub wait_ms: u64,
    /// The sandbox every agent and command runs in.
    pub sandbox: sandbox::Sandbox,
    /// What this pod's attempts name as their agent: the profile and its CLI's version
    /// (`aider 0.86.2`; the profile alone when the CLI names none). See [`agent_label`].
    pub agent_label: String,
    /// Where the pod keeps its own status for a probe (`--status-file`, [`status`]).
    pub status_file: Option<PathBuf>,
}

/// How often the status file is written when nothing changes.
const STATUS_EVERY: Duration = Duration::from_secs(5);

/// `profile` and the version its CLI reports, asked once when the pod starts.
pub fn agent_label(profile_name: &str, profile: &AgentProfile) -> String {
    match profiles::version(profile) {
        // A CLI that prints its own name first (`aider 0.86.2`) is not named twice.
        Some(v) if v.to_lowercase().starts_with(&profile_name.to_lowercase()) => v,
        Some(v) => format!("{profile_name} {v}"),
        None => profile_name.to_string(),
    }
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
    let client = Client::new(&settings.server, &settings.token, &settings.trust);
    // A cache is one pod's; a second pod given it is refused before it registers (and before
    // it writes a status, which would be the first pod's file).
    let _cache = settings
        .remote
        .as_ref()
        .map(remote::lock)
        .transpose()
        .map_err(PodError::Setup)?;
    let status = match &settings.status_file {
        None => None,
        Some(path) => Some(
            status::StatusFile::start(
                path,
                status::PodStatus {
                    pod: None,
                    name: settings.name.clone(),
                    role: None,
                    pid: std::process::id(),
                    server: settings.server.clone(),
                    state: status::PodState::Starting,
                    assignment: None,
                    ticket: None,
                    server_answered_ms: None,
                    lease_ms: None,
                    error: None,
                    written_ms: 0,
                },
                client.answered(),
                STATUS_EVERY,
            )
            .map_err(PodError::Setup)?,
        ),
    };
    let ran = claim_loop(settings, stop, &client, status.as_deref());
    if let Some(s) = &status {
        s.finish(ran.as_ref().err().map(ToString::to_string));
    }
    ran
}

/// Register, then claim and run the role's work until `stop` (or one with `once`).
fn claim_loop(
    settings: &PodSettings,
    stop: &AtomicBool,
    client: &Client,
    status: Option<&status::StatusFile>,
) -> Result<PodSummary, PodError> {
    let set = |change: &dyn Fn(&mut status::PodStatus)| {
        if let Some(s) = status {
            s.update(change);
        }
    };
    let reg = client.register(
        &settings.name,
        &settings.host,
        std::process::id(),
        &settings.profile_name,
        &settings
            .sandbox
            .enforcement()
            .map(|e| e.describe())
            .unwrap_or_else(|e| e),
        settings.profile.provider.as_deref(),
    )?;
    let pod = reg.pod.id.clone();
    // git cannot pin a certificate's fingerprint; it pins that certificate's key.
    let pinned;
    let settings = match (&settings.remote, &settings.trust) {
        (Some(r), tls::Trust::Pin(pin))
            if r.pinned_key.is_none() && settings.server.starts_with("https://") =>
        {
            let key = tls::git_pinned_key(*pin, &settings.server).map_err(PodError::Setup)?;
            let mut owned = settings.clone();
            if let Some(r) = owned.remote.as_mut() {
                r.pinned_key = Some(key);
            }
            pinned = owned;
            &pinned
        }
        _ => settings,
    };
    tracing::info!(pod = %pod, role = %reg.pod.role, agent = %settings.profile_name, "pod registered");
    set(&|s| {
        s.pod = Some(pod.clone());
        s.role = Some(reg.pod.role.clone());
        s.lease_ms = Some(reg.lease_ms);
        s.state = status::PodState::Idle;
        s.error = None;
    });
    let mut summary = PodSummary {
        pod: pod.clone(),
        ..PodSummary::default()
    };
    while !stop.load(Ordering::SeqCst) {
        let work = match client.claim(&pod, settings.wait_ms, settings.remote.is_some()) {
            Ok(w) => w,
            Err(ClientError::Unreachable { reason, .. }) => {
                tracing::warn!(%reason, "the server did not answer a claim; trying again");
                set(&|s| s.error = Some(format!("a claim got no answer: {reason}")));
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
            // The server's own trouble (a 5xx) is not the pod's: claim again after a pause. A
            // refusal (4xx: bad token, unknown pod) still ends the pod.
            Err(ClientError::Refused { status, message }) if status >= 500 => {
                tracing::warn!(status, %message, "the server failed a claim; trying again");
                set(&|s| {
                    s.error = Some(format!("the server failed a claim ({status}): {message}"))
                });
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let claimed = std::time::Instant::now();
        let Some(mut work) = work else {
            set(&|s| s.error = None);
            if settings.once {
                break;
            }
            continue;
        };
        set(&|s| {
            s.state = status::PodState::Working;
            s.assignment = Some(work.assignment.id.clone());
            s.ticket = Some(work.ticket.clone());
            s.error = None;
        });
        // Without the server's disk: the claim's commit fetched into the pod's own cache.
        let checkout = match &settings.remote {
            None => None,
            Some(r) => match prepare_remote(client, &pod, r, settings, &mut work) {
                Ok(c) => {
                    client.server_answered();
                    Some(c)
                }
                Err(e) => {
                    tracing::error!(assignment = %work.assignment.id, error = %e, "the claim's commit could not be fetched");
                    let _ = client.fail(
                        &pod,
                        &work.assignment.id,
                        work.assignment.fence,
                        &format!("the pod could not fetch the claim's commit: {e}"),
                        true,
                        None,
                    );
                    summary.failed += 1;
                    set(&|s| {
                        s.state = status::PodState::Idle;
                        s.assignment = None;
                        s.ticket = None;
                        s.error = Some(format!("fetching the claim's commit: {e}"));
                    });
                    if settings.once {
                        break;
                    }
                    continue;
                }
            },
        };
        // A verify is the brief's validation commands, run by yoi, whatever agent the
        // workspace names for the verifier: an agent's `done` never stands in for them.
        let verifies = settings.profile_name == VERIFY_PROFILE
            || yoi_core::Role::Verifier.is(&work.assignment.role);
        let ran = if verifies {
            verify::run_verify(settings, client, &pod, &work, stop).map_err(RunError::Other)
        } else {
            agent_run::run_one(settings, client, &pod, &work, stop, claimed)
        };
        match ran {
            Ok(Reported::Completed) => summary.completed += 1,
            Ok(Reported::Failed) => summary.failed += 1,
            Ok(Reported::Lost) => summary.lost += 1,
            Err(e) => {
                tracing::error!(assignment = %work.assignment.id, error = %e, "the attempt could not be run");
                // An agent that cannot run here fails the same way every time: the step stops
                // and a person is told (docs/inbox.md, `agent_unusable`).
                let unusable = matches!(e, RunError::Unusable(_)).then(|| Report {
                    outcome: yoi_core::report::ReportOutcome::Failed,
                    summary: Some(e.to_string()),
                    agent: Some(settings.profile_name.clone()),
                    agent_unusable: true,
                    ..Report::default()
                });
                let _ = client.fail(
                    &pod,
                    &work.assignment.id,
                    work.assignment.fence,
                    &e.to_string(),
                    unusable.is_none(),
                    unusable.as_ref(),
                );
                summary.failed += 1;
            }
        }
        drop(checkout);
        set(&|s| {
            s.state = status::PodState::Idle;
            s.assignment = None;
            s.ticket = None;
        });
        if settings.once {
            break;
        }
    }
    tracing::info!(pod = %pod, completed = summary.completed, failed = summary.failed, lost = summary.lost, "pod stopped");
    Ok(summary)
}

/// [`remote::prepare`], heartbeating the claim at its interval while git works: the first fetch
/// into a cold cache of a large repository can take longer than a lease, and a claim must not
/// expire while its commit is on the way. A 409 is left to the heartbeat before the agent
/// starts, which then reports nothing.
fn prepare_remote(
    client: &Client,
    pod: &str,
    cache: &remote::RemoteGit,
    settings: &PodSettings,
    work: &mut client::Work,
) -> Result<remote::Checkout, String> {
    let every = Duration::from_millis(work.heartbeat_ms.max(100) as u64);
    let (id, fence) = (work.assignment.id.clone(), work.assignment.fence);
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel();
        scope.spawn(move || {
            let _ = tx.send(remote::prepare(
                cache,
                &settings.server,
                &settings.token,
                work,
            ));
        });
        loop {
            match rx.recv_timeout(every) {
                Ok(prepared) => return prepared,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = client.heartbeat(pod, &id, fence) {
                        tracing::warn!(assignment = %id, error = %e, "a heartbeat during the fetch failed");
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("the fetch ended without an answer".into())
                }
            }
        }
    })
}

/// The built-in profile of the verifier: no agent, the brief's validation commands.
pub const VERIFY_PROFILE: &str = "verify";
