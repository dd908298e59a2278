//! A flow's optional `assembly` (docs/flows.md, "Assembly"): when the flow finishes, each named
//! step's summary is stacked under the header the flow gives it, in step order, in one event
//! of the ticket's thread — so a reader finds what each step said in one place.
//!
//! ```yaml
//! assembly:
//!   headers:
//!     implement: What changed
//!     review: What the review found
//! ```
//!
//! Only the form is here (what a file may say, and the text it makes); which summaries exist
//! is the engine's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// At most this many characters in one header.
pub const HEADER_MAX_CHARS: usize = 120;

/// The checked `assembly` of a flow: the headers in the flow's step order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Assembly {
    pub headers: Vec<AssemblyHeader>,
}

/// One step whose summary is assembled, and the header it goes under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AssemblyHeader {
    pub step: String,
    pub header: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAssembly {
    headers: BTreeMap<String, String>,
}

/// Check `raw` against the flow's step ids (in order); every problem as a sentence.
pub(super) fn check(raw: RawAssembly, steps: &[String]) -> Result<Assembly, Vec<String>> {
    let mut problems = Vec::new();
    if raw.headers.is_empty() {
        problems.push("assembly.headers names no step".to_string());
    }
    for (step, header) in &raw.headers {
        if !steps.contains(step) {
            problems.push(format!(
                "assembly.headers names `{step}`, which is not a step of this flow ({})",
                steps.join(", ")
            ));
        }
        let h = header.trim();
        if h.is_empty() || h.contains('\n') || h.starts_with('#') {
            problems.push(format!(
                "assembly.headers.{step} must be one line of words (yoi makes it a heading), got {header:?}"
            ));
        } else if h.chars().count() > HEADER_MAX_CHARS {
            problems.push(format!(
                "assembly.headers.{step} is longer than {HEADER_MAX_CHARS} characters"
            ));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Assembly {
        headers: steps
            .iter()
            .filter_map(|s| {
                raw.headers.get(s).map(|h| AssemblyHeader {
                    step: s.clone(),
                    header: h.trim().to_string(),
                })
            })
            .collect(),
    })
}

impl Assembly {
    /// The assembled text: each header as a `###` heading, then what `summary_of` gives for its
    /// step (its latest completed attempt's summary), or a line saying there was none.
    pub fn render(&self, summary_of: impl Fn(&str) -> Option<String>) -> String {
        let mut out = String::new();
        for h in &self.headers {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&format!("### {}\n\n", h.header));
            match summary_of(&h.step).map(|s| s.trim().to_string()) {
                Some(s) if !s.is_empty() => out.push_str(&s),
                _ => out.push_str(&format!("(`{}` left no summary)", h.step)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, &str)]) -> RawAssembly {
        RawAssembly {
            headers: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn steps() -> Vec<String> {
        ["implement", "verify", "review", "merge"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn headers_follow_the_step_order_and_render_under_their_heading() {
        let a = check(
            raw(&[
                ("review", "What the review found"),
                ("implement", " What changed "),
            ]),
            &steps(),
        )
        .unwrap();
        let order: Vec<&str> = a.headers.iter().map(|h| h.step.as_str()).collect();
        assert_eq!(order, ["implement", "review"]);
        let text = a.render(|s| (s == "implement").then(|| "Added hello.txt.\n".to_string()));
        assert_eq!(
            text,
            "### What changed\n\nAdded hello.txt.\n\n### What the review found\n\n(`review` left no summary)"
        );
    }

    #[test]
    fn unknown_steps_empty_or_heading_like_headers_are_refused() {
        let e = check(
            raw(&[("deploy", "x"), ("review", "## x"), ("implement", "")]),
            &steps(),
        )
        .unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].contains("`deploy`, which is not a step"), "{e:?}");
        assert!(check(raw(&[]), &steps()).is_err());
        let long = "x".repeat(HEADER_MAX_CHARS + 1);
        assert!(check(raw(&[("review", &long)]), &steps()).is_err());
    }
}
