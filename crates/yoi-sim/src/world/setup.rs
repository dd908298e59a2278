//! A world's setup, its restarts and its teardown.
//!
//! - **Setup** copies one base repository made per thread (`main` with a README, the shared
//!   file and an initialised workspace committed, its index built), on tmpfs when there is one,
//!   opens it with the real index attached, installs the faults' hook and registers the pods.
//! - **A restart** is a server process dying: everything held in memory goes (the
//!   orchestrator's holds, the database connections) and the index is attached again, which
//!   runs the incremental reindex. The files on disk are all that carries over. A restart
//!   repairs nothing of its own, because what a crash left behind is what the invariants after
//!   it are there to see; `check_outbox` checks after each one that the outbox kept its rows.
//! - **Teardown** closes the database before the folder goes. The faults' hook lives on the
//!   world's workspace (`Faults::writes`), so it goes with the world.
//!
//! The index's own stamps take the wall clock (see `index_bridge`); everything the engine
//! decides on runs on the world's simulated clock.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use yoi_engine::db::DbIndex;
use yoi_engine::routing::Orchestrator;
use yoi_engine::store::Workspace;

use super::faults::{git, install_quiet_crashes, Faults};
use super::{broken, Broken, Stats, World};

/// The server's memory: what a restart drops.
pub(super) struct Live {
    pub(super) ws: Workspace,
    pub(super) db: DbIndex,
    pub(super) orch: Orchestrator,
    /// Which deliveries this server promised already (`yoi serve`'s notification loop).
    pub(super) notifier: yoi_engine::notify::Notifier,
}

impl Live {
    fn open(repo: &Path, rt: tokio::runtime::Handle, faults: &Arc<Faults>) -> Result<Live, Broken> {
        let mut ws = Workspace::open(repo).map_err(|e| broken("restart", e.to_string()))?;
        ws.writes = faults.writes().beneath(&ws.tickets_dir());
        let (db, _) = DbIndex::attach(&mut ws, index_bridge(rt))
            .map_err(|e| broken("restart", e.to_string()))?;
        let orch = Orchestrator::of(&ws);
        Ok(Live {
            ws,
            db,
            orch,
            notifier: Default::default(),
        })
    }

    fn close(self) {
        self.db.close();
    }
}

/// The index's own stamps (outbox rows, deliveries) take the wall clock, as they did before
/// the index took its clock from its caller; the engine's steps run on the simulated clock.
/// Moving the stamps to the simulated clock too is a change of the simulation's behaviour,
/// left for its own commit.
fn index_bridge(rt: tokio::runtime::Handle) -> yoi_engine::db::Bridge {
    yoi_engine::db::Bridge::new(rt, || yoi_core::time::unix_ms(std::time::SystemTime::now()))
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
}

thread_local! {
    static TEMPLATE: std::cell::RefCell<Option<tempfile::TempDir>> = const { std::cell::RefCell::new(None) };
}

/// The repository every world starts from, copied to `into`: `main` with a README, the shared
/// file and an initialised workspace committed, and its index built. It is made once per
/// thread (three git processes and the database's migrations) and copied after that.
fn base_repo(into: &Path) -> Result<(), String> {
    TEMPLATE.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            let dir = scratch().map_err(|e| e.to_string())?;
            let repo = dir.path().join("repo");
            std::fs::create_dir(&repo).map_err(|e| e.to_string())?;
            git(&repo, &["init", "-q", "-b", "main"])?;
            std::fs::write(repo.join("README.md"), "simulated\n").map_err(|e| e.to_string())?;
            std::fs::write(repo.join("shared.txt"), "base\n").map_err(|e| e.to_string())?;
            yoi_engine::store::init(&repo, "main").map_err(|e| e.to_string())?;
            let config = repo.join(".yoi/workspace.toml");
            let text = std::fs::read_to_string(&config).map_err(|e| e.to_string())?;
            std::fs::write(
                &config,
                text + super::spending::BUDGET_CONFIG + super::forge::FORGE_CONFIG,
            )
            .map_err(|e| e.to_string())?;
            git(&repo, &["add", "-A"])?;
            git(&repo, &["commit", "-q", "-m", "base"])?;
            let rt = runtime().map_err(|e| e.to_string())?;
            let mut ws = Workspace::open(&repo).map_err(|e| e.to_string())?;
            let (db, _) = DbIndex::attach(&mut ws, index_bridge(rt.handle().clone()))
                .map_err(|e| e.to_string())?;
            // Closed and checkpointed before anything copies the file.
            db.close();
            drop(db);
            *slot = Some(dir);
        }
        let from = slot
            .as_ref()
            .map(|d| d.path().join("repo"))
            .unwrap_or_default();
        copy_tree(&from, into).map_err(|e| format!("copying the base repository: {e}"))
    })
}

/// Remove this thread's base repository now. A thread's locals are dropped after the thread
/// has signalled its end, so a process that exits right after joining it (the end of a
/// batch) would leave the folder behind.
pub fn forget_base_repo() {
    TEMPLATE.with(|slot| drop(slot.borrow_mut().take()));
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

fn scratch() -> Result<tempfile::TempDir, std::io::Error> {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new().prefix("yoi-sim-").tempdir_in(shm) {
            return Ok(d);
        }
    }
    tempfile::Builder::new().prefix("yoi-sim-").tempdir()
}

impl World {
    pub fn new() -> Result<World, Broken> {
        install_quiet_crashes();
        let setup = |e: &dyn std::fmt::Display| broken("setup", e.to_string());
        let dir = scratch().map_err(|e| setup(&e))?;
        let repo = dir.path().join("repo");
        base_repo(&repo).map_err(|e| setup(&e))?;
        let repo = repo.canonicalize().map_err(|e| setup(&e))?;
        let rt = runtime().map_err(|e| setup(&e))?;
        let faults = Faults::new(&repo);
        let live = Live::open(&repo, rt.handle().clone(), &faults)?;
        let forge = super::forge::ForgeSide::new(dir.path(), &repo).map_err(|e| setup(&e))?;
        let mut world = World {
            live: Some(live),
            rt,
            faults,
            repo,
            clock_ms: 0,
            tickets: Vec::new(),
            pods: Vec::new(),
            states: BTreeMap::new(),
            queued_by_human: BTreeSet::new(),
            refused: Vec::new(),
            acked: Vec::new(),
            outbox: BTreeMap::new(),
            procedures: Default::default(),
            forge,
            told: Default::default(),
            stats: Stats::default(),
            echo: std::env::var_os("YOI_SIM_TRACE").is_some(),
            trace: Vec::new(),
            _dir: dir,
        };
        world.register_pods()?;
        Ok(world)
    }

    pub(super) fn restart(&mut self) -> Result<(), Broken> {
        self.stats.restarts += 1;
        // Everything in memory goes: the orchestrator's holds, the database connections.
        if let Some(l) = self.live.take() {
            l.close();
        }
        self.live = Some(Live::open(
            &self.repo,
            self.rt.handle().clone(),
            &self.faults,
        )?);
        Ok(())
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // Closed before the folder goes: a pool closing in the background still touches
        // the database's files while the folder is being removed, which leaves it half there.
        if let Some(l) = self.live.take() {
            l.close();
        }
    }
}
