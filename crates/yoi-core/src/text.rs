//! Rules for the short texts people give: titles and names.
//!
//! Bidirectional override, embedding and isolate controls (U+202A–U+202E, U+2066–U+2069) make
//! text display in another order than it is stored ("Trojan Source", CVE-2021-42574): a title
//! or a name carrying one can read as something it is not, on the board, in a terminal and in
//! `git log`. They have no use in a one-line title or a name, so yoi refuses them there; longer
//! Markdown keeps them, and the dashboard isolates each run that holds one (`<bdi>`).

/// Whether `c` is a bidirectional override, embedding or isolate control.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The first bidirectional control in `text`: its position (1-based, in characters) and the
/// character.
pub fn first_bidi_control(text: &str) -> Option<(usize, char)> {
    text.chars()
        .enumerate()
        .find(|(_, c)| is_bidi_control(*c))
        .map(|(i, c)| (i + 1, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_override_embedding_and_isolate_control() {
        for c in ('\u{202A}'..='\u{202E}').chain('\u{2066}'..='\u{2069}') {
            assert_eq!(first_bidi_control(&format!("ab{c}c")), Some((3, c)));
        }
        // Marks (LRM, RLM, ALM) and joiners change no order; right-to-left text is just text.
        for ok in [
            "plain",
            "\u{200E}mark\u{200F}",
            "\u{061C}",
            "עברית",
            "a\u{200D}b",
        ] {
            assert_eq!(first_bidi_control(ok), None, "{ok:?}");
        }
    }
}
