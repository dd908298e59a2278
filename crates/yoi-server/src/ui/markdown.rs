//! Markdown from tickets and threads as safe HTML.
//!
//! Agents write these files, so their text is untrusted. pulldown-cmark renders CommonMark;
//! before rendering, every raw HTML event becomes plain text (so `<script>` shows as text) and
//! every link or image address whose scheme is not `http`, `https` or `mailto` (a
//! `javascript:` or `data:` URL) is replaced by `#`. Everything else pulldown-cmark writes is
//! escaped by it. That is the whole sanitizer: no HTML passes through, so no allowlist of tags
//! and attributes is needed.
//!
//! A run of text or code holding a bidirectional override, embedding or isolate control
//! (`yoi_core::text`) is wrapped in `<bdi>`, so the reordering it asks for ends with the run and
//! cannot make the text around it read as something else.

use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// Render `text` as sanitized HTML.
pub fn render(text: &str) -> String {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, opts).map(|e| match e {
        Event::Html(h) | Event::InlineHtml(h) => isolated(h, false),
        Event::Text(t) => isolated(t, false),
        Event::Code(c) => isolated(c, true),
        // The page's own headings are h1 and h2; a brief's `## Intent` sits below them.
        Event::Start(Tag::Heading {
            level,
            id,
            classes,
            attrs,
        }) => Event::Start(Tag::Heading {
            level: deeper(level),
            id,
            classes,
            attrs,
        }),
        Event::End(TagEnd::Heading(level)) => Event::End(TagEnd::Heading(deeper(level))),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        other => other,
    });
    let mut out = String::with_capacity(text.len() * 5 / 4);
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// Text (or inline code) as an event; in a `<bdi>` when it holds a bidirectional control.
fn isolated(text: CowStr<'_>, code: bool) -> Event<'_> {
    if !text.chars().any(yoi_core::text::is_bidi_control) {
        return if code {
            Event::Code(text)
        } else {
            Event::Text(text)
        };
    }
    let mut html = String::with_capacity(text.len() + 24);
    html.push_str(if code { "<bdi><code>" } else { "<bdi>" });
    for c in text.chars() {
        match c {
            '&' => html.push_str("&amp;"),
            '<' => html.push_str("&lt;"),
            '>' => html.push_str("&gt;"),
            '"' => html.push_str("&quot;"),
            '\'' => html.push_str("&#39;"),
            c => html.push(c),
        }
    }
    html.push_str(if code { "</code></bdi>" } else { "</bdi>" });
    Event::InlineHtml(html.into())
}

fn deeper(level: HeadingLevel) -> HeadingLevel {
    match level {
        HeadingLevel::H1 => HeadingLevel::H3,
        HeadingLevel::H2 => HeadingLevel::H3,
        HeadingLevel::H3 => HeadingLevel::H4,
        HeadingLevel::H4 => HeadingLevel::H5,
        _ => HeadingLevel::H6,
    }
}

fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim().to_ascii_lowercase();
    let scheme = lower
        .split_once(':')
        .map(|(s, _)| s)
        .filter(|s| !s.contains(['/', '?', '#']));
    match scheme {
        None => url,
        Some("http" | "https" | "mailto") => url,
        Some(_) => CowStr::Borrowed("#"),
    }
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn raw_html_is_shown_as_text() {
        let out = render("hi <script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n");
        assert!(!out.contains("<script"), "{out}");
        assert!(!out.contains("<img"), "{out}");
        assert!(out.contains("&lt;script&gt;"), "{out}");
    }

    #[test]
    fn dangerous_link_schemes_are_dropped() {
        let out = render("[a](javascript:alert(1)) [b](JaVaScRiPt:x) ![c](data:text/html,x) [d](https://ok.example/x) [e](/tickets/1) [f](#e-1)");
        assert!(!out.to_ascii_lowercase().contains("javascript:"), "{out}");
        assert!(!out.contains("data:"), "{out}");
        assert!(out.contains("href=\"https://ok.example/x\""), "{out}");
        assert!(out.contains("href=\"/tickets/1\""), "{out}");
        assert!(out.contains("href=\"#e-1\""), "{out}");
    }

    #[test]
    fn bidi_controls_are_isolated_and_escaped() {
        let out = render("see \u{202E}<b>evil</b>\u{202C} and `a\u{2066}b`\n\nplain\n");
        // Raw HTML between the controls is its own run: text, outside the isolates.
        assert!(
            out.contains("<bdi>see \u{202E}</bdi>&lt;b&gt;evil&lt;/b&gt;<bdi>\u{202C} and </bdi>"),
            "{out}"
        );
        assert!(out.contains("<bdi><code>a\u{2066}b</code></bdi>"), "{out}");
        assert!(out.contains("<p>plain</p>"), "{out}");
    }

    #[test]
    fn markdown_still_renders() {
        let out = render("## Intent\n\n- **bold** item\n\n| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert!(out.contains("<h3>Intent</h3>"), "{out}");
        assert!(out.contains("<strong>bold</strong>"), "{out}");
        assert!(out.contains("<table>"), "{out}");
    }
}
