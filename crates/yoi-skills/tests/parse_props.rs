//! Property tests: the parser and linter are total on arbitrary input.

use proptest::prelude::*;
use yoi_skills::{lint_skill_md, parse_skill_md, rules};

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn parser_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_skill_md(&bytes);
    }

    #[test]
    fn parser_never_panics_on_frontmatter_shaped_input(
        front in "[-a-z:\"' \\t\\n\\[\\]{}&*!|>#0-9]{0,200}",
        body in "[-a-z\\n\\r.()\\[\\]/]{0,100}",
    ) {
        let text = format!("---\n{front}\n---\n{body}");
        let _ = parse_skill_md(text.as_bytes());
        let linted = lint_skill_md("dir", text.as_bytes());
        // A skill is valid exactly when no diagnostic is an error.
        prop_assert_eq!(linted.is_valid(), linted.diagnostics.iter().all(|d| !d.is_error()));
    }

    #[test]
    fn unquoted_scalars_are_read_as_their_source_text(
        token in "[-+.0-9a-fA-FoOxX_]{1,10}|true|false|True|FALSE|\\.inf|-\\.inf|\\.NaN|~|null",
    ) {
        let text = format!("---\nname: {token}\ndescription: {token} # note\n---\n");
        let linted = lint_skill_md(&token, text.as_bytes());
        if let Some(name) = &linted.meta.name {
            prop_assert_eq!(name, &token);
        }
        if let Some(description) = &linted.meta.description {
            prop_assert_eq!(description, &token);
        }
        prop_assert!(
            linted.diagnostics.iter().all(|d| d.rule != rules::NAME_TYPE && d.rule != rules::DESC_TYPE),
            "{:?}",
            linted.diagnostics
        );
    }
}
