//! Field rules at their boundaries, counted in characters (CJK text included), and the ASCII
//! name decision.

use yoi_skills::{lint_skill_md, rules, Diagnostic, LintedSkill, Severity};

fn lint_front(dir: &str, front: &str) -> LintedSkill {
    lint_skill_md(dir, format!("---\n{front}\n---\nBody.\n").as_bytes())
}

fn rule_ids(linted: &LintedSkill) -> Vec<&'static str> {
    linted.diagnostics.iter().map(|d| d.rule).collect()
}

fn with_name(name: &str) -> LintedSkill {
    lint_front(
        name,
        &format!("name: \"{name}\"\ndescription: Does things."),
    )
}

#[test]
fn a_minimal_skill_is_clean() {
    let linted = with_name("pdf-tools");
    assert!(linted.diagnostics.is_empty(), "{:?}", linted.diagnostics);
    assert_eq!(linted.meta.name.as_deref(), Some("pdf-tools"));
    assert_eq!(linted.body.as_deref(), Some("Body."));
}

#[test]
fn name_is_required() {
    let linted = lint_front("x", "description: d");
    assert_eq!(rule_ids(&linted), [rules::NAME_REQUIRED]);
    assert!(!linted.is_valid());
    assert_eq!(
        rule_ids(&lint_front("x", "name:\ndescription: d")),
        [rules::NAME_REQUIRED]
    );
}

#[test]
fn name_must_be_a_string() {
    assert_eq!(
        lint_front("x", "name: [x]\ndescription: d").diagnostics,
        [Diagnostic::error(
            rules::NAME_TYPE,
            "`name` must be a string, found a list",
            Some(2)
        )]
    );
    assert_eq!(
        rule_ids(&lint_front("x", "name:\n  a: b\ndescription: d")),
        [rules::NAME_TYPE]
    );
}

#[test]
fn an_unquoted_number_name_is_read_as_its_text() {
    // skills-ref reads every scalar as text: `name: 2024` is the valid name "2024".
    let linted = lint_front("2024", "name: 2024\ndescription: d");
    assert!(linted.diagnostics.is_empty(), "{:?}", linted.diagnostics);
    assert_eq!(linted.meta.name.as_deref(), Some("2024"));
}

#[test]
fn an_unquoted_float_name_keeps_its_source_text_and_fails_the_naming_rule() {
    // Not re-rendered as 1.5, and refused by the charset rule, not as "must be a string".
    let linted = lint_front("1.50", "name: 1.50\ndescription: d");
    assert_eq!(
        linted.diagnostics,
        [Diagnostic::error(
            rules::NAME_CHARSET,
            "name `1.50` may only contain ASCII lowercase letters, digits and hyphens \
             (`a-z`, `0-9`, `-`); found '.' (U+002E)",
            Some(2)
        )]
    );
    assert_eq!(linted.meta.name.as_deref(), Some("1.50"));
}

#[test]
fn an_unquoted_hex_name_keeps_its_uppercase_text() {
    let linted = lint_front("0x1F", "name: 0x1F\ndescription: d");
    assert_eq!(
        linted.diagnostics,
        [Diagnostic::error(
            rules::NAME_CASE,
            "name `0x1F` contains uppercase letters; use lowercase `a-z`",
            Some(2)
        )]
    );
    assert_eq!(linted.meta.name.as_deref(), Some("0x1F"));
}

#[test]
fn the_dir_match_compares_the_source_text_of_a_number_name() {
    // "2024.0" reads as the float 2024 but is compared as written.
    assert_eq!(
        lint_front("2024", "name: 2024.0\ndescription: d").diagnostics,
        [
            Diagnostic::error(
                rules::NAME_CHARSET,
                "name `2024.0` may only contain ASCII lowercase letters, digits and hyphens \
                 (`a-z`, `0-9`, `-`); found '.' (U+002E)",
                Some(2)
            ),
            Diagnostic::error(
                rules::NAME_DIR_MATCH,
                "name `2024.0` differs from its directory `2024`; they must be identical \
                 (compared exactly, without case folding or Unicode normalisation)",
                Some(2)
            ),
        ]
    );
}

#[test]
fn number_text_is_found_after_comments_and_on_the_next_line() {
    let linted = lint_front(
        "007",
        "# header\nname: 007 # agent\ndescription:\n  # the text\n  false\n",
    );
    assert!(linted.diagnostics.is_empty(), "{:?}", linted.diagnostics);
    assert_eq!(linted.meta.name.as_deref(), Some("007"));
    assert_eq!(linted.meta.description.as_deref(), Some("false"));
}

#[test]
fn a_tagged_number_stays_a_type_error() {
    // `!!int` asks for a number explicitly; there is no plain text to read.
    assert_eq!(
        lint_front("x", "name: !!int 12\ndescription: d").diagnostics,
        [Diagnostic::error(
            rules::NAME_TYPE,
            "`name` must be a string, found a number",
            Some(2)
        )]
    );
}

#[test]
fn name_of_64_characters_passes_and_65_fails() {
    let ok = "a".repeat(64);
    assert!(with_name(&ok).diagnostics.is_empty());
    let long = "a".repeat(65);
    assert_eq!(rule_ids(&with_name(&long)), [rules::NAME_LENGTH]);
}

#[test]
fn empty_name_fails_length() {
    assert_eq!(
        rule_ids(&lint_front("", "name: \"\"\ndescription: d")),
        [rules::NAME_LENGTH]
    );
}

#[test]
fn name_length_counts_characters_not_bytes() {
    // 22 CJK characters are 66 bytes: only the charset rule fires, not the length rule.
    let cjk = "技".repeat(22);
    assert_eq!(rule_ids(&with_name(&cjk)), [rules::NAME_CHARSET]);
    let too_long = "技".repeat(65);
    assert_eq!(
        rule_ids(&with_name(&too_long)),
        [rules::NAME_LENGTH, rules::NAME_CHARSET]
    );
}

#[test]
fn uppercase_is_a_case_error() {
    assert_eq!(rule_ids(&with_name("PDF-tools")), [rules::NAME_CASE]);
}

#[test]
fn underscores_spaces_and_dots_are_charset_errors() {
    for name in ["pdf_tools", "pdf tools", "pdf.tools"] {
        assert_eq!(rule_ids(&with_name(name)), [rules::NAME_CHARSET], "{name}");
    }
}

#[test]
fn hyphens_at_the_edges_or_doubled_are_refused() {
    assert_eq!(rule_ids(&with_name("-pdf")), [rules::NAME_HYPHEN_EDGE]);
    assert_eq!(rule_ids(&with_name("pdf-")), [rules::NAME_HYPHEN_EDGE]);
    assert_eq!(
        rule_ids(&with_name("pdf--tools")),
        [rules::NAME_HYPHEN_DOUBLE]
    );
    assert!(with_name("a-b-c-1").diagnostics.is_empty());
}

#[test]
fn name_must_equal_its_directory_exactly() {
    let linted = lint_front("pdf", "name: pdf-tools\ndescription: d");
    assert_eq!(rule_ids(&linted), [rules::NAME_DIR_MATCH]);
    assert_eq!(linted.diagnostics[0].line, Some(2));
}

#[test]
fn non_ascii_letters_are_refused_even_where_skills_ref_accepts_them() {
    // skills-ref accepts these (lowercase per str.isalnum); yoi's ASCII reading does not.
    for name in ["café", "навык", "技能", "über-tool"] {
        assert_eq!(rule_ids(&with_name(name)), [rules::NAME_CHARSET], "{name}");
    }
}

#[test]
fn names_are_not_unicode_normalised() {
    // Decomposed "cafe\u{301}" is not "café", and neither is ASCII.
    let decomposed = "cafe\u{301}";
    assert_eq!(
        rule_ids(&lint_front(
            "café",
            &format!("name: \"{decomposed}\"\ndescription: d")
        )),
        [rules::NAME_CHARSET, rules::NAME_DIR_MATCH]
    );
    // Fullwidth letters are refused, with a hint naming the NFKC form.
    let linted = lint_front("pdf-tool", "name: \"ｐｄｆ-tool\"\ndescription: d");
    assert_eq!(
        rule_ids(&linted),
        [rules::NAME_CHARSET, rules::NAME_DIR_MATCH]
    );
    assert!(
        linted.diagnostics[0]
            .message
            .contains("NFKC form `pdf-tool`"),
        "{}",
        linted.diagnostics[0].message
    );
}

#[test]
fn description_is_required_and_not_blank() {
    assert_eq!(
        rule_ids(&lint_front("a", "name: a")),
        [rules::DESC_REQUIRED]
    );
    assert_eq!(
        rule_ids(&lint_front("a", "name: a\ndescription: \"\"")),
        [rules::DESC_EMPTY]
    );
    assert_eq!(
        rule_ids(&lint_front("a", "name: a\ndescription: \"  \\t \"")),
        [rules::DESC_EMPTY]
    );
    assert_eq!(
        lint_front("a", "name: a\ndescription: [x]").diagnostics,
        [Diagnostic::error(
            rules::DESC_TYPE,
            "`description` must be a string, found a list",
            Some(3)
        )]
    );
}

#[test]
fn boolean_and_number_descriptions_are_their_text() {
    for text in ["true", "False", "1.50", "0x1F", "-3", ".inf", "1e3"] {
        let linted = lint_front("a", &format!("name: a\ndescription: {text}"));
        assert!(
            linted.diagnostics.is_empty(),
            "{text}: {:?}",
            linted.diagnostics
        );
        assert_eq!(linted.meta.description.as_deref(), Some(text));
    }
}

#[test]
fn other_string_fields_typed_as_numbers_or_booleans_keep_their_text() {
    let linted = lint_front(
        "a",
        "name: a\ndescription: d\nlicense: 2.0\ncompatibility: 3\nallowed-tools: true\n\
         metadata:\n  version: 1.50\n  beta: no\n  enabled: TRUE\n  1: one",
    );
    assert!(linted.diagnostics.is_empty(), "{:?}", linted.diagnostics);
    let meta = &linted.meta;
    assert_eq!(meta.license.as_deref(), Some("2.0"));
    assert_eq!(meta.compatibility.as_deref(), Some("3"));
    assert_eq!(meta.allowed_tools.as_deref(), Some("true"));
    let metadata: Vec<(&str, &str)> = meta
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        metadata,
        [
            ("1", "one"),
            ("beta", "no"),
            ("enabled", "TRUE"),
            ("version", "1.50")
        ]
    );
}

#[test]
fn description_of_1024_characters_passes_and_1025_fails() {
    let ok = lint_front("a", &format!("name: a\ndescription: {}", "d".repeat(1024)));
    assert!(ok.diagnostics.is_empty());
    let long = lint_front("a", &format!("name: a\ndescription: {}", "d".repeat(1025)));
    assert_eq!(rule_ids(&long), [rules::DESC_LENGTH]);
}

#[test]
fn description_length_counts_cjk_characters() {
    // 1024 CJK characters are 3072 bytes and still valid; 1025 are not.
    let ok = lint_front("a", &format!("name: a\ndescription: {}", "説".repeat(1024)));
    assert!(ok.diagnostics.is_empty(), "{:?}", ok.diagnostics);
    let long = lint_front("a", &format!("name: a\ndescription: {}", "説".repeat(1025)));
    assert_eq!(rule_ids(&long), [rules::DESC_LENGTH]);
    assert!(long.diagnostics[0].message.contains("1025 characters"));
}

#[test]
fn compatibility_of_500_characters_passes_and_501_fails() {
    let base = "name: a\ndescription: d\ncompatibility: ";
    assert!(lint_front("a", &format!("{base}{}", "c".repeat(500)))
        .diagnostics
        .is_empty());
    assert_eq!(
        rule_ids(&lint_front("a", &format!("{base}{}", "c".repeat(501)))),
        [rules::COMPAT_LENGTH]
    );
    assert!(lint_front("a", &format!("{base}{}", "互".repeat(500)))
        .diagnostics
        .is_empty());
    assert_eq!(
        rule_ids(&lint_front("a", &format!("{base}{}", "互".repeat(501)))),
        [rules::COMPAT_LENGTH]
    );
}

#[test]
fn compatibility_must_be_a_non_empty_string() {
    assert_eq!(
        rule_ids(&lint_front(
            "a",
            "name: a\ndescription: d\ncompatibility: \"\""
        )),
        [rules::COMPAT_LENGTH]
    );
    assert_eq!(
        lint_front("a", "name: a\ndescription: d\ncompatibility: [3]").diagnostics,
        [Diagnostic::error(
            rules::COMPAT_TYPE,
            "`compatibility` must be a string, found a list",
            Some(4)
        )]
    );
}

#[test]
fn license_must_be_a_string() {
    let ok = lint_front("a", "name: a\ndescription: d\nlicense: Apache-2.0");
    assert_eq!(ok.meta.license.as_deref(), Some("Apache-2.0"));
    assert_eq!(
        rule_ids(&lint_front("a", "name: a\ndescription: d\nlicense: [MIT]")),
        [rules::LICENSE_TYPE]
    );
}

#[test]
fn metadata_maps_strings_to_strings() {
    let ok = lint_front(
        "a",
        "name: a\ndescription: d\nmetadata:\n  author: me\n  version: \"1.0\"",
    );
    assert!(ok.diagnostics.is_empty());
    assert_eq!(
        ok.meta.metadata.get("version").map(String::as_str),
        Some("1.0")
    );
    assert_eq!(
        rule_ids(&lint_front("a", "name: a\ndescription: d\nmetadata: text")),
        [rules::METADATA_TYPE]
    );
    let list = lint_front(
        "a",
        "name: a\ndescription: d\nmetadata:\n  author: me\n  tags: [x, y]",
    );
    assert_eq!(
        list.diagnostics,
        [Diagnostic::error(
            rules::METADATA_VALUE,
            "`metadata.tags` must be a string, found a list; write it as one line of text, \
             e.g. `tags: \"1.0\"`",
            Some(6)
        )]
    );
    assert_eq!(
        lint_front("a", "name: a\ndescription: d\nmetadata:\n  [k]: x").diagnostics,
        [Diagnostic::error(
            rules::METADATA_VALUE,
            "`metadata` keys must be strings, found a list",
            Some(4)
        )]
    );
}

#[test]
fn allowed_tools_is_one_space_separated_string() {
    let ok = lint_front(
        "a",
        "name: a\ndescription: d\nallowed-tools: Bash(git:*) Read",
    );
    assert!(ok.diagnostics.is_empty());
    assert_eq!(ok.meta.allowed_tools_list(), ["Bash(git:*)", "Read"]);
    let list = lint_front("a", "name: a\ndescription: d\nallowed-tools:\n  - Read");
    assert_eq!(rule_ids(&list), [rules::TOOLS_TYPE]);
}

#[test]
fn unknown_fields_are_warnings_that_keep_the_skill_valid() {
    let linted = lint_front(
        "a",
        "name: a\ndescription: d\ndisable-model-invocation: true",
    );
    assert_eq!(rule_ids(&linted), [rules::FM_UNKNOWN]);
    assert_eq!(linted.diagnostics[0].severity, Severity::Warning);
    assert_eq!(linted.diagnostics[0].line, Some(4));
    assert!(linted.is_valid());
}

#[test]
fn body_of_500_lines_is_fine_and_501_gets_advice() {
    let body = |n: usize| {
        (1..=n)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let ok = lint_skill_md(
        "a",
        format!("---\nname: a\ndescription: d\n---\n{}\n", body(500)).as_bytes(),
    );
    assert!(ok.diagnostics.is_empty());
    let long = lint_skill_md(
        "a",
        format!("---\nname: a\ndescription: d\n---\n{}\n", body(501)).as_bytes(),
    );
    assert_eq!(rule_ids(&long), [rules::BODY_SIZE]);
    assert_eq!(long.diagnostics[0].severity, Severity::Advice);
    assert_eq!(long.diagnostics[0].line, Some(505));
    assert!(long.is_valid());
}

#[test]
fn references_leaving_the_skill_folder_get_advice_with_their_line() {
    let text = "---\nname: a\ndescription: d\n---\n\
        See [guide](references/guide.md) and [site](https://example.com/x).\n\
        Also [up](../other/SKILL.md).\n\
        Read `../../etc/passwd` too.\n\
        [abs]: /etc/hosts\n\
        ![img](<~/pic.png>)\n\
        ```sh\ncd ../build\n```\n\
        Fine: [inner](a/../b.md) and [anchor](#top).\n";
    let linted = lint_skill_md("a", text.as_bytes());
    let found: Vec<(&str, Option<u32>)> = linted
        .diagnostics
        .iter()
        .map(|d| (d.rule, d.line))
        .collect();
    assert_eq!(
        found,
        [
            (rules::REF_ESCAPE, Some(6)),
            (rules::REF_ESCAPE, Some(7)),
            (rules::REF_ESCAPE, Some(8)),
            (rules::REF_ESCAPE, Some(9)),
        ],
        "{:#?}",
        linted.diagnostics
    );
    assert!(linted
        .diagnostics
        .iter()
        .all(|d| d.severity == Severity::Advice));
    assert!(linted.diagnostics[0]
        .message
        .contains("`../other/SKILL.md`"));
}

#[test]
fn a_structural_error_is_the_only_diagnostic() {
    let linted = lint_skill_md("a", b"no frontmatter");
    assert_eq!(rule_ids(&linted), [rules::FM_START]);
    assert_eq!(linted.body, None);
}

#[test]
fn diagnostics_round_trip_through_json_and_unknown_rules_are_refused() {
    let linted = lint_front("a", "name: A\ndescription: d");
    let json = serde_json::to_string(&linted.diagnostics).unwrap();
    assert!(json.contains("\"rule\":\"NAME-CASE\""), "{json}");
    assert!(json.contains("\"severity\":\"error\""), "{json}");
    let back: Vec<yoi_skills::Diagnostic> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, linted.diagnostics);
    let bad = json.replace("NAME-CASE", "NAME-TYPO");
    assert!(serde_json::from_str::<Vec<yoi_skills::Diagnostic>>(&bad).is_err());
}
