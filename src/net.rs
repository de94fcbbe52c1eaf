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

/// The accept loop every listening source shares: accepts connections on
/// `listener` until `shutdown`, at most `max_connections` at once. A
/// connection over the limit is closed at once and `refused(peer)` is
/// called (to count and warn); each other one runs `serve(stream, peer)`
/// and holds its slot until that ends. Accept failures go to `errors`
/// (back-off, no spin). Returns the connections still running, for the
/// caller to wait for once it has let go of what they may wait on (its
/// router, so the sink queues can drain).
pub async fn accept_until_stop<F, Fut>(
    listener: tokio::net::TcpListener,
    max_connections: usize,
    shutdown: &mut crate::sources::Shutdown,
    errors: &AcceptErrors,
    mut refused: impl FnMut(std::net::SocketAddr),
    mut serve: F,
) -> tokio::task::JoinSet<()>
where
    F: FnMut(tokio::net::TcpStream, std::net::SocketAddr) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(max_connections));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.wait() => break,
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
                let task = serve(stream, peer);
                connections.spawn(async move {
                    task.await;
                    drop(slot);
                });
            }
        }
    }
    connections
}
