//! What a command needs from its surroundings: the workspace it runs in, who is acting, and
//! the time. This is the only place the CLI reads the environment.

use std::path::{Path, PathBuf};

use yoi_core::{Principal, Timestamp};
use yoi_engine::db::DbIndex;
use yoi_engine::store::config::Overrides;
use yoi_engine::store::{Ctx, StoreError, Workspace};

/// The process's async runtime, for the database. Commands themselves stay synchronous and call
/// the database through `DbIndex`, which blocks on this runtime.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("the tokio runtime starts")
    })
}

use crate::error::CliError;

pub struct Env {
    pub start: PathBuf,
    pub op_id: Option<String>,
    /// `--local`: mutate the files directly even when a server runs for the workspace.
    pub local: bool,
}

/// See [`Env::reader`].
pub enum Reader {
    Server(crate::remote::Remote),
    Files(Box<(Workspace, DbIndex)>),
}

impl Env {
    pub fn new(dir: Option<PathBuf>, op_id: Option<String>) -> Result<Env, CliError> {
        let start = match dir {
            Some(d) => d,
            None => std::env::current_dir().map_err(|e| CliError::Io {
                path: ".".into(),
                source: e,
            })?,
        };
        if !start.is_dir() {
            return Err(CliError::Usage(format!(
                "-C {}: no such folder",
                start.display()
            )));
        }
        if let Some(op) = &op_id {
            yoi_engine::store::ops::validate_op(op)?;
        }
        Ok(Env {
            start,
            op_id,
            local: false,
        })
    }

    /// The workspace containing the start folder, with environment overrides applied and its
    /// database attached (opened, migrated and caught up with the files).
    pub fn workspace(&self, command: &str) -> Result<Workspace, CliError> {
        Ok(self.workspace_with_index(command)?.0)
    }

    /// Where a read of the index is answered: by the workspace's running server unless
    /// `--local` was given (its index follows the files as they are written, so nothing is
    /// looked at here), else from the database caught up with the files now.
    pub fn reader(&self, command: &str) -> Result<Reader, CliError> {
        let ws = self.files_only(command)?;
        if !self.local {
            if let Some(remote) = crate::remote::Remote::find(&ws.local_dir(), None)? {
                return Ok(Reader::Server(remote));
            }
        }
        let mut ws = ws;
        let (index, _) = attach_for_command(&mut ws)?;
        Ok(Reader::Files(Box::new((ws, index))))
    }

    /// Like [`Env::workspace`], also returning the database handle for index reads.
    pub fn workspace_with_index(&self, command: &str) -> Result<(Workspace, DbIndex), CliError> {
        let mut ws = self.files_only(command)?;
        let (index, _) = attach_for_command(&mut ws)?;
        Ok((ws, index))
    }

    /// The workspace with its database attached but not yet caught up with the files: for
    /// doctor, which reads every file anyway and catches the index up itself when it finds it
    /// behind them. Without the database when this clone has none yet
    /// ([`Workspace::database_absent`]): doctor then checks the files and builds no index on
    /// the way (there is no index to check them against; the next command that reads one
    /// builds it).
    pub fn workspace_behind_if_any(
        &self,
        command: &str,
    ) -> Result<(Workspace, Option<DbIndex>), CliError> {
        let ws = self.files_only(command)?;
        if ws.database_absent() {
            return Ok((ws, None));
        }
        let mut ws = ws;
        let index = DbIndex::attach_behind(&mut ws, bridge(), yoi_engine::db::Footprint::Scan)?;
        Ok((ws, Some(index)))
    }

    /// The workspace without its database (for commands that must not depend on it).
    pub fn files_only(&self, command: &str) -> Result<Workspace, CliError> {
        let root = Workspace::find_root(&self.start).ok_or_else(|| StoreError::NotInitialized {
            root: self.start.clone(),
        })?;
        let mut ws = Workspace::open(&root)?;
        ws.config.apply(&env_overrides()?);
        ws.holder = format!("pid {} ({command})", std::process::id());
        Ok(ws)
    }

    /// The workspace without its database, or `None` outside any workspace; a workspace whose
    /// configuration does not read is an error, never a silent fallback to the defaults (its
    /// `[sandbox]` might be stricter than they are).
    pub fn files_if_any(&self, command: &str) -> Result<Option<Workspace>, CliError> {
        if Workspace::find_root(&self.start).is_none() {
            return Ok(None);
        }
        self.files_only(command).map(Some)
    }

    /// A human principal acting now.
    /// The person running the command. A name yoi itself writes under (`yoi-orchestrator`,
    /// `yoi`) is refused: routing trusts decision events by their author.
    pub fn human_ctx(&self, ws: &Workspace) -> Result<Ctx, CliError> {
        let name = human_name(ws)?;
        if yoi_core::principal::is_reserved_author(&name) {
            return Err(CliError::Usage(format!(
                "`{name}` is a name yoi itself writes under; set another with YOI_USER or [principal] name"
            )));
        }
        Ok(Ctx::new(Principal::human(name), now()).with_op(self.op_id.clone()))
    }
}

fn env_overrides() -> Result<Overrides, CliError> {
    let lock_timeout_secs = match std::env::var("YOI_LOCK_TIMEOUT_SECS") {
        Ok(v) => Some(v.trim().parse::<u64>().map_err(|_| {
            CliError::Usage(format!(
                "YOI_LOCK_TIMEOUT_SECS must be a whole number of seconds, got `{v}`"
            ))
        })?),
        Err(_) => None,
    };
    Ok(Overrides {
        principal_name: std::env::var("YOI_USER")
            .ok()
            .filter(|v| !v.trim().is_empty()),
        lock_timeout_secs,
        database_url: std::env::var("YOI_DATABASE_URL")
            .ok()
            .filter(|v| !v.trim().is_empty()),
    })
}

/// The human's name: `YOI_USER`, else `[principal] name` in the config, else `$USER`, else
/// git's `user.name`. Never a made-up name: with none of them, the command is refused.
fn human_name(ws: &Workspace) -> Result<String, CliError> {
    ws.config
        .principal
        .name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .or_else(|| std::env::var("USER").ok().filter(|n| !n.trim().is_empty()))
        .or_else(|| yoi_engine::git::user_name(ws.root()))
        .ok_or_else(|| {
            CliError::Usage(
                "who is acting? set YOI_USER, [principal] name in .yoi/workspace.toml, $USER or git's user.name".into(),
            )
        })
}

pub fn now() -> Timestamp {
    Timestamp::from_datetime(chrono_now())
}

fn chrono_now() -> yoi_core::time::DateTimeUtc {
    yoi_core::time::utc_now_from_system(std::time::SystemTime::now())
}

/// Read `path`, or standard input for `-`.
pub fn read_input(path: &str) -> Result<String, CliError> {
    use std::io::Read;
    let mut text = String::new();
    if path == "-" {
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::Io {
                path: "standard input".into(),
                source: e,
            })?;
    } else {
        text = std::fs::read_to_string(Path::new(path)).map_err(|e| CliError::Io {
            path: path.into(),
            source: e,
        })?;
    }
    Ok(text)
}

/// How a command reaches its database: on the CLI's runtime, stamping rows with the wall clock
/// (the CLI is a frontend, so it is the one that reads the clock).
pub(crate) fn bridge() -> yoi_engine::db::Bridge {
    yoi_engine::db::Bridge::new(runtime().handle().clone(), || {
        yoi_core::time::unix_ms(std::time::SystemTime::now())
    })
}

/// Attach the workspace's database for one command: caught up with the files, with the small
/// memory of a process that reads each page about once (`Footprint::Command`).
pub(crate) fn attach_for_command(
    ws: &mut Workspace,
) -> Result<(DbIndex, yoi_engine::db::IndexStats), StoreError> {
    DbIndex::attach_as(
        ws,
        bridge(),
        yoi_engine::db::ReindexMode::Incremental,
        yoi_engine::db::Footprint::Command,
    )
}
