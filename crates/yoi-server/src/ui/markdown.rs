//! Markdown from tickets and threads as safe HTML.
//!
//! Agents write these files, so their text is untrusted. pulldown-cmark renders CommonMark;
//! before rendering, every raw HTML event becomes plain text (so `<script>` shows as text) and
//! every link or image address whose scheme is not `http`, `https` or `mailto` (a
//! `javascript:` or `data:` URL) is replaced by `#`. Everything else pulldown-cmark writes is
//! escaped by it. That is the whole sanitizer: no HTML passes through, so no allowlist of tags
//! and attributes is needed.

use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// Render `text` as sanitized HTML.
pub fn render(text: &str) -> String {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, opts).map(|e| match e {
        Event::Html(h) | Event::InlineHtml(h) => Event::Text(h),
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
    fn markdown_still_renders() {
        let out = render("## Intent\n\n- **bold** item\n\n| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert!(out.contains("<h3>Intent</h3>"), "{out}");
        assert!(out.contains("<strong>bold</strong>"), "{out}");
        assert!(out.contains("<table>"), "{out}");
    }
}
