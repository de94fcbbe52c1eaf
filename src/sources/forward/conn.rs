//! One forward-protocol connection.
//!
//! The reader decodes frames and routes each as one batch; routing waits
//! while a sink queue is full, and while it waits nothing more is read from
//! the socket, so TCP flow control pushes back on the sender. Acks are
//! written by a separate writer task as sinks accept chunks, possibly out
//! of order (chunk ids make that safe). When the reader ends (EOF, error or
//! shutdown) the writer lives on until every routed chunk has been settled,
//! so a client waiting for its last acks gets them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

use super::read_plan::{next_read_chunk, plan_read, unpin_head, FRAME_TAIL, READ_CHUNK_MIN};
use super::ForwardMetrics;
use crate::ack::{AckHandle, AckOutcome};
use crate::component::Shutdown;
use crate::event::{Batch, Records};
use crate::memory::{MemoryBudget, SharedCharge};
use crate::net::{accept_tls, read_value, Activity, Stream};
use crate::protocol::forward::handshake::{self, Helo, ServerAuth};
use crate::protocol::forward::{ack_response, next_frame, Frame, FrameError, Limits, Mode, Scan};
use crate::router::Router;
use crate::sources::linger::{Linger, SocketLinger, Woke, STOP_READ_GRACE};

/// Most acks of one connection waiting to be written.
const MAX_PENDING_ACKS: usize = 4096;

/// An ack to write, holding its slot among the connection's pending acks.
type PendingAck = (Vec<u8>, OwnedSemaphorePermit);

/// Largest PING accepted.
const MAX_PING_BYTES: usize = 64 * 1024;

/// Largest new read buffer (beyond the frame begun) while the memory
/// budget is contended.
const READ_CHUNK_CONTENDED: usize = 128 * 1024;

/// How long a closing connection waits for the acks of chunks it routed.
/// At shutdown the sinks settle or reject everything within their
/// `drain_timeout`, which ends the wait sooner.
const ACK_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest an ack write may take (less with a shorter `idle_timeout`): a
/// client that does not read its acks is disconnected, not waited for.
const ACK_WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// At shutdown, how long an ack write may still take.
const ACK_WRITE_TIMEOUT_STOPPING: Duration = Duration::from_secs(1);

/// Settings shared by every connection of one source: the forward
/// protocol of the shared listener (see `super`).
pub struct Settings {
    /// Frame, chunk and buffer sizes.
    pub limits: Limits,
    /// Silence after which a connection is closed.
    pub idle_timeout: Duration,
    /// How long a frequent client's chunks gather (`linger`).
    pub linger: SocketLinger,
    /// The source's name, for logs.
    pub source: Arc<str>,
    /// The handshake of the `tls` table, if there is one.
    pub tls: Option<TlsAcceptor>,
    /// The shared-key handshake (`shared_key`, `users`), if required.
    pub auth: Option<ServerAuth>,
    /// `max_connections`, for the warning when it is reached.
    pub max_connections: usize,
    /// The budget each connection's read buffer and batches draw on.
    pub memory: MemoryBudget,
    /// The source's counters.
    pub metrics: Arc<super::ForwardMetrics>,
}

pub(super) struct Connection {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub settings: Arc<Settings>,
    pub metrics: Arc<ForwardMetrics>,
    pub router: Router,
    pub shutdown: Shutdown,
    pub memory: MemoryBudget,
    /// Marks the TLS handshake idle (see `crate::net::accept_tls`).
    pub activity: Arc<Activity>,
}

/// Why the reader stopped.
enum End {
    /// EOF, or shutdown: not an error.
    Clean,
    Frame(FrameError),
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
            memory,
            activity,
        } = self;
        let _ = stream.set_nodelay(true);
        let mut queue = crate::net::ReceiveQueue::of(&stream);
        tracing::debug!(source = %settings.source, %peer, "connection opened");
        let tls = settings.tls.as_ref();
        let stream = match accept_tls(stream, tls, settings.idle_timeout, &activity).await {
            Ok(stream) => stream,
            Err(e) => return metrics.connection_error(peer, "tls", &e.to_string()),
        };
        let (mut rd, mut wr) = tokio::io::split(stream);
        // allocated (and charged) before the first read
        let mut buf = BytesMut::new();
        let mut read_chunk = READ_CHUNK_MIN;
        // the budget's charge for `buf`'s allocation, shared with every
        // frame cut from it
        let mut buf_charge = SharedCharge::default();
        if let Some(auth) = &settings.auth {
            let result = tokio::time::timeout(
                settings.idle_timeout,
                authenticate(auth, &mut rd, &mut wr, &mut buf),
            )
            .await;
            match result {
                Ok(Ok(client)) => {
                    tracing::debug!(source = %settings.source, %peer, client, "client authenticated")
                }
                Ok(Err(reason)) => return metrics.connection_error(peer, "auth", &reason),
                Err(_) => return metrics.connection_error(peer, "auth", "handshake timed out"),
            }
        }
        let (ack_tx, ack_rx) = mpsc::unbounded_channel();
        let ack_slots = Arc::new(Semaphore::new(MAX_PENDING_ACKS));
        let writer = tokio::spawn(write_acks(
            wr,
            ack_rx,
            settings.idle_timeout.min(ACK_WRITE_TIMEOUT),
            shutdown.clone(),
            metrics.clone(),
        ));

        let mut scan = Scan::default();
        let mut typical_frame = 0usize;
        // a frequent client's chunks gather for the linger (see
        // `crate::sources::linger`); `gathering` while they do
        let mut gather = Linger::new(Duration::ZERO);
        let mut gathering = false;
        // bytes read since the last linger began (or the client woke the
        // connection), and the frames they held
        let mut gathered = 0usize;
        let mut frames = 0usize;
        // the client has asked for an ack (it may wait for each one), or
        // sent in bulk (it must not wait for room): the connection never
        // lingers again
        let mut read_at_once = false;
        // checked once, on the first bytes of a plain connection
        let mut first_bytes = settings.tls.is_none();
        let end = 'conn: loop {
            // the TLS check needs the first two bytes before any parsing
            while !(first_bytes && buf.len() < 2) {
                let before = buf.len();
                match next_frame(&mut buf, &settings.limits, &mut scan) {
                    Ok(Some(frame)) => {
                        typical_frame = before - buf.len();
                        frames += 1;
                        if frame.options.chunk.is_some() && !read_at_once {
                            read_at_once = true;
                            gathering = false;
                            gather.stop();
                            queue.set_low_water(1);
                        }
                        // a full queue (or budget) blocks here; a stop signal
                        // must not wait for room (the frame is then not
                        // acknowledged)
                        let routed = async {
                            let charge = if frame.mode == Mode::CompressedPackedForward {
                                // inflated into an allocation of its own
                                let n = frame.entries.len();
                                memory
                                    .acquire(buf_charge.bytes(), n, &settings.source)
                                    .await
                                    .shared()
                            } else {
                                // a slice of the read buffer: charged with it,
                                // until every frame cut from it is settled
                                buf_charge.clone()
                            };
                            route(frame, charge, &mut router, &ack_tx, &ack_slots, &metrics).await
                        };
                        tokio::select! {
                            biased;
                            routed = routed => {
                                if let Err(e) = routed {
                                    break 'conn End::Error("sink_stopped", e.to_string());
                                }
                            }
                            _ = shutdown.wait() => break 'conn End::Clean,
                        }
                    }
                    Ok(None) => break,
                    Err(e) if e.is_fatal() => break 'conn End::Frame(e),
                    Err(e) => metrics.frame_error(peer, &e),
                }
            }
            if gathering && buf.is_empty() && gather.until().is_some() {
                // nothing is held while the client's chunks gather in the
                // socket, and they wake no thread until a bulk's worth has
                // come (or the client closes): then the linger ends at once.
                // A stop ends it too, and what gathered is read
                buf = BytesMut::new();
                buf_charge = SharedCharge::default();
                let stop = async {
                    tokio::select! {
                        _ = shutdown.wait() => {}
                        _ = ack_tx.closed() => {}
                    }
                };
                match gather
                    .gather_in_socket(&mut queue, &mut rd, &mut buf, stop)
                    .await
                {
                    Woke::Ended => {}
                    Woke::Client(Ok(0)) => break End::Clean,
                    Woke::Client(Ok(n)) => {
                        gathered += n;
                        gathering = false;
                        read_at_once = true;
                        continue;
                    }
                    Woke::Client(Err(e)) => break End::Error("io", e.to_string()),
                }
            }
            let plan = plan_read(&buf, scan.needed(), typical_frame, read_chunk);
            if let Some(mut additional) = plan.grow {
                // a new read buffer is charged before it is allocated: with
                // the budget used up, reading stops here and TCP pushes back
                // on the client. Bytes of a frame begun in the old buffer
                // are held while waiting (see crate::memory).
                if buf.is_empty() {
                    // nothing in it is needed: let it go before waiting
                    buf = BytesMut::new();
                    buf_charge = SharedCharge::default();
                } else if unpin_head(&mut buf, buf_charge.bytes()) {
                    // the frames cut from the old buffer release it once
                    // written, whether or not this connection waits
                    buf_charge = SharedCharge::default();
                }
                let charge = match memory.try_acquire(buf.len() + additional) {
                    Some(c) => Some(c),
                    None => {
                        // the budget is contended: a buffer just large enough
                        // for the frame begun, so that the budget holds
                        // records on their way to the sinks, not the spare
                        // room of many large read buffers
                        let rest = scan.needed().saturating_sub(buf.len());
                        additional = additional.min(rest.max(READ_CHUNK_CONTENDED));
                        read_chunk = read_chunk.min(READ_CHUNK_CONTENDED);
                        let held = buf_charge.bytes();
                        tokio::select! {
                            biased;
                            _ = shutdown.wait() => None,
                            _ = ack_tx.closed() => None,
                            c = memory.acquire(held, buf.len() + additional, &settings.source) => Some(c),
                        }
                    }
                };
                let Some(charge) = charge else {
                    break End::Clean;
                };
                crate::net::grow(&mut buf, additional);
                // the old buffer's charge stays with the frames cut from it
                buf_charge = charge.shared();
            }
            let spare = buf.capacity() - buf.len();
            let room_before = spare.min(plan.limit);
            // read what has arrived; if nothing has and the buffer holds no
            // partial frame, let go of the buffer and wait for the client
            // with a small read: an idle connection holds no budget
            let polled = {
                let mut room = (&mut buf).limit(room_before);
                tokio::select! {
                    biased;
                    read = rd.read_buf(&mut room) => Some(read),
                    _ = std::future::ready(()) => None,
                }
            };
            let full_read = polled.is_some();
            if polled.is_none() && gathering {
                // the runtime learns of what gathered only once the
                // low-water mark is back at 1 (the linger's end set it);
                // the kernel says whether anything did
                let queued = queue.queued();
                if queued == 0 && gathered > 0 {
                    // read all that gathered: the next chunks gather, if
                    // the client still writes often (an upstream that
                    // lingers itself sends a chunk or a few each of its
                    // lingers) and no reload has added a disk buffer since
                    gathered = 0;
                    if gather.goes_on(std::mem::take(&mut frames)) {
                        gather.set_period(settings.linger.period(router.disk_buffered()));
                        gather.caught_up();
                    } else {
                        gather.stop();
                    }
                    gathering = gather.is_quiet();
                    continue 'conn;
                }
                if queued == 0 {
                    // nothing gathered in a whole linger: the client
                    // paused; read its next chunk as it arrives
                    gathering = false;
                }
            }
            let read = match polled {
                Some(read) => Some(Ok(read)),
                // what gathered is queued: this read does not wait for the
                // client
                None if gathering => {
                    let mut room = (&mut buf).limit(room_before.max(1));
                    // a stop reads it too (it is there to read: the wait is
                    // the runtime's, unless TLS needs the rest of a record)
                    let stopped = async {
                        shutdown.wait().await;
                        tokio::time::sleep(STOP_READ_GRACE).await;
                    };
                    tokio::select! {
                        biased;
                        read = tokio::time::timeout(settings.idle_timeout, rd.read_buf(&mut room)) => Some(read),
                        _ = ack_tx.closed() => None,
                        _ = stopped => None,
                    }
                }
                None => {
                    let mut limit = room_before;
                    if unpin_head(&mut buf, buf_charge.bytes()) {
                        // the head alone waits; it grows by a small
                        // uncharged read (the frame's buffer comes once
                        // the head tells its size)
                        buf_charge = SharedCharge::default();
                        limit = FRAME_TAIL;
                    }
                    // a partial frame waits for the client, not for a sink
                    let _partial =
                        (!buf.is_empty()).then(|| memory.waiting_on_input(buf_charge.bytes()));
                    if buf.is_empty() {
                        buf = BytesMut::new();
                        buf_charge = SharedCharge::default();
                        // an uncharged allocation of a few bytes
                        limit = if first_bytes { 2 } else { 1 };
                    }
                    let mut room = (&mut buf).limit(limit);
                    let read = tokio::select! {
                        biased;
                        _ = shutdown.wait() => None,
                        // the ack writer gave up on this client (it says why)
                        _ = ack_tx.closed() => None,
                        read = tokio::time::timeout(settings.idle_timeout, rd.read_buf(&mut room)) => Some(read),
                    };
                    if matches!(read, Some(Ok(Ok(1..)))) && !read_at_once && {
                        // a reload may have added or removed a disk buffer
                        gather.set_period(settings.linger.period(router.disk_buffered()));
                        gather.woken()
                    } {
                        gathering = true;
                        gathered = 0;
                        frames = 0;
                    }
                    read
                }
            };
            match read {
                None => break End::Clean,
                Some(Err(_)) => {
                    break End::Error(
                        "idle_timeout",
                        format!("no data for {:?}", settings.idle_timeout),
                    )
                }
                Some(Ok(Ok(0))) if buf.is_empty() => break End::Clean,
                Some(Ok(Ok(0))) => {
                    break End::Error(
                        "truncated",
                        format!(
                            "peer closed the connection inside a frame ({} bytes unread)",
                            buf.len()
                        ),
                    )
                }
                Some(Ok(Ok(_))) if first_bytes && looks_like_tls(&buf) => {
                    break End::Error("tls_on_plain_port", TLS_ON_PLAIN_PORT.into())
                }
                Some(Ok(Ok(n))) => {
                    gathered += n;
                    first_bytes = first_bytes && buf.len() < 2;
                    if full_read {
                        let limited = plan.limit < spare;
                        read_chunk = next_read_chunk(read_chunk, n, room_before, limited);
                    }
                }
                Some(Ok(Err(e))) => break End::Error("io", e.to_string()),
            }
        };
        match &end {
            End::Clean => tracing::debug!(source = %settings.source, %peer, "connection closed"),
            End::Frame(e) => metrics.frame_error(peer, e),
            End::Error(kind, reason) => metrics.connection_error(peer, kind, reason),
        }
        // the writer finishes once every routed chunk is settled
        drop(ack_tx);
        drop(router);
        let mut writer = AbortOnDrop(writer);
        match tokio::time::timeout(ACK_DRAIN_TIMEOUT, &mut writer.0).await {
            Ok(Ok(Ok(()))) => linger(&mut rd).await,
            Ok(Ok(Err((kind, reason)))) => metrics.connection_error(peer, kind, &reason),
            Ok(Err(_)) => {}
            Err(_) => metrics.connection_error(
                peer,
                "ack_wait_timeout",
                &format!("sinks did not settle this connection's chunks within {ACK_DRAIN_TIMEOUT:?}; they are not acknowledged"),
            ),
        }
    }
}

/// Routes one decoded frame as one batch, attaching an ack if asked for.
async fn route(
    frame: Frame,
    charge: SharedCharge,
    router: &mut Router,
    acks: &mpsc::UnboundedSender<PendingAck>,
    ack_slots: &Arc<Semaphore>,
    metrics: &Arc<ForwardMetrics>,
) -> Result<(), crate::buffer::SendError> {
    metrics.records.add(frame.count as u64);
    metrics.bytes.add(frame.entries.len() as u64);
    let ack = match frame.options.chunk {
        Some(chunk) => {
            // a client that never reads its acks stops being read once
            // MAX_PENDING_ACKS of them wait: their memory stays bounded
            let slot = ack_slots
                .clone()
                .acquire_owned()
                .await
                .expect("never closed");
            let acks = acks.clone();
            let metrics = metrics.clone();
            let ack = AckHandle::new(move |outcome| match outcome {
                // records set aside for good are logged and counted by
                // their sink; resending them cannot help
                AckOutcome::Accepted | AckOutcome::Refused(_) => {
                    let _ = acks.send((ack_response(&chunk), slot));
                }
                AckOutcome::Rejected => metrics.acks_withheld.inc(),
            });
            // the client waits for this ack (out_forward's
            // `require_ack_response`): sinks send the chunk without lingering
            ack.mark_waited_on();
            ack
        }
        None => AckHandle::none(),
    };
    if frame.count == 0 {
        // nothing to deliver: dropping the handle acknowledges at once
        return Ok(());
    }
    let batch = Batch::new(
        frame.tag.into(),
        Records::Entries(frame.entries),
        frame.count,
    )
    .with_ack(ack)
    .with_shared_memory(charge);
    router.route(batch).await
}

/// True if `buf` starts like a TLS ClientHello (record type 0x16, version
/// 3.x), which a plain port would otherwise misread as msgpack.
fn looks_like_tls(buf: &[u8]) -> bool {
    buf.len() >= 2 && buf[0] == 0x16 && buf[1] == 0x03
}

const TLS_ON_PLAIN_PORT: &str =
    "TLS handshake on a plain port: the client uses TLS, this source has no [tls] settings";

/// The server side of the shared-key handshake: HELO, then PING, then
/// PONG. Returns the client's host name; on failure the client has been sent
/// a PONG with the reason.
async fn authenticate(
    auth: &ServerAuth,
    rd: &mut ReadHalf<Box<dyn Stream>>,
    wr: &mut WriteHalf<Box<dyn Stream>>,
    buf: &mut BytesMut,
) -> Result<String, String> {
    let helo = Helo {
        nonce: handshake::random_bytes(16),
        auth_salt: if auth.users.is_empty() {
            Vec::new()
        } else {
            handshake::random_bytes(16)
        },
        keepalive: true,
    };
    let io = |e: std::io::Error| format!("handshake: {e}");
    wr.write_all(&handshake::encode_helo(&helo))
        .await
        .map_err(io)?;
    let frame = read_value(rd, buf, MAX_PING_BYTES, "PING").await?;
    let first_two: Vec<u8> = frame.iter().chain(buf.iter()).take(2).copied().collect();
    if looks_like_tls(&first_two) {
        return Err(TLS_ON_PLAIN_PORT.into());
    }
    let ping = handshake::decode_ping(&frame).map_err(|e| format!("bad PING: {e}"))?;
    let verdict = handshake::verify_ping(auth, &helo, &ping);
    wr.write_all(&handshake::encode_pong(auth, &helo, &ping, &verdict))
        .await
        .map_err(io)?;
    match verdict {
        Ok(()) => Ok(ping.hostname),
        Err(e) => {
            let _ = wr.shutdown().await;
            Err(format!(
                "authentication failed for client {:?}: {e}",
                ping.hostname
            ))
        }
    }
}

/// How long a connection that has written its last acks keeps reading
/// (and discarding) what the client still sends, before it closes.
const LINGER: Duration = Duration::from_secs(2);

/// A lingering close. Closing a socket with unread bytes in it resets the
/// connection, and a reset makes the client's system discard what it has
/// not read yet: the last acks. The client would then resend chunks that
/// were delivered. So the bytes the client sent after the stop (frames it
/// will resend, since they are not acknowledged) are read and dropped
/// until it closes, or for at most [`LINGER`].
async fn linger(rd: &mut ReadHalf<Box<dyn Stream>>) {
    // on the heap: an array here would sit in every connection's future
    // for its whole life (4 KiB each), not only while it lingers
    let mut scratch = vec![0u8; 4096];
    let _ = tokio::time::timeout(LINGER, async {
        while let Ok(n) = rd.read(&mut scratch).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

/// Aborts a task when dropped, so a connection never leaves one behind.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Why the ack writer stopped early: error kind and reason.
type WriterError = (&'static str, String);

/// Writes acks as sinks settle chunks. A write that takes longer than
/// `write_timeout` (a client that does not read its acks), or than a
/// second once the stop signal is given, ends the connection: unwritten
/// acks make the client resend, as intended.
async fn write_acks(
    mut wr: WriteHalf<Box<dyn Stream>>,
    mut rx: mpsc::UnboundedReceiver<PendingAck>,
    write_timeout: Duration,
    mut shutdown: Shutdown,
    metrics: Arc<ForwardMetrics>,
) -> Result<(), WriterError> {
    // the slots are freed once their acks are written
    let mut slots = Vec::new();
    let mut msg = Vec::new();
    while let Some((first, slot)) = rx.recv().await {
        // acks settled together go out in one write
        msg.clear();
        slots.clear();
        msg.extend_from_slice(&first);
        slots.push(slot);
        while let Ok((more, slot)) = rx.try_recv() {
            msg.extend_from_slice(&more);
            slots.push(slot);
        }
        let stopping = async {
            shutdown.wait().await;
            tokio::time::sleep(ACK_WRITE_TIMEOUT_STOPPING).await;
        };
        tokio::select! {
            r = tokio::time::timeout(write_timeout, wr.write_all(&msg)) => match r {
                Ok(Ok(())) => metrics.acks_sent.add(slots.len() as u64),
                // the peer is gone
                Ok(Err(_)) => return Ok(()),
                Err(_) => return Err(("ack_write_timeout",
                    format!("the client read no acks for {write_timeout:?}"))),
            },
            _ = stopping => return Err(("ack_write_timeout",
                "the client read no acks while stopping".into())),
        }
    }
    let _ = wr.shutdown().await;
    Ok(())
}
