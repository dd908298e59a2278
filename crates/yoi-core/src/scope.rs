//! Write-scope overlap: can two tickets' write scopes touch the same file?
//!
//! The router uses this to hold a ticket back (`waiting_conflict`) while work in flight may
//! write the same paths. It answers conservatively: when in doubt, the scopes overlap.
//!
//! Pattern rules (repository-relative, `/` separated):
//! - A pattern is split on `/`; empty segments and `.` segments are dropped, so `./src//a` is
//!   `src/a` and a leading or trailing `/` changes nothing.
//! - A segment that is exactly `**` matches any number (zero or more) of whole segments.
//! - Inside any other segment `*` matches any run of characters except `/`, so `*.md` matches
//!   `README.md` but not `docs/x.md`. Any other character (including `?`, `[`, `]`) is literal;
//!   a `**` that is not a whole segment behaves like `*`.
//! - A plain path (no `*`) and a folder (trailing `/`) cover everything below them: `src/a`,
//!   `src/a/` and `src/a/**` are the same scope. Writing into a folder conflicts with writing
//!   the folder itself. An empty pattern (or `.`, `/`) therefore names the whole repository.
//! - Any other glob matches exactly the paths it describes: `src/*.rs` covers `src/lib.rs`
//!   but not `src/lib.rs/x`, so `**/*.md` and `src/**/*.rs` do not overlap.
//! - Consequence: a plain path overlaps every pattern that starts with `**`
//!   (`crates/a.rs` may be a folder holding `crates/a.rs/tests/x.rs`).
//!
//! No filesystem is consulted: two patterns overlap when some path *could* match both.

use std::collections::HashSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    /// `*`: any run of characters within the segment.
    Star,
    Char(char),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    /// `**`: zero or more whole segments.
    Any,
    /// One segment: a glob from a pattern, or a literal name from a path (no `Star` tokens).
    Glob(Vec<Tok>),
}

fn compile(pattern: &str) -> Vec<Seg> {
    let pattern = pattern.trim();
    let covers_below = pattern.ends_with('/') || !pattern.contains('*');
    let mut segs: Vec<Seg> = pattern
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .map(|s| {
            if s == "**" {
                Seg::Any
            } else {
                Seg::Glob(
                    s.chars()
                        .map(|c| if c == '*' { Tok::Star } else { Tok::Char(c) })
                        .collect(),
                )
            }
        })
        .collect();
    if covers_below && segs.last() != Some(&Seg::Any) {
        segs.push(Seg::Any);
    }
    segs
}

/// Does `path` fall inside the scope named by `pattern`?
pub fn matches(pattern: &str, path: &str) -> bool {
    let path: Vec<Seg> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .map(|s| Seg::Glob(s.chars().map(Tok::Char).collect()))
        .collect();
    // A concrete path is a pattern without wildcards (a `*` in it is literal) and without the
    // implicit tail.
    segments_intersect(&compile(pattern), &path)
}

/// Can the two patterns match a common path?
pub fn patterns_overlap(a: &str, b: &str) -> bool {
    segments_intersect(&compile(a), &compile(b))
}

/// The first pair (in `a` order, then `b` order) of patterns that can match a common path.
pub fn overlaps(a: &[String], b: &[String]) -> Option<(String, String)> {
    a.iter().find_map(|pa| {
        b.iter()
            .find(|pb| patterns_overlap(pa, pb))
            .map(|pb| (pa.clone(), pb.clone()))
    })
}

/// Is there a segment sequence accepted by both patterns? A search over pairs of positions:
/// `**` may be skipped (zero segments) or absorb one segment the other side consumes.
fn segments_intersect(a: &[Seg], b: &[Seg]) -> bool {
    let mut seen = HashSet::new();
    let mut stack = vec![(0usize, 0usize)];
    while let Some((i, j)) = stack.pop() {
        if !seen.insert((i, j)) {
            continue;
        }
        if i == a.len() && j == b.len() {
            return true;
        }
        let (sa, sb) = (a.get(i), b.get(j));
        if sa == Some(&Seg::Any) {
            stack.push((i + 1, j));
        }
        if sb == Some(&Seg::Any) {
            stack.push((i, j + 1));
        }
        match (sa, sb) {
            // `**` absorbs a segment the other side names (every glob matches some non-empty
            // segment, so the absorbed segment exists).
            (Some(Seg::Any), Some(Seg::Glob(_))) => stack.push((i, j + 1)),
            (Some(Seg::Glob(_)), Some(Seg::Any)) => stack.push((i + 1, j)),
            (Some(Seg::Glob(x)), Some(Seg::Glob(y))) if globs_intersect(x, y) => {
                stack.push((i + 1, j + 1))
            }
            _ => {}
        }
    }
    false
}

/// Is there a string matched by both single-segment globs (`*` = any run of characters)?
/// If the only common string were empty, both globs would be all stars and would also share
/// every non-empty string, so "some common string" is the right question for real segments.
fn globs_intersect(a: &[Tok], b: &[Tok]) -> bool {
    let mut seen = HashSet::new();
    let mut stack = vec![(0usize, 0usize)];
    while let Some((i, j)) = stack.pop() {
        if !seen.insert((i, j)) {
            continue;
        }
        if i == a.len() && j == b.len() {
            return true;
        }
        let (ca, cb) = (a.get(i), b.get(j));
        if ca == Some(&Tok::Star) {
            // The star ends here, or it absorbs the next thing the other side produces.
            stack.push((i + 1, j));
            if cb.is_some() {
                stack.push((i, j + 1));
            }
        }
        if cb == Some(&Tok::Star) {
            stack.push((i, j + 1));
            if ca.is_some() {
                stack.push((i + 1, j));
            }
        }
        if let (Some(Tok::Char(x)), Some(Tok::Char(y))) = (ca, cb) {
            if x == y {
                stack.push((i + 1, j + 1));
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sibling_folders_do_not_overlap() {
        assert!(!patterns_overlap("src/a/**", "src/b/**"));
        assert!(!patterns_overlap("src/a/", "src/b"));
        assert!(!patterns_overlap(
            "crates/x/src/lib.rs",
            "crates/y/src/lib.rs"
        ));
    }

    #[test]
    fn double_star_overlaps_paths_below_it() {
        assert!(patterns_overlap("src/**", "src/x.rs"));
        assert!(patterns_overlap("src/x.rs", "src/**"));
        assert!(patterns_overlap("**", "anything/at/all"));
        assert!(patterns_overlap("**/tests/*.rs", "crates/core/tests/a.rs"));
        assert!(!patterns_overlap("**/tests/*.rs", "crates/core/src/*.rs"));
        assert!(!patterns_overlap("**/*.md", "src/**/*.rs"));
        // A plain path may be a folder, so a leading `**` can reach below it.
        assert!(patterns_overlap("**/tests/*.rs", "crates/core/src/a.rs"));
    }

    #[test]
    fn single_star_stays_within_one_segment() {
        assert!(!patterns_overlap("*.md", "docs/x.md"));
        assert!(patterns_overlap("*.md", "README.md"));
        assert!(patterns_overlap("docs/*.md", "docs/x.md"));
        assert!(!matches("src/*.rs", "src/a/b.rs"));
        assert!(matches("src/*/b.rs", "src/a/b.rs"));
        // Globs match exactly; only plain paths and folders reach below.
        assert!(!matches("*.md", "x.md/y"));
        assert!(matches("src/*/", "src/a/b/c.rs"));
        // A `*` in a path is an ordinary character.
        assert!(matches("src/*.rs", "src/*.rs"));
        assert!(!matches("src/a.rs", "src/*.rs"));
    }

    #[test]
    fn plain_paths_and_folders_cover_everything_below() {
        assert!(patterns_overlap("src", "src/deep/file.rs"));
        assert!(patterns_overlap("src/", "src/deep/file.rs"));
        assert!(matches("src/a", "src/a"));
        assert!(matches("src/a", "src/a/b/c"));
        assert!(!matches("src/a", "src/ab"));
        assert!(!matches("src/a/b", "src/a"));
        // Writing a folder and writing a file inside it conflict.
        assert!(patterns_overlap("docs", "docs/guide.md"));
    }

    #[test]
    fn globs_within_a_segment_intersect_only_when_some_name_fits_both() {
        assert!(patterns_overlap("src/a*", "src/*b"));
        assert!(patterns_overlap("src/*.rs", "src/lib.*"));
        assert!(!patterns_overlap("src/*.rs", "src/*.md"));
        assert!(!patterns_overlap("src/a*", "src/b*"));
        assert!(patterns_overlap("./src//x.rs", "src/x.rs/"));
    }

    #[test]
    fn overlaps_reports_the_first_overlapping_pair() {
        let a = v(&["docs/**", "src/a/**", "src/b.rs"]);
        let b = v(&["tests/**", "src/b.rs", "src/a/x.rs"]);
        assert_eq!(
            overlaps(&a, &b),
            Some(("src/a/**".to_string(), "src/a/x.rs".to_string()))
        );
        assert_eq!(overlaps(&v(&["a/**"]), &v(&["b/**", "c"])), None);
        assert_eq!(overlaps(&[], &v(&["**"])), None);
    }

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("ab".to_string()),
            Just("*".to_string()),
            Just("a*".to_string()),
            Just("*b".to_string()),
            Just("**".to_string()),
        ]
    }

    fn pattern() -> impl Strategy<Value = String> {
        proptest::collection::vec(segment(), 1..4).prop_map(|s| s.join("/"))
    }

    fn path() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![Just("a"), Just("b"), Just("ab"), Just("ba"), Just("aab")],
            1..5,
        )
        .prop_map(|s| s.join("/"))
    }

    proptest! {
        #[test]
        fn a_pattern_always_overlaps_itself(p in pattern()) {
            prop_assert!(patterns_overlap(&p, &p));
        }

        #[test]
        fn overlap_is_symmetric(p in pattern(), q in pattern()) {
            prop_assert_eq!(patterns_overlap(&p, &q), patterns_overlap(&q, &p));
        }

        #[test]
        fn a_path_matched_by_both_patterns_means_they_overlap(
            p in pattern(), q in pattern(), x in path()
        ) {
            if matches(&p, &x) && matches(&q, &x) {
                prop_assert!(patterns_overlap(&p, &q));
            }
        }

        #[test]
        fn a_pattern_overlaps_every_path_it_matches(p in pattern(), x in path()) {
            if matches(&p, &x) {
                prop_assert!(patterns_overlap(&p, &x));
            }
        }

        #[test]
        fn a_pattern_matches_its_own_instances(p in pattern(), fill in "[a-z]{1,3}") {
            // Replace each `*` by some name and each `**` by two segments.
            let instance: Vec<String> = p
                .split('/')
                .map(|s| if s == "**" { format!("{fill}/{fill}") } else { s.replace('*', &fill) })
                .collect();
            prop_assert!(matches(&p, &instance.join("/")));
        }

        #[test]
        fn scopes_under_different_literal_roots_never_overlap(p in pattern(), q in pattern()) {
            let a = format!("left/{p}");
            let b = format!("right/{q}");
            prop_assert!(!patterns_overlap(&a, &b));
        }
    }
}
