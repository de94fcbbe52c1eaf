//! TLS settings shared by listeners and clients (rustls with the ring
//! provider): PEM files in, acceptors and connectors out. Every problem with
//! a file is reported at start-up with the file's name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use serde::Deserialize;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// `tls` table of a listener.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerTlsConfig {
    /// PEM certificate chain presented to clients.
    pub cert_file: PathBuf,
    /// PEM private key of that certificate (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
    /// PEM CA certificates that client certificates must chain to.
    pub ca_file: Option<PathBuf>,
    /// Require and verify a client certificate (needs `ca_file`).
    #[serde(default)]
    pub verify_client: bool,
}

/// `tls` table of a client.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ClientTlsConfig {
    /// PEM CA certificates the server's certificate must chain to; the
    /// system bundle (/etc/ssl/certs/ca-certificates.crt) if unset.
    pub ca_file: Option<PathBuf>,
    /// Name to verify the server certificate against; the host part of the
    /// server address if unset.
    pub server_name: Option<String>,
    /// Client certificate chain, for servers that verify clients.
    pub cert_file: Option<PathBuf>,
    /// Key of `cert_file`.
    pub key_file: Option<PathBuf>,
    /// Accept any server certificate. For tests only: this gives up all
    /// protection against a man in the middle, and logferry warns at start.
    #[serde(default)]
    pub insecure_skip_verify: bool,
}

/// Where CA certificates are read from when `ca_file` is unset.
pub const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

// Messages start with the key they are about (`tls.cert_file: …`), so
// configuration errors point at its line.

/// Largest PEM file read: certificate chains and CA bundles are far
/// smaller; a path such as /dev/zero must not fill the memory.
const MAX_PEM_BYTES: u64 = 16 * 1024 * 1024;

/// Reads a PEM file: a regular file (a FIFO or a device would block or never
/// end) of at most [`MAX_PEM_BYTES`].
fn read_pem(key: &str, path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let cannot = |e: &dyn std::fmt::Display| format!("{key}: cannot read {}: {e}", path.display());
    // stat before open: opening a FIFO for reading waits for a writer
    let meta = std::fs::metadata(path).map_err(|e| cannot(&e))?;
    if !meta.is_file() {
        return Err(format!(
            "{key}: {} is not a regular file; point it at a PEM file",
            path.display()
        ));
    }
    let mut pem = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_PEM_BYTES + 1).read_to_end(&mut pem))
        .map_err(|e| cannot(&e))?;
    if pem.len() as u64 > MAX_PEM_BYTES {
        return Err(format!(
            "{key}: {} is larger than {} MiB; it cannot be a PEM certificate or key",
            path.display(),
            MAX_PEM_BYTES >> 20
        ));
    }
    Ok(pem)
}

fn read_certs(key: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read_pem(key, path)?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut &pem[..])
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{key}: {}: invalid PEM certificate: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{key}: {}: no certificate found (expected a PEM file with -----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    Ok(certs)
}

fn read_key(key: &str, path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let pem = read_pem(key, path)?;
    rustls_pemfile::private_key(&mut &pem[..])
        .map_err(|e| format!("{key}: {}: invalid PEM key: {e}", path.display()))?
        .ok_or_else(|| {
            format!(
                "{key}: {}: no private key found (expected PKCS#8, PKCS#1 or SEC1 in PEM)",
                path.display()
            )
        })
}

fn roots(key: &str, path: &Path) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    for cert in read_certs(key, path)? {
        store.add(cert).map_err(|e| {
            format!(
                "{key}: {}: unusable CA certificate: {}",
                path.display(),
                explain(&e)
            )
        })?;
    }
    Ok(store)
}

/// rustls's error in words a user can act on, with rustls's own text kept
/// for searching.
pub fn explain(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    let hint = match e {
        rustls::Error::InvalidCertificate(C::Other(other))
            // the webpki error inside is only reachable through its name
            if format!("{other:?}").contains("CaUsedAsEndEntity") =>
        {
            "the peer's certificate is a CA certificate (basicConstraints CA:TRUE) \
             presented as an end-entity (server or client) certificate, which is refused. \
             Use a certificate signed by that CA, without CA:TRUE, and list the CA in the \
             other side's ca_file (`openssl req -x509` makes CA certificates by default)"
        }
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => {
            "the peer's certificate is not signed by a CA in ca_file: \
             set ca_file to the CA that signed it"
        }
        rustls::Error::InvalidCertificate(C::NotValidForName)
        | rustls::Error::InvalidCertificate(C::NotValidForNameContext { .. }) => {
            "the peer's certificate does not name the host connected to: \
             set tls.server_name to a name in the certificate, or reissue it"
        }
        _ => return e.to_string(),
    };
    format!("{e}: {hint}")
}

/// A failed TLS handshake (an I/O error from tokio-rustls) in words.
pub fn explain_io(e: &std::io::Error) -> String {
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(tls) => explain(tls),
        None => e.to_string(),
    }
}

impl ServerTlsConfig {
    /// Checks everything the acceptor needs, files included, so `validate`
    /// fails where `run` would.
    pub fn validate(&self) -> Result<(), String> {
        if self.verify_client && self.ca_file.is_none() {
            return Err("tls.verify_client needs tls.ca_file".into());
        }
        self.acceptor(&[]).map(drop)
    }

    /// The acceptor, offering `alpn` (most preferred first) to clients
    /// that ask for an application protocol.
    pub fn acceptor(&self, alpn: &[&[u8]]) -> Result<TlsAcceptor, String> {
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let builder = match (&self.ca_file, self.verify_client) {
            (Some(ca), true) => {
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots("tls.ca_file", ca)?),
                    provider(),
                )
                .build()
                .map_err(|e| format!("tls.ca_file: {}: {e}", ca.display()))?;
                builder.with_client_cert_verifier(verifier)
            }
            _ => builder.with_no_client_auth(),
        };
        let mut config = builder
            .with_single_cert(
                read_certs("tls.cert_file", &self.cert_file)?,
                read_key("tls.key_file", &self.key_file)?,
            )
            .map_err(|e| {
                format!(
                    "tls.key_file: {} does not fit tls.cert_file {}: {}",
                    self.key_file.display(),
                    self.cert_file.display(),
                    explain(&e)
                )
            })?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

impl ClientTlsConfig {
    /// Checks everything the connector needs, files included, so
    /// `validate` fails where `run` would.
    pub fn validate(&self) -> Result<(), String> {
        if self.cert_file.is_some() != self.key_file.is_some() {
            return Err("tls.cert_file and tls.key_file go together".into());
        }
        self.client_config().map(drop)
    }

    pub fn connector(&self) -> Result<TlsConnector, String> {
        let config = self.client_config()?;
        Ok(TlsConnector::from(Arc::new(config)))
    }

    /// A connector whose handshake offers `alpn` (most wanted first).
    pub fn connector_with_alpn(&self, alpn: &[&[u8]]) -> Result<TlsConnector, String> {
        let mut config = self.client_config()?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(TlsConnector::from(Arc::new(config)))
    }

    fn client_config(&self) -> Result<rustls::ClientConfig, String> {
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let builder = if self.insecure_skip_verify {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyServer(provider())))
        } else {
            let ca = self
                .ca_file
                .clone()
                .unwrap_or_else(|| PathBuf::from(SYSTEM_CA_BUNDLE));
            builder.with_root_certificates(roots("tls.ca_file", &ca)?)
        };
        Ok(match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => builder
                .with_client_auth_cert(
                    read_certs("tls.cert_file", cert)?,
                    read_key("tls.key_file", key)?,
                )
                .map_err(|e| {
                    format!(
                        "tls.key_file: {} does not fit tls.cert_file {}: {}",
                        key.display(),
                        cert.display(),
                        explain(&e)
                    )
                })?,
            _ => builder.with_no_client_auth(),
        })
    }

    /// The name to verify for a server at `address` (`host:port`).
    pub fn server_name(&self, address: &str) -> Result<ServerName<'static>, String> {
        let host = match &self.server_name {
            Some(n) => n.clone(),
            None => address
                .rsplit_once(':')
                .map(|(h, _)| h.trim_matches(|c| c == '[' || c == ']').to_string())
                .unwrap_or_else(|| address.to_string()),
        };
        ServerName::try_from(host.clone()).map_err(|_| format!("invalid TLS server name {host:?}"))
    }
}

/// The verifier behind `insecure_skip_verify`: signatures are still checked
/// (so the handshake is well-formed), the certificate itself is not.
#[derive(Debug)]
struct AcceptAnyServer(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyServer {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
