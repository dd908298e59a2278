//! The doctor cache end to end, on real workspaces made through the store: an unchanged ticket
//! comes back as it was checked and nothing is rewritten, any change has its ticket read again,
//! a damaged or foreign file is not believed, passes at the same time leave one whole file, and
//! only a scan of files older than the pass is kept. Every kept scan is compared with a fresh
//! read of the same folder, so these tests hold the codec, the stamps and the file together.

use std::path::PathBuf;

use yoi_core::finding::SafeFix;
use yoi_core::principal::Principal;
use yoi_core::relation::RelationKind;
use yoi_core::{TicketId, Timestamp};
use yoi_store::dirfd::FileMeta;
use yoi_store::ops::{self, CommentRequest, CreateRequest, Ctx, PlanRequest, RelationRequest};
use yoi_store::tickets::{ITEM, RELATIONS, THREAD};
use yoi_store::workspace::Workspace;
use yoi_testkit::until_the_file_clock_passes;

use super::cache_file::FOOTER;
use super::{Cache, Entry, Stamped, Stamps, FILE};
use crate::ticket::{check_ticket, TicketScan};

struct Fx {
    _dir: tempfile::TempDir,
    ws: Workspace,
    ids: Vec<TicketId>,
}

fn ctx() -> Ctx {
    Ctx::new(
        Principal::human("alice"),
        Timestamp::parse("2026-11-29T10:00:00Z").unwrap(),
    )
}

/// Seven tickets: relations, a plan record, an older-format key (a finding with fixed
/// texts) and an older event (one with a made text), then a wait of a few clock ticks so
/// every file is older than the next pass.
fn fixture() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    yoi_store::init(dir.path(), "main").unwrap();
    let ws = Workspace::open(dir.path()).unwrap();
    let mut ids = Vec::new();
    for n in 0..7 {
        let req = CreateRequest {
            title: format!("ticket {n}"),
            body: "## Intent\nShip it.\n".into(),
            depends_on: ids
                .first()
                .map(|d: &TicketId| d.to_string())
                .into_iter()
                .collect(),
        };
        ids.push(ops::create(&ws, &ctx(), &req).unwrap().ticket);
    }
    let rel = RelationRequest {
        kind: RelationKind::Related,
        target: ids[2].to_string(),
        note: Some("see also".into()),
    };
    ops::add_relation(&ws, &ctx(), ids[1].as_str(), &rel).unwrap();
    // A time written by hand to the nanosecond: the cache keeps the instant exactly.
    let relations = ws.ticket_dir(&ids[1]).join(RELATIONS);
    let text = std::fs::read_to_string(&relations).unwrap();
    let exact = text.replacen("10:00:00Z", "10:00:00.123456789Z", 1);
    assert_ne!(exact, text, "{text}");
    std::fs::write(&relations, exact).unwrap();
    let plan = PlanRequest {
        kind: yoi_core::plan::PlanKind::After,
        related: Some(ids[3].to_string()),
        note: Some("after 3".into()),
        accepted_plan: None,
    };
    ops::add_plan_record(&ws, &ctx(), ids[1].as_str(), &plan).unwrap();
    let item = ws.ticket_dir(&ids[1]).join(ITEM);
    let text = std::fs::read_to_string(&item).unwrap();
    std::fs::write(&item, text.replacen("\n", "\nassignee: null\n", 1)).unwrap();
    let thread = ws.ticket_dir(&ids[1]).join(THREAD);
    let mut text = std::fs::read_to_string(&thread).unwrap();
    text.push_str(
        "<!-- event: comment author: bob at: 2026-11-29T11:00:00Z -->\n## Note\nold\n\n---\n",
    );
    std::fs::write(&thread, text).unwrap();
    until_the_file_clock_passes(&ws.tickets_dir(), &ws.local_dir());
    Fx { _dir: dir, ws, ids }
}

/// One pass over every ticket through `cache`, as doctor makes it; returns the scans.
fn pass(fx: &Fx) -> Vec<TicketScan> {
    let cache = Cache::open(&fx.ws);
    let scans: Vec<TicketScan> = fx
        .ids
        .iter()
        .map(|id| {
            let mut scan = check_ticket(&fx.ws, id, &cache);
            let kept = scan.cache.as_ref().map(|e| matches!(e, Entry::Reused(_)));
            cache.keep(&mut scan);
            scan.cache = kept.map(|reused| {
                if reused {
                    Entry::Reused(0)
                } else {
                    Entry::New(Vec::new())
                }
            });
            scan
        })
        .collect();
    cache.finish();
    scans
}

fn reused(scans: &[TicketScan]) -> Vec<bool> {
    scans
        .iter()
        .map(|s| matches!(s.cache, Some(Entry::Reused(_))))
        .collect()
}

/// Everything a scan hands on, as text.
fn shown(s: &TicketScan) -> String {
    format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        s.findings,
        s.exists,
        s.state,
        s.relations,
        s.relations_text,
        s.plan,
        s.facts.item,
        s.facts.events.text(),
        s.facts.plans
    )
}

fn fresh(fx: &Fx, id: &TicketId) -> TicketScan {
    check_ticket(&fx.ws, id, &Cache::none())
}

fn cache_file(fx: &Fx) -> PathBuf {
    fx.ws.local_dir().join(FILE)
}

#[test]
fn an_unchanged_ticket_is_read_back_as_it_was_checked_and_nothing_is_rewritten() {
    let fx = fixture();
    let first = pass(&fx);
    assert_eq!(reused(&first), [false; 7]);
    assert!(
        first.iter().all(|s| s.cache.is_some()),
        "every ticket is kept"
    );
    let file = std::fs::metadata(cache_file(&fx)).unwrap();

    let second = pass(&fx);
    assert_eq!(reused(&second), [true; 7]);
    for (kept, id) in second.iter().zip(&fx.ids) {
        assert_eq!(shown(kept), shown(&fresh(&fx, id)));
    }
    // The kept scans hold what the checks found: findings with fixed and made texts,
    // relations, a plan record and the thread's keys.
    let one = &second[1];
    assert!(one.findings.iter().any(|f| f.check == "item.legacy_key"));
    assert!(one.findings.iter().any(|f| f.check == "thread.event_id"));
    assert!(one.relations.is_some() && !one.plan.is_empty());
    assert!(one.facts.events.iter().count() >= 2);
    // Nothing changed, so the file was not written again.
    use std::os::unix::fs::MetadataExt;
    let again = std::fs::metadata(cache_file(&fx)).unwrap();
    assert_eq!(
        (again.ino(), again.mtime_nsec()),
        (file.ino(), file.mtime_nsec())
    );
}

#[test]
fn any_change_in_a_ticket_folder_has_it_read_again() {
    let fx = fixture();
    pass(&fx);
    let dir = |n: usize| fx.ws.ticket_dir(&fx.ids[n]);
    // A comment through the store (thread.md grows, item.md is rewritten).
    let req = CommentRequest {
        kind: "comment".into(),
        body: "more".into(),
    };
    ops::comment(&fx.ws, &ctx(), fx.ids[0].as_str(), &req).unwrap();
    // The same number of bytes, written in place: only the times tell.
    let item = dir(2).join(ITEM);
    let text = std::fs::read_to_string(&item).unwrap();
    std::fs::write(&item, text.replacen("ticket 2", "ticket X", 1)).unwrap();
    // A file added to the folder, and one to artifacts/.
    std::fs::write(dir(3).join("notes.txt"), "x").unwrap();
    std::fs::write(dir(4).join("artifacts/log.txt"), "x").unwrap();
    // Only the mode of thread.md.
    use std::os::unix::fs::PermissionsExt;
    let thread = dir(5).join(THREAD);
    std::fs::set_permissions(&thread, std::fs::Permissions::from_mode(0o600)).unwrap();

    let after = pass(&fx);
    assert_eq!(
        reused(&after),
        [false, true, false, false, false, false, true]
    );
    for (scan, id) in after.iter().zip(&fx.ids) {
        assert_eq!(shown(scan), shown(&fresh(&fx, id)));
    }
    assert_eq!(after[2].facts.item.as_ref().unwrap()[0], "ticket X");
    assert!(after[3]
        .findings
        .iter()
        .any(|f| f.check == "layout.stray_file" && f.seen.contains("notes.txt")));
    // The next pass reuses every entry that pass could keep: not those of files changed
    // within its first clock tick (racy), which it reads again and keeps.
    until_the_file_clock_passes(&fx.ws.tickets_dir(), &fx.ws.local_dir());
    let next = pass(&fx);
    let kept: Vec<bool> = after.iter().map(|s| s.cache.is_some()).collect();
    assert_eq!(reused(&next), kept);
    assert!(next.iter().all(|s| s.cache.is_some()));
    assert_eq!(reused(&pass(&fx)), [true; 7]);
}

#[test]
fn a_damaged_or_foreign_file_is_not_believed() {
    let fx = fixture();
    pass(&fx);
    let path = cache_file(&fx);
    let good = std::fs::read(&path).unwrap();
    let cache = Cache::open(&fx.ws);
    let (_, offset, len) = cache.old.as_ref().unwrap().index[3].clone();
    drop(cache);

    // One flipped byte inside an entry: that ticket only is read again.
    let mut bad = good.clone();
    bad[(offset + len as u64 / 2) as usize] ^= 0x20;
    std::fs::write(&path, &bad).unwrap();
    let cache = Cache::open(&fx.ws);
    let found: Vec<bool> = fx.ids.iter().map(|id| cache.lookup(id).is_some()).collect();
    assert_eq!(found, [true, true, true, false, true, true, true]);

    // A flipped byte in the index, an impossible count, a file cut short, another format:
    // none of it is read.
    let mut bad = good.clone();
    let at = bad.len() - FOOTER - 5;
    bad[at] ^= 0x01;
    let mut count = good.clone();
    let at = count.len() - FOOTER + 8;
    count[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    for damaged in [
        bad,
        count,
        good[..good.len() - 3].to_vec(),
        b"yoidc\x00\x00\x02".to_vec(),
    ] {
        std::fs::write(&path, &damaged).unwrap();
        let cache = Cache::open(&fx.ws);
        assert!(cache.old.is_none());
        assert!(fx.ids.iter().all(|id| cache.lookup(id).is_none()));
    }

    // The file of another workspace with the same tickets describes other paths.
    let other = tempfile::tempdir().unwrap();
    copy_tree(fx.ws.root(), other.path());
    std::fs::write(other.path().join(".yoi/local").join(FILE), &good).unwrap();
    let ws = Workspace::open(other.path()).unwrap();
    assert!(Cache::open(&ws).old.is_none());
    // Where it belongs, it is read again.
    std::fs::write(&path, &good).unwrap();
    assert!(Cache::open(&fx.ws).lookup(&fx.ids[3]).is_some());
}

#[test]
fn passes_at_the_same_time_leave_one_whole_file() {
    let fx = fixture();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| pass(&fx));
        }
    });
    assert_eq!(reused(&pass(&fx)), [true; 7]);
    let names: Vec<String> = std::fs::read_dir(fx.ws.local_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(FILE))
        .collect();
    assert_eq!(names, [FILE], "no temporary file is left behind");
}

#[test]
fn only_a_scan_of_files_older_than_the_pass_is_kept() {
    let fx = fixture();
    let cache = Cache::open(&fx.ws);
    let started = cache.started.unwrap();
    let scan = fresh(&fx, &fx.ids[1]);
    let stamp = |ctime_ns: i64, mtime_ns: i64| Stamps {
        seen: vec![(
            Stamped::Item,
            FileMeta {
                size: 1,
                mtime_ns,
                ctime_ns,
                ino: 1,
            },
        )],
        keep: true,
    };
    assert!(cache
        .entry(&scan, &stamp(started - 1, started - 1))
        .is_some());
    assert!(cache.entry(&scan, &stamp(started, started - 1)).is_none());
    assert!(cache.entry(&scan, &stamp(started - 1, started)).is_none());
    let mut unfit = stamp(started - 1, started - 1);
    unfit.keep = false;
    assert!(cache.entry(&scan, &unfit).is_none());
    // A finding `--fix` may act on is never kept.
    let mut fixable = fresh(&fx, &fx.ids[1]);
    fixable.findings[0].safe_fix = Some(SafeFix::CreateFile { path: "x".into() });
    assert!(cache
        .entry(&fixable, &stamp(started - 1, started - 1))
        .is_none());
    // Nor is anything when the cache is off.
    assert!(Cache::none().entry(&scan, &stamp(0, 0)).is_none());
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}
