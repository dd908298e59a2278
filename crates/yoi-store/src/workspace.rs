//! A yoi workspace on disk: where its folders are, how it is found, how it is initialised, and
//! the lock every mutation takes.
//!
//! The store writes files only inside `.yoi/` (and, for `init`, appends ignore rules to the
//! repository's `.gitignore`); outside it, it only removes a clean ticket worktree through
//! `yoi-git` (`cancel`, and `yoi worktree remove` for people). Finding the git repository is the caller's job (the git crate);
//! this module takes the repository root as given.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use yoi_core::TicketId;

use crate::config::{self, Config, CONFIG_FILE};
use crate::error::StoreError;
use crate::fsutil;
use crate::index_hook::IndexRef;
use crate::lock::WorkspaceLock;
use crate::writes::Writes;

/// The URL of the embedded SQLite database file at `path` (created when missing).
pub fn sqlite_url(path: &Path) -> String {
    format!("sqlite://{}?mode=rwc", path.display())
}

pub const YOI_DIR: &str = ".yoi";
pub const LOCAL_DIR: &str = ".yoi/local";
pub const LOCK_FILE: &str = "workspace.lock";
/// The database URL this clone uses, before `[database] url` (mode 0600: it may hold a
/// password). `yoi db copy --to URL` writes it once the copy is verified.
pub const DATABASE_URL_FILE: &str = "database.url";

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    pub config: Config,
    /// Describes this process in the lock file (e.g. `pid 42: yoi ticket queue`).
    pub holder: String,
    /// The database index to keep up to date after each mutation, when one is attached.
    pub index: Option<IndexRef>,
    /// How this workspace's writes are made: alone or in a group commit, and the test points
    /// they reach ([`Writes`]).
    pub writes: Writes,
}

impl Workspace {
    /// Open the workspace whose repository root is `root` (it must contain `.yoi/`).
    pub fn open(root: &Path) -> Result<Workspace, StoreError> {
        let yoi = root.join(YOI_DIR);
        if !yoi.is_dir() {
            return Err(StoreError::NotInitialized {
                root: root.to_path_buf(),
            });
        }
        let mut config = Config::load(&yoi.join(CONFIG_FILE))?;
        // `.yoi/local/database.url` (written by `yoi db copy`) comes before the file's
        // `[database] url`; the environment comes before both (`Config::apply`).
        let local_url = root.join(LOCAL_DIR).join(DATABASE_URL_FILE);
        if let Some(url) =
            fsutil::read_opt(&local_url).map_err(|e| StoreError::io(&local_url, e))?
        {
            if !url.trim().is_empty() {
                config.database.url = Some(url.trim().to_string());
            }
        }
        let writes = Writes::default().beneath(&config.tickets_dir(root));
        Ok(Workspace {
            root: root.to_path_buf(),
            config,
            holder: format!("pid {}", std::process::id()),
            index: None,
            writes,
        })
    }

    /// Walk up from `start` to the first folder holding `.yoi/workspace.toml`.
    pub fn find_root(start: &Path) -> Option<PathBuf> {
        start
            .ancestors()
            .find(|d| d.join(YOI_DIR).join(CONFIG_FILE).is_file())
            .map(Path::to_path_buf)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn local_dir(&self) -> PathBuf {
        self.root.join(LOCAL_DIR)
    }

    /// Make `.yoi/local` (tokens, keys, the database, run folders) the owner's alone: the
    /// folder and every folder in it 0700, every file in it 0600 (what is deeper is then
    /// unreachable to others). Workspaces made before this rule are fixed when the server
    /// starts and at `yoi init`. Links are left alone, never followed. Returns what it changed.
    pub fn secure_local_dir(&self) -> std::io::Result<Vec<PathBuf>> {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.local_dir();
        std::fs::create_dir_all(&dir)?;
        let mut changed = Vec::new();
        let mut fix = |path: PathBuf, meta: std::fs::Metadata| -> std::io::Result<()> {
            let want = if meta.is_dir() { 0o700 } else { 0o600 };
            if meta.permissions().mode() & 0o777 != want {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(want))?;
                changed.push(path);
            }
            Ok(())
        };
        fix(dir.clone(), std::fs::symlink_metadata(&dir)?)?;
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let meta = std::fs::symlink_metadata(entry.path())?;
            if !meta.file_type().is_symlink() {
                fix(entry.path(), meta)?;
            }
        }
        Ok(changed)
    }

    pub fn tickets_dir(&self) -> PathBuf {
        self.config.tickets_dir(&self.root)
    }

    pub fn ticket_dir(&self, id: &TicketId) -> PathBuf {
        self.tickets_dir().join(id.as_str())
    }

    /// A path relative to the repository root, for messages and findings.
    pub fn rel(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// The database URL: `database.url` from config or environment, else the embedded SQLite
    /// file under `.yoi/local/`.
    pub fn database_url(&self) -> String {
        match &self.config.database.url {
            Some(u) if !u.trim().is_empty() => u.trim().to_string(),
            _ => sqlite_url(&self.local_dir().join("yoi.db")),
        }
    }

    /// Whether this clone has no database yet: the embedded SQLite file is the database and it
    /// does not exist, as in a fresh clone before any command built the index (`.yoi/local/`
    /// is never committed). A configured database (`[database] url`, `YOI_DATABASE_URL`) is
    /// never absent here: it may be shared, and only opening it says what it holds.
    pub fn database_absent(&self) -> bool {
        let file = self.local_dir().join("yoi.db");
        self.database_url() == sqlite_url(&file) && !file.exists()
    }

    /// The workspace lock: taken now, or, for a mutation inside a group commit, the group's.
    pub fn lock(&self) -> Result<WorkspaceLock, StoreError> {
        let path = self.local_dir().join(LOCK_FILE);
        if self.writes.holds_lock(&path) {
            return Ok(WorkspaceLock::held_by_group(&path));
        }
        WorkspaceLock::acquire(
            &path,
            Duration::from_secs(self.config.workspace.lock_timeout_secs),
            &self.holder,
        )
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct InitReport {
    pub root: String,
    /// Paths created or changed, relative to the root.
    pub created: Vec<String>,
    /// Ignore rules appended to `.gitignore`.
    pub ignore_rules_added: Vec<String>,
}

/// Create `.yoi/` in the repository at `root`. Idempotent: existing files are left alone and
/// only missing ignore rules are appended.
pub fn init(root: &Path, default_target: &str) -> Result<InitReport, StoreError> {
    let mut created = Vec::new();
    let existing_config = Config::load(&root.join(YOI_DIR).join(CONFIG_FILE))?;
    for dir in [YOI_DIR, LOCAL_DIR] {
        let p = root.join(dir);
        if !p.is_dir() {
            fs::create_dir_all(&p).map_err(|e| StoreError::io(&p, e))?;
            created.push(dir.to_string());
        }
    }
    let config_path = root.join(YOI_DIR).join(CONFIG_FILE);
    if !config_path.exists() {
        fsutil::atomic_write(
            &config_path,
            config::default_file(default_target, &config::new_workspace_id()).as_bytes(),
        )
        .map_err(|e| StoreError::io(&config_path, e))?;
        created.push(format!("{YOI_DIR}/{CONFIG_FILE}"));
    } else if existing_config.workspace.id.is_none() {
        // A workspace made before ids: give it one, keeping every line of the file.
        let text = fsutil::read_opt(&config_path)
            .map_err(|e| StoreError::io(&config_path, e))?
            .unwrap_or_default();
        fsutil::atomic_write(
            &config_path,
            config::with_workspace_id(&text, &config::new_workspace_id()).as_bytes(),
        )
        .map_err(|e| StoreError::io(&config_path, e))?;
        created.push(format!("{YOI_DIR}/{CONFIG_FILE} (workspace id)"));
    }
    let config = Config::load(&config_path).unwrap_or(existing_config);
    let tickets = config.tickets_dir(root);
    if !tickets.is_dir() {
        fs::create_dir_all(&tickets).map_err(|e| StoreError::io(&tickets, e))?;
        created.push(config.workspace.tickets_dir.clone());
    }
    let rules = [
        format!("/{LOCAL_DIR}/"),
        format!("/{}/", config.workspace.worktree_dir.trim_matches('/')),
    ];
    let added = add_ignore_rules(&root.join(".gitignore"), &rules)?;
    if !added.is_empty() {
        created.push(".gitignore".into());
    }
    Ok(InitReport {
        root: root.to_string_lossy().into_owned(),
        created,
        ignore_rules_added: added,
    })
}

/// Append the rules that are not already present, leaving every existing line untouched.
fn add_ignore_rules(path: &Path, rules: &[String]) -> Result<Vec<String>, StoreError> {
    let current = fsutil::read_opt(path)
        .map_err(|e| StoreError::io(path, e))?
        .unwrap_or_default();
    let present = |rule: &str| {
        let bare = rule.trim_matches('/');
        current.lines().any(|l| {
            let l = l.trim();
            l.trim_matches('/') == bare && !l.starts_with('!')
        })
    };
    let missing: Vec<String> = rules.iter().filter(|r| !present(r)).cloned().collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    let mut text = String::new();
    if !current.is_empty() && !current.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# yoi: local state and ticket worktrees\n");
    for r in &missing {
        text.push_str(r);
        text.push('\n');
    }
    fsutil::append_sync(path, text.as_bytes()).map_err(|e| StoreError::io(path, e))?;
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_is_idempotent_and_keeps_existing_ignore_lines() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".gitignore"), "target\n/.worktree").unwrap();
        let first = init(dir.path(), "develop").unwrap();
        assert_eq!(first.ignore_rules_added, vec!["/.yoi/local/".to_string()]);
        let text = fs::read_to_string(dir.path().join(".gitignore")).unwrap();
        assert!(text.starts_with("target\n/.worktree\n# yoi"), "{text}");
        let second = init(dir.path(), "develop").unwrap();
        assert!(second.created.is_empty());
        let id = Workspace::open(dir.path()).unwrap().config.workspace.id;
        assert!(id.is_some_and(|id| config::is_workspace_id(&id)));
        assert!(second.ignore_rules_added.is_empty());
        let ws = Workspace::open(dir.path()).unwrap();
        assert_eq!(ws.config.workspace.default_target, "develop");
        assert!(ws.tickets_dir().is_dir());
    }

    #[test]
    fn open_refuses_an_uninitialised_folder() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            Workspace::open(dir.path()),
            Err(StoreError::NotInitialized { .. })
        ));
    }
}
