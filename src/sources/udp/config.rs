//! Configuration of the UDP source.

use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::sources::tcp::{LineFormat, Parser};

/// `type = "udp"`: one message per datagram (RFC 5426 for syslog), raw,
/// JSON or syslog, as the `tcp` source reads a line.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UdpSourceConfig {
    /// `host:port` to receive on (default `127.0.0.1:5140`: only this
    /// machine can send unless another address is set). Port 0 picks a
    /// free port; the bound address is logged.
    #[serde(default = "default_address")]
    pub address: String,
    /// Tag of every record.
    #[serde(default = "default_tag")]
    pub tag: String,
    /// How each datagram becomes a record: `"raw"` (`{"message": datagram}`)
    /// or `"json"` (the datagram is a JSON object, which becomes the record).
    #[serde(default)]
    pub format: LineFormat,
    /// `"syslog"`: parse each datagram as RFC 5424 or RFC 3164 into fields.
    /// `"none"`: keep it as it is.
    #[serde(default)]
    pub parser: Parser,
    /// The socket's kernel receive buffer (SO_RCVBUF): what arrives while
    /// logferry is not reading waits here, and past it the kernel drops
    /// datagrams (counted). Unset: the system default
    /// (`net.core.rmem_default`); the kernel caps it at `net.core.rmem_max`.
    #[serde(default, deserialize_with = "units::opt_bytes")]
    pub receive_buffer_bytes: Option<usize>,
    /// How long received datagrams gather into one batch before they are
    /// handed on (nobody waits for an acknowledgement over UDP); the
    /// socket is read all the while. 0: each read is handed on at once.
    #[serde(default = "default_linger", deserialize_with = "units::duration")]
    pub linger: Duration,
}

fn default_tag() -> String {
    "udp".into()
}

fn default_address() -> String {
    "127.0.0.1:5140".into()
}

const fn default_linger() -> Duration {
    Duration::from_millis(200)
}

/// Largest `receive_buffer_bytes` accepted (the kernel's own cap is
/// usually far lower).
const MAX_RECEIVE_BUFFER: usize = 1 << 30;

impl UdpSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        crate::config::listen_address(&self.address)?;
        if self.tag.is_empty() {
            return Err("tag must not be empty".into());
        }
        if self.parser == Parser::Syslog && self.format == LineFormat::Json {
            return Err(
                "parser = \"syslog\" needs format = \"raw\" (a syslog message is not JSON): remove format or parser"
                    .into(),
            );
        }
        match self.receive_buffer_bytes {
            Some(0) => return Err("receive_buffer_bytes must be at least 1".into()),
            Some(n) if n > MAX_RECEIVE_BUFFER => {
                return Err(format!(
                    "receive_buffer_bytes = {n} is larger than the most allowed, {MAX_RECEIVE_BUFFER} (1GiB)"
                ))
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &str) -> Result<UdpSourceConfig, String> {
        let c: UdpSourceConfig = toml::from_str(&format!("address = \"127.0.0.1:0\"\n{extra}"))
            .map_err(|e| e.to_string())?;
        c.validate().map(|()| c)
    }

    #[test]
    fn defaults() {
        let c: UdpSourceConfig = toml::from_str("").unwrap();
        assert_eq!(c.address, "127.0.0.1:5140");
        assert_eq!(c.tag, "udp");
        assert_eq!(c.format, LineFormat::Raw);
        assert_eq!(c.parser, Parser::None);
        assert_eq!(c.receive_buffer_bytes, None);
        assert_eq!(c.linger, Duration::from_millis(200));
    }

    #[test]
    fn rejects_bad_settings_with_the_key() {
        assert!(parse("colour = 1").unwrap_err().contains("colour"));
        assert!(parse("framing = \"newline\"")
            .unwrap_err()
            .contains("framing"));
        assert!(parse("parser = \"syslog\"\nformat = \"json\"")
            .unwrap_err()
            .contains("format"));
        assert!(parse("receive_buffer_bytes = 0")
            .unwrap_err()
            .contains("receive_buffer_bytes"));
        assert!(parse("address = \"nowhere\"").is_err());
        let c = parse("parser = \"syslog\"\nreceive_buffer_bytes = \"8MiB\"").unwrap();
        assert_eq!(c.receive_buffer_bytes, Some(8 << 20));
    }
}
