//! `type = "forward"`: receives the Fluentd forward protocol over TCP.
//!
//! - `config.rs`: the settings and their limits;
//! - `conn.rs`: one connection: framing, routing, acks;
//! - this file: how the shared listener (`crate::net::Listener`) serves
//!   forward connections, and the counters.

mod config;
mod conn;
mod read_plan;

use std::net::SocketAddr;
use std::sync::Arc;

pub use config::{ForwardSourceConfig, UserConfig};

use crate::component::SourceContext;
use crate::metrics::{Counter, Registry};
use crate::net::{Accepted, Listener, Protocol};
use crate::protocol::forward::FrameError;
use crate::telemetry::RateLimitedLog;

/// A bound forward listener, ready to serve: at shutdown it stops
/// accepting, then waits for every connection to hand over what it has
/// read and to send its pending acks.
pub type ForwardSource = Listener<conn::Settings>;

impl Protocol for conn::Settings {
    type Config = ForwardSourceConfig;
    const KIND: &'static str = "forward";

    fn new(
        config: ForwardSourceConfig,
        tls: Option<tokio_rustls::TlsAcceptor>,
        cx: &SourceContext,
    ) -> Self {
        conn::Settings {
            limits: config.limits(),
            idle_timeout: config.idle_timeout,
            linger: config.linger(),
            source: cx.name.clone(),
            tls,
            auth: config.auth(),
            max_connections: config.max_connections,
            memory: cx.memory.clone(),
            metrics: Arc::new(ForwardMetrics::new(&cx.metrics, &cx.name)),
        }
    }

    fn refused(&self, peer: SocketAddr) {
        let metrics = &self.metrics;
        metrics.connections_rejected.inc();
        crate::warn_limited!(metrics.warnings, "max_connections", source = %self.source,
            %peer, limit = self.max_connections,
            "connection refused: max_connections reached");
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
            memory: self.memory.clone(),
        }
        .serve()
    }
}

/// Counters of one forward source; see `docs/configuration.md`.
pub struct ForwardMetrics {
    records: Counter,
    bytes: Counter,
    connections: Counter,
    connections_rejected: Counter,
    acks_sent: Counter,
    acks_withheld: Counter,
    /// Per-frame and per-connection warnings, rate-limited per kind.
    warnings: RateLimitedLog,
    registry: Registry,
    source: Arc<str>,
}

impl ForwardMetrics {
    fn new(r: &Registry, source: &str) -> Self {
        let l = &[("component", source)];
        ForwardMetrics {
            records: r.counter("logferry_source_records_total", "Records received by a source.", l),
            bytes: r.counter("logferry_source_bytes_total", "Bytes of records received by a source.", l),
            connections: r.counter("logferry_forward_connections_total", "Connections accepted.", l),
            connections_rejected: r.counter(
                "logferry_forward_connections_rejected_total",
                "Connections closed at once because max_connections was reached.",
                l,
            ),
            acks_sent: r.counter("logferry_forward_acks_sent_total", "Ack responses sent.", l),
            acks_withheld: r.counter(
                "logferry_forward_acks_withheld_total",
                "Chunks not acknowledged because a sink dropped or failed them (the client resends).",
                l,
            ),
            warnings: RateLimitedLog::default(),
            registry: r.clone(),
            source: source.into(),
        }
    }

    /// Logs a rejected frame and counts it under its kind: the one place
    /// where frame errors become visible.
    fn frame_error(&self, peer: SocketAddr, e: &FrameError) {
        self.registry
            .counter(
                "logferry_forward_frame_errors_total",
                "Frames rejected, by kind (malformed, too_large, invalid_frame, truncated).",
                &[("component", &self.source), ("kind", e.kind())],
            )
            .inc();
        if e.is_fatal() {
            crate::warn_limited!(self.warnings, e.kind(), source = %self.source, %peer,
                error = %e, "closing connection: bad frame");
        } else {
            crate::warn_limited!(self.warnings, e.kind(), source = %self.source, %peer,
                error = %e, "frame rejected; connection continues");
        }
    }

    fn connection_error(&self, peer: SocketAddr, kind: &'static str, reason: &str) {
        self.registry
            .counter(
                "logferry_forward_connection_errors_total",
                "Connections closed on an error, by kind (idle_timeout, io, truncated, tls, tls_on_plain_port, auth, sink_stopped).",
                &[("component", &self.source), ("kind", kind)],
            )
            .inc();
        crate::warn_limited!(self.warnings, kind, source = %self.source, %peer, reason,
            "closing connection");
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;
    use crate::protocol::forward::{ack_response, write_message_entry, write_packed_forward};
    use crate::sources::testing::two_sinks;

    /// A PackedForward frame of two records, asking for an ack if `chunk`.
    fn frame(chunk: Option<&[u8]>) -> Vec<u8> {
        let mut entries = Vec::new();
        write_message_entry(&mut entries, 1_700_000_000, 0, b"one");
        write_message_entry(&mut entries, 1_700_000_000, 0, b"two");
        let mut out = Vec::new();
        write_packed_forward(&mut out, "app", &entries, 2, chunk);
        out
    }

    /// A chunk that asks for an ack is waited on (its client waits for
    /// the ack), in every sink's copy; a chunk without one is not.
    #[tokio::test]
    async fn a_chunk_that_asks_for_an_ack_is_waited_on() {
        let (cx, stop, mut queues) = two_sinks("forward");
        let config: ForwardSourceConfig = toml::from_str("address = \"127.0.0.1:0\"").unwrap();
        let source = ForwardSource::bind(config, cx).await.unwrap();
        let addr = source.local_addr().unwrap();
        let running = tokio::spawn(source.run());
        let mut client = TcpStream::connect(addr).await.unwrap();
        for (chunk, want) in [(Some(&b"c1"[..]), true), (None, false), (Some(b"c2"), true)] {
            client.write_all(&frame(chunk)).await.unwrap();
            for q in &mut queues {
                let d = q.recv().await.expect("a batch in each sink's queue");
                assert_eq!(d.batch().count, 2);
                assert_eq!(d.batch().is_waited_on(), want, "chunk {chunk:?}");
                d.accept();
            }
            if let Some(chunk) = chunk {
                let want = ack_response(chunk);
                let mut got = vec![0; want.len()];
                client.read_exact(&mut got).await.unwrap();
                assert_eq!(got, want, "the client's ack");
            }
        }
        stop.trigger();
        drop(client);
        running.await.unwrap();
    }
}
