//! A fast reader for the flat frontmatter yoi and the older tool write: one `key: value` per
//! line, values that are plain, single- or double-quoted scalars, flow lists (`['a', 'b']`) or
//! block lists (`- a` lines under an empty key). That is nearly every `item.md` there is, and
//! reading it this way costs a fraction of building a document with serde_yaml_ng.
//!
//! It only ever answers for text whose meaning is beyond doubt, and then exactly as
//! serde_yaml_ng would (the property tests at the end of this file hold the two side by side).
//! Any line it is not sure of — comments, anchors, tags, multi-line scalars, escapes, tabs, CRLF,
//! a plain value that YAML might read as a number, a duplicate key — makes it answer `None`,
//! and the caller parses the text with serde_yaml_ng, errors and all.

use serde_yaml_ng::{Mapping, Value};

/// The mapping `yaml` holds, or `None` when this reader is not certain of it.
pub(super) fn mapping(yaml: &str) -> Option<Mapping> {
    // Room for the keys yoi and the older tool write.
    let mut map = Mapping::with_capacity(16);
    // The key whose value was empty, while list items may still follow it, and the list's
    // indentation once its first item is read.
    let mut open: Option<(&str, Option<usize>, Vec<Value>)> = None;
    let lines = yaml.strip_suffix('\n').unwrap_or(yaml);
    for line in lines.split('\n') {
        if line.is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        if let Some(item) = rest.strip_prefix("- ") {
            let (_, list_indent, items) = open.as_mut()?;
            if *list_indent.get_or_insert(indent) != indent {
                return None;
            }
            items.push(block_scalar(item.trim_start_matches(' '))?);
            continue;
        }
        if indent > 0 {
            return None;
        }
        if let Some((key, _, items)) = open.take() {
            insert(&mut map, key, list_or_null(items))?;
        }
        let (key, value) = key_line(line)?;
        if value.is_empty() {
            open = Some((key, None, Vec::new()));
        } else {
            insert(&mut map, key, value_of(value)?)?;
        }
    }
    if let Some((key, _, items)) = open.take() {
        insert(&mut map, key, list_or_null(items))?;
    }
    Some(map)
}

fn list_or_null(items: Vec<Value>) -> Value {
    if items.is_empty() {
        Value::Null
    } else {
        Value::Sequence(items)
    }
}

/// Add a key once; a second time means serde_yaml_ng's duplicate-key error, which it reports.
fn insert(map: &mut Mapping, key: &str, value: Value) -> Option<()> {
    match map.entry(Value::String(key.to_string())) {
        serde_yaml_ng::mapping::Entry::Occupied(_) => None,
        serde_yaml_ng::mapping::Entry::Vacant(slot) => {
            slot.insert(value);
            Some(())
        }
    }
}

/// `key: value` (or `key:`) at the start of a line: the key and the value with the spaces
/// around it removed.
fn key_line(line: &str) -> Option<(&str, &str)> {
    let colon = line.find(':')?;
    let key = &line[..colon];
    let mut chars = key.chars();
    if !chars.next()?.is_ascii_alphabetic() && !key.starts_with('_') {
        return None;
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') || resolves(key) {
        return None;
    }
    let after = &line[colon + 1..];
    if !after.is_empty() && !after.starts_with(' ') {
        return None;
    }
    Some((key, after.trim_matches(' ')))
}

/// A value after `key: `: a flow list or a scalar.
fn value_of(value: &str) -> Option<Value> {
    match value.strip_prefix('[') {
        Some(inner) => flow_list(inner.strip_suffix(']')?),
        None => block_scalar(value),
    }
}

/// `a, 'b', "c"` between the brackets of a flow list.
fn flow_list(inner: &str) -> Option<Value> {
    if inner.trim_matches(' ').is_empty() {
        return Some(Value::Sequence(Vec::new()));
    }
    let mut items = Vec::new();
    let mut rest = inner.trim_start_matches(' ');
    loop {
        let (item, after) = match rest.as_bytes().first()? {
            b'\'' => single_quoted(&rest[1..])?,
            b'"' => double_quoted(&rest[1..])?,
            _ => {
                let end = rest.find(',').unwrap_or(rest.len());
                let word = rest[..end].trim_end_matches(' ');
                let starts_well = word.starts_with(|c: char| c.is_ascii_alphanumeric());
                if !starts_well
                    || !word
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-./@".contains(c))
                {
                    return None;
                }
                (plain(word)?, &rest[end..])
            }
        };
        items.push(item);
        let after = after.trim_start_matches(' ');
        match after.strip_prefix(',') {
            Some(next) => rest = next.trim_start_matches(' '),
            None if after.is_empty() => return Some(Value::Sequence(items)),
            None => return None,
        }
    }
}

/// A scalar that is the whole rest of a line in block context.
fn block_scalar(text: &str) -> Option<Value> {
    let (value, after) = match text.as_bytes().first()? {
        b'\'' => single_quoted(&text[1..])?,
        b'"' => double_quoted(&text[1..])?,
        _ => {
            let starts_plain = text
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || (!c.is_ascii() && printable(c)));
            let ends_well = !text.ends_with(':') && !text.ends_with(' ');
            if !starts_plain
                || !ends_well
                || text.contains(": ")
                || text.contains('#')
                || !all_printable(text)
            {
                return None;
            }
            (plain(text)?, "")
        }
    };
    after.trim_start_matches(' ').is_empty().then_some(value)
}

/// The text after an opening `'`: the value and what follows the closing quote.
fn single_quoted(text: &str) -> Option<(Value, &str)> {
    let q = text.find('\'')?;
    let (value, rest) = if text[q + 1..].starts_with('\'') {
        // A doubled quote stands for one: build the value piece by piece.
        let mut value = String::new();
        let mut rest = text;
        loop {
            let q = rest.find('\'')?;
            value.push_str(&rest[..q]);
            rest = &rest[q + 1..];
            match rest.strip_prefix('\'') {
                Some(more) => {
                    value.push('\'');
                    rest = more;
                }
                None => break,
            }
        }
        (value, rest)
    } else {
        (text[..q].to_string(), &text[q + 1..])
    };
    all_printable(&value).then_some((Value::String(value), rest))
}

/// The text after an opening `"` holding no escape: the value and what follows the closing
/// quote.
fn double_quoted(text: &str) -> Option<(Value, &str)> {
    let q = text.find(['"', '\\'])?;
    if text.as_bytes()[q] != b'"' || !all_printable(&text[..q]) {
        return None;
    }
    Some((Value::String(text[..q].to_string()), &text[q + 1..]))
}

/// A plain scalar as serde_yaml_ng resolves it: null and booleans by its words, `None` for
/// anything that might be a number (serde_yaml_ng's own rules decide those), a string
/// otherwise.
fn plain(text: &str) -> Option<Value> {
    match text {
        "~" | "null" | "Null" | "NULL" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        _ => {}
    }
    let numeric = |c: char| c.is_ascii_hexdigit() || "xXoO+-._".contains(c);
    if !text.starts_with(|c: char| c.is_ascii_alphabetic()) && text.chars().all(numeric) {
        return None;
    }
    Some(Value::String(text.to_string()))
}

/// A plain word YAML reads as something other than a string key.
fn resolves(word: &str) -> bool {
    matches!(
        word,
        "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
    )
}

/// Every character of `text` is [`printable`]; ASCII text is checked byte by byte.
fn all_printable(text: &str) -> bool {
    if text.is_ascii() {
        text.bytes().all(|b| (b' '..=b'~').contains(&b))
    } else {
        text.chars().all(printable)
    }
}

/// A character YAML takes inside a scalar as itself: no control characters, none of the
/// characters YAML 1.1 reads as line breaks, no byte order mark.
fn printable(c: char) -> bool {
    match c {
        ' '..='~' => true,
        '\u{A0}'..='\u{D7FF}' => !matches!(c, '\u{2028}' | '\u{2029}'),
        '\u{E000}'..='\u{FFFD}' => c != '\u{FEFF}',
        _ => c >= '\u{10000}',
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn serde(yaml: &str) -> Result<Value, String> {
        serde_yaml_ng::from_str::<Value>(yaml).map_err(|e| e.to_string())
    }

    /// Text for a value: the characters and words YAML treats apart.
    fn arb_value() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-zA-Z]{1,6}",
            "[0-9]{1,4}",
            Just("2026-11-29T10:00:00Z".to_string()),
            Just("2026-11-29".to_string()),
            prop::sample::select(vec![
                " ", "  ", ":", ": ", "#", " #", "'", "''", "\"", "\\", "[", "]", "{", "}", ",",
                "-", "- ", ".", "_", "~", "*", "&", "!", "|", ">", "%", "@", "`", "?", "\t", "\r",
                "é", "日本", "\u{2028}", "\u{85}", "\u{feff}", "null", "True", "FALSE", "0x1F",
                "0o17", "1e5", "+1", "-2", ".inf", ".5", "1_000", "inf", "NaN", "yes",
            ])
            .prop_map(str::to_string),
        ];
        proptest::collection::vec(piece, 0..5).prop_map(|v| v.concat())
    }

    fn arb_line() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec![
            "title",
            "state",
            "risk_flags",
            "_k",
            "k9",
            "True",
            "null",
            "a-b",
            "9k",
            "x y",
        ]);
        let sep = prop::sample::select(vec![": ", ":", ":  ", " : ", ":\t"]);
        prop_oneof![
            4 => (key.clone(), sep.clone(), arb_value()).prop_map(|(k, s, v)| format!("{k}{s}{v}")),
            1 => (key, sep, proptest::collection::vec(arb_value(), 0..3))
                .prop_map(|(k, s, v)| format!("{k}{s}[{}]", v.join(", "))),
            1 => (prop::sample::select(vec!["- ", "  - ", "-", "    - "]), arb_value())
                .prop_map(|(d, v)| format!("{d}{v}")),
            1 => Just(String::new()),
            1 => Just("# comment".to_string()),
        ]
    }

    /// Lines shaped as real frontmatter is, with tricky text inside the values.
    fn arb_plausible_line() -> impl Strategy<Value = String> {
        let key = "[a-z][a-z_]{0,8}";
        let quoted = prop_oneof![
            arb_value().prop_map(|v| format!("'{}'", v.replace('\'', "''"))),
            arb_value().prop_map(|v| format!("\"{}\"", v.replace(['"', '\\'], ""))),
        ];
        let word = "[a-zA-Z][a-zA-Z0-9_./@-]{0,8}";
        prop_oneof![
            3 => (key, quoted).prop_map(|(k, v)| format!("{k}: {v}")),
            3 => (key, arb_value()).prop_map(|(k, v)| format!("{k}: {v}")),
            1 => (key, proptest::collection::vec(word, 0..3))
                .prop_map(|(k, v)| format!("{k}: [{}]", v.join(", "))),
            1 => (key, proptest::collection::vec(arb_value(), 1..3)).prop_map(|(k, v)| {
                let items: Vec<String> = v.iter().map(|i| format!("- {i}")).collect();
                format!("{k}:\n{}", items.join("\n"))
            }),
        ]
    }

    /// When the fast reader answers for these lines, serde_yaml_ng reads the same mapping.
    fn agrees(lines: &[String]) -> Result<(), TestCaseError> {
        let yaml = format!("{}\n", lines.join("\n"));
        if let Some(map) = mapping(&yaml) {
            let want = if map.is_empty() {
                Value::Null
            } else {
                Value::Mapping(map)
            };
            prop_assert_eq!(serde(&yaml), Ok(want), "{:?}", yaml);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// Whenever the fast reader answers, serde_yaml_ng reads the same mapping.
        #[test]
        fn answers_only_as_serde_yaml_ng_would(lines in proptest::collection::vec(arb_line(), 1..8)) {
            agrees(&lines)?;
        }

        /// The same for text shaped like real frontmatter, where the fast reader mostly answers.
        #[test]
        fn plausible_frontmatter_reads_as_serde_yaml_ng_reads_it(
            lines in proptest::collection::vec(arb_plausible_line(), 1..8)
        ) {
            agrees(&lines)?;
        }
    }

    #[test]
    fn frontmatter_yoi_and_the_older_tool_write_takes_the_fast_path() {
        let cases = [
            // The older tool: single quotes, null, flow lists.
            "title: 'worker-runtime: add FS persistence feature'\nstate: 'queued'\n\
             created_at: '2026-06-25T14:44:02Z'\nassignee: null\n\
             risk_flags: ['persistence', 'feature-gating']\nlabels: []\n",
            // yoi: plain timestamps, block lists, quoted titles, non-ASCII.
            "title: 'Fix login: handle expired tokens'\nstate: queued\n\
             created_at: 2026-11-29T10:00:00Z\nrisk_flags:\n- auth\n- sessions\n\
             queued_by: alice\ntarget_ref: main\ncustom_field: kept as written\n",
            "title: ログインを直す\nstate: planning\nflow:\n  - a\n  - b\npriority: high\n",
        ];
        for yaml in cases {
            let map = mapping(yaml).unwrap_or_else(|| panic!("not taken: {yaml}"));
            assert_eq!(serde(yaml), Ok(Value::Mapping(map)), "{yaml}");
        }
    }

    #[test]
    fn anything_uncertain_goes_to_serde_yaml_ng() {
        for yaml in [
            "priority: 3\n",
            "title: a # note\n",
            "title: \"tab\\there\"\n",
            "title: a\n  continued\n",
            "a: 1\na: 2\n",
            "title: &x v\nother: *x\n",
            "title: v\r\n",
            "null: v\n",
            "- a\n",
            "flags: [@x]\n",
        ] {
            assert_eq!(mapping(yaml), None, "{yaml}");
        }
    }
}
