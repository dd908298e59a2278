//! `.yoi/workspace.toml`: compiled-in defaults, then the file; the CLI layers environment and
//! flags on top through [`Config::apply`]. Reading never writes, and an unknown key or a bad
//! value is an error naming the file, key and line — never a silent fallback.

use std::path::{Component, Path, PathBuf};
use yoi_core::Role;

use serde::{Deserialize, Serialize};

use crate::error::StoreError;

pub const CONFIG_FILE: &str = "workspace.toml";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub workspace: WorkspaceSection,
    pub principal: PrincipalSection,
    pub roles: RolesSection,
    pub database: DatabaseSection,
    pub server: ServerSection,
    pub skills: SkillsSection,
    pub router: RouterSection,
    pub pods: PodsSection,
    pub flow: FlowSection,
    pub doctor: DoctorSection,
    /// What agents and validation commands may do (docs/security.md).
    pub sandbox: yoi_agent::policy::SandboxSection,
    /// Agent profiles by name (`[agents.NAME]`); they replace the built-in profile of the same
    /// name (docs/pods.md).
    pub agents: std::collections::BTreeMap<String, yoi_agent::profile::AgentProfile>,
    /// Model prices for cost estimates (`[prices."gpt-4o"] input = 2.5, output = 10.0`).
    pub prices: std::collections::BTreeMap<String, yoi_agent::profile::Price>,
    /// The forge pull requests go to (docs/forge.md); absent, flows end in a local merge.
    pub forge: Option<yoi_core::forge::ForgeSection>,
    /// Limits on spending per ticket, per day and per agent profile (docs/budgets.md).
    pub budget: BudgetSection,
    /// Attempts allowed to run at once per agent profile and per provider (docs/budgets.md).
    pub governor: GovernorSection,
    /// Where people are told that something waits on them (`[[notify]]`, docs/inbox.md).
    pub notify: Vec<crate::notify_config::NotifyChannel>,
    /// When yoi offers workflows from the tickets' history (docs/workflows.md, "Offers").
    pub workflows: WorkflowsSection,
}

/// `[workflows]`: how often yoi looks for workflows to offer, and the thresholds it offers at.
/// Offers are only ever offered: a person accepts each one (docs/workflows.md, "Offers").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkflowsSection {
    /// Seconds between two looks by `yoi serve` (the first one this long after it starts);
    /// 0: never by itself (`yoi workflow offers --detect` still looks).
    pub detect_every_secs: u64,
    /// Tickets the same instruction, follow-up or sequence of invocations must appear on
    /// before a new workflow or flow is offered.
    pub offer_min_tickets: usize,
    /// People's invocations of an `auto_invoke: false` workflow before `auto_invoke` is
    /// offered…
    pub auto_invoke_min_invocations: usize,
    /// …on at least this many tickets.
    pub auto_invoke_min_tickets: usize,
}

impl Default for WorkflowsSection {
    fn default() -> Self {
        WorkflowsSection {
            detect_every_secs: 600,
            offer_min_tickets: 3,
            auto_invoke_min_invocations: 5,
            auto_invoke_min_tickets: 3,
        }
    }
}

/// `[budget]`: what may be spent. A limit left out is no limit. Costs are reported or
/// estimated USD; tokens are input + output + cached. Days are UTC days.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetSection {
    /// Per ticket, over all its attempts and roles (a person adds to it with
    /// `yoi ticket budget ID --add USD`).
    pub ticket_usd: Option<f64>,
    pub ticket_tokens: Option<u64>,
    /// Per day, the whole workspace.
    pub day_usd: Option<f64>,
    pub day_tokens: Option<u64>,
    /// The share of a limit at which a person is told it is near (`budget_near`).
    pub soft: f64,
    /// How far past a hard limit an agent that streams its usage may run before it is stopped
    /// (0.1: at 110% of the limit); its work so far stays on its attempt.
    pub stop_margin: f64,
    /// Per agent profile per day: `[budget.agents.claude] day_usd = 20`.
    pub agents: std::collections::BTreeMap<String, AgentBudget>,
}

impl Eq for BudgetSection {}

impl Default for BudgetSection {
    fn default() -> Self {
        BudgetSection {
            ticket_usd: None,
            ticket_tokens: None,
            day_usd: None,
            day_tokens: None,
            soft: 0.8,
            stop_margin: 0.1,
            agents: Default::default(),
        }
    }
}

/// `[budget.agents.NAME]`: one agent profile's daily limits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentBudget {
    pub day_usd: Option<f64>,
    pub day_tokens: Option<u64>,
}

impl Eq for AgentBudget {}

/// `[governor]`: attempts running at once, per agent profile (`agents = { claude = 2 }`) and
/// per provider (`providers = { anthropic = 3 }`), on top of the pods per role. A pod over a
/// limit waits without claiming.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GovernorSection {
    pub agents: std::collections::BTreeMap<String, u32>,
    pub providers: std::collections::BTreeMap<String, u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PodsSection {
    /// How long a claim lives without a heartbeat.
    pub lease_secs: u64,
    /// How often pods heartbeat (a third of the lease or less).
    pub heartbeat_secs: u64,
    /// SIGTERM to the agent's process group, then this long, then SIGKILL.
    pub kill_grace_secs: u64,
    /// End an agent that makes no progress (no new output, no change in its working
    /// directory) for this long; its attempt fails as `stalled`. 0 never.
    pub stall_secs: u64,
    /// The agent profile each role's pods run (`coder = "claude"`); a role without one is not
    /// started by the supervisor.
    pub agent: std::collections::BTreeMap<String, String>,
    /// How pods without the server's disk move commits: over the server's own git (`server`),
    /// or through a remote of the repository (`remote`, docs/pods.md).
    pub transport: PodTransport,
    /// The remote of the server's repository that transport `remote` goes through (a name in
    /// its git config, `origin`).
    pub remote: String,
    /// The URL pods reach that remote by, when it is not the one the server's git config
    /// names (a mirror, another host name, https instead of ssh).
    pub remote_url: Option<String>,
}

/// `[pods] transport`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PodTransport {
    /// Pods fetch from and push attempt refs to the server's own git over smart HTTP.
    #[default]
    Server,
    /// Pods fetch from and push attempt refs to `[pods] remote`; the server pushes what they
    /// fetch there and fetches what they push.
    Remote,
}

impl PodsSection {
    /// The agent profile of `role`'s pods: the configured one, else for the verifier the
    /// built-in `verify` (it runs the brief's validation commands and needs no agent).
    pub fn agent_for(&self, role: &str) -> Option<String> {
        self.agent
            .get(role)
            .cloned()
            .or_else(|| Role::Verifier.is(role).then(|| "verify".to_string()))
    }
}

impl Default for PodsSection {
    fn default() -> Self {
        PodsSection {
            lease_secs: 60,
            heartbeat_secs: 20,
            kill_grace_secs: 10,
            stall_secs: 300,
            agent: Default::default(),
            transport: PodTransport::Server,
            remote: "origin".into(),
            remote_url: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RouterSection {
    /// Whether `yoi serve` routes queued tickets (the orchestrator loop). Off, queued tickets
    /// wait; `yoi ticket route ID --dry-run` still says what would happen.
    pub enabled: bool,
    /// Tickets allowed in `inprogress` at once; more wait with `waiting_capacity`.
    pub max_inprogress: usize,
    /// Wait after a failed acceptance before the next attempt, doubled for each further
    /// consecutive failure.
    pub retry_backoff_ms: u64,
}

/// `[flow]`: how the built-in flow `coder-review` finishes tickets (docs/flows.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FlowSection {
    /// Fix rounds (failed verifications and change requests) before a person decides.
    pub max_rounds: u32,
    /// Delete the ticket branch once its work is merged (kept by default).
    pub delete_branch: bool,
    /// The flow of a ticket without a `flow:` key (docs/flows.md).
    pub default: String,
    /// Close a ticket once it is done, with a resolution built from its attempts' summaries;
    /// off, a person closes it.
    pub auto_close: bool,
    /// What a coder's change outside the brief's `## Write scope` means: `enforce` (one round to
    /// move the paths, then a person decides), `flag` (the attempt counts, its event names the
    /// paths for the reviewer) or `off`.
    pub write_scope: WriteScopeRule,
}

/// `[flow] write_scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteScopeRule {
    Enforce,
    Flag,
    Off,
}

impl Default for FlowSection {
    fn default() -> Self {
        FlowSection {
            max_rounds: 3,
            delete_branch: false,
            default: yoi_core::flow::BUILTIN.into(),
            auto_close: false,
            write_scope: WriteScopeRule::Enforce,
        }
    }
}

impl Default for RouterSection {
    fn default() -> Self {
        RouterSection {
            enabled: true,
            max_inprogress: 4,
            retry_backoff_ms: 2000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DoctorSection {
    /// Keep what each ticket folder held in `.yoi/local/doctor-cache`, so the next pass reads
    /// only the folders that changed (as git's index does for `git status`). `yoi ticket
    /// doctor --no-cache` reads everything once.
    pub cache: bool,
}

impl Default for DoctorSection {
    fn default() -> Self {
        DoctorSection { cache: true }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SkillsSection {
    /// Extra skill folders (each subfolder a skill), after `.yoi/skills/` and before the
    /// built-ins; relative paths are relative to the repository root.
    pub extra_dirs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    /// Address `yoi serve` listens on (loopback unless you mean it).
    pub listen: String,
    /// Host names (without port) the server answers besides IP literals and `localhost`. A
    /// request naming any other `Host` is refused, so a web page whose name was rebound to this
    /// machine's address (DNS rebinding) cannot reach the API or the dashboard.
    pub allowed_hosts: Vec<String>,
    /// Seconds a client has to send a request's whole head (request line and headers), from
    /// its first byte — or, on a new connection, from the connection's accept.
    pub header_timeout_secs: u64,
    /// Seconds a client has to send a request's whole body, from the end of its head.
    pub body_timeout_secs: u64,
    /// Seconds a kept-alive connection may wait for its next request, and the longest a
    /// response may wait for a client that does not read it. Live-event streams are exempt
    /// from the first: they stay open while the client reads.
    pub idle_timeout_secs: u64,
    /// Connections served at once; more wait in the listen queue. `yoi serve` lowers it below
    /// the file-descriptor limit (after raising the soft limit to the hard one), keeping room
    /// for the database, the files and the pods.
    pub max_connections: usize,
    /// Live-event streams (`GET /api/v1/events`, the dashboard's `/live`) one token or
    /// session may hold open at once; one more is refused with 429.
    pub max_streams_per_token: usize,
    /// A dashboard session ends after this many seconds without a request.
    pub session_idle_secs: u64,
    /// A dashboard session ends this many seconds after its login, however busy (also the
    /// cookie's `Max-Age`).
    pub session_max_secs: u64,
    /// Failed logins (`/login` with an unknown code or token) one client address may make per
    /// minute; the next is refused with 429 and `Retry-After`.
    pub login_failures_per_minute: u32,
    /// Serve plain HTTP on an address other than loopback, where tokens and session cookies
    /// would cross the network in the clear: without TLS (`tls_cert`, or `yoi serve
    /// --tls-self-signed`) `yoi serve` refuses such an address unless this says the network
    /// (or a TLS proxy in front) is trusted, and then warns at start and on the login page
    /// (docs/security.md).
    pub plain_http: bool,
    /// A PEM certificate chain to serve HTTPS with (its leaf first), relative to the
    /// repository root or absolute; set together with `tls_key`.
    pub tls_cert: Option<String>,
    /// The PEM private key (PKCS#8, PKCS#1 or SEC1) of `tls_cert`.
    pub tls_key: Option<String>,
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            listen: "127.0.0.1:7311".into(),
            allowed_hosts: Vec::new(),
            header_timeout_secs: 10,
            body_timeout_secs: 30,
            idle_timeout_secs: 60,
            max_connections: 1024,
            max_streams_per_token: 8,
            session_idle_secs: 12 * 3600,
            session_max_secs: 7 * 24 * 3600,
            login_failures_per_minute: 10,
            plain_http: false,
            tls_cert: None,
            tls_key: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseSection {
    /// `postgres://…` to use PostgreSQL; unset means the embedded SQLite file
    /// `.yoi/local/yoi.db`.
    pub url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkspaceSection {
    /// The workspace's stable id (`yoi init` draws one; committed, so every clone shares it):
    /// a database holds many workspaces' rows apart by it (docs/database.md).
    pub id: Option<String>,
    /// Folder of ticket records, relative to the repository root.
    pub tickets_dir: String,
    /// Folder of ticket worktrees, relative to the repository root (git-ignored).
    pub worktree_dir: String,
    /// Branch that finished work merges into when a ticket names no `target_ref`.
    pub default_target: String,
    /// Seconds a mutation waits for the workspace lock before giving up.
    pub lock_timeout_secs: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrincipalSection {
    /// Name recorded as the author of human actions (default: `$USER`).
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RolesSection {
    pub coder: u32,
    pub verifier: u32,
    pub reviewer: u32,
}

impl Default for WorkspaceSection {
    fn default() -> Self {
        WorkspaceSection {
            id: None,
            tickets_dir: ".yoi/tickets".into(),
            worktree_dir: ".worktree".into(),
            default_target: "main".into(),
            lock_timeout_secs: 30,
        }
    }
}

impl Default for RolesSection {
    fn default() -> Self {
        RolesSection {
            coder: 1,
            verifier: 1,
            reviewer: 1,
        }
    }
}

/// Settings from outside the file (environment, flags), applied in that order by the caller.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub principal_name: Option<String>,
    pub lock_timeout_secs: Option<u64>,
    pub database_url: Option<String>,
}

impl Config {
    pub fn parse(text: &str, path: &Path) -> Result<Config, StoreError> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            StoreError::invalid(path, line, e.message().trim().to_string())
        })?;
        config.validate(path)?;
        if let Some(f) = &config.forge {
            if let Some((key, reason)) = f.problems().into_iter().next() {
                let line = key_line(text, key);
                return Err(StoreError::invalid(path, line, format!("`{key}` {reason}")));
            }
        }
        crate::notify_config::validate(&config.notify, text)
            .map_err(|(line, reason)| StoreError::invalid(path, line, reason))?;
        Ok(config)
    }

    /// Load the file, or the defaults when it does not exist.
    pub fn load(path: &Path) -> Result<Config, StoreError> {
        match crate::fsutil::read_opt(path).map_err(|e| StoreError::io(path, e))? {
            Some(text) => Config::parse(&text, path),
            None => Ok(Config::default()),
        }
    }

    pub fn apply(&mut self, o: &Overrides) {
        if let Some(n) = &o.principal_name {
            self.principal.name = Some(n.clone());
        }
        if let Some(u) = &o.database_url {
            self.database.url = Some(u.clone());
        }
        if let Some(t) = o.lock_timeout_secs {
            self.workspace.lock_timeout_secs = t;
        }
    }

    fn validate(&self, path: &Path) -> Result<(), StoreError> {
        let b = &self.budget;
        let amounts = [
            ("budget.ticket_usd", b.ticket_usd),
            ("budget.day_usd", b.day_usd),
        ]
        .into_iter()
        .chain(
            b.agents
                .values()
                .map(|a| ("budget.agents.*.day_usd", a.day_usd)),
        );
        for (key, v) in amounts {
            if v.is_some_and(|v| !v.is_finite() || v < 0.0) {
                return Err(StoreError::invalid(
                    path,
                    None,
                    format!("`{key}` must be a positive amount of USD"),
                ));
            }
        }
        if !(b.soft > 0.0 && b.soft <= 1.0) {
            return Err(StoreError::invalid(
                path,
                None,
                format!(
                    "`budget.soft` must be above 0 and at most 1, got {}",
                    b.soft
                ),
            ));
        }
        if !(b.stop_margin.is_finite() && b.stop_margin >= 0.0) {
            return Err(StoreError::invalid(
                path,
                None,
                format!(
                    "`budget.stop_margin` must be 0 or more (0.1 stops a running agent at 110% of a limit), got {}",
                    b.stop_margin
                ),
            ));
        }
        let w = &self.workflows;
        for (key, value, least) in [
            ("workflows.offer_min_tickets", w.offer_min_tickets, 2),
            (
                "workflows.auto_invoke_min_invocations",
                w.auto_invoke_min_invocations,
                1,
            ),
            (
                "workflows.auto_invoke_min_tickets",
                w.auto_invoke_min_tickets,
                1,
            ),
        ] {
            if value < least {
                return Err(StoreError::invalid(
                    path,
                    None,
                    format!("`{key}` must be at least {least}, got {value}"),
                ));
            }
        }
        if let Some(id) = &self.workspace.id {
            if !is_workspace_id(id) {
                return Err(StoreError::invalid(
                    path,
                    None,
                    format!("`workspace.id` must be 1 to 40 lowercase letters, digits or `_`, got `{id}`"),
                ));
            }
        }
        for (key, value) in [
            ("workspace.tickets_dir", &self.workspace.tickets_dir),
            ("workspace.worktree_dir", &self.workspace.worktree_dir),
        ] {
            if !is_inside_relative(value) {
                return Err(StoreError::invalid(
                    path,
                    None,
                    format!("`{key}` must be a relative path inside the repository, got `{value}`"),
                ));
            }
        }
        if self.server.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(StoreError::invalid(
                path,
                None,
                format!(
                    "`server.listen` must be ADDRESS:PORT, got `{}`",
                    self.server.listen
                ),
            ));
        }
        if self.server.tls_cert.is_some() != self.server.tls_key.is_some() {
            return Err(StoreError::invalid(
                path,
                None,
                "`server.tls_cert` and `server.tls_key` go together: set both, or neither",
            ));
        }
        for (key, value) in [
            (
                "server.header_timeout_secs",
                self.server.header_timeout_secs,
            ),
            ("server.body_timeout_secs", self.server.body_timeout_secs),
            ("server.idle_timeout_secs", self.server.idle_timeout_secs),
            ("server.max_connections", self.server.max_connections as u64),
            (
                "server.max_streams_per_token",
                self.server.max_streams_per_token as u64,
            ),
            ("server.session_idle_secs", self.server.session_idle_secs),
            ("server.session_max_secs", self.server.session_max_secs),
            (
                "server.login_failures_per_minute",
                u64::from(self.server.login_failures_per_minute),
            ),
        ] {
            if value == 0 {
                return Err(StoreError::invalid(
                    path,
                    None,
                    format!("`{key}` must be at least 1 (a zero would refuse everything)"),
                ));
            }
        }
        let names = self
            .principal
            .name
            .iter()
            .map(|n| ("principal.name".to_string(), n))
            .chain(self.agents.keys().map(|k| (format!("agents.{k}"), k)));
        for (key, name) in names {
            if let Err(e) = crate::error::Refusal::check_bidi(&format!("`{key}`"), name) {
                return Err(StoreError::invalid(path, None, e.to_string()));
            }
        }
        if self.pods.remote.trim().is_empty()
            || self.pods.remote.starts_with('-')
            || self
                .pods
                .remote
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(StoreError::invalid(
                path,
                None,
                format!(
                    "`pods.remote` must name a remote of the repository (`origin`), got `{}`",
                    self.pods.remote
                ),
            ));
        }
        if let Some(url) = &self.pods.remote_url {
            if url.trim().is_empty() || url.starts_with('-') || url.chars().any(char::is_control) {
                return Err(StoreError::invalid(
                    path,
                    None,
                    format!("`pods.remote_url` must be a git URL, got `{url}`"),
                ));
            }
        }
        if self.workspace.default_target.trim().is_empty() {
            return Err(StoreError::invalid(
                path,
                None,
                "`workspace.default_target` must name a branch",
            ));
        }
        Ok(())
    }

    pub fn tickets_dir(&self, root: &Path) -> PathBuf {
        root.join(&self.workspace.tickets_dir)
    }

    pub fn worktree_dir(&self, root: &Path) -> PathBuf {
        root.join(&self.workspace.worktree_dir)
    }

    /// Where the pods' own worktrees for read-only steps are (`<worktree_dir>/.pods/<pod>`):
    /// kept between claims and moved to each commit by the service (docs/flows.md).
    pub fn pod_worktree_dir(&self, root: &Path) -> PathBuf {
        self.worktree_dir(root).join(".pods")
    }

    /// The tickets folder as a path prefix inside the repository (`.yoi/tickets/`): what yoi
    /// leaves out of the worktrees it makes and never writes into a checked-out target.
    pub fn tickets_prefix(&self) -> String {
        format!("{}/", self.workspace.tickets_dir.trim_end_matches('/'))
    }
}

/// A workspace id: 1 to 40 of `a-z`, `0-9`, `_` (it names a PostgreSQL schema, `yoi_<id>`).
pub fn is_workspace_id(id: &str) -> bool {
    (1..=40).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// A new workspace id: a ULID in lowercase.
pub fn new_workspace_id() -> String {
    ulid::Ulid::new().to_string().to_ascii_lowercase()
}

/// The line of `section.key` in the configuration file at `path` (of its section when the key
/// is not written), for a value found wrong after parsing: one that names something outside
/// the file, such as a git remote.
pub fn line_in_file(path: &Path, dotted: &str) -> Option<usize> {
    let text = std::fs::read_to_string(path).ok()?;
    key_line(&text, dotted)
}

/// The line of `section.key = …` in a TOML text (`[section]` then `key`), or of the section
/// header when the key is not written (a default that another key made invalid).
fn key_line(text: &str, dotted: &str) -> Option<usize> {
    let (section, key) = dotted.split_once('.')?;
    let mut in_section = false;
    let mut header = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            in_section = t.trim_start_matches('[').trim_end_matches(']').trim() == section;
            if in_section {
                header = Some(i + 1);
            }
        } else if in_section
            && t.split_once('=')
                .is_some_and(|(k, _)| k.trim().trim_matches('"') == key)
        {
            return Some(i + 1);
        }
    }
    header
}

/// `text` (a workspace.toml) with `id` set under `[workspace]`, every other line kept.
pub fn with_workspace_id(text: &str, id: &str) -> String {
    let line = format!(
        "# Stable id of this workspace (commit it: every clone shares it).\nid = \"{id}\"\n"
    );
    let mut out = String::with_capacity(text.len() + line.len() + 16);
    let mut done = false;
    for l in text.split_inclusive('\n') {
        out.push_str(l);
        if !done && l.trim() == "[workspace]" {
            if !l.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&line);
            done = true;
        }
    }
    if done {
        return out;
    }
    format!("[workspace]\n{line}\n{text}")
}

/// A relative path with no `..`, no root and no prefix.
pub fn is_inside_relative(p: &str) -> bool {
    let path = Path::new(p);
    !p.trim().is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// The file `yoi init` writes: every key documented, with its default.
pub fn default_file(default_target: &str, id: &str) -> String {
    format!(
        r#"# yoi workspace configuration. Every key is optional; the values shown are the defaults
# unless `yoi init` detected otherwise. Unknown keys are an error.

[workspace]
# Stable id of this workspace (commit it: every clone shares it). A database keeps each
# workspace's rows apart by it.
id = "{id}"
# Folder of ticket records, relative to the repository root (tracked in git).
tickets_dir = ".yoi/tickets"
# Folder of ticket worktrees, relative to the repository root (git-ignored).
worktree_dir = ".worktree"
# Branch that finished work merges into when a ticket names no `target_ref`.
default_target = "{default_target}"
# Seconds a mutation waits for the workspace lock before giving up.
lock_timeout_secs = 30

[principal]
# Name recorded as the author of human actions; defaults to $USER.
# name = "alice"

[database]
# PostgreSQL instead of the embedded SQLite file .yoi/local/yoi.db. Also (and before this key):
# YOI_DATABASE_URL, then .yoi/local/database.url, which `yoi db copy --to URL` writes.
# url = "postgres://user:password@127.0.0.1:5432/yoi"

[server]
# Address `yoi serve` listens on; keep it on loopback unless pods on other hosts must reach it.
listen = "127.0.0.1:7311"
# Seconds a client has to send a request's head, and then its body; seconds a kept-alive
# connection may sit idle (live-event streams are exempt while their client reads).
header_timeout_secs = 10
body_timeout_secs = 30
idle_timeout_secs = 60
# Connections served at once (lowered below the file-descriptor limit); live-event streams one
# token or dashboard session may hold open.
max_connections = 1024
max_streams_per_token = 8
# A dashboard session ends after this long without a request, and this long after its login.
session_idle_secs = 43200
session_max_secs = 604800
# Failed logins one client address may make per minute before it waits.
login_failures_per_minute = 10
# HTTPS with your own certificate (PEM, the leaf first) and its key; `yoi serve
# --tls-self-signed` makes one instead. Without TLS an address beyond loopback is refused.
# tls_cert = "/etc/yoi/cert.pem"
# tls_key = "/etc/yoi/key.pem"

[skills]
# Extra skill folders, searched after .yoi/skills/ and before the built-in skills.
extra_dirs = []

[router]
# Whether `yoi serve` routes queued tickets: blocks, waits, returns or accepts them.
enabled = true
# Tickets allowed in progress at once; more wait for a free slot.
max_inprogress = 4
# Wait after a failed acceptance before trying again, doubled for each further failure in a row.
retry_backoff_ms = 2000

[flow]
# Fix rounds (failed verifications and change requests) before a person decides.
max_rounds = 3
# Delete the ticket branch once its work is merged.
delete_branch = false
# The flow of a ticket without a `flow:` key: `coder-review` (built in) or the name of a
# .yoi/flows/<name>.flow.yaml (`yoi flow list`).
default = "coder-review"
# Close a ticket once it is done, with a resolution from its attempts' summaries.
auto_close = false

[pods]
# How long a claim lives without a heartbeat, how often pods heartbeat, and the grace between
# SIGTERM and SIGKILL of an agent's process group.
lease_secs = 60
heartbeat_secs = 20
kill_grace_secs = 10
# How pods on other hosts (`yoi pod run --cache`) move commits: "server" (the server's own git
# over smart HTTP, behind the pod tokens) or "remote" (a remote of this repository, below; the
# server pushes what pods fetch there and fetches what they push, docs/pods.md).
transport = "server"
remote = "origin"
# The URL pods reach that remote by, when it is not the one `git remote get-url` gives here.
# remote_url = "https://git.example.com/team/repo.git"

[pods.agent]
# The agent profile each role runs (`yoi agent list`); a role without one gets no pods. The
# verifier runs the built-in `verify` (the brief's validation commands, no agent) unless set.
# coder = "claude"
# reviewer = "claude"

[roles]
# Pods kept running per role by `yoi serve` (roles with an agent in [pods.agent]).
coder = 1
verifier = 1
reviewer = 1
"#
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_workspace_id_is_added_under_its_section_or_with_one() {
        let with = super::with_workspace_id("# top\n[workspace]\ntickets_dir = \"t\"\n", "abc");
        let c = super::Config::parse(&with, super::Path::new("w.toml")).unwrap();
        assert_eq!(c.workspace.id.as_deref(), Some("abc"));
        assert_eq!(c.workspace.tickets_dir, "t");
        assert!(with.starts_with("# top\n[workspace]\n"), "{with}");
        let without = super::with_workspace_id("[router]\nenabled = false\n", "abc");
        let c = super::Config::parse(&without, super::Path::new("w.toml")).unwrap();
        assert_eq!(c.workspace.id.as_deref(), Some("abc"));
        assert!(!c.router.enabled);
        for bad in ["", "ABC", "a-b", "../x", &"a".repeat(41)] {
            assert!(!super::is_workspace_id(bad), "{bad:?}");
        }
        assert!(super::is_workspace_id(&super::new_workspace_id()));
    }

    use super::*;

    #[test]
    fn default_file_parses_to_the_defaults() {
        let mut c = Config::parse(&default_file("main", "w1"), Path::new("w.toml")).unwrap();
        // The file names the id `yoi init` drew; everything else is the default.
        assert_eq!(c.workspace.id.take().as_deref(), Some("w1"));
        assert_eq!(c, Config::default());
    }

    #[test]
    fn workflow_offer_thresholds_read_and_a_threshold_of_one_ticket_is_refused() {
        let c = Config::parse(
            "[workflows]\ndetect_every_secs = 0\noffer_min_tickets = 4\n",
            Path::new("w.toml"),
        )
        .unwrap();
        assert_eq!(c.workflows.detect_every_secs, 0);
        assert_eq!(c.workflows.offer_min_tickets, 4);
        assert_eq!(c.workflows.auto_invoke_min_invocations, 5);
        let err =
            Config::parse("[workflows]\noffer_min_tickets = 1\n", Path::new("w.toml")).unwrap_err();
        assert!(
            err.to_string()
                .contains("`workflows.offer_min_tickets` must be at least 2"),
            "{err}"
        );
        assert!(Config::parse("[workflows]\nthreshold = 3\n", Path::new("w.toml")).is_err());
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_line() {
        let err =
            Config::parse("[workspace]\n\ntickets_dri = \"x\"\n", Path::new("w.toml")).unwrap_err();
        match err {
            StoreError::Invalid { line, reason, .. } => {
                assert_eq!(line, Some(3));
                assert!(reason.contains("tickets_dri"), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
        let err = Config::parse(
            "[workspace]\nlock_timeout_secs = \"soon\"\n",
            Path::new("w.toml"),
        )
        .unwrap_err();
        assert!(matches!(err, StoreError::Invalid { line: Some(2), .. }));
        let err = Config::parse(
            "[workspace]\ntickets_dir = \"../elsewhere\"\n",
            Path::new("w.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("inside the repository"));
    }

    #[test]
    fn a_forge_section_parses_and_a_bad_value_names_its_key_and_line() {
        let c = Config::parse(
            "[forge]\nrepo = \"acme/widgets\"\nmode = \"pr\"\nrequired_checks = [\"ci\"]\n",
            Path::new("w.toml"),
        )
        .unwrap();
        let f = c.forge.expect("forge section");
        assert_eq!(f.owner_repo(), ("acme", "widgets"));
        assert_eq!(f.api_url, "https://api.github.com");
        assert_eq!(f.remote, "origin");
        assert_eq!(f.mode, yoi_core::forge::EndMode::Pr);
        assert!(Config::default().forge.is_none());
        for (text, line, key) in [
            ("[forge]\nrepo = \"widgets\"\n", 2, "forge.repo"),
            (
                "[forge]\nrepo = \"a/b\"\n\napi_url = \"https://tok@github.example\"\n",
                4,
                "forge.api_url",
            ),
            ("[forge]\nrepo = \"a/b\"\napp_id = 7\n", 3, "forge.app_id"),
            (
                "[forge]\nrepo = \"a/b\"\npoll_secs = 0\n",
                3,
                "forge.poll_secs",
            ),
        ] {
            match Config::parse(text, Path::new("w.toml")).unwrap_err() {
                StoreError::Invalid {
                    line: l, reason, ..
                } => {
                    assert_eq!(l, Some(line), "{text}: {reason}");
                    assert!(reason.contains(key), "{reason}");
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        let err = Config::parse(
            "[forge]\nrepo = \"a/b\"\ntoken = \"ghp_x\"\n",
            Path::new("w.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("token"), "{err}");
    }

    #[test]
    fn the_pods_transport_reads_and_a_bad_one_names_its_key_and_line() {
        let c = Config::parse(
            "[pods]\ntransport = \"remote\"\nremote = \"upstream\"\nremote_url = \"ssh://git@example.com/r.git\"\n",
            Path::new("w.toml"),
        )
        .unwrap();
        assert_eq!(c.pods.transport, PodTransport::Remote);
        assert_eq!(c.pods.remote, "upstream");
        assert_eq!(
            c.pods.remote_url.as_deref(),
            Some("ssh://git@example.com/r.git")
        );
        assert_eq!(Config::default().pods.transport, PodTransport::Server);
        assert_eq!(Config::default().pods.remote, "origin");
        match Config::parse("[pods]\n\ntransport = \"carrier\"\n", Path::new("w.toml")) {
            Err(StoreError::Invalid { line, reason, .. }) => {
                assert_eq!(line, Some(3));
                assert!(reason.contains("carrier"), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
        for bad in [
            "remote = \"\"",
            "remote = \"--upload-pack=x\"",
            "remote_url = \"-x\"",
        ] {
            let err = Config::parse(&format!("[pods]\n{bad}\n"), Path::new("w.toml"))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("w.toml") && err.contains("`pods.remote"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn overrides_apply_after_the_file() {
        let mut c = Config::parse("[principal]\nname = \"file\"\n", Path::new("w.toml")).unwrap();
        c.apply(&Overrides {
            principal_name: Some("flag".into()),
            lock_timeout_secs: None,
            database_url: None,
        });
        assert_eq!(c.principal.name.as_deref(), Some("flag"));
        assert_eq!(c.workspace.lock_timeout_secs, 30);
    }

    #[test]
    fn a_zero_server_limit_is_refused_naming_its_key() {
        let c = Config::parse("[server]\nheader_timeout_secs = 3\n", Path::new("w.toml")).unwrap();
        assert_eq!(c.server.header_timeout_secs, 3);
        assert_eq!(
            c.server.body_timeout_secs, 30,
            "the others keep their defaults"
        );
        let err = Config::parse("[server]\nmax_connections = 0\n", Path::new("w.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("w.toml") && err.contains("`server.max_connections` must be at least 1"),
            "{err}"
        );
    }

    #[test]
    fn names_with_bidi_controls_are_refused_naming_the_key() {
        for text in [
            "[principal]\nname = \"al\u{202E}ice\"\n",
            "[agents.\"co\u{2066}der\"]\nprogram = \"true\"\n",
        ] {
            let err = Config::parse(text, Path::new("w.toml"))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("w.toml") && err.contains("bidirectional control U+"),
                "{err}"
            );
        }
    }
}
