//! HTTPS for `yoi serve` (docs/security.md, "TLS"): the certificate and key of `[server]
//! tls_cert`/`tls_key`, or one made for this host by `yoi serve --tls-self-signed`, turned into
//! the acceptor [`crate::listen`] runs every connection through before HTTP.
//!
//! A self-signed certificate is made once, in `.yoi/local/tls/` (key 0600), and reused, so its
//! fingerprint — the pin clients are given — stays the same across restarts; deleting the folder
//! makes a new one. Its names are the host's: `localhost`, the host name, loopback, the listen
//! address and the address a browser elsewhere reaches, and `[server] allowed_hosts`. Nothing
//! here serves plain HTTP: a client that does not speak TLS gets its connection closed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// A loaded certificate: the acceptor and what clients need to trust it.
#[derive(Clone)]
pub struct Tls {
    pub acceptor: TlsAcceptor,
    /// `sha256:HEX` of the leaf certificate (what `--pin` takes).
    pub fingerprint: String,
    /// The PEM file it came from (what `--ca` takes, for a self-signed one).
    pub cert_path: PathBuf,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("fingerprint", &self.fingerprint)
            .field("cert_path", &self.cert_path)
            .finish()
    }
}

/// Where the certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsSource {
    /// PEM files: the chain (leaf first) and its key.
    Files { cert: PathBuf, key: PathBuf },
    /// Made for this host (once) in this folder.
    SelfSigned { dir: PathBuf },
}

/// Load the certificate and key into an acceptor. The error names the file and what is wrong.
pub fn load(cert: &Path, key: &Path) -> Result<Tls, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("reading the certificate {}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the certificate {}: {e}", cert.display()))?;
    let Some(leaf) = chain.first() else {
        return Err(format!(
            "the certificate {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            cert.display()
        ));
    };
    let fingerprint = fingerprint(leaf.as_ref());
    let private = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("reading the private key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            format!(
                "the key {} does not serve the certificate {}: {e}",
                key.display(),
                cert.display()
            )
        })?;
    Ok(Tls {
        acceptor: TlsAcceptor::from(Arc::new(config)),
        fingerprint,
        cert_path: cert.to_path_buf(),
    })
}

/// `sha256:` and the lowercase hex of the SHA-256 of a certificate's DER bytes (as
/// `yoi_pod::tls::fingerprint`, which a pod's `--pin` is compared with).
pub fn fingerprint(der: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hex: String = Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// The certificate `source` names, made first for a self-signed one that does not exist yet
/// (for the names of [`host_names`] with `listen`).
pub fn open(
    source: &TlsSource,
    listen: SocketAddr,
    allowed_hosts: &[String],
) -> Result<Tls, String> {
    match source {
        TlsSource::Files { cert, key } => load(cert, key),
        TlsSource::SelfSigned { dir } => {
            let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
            if !(cert.exists() && key.exists()) {
                make_self_signed(dir, &host_names(listen, allowed_hosts))?;
            }
            load(&cert, &key)
        }
    }
}

/// The names a self-signed certificate for a server listening on `listen` carries.
pub fn host_names(listen: SocketAddr, allowed_hosts: &[String]) -> Vec<String> {
    let mut names = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if let Ok(host) = std::fs::read_to_string("/etc/hostname") {
        names.push(host.trim().to_string());
    }
    if !listen.ip().is_unspecified() {
        names.push(listen.ip().to_string());
    }
    names.push(crate::listen::reachable(listen).ip().to_string());
    names.extend(allowed_hosts.iter().cloned());
    let mut seen = std::collections::BTreeSet::new();
    names.retain(|n| !n.is_empty() && seen.insert(n.clone()));
    names
}

/// Write a new self-signed certificate for `names` and its key (0600) into `dir`.
fn make_self_signed(dir: &Path, names: &[String]) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let mut params = rcgen::CertificateParams::new(names.to_vec())
        .map_err(|e| format!("making a certificate for {names:?}: {e}"))?;
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("yoi serve on {}", names.get(3).map_or("localhost", |n| n)),
    );
    let key = rcgen::KeyPair::generate().map_err(|e| format!("making a key: {e}"))?;
    let cert = params
        .self_signed(&key)
        .map_err(|e| format!("signing the certificate: {e}"))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let write = |name: &str, text: String, mode: u32| {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        let _ = std::fs::remove_file(&tmp);
        let result = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
            .and_then(|mut f| {
                use std::io::Write;
                f.write_all(text.as_bytes())?;
                f.sync_all()
            })
            .and_then(|()| std::fs::rename(&tmp, &path));
        result.map_err(|e| format!("writing {}: {e}", path.display()))
    };
    // The key first: a certificate without its key would be reused and fail to load.
    write("key.pem", key.serialize_pem(), 0o600)?;
    write("cert.pem", cert.pem(), 0o644)
}

#[cfg(test)]
mod tests {
    use super::{open, TlsSource};

    #[test]
    fn a_self_signed_certificate_is_made_once_and_keeps_its_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let source = TlsSource::SelfSigned {
            dir: dir.path().join("tls"),
        };
        let listen = "127.0.0.1:0".parse().unwrap();
        let first = open(&source, listen, &[]).unwrap();
        assert!(first.fingerprint.starts_with("sha256:"));
        let again = open(&source, listen, &[]).unwrap();
        assert_eq!(first.fingerprint, again.fingerprint);
        let key = std::fs::metadata(dir.path().join("tls/key.pem")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(key.permissions().mode() & 0o777, 0o600);
        let e = super::load(
            &dir.path().join("tls/key.pem"),
            &dir.path().join("tls/key.pem"),
        )
        .unwrap_err();
        assert!(e.contains("holds no PEM certificate"), "{e}");
    }
}
