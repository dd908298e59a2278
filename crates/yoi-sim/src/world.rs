//! The simulated world: a real git repository with a yoi workspace on tmpfs, its real SQLite
//! index, the real orchestrator, lease sweep and flow engine, and pods that are clients of the
//! same engine operations the API calls. The clock is simulated; everything else is real.

use std::any::Any;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use yoi_core::relation::RelationKind;
use yoi_core::report::{CheckResult, Report, ReportOutcome, Verdict};
use yoi_core::{Principal, State, TicketId, Timestamp};
use yoi_engine::assignments::{self as asg, LeaseConfig, PodCaller, Work};
use yoi_engine::db::{Assignment, AssignmentStatus, DbIndex};
use yoi_engine::git as ygit;
use yoi_engine::routing::{Orchestrator, PassHooks, StepEnv};
use yoi_engine::store::ops::{
    self, CreateRequest, EditRequest, RelationRequest, TransitionRequest,
};
use yoi_engine::store::{testpoint, Ctx, Workspace};

use crate::schedule::Action;

/// The brief every simulated ticket gets: complete, with one validation command.
const BRIEF: &str = "## Intent\nMake it work.\n\n## Acceptance criteria\n- it works\n\n## Validation\n`cargo test`\n";

/// Leases short enough that a few `advance` actions run one out.
const LEASE: LeaseConfig = LeaseConfig {
    lease_ms: 10_000,
    heartbeat_ms: 2_000,
};

/// The simulated clock starts here (unix milliseconds, 2026-03-01T10:00:00Z).
const EPOCH_MS: i64 = 1_772_359_200_000;

/// The pods: two coders, the verifier and a reviewer.
const PODS: &[(&str, &str)] = &[
    ("coder", "coder-1"),
    ("coder", "coder-2"),
    ("verifier", "verifier-1"),
    ("reviewer", "reviewer-1"),
];

type TransitionOp = fn(
    &Workspace,
    &Ctx,
    &str,
    &TransitionRequest,
) -> Result<ops::Outcome, yoi_engine::store::StoreError>;

/// A ticket's assignment rows (id, status, fence) and its branch head.
type Footprint = (Vec<(String, AssignmentStatus, i64)>, Option<String>);

/// What a simulated crash unwinds with.
pub struct SimCrash(pub &'static str);

/// An invariant that did not hold: its kind (what shrinking keeps) and what was seen.
#[derive(Debug, Clone)]
pub struct Broken {
    pub kind: &'static str,
    pub what: String,
}

fn broken(kind: &'static str, what: impl Into<String>) -> Broken {
    Broken {
        kind,
        what: what.into(),
    }
}

/// Counts over one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub steps: usize,
    pub created: usize,
    pub accepted: usize,
    pub merged: usize,
    pub crashes: usize,
    pub restarts: usize,
    pub results_applied: usize,
    pub results_refused: usize,
    pub human_refusals: usize,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        self.steps += o.steps;
        self.created += o.created;
        self.accepted += o.accepted;
        self.merged += o.merged;
        self.crashes += o.crashes;
        self.restarts += o.restarts;
        self.results_applied += o.results_applied;
        self.results_refused += o.results_refused;
        self.human_refusals += o.human_refusals;
    }
}

/// Who an action acts as, for the reference model of the state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Actor {
    Human,
    Router,
    Service,
    /// Pods, git events, time, restarts: none of them moves a ticket.
    Nobody,
}

fn actor_of(a: Action) -> Actor {
    use Action::*;
    match a {
        Create { .. }
        | Edit { .. }
        | MarkReady { .. }
        | Queue { .. }
        | Return { .. }
        | Cancel { .. }
        | Close { .. }
        | Reopen { .. }
        | Retry { .. }
        | Relate { .. }
        | Unrelate { .. } => Actor::Human,
        Route => Actor::Router,
        Sweep => Actor::Service,
        _ => Actor::Nobody,
    }
}

/// The check a real pod makes of the folder it is handed before its agent starts (yoi-pod's
/// `check_workdir`, through the same `detached_at`).
fn workdir_ready(w: &Work) -> Result<(), String> {
    ygit::detached_at(&w.workdir, &w.head_commit).map_err(|e| {
        format!(
            "{} is not detached at {}: {e:?}",
            w.workdir.display(),
            w.head_commit
        )
    })
}

/// Whether `a` can change an assignment row or a worktree when it does not crash.
fn touches_assignments(a: Action) -> bool {
    use Action::*;
    !matches!(
        a,
        Create { .. }
            | Edit { .. }
            | MarkReady { .. }
            | Queue { .. }
            | Relate { .. }
            | Unrelate { .. }
            | Heartbeat { .. }
            | Advance { .. }
            | Pause { .. }
            | TargetCommit { .. }
            | Dirty
            | Clean
            | RaceMerge
            | Crash { .. }
    )
}

/// The reference model: the edges each actor may move a ticket along (DESIGN §4, with
/// docs/cli.md's `return-to-planning` of a ticket in progress).
fn allowed(actor: Actor, from: State, to: State) -> bool {
    use State::*;
    match actor {
        Actor::Human => matches!(
            (from, to),
            (Planning, Ready)
                | (Ready, Queued)
                | (Ready | Queued | Inprogress, Planning)
                | (Planning | Ready | Queued | Inprogress | Done, Closed)
                | (Closed, Planning)
        ),
        Actor::Router => matches!((from, to), (Queued, Inprogress) | (Queued, Planning)),
        Actor::Service => matches!((from, to), (Inprogress, Done)),
        Actor::Nobody => false,
    }
}

/// The faults the testpoint hook acts on.
struct Faults {
    /// Die at the point this many hits from now (0: not armed).
    countdown: Cell<u32>,
    /// Commit on the target at the next `merge.before_land`.
    race: Cell<bool>,
    repo: PathBuf,
    commits: Cell<u32>,
}

/// The index's own stamps (outbox rows, deliveries) take the wall clock, as they did before
/// the index took its clock from its caller; the engine's steps run on the simulated clock.
/// Moving the stamps to the simulated clock too is a change of the simulation's behaviour,
/// left for its own commit.
fn index_bridge(rt: tokio::runtime::Handle) -> yoi_engine::db::Bridge {
    yoi_engine::db::Bridge::new(rt, || yoi_core::time::unix_ms(std::time::SystemTime::now()))
}

struct Live {
    ws: Workspace,
    db: DbIndex,
    orch: Orchestrator,
}

impl Live {
    fn open(repo: &Path, rt: tokio::runtime::Handle) -> Result<Live, Broken> {
        let mut ws = Workspace::open(repo).map_err(|e| broken("restart", e.to_string()))?;
        let (db, _) = DbIndex::attach(&mut ws, index_bridge(rt))
            .map_err(|e| broken("restart", e.to_string()))?;
        let orch = Orchestrator::of(&ws);
        Ok(Live { ws, db, orch })
    }

    fn close(self) {
        self.db.block_on(self.db.db.close());
    }
}

struct Pod {
    role: &'static str,
    name: &'static str,
    id: String,
    held: Option<Held>,
    last: Option<Sent>,
}

struct Held {
    work: Work,
    paused: bool,
}

#[derive(Clone)]
enum Outcome {
    Complete(Box<Report>),
    Fail,
}

#[derive(Clone)]
struct Sent {
    id: String,
    fence: i64,
    outcome: Outcome,
}

/// One simulated installation. Fields drop in order: the database before its runtime, both
/// before the folder.
pub struct World {
    live: Option<Live>,
    rt: tokio::runtime::Runtime,
    faults: Rc<Faults>,
    repo: PathBuf,
    clock_ms: i64,
    tickets: Vec<TicketId>,
    pods: Vec<Pod>,
    states: BTreeMap<TicketId, State>,
    /// Tickets a person queued that have not started or left the queue since.
    queued_by_human: BTreeSet<TicketId>,
    /// Coder commits whose result was refused: never to be on their ticket's branch.
    refused: Vec<(TicketId, String)>,
    /// Every outbox row seen: seq → event id.
    outbox: BTreeMap<i64, String>,
    pub stats: Stats,
    /// Print each line of the trace as it happens (`YOI_SIM_TRACE=1`).
    echo: bool,
    /// What happened, most recent last (printed with a failure).
    pub trace: Vec<String>,
    _dir: tempfile::TempDir,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=sim",
            "-c",
            "user.email=sim@yoi.invalid",
            "-c",
            "commit.gpgsign=false",
            // No detached `git maintenance run --auto` after a commit: it holds
            // `objects/maintenance.lock` for a moment after git returns, and the base
            // repository is copied right after its commit.
            "-c",
            "maintenance.auto=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("git {args:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Someone else's commit on the checked-out target: a line of the shared file, or a file apart.
fn commit_on_target(repo: &Path, conflict: bool, n: u32) -> Result<(), String> {
    let path = if conflict {
        let p = repo.join("shared.txt");
        let mut text = std::fs::read_to_string(&p).unwrap_or_default();
        text.push_str(&format!("target edit {n}\n"));
        std::fs::write(&p, text).map_err(|e| e.to_string())?;
        "shared.txt".to_string()
    } else {
        std::fs::create_dir_all(repo.join("apart")).map_err(|e| e.to_string())?;
        let p = format!("apart/{n}.txt");
        std::fs::write(repo.join(&p), format!("apart {n}\n")).map_err(|e| e.to_string())?;
        p
    };
    git(repo, &["add", "--", &path])?;
    git(
        repo,
        &["commit", "-q", "-m", &format!("target {n}"), "--", &path],
    )?;
    Ok(())
}

fn install_quiet_crashes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<SimCrash>().is_none() {
                default(info);
            }
        }));
    });
}

fn panic_text(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
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
            git(&repo, &["add", "-A"])?;
            git(&repo, &["commit", "-q", "-m", "base"])?;
            let rt = runtime().map_err(|e| e.to_string())?;
            let mut ws = Workspace::open(&repo).map_err(|e| e.to_string())?;
            let (db, _) = DbIndex::attach(&mut ws, index_bridge(rt.handle().clone()))
                .map_err(|e| e.to_string())?;
            // Closed and checkpointed before anything copies the file.
            db.block_on(db.db.close());
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
        let live = Live::open(&repo, rt.handle().clone())?;
        let faults = Rc::new(Faults {
            countdown: Cell::new(0),
            race: Cell::new(false),
            repo: repo.clone(),
            commits: Cell::new(0),
        });
        let f = faults.clone();
        testpoint::install(move |name| {
            if name == "merge.before_land" && f.race.replace(false) {
                let n = f.commits.get() + 1;
                f.commits.set(n);
                // Another writer: a failure here is the world's, not yoi's.
                let _ = commit_on_target(&f.repo, false, n);
            }
            match f.countdown.get() {
                0 => {}
                1 => {
                    f.countdown.set(0);
                    panic::panic_any(SimCrash(name));
                }
                n => f.countdown.set(n - 1),
            }
        });
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
            outbox: BTreeMap::new(),
            stats: Stats::default(),
            echo: std::env::var_os("YOI_SIM_TRACE").is_some(),
            trace: Vec::new(),
            _dir: dir,
        };
        for (role, name) in PODS {
            let id = world.register(role, name)?;
            world.pods.push(Pod {
                role,
                name,
                id,
                held: None,
                last: None,
            });
        }
        Ok(world)
    }

    fn live(&self) -> &Live {
        self.live.as_ref().expect("the world is running")
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_unix_millis(EPOCH_MS + self.clock_ms)
    }

    fn note(&mut self, line: impl Into<String>) {
        let line = line.into();
        if self.echo {
            eprintln!("{line}");
        }
        self.trace.push(line);
        if self.trace.len() > 400 {
            self.trace.drain(..200);
        }
    }

    fn register(&self, role: &str, name: &str) -> Result<String, Broken> {
        let l = self.live();
        asg::register_pod(&l.db, &caller(role), name, "sim", None, None, self.now())
            .map(|p| p.id)
            .map_err(|e| broken("setup", format!("registering pod {name}: {e}")))
    }

    /// Run one action, then check every invariant.
    pub fn step(&mut self, action: Action) -> Result<(), Broken> {
        self.stats.steps += 1;
        self.clock_ms += 10;
        let before = self.states.clone();
        let ran = panic::catch_unwind(AssertUnwindSafe(|| self.act(action)));
        let crashed = match ran {
            Ok(result) => {
                result?;
                false
            }
            Err(p) => match p.downcast_ref::<SimCrash>() {
                Some(c) => {
                    self.note(format!("  crashed at {}", c.0));
                    self.stats.crashes += 1;
                    true
                }
                None => return Err(broken("panic", panic_text(p.as_ref()))),
            },
        };
        if crashed {
            self.restart()?;
        }
        self.observe(&before, actor_of(action))?;
        // The assignment rows and worktrees change only through the router, the sweep, pods'
        // results and claims, a person's cancel, return, reopen or retry, a restart's reindex,
        // or a crash in any of them. (A lease's heartbeat moves `lease_until` alone.) The
        // check reads every row, so it runs after those.
        if crashed || touches_assignments(action) {
            // A sweep a crash cut short has not finished its work; the next one must.
            self.check_assignments(action == Action::Sweep && !crashed)?;
        }
        self.check_branches()?;
        if crashed || action == Action::Restart {
            self.check_outbox()?;
        }
        Ok(())
    }

    fn restart(&mut self) -> Result<(), Broken> {
        self.stats.restarts += 1;
        // Everything in memory goes: the orchestrator's holds, the database connections.
        if let Some(l) = self.live.take() {
            l.close();
        }
        self.live = Some(Live::open(&self.repo, self.rt.handle().clone())?);
        Ok(())
    }

    fn act(&mut self, action: Action) -> Result<(), Broken> {
        use Action::*;
        use State::{Closed, Done, Inprogress, Planning, Queued, Ready};
        self.note(format!("{action}"));
        match action {
            Create { deps } => self.create(deps),
            Edit { t } => self.human(t, &[State::Planning], |ws, ctx, id| {
                let req = EditRequest {
                    title: Some(format!("Ticket {id} (edited)")),
                    body: None,
                };
                ops::edit(ws, ctx, id, &req).map(|_| ())
            }),
            MarkReady { t } => self.transition(t, &[Planning], Ready, ops::mark_ready),
            Queue { t } => self.transition(t, &[Ready], Queued, ops::queue),
            Return { t } => {
                let from = [Queued, Ready, Inprogress];
                self.transition(t, &from, Planning, ops::return_to_planning)
            }
            Cancel { t } => {
                let from = [Inprogress, Queued, Ready, Planning];
                self.transition(t, &from, Closed, ops::cancel)
            }
            Close { t } => self.transition(t, &[Done], Closed, ops::close),
            Reopen { t } => self.transition(t, &[Closed], Planning, ops::reopen),
            Retry { t } => self.human(t, &[State::Inprogress, State::Queued], |ws, ctx, id| {
                ops::retry(ws, ctx, id, Some("the sim retries")).map(|_| ())
            }),
            Relate { t, u } => self.relate(t, u, true),
            Unrelate { t, u } => self.relate(t, u, false),
            Route => {
                self.route();
                Ok(())
            }
            Sweep => {
                self.sweep();
                Ok(())
            }
            Advance { ms } => self.advance(ms),
            Claim { p } => self.claim(p),
            Heartbeat { p } => {
                let k = self.pod(p);
                self.heartbeat(k);
                Ok(())
            }
            Finish { p, how } => {
                let k = self.pod(p);
                if self.pods[k].held.as_ref().is_some_and(|h| !h.paused) {
                    self.finish(k, how)?;
                }
                Ok(())
            }
            Fail { p } => {
                let k = self.pod(p);
                if let Some(h) = self.pods[k].held.take() {
                    if h.paused {
                        self.pods[k].held = Some(h);
                    } else {
                        let a = &h.work.assignment;
                        self.send(k, &a.id.clone(), a.fence, Outcome::Fail)?;
                    }
                }
                Ok(())
            }
            PodCrash { p } => {
                let k = p as usize % self.pods.len();
                self.pods[k].held = None;
                self.pods[k].last = None;
                let (role, name) = (self.pods[k].role, self.pods[k].name);
                self.pods[k].id = self.register(role, name)?;
                Ok(())
            }
            Pause { p } => {
                let k = self.pod(p);
                if let Some(h) = &mut self.pods[k].held {
                    h.paused = true;
                }
                Ok(())
            }
            Resume { p } => {
                let k = self.pod_where(p, |pod| pod.held.as_ref().is_some_and(|h| h.paused));
                let resumed = match &mut self.pods[k].held {
                    Some(h) if h.paused => {
                        h.paused = false;
                        true
                    }
                    _ => false,
                };
                if resumed {
                    self.finish(k, 1)?;
                }
                Ok(())
            }
            Duplicate { p } => {
                let k = self.pod_where(p, |pod| pod.last.is_some());
                if let Some(s) = self.pods[k].last.clone() {
                    self.send(k, &s.id, s.fence, s.outcome)?;
                }
                Ok(())
            }
            OldFence { p } => {
                let k = self.pod(p);
                let Some(h) = &self.pods[k].held else {
                    return Ok(());
                };
                let (id, fence) = (h.work.assignment.id.clone(), h.work.assignment.fence);
                let report = Report {
                    outcome: ReportOutcome::Done,
                    commit: Some(h.work.head_commit.clone()),
                    summary: Some("a result from an earlier claim".into()),
                    ..Report::default()
                };
                self.send(k, &id, fence - 1, Outcome::Complete(Box::new(report)))?;
                Ok(())
            }
            TargetCommit { conflict } => {
                let n = self.faults.commits.get() + 1;
                self.faults.commits.set(n);
                commit_on_target(&self.repo, conflict, n).map_err(|e| broken("world", e))
            }
            Dirty => {
                let p = self.repo.join("shared.txt");
                let mut text = std::fs::read_to_string(&p).unwrap_or_default();
                text.push_str("an uncommitted edit\n");
                std::fs::write(&p, text).map_err(|e| broken("world", e.to_string()))
            }
            Clean => git(&self.repo, &["checkout", "--", "shared.txt"])
                .map(|_| ())
                .map_err(|e| broken("world", e)),
            RaceMerge => {
                self.faults.race.set(true);
                Ok(())
            }
            Restart => self.restart(),
            Crash { nth } => {
                self.faults.countdown.set(nth);
                Ok(())
            }
        }
    }

    fn ctx(&self) -> Ctx {
        Ctx::new(Principal::human("alice"), self.now())
    }

    /// The ticket `t` stands for: among those in one of `states` (the work moves on), but
    /// among all when `t % 4 == 3` (the guards are tried).
    fn pick(&self, t: u32, states: &[State]) -> Option<TicketId> {
        if self.tickets.is_empty() {
            return None;
        }
        let n = (t / 4) as usize;
        if t % 4 != 3 {
            let fit: Vec<&TicketId> = self
                .tickets
                .iter()
                .filter(|id| self.states.get(*id).is_some_and(|s| states.contains(s)))
                .collect();
            if !fit.is_empty() {
                return Some(fit[n % fit.len()].clone());
            }
        }
        Some(self.tickets[n % self.tickets.len()].clone())
    }

    fn create(&mut self, deps: u32) -> Result<(), Broken> {
        let n = self.tickets.len() + 1;
        let depends_on: Vec<String> = self
            .tickets
            .iter()
            .rev()
            .take(deps as usize)
            .map(|t| t.to_string())
            .collect();
        let req = CreateRequest {
            title: format!("Ticket {n}"),
            body: BRIEF.into(),
            depends_on,
        };
        let ctx = self.ctx();
        match ops::create(&self.live().ws, &ctx, &req) {
            Ok(out) => {
                self.note(format!("  created {}", out.ticket));
                // The ticket list is read from disk after every step (see `observe`).
                self.stats.created += 1;
            }
            Err(e) => return Err(broken("human", format!("creating a ticket failed: {e}"))),
        }
        Ok(())
    }

    /// A person's operation on the ticket `t` stands for; on success the ticket is in the
    /// state the model expects, on refusal it has not moved.
    fn human_to(
        &mut self,
        t: u32,
        pick_from: &[State],
        expect: impl Fn(State) -> State,
        op: impl FnOnce(&Workspace, &Ctx, &str) -> Result<(), yoi_engine::store::StoreError>,
    ) -> Result<(), Broken> {
        let Some(id) = self.pick(t, pick_from) else {
            return Ok(());
        };
        let before = self.state_of(&id)?;
        let ctx = self.ctx();
        let result = op(&self.live().ws, &ctx, id.as_str());
        let after = self.state_of(&id)?;
        match result {
            Ok(()) => {
                self.note(format!("  {id}: {before} -> {after}"));
                let want = expect(before);
                if after != want {
                    return Err(broken(
                        "model",
                        format!("{id}: the operation succeeded from {before} but left {after}, not {want}"),
                    ));
                }
            }
            Err(e) => {
                self.stats.human_refusals += 1;
                self.note(format!("  {id} ({before}): refused: {e}"));
                if after != before {
                    return Err(broken(
                        "model",
                        format!(
                            "{id}: the operation was refused ({e}) but moved {before} -> {after}"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn human(
        &mut self,
        t: u32,
        pick_from: &[State],
        op: impl FnOnce(&Workspace, &Ctx, &str) -> Result<(), yoi_engine::store::StoreError>,
    ) -> Result<(), Broken> {
        self.human_to(t, pick_from, |s| s, op)
    }

    fn transition(
        &mut self,
        t: u32,
        pick_from: &[State],
        to: State,
        op: TransitionOp,
    ) -> Result<(), Broken> {
        let req = TransitionRequest {
            reason: Some("the sim says so".into()),
            resolution: Some("the sim resolves it".into()),
            expected: None,
        };
        self.human_to(
            t,
            pick_from,
            |_| to,
            |ws, ctx, id| op(ws, ctx, id, &req).map(|_| ()),
        )
    }

    fn relate(&mut self, t: u32, u: u32, add: bool) -> Result<(), Broken> {
        let Some(target) = self.pick(u | 3, &[]) else {
            return Ok(());
        };
        let target = target.to_string();
        self.human(
            t,
            &[State::Planning, State::Ready, State::Queued],
            |ws, ctx, id| {
                if add {
                    let req = RelationRequest {
                        kind: RelationKind::DependsOn,
                        target,
                        note: None,
                    };
                    ops::add_relation(ws, ctx, id, &req).map(|_| ())
                } else {
                    ops::remove_relation(ws, ctx, id, RelationKind::DependsOn, &target).map(|_| ())
                }
            },
        )
    }

    fn route(&mut self) {
        let now = self.now();
        let live = self.live.as_mut().expect("the world is running");
        let turn = || -> Box<dyn Any> { Box::new(()) };
        let stop = || false;
        let clock = move || now;
        let env = StepEnv {
            ws: &live.ws,
            db: &live.db,
            hooks: PassHooks {
                turn: &turn,
                stop: &stop,
                clock: &clock,
            },
        };
        let out = live.orch.step(&env, now);
        let status = live.orch.status().clone();
        self.note(format!(
            "  routed {} (accepted so far {}, last error {:?})",
            out.routed, status.accepted, status.last_error
        ));
    }

    fn sweep(&mut self) {
        let now = self.now();
        let l = self.live();
        let expired = asg::expire_due(&l.ws, &l.db, now);
        let ticked = asg::flow_tick(&l.ws, &l.db, now);
        match expired {
            Ok(o) if !o.expired.is_empty() => self.note(format!("  expired {:?}", o.expired)),
            Ok(_) => {}
            Err(e) => self.note(format!("  the lease sweep failed: {e}")),
        }
        match ticked {
            Ok(t) if t != Default::default() => self.note(format!("  {t:?}")),
            Ok(_) => {}
            Err(e) => self.note(format!("  the flow tick failed: {e}")),
        }
    }

    fn advance(&mut self, ms: u32) -> Result<(), Broken> {
        let mut left = i64::from(ms);
        while left > 0 {
            let d = left.min(LEASE.heartbeat_ms);
            self.clock_ms += d;
            left -= d;
            for k in 0..self.pods.len() {
                if self.pods[k].held.as_ref().is_some_and(|h| !h.paused) {
                    self.heartbeat(k);
                }
            }
        }
        Ok(())
    }

    /// The pod `p` stands for: one for which `fit` holds, unless `p % 4 == 3` (or none does),
    /// when it is any pod (trying what a pod with nothing to do may not do).
    fn pod_where(&self, p: u32, fit: impl Fn(&Pod) -> bool) -> usize {
        let n = (p / 4) as usize;
        if p % 4 != 3 {
            let fits: Vec<usize> = (0..self.pods.len())
                .filter(|&k| fit(&self.pods[k]))
                .collect();
            if !fits.is_empty() {
                return fits[n % fits.len()];
            }
        }
        p as usize % self.pods.len()
    }

    /// A pod at work (holding an unpaused claim), preferably.
    fn pod(&self, p: u32) -> usize {
        self.pod_where(p, |pod| pod.held.as_ref().is_some_and(|h| !h.paused))
    }

    fn claim(&mut self, p: u32) -> Result<(), Broken> {
        let l = self.live();
        let open =
            l.db.block_on(l.db.db.open_assignments())
                .map_err(|e| broken("db", e.to_string()))?;
        let roles: BTreeSet<String> = open
            .into_iter()
            .filter(|a| a.status == AssignmentStatus::Pending)
            .map(|a| a.role)
            .collect();
        let k = self.pod_where(p, |pod| pod.held.is_none() && roles.contains(pod.role));
        if self.pods[k].held.is_some() {
            return Ok(());
        }
        let l = self.live();
        let pod = &self.pods[k];
        match asg::claim(&l.ws, &l.db, &caller(pod.role), &pod.id, LEASE, self.now()) {
            Ok(Some(work)) => {
                self.note(format!(
                    "  {} claimed {} {} attempt {} fence {}",
                    pod.name,
                    work.ticket,
                    work.assignment.step,
                    work.assignment.attempt,
                    work.assignment.fence
                ));
                if let Err(e) = workdir_ready(&work) {
                    // As a real pod does before its agent starts: the attempt fails.
                    self.note(format!("  {} refuses the folder: {e}", self.pods[k].name));
                    let a = &work.assignment;
                    return self.send(k, &a.id, a.fence, Outcome::Fail).map(|_| ());
                }
                self.pods[k].held = Some(Held {
                    work,
                    paused: false,
                });
            }
            Ok(None) => {}
            Err(e) => self.note(format!("  {} could not claim: {e}", pod.name)),
        }
        Ok(())
    }

    fn heartbeat(&mut self, k: usize) {
        let Some(h) = &self.pods[k].held else { return };
        if h.paused {
            return;
        }
        let (id, fence) = (h.work.assignment.id.clone(), h.work.assignment.fence);
        let l = self.live();
        let pod = &self.pods[k];
        if let Err(e) = asg::heartbeat(
            &l.db,
            &caller(pod.role),
            &pod.id,
            &id,
            fence,
            LEASE,
            self.now(),
        ) {
            // A pod whose heartbeat is refused stops its agent and lets the claim go.
            self.note(format!("  {} lost its claim: {e}", pod.name));
            self.pods[k].held = None;
        }
    }

    /// The pod does the work it holds and sends the result.
    fn finish(&mut self, k: usize, how: u32) -> Result<(), Broken> {
        let Some(h) = self.pods[k].held.take() else {
            return Ok(());
        };
        let w = &h.work;
        let report = match self.pods[k].role {
            "coder" => match self.code(w, how) {
                Ok(commit) => Report {
                    outcome: ReportOutcome::Done,
                    commit: Some(commit),
                    summary: Some("did the work".into()),
                    ..Report::default()
                },
                Err(e) => {
                    self.note(format!("  the coder's work failed: {e}"));
                    let a = &w.assignment;
                    return self
                        .send(k, &a.id.clone(), a.fence, Outcome::Fail)
                        .map(|_| ());
                }
            },
            "verifier" => Report {
                outcome: ReportOutcome::Done,
                checks: vec![CheckResult {
                    command: "cargo test".into(),
                    exit_code: Some(0),
                    duration_ms: 1,
                    timed_out: false,
                    log: None,
                }],
                ..Report::default()
            },
            _ => Report {
                outcome: ReportOutcome::Done,
                verdict: Some(if how.is_multiple_of(4) {
                    Verdict::RequestChanges
                } else {
                    Verdict::Approve
                }),
                ..Report::default()
            },
        };
        let a = &w.assignment;
        let (id, fence) = (a.id.clone(), a.fence);
        let commit = report.commit.clone();
        let applied = self.send(k, &id, fence, Outcome::Complete(Box::new(report)));
        if let (Ok(false), Some(c)) = (&applied, commit) {
            self.refused.push((w.ticket.clone(), c));
        }
        applied.map(|_| ())
    }

    /// A coder's change in its working directory, committed: a file of its own, sometimes a
    /// line of the shared file; an `integrate` step first merges the target in.
    fn code(&self, w: &Work, how: u32) -> Result<String, String> {
        let dir = &w.workdir;
        if w.assignment.step == "integrate" {
            git(dir, &["merge", "-q", "--no-edit", "-X", "theirs", "main"])?;
        }
        let a = &w.assignment;
        std::fs::create_dir_all(dir.join("work")).map_err(|e| e.to_string())?;
        let name = format!("work/{}-{}-{}.txt", w.ticket, a.attempt, a.fence);
        std::fs::write(dir.join(&name), format!("{} at {}\n", a.id, self.clock_ms))
            .map_err(|e| e.to_string())?;
        if how.is_multiple_of(3) {
            let p = dir.join("shared.txt");
            let mut text = std::fs::read_to_string(&p).map_err(|e| e.to_string())?;
            text.push_str(&format!("{} attempt {}\n", w.ticket, a.attempt));
            std::fs::write(&p, text).map_err(|e| e.to_string())?;
        }
        let who = ygit::Identity {
            name: "sim coder".into(),
            email: "coder@yoi.invalid".into(),
            time_secs: (EPOCH_MS + self.clock_ms) / 1000,
        };
        ygit::commit_all(dir, &format!("work on {}", w.ticket), &who)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "nothing to commit".to_string())
    }

    /// What a result may change: the ticket's assignment rows and its branch head.
    fn footprint(&self, ticket: &str) -> Result<Footprint, Broken> {
        let l = self.live();
        let rows =
            l.db.block_on(l.db.db.assignments_of(ticket))
                .map_err(|e| broken("db", e.to_string()))?;
        let id = TicketId::parse(ticket).map_err(|e| broken("db", e.to_string()))?;
        let head = self
            .branch_of(&id)?
            .and_then(|b| ygit::resolve_commit(&self.repo, &b).ok());
        Ok((
            rows.into_iter()
                .map(|r| (r.id, r.status, r.fence))
                .collect(),
            head,
        ))
    }

    /// Send a result for `id` at `fence` as pod `k`; whether it was applied. A result for a
    /// claim that was not live (this pod's, this fence, claimed) must change nothing.
    fn send(&mut self, k: usize, id: &str, fence: i64, outcome: Outcome) -> Result<bool, Broken> {
        let now = self.now();
        let pod_id = self.pods[k].id.clone();
        let role = self.pods[k].role;
        let l = self.live();
        let row: Option<Assignment> =
            l.db.block_on(l.db.db.assignment(id))
                .map_err(|e| broken("db", e.to_string()))?;
        let Some(row) = row else {
            return Err(broken("db", format!("assignment {id} is unknown")));
        };
        let live = row.status == AssignmentStatus::Claimed
            && row.fence == fence
            && row.claimed_by.as_deref() == Some(pod_id.as_str());
        let before = self.footprint(&row.ticket)?;
        let l = self.live();
        let result = match &outcome {
            Outcome::Complete(report) => {
                asg::complete(&l.ws, &l.db, &caller(role), &pod_id, id, fence, report, now)
                    .map(|_| ())
            }
            Outcome::Fail => asg::fail(
                &l.ws,
                &l.db,
                &caller(role),
                &pod_id,
                id,
                fence,
                "the simulated agent failed",
                true,
                None,
                now,
            )
            .map(|_| ()),
        };
        let after = self.footprint(&row.ticket)?;
        self.pods[k].last = Some(Sent {
            id: id.to_string(),
            fence,
            outcome,
        });
        if !live && before != after {
            return Err(broken(
                "stale-result",
                format!(
                    "a result for {id} at fence {fence} from {pod_id} was applied though the claim was {} at fence {} by {:?}: {before:?} -> {after:?}",
                    row.status.as_str(),
                    row.fence,
                    row.claimed_by
                ),
            ));
        }
        match result {
            Ok(()) => {
                // A commit whose first send was refused and whose resend was taken (the claim
                // was live both times) may be on the branch.
                if let Some(Outcome::Complete(r)) = self.pods[k].last.as_ref().map(|s| &s.outcome) {
                    if let Some(c) = r.commit.clone() {
                        self.refused.retain(|(_, refused)| *refused != c);
                    }
                }
                self.stats.results_applied += 1;
                self.note(format!("  result for {id} applied"));
                Ok(true)
            }
            Err(e) => {
                self.stats.results_refused += 1;
                self.note(format!("  result for {id} refused: {e}"));
                Ok(false)
            }
        }
    }

    fn state_of(&self, id: &TicketId) -> Result<State, Broken> {
        self.live()
            .ws
            .read_item(id)
            .map(|i| i.state)
            .map_err(|e| broken("files", format!("{id}: item.md does not read: {e}")))
    }

    /// The ticket's branch from its latest accepted plan.
    fn branch_of(&self, id: &TicketId) -> Result<Option<String>, Broken> {
        let plan = self
            .live()
            .ws
            .read_plan(id)
            .map_err(|e| broken("files", format!("{id}: the plan does not read: {e}")))?;
        Ok(yoi_engine::store::latest_accepted(plan.iter()).and_then(|p| p.branch.clone()))
    }

    fn worktree_of(&self, id: &TicketId) -> Result<Option<PathBuf>, Broken> {
        let plan = self
            .live()
            .ws
            .read_plan(id)
            .map_err(|e| broken("files", format!("{id}: the plan does not read: {e}")))?;
        Ok(yoi_engine::store::latest_accepted(plan.iter())
            .and_then(|p| p.worktree.clone())
            .map(|w| self.repo.join(w)))
    }

    /// Read every ticket's state and hold the changes against the reference model: each
    /// change is an edge its actor may take, and nothing starts that a person did not queue.
    fn observe(&mut self, before: &BTreeMap<TicketId, State>, actor: Actor) -> Result<(), Broken> {
        // From disk: a creation a crash cut short may have left its ticket. `ticket_ids` is
        // sorted, and ids sort in creation order.
        self.tickets = self
            .live()
            .ws
            .ticket_ids()
            .map_err(|e| broken("files", format!("listing the tickets: {e}")))?;
        let mut now = BTreeMap::new();
        for id in &self.tickets {
            now.insert(id.clone(), self.state_of(id)?);
        }
        for (id, &to) in &now {
            let Some(&from) = before.get(id) else {
                if to != State::Planning {
                    return Err(broken("model", format!("{id} was created in {to}")));
                }
                continue;
            };
            if from == to {
                continue;
            }
            if !allowed(actor, from, to) {
                return Err(broken(
                    "model",
                    format!("{id} moved {from} -> {to} in a step of {actor:?}, which the state machine does not allow"),
                ));
            }
            match to {
                State::Queued => {
                    self.queued_by_human.insert(id.clone());
                }
                State::Inprogress => {
                    if !self.queued_by_human.remove(id) {
                        return Err(broken(
                            "unqueued-start",
                            format!("{id} started, but no person queued it since it last left the queue"),
                        ));
                    }
                    self.stats.accepted += 1;
                }
                State::Done => {
                    self.stats.merged += 1;
                    self.check_merged(id)?;
                }
                _ => {
                    self.queued_by_human.remove(id);
                }
            }
        }
        self.states = now;
        Ok(())
    }

    /// The assignments agree with the tickets: at most one live row per ticket, live rows only
    /// for tickets in progress (or held by an acceptance a crash cut short), and every ticket
    /// in progress has its worktree. After a whole sweep, a ticket in progress has a live row
    /// unless its last attempt failed or expired (its circuit is open and waits for a person).
    fn check_assignments(&self, swept: bool) -> Result<(), Broken> {
        let l = self.live();
        let rows =
            l.db.block_on(l.db.db.list_assignments(None, 1_000_000))
                .map_err(|e| broken("db", e.to_string()))?;
        let mut by_ticket: BTreeMap<&str, Vec<&Assignment>> = BTreeMap::new();
        for r in &rows {
            by_ticket.entry(r.ticket.as_str()).or_default().push(r);
        }
        for (id, state) in &self.states {
            let mine = by_ticket.remove(id.as_str()).unwrap_or_default();
            let live: Vec<&&Assignment> = mine.iter().filter(|r| r.status.is_live()).collect();
            let show = |rs: &[&&Assignment]| {
                rs.iter()
                    .map(|r| {
                        format!(
                            "{} {} attempt {} {}",
                            r.id,
                            r.step,
                            r.attempt,
                            r.status.as_str()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if live.len() > 1 {
                return Err(broken(
                    "live-rows",
                    format!(
                        "{id} ({state}) has {} live assignments: {}",
                        live.len(),
                        show(&live)
                    ),
                ));
            }
            match state {
                State::Inprogress => {
                    match self.worktree_of(id)? {
                        Some(w) if w.is_dir() => {}
                        w => {
                            return Err(broken(
                                "worktree",
                                format!("{id} is in progress without its worktree ({w:?})"),
                            ))
                        }
                    }
                    if swept && live.is_empty() {
                        let last = mine.iter().max_by_key(|r| (r.updated_ms, r.attempt));
                        let waits = last.is_some_and(|r| {
                            matches!(
                                r.status,
                                AssignmentStatus::Failed | AssignmentStatus::Expired
                            )
                        });
                        if !waits {
                            return Err(broken(
                                "no-next-step",
                                format!(
                                    "{id} is in progress after a sweep with no live assignment; the last: {:?}",
                                    last.map(|r| (&r.step, r.status.as_str(), &r.error))
                                ),
                            ));
                        }
                    }
                }
                State::Queued if live.iter().all(|r| r.status == AssignmentStatus::Held) => {}
                _ if !live.is_empty() => {
                    return Err(broken(
                        "live-rows",
                        format!("{id} is {state} but has a live assignment: {}", show(&live)),
                    ));
                }
                _ => {}
            }
        }
        if let Some((id, _)) = by_ticket.into_iter().next() {
            return Err(broken(
                "live-rows",
                format!("assignments of an unknown ticket {id}"),
            ));
        }
        Ok(())
    }

    /// No refused coder commit is on its ticket's branch.
    fn check_branches(&self) -> Result<(), Broken> {
        for (id, commit) in &self.refused {
            let Some(branch) = self.branch_of(id)? else {
                continue;
            };
            let Ok(head) = ygit::resolve_commit(&self.repo, &branch) else {
                continue;
            };
            if ygit::is_ancestor(&self.repo, commit, &head).unwrap_or(false) {
                return Err(broken(
                    "refused-commit",
                    format!(
                        "{id}: the commit {commit} of a refused result is on {branch} ({head})"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A done ticket's merged commit is reachable from its target.
    fn check_merged(&self, id: &TicketId) -> Result<(), Broken> {
        let thread = self
            .live()
            .ws
            .read_thread(id)
            .map_err(|e| broken("files", format!("{id}: the thread does not read: {e}")))?;
        let Some(merge) = thread
            .events
            .iter()
            .rev()
            .find(|e| e.kind == yoi_core::thread::EventKind::Merge)
        else {
            return Err(broken(
                "merge",
                format!("{id} is done without a merge event"),
            ));
        };
        let commit = merge.get("commit").unwrap_or_default().to_string();
        let target = merge.get("target_ref").unwrap_or("main").to_string();
        let head = ygit::resolve_commit(&self.repo, &target)
            .map_err(|e| broken("merge", format!("{id}: the target {target}: {e}")))?;
        if !ygit::is_ancestor(&self.repo, &commit, &head).unwrap_or(false) {
            return Err(broken(
                "merge",
                format!("{id} is done but its merged commit {commit} is not reachable from {target} ({head})"),
            ));
        }
        Ok(())
    }

    /// After a restart's reindex: every outbox row seen before is still there under its seq,
    /// and every thread event has its row.
    fn check_outbox(&mut self) -> Result<(), Broken> {
        let l = self.live();
        let rows =
            l.db.block_on(l.db.db.outbox())
                .map_err(|e| broken("db", e.to_string()))?;
        let now: BTreeMap<i64, String> = rows.into_iter().map(|r| (r.seq, r.event_id)).collect();
        for (seq, event) in &self.outbox {
            if now.get(seq) != Some(event) {
                return Err(broken(
                    "outbox",
                    format!(
                        "outbox row {seq} ({event}) became {:?} after a restart",
                        now.get(seq)
                    ),
                ));
            }
        }
        let ids: BTreeSet<&str> = now.values().map(String::as_str).collect();
        for t in &self.tickets {
            let thread =
                l.ws.read_thread(t)
                    .map_err(|e| broken("files", format!("{t}: the thread does not read: {e}")))?;
            for e in &thread.events {
                if let Some(eid) = e.get("id") {
                    if !ids.contains(eid) {
                        return Err(broken(
                            "outbox",
                            format!(
                                "{t}: thread event {eid} ({}) has no outbox row after a restart",
                                e.kind.as_str()
                            ),
                        ));
                    }
                }
            }
        }
        self.outbox = now;
        Ok(())
    }

    /// The end of a schedule: the faults stop, the target is cleaned and the server restarts;
    /// then every pod works (approving, touching only its own files) with routing and sweeps
    /// until nothing moves. Then nothing may be stuck: a ticket still in progress waits on a
    /// person (its last attempt failed or expired, so its circuit is open); every thread
    /// parses; the doctor finds no error.
    pub fn settle(&mut self) -> Result<(), Broken> {
        self.faults.countdown.set(0);
        self.faults.race.set(false);
        self.step(Action::Clean)?;
        self.step(Action::Restart)?;
        // The claims of pods that died run out (and are handed out again at the next sweep).
        self.step(Action::Advance {
            ms: LEASE.lease_ms as u32 + 1_000,
        })?;
        let mut quiet = 0;
        for _ in 0..60 {
            let before = (self.states.clone(), self.stats.results_applied);
            self.step(Action::Route)?;
            self.step(Action::Sweep)?;
            for _ in 0..self
                .pods
                .iter()
                .filter(|p| p.held.as_ref().is_some_and(|h| h.paused))
                .count()
            {
                self.step(Action::Resume { p: 0 })?;
            }
            for _ in 0..self.pods.iter().filter(|p| p.held.is_none()).count() {
                self.step(Action::Claim { p: 0 })?;
            }
            for _ in 0..self.pods.iter().filter(|p| p.held.is_some()).count() {
                self.step(Action::Finish { p: 0, how: 1 })?;
            }
            quiet = if before == (self.states.clone(), self.stats.results_applied) {
                quiet + 1
            } else {
                0
            };
            if quiet == 2 {
                break;
            }
        }
        if quiet < 2 {
            return Err(broken(
                "stuck",
                "the workspace still moved after 60 rounds of work",
            ));
        }
        let l = self.live();
        for (t, s) in &self.states {
            if *s != State::Inprogress {
                continue;
            }
            let rows =
                l.db.block_on(l.db.db.assignments_of(t.as_str()))
                    .map_err(|e| broken("db", e.to_string()))?;
            let last = rows.iter().max_by_key(|r| (r.created_ms, r.id.clone()));
            if !last.is_some_and(|r| {
                matches!(
                    r.status,
                    AssignmentStatus::Failed | AssignmentStatus::Expired
                )
            }) {
                return Err(broken(
                    "stuck",
                    format!(
                        "{t} is still in progress after every pod worked, and waits on no person; its latest attempt: {:?}",
                        last.map(|r| (&r.step, r.attempt, r.status.as_str(), &r.error))
                    ),
                ));
            }
        }
        if self.echo {
            let l = self.live();
            for (t, s) in &self.states {
                let rows =
                    l.db.block_on(l.db.db.assignments_of(t.as_str()))
                        .unwrap_or_default();
                let last = rows.iter().max_by_key(|r| (r.created_ms, r.id.clone()));
                eprintln!(
                    "end: {t} {s} {:?}",
                    last.map(|r| (&r.step, r.attempt, r.status.as_str(), &r.error))
                );
            }
        }
        let l = self.live();
        for t in &self.tickets {
            l.ws.read_thread(t)
                .map_err(|e| broken("files", format!("{t}: the thread does not read: {e}")))?;
        }
        let report = yoi_engine::doctor::run_full(&l.ws, Some(&l.db), false)
            .map_err(|e| broken("doctor", format!("the doctor failed: {e}")))?;
        let errors: Vec<String> = report
            .findings
            .iter()
            .filter(|f| f.is_error())
            .map(|f| format!("{f:?}"))
            .collect();
        if !errors.is_empty() {
            return Err(broken(
                "doctor",
                format!(
                    "the doctor found errors on a quiet workspace:\n{}",
                    errors.join("\n")
                ),
            ));
        }
        for id in self.tickets.clone() {
            if self.states.get(&id) == Some(&State::Done) {
                self.check_merged(&id)?;
            }
        }
        Ok(())
    }
}

impl Drop for World {
    fn drop(&mut self) {
        testpoint::clear();
        // Closed before the folder goes: a pool closing in the background still touches
        // the database's files while the folder is being removed, which leaves it half there.
        if let Some(l) = self.live.take() {
            l.close();
        }
    }
}

fn caller(role: &str) -> PodCaller {
    PodCaller {
        token_id: format!("tok-{role}"),
        role: role.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A world with one ticket accepted and its first assignment pending.
    fn accepted() -> (World, TicketId) {
        let mut w = World::new().unwrap();
        for a in [
            Action::Create { deps: 0 },
            Action::MarkReady { t: 0 },
            Action::Queue { t: 0 },
            Action::Route,
        ] {
            w.step(a).unwrap();
        }
        let id = w.tickets[0].clone();
        assert_eq!(w.states[&id], State::Inprogress);
        (w, id)
    }

    #[test]
    fn a_second_live_assignment_is_caught() {
        let (mut w, id) = accepted();
        let l = w.live();
        let extra = Assignment {
            id: "asg-extra".into(),
            ticket: id.to_string(),
            step: "verify".into(),
            role: "verifier".into(),
            attempt: 1,
            fence: 1,
            status: AssignmentStatus::Pending,
            ..Assignment::default()
        };
        l.db.block_on(l.db.db.create_assignment(&extra)).unwrap();
        let err = w.step(Action::Route).unwrap_err();
        assert_eq!(err.kind, "live-rows", "{err:?}");
        assert!(err.what.contains("2 live assignments"), "{err:?}");
    }

    #[test]
    fn a_start_that_no_person_queued_is_caught() {
        let mut w = World::new().unwrap();
        for a in [
            Action::Create { deps: 0 },
            Action::MarkReady { t: 0 },
            Action::Queue { t: 0 },
        ] {
            w.step(a).unwrap();
        }
        // Forget the person's queue: the acceptance that follows has nobody's intent behind it.
        w.queued_by_human.clear();
        let err = w.step(Action::Route).unwrap_err();
        assert_eq!(err.kind, "unqueued-start", "{err:?}");
    }

    #[test]
    fn a_missing_worktree_of_a_ticket_in_progress_is_caught() {
        let (mut w, id) = accepted();
        let wt = w.worktree_of(&id).unwrap().unwrap();
        std::fs::remove_dir_all(&wt).unwrap();
        let err = w.step(Action::Route).unwrap_err();
        assert_eq!(err.kind, "worktree", "{err:?}");
    }

    #[test]
    fn the_reference_model_allows_each_actor_its_own_edges_only() {
        use State::*;
        assert!(allowed(Actor::Human, Ready, Queued));
        assert!(allowed(Actor::Human, Inprogress, Planning));
        assert!(!allowed(Actor::Human, Queued, Inprogress));
        assert!(!allowed(Actor::Human, Inprogress, Done));
        assert!(allowed(Actor::Router, Queued, Inprogress));
        assert!(!allowed(Actor::Router, Ready, Queued));
        assert!(allowed(Actor::Service, Inprogress, Done));
        assert!(!allowed(Actor::Service, Queued, Inprogress));
        for from in State::ALL {
            for to in State::ALL {
                assert!(!allowed(Actor::Nobody, from, to));
            }
        }
    }
}
