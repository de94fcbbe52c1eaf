//! `type = "tcp"`: newline-delimited or octet-counted messages over TCP
//! (or TLS), kept raw, read as JSON objects, or parsed as syslog.
//!
//! - `config.rs`: the settings and their limits;
//! - `framing.rs`: splitting the byte stream into messages;
//! - syslog parsing (RFC 5424 / RFC 3164) lives in `crate::protocol::syslog`,
//!   shared with the parser filter;
//! - `encode.rs`: messages into forward-protocol entries;
//! - `conn.rs`: one connection: read, frame, route;
//! - this file: how the shared listener (`crate::net::Listener`) serves
//!   TCP connections, and the counters.

mod config;
mod conn;
pub mod encode;
pub mod framing;

use crate::protocol::syslog;

use std::net::SocketAddr;
use std::sync::Arc;

pub use config::{Framing, LineFormat, Parser, TcpSourceConfig};

use crate::component::SourceContext;
use crate::metrics::{Counter, Registry};
use crate::net::{Accepted, Listener, Protocol, WhenFull};
use crate::telemetry::RateLimitedLog;

/// A bound TCP listener, ready to serve: at shutdown it stops accepting,
/// then lets every connection hand over what it has read.
pub type TcpSource = Listener<conn::Settings>;

impl Protocol for conn::Settings {
    type Config = TcpSourceConfig;
    const KIND: &'static str = "tcp";
    // idle peers must not shut out senders: when every slot is taken, the
    // connection idle the longest is closed for a new one
    const WHEN_FULL: WhenFull = WhenFull::EvictIdlest;

    fn new(
        config: TcpSourceConfig,
        tls: Option<tokio_rustls::TlsAcceptor>,
        cx: &SourceContext,
    ) -> Self {
        conn::Settings {
            tag: config.tag.as_str().into(),
            config,
            tls,
            memory: cx.memory.clone(),
            metrics: Arc::new(TcpMetrics::new(&cx.metrics, &cx.name)),
        }
    }

    fn refused(&self, peer: SocketAddr) {
        let metrics = &self.metrics;
        metrics.connections_rejected.inc();
        crate::warn_limited!(metrics.warnings, "max_connections", source = %metrics.source,
            %peer, limit = self.config.max_connections,
            "connection refused: max_connections reached and no connection is idle");
    }

    fn connection(
        self: &Arc<Self>,
        conn: Accepted,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.metrics.connections.inc();
        conn::Connection {
            stream: conn.stream,
            peer: conn.peer,
            settings: self.clone(),
            metrics: self.metrics.clone(),
            router: conn.router,
            shutdown: conn.shutdown,
            activity: conn.activity,
        }
        .serve()
    }
}

/// Counters of one TCP source; see `docs/operations.md`.
pub struct TcpMetrics {
    records: Counter,
    bytes: Counter,
    connections: Counter,
    connections_rejected: Counter,
    /// Per-message and per-connection warnings, rate-limited per kind.
    warnings: RateLimitedLog,
    registry: Registry,
    source: Arc<str>,
}

impl TcpMetrics {
    fn new(r: &Registry, source: &str) -> Self {
        let l = &[("component", source)];
        let received = crate::sources::Received::new(r, source);
        TcpMetrics {
            records: received.records,
            bytes: received.bytes,
            connections: r.counter("logferry_tcp_connections_total", "Connections accepted.", l),
            connections_rejected: r.counter(
                "logferry_tcp_connections_rejected_total",
                "Connections closed at once because max_connections was reached.",
                l,
            ),
            warnings: RateLimitedLog::default(),
            registry: r.clone(),
            source: source.into(),
        }
    }

    /// Counts and logs a bad message: the one place where they become
    /// visible. The connection continues.
    fn message_error(&self, peer: SocketAddr, kind: &'static str, reason: &str) {
        self.registry
            .counter(
                "logferry_tcp_message_errors_total",
                "Bad messages, by kind (too_long: dropped; invalid_json, invalid_syslog: kept as {\"message\": line}).",
                &[("component", &self.source), ("kind", kind)],
            )
            .inc();
        crate::warn_limited!(self.warnings, kind, source = %self.source, %peer, reason,
            "bad message; connection continues");
    }

    fn connection_error(&self, peer: SocketAddr, kind: &'static str, reason: &str) {
        self.registry
            .counter(
                "logferry_tcp_connection_errors_total",
                "Connections ended on an error, by kind (idle_timeout, io, tls, tls_on_plain_port, truncated, sink_stopped, shutdown_timeout).",
                &[("component", &self.source), ("kind", kind)],
            )
            .inc();
        crate::warn_limited!(self.warnings, kind, source = %self.source, %peer, reason,
            "closing connection");
    }
}
