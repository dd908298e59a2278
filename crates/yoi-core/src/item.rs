//! `item.md`: YAML frontmatter plus a Markdown body, the current state of one ticket.
//!
//! Parsing keeps everything: keys this version does not know, and the older keys
//! (`repository_id`, `ref_selector`, `assignee`, `workflow_state`, `status`, …), survive a
//! rewrite in their original order after the known keys. Older keys are also *mapped*:
//! `ref_selector` supplies the target ref and `workflow_state`/`status` supply the state when the
//! newer key is absent. The body is kept byte for byte.

use serde_yaml_ng::{Mapping, Value};
use thiserror::Error;

mod flat;

use crate::state::State;
use crate::thread::Event;
use crate::time::Timestamp;

/// Keys written by this version, in the order they are rendered.
pub const KNOWN_KEYS: [&str; 11] = [
    "title",
    "state",
    "created_at",
    "updated_at",
    "readiness",
    "risk_flags",
    "queued_by",
    "queued_at",
    "target_ref",
    "flow",
    "priority",
];

/// Keys of the older format: read, mapped where there is a modern equivalent, and preserved.
pub const LEGACY_KEYS: [&str; 11] = [
    "repository_id",
    "ref_selector",
    "assignee",
    "workflow_state",
    "status",
    "id",
    "slug",
    "kind",
    "labels",
    "action_required",
    "attention_required",
];

#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub title: String,
    pub state: State,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub readiness: Option<String>,
    pub risk_flags: Option<Vec<String>>,
    pub queued_by: Option<String>,
    pub queued_at: Option<Timestamp>,
    pub target_ref: Option<String>,
    pub flow: Option<String>,
    pub priority: Option<String>,
    /// Legacy and unknown keys in their original order.
    pub extra: Vec<(String, Value)>,
    /// Everything after the closing `---` line, verbatim.
    pub body: String,
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error("{}{reason}", line.map(|l| format!("line {l}: ")).unwrap_or_default())]
pub struct ItemError {
    /// 1-based line in the file, when known.
    pub line: Option<usize>,
    pub reason: String,
}

fn err(line: Option<usize>, reason: impl Into<String>) -> ItemError {
    ItemError {
        line,
        reason: reason.into(),
    }
}

impl Item {
    pub fn new(title: String, now: Timestamp, body: String) -> Self {
        Item {
            title,
            state: State::Planning,
            created_at: now,
            updated_at: now,
            readiness: None,
            risk_flags: None,
            queued_by: None,
            queued_at: None,
            target_ref: None,
            flow: None,
            priority: None,
            extra: Vec::new(),
            body,
        }
    }

    /// The branch work merges into: `target_ref`, else the legacy `ref_selector`.
    pub fn effective_target_ref(&self) -> Option<String> {
        self.target_ref
            .clone()
            .or_else(|| self.extra_str("ref_selector"))
    }

    pub fn extra_value(&self, key: &str) -> Option<&Value> {
        self.extra.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn extra_str(&self, key: &str) -> Option<String> {
        match self.extra_value(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            _ => None,
        }
    }

    /// When the ticket last changed: `updated_at`, or the latest time among `events` (its
    /// thread) if that is later. An operation that only appends to the thread (a comment, a
    /// retry or attention signal) leaves item.md as it is, so `updated_at` there is the last
    /// change of the item's own fields and the thread says the rest (docs/formats.md).
    pub fn last_changed<'a>(&self, events: impl IntoIterator<Item = &'a Event>) -> Timestamp {
        events
            .into_iter()
            .filter_map(Event::at)
            .fold(self.updated_at, Timestamp::max)
    }

    /// Keys present that belong to the older format.
    pub fn legacy_keys(&self) -> Vec<&str> {
        self.extra
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| LEGACY_KEYS.contains(k))
            .collect()
    }

    /// Keys present that neither this version nor the older format defines.
    pub fn unknown_keys(&self) -> Vec<&str> {
        self.extra
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !LEGACY_KEYS.contains(k))
            .collect()
    }

    /// The Markdown body without the blank lines the file layout adds around it.
    pub fn body_text(&self) -> &str {
        self.body.trim_matches(|c| c == '\n' || c == '\r')
    }

    /// Store a body given by a person: one blank line after the frontmatter, one final newline.
    pub fn set_body_text(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n");
        let text = text.trim_matches('\n');
        self.body = if text.is_empty() {
            String::new()
        } else {
            format!("\n{text}\n")
        };
    }

    pub fn parse(text: &str) -> Result<Item, ItemError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text.split_inclusive('\n');
        let first = lines.next().unwrap_or("");
        if first.trim_end_matches(['\n', '\r']) != "---" {
            return Err(err(
                Some(1),
                "item.md must start with a `---` line that opens the YAML frontmatter",
            ));
        }
        let mut offset = first.len();
        let mut yaml_end = None;
        let mut line_no = 1;
        for line in lines {
            line_no += 1;
            if line.trim_end_matches(['\n', '\r']) == "---" {
                yaml_end = Some((offset, offset + line.len()));
                break;
            }
            offset += line.len();
        }
        let (yaml_end, body_start) = yaml_end.ok_or_else(|| {
            err(
                Some(line_no),
                "the frontmatter is never closed: add a `---` line after the last key",
            )
        })?;
        let yaml = &text[first.len()..yaml_end];
        let body = text[body_start..].to_string();
        let mapping: Mapping = if yaml.trim().is_empty() {
            Mapping::new()
        } else {
            if let Err(refused) = crate::yaml::check(yaml) {
                let line = match refused {
                    crate::yaml::Refused::Brackets { line } => Some(line + 1),
                    crate::yaml::Refused::Expansion { .. } => None,
                };
                return Err(err(line, format!("the frontmatter has {refused}")));
            }
            if let Some(mapping) = flat::mapping(yaml) {
                return Self::from_mapping(mapping, body, yaml);
            }
            // The frontmatter starts on the file's second line; one leading blank line makes
            // the parser's line numbers (in the location and in its message) the file's own.
            let value: Value = serde_yaml_ng::from_str(&format!("\n{yaml}")).map_err(|e| {
                err(
                    e.location().map(|l| l.line()),
                    format!("invalid YAML frontmatter: {e}"),
                )
            })?;
            match value {
                Value::Mapping(m) => m,
                Value::Null => Mapping::new(),
                _ => {
                    return Err(err(
                        Some(2),
                        "the frontmatter must be a mapping of keys to values",
                    ))
                }
            }
        };
        Self::from_mapping(mapping, body, yaml)
    }

    fn from_mapping(mapping: Mapping, body: String, yaml: &str) -> Result<Item, ItemError> {
        let line_of = |key: &str| -> Option<usize> {
            yaml.lines()
                .position(|l| l.starts_with(key) && l[key.len()..].trim_start().starts_with(':'))
                .map(|i| i + 2)
        };
        let mut title = None;
        let mut state = None;
        let mut created_at = None;
        let mut updated_at = None;
        let mut item = Item::new(String::new(), Timestamp::from_unix_millis(0), body);
        for (key, value) in mapping {
            let key = match key {
                Value::String(s) => s,
                other => {
                    return Err(err(
                        None,
                        format!(
                            "frontmatter keys must be strings, found {}",
                            describe(&other)
                        ),
                    ))
                }
            };
            // Only an error names the line, so it is looked up only then.
            let line = || line_of(&key);
            let string = |v: &Value| -> Result<Option<String>, ItemError> {
                scalar_string(v).map_err(|found| {
                    err(line(), format!("`{key}` must be a string, found {found}"))
                })
            };
            let timestamp = |v: &Value| -> Result<Option<Timestamp>, ItemError> {
                match string(v)? {
                    None => Ok(None),
                    Some(s) => Timestamp::parse(&s)
                        .map(Some)
                        .map_err(|e| err(line(), format!("`{key}`: {e}"))),
                }
            };
            match key.as_str() {
                "title" => title = string(&value)?,
                "state" => {
                    if let Some(s) = string(&value)? {
                        state = Some(
                            s.parse::<State>()
                                .map_err(|e| err(line(), format!("`state`: {e}")))?,
                        );
                    }
                }
                "created_at" => created_at = timestamp(&value)?,
                "updated_at" => updated_at = timestamp(&value)?,
                "readiness" => item.readiness = string(&value)?,
                "risk_flags" => item.risk_flags = string_list(&value, line)?,
                "queued_by" => item.queued_by = string(&value)?,
                "queued_at" => item.queued_at = timestamp(&value)?,
                "target_ref" => item.target_ref = string(&value)?,
                "flow" => item.flow = string(&value)?,
                "priority" => item.priority = string(&value)?,
                _ => item.extra.push((key, value)),
            }
        }
        item.title = title
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| err(None, "the required key `title` is missing or empty"))?;
        item.state = match state {
            Some(s) => s,
            None => item
                .legacy_state()
                .ok_or_else(|| err(None, "the required key `state` is missing"))?,
        };
        item.created_at =
            created_at.ok_or_else(|| err(None, "the required key `created_at` is missing"))?;
        item.updated_at =
            updated_at.ok_or_else(|| err(None, "the required key `updated_at` is missing"))?;
        Ok(item)
    }

    /// State from the older keys: `workflow_state`, then `status: closed`.
    fn legacy_state(&self) -> Option<State> {
        if let Some(s) = self.extra_str("workflow_state") {
            return s.parse().ok();
        }
        match self.extra_str("status").as_deref() {
            Some("closed") => Some(State::Closed),
            Some(_) => Some(State::Planning),
            None => None,
        }
    }

    pub fn render(&self) -> String {
        let mut m = Mapping::new();
        let mut put = |k: &str, v: Value| {
            m.insert(Value::String(k.to_string()), v);
        };
        put("title", Value::String(self.title.clone()));
        put("state", Value::String(self.state.as_str().into()));
        put("created_at", Value::String(self.created_at.to_string()));
        put("updated_at", Value::String(self.updated_at.to_string()));
        let opt = |v: &Option<String>| v.clone().map(Value::String);
        let fields = [
            ("readiness", opt(&self.readiness)),
            (
                "risk_flags",
                self.risk_flags
                    .as_ref()
                    .map(|f| Value::Sequence(f.iter().cloned().map(Value::String).collect())),
            ),
            ("queued_by", opt(&self.queued_by)),
            (
                "queued_at",
                self.queued_at.map(|t| Value::String(t.to_string())),
            ),
            ("target_ref", opt(&self.target_ref)),
            ("flow", opt(&self.flow)),
            ("priority", opt(&self.priority)),
        ];
        for (k, v) in fields {
            if let Some(v) = v {
                put(k, v);
            }
        }
        for (k, v) in &self.extra {
            put(k, v.clone());
        }
        let yaml = serde_yaml_ng::to_string(&m).expect("a mapping of plain values serializes");
        format!("---\n{yaml}---\n{}", self.body)
    }
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// Strings, and numbers or booleans read as their text (a title such as `2026` is a string to
/// a person). `null` means absent.
fn scalar_string(v: &Value) -> Result<Option<String>, &'static str> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Bool(b) => Ok(Some(b.to_string())),
        other => Err(describe(other)),
    }
}

fn string_list(
    v: &Value,
    line: impl Fn() -> Option<usize>,
) -> Result<Option<Vec<String>>, ItemError> {
    match v {
        Value::Null => Ok(None),
        Value::Sequence(items) => items
            .iter()
            .map(|i| match scalar_string(i) {
                Ok(Some(s)) => Ok(s),
                Ok(None) => Err(err(line(), "`risk_flags` entries must not be null")),
                Err(found) => Err(err(
                    line(),
                    format!("`risk_flags` entries must be strings, found {found}"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        other => Err(err(
            line(),
            format!(
                "`risk_flags` must be a list of strings, found {}",
                describe(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEGACY: &str = "---\ntitle: 'worker-runtime: add FS persistence feature'\nstate: 'queued'\ncreated_at: '2026-06-25T14:44:02Z'\nupdated_at: '2026-06-25T16:39:26Z'\nassignee: null\nreadiness: 'implementation_ready'\nrisk_flags: ['persistence', 'feature-gating']\nrepository_id: 'main'\nref_selector: 'develop'\nqueued_by: 'workspace-panel'\nqueued_at: '2026-06-25T16:39:26Z'\n---\n\n## Background\n...\n";

    #[test]
    fn legacy_item_keeps_and_maps_older_keys() {
        let item = Item::parse(LEGACY).unwrap();
        assert_eq!(item.state, State::Queued);
        assert_eq!(item.effective_target_ref().as_deref(), Some("develop"));
        assert_eq!(
            item.legacy_keys(),
            vec!["assignee", "repository_id", "ref_selector"]
        );
        let again = Item::parse(&item.render()).unwrap();
        assert_eq!(again, item);
        assert!(item.render().contains("repository_id: main"));
        assert!(item.render().contains("assignee: null"));
    }

    #[test]
    fn unknown_keys_survive_a_rewrite_in_order() {
        let text = "---\ntitle: T\nstate: ready\ncreated_at: 2026-01-01T00:00:00Z\nupdated_at: 2026-01-01T00:00:00Z\nzeta: {a: 1}\nalpha: [x]\n---\nbody\n";
        let mut item = Item::parse(text).unwrap();
        assert_eq!(item.unknown_keys(), vec!["zeta", "alpha"]);
        item.title = "T2".into();
        let rendered = item.render();
        let z = rendered.find("zeta").unwrap();
        let a = rendered.find("alpha").unwrap();
        assert!(z < a);
        assert_eq!(Item::parse(&rendered).unwrap().extra, item.extra);
    }

    #[test]
    fn workflow_state_supplies_a_missing_state() {
        let text = "---\ntitle: T\nworkflow_state: done\ncreated_at: 2026-01-01T00:00:00Z\nupdated_at: 2026-01-01T00:00:00Z\n---\n";
        assert_eq!(Item::parse(text).unwrap().state, State::Done);
        let text = "---\ntitle: T\nstatus: closed\ncreated_at: 2026-01-01T00:00:00Z\nupdated_at: 2026-01-01T00:00:00Z\n---\n";
        assert_eq!(Item::parse(text).unwrap().state, State::Closed);
    }

    #[test]
    fn errors_name_the_line_or_key() {
        let e = Item::parse("title: x\n").unwrap_err();
        assert_eq!(e.line, Some(1));
        let e = Item::parse("---\ntitle: x\n").unwrap_err();
        assert!(e.reason.contains("never closed"));
        let e = Item::parse("---\ntitle: T\nstate: waiting\ncreated_at: 2026-01-01T00:00:00Z\nupdated_at: 2026-01-01T00:00:00Z\n---\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.reason.contains("waiting"));
        let e = Item::parse("---\ntitle: T\nstate: ready\n---\n").unwrap_err();
        assert!(e.reason.contains("created_at"));
        let e = Item::parse("---\n- a\n- b\n---\n").unwrap_err();
        assert!(e.reason.contains("mapping"));
        let e = Item::parse("---\ntitle: [unclosed\n---\n").unwrap_err();
        assert!(e.reason.contains("invalid YAML"));
        let e = Item::parse("---\ntitle: a\ntitle: b\n---\n").unwrap_err();
        assert!(e.reason.contains("invalid YAML"), "{e}");
    }

    #[test]
    fn crlf_files_parse() {
        let text = "---\r\ntitle: T\r\nstate: ready\r\ncreated_at: 2026-01-01T00:00:00Z\r\nupdated_at: 2026-01-01T00:00:00Z\r\n---\r\nbody\r\n";
        let item = Item::parse(text).unwrap();
        assert_eq!(item.title, "T");
        assert_eq!(item.body, "body\r\n");
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        any::<String>().prop_filter("non-blank", |s| !s.trim().is_empty())
    }

    proptest! {
        #[test]
        fn render_parse_render_is_identity(
            title in text(),
            body in any::<String>(),
            readiness in proptest::option::of(text()),
            flags in proptest::option::of(proptest::collection::vec(any::<String>(), 0..3)),
            extra_val in any::<String>(),
            state in 0usize..6,
        ) {
            let now = Timestamp::parse("2026-11-29T10:00:00Z").unwrap();
            let mut item = Item::new(title, now, String::new());
            item.set_body_text(&body);
            item.state = State::ALL[state];
            item.readiness = readiness;
            item.risk_flags = flags;
            item.extra.push(("custom_key".into(), Value::String(extra_val)));
            let once = item.render();
            let parsed = Item::parse(&once).unwrap();
            prop_assert_eq!(&parsed, &item);
            prop_assert_eq!(parsed.render(), once);
        }
    }
}
