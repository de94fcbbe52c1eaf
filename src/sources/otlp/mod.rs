//! `type = "otlp"`: receives OpenTelemetry logs over OTLP/HTTP (protobuf
//! and JSON, `POST /v1/logs`).
//!
//! - `config.rs`: its keys (its own, and the HTTP source's limits);
//! - `crate::protocol::otlp`: requests to records, and the answers;
//! - the connections are the HTTP source's (`sources::http::OtlpHttp`):
//!   limits, timeouts, memory budget, `Content-Encoding`, `ack = "sinks"`,
//!   503 with `Retry-After` on backpressure.

pub mod config;

use std::net::SocketAddr;
use std::sync::Arc;

pub use config::OtlpSourceConfig;

use crate::component::SourceContext;
use crate::net::{Accepted, Listener, ListenerConfig, Protocol};
use crate::sources::http::OtlpHttp;

/// A bound `otlp` source, ready to serve.
pub type OtlpSource = Listener<OtlpProtocol>;

/// The `otlp` source's protocol for the shared listener.
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
        OtlpProtocol(OtlpHttp::new(config.http, tag, tls, cx))
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
