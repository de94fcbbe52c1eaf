//! Settings of the `splunk_hec` sink.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::config::Secret;
use crate::sinks::http::config::{Compression, StatusPattern};
use crate::sinks::http::RequestConfig;
use crate::sinks::name::NameTemplate;

/// `type = "splunk_hec"`: sends records to a Splunk HTTP Event Collector.
/// Its keys are in two structs (see
/// [`crate::sinks::http::config::HttpSinkConfig`]).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SplunkHecSinkConfig {
    #[serde(flatten)]
    pub sink: SplunkHecSettings,
    #[serde(flatten)]
    pub request: RequestConfig,
}

/// The keys of the `splunk_hec` sink that are its own.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct SplunkHecSettings {
    /// Base URL of the collector (`https://splunk:8088`); the HEC paths
    /// go under it.
    pub endpoint: String,
    /// `"event"` (`/services/collector/event`: one JSON event per record,
    /// with its time and metadata) or `"raw"` (`/services/collector/raw`:
    /// one line per record, metadata in the query).
    #[serde(default)]
    pub endpoint_target: EndpointTarget,
    /// The HEC token (`${SPLUNK_TOKEN}` reads it from the environment);
    /// never shown by `GET /config` or the log.
    pub token: Option<Secret>,
    /// A file holding the token (trimmed), read at start.
    pub token_file: Option<PathBuf>,
    /// The index of each record; unset, the token's default index. All
    /// four take `${tag}`, `${tag[N]}`, `${record.FIELD}` and strftime
    /// sequences of the record's time (UTC).
    pub index: Option<String>,
    /// The sourcetype of each record; unset, the token's.
    pub sourcetype: Option<String>,
    /// The source of each record; unset, the token's.
    pub source: Option<String>,
    /// The host of each record; unset, the collector's default.
    pub host: Option<String>,
    /// `"none"` or `"gzip"`.
    #[serde(default)]
    pub compression: Compression,
    /// Indexer acknowledgement: a batch is acknowledged to its source only
    /// once the collector says its events are indexed (the `ackId` of the
    /// answer polled at `/services/collector/ack`); the token must have
    /// acknowledgement enabled.
    #[serde(default)]
    pub acknowledgements: bool,
    /// How often pending `ackId`s are asked about.
    #[serde(
        default = "default_ack_poll_interval",
        deserialize_with = "units::duration"
    )]
    pub ack_poll_interval: Duration,
    /// How long an `ackId` may stay unacknowledged before its events are
    /// sent again (at least once: they may be indexed twice).
    #[serde(default = "default_ack_timeout", deserialize_with = "units::duration")]
    pub ack_timeout: Duration,
    /// Answers retried; default 408, 429 and 5xx (503: server busy).
    #[serde(default = "default_retry_statuses")]
    pub retry_statuses: Vec<StatusPattern>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum EndpointTarget {
    #[default]
    Event,
    Raw,
}

impl EndpointTarget {
    pub fn path(self) -> &'static str {
        match self {
            EndpointTarget::Event => "/services/collector/event",
            EndpointTarget::Raw => "/services/collector/raw",
        }
    }
}

const fn default_ack_poll_interval() -> Duration {
    Duration::from_millis(500)
}

const fn default_ack_timeout() -> Duration {
    Duration::from_secs(60)
}

fn default_retry_statuses() -> Vec<StatusPattern> {
    vec![
        StatusPattern::Code(408),
        StatusPattern::Code(429),
        StatusPattern::Class(5),
    ]
}

impl SplunkHecSinkConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.request.auth.is_some() {
            return Err("auth: the splunk_hec sink sends `token` (or `token_file`) instead".into());
        }
        self.request.validate()?;
        self.sink.validate()
    }
}

impl SplunkHecSettings {
    pub fn validate(&self) -> Result<(), String> {
        let e = &self.endpoint;
        let uri: http::Uri = e.parse().map_err(|err| format!("endpoint {e:?}: {err}"))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(format!(
                "endpoint {e:?}: write http://host:port or https://host:port"
            ));
        }
        if uri.query().is_some() {
            return Err(format!("endpoint {e:?}: no query string"));
        }
        self.token()?;
        for (key, t) in self.templates() {
            let Some(t) = t else { continue };
            NameTemplate::parse(key, t)?;
            if self.endpoint_target == EndpointTarget::Raw && t.contains("${record.") {
                return Err(format!(
                    "{key} {t:?}: with endpoint_target = \"raw\" the metadata is one per request: use ${{tag}} and the time, not record fields"
                ));
            }
        }
        if self.compression == Compression::Zstd {
            return Err("compression: \"none\" or \"gzip\" (HEC does not read zstd)".into());
        }
        if self.ack_poll_interval.is_zero() || self.ack_timeout.is_zero() {
            return Err("ack_poll_interval and ack_timeout must be more than 0".into());
        }
        Ok(())
    }

    /// The four metadata templates, by key.
    pub fn templates(&self) -> [(&'static str, Option<&String>); 4] {
        [
            ("index", self.index.as_ref()),
            ("sourcetype", self.sourcetype.as_ref()),
            ("source", self.source.as_ref()),
            ("host", self.host.as_ref()),
        ]
    }

    /// The token; a `token_file` is read now.
    pub fn token(&self) -> Result<Secret, String> {
        match (&self.token, &self.token_file) {
            (Some(t), None) => Ok(t.clone()),
            (None, Some(f)) => std::fs::read_to_string(f)
                .map(|s| Secret::new(s.trim()))
                .map_err(|e| format!("token_file: cannot read {}: {e}", f.display())),
            _ => Err("set one of `token` and `token_file`".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<SplunkHecSinkConfig, String> {
        toml::from_str(t).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_checks() {
        let c = parse("endpoint = \"http://127.0.0.1:8088\"\ntoken = \"abc\"").unwrap();
        c.validate().unwrap();
        assert_eq!(c.sink.endpoint_target, EndpointTarget::Event);
        assert!(!c.sink.acknowledgements);
        assert_eq!(c.sink.token().unwrap().expose(), "abc");
        assert_eq!(
            format!("{c:?}").matches("abc").count(),
            0,
            "the token shows"
        );
        let base = "endpoint = \"http://h:8088\"\ntoken = \"t\"\n";
        for (extra, says) in [
            ("endpoint = \"ftp://h\"\ntoken = \"t\"", "http://"),
            ("endpoint = \"http://h\"", "token"),
            (
                "endpoint = \"http://h\"\ntoken = \"t\"\ntoken_file = \"/x\"",
                "one of",
            ),
            (
                "endpoint = \"http://h\"\ntoken_file = \"/nonexistent/t\"",
                "cannot read",
            ),
            (&format!("{base}index = \"x-${{nope}}\""), "unknown"),
            (
                &format!("{base}endpoint_target = \"raw\"\nhost = \"${{record.h}}\""),
                "raw",
            ),
            (&format!("{base}compression = \"zstd\""), "gzip"),
            (
                &format!("{base}auth = {{ strategy = \"bearer\", token = \"x\" }}"),
                "token",
            ),
        ] {
            let e = parse(extra).unwrap().validate().unwrap_err();
            assert!(e.contains(says), "{extra}: {e}");
        }
        assert!(parse(&format!("{base}nope = 1")).is_err());
    }
}
