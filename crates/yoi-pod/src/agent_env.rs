//! The whole environment an agent (or a verifier command) runs with; nothing else of the pod's
//! environment reaches it, because the runner clears the child's environment first.
//!
//! From the pod's own environment only `PATH`, `HOME`, `LANG`, `LC_ALL`, `TMPDIR`, `USER` and
//! the names the profile lets through pass, and never a `YOI_*` variable. The assignment's own
//! `YOI_*` values (its server, its short-lived token, ticket, step, worktree, …) are set last,
//! after the profile's fixed values, so the token an agent sees is its attempt's and never the
//! pod's. git's background maintenance is kept in the foreground, inside the agent's process
//! group, so the kill ladder reaches it.

use std::path::Path;

use crate::client::Work;
use crate::PodSettings;

/// The agent's whole environment: PATH, HOME, LANG, TMPDIR and the profile's passthrough names
/// from the pod's environment, the profile's fixed values, `TERM=dumb`, and the `YOI_*`
/// variables of the assignment.
pub(crate) fn agent_env(
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

/// The files and variables that make the agent's own HTTPS to the server (`$YOI_SERVER`: its
/// MCP over HTTP, a script calling the API) trust what the pod trusts, when that is not the
/// web's roots: `--ca`'s certificates or the one a pin names, written to the run folder as
/// `server-ca.pem`. Node CLIs (Claude Code, Gemini CLI, Codex's launcher, OpenCode's Bun) add
/// `NODE_EXTRA_CA_CERTS` to their roots. OpenSSL, Python (`requests`, httpx) and Rust CLIs
/// read one file in place of their roots (`SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`), so those get
/// `ca-bundle.pem`: the roots the agent had (its `SSL_CERT_FILE`, else the system's bundle)
/// followed by the server's. Without a bundle of roots to start from only the Node variable is
/// set: replacing the roots would cut the agent off from its model's provider.
pub(crate) fn server_trust(
    settings: &PodSettings,
    env: &[(String, String)],
    run_dir: &Path,
) -> Result<Vec<(String, String)>, String> {
    let Some(pem) = crate::tls::server_certificates_pem(&settings.trust, &settings.server)? else {
        return Ok(Vec::new());
    };
    let ca = run_dir.join("server-ca.pem");
    std::fs::write(&ca, &pem).map_err(|e| format!("{}: {e}", ca.display()))?;
    let mut vars = vec![("NODE_EXTRA_CA_CERTS".to_string(), ca.display().to_string())];
    let had = env
        .iter()
        .find(|(k, _)| k == "SSL_CERT_FILE")
        .map(|(_, v)| v.clone());
    let roots = had
        .into_iter()
        .chain(SYSTEM_BUNDLES.iter().map(|p| p.to_string()));
    if let Some(roots) = roots.filter_map(|p| std::fs::read_to_string(p).ok()).next() {
        let bundle = run_dir.join("ca-bundle.pem");
        std::fs::write(&bundle, format!("{}\n{pem}", roots.trim_end()))
            .map_err(|e| format!("{}: {e}", bundle.display()))?;
        for name in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"] {
            vars.push((name.to_string(), bundle.display().to_string()));
        }
    } else {
        tracing::warn!("no bundle of roots found to add the server's certificate to; only NODE_EXTRA_CA_CERTS is set for the agent");
    }
    Ok(vars)
}

/// Where distributions keep the bundle of the web's roots (Debian and Ubuntu, Fedora and
/// RHEL, Alpine and macOS's OpenSSL, openSUSE).
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
];

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
