//! The parser: tolerated variations and each strict refusal, with its rule and line.

use yoi_skills::parse::{MAX_FRONTMATTER_BYTES, MAX_SKILL_MD_BYTES};
use yoi_skills::{parse_skill_md, rules, ParseError};

#[test]
fn parses_frontmatter_and_strips_it_from_the_body() {
    let file = parse_skill_md(b"---\nname: a\ndescription: b\n---\n\n# Title\nText\n").unwrap();
    assert_eq!(
        file.frontmatter.get("name").and_then(|v| v.as_str()),
        Some("a")
    );
    assert_eq!(file.body, "# Title\nText");
    assert_eq!(file.body_line, 6);
}

#[test]
fn accepts_crlf_line_endings_and_returns_an_lf_body() {
    let file =
        parse_skill_md(b"---\r\nname: a\r\ndescription: b\r\n---\r\nLine 1\r\nLine 2\r\n").unwrap();
    assert_eq!(
        file.frontmatter.get("description").and_then(|v| v.as_str()),
        Some("b")
    );
    assert_eq!(file.body, "Line 1\nLine 2");
}

#[test]
fn accepts_a_closing_delimiter_without_final_newline() {
    let file = parse_skill_md(b"---\nname: a\n---").unwrap();
    assert_eq!(file.body, "");
    let file = parse_skill_md(b"---\nname: a\n---\nlast line").unwrap();
    assert_eq!(file.body, "last line");
}

#[test]
fn only_the_first_closing_delimiter_ends_the_frontmatter() {
    let file =
        parse_skill_md(b"---\nname: a\n---\nintro\n---\nname: not-frontmatter\n---\n").unwrap();
    assert_eq!(file.frontmatter.len(), 1);
    assert_eq!(file.body, "intro\n---\nname: not-frontmatter\n---");
}

#[test]
fn accepts_trailing_spaces_after_a_delimiter() {
    let file = parse_skill_md(b"--- \nname: a\n---\t\nbody").unwrap();
    assert_eq!(file.body, "body");
}

#[test]
fn refuses_a_file_without_frontmatter() {
    for input in [
        &b"# Just markdown\n"[..],
        b"",
        b"\n---\nname: a\n---\n",
        b"---yaml\nname: a\n---\n",
    ] {
        let err = parse_skill_md(input).unwrap_err();
        assert_eq!(err, ParseError::MissingFrontmatter, "{input:?}");
        assert_eq!(err.rule(), rules::FM_START);
        assert_eq!(err.line(), Some(1));
    }
}

#[test]
fn refuses_unclosed_frontmatter() {
    let err = parse_skill_md(b"---\nname: a\ndescription: b\n").unwrap_err();
    assert_eq!(err, ParseError::Unclosed);
    assert_eq!(err.rule(), rules::FM_CLOSE);
    assert_eq!(parse_skill_md(b"---").unwrap_err(), ParseError::Unclosed);
}

#[test]
fn refuses_invalid_yaml_with_the_file_line() {
    let err = parse_skill_md(b"---\nname: a\ndescription: uses: colons\n---\n").unwrap_err();
    assert_eq!(err.rule(), rules::FM_YAML);
    assert_eq!(err.line(), Some(3), "{err}");
    assert!(
        err.to_string().contains("line 3"),
        "message uses file lines: {err}"
    );
}

#[test]
fn refuses_tab_indentation_as_invalid_yaml() {
    let err = parse_skill_md(b"---\nname: a\nmetadata:\n\tkey: v\n---\n").unwrap_err();
    assert_eq!(err.rule(), rules::FM_YAML);
    assert_eq!(err.line(), Some(4));
}

#[test]
fn refuses_frontmatter_that_is_not_a_mapping() {
    for (input, found) in [
        (&b"---\n- name\n- description\n---\n"[..], "a list"),
        (b"---\njust text\n---\n", "a scalar"),
        (b"---\n---\n", "nothing (the frontmatter is empty)"),
        (
            b"---\n\n\n---\nbody\n",
            "nothing (the frontmatter is empty)",
        ),
    ] {
        let err = parse_skill_md(input).unwrap_err();
        assert_eq!(err, ParseError::NotMapping { found }, "{input:?}");
        assert_eq!(err.rule(), rules::FM_MAPPING);
    }
}

#[test]
fn refuses_duplicate_top_level_keys_at_the_second_occurrence() {
    let err = parse_skill_md(b"---\nname: a\ndescription: b\nname: c\n---\n").unwrap_err();
    assert_eq!(
        err,
        ParseError::DuplicateKey {
            key: "name".to_string(),
            line: Some(4)
        }
    );
    assert_eq!(err.rule(), rules::FM_DUPLICATE_KEY);
}

#[test]
fn refuses_duplicate_nested_keys() {
    let err =
        parse_skill_md(b"---\nname: a\nmetadata:\n  v: \"1\"\n  v: \"2\"\n---\n").unwrap_err();
    assert_eq!(
        err,
        ParseError::DuplicateKey {
            key: "v".to_string(),
            line: Some(5)
        }
    );
}

#[test]
fn refuses_a_byte_order_mark() {
    let err = parse_skill_md(b"\xEF\xBB\xBF---\nname: a\n---\n").unwrap_err();
    assert_eq!(err, ParseError::ByteOrderMark);
    assert_eq!(err.rule(), rules::FILE_BOM);
}

#[test]
fn refuses_non_utf8_bytes_with_their_line() {
    let err = parse_skill_md(b"---\nname: a\n---\nok\nbad \xFF byte\n").unwrap_err();
    assert_eq!(
        err,
        ParseError::NotUtf8 {
            offset: 23,
            line: 5
        }
    );
    assert_eq!(err.rule(), rules::FILE_UTF8);
    assert_eq!(err.line(), Some(5));
}

#[test]
fn every_parse_error_becomes_an_error_diagnostic() {
    let diagnostic = parse_skill_md(b"nope").unwrap_err().to_diagnostic();
    assert_eq!(diagnostic.rule, rules::FM_START);
    assert!(diagnostic.is_error());
    assert_eq!(diagnostic.line, Some(1));
}

#[test]
fn deeply_nested_yaml_is_an_error_not_a_crash() {
    let text = format!("---\nname: {}\n---\n", "[".repeat(10_000));
    assert_eq!(
        parse_skill_md(text.as_bytes()).unwrap_err().rule(),
        rules::FM_YAML
    );
}

#[test]
fn frontmatter_over_the_size_limit_is_refused_before_yaml_parsing() {
    let at_limit = format!(
        "---\nname: {}\n---\n",
        "a".repeat(MAX_FRONTMATTER_BYTES - 6)
    );
    assert!(parse_skill_md(at_limit.as_bytes()).is_ok());
    let over = format!("---\nname: {}\n---\n", "[".repeat(MAX_FRONTMATTER_BYTES));
    let err = parse_skill_md(over.as_bytes()).unwrap_err();
    assert_eq!(
        err,
        ParseError::FrontmatterTooLarge {
            bytes: MAX_FRONTMATTER_BYTES + 6,
            limit: MAX_FRONTMATTER_BYTES
        }
    );
    assert_eq!(err.rule(), rules::FM_SIZE);
}

#[test]
fn alias_bombs_are_an_error_not_a_hang() {
    let mut text = String::from("---\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    text.push_str("---\n");
    assert_eq!(
        parse_skill_md(text.as_bytes()).unwrap_err().rule(),
        rules::FM_YAML
    );
}

#[test]
fn files_over_one_mebibyte_are_refused() {
    let mut text = b"---\nname: a\n---\n".to_vec();
    text.resize(MAX_SKILL_MD_BYTES, b'x');
    assert!(parse_skill_md(&text).is_ok());
    text.push(b'x');
    let err = parse_skill_md(&text).unwrap_err();
    assert_eq!(
        err,
        ParseError::TooLarge {
            limit: MAX_SKILL_MD_BYTES
        }
    );
    assert_eq!(err.rule(), rules::FILE_SIZE);
}
