//! The forge credential. [`Secret`] holds it and can be read only through [`Secret::expose`]:
//! formatting it prints `[redacted]`, so a log line, an error or a thread event built from it
//! carries nothing. A token file must be readable by its owner alone (mode 0600 or stricter);
//! a file that others could read is refused, naming the file and the fix, before a byte of it
//! is used. The environment is read by the frontend, which passes the value in.

use std::path::Path;

use crate::ForgeError;

/// A credential's text. Never formatted.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// The text itself, for the one place that sends it (an Authorization header, the
    /// credential helper's file).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// How yoi authenticates to the forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A fine-grained (or classic) personal access token, or an installation token.
    Token(Secret),
}

impl Credential {
    /// The token to send now.
    pub fn token(&self) -> &Secret {
        match self {
            Credential::Token(t) => t,
        }
    }
}

/// Read a secret from a file that only its owner may read. Surrounding whitespace (the
/// newline an editor adds) is dropped; an empty file is refused.
pub fn read_private_file(path: &Path) -> Result<Secret, ForgeError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| ForgeError::Credential {
        reason: format!("cannot read {}: {e}", path.display()),
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(ForgeError::Credential {
            reason: format!(
                "{} is readable by others (mode {mode:o}); run `chmod 600 {}`",
                path.display(),
                path.display()
            ),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| ForgeError::Credential {
        reason: format!("cannot read {}: {e}", path.display()),
    })?;
    let text = text.trim();
    if text.is_empty() {
        return Err(ForgeError::Credential {
            reason: format!("{} is empty", path.display()),
        });
    }
    if text.contains(['\n', '\r']) {
        return Err(ForgeError::Credential {
            reason: format!("{} holds more than one line", path.display()),
        });
    }
    Ok(Secret::new(text))
}

/// The credential of a `[forge]` section: the token file when one is named, else the value of
/// the environment variable the frontend read (`env`), else an error saying what to set.
pub fn resolve(
    section: &yoi_core::forge::ForgeSection,
    root: &Path,
    env: Option<String>,
) -> Result<Credential, ForgeError> {
    if section.app_id.is_some() {
        return Err(ForgeError::Credential {
            reason: "GitHub App credentials are not supported yet; use a fine-grained token (token_file or YOI_GITHUB_TOKEN)".into(),
        });
    }
    if let Some(file) = &section.token_file {
        let path = root.join(file);
        return read_private_file(&path).map(Credential::Token);
    }
    match env.map(|v| v.trim().to_string()) {
        Some(v) if !v.is_empty() => Ok(Credential::Token(Secret::new(v))),
        _ => Err(ForgeError::Credential {
            reason: format!(
                "no forge token: set `[forge] token_file` (a file with mode 0600) or {}",
                yoi_core::forge::TOKEN_ENV
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_secret_never_formats_its_text() {
        let s = Secret::new("ghp_verysecret");
        assert!(!format!("{s:?} {s} {:?}", Credential::Token(s.clone())).contains("verysecret"));
        assert_eq!(s.expose(), "ghp_verysecret");
    }

    #[test]
    fn a_token_file_others_can_read_is_refused_naming_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("token");
        std::fs::write(&p, "ghp_abc\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = read_private_file(&p).unwrap_err();
        assert!(err.to_string().contains("chmod 600"), "{err}");
        assert!(!err.to_string().contains("ghp_abc"));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_private_file(&p).unwrap().expose(), "ghp_abc");
        std::fs::write(&p, "\n").unwrap();
        assert!(read_private_file(&p)
            .unwrap_err()
            .to_string()
            .contains("empty"));
    }

    #[test]
    fn the_file_wins_over_the_environment_and_none_names_what_to_set() {
        let dir = tempfile::tempdir().unwrap();
        let mut section = yoi_core::forge::ForgeSection::new("a/b");
        let err = resolve(&section, dir.path(), None).unwrap_err();
        assert!(err.to_string().contains("YOI_GITHUB_TOKEN"), "{err}");
        let c = resolve(&section, dir.path(), Some("ghp_env".into())).unwrap();
        assert_eq!(c.token().expose(), "ghp_env");
        std::fs::write(dir.path().join("tok"), "ghp_file").unwrap();
        std::fs::set_permissions(
            dir.path().join("tok"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        section.token_file = Some("tok".into());
        let c = resolve(&section, dir.path(), Some("ghp_env".into())).unwrap();
        assert_eq!(c.token().expose(), "ghp_file");
    }
}
