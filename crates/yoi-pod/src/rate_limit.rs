//! Telling a rate limit or quota apart from a failure (docs/budgets.md): an attempt whose agent
//! ended without its work and whose output says its provider refused it (HTTP 429 or 529,
//! `rate_limit_error`, "usage limit reached", `RESOURCE_EXHAUSTED`, …) is reported as rate
//! limited, with the reset time when the output names one. Only the end of the output is read
//! (the last lines of stdout and stderr, and the error the agent reported), where a CLI says
//! why it stopped; the agent's own work earlier in the output is not taken for a refusal.

use yoi_core::report::RateLimit;

/// Lines read from the end of stdout and of stderr.
const TAIL_LINES: usize = 60;

/// Phrases that say a provider refused for a rate limit or a quota, lowercased.
const SAYS_LIMITED: &[&str] = &[
    "rate_limit_error",
    "ratelimiterror",
    "rate_limit_exceeded",
    "rate limit exceeded",
    "rate limit reached",
    "rate-limited",
    "rate limited",
    "too many requests",
    "usage limit reached",
    "usage limit",
    "quota exceeded",
    "exceeded your current quota",
    "resource_exhausted",
    "insufficient_quota",
    "overloaded_error",
    "\"api_error_status\":429",
    "\"api_error_status\":529",
    "status code 429",
    "status: 429",
    "status 429",
    "error 429",
    "429 too many",
    "http 429",
];

/// Whether the end of an agent's output says its provider refused it; with the reset time the
/// output names (milliseconds since the Unix epoch), read against `now_ms`.
pub fn detect(
    stdout: &str,
    stderr: &str,
    agent_error: Option<&str>,
    now_ms: i64,
) -> Option<RateLimit> {
    let tail = |text: &str| -> Vec<String> {
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..]
            .iter()
            .map(|l| l.to_string())
            .collect()
    };
    let mut lines = tail(stderr);
    lines.extend(tail(stdout));
    lines.extend(agent_error.map(str::to_string));
    let hit = lines.iter().rev().find(|l| {
        let low = l.to_ascii_lowercase().replace(": ", ":");
        SAYS_LIMITED
            .iter()
            .any(|p| low.contains(&p.replace(": ", ":")))
    })?;
    let resets_at_ms = lines.iter().rev().find_map(|l| reset_in(l, now_ms));
    Some(RateLimit {
        resets_at_ms,
        message: hit.trim().chars().take(300).collect(),
    })
}

/// The reset time a line names: `limit reached|EPOCH` (Claude Code), `"resetsAt": EPOCH`,
/// `Retry-After: SECONDS`, "try again in 2 hours 3 minutes", "retry after 20s", "resets at
/// 2026-12-04T18:00:00Z".
fn reset_in(line: &str, now_ms: i64) -> Option<i64> {
    let low = line.to_ascii_lowercase();
    if let Some(rest) = low.split("limit reached|").nth(1) {
        return epoch(rest);
    }
    for key in [
        "\"resetsat\":",
        "\"resets_at\":",
        "\"reset_at\":",
        "x-ratelimit-reset:",
    ] {
        if let Some(rest) = low.replace(": ", ":").split(key).nth(1) {
            if let Some(t) = epoch(rest.trim_start_matches('"')) {
                return Some(t);
            }
        }
    }
    for key in ["retry-after:", "retry-after :", "retry_after:"] {
        if let Some(rest) = low.replace(": ", ":").split(key).nth(1) {
            if let Some(ms) = duration_ms(rest) {
                return Some(now_ms + ms);
            }
        }
    }
    for key in [
        "try again in ",
        "retry in ",
        "retry after ",
        "resets in ",
        "reset in ",
        "please wait ",
    ] {
        if let Some(rest) = low.split(key).nth(1) {
            if let Some(ms) = duration_ms(rest) {
                return Some(now_ms + ms);
            }
        }
    }
    for key in ["resets at ", "reset at ", "resets_at "] {
        if let Some(rest) = line.split(key).nth(1).or_else(|| low.split(key).nth(1)) {
            let word = rest
                .split_whitespace()
                .next()?
                .trim_end_matches(['.', ',', ')']);
            if let Ok(t) = yoi_core::Timestamp::parse(word) {
                return Some(t.unix_millis());
            }
            if let Some(t) = epoch(word) {
                return Some(t);
            }
        }
    }
    None
}

/// Digits at the start of `s` as a time: seconds since the epoch, or milliseconds when that
/// large.
fn epoch(s: &str) -> Option<i64> {
    let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    let n: i64 = digits.parse().ok()?;
    match digits.len() {
        9..=11 => Some(n * 1000),
        12..=14 => Some(n),
        _ => None,
    }
}

/// A duration at the start of `s`: `20`, `20s`, `1.5 seconds`, `2 hours 3 minutes`, `1h2m`,
/// `500ms`; a bare number is seconds.
fn duration_ms(s: &str) -> Option<i64> {
    let mut total = 0f64;
    let mut seen = false;
    let mut rest = s.trim_start();
    loop {
        let num: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let Ok(n) = num.parse::<f64>() else {
            break;
        };
        rest = rest[num.len()..].trim_start();
        let unit: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect();
        let scale = match unit.as_str() {
            "ms" | "millisecond" | "milliseconds" => 1.0,
            "" | "s" | "sec" | "secs" | "second" | "seconds" => 1000.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60_000.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000.0,
            "d" | "day" | "days" => 86_400_000.0,
            _ => break,
        };
        total += n * scale;
        seen = true;
        rest = rest[unit.len()..].trim_start_matches([',', ' ']);
        rest = rest.strip_prefix("and ").unwrap_or(rest);
        if unit.is_empty() {
            break;
        }
    }
    (seen && total > 0.0).then_some(total.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_764_000_000_000;

    #[test]
    fn each_cli_s_refusal_is_read_with_its_reset() {
        // Claude Code's headless usage-limit line: the epoch of the reset after a bar.
        let r = detect("Claude AI usage limit reached|1764003600\n", "", None, NOW).unwrap();
        assert_eq!(r.resets_at_ms, Some(1_764_003_600_000));
        // Claude's result event with the API's status.
        let r = detect(
            r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: 429 rate_limit_error"}"#,
            "",
            Some("the agent reported an error (success)"),
            NOW,
        )
        .unwrap();
        assert_eq!(r.resets_at_ms, None);
        // Codex: "You've hit your usage limit … try again in 2 hours 3 minutes."
        let r = detect(
            r#"{"type":"error","message":"You've hit your usage limit. Upgrade to Pro or try again in 2 hours 3 minutes."}"#,
            "",
            None,
            NOW,
        )
        .unwrap();
        assert_eq!(r.resets_at_ms, Some(NOW + 2 * 3_600_000 + 3 * 60_000));
        // Gemini CLI: a 429 RESOURCE_EXHAUSTED with a retry delay.
        let r = detect(
            "",
            "[API Error: {\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"message\":\"Quota exceeded. Please retry in 19.5s.\"}}]",
            None,
            NOW,
        )
        .unwrap();
        assert_eq!(r.resets_at_ms, Some(NOW + 19_500));
        // Aider through litellm.
        let r = detect(
            "litellm.RateLimitError: AnthropicException - rate limit exceeded\nRetry-After: 30\n",
            "",
            None,
            NOW,
        )
        .unwrap();
        assert_eq!(r.resets_at_ms, Some(NOW + 30_000));
        let r = detect(
            "",
            "Error: 429 Too Many Requests; resets at 2025-11-24T17:00:00Z",
            None,
            NOW,
        )
        .unwrap();
        assert_eq!(
            r.resets_at_ms,
            Some(
                yoi_core::Timestamp::parse("2025-11-24T17:00:00Z")
                    .unwrap()
                    .unix_millis()
            )
        );
    }

    #[test]
    fn other_failures_and_old_mentions_are_not_limits() {
        assert_eq!(
            detect("error: cannot find module\n", "exit 1", None, NOW),
            None
        );
        assert_eq!(detect("tests: 429 passed\n", "", None, NOW), None);
        // A mention far before the end (the agent's own work on a rate limiter) is not read.
        let mut out = String::from("implemented rate limit exceeded handling\n");
        for i in 0..100 {
            out.push_str(&format!("line {i}\n"));
        }
        assert_eq!(detect(&out, "", None, NOW), None);
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(duration_ms("20s"), Some(20_000));
        assert_eq!(duration_ms("1h2m"), Some(3_720_000));
        assert_eq!(duration_ms("2 hours, 3 minutes"), Some(7_380_000));
        assert_eq!(duration_ms("500ms"), Some(500));
        assert_eq!(duration_ms("soon"), None);
        assert_eq!(epoch("1764003600)"), Some(1_764_003_600_000));
    }
}
