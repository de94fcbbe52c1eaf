//! `type = "forward"`: receives the Fluentd forward protocol over TCP.
//!
//! - `config.rs`: the settings and their limits;
//! - `conn.rs`: one connection: framing, routing, acks;
//! - this file: the listener and the connection limit.

mod config;
mod conn;

use std::net::SocketAddr;
use std::sync::Arc;

pub use config::{ForwardSourceConfig, UserConfig};

use crate::component::SourceContext;
use crate::metrics::{Counter, Registry};
use crate::net::Listening;
use crate::protocol::forward::FrameError;
use crate::telemetry::RateLimitedLog;

/// A bound forward listener, ready to serve.
pub struct ForwardSource(Listening<ForwardSourceConfig, ForwardMetrics>);

impl ForwardSource {
    /// Binds the listening socket (see [`Listening::bind`]).
    pub async fn bind(config: ForwardSourceConfig, cx: SourceContext) -> Result<Self, String> {
        Listening::bind("forward", config, cx, ForwardMetrics::new)
            .await
            .map(ForwardSource)
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.0.local_addr()
    }

    /// Accepts connections until shutdown, then waits for every connection
    /// to hand over what it has read and to send its pending acks.
    pub async fn run(self) {
        let Listening {
            listener,
            config,
            cx,
            metrics,
            tls,
        } = self.0;
        let max_connections = config.max_connections;
        let settings = Arc::new(conn::Settings {
            limits: config.limits(),
            idle_timeout: config.idle_timeout,
            source: cx.name.clone(),
            tls,
            auth: config.auth(),
        });
        let (name, memory) = (cx.name.clone(), cx.memory.clone());
        // once accepting ends the sink queues close and drain, while
        // connections still wait for their acks
        crate::net::serve_listener(
            listener,
            max_connections,
            cx,
            |peer| {
                metrics.connections_rejected.inc();
                crate::warn_limited!(metrics.warnings, "max_connections", source = %name,
                    %peer, limit = max_connections,
                    "connection refused: max_connections reached");
            },
            |stream, peer, router, shutdown| {
                metrics.connections.inc();
                conn::Connection {
                    stream,
                    peer,
                    settings: settings.clone(),
                    metrics: metrics.clone(),
                    router,
                    shutdown,
                    memory: memory.clone(),
                }
                .serve()
            },
        )
        .await;
    }
}

/// Counters of one forward source; see `docs/configuration.md`.
pub(crate) struct ForwardMetrics {
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
