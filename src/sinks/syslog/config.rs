//! Configuration of the syslog sink.

use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::tls::ClientTlsConfig;

/// `type = "syslog"`: each record as one syslog message (RFC 5424 or RFC
/// 3164) to a syslog receiver over TCP (RFC 6587 octet counting) or UDP
/// (RFC 5426, one message per datagram).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SyslogSinkConfig {
    /// `host:port` of the receiver.
    pub address: String,
    /// `"tcp"` (octet-counted frames, RFC 6587) or `"udp"` (a datagram
    /// per message, RFC 5426).
    #[serde(default)]
    pub mode: Mode,
    /// `"5424"` (RFC 5424) or `"3164"` (the BSD layout).
    #[serde(default)]
    pub rfc: Rfc,
    /// Template of the facility: a name (`user`, `daemon`, `local0` …) or
    /// its number, 0 to 23; one that is neither is sent as `user`, counted.
    #[serde(default = "default_facility")]
    pub facility: String,
    /// Template of the severity: a name (`emerg` … `debug`) or its number,
    /// 0 to 7; one that is neither is sent as `notice`, counted.
    #[serde(default = "default_severity")]
    pub severity: String,
    /// Template of the APP-NAME (RFC 3164: the TAG).
    #[serde(default = "default_app_name")]
    pub app_name: String,
    /// Template of the HOSTNAME; empty: this machine's host name.
    #[serde(default)]
    pub hostname: String,
    /// Template of the MSGID (RFC 5424 only); empty: none (`-`).
    #[serde(default)]
    pub msg_id: String,
    /// A record field holding a map `{SD-ID: {PARAM: value}}` sent as the
    /// STRUCTURED-DATA (RFC 5424 only); unset or absent: none (`-`).
    pub structured_data: Option<String>,
    /// Send over TLS (RFC 5425; needs `mode = "tcp"`).
    pub tls: Option<ClientTlsConfig>,
    /// How long a connection attempt may take.
    #[serde(
        default = "default_connect_timeout",
        deserialize_with = "units::duration"
    )]
    pub connect_timeout: Duration,
    /// How long batches nobody waits for may wait for more before they are
    /// sent. Unset: 0 on a memory queue, [`crate::sinks::DISK_FLUSH_INTERVAL`]
    /// on a disk buffer (see [`SyslogSinkConfig::flush_interval`]).
    #[serde(
        default,
        rename = "flush_interval",
        deserialize_with = "units::opt_duration"
    )]
    pub flush_interval_set: Option<Duration>,
}

/// The `mode` setting.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Tcp,
    Udp,
}

/// The `rfc` setting.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
pub enum Rfc {
    #[default]
    #[serde(rename = "5424")]
    Rfc5424,
    #[serde(rename = "3164")]
    Rfc3164,
}

fn default_facility() -> String {
    "user".into()
}

fn default_severity() -> String {
    "notice".into()
}

fn default_app_name() -> String {
    "{tag}".into()
}

const fn default_connect_timeout() -> Duration {
    Duration::from_secs(10)
}

impl SyslogSinkConfig {
    /// How long batches may wait for more: the setting, else 0 on a memory
    /// queue and [`crate::sinks::DISK_FLUSH_INTERVAL`] on a disk buffer
    /// (`disk`).
    pub fn flush_interval(&self, disk: bool) -> Duration {
        crate::sinks::flush_interval(self.flush_interval_set, disk)
    }

    pub fn validate(&self) -> Result<(), String> {
        crate::config::host_port(&self.address)
            .map_err(|e| format!("address {:?}: {e}", self.address))?;
        for (key, t) in [
            ("facility", &self.facility),
            ("severity", &self.severity),
            ("app_name", &self.app_name),
            ("hostname", &self.hostname),
            ("msg_id", &self.msg_id),
        ] {
            crate::format::Template::parse(t).map_err(|e| format!("{key}: {e}"))?;
        }
        if let Some(tls) = &self.tls {
            if self.mode != Mode::Tcp {
                return Err(
                    "tls needs mode = \"tcp\" (RFC 5425 is syslog over TLS over TCP)".into(),
                );
            }
            tls.validate()?;
        }
        if self.connect_timeout.is_zero() {
            return Err("connect_timeout must be greater than 0".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &str) -> Result<SyslogSinkConfig, String> {
        let c: SyslogSinkConfig = toml::from_str(&format!("address = \"127.0.0.1:514\"\n{extra}"))
            .map_err(|e| e.to_string())?;
        c.validate().map(|()| c)
    }

    #[test]
    fn defaults_and_bad_settings() {
        let c = parse("").unwrap();
        assert_eq!((c.mode, c.rfc), (Mode::Tcp, Rfc::Rfc5424));
        assert_eq!(c.app_name, "{tag}");
        let c = parse("mode = \"udp\"\nrfc = \"3164\"").unwrap();
        assert_eq!((c.mode, c.rfc), (Mode::Udp, Rfc::Rfc3164));
        assert!(parse("rfc = \"5425\"").is_err());
        assert!(parse("colour = 1").unwrap_err().contains("colour"));
        assert!(parse("app_name = \"{tag\"")
            .unwrap_err()
            .contains("app_name"));
        assert!(
            toml::from_str::<SyslogSinkConfig>("").is_err(),
            "address is needed"
        );
        assert!(
            parse("mode = \"udp\"\ntls = { insecure_skip_verify = true }")
                .unwrap_err()
                .contains("mode")
        );
    }
}
