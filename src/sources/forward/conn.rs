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
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::ForwardMetrics;
use crate::ack::{AckHandle, AckOutcome};
use crate::event::{Batch, Records};
use crate::protocol::forward::{ack_response, next_frame, Frame, FrameError, Limits};
use crate::router::Router;
use crate::sources::Shutdown;

/// Bytes requested from the socket per read.
const READ_CHUNK: usize = 256 * 1024;

/// How long a closing connection waits for the acks of chunks it routed.
const ACK_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings shared by every connection of one source.
pub(super) struct Settings {
    pub limits: Limits,
    pub idle_timeout: Duration,
    pub source: Arc<str>,
}

pub(super) struct Connection {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub settings: Arc<Settings>,
    pub metrics: Arc<ForwardMetrics>,
    pub router: Router,
    pub shutdown: Shutdown,
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
        } = self;
        let _ = stream.set_nodelay(true);
        tracing::debug!(source = %settings.source, %peer, "connection opened");
        let (mut rd, wr) = stream.into_split();
        let (ack_tx, ack_rx) = mpsc::unbounded_channel();
        let writer = tokio::spawn(write_acks(wr, ack_rx, metrics.clone()));

        let mut buf = BytesMut::with_capacity(READ_CHUNK);
        let mut hint = 0usize;
        let mut typical_frame = 0usize;
        let end = 'conn: loop {
            loop {
                let before = buf.len();
                match next_frame(&mut buf, &settings.limits, &mut hint) {
                    Ok(Some(frame)) => {
                        typical_frame = before - buf.len();
                        if let Err(e) = route(frame, &mut router, &ack_tx, &metrics).await {
                            break 'conn End::Error("sink_stopped", e.to_string());
                        }
                    }
                    Ok(None) => break,
                    Err(e) if e.is_fatal() => break 'conn End::Frame(e),
                    Err(e) => metrics.frame_error(peer, &e),
                }
            }
            let limit = prepare_read(&mut buf, hint, typical_frame);
            let read = {
                let mut room = (&mut buf).limit(limit);
                tokio::select! {
                    biased;
                    _ = shutdown.wait() => None,
                    read = tokio::time::timeout(settings.idle_timeout, rd.read_buf(&mut room)) => Some(read),
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
                Some(Ok(Ok(_))) => {}
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
        if tokio::time::timeout(ACK_DRAIN_TIMEOUT, writer)
            .await
            .is_err()
        {
            tracing::warn!(source = %settings.source, %peer, "gave up waiting for sinks to settle this connection's chunks");
        }
    }
}

/// Makes room in `buf` for the next read and returns how many bytes that
/// read may take. Frames leave the buffer as shared slices, so growing a
/// buffer that still holds part of a frame copies that part: the rest of a
/// large frame of known size (`hint`) gets room for all of it at once, and
/// is read no further than its end, so the next frame starts in a fresh
/// buffer instead of being copied out of this one. A new frame gets room for
/// one read, or for a whole frame as large as the last one.
fn prepare_read(buf: &mut BytesMut, hint: usize, typical_frame: usize) -> usize {
    let spare = buf.capacity() - buf.len();
    if hint > buf.len() {
        let rest = hint - buf.len();
        if spare < rest {
            grow(buf, rest);
        }
        if hint >= READ_CHUNK {
            return rest;
        }
    } else if spare < READ_CHUNK {
        // a little slack, so a frame slightly larger than the last still fits
        grow(buf, READ_CHUNK.max(typical_frame + typical_frame / 16));
    }
    usize::MAX
}

/// Gives `buf` room for `additional` more bytes in a new allocation, copying
/// only the bytes it holds. (`BytesMut::reserve` may instead reallocate the
/// whole old allocation, frames already handed on included.)
fn grow(buf: &mut BytesMut, additional: usize) {
    let mut fresh = BytesMut::with_capacity(buf.len() + additional);
    fresh.extend_from_slice(buf);
    *buf = fresh;
}

/// Routes one decoded frame as one batch, attaching an ack if asked for.
async fn route(
    frame: Frame,
    router: &mut Router,
    acks: &mpsc::UnboundedSender<Vec<u8>>,
    metrics: &Arc<ForwardMetrics>,
) -> Result<(), crate::buffer::SendError> {
    metrics.records.add(frame.count as u64);
    metrics.bytes.add(frame.entries.len() as u64);
    let ack = match frame.options.chunk {
        Some(chunk) => {
            let acks = acks.clone();
            let metrics = metrics.clone();
            AckHandle::new(move |outcome| match outcome {
                AckOutcome::Accepted => {
                    let _ = acks.send(ack_response(&chunk));
                }
                AckOutcome::Rejected => metrics.acks_withheld.inc(),
            })
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
    .with_ack(ack);
    router.route(batch).await
}

async fn write_acks(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    metrics: Arc<ForwardMetrics>,
) {
    while let Some(msg) = rx.recv().await {
        if wr.write_all(&msg).await.is_err() {
            // the peer is gone; unsent acks make it resend, as intended
            return;
        }
        metrics.acks_sent.inc();
    }
    let _ = wr.shutdown().await;
}
