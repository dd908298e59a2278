//! Gemini CLI without a `base_url`: yoi's MCP server in a home of the run's own.
//!
//! Gemini CLI reads MCP servers from user and workspace settings only (its system settings
//! files count only when root owns them and every folder above them), and a profile without a
//! `base_url` runs it with the person's own `~/.gemini`, which yoi does not write. So the run
//! folder gets `gemini-home/.gemini/`, chosen with `GEMINI_CLI_HOME`: every entry of the
//! person's `~/.gemini` as a symbolic link to it (the login, and a token refreshed during the
//! run, stay the person's; the sandbox already lets the agent use that folder, the profile's
//! `state`), and `settings.json` as a file of its own: the person's settings with
//! `mcpServers.yoi` added, which Gemini CLI expands from `YOI_SERVER` and `YOI_TOKEN` at start.
//!
//! Settings yoi cannot read as a JSON object (Gemini CLI also takes comments in them) are left
//! alone and the server is not handed, said in the pod's log: a person's configuration is
//! never rewritten into something it did not say.

use std::path::Path;

use serde_json::{json, Map, Value};

/// The run folder's Gemini home, relative to the run folder.
pub(crate) const HOME: &str = "gemini-home";

/// `settings.json` for the run's home: `person` (the text of the person's settings, if any)
/// with `mcpServers.yoi` set. `Err` says why the person's settings cannot carry it.
pub(crate) fn settings_with_mcp(person: Option<&str>) -> Result<String, String> {
    let mut settings = match person.map(str::trim) {
        None | Some("") => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err("~/.gemini/settings.json is not a JSON object".into()),
            Err(e) => {
                return Err(format!(
                    "~/.gemini/settings.json is not plain JSON ({e}); comments are Gemini's own extension"
                ))
            }
        },
    };
    let servers = settings
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err("`mcpServers` in ~/.gemini/settings.json is not an object".into());
    };
    servers.insert(
        "yoi".into(),
        json!({
            "httpUrl": "${YOI_SERVER}/mcp",
            "headers": {"Authorization": "Bearer ${YOI_TOKEN}"},
        }),
    );
    Ok(Value::Object(settings).to_string())
}

/// Make `run_dir/gemini-home/.gemini` from `home/.gemini` (which may not exist). `Ok(None)`
/// when the person's settings cannot carry the server (the reason is logged); the caller then
/// runs Gemini CLI with the person's home unchanged.
pub(crate) fn make(home: &Path, run_dir: &Path) -> Result<Option<std::path::PathBuf>, String> {
    let theirs = home.join(".gemini");
    let settings = match std::fs::read_to_string(theirs.join("settings.json")) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", theirs.join("settings.json").display())),
    };
    let settings = match settings_with_mcp(settings.as_deref()) {
        Ok(s) => s,
        Err(why) => {
            tracing::warn!("Gemini CLI is not handed yoi's MCP server: {why}");
            return Ok(None);
        }
    };
    // Made afresh: a run folder used before (the same assignment run again) keeps no stale
    // link. Removing it removes the links, never what they point at.
    let own = run_dir.join(HOME);
    match std::fs::remove_dir_all(&own) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", own.display())),
    }
    let ours = own.join(".gemini");
    std::fs::create_dir_all(&ours).map_err(|e| format!("{}: {e}", ours.display()))?;
    match std::fs::read_dir(&theirs) {
        Ok(entries) => {
            for entry in entries {
                let entry = entry.map_err(|e| format!("{}: {e}", theirs.display()))?;
                let name = entry.file_name();
                if name == "settings.json" {
                    continue;
                }
                let link = ours.join(&name);
                std::os::unix::fs::symlink(entry.path(), &link)
                    .map_err(|e| format!("{}: {e}", link.display()))?;
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", theirs.display())),
    }
    let file = ours.join("settings.json");
    std::fs::write(&file, settings).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(Some(run_dir.join(HOME)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_persons_settings_keep_everything_and_gain_the_server() {
        let out = settings_with_mcp(Some(
            r#"{"model": {"name": "gemini-2.5-pro"}, "mcpServers": {"mine": {"command": "x"}}}"#,
        ))
        .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["model"]["name"], "gemini-2.5-pro");
        assert_eq!(v["mcpServers"]["mine"]["command"], "x");
        assert_eq!(v["mcpServers"]["yoi"]["httpUrl"], "${YOI_SERVER}/mcp");
        assert_eq!(
            v["mcpServers"]["yoi"]["headers"]["Authorization"],
            "Bearer ${YOI_TOKEN}"
        );
        let none: Value = serde_json::from_str(&settings_with_mcp(None).unwrap()).unwrap();
        assert_eq!(none["mcpServers"]["yoi"]["httpUrl"], "${YOI_SERVER}/mcp");
    }

    #[test]
    fn settings_yoi_cannot_read_are_left_alone() {
        let commented = settings_with_mcp(Some("{\n  // mine\n  \"a\": 1\n}")).unwrap_err();
        assert!(commented.contains("not plain JSON"), "{commented}");
        let list = settings_with_mcp(Some("[1]")).unwrap_err();
        assert!(list.contains("not a JSON object"), "{list}");
        let servers = settings_with_mcp(Some(r#"{"mcpServers": 3}"#)).unwrap_err();
        assert!(servers.contains("`mcpServers`"), "{servers}");
    }

    #[test]
    fn the_home_links_every_entry_but_the_settings() {
        let home = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        let g = home.path().join(".gemini");
        std::fs::create_dir_all(g.join("tmp")).unwrap();
        std::fs::write(g.join("oauth_creds.json"), "{\"t\": 1}").unwrap();
        std::fs::write(g.join("settings.json"), "{\"theme\": \"x\"}").unwrap();
        let made = make(home.path(), run.path()).unwrap().unwrap();
        assert_eq!(made, run.path().join(HOME));
        let ours = made.join(".gemini");
        assert_eq!(
            std::fs::read_link(ours.join("oauth_creds.json")).unwrap(),
            g.join("oauth_creds.json")
        );
        assert_eq!(std::fs::read_link(ours.join("tmp")).unwrap(), g.join("tmp"));
        let s: Value =
            serde_json::from_str(&std::fs::read_to_string(ours.join("settings.json")).unwrap())
                .unwrap();
        assert_eq!(s["theme"], "x");
        assert!(s["mcpServers"]["yoi"].is_object());
        // Made again in the same run folder: the same home, and the person's files are still
        // there (the old links went, not what they pointed at).
        assert_eq!(make(home.path(), run.path()).unwrap().unwrap(), made);
        assert_eq!(
            std::fs::read_to_string(ours.join("oauth_creds.json")).unwrap(),
            "{\"t\": 1}"
        );
        assert!(g.join("tmp").is_dir());
        // The person's own file is untouched.
        assert_eq!(
            std::fs::read_to_string(g.join("settings.json")).unwrap(),
            "{\"theme\": \"x\"}"
        );
        // Unreadable settings: no home, the person's unchanged.
        std::fs::write(g.join("settings.json"), "// no\n{}").unwrap();
        let run2 = tempfile::tempdir().unwrap();
        assert_eq!(make(home.path(), run2.path()).unwrap(), None);
        assert!(!run2.path().join(HOME).exists());
    }
}
