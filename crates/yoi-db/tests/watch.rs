//! The file watch (`yoi_store::watch`): every write to a ticket's files or to the database is
//! reported by the next poll, with the ticket it touched; reads are never reported.

use yoi_testkit::store as common;

use common::Fx;
use yoi_db::watch::FileWatch;

#[test]
fn writes_are_reported_at_the_next_poll_and_reads_never_are() {
    let fx = Fx::new();
    let id = fx.create("Watched", "");
    let db = fx.ws.local_dir().join("yoi.db");
    std::fs::write(&db, b"").unwrap();
    let watch = FileWatch::start(&fx.ws, Some(&db)).expect("inotify works here");
    let start = watch.poll();
    assert!(
        start.tickets.is_empty() && !start.lost && !start.broken,
        "{start:?}"
    );

    // Reading every file of the ticket, and the database, changes nothing.
    for entry in std::fs::read_dir(fx.ws.ticket_dir(&id)).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::read(&path).unwrap();
        }
    }
    std::fs::read(&db).unwrap();
    assert_eq!(watch.poll().generation, start.generation);

    // A hand edit of item.md is the ticket's, in the very next poll.
    let item = fx.ws.ticket_dir(&id).join("item.md");
    let text = std::fs::read_to_string(&item).unwrap();
    std::fs::write(&item, text.replace("Watched", "Edited")).unwrap();
    let edited = watch.poll();
    assert_eq!(edited.tickets, vec![id.clone()]);
    assert!(edited.generation > start.generation);
    assert_eq!(
        edited.db_generation, start.db_generation,
        "not a database write"
    );
    assert!(
        watch.poll().tickets.is_empty(),
        "each change is reported once"
    );

    // A ticket made after the watch started is watched too (its artifacts/ as well).
    let later = fx.create("Made later", "");
    let made = watch.poll();
    assert!(made.tickets.contains(&later), "{made:?}");
    std::fs::write(
        fx.ws.ticket_dir(&later).join("artifacts").join("note.txt"),
        b"x",
    )
    .unwrap();
    assert_eq!(watch.poll().tickets, vec![later]);

    // A write to the database (or its log) moves the database's generation, not the tickets.
    std::fs::write(fx.ws.local_dir().join("yoi.db-wal"), b"frame").unwrap();
    let written = watch.poll();
    assert!(written.db_generation > edited.db_generation);
    assert!(written.last_db_write.is_some() && written.tickets.is_empty());
    // Other files beside it (the workspace lock) are not the database.
    let before = watch.poll();
    std::fs::write(fx.ws.local_dir().join("workspace.lock"), b"pid").unwrap();
    assert_eq!(watch.poll().generation, before.generation);

    // Removing the tickets folder leaves the watch unable to see: broken.
    std::fs::remove_dir_all(fx.ws.tickets_dir()).unwrap();
    let gone = watch.poll();
    assert!(gone.lost && gone.broken, "{gone:?}");
}

#[test]
fn with_too_few_watches_for_artifacts_every_ticket_folder_is_still_watched() {
    use yoi_db::watch::Coverage;
    let fx = Fx::new();
    let ids: Vec<_> = (0..3).map(|i| fx.create(&format!("T{i}"), "")).collect();
    let db = fx.ws.local_dir().join("yoi.db");
    std::fs::write(&db, b"").unwrap();

    // Room for everything: every folder, two per ticket.
    let full = FileWatch::start_within(&fx.ws, Some(&db), Some(Coverage::Full.needs(3))).unwrap();
    assert_eq!((full.coverage(), full.watches()), (Coverage::Full, 8));
    drop(full);
    // One short of that: the ticket folders alone.
    let limit = Coverage::Full.needs(3) - 1;
    let watch = FileWatch::start_within(&fx.ws, Some(&db), Some(limit)).unwrap();
    assert_eq!((watch.coverage(), watch.watches()), (Coverage::Folders, 5));
    watch.poll();

    // A hand edit in place, and a replacement renamed over the file (an editor's save, `git
    // checkout`), are the ticket's at the next poll.
    let item = fx.ws.ticket_dir(&ids[0]).join("item.md");
    let text = std::fs::read_to_string(&item).unwrap();
    std::fs::write(&item, text.replace("T0", "Edited")).unwrap();
    assert_eq!(watch.poll().tickets, vec![ids[0].clone()]);
    let thread = fx.ws.ticket_dir(&ids[1]).join("thread.md");
    let tmp = fx.ws.ticket_dir(&ids[1]).join(".thread.md.tmp");
    std::fs::copy(&thread, &tmp).unwrap();
    std::fs::rename(&tmp, &thread).unwrap();
    assert_eq!(watch.poll().tickets, vec![ids[1].clone()]);

    // A ticket made later is watched too.
    let later = fx.create("Made later", "");
    assert!(watch.poll().tickets.contains(&later));
    let item = fx.ws.ticket_dir(&later).join("item.md");
    let text = std::fs::read_to_string(&item).unwrap();
    std::fs::write(&item, text.replace("Made later", "Edited later")).unwrap();
    assert_eq!(watch.poll().tickets, vec![later.clone()]);

    // A relation written through yoi appends to the thread: seen, and said to reach others.
    yoi_store::ops::add_relation(
        &fx.ws,
        &common::alice(1),
        ids[2].as_str(),
        &yoi_store::ops::RelationRequest {
            kind: yoi_core::relation::RelationKind::DependsOn,
            target: ids[0].to_string(),
            note: None,
        },
    )
    .unwrap();
    let related = watch.poll();
    assert!(related.tickets.contains(&ids[2]), "{related:?}");
    // Removing a ticket's artifacts/ folder is seen (from the ticket folder's watch).
    std::fs::remove_dir_all(fx.ws.ticket_dir(&ids[2]).join("artifacts")).unwrap();
    let removed = watch.poll();
    assert_eq!(removed.tickets, vec![ids[2].clone()]);
    assert!(removed.relations);

    // What this coverage leaves to the periodic look: a write inside artifacts/ alone.
    std::fs::write(
        fx.ws.ticket_dir(&ids[0]).join("artifacts").join("note.txt"),
        b"x",
    )
    .unwrap();
    assert!(watch.poll().tickets.is_empty());
    // yoi's own write inside artifacts/ alone (a plan line) marks the folder changed, which the
    // ticket folder's watch sees at once.
    let before = watch.poll();
    yoi_store::ops::add_plan_record(
        &fx.ws,
        &common::alice(2),
        ids[1].as_str(),
        &yoi_store::ops::PlanRequest {
            kind: yoi_core::plan::PlanKind::After,
            related: Some(ids[0].to_string()),
            note: None,
            accepted_plan: None,
        },
    )
    .unwrap();
    let planned = watch.poll();
    assert_eq!(planned.tickets, vec![ids[1].clone()], "{planned:?}");
    assert!(planned.generation > before.generation);

    // Fewer than one watch per ticket: no watch at all, and the error says why.
    drop(watch);
    let refused = FileWatch::start_within(&fx.ws, Some(&db), Some(Coverage::Folders.needs(4) - 1))
        .err()
        .expect("too few watches");
    assert!(
        refused.to_string().contains("max_user_watches"),
        "{refused}"
    );
}
