//! The sandbox every agent and validation command runs in (docs/security.md): what it may
//! write, what it may not read, whether it reaches the network, and which kernel mechanisms
//! enforce that. One [`Policy`] is built by the pod for each run, enforced by the pod's
//! launcher, recorded with the attempt (its [`Policy::summary`]) and shown on the ticket page
//! and in `yoi pod list`.
//!
//! The rules are the same for every profile, whatever the agent's own settings say: writes only
//! to the attempt's working directory (and its git administrative folder), its run folder, a
//! private temporary folder and the state folders its profile names; reads everywhere except
//! the workspace's `.yoi/local` (the run folder aside), other worktrees and the credential
//! list; devices only the harmless ones.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Paths below the home folder that no run may read, whatever the workspace adds in
/// `[sandbox] deny_read`.
pub const CREDENTIALS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".config/gh",
    ".netrc",
    ".git-credentials",
    ".docker",
    ".kube",
    ".config/gcloud",
    ".azure",
    ".pgpass",
];

/// `[sandbox]` in `.yoi/workspace.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxSection {
    /// `on` (the default): no agent or command starts without a sandbox; `off` runs them
    /// unconfined, logged once per attempt and shown on the pods page.
    pub mode: Mode,
    /// More paths no run may read (`~/` is the pod's home; relative paths are relative to the
    /// repository root).
    pub deny_read: Vec<String>,
    /// Network access per role (`coder = "on"`, `verifier = "off"`); a role not named gets
    /// `default`.
    pub network: NetworkSection,
}

impl Default for SandboxSection {
    fn default() -> Self {
        SandboxSection {
            mode: Mode::On,
            deny_read: Vec::new(),
            network: NetworkSection::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    On,
    Off,
}

/// `[sandbox.network]`: `default = "on"` and one key per role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetworkSection {
    pub default: Network,
    #[serde(flatten)]
    pub roles: std::collections::BTreeMap<String, Network>,
}

impl Default for NetworkSection {
    fn default() -> Self {
        NetworkSection {
            default: Network::On,
            roles: Default::default(),
        }
    }
}

impl NetworkSection {
    /// The network setting of `role`'s runs.
    pub fn for_role(&self, role: &str) -> Network {
        self.roles
            .get(role)
            .cloned()
            .unwrap_or_else(|| self.default.clone())
    }
}

/// Whether a run reaches the network. `on` is the default: a coder must reach its model and a
/// build its registries. `off` denies every TCP connection and bind (and, where a network
/// namespace can be made, leaves the run only a loopback of its own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    On,
    Off,
}

/// What one run may do, and how that is enforced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Folders (and files) the run may write, read and list.
    pub write: Vec<PathBuf>,
    /// Folders and files the run may not read, list or write (a write path inside one stays
    /// writable).
    pub deny_read: Vec<PathBuf>,
    /// The private temporary folder (`TMPDIR`; also mounted on `/tmp` where a mount namespace
    /// exists).
    pub tmp: PathBuf,
    pub network: Network,
    pub enforce: Enforcement,
}

/// The kernel mechanisms a policy is enforced with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enforcement {
    /// The Landlock ABI the rules are written for; 0 is no Landlock.
    pub landlock_abi: u32,
    /// A PID and a mount namespace (and a user namespace when the pod is not root): `/proc`
    /// shows the run's processes only, `/tmp` is private, and when the run's first process
    /// ends every process it left is killed.
    pub namespaces: bool,
    /// Capabilities dropped (the pod runs as root): a root agent keeps its uid but not the
    /// powers of root.
    pub drop_capabilities: bool,
    /// `[sandbox] mode = "off"`: nothing is enforced.
    pub off: bool,
}

impl Enforcement {
    /// Whether anything confines the run.
    pub fn confines(&self) -> bool {
        !self.off && (self.landlock_abi > 0 || self.namespaces)
    }

    /// One line: `landlock v7, pid+mount namespaces, capabilities dropped` or `off`.
    pub fn describe(&self) -> String {
        if self.off {
            return "off ([sandbox] mode = \"off\")".into();
        }
        let mut parts = Vec::new();
        if self.landlock_abi > 0 {
            parts.push(format!("landlock v{}", self.landlock_abi));
        }
        if self.namespaces {
            parts.push("pid+mount namespaces".to_string());
        }
        if self.drop_capabilities {
            parts.push("capabilities dropped".to_string());
        }
        if parts.is_empty() {
            "none available".into()
        } else {
            parts.join(", ")
        }
    }
}

impl Policy {
    /// What the attempt records and the ticket page shows: the mechanisms, the network and the
    /// folders it could write.
    pub fn summary(&self) -> String {
        if self.enforce.off {
            return self.enforce.describe();
        }
        let net = match self.network {
            Network::On => "network on",
            Network::Off => "network off",
        };
        let writes: Vec<String> = self.write.iter().map(|p| p.display().to_string()).collect();
        format!(
            "{}; {net}; writes {}",
            self.enforce.describe(),
            writes.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_reads_roles_and_a_default_network() {
        let s: SandboxSection = toml_like(
            r#"{"mode":"on","deny_read":["~/.secrets"],"network":{"default":"on","verifier":"off"}}"#,
        );
        assert_eq!(s.network.for_role("verifier"), Network::Off);
        assert_eq!(s.network.for_role("coder"), Network::On);
        assert_eq!(s.deny_read, vec!["~/.secrets".to_string()]);
    }

    #[test]
    fn an_unconfined_policy_says_so() {
        let p = Policy {
            write: vec![],
            deny_read: vec![],
            tmp: PathBuf::from("/t"),
            network: Network::On,
            enforce: Enforcement {
                off: true,
                ..Enforcement::default()
            },
        };
        assert!(!p.enforce.confines());
        assert!(p.summary().starts_with("off"));
        let e = Enforcement {
            landlock_abi: 7,
            namespaces: true,
            drop_capabilities: false,
            off: false,
        };
        assert!(e.confines());
        assert_eq!(e.describe(), "landlock v7, pid+mount namespaces");
    }

    fn toml_like<T: serde::de::DeserializeOwned>(json: &str) -> T {
        serde_json::from_str(json).unwrap()
    }
}
