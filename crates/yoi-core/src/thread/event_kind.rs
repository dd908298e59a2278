//! [`EventKind`]: the kinds of thread event, their names in a header line and their default
//! headings.
//!
//! Every kind this version writes is a variant, so a writer cannot misspell one. A kind it does
//! not know is neither refused nor dropped: it reads as [`EventKind::Other`] and is written back
//! as found, because a thread is history that older and newer versions of yoi share. A new kind
//! is a row in each of the three tables below (`as_str`, `default_heading`, `known`).

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum EventKind {
    Create,
    Comment,
    IntakeSummary,
    Decision,
    Plan,
    StateChanged,
    ImplementationReport,
    Verification,
    Review,
    Merge,
    Assignment,
    Attention,
    /// A person asked routing to try again (closes an open circuit).
    Retry,
    ItemEdit,
    RelationChanged,
    Close,
    /// A person added to a ticket's budget (`add_usd`, `add_tokens`).
    Budget,
    /// An agent asked a person something (`YOI-QUESTION:` lines) and its step waits for the
    /// answer (docs/inbox.md).
    Question,
    /// A person answered a `question` event (its id in `question`); the step goes on.
    Answer,
    /// A kind this version does not know; preserved as written.
    Other(String),
}

impl EventKind {
    pub fn as_str(&self) -> &str {
        match self {
            EventKind::Create => "create",
            EventKind::Comment => "comment",
            EventKind::IntakeSummary => "intake_summary",
            EventKind::Decision => "decision",
            EventKind::Plan => "plan",
            EventKind::StateChanged => "state_changed",
            EventKind::ImplementationReport => "implementation_report",
            EventKind::Verification => "verification",
            EventKind::Review => "review",
            EventKind::Merge => "merge",
            EventKind::Assignment => "assignment",
            EventKind::Attention => "attention",
            EventKind::Retry => "retry",
            EventKind::ItemEdit => "item_edit",
            EventKind::RelationChanged => "relation_changed",
            EventKind::Close => "close",
            EventKind::Budget => "budget",
            EventKind::Question => "question",
            EventKind::Answer => "answer",
            EventKind::Other(s) => s,
        }
    }

    pub fn default_heading(&self) -> String {
        match self {
            EventKind::Create => "Created".into(),
            EventKind::Comment => "Comment".into(),
            EventKind::IntakeSummary => "Intake summary".into(),
            EventKind::Decision => "Decision".into(),
            EventKind::Plan => "Plan".into(),
            EventKind::StateChanged => "State changed".into(),
            EventKind::ImplementationReport => "Implementation report".into(),
            EventKind::Verification => "Verification".into(),
            EventKind::Review => "Review".into(),
            EventKind::Merge => "Merge".into(),
            EventKind::Assignment => "Assignment".into(),
            EventKind::Attention => "Attention".into(),
            EventKind::Retry => "Retry".into(),
            EventKind::ItemEdit => "Item updated".into(),
            EventKind::RelationChanged => "Relation changed".into(),
            EventKind::Close => "Closed".into(),
            EventKind::Budget => "Budget".into(),
            EventKind::Question => "Question".into(),
            EventKind::Answer => "Answer".into(),
            EventKind::Other(s) => s.replace('_', " "),
        }
    }
}

impl EventKind {
    /// The kind `s` names; only an unknown kind allocates.
    pub fn parse(s: &str) -> Self {
        match Self::known(s) {
            Some(k) => k,
            None => EventKind::Other(s.to_string()),
        }
    }

    /// The name of every kind this version knows, in variant order.
    pub const KNOWN: [&'static str; 19] = [
        "create",
        "comment",
        "intake_summary",
        "decision",
        "plan",
        "state_changed",
        "implementation_report",
        "verification",
        "review",
        "merge",
        "assignment",
        "attention",
        "retry",
        "item_edit",
        "relation_changed",
        "close",
        "budget",
        "question",
        "answer",
    ];

    fn known(s: &str) -> Option<Self> {
        Some(match s {
            "create" => EventKind::Create,
            "comment" => EventKind::Comment,
            "intake_summary" => EventKind::IntakeSummary,
            "decision" => EventKind::Decision,
            "plan" => EventKind::Plan,
            "state_changed" => EventKind::StateChanged,
            "implementation_report" => EventKind::ImplementationReport,
            "verification" => EventKind::Verification,
            "review" => EventKind::Review,
            "merge" => EventKind::Merge,
            "assignment" => EventKind::Assignment,
            "attention" => EventKind::Attention,
            "retry" => EventKind::Retry,
            "item_edit" => EventKind::ItemEdit,
            "relation_changed" => EventKind::RelationChanged,
            "close" => EventKind::Close,
            "budget" => EventKind::Budget,
            "question" => EventKind::Question,
            "answer" => EventKind::Answer,
            _ => return None,
        })
    }
}

impl From<String> for EventKind {
    fn from(s: String) -> Self {
        EventKind::known(&s).unwrap_or(EventKind::Other(s))
    }
}

impl From<EventKind> for String {
    fn from(k: EventKind) -> String {
        k.as_str().to_string()
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// In the API's document: one of the [`EventKind::KNOWN`] names (the `KnownEventKind`
/// enumeration), or any other name, which a thread written by another version of yoi may hold
/// and which is passed through as written ([`EventKind::Other`]).
impl utoipa::PartialSchema for EventKind {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AnyOfBuilder, ObjectBuilder, Type};
        AnyOfBuilder::new()
            .item(utoipa::openapi::Ref::from_schema_name("KnownEventKind"))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some("A kind another version of yoi wrote, passed through.")),
            )
            .description(Some(
                "A thread event's kind: one this version writes, or another version's, kept as written.",
            ))
            .into()
    }
}

impl utoipa::ToSchema for EventKind {
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        schemas.push(("KnownEventKind".into(), known_kinds()));
    }
}

/// The `KnownEventKind` enumeration of the API's document.
fn known_kinds() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(EventKind::KNOWN))
        .description(Some(
            "The kinds of thread event this version of yoi writes.",
        ))
        .into()
}

#[cfg(test)]
mod tests {
    use super::EventKind;

    #[test]
    fn every_known_name_reads_as_its_own_kind() {
        for name in EventKind::KNOWN {
            let kind = EventKind::parse(name);
            assert!(!matches!(kind, EventKind::Other(_)), "{name}");
            assert_eq!(kind.as_str(), name);
        }
        assert_eq!(
            EventKind::parse("from_the_future"),
            EventKind::Other("from_the_future".into())
        );
    }
}
