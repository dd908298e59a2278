//! Bounds on YAML written by users (the frontmatter of `item.md` and `SKILL.md`), checked before
//! serde_yaml_ng builds a value. serde_yaml_ng limits recursion and the number of alias jumps,
//! but two costs stay unbounded, and fuzzing found both:
//!
//! - **Time in flow nesting.** The scanner's work per token grows with the depth of open `[`
//!   and `{`, so 64 KiB of `{` takes seconds. [`check`] refuses more than [`MAX_BRACKETS`]
//!   brackets, counting every one, quoted or not, so the bound cannot be dodged; real
//!   frontmatter has a handful, and nesting past 128 never parses anyway.
//! - **Memory in aliases.** Every `*alias` copies its anchor's value, so a 48 KB frontmatter of
//!   nested aliases to one long string asked for more than 3 GB. [`check`] walks the document
//!   without building it and refuses one whose expanded size passes twice the text plus 64 KiB;
//!   without aliases a document never comes near that.
//!
//! Anything else (syntax errors included) passes, so the caller's own parse reports it.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess};

/// Most `[` and `{` a document may hold.
pub const MAX_BRACKETS: usize = 256;
/// Expanded size allowed beyond twice the text (bytes of scalars plus one per node).
pub const EXPANSION_SLACK: usize = 64 * 1024;

/// Why [`check`] refused a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// More than [`MAX_BRACKETS`]; `line` (1-based, in the text) holds the first one past it.
    Brackets { line: usize },
    /// Its aliases expand it past `limit` (bytes of scalars plus one per node).
    Expansion { limit: usize },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Brackets { .. } => write!(
                f,
                "more than {MAX_BRACKETS} `[` and `{{` (write long lists and maps as indented blocks)"
            ),
            Refused::Expansion { limit } => write!(
                f,
                "aliases (`*name`) that expand past {limit} bytes (write the values out)"
            ),
        }
    }
}

/// Refuse a YAML document that would be slow to scan or huge once its aliases are expanded.
pub fn check(text: &str) -> Result<(), Refused> {
    let mut brackets = text
        .bytes()
        .enumerate()
        .filter(|(_, b)| matches!(b, b'[' | b'{'));
    if let Some((at, _)) = brackets.nth(MAX_BRACKETS) {
        let line = text[..at].matches('\n').count() + 1;
        return Err(Refused::Brackets { line });
    }
    if !text.contains('*') {
        return Ok(());
    }
    let limit = text.len().saturating_mul(2).saturating_add(EXPANSION_SLACK);
    let budget = Budget {
        left: Cell::new(limit),
        exceeded: Cell::new(false),
    };
    let _ = Walk(&budget).deserialize(serde_yaml_ng::Deserializer::from_str(text));
    if budget.exceeded.get() {
        return Err(Refused::Expansion { limit });
    }
    Ok(())
}

struct Budget {
    left: Cell<usize>,
    exceeded: Cell<bool>,
}

/// Visits a document as serde_yaml_ng expands it, spending the budget and allocating nothing.
#[derive(Clone, Copy)]
struct Walk<'a>(&'a Budget);

impl Walk<'_> {
    fn spend<E: serde::de::Error>(self, cost: usize) -> Result<(), E> {
        match self.0.left.get().checked_sub(cost.saturating_add(1)) {
            Some(left) => {
                self.0.left.set(left);
                Ok(())
            }
            None => {
                self.0.exceeded.set(true);
                Err(E::custom("expansion budget exceeded"))
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.spend(0)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.spend(0)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.spend(0)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.spend(0)
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.spend(v.len())
    }
    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<(), E> {
        self.spend(v.len())
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.spend(0)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        self.spend(0)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.spend(0)?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.spend(0)?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
    /// A tagged value (`!tag value`).
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        let (_, value) = data.variant_seed(self)?;
        value.newtype_variant_seed(self)
    }
}
