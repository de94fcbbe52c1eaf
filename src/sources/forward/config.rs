//! Configuration of the forward source.

use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::protocol::forward::handshake::ServerAuth;
use crate::protocol::forward::Limits;
use crate::sources::linger::SocketLinger;
use crate::tls::ServerTlsConfig;

/// `type = "forward"`: a Fluentd forward-protocol server.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ForwardSourceConfig {
    /// `host:port` to listen on (default `127.0.0.1:24224`, Fluentd's forward port: only
    /// this machine can connect unless another address is set). Port 0
    /// picks a free port; the bound address is logged.
    #[serde(default = "default_address")]
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
    /// For a client that asks for no acks and sends more often than twice
    /// a linger (a logging library writing each record as a chunk): how
    /// long its next chunks gather in the socket before they are read, as
    /// one wake-up and one batch per linger. A client that sends less
    /// often (an agent that lingered already, even as long) is read as
    /// each chunk arrives; a connection that has asked for an ack never
    /// lingers.
    /// Unset: [`DEFAULT_LINGER`], or 0 (read as soon as data arrives)
    /// while a sink keeps a disk buffer ([`SocketLinger`]).
    #[serde(default, deserialize_with = "units::opt_duration")]
    pub linger: Option<Duration>,
    /// Require the shared-key handshake (HELO/PING/PONG) with this key.
    pub shared_key: Option<String>,
    /// With `shared_key`: also require one of these username/password pairs.
    #[serde(default)]
    pub users: Vec<UserConfig>,
    /// Host name this server reports in the handshake (default: this
    /// machine's host name).
    pub self_hostname: Option<String>,
    /// Serve TLS instead of plain TCP.
    pub tls: Option<ServerTlsConfig>,
}

/// One `[[sources.NAME.users]]` entry.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    pub username: String,
    pub password: String,
}

/// Largest `max_frame_bytes` accepted: a frame is held in memory whole.
const MAX_FRAME_BYTES_LIMIT: usize = 1024 * 1024 * 1024;

fn default_address() -> String {
    "127.0.0.1:24224".into()
}

const fn default_max_frame_bytes() -> usize {
    crate::protocol::forward::DEFAULT_MAX_FRAME_BYTES
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

/// The linger of a forward source that sets none, in a pipeline without a
/// disk buffer: a relay's own gathering plus a request sink's stays under
/// Fluent Bit's one-second flush.
pub const DEFAULT_LINGER: Duration = Duration::from_millis(500);

impl ForwardSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        crate::config::listen_address(&self.address)?;
        if self.max_frame_bytes < 1024 {
            return Err("max_frame_bytes must be at least 1KiB".into());
        }
        if self.max_frame_bytes > MAX_FRAME_BYTES_LIMIT {
            return Err(format!(
                "max_frame_bytes = {} is larger than the most allowed, {} (1GiB)",
                self.max_frame_bytes, MAX_FRAME_BYTES_LIMIT
            ));
        }
        if self.max_decompressed_bytes < self.max_frame_bytes {
            return Err(format!(
                "max_decompressed_bytes ({}) must be at least max_frame_bytes ({}): raise max_decompressed_bytes or lower max_frame_bytes",
                self.max_decompressed_bytes, self.max_frame_bytes
            ));
        }
        if self.max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        if self.idle_timeout.is_zero() {
            return Err("idle_timeout must be greater than 0".into());
        }
        if let Some(linger) = self.linger.filter(|l| *l >= self.idle_timeout) {
            return Err(format!(
                "linger ({linger:?}) must be shorter than idle_timeout ({:?})",
                self.idle_timeout
            ));
        }
        if !self.users.is_empty() && self.shared_key.is_none() {
            return Err(
                "users need shared_key (user authentication is part of the shared-key handshake)"
                    .into(),
            );
        }
        if self.shared_key.as_deref() == Some("") {
            return Err("shared_key must not be empty".into());
        }
        if let Some(tls) = &self.tls {
            tls.validate()?;
        }
        Ok(())
    }

    /// The `linger` setting; unset: [`DEFAULT_LINGER`] (at most half of
    /// `idle_timeout`), or 0 while a sink keeps a disk buffer.
    pub fn linger(&self) -> SocketLinger {
        SocketLinger::new(self.linger, DEFAULT_LINGER.min(self.idle_timeout / 2))
    }

    /// The handshake settings, if the handshake is required.
    pub fn auth(&self) -> Option<ServerAuth> {
        self.shared_key.as_ref().map(|key| ServerAuth {
            shared_key: key.clone(),
            users: self
                .users
                .iter()
                .map(|u| (u.username.clone(), u.password.clone()))
                .collect(),
            hostname: self
                .self_hostname
                .clone()
                .unwrap_or_else(crate::format::hostname),
        })
    }

    pub fn limits(&self) -> Limits {
        Limits {
            max_frame_bytes: self.max_frame_bytes,
            max_decompressed_bytes: self.max_decompressed_bytes,
        }
    }
}

impl crate::net::ListenerConfig for ForwardSourceConfig {
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
