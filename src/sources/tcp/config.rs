//! Configuration of the TCP source.

use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::sources::linger::SocketLinger;
use crate::tls::ServerTlsConfig;

/// `type = "tcp"`: newline-delimited (or octet-counted) lines over TCP,
/// raw, JSON or syslog.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpSourceConfig {
    /// `host:port` to listen on (default `127.0.0.1:5170`, Fluent Bit's tcp input port: only
    /// this machine can connect unless another address is set). Port 0
    /// picks a free port; the bound address is logged.
    #[serde(default = "default_address")]
    pub address: String,
    /// Tag of every record.
    #[serde(default = "default_tag")]
    pub tag: String,
    /// How each message becomes a record: `"raw"` (`{"message": line}`) or
    /// `"json"` (the line is a JSON object, which becomes the record).
    #[serde(default)]
    pub format: LineFormat,
    /// How messages are delimited: `"newline"`, or `"octet_counting"`
    /// (RFC 6587 `LEN SP MSG`, with newline-delimited messages also
    /// accepted on the same connection).
    #[serde(default)]
    pub framing: Framing,
    /// `"syslog"`: parse each message as RFC 5424 or RFC 3164 into fields.
    /// `"none"`: keep it as it is.
    #[serde(default)]
    pub parser: Parser,
    /// Longest message (without its delimiter); a longer one is dropped,
    /// counted and warned about, and the connection continues.
    #[serde(default = "default_max_line_bytes", deserialize_with = "units::bytes")]
    pub max_line_bytes: usize,
    /// Most connections served at once; more are accepted and closed at once.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// A connection that sends nothing for this long is closed.
    #[serde(default = "default_idle_timeout", deserialize_with = "units::duration")]
    pub idle_timeout: Duration,
    /// Once a connection's reader has caught up with what its client sent,
    /// how long it lets new messages gather before it reads again (nobody
    /// waits for an acknowledgement over TCP): a client writing one line at
    /// a time is read and sent on once a second in batches, at the
    /// cost of up to this much latency. A reader that has not caught up
    /// never waits. 0: read as soon as data arrives. Unset: one second,
    /// or 0 while a sink keeps a disk buffer ([`SocketLinger`]).
    #[serde(default, deserialize_with = "units::opt_duration")]
    pub linger: Option<Duration>,
    /// Serve TLS instead of plain TCP.
    pub tls: Option<ServerTlsConfig>,
}

/// The `format` setting.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum LineFormat {
    #[default]
    Raw,
    Json,
}

/// The `framing` setting.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Framing {
    #[default]
    Newline,
    OctetCounting,
}

/// The `parser` setting.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Parser {
    #[default]
    None,
    Syslog,
}

/// Largest `max_line_bytes` accepted: a message is held in memory whole.
const MAX_LINE_BYTES_LIMIT: usize = 256 * 1024 * 1024;

fn default_tag() -> String {
    "tcp".into()
}

fn default_address() -> String {
    "127.0.0.1:5170".into()
}

const fn default_max_line_bytes() -> usize {
    1024 * 1024
}

const fn default_max_connections() -> usize {
    1024
}

/// The linger of a tcp source that sets none, in a pipeline without a
/// disk buffer: as the `tail` source's, once for the whole path.
pub const DEFAULT_LINGER: Duration = Duration::from_secs(1);

const fn default_idle_timeout() -> Duration {
    Duration::from_secs(300)
}

impl TcpSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        crate::config::listen_address(&self.address)?;
        if self.tag.is_empty() {
            return Err("tag must not be empty".into());
        }
        if self.max_line_bytes == 0 {
            return Err("max_line_bytes must be at least 1".into());
        }
        if self.max_line_bytes > MAX_LINE_BYTES_LIMIT {
            return Err(format!(
                "max_line_bytes = {} is larger than the most allowed, {} (256MiB)",
                self.max_line_bytes, MAX_LINE_BYTES_LIMIT
            ));
        }
        if self.parser == Parser::Syslog && self.format == LineFormat::Json {
            return Err(
                "parser = \"syslog\" needs format = \"raw\" (a syslog message is not JSON): remove format or parser"
                    .into(),
            );
        }
        if self.max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        if self.idle_timeout.is_zero() {
            return Err("idle_timeout must be greater than 0".into());
        }
        if let Some(tls) = &self.tls {
            tls.validate()?;
        }
        Ok(())
    }

    /// The `linger` setting; unset: [`DEFAULT_LINGER`], or 0 while a sink
    /// keeps a disk buffer.
    pub fn linger(&self) -> SocketLinger {
        SocketLinger::new(self.linger, DEFAULT_LINGER)
    }

    /// Whether records can be handed on as the received lines themselves
    /// (`Records::Lines`), without re-encoding.
    pub fn plain_lines(&self) -> bool {
        self.format == LineFormat::Raw
            && self.framing == Framing::Newline
            && self.parser == Parser::None
    }
}

impl crate::net::ListenerConfig for TcpSourceConfig {
    fn address(&self) -> &str {
        &self.address
    }

    fn tls(&self) -> Option<&crate::tls::ServerTlsConfig> {
        self.tls.as_ref()
    }

    fn max_connections(&self) -> usize {
        self.max_connections
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &str) -> Result<TcpSourceConfig, String> {
        let c: TcpSourceConfig = toml::from_str(&format!("address = \"127.0.0.1:0\"\n{extra}"))
            .map_err(|e| e.to_string())?;
        c.validate().map(|()| c)
    }

    #[test]
    fn listeners_default_to_loopback() {
        let tcp: TcpSourceConfig = toml::from_str("").unwrap();
        let http: crate::sources::http::HttpSourceConfig = toml::from_str("").unwrap();
        let fwd: crate::sources::forward::ForwardSourceConfig = toml::from_str("").unwrap();
        assert_eq!(tcp.address, "127.0.0.1:5170");
        assert_eq!(http.address, "127.0.0.1:9880");
        assert_eq!(fwd.address, "127.0.0.1:24224");
    }

    #[test]
    fn defaults() {
        let c = parse("").unwrap();
        assert_eq!(c.tag, "tcp");
        assert_eq!(c.format, LineFormat::Raw);
        assert_eq!(c.framing, Framing::Newline);
        assert_eq!(c.parser, Parser::None);
        assert_eq!(c.max_line_bytes, 1024 * 1024);
        assert!(c.plain_lines());
    }

    #[test]
    fn rejects_bad_settings_with_the_key() {
        assert!(parse("colour = 1").unwrap_err().contains("colour"));
        assert!(parse("framing = \"lines\"").is_err());
        assert!(parse("max_line_bytes = 0")
            .unwrap_err()
            .contains("max_line_bytes"));
        assert!(parse("parser = \"syslog\"\nformat = \"json\"")
            .unwrap_err()
            .contains("format"));
        assert!(parse("max_connections = 0")
            .unwrap_err()
            .contains("max_connections"));
        assert!(parse("idle_timeout = \"0s\"")
            .unwrap_err()
            .contains("idle_timeout"));
        let c =
            parse("parser = \"syslog\"\nframing = \"octet_counting\"\nmax_line_bytes = \"64KiB\"")
                .unwrap();
        assert_eq!(c.max_line_bytes, 64 * 1024);
        assert!(!c.plain_lines());
    }
}
