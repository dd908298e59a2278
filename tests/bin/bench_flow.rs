//! `yoi-bench-flow YOI_BINARY [TICKETS] [CODERS] [FILES]`: tickets per minute through the whole
//! loop — queued, implemented, verified, reviewed, merged, done — with no-op scripted agents
//! (`yoi-fake-agent`, next to YOI_BINARY) on a FILES-file repository (default 300) whose `main`
//! is checked out, CODERS coder pods (default 4; one verifier and one reviewer pod; up to
//! CODERS tickets in progress) and TICKETS tickets (default 60), each changing its own file.
//! The clock starts when `yoi serve` is listening and stops when the last ticket is done.

use std::time::{Duration, Instant};

use yoi_store::ops::{self, CreateRequest, TransitionRequest};
use yoi_testkit::git;
use yoi_tests::{ctx, yoi_init};

const BRIEF: &str = "## Intent\nBench.\n\n## Acceptance criteria\n- the note exists\n\n## Validation\n`test -n \"$(ls notes)\"`\n";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: yoi-bench-flow YOI_BINARY [TICKETS] [CODERS] [FILES]";
    let yoi = std::fs::canonicalize(args.get(1).expect(usage)).expect("YOI_BINARY exists");
    let tickets: usize = args.get(2).map(|s| s.parse().expect(usage)).unwrap_or(60);
    let coders: usize = args.get(3).map(|s| s.parse().expect(usage)).unwrap_or(4);
    let files: usize = args.get(4).map(|s| s.parse().expect(usage)).unwrap_or(300);
    let agent = yoi.with_file_name("yoi-fake-agent");
    assert!(agent.is_file(), "{} is missing", agent.display());

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    for i in 0..files {
        let folder = root.join(format!("src/m{}", i % 15));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join(format!("f{i}.rs")), format!("// file {i}\n")).unwrap();
    }
    yoi_testkit::commit_all(root, "base");
    yoi_init(&yoi, root);
    let local = root.join(".yoi/local");
    std::fs::write(
        local.join("coder.txt"),
        "write notes/$YOI_TICKET.md // $YOI_TICKET\\n\ndone added the note\n",
    )
    .unwrap();
    std::fs::write(
        local.join("review.txt"),
        "say YOI-VERDICT: approve\ndone reviewed\n",
    )
    .unwrap();
    let config = root.join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text
        .replace(
            "[pods.agent]\n",
            "[pods.agent]\ncoder = \"bench\"\nreviewer = \"bench-review\"\n",
        )
        .replace("coder = 1\n", &format!("coder = {coders}\n"))
        .replace(
            "max_inprogress = 4\n",
            &format!("max_inprogress = {coders}\n"),
        );
    assert!(
        text.contains(&format!("coder = {coders}\n")),
        "roles in {text}"
    );
    let text = format!(
        "{text}\n[agents.bench]\nprogram = \"{a}\"\nargv = [\"{{program}}\", \"{c}\"]\noutput = \"text\"\n\n[agents.bench-review]\nprogram = \"{a}\"\nargv = [\"{{program}}\", \"{r}\"]\noutput = \"text\"\n",
        a = agent.display(),
        c = local.join("coder.txt").display(),
        r = local.join("review.txt").display(),
    );
    std::fs::write(&config, text).unwrap();
    yoi_testkit::commit_all(root, "yoi");

    let ws = yoi_tests::open(root);
    let c = ctx("bench");
    let mut ids = Vec::new();
    for i in 0..tickets {
        let req = CreateRequest {
            title: format!("Note {i}"),
            body: BRIEF.into(),
            ..CreateRequest::default()
        };
        let id = ops::create(&ws, &c, &req).unwrap().ticket;
        ops::mark_ready(&ws, &c, id.as_str(), &TransitionRequest::default()).unwrap();
        ops::queue(&ws, &c, id.as_str(), &TransitionRequest::default()).unwrap();
        ids.push(id);
    }
    drop(ws);

    let (mut server, _addr) = yoi_tests::yoi_serve(&yoi, root);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(1800);
    let ws = yoi_tests::open(root);
    let mut finished_at: Vec<f64> = Vec::new();
    let mut pending: Vec<_> = ids.clone();
    while !pending.is_empty() {
        assert!(
            Instant::now() < deadline,
            "{} tickets never finished",
            pending.len()
        );
        pending.retain(|id| {
            let done = ws
                .read_item(id)
                .map(|i| i.state == yoi_core::State::Done)
                .unwrap_or(false);
            if done {
                finished_at.push(started.elapsed().as_secs_f64());
            }
            !done
        });
        std::thread::sleep(Duration::from_millis(20));
    }
    let secs = started.elapsed().as_secs_f64();
    unsafe {
        libc::kill(server.id() as i32, libc::SIGTERM);
    }
    let _ = server.wait();
    let merged = git(root, &["rev-list", "--count", "main"]);
    println!(
        "{tickets} tickets, {coders} coder pods, {files}-file repository: all done in {secs:.1} s = {:.1} tickets/min (first done at {:.1} s; main has {} commits)",
        tickets as f64 / secs * 60.0,
        finished_at.first().copied().unwrap_or(0.0),
        merged.trim()
    );
}
