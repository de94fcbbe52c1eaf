//! Which configuration values are secret: the one rule behind every place
//! the configuration is echoed (`GET /config`, `logferry validate`, the
//! 422 of a refused reload, the log), applied by [`super::redact`].
//!
//! A value is secret when a key on its path says so ([`hides_values`]):
//! a key named for a secret (`password`, `token`, `shared_key`, …, see
//! [`SECRET_KEYS`]), or a map of HTTP headers (`headers`), whose values
//! are credentials as often as not (`Authorization`, `x-api-key`). Values
//! that came from the environment (`${VAR}`) or from a file a `*_file`
//! key of a secret names are redacted wherever they show, whatever key
//! holds them.

/// A secret string from the configuration: shown as `***` by `Debug`, so
/// a printed configuration never carries it.
#[derive(Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Secret {
        Secret(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"***\"")
    }
}

/// Key names whose values are secrets (matched case-insensitively as a
/// part of the key): shared keys, passwords, passphrases, tokens, access
/// keys, a proxy URL (it may carry a user and password), and
/// librdkafka's secret properties (`sasl.password`,
/// `ssl.key.password`, `ssl.key.pem`, `sasl.oauthbearer.client.secret`, …).
pub const SECRET_KEYS: &[&str] = &[
    "password",
    "passphrase",
    "secret",
    "shared_key",
    "token",
    "access_key",
    "proxy_url",
    "key.pem",
    "sasl.oauthbearer.config",
    "sasl.jaas.config",
];

/// Whether the value of `key` is a secret (see [`SECRET_KEYS`]). A key
/// that says where a secret is kept (`token_file`, `token_env`) is not.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    if key.ends_with("_file") || key.ends_with("_env") {
        return false;
    }
    SECRET_KEYS.iter().any(|s| key.contains(s))
}

/// Whether `key` holds HTTP headers (`headers`, `request_headers`, …):
/// every value under it is a secret, whatever the header is called.
pub fn is_header_map(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key == "headers" || key.ends_with("_headers") || key.ends_with(".headers")
}

/// Whether every value under `key` (at any depth) is hidden: a secret
/// key or a map of headers.
pub fn hides_values(key: &str) -> bool {
    is_secret_key(key) || is_header_map(key)
}

/// Whether `key` names a file whose content is a secret (`token_file`,
/// `password_file`, `secret_access_key_file`): its content is redacted
/// wherever it shows.
pub fn is_secret_file_key(key: &str) -> bool {
    key.to_ascii_lowercase()
        .strip_suffix("_file")
        .is_some_and(is_secret_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_keys_header_maps_and_where_secrets_are_kept() {
        for k in [
            "password",
            "shared_key",
            "token",
            "sasl.password",
            "SSL.KEY.PEM",
            "secret_access_key",
            "access_key_id",
        ] {
            assert!(is_secret_key(k) && hides_values(k), "{k}");
        }
        for k in ["headers", "Headers", "request_headers"] {
            assert!(is_header_map(k) && hides_values(k), "{k}");
        }
        for k in [
            "token_file",
            "token_env",
            "address",
            "username",
            "x-api-key",
        ] {
            assert!(!hides_values(k), "{k}");
        }
        assert!(is_secret_file_key("token_file"));
        assert!(is_secret_file_key("password_file"));
        assert!(!is_secret_file_key("path_file"));
        assert!(!is_secret_file_key("token"));
        assert_eq!(format!("{:?}", Secret::new("hidden")), "\"***\"");
    }
}
