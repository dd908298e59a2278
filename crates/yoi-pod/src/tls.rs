//! How a client of `yoi serve` trusts its HTTPS certificate (docs/security.md, "TLS"): the web's
//! roots (the Mozilla list ureq ships), the certificates of a CA file (`--ca FILE`), or exactly
//! one certificate named by its SHA-256 fingerprint (`--pin sha256:HEX`).
//!
//! A pin is checked on every connection by the TLS handshake itself — the server's leaf
//! certificate must hash to the pin and the handshake must be signed by its key — and names
//! are not checked, so the fingerprint `yoi serve --tls-self-signed` prints is enough to reach
//! it by any address. A client never falls back from a pin or a CA to anything looser. The
//! pod, `yoi pod run` and the CLI through a server build their HTTP agents here; nothing here
//! reads a file the caller did not name, the environment, or prints.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme, StreamOwned};
use sha2::{Digest, Sha256};
use ureq::config::ConfigBuilder;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use ureq::typestate::AgentScope;
use ureq::unversioned::resolver::DefaultResolver;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, TcpConnector,
    Transport, TransportAdapter,
};

/// Which certificates a client accepts from the server.
#[derive(Clone, Default)]
pub enum Trust {
    /// The web's roots, for a certificate a public CA issued.
    #[default]
    Roots,
    /// The CA (or self-signed) certificates of a PEM file.
    Ca(Vec<Certificate<'static>>),
    /// Exactly the certificate with this SHA-256 fingerprint.
    Pin([u8; 32]),
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trust::Roots => f.write_str("Roots"),
            Trust::Ca(c) => write!(f, "Ca({} certificates)", c.len()),
            Trust::Pin(p) => write!(f, "Pin({})", fingerprint_of(p)),
        }
    }
}

impl Trust {
    /// The trust `--ca FILE` and `--pin sha256:HEX` ask for (at most one of them; neither is
    /// the web's roots). The error says what is wrong with the value.
    pub fn from_args(ca: Option<&Path>, pin: Option<&str>) -> Result<Trust, String> {
        match (ca, pin) {
            (Some(_), Some(_)) => Err("pass --ca or --pin, not both".into()),
            (Some(path), None) => Trust::ca_file(path),
            (None, Some(pin)) => parse_pin(pin).map(Trust::Pin),
            (None, None) => Ok(Trust::Roots),
        }
    }

    /// The certificates of the PEM file at `path` (at least one).
    pub fn ca_file(path: &Path) -> Result<Trust, String> {
        let bytes = std::fs::read(path)
            .map_err(|e| format!("reading the CA file {}: {e}", path.display()))?;
        let mut certs = Vec::new();
        for item in ureq::tls::parse_pem(&bytes) {
            match item {
                Ok(PemItem::Certificate(c)) => certs.push(c),
                Ok(_) => {}
                Err(e) => return Err(format!("the CA file {}: {e}", path.display())),
            }
        }
        if certs.is_empty() {
            return Err(format!(
                "the CA file {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                path.display()
            ));
        }
        Ok(Trust::Ca(certs))
    }

    /// An HTTP agent configured by `config` that accepts only what this trust accepts.
    pub fn agent(&self, config: ConfigBuilder<AgentScope>) -> ureq::Agent {
        match self {
            Trust::Roots => config.build().into(),
            Trust::Ca(certs) => config
                .tls_config(
                    TlsConfig::builder()
                        .root_certs(RootCerts::new_with_certs(certs))
                        .build(),
                )
                .build()
                .into(),
            Trust::Pin(pin) => ureq::Agent::with_parts(
                config.build(),
                TcpConnector::default().chain(PinnedTls::new(*pin)),
                DefaultResolver::default(),
            ),
        }
    }
}

/// `sha256:` and the lowercase hex of the SHA-256 of a certificate's DER bytes.
pub fn fingerprint(der: &[u8]) -> String {
    fingerprint_of(&Sha256::digest(der).into())
}

fn fingerprint_of(digest: &[u8; 32]) -> String {
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// `sha256:HEX` (64 hex digits; colons between bytes and either case accepted) as its bytes.
pub fn parse_pin(pin: &str) -> Result<[u8; 32], String> {
    let bad = || {
        format!("--pin must be `sha256:` and 64 hex digits (what `yoi serve --tls-self-signed` prints), got `{pin}`")
    };
    let hex = pin.strip_prefix("sha256:").ok_or_else(bad)?;
    let hex: String = hex.chars().filter(|c| *c != ':').collect();
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// Accepts the one certificate whose SHA-256 is the pin; the handshake's signatures are still
/// checked against that certificate's key, so only the holder of its private key passes.
#[derive(Debug)]
struct PinVerifier {
    pin: [u8; 32],
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let seen: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        if seen == self.pin {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the server's certificate is {}, not the pinned {}",
                fingerprint_of(&seen),
                fingerprint_of(&self.pin)
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// ureq's TLS step with [`PinVerifier`] in place of the web's roots (ureq takes only root
/// certificates, and a pin is not one).
#[derive(Debug)]
struct PinnedTls {
    config: Arc<ClientConfig>,
}

impl PinnedTls {
    fn new(pin: [u8; 32]) -> PinnedTls {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = PinVerifier {
            pin,
            algorithms: provider.signature_verification_algorithms,
        };
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        PinnedTls {
            config: Arc::new(config),
        }
    }
}

impl<In: Transport> Connector<In> for PinnedTls {
    type Out = Either<In, PinnedTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else {
            return Ok(None);
        };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let host = details.uri.host().unwrap_or_default();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host)
            .map_err(|_| ureq::Error::Tls("the server's host is not a valid TLS name"))?
            .to_owned();
        let mut conn = ClientConnection::new(self.config.clone(), name)?;
        let mut sock = TransportAdapter::new(transport.boxed(), details.current_time.clone());
        sock.set_timeout(details.timeout);
        conn.complete_io(&mut sock)?;
        let buffers = LazyBuffers::new(
            details.config.input_buffer_size(),
            details.config.output_buffer_size(),
        );
        Ok(Some(Either::B(PinnedTransport {
            buffers,
            stream: StreamOwned { conn, sock },
        })))
    }
}

/// A connection under [`PinnedTls`] (as ureq's own rustls transport).
struct PinnedTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
}

impl std::fmt::Debug for PinnedTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PinnedTransport")
    }
}

impl Transport for PinnedTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        use std::io::Write;
        self.stream.get_mut().set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output)?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        use std::io::Read;
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self.stream.read(input)?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

/// The certificates an agent must trust to reach this server over HTTPS, as PEM: those of
/// `--ca`, or the one certificate a pin names, taken from a handshake with the server (`url`)
/// whose leaf has that fingerprint. `None` for the web's roots (the agent's own roots serve)
/// and for `http://`.
pub fn server_certificates_pem(trust: &Trust, url: &str) -> Result<Option<String>, String> {
    if !url.starts_with("https://") {
        return Ok(None);
    }
    let ders: Vec<Vec<u8>> = match trust {
        Trust::Roots => return Ok(None),
        Trust::Ca(certs) => certs.iter().map(|c| c.der().to_vec()).collect(),
        Trust::Pin(pin) => vec![pinned_leaf(*pin, url)?],
    };
    Ok(Some(ders.iter().map(|d| pem_of(d)).collect()))
}

/// The server's leaf certificate (DER), from a handshake that accepts only the pinned one.
fn pinned_leaf(pin: [u8; 32], url: &str) -> Result<Vec<u8>, String> {
    let rest = url.trim_start_matches("https://");
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) && !h.is_empty() => h,
        _ => authority,
    };
    let address = if authority.contains(':') && !authority.ends_with(']') {
        authority.to_string()
    } else {
        format!("{authority}:443")
    };
    let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']'))
        .map_err(|_| format!("{host} is not a valid TLS name"))?
        .to_owned();
    let tls = PinnedTls::new(pin);
    let mut conn = ClientConnection::new(tls.config.clone(), name).map_err(|e| e.to_string())?;
    let mut sock = std::net::TcpStream::connect(&address).map_err(|e| format!("{address}: {e}"))?;
    let _ = sock.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)
            .map_err(|e| format!("the TLS handshake with {address}: {e}"))?;
    }
    let leaf = conn
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.as_ref().to_vec())
        .ok_or_else(|| format!("{address} showed no certificate"))?;
    conn.send_close_notify();
    let _ = conn.complete_io(&mut sock);
    Ok(leaf)
}

/// What git (libcurl) is given to trust the server a pin names: `http.pinnedPubkey`'s
/// `sha256//BASE64` of the public key of the certificate with that fingerprint, taken from a
/// handshake with the server (`url`) that accepts only that certificate. curl checks a pinned
/// key on every connection, also with `http.sslVerify=false`, which the pod sets beside it so
/// names and issuers are not checked (as for the pod's own pin).
pub fn git_pinned_key(pin: [u8; 32], url: &str) -> Result<String, String> {
    let leaf = pinned_leaf(pin, url)?;
    let spki = public_key_info(&leaf)
        .ok_or("the server's certificate could not be read for its public key")?;
    Ok(format!("sha256//{}", base64(&Sha256::digest(spki))))
}

/// The SubjectPublicKeyInfo of an X.509 certificate's DER, whole (tag and length included):
/// the seventh element of the TBSCertificate, or the sixth without the optional `[0]` version.
fn public_key_info(der: &[u8]) -> Option<&[u8]> {
    /// The element at the start of `buf`: (its header's length, its whole length).
    fn element(buf: &[u8]) -> Option<(usize, usize)> {
        let first = *buf.get(1)?;
        let (header, len) = if first < 0x80 {
            (2, first as usize)
        } else {
            let n = (first & 0x7f) as usize;
            if n == 0 || n > 4 {
                return None;
            }
            let len = buf
                .get(2..2 + n)?
                .iter()
                .fold(0usize, |l, b| l << 8 | *b as usize);
            (2 + n, len)
        };
        (header + len <= buf.len()).then_some((header, header + len))
    }
    let (h, _) = element(der)?; // Certificate
    let tbs = &der[h..];
    let (h, whole) = element(tbs)?; // TBSCertificate
    let mut at = &tbs[h..whole];
    if at.first() == Some(&0xa0) {
        at = &at[element(at)?.1..];
    }
    // serialNumber, signature, issuer, validity, subject
    for _ in 0..5 {
        at = &at[element(at)?.1..];
    }
    (at.first() == Some(&0x30)).then(|| element(at).map(|(_, w)| &at[..w]))?
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A certificate's DER bytes as a PEM block.
fn pem_of(der: &[u8]) -> String {
    let b64 = base64(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

#[cfg(test)]
mod tests {
    use super::{base64, fingerprint, parse_pin, pem_of, public_key_info};
    use sha2::{Digest, Sha256};

    /// A self-signed P-256 certificate made by openssl, and what `openssl x509 -pubkey | openssl
    /// pkey -pubin -outform der | openssl dgst -sha256 -binary | base64` says of its key.
    const OPENSSL_CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBcjCCARegAwIBAgIUd3sOK4M/gY81K8ggBMF3tuLs/T8wCgYIKoZIzj0EAwIw
DjEMMAoGA1UEAwwDZm9vMB4XDTI2MTIwNTAyMjcxMFoXDTI2MTIwNjAyMjcxMFow
DjEMMAoGA1UEAwwDZm9vMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE+Do/C/j+
m9J7ZaL/CbUtsJutmQHe6GrtRbf4wOwRtn3HTf5K0vgRseyJT9Iza4KhzJMoSRXG
MrZftcY2ZIo2HqNTMFEwHQYDVR0OBBYEFEIfPb5tqTKUOHI5XPiyl0ikyu2lMB8G
A1UdIwQYMBaAFEIfPb5tqTKUOHI5XPiyl0ikyu2lMA8GA1UdEwEB/wQFMAMBAf8w
CgYIKoZIzj0EAwIDSQAwRgIhAI8VGK4NegCNeV08pDO1Qh2WWV6ODza7182Shfik
cUswAiEA7HOqLz9E+w3cLb3msyHo/VIcTosM4/66vfrt+lCfzEo=
-----END CERTIFICATE-----
";

    #[test]
    fn the_public_key_git_pins_is_the_one_openssl_names() {
        let der = match ureq::tls::parse_pem(OPENSSL_CERT.as_bytes()).next() {
            Some(Ok(ureq::tls::PemItem::Certificate(c))) => c.der().to_vec(),
            _ => panic!("not read as a certificate"),
        };
        let spki = public_key_info(&der).unwrap();
        assert_eq!(
            base64(&Sha256::digest(spki)),
            "6bOVwJE6mRI+6M2S/JAC3WnRMBTWs1U92ULkIrSHCyw="
        );
        assert_eq!(public_key_info(&der[..40]), None);
        assert_eq!(public_key_info(b""), None);
    }

    #[test]
    fn a_certificate_reads_back_from_its_pem() {
        for der in [
            &b"a"[..],
            b"ab",
            b"abc",
            b"abcd",
            &[0u8, 255, 7, 128, 9][..],
        ] {
            let pem = pem_of(der);
            let read: Vec<_> = ureq::tls::parse_pem(pem.as_bytes()).collect();
            match &read[..] {
                [Ok(ureq::tls::PemItem::Certificate(c))] => assert_eq!(c.der(), der),
                _ => panic!("{pem}: not read back as one certificate"),
            }
        }
    }

    #[test]
    fn a_pin_reads_as_printed_and_a_bad_one_says_the_form() {
        let printed = fingerprint(b"certificate");
        assert!(printed.starts_with("sha256:") && printed.len() == 7 + 64);
        let bytes = parse_pin(&printed).unwrap();
        let colons: Vec<String> = bytes.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(
            parse_pin(&format!("sha256:{}", colons.join(":"))).unwrap(),
            bytes
        );
        for bad in ["", "sha256:", "md5:00", "sha256:zz", &printed[..70]] {
            let e = parse_pin(bad).unwrap_err();
            assert!(e.contains("64 hex digits"), "{e}");
        }
    }
}
