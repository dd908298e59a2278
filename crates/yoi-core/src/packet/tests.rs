use super::*;
use proptest::prelude::*;

fn v(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

const BODY: &str = "\
# Add scope checks

## Intent
Hold tickets back while their write scopes overlap.
<!-- why: fewer merge conflicts -->

## Binding decisions
- `*` never crosses `/`
- No new dependencies; keep
  the core pure.

## 受け入れ条件
1. overlapping scopes wait
2) disjoint scopes run

Paragraph criteria
on two lines.

## Validation
- `cargo test -p yoi-core` — unit and property tests
- Run `cargo fmt --check` and `cargo clippy`
- open the dashboard by hand
```sh
$ cargo build
cargo doc
```

## Escalate if
TBD

## Code map
- `crates/yoi-core/src/scope.rs` (new)
- crates/yoi-core/src/lib.rs

## Write scope
```
crates/yoi-core/src/**
```
";

#[test]
fn from_body_reads_items_paragraphs_fences_and_code_spans() {
    let p = IntentPacket::from_body(BODY);
    assert_eq!(
        p.intent,
        "Hold tickets back while their write scopes overlap."
    );
    assert_eq!(
        p.binding_decisions,
        v(&[
            "`*` never crosses `/`",
            "No new dependencies; keep the core pure."
        ])
    );
    assert_eq!(
        p.acceptance_criteria,
        v(&[
            "overlapping scopes wait",
            "disjoint scopes run",
            "Paragraph criteria on two lines."
        ])
    );
    assert_eq!(
        p.validation,
        v(&[
            "cargo test -p yoi-core",
            "cargo fmt --check",
            "cargo clippy",
            "open the dashboard by hand",
            "cargo build",
            "cargo doc"
        ])
    );
    assert!(p.escalate_if.is_empty());
    assert_eq!(
        p.code_map,
        v(&["crates/yoi-core/src/scope.rs", "crates/yoi-core/src/lib.rs"])
    );
    assert_eq!(p.write_scope, v(&["crates/yoi-core/src/**"]));
    assert_eq!(p.implementation_latitude, "");
}

#[test]
fn completeness_separates_required_from_optional() {
    let p = IntentPacket::from_body(BODY);
    assert_eq!(
        p.completeness(),
        Completeness {
            missing_required: vec![],
            missing_optional: vec![
                Section::ImplementationLatitude,
                Section::EscalateIf,
                Section::CriticalRisks
            ],
        }
    );
    let empty = IntentPacket::from_body("## Intent\nTODO\n## 検証\n- `make`\n");
    let c = empty.completeness();
    assert_eq!(
        c.missing_required,
        vec![Section::Intent, Section::AcceptanceCriteria]
    );
    assert!(!c.is_complete());
}

#[test]
fn completeness_agrees_with_the_brief_check() {
    for body in [
        BODY,
        "## Intent\nx\n",
        "## 意図\n未定\n## 検証\n```\nmake\n```\n",
        "",
    ] {
        assert_eq!(
            IntentPacket::from_body(body)
                .completeness()
                .missing_required,
            brief::missing_required(body),
            "{body}"
        );
    }
}

#[test]
fn render_markdown_omits_empty_optional_sections_and_marks_required_ones() {
    let p = IntentPacket {
        intent: "Ship it.".into(),
        validation: v(&["cargo test", "echo `x`"]),
        write_scope: v(&["src/**"]),
        ..Default::default()
    };
    assert_eq!(
        p.render_markdown(),
        "## Intent\n\nShip it.\n\n\
         ## Acceptance criteria\n\nTBD\n\n\
         ## Validation\n\n- `cargo test`\n- `` echo `x` ``\n\n\
         ## Write scope\n\n- `src/**`\n"
    );
    let back = IntentPacket::from_body(&p.render_markdown());
    assert_eq!(back, p);
    assert_eq!(
        brief::missing_required(&p.render_markdown()),
        vec![Section::AcceptanceCriteria]
    );
}

#[test]
fn canonical_json_has_every_field_in_declaration_order_without_whitespace() {
    let p = IntentPacket {
        intent: "a".into(),
        validation: v(&["b"]),
        ..Default::default()
    };
    assert_eq!(
        p.to_canonical_json(),
        r#"{"intent":"a","binding_decisions":[],"acceptance_criteria":[],"implementation_latitude":"","escalate_if":[],"validation":["b"],"code_map":[],"critical_risks":[],"write_scope":[]}"#
    );
}

#[test]
fn frozen_hash_is_sha256_of_canonical_json_and_detects_edits() {
    let p = IntentPacket::from_body(BODY);
    let f = p.frozen();
    assert_eq!(
        f.content_hash,
        crate::sha256_hex(p.to_canonical_json().as_bytes())
    );
    assert_eq!(f.content_hash.len(), 64);
    assert!(f.verify());
    let mut edited = f.clone();
    edited.packet.write_scope.push("docs/**".into());
    assert!(!edited.verify());
    // Deserializing a packet with missing fields fills them in; the hash covers the filled form.
    let partial: IntentPacket = serde_json::from_str(r#"{"intent":"a"}"#).unwrap();
    assert_eq!(
        partial.frozen().content_hash,
        IntentPacket {
            intent: "a".into(),
            ..Default::default()
        }
        .content_hash()
    );
}

#[test]
fn code_spans_follow_commonmark_backtick_runs() {
    assert_eq!(code_spans("a `b` c ``d`e`` f"), v(&["b", "d`e"]));
    assert_eq!(code_spans("`` `x` ``"), v(&["`x`"]));
    assert_eq!(code_spans("unmatched ` tick"), Vec::<String>::new());
    for s in ["x", "`", "a``b", " y ", "``"] {
        assert_eq!(code_spans(&code_span(s)), v(&[s]), "{s:?}");
    }
}

/// Entries start with a letter or digit (so they cannot open a heading, item or fence) and may
/// hold Markdown punctuation, including backticks.
fn line() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zA-Z0-9あ-ん][a-zA-Z0-9あ-ん .,:/_()*`#-]{0,24}")
        .unwrap()
        .prop_filter("a single-line, trimmed, non-placeholder entry", |s| {
            s.trim() == s && !is_placeholder(s)
        })
}

fn list() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(line(), 0..4)
}

fn prose() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), line()]
}

prop_compose! {
    fn packet()(
        intent in prose(),
        binding_decisions in list(),
        acceptance_criteria in list(),
        implementation_latitude in prose(),
        escalate_if in list(),
        validation in list(),
        code_map in list(),
        critical_risks in list(),
        write_scope in list(),
    ) -> IntentPacket {
        IntentPacket {
            intent,
            binding_decisions,
            acceptance_criteria,
            implementation_latitude,
            escalate_if,
            validation,
            code_map,
            critical_risks,
            write_scope,
        }
    }
}

proptest! {
    #[test]
    fn render_then_parse_gives_the_packet_back(p in packet()) {
        let md = p.render_markdown();
        prop_assert_eq!(IntentPacket::from_body(&md), p.clone(), "{}", md);
        prop_assert_eq!(IntentPacket::from_body(&md).render_markdown(), md);
    }

    #[test]
    fn json_round_trip_keeps_packet_and_hash(p in packet()) {
        let json = p.to_canonical_json();
        let back: IntentPacket = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&back, &p);
        prop_assert_eq!(back.content_hash(), p.content_hash());
        let frozen = p.frozen();
        let back: FrozenPacket =
            serde_json::from_str(&serde_json::to_string(&frozen).unwrap()).unwrap();
        prop_assert!(back.verify());
        prop_assert_eq!(back, frozen);
    }

    #[test]
    fn applying_a_packet_to_any_brief_reads_back_that_packet(old in packet(), new in packet()) {
        let body = format!("Preface.\n\n{}\n## Notes\nkept\n", old.render_markdown());
        let out = new.apply_to_body(&body);
        prop_assert_eq!(IntentPacket::from_body(&out), new.clone(), "{}", out);
        prop_assert!(out.starts_with("Preface.\n\n"), "{}", out);
        prop_assert!(out.ends_with("## Notes\nkept\n"), "{}", out);
        prop_assert_eq!(new.apply_to_body(&out), out);
    }

    #[test]
    fn apply_to_body_never_panics_on_any_text(body in any::<String>(), p in packet()) {
        let _ = p.apply_to_body(&body);
    }

    #[test]
    fn from_body_never_panics_on_any_text(body in any::<String>()) {
        let _ = IntentPacket::from_body(&body).render_markdown();
    }
}

#[test]
fn apply_to_body_replaces_only_the_brief_sections() {
    let body = "Context first.\n\n## Intent\nOld intent.\n\n## Notes\nKeep me.\n\n```md\n## Validation\nnot a heading\n```\n\n## 検証\n`old`\n\n# Appendix\nAlso kept.\n";
    let packet = IntentPacket {
        intent: "New intent.".into(),
        acceptance_criteria: vec!["it works".into()],
        validation: vec!["cargo test".into()],
        write_scope: vec!["src/**".into()],
        ..IntentPacket::default()
    };
    let out = packet.apply_to_body(body);
    assert_eq!(
        out,
        "Context first.\n\n## Intent\n\nNew intent.\n\n## Acceptance criteria\n\n- it works\n\n## Validation\n\n- `cargo test`\n\n## Write scope\n\n- `src/**`\n\n## Notes\nKeep me.\n\n```md\n## Validation\nnot a heading\n```\n\n# Appendix\nAlso kept.\n"
    );
    assert_eq!(IntentPacket::from_body(&out), packet);
    // Applying again changes nothing.
    assert_eq!(packet.apply_to_body(&out), out);
}

#[test]
fn apply_to_body_appends_when_the_body_has_no_brief() {
    let packet = IntentPacket {
        intent: "Do it.".into(),
        ..IntentPacket::default()
    };
    let out = packet.apply_to_body("  indented note\n");
    assert!(
        out.starts_with("  indented note\n\n## Intent\n\nDo it.\n"),
        "{out}"
    );
    assert_eq!(IntentPacket::from_body(&out).intent, "Do it.");
}

#[test]
fn validation_checks_split_code_from_prose() {
    let body = "## Validation\n- `cargo test -p x` and `cargo fmt --check`\n- The page looks right on a phone.\n\n```sh\n$ ./run.sh --all\n\nmake lint\n```\n- TBD\n";
    let c = super::validation_checks(body);
    assert_eq!(
        c.commands,
        [
            "cargo test -p x",
            "cargo fmt --check",
            "./run.sh --all",
            "make lint"
        ]
    );
    assert_eq!(c.manual, ["The page looks right on a phone."]);
    let f = IntentPacket::freeze_body(body);
    assert_eq!(f.checks, c);
    // The checks sit outside the hash.
    assert!(f.verify());
    assert_eq!(f.content_hash, IntentPacket::from_body(body).content_hash());
    assert_eq!(
        super::validation_checks("## Intent\nx\n"),
        Default::default()
    );
}
