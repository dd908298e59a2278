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

#[cfg(test)]
mod tests {
    use super::{fingerprint, parse_pin};

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
