//! yoi's three-way merge agrees with git's own (`git merge-tree --write-tree`) on a seeded
//! corpus of overlapping and disjoint edits, renames, deletions, additions and binary files,
//! and never calls a merge clean where git finds a conflict or merges to another tree.
//! (The 400-case run is `yoi-bench-merge-tree`, in BENCHMARKS.md.)

#[test]
fn yoi_and_git_agree_on_a_seeded_merge_corpus_and_yoi_is_never_cleaner() {
    let dir = tempfile::tempdir().unwrap();
    let cases = yoi_tests::merge_corpus::run(dir.path(), 7, 80);
    let conflicted = cases
        .iter()
        .filter(|c| c.git == yoi_tests::merge_corpus::Verdict::Conflicted)
        .count();
    // The corpus exercises both outcomes.
    assert!(
        (10..=70).contains(&conflicted),
        "{conflicted} of 80 conflicted"
    );
    let dangerous: Vec<_> = cases.iter().filter(|c| c.dangerous()).collect();
    assert!(dangerous.is_empty(), "{dangerous:#?}");
    let disagree: Vec<_> = cases.iter().filter(|c| !c.agrees()).collect();
    assert!(disagree.is_empty(), "{disagree:#?}");
}
