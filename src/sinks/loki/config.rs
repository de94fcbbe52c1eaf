//! Settings of the `loki` sink.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::sinks::http::config::{Compression, StatusPattern};
use crate::sinks::http::RequestConfig;

/// `type = "loki"`: pushes records to Grafana Loki's push API (or a server
/// that speaks it). Its keys are in two structs (see
/// [`crate::sinks::http::config::HttpSinkConfig`]).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LokiSinkConfig {
    #[serde(flatten)]
    pub sink: LokiSettings,
    #[serde(flatten)]
    pub request: RequestConfig,
}

/// The keys of the `loki` sink that are its own.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct LokiSettings {
    /// Base URL of the server (`http://127.0.0.1:3100`); pushes go to
    /// `path` under it.
    pub endpoint: String,
    /// The push API's path, after the endpoint's own path.
    #[serde(default = "default_path")]
    pub path: String,
    /// `"protobuf"` (snappy-compressed `logproto.PushRequest`, what
    /// Promtail sends) or `"json"`.
    #[serde(default)]
    pub encoding: Encoding,
    /// With `encoding = "json"`: `"none"` or `"gzip"`. A protobuf push is
    /// always snappy-compressed, as the API requires.
    #[serde(default)]
    pub compression: Compression,
    /// The stream labels: label name → template (`{tag}` or `${tag}`,
    /// `{FIELD}` or `${record.FIELD}`, `{host}`, literal text). A label
    /// whose value renders empty is left out.
    #[serde(default = "default_labels")]
    pub labels: BTreeMap<String, String>,
    /// Leave the record fields the labels name out of the line (they are
    /// in the stream's labels already).
    #[serde(default)]
    pub remove_label_fields: bool,
    /// Structured metadata of each entry: name → template, as `labels`;
    /// an empty value is left out.
    #[serde(default)]
    pub structured_metadata: BTreeMap<String, String>,
    /// What each entry's line is: `"json"` (the record as a JSON object)
    /// or `"message"` (its message, as the raw format writes it).
    #[serde(default)]
    pub line_format: LineFormat,
    /// Sent as `X-Scope-OrgID` (Loki's tenant) with every push.
    pub tenant_id: Option<String>,
    /// Answers retried; default 408, 429 and 5xx. A 400 or 413 is split
    /// to find the entries refused; any other answer sets its push aside.
    #[serde(default = "default_retry_statuses")]
    pub retry_statuses: Vec<StatusPattern>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// `application/x-protobuf`, snappy block compression.
    #[default]
    Protobuf,
    /// `application/json`.
    Json,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum LineFormat {
    /// The record as one JSON object.
    #[default]
    Json,
    /// The record's message (its `message` or `log` field), as text.
    Message,
}

fn default_path() -> String {
    "/loki/api/v1/push".into()
}

fn default_labels() -> BTreeMap<String, String> {
    BTreeMap::from([("job".to_string(), "logferry".to_string())])
}

fn default_retry_statuses() -> Vec<StatusPattern> {
    vec![
        StatusPattern::Code(408),
        StatusPattern::Code(429),
        StatusPattern::Class(5),
    ]
}

impl LokiSinkConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.request.validate()?;
        self.sink.validate()
    }
}

/// Whether `name` is a Prometheus label name, as Loki requires.
fn is_label_name(name: &str) -> bool {
    let mut b = name.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

impl LokiSettings {
    pub fn validate(&self) -> Result<(), String> {
        let uri: http::Uri = self
            .endpoint
            .parse()
            .map_err(|e| format!("endpoint {:?}: {e}", self.endpoint))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(format!(
                "endpoint {:?}: write http://host:port or https://host:port",
                self.endpoint
            ));
        }
        if uri.query().is_some() {
            return Err(format!("endpoint {:?}: no query string", self.endpoint));
        }
        if !self.path.starts_with('/') {
            return Err(format!("path {:?} must start with `/`", self.path));
        }
        if self.labels.is_empty() {
            return Err(
                "labels: Loki needs at least one stream label, e.g. { job = \"{tag}\" }".into(),
            );
        }
        for (key, table) in [
            ("labels", &self.labels),
            ("structured_metadata", &self.structured_metadata),
        ] {
            for (name, template) in table {
                if !is_label_name(name) {
                    return Err(format!(
                        "{key}.{name}: a name is letters, digits and `_`, not starting with a digit"
                    ));
                }
                super::encode::FieldTemplate::parse(template)
                    .map_err(|e| format!("{key}.{name}: {e}"))?;
            }
        }
        match (self.encoding, self.compression) {
            (_, Compression::Zstd) => {
                Err("compression: \"none\" or \"gzip\" (Loki does not read zstd)".into())
            }
            (Encoding::Protobuf, Compression::Gzip) => Err(
                "compression = \"gzip\" is for encoding = \"json\"; a protobuf push is always snappy-compressed"
                    .into(),
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<LokiSinkConfig, String> {
        toml::from_str(t).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_checks() {
        let c = parse("endpoint = \"http://127.0.0.1:3100\"").unwrap();
        c.validate().unwrap();
        assert_eq!(c.sink.path, "/loki/api/v1/push");
        assert_eq!(c.sink.encoding, Encoding::Protobuf);
        assert_eq!(c.sink.labels["job"], "logferry");
        for (extra, says) in [
            ("endpoint = \"ftp://h\"", "http://"),
            ("endpoint = \"http://h\"\nlabels = {}", "at least one"),
            (
                "endpoint = \"http://h\"\nlabels = { 1x = \"a\" }",
                "letters",
            ),
            (
                "endpoint = \"http://h\"\nlabels = { a = \"{b\" }",
                "closing",
            ),
            (
                "endpoint = \"http://h\"\nstructured_metadata = { a-b = \"x\" }",
                "letters",
            ),
            ("endpoint = \"http://h\"\ncompression = \"gzip\"", "snappy"),
            (
                "endpoint = \"http://h\"\nencoding = \"json\"\ncompression = \"zstd\"",
                "gzip",
            ),
            ("endpoint = \"http://h\"\npath = \"x\"", "start with"),
        ] {
            let e = parse(extra).unwrap().validate().unwrap_err();
            assert!(e.contains(says), "{extra}: {e}");
        }
        assert!(parse("endpoint = \"http://h\"\nlabelz = {}").is_err());
        parse("endpoint = \"http://h\"\nencoding = \"json\"\ncompression = \"gzip\"")
            .unwrap()
            .validate()
            .unwrap();
    }
}
