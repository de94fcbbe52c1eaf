//! Network helpers shared by the listening sources and the forward sink:
//! byte streams, and the accept loop with its connection limit.

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use crate::protocol::msgpack;

/// A plain or TLS connection.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Reads until `buf` starts with one complete msgpack value and splits it
/// off. Errors are phrased for logs: `what` names the expected message.
pub async fn read_value<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut BytesMut,
    limit: usize,
    what: &str,
) -> Result<BytesMut, String> {
    loop {
        match msgpack::skip(buf, 0) {
            Ok(end) => return Ok(buf.split_to(end)),
            Err(msgpack::Error::Invalid { reason, .. }) => {
                return Err(format!("{what} is not msgpack: {reason}"))
            }
            Err(msgpack::Error::Incomplete { needed }) if needed > limit => {
                return Err(format!("{what} larger than {limit} bytes"))
            }
            Err(msgpack::Error::Incomplete { .. }) => {
                buf.reserve(4096);
                match rd.read_buf(buf).await {
                    Ok(0) => return Err(format!("connection closed while waiting for {what}")),
                    Ok(_) => {}
                    Err(e) => return Err(format!("reading {what}: {e}")),
                }
            }
        }
    }
}

/// What an accept loop does when accept(2) fails: count the failure, warn
/// (rate-limited), and pause before trying again. A listener with a
/// pending connection stays readable, so retrying at once would spin on
/// EMFILE until a descriptor is freed.
pub struct AcceptErrors {
    component: std::sync::Arc<str>,
    registry: crate::metrics::Registry,
    warnings: crate::telemetry::RateLimitedLog,
}

/// Pause after running out of descriptors or socket memory: long enough
/// not to spin, short enough that a freed descriptor is used soon.
pub const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

impl AcceptErrors {
    pub fn new(registry: &crate::metrics::Registry, component: &str) -> Self {
        AcceptErrors {
            component: component.into(),
            registry: registry.clone(),
            warnings: crate::telemetry::RateLimitedLog::default(),
        }
    }

    /// Counts, logs and waits out one failed accept.
    pub async fn handle(&self, e: &std::io::Error) {
        let (kind, hint) = match e.raw_os_error() {
            Some(libc::EMFILE) => ("emfile", "this process is out of file descriptors: raise its open-file limit (ulimit -n, systemd LimitNOFILE=) or lower max_connections; new connections wait in the backlog"),
            Some(libc::ENFILE) => ("enfile", "the system is out of file descriptors (fs.file-max); new connections wait in the backlog"),
            Some(libc::ENOBUFS | libc::ENOMEM) => ("nomem", "the kernel is out of memory for sockets"),
            _ => ("other", "retrying"),
        };
        self.registry
            .counter(
                "logferry_accept_errors_total",
                "Failed accepts of a listener, by kind (emfile, enfile, nomem, other).",
                &[("component", &self.component), ("kind", kind)],
            )
            .inc();
        crate::warn_limited!(self.warnings, kind, component = %self.component, error = %e,
            hint, "accept failed");
        let pause = if kind == "other" {
            std::time::Duration::from_millis(10)
        } else {
            ACCEPT_BACKOFF
        };
        tokio::time::sleep(pause).await;
    }
}

/// The settings every listening source has.
pub trait ListenerConfig {
    /// `host:port` to listen on.
    fn address(&self) -> &str;
    /// The `tls` table, if the source serves TLS.
    fn tls(&self) -> Option<&crate::tls::ServerTlsConfig>;
    /// The application protocols offered in the TLS handshake (ALPN), most
    /// preferred first; none by default.
    fn alpn(&self) -> &'static [&'static [u8]] {
        &[]
    }
}

/// A listening source, bound and ready to serve: its socket, its
/// settings, its context, its counters and its TLS acceptor, which its
/// connections share.
pub struct Listening<C, M> {
    pub listener: tokio::net::TcpListener,
    pub config: C,
    pub cx: crate::sources::SourceContext,
    pub metrics: std::sync::Arc<M>,
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

impl<C: ListenerConfig, M> Listening<C, M> {
    /// Binds the configured address (after loading the TLS settings, so a
    /// certificate problem fails start-up before the port is taken, and a
    /// taken port fails start-up rather than the running pipeline), logs
    /// `{kind} source listening` with the bound address, and makes the
    /// source's counters with `metrics(registry, source name)`.
    pub async fn bind(
        kind: &str,
        config: C,
        cx: crate::sources::SourceContext,
        metrics: impl FnOnce(&crate::metrics::Registry, &str) -> M,
    ) -> Result<Self, String> {
        let tls = config
            .tls()
            .map(|t| t.acceptor(config.alpn()))
            .transpose()?;
        let address = config.address();
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|e| format!("cannot listen on {address}: {e}"))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        tracing::info!(source = %cx.name, address = %local, tls = tls.is_some(),
            "{kind} source listening");
        let metrics = std::sync::Arc::new(metrics(&cx.metrics, &cx.name));
        Ok(Listening {
            listener,
            config,
            cx,
            metrics,
            tls,
        })
    }

    /// The address the source is bound to (the port, with port 0).
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }
}

/// One connection counted in `logferry_open_connections` for as long as
/// it lives (also if its task panics).
struct OpenConnection(crate::metrics::Gauge);

impl OpenConnection {
    fn new(gauge: &crate::metrics::Gauge) -> Self {
        gauge.inc();
        OpenConnection(gauge.clone())
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The accept loop every listening source shares: accepts connections on
/// `listener` until the source's shutdown, at most `max_connections` at
/// once. A connection over the limit is closed at once and
/// `refused(peer)` is called (to count and warn); each other one runs
/// `serve(stream, peer, router, shutdown)` and holds its slot until that
/// ends. Accept failures go to `errors` (back-off, no spin). Once
/// accepting ends, the source lets go of its router, so the sink queues
/// can close and drain while the connections still running finish (a
/// forward connection waiting for its acks), and then waits for them.
pub async fn serve_listener<F, Fut>(
    listener: tokio::net::TcpListener,
    max_connections: usize,
    mut cx: crate::sources::SourceContext,
    mut refused: impl FnMut(std::net::SocketAddr),
    mut serve: F,
) where
    F: FnMut(
        tokio::net::TcpStream,
        std::net::SocketAddr,
        crate::router::Router,
        crate::sources::Shutdown,
    ) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let errors = AcceptErrors::new(&cx.metrics, &cx.name);
    let open = cx.metrics.gauge(
        "logferry_open_connections",
        "Connections a listening source is serving now.",
        &[("component", &cx.name)],
    );
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(max_connections));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = cx.shutdown.wait() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // EMFILE and friends: back off instead of spinning
                        errors.handle(&e).await;
                        continue;
                    }
                };
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    refused(peer);
                    continue;
                };
                let task = serve(stream, peer, cx.router.clone(), cx.shutdown.clone());
                let open = OpenConnection::new(&open);
                connections.spawn(async move {
                    task.await;
                    drop(open);
                    drop(slot);
                });
            }
        }
    }
    drop(listener);
    // the queues close once no source holds a router
    drop(cx.router);
    tracing::debug!(source = %cx.name, open = connections.len(), "source stopping");
    while connections.join_next().await.is_some() {}
}

/// Gives `buf` room for `additional` more bytes in a new allocation, copying
/// only the bytes it holds. (`BytesMut::reserve` may instead reallocate the
/// whole old allocation, frames already handed on included.)
pub fn grow(buf: &mut BytesMut, additional: usize) {
    let mut fresh = BytesMut::with_capacity(buf.len() + additional);
    fresh.extend_from_slice(buf);
    *buf = fresh;
}
