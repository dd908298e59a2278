//! Doctor compares the index with the files chunk by chunk (512 tickets, and with each chunk
//! the rows of its span of ids): drift is found whichever chunk holds it, and rows naming a
//! ticket with no folder are found wherever their id falls — before the first folder, between
//! two chunks' folders, after the last. Runs on SQLite and on PostgreSQL.

use yoi_testkit::pg;

use yoi_db::DbIndex;
use yoi_doctor as doctor;

/// More than two chunks.
const TICKETS: usize = 1_300;

fn drift_in_every_chunk_is_found(url: Option<String>, rt: tokio::runtime::Runtime) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    yoi_store::init(root, "main").unwrap();
    yoi_tests::generate::generate(root, TICKETS, 0);
    let mut ws = yoi_tests::open(root);
    ws.config.database.url = url;
    let (index, _) = DbIndex::attach(
        &mut ws,
        yoi_db::Bridge::new(rt.handle().clone(), yoi_testkit::wall_ms),
    )
    .unwrap();
    let findings = |index: &DbIndex| -> Vec<(&'static str, String)> {
        doctor::index_findings(index, &ws, 0)
            .unwrap()
            .into_iter()
            .map(|f| (f.check, f.ticket.unwrap_or_default()))
            .collect()
    };
    assert_eq!(
        findings(&index),
        Vec::new(),
        "a fresh index matches its files"
    );

    let ids = ws.ticket_ids().unwrap();
    assert_eq!(ids.len(), TICKETS);
    // One ticket per chunk loses a row of a different table; three tickets with no folder
    // gain one each: one sorting before every folder, one among the second chunk's folders,
    // one after every folder.
    let (first, second, third) = (ids[3].as_str(), ids[700].as_str(), ids[1_290].as_str());
    let between = (600..1_000)
        .map(|k| successor(ids[k].as_str()))
        .zip(&ids[601..1_001])
        .find(|(s, next)| s.as_str() < next.as_str())
        .map(|(s, _)| s)
        .expect("two neighbouring ids with room between them");
    let ghosts = [
        "00000000000000000000000000",
        between.as_str(),
        "7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
    ];
    let url = yoi_db::schema_url(&ws.database_url(), ws.config.workspace.id.as_deref());
    rt.block_on(async {
        let pool = &sqlx::AnyPool::connect(&url).await?;
        sqlx::query("DELETE FROM tickets WHERE id = $1")
            .bind(first)
            .execute(pool)
            .await?;
        sqlx::query("DELETE FROM events WHERE ticket_id = $1")
            .bind(second)
            .execute(pool)
            .await?;
        sqlx::query("DELETE FROM outbox WHERE ticket_id = $1")
            .bind(third)
            .execute(pool)
            .await?;
        for (i, ghost) in ghosts.iter().enumerate() {
            sqlx::query(
                "INSERT INTO events (id, ticket_id, position, kind, attrs, body) \
                     VALUES ($1, $2, 0, 'comment', '[]', '')",
            )
            .bind(format!("ghost-event-{i}"))
            .bind(*ghost)
            .execute(pool)
            .await?;
        }
        Ok::<_, sqlx::Error>(())
    })
    .unwrap();
    let mut want = vec![
        ("index.missing_ticket", first.to_string()),
        ("index.missing_event", second.to_string()),
        ("outbox.missing", third.to_string()),
    ];
    want.extend(ghosts.iter().map(|g| ("index.extra_event", g.to_string())));
    want.sort_by(|a, b| (&a.1, a.0).cmp(&(&b.1, b.0)));
    assert_eq!(findings(&index), want);
}

/// The id right after `id` in the order of strings, same length (Crockford's alphabet).
fn successor(id: &str) -> String {
    const ALPHABET: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut chars: Vec<char> = id.chars().collect();
    for c in chars.iter_mut().rev() {
        match ALPHABET
            .find(*c)
            .and_then(|i| ALPHABET[i + 1..].chars().next())
        {
            Some(next) => {
                *c = next;
                return chars.into_iter().collect();
            }
            None => *c = '0',
        }
    }
    panic!("{id} has no successor");
}

/// The runtime the commands and the server use: doctor reads each span's rows on it while
/// the folders are read.

#[test]
fn drift_in_every_chunk_is_found_on_sqlite() {
    drift_in_every_chunk_is_found(None, yoi_tests::runtime());
}

#[test]
fn drift_in_every_chunk_is_found_on_postgres() {
    drift_in_every_chunk_is_found(Some(pg::database()), yoi_tests::runtime());
}
