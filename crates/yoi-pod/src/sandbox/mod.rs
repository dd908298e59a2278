//! The sandbox of every agent and validation command (docs/security.md).
//!
//! The pod decides the [`Policy`] of each run ([`Sandbox::policy`]) and starts the run through
//! its launcher (`yoi __sandbox POLICY -- ARGV…`, in the CLI), which enters namespaces where
//! they can be made and confines the run's process before `exec` ([`confine`]): Landlock rules
//! for what it may read and write and, from ABI 6, no signals or abstract sockets out of its
//! domain (Landlock also keeps `/proc/<pid>/environ`, `mem` and `maps` of every process outside
//! the sandbox closed to it); no new privileges; and for a root pod no capabilities, so a root
//! agent keeps uid 0 but not its powers.
//!
//! What the kernel offers is found once, when the pod starts, by running the launcher itself
//! with `--probe` ([`Sandbox::probe`]): the policy then names exactly the mechanisms to use,
//! and a launcher that cannot set one up fails the run instead of running it unconfined.
//! Where neither Landlock nor namespaces exist the pod refuses to run agents unless the
//! workspace says `[sandbox] mode = "off"`.

/// The launcher's exit status when the sandbox could not be set up (nothing ran).
pub const SETUP_FAILED: i32 = 125;
/// The prefix of the launcher's own messages on stderr.
pub const PREFIX: &str = "yoi sandbox: ";

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use yoi_agent::policy::{Enforcement, Mode, Network, Policy, SandboxSection, CREDENTIALS};

pub use yoi_agent::rules::confine;

/// What the kernel offers a pod, as the launcher found it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// The Landlock ABI (0 when Landlock is off or missing).
    pub landlock_abi: u32,
    /// Whether PID and mount namespaces (and a user namespace when not root) can be made and
    /// a `/proc` mounted in them.
    pub namespaces: bool,
    /// Why namespaces cannot be made, when they cannot.
    pub namespaces_error: Option<String>,
    pub root: bool,
}

/// The pod's sandbox: what the kernel offers and what the workspace asks.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// The launcher: the program and the arguments before the policy (`[yoi, __sandbox]`).
    pub launcher: Vec<String>,
    pub probe: Probe,
    pub section: SandboxSection,
    /// The pod's home folder (credential paths and `~/` are under it).
    pub home: Option<PathBuf>,
    /// The port of the pod's proxy, started the first time a run's network is a list (a pod
    /// runs one role, so one list).
    pub proxy: std::sync::Arc<std::sync::OnceLock<u16>>,
}

impl Sandbox {
    /// Ask the launcher what this machine offers.
    pub fn probe(launcher: &[String]) -> Result<Probe, String> {
        let (program, args) = launcher
            .split_first()
            .ok_or("the sandbox launcher is not set")?;
        let out = std::process::Command::new(program)
            .args(args)
            .arg("--probe")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| format!("starting the sandbox launcher {program}: {e}"))?;
        serde_json::from_slice(&out.stdout).map_err(|e| {
            format!(
                "the sandbox launcher {program} answered its probe with {:?}: {e}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    /// The mechanisms runs get: everything the machine offers, or nothing when the workspace
    /// turned the sandbox off. An error, naming the setting that opts out, when nothing
    /// confines and the sandbox is on.
    pub fn enforcement(&self) -> Result<Enforcement, String> {
        if self.section.mode == Mode::Off {
            return Ok(Enforcement {
                off: true,
                ..Enforcement::default()
            });
        }
        let e = Enforcement {
            landlock_abi: self.probe.landlock_abi,
            namespaces: self.probe.namespaces,
            drop_capabilities: self.probe.root,
            off: false,
        };
        if e.landlock_abi == 0 {
            return Err(format!(
                "no sandbox: this kernel offers no Landlock ({}), so agents and validation commands would run unconfined; \
                 yoi refuses to start them. Use a kernel with Landlock (5.13 or later, `lsm=landlock` enabled), or opt out \
                 with `[sandbox] mode = \"off\"` in .yoi/workspace.toml",
                match &self.probe.namespaces_error {
                    Some(ns) => format!("and namespaces fail: {ns}"),
                    None => "namespaces alone do not limit reads and writes".to_string(),
                }
            ));
        }
        Ok(e)
    }

    /// [`Sandbox::enforcement`] for runs of `profile`, refused when the profile cannot run as
    /// it is here: Claude Code bypasses its permission prompts as root only when told it is
    /// sandboxed (`IS_SANDBOX=1`), which yoi says only when its own sandbox wraps the run.
    /// Refused before any ticket is spent.
    pub fn enforcement_for(
        &self,
        profile: &yoi_agent::AgentProfile,
    ) -> Result<Enforcement, String> {
        let e = self.enforcement()?;
        let bypasses = profile
            .argv
            .iter()
            .any(|a| a.contains("bypassPermissions") || a.contains("dangerously-skip-permissions"));
        if self.probe.root && bypasses && !e.confines() {
            return Err("this agent bypasses its permission prompts, which it does as root only inside a sandbox, and yoi's sandbox is off ([sandbox] mode = \"off\"): turn the sandbox on, or run the pod as a normal user".into());
        }
        Ok(e)
    }

    /// The policy of one run by `role` in `workdir`, with its run folder and the agent's state
    /// paths (`~/.claude/` a folder, made when missing; `~/.claude.json` a file).
    pub fn policy(
        &self,
        role: &str,
        workdir: &Path,
        run_dir: &Path,
        state: &[String],
    ) -> Result<Policy, String> {
        let layout = yoi_git::worktree_layout(workdir).map_err(|e| e.to_string())?;
        self.policy_in(role, workdir, &layout, run_dir, state)
    }

    /// [`Sandbox::policy`] for a worktree whose layout is already read.
    fn policy_in(
        &self,
        role: &str,
        workdir: &Path,
        layout: &yoi_git::WorktreeLayout,
        run_dir: &Path,
        state: &[String],
    ) -> Result<Policy, String> {
        let enforce = self.enforcement()?;
        let tmp = run_dir.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let objects = run_dir.join("objects");
        std::fs::create_dir_all(&objects).map_err(|e| format!("{}: {e}", objects.display()))?;
        let mut write = vec![canonical(workdir)?, canonical(run_dir)?];
        // The worktree's own administrative folder (its HEAD, index and logs); the main
        // repository's config, hooks, refs and objects stay read-only.
        write.push(layout.admin_dir.clone());
        for s in state {
            let Some(path) = self.expand(s, &layout.main_root) else {
                continue;
            };
            if s.ends_with('/') {
                std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            if path.exists() {
                write.push(canonical(&path)?);
            }
        }
        let mut deny_read = vec![layout.main_root.join(".yoi").join("local")];
        deny_read.extend(
            layout
                .other_worktrees
                .iter()
                .filter(|w| **w != write[0])
                .cloned(),
        );
        if let Some(home) = &self.home {
            deny_read.extend(CREDENTIALS.iter().map(|c| home.join(c)));
        }
        deny_read.extend(
            self.section
                .deny_read
                .iter()
                .filter_map(|d| self.expand(d, &layout.main_root)),
        );
        let deny_read = deny_read
            .into_iter()
            .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
            .collect();
        let network = self.section.network.for_role(role);
        let tcp_rules = enforce.landlock_abi >= 4;
        match &network {
            Network::Off if !enforce.off && !tcp_rules && !enforce.namespaces => {
                return Err(format!(
                    "[sandbox.network] {role} = \"off\" cannot be enforced here: it needs Landlock ABI 4 (this kernel has {}) or a network namespace",
                    enforce.landlock_abi
                ))
            }
            Network::Allow(_) if !enforce.off && !tcp_rules => {
                return Err(format!(
                    "[sandbox.network] {role} lists destinations, which needs Landlock ABI 4 to hold the run to the proxy (this kernel has {})",
                    enforce.landlock_abi
                ))
            }
            _ => {}
        }
        let proxy_port = match &network {
            Network::Allow(_) if !enforce.off => Some(self.proxy_for(&network)?),
            _ => None,
        };
        Ok(Policy {
            write,
            deny_read,
            tmp,
            network,
            proxy_port,
            enforce,
        })
    }

    /// The pod's proxy for `network`'s list, started once.
    fn proxy_for(&self, network: &Network) -> Result<u16, String> {
        if let Some(port) = self.proxy.get() {
            return Ok(*port);
        }
        let port = yoi_agent::proxy::start(network.clone())
            .map_err(|e| format!("starting the sandbox's network proxy: {e}"))?;
        Ok(*self.proxy.get_or_init(|| port))
    }

    /// `~/x` under the home folder, a relative path under the repository root.
    fn expand(&self, path: &str, root: &Path) -> Option<PathBuf> {
        let path = path.trim_end_matches('/');
        if let Some(rest) = path.strip_prefix("~/") {
            return self.home.as_ref().map(|h| h.join(rest));
        }
        let p = Path::new(path);
        Some(if p.is_absolute() {
            p.to_path_buf()
        } else {
            root.join(p)
        })
    }
}

fn canonical(p: &Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// One run's sandbox as the pod starts it: the policy, what it adds to the run's environment
/// and the launcher in front of its argv.
pub(crate) struct Confined {
    pub policy: Policy,
    /// The launcher and the policy as JSON (`None` when the sandbox is off).
    pub wrap: Option<(Vec<String>, String)>,
    /// `TMPDIR`, and the attempt's own git object folder with the main one as an alternate.
    pub env: Vec<(String, String)>,
    /// The attempt's object folder, for bringing its commits in.
    pub objects: PathBuf,
}

impl Sandbox {
    /// The sandbox of one run by `role` in `workdir`.
    pub(crate) fn confine_run(
        &self,
        role: &str,
        workdir: &Path,
        run_dir: &Path,
        state: &[String],
    ) -> Result<Confined, String> {
        let layout = yoi_git::worktree_layout(workdir).map_err(|e| e.to_string())?;
        let policy = self.policy_in(role, workdir, &layout, run_dir, state)?;
        let objects = run_dir.join("objects");
        if policy.enforce.off {
            tracing::warn!(
                run = %run_dir.display(),
                "the sandbox is off ([sandbox] mode = \"off\"): this run is not confined"
            );
            return Ok(Confined {
                policy,
                wrap: None,
                env: Vec::new(),
                objects,
            });
        }
        // `IS_SANDBOX=1` tells an agent that refuses to run unconfined as root (Claude Code
        // with bypassed permissions) that it is confined; it is set only here, when it is true.
        let mut env = vec![
            ("TMPDIR".to_string(), policy.tmp.display().to_string()),
            ("IS_SANDBOX".to_string(), "1".to_string()),
        ];
        if let Some(port) = policy.proxy_port {
            let url = format!("http://127.0.0.1:{port}");
            for name in [
                "HTTP_PROXY",
                "HTTPS_PROXY",
                "ALL_PROXY",
                "http_proxy",
                "https_proxy",
                "all_proxy",
            ] {
                env.push((name.to_string(), url.clone()));
            }
            env.push(("NO_PROXY".to_string(), String::new()));
            env.push(("no_proxy".to_string(), String::new()));
        }
        env.extend(yoi_git::attempt_git_env(&objects, &layout.common_dir));
        let json = serde_json::to_string(&policy).map_err(|e| e.to_string())?;
        Ok(Confined {
            wrap: Some((self.launcher.clone(), json)),
            policy,
            env,
            objects,
        })
    }
}

/// The launcher's own message when it could not set the sandbox up (it then exits with
/// [`SETUP_FAILED`] and nothing ran).
pub(crate) fn setup_failure(exit_code: Option<i32>, stderr: &str) -> Option<String> {
    if exit_code != Some(SETUP_FAILED) {
        return None;
    }
    stderr
        .lines()
        .find_map(|l| l.strip_prefix(PREFIX))
        .map(|m| format!("the sandbox could not be set up: {m}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(probe: Probe, mode: Mode) -> Sandbox {
        Sandbox {
            launcher: vec!["yoi".into(), "__sandbox".into()],
            probe,
            section: SandboxSection {
                mode,
                ..SandboxSection::default()
            },
            home: None,
            proxy: Default::default(),
        }
    }

    #[test]
    fn without_landlock_no_agent_runs_unless_the_workspace_opts_out() {
        let bare = Probe {
            landlock_abi: 0,
            namespaces: true,
            namespaces_error: None,
            root: false,
        };
        let refused = sandbox(bare.clone(), Mode::On).enforcement().unwrap_err();
        assert!(refused.contains("[sandbox] mode = \"off\""), "{refused}");
        let off = sandbox(bare, Mode::Off).enforcement().unwrap();
        assert!(off.off && !off.confines());
    }

    #[test]
    fn a_root_pod_drops_capabilities_and_uses_what_the_kernel_offers() {
        let e = sandbox(
            Probe {
                landlock_abi: 7,
                namespaces: false,
                namespaces_error: Some("unshare: EPERM".into()),
                root: true,
            },
            Mode::On,
        )
        .enforcement()
        .unwrap();
        assert_eq!(e.describe(), "landlock v7, capabilities dropped");
    }

    #[test]
    fn a_profile_that_bypasses_prompts_is_refused_as_root_only_when_unconfined() {
        let claude = crate::profiles::builtins().remove("claude").unwrap();
        let script = crate::profiles::builtins().remove("script").unwrap();
        let probe = |root| Probe {
            landlock_abi: 7,
            namespaces: true,
            namespaces_error: None,
            root,
        };
        let err = sandbox(probe(true), Mode::Off)
            .enforcement_for(&claude)
            .unwrap_err();
        assert!(err.contains("bypasses its permission prompts"), "{err}");
        assert!(sandbox(probe(true), Mode::On)
            .enforcement_for(&claude)
            .is_ok());
        assert!(sandbox(probe(false), Mode::Off)
            .enforcement_for(&claude)
            .is_ok());
        assert!(sandbox(probe(true), Mode::Off)
            .enforcement_for(&script)
            .is_ok());
    }

    #[test]
    fn a_launcher_failure_is_named_and_an_agent_failure_is_not() {
        let err = "noise\nyoi sandbox: Landlock: missing feature\n";
        assert_eq!(
            setup_failure(Some(SETUP_FAILED), err).as_deref(),
            Some("the sandbox could not be set up: Landlock: missing feature")
        );
        assert_eq!(setup_failure(Some(1), err), None);
        assert_eq!(
            setup_failure(Some(SETUP_FAILED), "an agent's own 125\n"),
            None
        );
    }
}
