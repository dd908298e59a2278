use super::escape::{is_header_start, is_rule};
use super::header::space_at;
use super::scan::scan;
use super::*;
use proptest::prelude::*;

fn sample() -> Event {
    Event::new(EventKind::StateChanged, "Queued for routing.")
        .with_attr("id", "01JDQ5V6W7X8Y9Z0A1B2C3D4E5")
        .with_attr("author", "alice")
        .with_attr("at", "2026-11-29T10:00:00Z")
        .with_attr("from", "ready")
        .with_attr("to", "queued")
        .with_attr("reason", "queued")
}

#[test]
fn renders_the_design_shape() {
    assert_eq!(
        sample().render(),
        "<!-- event: state_changed id: 01JDQ5V6W7X8Y9Z0A1B2C3D4E5 author: alice at: 2026-11-29T10:00:00Z from: ready to: queued reason: queued -->\n\n## State changed\n\nQueued for routing.\n\n---\n"
    );
}

#[test]
fn quotes_values_with_spaces_quotes_backslashes_and_comment_ends() {
    let e = Event::new(EventKind::Comment, "x")
        .with_attr("author", "yoi ticket")
        .with_attr("reason", r#"say "hi" \ then -->"#)
        .with_attr("empty", "");
    let header = e.header();
    assert_eq!(
        header,
        r#"<!-- event: comment author: "yoi ticket" reason: "say \"hi\" \\ then --\>" empty: "" -->"#
    );
    // The comment must not end before the header does.
    assert_eq!(header.matches("-->").count(), 1);
    let parsed = parse_thread(&e.render());
    assert!(parsed.issues.is_empty());
    assert_eq!(parsed.events[0], e);
}

#[test]
fn body_lines_that_look_like_structure_are_escaped_and_restored() {
    let body = "before\n---\n  ---  \n<!-- event: comment author: x at: y -->\n\\---\n\\\\<!-- event: z\nafter";
    let e = Event::new(EventKind::Comment, body)
        .with_attr("author", "a")
        .with_attr("at", "2026-01-01T00:00:00Z");
    let text = e.render();
    assert!(text.contains("\n\\---\n"));
    assert!(text.contains("\n\\<!-- event: comment"));
    assert!(text.contains("\n\\\\---\n"));
    let parsed = parse_thread(&text);
    assert_eq!(parsed.events.len(), 1, "{text}");
    assert_eq!(parsed.events[0].body, body);
}

#[test]
fn legacy_thread_reads_without_loss() {
    let text = include_str!("../../tests/golden/thread-legacy.md");
    let parsed = parse_thread(text);
    assert!(parsed.issues.is_empty(), "{:?}", parsed.issues);
    let kinds: Vec<&str> = parsed.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "create",
            "intake_summary",
            "state_changed",
            "review",
            "migration"
        ]
    );
    // An unescaped rule inside an old body stays in the body.
    assert_eq!(
        parsed.events[1].body,
        "Accepted intent: optional `fs-store` feature.\n\n---\n\nNot a rule: the next line is text."
    );
    assert_eq!(parsed.events[0].author(), Some("yoi ticket"));
    assert_eq!(parsed.events[0].id(), None);
    assert_eq!(
        parsed.events[2].get("operation_key"),
        Some("ticket-intake-ready:call_7")
    );
    assert_eq!(parsed.events[3].heading.as_deref(), Some("Review: approve"));
    assert_eq!(parsed.events[4].kind, EventKind::Other("migration".into()));
    assert_eq!(parsed.lines, vec![1, 9, 21, 29, 38]);
}

#[test]
fn an_event_left_open_before_the_next_header_ends_there_and_the_next_event_survives() {
    let good = sample().render();
    let text = format!("{good}\n<!-- event: comment id: X author: a at: 2026-01-01T00:00:00Z -->\n\n## Comm\n<!-- event: comment id: Y author: b at: 2026-01-01T00:00:01Z -->\n\n## Comment\n\nlater\n\n---\n");
    let parsed = parse_thread(&text);
    assert_eq!(parsed.events.len(), 3);
    assert_eq!(
        parsed.issues,
        vec![ThreadIssue {
            line: 9,
            kind: ThreadIssueKind::EndedByNextHeader
        }]
    );
    assert_eq!(parsed.events[2].body, "later");
}

#[test]
fn malformed_header_is_reported_and_skipped() {
    let text = "<!-- event: comment author: \"unclosed -->\n\n## C\n\nbody\n\n---\n";
    let parsed = parse_thread(text);
    assert!(parsed.events.is_empty());
    assert!(matches!(
        parsed.issues[0].kind,
        ThreadIssueKind::MalformedHeader { .. }
    ));
    let text = "stray\n\n".to_string() + &sample().render();
    let parsed = parse_thread(&text);
    assert_eq!(parsed.events.len(), 1);
    assert_eq!(parsed.issues[0].kind, ThreadIssueKind::StrayText);
}

#[test]
fn older_unquoted_values_with_spaces_read_up_to_the_next_key() {
    let (kind, attrs) =
        parse_header("<!-- event: create author: yoi ticket at: 2026-06-05T21:07:03Z -->").unwrap();
    assert_eq!(kind, EventKind::Create);
    assert_eq!(
        attrs,
        [
            ("author".to_string(), "yoi ticket".to_string()),
            ("at".to_string(), "2026-06-05T21:07:03Z".to_string())
        ]
    );
    // Spacing kept; after a continuation only a known key ends the value; a key right after a
    // one-word value still starts a new attribute, known or not.
    let (_, attrs) = parse_header(
        "<!-- event: state_changed author: Hare  Tanaka from: intake to: planning reason: fix: typo in it field: state custom: x -->",
    )
    .unwrap();
    let get = |k: &str| {
        attrs
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("author"), Some("Hare  Tanaka"));
    assert_eq!(get("reason"), Some("fix: typo in it"));
    assert_eq!(get("field"), Some("state"));
    assert_eq!(get("custom"), Some("x"));
    // The event around such a header is read whole, with no issue.
    let text = "<!-- event: comment author: yoi ticket at: 2026-06-05T21:07:03Z -->\n\n## Comment\n\nhello\n\n---\n";
    let parsed = parse_thread(text);
    assert!(parsed.issues.is_empty(), "{:?}", parsed.issues);
    assert_eq!(parsed.events[0].author(), Some("yoi ticket"));
    assert_eq!(parsed.events[0].body, "hello");
}

#[test]
fn validate_refuses_newlines_bad_keys_and_duplicates() {
    let e = Event::new(EventKind::Comment, "").with_attr("reason", "a\nb");
    assert!(matches!(e.validate(), Err(AttrError::Multiline { .. })));
    let e = Event::new(EventKind::Comment, "").with_attr("bad key", "v");
    assert!(matches!(e.validate(), Err(AttrError::BadKey { .. })));
    let mut e = Event::new(EventKind::Comment, "");
    e.attrs.push(("a".into(), "1".into()));
    e.attrs.push(("a".into(), "2".into()));
    assert!(matches!(e.validate(), Err(AttrError::Duplicate { .. })));
}

fn arb_attr_value() -> impl Strategy<Value = String> {
    // Any single-line text, including quotes, backslashes, `-->` and non-ASCII.
    proptest::collection::vec(
        prop_oneof![
            any::<char>().prop_filter("no control", |c| !c.is_control()),
            Just('"'),
            Just('\\'),
            Just('-'),
            Just('>'),
            Just(' '),
        ],
        0..24,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn arb_body() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("---".to_string()),
        Just(" --- ".to_string()),
        Just("\\---".to_string()),
        Just("<!-- event: comment author: x at: y -->".to_string()),
        Just("\\\\<!-- event: x".to_string()),
        Just("## heading".to_string()),
        Just(String::new()),
        any::<String>().prop_map(|s| s.replace('\r', "")),
    ];
    proptest::collection::vec(line, 0..8).prop_map(|v| v.join("\n"))
}

fn arb_event() -> impl Strategy<Value = Event> {
    (
        prop_oneof![
            Just(EventKind::Comment),
            Just(EventKind::StateChanged),
            "[a-z_]{1,12}".prop_map(EventKind::from)
        ],
        arb_attr_value(),
        arb_attr_value(),
        "[^\r\n]{0,20}",
        arb_body(),
    )
        .prop_map(|(kind, author, reason, heading, body)| {
            let mut e = Event::new(kind, &body)
                .with_attr("id", "01JDQ5V6W7X8Y9Z0A1B2C3D4E5")
                .with_attr("author", author)
                .with_attr("reason", reason);
            let h = heading.trim().to_string();
            e.heading = Some(if h.is_empty() { "Comment".into() } else { h });
            e
        })
}

proptest! {
    #[test]
    fn render_parse_render_is_identity(events in proptest::collection::vec(arb_event(), 1..5)) {
        let text = render_thread(&events);
        let parsed = parse_thread(&text);
        prop_assert!(parsed.issues.is_empty(), "{:?}\n{}", parsed.issues, text);
        prop_assert_eq!(render_thread(&parsed.events), text.clone());
        prop_assert_eq!(parsed.events.len(), events.len());
        for (a, b) in parsed.events.iter().zip(&events) {
            prop_assert_eq!(&a.body, &b.body);
            prop_assert_eq!(&a.attrs, &b.attrs);
        }
    }

    #[test]
    fn parser_never_panics(text in any::<String>()) {
        let _ = parse_thread(&text);
    }
}

/// Thread text with every shape the scanner treats apart: rendered events, torn appends,
/// malformed and older headers, stray text, CRLF, rules inside bodies.
fn arb_thread_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        arb_event().prop_map(|e| e.render()),
        Just("<!-- event: comment author: yoi ticket at: 2026-06-05T21:07:03Z -->\n".to_string()),
        Just("<!-- event: state_changed author: a at: b from: ready to: queued reason: fix: typo -->\r\n".to_string()),
        Just("<!-- event: broken\n".to_string()),
        Just("<!-- event: x a: \"unterminated -->\n".to_string()),
        Just("<!-- event: x a: \"esc \\\" and \\\\ done\" b: c -->\n".to_string()),
        Just("---\n".to_string()),
        Just("\n".to_string()),
        Just("stray words\n".to_string()),
        any::<String>(),
    ];
    proptest::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn headers_alone_read_as_the_whole_parse_does(text in arb_thread_text()) {
        let whole = parse_thread(&text);
        let headers = parse_thread_headers(&text);
        prop_assert_eq!(&headers.lines, &whole.lines);
        prop_assert_eq!(&headers.issues, &whole.issues);
        prop_assert_eq!(headers.events.len(), whole.events.len());
        for (h, e) in headers.events.iter().zip(&whole.events) {
            prop_assert_eq!(&h.kind, &e.kind);
            let attrs: Vec<(String, String)> = h
                .attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            prop_assert_eq!(&attrs, &e.attrs);
            prop_assert_eq!(h.id(), e.id());
        }
    }
}

#[test]
fn header_values_are_borrowed_unless_escaped() {
    let (_, attrs) = parse_header_ref(
        r#"<!-- event: comment author: "a b" at: 2026-01-01T00:00:00Z reason: "say \"hi\"" -->"#,
    )
    .unwrap();
    let borrowed: Vec<(&str, bool)> = attrs
        .iter()
        .map(|(k, v)| (*k, matches!(v, std::borrow::Cow::Borrowed(_))))
        .collect();
    assert_eq!(
        borrowed,
        [("author", true), ("at", true), ("reason", false)]
    );
    assert_eq!(attrs[2].1, "say \"hi\"");
}

/// The scanner as it was first written, over a vector of every line: the cursor scanner must
/// find the same events (header line and body lines) and the same issues.
fn scan_by_line_vector(text: &str) -> (Vec<(usize, Vec<&str>)>, Vec<ThreadIssue>) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.split('\n').collect();
    let count = if text.ends_with('\n') {
        lines.len() - 1
    } else {
        lines.len()
    };
    let boundary = |from: usize| {
        lines[from.min(count)..count]
            .iter()
            .find(|l| !l.trim().is_empty())
            .is_none_or(|l| is_header_start(l))
    };
    let (mut events, mut issues) = (Vec::new(), Vec::new());
    let mut open: Option<usize> = None;
    let mut stray_reported = false;
    let mut i = 0;
    while i < count {
        let raw = lines[i].strip_suffix('\r').unwrap_or(lines[i]);
        if is_header_start(raw) {
            if let Some(at) = open.take() {
                issues.push(ThreadIssue {
                    line: at + 1,
                    kind: ThreadIssueKind::EndedByNextHeader,
                });
                events.push((at + 1, lines[at + 1..i].to_vec()));
            }
            match parse_header_ref(raw) {
                Ok(_) => open = Some(i),
                Err(reason) => {
                    issues.push(ThreadIssue {
                        line: i + 1,
                        kind: ThreadIssueKind::MalformedHeader { reason },
                    });
                    i += 1;
                    while i < count {
                        let l = lines[i];
                        if is_header_start(l) {
                            break;
                        }
                        i += 1;
                        if is_rule(l) && boundary(i) {
                            break;
                        }
                    }
                    continue;
                }
            }
            i += 1;
            continue;
        }
        match open.take() {
            Some(at) if is_rule(raw) && boundary(i + 1) => {
                events.push((at + 1, lines[at + 1..i].to_vec()))
            }
            Some(at) => open = Some(at),
            None => {
                if !raw.trim().is_empty() && !stray_reported {
                    issues.push(ThreadIssue {
                        line: i + 1,
                        kind: ThreadIssueKind::StrayText,
                    });
                    stray_reported = true;
                }
            }
        }
        i += 1;
    }
    if let Some(at) = open {
        issues.push(ThreadIssue {
            line: at + 1,
            kind: ThreadIssueKind::Unterminated,
        });
        events.push((at + 1, lines[at + 1..count].to_vec()));
    }
    (events, issues)
}

/// What [`scan`] finds, in the shape of [`scan_by_line_vector`]'s answer.
fn scan_by_cursor(text: &str) -> (Vec<(usize, Vec<&str>)>, Vec<ThreadIssue>) {
    let found = scan(text, parse_header_ref);
    let events = found
        .events
        .iter()
        .map(|(_, line, body)| {
            let lines = found.text[body.clone()]
                .split_inclusive('\n')
                .map(|l| l.strip_suffix('\n').unwrap_or(l))
                .collect();
            (*line, lines)
        })
        .collect();
    (events, found.issues)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn the_cursor_scanner_finds_what_a_scan_of_every_line_finds(text in arb_thread_text()) {
        prop_assert_eq!(scan_by_cursor(&text), scan_by_line_vector(&text));
    }
}

#[test]
fn the_cursor_scanner_agrees_on_edge_texts() {
    for text in [
        "",
        "\n",
        "\u{feff}",
        "\r\n",
        "<!-- event: comment author: a at: b -->",
        "<!-- event: comment author: a at: b -->\n",
        "<!-- event: comment author: a at: b -->\nbody",
        "<!-- event: comment author: a at: b -->\nbody\n---",
        "<!-- event: comment author: a at: b -->\n---\n---\n\n",
        "<!-- event: broken\nx\n---\n\n<!-- event: c author: a at: b -->\n",
        "  \u{3000}---\n",
        "\u{a0}<!-- event: comment author: a at: b -->\n\u{2003}---\n",
        "stray\n<!-- event: comment author: a at: b -->\n-x\n<y\n---\n  \n",
    ] {
        assert_eq!(scan_by_cursor(text), scan_by_line_vector(text), "{text:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn space_at_finds_what_char_is_whitespace_finds(
        s in "([a-z:\"\\\\ ]|\t|\r|\u{b}|\u{c}|\u{85}|\u{a0}|\u{3000}|\u{2028}|é|\u{1f}){0,24}"
    ) {
        prop_assert_eq!(space_at(&s), s.find(char::is_whitespace));
    }
}
