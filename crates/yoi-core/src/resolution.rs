//! `resolution.md`: the Markdown text a ticket was closed with. The same text is the body of
//! the `close` event. Stored with exactly one final newline.

/// Normalise a resolution for writing: LF line ends, no surrounding blank lines, one final
/// newline. Returns `None` for an empty resolution (which the close operations refuse).
pub fn render_resolution(text: &str) -> Option<String> {
    let body = crate::thread::normalize_body(text);
    (!body.trim().is_empty()).then(|| format!("{body}\n"))
}

/// The resolution text of a file (the inverse of [`render_resolution`]).
pub fn parse_resolution(text: &str) -> String {
    crate::thread::normalize_body(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn empty_resolutions_are_refused() {
        assert_eq!(render_resolution(" \n\n"), None);
        assert_eq!(render_resolution("Done.\r\n").as_deref(), Some("Done.\n"));
    }

    proptest! {
        #[test]
        fn render_parse_render_is_identity(text in any::<String>()) {
            if let Some(r) = render_resolution(&text) {
                prop_assert_eq!(render_resolution(&parse_resolution(&r)), Some(r));
            }
        }
    }
}
