//! Network helpers shared by the listening sources and the forward sink:
//! byte streams, and the one listener every listening source runs (bind,
//! accept loop, connection limit, idle eviction), which hands each
//! connection to the source's [`Protocol`].

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
    /// `max_connections`: connections served at once.
    fn max_connections(&self) -> usize;
}

/// A listening source's protocol: the settings its connections share, and
/// what it does with each connection the shared [`Listener`] accepts.
/// Binding, the `listening` log, loading TLS, the connection limit, idle
/// eviction, accept errors and the order of shutdown are the listener's;
/// framing, the TLS handshake and everything after it are the protocol's.
pub trait Protocol: Sized + Send + Sync + 'static {
    /// The source's table.
    type Config: ListenerConfig;
    /// The `type` name, for the `{kind} source listening` log.
    const KIND: &'static str;
    /// What a new connection does while every slot is taken.
    const WHEN_FULL: WhenFull = WhenFull::Refuse;

    /// The settings and counters the connections share, made once the
    /// socket is bound; `tls` is the acceptor of the `tls` table, if there
    /// is one.
    fn new(
        config: Self::Config,
        tls: Option<tokio_rustls::TlsAcceptor>,
        cx: &crate::component::SourceContext,
    ) -> Self;
    /// Counts and warns about a connection closed at once because every
    /// slot was taken.
    fn refused(&self, peer: std::net::SocketAddr);
    /// Counts a new connection and returns its task, which runs on its own
    /// and holds the connection's slot until it ends.
    fn connection(
        self: &std::sync::Arc<Self>,
        conn: Accepted,
    ) -> impl std::future::Future<Output = ()> + Send + 'static;
}

/// A connection the listener accepted, with what its task needs of the
/// source.
pub struct Accepted {
    /// The plain socket (a protocol with TLS settings shakes hands on it
    /// with [`accept_tls`]).
    pub stream: tokio::net::TcpStream,
    /// The client's address, for logs.
    pub peer: std::net::SocketAddr,
    /// The source's router, cloned for this connection.
    pub router: crate::router::Router,
    /// The source's stop signal.
    pub shutdown: crate::component::Shutdown,
    /// Where the connection says when it is idle (and so may be closed to
    /// admit a newer one, with [`WhenFull::EvictIdlest`]).
    pub activity: std::sync::Arc<Activity>,
}

/// A listening source, bound and ready to serve: its socket, its
/// protocol's shared settings and its context.
pub struct Listener<P: Protocol> {
    /// The bound socket.
    listener: tokio::net::TcpListener,
    /// The settings and counters every connection shares.
    protocol: std::sync::Arc<P>,
    /// `max_connections`.
    max_connections: usize,
    /// The source's name, router, stop signal, registry and memory budget.
    cx: crate::component::SourceContext,
}

impl<P: Protocol> Listener<P> {
    /// Binds the configured address (after loading the TLS settings, so a
    /// certificate problem fails start-up before the port is taken, and a
    /// taken port fails start-up rather than the running pipeline), logs
    /// `{kind} source listening` with the bound address, and makes the
    /// protocol's settings and counters.
    pub async fn bind(
        config: P::Config,
        cx: crate::component::SourceContext,
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
            "{} source listening", P::KIND);
        Ok(Listener {
            listener,
            max_connections: config.max_connections(),
            protocol: std::sync::Arc::new(P::new(config, tls, &cx)),
            cx,
        })
    }

    /// The address the source is bound to (the port, with port 0).
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until the source's shutdown, at most
    /// `max_connections` at once. A connection over the limit is closed at
    /// once (or, with [`WhenFull::EvictIdlest`], the one idle the longest
    /// is) and [`Protocol::refused`] is called; each other one runs
    /// [`Protocol::connection`] and holds its slot until that ends. Accept
    /// failures go to [`AcceptErrors`] (back-off, no spin). Once accepting
    /// ends, the source lets go of its router, so the sink queues can close
    /// and drain while the connections still running finish (a forward
    /// connection waiting for its acks), and then waits for them.
    pub async fn run(self) {
        let Listener {
            listener,
            protocol,
            max_connections,
            mut cx,
        } = self;
        let errors = AcceptErrors::new(&cx.metrics, &cx.name);
        let open = cx.metrics.gauge(
            "logferry_open_connections",
            "Connections a listening source is serving now.",
            &[("component", &cx.name)],
        );
        let mut evictions = Evictions::new(&cx.metrics, &cx.name);
        let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(max_connections));
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
                    let slot = match permits.clone().try_acquire_owned() {
                        Ok(slot) => Some(slot),
                        Err(_) if P::WHEN_FULL == WhenFull::EvictIdlest && evictions.evict_idlest(peer) => {
                            tokio::time::timeout(EVICTION_WAIT, permits.clone().acquire_owned())
                                .await
                                .ok()
                                .and_then(Result::ok)
                        }
                        Err(_) => None,
                    };
                    let Some(slot) = slot else {
                        protocol.refused(peer);
                        continue;
                    };
                    let activity = std::sync::Arc::new(Activity::new());
                    evictions.track(&activity, max_connections);
                    let conn = Accepted {
                        stream,
                        peer,
                        router: cx.router.clone(),
                        shutdown: cx.shutdown.clone(),
                        activity,
                    };
                    let task = protocol.connection(conn);
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

/// What a listening source does with a new connection while all its
/// `max_connections` slots are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// Close the new connection at once.
    Refuse,
    /// Close the connection that has been idle longest (see
    /// [`Activity::idle`]) to admit the new one; refuse it if none is idle.
    EvictIdlest,
}

/// How long a new connection waits for the slot of the idle connection
/// closed for it (its task ends at its next poll: at once, normally).
const EVICTION_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Why a connection's TLS handshake did not complete.
#[derive(Debug)]
pub enum HandshakeError {
    /// It failed or timed out: the reason, for the log.
    Failed(String),
    /// The listener closed the connection, idle in its handshake, to
    /// admit a newer one.
    Evicted,
}

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandshakeError::Failed(reason) => f.write_str(reason),
            HandshakeError::Evicted => f.write_str("TLS handshake closed to admit a new one"),
        }
    }
}

/// The stream of a new connection: `stream` itself without `tls`, or the
/// TLS stream once the handshake is done, bounded by `timeout` like any
/// other silence. A handshake holds no record, so the connection is idle
/// for the listener meanwhile (see [`Activity::idle`]).
pub async fn accept_tls(
    stream: tokio::net::TcpStream,
    tls: Option<&tokio_rustls::TlsAcceptor>,
    timeout: std::time::Duration,
    activity: &Activity,
) -> Result<Box<dyn Stream>, HandshakeError> {
    let Some(acceptor) = tls else {
        return Ok(Box::new(stream));
    };
    let idle = activity.idle();
    let handshake = tokio::select! {
        biased;
        _ = activity.evicted() => return Err(HandshakeError::Evicted),
        h = tokio::time::timeout(timeout, acceptor.accept(stream)) => h,
    };
    if !idle.end() {
        return Err(HandshakeError::Evicted);
    }
    match handshake {
        Ok(Ok(tls)) => Ok(Box::new(tls)),
        Ok(Err(e)) => Err(HandshakeError::Failed(format!(
            "TLS handshake failed: {}",
            crate::tls::explain_io(&e)
        ))),
        Err(_) => Err(HandshakeError::Failed("TLS handshake timed out".into())),
    }
}

/// What the listener knows of one connection: whether it is idle (waiting
/// for its peer while holding nothing) and since when, and whether the
/// listener has closed it to admit a newer one.
pub struct Activity {
    /// What `state` counts from.
    base: tokio::time::Instant,
    /// [`BUSY`], [`EVICTED`], or the nanoseconds after `base` at which
    /// the connection became idle.
    state: std::sync::atomic::AtomicU64,
    /// Wakes the connection's [`Activity::evicted`].
    evicted: tokio::sync::Notify,
}

/// The connection is not idle.
const BUSY: u64 = u64::MAX;
/// The listener chose the connection to make room: it closes.
const EVICTED: u64 = u64::MAX - 1;

impl Activity {
    fn new() -> Self {
        Activity {
            base: tokio::time::Instant::now(),
            state: std::sync::atomic::AtomicU64::new(BUSY),
            evicted: tokio::sync::Notify::new(),
        }
    }

    /// The connection waits for its peer and holds nothing that closing it
    /// would lose: until the guard is dropped, the listener may close it
    /// (see [`Activity::evicted`]), the longest idle first. Dropping the
    /// guard says whether that happened meanwhile.
    pub fn idle(&self) -> IdleGuard<'_> {
        let since = tokio::time::Instant::now().saturating_duration_since(self.base);
        let since = u64::try_from(since.as_nanos())
            .unwrap_or(EVICTED - 1)
            .min(EVICTED - 1);
        let _ = self.state.compare_exchange(
            BUSY,
            since,
            std::sync::atomic::Ordering::AcqRel,
            std::sync::atomic::Ordering::Acquire,
        );
        IdleGuard(self)
    }

    /// Ready once the listener closed this connection to admit a newer
    /// one (only ever while it was idle).
    pub async fn evicted(&self) {
        loop {
            let notified = self.evicted.notified();
            if self.is_evicted() {
                return;
            }
            notified.await;
        }
    }

    pub fn is_evicted(&self) -> bool {
        self.state.load(std::sync::atomic::Ordering::Acquire) == EVICTED
    }

    /// How long the connection has been idle; `None` if it is not.
    fn idle_for(&self) -> Option<(u64, std::time::Duration)> {
        let state = self.state.load(std::sync::atomic::Ordering::Acquire);
        if state >= EVICTED {
            return None;
        }
        let at = self.base + std::time::Duration::from_nanos(state);
        Some((
            state,
            tokio::time::Instant::now().saturating_duration_since(at),
        ))
    }

    /// Closes the connection if it is still idle since `state`.
    fn evict(&self, state: u64) -> bool {
        let evicted = self
            .state
            .compare_exchange(
                state,
                EVICTED,
                std::sync::atomic::Ordering::AcqRel,
                std::sync::atomic::Ordering::Acquire,
            )
            .is_ok();
        if evicted {
            self.evicted.notify_waiters();
        }
        evicted
    }
}

/// An idle spell of a connection (see [`Activity::idle`]).
pub struct IdleGuard<'a>(&'a Activity);

impl IdleGuard<'_> {
    /// Ends the idle spell; false if the listener closed the connection
    /// meanwhile (it then closes once it has handed over what it read).
    pub fn end(self) -> bool {
        !self.0.is_evicted()
    }
}

impl Drop for IdleGuard<'_> {
    fn drop(&mut self) {
        let state = &self.0.state;
        let now = state.load(std::sync::atomic::Ordering::Acquire);
        if now != EVICTED {
            let _ = state.compare_exchange(
                now,
                BUSY,
                std::sync::atomic::Ordering::AcqRel,
                std::sync::atomic::Ordering::Acquire,
            );
        }
    }
}

/// The connections a listener may close to admit new ones, and the
/// counter and warning of each time it does.
struct Evictions {
    /// Every connection served (those that ended are pruned as the list
    /// grows).
    tracked: Vec<std::sync::Weak<Activity>>,
    /// `logferry_source_connections_evicted_total{component}`.
    counter: crate::metrics::Counter,
    /// One warning per interval, however many are closed.
    warnings: crate::telemetry::RateLimitedLog,
    /// The source's name, for the warning.
    component: std::sync::Arc<str>,
}

impl Evictions {
    fn new(registry: &crate::metrics::Registry, component: &str) -> Self {
        Evictions {
            tracked: Vec::new(),
            counter: registry.counter(
                "logferry_source_connections_evicted_total",
                "Idle connections a listening source closed to admit a new one while all max_connections slots were taken.",
                &[("component", component)],
            ),
            warnings: crate::telemetry::RateLimitedLog::default(),
            component: component.into(),
        }
    }

    fn track(&mut self, activity: &std::sync::Arc<Activity>, max: usize) {
        if self.tracked.len() >= max.saturating_mul(2).max(64) {
            self.tracked.retain(|a| a.strong_count() > 0);
        }
        self.tracked.push(std::sync::Arc::downgrade(activity));
    }

    /// Closes the connection idle the longest, to admit `peer`; false if
    /// none is idle.
    fn evict_idlest(&mut self, peer: std::net::SocketAddr) -> bool {
        self.tracked.retain(|a| a.strong_count() > 0);
        // a connection may stop being idle between the look and the close
        for _ in 0..3 {
            let idlest = self
                .tracked
                .iter()
                .filter_map(|a| {
                    let a = a.upgrade()?;
                    let (state, idle) = a.idle_for()?;
                    Some((idle, state, a))
                })
                .max_by_key(|(idle, _, _)| *idle);
            let Some((idle, state, activity)) = idlest else {
                return false;
            };
            if activity.evict(state) {
                self.counter.inc();
                crate::warn_limited!(self.warnings, "evicted", source = %self.component,
                    %peer, idle_secs = idle.as_secs(),
                    "max_connections reached: closed the connection idle the longest to admit a new one");
                return true;
            }
        }
        false
    }
}

/// Whether a TCP connection reached itself: a connect to a local port
/// nothing listens on can be given that very port as its own (a
/// simultaneous open with itself), and then reads back what it writes.
/// Clients that are not answered (forward without acks, syslog) would
/// count what they write as delivered; they treat it as a failed connect.
pub fn reached_itself(tcp: &impl std::os::fd::AsFd) -> bool {
    let s = socket2::SockRef::from(tcp);
    matches!((s.local_addr(), s.peer_addr()), (Ok(l), Ok(p)) if l == p)
}

/// A connection's receive queue in the kernel, for a reader that lets its
/// client's data gather there (`crate::sources::linger`).
pub struct ReceiveQueue {
    /// The socket's descriptor, owned by the connection's task, which
    /// holds this for no longer than it holds the socket.
    fd: std::os::fd::RawFd,
    low_water: usize,
}

impl ReceiveQueue {
    pub fn of(tcp: &tokio::net::TcpStream) -> Self {
        use std::os::fd::AsRawFd;
        ReceiveQueue {
            fd: tcp.as_raw_fd(),
            low_water: 1,
        }
    }

    /// Sets the receive low-water mark: data arriving wakes no thread
    /// until this much is queued. 1, the kernel's default, wakes one at
    /// every arrival; setting it signals what is queued already. A socket
    /// that refuses keeps waking its reader at every arrival, which costs
    /// CPU, not records.
    pub fn set_low_water(&mut self, bytes: usize) {
        let bytes = bytes.clamp(1, i32::MAX as usize);
        if bytes != self.low_water && self.set_int(libc::SO_RCVLOWAT, bytes as libc::c_int) {
            self.low_water = bytes;
        }
    }

    /// Bytes queued and not yet read.
    pub fn queued(&self) -> usize {
        let mut n: libc::c_int = 0;
        // SAFETY: `fd` is a socket its owner keeps open while this lives
        // (see the field); FIONREAD writes one int into `n`
        let r = unsafe { libc::ioctl(self.fd, libc::FIONREAD, &mut n) };
        if r == 0 {
            n.max(0) as usize
        } else {
            0
        }
    }

    fn set_int(&self, option: libc::c_int, value: libc::c_int) -> bool {
        // SAFETY: as in `queued`; `value` outlives the call
        let r = unsafe {
            libc::setsockopt(
                self.fd,
                libc::SOL_SOCKET,
                option,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        r == 0
    }
}

/// The error a client gives for a connection that [`reached_itself`].
pub const REACHED_ITSELF: &str = "nothing listens there (the connection reached itself)";

/// Gives `buf` room for `additional` more bytes in a new allocation, copying
/// only the bytes it holds. (`BytesMut::reserve` may instead reallocate the
/// whole old allocation, frames already handed on included.)
pub fn grow(buf: &mut BytesMut, additional: usize) {
    let mut fresh = BytesMut::with_capacity(buf.len() + additional);
    fresh.extend_from_slice(buf);
    *buf = fresh;
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;

    #[tokio::test]
    async fn below_its_low_water_mark_a_receive_queue_wakes_no_reader() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        // a fresh connection's receive window is still below one segment
        // (64 KiB on loopback), and then the kernel signals every arrival
        // whatever the mark: a few MiB read through it open the window
        let warm = tokio::spawn(async move {
            client.write_all(&vec![0; 8 << 20]).await.unwrap();
            client
        });
        let mut sink = vec![0; 1 << 20];
        let mut read = 0;
        while read < 8 << 20 {
            read += server.read(&mut sink).await.unwrap();
        }
        let mut client = warm.await.unwrap();
        let mut queue = ReceiveQueue::of(&server);
        queue.set_low_water(1000);
        client.write_all(&[7; 100]).await.unwrap();
        let mut waited = 0;
        while queue.queued() < 100 && waited < 500 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            waited += 1;
        }
        assert_eq!(queue.queued(), 100);
        // 100 bytes queued, the mark at 1,000: nothing to wake a reader
        let early = tokio::time::timeout(Duration::from_millis(200), server.readable()).await;
        assert!(early.is_err(), "woken below the low-water mark");
        // at the mark back at 1, what is queued is signalled at once
        queue.set_low_water(1);
        tokio::time::timeout(Duration::from_secs(10), server.readable())
            .await
            .expect("signalled once the mark is lowered")
            .unwrap();
        let mut got = [0; 200];
        assert_eq!(server.try_read(&mut got).unwrap(), 100);
        assert_eq!(queue.queued(), 0);
        // a read's worth past the mark wakes the reader too
        queue.set_low_water(1000);
        client.write_all(&[8; 1500]).await.unwrap();
        tokio::time::timeout(Duration::from_secs(10), server.readable())
            .await
            .expect("woken at the low-water mark")
            .unwrap();
    }

    #[tokio::test]
    async fn a_connection_that_reached_itself_is_told_apart() {
        // a socket bound to a port and connected to that same port: what
        // the kernel makes of a connect to a free local port that picks it
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        s.set_reuse_address(true).unwrap();
        s.bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .unwrap()
                .into(),
        )
        .unwrap();
        let own = s.local_addr().unwrap();
        s.connect(&own).unwrap();
        s.set_nonblocking(true).unwrap();
        let std_tcp = std::net::TcpStream::from(s);
        assert!(reached_itself(&std_tcp));
        let tcp = tokio::net::TcpStream::from_std(std_tcp).unwrap();
        assert!(reached_itself(&tcp));
        // an ordinary connection is not
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tcp = tokio::net::TcpStream::connect(l.local_addr().unwrap())
            .await
            .unwrap();
        assert!(!reached_itself(&tcp));
    }
    use crate::component::{shutdown_channel, SourceContext};

    /// A protocol with two slots that greets each client and holds its
    /// connection until the client leaves.
    struct Greeter {
        /// Connections refused over the limit.
        refused: AtomicUsize,
    }

    struct GreeterConfig;

    impl ListenerConfig for GreeterConfig {
        fn address(&self) -> &str {
            "127.0.0.1:0"
        }
        fn tls(&self) -> Option<&crate::tls::ServerTlsConfig> {
            None
        }
        fn max_connections(&self) -> usize {
            2
        }
    }

    impl Protocol for Greeter {
        type Config = GreeterConfig;
        const KIND: &'static str = "greeter";

        fn new(_: GreeterConfig, _: Option<tokio_rustls::TlsAcceptor>, _: &SourceContext) -> Self {
            Greeter {
                refused: AtomicUsize::new(0),
            }
        }

        fn refused(&self, _: SocketAddr) {
            self.refused.fetch_add(1, Ordering::SeqCst);
        }

        fn connection(
            self: &Arc<Self>,
            conn: Accepted,
        ) -> impl std::future::Future<Output = ()> + Send + 'static {
            let mut stream = conn.stream;
            async move {
                let _ = stream.write_all(b"hi").await;
                let _ = stream.read(&mut [0u8; 1]).await;
            }
        }
    }

    /// The client's connection if it was greeted; `None` if it was closed
    /// at once.
    async fn greeted(addr: SocketAddr) -> Option<TcpStream> {
        let mut client = TcpStream::connect(addr).await.ok()?;
        let mut hi = [0u8; 2];
        client.read_exact(&mut hi).await.ok()?;
        Some(client)
    }

    /// Two slots: two clients are served, the next three are closed at once
    /// and counted, and once a client leaves its slot serves a new one.
    #[tokio::test]
    async fn a_connection_over_the_limit_is_refused_until_a_slot_frees() {
        let metrics = crate::metrics::Registry::new();
        let (stop, shutdown) = shutdown_channel();
        let cx = SourceContext {
            name: "greeter".into(),
            router: crate::router::Router::new(Vec::new(), metrics.counter("unrouted", "", &[])),
            shutdown,
            metrics,
            memory: crate::memory::MemoryBudget::unlimited(),
        };
        let listener = Listener::<Greeter>::bind(GreeterConfig, cx).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let greeter = listener.protocol.clone();
        let running = tokio::spawn(listener.run());
        let first = greeted(addr).await.expect("the first slot");
        let second = greeted(addr).await.expect("the second slot");
        for i in 0..3 {
            assert!(greeted(addr).await.is_none(), "client {i} over the limit");
        }
        assert_eq!(greeter.refused.load(Ordering::SeqCst), 3);
        drop(first);
        // the slot frees once the first connection's task has seen it close
        let mut third = None;
        for _ in 0..100 {
            third = greeted(addr).await;
            if third.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(third.is_some(), "a freed slot serves a new client");
        stop.trigger();
        drop((second, third));
        running.await.unwrap();
    }
}
