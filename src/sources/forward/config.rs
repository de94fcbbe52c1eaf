//! Configuration of the forward source.

use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::protocol::forward::Limits;

/// `type = "forward"`: a Fluentd forward-protocol server.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ForwardSourceConfig {
    /// `host:port` to listen on. Port 0 picks a free port; the bound address
    /// is logged.
    pub address: String,
    /// Largest frame accepted; a peer that sends (or announces) a larger one
    /// is disconnected with a logged reason.
    #[serde(default = "default_max_frame_bytes", deserialize_with = "units::bytes")]
    pub max_frame_bytes: usize,
    /// Largest payload a CompressedPackedForward frame may inflate to; a
    /// larger one is rejected (the connection stays open).
    #[serde(
        default = "default_max_decompressed_bytes",
        deserialize_with = "units::bytes"
    )]
    pub max_decompressed_bytes: usize,
    /// Most connections served at once; more are accepted and closed at once.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// A connection that sends nothing for this long is closed.
    #[serde(default = "default_idle_timeout", deserialize_with = "units::duration")]
    pub idle_timeout: Duration,
}

const fn default_max_frame_bytes() -> usize {
    16 * 1024 * 1024
}

const fn default_max_decompressed_bytes() -> usize {
    64 * 1024 * 1024
}

const fn default_max_connections() -> usize {
    1024
}

const fn default_idle_timeout() -> Duration {
    Duration::from_secs(300)
}

impl ForwardSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.address.parse::<std::net::SocketAddr>().is_err() && !self.address.contains(':') {
            return Err(format!("address {:?} must be host:port", self.address));
        }
        if self.max_frame_bytes < 1024 {
            return Err("max_frame_bytes must be at least 1KiB".into());
        }
        if self.max_decompressed_bytes < self.max_frame_bytes {
            return Err("max_decompressed_bytes must be at least max_frame_bytes".into());
        }
        if self.max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        if self.idle_timeout.is_zero() {
            return Err("idle_timeout must be greater than 0".into());
        }
        Ok(())
    }

    pub fn limits(&self) -> Limits {
        Limits {
            max_frame_bytes: self.max_frame_bytes,
            max_decompressed_bytes: self.max_decompressed_bytes,
        }
    }
}
