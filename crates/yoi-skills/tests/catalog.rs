//! The catalog over real folders: discovery, priority, shadowing, provenance, host-path hiding.

mod common;

use std::fs;

use common::{skill_md, write_file, write_skill};
use yoi_skills::digest::sha256_hex;
use yoi_skills::{rules, Catalog, CatalogConfig, Diagnostic, SkillSource, SkippedFolder};

struct Fixture {
    _tmp: tempfile::TempDir,
    config: CatalogConfig,
}

/// A repository with `.yoi/skills`, one extra root inside it and one outside it.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    fs::create_dir_all(repo.join(".yoi/skills")).unwrap();
    fs::create_dir_all(repo.join("team-skills")).unwrap();
    fs::create_dir_all(tmp.path().join("outside")).unwrap();
    let mut config = CatalogConfig::new(&repo);
    config.extra_roots = vec![repo.join("team-skills"), tmp.path().join("outside")];
    Fixture { _tmp: tmp, config }
}

fn workspace(f: &Fixture) -> std::path::PathBuf {
    f.config.repo_root.join(".yoi/skills")
}

#[test]
fn finds_direct_subfolders_with_skill_md_only() {
    let f = fixture();
    let ws = workspace(&f);
    write_skill(&ws, "alpha", &skill_md("alpha", "First."));
    write_file(&ws, "README.md", b"# not a skill");
    write_skill(&ws, ".hidden", &skill_md("hidden", "Hidden."));
    fs::create_dir_all(ws.join("empty")).unwrap();
    write_file(
        &ws,
        "lowercase/skill.md",
        skill_md("lowercase", "Wrong file name.").as_bytes(),
    );
    write_skill(&ws.join("nested"), "deep", &skill_md("deep", "Too deep."));

    let catalog = Catalog::load(&f.config);
    let workspace_names: Vec<&str> = catalog
        .skills()
        .iter()
        .filter(|s| s.source == SkillSource::Workspace)
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(workspace_names, ["alpha"]);
    let skipped: Vec<(&str, &str)> = catalog
        .skipped()
        .iter()
        .map(|s| (s.name.as_str(), s.diagnostic.rule))
        .collect();
    assert_eq!(
        skipped,
        [
            ("empty", rules::FILE_MISSING),
            ("lowercase", rules::FILE_NAME),
            ("nested", rules::FILE_MISSING)
        ]
    );
}

#[test]
fn a_skill_file_in_the_wrong_case_is_skipped_with_an_error_naming_skill_md() {
    let f = fixture();
    write_file(
        &workspace(&f),
        "mixed-case/Skill.md",
        skill_md("mixed-case", "Wrong case.").as_bytes(),
    );
    let catalog = Catalog::load(&f.config);
    assert!(catalog.get("mixed-case").is_none());
    assert_eq!(
        catalog.skipped(),
        [SkippedFolder {
            name: "mixed-case".into(),
            source: SkillSource::Workspace,
            location: ".yoi/skills/mixed-case/Skill.md".into(),
            diagnostic: Diagnostic::error(
                rules::FILE_NAME,
                "`mixed-case/Skill.md` must be named exactly `SKILL.md` (the case matters), so \
                 the folder `mixed-case` is not loaded as a skill; rename the file to \
                 `mixed-case/SKILL.md`",
                None
            ),
        }]
    );
    assert!(catalog.problems().is_empty());
}

#[test]
fn a_folder_without_skill_md_is_skipped_with_a_file_missing_error() {
    let f = fixture();
    write_file(&f.config.extra_roots[0], "notes/README.md", b"# notes");
    let catalog = Catalog::load(&f.config);
    assert!(catalog.get("notes").is_none());
    assert_eq!(
        catalog.skipped(),
        [SkippedFolder {
            name: "notes".into(),
            source: SkillSource::Extra { index: 0 },
            location: "team-skills/notes/SKILL.md".into(),
            diagnostic: Diagnostic::error(
                rules::FILE_MISSING,
                "the folder `notes` has no `SKILL.md`, so it is not a skill; add \
                 `notes/SKILL.md` or move the folder out of the skills folder",
                None
            ),
        }]
    );
}

#[test]
fn a_skill_md_that_is_a_folder_is_not_a_skill() {
    let f = fixture();
    fs::create_dir_all(workspace(&f).join("odd/SKILL.md")).unwrap();
    let catalog = Catalog::load(&f.config);
    assert_eq!(catalog.skipped().len(), 1);
    assert_eq!(
        catalog.skipped()[0].diagnostic,
        Diagnostic::error(
            rules::FILE_MISSING,
            "`odd/SKILL.md` is not a file (a folder or a broken link), so the folder `odd` is \
             not loaded as a skill",
            None
        )
    );
}

#[test]
fn scanning_a_skill_folder_itself_says_to_scan_its_parent() {
    let f = fixture();
    let skill = write_skill(&workspace(&f), "solo", &skill_md("solo", "Alone."));
    write_file(&skill, "scripts/run.sh", b"echo hi");
    let mut config = f.config.clone();
    config.workspace_root = skill;
    config.extra_roots.clear();
    let catalog = Catalog::load(&config);
    assert_eq!(catalog.skipped().len(), 1);
    assert_eq!(catalog.skipped()[0].name, "scripts");
    assert!(
        catalog.skipped()[0].diagnostic.message.ends_with(
            "; the folder being scanned holds a `SKILL.md` itself: to check that skill, lint \
             the folder that contains it"
        ),
        "{:?}",
        catalog.skipped()[0].diagnostic
    );
}

#[test]
fn entries_are_sorted_by_name_and_include_builtins() {
    let f = fixture();
    write_skill(&workspace(&f), "zeta", &skill_md("zeta", "Z."));
    write_skill(&workspace(&f), "beta", &skill_md("beta", "B."));
    let catalog = Catalog::load(&f.config);
    let names: Vec<&str> = catalog.skills().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "agent-skills-format",
            "beta",
            "yoi-review",
            "yoi-ticket-work",
            "zeta"
        ]
    );
    assert_eq!(
        catalog.get("yoi-review").unwrap().source,
        SkillSource::Builtin
    );
    assert_eq!(
        catalog.get("yoi-review").unwrap().location,
        "builtin:yoi-review"
    );
    assert!(catalog.problems().is_empty(), "{:?}", catalog.problems());
}

#[test]
fn workspace_shadows_extras_which_shadow_builtins_in_order() {
    let f = fixture();
    let ws_text = skill_md("yoi-review", "Workspace review.");
    let team_text = skill_md("yoi-review", "Team review.");
    let outside_text = skill_md("yoi-review", "Outside review.");
    write_skill(&workspace(&f), "yoi-review", &ws_text);
    write_skill(&f.config.extra_roots[0], "yoi-review", &team_text);
    write_skill(&f.config.extra_roots[1], "yoi-review", &outside_text);
    write_skill(
        &f.config.extra_roots[1],
        "shared",
        &skill_md("shared", "From outside."),
    );
    write_skill(
        &f.config.extra_roots[0],
        "shared",
        &skill_md("shared", "From the team."),
    );

    let catalog = Catalog::load(&f.config);
    let review = catalog.get("yoi-review").unwrap();
    assert_eq!(review.source, SkillSource::Workspace);
    assert_eq!(review.description.as_deref(), Some("Workspace review."));
    assert_eq!(review.digest, sha256_hex(ws_text.as_bytes()));
    assert_eq!(review.location, ".yoi/skills/yoi-review/SKILL.md");
    let shadowed: Vec<(SkillSource, &str)> = review
        .shadows
        .iter()
        .map(|s| (s.source, s.location.as_str()))
        .collect();
    assert_eq!(
        shadowed,
        [
            (
                SkillSource::Extra { index: 0 },
                "team-skills/yoi-review/SKILL.md"
            ),
            (
                SkillSource::Extra { index: 1 },
                "extra:1:yoi-review/SKILL.md"
            ),
            (SkillSource::Builtin, "builtin:yoi-review"),
        ]
    );
    assert_eq!(review.shadows[0].digest, sha256_hex(team_text.as_bytes()));
    assert_eq!(
        review.shadows[1].digest,
        sha256_hex(outside_text.as_bytes())
    );
    assert_eq!(
        review.shadows[2].digest,
        sha256_hex(yoi_skills::builtin("yoi-review").unwrap().skill_md)
    );

    let shared = catalog.get("shared").unwrap();
    assert_eq!(shared.source, SkillSource::Extra { index: 0 });
    assert_eq!(shared.shadows.len(), 1);
    assert_eq!(shared.shadows[0].source, SkillSource::Extra { index: 1 });
}

#[test]
fn an_invalid_higher_skill_still_shadows_and_is_listed_with_diagnostics() {
    let f = fixture();
    write_skill(&workspace(&f), "yoi-review", "---\nname: Yoi-Review\n---\n");
    let catalog = Catalog::load(&f.config);
    let entry = catalog.get("yoi-review").unwrap();
    assert!(!entry.valid);
    assert_eq!(entry.source, SkillSource::Workspace);
    let ids: Vec<&str> = entry.diagnostics.iter().map(|d| d.rule).collect();
    assert_eq!(
        ids,
        [
            rules::NAME_CASE,
            rules::NAME_DIR_MATCH,
            rules::DESC_REQUIRED
        ]
    );
    assert!(entry.shadows[0].valid, "the shadowed built-in is valid");
    let summary = catalog
        .list()
        .into_iter()
        .find(|s| s.name == "yoi-review")
        .unwrap();
    assert!(!summary.valid);
    assert_eq!(summary.diagnostic_count, 3);
}

#[test]
fn unparseable_files_are_listed_invalid() {
    let f = fixture();
    write_skill(&workspace(&f), "broken", "no frontmatter here");
    let catalog = Catalog::load(&f.config);
    let entry = catalog.get("broken").unwrap();
    assert!(!entry.valid);
    assert_eq!(entry.diagnostics[0].rule, rules::FM_START);
    assert_eq!(entry.description, None);
}

#[test]
fn serialised_catalog_never_contains_a_host_path() {
    let f = fixture();
    write_skill(&workspace(&f), "alpha", &skill_md("alpha", "A."));
    write_skill(&f.config.extra_roots[1], "outer", &skill_md("outer", "O."));
    write_file(&f.config.extra_roots[1], "loose/skill.md", b"x");
    let mut config = f.config.clone();
    config
        .extra_roots
        .push(f.config.repo_root.join("does-not-exist"));
    let catalog = Catalog::load(&config);
    let json = serde_json::to_string(&catalog).unwrap();
    let host = f._tmp.path().to_str().unwrap();
    assert!(!json.contains(host), "host path leaked: {json}");
    assert!(
        json.contains("\"location\":\"extra:1:outer/SKILL.md\""),
        "{json}"
    );
    assert!(
        json.contains("\"location\":\"extra:1:loose/skill.md\""),
        "{json}"
    );
    assert_eq!(catalog.problems().len(), 1);
    assert_eq!(
        catalog.problems()[0].source,
        SkillSource::Extra { index: 2 }
    );
    assert!(catalog
        .get("alpha")
        .unwrap()
        .host_dir()
        .unwrap()
        .ends_with("alpha"));
}

#[test]
fn list_view_carries_only_name_description_source_and_validity() {
    let f = fixture();
    write_skill(&workspace(&f), "alpha", &skill_md("alpha", "A."));
    let catalog = Catalog::load(&f.config);
    let json = serde_json::to_value(catalog.list()).unwrap();
    let alpha = json
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "alpha")
        .unwrap();
    let mut keys: Vec<&str> = alpha
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["description", "diagnostic_count", "name", "source", "valid"]
    );
    assert_eq!(alpha["source"]["kind"], "workspace");
}

#[test]
fn a_missing_workspace_root_is_just_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let catalog = Catalog::load(&CatalogConfig::new(tmp.path()));
    assert!(catalog.problems().is_empty());
    assert_eq!(catalog.skills().len(), yoi_skills::builtins().len());
}

#[test]
fn loading_twice_gives_the_same_catalog() {
    let f = fixture();
    for name in ["c", "a", "b"] {
        write_skill(&workspace(&f), name, &skill_md(name, "Same."));
    }
    assert_eq!(Catalog::load(&f.config), Catalog::load(&f.config));
}
