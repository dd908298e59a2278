//! The forge credential. [`Secret`] holds it and can be read only through [`Secret::expose`]:
//! formatting it prints `[redacted]`, so a log line, an error or a thread event built from it
//! carries nothing. A token file must be readable by its owner alone (mode 0600 or stricter);
//! a file that others could read is refused, naming the file and the fix, before a byte of it
//! is used. The environment is read by the frontend, which passes the value in.
//!
//! A GitHub App authenticates with a JWT (RS256, signed with the App's private key, valid ten
//! minutes at most) that is exchanged for an installation token (an hour); [`app_jwt`] makes
//! the JWT, and the client (`github::GitHub::current_token`) keeps the installation token and
//! asks for a new one five minutes before it ends. The key is held as a parsed key pair that
//! never formats either.

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

/// A GitHub App's private key, parsed. Never formatted.
pub struct AppKey(ring::signature::RsaKeyPair);

impl std::fmt::Debug for AppKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AppKey([redacted])")
    }
}

impl AppKey {
    /// A PEM private key as GitHub hands it out (`BEGIN RSA PRIVATE KEY`, PKCS#1) or as
    /// `openssl pkcs8` writes it (`BEGIN PRIVATE KEY`). The error never quotes the key.
    pub fn from_pem(pem: &str) -> Result<AppKey, ForgeError> {
        use base64::Engine;
        let bad = |why: &str| ForgeError::Credential {
            reason: format!("the GitHub App private key is not usable: {why}"),
        };
        let (pkcs8, begin, end) = if pem.contains("-----BEGIN RSA PRIVATE KEY-----") {
            (
                false,
                "-----BEGIN RSA PRIVATE KEY-----",
                "-----END RSA PRIVATE KEY-----",
            )
        } else if pem.contains("-----BEGIN PRIVATE KEY-----") {
            (
                true,
                "-----BEGIN PRIVATE KEY-----",
                "-----END PRIVATE KEY-----",
            )
        } else {
            return Err(bad(
                "no `BEGIN RSA PRIVATE KEY` or `BEGIN PRIVATE KEY` block",
            ));
        };
        let body = pem
            .split(begin)
            .nth(1)
            .and_then(|r| r.split(end).next())
            .ok_or_else(|| bad("the PEM block does not end"))?;
        let b64: String = body.chars().filter(|c| !c.is_whitespace()).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| bad("the PEM block is not base64"))?;
        let pair = if pkcs8 {
            ring::signature::RsaKeyPair::from_pkcs8(&der)
        } else {
            ring::signature::RsaKeyPair::from_der(&der)
        }
        .map_err(|e| bad(&format!("not an RSA private key ({e})")))?;
        Ok(AppKey(pair))
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, ForgeError> {
        let mut sig = vec![0; self.0.public().modulus_len()];
        self.0
            .sign(
                &ring::signature::RSA_PKCS1_SHA256,
                &ring::rand::SystemRandom::new(),
                message,
                &mut sig,
            )
            .map_err(|_| ForgeError::Credential {
                reason: "signing the GitHub App's JWT failed".into(),
            })?;
        Ok(sig)
    }
}

/// The JWT a GitHub App signs to ask for installation tokens (RS256): issued a minute in the
/// past (clocks drift), valid nine minutes after `now` (GitHub allows ten at most), `iss` the
/// App's id.
pub fn app_jwt(app_id: u64, key: &AppKey, now: u64) -> Result<Secret, ForgeError> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = b64.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "iat": now.saturating_sub(60),
        "exp": now + 540,
        "iss": app_id.to_string(),
    });
    let payload = b64.encode(claims.to_string());
    let signing_input = format!("{header}.{payload}");
    let sig = key.sign(signing_input.as_bytes())?;
    Ok(Secret::new(format!("{signing_input}.{}", b64.encode(sig))))
}

/// How yoi authenticates to the forge.
#[derive(Debug, Clone)]
pub enum Credential {
    /// A fine-grained (or classic) personal access token.
    Token(Secret),
    /// A GitHub App installation: installation tokens are made from the key as needed.
    App {
        app_id: u64,
        installation_id: u64,
        key: std::sync::Arc<AppKey>,
    },
}

/// Read a secret from a file that only its owner may read. Surrounding whitespace (the
/// newline an editor adds) is dropped; an empty file is refused.
pub fn read_private_file(path: &Path) -> Result<Secret, ForgeError> {
    let text = read_private_text(path)?;
    if text.contains(['\n', '\r']) {
        return Err(ForgeError::Credential {
            reason: format!("{} holds more than one line", path.display()),
        });
    }
    Ok(Secret::new(text))
}

/// The whole text of a file only its owner may read (a PEM key has many lines), trimmed.
fn read_private_text(path: &Path) -> Result<String, ForgeError> {
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
    Ok(text.to_string())
}

/// The credential of a `[forge]` section: the token file when one is named, else the value of
/// the environment variable the frontend read (`env`), else an error saying what to set.
pub fn resolve(
    section: &yoi_core::forge::ForgeSection,
    root: &Path,
    env: Option<String>,
) -> Result<Credential, ForgeError> {
    if let (Some(app_id), Some(installation_id), Some(file)) = (
        section.app_id,
        section.app_installation_id,
        &section.app_private_key_file,
    ) {
        let path = root.join(file);
        let pem = read_private_text(&path)?;
        return Ok(Credential::App {
            app_id,
            installation_id,
            key: std::sync::Arc::new(AppKey::from_pem(&pem)?),
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
        assert!(matches!(c, Credential::Token(t) if t.expose() == "ghp_env"));
        std::fs::write(dir.path().join("tok"), "ghp_file").unwrap();
        std::fs::set_permissions(
            dir.path().join("tok"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        section.token_file = Some("tok".into());
        let c = resolve(&section, dir.path(), Some("ghp_env".into())).unwrap();
        assert!(matches!(c, Credential::Token(t) if t.expose() == "ghp_file"));
    }
}
