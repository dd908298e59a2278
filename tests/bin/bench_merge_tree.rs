//! `yoi-bench-merge-tree [CASES] [SEED]`: yoi's three-way merge (gix) against `git merge-tree
//! --write-tree` on a seeded corpus (default 400 cases, seed 1). Prints the agreement, every
//! disagreement with the operations of both sides, and whether any is dangerous (yoi clean
//! where git is not, or a different clean tree).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let count: usize = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(400);
    let seed: u64 = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(1);
    let dir = tempfile::tempdir().unwrap();
    let cases = yoi_tests::merge_corpus::run(dir.path(), seed, count);
    let agree = cases.iter().filter(|c| c.agrees()).count();
    let clean = cases
        .iter()
        .filter(|c| matches!(c.git, yoi_tests::merge_corpus::Verdict::Clean(_)))
        .count();
    let dangerous = cases.iter().filter(|c| c.dangerous()).count();
    let mut ms: Vec<f64> = cases.iter().map(|c| c.yoi_ms).collect();
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "cases {count} (seed {seed}): git clean {clean}, conflicted {}",
        count - clean
    );
    println!(
        "agreement {agree}/{count} = {:.2}%; dangerous disagreements: {dangerous}",
        100.0 * agree as f64 / count as f64
    );
    println!(
        "yoi merge compute p50 {:.2} ms, p99 {:.2} ms",
        ms[ms.len() / 2],
        ms[(ms.len() - 1) * 99 / 100]
    );
    for c in cases.iter().filter(|c| !c.agrees()) {
        println!(
            "disagreement case {}: yoi {:?}, git {:?}; {}",
            c.n,
            c.yoi,
            c.git,
            c.ops.join("; ")
        );
    }
}
