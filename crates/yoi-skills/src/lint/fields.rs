//! The frontmatter field rules: name, description, license, compatibility, metadata,
//! allowed-tools, and unknown keys.

use serde_yaml_ng::Value;

use super::{
    key_line, name::check_name, SkillMeta, COMPATIBILITY_MAX_CHARS, DESCRIPTION_MAX_CHARS,
};
use crate::diagnostic::{rules, Diagnostic};
use crate::parse::SkillFile;

/// The six top-level fields the Agent Skills specification defines.
pub const KNOWN_FIELDS: [&str; 6] = [
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];

pub(super) fn check_fields(
    file: &SkillFile,
    dir_name: &str,
    out: &mut Vec<Diagnostic>,
) -> SkillMeta {
    let text = &file.frontmatter_text;
    let field = |key: &str| file.frontmatter.get(key);
    let at = |key: &str| key_line(text, key);
    let mut meta = SkillMeta::default();

    match field("name") {
        None | Some(Value::Null) => out.push(Diagnostic::error(
            rules::NAME_REQUIRED,
            "the required field `name` is missing or has no value",
            at("name").or(Some(2)),
        )),
        Some(Value::String(name)) => {
            let line = at("name");
            out.extend(check_name(name, Some(dir_name)).into_iter().map(|mut d| {
                d.line = line;
                d
            }));
            meta.name = Some(name.clone());
        }
        Some(other) => out.push(Diagnostic::error(
            rules::NAME_TYPE,
            format!("`name` must be a string, found {}", kind(other)),
            at("name"),
        )),
    }

    match field("description") {
        None | Some(Value::Null) => out.push(Diagnostic::error(
            rules::DESC_REQUIRED,
            "the required field `description` is missing or has no value; say what the skill \
             does and when to use it",
            at("description").or(Some(2)),
        )),
        Some(Value::String(description)) => {
            let line = at("description");
            let chars = description.chars().count();
            if description.trim().is_empty() {
                out.push(Diagnostic::error(
                    rules::DESC_EMPTY,
                    "`description` is empty or only whitespace",
                    line,
                ));
            } else if chars > DESCRIPTION_MAX_CHARS {
                out.push(Diagnostic::error(
                    rules::DESC_LENGTH,
                    format!(
                        "`description` has {chars} characters; at most \
                         {DESCRIPTION_MAX_CHARS} are allowed"
                    ),
                    line,
                ));
            }
            meta.description = Some(description.clone());
        }
        Some(other) => out.push(Diagnostic::error(
            rules::DESC_TYPE,
            format!("`description` must be a string, found {}", kind(other)),
            at("description"),
        )),
    }

    match field("license") {
        None => {}
        Some(Value::String(license)) => meta.license = Some(license.clone()),
        Some(other) => out.push(Diagnostic::error(
            rules::LICENSE_TYPE,
            format!("`license` must be a string, found {}", kind(other)),
            at("license"),
        )),
    }

    match field("compatibility") {
        None => {}
        Some(Value::String(compat)) => {
            let chars = compat.chars().count();
            if chars == 0 || chars > COMPATIBILITY_MAX_CHARS {
                out.push(Diagnostic::error(
                    rules::COMPAT_LENGTH,
                    format!(
                        "`compatibility` has {chars} characters; it needs 1 to \
                         {COMPATIBILITY_MAX_CHARS}"
                    ),
                    at("compatibility"),
                ));
            }
            meta.compatibility = Some(compat.clone());
        }
        Some(other) => out.push(Diagnostic::error(
            rules::COMPAT_TYPE,
            format!("`compatibility` must be a string, found {}", kind(other)),
            at("compatibility"),
        )),
    }

    match field("metadata") {
        None => {}
        Some(Value::Mapping(map)) => {
            let line = at("metadata");
            for (key, value) in map {
                match (key, value) {
                    (Value::String(k), Value::String(v)) => {
                        meta.metadata.insert(k.clone(), v.clone());
                    }
                    (Value::String(k), other) => out.push(Diagnostic::error(
                        rules::METADATA_VALUE,
                        format!(
                            "`metadata.{k}` must be a string, found {}; quote it, e.g. \
                             `{k}: \"1.0\"`",
                            kind(other)
                        ),
                        line,
                    )),
                    (other, _) => out.push(Diagnostic::error(
                        rules::METADATA_VALUE,
                        format!("`metadata` keys must be strings, found {}", kind(other)),
                        line,
                    )),
                }
            }
        }
        Some(other) => out.push(Diagnostic::error(
            rules::METADATA_TYPE,
            format!(
                "`metadata` must be a mapping of string keys to string values, found {}",
                kind(other)
            ),
            at("metadata"),
        )),
    }

    match field("allowed-tools") {
        None => {}
        Some(Value::String(tools)) => meta.allowed_tools = Some(tools.clone()),
        Some(other) => out.push(Diagnostic::error(
            rules::TOOLS_TYPE,
            format!(
                "`allowed-tools` must be one space-separated string such as \
                 `Bash(git:*) Read`, found {}",
                kind(other)
            ),
            at("allowed-tools"),
        )),
    }

    for key in file.frontmatter.keys() {
        match key {
            Value::String(k) if KNOWN_FIELDS.contains(&k.as_str()) => {}
            Value::String(k) => out.push(Diagnostic::warning(
                rules::FM_UNKNOWN,
                format!(
                    "unknown frontmatter field `{k}` is ignored; the specification defines \
                     {}; put client-specific data under `metadata`",
                    KNOWN_FIELDS.join(", ")
                ),
                at(k),
            )),
            other => out.push(Diagnostic::warning(
                rules::FM_UNKNOWN,
                format!("frontmatter key that is {} is ignored", kind(other)),
                None,
            )),
        }
    }
    meta
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "no value",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}
