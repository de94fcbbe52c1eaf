//! One TCP connection: read, frame, encode, route.
//!
//! TCP has no acknowledgements, so flow control is the only way to push
//! back: routing waits while a sink queue is full, and while it waits
//! nothing more is read from the socket. Each read becomes one batch.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use super::config::TcpSourceConfig;
use super::framing::{Framer, Step};
use super::{encode, syslog, TcpMetrics};
use crate::component::Shutdown;
use crate::event::{Batch, EventTime, Records, Tag};
use crate::memory::MemoryCharge;
use crate::net::{accept_tls, HandshakeError};
use crate::router::Router;
use crate::sources::linger::{Linger, Woke, STOP_READ_GRACE};

/// Bytes requested from the socket per read.
const READ_CHUNK: usize = 128 * 1024;

/// At shutdown, how long a connection may wait for queue room to hand
/// over what it has read; past it those records are counted as lost.
const HANDOVER_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings shared by every connection of one source: the TCP protocol
/// of the shared listener (see `super`).
pub struct Settings {
    /// The source's table.
    pub config: TcpSourceConfig,
    /// The tag of every record (`tag`).
    pub tag: Tag,
    /// The handshake of the `tls` table, if there is one.
    pub tls: Option<TlsAcceptor>,
    /// Charged with each batch until every sink settled it.
    pub memory: crate::memory::MemoryBudget,
    /// The source's counters.
    pub metrics: Arc<super::TcpMetrics>,
}

pub(super) struct Connection {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub settings: Arc<Settings>,
    pub metrics: Arc<TcpMetrics>,
    pub router: Router,
    pub shutdown: Shutdown,
    /// Tells the listener when the connection is idle; it may then close
    /// it to admit a new one (`max_connections`).
    pub activity: Arc<crate::net::Activity>,
}

/// Why reading stopped.
enum End {
    /// EOF or shutdown.
    Clean,
    /// Closed while idle to admit a new connection (the listener counts it).
    Evicted,
    Error(&'static str, String),
}

impl Connection {
    pub async fn serve(self) {
        let Connection {
            stream,
            peer,
            settings,
            metrics,
            mut router,
            mut shutdown,
            activity,
        } = self;
        let config = &settings.config;
        tracing::debug!(source = %metrics.source, %peer, "connection opened");
        let mut queue = crate::net::ReceiveQueue::of(&stream);
        let tls = settings.tls.as_ref();
        let mut stream = match accept_tls(stream, tls, config.idle_timeout, &activity).await {
            Ok(stream) => stream,
            Err(HandshakeError::Evicted) => {
                // counted by the listener
                return tracing::debug!(source = %metrics.source, %peer,
                    "connection in its TLS handshake closed to admit a new one");
            }
            Err(e) => return metrics.connection_error(peer, "tls", &e.to_string()),
        };
        let memory = &settings.memory;
        let mut conn = Framed {
            buf: BytesMut::new(),
            framer: Framer::new(config.framing, config.max_line_bytes),
            settings: settings.clone(),
            metrics: metrics.clone(),
            peer,
            broken: None,
            was_broken: false,
        };
        // the memory budget's charge for the read buffer: its allocation
        // less what has been handed on (each batch takes its part along)
        let mut buf_charge = MemoryCharge::none();
        let mut first_bytes = settings.tls.is_none();
        let mut evicted = false;
        let setting = config.linger();
        let mut linger = Linger::new(Duration::ZERO);
        // a linger ended with the client's lines queued in the socket: the
        // next read takes them, even at a stop
        let mut unread = false;
        let end = loop {
            if let Some(additional) = growth(&conn.buf) {
                // a new read buffer is charged before it is allocated: with
                // the budget used up, reading stops here and TCP pushes back
                // on the client; a message begun in the old buffer is held
                // while waiting
                if conn.buf.is_empty() {
                    conn.buf = BytesMut::new();
                    buf_charge = MemoryCharge::none();
                }
                let want = conn.buf.len() + additional;
                let charge = match memory.try_acquire(want) {
                    Some(c) => c,
                    None => tokio::select! {
                        biased;
                        _ = shutdown.wait() => break End::Clean,
                        c = memory.acquire(buf_charge.bytes(), want, &metrics.source) => c,
                    },
                };
                crate::net::grow(&mut conn.buf, additional);
                // the old allocation's charge went with its batches; what
                // was left of it (the message begun) is in the new one
                buf_charge = charge;
            }
            let room = (conn.buf.capacity() - conn.buf.len()).min(READ_CHUNK);
            // the room this pass asked the socket for
            let mut asked = room;
            // read what has arrived; if nothing has and no message is begun,
            // let go of the buffer and wait for the client with a small
            // read: an idle connection holds no budget
            let polled = {
                let mut room = (&mut conn.buf).limit(room);
                tokio::select! {
                    biased;
                    read = stream.read_buf(&mut room) => Some(read),
                    _ = std::future::ready(()) => None,
                }
            };
            let read = match polled {
                Some(read) => Some(Ok(read)),
                None => {
                    let mut limit = room;
                    // a begun message waits for the client, not for a sink
                    let _partial =
                        (!conn.buf.is_empty()).then(|| memory.waiting_on_input(buf_charge.bytes()));
                    // with nothing begun (nor queued), closing the
                    // connection loses nothing: the listener may, to admit
                    // a new one
                    let idle = (conn.buf.is_empty() && !unread).then(|| activity.idle());
                    if conn.buf.is_empty() {
                        conn.buf = BytesMut::new();
                        buf_charge = MemoryCharge::none();
                        // an uncharged allocation of a few bytes
                        limit = if first_bytes { 2 } else { 1 };
                    }
                    asked = limit;
                    let mut room = (&mut conn.buf).limit(limit);
                    // what a linger gathered is there to read: a stop reads
                    // it too (the wait is the runtime's learning of it)
                    let grace = if std::mem::take(&mut unread) {
                        STOP_READ_GRACE
                    } else {
                        Duration::ZERO
                    };
                    let stopped = async {
                        shutdown.wait().await;
                        if !grace.is_zero() {
                            tokio::time::sleep(grace).await;
                        }
                    };
                    let read = tokio::select! {
                        biased;
                        _ = stopped => None,
                        _ = activity.evicted(), if idle.is_some() => break End::Evicted,
                        read = tokio::time::timeout(config.idle_timeout, stream.read_buf(&mut room)) => Some(read),
                    };
                    // evicted as the read came in: hand over what it read, then close
                    evicted = idle.is_some_and(|idle| !idle.end());
                    read
                }
            };
            // a read that did not fill its room took all there was
            let caught_up = matches!(read, Some(Ok(Ok(n))) if n < asked);
            match read {
                None | Some(Ok(Ok(0))) => break End::Clean,
                Some(Err(_)) => {
                    break End::Error(
                        "idle_timeout",
                        format!("no data for {:?}", config.idle_timeout),
                    )
                }
                Some(Ok(Err(e))) => break End::Error("io", e.to_string()),
                Some(Ok(Ok(_))) if first_bytes && looks_like_tls(&conn.buf) => {
                    break End::Error(
                        "tls_on_plain_port",
                        "TLS handshake on a plain port: the client uses TLS, this source has no [tls] settings".into(),
                    )
                }
                Some(Ok(Ok(_))) => first_bytes = first_bytes && conn.buf.len() < 2,
            }
            if let Some(taken) = conn.take_batch(false) {
                if let Err(e) = hand_over(
                    taken,
                    &mut buf_charge,
                    conn.buf.capacity(),
                    &mut router,
                    &mut shutdown,
                    &settings,
                    &metrics,
                    peer,
                )
                .await
                {
                    break End::Error("sink_stopped", e);
                }
            }
            if let Some(reason) = conn.broken.take() {
                break End::Error("framing", reason);
            }
            if evicted {
                break End::Evicted;
            }
            if caught_up {
                // let the client's next lines gather. The connection is not
                // idle meanwhile (it was sent something within a linger):
                // the client's next lines may already wait in the socket,
                // unread, and closing it to admit a new one would lose them
                // a reload may have added or removed a disk buffer
                linger.set_period(setting.period(router.disk_buffered()));
                linger.caught_up();
                let lingers = linger.until().is_some();
                match linger
                    .gather_in_socket(&mut queue, &mut stream, &mut conn.buf, shutdown.wait())
                    .await
                {
                    Woke::Ended => unread = lingers && queue.queued() > 0,
                    // a bulk's worth has come: read on
                    Woke::Client(Ok(1..)) => {}
                    Woke::Client(Ok(0)) => break End::Clean,
                    Woke::Client(Err(e)) => break End::Error("io", e.to_string()),
                }
            }
        };
        match &end {
            End::Error(kind, reason) => metrics.connection_error(peer, kind, reason),
            End::Evicted => {
                tracing::debug!(source = %metrics.source, %peer, "idle connection closed to admit a new one")
            }
            End::Clean => {}
        }
        // what was read is handed over, however the connection ended
        if let Some(taken) = conn.take_batch(true) {
            let _ = hand_over(
                taken,
                &mut buf_charge,
                conn.buf.capacity(),
                &mut router,
                &mut shutdown,
                &settings,
                &metrics,
                peer,
            )
            .await;
        }
        if !conn.buf.is_empty() {
            metrics.connection_error(
                peer,
                "truncated",
                &format!(
                    "connection ended inside a message ({} bytes dropped): an unfinished octet-counted frame",
                    conn.buf.len()
                ),
            );
        }
        tracing::debug!(source = %metrics.source, %peer, "connection closed");
    }
}

/// How much room a new read buffer needs, if the current one has too
/// little left. A batch of lines keeps the allocation it was read into
/// alive until every sink is done with it, so small reads (a client
/// writing a line at a time) fill one allocation until little room is
/// left, instead of each pinning a fresh `READ_CHUNK`; a long partial line
/// grows the buffer geometrically.
fn growth(buf: &BytesMut) -> Option<usize> {
    (buf.capacity() - buf.len() < READ_CHUNK / 4).then(|| READ_CHUNK.max(buf.len()))
}

/// Routes one batch, charged to the memory budget: the read buffer's
/// charge keeps what its allocation still has room for (`room`, the
/// buffer's capacity now); a batch sliced out of it takes the rest along,
/// a copied one is charged its own bytes instead. Once the stop signal is
/// given, waits at most [`HANDOVER_TIMEOUT`] for queue room.
#[allow(clippy::too_many_arguments)]
async fn hand_over(
    (batch, sliced): (Batch, bool),
    buf_charge: &mut MemoryCharge,
    room: usize,
    router: &mut Router,
    shutdown: &mut Shutdown,
    settings: &Settings,
    metrics: &TcpMetrics,
    peer: SocketAddr,
) -> Result<(), String> {
    let count = batch.count;
    metrics.records.add(count as u64);
    metrics.bytes.add(batch.byte_len() as u64);
    let mut stopping = shutdown.clone();
    let deadline = async move {
        stopping.wait().await;
        tokio::time::sleep(HANDOVER_TIMEOUT).await;
    };
    // the records wait for budget like for queue room
    let consumed = buf_charge.split(buf_charge.bytes().saturating_sub(room));
    let charged = async {
        let charge = if sliced {
            consumed
        } else {
            drop(consumed);
            // the message begun in the buffer is held while waiting
            settings
                .memory
                .acquire(buf_charge.bytes(), batch.byte_len(), &metrics.source)
                .await
        };
        router.route(batch.with_memory(charge)).await
    };
    tokio::select! {
        routed = charged => routed.map_err(|e| e.to_string()),
        _ = deadline => {
            metrics.connection_error(peer, "shutdown_timeout", &format!(
                "no queue room within {HANDOVER_TIMEOUT:?} of the stop signal: {count} records read from this connection are lost"));
            Err("stopping".into())
        }
    }
}

/// A connection's read buffer and framing state.
struct Framed {
    buf: BytesMut,
    framer: Framer,
    settings: Arc<Settings>,
    metrics: Arc<TcpMetrics>,
    peer: SocketAddr,
    /// Why framing broke off (an invalid octet count): the connection
    /// closes once what came before is handed over.
    broken: Option<String>,
    /// Framing broke off (reported once, in `broken`).
    was_broken: bool,
}

impl Framed {
    /// An invalid octet count at `pos`: the rest of the buffer is dropped
    /// (returns the new position, its end) and the connection closes.
    fn invalid(&mut self, pos: usize, header: usize) -> usize {
        if std::mem::replace(&mut self.was_broken, true) {
            return self.buf.len();
        }
        let count = String::from_utf8_lossy(&self.buf[pos..pos + header - 1]).into_owned();
        self.broken = Some(format!(
            "octet count {count:?} is not a frame length (RFC 6587: 1 to 9999999999, no leading zero): \
             where the frame ends is unknown, so the connection is closed ({} bytes after the count dropped)",
            self.buf.len() - pos - header
        ));
        self.buf.len()
    }

    /// Frames the complete messages in the buffer (and, if `last`, an
    /// unterminated last line) into one batch, saying whether it is a
    /// slice of the read buffer (true) or a copy.
    fn take_batch(&mut self, last: bool) -> Option<(Batch, bool)> {
        let (records, count, sliced) = if self.settings.config.plain_lines() {
            self.take_lines(last)
        } else {
            let (records, count) = self.take_entries(last);
            (records, count, false)
        };
        (count > 0).then(|| {
            (
                Batch::new(self.settings.tag.clone(), records, count),
                sliced,
            )
        })
    }

    /// Raw newline-delimited lines: handed on as the received bytes where
    /// they are already `line\n` lines back to back (no `\r`, no empty or
    /// over-long line in between), else copied without those.
    fn take_lines(&mut self, last: bool) -> (Records, usize, bool) {
        let time = EventTime::now();
        let (mut pos, mut front, mut clean_end, mut count) = (0, 0, 0, 0);
        let mut copy: Option<Vec<u8>> = None;
        loop {
            match self.framer.step(&self.buf[pos..]) {
                Step::Message {
                    consumed,
                    start,
                    end,
                } => {
                    if copy.is_none() && pos == clean_end && start == 0 && end + 1 == consumed {
                        clean_end += consumed;
                    } else {
                        let c = copy.get_or_insert_with(|| self.buf[front..clean_end].to_vec());
                        c.extend_from_slice(&self.buf[pos + start..pos + end]);
                        c.push(b'\n');
                    }
                    count += 1;
                    pos += consumed;
                }
                step @ (Step::Skip { consumed } | Step::TooLong { consumed, .. }) => {
                    if let Step::TooLong { len, .. } = step {
                        let reason = too_long(len, &self.settings.config);
                        self.metrics.message_error(self.peer, "too_long", &reason);
                    }
                    if copy.is_none() && pos == clean_end && count == 0 {
                        front += consumed;
                        clean_end = front;
                    }
                    pos += consumed;
                }
                Step::Invalid { header } => {
                    pos = self.invalid(pos, header);
                    break;
                }
                Step::NeedMore => break,
            }
        }
        if last {
            if let Some((start, end)) = self.framer.last_line(&self.buf[pos..]) {
                let c = copy.get_or_insert_with(|| self.buf[front..clean_end].to_vec());
                c.extend_from_slice(&self.buf[pos + start..pos + end]);
                c.push(b'\n');
                count += 1;
                pos = self.buf.len();
            }
        }
        let sliced = copy.is_none();
        let data = match copy {
            Some(c) => {
                self.buf.advance(pos);
                Bytes::from(c)
            }
            None => {
                self.buf.advance(front);
                let data = self.buf.split_to(clean_end - front).freeze();
                self.buf.advance(pos - clean_end);
                data
            }
        };
        (Records::Lines { data, time }, count, sliced)
    }

    /// Any other format, framing or parser: one msgpack entry per message.
    fn take_entries(&mut self, last: bool) -> (Records, usize) {
        let now = EventTime::now();
        let clock = syslog::Clock::new(now);
        let mut out = Vec::new();
        let (mut pos, mut count) = (0, 0);
        loop {
            match self.framer.step(&self.buf[pos..]) {
                Step::Message {
                    consumed,
                    start,
                    end,
                } => {
                    self.encode(&mut out, &clock, pos + start, pos + end);
                    count += 1;
                    pos += consumed;
                }
                Step::Skip { consumed } => pos += consumed,
                Step::TooLong { consumed, len } => {
                    self.metrics.message_error(
                        self.peer,
                        "too_long",
                        &too_long(len, &self.settings.config),
                    );
                    pos += consumed;
                }
                Step::Invalid { header } => {
                    pos = self.invalid(pos, header);
                    break;
                }
                Step::NeedMore => break,
            }
        }
        if last {
            if let Some((start, end)) = self.framer.last_line(&self.buf[pos..]) {
                self.encode(&mut out, &clock, pos + start, pos + end);
                count += 1;
                pos = self.buf.len();
            }
        }
        self.buf.advance(pos);
        (Records::Entries(out.into()), count)
    }

    fn encode(&self, out: &mut Vec<u8>, clock: &syslog::Clock, start: usize, end: usize) {
        let config = &self.settings.config;
        let msg = &self.buf[start..end];
        if let Err(e) = encode::record(out, clock, msg, config.format, config.parser) {
            self.metrics
                .message_error(self.peer, e.kind(), &e.to_string());
        }
    }
}

fn too_long(len: usize, config: &TcpSourceConfig) -> String {
    format!(
        "message of {len}+ bytes is longer than max_line_bytes ({}); dropped (raise max_line_bytes to keep such messages)",
        config.max_line_bytes
    )
}

/// True if `buf` starts like a TLS ClientHello (record type 0x16, version
/// 3.x).
fn looks_like_tls(buf: &[u8]) -> bool {
    buf.len() >= 2 && buf[0] == 0x16 && buf[1] == 0x03
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(extra: &str) -> Framed {
        let config: TcpSourceConfig = toml::from_str(&format!(
            "address = \"127.0.0.1:0\"\nmax_line_bytes = 8\n{extra}"
        ))
        .unwrap();
        let metrics = Arc::new(TcpMetrics::new(&crate::metrics::Registry::new(), "in"));
        Framed {
            buf: BytesMut::new(),
            framer: Framer::new(config.framing, config.max_line_bytes),
            settings: Arc::new(Settings {
                tag: "t".into(),
                config,
                tls: None,
                memory: crate::memory::MemoryBudget::unlimited(),
                metrics: metrics.clone(),
            }),
            metrics,
            peer: "127.0.0.1:1".parse().unwrap(),
            broken: None,
            was_broken: false,
        }
    }

    fn lines(f: &mut Framed, input: &[u8], last: bool) -> (Bytes, usize, bool) {
        f.buf.extend_from_slice(input);
        let start = f.buf.as_ptr() as usize;
        let Some((batch, sliced)) = f.take_batch(last) else {
            return (Bytes::new(), 0, false);
        };
        let Records::Lines { data, .. } = batch.records else {
            panic!("raw newline lines are Records::Lines")
        };
        let at = data.as_ptr() as usize;
        // zero copy: the batch points into the read buffer
        let shared = at >= start && at < start + input.len();
        assert_eq!(shared, sliced, "take_batch says whether it sliced");
        (data, batch.count, shared)
    }

    #[test]
    fn clean_lines_are_handed_on_without_a_copy() {
        let mut f = framed("");
        let (data, n, shared) = lines(&mut f, b"one\ntwo\nthr", false);
        assert_eq!((&data[..], n, shared), (&b"one\ntwo\n"[..], 2, true));
        assert_eq!(&f.buf[..], b"thr");
        // an over-long line before clean ones is skipped, still no copy
        let (data, n, shared) = lines(&mut f, b"eeeeeeeeee\nfour\nfive\n", false);
        assert_eq!((&data[..], n, shared), (&b"four\nfive\n"[..], 2, true));
        assert!(f.buf.is_empty());
    }

    #[test]
    fn small_reads_share_one_allocation() {
        let mut f = framed("");
        let mut first = None;
        let mut held = Vec::new();
        for _ in 0..1000 {
            if let Some(additional) = growth(&f.buf) {
                crate::net::grow(&mut f.buf, additional);
            }
            let (data, n, _) = lines(&mut f, b"ab\n", false);
            assert_eq!(n, 1);
            let at = data.as_ptr() as usize;
            let first = *first.get_or_insert(at);
            // 1000 lines of 3 bytes fit in the first allocation
            assert!(
                at >= first && at < first + READ_CHUNK,
                "a new allocation per read"
            );
            // as a slow sink would
            held.push(data);
        }
    }

    #[test]
    fn crlf_empty_and_over_long_lines_in_between_are_copied_out() {
        let mut f = framed("");
        let (data, n, shared) = lines(&mut f, b"a\r\nb\n\nccccccccccc\nd\n", false);
        assert_eq!((&data[..], n, shared), (&b"a\nb\nd\n"[..], 3, false));
        // at the end, an unterminated last line is a line too
        let (data, n, _) = lines(&mut f, b"e\nlast", true);
        assert_eq!((&data[..], n), (&b"e\nlast\n"[..], 2));
        assert!(f.buf.is_empty());
    }

    #[test]
    fn other_settings_make_entries() {
        let mut f = framed("framing = \"octet_counting\"\nparser = \"syslog\"");
        f.buf.extend_from_slice(b"7 <13>1 -4 <1>x3 <1");
        let (batch, sliced) = f.take_batch(true).unwrap();
        assert!(!sliced);
        assert_eq!(batch.count, 2);
        assert!(matches!(batch.records, Records::Entries(_)));
        // the unfinished frame stays, for the connection to count
        assert_eq!(&f.buf[..], b"3 <1");
    }

    #[test]
    fn an_invalid_octet_count_ends_the_batch_and_breaks_the_connection_off() {
        let mut f = framed("framing = \"octet_counting\"");
        f.buf.extend_from_slice(b"3 one3 two0 3 six3 ten");
        let (batch, _) = f.take_batch(false).unwrap();
        assert_eq!(batch.count, 2, "the messages before the bad count are kept");
        let reason = f.broken.take().expect("framing broke off");
        assert!(
            reason.contains("octet count \"0\"") && reason.contains("10 bytes"),
            "{reason}"
        );
        assert!(
            f.buf.is_empty(),
            "the rest is dropped, not counted as truncated"
        );
        // nothing more comes out of this connection
        f.buf.extend_from_slice(b"3 abc");
        assert!(f.take_batch(true).is_none());
    }
}
