//! Resources: confined to the skill folder, regular files only, size-limited.

mod common;

use std::fs;

use common::{skill_md, write_file, write_skill};
use yoi_skills::{resource, Catalog, CatalogConfig, ResourceError, DEFAULT_MAX_RESOURCE_BYTES};

fn setup() -> (tempfile::TempDir, Catalog) {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join("repo/.yoi/skills");
    let demo = write_skill(&skills, "demo", &skill_md("demo", "Demo."));
    write_file(&demo, "references/guide.md", b"# Guide");
    write_file(&demo, "assets/big.bin", &vec![7u8; 2048]);
    write_file(tmp.path(), "secret.txt", b"top secret");
    write_skill(&skills, "bad", "---\nname: bad\n---\n");
    write_file(&skills.join("bad"), "notes.md", b"n");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(tmp.path().join("secret.txt"), demo.join("leak.txt")).unwrap();
        std::os::unix::fs::symlink(tmp.path(), demo.join("up")).unwrap();
        std::os::unix::fs::symlink(demo.join("references/guide.md"), demo.join("alias.md"))
            .unwrap();
    }
    let catalog = Catalog::load(&CatalogConfig::new(tmp.path().join("repo")));
    (tmp, catalog)
}

#[test]
fn reads_a_bundled_file_by_relative_path() {
    let (_tmp, catalog) = setup();
    let res = resource(
        &catalog,
        "demo",
        "references/guide.md",
        DEFAULT_MAX_RESOURCE_BYTES,
    )
    .unwrap();
    assert_eq!(res.bytes, b"# Guide");
    assert_eq!(res.path, "references/guide.md");
    let res = resource(
        &catalog,
        "demo",
        "./references//guide.md",
        DEFAULT_MAX_RESOURCE_BYTES,
    )
    .unwrap();
    assert_eq!(res.path, "references/guide.md");
}

#[test]
fn refuses_absolute_paths() {
    let (tmp, catalog) = setup();
    let abs = tmp.path().join("secret.txt");
    for path in [
        abs.to_str().unwrap(),
        "/etc/passwd",
        "\\windows\\system.ini",
        "C:/x",
    ] {
        assert!(
            matches!(
                resource(&catalog, "demo", path, DEFAULT_MAX_RESOURCE_BYTES),
                Err(ResourceError::AbsolutePath { .. })
            ),
            "{path}"
        );
    }
}

#[test]
fn refuses_any_parent_component_even_when_it_would_stay_inside() {
    let (_tmp, catalog) = setup();
    for path in [
        "../secret.txt",
        "references/../../secret.txt",
        "references/../SKILL.md",
        "a\\..\\b",
    ] {
        assert_eq!(
            resource(&catalog, "demo", path, DEFAULT_MAX_RESOURCE_BYTES),
            Err(ResourceError::Traversal {
                path: path.to_string()
            }),
            "{path}"
        );
    }
}

#[cfg(unix)]
#[test]
fn refuses_symlinks_that_resolve_outside_the_skill() {
    let (_tmp, catalog) = setup();
    assert_eq!(
        resource(&catalog, "demo", "leak.txt", DEFAULT_MAX_RESOURCE_BYTES),
        Err(ResourceError::OutsideSkill {
            path: "leak.txt".to_string()
        })
    );
    assert_eq!(
        resource(
            &catalog,
            "demo",
            "up/secret.txt",
            DEFAULT_MAX_RESOURCE_BYTES
        ),
        Err(ResourceError::OutsideSkill {
            path: "up/secret.txt".to_string()
        })
    );
    let inside = resource(&catalog, "demo", "alias.md", DEFAULT_MAX_RESOURCE_BYTES).unwrap();
    assert_eq!(inside.bytes, b"# Guide", "a symlink staying inside is fine");
}

#[test]
fn refuses_directories_and_missing_files() {
    let (_tmp, catalog) = setup();
    assert_eq!(
        resource(&catalog, "demo", "references", DEFAULT_MAX_RESOURCE_BYTES),
        Err(ResourceError::NotAFile {
            path: "references".to_string()
        })
    );
    assert_eq!(
        resource(&catalog, "demo", "", DEFAULT_MAX_RESOURCE_BYTES),
        Err(ResourceError::NotAFile {
            path: String::new()
        })
    );
    assert_eq!(
        resource(
            &catalog,
            "demo",
            "references/none.md",
            DEFAULT_MAX_RESOURCE_BYTES
        ),
        Err(ResourceError::NotFound {
            path: "references/none.md".to_string()
        })
    );
}

#[test]
fn refuses_files_over_the_limit_and_accepts_one_exactly_at_it() {
    let (_tmp, catalog) = setup();
    assert_eq!(
        resource(&catalog, "demo", "assets/big.bin", 2047),
        Err(ResourceError::TooLarge {
            path: "assets/big.bin".to_string(),
            size: 2048,
            limit: 2047
        })
    );
    assert_eq!(
        resource(&catalog, "demo", "assets/big.bin", 2048)
            .unwrap()
            .bytes
            .len(),
        2048
    );
}

#[test]
fn the_default_limit_is_one_mebibyte() {
    assert_eq!(DEFAULT_MAX_RESOURCE_BYTES, 1_048_576);
    let tmp = tempfile::tempdir().unwrap();
    let demo = write_skill(
        &tmp.path().join(".yoi/skills"),
        "demo",
        &skill_md("demo", "D."),
    );
    fs::write(demo.join("huge.bin"), vec![0u8; 1_048_577]).unwrap();
    let catalog = Catalog::load(&CatalogConfig::new(tmp.path()));
    assert!(matches!(
        resource(&catalog, "demo", "huge.bin", DEFAULT_MAX_RESOURCE_BYTES),
        Err(ResourceError::TooLarge {
            size: 1_048_577,
            ..
        })
    ));
}

#[test]
fn refuses_unknown_and_invalid_skills() {
    let (_tmp, catalog) = setup();
    assert_eq!(
        resource(&catalog, "nope", "x", DEFAULT_MAX_RESOURCE_BYTES),
        Err(ResourceError::UnknownSkill {
            name: "nope".to_string()
        })
    );
    assert_eq!(
        resource(&catalog, "bad", "notes.md", DEFAULT_MAX_RESOURCE_BYTES),
        Err(ResourceError::InvalidSkill {
            name: "bad".to_string()
        })
    );
}

#[test]
fn builtin_resources_are_served_from_the_binary() {
    let (_tmp, catalog) = setup();
    let res = resource(
        &catalog,
        "agent-skills-format",
        "references/frontmatter.md",
        DEFAULT_MAX_RESOURCE_BYTES,
    )
    .unwrap();
    assert!(res.bytes.starts_with(b"# SKILL.md rules checked by yoi"));
    assert_eq!(
        resource(
            &catalog,
            "agent-skills-format",
            "references",
            DEFAULT_MAX_RESOURCE_BYTES
        ),
        Err(ResourceError::NotAFile {
            path: "references".to_string()
        })
    );
    assert_eq!(
        resource(
            &catalog,
            "agent-skills-format",
            "nope.md",
            DEFAULT_MAX_RESOURCE_BYTES
        ),
        Err(ResourceError::NotFound {
            path: "nope.md".to_string()
        })
    );
    assert!(matches!(
        resource(
            &catalog,
            "agent-skills-format",
            "references/frontmatter.md",
            10
        ),
        Err(ResourceError::TooLarge { .. })
    ));
}
