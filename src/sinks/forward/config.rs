//! Configuration of the forward sink.

use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::protocol::forward::handshake::ClientAuth;
use crate::tls::ClientTlsConfig;

/// `type = "forward"`: sends records to Fluentd-protocol servers.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ForwardSinkConfig {
    /// The receivers.
    pub servers: Vec<ServerConfig>,
    /// How chunks are spread over the servers.
    #[serde(default)]
    pub mode: BalanceMode,
    /// Most records per chunk (one PackedForward frame).
    #[serde(default = "default_batch_records")]
    pub batch_records: usize,
    /// Most bytes of entries per chunk.
    #[serde(default = "default_batch_bytes", deserialize_with = "units::bytes")]
    pub batch_bytes: usize,
    /// How long a chunk that is not full may wait for more records. Unset:
    /// 0 on a memory queue (sent as soon as the sink's queue runs empty),
    /// [`crate::sinks::DISK_FLUSH_INTERVAL`] on a disk buffer (see
    /// [`ForwardSinkConfig::flush_interval`]). A chunk holding a batch
    /// whose client waits for its acknowledgement never waits.
    #[serde(
        default,
        rename = "flush_interval",
        deserialize_with = "units::opt_duration"
    )]
    pub flush_interval_set: Option<Duration>,
    /// `"gzip"`: send CompressedPackedForward frames.
    #[serde(default)]
    pub compress: Compress,
    /// Ask for an ack per chunk; acknowledge records upstream only after
    /// the receiver's ack, and resend on timeout or disconnect.
    #[serde(default)]
    pub require_ack: bool,
    /// How long to wait for an ack before the connection is considered
    /// broken and its unacknowledged chunks are resent.
    #[serde(default = "default_ack_timeout", deserialize_with = "units::duration")]
    pub ack_timeout: Duration,
    /// Chunks sent on one connection whose ack is still awaited.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// Time allowed for TCP connect, TLS and shared-key handshakes.
    #[serde(
        default = "default_connect_timeout",
        deserialize_with = "units::duration"
    )]
    pub connect_timeout: Duration,
    /// TCP keepalive idle time.
    #[serde(default = "default_keepalive", deserialize_with = "units::duration")]
    pub keepalive: Duration,
    /// First delay before reconnecting to a failed server; doubles on each
    /// failure (with jitter) up to `reconnect_max`.
    #[serde(
        default = "default_reconnect_min",
        deserialize_with = "units::duration"
    )]
    pub reconnect_min: Duration,
    #[serde(
        default = "default_reconnect_max",
        deserialize_with = "units::duration"
    )]
    pub reconnect_max: Duration,
    /// Most times one chunk is sent before it is given up: rejected (not
    /// acknowledged upstream), logged and counted in
    /// `logferry_forward_sink_chunks_given_up_total`. A failed connection
    /// charges the attempt to its oldest unsettled chunk only. 0: unlimited.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// At shutdown, how long to keep trying to deliver what is queued.
    #[serde(
        default = "default_drain_timeout",
        deserialize_with = "units::duration"
    )]
    pub drain_timeout: Duration,
    /// Shared key for the handshake (required if the servers require it).
    pub shared_key: Option<String>,
    /// User name for servers that require user authentication.
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub password: String,
    /// Host name reported in the handshake (default: this machine's).
    pub self_hostname: Option<String>,
    /// Connect with TLS.
    pub tls: Option<ClientTlsConfig>,
}

/// One `servers` entry.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// `host:port`.
    pub address: String,
    /// Share of the chunks in `weighted` mode.
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// Used only while every non-standby server is down.
    #[serde(default)]
    pub standby: bool,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum BalanceMode {
    /// Each chunk to the next healthy server.
    #[default]
    RoundRobin,
    /// Chunks in proportion to `weight`.
    Weighted,
    /// All to the first healthy server in list order.
    Failover,
    /// Consistent hash of the tag: one tag sticks to one server while it is healthy.
    HashTag,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Compress {
    #[default]
    None,
    Gzip,
}

const fn default_batch_records() -> usize {
    8192
}
const fn default_batch_bytes() -> usize {
    1024 * 1024
}
const fn default_ack_timeout() -> Duration {
    Duration::from_secs(30)
}
const fn default_max_in_flight() -> usize {
    32
}
const fn default_connect_timeout() -> Duration {
    Duration::from_secs(5)
}
const fn default_keepalive() -> Duration {
    Duration::from_secs(30)
}
const fn default_reconnect_min() -> Duration {
    Duration::from_millis(100)
}
const fn default_reconnect_max() -> Duration {
    Duration::from_secs(30)
}
const fn default_max_attempts() -> u32 {
    10
}
const fn default_drain_timeout() -> Duration {
    Duration::from_secs(30)
}
const fn default_weight() -> u32 {
    1
}

impl ForwardSinkConfig {
    /// How long a chunk that is not full may wait for more records: the
    /// setting, else 0 on a memory queue and [`crate::sinks::DISK_FLUSH_INTERVAL`] on a
    /// disk buffer (`disk`).
    pub fn flush_interval(&self, disk: bool) -> Duration {
        crate::sinks::flush_interval(self.flush_interval_set, disk)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.servers.is_empty() {
            return Err("servers must list at least one server".into());
        }
        if self.servers.iter().all(|s| s.standby) {
            return Err("servers: at least one server must not be a standby".into());
        }
        for s in &self.servers {
            // resolved when connecting: a name that does not resolve yet is retried
            crate::config::host_port(&s.address).map_err(|e| format!("servers: {e}"))?;
            if s.weight == 0 && self.mode == BalanceMode::Weighted {
                return Err(format!(
                    "servers: server {} has weight 0 (mode = \"weighted\" needs a weight of at least 1)",
                    s.address
                ));
            }
        }
        if self.batch_records == 0 || self.batch_bytes == 0 {
            return Err("batch_records and batch_bytes must be positive".into());
        }
        if self.ack_timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err("ack_timeout and connect_timeout must be positive".into());
        }
        if self.max_in_flight == 0 {
            return Err("max_in_flight must be at least 1".into());
        }
        if self.reconnect_min.is_zero() || self.reconnect_max < self.reconnect_min {
            return Err("reconnect_min must be positive and at most reconnect_max".into());
        }
        if self.shared_key.is_none() && !self.username.is_empty() {
            return Err("username needs shared_key".into());
        }
        if let Some(tls) = &self.tls {
            tls.validate()?;
        }
        Ok(())
    }

    /// The retry settings of the shared settlement: the reconnect backoff
    /// and `max_attempts`.
    pub fn retry_config(&self) -> crate::sinks::verdict::RetryConfig {
        crate::sinks::verdict::RetryConfig {
            initial: self.reconnect_min,
            max: self.reconnect_max,
            jitter: 0.25,
            max_attempts: self.max_attempts,
        }
    }

    pub fn auth(&self) -> Option<ClientAuth> {
        self.shared_key.as_ref().map(|key| ClientAuth {
            shared_key: key.clone(),
            username: self.username.clone(),
            password: self.password.clone(),
            hostname: self
                .self_hostname
                .clone()
                .unwrap_or_else(crate::format::hostname),
        })
    }
}
