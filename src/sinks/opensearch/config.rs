//! Settings of the `opensearch` sink (`elasticsearch` is the same sink).

use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::sinks::http::config::{Compression, StatusPattern, TimeFormat};
use crate::sinks::http::RequestConfig;
use crate::sinks::name::NameTemplate;

/// `type = "opensearch"`: indexes records through the `_bulk` API. Its
/// keys are in two structs (see [`crate::sinks::http::config::HttpSinkConfig`]).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OpenSearchSinkConfig {
    #[serde(flatten)]
    pub sink: OpenSearchSettings,
    #[serde(flatten)]
    pub request: RequestConfig,
}

/// The keys of the `opensearch` sink that are its own.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct OpenSearchSettings {
    /// Base URLs of the nodes (`http://127.0.0.1:9200`); requests go to
    /// them in turn, skipping those that did not answer.
    pub endpoints: Vec<String>,
    /// The index (or data stream) of each record: `${tag}`, `${tag[N]}`,
    /// `${record.FIELD}` and strftime sequences of the record's time (UTC).
    #[serde(default = "default_index")]
    pub index: String,
    /// `"index"` (replace a document with the same id) or `"create"`
    /// (data streams need it; a document whose id exists is refused, and
    /// counted as delivered: it is there).
    #[serde(default)]
    pub action: Action,
    /// A record field whose value is the document's `_id`; a record
    /// without it is indexed with an id the node chooses (counted in
    /// `logferry_opensearch_id_missing_total`).
    pub id_key: Option<String>,
    /// Give each document an `_id` made from its tag, time and content, so
    /// a record sent again (a retried bulk, a source that resends after a
    /// restart) replaces or meets itself instead of being indexed twice.
    #[serde(default)]
    pub generate_id: bool,
    /// A record field whose value is the document's routing.
    pub routing_key: Option<String>,
    /// The ingest pipeline every document goes through.
    pub pipeline: Option<String>,
    /// The field the record's time is written to, unless it has one; `""`
    /// leaves it out.
    #[serde(default = "default_time_key")]
    pub time_key: String,
    #[serde(default = "default_time_format")]
    pub time_format: TimeFormat,
    /// A field the tag is written to; unset, none.
    pub tag_key: Option<String>,
    /// `"none"` or `"gzip"` (`zstd` is not something the servers read).
    #[serde(default)]
    pub compression: Compression,
    /// How often a node that did not answer is asked again (`GET /`),
    /// which also feeds `/ready`.
    #[serde(
        default = "default_health_interval",
        deserialize_with = "units::duration"
    )]
    pub health_interval: Duration,
    /// Whole-bulk answers retried; default 408, 429 and 5xx.
    #[serde(default = "default_retry_statuses")]
    pub retry_statuses: Vec<StatusPattern>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    #[default]
    Index,
    Create,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Index => "index",
            Action::Create => "create",
        }
    }
}

fn default_index() -> String {
    "logferry-%Y.%m.%d".into()
}

fn default_time_key() -> String {
    "@timestamp".into()
}

fn default_time_format() -> TimeFormat {
    TimeFormat::Rfc3339
}

const fn default_health_interval() -> Duration {
    Duration::from_secs(5)
}

fn default_retry_statuses() -> Vec<StatusPattern> {
    vec![
        StatusPattern::Code(408),
        StatusPattern::Code(429),
        StatusPattern::Class(5),
    ]
}

impl OpenSearchSinkConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.request.validate()?;
        self.sink.validate()
    }
}

impl OpenSearchSettings {
    pub fn validate(&self) -> Result<(), String> {
        if self.endpoints.is_empty() {
            return Err(
                "endpoints: name at least one node, e.g. [\"http://127.0.0.1:9200\"]".into(),
            );
        }
        for e in &self.endpoints {
            let uri: http::Uri = e
                .parse()
                .map_err(|err| format!("endpoints: {e:?}: {err}"))?;
            if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
                return Err(format!(
                    "endpoints: {e:?}: write http://host:port or https://host:port"
                ));
            }
            if uri.query().is_some() {
                return Err(format!("endpoints: {e:?}: no query string"));
            }
        }
        NameTemplate::parse("index", &self.index)?;
        if self.id_key.is_some() && self.generate_id {
            return Err(
                "id_key and generate_id: set one of them (where the _id comes from)".into(),
            );
        }
        if self.compression == Compression::Zstd {
            return Err("compression: \"none\" or \"gzip\" (the servers do not read zstd)".into());
        }
        if self.health_interval.is_zero() {
            return Err("health_interval must be more than 0".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<OpenSearchSinkConfig, String> {
        toml::from_str(t).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_checks() {
        let c = parse("endpoints = [\"http://127.0.0.1:9200\"]").unwrap();
        c.validate().unwrap();
        assert_eq!(c.sink.index, "logferry-%Y.%m.%d");
        assert_eq!(c.sink.action, Action::Index);
        assert_eq!(c.sink.time_key, "@timestamp");
        for (extra, says) in [
            ("endpoints = []", "at least one"),
            ("endpoints = [\"ftp://h\"]", "http://"),
            (
                "endpoints = [\"http://h\"]\nid_key = \"id\"\ngenerate_id = true",
                "set one",
            ),
            (
                "endpoints = [\"http://h\"]\nindex = \"x-${nope}\"",
                "unknown",
            ),
            ("endpoints = [\"http://h\"]\ncompression = \"zstd\"", "gzip"),
        ] {
            let e = parse(extra).unwrap().validate().unwrap_err();
            assert!(e.contains(says), "{extra}: {e}");
        }
        assert!(parse("endpoints = [\"http://h\"]\nindexx = \"a\"").is_err());
    }
}
