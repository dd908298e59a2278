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
/// namespace can be made, leaves the run only a loopback of its own). A list of `host:port`
/// (`["api.anthropic.com:443"]`) lets the run reach only those, through the pod's proxy: the
/// run's only TCP connection may be to the proxy, which lets through `CONNECT` and plain HTTP
/// requests for the listed destinations only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    On,
    Off,
    Allow(Vec<String>),
}

impl Network {
    /// Whether `host:port` is one of the listed destinations (hosts compared without case).
    pub fn allows(&self, host: &str, port: u16) -> bool {
        match self {
            Network::On => true,
            Network::Off => false,
            Network::Allow(list) => list.iter().any(|d| {
                d.rsplit_once(':').is_some_and(|(h, p)| {
                    h.trim_matches(|c| c == '[' || c == ']')
                        .eq_ignore_ascii_case(host.trim_matches(|c| c == '[' || c == ']'))
                        && p.parse::<u16>() == Ok(port)
                })
            }),
        }
    }
}

impl Serialize for Network {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::On => s.serialize_str("on"),
            Network::Off => s.serialize_str("off"),
            Network::Allow(list) => list.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            List(Vec<String>),
        }
        use serde::de::Error;
        match Raw::deserialize(d)? {
            Raw::Word(w) if w == "on" => Ok(Network::On),
            Raw::Word(w) if w == "off" => Ok(Network::Off),
            Raw::Word(w) => Err(D::Error::custom(format!(
                "network must be \"on\", \"off\" or a list of \"host:port\", not {w:?}"
            ))),
            Raw::List(list) => {
                for d in &list {
                    let ok = d.rsplit_once(':').is_some_and(|(h, p)| {
                        !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0)
                    });
                    if !ok {
                        return Err(D::Error::custom(format!(
                            "{d:?} in a network list is not host:port"
                        )));
                    }
                }
                Ok(Network::Allow(list))
            }
        }
    }
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
    /// The loopback port of the pod's proxy, the run's only way out when the network is a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_port: Option<u16>,
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
        let net = match &self.network {
            Network::On => "network on".to_string(),
            Network::Off => "network off".to_string(),
            Network::Allow(list) => format!("network only to {}", list.join(" ")),
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
        let s: SandboxSection = toml_like(
            r#"{"network":{"default":"off","coder":["api.example.com:443","[::1]:8080"]}}"#,
        );
        let coder = s.network.for_role("coder");
        assert!(coder.allows("API.example.com", 443));
        assert!(coder.allows("::1", 8080));
        assert!(!coder.allows("api.example.com", 80));
        assert!(!coder.allows("evil.example", 443));
        assert!(!s
            .network
            .for_role("verifier")
            .allows("api.example.com", 443));
    }

    #[test]
    fn a_network_that_is_neither_a_switch_nor_host_port_is_refused() {
        for bad in [r#""sometimes""#, r#"["api.example.com"]"#, r#"["host:0"]"#] {
            let err = serde_json::from_str::<Network>(bad)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("network") || err.contains("host:port"),
                "{bad}: {err}"
            );
        }
        let list: Network = serde_json::from_str(r#"["a:1"]"#).unwrap();
        assert_eq!(serde_json::to_string(&list).unwrap(), r#"["a:1"]"#);
    }

    #[test]
    fn an_unconfined_policy_says_so() {
        let p = Policy {
            write: vec![],
            deny_read: vec![],
            tmp: PathBuf::from("/t"),
            network: Network::On,
            proxy_port: None,
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
