//! Why an attempt failed, where people look: the last lines the agent wrote on stderr, at most
//! [`MAX_LINES`] lines and [`MAX_BYTES`] bytes, with anything that looks like a token or a key
//! masked, added to the failure's reason (the thread's `assignment` event, the ticket page,
//! `yoi ticket show`). The whole output stays in the attempt's log.

/// Lines of stderr a failure's reason carries.
pub const MAX_LINES: usize = 20;
/// Bytes of stderr a failure's reason carries.
pub const MAX_BYTES: usize = 2048;

/// Prefixes of well-known credentials (API keys, personal access tokens, yoi's own tokens).
const SECRET_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "yoi_",
    "yoia_",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "AIza",
    "hf_",
    "sk-ant-",
];

/// `reason`, with the end of `stderr` under it when there is any.
pub fn with_stderr(reason: String, stderr: &str) -> String {
    match tail(stderr) {
        Some(t) => format!("{reason}\n\nThe agent's last lines on stderr:\n\n```\n{t}\n```"),
        None => reason,
    }
}

/// The last lines of `text` (no more than the limits, cut at a line), secrets masked; `None`
/// when there is nothing but blank lines.
pub fn tail(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0;
    for line in lines.iter().rev().take(MAX_LINES) {
        // Terminal colours and other control characters go: a thread holds text only.
        let line: String = line
            .chars()
            .filter(|c| !c.is_control() || *c == '\t')
            .collect();
        let line = mask(&line);
        // A single line longer than the budget keeps its end.
        let line = if line.len() > MAX_BYTES {
            let mut at = line.len() - MAX_BYTES;
            while !line.is_char_boundary(at) {
                at += 1;
            }
            line[at..].to_string()
        } else {
            line
        };
        if bytes + line.len() + 1 > MAX_BYTES && !kept.is_empty() {
            break;
        }
        bytes += line.len() + 1;
        kept.push(line);
    }
    kept.reverse();
    (!kept.is_empty()).then(|| kept.join("\n"))
}

/// `line` with every word that looks like a credential replaced by `***` (its known prefix
/// kept, so a reader can tell what it was).
pub fn mask(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(&mask_word(word));
        word.clear();
    };
    for c in line.chars() {
        if c.is_ascii_alphanumeric() || "-_+/.".contains(c) {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn mask_word(word: &str) -> String {
    let core = word.trim_end_matches('.');
    if let Some(p) = SECRET_PREFIXES
        .iter()
        .filter(|p| core.starts_with(**p) && core.len() >= p.len() + 8)
        .max_by_key(|p| p.len())
    {
        return format!("{p}***");
    }
    let letters = core.chars().any(|c| c.is_ascii_alphabetic());
    let digits = core.chars().any(|c| c.is_ascii_digit());
    let git_id = core.len() == 40 && core.chars().all(|c| c.is_ascii_hexdigit());
    if core.len() >= 32 && letters && digits && !git_id && !core.contains('/') {
        return "***".to_string();
    }
    word.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_tokens_are_masked_and_the_rest_is_kept() {
        assert_eq!(
            mask("error: 401 with key sk-ant-api03-abcdefghijklmnop for yoi_0123456789abcdef"),
            "error: 401 with key sk-ant-*** for yoi_***"
        );
        assert_eq!(
            mask("token=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdo done"),
            "token=*** done"
        );
        let id = "3f41e5fe4e53ac77373ade6cd8d50f3f1bd757c7";
        assert_eq!(mask(&format!("at {id}")), format!("at {id}"));
        assert_eq!(
            mask("see /usr/lib/python3.11/site-packages/aider/main.py line 741"),
            "see /usr/lib/python3.11/site-packages/aider/main.py line 741"
        );
    }

    #[test]
    fn the_tail_keeps_the_last_lines_within_its_limits() {
        let text: String = (1..=50).map(|i| format!("line {i}\n")).collect();
        let t = tail(&text).unwrap();
        assert_eq!(t.lines().count(), MAX_LINES);
        assert!(t.starts_with("line 31") && t.ends_with("line 50"), "{t}");
        let long = format!("{}\nlast\n", "x".repeat(5000));
        let t = tail(&long).unwrap();
        assert!(t.len() <= MAX_BYTES + 8, "{}", t.len());
        assert!(t.ends_with("last"));
        assert_eq!(tail("\n  \n"), None);
        assert_eq!(tail("\u{1b}[31mred\u{1b}[0m\n").unwrap(), "[31mred[0m");
    }
}
