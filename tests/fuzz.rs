//! Fuzzing the parsers of user-controlled bytes on stable Rust (issue 11): a seeded,
//! structure-aware mutator over a corpus of realistic files, one target per format, and a runner
//! that catches panics and times every input. Used by `yoi-fuzz` (the long runs recorded in
//! `BENCHMARKS.md`) and by the `fuzz_smoke` test (a short fixed-seed run of every target).
//!
//! The runner owns no parser knowledge: a [`Target`] is a name, a seed corpus, a dictionary of
//! tokens and a function from bytes to "accepted". What it guarantees: a panic inside a target
//! is caught and counted (the first message kept, the input written to the crash folder); an
//! input taking longer than [`Budget::hang_after`] is counted as a hang and written too; an
//! input stuck for ten times that is written and the process exits, since a stuck call cannot
//! be cancelled. The targets run on a thread with a 2 MiB stack, the stack of tokio's worker
//! and blocking threads, so deep recursion the server would die of is not hidden by the main
//! thread's larger stack. Stack overflows abort the process (Rust cannot catch them); the seed
//! and the printed progress name the input.

mod mutate;
mod seeds;
pub mod targets;

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

pub use mutate::Mutator;
pub use targets::{all, by_name, Target};

/// How much to run and where to put what breaks.
#[derive(Debug, Clone)]
pub struct Budget {
    pub inputs: u64,
    pub seed: u64,
    /// One input slower than this is a hang.
    pub hang_after: Duration,
    /// One input running longer than this is stuck: the watchdog writes it and ends the
    /// process (ten hang budgets by default).
    pub stuck_after: Option<Duration>,
    /// Where crashing and hanging inputs are written (`<target>-<n>.bin`); none writes nothing.
    pub crash_dir: Option<PathBuf>,
}

impl Budget {
    pub fn new(inputs: u64, seed: u64) -> Budget {
        Budget {
            inputs,
            seed,
            hang_after: Duration::from_secs(1),
            stuck_after: None,
            crash_dir: Some(default_crash_dir()),
        }
    }
}

/// `target/fuzz-crashes` of this workspace.
pub fn default_crash_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-crashes")
}

/// What one target's run found.
#[derive(Debug, Clone)]
pub struct Summary {
    pub target: &'static str,
    pub inputs: u64,
    /// Inputs the parser accepted (a measure of how deep the mutants get, not a finding).
    pub accepted: u64,
    pub panics: u64,
    pub hangs: u64,
    pub slowest: Duration,
    pub slowest_input: u64,
    pub slowest_len: usize,
    /// The slowest input itself, to look at or replay.
    pub slowest_bytes: Vec<u8>,
    pub bytes: u64,
    pub wall: Duration,
    pub first_panic: Option<String>,
    pub written: Vec<PathBuf>,
}

impl Summary {
    /// The one line `yoi-fuzz` prints per target.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{:<14} inputs {:>9}  accepted {:>9}  panics {}  hangs {}  slowest {:.3} ms (input {}, {} bytes)  mean {} B  wall {:.1} s",
            self.target,
            self.inputs,
            self.accepted,
            self.panics,
            self.hangs,
            self.slowest.as_secs_f64() * 1e3,
            self.slowest_input,
            self.slowest_len,
            self.bytes / self.inputs.max(1),
            self.wall.as_secs_f64(),
        );
        if let Some(p) = &self.first_panic {
            s.push_str(&format!("\n  first panic: {p}"));
        }
        for w in &self.written {
            s.push_str(&format!("\n  wrote {}", w.display()));
        }
        s
    }
}

thread_local! {
    /// Set while a target runs on this thread: panics are recorded, not printed.
    static FUZZING: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Install, once per process, a panic hook that is silent on fuzzing threads and defers to the
/// previous hook everywhere else (so other tests in the same binary still print their panics).
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if FUZZING.with(Cell::get) {
                let msg = match info.location() {
                    Some(l) => format!("{info} at {}:{}", l.file(), l.line()),
                    None => info.to_string(),
                };
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(msg));
            } else {
                previous(info);
            }
        }));
    });
}

/// The input being run, for the watchdog.
struct Current {
    busy: AtomicBool,
    index: AtomicU64,
    started_ns: AtomicU64,
    input: Mutex<Vec<u8>>,
}

/// Run `target` for `budget.inputs` mutated inputs (input 0.. are the seeds themselves, then
/// mutants), on a thread with a 2 MiB stack.
pub fn run(target: &'static Target, budget: &Budget) -> Summary {
    install_hook();
    let budget = budget.clone();
    std::thread::Builder::new()
        .name(format!("fuzz-{}", target.name))
        .stack_size(2 << 20)
        .spawn(move || run_here(target, &budget))
        .expect("spawn the fuzzing thread")
        .join()
        .expect("the fuzzing loop itself does not panic")
}

fn run_here(target: &'static Target, budget: &Budget) -> Summary {
    let corpus = (target.seeds)();
    assert!(!corpus.is_empty(), "target {} has no seeds", target.name);
    let mut mutator = Mutator::new(budget.seed, corpus, target.dict);
    let clock = Instant::now();
    let current = Arc::new(Current {
        busy: AtomicBool::new(false),
        index: AtomicU64::new(0),
        started_ns: AtomicU64::new(0),
        input: Mutex::new(Vec::new()),
    });
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = spawn_watchdog(target.name, budget, clock, &current, &done);

    let mut s = Summary {
        target: target.name,
        inputs: 0,
        accepted: 0,
        panics: 0,
        hangs: 0,
        slowest: Duration::ZERO,
        slowest_input: 0,
        slowest_len: 0,
        slowest_bytes: Vec::new(),
        bytes: 0,
        wall: Duration::ZERO,
        first_panic: None,
        written: Vec::new(),
    };
    let mut input = Vec::new();
    for n in 0..budget.inputs {
        mutator.next_input(n, &mut input);
        {
            let mut shared = current.input.lock().unwrap();
            shared.clear();
            shared.extend_from_slice(&input);
        }
        current.index.store(n, Ordering::Relaxed);
        let start = Instant::now();
        current.started_ns.store(
            start.duration_since(clock).as_nanos() as u64,
            Ordering::Relaxed,
        );
        current.busy.store(true, Ordering::Release);
        FUZZING.with(|f| f.set(true));
        let outcome = std::panic::catch_unwind(|| (target.run)(&input));
        FUZZING.with(|f| f.set(false));
        current.busy.store(false, Ordering::Release);
        let took = start.elapsed();

        s.inputs += 1;
        s.bytes += input.len() as u64;
        if took > s.slowest {
            s.slowest = took;
            s.slowest_input = n;
            s.slowest_len = input.len();
            s.slowest_bytes.clone_from(&input);
        }
        if took > budget.hang_after {
            s.hangs += 1;
            write_finding(budget, &mut s, &format!("{}-hang-{n}", target.name), &input);
        }
        match outcome {
            Ok(true) => {
                s.accepted += 1;
                mutator.keep(&input);
            }
            Ok(false) => {}
            Err(_) => {
                s.panics += 1;
                let msg = LAST_PANIC.with(|p| p.borrow_mut().take());
                if s.first_panic.is_none() {
                    let msg = msg.unwrap_or_else(|| "(no message)".into());
                    s.first_panic = Some(format!("input {n}: {}", shorten(&msg)));
                }
                write_finding(budget, &mut s, &format!("{}-{n}", target.name), &input);
            }
        }
    }
    s.wall = clock.elapsed();
    done.store(true, Ordering::Release);
    let _ = watchdog.join();
    s
}

/// A panic message cut to a printable size (the input itself is in the crash file).
fn shorten(msg: &str) -> String {
    const MAX: usize = 600;
    if msg.len() <= MAX {
        return msg.to_string();
    }
    let mut end = MAX;
    while !msg.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &msg[..end], msg.len())
}

/// Keep at most this many finding files per target.
const MAX_WRITTEN: usize = 20;

fn write_finding(budget: &Budget, s: &mut Summary, stem: &str, input: &[u8]) {
    let Some(dir) = &budget.crash_dir else { return };
    if s.written.len() >= MAX_WRITTEN {
        return;
    }
    let path = dir.join(format!("{stem}.bin"));
    if std::fs::create_dir_all(dir).is_ok() && std::fs::write(&path, input).is_ok() {
        s.written.push(path);
    }
}

/// Watch for an input stuck for ten hang budgets: write it and exit, naming it.
fn spawn_watchdog(
    name: &'static str,
    budget: &Budget,
    clock: Instant,
    current: &Arc<Current>,
    done: &Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let stuck_after = budget.stuck_after.unwrap_or(budget.hang_after * 10);
    let dir = budget.crash_dir.clone();
    let (current, done) = (current.clone(), done.clone());
    std::thread::spawn(move || {
        let tick = (stuck_after / 10).min(Duration::from_millis(200));
        while !done.load(Ordering::Acquire) {
            std::thread::sleep(tick);
            if !current.busy.load(Ordering::Acquire) {
                continue;
            }
            let started = Duration::from_nanos(current.started_ns.load(Ordering::Relaxed));
            if clock.elapsed().saturating_sub(started) < stuck_after {
                continue;
            }
            let n = current.index.load(Ordering::Relaxed);
            let input = current.input.lock().map(|i| i.clone()).unwrap_or_default();
            let mut saved = String::from("(not written)");
            if let Some(dir) = &dir {
                let path = dir.join(format!("{name}-stuck-{n}.bin"));
                if std::fs::create_dir_all(dir).is_ok() && std::fs::write(&path, &input).is_ok() {
                    saved = path.display().to_string();
                }
            }
            eprintln!(
                "yoi-fuzz: target {name}: input {n} has run for more than {stuck_after:?}; \
                 written to {saved}"
            );
            std::process::exit(3);
        }
    })
}
