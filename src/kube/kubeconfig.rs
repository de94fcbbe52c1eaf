//! A kubeconfig file (kubectl's format), read for its current context:
//! the cluster's server and CA, and the user's token or client
//! certificate. Paths in it are relative to the file's directory, as
//! kubectl reads them; `*-data` fields hold the PEM inline, in base64.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::Deserialize;

/// PEM given by path or inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pem {
    File(PathBuf),
    /// Decoded from a `*-data` field.
    Data(Vec<u8>),
}

/// What the current context says about reaching the API server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Context {
    pub server: String,
    pub certificate_authority: Option<Pem>,
    pub insecure_skip_tls_verify: bool,
    /// The name to verify the server's certificate against, when not the
    /// server's host.
    pub tls_server_name: Option<String>,
    pub token: Option<String>,
    pub token_file: Option<PathBuf>,
    pub client_certificate: Option<Pem>,
    pub client_key: Option<Pem>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct File {
    #[serde(default)]
    current_context: String,
    #[serde(default)]
    contexts: Vec<NamedContext>,
    #[serde(default)]
    clusters: Vec<NamedCluster>,
    #[serde(default)]
    users: Vec<NamedUser>,
}

#[derive(Deserialize)]
struct NamedContext {
    name: String,
    context: ContextRefs,
}

#[derive(Deserialize)]
struct ContextRefs {
    cluster: String,
    #[serde(default)]
    user: String,
}

#[derive(Deserialize)]
struct NamedCluster {
    name: String,
    cluster: Cluster,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: String,
    certificate_authority: Option<PathBuf>,
    certificate_authority_data: Option<String>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
    tls_server_name: Option<String>,
    proxy_url: Option<String>,
}

#[derive(Deserialize)]
struct NamedUser {
    name: String,
    #[serde(default)]
    user: User,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct User {
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<PathBuf>,
    client_certificate: Option<PathBuf>,
    client_certificate_data: Option<String>,
    client_key: Option<PathBuf>,
    client_key_data: Option<String>,
    exec: Option<serde_yaml::Value>,
    auth_provider: Option<serde_yaml::Value>,
    username: Option<String>,
}

/// Largest kubeconfig read.
const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// Reads `path` and resolves its current context. Errors name the file
/// and say what to change.
pub fn read(path: &Path) -> Result<Context, String> {
    use std::io::Read as _;
    let shown = path.display();
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BYTES).read_to_string(&mut text))
        .map_err(|e| format!("kubeconfig: cannot read {shown}: {e}"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    parse(&text, dir).map_err(|e| format!("kubeconfig {shown}: {e}"))
}

/// Resolves the current context of a kubeconfig's text; relative paths
/// are taken from `dir`.
pub fn parse(text: &str, dir: &Path) -> Result<Context, String> {
    let file: File = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    let wanted = &file.current_context;
    if wanted.is_empty() {
        return Err("no current-context; set one (kubectl config use-context)".into());
    }
    let refs = &file
        .contexts
        .iter()
        .find(|c| &c.name == wanted)
        .ok_or_else(|| format!("current-context {wanted:?} is not among its contexts"))?
        .context;
    let cluster = &file
        .clusters
        .iter()
        .find(|c| c.name == refs.cluster)
        .ok_or_else(|| {
            format!(
                "cluster {:?} of context {wanted:?} is not among its clusters",
                refs.cluster
            )
        })?
        .cluster;
    let user = match refs.user.as_str() {
        "" => None,
        name => Some(
            &file
                .users
                .iter()
                .find(|u| u.name == name)
                .ok_or_else(|| {
                    format!("user {name:?} of context {wanted:?} is not among its users")
                })?
                .user,
        ),
    };
    if cluster.proxy_url.is_some() {
        return Err(format!(
            "cluster {:?}: proxy-url is not supported; give api_server instead",
            refs.cluster
        ));
    }
    let path = |p: &PathBuf| dir.join(p);
    let pem = |file: &Option<PathBuf>, data: &Option<String>, field: &str| -> Result<_, String> {
        Ok(match (data, file) {
            (Some(data), _) => Some(Pem::Data(
                base64::engine::general_purpose::STANDARD
                    .decode(data.split_whitespace().collect::<String>())
                    .map_err(|e| format!("{field}-data is not base64: {e}"))?,
            )),
            (None, Some(file)) => Some(Pem::File(path(file))),
            (None, None) => None,
        })
    };
    let mut context = Context {
        server: cluster.server.clone(),
        certificate_authority: pem(
            &cluster.certificate_authority,
            &cluster.certificate_authority_data,
            "certificate-authority",
        )?,
        insecure_skip_tls_verify: cluster.insecure_skip_tls_verify,
        tls_server_name: cluster.tls_server_name.clone(),
        ..Context::default()
    };
    if let Some(user) = user {
        let unsupported = if user.exec.is_some() {
            Some("exec (a credential plugin)")
        } else if user.auth_provider.is_some() {
            Some("auth-provider")
        } else if user.username.is_some() {
            Some("username/password")
        } else {
            None
        };
        if let Some(what) = unsupported {
            return Err(format!(
                "user {:?}: {what} is not supported; use a token, tokenFile or a client certificate",
                refs.user
            ));
        }
        context.token = user.token.clone().filter(|t| !t.is_empty());
        context.token_file = user.token_file.as_ref().map(path);
        context.client_certificate = pem(
            &user.client_certificate,
            &user.client_certificate_data,
            "client-certificate",
        )?;
        context.client_key = pem(&user.client_key, &user.client_key_data, "client-key")?;
        if context.client_certificate.is_some() != context.client_key.is_some() {
            return Err(format!(
                "user {:?}: client-certificate and client-key go together",
                refs.user
            ));
        }
    }
    Ok(context)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
apiVersion: v1
kind: Config
preferences: {}
current-context: kind-logs
clusters:
- name: other
  cluster:
    server: https://other:6443
- name: kind-logs
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmFiYwotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==
    tls-server-name: kubernetes
contexts:
- name: other
  context: {cluster: other, user: other}
- name: kind-logs
  context:
    cluster: kind-logs
    user: kind-logs
    namespace: default
users:
- name: other
  user: {token: other-token}
- name: kind-logs
  user:
    client-certificate: certs/client.crt
    client-key-data: a2V5
"#;

    #[test]
    fn the_current_context_gives_server_inline_ca_and_client_certificate() {
        let c = parse(CONFIG, Path::new("/etc/kube")).unwrap();
        assert_eq!(c.server, "https://127.0.0.1:6443");
        let Some(Pem::Data(ca)) = &c.certificate_authority else {
            panic!("{:?}", c.certificate_authority);
        };
        assert!(ca.starts_with(b"-----BEGIN CERTIFICATE-----\nabc\n"));
        assert_eq!(c.tls_server_name.as_deref(), Some("kubernetes"));
        assert_eq!(
            c.client_certificate,
            Some(Pem::File(PathBuf::from("/etc/kube/certs/client.crt")))
        );
        assert_eq!(c.client_key, Some(Pem::Data(b"key".to_vec())));
        assert_eq!(c.token, None);
        assert!(!c.insecure_skip_tls_verify);
    }

    #[test]
    fn a_token_context_and_insecure_skip_verify() {
        let text = r#"
current-context: s4
clusters: [{name: s4, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
contexts: [{name: s4, context: {cluster: s4, user: admin}}]
users: [{name: admin, user: {token: s4-admin-token, tokenFile: /run/token}}]
"#;
        let c = parse(text, Path::new("/x")).unwrap();
        assert!(c.insecure_skip_tls_verify);
        assert_eq!(c.token.as_deref(), Some("s4-admin-token"));
        assert_eq!(c.token_file, Some(PathBuf::from("/run/token")));
        assert_eq!(c.certificate_authority, None);
    }

    #[test]
    fn what_cannot_be_used_is_said() {
        let errors = [
            ("current-context: x\nclusters: []\n", "not among its contexts"),
            ("clusters: []\n", "no current-context"),
            (
                "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n",
                "cluster \"c\"",
            ),
            (
                "current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: x}}]\nusers: [{name: u, user: {exec: {command: aws}}}]\n",
                "exec",
            ),
            (
                "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\nclusters: [{name: c, cluster: {server: x, certificate-authority-data: '%%%'}}]\n",
                "not base64",
            ),
            ("current-context: [", ""),
        ];
        for (text, wanted) in errors {
            let e = parse(text, Path::new("/")).unwrap_err();
            assert!(e.contains(wanted), "{text}: {e}");
        }
        let e = read(Path::new("/nonexistent/kubeconfig")).unwrap_err();
        assert!(e.contains("/nonexistent/kubeconfig"), "{e}");
    }
}
