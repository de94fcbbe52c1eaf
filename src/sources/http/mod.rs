//! `type = "http"`: receives records over HTTP/1.1 and HTTP/2 (hyper), compatible
//! with Fluentd's `in_http`.
//!
//! - `config.rs`: the settings and their limits;
//! - `encoding.rs`: `Content-Encoding` (gzip, deflate, zstd), bounded;
//! - `decode.rs`: request bodies to records;
//! - `conn.rs`: one connection: limits, timeouts, requests and answers;
//! - this file: how the shared listener (`crate::net::Listener`) serves
//!   HTTP connections, and the counters.
//!
//! The `otlp` source (`sources::otlp`) is served by the same connections
//! ([`OtlpHttp`]), with OTLP bodies and answers.

mod answer;
mod config;
mod conn;
pub mod decode;
pub mod encoding;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

pub use config::{AckMode, HttpSourceConfig};

use crate::component::SourceContext;
use crate::metrics::{Counter, Registry};
use crate::net::{Accepted, Listener, Protocol};
use crate::telemetry::RateLimitedLog;

/// A bound HTTP listener, ready to serve: at shutdown it stops accepting;
/// then every connection finishes the request it is serving (bounded by
/// `request_timeout`) and closes.
pub type HttpSource = Listener<conn::Settings>;

impl Protocol for conn::Settings {
    type Config = HttpSourceConfig;
    const KIND: &'static str = "http";

    fn new(
        config: HttpSourceConfig,
        tls: Option<tokio_rustls::TlsAcceptor>,
        cx: &SourceContext,
    ) -> Self {
        conn::Settings {
            config,
            tls,
            memory: cx.memory.clone(),
            metrics: Arc::new(HttpMetrics::new(&cx.metrics, &cx.name)),
            otlp: None,
            grpc: false,
        }
    }

    fn refused(&self, peer: SocketAddr) {
        let metrics = &self.metrics;
        let max = self.config.max_connections;
        let reason = format!("connection refused: max_connections ({max}) reached");
        metrics.error(peer, "max_connections", &reason)
    }

    fn connection(
        self: &Arc<Self>,
        conn: Accepted,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        serve(self, conn)
    }
}

/// The task of one accepted connection.
fn serve(
    settings: &Arc<conn::Settings>,
    conn: Accepted,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    settings.metrics.connections.inc();
    conn::Connection {
        stream: conn.stream,
        peer: conn.peer,
        settings: settings.clone(),
        metrics: settings.metrics.clone(),
        router: conn.router,
        shutdown: conn.shutdown,
        activity: conn.activity,
    }
    .serve()
}

/// HTTP connections serving OTLP/HTTP logs exports (`POST /v1/logs`), or
/// OTLP/gRPC ones (`LogsService/Export`):
/// what the `otlp` source's protocol is made of. Limits, timeouts, memory
/// budget, `ack` and answers are the HTTP source's.
pub struct OtlpHttp(Arc<conn::Settings>);

impl OtlpHttp {
    /// `tag` is rendered for each resource of a request; with `grpc`,
    /// OTLP/gRPC is served (HTTP/2 only) instead of OTLP/HTTP.
    pub fn new(
        config: HttpSourceConfig,
        tag: crate::protocol::otlp::TagTemplate,
        grpc: bool,
        tls: Option<tokio_rustls::TlsAcceptor>,
        cx: &SourceContext,
    ) -> Self {
        let mut settings = <conn::Settings as Protocol>::new(config, tls, cx);
        settings.otlp = Some(tag);
        settings.grpc = grpc;
        OtlpHttp(Arc::new(settings))
    }

    /// As [`Protocol::refused`].
    pub fn refused(&self, peer: SocketAddr) {
        self.0.refused(peer)
    }

    /// As [`Protocol::connection`].
    pub fn connection(
        &self,
        conn: Accepted,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        serve(&self.0, conn)
    }
}

/// Counters of one HTTP source; see `docs/operations.md`.
pub struct HttpMetrics {
    records: Counter,
    bytes: Counter,
    connections: Counter,
    /// `logferry_http_requests_total{code="200"}`, looked up once: nearly
    /// every request ends there, and a registry lookup per request costs a
    /// search of every registered series under the registry's lock.
    ok: OnceLock<Counter>,
    /// Warnings, rate-limited per kind.
    warnings: RateLimitedLog,
    registry: Registry,
    source: Arc<str>,
}

impl HttpMetrics {
    fn new(r: &Registry, source: &str) -> Self {
        let l = &[("component", source)];
        let received = crate::sources::Received::new(r, source);
        HttpMetrics {
            records: received.records,
            bytes: received.bytes,
            connections: r.counter(
                "logferry_http_connections_total",
                "HTTP connections accepted.",
                l,
            ),
            ok: OnceLock::new(),
            warnings: RateLimitedLog::default(),
            registry: r.clone(),
            source: source.into(),
        }
    }

    /// Counts one answered request under its status code.
    fn response(&self, code: u16) {
        let counter = |code: &str| {
            self.registry.counter(
                "logferry_http_requests_total",
                "HTTP requests answered, by status code.",
                &[("component", &self.source), ("code", code)],
            )
        };
        if code == 200 {
            self.ok.get_or_init(|| counter("200")).inc();
        } else {
            counter(&code.to_string()).inc();
        }
    }

    /// The one place where an HTTP error is counted and logged.
    fn error(&self, peer: SocketAddr, kind: &'static str, reason: &str) {
        self.registry
            .counter(
                "logferry_http_errors_total",
                "HTTP requests refused or connections closed on an error, by kind.",
                &[("component", &self.source), ("kind", kind)],
            )
            .inc();
        crate::warn_limited!(self.warnings, kind, source = %self.source, %peer, reason,
            "http request or connection failed");
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;
    use crate::sources::testing::two_sinks;

    /// Posts one line over HTTP/1.1 to a source with `ack`; returns, for
    /// each of the two sinks, whether its copy of the batch is waited on,
    /// and the response's status line.
    async fn post_one_line(ack: &str) -> ([bool; 2], String) {
        let (cx, stop, mut queues) = two_sinks("http");
        let config: HttpSourceConfig =
            toml::from_str(&format!("address = \"127.0.0.1:0\"\nack = \"{ack}\"")).unwrap();
        let source = HttpSource::bind(config, cx).await.unwrap();
        let addr = source.local_addr().unwrap();
        let running = tokio::spawn(source.run());
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(
                b"POST /app HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n\
                  Content-Length: 5\r\n\r\nline\n",
            )
            .await
            .unwrap();
        let mut waited = [false; 2];
        for (i, q) in queues.iter_mut().enumerate() {
            let d = q.recv().await.expect("a batch in each sink's queue");
            assert_eq!(d.batch().count, 1);
            waited[i] = d.batch().is_waited_on();
            d.accept();
        }
        let mut response = vec![0; 1024];
        let n = client.read(&mut response).await.unwrap();
        let status = String::from_utf8_lossy(&response[..n])
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        stop.trigger();
        drop(client);
        running.await.unwrap();
        (waited, status)
    }

    /// With `ack = "sinks"` the client's answer waits for the batch, so
    /// every sink's copy is waited on; with `ack = "received"` it does not.
    #[tokio::test]
    async fn a_batch_whose_request_waits_for_the_sinks_is_waited_on() {
        let (waited, status) = post_one_line("sinks").await;
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert_eq!(waited, [true, true], "both sinks' copies");
        let (waited, status) = post_one_line("received").await;
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert_eq!(waited, [false, false], "answered before the sinks");
    }
}
