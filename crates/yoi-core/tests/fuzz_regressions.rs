//! Inputs the fuzzer (`yoi-fuzz`, tests/fuzz/) found, kept so they stay fixed.

use yoi_core::item::Item;
use yoi_core::thread::{normalize_body, parse_thread, render_thread, Event, EventKind};
use yoi_core::yaml::MAX_BRACKETS;

const ITEM_HEAD: &str = "---\ntitle: t\nstate: planning\ncreated_at: 2026-11-29T10:00:00Z\nupdated_at: 2026-11-29T10:00:00Z\n";

/// `"\r\r\n".replace("\r\n", "\n")` is `"\r\n"`: the body kept one `\r` before a line end, and
/// every write and read of the thread dropped another.
#[test]
fn carriage_returns_before_a_line_end_read_back_unchanged() {
    for body in [
        "a\r\r\nb",
        "---\r\r\r\r\nx",
        "x\n\r\r\r\r\r\n\ny",
        "tail\r\r",
    ] {
        let event = Event::new(EventKind::Comment, body).with_attr("author", "fuzz");
        assert_eq!(
            normalize_body(&event.body),
            event.body,
            "normalize twice: {body:?}"
        );
        let rendered = render_thread(std::slice::from_ref(&event));
        let parsed = parse_thread(&rendered);
        assert!(parsed.issues.is_empty(), "{:?}", parsed.issues);
        assert_eq!(parsed.events.len(), 1);
        assert_eq!(parsed.events[0].body, event.body, "from {rendered:?}");
    }
}

/// The same bug from the file side: a body line of carriage returns in thread.md.
#[test]
fn a_thread_file_with_a_line_of_carriage_returns_survives_a_rewrite() {
    let file = "<!-- event: create author: a at: 2026-06-21T14:33:51Z -->\n\n## Created\n\n\\\"\r\r\r\r\r\r\nCreated.\n\n---\n";
    let once = parse_thread(file);
    let twice = parse_thread(&render_thread(&once.events));
    assert_eq!(once.events[0].body, twice.events[0].body);
    assert_eq!(once.events[0].body, "\\\"\nCreated.");
}

/// `Event::validate` allows `.` in a key, but after a bare value the reader did not take a word
/// with a `.` as the next key, so the two attributes read back as one.
#[test]
fn a_dotted_key_after_a_bare_value_reads_back_as_its_own_attribute() {
    let event = Event::new(EventKind::ImplementationReport, "Done.")
        .with_attr("author", "worker:rt1/coder")
        .with_attr("ahed.t", "2026-06-25T11:20:45Z");
    assert!(event.validate().is_ok());
    let parsed = parse_thread(&render_thread(std::slice::from_ref(&event)));
    assert_eq!(parsed.events[0].attrs, event.attrs);
}

/// 64 KiB of `{` in the frontmatter took 4.7 s in the YAML scanner, on every read of the ticket
/// (this crate has no clock: the message shows the bound refused it, not the scanner).
#[test]
fn a_frontmatter_of_nested_brackets_is_refused_at_once() {
    let text = format!("{ITEM_HEAD}x: {}\n---\n", "{".repeat(64 * 1024));
    let e = Item::parse(&text).unwrap_err();
    assert_eq!(e.line, Some(6), "{e}");
    assert!(e.reason.contains("more than 256 `[` and `{`"), "{e}");
}

#[test]
fn a_frontmatter_with_as_many_brackets_as_allowed_still_parses() {
    let list = |n: usize| format!("labels: [{}]\n", vec!["[]"; n].join(", "));
    let at_limit = format!("{ITEM_HEAD}{}---\n", list(MAX_BRACKETS - 1));
    assert!(Item::parse(&at_limit).is_ok());
    let over = format!("{ITEM_HEAD}{}---\n", list(MAX_BRACKETS));
    assert!(Item::parse(&over).is_err());
}

/// Nested aliases to one long string: serde_yaml_ng copies the string on every use, and its
/// repetition limit counts jumps, not bytes, so this 48 KB file asked for more than 3 GB.
fn alias_bomb(head: &str) -> String {
    let mut text = format!(
        "{head}a: &a \"{}\"\nb: &b [{}]\n",
        "x".repeat(20_000),
        ["*a"; 9].join(",")
    );
    for (from, to) in "bcdefgh".chars().zip("cdefghi".chars()) {
        let refs = vec![format!("*{from}"); 9].join(",");
        text.push_str(&format!("{to}: &{to} [{refs}]\n"));
    }
    text.push_str("z:\n");
    text.push_str(&"- 1\n".repeat(14_000));
    text
}

#[test]
fn a_frontmatter_whose_aliases_explode_is_refused_before_it_is_built() {
    let text = format!("{}---\n", alias_bomb(ITEM_HEAD));
    let e = Item::parse(&text).unwrap_err();
    assert!(
        e.reason.contains("aliases (`*name`) that expand past"),
        "{e}"
    );
}

#[test]
fn a_frontmatter_with_a_few_aliases_still_parses() {
    let text = format!("{ITEM_HEAD}base: &b {{k: [1, 2]}}\nderived: *b\nnote: 'globs like crates/** and **bold**'\n---\n");
    let item = Item::parse(&text).unwrap();
    assert_eq!(item.extra_value("derived"), item.extra_value("base"));
}
