//! Flow triggers (docs/flows.md, "Triggers"): which tickets a flow serves when they name no
//! flow. A trigger lists conditions, and a ticket matches when every condition given holds:
//! its `kind:` is the trigger's kind, it carries every label listed, and its title holds every
//! word listed (whole words, any case). Kinds, labels and words compare in lowercase.
//!
//! Two triggers are ambiguous when one ticket could match both and neither is narrower (asks
//! for everything the other asks, and more): such a ticket would have two flows, so the flow
//! files refuse it ([`Trigger::ambiguous_with`]). Otherwise the narrowest matching trigger wins
//! ([`Trigger::narrower_than`]).

use serde::{Deserialize, Serialize};
use serde_yaml_ng::Value;

use crate::item::Item;

/// A checked trigger: at least one condition, every value in lowercase, sorted, once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Trigger {
    /// The ticket's `kind:` (item.md frontmatter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Labels the ticket must all carry (item.md `labels:`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Words the title must all hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub title_words: Vec<String>,
}

/// What a ticket shows a trigger.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TicketFacts {
    pub kind: Option<String>,
    pub labels: Vec<String>,
    pub title_words: Vec<String>,
}

impl TicketFacts {
    /// The facts of `item`: its `kind:` and `labels:` keys (kept among the item's other keys)
    /// and the words of its title.
    pub fn of(item: &Item) -> TicketFacts {
        let get = |key: &str| item.extra.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        let kind = match get("kind") {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_lowercase()),
            _ => None,
        };
        let labels = match get("labels") {
            Some(Value::Sequence(items)) => items
                .iter()
                .filter_map(|v| v.as_str())
                .map(|s| s.trim().to_lowercase())
                .collect(),
            Some(Value::String(s)) => s
                .split(',')
                .map(|s| s.trim().to_lowercase())
                .filter(|s| !s.is_empty())
                .collect(),
            _ => Vec::new(),
        };
        TicketFacts {
            kind,
            labels,
            title_words: words(&item.title),
        }
    }
}

/// The lowercase words of `text` (runs of letters and digits).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl Trigger {
    /// A trigger from its parts, normalised; `Err` when it has no condition.
    pub fn new(
        kind: Option<String>,
        labels: Vec<String>,
        title_words: Vec<String>,
    ) -> Result<Trigger, String> {
        let clean = |v: Vec<String>| {
            let mut v: Vec<String> = v
                .into_iter()
                .map(|s| s.trim().to_lowercase())
                .filter(|s| !s.is_empty())
                .collect();
            v.sort();
            v.dedup();
            v
        };
        let t = Trigger {
            kind: kind
                .map(|k| k.trim().to_lowercase())
                .filter(|k| !k.is_empty()),
            labels: clean(labels),
            title_words: clean(title_words),
        };
        if t.kind.is_none() && t.labels.is_empty() && t.title_words.is_empty() {
            return Err("a trigger needs at least one of `kind`, `labels` or `title_words`".into());
        }
        if let Some(w) = t.title_words.iter().find(|w| words(w) != [w.to_string()]) {
            return Err(format!(
                "title word `{w}` must be one word of letters and digits"
            ));
        }
        Ok(t)
    }

    pub fn matches(&self, t: &TicketFacts) -> bool {
        self.kind
            .as_ref()
            .is_none_or(|k| t.kind.as_ref() == Some(k))
            && self.labels.iter().all(|l| t.labels.contains(l))
            && self.title_words.iter().all(|w| t.title_words.contains(w))
    }

    /// Whether every ticket this matches is also matched by `other`, and not the reverse: it
    /// asks for everything `other` asks for, and more.
    pub fn narrower_than(&self, other: &Trigger) -> bool {
        let covers = other.kind.is_none() || other.kind == self.kind;
        covers
            && other.labels.iter().all(|l| self.labels.contains(l))
            && other
                .title_words
                .iter()
                .all(|w| self.title_words.contains(w))
            && self != other
    }

    /// Whether one ticket could match both and neither is narrower.
    pub fn ambiguous_with(&self, other: &Trigger) -> bool {
        let disjoint = matches!((&self.kind, &other.kind), (Some(a), Some(b)) if a != b);
        !disjoint && !self.narrower_than(other) && !other.narrower_than(self)
    }

    /// The conditions in words, for messages (`kind bug, labels security, title words cve`).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(k) = &self.kind {
            parts.push(format!("kind {k}"));
        }
        if !self.labels.is_empty() {
            parts.push(format!("labels {}", self.labels.join(" + ")));
        }
        if !self.title_words.is_empty() {
            parts.push(format!("title words {}", self.title_words.join(" + ")));
        }
        parts.join(", ")
    }

    /// A ticket both triggers match (for the message that refuses two ambiguous triggers).
    pub fn union(&self, other: &Trigger) -> Trigger {
        let join = |a: &[String], b: &[String]| {
            let mut v: Vec<String> = a.iter().chain(b).cloned().collect();
            v.sort();
            v.dedup();
            v
        };
        Trigger {
            kind: self.kind.clone().or_else(|| other.kind.clone()),
            labels: join(&self.labels, &other.labels),
            title_words: join(&self.title_words, &other.title_words),
        }
    }
}
