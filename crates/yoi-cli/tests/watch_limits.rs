//! `yoi serve` follows hand edits when the kernel gives it fewer inotify watches than two per
//! ticket (docs/database.md, "The server follows the files"): with one per ticket folder it
//! watches the folders alone and sees an edit at once; with fewer it looks at every file
//! periodically and still sees it, later.
//!
//! The limit is lowered for the server alone: it runs in a user namespace of its own
//! (`unshare -U -r`) whose `user.max_inotify_watches` is set there, which changes nothing for
//! the rest of the machine.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::Repo;

const TICKETS: usize = 30;

/// `yoi serve` in a user namespace allowed `limit` inotify watches: the child, its address and
/// its log lines.
fn serve_with_watches(repo: &Repo, limit: usize) -> (Child, String, mpsc::Receiver<String>) {
    let mut child = Command::new("unshare")
        .args([
            "-U",
            "-r",
            "sh",
            "-c",
            "echo \"$1\" > /proc/sys/user/max_inotify_watches && shift && exec \"$@\"",
            "sh",
            &limit.to_string(),
            env!("CARGO_BIN_EXE_yoi"),
            "serve",
            "--listen",
            "127.0.0.1:0",
        ])
        .current_dir(repo.path())
        .env("YOI_LOG", "info")
        .env_remove("YOI_DATABASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("unshare runs (util-linux)");
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, log) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let Some(addr) = line.trim().strip_prefix("listening on http://") else {
        let _ = child.kill();
        let _ = child.wait();
        std::thread::sleep(Duration::from_millis(200));
        let log: Vec<String> = log.try_iter().collect();
        panic!(
            "the server in its namespace printed {line:?}; log:\n{}",
            log.join("\n")
        );
    };
    (child, addr.to_string(), log)
}

/// A workspace of [`TICKETS`] tickets, routing off (the tickets stay as written).
fn workspace() -> (Repo, Vec<String>) {
    let repo = Repo::init();
    let ids: Vec<String> = (0..TICKETS)
        .map(|i| repo.create(&format!("Ticket {i}"), ""))
        .collect();
    let config = repo.path().join(".yoi/workspace.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("\nenabled = true\n", "\nenabled = false\n"),
    )
    .unwrap();
    (repo, ids)
}

/// Edit the title of `id` by hand, as an editor saving a new file over the old one does, and
/// wait (at most `limit`) until the server's index has it: a list searched for the new word
/// (lists come from the index; a ticket's own answer reads its files).
fn hand_edit_seen(repo: &Repo, addr: &str, id: &str, limit: Duration) {
    let token = std::fs::read_to_string(repo.path().join(".yoi/local/admin.token")).unwrap();
    let auth = format!("Bearer {}", token.trim());
    let found = || -> Vec<String> {
        let v: serde_json::Value = ureq::get(&format!(
            "http://{addr}/api/v1/tickets?search=handedited&state=all"
        ))
        .header("Authorization", &auth)
        .call()
        .expect("the API answers")
        .body_mut()
        .read_json()
        .expect("JSON");
        v["tickets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    };
    // Asked once before the edit, so an answer is kept that the edit must drop.
    assert!(!found().contains(&id.to_string()));
    let item = repo.ticket_dir(id).join("item.md");
    let text = std::fs::read_to_string(&item).unwrap();
    let edited = text.replacen("title: Ticket", "title: handedited ticket", 1);
    assert_ne!(text, edited);
    let tmp = repo.ticket_dir(id).join(".item.md.swp");
    std::fs::write(&tmp, edited).unwrap();
    std::fs::rename(&tmp, &item).unwrap();
    let started = Instant::now();
    while !found().contains(&id.to_string()) {
        assert!(
            started.elapsed() < limit,
            "the hand edit of {id} was not seen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// The log lines so far that contain `needle`.
fn logged(log: &mpsc::Receiver<String>, needle: &str, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match log.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

#[test]
fn with_one_watch_per_ticket_a_hand_edit_is_seen_at_once() {
    let (repo, ids) = workspace();
    // Room for each ticket folder, not for their artifacts/ too (two per ticket).
    let (child, addr, log) = serve_with_watches(&repo, TICKETS + 10);
    assert!(
        logged(&log, "watching the ticket folders", Duration::from_secs(30)),
        "the server says what it watches"
    );
    hand_edit_seen(&repo, &addr, &ids[TICKETS / 2], Duration::from_secs(60));
    // A ticket made after the start is followed too.
    let later = repo.create("Ticket made later", "");
    hand_edit_seen(&repo, &addr, &later, Duration::from_secs(60));
    // Seen by the watch, not by the periodic look (which says when it finds something).
    assert!(
        !logged(&log, "the periodic check found", Duration::from_millis(500)),
        "the edits were left to the periodic look"
    );
    stop(child);
}

#[test]
fn with_fewer_watches_than_tickets_a_hand_edit_is_seen_by_the_periodic_look() {
    let (repo, ids) = workspace();
    let (child, addr, log) = serve_with_watches(&repo, TICKETS / 2);
    assert!(
        logged(
            &log,
            "cannot watch the ticket files",
            Duration::from_secs(30)
        ),
        "the server says it cannot watch"
    );
    // The look runs every 15 s here; generous, as the machine may be busy.
    hand_edit_seen(&repo, &addr, &ids[1], Duration::from_secs(120));
    assert!(
        logged(&log, "the periodic check found", Duration::from_secs(5)),
        "the periodic look found the edit"
    );
    stop(child);
}
