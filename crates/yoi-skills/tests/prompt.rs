//! The `<available_skills>` block and the activation wrapper.

mod common;

use common::{skill_md, write_skill, MemoryRecorder};
use yoi_skills::{
    activate, render_activation, render_available_skills, ActivationRequest, Catalog, CatalogConfig,
};

#[test]
fn renders_one_escaped_element_per_valid_skill_with_its_location() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join(".yoi/skills");
    write_skill(
        &skills,
        "alpha",
        "---\nname: alpha\ndescription: \"Use for <xml> & 'quotes' \\\"here\\\".\"\n---\n",
    );
    write_skill(
        &skills,
        "broken",
        "---\nname: Broken\ndescription: d\n---\n",
    );
    let catalog = Catalog::load(&CatalogConfig::new(tmp.path()));
    let block = render_available_skills(&catalog);
    let expected_alpha = "<skill>\n<name>alpha</name>\n<description>Use for &lt;xml&gt; &amp; &apos;quotes&apos; &quot;here&quot;.</description>\n<location>.yoi/skills/alpha/SKILL.md</location>\n</skill>\n";
    assert!(block.starts_with("<available_skills>\n"), "{block}");
    assert!(block.ends_with("</available_skills>\n"), "{block}");
    assert!(block.contains(expected_alpha), "{block}");
    assert!(
        block.contains("<location>builtin:yoi-review</location>"),
        "{block}"
    );
    assert!(
        !block.contains("broken"),
        "invalid skills are not offered: {block}"
    );
    assert_eq!(
        block.matches("<skill>").count(),
        1 + yoi_skills::builtins().len()
    );
    assert!(!block.contains(tmp.path().to_str().unwrap()));
}

#[test]
fn renders_nothing_when_no_skill_is_valid() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join(".yoi/skills");
    for builtin in yoi_skills::builtins() {
        // Broken workspace copies shadow every built-in, so nothing valid remains.
        write_skill(&skills, builtin.name, "not a skill file");
    }
    let catalog = Catalog::load(&CatalogConfig::new(tmp.path()));
    assert_eq!(catalog.valid_skills().count(), 0);
    assert_eq!(render_available_skills(&catalog), "");
}

#[test]
fn wraps_an_activation_with_its_resources() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join(".yoi/skills");
    let demo = write_skill(&skills, "demo", &skill_md("demo", "D."));
    std::fs::create_dir_all(demo.join("references")).unwrap();
    std::fs::write(demo.join("references/a&b.md"), "x").unwrap();
    let catalog = Catalog::load(&CatalogConfig::new(tmp.path()));
    let request = ActivationRequest {
        who: "alice".into(),
        ticket: None,
        assignment: None,
    };
    let activation = activate(&catalog, "demo", request, &mut MemoryRecorder::default()).unwrap();
    let text = render_activation(&activation);
    assert!(text.starts_with("<skill_content name=\"demo\" location=\".yoi/skills/demo/SKILL.md\">\n# demo\n\nDo the thing.\n"), "{text}");
    assert!(
        text.contains(
            "<skill_resources>\n<file>references/a&amp;b.md</file>\n</skill_resources>\n"
        ),
        "{text}"
    );
    assert!(text.ends_with("</skill_content>\n"));
}
