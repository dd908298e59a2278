//! The frontmatter field rules: name, description, license, compatibility, metadata,
//! allowed-tools, and unknown keys.
//!
//! A string field is read as text the way the reference validator reads it: a YAML string, or
//! the source text of a plain scalar YAML typed as a number or boolean (`name: 2024` is the
//! name `2024`, `version: 1.50` stays `1.50`; see [`super::source`]). Only lists, mappings,
//! empty values and tagged values are type errors.

use std::borrow::Cow;

use serde_yaml_ng::Value;

use super::{
    key_line, name::check_name, source, SkillMeta, COMPATIBILITY_MAX_CHARS, DESCRIPTION_MAX_CHARS,
};
use crate::diagnostic::{rules, Diagnostic};
use crate::parse::SkillFile;

/// The client key (Claude Code's) that keeps a skill out of agents' catalogs; yoi honours it.
pub const DISABLE_MODEL_INVOCATION: &str = "disable-model-invocation";

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
        Some(value) => match field_text(text, "name", value) {
            Ok(name) => {
                let line = at("name");
                out.extend(check_name(&name, Some(dir_name)).into_iter().map(|mut d| {
                    d.line = line;
                    d
                }));
                meta.name = Some(name.into_owned());
            }
            Err(found) => out.push(Diagnostic::error(
                rules::NAME_TYPE,
                format!("`name` must be a string, found {found}"),
                at("name"),
            )),
        },
    }

    match field("description") {
        None | Some(Value::Null) => out.push(Diagnostic::error(
            rules::DESC_REQUIRED,
            "the required field `description` is missing or has no value; say what the skill \
             does and when to use it",
            at("description").or(Some(2)),
        )),
        Some(value) => match field_text(text, "description", value) {
            Ok(description) => {
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
                meta.description = Some(description.into_owned());
            }
            Err(found) => out.push(Diagnostic::error(
                rules::DESC_TYPE,
                format!("`description` must be a string, found {found}"),
                at("description"),
            )),
        },
    }

    match field("license") {
        None => {}
        Some(value) => match field_text(text, "license", value) {
            Ok(license) => meta.license = Some(license.into_owned()),
            Err(found) => out.push(Diagnostic::error(
                rules::LICENSE_TYPE,
                format!("`license` must be a string, found {found}"),
                at("license"),
            )),
        },
    }

    match field("compatibility") {
        None => {}
        Some(value) => match field_text(text, "compatibility", value) {
            Ok(compat) => {
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
                meta.compatibility = Some(compat.into_owned());
            }
            Err(found) => out.push(Diagnostic::error(
                rules::COMPAT_TYPE,
                format!("`compatibility` must be a string, found {found}"),
                at("compatibility"),
            )),
        },
    }

    match field("metadata") {
        None => {}
        Some(Value::Mapping(map)) => {
            let parent_line = at("metadata");
            for (key, value) in map {
                let entry = source::nested(text, "metadata", key);
                let line = entry.as_ref().map(|e| e.line).or(parent_line);
                let key_text = match key {
                    Value::String(k) => Ok(k.clone()),
                    Value::Number(_) | Value::Bool(_) => entry
                        .as_ref()
                        .and_then(|e| e.key_text(key))
                        .ok_or(kind(key)),
                    other => Err(kind(other)),
                };
                let key_text = match key_text {
                    Ok(k) => k,
                    Err(found) => {
                        out.push(Diagnostic::error(
                            rules::METADATA_VALUE,
                            format!("`metadata` keys must be strings, found {found}"),
                            line,
                        ));
                        continue;
                    }
                };
                let value_text = match value {
                    Value::String(v) => Ok(v.clone()),
                    Value::Number(_) | Value::Bool(_) => entry
                        .as_ref()
                        .and_then(|e| e.value_text(value))
                        .ok_or(kind(value)),
                    other => Err(kind(other)),
                };
                match value_text {
                    Ok(v) => {
                        meta.metadata.insert(key_text, v);
                    }
                    Err(found) => out.push(Diagnostic::error(
                        rules::METADATA_VALUE,
                        format!(
                            "`metadata.{key_text}` must be a string, found {found}; write it \
                             as one line of text, e.g. `{key_text}: \"1.0\"`"
                        ),
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
        Some(value) => match field_text(text, "allowed-tools", value) {
            Ok(tools) => meta.allowed_tools = Some(tools.into_owned()),
            Err(found) => out.push(Diagnostic::error(
                rules::TOOLS_TYPE,
                format!(
                    "`allowed-tools` must be one space-separated string such as \
                     `Bash(git:*) Read`, found {found}"
                ),
                at("allowed-tools"),
            )),
        },
    }

    if let Some(Value::Bool(b)) = field(DISABLE_MODEL_INVOCATION) {
        meta.disable_model_invocation = *b;
    }

    for key in file.frontmatter.keys() {
        match key {
            Value::String(k) if KNOWN_FIELDS.contains(&k.as_str()) => {}
            // Not the specification's (skills-ref rejects it), but yoi honours it.
            Value::String(k) if k == DISABLE_MODEL_INVOCATION => out.push(Diagnostic::warning(
                rules::FM_UNKNOWN,
                format!(
                    "`{k}` is not in the specification (the reference validator rejects it); yoi \
                     honours it: with `true` the skill stays out of agents' catalogs and only \
                     people name it"
                ),
                at(k),
            )),
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

/// A top-level field as text: a YAML string as is, a number or boolean as its source text.
/// `Err` carries what was found instead, for the type error.
fn field_text<'v>(text: &str, key: &str, value: &'v Value) -> Result<Cow<'v, str>, &'static str> {
    match value {
        Value::String(s) => Ok(Cow::Borrowed(s)),
        Value::Number(_) | Value::Bool(_) => source::top_level(text, &Value::String(key.into()))
            .and_then(|entry| entry.value_text(value))
            .map(Cow::Owned)
            .ok_or(kind(value)),
        other => Err(kind(other)),
    }
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
