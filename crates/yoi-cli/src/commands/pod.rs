//! `yoi pod run | list`. `run` reads what the pod runtime must not (the environment, the
//! workspace's server and configuration), hands it over as settings, and turns SIGTERM and
//! SIGINT into the runtime's stop request.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::cli::{PodCommand, PodRunArgs};
use crate::context::{now, Env};
use crate::error::CliError;
use crate::output;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

pub fn run(env: &Env, cmd: PodCommand) -> Result<(), CliError> {
    match cmd {
        PodCommand::Run(a) => run_pod(env, &a),
        PodCommand::List { json } => list(env, json),
        PodCommand::Status {
            file,
            max_age,
            json,
        } => status(&file, &max_age, json),
    }
}

/// `yoi pod status --file PATH`: ready (exit 0) or why not (exit 1), from the pod's own status.
fn status(file: &std::path::Path, max_age: &str, json: bool) -> Result<(), CliError> {
    use yoi_pod::status::{not_ready, now_ms, PodStatus};
    let max_age_ms = yoi_core::flow::parse_duration(max_age)
        .map_err(|e| CliError::Usage(format!("--max-age: {e}")))?
        .saturating_mul(1000) as i64;
    let text = std::fs::read_to_string(file).map_err(|e| {
        CliError::Refused(format!(
            "no pod status at {}: {e} (the pod has not started, or runs without --status-file)",
            file.display()
        ))
    })?;
    let s: PodStatus = serde_json::from_str(&text).map_err(|e| {
        CliError::Refused(format!(
            "{} is not a pod's status file: {e}",
            file.display()
        ))
    })?;
    // SAFETY: signal 0 checks that the process exists and sends nothing.
    let alive = unsafe { libc::kill(s.pid as libc::pid_t, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    let now = now_ms();
    let why = not_ready(&s, now, max_age_ms, alive);
    if json {
        output::json(&serde_json::json!({
            "ready": why.is_none(),
            "reason": why,
            "status": s,
        }));
    } else if why.is_none() {
        let doing = match (&s.ticket, s.state) {
            (Some(t), _) => format!("working on {t}"),
            (None, st) => st.as_str().to_string(),
        };
        let answered = s
            .server_answered_ms
            .map(|ms| format!("{:.0} s ago", (now - ms).max(0) as f64 / 1000.0))
            .unwrap_or_default();
        println!(
            "ready: pod {} ({}) {doing}; {} answered {answered}",
            s.pod.as_deref().unwrap_or(&s.name),
            s.role.as_deref().unwrap_or("?"),
            s.server
        );
    }
    // Not ready: exit 1, the reason on stderr (where a kubelet's probe output is kept).
    match why {
        None => Ok(()),
        Some(reason) => Err(CliError::Refused(format!("not ready: {reason}"))),
    }
}

fn run_pod(env: &Env, a: &PodRunArgs) -> Result<(), CliError> {
    super::log_to_stderr(false);
    let ws = env.files_if_any("yoi pod run")?;
    let trust = yoi_pod::tls::Trust::from_args(a.ca.as_deref(), a.pin.as_deref())
        .map_err(CliError::Usage)?;
    let (server, trust) = match (&a.server, &ws) {
        (Some(s), _) => (s.clone(), trust),
        (None, Some(ws)) => match yoi_engine::store::server_file::live(&ws.local_dir()) {
            // The workspace's own server: with TLS, exactly the certificate it wrote down.
            Some(info) => match (&info.tls_fingerprint, a.ca.is_none() && a.pin.is_none()) {
                (Some(pin), true) => (
                    info.base_url(),
                    yoi_pod::tls::Trust::Pin(
                        yoi_pod::tls::parse_pin(pin).map_err(CliError::Refused)?,
                    ),
                ),
                _ => (info.base_url(), trust),
            },
            None => {
                return Err(CliError::Refused(
                    "no yoi server is running for this workspace; start `yoi serve` or pass --server URL".into(),
                ))
            }
        },
        (None, None) => {
            return Err(CliError::Usage(
                "outside a workspace, pass --server URL (and --token or YOI_TOKEN)".into(),
            ))
        }
    };
    // Nothing the pod starts may read its memory or environment (its token) through /proc.
    // SAFETY: prctl on this process only.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    let token = pod_token(a)?
        .or_else(|| std::env::var("YOI_TOKEN").ok())
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            CliError::Usage(format!(
                "a pod needs a pod token: pass --token-file FILE or set YOI_TOKEN (create one with `yoi token create --name {r} --scope pod:{r}`)",
                r = a.role
            ))
        })?;
    let agents = ws
        .as_ref()
        .map(|w| w.config.agents.clone())
        .unwrap_or_default();
    let agent = a
        .agent
        .clone()
        .or_else(|| ws.as_ref().and_then(|w| w.config.pods.agent_for(&a.role)))
        .ok_or_else(|| {
            CliError::Usage(format!(
                "no agent for role {}: pass --agent NAME or set `[pods.agent] {} = \"NAME\"` (`yoi agent list`)",
                a.role, a.role
            ))
        })?;
    let profile = yoi_pod::profiles::resolve(&agent, &agents).map_err(CliError::Usage)?;
    if yoi_core::Role::Verifier.is(&a.role) && agent != yoi_pod::VERIFY_PROFILE {
        eprintln!(
            "warning: a verifier pod runs the brief's validation commands itself; agent `{agent}` is not run in their place ([pods.agent] verifier)"
        );
    }
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| format!("{}-{}-{}", a.role, host, std::process::id()));
    let state_dir = match &ws {
        Some(w) => w.local_dir().join("pods").join(&name),
        None => std::env::temp_dir().join(format!("yoi-pod-{name}")),
    };
    let kill_grace = ws.as_ref().map_or(10, |w| w.config.pods.kill_grace_secs);
    let stall_secs = ws.as_ref().map_or(300, |w| w.config.pods.stall_secs);
    let sandbox = sandbox(ws.as_ref())?;
    sandbox
        .enforcement_for(&profile)
        .map_err(CliError::Refused)?;
    tracing::info!(sandbox = %sandbox.enforcement().map(|e| e.describe()).unwrap_or_default(), "the pod's sandbox");
    let agent_label = yoi_pod::agent_label(&agent, &profile);
    // Absolute: git runs in the cache, not here.
    let absolute = |p: &std::path::PathBuf| {
        std::path::absolute(p)
            .map_err(|e| CliError::Usage(format!("the path {}: {e}", p.display())))
    };
    let remote = match &a.cache {
        Some(cache) => Some(yoi_pod::remote::RemoteGit {
            cache: absolute(cache)?,
            ca_file: a.ca.as_ref().map(absolute).transpose()?,
            pinned_key: None,
        }),
        None => None,
    };
    let settings = yoi_pod::PodSettings {
        server,
        trust,
        remote,
        token: token.trim().to_string(),
        name,
        host,
        profile_name: agent,
        profile,
        state_dir,
        env: std::env::vars().collect(),
        kill_grace: Duration::from_secs(kill_grace),
        stall: (stall_secs > 0).then(|| Duration::from_secs(stall_secs)),
        once: a.once,
        wait_ms: a.wait_ms,
        sandbox,
        agent_label,
        status_file: a.status_file.as_ref().map(absolute).transpose()?,
    };
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    let summary = yoi_pod::run(&settings, &STOP).map_err(|e| CliError::Refused(e.to_string()))?;
    eprintln!(
        "pod {} stopped: {} completed, {} failed, {} lost",
        summary.pod, summary.completed, summary.failed, summary.lost
    );
    // `--once` says how its one attempt went: 0 completed, 1 failed or lost, 3 no work.
    match (a.once, summary.completed, summary.failed + summary.lost) {
        (true, 0, 0) => Err(CliError::NoWork),
        (true, 0, _) => Err(CliError::Refused(format!(
            "the attempt did not complete ({} failed, {} lost); its thread says why",
            summary.failed, summary.lost
        ))),
        _ => Ok(()),
    }
}

/// The token from `--token-file` or `--token-fd`, if one was given.
fn pod_token(a: &PodRunArgs) -> Result<Option<String>, CliError> {
    use std::io::Read;
    if let Some(path) = &a.token_file {
        return std::fs::read_to_string(path).map(Some).map_err(|e| {
            CliError::Usage(format!("reading the token file {}: {e}", path.display()))
        });
    }
    let Some(fd) = a.token_fd else {
        return Ok(None);
    };
    if fd < 3 {
        return Err(CliError::Usage(format!(
            "--token-fd {fd} is a standard stream; pass an inherited descriptor of 3 or more"
        )));
    }
    // SAFETY: the descriptor was inherited for this purpose; it is read once and closed here,
    // so nothing the pod starts inherits it.
    let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let mut token = String::new();
    file.read_to_string(&mut token)
        .map_err(|e| CliError::Usage(format!("reading the token from descriptor {fd}: {e}")))?;
    Ok(Some(token))
}

/// The pod's sandbox: what this machine offers (asked of the launcher, this same program) and
/// the workspace's `[sandbox]`; its `enforcement()` refuses, naming the setting that opts out,
/// when nothing would confine the agents.
pub fn sandbox(
    ws: Option<&yoi_engine::store::Workspace>,
) -> Result<yoi_pod::sandbox::Sandbox, CliError> {
    let exe = std::env::current_exe().map_err(|e| {
        CliError::Refused(format!(
            "finding the yoi program for the sandbox launcher: {e}"
        ))
    })?;
    let launcher = vec![exe.display().to_string(), "__sandbox".to_string()];
    let probe = yoi_pod::sandbox::Sandbox::probe(&launcher).map_err(CliError::Refused)?;
    let sandbox = yoi_pod::sandbox::Sandbox {
        launcher,
        probe,
        section: ws.map(|w| w.config.sandbox.clone()).unwrap_or_default(),
        home: std::env::var_os("HOME").map(std::path::PathBuf::from),
        proxy: Default::default(),
    };
    Ok(sandbox)
}

fn list(env: &Env, json: bool) -> Result<(), CliError> {
    let (_ws, index) = env.workspace_with_index("yoi pod list")?;
    let now_ms = now().unix_millis();
    let pods = index.pods(now_ms, 3_600_000)?;
    if json {
        output::json(&serde_json::json!({ "count": pods.len(), "pods": pods }));
        return Ok(());
    }
    if pods.is_empty() {
        println!("no pods");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = pods
        .iter()
        .map(|p| {
            vec![
                p.id.clone(),
                p.role.clone(),
                p.state.as_str().to_string(),
                p.assignment.clone().unwrap_or_else(|| "-".into()),
                format!("{}s", (now_ms - p.heartbeat_ms).max(0) / 1000),
                p.profile.clone().unwrap_or_else(|| "-".into()),
                p.sandbox.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    output::table(
        &[
            "POD",
            "ROLE",
            "STATE",
            "ASSIGNMENT",
            "HEARD",
            "AGENT",
            "SANDBOX",
        ],
        &rows,
    );
    Ok(())
}
