//! Configuration of the HTTP source.

use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::tls::ServerTlsConfig;

/// `type = "http"`: receives records over HTTP/1.1 and HTTP/2, compatible
/// with Fluentd's `in_http` (`POST /<tag>`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HttpSourceConfig {
    /// `host:port` to listen on (default `127.0.0.1:9880`, Fluentd's in_http port: only
    /// this machine can connect unless another address is set). Port 0
    /// picks a free port; the bound address is logged.
    #[serde(default = "default_address")]
    pub address: String,
    /// When a request is answered: `"sinks"` (default) once every sink the
    /// records were routed to has accepted them (written to the file,
    /// delivered downstream), so a 200 means they are kept; `"received"` as
    /// soon as they are in the sink queues, which is faster but weaker:
    /// records answered with 200 can still be lost if a sink fails or the
    /// process dies before they are written.
    #[serde(default)]
    pub ack: AckMode,
    /// Largest request body accepted; a larger one is answered with 413.
    #[serde(default = "default_max_body_bytes", deserialize_with = "units::bytes")]
    pub max_body_bytes: usize,
    /// Most bytes of request line and headers; more is answered with 431
    /// and the connection is closed.
    #[serde(
        default = "default_max_header_bytes",
        deserialize_with = "units::bytes"
    )]
    pub max_header_bytes: usize,
    /// Most connections served at once; more are accepted and closed at once.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// A connection that neither sends nor reads anything for this long
    /// (between requests on a keep-alive connection, or inside one) is
    /// closed.
    #[serde(default = "default_idle_timeout", deserialize_with = "units::duration")]
    pub idle_timeout: Duration,
    /// Longest one request may take once its headers have arrived: reading
    /// the body (past it: 408), waiting for room in a full sink queue and,
    /// with `ack = "sinks"`, for the sinks to accept the records (past it:
    /// 503 with `Retry-After`, so the client sends again later).
    #[serde(
        default = "default_request_timeout",
        deserialize_with = "units::duration"
    )]
    pub request_timeout: Duration,
    /// Serve HTTPS instead of plain HTTP.
    pub tls: Option<ServerTlsConfig>,
    /// Also speak HTTP/2 (default true): over TLS when the client asks for
    /// `h2` (ALPN), in plain text when it starts with the HTTP/2 preface
    /// ("prior knowledge", `curl --http2-prior-knowledge`). With `false`
    /// only HTTP/1.1 is served.
    #[serde(default = "default_http2")]
    pub http2: bool,
    /// With HTTP/2: most requests (streams) one connection may have open at
    /// once; the client is told this number and more are refused.
    #[serde(default = "default_max_streams")]
    pub max_streams: u32,
}

/// When the HTTP source answers a request.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum AckMode {
    /// After every sink accepted the records.
    #[default]
    Sinks,
    /// As soon as the records are queued for the sinks.
    Received,
}

/// Largest `max_body_bytes` accepted: a body is held in memory whole.
const MAX_BODY_BYTES_LIMIT: usize = 1024 * 1024 * 1024;

/// hyper's smallest read buffer, which also bounds the headers.
const MIN_HEADER_BYTES: usize = 8 * 1024;

fn default_address() -> String {
    "127.0.0.1:9880".into()
}

const fn default_max_body_bytes() -> usize {
    8 * 1024 * 1024
}

const fn default_max_header_bytes() -> usize {
    64 * 1024
}

const fn default_max_connections() -> usize {
    1024
}

const fn default_idle_timeout() -> Duration {
    Duration::from_secs(60)
}

const fn default_request_timeout() -> Duration {
    Duration::from_secs(30)
}

const fn default_http2() -> bool {
    true
}

const fn default_max_streams() -> u32 {
    100
}

impl HttpSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        crate::config::listen_address(&self.address)?;
        if self.max_body_bytes == 0 {
            return Err("max_body_bytes must be greater than 0".into());
        }
        if self.max_body_bytes > MAX_BODY_BYTES_LIMIT {
            return Err(format!(
                "max_body_bytes = {} is larger than the most allowed, {} (1GiB)",
                self.max_body_bytes, MAX_BODY_BYTES_LIMIT
            ));
        }
        if self.max_header_bytes < MIN_HEADER_BYTES {
            return Err(format!(
                "max_header_bytes must be at least {MIN_HEADER_BYTES} (8KiB)"
            ));
        }
        if self.max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        if self.idle_timeout.is_zero() {
            return Err("idle_timeout must be greater than 0".into());
        }
        if self.request_timeout.is_zero() {
            return Err("request_timeout must be greater than 0".into());
        }
        if self.max_streams == 0 {
            return Err("max_streams must be at least 1".into());
        }
        if let Some(tls) = &self.tls {
            tls.validate()?;
        }
        Ok(())
    }
}

impl crate::net::ListenerConfig for HttpSourceConfig {
    fn address(&self) -> &str {
        &self.address
    }

    fn tls(&self) -> Option<&crate::tls::ServerTlsConfig> {
        self.tls.as_ref()
    }

    fn max_connections(&self) -> usize {
        self.max_connections
    }

    fn alpn(&self) -> &'static [&'static [u8]] {
        if self.http2 {
            &[b"h2", b"http/1.1"]
        } else {
            &[b"http/1.1"]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &str) -> Result<HttpSourceConfig, String> {
        let c: HttpSourceConfig = toml::from_str(&format!("address = \"127.0.0.1:0\"\n{extra}"))
            .map_err(|e| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn defaults_and_units() {
        let c = parse("").unwrap();
        assert_eq!(c.ack, AckMode::Sinks);
        assert_eq!(c.max_body_bytes, 8 * 1024 * 1024);
        assert!(c.http2);
        assert_eq!(c.max_streams, 100);
        let c =
            parse("ack = \"received\"\nmax_body_bytes = \"1KiB\"\nidle_timeout = \"5s\"").unwrap();
        assert_eq!(c.ack, AckMode::Received);
        assert_eq!(c.max_body_bytes, 1024);
        assert_eq!(c.idle_timeout, Duration::from_secs(5));
    }

    #[test]
    fn rejects_unknown_keys_and_bad_limits() {
        assert!(parse("max_body = 1").unwrap_err().contains("max_body"));
        assert!(parse("ack = \"never\"").is_err());
        assert!(parse("max_header_bytes = 100")
            .unwrap_err()
            .contains("max_header_bytes"));
        assert!(parse("max_connections = 0").is_err());
        assert!(parse("request_timeout = \"0s\"").is_err());
        assert!(parse("max_body_bytes = \"2GiB\"").is_err());
        assert!(parse("max_streams = 0").is_err());
    }
}
