//! `yoi-sim`: run seeded schedules of the whole loop and report invariant violations.
//!
//! ```text
//! yoi-sim --seed N [--steps S]              one schedule; on a violation, its shrunk reproduction
//! yoi-sim --seeds A..B [--steps S] [--jobs J]   many; schedules per second and every violation
//! yoi-sim --replay FILE                     a schedule in its text form (one action per line)
//! ```
//!
//! Exits 0 when every invariant held, 1 on a violation, 2 on bad usage.

use std::process::ExitCode;

use yoi_sim::{batch, generate, parse, render, run, shrink, Action, Violation};

const USAGE: &str =
    "usage: yoi-sim (--seed N | --seeds A..B | --replay FILE) [--steps S] [--jobs J] [--no-shrink]";

fn main() -> ExitCode {
    match main_inner() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("yoi-sim: {e}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn main_inner() -> Result<ExitCode, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut seed = None;
    let mut seeds = None;
    let mut replay = None;
    let mut steps = 120usize;
    let mut jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut do_shrink = true;
    let mut i = 0;
    let value = |i: usize| {
        args.get(i + 1)
            .cloned()
            .ok_or_else(|| format!("{} needs a value", args[i]))
    };
    while i < args.len() {
        match args[i].as_str() {
            "--seed" => {
                seed = Some(
                    value(i)?
                        .parse::<u64>()
                        .map_err(|e| format!("--seed: {e}"))?,
                )
            }
            "--seeds" => {
                let v = value(i)?;
                let (a, b) = v.split_once("..").ok_or("--seeds takes A..B")?;
                let a: u64 = a.parse().map_err(|e| format!("--seeds: {e}"))?;
                let b: u64 = b.parse().map_err(|e| format!("--seeds: {e}"))?;
                if b <= a {
                    return Err("--seeds A..B needs B > A".into());
                }
                seeds = Some(a..b);
            }
            "--replay" => replay = Some(value(i)?),
            "--steps" => steps = value(i)?.parse().map_err(|e| format!("--steps: {e}"))?,
            "--jobs" => jobs = value(i)?.parse().map_err(|e| format!("--jobs: {e}"))?,
            "--no-shrink" => {
                do_shrink = false;
                i += 1;
                continue;
            }
            a => return Err(format!("unknown argument `{a}`")),
        }
        i += 2;
    }
    match (seed, seeds, replay) {
        (Some(seed), None, None) => Ok(one(
            &generate(seed, steps),
            &format!("seed {seed}"),
            do_shrink,
        )),
        (None, None, Some(file)) => {
            let text = std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}"))?;
            let actions = parse(&text).map_err(|e| format!("{file}: {e}"))?;
            Ok(one(&actions, &file, do_shrink))
        }
        (None, Some(range), None) => {
            let (a, b) = (range.start, range.end);
            // In chunks of 10,000, with a line after each, so a long run shows where it is.
            let mut out = yoi_sim::Batch::default();
            let mut at = a;
            while at < b {
                let end = (at + 10_000).min(b);
                let part = batch(at..end, steps, jobs);
                out.schedules += part.schedules;
                out.stats.add(&part.stats);
                out.failures.extend(part.failures);
                out.seconds += part.seconds;
                at = end;
                if b - a > 10_000 {
                    println!(
                        "  .. {} schedules, {} violations, {:.0} s",
                        out.schedules,
                        out.failures.len(),
                        out.seconds
                    );
                }
            }
            let st = &out.stats;
            println!(
                "seeds {a}..{b}: {} schedules of {steps} actions in {:.1} s ({:.1} schedules/s, {jobs} jobs)",
                out.schedules,
                out.seconds,
                out.schedules as f64 / out.seconds.max(1e-9)
            );
            println!(
                "  {} steps, {} tickets created, {} accepted, {} merged, {} crashes, {} restarts, {} results applied ({} kept without their contract, {} failures whose work the next attempt kept), {} refused, {} refusals of people's operations",
                st.steps, st.created, st.accepted, st.merged, st.crashes, st.restarts, st.results_applied, st.contract_missing, st.work_kept, st.results_refused, st.human_refusals
            );
            println!(
                "  spending: {} attempts rate-limited, {} claims held back by a budget or a pause, {} budgets added to",
                st.rate_limited, st.limited_claims, st.grants
            );
            let f = &st.forge;
            println!(
                "  forge: {} tickets ending in a pull request, {} driver passes, {} pull requests opened, {} merged, {} check results, {} reviews and comments, {} person pushes, webhooks {} taken / {} sent twice / {} lost, {} faults",
                f.tickets, f.passes, f.prs_opened, f.prs_merged, f.check_results, f.reviews, f.person_pushes, f.webhooks_taken, f.webhooks_repeated, f.webhooks_lost, f.faults
            );
            println!(
                "  people in the loop: {} questions asked, {} answered, {} notifications received",
                st.questions, st.answers, st.notified
            );
            let r = &st.remote;
            println!(
                "  remote pods: {} pushes written ({} after their claim ended), {} refused, {} results applied, {} checks and verdicts applied, {} reports lost, {} stopped pods woke",
                r.pushes, r.landed_late, r.pushes_refused, r.results_applied, r.read_only_applied, r.reports_lost, r.resumed
            );
            println!("  invariant violations: {}", out.failures.len());
            for (seed, v) in &out.failures {
                println!("  seed {seed}: {v}");
            }
            if let Some((seed, _)) = out.failures.first() {
                println!("replay the first with: yoi-sim --seed {seed} --steps {steps}");
                return Ok(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
        _ => Err("give exactly one of --seed, --seeds and --replay".into()),
    }
}

fn one(actions: &[Action], name: &str, do_shrink: bool) -> ExitCode {
    match run(actions) {
        Ok(st) => {
            println!(
                "{name}: every invariant held over {} actions ({st:?})",
                actions.len()
            );
            ExitCode::SUCCESS
        }
        Err(v) => {
            report(name, &v);
            if do_shrink {
                let (small, sv) = shrink(actions, &v, 400);
                println!("\nshrunk to {} actions:", small.len());
                report("the reproduction", &sv);
                println!("--- schedule (save it and run `yoi-sim --replay FILE`) ---");
                print!("{}", render(&small));
            }
            ExitCode::from(1)
        }
    }
}

fn report(name: &str, v: &Violation) {
    println!("{name}: {v}");
    println!("what happened last:");
    for line in &v.trace {
        println!("  {line}");
    }
}
