//! Inputs the fuzzer (`yoi-fuzz`, tests/fuzz/) found, kept so they stay fixed.

use std::time::{Duration, Instant};

use yoi_core::yaml::MAX_BRACKETS;
use yoi_skills::{lint_skill_md, parse_skill_md, rules, ParseError};

/// A frontmatter under the 64 KiB limit but made of nested `{` took over 4 s in the YAML
/// scanner, stalling catalog loading.
#[test]
fn a_frontmatter_of_nested_brackets_is_refused_at_once() {
    let text = format!("---\nname: a\nx: {}\n---\n", "{".repeat(60 * 1024));
    let start = Instant::now();
    let e = parse_skill_md(text.as_bytes()).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    let ParseError::Yaml { line, reason } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(*line, Some(3));
    assert!(reason.contains("more than 256 `[` and `{`"), "{reason}");
    let linted = lint_skill_md("a", text.as_bytes());
    assert_eq!(linted.diagnostics[0].rule, rules::FM_YAML);
}

#[test]
fn a_frontmatter_with_as_many_brackets_as_allowed_still_parses() {
    let skill = |n: usize| {
        format!(
            "---\nname: a\ndescription: d\nmetadata: {{tags: \"{}\"}}\n---\n",
            "[".repeat(n)
        )
    };
    assert!(parse_skill_md(skill(MAX_BRACKETS - 1).as_bytes()).is_ok());
    assert!(parse_skill_md(skill(MAX_BRACKETS).as_bytes()).is_err());
}

/// A 48 KB frontmatter (under the 64 KiB limit) of nested aliases to one long string asked
/// serde_yaml_ng for more than 3 GB.
#[test]
fn a_frontmatter_whose_aliases_explode_is_refused_before_it_is_built() {
    let mut text = format!(
        "---\nname: a\ndescription: d\nmetadata:\n  a: &a \"{}\"\n  b: &b [{}]\n",
        "x".repeat(20_000),
        ["*a"; 9].join(",")
    );
    for (from, to) in "bcdefgh".chars().zip("cdefghi".chars()) {
        let refs = vec![format!("*{from}"); 9].join(",");
        text.push_str(&format!("  {to}: &{to} [{refs}]\n"));
    }
    text.push_str(&format!("  z: [{}]\n---\n", vec!["1"; 14_000].join(",")));
    assert!(text.len() < 64 * 1024);
    let start = Instant::now();
    let e = parse_skill_md(text.as_bytes()).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert!(
        e.to_string().contains("aliases (`*name`) that expand past"),
        "{e}"
    );
}
