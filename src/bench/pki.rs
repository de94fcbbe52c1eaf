//! A throwaway CA and server certificate for TLS benchmarks.

use std::path::{Path, PathBuf};

pub struct Pki {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Writes a CA and a certificate for `localhost`/`127.0.0.1` into `dir`.
pub fn generate(dir: &Path) -> Result<Pki, String> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let e = |e: rcgen::Error| e.to_string();
    let ca_key = KeyPair::generate().map_err(e)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).map_err(e)?;
    let key = KeyPair::generate().map_err(e)?;
    let cert = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .map_err(e)?
        .signed_by(&key, &ca, &ca_key)
        .map_err(e)?;
    let put = |name: &str, pem: String| -> Result<PathBuf, String> {
        let p = dir.join(name);
        std::fs::write(&p, pem).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(p)
    };
    Ok(Pki {
        ca: put("bench-ca.pem", ca.pem())?,
        cert: put("bench-server.pem", cert.pem())?,
        key: put("bench-server.key", key.serialize_pem())?,
    })
}
