//! GitHub's official OpenAPI description (npm `@octokit/openapi`,
//! `generated/api.github.com.deref.json`), found through `YOI_GITHUB_OPENAPI`, and a validator
//! for the parts of OpenAPI 3.0 schemas it uses: types (with `nullable`), enums, required and
//! additional properties, items, allOf/anyOf/oneOf, lengths, bounds and the common formats.
//! Without the file a test fails, naming the install command: it never skips.
//!
//! [`Description::instance`] builds the smallest value a schema accepts (every required
//! property, nothing else), which the fake overlays with its state, so every answer it gives
//! has each field GitHub promises.

use std::sync::OnceLock;

use serde_json::{Map, Value};

/// The environment variable naming the description file.
pub const ENV: &str = "YOI_GITHUB_OPENAPI";

pub struct Description {
    doc: Value,
}

/// One operation of the description, as a request matched it.
pub struct Operation<'a> {
    pub template: &'a str,
    pub op: &'a Value,
    /// Path parameters by name, as sent.
    pub params: Vec<(String, String)>,
}

static DESCRIPTION: OnceLock<Description> = OnceLock::new();

/// The description, loaded once per test process.
pub fn description() -> &'static Description {
    DESCRIPTION.get_or_init(|| {
        let path = std::env::var(ENV).unwrap_or_else(|_| {
            panic!(
                "{ENV} is not set: it must name GitHub's OpenAPI description. Install it with \
                 `npm install --prefix target/octokit @octokit/openapi@23.0.2` and set \
                 {ENV}=$PWD/target/octokit/node_modules/@octokit/openapi/generated/api.github.com.deref.json \
                 (.ci/run does both)"
            )
        });
        let text = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{ENV}={path} cannot be read: {e}"));
        let doc: Value = serde_json::from_slice(&text)
            .unwrap_or_else(|e| panic!("{ENV}={path} is not JSON: {e}"));
        assert!(
            doc["paths"].is_object() && doc["openapi"].is_string(),
            "{ENV}={path} is not an OpenAPI description"
        );
        Description { doc }
    })
}

impl Description {
    /// The operation `method path` names, matching literal segments first; a parameter marked
    /// `x-multi-segment` (a branch or ref) may span several segments.
    pub fn operation(&self, method: &str, path: &str) -> Option<Operation<'_>> {
        let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let mut best: Option<(usize, Operation<'_>)> = None;
        for (template, item) in self.doc["paths"].as_object()? {
            let Some(op) = item.get(method.to_ascii_lowercase()) else {
                continue;
            };
            let tsegs: Vec<&str> = template.trim_start_matches('/').split('/').collect();
            if let Some((literal, params)) = match_segments(&tsegs, &segs, op) {
                if best.as_ref().is_none_or(|(l, _)| literal > *l) {
                    best = Some((
                        literal,
                        Operation {
                            template,
                            op,
                            params,
                        },
                    ));
                }
            }
        }
        best.map(|(_, o)| o)
    }

    /// The smallest value `schema` accepts.
    pub fn instance(&self, schema: &Value) -> Value {
        instance(schema, 0)
    }
}

fn is_multi(op: &Value, name: &str) -> bool {
    op["parameters"].as_array().into_iter().flatten().any(|p| {
        p["name"] == name && p["in"] == "path" && p["x-multi-segment"].as_bool() == Some(true)
    })
}

fn match_segments(t: &[&str], s: &[&str], op: &Value) -> Option<(usize, Vec<(String, String)>)> {
    let mut literal = 0;
    let mut params = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < t.len() {
        let ts = t[i];
        if let Some(name) = ts.strip_prefix('{').and_then(|x| x.strip_suffix('}')) {
            // A multi-segment parameter takes what the rest of the template leaves.
            let rest = t.len() - i - 1;
            let take = if is_multi(op, name) {
                s.len().checked_sub(j + rest)?
            } else {
                1
            };
            if take == 0 || j + take > s.len() {
                return None;
            }
            let value = s[j..j + take].join("/");
            if value.is_empty() {
                return None;
            }
            params.push((name.to_string(), value));
            j += take;
        } else {
            if s.get(j) != Some(&ts) {
                return None;
            }
            literal += 1;
            j += 1;
        }
        i += 1;
    }
    (j == s.len()).then_some((literal, params))
}

/// Check `value` against `schema`; every problem is pushed with its JSON pointer.
pub fn validate(schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    if schema.as_object().is_none_or(|o| o.is_empty()) {
        return;
    }
    if value.is_null() && schema["nullable"].as_bool() == Some(true) {
        return;
    }
    for key in ["allOf"] {
        for s in schema[key].as_array().into_iter().flatten() {
            validate(s, value, at, out);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema[key].as_array() {
            // GitHub's oneOf alternatives overlap (a bare object fits several), so one match
            // is what is asked of either.
            let fits = options.iter().any(|s| {
                let mut e = Vec::new();
                validate(s, value, at, &mut e);
                e.is_empty()
            });
            if !fits {
                let mut first = Vec::new();
                if let Some(s) = options.first() {
                    validate(s, value, at, &mut first);
                }
                out.push(format!(
                    "{at}: fits none of the {key} alternatives (the first says: {})",
                    first.join("; ")
                ));
            }
        }
    }
    if let Some(options) = schema["enum"].as_array() {
        if !(options.contains(value) || value.is_null() && options.iter().any(Value::is_null)) {
            out.push(format!(
                "{at}: {value} is not one of {}",
                Value::Array(options.clone())
            ));
        }
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    if !types.is_empty() && !types.iter().any(|t| type_fits(t, value)) {
        out.push(format!(
            "{at}: {} is not of type {}",
            short(value),
            types.join("|")
        ));
        return;
    }
    match value {
        Value::Object(map) => {
            for r in schema["required"].as_array().into_iter().flatten() {
                if let Some(name) = r.as_str() {
                    if !map.contains_key(name) {
                        out.push(format!("{at}: required property `{name}` is missing"));
                    }
                }
            }
            let props = schema["properties"].as_object();
            for (k, v) in map {
                let child = format!("{at}/{k}");
                match props.and_then(|p| p.get(k)) {
                    Some(s) => validate(s, v, &child, out),
                    None => match &schema["additionalProperties"] {
                        Value::Bool(false) => {
                            out.push(format!("{at}: property `{k}` is not allowed"))
                        }
                        s @ Value::Object(_) => validate(s, v, &child, out),
                        _ => {}
                    },
                }
            }
        }
        Value::Array(items) => {
            if let Some(min) = schema["minItems"].as_u64() {
                if (items.len() as u64) < min {
                    out.push(format!("{at}: fewer than {min} items"));
                }
            }
            if let Some(max) = schema["maxItems"].as_u64() {
                if (items.len() as u64) > max {
                    out.push(format!("{at}: more than {max} items"));
                }
            }
            for (i, v) in items.iter().enumerate() {
                validate(&schema["items"], v, &format!("{at}/{i}"), out);
            }
        }
        Value::String(s) => {
            let n = s.chars().count() as u64;
            if schema["minLength"].as_u64().is_some_and(|m| n < m) {
                out.push(format!("{at}: shorter than {}", schema["minLength"]));
            }
            if schema["maxLength"].as_u64().is_some_and(|m| n > m) {
                out.push(format!("{at}: longer than {}", schema["maxLength"]));
            }
            match schema["format"].as_str() {
                Some("date-time") if !is_date_time(s) => {
                    out.push(format!("{at}: `{s}` is not an RFC 3339 date-time"))
                }
                Some("uri") if !s.contains(':') => out.push(format!("{at}: `{s}` is not a URI")),
                _ => {}
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or_default();
            if schema["minimum"].as_f64().is_some_and(|m| x < m) {
                out.push(format!("{at}: below the minimum {}", schema["minimum"]));
            }
            if schema["maximum"].as_f64().is_some_and(|m| x > m) {
                out.push(format!("{at}: above the maximum {}", schema["maximum"]));
            }
        }
        _ => {}
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

fn type_fits(t: &str, v: &Value) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => true,
    }
}

fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && (b[10] == b'T' || b[10] == b't')
        && b[13] == b':'
        && b[16] == b':'
        && (s.ends_with('Z') || s.ends_with('z') || s[19..].contains(['+', '-']))
}

fn instance(schema: &Value, depth: usize) -> Value {
    if depth > 40 {
        return Value::Null;
    }
    if let Some(all) = schema["allOf"].as_array() {
        let mut merged = Value::Object(Map::new());
        for s in all {
            overlay(&mut merged, instance(s, depth + 1));
        }
        return merged;
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(first) = schema[key].as_array().and_then(|a| a.first()) {
            return instance(first, depth + 1);
        }
    }
    if schema["nullable"].as_bool() == Some(true) {
        return Value::Null;
    }
    if let Some(first) = schema["enum"].as_array().and_then(|a| a.first()) {
        return first.clone();
    }
    let t = match &schema["type"] {
        Value::String(t) => t.as_str(),
        Value::Array(ts) => {
            if ts.iter().any(|t| t == "null") {
                return Value::Null;
            }
            ts.first().and_then(Value::as_str).unwrap_or("object")
        }
        _ if schema["properties"].is_object() => "object",
        _ => return Value::Null,
    };
    match t {
        "string" => Value::String(match schema["format"].as_str() {
            Some("date-time") => "2026-12-01T00:00:00Z".into(),
            Some("uri") => "https://github.example/x".into(),
            Some("email") => "x@example.com".into(),
            Some("date") => "2026-12-01".into(),
            _ => {
                let min = schema["minLength"].as_u64().unwrap_or(1) as usize;
                "x".repeat(min.max(1))
            }
        }),
        "integer" | "number" => Value::from(schema["minimum"].as_i64().unwrap_or(1).max(1)),
        "boolean" => Value::Bool(false),
        "array" => Value::Array(Vec::new()),
        _ => {
            let mut map = Map::new();
            for r in schema["required"].as_array().into_iter().flatten() {
                if let Some(name) = r.as_str() {
                    map.insert(
                        name.into(),
                        instance(&schema["properties"][name], depth + 1),
                    );
                }
            }
            Value::Object(map)
        }
    }
}

/// Write `top`'s fields over `base`, recursively for objects.
pub fn overlay(base: &mut Value, top: Value) {
    match (base, top) {
        (Value::Object(b), Value::Object(t)) => {
            for (k, v) in t {
                match b.get_mut(&k) {
                    Some(slot) if slot.is_object() && v.is_object() => overlay(slot, v),
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, t) => *b = t,
    }
}

impl Description {
    /// An answer for `schema` carrying `top`'s values: every object gets the fields its schema
    /// requires (from [`Description::instance`]) under the values given, recursively.
    pub fn answer(&self, schema: &Value, top: Value) -> Value {
        build(schema, top, 0)
    }
}

/// The object alternative of a schema (through allOf/oneOf/anyOf), for building an object.
fn object_schema(schema: &Value) -> Value {
    if let Some(all) = schema["allOf"].as_array() {
        let mut props = Map::new();
        let mut required = Vec::new();
        for s in all {
            let o = object_schema(s);
            if let Some(p) = o["properties"].as_object() {
                props.extend(p.clone());
            }
            required.extend(o["required"].as_array().cloned().unwrap_or_default());
        }
        return serde_json::json!({"type": "object", "properties": props, "required": required});
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = schema[key].as_array() {
            if let Some(o) = options
                .iter()
                .find(|o| o["type"] == "object" || o["properties"].is_object())
            {
                return object_schema(o);
            }
        }
    }
    schema.clone()
}

fn build(schema: &Value, top: Value, depth: usize) -> Value {
    match top {
        Value::Object(map) if depth < 40 => {
            let s = object_schema(schema);
            let mut base = Map::new();
            for r in s["required"].as_array().into_iter().flatten() {
                if let Some(name) = r.as_str() {
                    base.insert(name.into(), instance(&s["properties"][name], depth + 1));
                }
            }
            for (k, v) in map {
                let child = &s["properties"][&k];
                base.insert(k, build(child, v, depth + 1));
            }
            Value::Object(base)
        }
        Value::Array(items) => {
            let item = &schema["items"];
            Value::Array(
                items
                    .into_iter()
                    .map(|v| build(item, v, depth + 1))
                    .collect(),
            )
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_validator_refuses_what_a_schema_does_not_allow() {
        let schema = json!({
            "type": "object",
            "required": ["n", "s"],
            "properties": {
                "n": {"type": "integer", "minimum": 1},
                "s": {"type": "string", "enum": ["open", "closed"]},
                "t": {"type": "string", "nullable": true, "format": "date-time"}
            },
            "additionalProperties": false
        });
        let mut e = Vec::new();
        validate(
            &schema,
            &json!({"n": 1, "s": "open", "t": null}),
            "",
            &mut e,
        );
        assert!(e.is_empty(), "{e:?}");
        validate(
            &schema,
            &json!({"n": 0, "s": "merged", "t": "yesterday", "x": 1}),
            "",
            &mut e,
        );
        assert_eq!(e.len(), 4, "{e:?}");
        e.clear();
        validate(&schema, &json!({"s": "open"}), "", &mut e);
        assert_eq!(e, vec![": required property `n` is missing"]);
        let mut i = instance(&schema, 0);
        e.clear();
        validate(&schema, &i, "", &mut e);
        assert!(e.is_empty(), "{e:?}");
        overlay(&mut i, json!({"n": 7}));
        assert_eq!(i["n"], 7);
    }
}
