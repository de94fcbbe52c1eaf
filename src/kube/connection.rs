//! Where the API server is and how logferry proves who it is.
//!
//! In order: a kubeconfig's current context; `api_server`,
//! `token_file`, `ca_file` and `insecure_skip_verify` over it (or alone);
//! with neither a kubeconfig nor `api_server`, the pod's own service
//! account: `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`
//! with the token and `ca.crt` under
//! `/var/run/secrets/kubernetes.io/serviceaccount` (`LOGFERRY_KUBE_SA_DIR`
//! moves that directory, for tests).
//!
//! A token file is read again at most once a minute and after every
//! 401: projected service-account tokens rotate (hourly by default).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{HeaderValue, Uri};
use rustls::client::ResolvesClientCert;
use rustls::pki_types::CertificateDer;
use rustls::sign::CertifiedKey;
use rustls::SignatureScheme;
use tokio::time::Instant;

use super::kubeconfig::{self, Pem};
use super::ApiSettings;
use crate::tls::ClientTlsConfig;

/// The service account's directory in every pod.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The environment variable that moves [`SERVICE_ACCOUNT_DIR`] (tests).
pub const SERVICE_ACCOUNT_DIR_ENV: &str = "LOGFERRY_KUBE_SA_DIR";

/// How often a token file is read again at most, 401s aside.
const TOKEN_REREAD: Duration = Duration::from_secs(60);

/// Largest PEM or token file read.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// A resolved connection to the API server.
pub struct Connection {
    /// `scheme://host:port` of every request.
    pub origin: Uri,
    /// The server URL's path (a proxy's prefix), before every API path.
    pub prefix: String,
    /// TLS for an `https` server.
    pub tls: Option<rustls::ClientConfig>,
    /// The name to verify the server's certificate against, when not its
    /// host.
    pub server_name: Option<String>,
    /// The server's certificate is not verified.
    pub insecure: bool,
    pub credentials: Credentials,
}

/// The bearer token of every request, if any.
pub struct Credentials {
    /// Where the token comes from.
    source: TokenSource,
    /// A token file's last reading.
    state: Mutex<TokenState>,
}

enum TokenSource {
    /// No token (a client certificate, or an open server).
    None,
    /// Given in the kubeconfig.
    Fixed(HeaderValue),
    /// Read from this file, again as it rotates.
    File(PathBuf),
}

#[derive(Default)]
struct TokenState {
    /// `Bearer <token>` as last read.
    header: Option<HeaderValue>,
    /// When the file was last read; `None` forces a read.
    read_at: Option<Instant>,
}

impl Credentials {
    fn none() -> Credentials {
        Credentials::new(TokenSource::None)
    }

    fn new(source: TokenSource) -> Credentials {
        Credentials {
            source,
            state: Mutex::new(TokenState::default()),
        }
    }

    /// A token given in the configuration.
    fn fixed(token: &str) -> Result<Credentials, String> {
        Ok(Credentials::new(TokenSource::Fixed(bearer(token)?)))
    }

    /// A token read from `path`, which must be readable now.
    fn file(path: PathBuf) -> Result<Credentials, String> {
        let header = read_token(&path)?;
        let c = Credentials::new(TokenSource::File(path));
        *c.lock() = TokenState {
            header: Some(header),
            read_at: Some(Instant::now()),
        };
        Ok(c)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TokenState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The `Authorization` header; a token file is read again when its
    /// last reading is a minute old or was refused. A file that cannot be
    /// read now keeps the token read before, and says why.
    pub fn header(&self) -> Option<HeaderValue> {
        match &self.source {
            TokenSource::None => None,
            TokenSource::Fixed(h) => Some(h.clone()),
            TokenSource::File(path) => {
                let mut state = self.lock();
                let stale = state.read_at.is_none_or(|at| at.elapsed() >= TOKEN_REREAD);
                if stale {
                    state.read_at = Some(Instant::now());
                    match read_token(path) {
                        Ok(h) => state.header = Some(h),
                        Err(e) => {
                            tracing::warn!(error = %e, "kubernetes: keeping the token read before")
                        }
                    }
                }
                state.header.clone()
            }
        }
    }

    /// After a 401: the next request reads the token file again.
    pub fn refused(&self) {
        self.lock().read_at = None;
    }
}

fn bearer(token: &str) -> Result<HeaderValue, String> {
    let mut h = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
        .map_err(|_| "the token holds characters a header cannot".to_string())?;
    h.set_sensitive(true);
    Ok(h)
}

fn read_token(path: &Path) -> Result<HeaderValue, String> {
    let bytes = read_file(path, "token")?;
    let text =
        String::from_utf8(bytes).map_err(|_| format!("token file {}: not text", path.display()))?;
    if text.trim().is_empty() {
        return Err(format!("token file {} is empty", path.display()));
    }
    bearer(&text).map_err(|e| format!("token file {}: {e}", path.display()))
}

/// A small regular file, whole.
fn read_file(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let cannot = |e: &dyn std::fmt::Display| format!("{what} file {}: {e}", path.display());
    let meta = std::fs::metadata(path).map_err(|e| cannot(&e))?;
    if !meta.is_file() {
        return Err(cannot(&"not a regular file"));
    }
    let mut out = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES).read_to_end(&mut out))
        .map_err(|e| cannot(&e))?;
    Ok(out)
}

/// The PEM's bytes, and how errors name it (`field` is the kubeconfig's
/// name for it: `certificate-authority`, `client-key`, …).
fn pem_bytes(pem: &Pem, field: &str) -> Result<(Vec<u8>, String), String> {
    match pem {
        Pem::Data(d) => Ok((d.clone(), format!("{field}-data"))),
        Pem::File(path) => Ok((
            read_file(path, field)?,
            format!("{field} {}", path.display()),
        )),
    }
}

/// The client certificate of every handshake.
#[derive(Debug)]
struct ClientCertificate(Arc<CertifiedKey>);

impl ResolvesClientCert for ClientCertificate {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = rustls_pemfile::certs(&mut &pem[..])
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{what}: invalid PEM certificate: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{what}: no PEM certificate in it"));
    }
    Ok(certs)
}

/// The TLS settings: CA (or the system's bundle, or none verified) and
/// client certificate, each from a file or inline.
fn tls_config(
    ca: Option<&Pem>,
    insecure: bool,
    client: Option<(&Pem, &Pem)>,
) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = match (ca, insecure) {
        (Some(ca), false) => {
            let mut roots = rustls::RootCertStore::empty();
            let (pem, named) = pem_bytes(ca, "certificate-authority")?;
            for cert in certificates(&pem, &named)? {
                roots
                    .add(cert)
                    .map_err(|e| format!("{named}: {}", crate::tls::explain(&e)))?;
            }
            rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth()
        }
        // the shared TLS settings: the system bundle, or no verification
        _ => ClientTlsConfig {
            insecure_skip_verify: insecure,
            ..ClientTlsConfig::default()
        }
        .connector()?
        .config()
        .as_ref()
        .clone(),
    };
    if let Some((cert, key)) = client {
        let (pem, named) = pem_bytes(cert, "client-certificate")?;
        let chain = certificates(&pem, &named)?;
        let (pem, named) = pem_bytes(key, "client-key")?;
        let key = rustls_pemfile::private_key(&mut &pem[..])
            .map_err(|e| format!("{named}: invalid PEM: {e}"))?
            .ok_or_else(|| format!("{named}: no private key in it"))?;
        let key = CertifiedKey::from_der(chain, key, &provider).map_err(|e| {
            format!(
                "{named} does not fit the client certificate: {}",
                crate::tls::explain(&e)
            )
        })?;
        config.client_auth_cert_resolver = Arc::new(ClientCertificate(Arc::new(key)));
    }
    Ok(config)
}

impl Connection {
    /// Resolves `settings` with the process's environment.
    pub fn resolve(settings: &ApiSettings) -> Result<Connection, String> {
        Connection::resolve_with(settings, &|name| std::env::var(name).ok())
    }

    /// Resolves `settings`, reading variables through `env`.
    pub fn resolve_with(
        settings: &ApiSettings,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Connection, String> {
        let sa_dir = PathBuf::from(
            env(SERVICE_ACCOUNT_DIR_ENV).unwrap_or_else(|| SERVICE_ACCOUNT_DIR.to_string()),
        );
        let mut context = match &settings.kubeconfig {
            Some(path) => kubeconfig::read(path)?,
            None => kubeconfig::Context::default(),
        };
        let in_cluster = settings.kubeconfig.is_none() && settings.api_server.is_none();
        if in_cluster {
            let host = env("KUBERNETES_SERVICE_HOST")
                .filter(|h| !h.is_empty())
                .ok_or(
                    "kubernetes: neither kubeconfig nor api_server is set, and \
                 KUBERNETES_SERVICE_HOST is not (logferry is not running in a pod); \
                 set kubeconfig or api_server",
                )?;
            let port = env("KUBERNETES_SERVICE_PORT").unwrap_or_else(|| "443".into());
            let host = if host.contains(':') {
                format!("[{host}]")
            } else {
                host
            };
            context.server = format!("https://{host}:{port}");
        }
        if let Some(server) = &settings.api_server {
            context.server = server.clone();
        }
        if settings.kubeconfig.is_none() {
            // in a pod (or beside `api_server`, as Fluent Bit's Kube_URL
            // is): the service account's token and CA, when present
            let token = sa_dir.join("token");
            if in_cluster || token.is_file() {
                context.token_file = Some(token);
            }
            let ca = sa_dir.join("ca.crt");
            if in_cluster || ca.is_file() {
                context.certificate_authority = Some(Pem::File(ca));
            }
        }
        if let Some(token) = &settings.token_file {
            context.token = None;
            context.token_file = Some(token.clone());
        }
        if let Some(ca) = &settings.ca_file {
            context.certificate_authority = Some(Pem::File(ca.clone()));
        }
        let insecure = settings.insecure_skip_verify || context.insecure_skip_tls_verify;

        let uri: Uri = context
            .server
            .parse()
            .map_err(|e| format!("kubernetes: API server URL {:?}: {e}", context.server))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => {
                return Err(format!(
                    "kubernetes: API server URL {:?} must start with https:// or http://",
                    context.server
                ))
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| {
                format!(
                    "kubernetes: API server URL {:?} has no host",
                    context.server
                )
            })?
            .clone();
        let origin = Uri::builder()
            .scheme(uri.scheme_str().unwrap_or("https"))
            .authority(authority)
            .path_and_query("/")
            .build()
            .map_err(|e| format!("kubernetes: API server URL {:?}: {e}", context.server))?;
        let prefix = uri.path().trim_end_matches('/').to_string();
        let tls = if https {
            let client = context
                .client_certificate
                .as_ref()
                .zip(context.client_key.as_ref());
            Some(
                tls_config(context.certificate_authority.as_ref(), insecure, client)
                    .map_err(|e| format!("kubernetes: {e}"))?,
            )
        } else {
            None
        };
        let credentials = match (&context.token, &context.token_file) {
            (Some(token), _) => Credentials::fixed(token),
            (None, Some(file)) => Credentials::file(file.clone()),
            (None, None) => Ok(Credentials::none()),
        }
        .map_err(|e| format!("kubernetes: {e}"))?;
        Ok(Connection {
            origin,
            prefix,
            tls,
            server_name: context.tls_server_name,
            insecure: https && insecure,
            credentials,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    /// A self-signed CA certificate in PEM.
    fn ca_pem() -> String {
        rcgen::generate_simple_self_signed(vec!["kubernetes".into()])
            .unwrap()
            .cert
            .pem()
    }

    #[test]
    fn in_cluster_uses_the_service_account_and_rereads_its_token_after_a_401() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "first\n").unwrap();
        std::fs::write(dir.path().join("ca.crt"), ca_pem()).unwrap();
        let sa = dir.path().to_str().unwrap().to_string();
        let sa: &'static str = Box::leak(sa.into_boxed_str());
        let vars: &'static [(&str, &str)] = Box::leak(Box::new([
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
            ("KUBERNETES_SERVICE_PORT", "443"),
            (SERVICE_ACCOUNT_DIR_ENV, sa),
        ]));
        let c = Connection::resolve_with(&ApiSettings::default(), &env(vars)).unwrap();
        assert_eq!(c.origin.to_string(), "https://10.96.0.1:443/");
        assert_eq!(c.prefix, "");
        assert!(c.tls.is_some() && !c.insecure);
        assert_eq!(c.credentials.header().unwrap(), "Bearer first");
        // rotated: read again only after a 401 (or a minute)
        std::fs::write(dir.path().join("token"), "second\n").unwrap();
        assert_eq!(c.credentials.header().unwrap(), "Bearer first");
        c.credentials.refused();
        assert_eq!(c.credentials.header().unwrap(), "Bearer second");
        // a token file gone meanwhile keeps the last token
        std::fs::remove_file(dir.path().join("token")).unwrap();
        c.credentials.refused();
        assert_eq!(c.credentials.header().unwrap(), "Bearer second");
    }

    #[test]
    fn in_cluster_without_the_environment_or_the_files_is_a_clear_error() {
        let e = Connection::resolve_with(&ApiSettings::default(), &env(&[]))
            .err()
            .unwrap();
        assert!(e.contains("KUBERNETES_SERVICE_HOST"), "{e}");
        let e = Connection::resolve_with(
            &ApiSettings::default(),
            &env(&[
                ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
                (SERVICE_ACCOUNT_DIR_ENV, "/nonexistent-sa"),
            ]),
        )
        .err()
        .unwrap();
        assert!(e.contains("/nonexistent-sa/"), "{e}");
    }

    #[test]
    fn a_kubeconfig_with_inline_data_and_overrides() {
        use base64::Engine as _;
        let dir = tempfile::tempdir().unwrap();
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let client = rcgen::generate_simple_self_signed(vec!["admin".into()]).unwrap();
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            format!(
                "current-context: c\ncontexts: [{{name: c, context: {{cluster: k, user: u}}}}]\n\
                 clusters: [{{name: k, cluster: {{server: 'https://127.0.0.1:6443/k8s/clusters/c-1/', certificate-authority-data: {}}}}}]\n\
                 users: [{{name: u, user: {{client-certificate-data: {}, client-key-data: {}, token: abc}}}}]\n",
                b64(&ca_pem()),
                b64(&client.cert.pem()),
                b64(&client.key_pair.serialize_pem())
            ),
        )
        .unwrap();
        let settings = ApiSettings {
            kubeconfig: Some(path.clone()),
            ..ApiSettings::default()
        };
        let c = Connection::resolve_with(&settings, &env(&[])).unwrap();
        assert_eq!(c.origin.to_string(), "https://127.0.0.1:6443/");
        assert_eq!(c.prefix, "/k8s/clusters/c-1");
        assert!(c
            .tls
            .as_ref()
            .unwrap()
            .client_auth_cert_resolver
            .has_certs());
        assert_eq!(c.credentials.header().unwrap(), "Bearer abc");
        // api_server and token_file win over the kubeconfig
        let token = dir.path().join("token");
        std::fs::write(&token, "t2").unwrap();
        let settings = ApiSettings {
            kubeconfig: Some(path),
            api_server: Some("http://127.0.0.1:8001".into()),
            token_file: Some(token),
            ..ApiSettings::default()
        };
        let c = Connection::resolve_with(&settings, &env(&[])).unwrap();
        assert_eq!(c.origin.to_string(), "http://127.0.0.1:8001/");
        assert!(c.tls.is_none());
        assert_eq!(c.credentials.header().unwrap(), "Bearer t2");
    }

    #[test]
    fn a_file_that_is_no_certificate_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not a certificate").unwrap();
        let settings = ApiSettings {
            api_server: Some("https://127.0.0.1:6443".into()),
            ca_file: Some(ca.clone()),
            ..ApiSettings::default()
        };
        let e = Connection::resolve_with(&settings, &env(&[]))
            .err()
            .unwrap();
        assert!(e.contains(&ca.display().to_string()), "{e}");
    }

    #[test]
    fn api_server_alone_with_insecure_skip_verify_and_bad_urls() {
        let settings = ApiSettings {
            api_server: Some("https://127.0.0.1:6443".into()),
            insecure_skip_verify: true,
            ..ApiSettings::default()
        };
        let c = Connection::resolve_with(
            &settings,
            &env(&[(SERVICE_ACCOUNT_DIR_ENV, "/nonexistent")]),
        )
        .unwrap();
        assert!(c.insecure);
        assert!(c.credentials.header().is_none());
        for bad in ["ftp://x", "127.0.0.1:6443", "https://"] {
            let settings = ApiSettings {
                api_server: Some(bad.into()),
                ..ApiSettings::default()
            };
            assert!(
                Connection::resolve_with(
                    &settings,
                    &env(&[(SERVICE_ACCOUNT_DIR_ENV, "/nonexistent")])
                )
                .is_err(),
                "{bad}"
            );
        }
    }
}
