// Tests read their fixture files; the purity rules are for the library.
#![allow(clippy::disallowed_methods)]

//! Golden files: each format read from a file on disk and rendered back. Modern files must
//! render byte for byte as written; older files must keep every key and value.

use yoi_core::item::Item;
use yoi_core::plan::parse_plan;
use yoi_core::relation::RelationsFile;
use yoi_core::TicketId;

fn golden(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/golden/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn modern_item_renders_byte_for_byte() {
    let text = golden("item-modern.md");
    let item = Item::parse(&text).unwrap();
    assert_eq!(item.title, "Fix login: handle expired tokens");
    assert_eq!(item.unknown_keys(), vec!["custom_field"]);
    assert_eq!(item.render(), text);
}

#[test]
fn legacy_item_rewrite_matches_its_golden_rewrite() {
    let item = Item::parse(&golden("item-legacy.md")).unwrap();
    let expected = golden("item-legacy.rewritten.md");
    assert_eq!(item.render(), expected);
    // Reading the rewrite gives the same item: nothing was lost.
    assert_eq!(Item::parse(&expected).unwrap(), item);
    assert!(
        item.body_text().contains("\n---\n"),
        "the body keeps its rule"
    );
}

#[test]
fn relations_file_renders_byte_for_byte() {
    let text = golden("relations.json");
    let owner = TicketId::parse("00001KVZKST83").unwrap();
    let file = RelationsFile::parse(&text, &owner).unwrap();
    assert_eq!(file.relations.len(), 2);
    assert_eq!(file.render(), text);
}

#[test]
fn plan_records_render_byte_for_byte() {
    let text = golden("orchestration-plan.jsonl");
    let owner = TicketId::parse("00001KVZKST83").unwrap();
    let records = parse_plan(&text, &owner).unwrap();
    let rendered: String = records.iter().map(|r| r.render_line()).collect();
    assert_eq!(rendered, text);
}
