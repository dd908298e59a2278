use super::*;

fn draft(signature: &str, content: &str, base: Option<&str>) -> OfferDraft {
    OfferDraft {
        kind: OfferKind::NewWorkflow,
        signature: signature.into(),
        name: "precheck".into(),
        target: ".yoi/workflow/precheck.md".into(),
        title: "A new workflow `/precheck`".into(),
        why: "Seen on three tickets.".into(),
        tickets: vec!["A".into(), "B".into(), "C".into()],
        content: content.into(),
        base_digest: base.map(|b| sha256_hex(b.as_bytes())),
        diff: String::new(),
    }
}

const NOW: &str = "2026-12-04T10:00:00Z";

#[test]
fn the_same_signature_is_offered_once_whatever_became_of_it() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("offers");
    let first = offer(&root, draft("s1", "x", None), "yoi", NOW).unwrap();
    let o = first.expect("the first offer is written");
    assert_eq!(o.id, offer_id("s1"));
    assert!(offer(&root, draft("s1", "y", None), "yoi", NOW)
        .unwrap()
        .is_none());
    reject(&root, &o.id, &HumanApprover::new("alice"), "not now", NOW).unwrap();
    assert!(offer(&root, draft("s1", "x", None), "yoi", NOW)
        .unwrap()
        .is_none());
    assert_eq!(list(&root).unwrap().len(), 1);
}

#[test]
fn accepting_writes_the_file_once_and_audits_it() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("offers");
    let o = offer(
        &root,
        draft("s", "---\ndescription: d\n---\nbody\n", None),
        "yoi",
        NOW,
    )
    .unwrap()
    .unwrap();
    let done = accept(&root, &o.id, t.path(), &HumanApprover::new("alice"), NOW).unwrap();
    assert_eq!(done.status, OfferStatus::Accepted);
    assert_eq!(done.decision.unwrap().by, "alice");
    let written = fs::read_to_string(t.path().join(".yoi/workflow/precheck.md")).unwrap();
    assert_eq!(written, "---\ndescription: d\n---\nbody\n");
    let audit = fs::read_to_string(root.join(&o.id).join("audit.md")).unwrap();
    assert!(audit.contains("event: workflow_offered"), "{audit}");
    assert!(audit.contains("event: workflow_offer_accepted") && audit.contains("author: alice"));
    let again = accept(&root, &o.id, t.path(), &HumanApprover::new("bob"), NOW).unwrap_err();
    assert!(
        matches!(again, OfferError::AlreadyDecided { .. }),
        "{again}"
    );
}

#[test]
fn a_target_a_person_edited_since_the_offer_is_never_overwritten() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("offers");
    let target = t.path().join(".yoi/workflow/precheck.md");
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    fs::write(&target, "old").unwrap();
    let o = offer(&root, draft("s", "new", Some("old")), "yoi", NOW)
        .unwrap()
        .unwrap();
    fs::write(&target, "edited by hand").unwrap();
    let err = accept(&root, &o.id, t.path(), &HumanApprover::new("alice"), NOW).unwrap_err();
    assert!(matches!(err, OfferError::Stale { .. }), "{err}");
    assert_eq!(fs::read_to_string(&target).unwrap(), "edited by hand");
    assert_eq!(load(&root, &o.id).unwrap().status, OfferStatus::Pending);
    // Put back as it was offered, it is accepted and the old file kept.
    fs::write(&target, "old").unwrap();
    accept(&root, &o.id, t.path(), &HumanApprover::new("alice"), NOW).unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    assert_eq!(
        fs::read_to_string(root.join(&o.id).join("previous")).unwrap(),
        "old"
    );
}

#[test]
fn a_changed_stored_copy_a_bad_id_or_a_bad_target_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("offers");
    let o = offer(&root, draft("s", "body", None), "yoi", NOW)
        .unwrap()
        .unwrap();
    let path = root.join(&o.id).join("offer.json");
    let text = fs::read_to_string(&path)
        .unwrap()
        .replace("\"body\"", "\"evil\"");
    fs::write(&path, text).unwrap();
    let err = accept(&root, &o.id, t.path(), &HumanApprover::new("a"), NOW).unwrap_err();
    assert!(matches!(err, OfferError::Tampered { .. }), "{err}");
    assert!(!t.path().join(".yoi/workflow/precheck.md").exists());

    for id in ["../x", "p0123", "", "oABCDEF0123456789abcdef01"] {
        assert!(
            matches!(load(&root, id), Err(OfferError::BadId { .. })),
            "{id}"
        );
    }
    for target in [
        "../x.md",
        ".yoi/workflow/../../x.md",
        ".yoi/skills/x/SKILL.md",
        "/etc/x.md",
    ] {
        let mut d = draft(target, "b", None);
        d.target = target.into();
        assert!(
            matches!(
                offer(&root, d, "yoi", NOW),
                Err(OfferError::BadTarget { .. })
            ),
            "{target}"
        );
    }
}

#[test]
fn a_linked_workflow_folder_is_not_written_through() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("offers");
    let elsewhere = t.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    fs::create_dir_all(t.path().join(".yoi")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, t.path().join(".yoi/workflow")).unwrap();
    let o = offer(&root, draft("s", "body", None), "yoi", NOW)
        .unwrap()
        .unwrap();
    let err = accept(&root, &o.id, t.path(), &HumanApprover::new("a"), NOW).unwrap_err();
    assert!(matches!(err, OfferError::Symlink { .. }), "{err}");
    assert!(fs::read_dir(&elsewhere).unwrap().next().is_none());
}
