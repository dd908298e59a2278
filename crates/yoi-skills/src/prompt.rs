//! Rendering skills into an agent prompt.
//!
//! [`render_available_skills`] is progressive disclosure level 1: one `<skill>` element with
//! name, description and location per valid skill, in catalog (name) order. Invalid skills are
//! left out because they cannot be activated, and with no valid skill the result is empty (no
//! empty block). [`render_activation`] wraps an activated body for the prompt. Names,
//! descriptions, locations, notes and file names are XML-escaped; the body is kept verbatim.

use crate::activate::Activation;
use crate::catalog::Catalog;

/// The `<available_skills>` block, or `""` when no skill is valid.
pub fn render_available_skills(catalog: &Catalog) -> String {
    let mut out = String::new();
    for skill in catalog.valid_skills().filter(|s| s.for_agents()) {
        if out.is_empty() {
            out.push_str("<available_skills>\n");
        }
        out.push_str("<skill>\n");
        element(&mut out, "name", &skill.name);
        element(
            &mut out,
            "description",
            skill.description.as_deref().unwrap_or(""),
        );
        element(&mut out, "location", &skill.location);
        out.push_str("</skill>\n");
    }
    if !out.is_empty() {
        out.push_str("</available_skills>\n");
    }
    out
}

/// An activated skill as `<skill_content>`: the body, where it lives, and its bundled files.
pub fn render_activation(activation: &Activation) -> String {
    let mut out = format!(
        "<skill_content name=\"{}\" location=\"{}\">\n",
        escape(&activation.name),
        escape(&activation.location)
    );
    // The body is Markdown meant to be read verbatim (`<target>` placeholders and all); only a
    // closing tag that would end the wrapper early is neutralised.
    out.push_str(
        &activation
            .body
            .replace("</skill_content", "&lt;/skill_content"),
    );
    out.push_str("\n\nRelative paths in this skill resolve against its folder; read them through yoi's skill resources.\n");
    for note in &activation.notes {
        out.push_str(&format!("Note: {}\n", escape(note)));
    }
    if !activation.files.files.is_empty() {
        out.push_str("<skill_resources>\n");
        for file in &activation.files.files {
            element(&mut out, "file", file);
        }
        out.push_str("</skill_resources>\n");
    }
    out.push_str("</skill_content>\n");
    out
}

fn element(out: &mut String, tag: &str, text: &str) {
    out.push('<');
    out.push_str(tag);
    out.push('>');
    out.push_str(&escape(text));
    out.push_str("</");
    out.push_str(tag);
    out.push_str(">\n");
}

/// Escapes the five XML special characters.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}
