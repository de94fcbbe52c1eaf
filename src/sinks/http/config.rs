//! Settings of the `http` sink, and those the request-based sinks share
//! (`opensearch` too): the connection, batching and authentication.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::config::Secret;
pub use crate::format::ndjson::TimeFormat;
use crate::http_client::{ClientConfig, HttpVersion};
use crate::tls::ClientTlsConfig;

/// `type = "http"`: sends records in batches to an HTTP endpoint. Its
/// keys are in two structs, so the tools that list a table's keys (which
/// cannot see into a flattened struct) read each on its own.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HttpSinkConfig {
    #[serde(flatten)]
    pub sink: HttpSettings,
    #[serde(flatten)]
    pub request: RequestConfig,
}

/// The keys of the `http` sink that are its own.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct HttpSettings {
    /// Where requests go: `http(s)://host[:port]/path[?query]`; `${tag}`
    /// in it is the records' tag (a request then holds one tag).
    pub uri: String,
    /// `"post"` or `"put"`.
    #[serde(default)]
    pub method: Method,
    /// How records become the body.
    #[serde(default)]
    pub encoding: Encoding,
    /// With `encoding = "text"`: a line template (`{time} {host}
    /// {message}`, see the file sink's formats) instead of the message.
    pub template: Option<String>,
    /// With `ndjson` and `json`: the field the record's time is written
    /// to (unless the record has one); `""` leaves it out.
    #[serde(default = "default_time_key")]
    pub time_key: String,
    /// How that time is written.
    #[serde(default)]
    pub time_format: TimeFormat,
    /// With `ndjson` and `json`: a field the tag is written to; unset, none.
    pub tag_key: Option<String>,
    /// `"none"`, `"gzip"` or `"zstd"` (with `Content-Encoding`).
    #[serde(default)]
    pub compression: Compression,
    /// Headers sent with every request (values may use `${VAR}`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Answers delivered, besides 2xx: codes, or `"4xx"`-style classes.
    #[serde(default)]
    pub delivered_statuses: Vec<StatusPattern>,
    /// Answers retried; default 408, 429 and 5xx. Every other answer is a
    /// rejection.
    #[serde(default = "default_retry_statuses")]
    pub retry_statuses: Vec<StatusPattern>,
}

/// The settings every request-based sink shares.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct RequestConfig {
    /// `auth = { strategy = "basic", user = "…", password = "…" }` or
    /// `{ strategy = "bearer", token = "…" }` (or `password_file` /
    /// `token_file`).
    pub auth: Option<AuthConfig>,
    pub tls: Option<ClientTlsConfig>,
    #[serde(default)]
    pub http_version: HttpVersion,
    /// Most records in one request.
    #[serde(default = "default_batch_records")]
    pub batch_records: usize,
    /// Most bytes of records (as received) in one request.
    #[serde(default = "default_batch_bytes", deserialize_with = "units::bytes")]
    pub batch_bytes: usize,
    /// How long a request nobody waits for gathers records before it is
    /// sent (a request with records whose client waits goes at once).
    #[serde(default = "default_linger", deserialize_with = "units::duration")]
    pub linger: Duration,
    /// Requests in flight at once (retries waiting included).
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    #[serde(
        default = "default_connect_timeout",
        deserialize_with = "units::duration"
    )]
    pub connect_timeout: Duration,
    /// Longest one request may take, answer included.
    #[serde(
        default = "default_request_timeout",
        deserialize_with = "units::duration"
    )]
    pub request_timeout: Duration,
    /// Most bytes of an answer read.
    #[serde(
        default = "default_max_response_bytes",
        deserialize_with = "units::bytes"
    )]
    pub max_response_bytes: usize,
    /// At a stop, how long requests in flight may still take.
    #[serde(
        default = "default_drain_timeout",
        deserialize_with = "units::duration"
    )]
    pub drain_timeout: Duration,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    #[default]
    Post,
    Put,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// One JSON object per line (`application/x-ndjson`).
    #[default]
    Ndjson,
    /// One JSON array of objects (`application/json`).
    Json,
    /// One msgpack array of maps (`application/msgpack`).
    Msgpack,
    /// One line per record: its message, or `template` (`text/plain`).
    Text,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Zstd,
}

/// One answer code (`429`) or a class (`"5xx"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusPattern {
    Code(u16),
    Class(u16),
}

impl StatusPattern {
    pub fn matches(&self, status: u16) -> bool {
        match *self {
            StatusPattern::Code(c) => c == status,
            StatusPattern::Class(c) => status / 100 == c,
        }
    }
}

impl<'de> Deserialize<'de> for StatusPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Code(u16),
            Class(String),
        }
        let bad = || {
            serde::de::Error::custom("a status is a code such as 429 or a class such as \"5xx\"")
        };
        match Raw::deserialize(d)? {
            Raw::Code(c) if (100..600).contains(&c) => Ok(StatusPattern::Code(c)),
            Raw::Class(s) => match s.as_bytes() {
                [c @ b'1'..=b'5', b'x' | b'X', b'x' | b'X'] => {
                    Ok(StatusPattern::Class(u16::from(c - b'0')))
                }
                _ => Err(bad()),
            },
            Raw::Code(_) => Err(bad()),
        }
    }
}

/// `auth`: credentials sent with every request.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(tag = "strategy", rename_all = "snake_case", deny_unknown_fields)]
pub enum AuthConfig {
    /// `Authorization: Basic …`.
    Basic {
        user: String,
        password: Option<Secret>,
        /// A file holding the password (trimmed), read at start.
        password_file: Option<PathBuf>,
    },
    /// `Authorization: Bearer …`.
    Bearer {
        token: Option<Secret>,
        token_file: Option<PathBuf>,
    },
    /// `Authorization: ApiKey …` (Elasticsearch and OpenSearch API keys,
    /// the base64 `id:key` they hand out).
    ApiKey {
        token: Option<Secret>,
        token_file: Option<PathBuf>,
    },
}

impl AuthConfig {
    /// The `Authorization` header value; files are read now.
    pub fn header(&self) -> Result<String, String> {
        use base64::Engine as _;
        fn secret(
            key: &str,
            value: &Option<Secret>,
            file: &Option<PathBuf>,
        ) -> Result<String, String> {
            match (value, file) {
                (Some(v), None) => Ok(v.expose().to_string()),
                (None, Some(f)) => std::fs::read_to_string(f)
                    .map(|s| s.trim().to_string())
                    .map_err(|e| format!("auth.{key}_file: cannot read {}: {e}", f.display())),
                _ => Err(format!("auth: set one of `{key}` and `{key}_file`")),
            }
        }
        Ok(match self {
            AuthConfig::Basic {
                user,
                password,
                password_file,
            } => {
                let password = secret("password", password, password_file)?;
                let pair = format!("{user}:{password}");
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                )
            }
            AuthConfig::Bearer { token, token_file } => {
                format!("Bearer {}", secret("token", token, token_file)?)
            }
            AuthConfig::ApiKey { token, token_file } => {
                format!("ApiKey {}", secret("token", token, token_file)?)
            }
        })
    }
}

fn default_time_key() -> String {
    "time".into()
}

fn default_retry_statuses() -> Vec<StatusPattern> {
    vec![
        StatusPattern::Code(408),
        StatusPattern::Code(429),
        StatusPattern::Class(5),
    ]
}

/// Default `batch_records`.
pub const DEFAULT_BATCH_RECORDS: usize = 5000;

const fn default_batch_records() -> usize {
    DEFAULT_BATCH_RECORDS
}

const fn default_batch_bytes() -> usize {
    4 << 20
}

/// Default `linger`: records where nobody waits gather this long, so a
/// 1,000 lines/s flow costs a few requests a second, not one per batch.
pub const DEFAULT_LINGER: Duration = Duration::from_millis(200);

const fn default_linger() -> Duration {
    DEFAULT_LINGER
}

const fn default_concurrency() -> usize {
    2
}

const fn default_connect_timeout() -> Duration {
    Duration::from_secs(10)
}

const fn default_request_timeout() -> Duration {
    Duration::from_secs(30)
}

const fn default_max_response_bytes() -> usize {
    1 << 20
}

const fn default_drain_timeout() -> Duration {
    Duration::from_secs(30)
}

impl RequestConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.batch_records == 0 || self.concurrency == 0 {
            return Err("batch_records and concurrency must be at least 1".into());
        }
        if self.concurrency > 64 {
            return Err("concurrency: at most 64 requests in flight".into());
        }
        if self.request_timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err("request_timeout and connect_timeout must be more than 0".into());
        }
        if let Some(tls) = &self.tls {
            tls.validate()?;
        }
        if let Some(a) = &self.auth {
            a.header()?;
        }
        Ok(())
    }

    /// The client's settings for requests to `base`.
    pub fn client(&self, base: http::Uri) -> ClientConfig {
        ClientConfig {
            base,
            version: self.http_version,
            tls: self.tls.clone(),
            connect_timeout: self.connect_timeout,
            request_timeout: self.request_timeout,
            max_response_bytes: self.max_response_bytes,
        }
    }
}

impl HttpSinkConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.request.validate()?;
        self.sink.validate()
    }
}

impl HttpSettings {
    pub fn validate(&self) -> Result<(), String> {
        let probe = self.uri.replace("${tag}", "tag");
        let uri: http::Uri = probe
            .parse()
            .map_err(|e| format!("uri {:?}: {e}", self.uri))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(format!(
                "uri {:?}: write http://host:port/path or https://…",
                self.uri
            ));
        }
        if self.template.is_some() && self.encoding != Encoding::Text {
            return Err("template applies to encoding = \"text\" only".into());
        }
        if let Some(t) = &self.template {
            crate::format::Template::parse(t)?;
        }
        for (name, value) in &self.headers {
            http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("headers: {name:?} is not a header name"))?;
            http::HeaderValue::from_str(value)
                .map_err(|_| format!("headers.{name}: not a valid header value"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> Result<HttpSinkConfig, String> {
        toml::from_str(toml_text).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_status_patterns() {
        let c = parse("uri = \"http://127.0.0.1:1/x\"").unwrap();
        assert_eq!(c.sink.encoding, Encoding::Ndjson);
        assert_eq!(c.request.linger, DEFAULT_LINGER);
        assert!(c.sink.retry_statuses.iter().any(|p| p.matches(503)));
        assert!(c.sink.retry_statuses.iter().any(|p| p.matches(429)));
        assert!(!c.sink.retry_statuses.iter().any(|p| p.matches(400)));
        let c = parse("uri = \"http://h/\"\nretry_statuses = [\"4xx\", 500]").unwrap();
        assert!(c.sink.retry_statuses[0].matches(404));
        assert!(!c.sink.retry_statuses[1].matches(501));
        assert!(parse("uri = \"http://h/\"\nretry_statuses = [\"6xx\"]").is_err());
        assert!(parse("uri = \"http://h/\"\nretry_statuses = [99]").is_err());
        c.validate().unwrap();
    }

    #[test]
    fn auth_headers_and_bad_settings() {
        let c = parse(
            "uri = \"https://h/\"\nauth = { strategy = \"basic\", user = \"u\", password = \"p\" }",
        )
        .unwrap();
        assert_eq!(c.request.auth.unwrap().header().unwrap(), "Basic dTpw");
        let c = parse("uri = \"http://h/\"\nauth = { strategy = \"bearer\" }").unwrap();
        assert!(c.validate().unwrap_err().contains("token"));
        let c = parse("uri = \"ftp://h/\"").unwrap();
        assert!(c.validate().is_err());
        let c = parse("uri = \"http://h/\"\ntemplate = \"{message}\"").unwrap();
        assert!(c.validate().is_err());
        let c = parse("uri = \"http://h/\"\nheaders = { \"a b\" = \"x\" }").unwrap();
        assert!(c.validate().is_err());
        assert!(parse("uri = \"http://h/\"\nnope = 1").is_err());
    }
}
