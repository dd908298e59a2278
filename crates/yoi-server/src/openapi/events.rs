//! The live event stream's events in the document: `LiveEvent` becomes a `oneOf` of one closed
//! object per outbox kind (`LiveTicketCreated`, `LiveTicketQueued`, …, `LivePlanRecordAdded`),
//! discriminated by `kind`, each the generated `LiveEvent` with its `kind` fixed and its
//! `payload` the type the outbox writes for that kind (`yoi_db::OutboxKind::payload_schema`:
//! `EventPayload` or `PlanPayload`). Everything comes from the Rust types: the event's fields
//! from `routes::events::LiveEvent`, the kinds from `OutboxKind::ALL`, the payloads from the
//! structs the outbox serialises.

use serde_json::{json, Map, Value};
use yoi_db::OutboxKind;

/// The schema name of the live event of `kind`: `Live` and the kind in PascalCase.
pub fn schema_name(kind: OutboxKind) -> String {
    let pascal: String = kind
        .as_str()
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    format!("Live{pascal}")
}

/// Split the generated `LiveEvent` into one schema per kind.
pub(super) fn apply(doc: &mut Value) {
    let schemas = &mut doc["components"]["schemas"];
    let event = schemas["LiveEvent"].clone();
    let mut choices = Vec::new();
    let mut mapping = Map::new();
    for kind in OutboxKind::ALL {
        let name = schema_name(kind);
        let mut one = event.clone();
        one["description"] = json!(format!(
            "A `{}` event: its `data:` and, as `event:`, its kind.",
            kind.as_str()
        ));
        one["properties"]["kind"] = json!({ "type": "string", "const": kind.as_str() });
        one["properties"]["payload"] =
            json!({ "$ref": format!("#/components/schemas/{}", kind.payload_schema()) });
        one["additionalProperties"] = Value::Bool(false);
        schemas[&name] = one;
        let reference = format!("#/components/schemas/{name}");
        choices.push(json!({ "$ref": reference }));
        mapping.insert(kind.as_str().to_string(), json!(reference));
    }
    schemas["LiveEvent"] = json!({
        "description": event["description"],
        "oneOf": choices,
        "discriminator": { "propertyName": "kind", "mapping": mapping },
    });
}
