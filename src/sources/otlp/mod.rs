//! `type = "otlp"`: receives OpenTelemetry logs over OTLP/HTTP (protobuf
//! and JSON, `POST /v1/logs`) on `address`, and over OTLP/gRPC
//! (`LogsService/Export`) on `grpc_address`.
//!
//! - `config.rs`: its keys (its own, and the HTTP source's limits);
//! - `crate::protocol::otlp`: requests to records, and the answers;
//! - the connections are the HTTP source's (`sources::http::OtlpHttp`):
//!   limits, timeouts, memory budget, `Content-Encoding`, `ack = "sinks"`,
//!   503 with `Retry-After` on backpressure; on the gRPC listener, HTTP/2
//!   only, with gRPC frames and status trailers.

pub mod config;

use std::net::SocketAddr;
use std::sync::Arc;

pub use config::OtlpSourceConfig;

use crate::component::SourceContext;
use crate::net::{Accepted, Listener, ListenerConfig, Protocol};
use crate::sources::http::OtlpHttp;

/// A bound `otlp` source, ready to serve: its OTLP/HTTP listener and,
/// with `grpc_address`, its OTLP/gRPC one (each with its own
/// `max_connections`; both share the memory budget and the router).
pub struct OtlpSource {
    /// `address`: OTLP/HTTP.
    http: Listener<OtlpProtocol>,
    /// `grpc_address`: OTLP/gRPC.
    grpc: Option<Listener<OtlpGrpcProtocol>>,
}

impl OtlpSource {
    /// Binds both addresses (a taken port fails start-up).
    pub async fn bind(config: OtlpSourceConfig, cx: SourceContext) -> Result<Self, String> {
        let grpc = match &config.otlp.grpc_address {
            Some(_) => {
                let cx = SourceContext {
                    name: cx.name.clone(),
                    router: cx.router.clone(),
                    shutdown: cx.shutdown.clone(),
                    metrics: cx.metrics.clone(),
                    memory: cx.memory.clone(),
                };
                Some(Listener::bind(GrpcListener(config.clone()), cx).await?)
            }
            None => None,
        };
        let http = Listener::bind(config, cx).await?;
        Ok(OtlpSource { http, grpc })
    }

    /// The OTLP/HTTP address bound (the port, with port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.http.local_addr()
    }

    /// Serves both listeners until shutdown (see [`Listener::run`]).
    pub async fn run(self) {
        match self.grpc {
            Some(grpc) => {
                tokio::join!(self.http.run(), grpc.run());
            }
            None => self.http.run().await,
        }
    }
}

/// The `otlp` source's OTLP/HTTP protocol for the shared listener.
pub struct OtlpProtocol(OtlpHttp);

impl Protocol for OtlpProtocol {
    type Config = OtlpSourceConfig;
    const KIND: &'static str = "otlp";

    fn new(
        config: OtlpSourceConfig,
        tls: Option<tokio_rustls::TlsAcceptor>,
        cx: &SourceContext,
    ) -> Self {
        let tag = config.tag();
        OtlpProtocol(OtlpHttp::new(config.http, tag, false, tls, cx))
    }

    fn refused(&self, peer: SocketAddr) {
        self.0.refused(peer)
    }

    fn connection(
        self: &Arc<Self>,
        conn: Accepted,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.0.connection(conn)
    }
}

impl ListenerConfig for OtlpSourceConfig {
    fn address(&self) -> &str {
        self.http.address()
    }

    fn tls(&self) -> Option<&crate::tls::ServerTlsConfig> {
        self.http.tls()
    }

    fn max_connections(&self) -> usize {
        self.http.max_connections()
    }

    fn alpn(&self) -> &'static [&'static [u8]] {
        self.http.alpn()
    }
}

/// The `otlp` source's table, seen by its gRPC listener.
pub struct GrpcListener(OtlpSourceConfig);

impl ListenerConfig for GrpcListener {
    fn address(&self) -> &str {
        // `bind` makes this listener only when it is set
        self.0.otlp.grpc_address.as_deref().unwrap_or_default()
    }

    fn tls(&self) -> Option<&crate::tls::ServerTlsConfig> {
        self.0.http.tls()
    }

    fn max_connections(&self) -> usize {
        self.0.http.max_connections()
    }

    /// gRPC is HTTP/2 only.
    fn alpn(&self) -> &'static [&'static [u8]] {
        &[b"h2"]
    }
}

/// The `otlp` source's OTLP/gRPC protocol for the shared listener.
pub struct OtlpGrpcProtocol(OtlpHttp);

impl Protocol for OtlpGrpcProtocol {
    type Config = GrpcListener;
    const KIND: &'static str = "otlp grpc";

    fn new(
        config: GrpcListener,
        tls: Option<tokio_rustls::TlsAcceptor>,
        cx: &SourceContext,
    ) -> Self {
        let tag = config.0.tag();
        let mut http = config.0.http;
        // gRPC needs HTTP/2 whatever `http2` says for OTLP/HTTP
        http.http2 = true;
        OtlpGrpcProtocol(OtlpHttp::new(http, tag, true, tls, cx))
    }

    fn refused(&self, peer: SocketAddr) {
        self.0.refused(peer)
    }

    fn connection(
        self: &Arc<Self>,
        conn: Accepted,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.0.connection(conn)
    }
}
