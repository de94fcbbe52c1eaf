//! `type = "udp"`: one message per datagram (RFC 5426 for syslog), kept
//! raw, read as a JSON object, or parsed as syslog, as the `tcp` source
//! reads a line (`crate::sources::tcp::encode::record`).
//!
//! - `config.rs`: the settings;
//! - `drops.rs`: what the kernel dropped, from `/proc/net/udp(6)`;
//! - this file: the socket, the receive loop and the counters.
//!
//! Nobody waits for an acknowledgement over UDP and nothing can push back
//! on a sender: datagrams gather for `linger` into one batch while the
//! socket is read on, and while a batch waits for queue room or memory
//! budget the kernel's receive buffer holds what arrives; what does not fit
//! there the kernel drops, and those drops are counted.

mod config;
mod drops;

use std::net::SocketAddr;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;
use tokio::time::Instant;

pub use config::UdpSourceConfig;
use drops::KernelDrops;

use crate::component::SourceContext;
use crate::event::{Batch, EventTime, Records, Tag};
use crate::metrics::Counter;
use crate::protocol::syslog::Clock;
use crate::sources::tcp::encode;
use crate::telemetry::{ErrorKinds, RateLimitedLog};

/// Room for the largest datagram (65,507 bytes of IPv4 payload, 65,527
/// of IPv6).
const MAX_DATAGRAM: usize = 64 * 1024;

/// A batch is handed on once its entries reach this size, linger or not.
const MAX_BATCH_BYTES: usize = 1024 * 1024;

/// How often the kernel's drop count is read.
const DROPS_EVERY: Duration = Duration::from_secs(1);

/// At shutdown, how long datagrams already received are read on: what the
/// receive buffer held takes far less; a sender that keeps sending would
/// keep the source from stopping.
const DRAIN_AT_STOP: Duration = Duration::from_secs(1);

/// At shutdown, how long the last batch may wait for queue room; past it
/// its records are counted as lost.
const HANDOVER_TIMEOUT: Duration = Duration::from_secs(10);

/// A bound UDP socket, ready to receive.
pub struct UdpSource {
    /// The bound socket.
    socket: UdpSocket,
    /// The source's table.
    config: UdpSourceConfig,
    /// The tag of every record (`tag`).
    tag: Tag,
    /// Where the kernel's drop count for the socket is read, if `/proc`
    /// shows it.
    drops: Option<KernelDrops>,
    /// The source's counters.
    metrics: UdpMetrics,
    /// The source's name, router, stop signal, registry and memory budget.
    cx: SourceContext,
}

impl UdpSource {
    /// Binds the configured address with its receive buffer (a taken port
    /// fails start-up) and logs `udp source listening` with the bound
    /// address.
    pub async fn bind(config: UdpSourceConfig, cx: SourceContext) -> Result<Self, String> {
        let address = &config.address;
        let addr = tokio::net::lookup_host(address)
            .await
            .map_err(|e| format!("cannot resolve {address}: {e}"))?
            .next()
            .ok_or_else(|| format!("cannot resolve {address}: no address"))?;
        let socket = bind(addr, config.receive_buffer_bytes)
            .map_err(|e| format!("cannot listen on {address} (udp): {e}"))?;
        let local = socket
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .ok_or_else(|| format!("udp socket for {address} has no address"))?;
        let drops = match KernelDrops::of(&socket, local.is_ipv6()) {
            Ok(d) => Some(d),
            Err(e) => {
                tracing::warn!(source = %cx.name, error = %e,
                    "the kernel's count of dropped datagrams cannot be read: drops are not counted");
                None
            }
        };
        tracing::info!(source = %cx.name, address = %local,
            receive_buffer_bytes = socket.recv_buffer_size().unwrap_or(0),
            "udp source listening");
        let socket = UdpSocket::from_std(socket.into()).map_err(|e| e.to_string())?;
        Ok(UdpSource {
            socket,
            tag: config.tag.as_str().into(),
            config,
            drops,
            metrics: UdpMetrics::new(&cx.metrics, &cx.name),
            cx,
        })
    }

    /// The address the source is bound to (the port, with port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Receives until the stop signal, then hands over what the kernel
    /// had already received and the last batch.
    pub async fn run(mut self) {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let mut pending = Pending::default();
        let mut due: Option<Instant> = None;
        let mut drops_seen = 0;
        let mut shutdown = self.cx.shutdown.clone();
        let mut drops_tick = tokio::time::interval(DROPS_EVERY);
        drops_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                _ = shutdown.wait() => break,
                _ = crate::timer::sleep_until_opt(due), if due.is_some() => {
                    due = None;
                    if self.hand_over(&mut pending, false).await.is_err() {
                        return;
                    }
                }
                _ = drops_tick.tick() => self.count_drops(&mut drops_seen),
                received = self.socket.recv_from(&mut buf) => {
                    match received {
                        Ok((n, peer)) => self.receive(&mut pending, &buf[..n], peer),
                        Err(e) => self.metrics.receive_error(&e),
                    }
                    // what else has arrived is read before the batch is looked at
                    while pending.out.len() < MAX_BATCH_BYTES {
                        match self.socket.try_recv_from(&mut buf) {
                            Ok((n, peer)) => self.receive(&mut pending, &buf[..n], peer),
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                            Err(e) => {
                                self.metrics.receive_error(&e);
                                break;
                            }
                        }
                    }
                    if pending.out.len() >= MAX_BATCH_BYTES || self.config.linger.is_zero() {
                        due = None;
                        if self.hand_over(&mut pending, false).await.is_err() {
                            return;
                        }
                    } else if due.is_none() && pending.count > 0 {
                        due = Some(Instant::now() + self.config.linger);
                    }
                }
            }
        }
        // what the kernel received before the stop signal is handed over
        // too; a sender that keeps sending is not waited for past DRAIN_AT_STOP
        let until = Instant::now() + DRAIN_AT_STOP;
        while Instant::now() < until {
            let Ok((n, peer)) = self.socket.try_recv_from(&mut buf) else {
                break;
            };
            self.receive(&mut pending, &buf[..n], peer);
            if pending.out.len() >= MAX_BATCH_BYTES
                && self.hand_over(&mut pending, true).await.is_err()
            {
                return;
            }
        }
        let _ = self.hand_over(&mut pending, true).await;
        self.count_drops(&mut drops_seen);
    }

    /// One datagram into the pending batch.
    fn receive(&self, pending: &mut Pending, datagram: &[u8], peer: SocketAddr) {
        let msg = message_of(datagram);
        if msg.is_empty() {
            return;
        }
        let clock = pending
            .clock
            .get_or_insert_with(|| Clock::new(EventTime::now()));
        let config = &self.config;
        if let Err(e) = encode::record(&mut pending.out, clock, msg, config.format, config.parser) {
            self.metrics.message_error(peer, e.kind(), &e.to_string());
        }
        pending.count += 1;
        self.metrics.bytes.add(msg.len() as u64);
    }

    /// Routes the pending batch, charged to the memory budget. At the stop
    /// signal (`stopping`), waits at most [`HANDOVER_TIMEOUT`] for room.
    async fn hand_over(&mut self, pending: &mut Pending, stopping: bool) -> Result<(), ()> {
        let Pending { out, count, .. } = std::mem::take(pending);
        if count == 0 {
            return Ok(());
        }
        self.metrics.records.add(count as u64);
        let cx = &mut self.cx;
        let routed = async {
            let charge = cx.memory.acquire(0, out.len(), &cx.name).await;
            let batch = Batch::new(self.tag.clone(), Records::Entries(out.into()), count);
            cx.router.route(batch.with_memory(charge)).await
        };
        let result = if stopping {
            match tokio::time::timeout(HANDOVER_TIMEOUT, routed).await {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err(format!(
                    "no queue room within {HANDOVER_TIMEOUT:?} of the stop signal: {count} records are lost"
                )),
            }
        } else {
            routed.await.map_err(|e| e.to_string())
        };
        result.map_err(|reason| {
            tracing::warn!(source = %self.cx.name, reason, "udp source stopped: its records cannot be handed on");
        })
    }

    /// Adds what the kernel dropped since the last look to the counter.
    fn count_drops(&self, seen: &mut u64) {
        if let Some(now) = self.drops.as_ref().and_then(KernelDrops::read) {
            if now > *seen {
                let new = now - *seen;
                self.metrics.kernel_drops.add(new);
                // the buffer the kernel gave (twice what was asked, at
                // most net.core.rmem_max), set or the system's default
                let buffer = socket2::SockRef::from(&self.socket)
                    .recv_buffer_size()
                    .unwrap_or(0);
                crate::warn_limited!(self.metrics.warnings, "kernel_drops", source = %self.cx.name,
                    dropped = new, receive_buffer_bytes = buffer,
                    "the kernel dropped datagrams: its receive buffer was full (raise receive_buffer_bytes, and net.core.rmem_max)");
            }
            *seen = now;
        }
    }
}

/// Datagrams received and not handed on yet.
#[derive(Default)]
struct Pending {
    /// Their entries, `[time, record]` in msgpack.
    out: Vec<u8>,
    /// How many.
    count: usize,
    /// The time of the batch's first datagram, for records without one
    /// of their own.
    clock: Option<Clock>,
}

/// A datagram's message: without one trailing newline (`\n` or `\r\n`),
/// which senders such as rsyslog may add.
fn message_of(datagram: &[u8]) -> &[u8] {
    let msg = datagram.strip_suffix(b"\n").unwrap_or(datagram);
    msg.strip_suffix(b"\r").unwrap_or(msg)
}

/// A non-blocking UDP socket bound to `addr`, with `SO_RCVBUF` set if
/// configured (before the bind, so nothing is received into a smaller
/// buffer).
fn bind(addr: SocketAddr, receive_buffer: Option<usize>) -> std::io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if let Some(n) = receive_buffer {
        socket.set_recv_buffer_size(n)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    Ok(socket)
}

/// Counters of one UDP source; see `docs/operations.md`.
struct UdpMetrics {
    records: Counter,
    bytes: Counter,
    /// Datagrams the kernel dropped, its receive buffer full.
    kernel_drops: Counter,
    /// Datagrams kept as `{"message": …}`, by kind.
    message_errors: ErrorKinds,
    /// Failed receives (ICMP errors reported on the socket and the like).
    receive_errors: Counter,
    /// Per-datagram warnings, rate-limited per kind.
    warnings: RateLimitedLog,
    source: std::sync::Arc<str>,
}

impl UdpMetrics {
    fn new(r: &crate::metrics::Registry, source: &str) -> Self {
        let l = &[("component", source)];
        let received = crate::sources::Received::new(r, source);
        UdpMetrics {
            records: received.records,
            bytes: received.bytes,
            kernel_drops: r.counter(
                "logferry_udp_kernel_drops_total",
                "Datagrams the kernel dropped because the socket's receive buffer was full (from /proc/net/udp).",
                l,
            ),
            message_errors: ErrorKinds::new(
                r,
                "logferry_udp_message_errors_total",
                "Datagrams that did not read as the format or parser says, kept as {\"message\": datagram}, by kind (invalid_json, invalid_syslog).",
                source,
                &["invalid_json", "invalid_syslog"],
            ),
            receive_errors: r.counter(
                "logferry_udp_receive_errors_total",
                "Receives from the socket that failed.",
                l,
            ),
            warnings: RateLimitedLog::default(),
            source: source.into(),
        }
    }

    /// Counts and logs a datagram kept as `{"message": …}`.
    fn message_error(&self, peer: SocketAddr, kind: &'static str, reason: &str) {
        self.message_errors.count(kind);
        crate::warn_limited!(self.warnings, kind, source = %self.source, %peer, reason,
            "bad datagram");
    }

    fn receive_error(&self, e: &std::io::Error) {
        self.receive_errors.inc();
        crate::warn_limited!(self.warnings, "receive", source = %self.source, error = %e,
            "receiving a datagram failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::QueueReceiver;

    #[test]
    fn one_trailing_newline_is_stripped() {
        assert_eq!(message_of(b"a\n"), b"a");
        assert_eq!(message_of(b"a\r\n"), b"a");
        assert_eq!(message_of(b"a\n\n"), b"a\n");
        assert_eq!(message_of(b"a\nb"), b"a\nb");
        assert_eq!(message_of(b"\n"), b"");
    }

    async fn records(rx: &mut QueueReceiver) -> Vec<serde_json::Value> {
        let config = crate::format::FormatConfig {
            kind: crate::format::FormatKind::Json,
            ..Default::default()
        };
        let mut formatter = crate::format::Formatter::new(&config).unwrap();
        let mut got = Vec::new();
        while let Ok(Some(d)) = tokio::time::timeout(Duration::from_millis(50), rx.recv()).await {
            let mut out = Vec::new();
            formatter.write_batch(d.batch(), &mut out).unwrap();
            d.accept();
            for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let v: serde_json::Value = serde_json::from_slice(line).unwrap();
                got.push(v["record"].clone());
            }
        }
        got
    }

    #[tokio::test]
    async fn datagrams_become_records_and_unparsed_ones_are_kept_and_counted() {
        let (cx, trigger, [mut rx, _b]) = crate::sources::testing::two_sinks("in");
        let registry = cx.metrics.clone();
        let config: UdpSourceConfig = toml::from_str(
            "address = \"127.0.0.1:0\"\nparser = \"syslog\"\nlinger = \"10ms\"\nreceive_buffer_bytes = \"1MiB\"",
        )
        .unwrap();
        let source = UdpSource::bind(config, cx).await.unwrap();
        let addr = source.local_addr().unwrap();
        let task = tokio::spawn(source.run());
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .send_to(b"<165>1 - host app - ID7 - hello\n", addr)
            .unwrap();
        client.send_to(b"not syslog", addr).unwrap();
        client.send_to(b"", addr).unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.trigger();
        task.await.unwrap();
        let got = records(&mut rx).await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0]["app_name"], "app");
        assert_eq!(got[0]["message"], "hello");
        assert_eq!(got[1], serde_json::json!({"message": "not syslog"}));
        let text = registry.render();
        assert!(
            text.contains(
                "logferry_udp_message_errors_total{component=\"in\",kind=\"invalid_syslog\"} 1"
            ),
            "{text}"
        );
    }
}
