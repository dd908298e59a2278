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
