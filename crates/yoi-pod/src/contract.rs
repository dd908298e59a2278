//! Reading what an agent said: its final message by output kind, its usage, and the output
//! contract — trailer lines `YOI-RESULT: done|blocked|failed`, `YOI-SUMMARY: …` (and for
//! reviewers `YOI-VERDICT: …`) taken from the final message only. The exit code is not read
//! here.
//!
//! For a structured kind the final message is the agent's last message, not the tool output in
//! its stream. It is all of stdout, tool output included, for `text` and wherever the structured
//! reading finds nothing to stand on: `claude_json`, `gemini_json` or `goose_json` that does not
//! parse, or a `claude_stream_json` stream without a result event. A result file, when the
//! profile names one, replaces the final message whatever the kind.

use serde_json::Value;

/// What the agent's output says, before the contract is applied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Said {
    /// The final message the trailers are read from.
    pub final_message: String,
    /// The agent itself reported an error (e.g. Claude's `is_error`).
    pub agent_error: Option<String>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub tokens_cached: u64,
    /// A cost the agent reported.
    pub cost_usd: Option<f64>,
}

/// The output contract, read from a final message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract {
    pub result: yoi_core::report::ReportOutcome,
    pub summary: Option<String>,
    pub verdict: Option<String>,
    /// `YOI-FINDING:` lines, in order.
    pub findings: Vec<String>,
    /// `YOI-QUESTION:` lines, in order: what the agent asks a person.
    pub questions: Vec<String>,
}

/// Read `stdout` (and the result file's text, when the profile names one) as `kind`.
pub fn read_output(kind: &str, stdout: &str, result_file: Option<&str>) -> Said {
    let mut said = match kind {
        "claude_json" => serde_json::from_str::<Value>(stdout.trim())
            .map(|v| claude_result(&v))
            .unwrap_or_else(|_| text(stdout)),
        "claude_stream_json" => stdout
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["type"] == "result")
            .map(|v| claude_result(&v))
            .unwrap_or_else(|| text(stdout)),
        "codex_jsonl" => codex(stdout),
        "gemini_json" => serde_json::from_str::<Value>(stdout.trim())
            .map(|v| gemini(&v))
            .unwrap_or_else(|_| text(stdout)),
        "opencode_jsonl" => opencode(stdout),
        "goose_json" => serde_json::from_str::<Value>(stdout.trim())
            .map(|v| goose(&v))
            .unwrap_or_else(|_| text(stdout)),
        _ => text(stdout),
    };
    if let Some(file) = result_file {
        said.final_message = file.to_string();
    }
    said
}

/// What an agent that streams its usage has used so far, read from its output while it runs,
/// with the model it names: Claude Code's `stream-json` (each assistant message's `usage`,
/// once per message id, or the result event once there is one) and Codex's JSONL (its
/// `turn.completed` usage, or the running totals of `token_count` events when larger). `None`
/// for output kinds that report usage only at the end.
pub fn usage_so_far(kind: &str, stdout: &str) -> Option<(Said, Option<String>)> {
    let events = || {
        stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    };
    match kind {
        "claude_stream_json" => {
            if let Some(r) = events().rfind(|v| v["type"] == "result") {
                return Some((claude_result(&r), None));
            }
            // A message is printed once per content block, each with the message's usage so
            // far: the last line of each id counts.
            let mut by_id: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
            let mut model = None;
            for (i, v) in events().enumerate() {
                if v["type"] != "assistant" {
                    continue;
                }
                let m = &v["message"];
                let u = &m["usage"];
                let id = m["id"]
                    .as_str()
                    .map_or_else(|| i.to_string(), str::to_string);
                by_id.insert(
                    id,
                    (
                        n(&u["input_tokens"]) + n(&u["cache_creation_input_tokens"]),
                        n(&u["output_tokens"]),
                        n(&u["cache_read_input_tokens"]),
                    ),
                );
                if let Some(name) = m["model"].as_str() {
                    model = Some(name.to_string());
                }
            }
            let mut said = Said::default();
            for (i, o, c) in by_id.values() {
                said.tokens_in += i;
                said.tokens_out += o;
                said.tokens_cached += c;
            }
            Some((said, model))
        }
        "codex_jsonl" => {
            let mut said = codex(stdout);
            let last_total = events()
                .filter_map(|v| {
                    let msg = [&v["msg"], &v["payload"], &v]
                        .into_iter()
                        .find(|m| m["type"] == "token_count")?;
                    let t = &msg["info"]["total_token_usage"];
                    t.is_object().then(|| {
                        let cached = n(&t["cached_input_tokens"]);
                        (
                            n(&t["input_tokens"]).saturating_sub(cached),
                            n(&t["output_tokens"]),
                            cached,
                        )
                    })
                })
                .next_back();
            if let Some((i, o, c)) = last_total {
                if i + o + c > said.tokens_in + said.tokens_out + said.tokens_cached {
                    (said.tokens_in, said.tokens_out, said.tokens_cached) = (i, o, c);
                }
            }
            Some((said, None))
        }
        _ => None,
    }
}

fn text(stdout: &str) -> Said {
    let mut said = Said {
        final_message: stdout.to_string(),
        ..Said::default()
    };
    aider_usage(stdout, &mut said);
    said
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn claude_result(v: &Value) -> Said {
    let u = &v["usage"];
    Said {
        final_message: v["result"].as_str().unwrap_or_default().to_string(),
        agent_error: (v["is_error"].as_bool() == Some(true)).then(|| {
            format!(
                "the agent reported an error ({})",
                v["subtype"].as_str().unwrap_or("is_error")
            )
        }),
        tokens_in: n(&u["input_tokens"]) + n(&u["cache_creation_input_tokens"]),
        tokens_out: n(&u["output_tokens"]),
        tokens_cached: n(&u["cache_read_input_tokens"]),
        cost_usd: v["total_cost_usd"].as_f64(),
    }
}

fn codex(stdout: &str) -> Said {
    let mut said = Said::default();
    for v in stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        match v["type"].as_str() {
            Some("turn.completed") => {
                let u = &v["usage"];
                let cached = n(&u["cached_input_tokens"]);
                said.tokens_in += n(&u["input_tokens"]).saturating_sub(cached);
                said.tokens_cached += cached;
                said.tokens_out += n(&u["output_tokens"]);
            }
            Some("item.completed") if v["item"]["type"] == "agent_message" => {
                said.final_message = v["item"]["text"].as_str().unwrap_or_default().to_string();
            }
            Some("turn.failed") | Some("error") => {
                said.agent_error = Some(format!(
                    "the agent reported an error: {}",
                    v["error"]["message"]
                        .as_str()
                        .or(v["message"].as_str())
                        .unwrap_or("turn failed")
                ));
            }
            _ => {}
        }
    }
    said
}

fn gemini(v: &Value) -> Said {
    let mut said = Said {
        final_message: v["response"].as_str().unwrap_or_default().to_string(),
        agent_error: v["error"]["message"]
            .as_str()
            .map(|m| format!("the agent reported an error: {m}")),
        ..Said::default()
    };
    if let Some(models) = v["stats"]["models"].as_object() {
        for m in models.values() {
            let t = &m["tokens"];
            let cached = n(&t["cached"]);
            said.tokens_in += n(&t["prompt"]).saturating_sub(cached);
            said.tokens_cached += cached;
            said.tokens_out += n(&t["candidates"]);
        }
    }
    said
}

fn opencode(stdout: &str) -> Said {
    let mut said = Said::default();
    let mut cost = 0.0;
    let mut costed = false;
    for v in stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        match v["type"].as_str() {
            Some("text") => {
                said.final_message = v["part"]["text"].as_str().unwrap_or_default().to_string()
            }
            Some("step_finish") => {
                let t = &v["part"]["tokens"];
                said.tokens_in += n(&t["input"]);
                said.tokens_out += n(&t["output"]);
                said.tokens_cached += n(&t["cache"]["read"]);
                if let Some(c) = v["part"]["cost"].as_f64() {
                    cost += c;
                    costed = true;
                }
            }
            Some("error") => said.agent_error = Some("the agent reported an error event".into()),
            _ => {}
        }
    }
    said.cost_usd = costed.then_some(cost);
    said
}

fn goose(v: &Value) -> Said {
    let last = v["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        })
        .unwrap_or_default();
    Said {
        final_message: last,
        tokens_in: n(&v["metadata"]["input_tokens"]),
        tokens_out: n(&v["metadata"]["output_tokens"]),
        ..Said::default()
    }
}

/// Aider prints `Tokens: 1.2k sent, 345 received. Cost: $0.01 message, $0.03 session.`
fn aider_usage(stdout: &str, said: &mut Said) {
    for line in stdout.lines() {
        let Some(rest) = line.trim().strip_prefix("Tokens: ") else {
            continue;
        };
        let num = |s: &str| -> u64 {
            let s = s.split_whitespace().next().unwrap_or("0");
            let (digits, mult) = match s.strip_suffix('k') {
                Some(d) => (d, 1000.0),
                None => (s, 1.0),
            };
            (digits.parse::<f64>().unwrap_or(0.0) * mult) as u64
        };
        if let Some(sent) = rest.split(" sent").next() {
            said.tokens_in += num(sent);
        }
        if let Some(recv) = rest
            .split(", ")
            .nth(1)
            .and_then(|r| r.split(" received").next())
        {
            said.tokens_out += num(recv);
        }
        if let Some(cost) = line
            .split("Cost: $")
            .nth(1)
            .and_then(|c| c.split_whitespace().next())
        {
            if let Ok(c) = cost.parse::<f64>() {
                said.cost_usd = Some(said.cost_usd.unwrap_or(0.0) + c);
            }
        }
    }
}

/// Why a final message gives no contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    /// No `YOI-RESULT:` line at all: the agent forgot its trailer.
    #[error("the output contract is missing: the final message has no `YOI-RESULT: done|blocked|failed` line")]
    Missing,
    /// A `YOI-RESULT:` line with a value that is not a result.
    #[error("the output contract is malformed: `YOI-RESULT: {0}` must be done, blocked or failed")]
    Malformed(String),
}

/// At most this many `YOI-QUESTION:` lines are kept (the API's limit); the rest are dropped.
pub const MAX_QUESTIONS: usize = 20;
/// A question is cut to this many characters.
pub const MAX_QUESTION_CHARS: usize = 2000;

/// The contract in a final message: the last `YOI-RESULT:` line with a known value, the last
/// `YOI-SUMMARY:` and `YOI-VERDICT:`. A missing or malformed result line is an error that says
/// what was missing. A line whose value still lists the choices (`done | blocked | failed`, or
/// `approve | request_changes`) is the prompt's template echoed back, not an answer, and is
/// skipped.
pub fn read_contract(final_message: &str) -> Result<Contract, ContractError> {
    let mut result = None;
    let mut bad = None;
    let mut summary = None;
    let mut verdict = None;
    let mut findings = Vec::new();
    let mut questions = Vec::new();
    for line in final_message.lines() {
        let line = line
            .trim()
            .trim_start_matches(['*', '`', '-', ' '])
            .trim_end_matches(['*', '`']);
        let template = |v: &str| v.contains('|');
        if let Some(v) = line.strip_prefix("YOI-RESULT:") {
            use yoi_core::report::ReportOutcome as O;
            let v = v.trim().to_ascii_lowercase();
            match v.as_str() {
                "done" => result = Some(O::Done),
                "blocked" => result = Some(O::Blocked),
                "failed" => result = Some(O::Failed),
                _ if template(&v) => {}
                _ => bad = Some(v),
            }
        } else if let Some(v) = line.strip_prefix("YOI-SUMMARY:") {
            summary = Some(v.trim().to_string()).filter(|s| !s.is_empty());
        } else if let Some(v) = line.strip_prefix("YOI-VERDICT:") {
            let v = v.trim().to_ascii_lowercase();
            if !template(&v) {
                verdict = Some(v).filter(|s| !s.is_empty());
            }
        } else if let Some(v) = line.strip_prefix("YOI-FINDING:") {
            findings.extend(Some(v.trim().to_string()).filter(|s| !s.is_empty()));
        } else if let Some(v) = line.strip_prefix("YOI-QUESTION:") {
            let v = v.trim();
            // `<your question>` is the prompt's template echoed back, not a question.
            let template = v.starts_with('<') && v.ends_with('>');
            if !v.is_empty() && !template {
                questions.push(v.chars().take(MAX_QUESTION_CHARS).collect());
            }
        }
    }
    questions.truncate(MAX_QUESTIONS);
    match (result, bad) {
        (Some(result), _) => Ok(Contract {
            result,
            summary,
            verdict,
            findings,
            questions,
        }),
        (None, Some(v)) => Err(ContractError::Malformed(v)),
        (None, None) => Err(ContractError::Missing),
    }
}

/// Whether the agent forgot its trailer, so a follow-up turn should ask for it: no result line
/// at all, or a reviewer's `done` without its verdict line. A malformed line is an answer, and
/// is not asked again.
pub fn forgotten(contract: &Result<Contract, ContractError>, reviewer: bool) -> bool {
    match contract {
        Err(ContractError::Missing) => true,
        Err(ContractError::Malformed(_)) => false,
        Ok(c) => {
            reviewer && c.result == yoi_core::report::ReportOutcome::Done && c.verdict.is_none()
        }
    }
}

/// The question of the follow-up turn: only the trailer lines, about the work just done.
pub fn follow_up_question(reviewer: bool) -> String {
    let mut q = String::from(
        "Your previous answer ended without the trailer lines yoi reads. Change nothing now. \
         Reply with only these lines, filled in for the work you just did:\n\n\
         YOI-RESULT: done (or blocked, or failed)\n\
         YOI-SUMMARY: one sentence on what you did or why you stopped\n",
    );
    if reviewer {
        q.push_str("YOI-VERDICT: approve (or request_changes)\nYOI-FINDING: one line per problem found, if any\n");
    }
    q
}

/// The last paragraph of a final message that has no contract, as the attempt's summary. A
/// `text` final message is all of stdout, so the agent's bookkeeping is left out — usage lines
/// (`Tokens: …`, `Cost: …`) and `Applied edit to …` — and the last paragraph that reads as
/// prose (it ends with `.`, `!` or `?`) is taken, else the last one. It is joined into one
/// line and cut to 400 characters.
pub fn last_paragraph(final_message: &str) -> Option<String> {
    const NOISE: [&str; 3] = ["Tokens: ", "Cost: ", "Applied edit to "];
    let mut paragraphs: Vec<Vec<&str>> = vec![Vec::new()];
    for line in final_message.lines().map(str::trim) {
        if NOISE.iter().any(|n| line.starts_with(n)) {
            continue;
        }
        match paragraphs.last_mut() {
            Some(p) if !line.is_empty() => p.push(line),
            Some(p) if !p.is_empty() => paragraphs.push(Vec::new()),
            _ => {}
        }
    }
    paragraphs.retain(|p| !p.is_empty());
    let prose = |p: &&Vec<&str>| p.last().is_some_and(|l| l.ends_with(['.', '!', '?']));
    let chosen = paragraphs.iter().rev().find(prose).or(paragraphs.last())?;
    let text = chosen.join(" ");
    Some(match text.char_indices().nth(400) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_come_from_the_final_message_and_the_last_one_wins() {
        let c = read_contract(
            "Did it.\nYOI-RESULT: failed\n**YOI-RESULT: done**\nYOI-SUMMARY: added the thing\n",
        )
        .unwrap();
        assert_eq!(c.result, yoi_core::report::ReportOutcome::Done);
        assert_eq!(c.summary.as_deref(), Some("added the thing"));
        assert_eq!(
            read_contract("no trailers").unwrap_err(),
            ContractError::Missing
        );
        assert!(read_contract("YOI-RESULT: maybe")
            .unwrap_err()
            .to_string()
            .contains("malformed"));
    }

    #[test]
    fn questions_are_every_question_line_in_order_without_the_echoed_template() {
        let c = read_contract(
            "I stopped.\nYOI-QUESTION: <your question>\n- YOI-QUESTION: Which greeting: hello or hi?\n\
             YOI-QUESTION:   \n**YOI-QUESTION: May I add a test file?**\nYOI-RESULT: blocked\nYOI-SUMMARY: two choices\n",
        )
        .unwrap();
        assert_eq!(c.result, yoi_core::report::ReportOutcome::Blocked);
        assert_eq!(
            c.questions,
            ["Which greeting: hello or hi?", "May I add a test file?"]
        );
        let many: String = (0..30)
            .map(|i| format!("YOI-QUESTION: q{i}\n"))
            .chain(["YOI-RESULT: blocked\n".to_string()])
            .collect();
        assert_eq!(read_contract(&many).unwrap().questions.len(), MAX_QUESTIONS);
        assert!(read_contract("YOI-RESULT: done")
            .unwrap()
            .questions
            .is_empty());
    }

    #[test]
    fn claude_json_reads_the_result_and_the_reported_cost() {
        let out = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok\nYOI-RESULT: done","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":7},"total_cost_usd":0.012}"#;
        let s = read_output("claude_json", out, None);
        assert_eq!(s.final_message, "ok\nYOI-RESULT: done");
        assert_eq!((s.tokens_in, s.tokens_cached, s.tokens_out), (10, 5, 7));
        assert_eq!(s.cost_usd, Some(0.012));
        assert_eq!(s.agent_error, None);
        let err = read_output(
            "claude_json",
            r#"{"is_error":true,"subtype":"success","result":""}"#,
            None,
        );
        assert!(
            err.agent_error.is_some(),
            "exit code 0 with is_error is still an error"
        );
    }

    #[test]
    fn aider_text_reads_tokens_and_cost() {
        let s = read_output("text", "Applied edit\nTokens: 1.2k sent, 345 received. Cost: $0.01 message, $0.03 session.\nYOI-RESULT: done\n", None);
        assert_eq!((s.tokens_in, s.tokens_out), (1200, 345));
        assert_eq!(s.cost_usd, Some(0.01));
    }

    #[test]
    fn usage_so_far_counts_each_claude_message_once_before_the_result() {
        // Claude Code prints a message once per content block, each with its usage so far.
        let out = concat!(
            r#"{"type":"system","subtype":"init","model":"claude-sonnet-4-5"}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":5,"output_tokens":3}}}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":5,"output_tokens":40}}}"#,
            "\n",
            r#"{"type":"user","message":{"content":[{"type":"tool_result"}]}}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"msg_2","model":"claude-sonnet-4-5","usage":{"input_tokens":300,"output_tokens":7}}}"#,
            "\n",
        );
        let (said, model) = usage_so_far("claude_stream_json", out).unwrap();
        assert_eq!(
            (said.tokens_in, said.tokens_out, said.tokens_cached),
            (420, 47, 5)
        );
        assert_eq!(model.as_deref(), Some("claude-sonnet-4-5"));
        // Once the result is there, its totals and reported cost are the usage.
        let done = format!(
            "{out}{}\n",
            r#"{"type":"result","subtype":"success","result":"ok","total_cost_usd":0.25,"usage":{"input_tokens":500,"output_tokens":60}}"#
        );
        let (said, _) = usage_so_far("claude_stream_json", &done).unwrap();
        assert_eq!((said.tokens_in, said.cost_usd), (500, Some(0.25)));
        // Kinds that report only at the end have nothing to say while running.
        assert!(usage_so_far("claude_json", out).is_none());
        assert!(usage_so_far("text", "Tokens: 1k sent").is_none());
    }

    #[test]
    fn usage_so_far_takes_codex_running_totals_when_they_are_ahead() {
        let out = concat!(
            r#"{"type":"thread.started","thread_id":"t"}"#,
            "\n",
            r#"{"id":"0","msg":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":50,"total_tokens":1050}}}}"#,
            "\n",
            r#"{"id":"0","msg":{"type":"token_count","info":{"total_token_usage":{"input_tokens":3000,"cached_input_tokens":500,"output_tokens":90,"total_tokens":3090}}}}"#,
            "\n",
        );
        let (said, _) = usage_so_far("codex_jsonl", out).unwrap();
        assert_eq!(
            (said.tokens_in, said.tokens_out, said.tokens_cached),
            (2500, 90, 500)
        );
        let finished = format!(
            "{out}{}\n",
            r#"{"type":"turn.completed","usage":{"input_tokens":4000,"cached_input_tokens":500,"output_tokens":100}}"#
        );
        let (said, _) = usage_so_far("codex_jsonl", &finished).unwrap();
        assert_eq!(
            (said.tokens_in, said.tokens_out, said.tokens_cached),
            (3500, 100, 500)
        );
    }

    #[test]
    fn codex_sums_turns_and_takes_the_last_message() {
        let out = "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":100,\"cached_input_tokens\":40,\"output_tokens\":9}}\n{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"YOI-RESULT: done\"}}\n";
        let s = read_output("codex_jsonl", out, None);
        assert_eq!((s.tokens_in, s.tokens_cached, s.tokens_out), (60, 40, 9));
        assert_eq!(s.final_message, "YOI-RESULT: done");
        assert_eq!(
            read_output("codex_jsonl", out, Some("from file")).final_message,
            "from file"
        );
    }

    #[test]
    fn the_prompts_template_echoed_back_is_no_answer() {
        // Aider echoes its message; the template's choices are not a result or a verdict.
        let echoed =
            "YOI-RESULT: done | blocked | failed\nYOI-VERDICT: approve | request_changes\n";
        assert_eq!(read_contract(echoed).unwrap_err(), ContractError::Missing);
        let c = read_contract(&format!("{echoed}YOI-RESULT: done\n")).unwrap();
        assert_eq!(c.verdict, None);
        assert!(
            forgotten(&Ok(c.clone()), true),
            "a reviewer's done needs its verdict"
        );
        assert!(!forgotten(&Ok(c), false));
        assert!(forgotten(&read_contract(echoed), false));
        assert!(!forgotten(&read_contract("YOI-RESULT: maybe"), false));
    }

    #[test]
    fn the_last_paragraph_is_the_last_prose_without_the_agents_bookkeeping() {
        let m = "Aider v0.86\n\nI created greeting.txt\nwith a greeting.\n\nTokens: 812 sent, 41 received. Cost: $0.01 message.\n\n";
        assert_eq!(
            last_paragraph(m).as_deref(),
            Some("I created greeting.txt with a greeting.")
        );
        // What Aider prints after the reply: the file's name and the edit it applied.
        let aider = format!("{m}HTTPSConnectionPool(host='x'): Max retries exceeded)\n\nhello.txt\nApplied edit to hello.txt\n");
        assert_eq!(
            last_paragraph(&aider).as_deref(),
            Some("I created greeting.txt with a greeting.")
        );
        assert_eq!(last_paragraph("just words").as_deref(), Some("just words"));
        assert_eq!(last_paragraph("\n  \n"), None);
        let long = "x".repeat(500);
        assert_eq!(last_paragraph(&long).unwrap().chars().count(), 401);
    }
}
