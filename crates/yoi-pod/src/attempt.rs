//! What every attempt shares, whichever role runs it: the run folder, the heartbeat that must
//! answer before anything starts, the heartbeats and stop requests while it runs, the step's
//! timeout, and the log sent to the server.
//!
//! Nothing starts until the server confirms the claim ([`confirm_claim`]): a claim the server
//! has already given away never starts an agent or a command. While a child runs, [`Lease`]
//! heartbeats at the interval the server asked for; a 409 marks the lease lost and makes the
//! runner kill the group at once, and the attempt then reports nothing ([`Reported::Lost`]).
//! Other heartbeat failures are retried, since the lease covers a server restart. So are the
//! calls that end an attempt — pushing its result, reporting it ([`within_lease`]) — for as
//! long as the claim may still be live: a network drop or a restart between the agent's end and
//! the report loses nothing the lease still covers. An agent that
//! streams its usage ([`UsageProbe`]) has it read from its output at each heartbeat and sent
//! along; when the server answers that a budget is passed, the runner ends the agent
//! ([`Watch::end_now`]) and the reason is kept for the attempt's failure. This module decides
//! no outcome of its own: `agent_run` and `verify` build the report.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::client::{self, Client, ClientError, Work};
use crate::process::Watch;
use crate::worktree::check_workdir;
use crate::PodSettings;

pub(crate) enum Reported {
    Completed,
    Failed,
    Lost,
}

/// Heartbeats and stop requests while an agent runs.
pub(crate) struct Lease<'a> {
    client: &'a Client,
    pod: &'a str,
    id: &'a str,
    fence: i64,
    every: Duration,
    last: Instant,
    /// When the server last answered a heartbeat (or the claim, before the first).
    pub(crate) answered: Instant,
    pub(crate) lost: bool,
    stop: &'a AtomicBool,
    probe: Option<UsageProbe>,
    /// Why the server said to stop the agent while it ran (a budget passed).
    pub(crate) halted: Option<String>,
}

/// Where a running agent's usage so far is read: its stdout, in an output kind that streams
/// usage (`claude_stream_json`, `codex_jsonl`), and whose it is.
pub(crate) struct UsageProbe {
    pub stdout: PathBuf,
    pub kind: String,
    pub agent: String,
    pub model: Option<String>,
}

impl UsageProbe {
    fn read(&self) -> Option<yoi_core::report::Usage> {
        let out = std::fs::read_to_string(&self.stdout).ok()?;
        let (said, model) = crate::contract::usage_so_far(&self.kind, &out)?;
        Some(yoi_core::report::Usage {
            tokens_in: said.tokens_in,
            tokens_out: said.tokens_out,
            tokens_cached: said.tokens_cached,
            cost_usd: said.cost_usd,
            agent: Some(self.agent.clone()),
            model: self.model.clone().or(model),
            ..Default::default()
        })
    }
}

impl<'a> Lease<'a> {
    /// Heartbeats for `work`'s claim every interval the server asked for.
    pub(crate) fn new(
        client: &'a Client,
        pod: &'a str,
        work: &'a Work,
        stop: &'a AtomicBool,
    ) -> Self {
        Lease {
            client,
            pod,
            id: &work.assignment.id,
            fence: work.assignment.fence,
            every: Duration::from_millis(work.heartbeat_ms.max(100) as u64),
            last: Instant::now(),
            answered: Instant::now(),
            lost: false,
            stop,
            probe: None,
            halted: None,
        }
    }

    /// Send the agent's usage so far with each heartbeat (an agent that streams it).
    pub(crate) fn probing(mut self, probe: Option<UsageProbe>) -> Self {
        self.probe = probe;
        self
    }
}

impl Watch for Lease<'_> {
    fn keep(&mut self) -> bool {
        if self.last.elapsed() < self.every {
            return true;
        }
        self.last = Instant::now();
        let usage = self.probe.as_ref().and_then(UsageProbe::read);
        match self
            .client
            .heartbeat_with(self.pod, self.id, self.fence, usage.as_ref())
        {
            Ok(None) => {
                self.answered = Instant::now();
                true
            }
            Ok(Some(reason)) => {
                self.answered = Instant::now();
                tracing::warn!(assignment = %self.id, %reason, "the server said to stop the agent");
                self.halted.get_or_insert(reason);
                true
            }
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

    fn end_now(&self) -> bool {
        self.halted.is_some()
    }
}

/// Check the working directory and make the attempt's run folder (prompt, logs); its path.
pub(crate) fn prepare_run(settings: &PodSettings, work: &Work) -> Result<PathBuf, String> {
    check_workdir(work)?;
    let run_dir = settings.state_dir.join("runs").join(&work.assignment.id);
    std::fs::create_dir_all(&run_dir).map_err(|e| format!("{}: {e}", run_dir.display()))?;
    Ok(run_dir)
}

/// Heartbeat once before starting anything: whether the server still has the claim (a claim
/// it lost never starts an agent or a command).
pub(crate) fn confirm_claim(
    client: &Client,
    pod: &str,
    a: &client::AssignmentInfo,
) -> Result<bool, String> {
    match client.heartbeat(pod, &a.id, a.fence) {
        Ok(()) => Ok(true),
        Err(ClientError::Lost { .. }) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// Send the run's output to the server's log, in bounded chunks; the log's path.
pub(crate) fn stream_log(
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

/// This attempt's step in the flow frozen with the packet, if the packet has one.
pub(crate) fn flow_step(work: &Work) -> Option<yoi_core::flow::Step> {
    let flow = work.packet.as_ref()?.get("flow")?.clone();
    let flow: yoi_core::flow::Flow = serde_json::from_value(flow).ok()?;
    flow.step(&work.assignment.step).cloned()
}

/// How long an attempt may run: the flow step's `timeout`, else the agent profile's.
pub(crate) fn step_timeout(settings: &PodSettings, work: &Work) -> Duration {
    let secs = flow_step(work)
        .and_then(|s| s.timeout_secs)
        .unwrap_or(settings.profile.timeout_secs);
    Duration::from_secs(secs.max(1))
}

/// Why [`within_lease`] stopped trying.
pub(crate) enum Gave<E> {
    /// The claim is gone: the server said so (409), or the lease passed with no answer from
    /// it, so it has expired the claim or is about to. Report nothing more.
    Lost,
    /// The last error: one that is not passing, or the tries ran out while the server answered.
    Up(E),
}

/// Run `call` until it succeeds, trying again after a pause while its error is one a network
/// drop or a server restart makes (`passing`), for as long as the claim may still be live:
/// until a lease has passed since the server last answered (`answered`, sent before the
/// server's own clock started the lease, so the pod stops first), or after `tries` failures
/// while the server answers its heartbeats (a fault that is not passing). A 409 on a heartbeat
/// in between means another attempt holds the step now, and nothing is tried again.
#[allow(clippy::too_many_arguments)]
pub(crate) fn within_lease<T, E: std::fmt::Display>(
    client: &Client,
    pod: &str,
    a: &client::AssignmentInfo,
    (mut answered, lease): (Instant, Duration),
    tries: u32,
    what: &str,
    passing: impl Fn(&E) -> bool,
    mut call: impl FnMut() -> Result<T, E>,
) -> Result<T, Gave<E>> {
    let mut failures = 0;
    let mut pause = Duration::from_millis(250);
    loop {
        let e = match call() {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        failures += 1;
        if !passing(&e) {
            return Err(Gave::Up(e));
        }
        if answered.elapsed() >= lease {
            tracing::warn!(assignment = %a.id, error = %e, "{what} failed and the lease has passed without an answer; the claim is lost");
            return Err(Gave::Lost);
        }
        tracing::warn!(assignment = %a.id, error = %e, "{what} failed; trying again while the lease may hold");
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_secs(2));
        match client.heartbeat(pod, &a.id, a.fence) {
            Ok(()) => {
                answered = Instant::now();
                if failures >= tries {
                    return Err(Gave::Up(e));
                }
            }
            Err(ClientError::Lost { message }) => {
                tracing::warn!(assignment = %a.id, %message, "the claim was lost while {what} was retried");
                return Err(Gave::Lost);
            }
            Err(_) => {}
        }
    }
}

/// Whether `e` is one a network drop or a server restart makes: no answer, or a 5xx.
pub(crate) fn passing(e: &ClientError) -> bool {
    match e {
        ClientError::Unreachable { .. } => true,
        ClientError::Refused { status, .. } => *status >= 500,
        ClientError::Lost { .. } => false,
    }
}

/// How long `work`'s claim lasts without a heartbeat.
pub(crate) fn lease_of(work: &Work) -> Duration {
    Duration::from_millis(work.lease_ms.max(1000) as u64)
}
