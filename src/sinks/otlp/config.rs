//! Settings of the `otlp` sink.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::http_client::HttpVersion;
use crate::protocol::otlp::grpc::EXPORT_PATH;
use crate::sinks::http::config::{Compression, StatusPattern};
use crate::sinks::http::RequestConfig;

/// `type = "otlp"`: exports records as OpenTelemetry log records over
/// OTLP/HTTP (protobuf) or OTLP/gRPC. Its keys are in two structs (see
/// [`crate::sinks::http::config::HttpSinkConfig`]).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OtlpSinkConfig {
    #[serde(flatten)]
    pub sink: OtlpSettings,
    #[serde(flatten)]
    pub request: RequestConfig,
}

/// The keys of the `otlp` sink that are its own.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct OtlpSettings {
    /// `"http"` (OTLP/HTTP, the default) or `"grpc"` (OTLP/gRPC).
    #[serde(default)]
    pub protocol: Protocol,
    /// With `http`, the OTLP/HTTP base URL (`http://127.0.0.1:4318`):
    /// requests go to `/v1/logs` under it. With `grpc`, the gRPC server's
    /// URL (`http://127.0.0.1:4317`, or `https://` for TLS), no path.
    pub endpoint: String,
    /// Headers sent with every request (values may use `${VAR}`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `"gzip"` (the default, as the OpenTelemetry Collector's `otlphttp`
    /// and `otlp` exporters have it) or `"none"`. Over gRPC, each message
    /// is compressed (`grpc-encoding: gzip`).
    #[serde(default = "default_compression")]
    pub compression: Compression,
    /// The fields whose value is the log record's body, the first a record
    /// has; a record with none of them is its own body (a key/value list).
    #[serde(default = "default_body_keys")]
    pub body_keys: Vec<String>,
    /// The fields read for the severity, the first a record has: a name
    /// (`"warn"`, `"ERROR"`) becomes `severity_text` and the matching
    /// `severity_number`; a number from 1 to 24 is the `severity_number`.
    #[serde(default = "default_severity_keys")]
    pub severity_keys: Vec<String>,
    /// A field holding the trace id: 32 hex digits (or 16 bytes).
    #[serde(default = "default_trace_id_key")]
    pub trace_id_key: String,
    /// A field holding the span id: 16 hex digits (or 8 bytes).
    #[serde(default = "default_span_id_key")]
    pub span_id_key: String,
    /// A field whose map holds the record's resource attributes; records
    /// with the same resource go in one `ResourceLogs`.
    #[serde(default = "default_resource_key")]
    pub resource_key: String,
    /// Resource attributes of every record (`service.name = "web"`); a
    /// record's own resource attributes win.
    #[serde(default)]
    pub resource_attributes: BTreeMap<String, String>,
    /// Answers retried over OTLP/HTTP: by default 429, 502, 503 and 504,
    /// as the OTLP specification says; every other answer that is not 2xx
    /// is a rejection. (gRPC's retried codes are fixed, see the module.)
    #[serde(default = "default_retry_statuses")]
    pub retry_statuses: Vec<StatusPattern>,
}

/// `protocol`: how exports travel.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// OTLP/HTTP: `POST {endpoint}/v1/logs`, protobuf.
    #[default]
    Http,
    /// OTLP/gRPC: a unary `LogsService/Export` call over HTTP/2.
    Grpc,
}

const fn default_compression() -> Compression {
    Compression::Gzip
}

fn default_body_keys() -> Vec<String> {
    vec!["message".into(), "log".into()]
}

fn default_severity_keys() -> Vec<String> {
    vec!["severity".into(), "level".into()]
}

fn default_trace_id_key() -> String {
    "trace_id".into()
}

fn default_span_id_key() -> String {
    "span_id".into()
}

fn default_resource_key() -> String {
    "resource".into()
}

fn default_retry_statuses() -> Vec<StatusPattern> {
    [429, 502, 503, 504]
        .into_iter()
        .map(StatusPattern::Code)
        .collect()
}

/// The path appended to `endpoint`.
pub const LOGS_PATH: &str = "/v1/logs";

impl OtlpSinkConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.request.validate()?;
        if self.sink.protocol == Protocol::Grpc && self.request.http_version == HttpVersion::Http1 {
            return Err("http_version = \"http1\": gRPC needs HTTP/2".into());
        }
        self.sink.validate()
    }

    /// The request settings the client uses: gRPC always speaks HTTP/2
    /// (prior knowledge in plain text, ALPN `h2` over TLS).
    pub fn requests(&self) -> RequestConfig {
        let mut r = self.request.clone();
        if self.sink.protocol == Protocol::Grpc {
            r.http_version = HttpVersion::Http2;
        }
        r
    }
}

impl OtlpSettings {
    pub fn validate(&self) -> Result<(), String> {
        let uri: http::Uri = self
            .endpoint
            .parse()
            .map_err(|e| format!("endpoint {:?}: {e}", self.endpoint))?;
        let example = match self.protocol {
            Protocol::Http => "the OTLP/HTTP base URL, http://host:4318",
            Protocol::Grpc => "the OTLP/gRPC server's URL, http://host:4317",
        };
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(format!(
                "endpoint {:?}: write {example} or https://…",
                self.endpoint
            ));
        }
        if uri.query().is_some() {
            return Err(format!("endpoint {:?}: no query string", self.endpoint));
        }
        // a gRPC call's path is its method's, whatever the endpoint says
        if self.protocol == Protocol::Grpc && !matches!(uri.path(), "" | "/") {
            return Err(format!(
                "endpoint {:?}: write {example}, without a path (calls go to {EXPORT_PATH})",
                self.endpoint
            ));
        }
        // a URL copied from a signal-specific setting would be sent to
        // /v1/logs/v1/logs and answered 404, a rejection of every record
        if uri.path().trim_end_matches('/').ends_with(LOGS_PATH) {
            return Err(format!(
                "endpoint {:?}: write the base URL; {LOGS_PATH} is appended",
                self.endpoint
            ));
        }
        if self.compression == Compression::Zstd {
            return Err(
                "compression: \"gzip\" or \"none\" (OTLP receivers need not read zstd)".into(),
            );
        }
        if self
            .body_keys
            .iter()
            .chain(&self.severity_keys)
            .any(String::is_empty)
        {
            return Err("body_keys and severity_keys: field names may not be empty".into());
        }
        for (name, value) in &self.headers {
            http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("headers: {name:?} is not a header name"))?;
            http::HeaderValue::from_str(value)
                .map_err(|_| format!("headers.{name}: not a valid header value"))?;
        }
        Ok(())
    }

    /// The path requests go to: over HTTP the endpoint's path with
    /// `/v1/logs`, over gRPC the `LogsService/Export` method's.
    pub fn request_path(&self) -> String {
        match self.protocol {
            Protocol::Http => self.logs_path(),
            Protocol::Grpc => EXPORT_PATH.into(),
        }
    }

    /// The endpoint's path with `/v1/logs`.
    pub fn logs_path(&self) -> String {
        let path = self
            .endpoint
            .parse::<http::Uri>()
            .map(|u| u.path().trim_end_matches('/').to_string())
            .unwrap_or_default();
        format!("{path}{LOGS_PATH}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> Result<OtlpSinkConfig, String> {
        toml::from_str(toml_text).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_bad_settings() {
        let c = parse("endpoint = \"http://127.0.0.1:4318\"").unwrap();
        c.validate().unwrap();
        assert_eq!(c.sink.compression, Compression::Gzip);
        assert_eq!(c.sink.logs_path(), "/v1/logs");
        assert_eq!(c.sink.body_keys, ["message", "log"]);
        assert!(c.sink.retry_statuses.iter().any(|p| p.matches(503)));
        assert!(!c.sink.retry_statuses.iter().any(|p| p.matches(500)));
        let c = parse("endpoint = \"https://h/otel/\"").unwrap();
        assert_eq!(c.sink.logs_path(), "/otel/v1/logs");
        for (text, says) in [
            ("endpoint = \"ftp://h\"", "base URL"),
            ("endpoint = \"http://h:4318/v1/logs\"", "appended"),
            ("endpoint = \"http://h/?a=b\"", "query"),
            ("endpoint = \"http://h\"\ncompression = \"zstd\"", "gzip"),
            ("endpoint = \"http://h\"\nbody_keys = [\"\"]", "empty"),
        ] {
            let e = parse(text).unwrap().validate().unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        assert!(parse("endpoint = \"http://h\"\nnope = 1").is_err());
        assert_eq!(c.sink.protocol, Protocol::Http);
        assert_eq!(c.requests().http_version, HttpVersion::Auto);
    }

    #[test]
    fn grpc_takes_a_url_without_path_and_speaks_http2() {
        let c = parse("protocol = \"grpc\"\nendpoint = \"http://127.0.0.1:4317\"").unwrap();
        c.validate().unwrap();
        assert_eq!(c.sink.request_path(), EXPORT_PATH);
        assert_eq!(c.requests().http_version, HttpVersion::Http2);
        parse("protocol = \"grpc\"\nendpoint = \"https://h:4317/\"")
            .unwrap()
            .validate()
            .unwrap();
        for (text, says) in [
            ("endpoint = \"http://h:4317/v1/logs\"", "without a path"),
            ("endpoint = \"h:4317\"", "http://host:4317"),
            (
                "endpoint = \"http://h\"\nhttp_version = \"http1\"",
                "HTTP/2",
            ),
        ] {
            let text = format!("protocol = \"grpc\"\n{text}");
            let e = parse(&text).unwrap().validate().unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        assert!(parse("protocol = \"thrift\"\nendpoint = \"http://h\"").is_err());
    }
}
