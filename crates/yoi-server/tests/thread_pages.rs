//! Issue 45: `GET /api/v1/tickets/{id}` carries the latest 100 events of a long thread with a
//! cursor for the ones before, pages walked back with `before` add up to the whole thread, and
//! `?all=true` streams every event in the same shape — on SQLite and PostgreSQL.

mod common;

use common::{t, Backend, Server};
use serde_json::Value;
use yoi_core::{Principal, Timestamp};
use yoi_store::ops::{self, CommentRequest, CreateRequest};
use yoi_store::Ctx;

const COMMENTS: usize = 250;

fn events(v: &Value) -> Vec<Value> {
    v["events"].as_array().unwrap().clone()
}

fn pages_add_up_to_the_whole_thread(backend: Backend) {
    let s = Server::start_with(backend, |ws| {
        let alice = Ctx::new(
            Principal::human("alice"),
            Timestamp::parse("2026-12-04T10:00:00Z").unwrap(),
        );
        let req = CreateRequest {
            title: "Long-lived".into(),
            body: String::new(),
            depends_on: Vec::new(),
        };
        let id = ops::create(ws, &alice, &req).unwrap().ticket;
        for i in 0..COMMENTS {
            let c = CommentRequest {
                kind: "comment".into(),
                body: format!("Note {i}."),
            };
            ops::comment(ws, &alice, id.as_str(), &c).unwrap();
        }
    });
    let list = s
        .get("/api/v1/tickets")
        .token(&s.tokens.human)
        .send()
        .expect(200);
    let id = list["tickets"][0]["id"].as_str().unwrap().to_string();
    let total = COMMENTS + 1;

    let first = s.show(&id);
    assert_eq!(first["events_total"], total);
    assert_eq!(first["events_before"], total - 100);
    let page = events(&first);
    assert_eq!(page.len(), 100);
    assert_eq!(page[99]["body"], format!("Note {}.", COMMENTS - 1));

    // Walk back to the first event.
    let mut walked: Vec<Value> = page;
    let mut cursor = first["events_before"].as_u64();
    while let Some(before) = cursor {
        let p = s
            .get(&t(&id, &format!("?before={before}")))
            .token(&s.tokens.human)
            .send()
            .expect(200);
        let mut page = events(&p);
        assert!(page.len() <= 100);
        page.append(&mut walked);
        walked = page;
        cursor = p["events_before"].as_u64();
    }
    assert_eq!(walked.len(), total);
    assert_eq!(walked[0]["kind"], "create");

    let whole = s.get(&t(&id, "?all=true")).token(&s.tokens.human).send();
    assert_eq!(whole.content_type, "application/json");
    let whole = whole.expect(200);
    assert_eq!(
        events(&whole),
        walked,
        "the streamed thread is the pages, in order"
    );
    assert!(whole.get("events_before").is_none());
    let mut rest = whole.as_object().unwrap().clone();
    let mut first_rest = first.as_object().unwrap().clone();
    for m in [&mut rest, &mut first_rest] {
        m.remove("events");
        m.remove("events_before");
    }
    assert_eq!(
        rest, first_rest,
        "everything but the events is the same answer"
    );

    // `all` ignores the window; a window past the start is the start; sizes are bounded.
    let all_window = s
        .get(&t(&id, "?all=true&limit=1&before=3"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(events(&all_window).len(), total);
    let head = s
        .get(&t(&id, "?limit=1000&before=5"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(events(&head), walked[..5].to_vec());
    assert!(head.get("events_before").is_none());
    let none = s
        .get(&t(&id, "?before=0"))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert!(events(&none).is_empty());
    let beyond = s
        .get(&t(&id, &format!("?before={}&limit=2", total + 50)))
        .token(&s.tokens.human)
        .send()
        .expect(200);
    assert_eq!(events(&beyond), walked[total - 2..].to_vec());
    for bad in ["?limit=0", "?limit=1001", "?before=-1", "?all=maybe"] {
        s.get(&t(&id, bad))
            .token(&s.tokens.human)
            .send()
            .expect_error(400, "invalid");
    }
}

#[test]
fn pages_add_up_to_the_whole_thread_sqlite() {
    pages_add_up_to_the_whole_thread(Backend::Sqlite);
}

#[test]
fn pages_add_up_to_the_whole_thread_postgres() {
    pages_add_up_to_the_whole_thread(Backend::Postgres);
}
