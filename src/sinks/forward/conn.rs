//! One receiver: connect (TCP, TLS, shared-key handshake), send the chunks
//! the dispatcher assigns, match acks, and on any failure hand every
//! unacknowledged chunk back for resending, then reconnect with
//! exponential backoff and jitter.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use std::io::IoSlice;

use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

use super::chunk::{Chunk, Frame};
use super::config::Compress;
use super::ForwardSinkMetrics;
use crate::net::{read_value, Stream};
use crate::protocol::forward::handshake::{self, ClientAuth};
use crate::protocol::forward::parse_ack;

/// Settings every server connection of one sink shares.
pub struct Settings {
    pub sink: Arc<str>,
    pub compress: Compress,
    pub require_ack: bool,
    pub ack_timeout: Duration,
    pub max_in_flight: usize,
    /// Failed attempts after which a chunk is given up; 0: never.
    pub max_attempts: u32,
    pub connect_timeout: Duration,
    pub keepalive: Duration,
    pub reconnect_min: Duration,
    pub reconnect_max: Duration,
    pub auth: Option<ClientAuth>,
    pub tls: Option<(TlsConnector, crate::tls::ClientTlsConfig)>,
}

/// How long a finished connection waits for the server to close its side.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// After a connection failed, how long acks already sent by the server
/// may take to be read.
const LATE_ACK_WAIT: Duration = Duration::from_millis(100);

/// Largest handshake message or ack accepted from a server.
const MAX_RESPONSE: usize = 64 * 1024;

/// The dispatcher's side of one server.
pub struct Link {
    pub tx: mpsc::Sender<Chunk>,
    pub healthy: Arc<AtomicBool>,
    /// The server's first connection attempt has ended (either way).
    pub tried: Arc<AtomicBool>,
}

/// The task that serves one server.
pub struct ServerTask {
    pub address: String,
    pub settings: Arc<Settings>,
    pub rx: mpsc::Receiver<Chunk>,
    /// Chunks handed back for another attempt (anywhere).
    pub retry: mpsc::UnboundedSender<Chunk>,
    pub healthy: Arc<AtomicBool>,
    /// Set once the first connection attempt has ended.
    pub tried: Arc<AtomicBool>,
    /// Wakes the dispatcher: health changed or room freed.
    pub wake: Arc<Notify>,
    pub metrics: Arc<ForwardSinkMetrics>,
    /// Chunks this server has settled (acked, or written without acks).
    pub settled_chunks: u64,
}

/// Why a session ended.
enum End {
    /// The dispatcher is done and every chunk is settled.
    Finished,
    /// The connection failed; `blamed` is the failed-attempt count of the
    /// chunk charged with it, if one was in flight.
    Failed {
        kind: &'static str,
        reason: String,
        blamed: Option<u32>,
    },
}

impl ServerTask {
    pub async fn run(mut self) {
        let s = self.settings.clone();
        let mut backoff = s.reconnect_min;
        let mut failures = 0u32;
        loop {
            let connected = connect(&s, &self.address).await;
            if !self.tried.swap(true, Ordering::AcqRel) {
                self.wake.notify_one();
            }
            match connected {
                Ok(stream) => {
                    if failures > 0 {
                        tracing::info!(sink = %s.sink, server = %self.address, "server reachable again");
                    } else {
                        tracing::debug!(sink = %s.sink, server = %self.address, "connected");
                    }
                    failures = 0;
                    self.set_healthy(true);
                    let settled_before = self.settled_chunks;
                    let end = self.session(stream).await;
                    self.set_healthy(false);
                    match end {
                        End::Finished => return,
                        End::Failed {
                            kind,
                            reason,
                            blamed,
                        } => {
                            let delivered = self.settled_chunks > settled_before;
                            backoff = backoff_after_session(backoff, delivered, blamed, &s);
                            self.metrics.connection_error(&self.address, kind, &reason)
                        }
                    }
                }
                Err((kind, reason)) => {
                    failures += 1;
                    // log the first failure loudly, then once in a while
                    if failures == 1 || failures.is_power_of_two() {
                        self.metrics.connection_error(&self.address, kind, &reason);
                    } else {
                        self.metrics.count_connection_error(&self.address, kind);
                    }
                }
            }
            // anything assigned to this server while it is down goes elsewhere
            let pause = tokio::time::sleep(jitter(backoff));
            tokio::pin!(pause);
            loop {
                tokio::select! {
                    _ = &mut pause => break,
                    c = self.rx.recv() => match c {
                        Some(c) => self.hand_back(c),
                        None => return,
                    },
                }
            }
            backoff = (backoff * 2).min(s.reconnect_max);
        }
    }

    fn set_healthy(&self, up: bool) {
        if up {
            self.metrics.connected.inc();
        } else {
            self.metrics.connected.dec();
        }
        self.healthy.store(up, Ordering::Release);
        self.wake.notify_one();
    }

    fn hand_back(&self, c: Chunk) {
        let Some(c) = self.metrics.failed(c, self.settings.max_attempts) else {
            return;
        };
        self.metrics.resent_chunks.inc();
        // if the dispatcher is gone, dropping the chunk rejects its records
        let _ = self.retry.send(c);
        self.wake.notify_one();
    }

    /// Sends chunks until the connection fails or the dispatcher is done.
    ///
    /// A failed connection is charged as one failed attempt to one chunk:
    /// the oldest it had sent and not settled (a receiver reads frames in
    /// order and acks what came before, so that is the one it choked on),
    /// or else the one being written. The others go back uncharged, so a
    /// chunk the receiver refuses does not use up its neighbours' attempts.
    async fn session(&mut self, stream: Box<dyn Stream>) -> End {
        let s = self.settings.clone();
        let (rd, wr) = tokio::io::split(stream);
        let (ack_tx, mut acks) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_acks(rd, ack_tx));
        let _abort_reader = AbortOnDrop(reader);
        let mut wr = wr;
        let mut in_flight: HashMap<String, (Chunk, Instant, u64)> = HashMap::new();
        let mut sent = 0u64;
        let mut failed_write: Option<Chunk> = None;
        let mut dispatcher_done = false;
        let end = loop {
            if dispatcher_done && in_flight.is_empty() {
                // A graceful close: send our end, then wait for the server's.
                // Closing at once could leave bytes from the server unread
                // in our socket, and the kernel would then reset the
                // connection and discard records the server has not read.
                let drained = tokio::time::timeout(CLOSE_WAIT, async {
                    let _ = wr.shutdown().await;
                    while let Some(Ok(_)) = acks.recv().await {}
                });
                let _ = drained.await;
                return End::Finished;
            }
            let deadline = in_flight.values().map(|(_, d, _)| *d).min();
            let room = !dispatcher_done && in_flight.len() < s.max_in_flight;
            tokio::select! {
                biased;
                ack = acks.recv() => match ack {
                    Some(Ok(id)) => match in_flight.remove(&id) {
                        Some((chunk, deadline, _)) => {
                            let written = deadline - s.ack_timeout;
                            self.metrics.ack_rtt.observe(written.elapsed().as_secs_f64());
                            self.metrics.delivered(chunk);
                            self.settled_chunks += 1;
                            self.wake.notify_one();
                        }
                        None => tracing::debug!(sink = %s.sink, server = %self.address, id, "ack for an unknown chunk"),
                    },
                    Some(Err(reason)) => break ("io", reason),
                    None => break ("io", "connection closed by the server".into()),
                },
                _ = crate::timer::sleep_until_opt(deadline) => {
                    self.metrics.ack_timeouts.inc();
                    break ("ack_timeout", format!("no ack within {:?}", s.ack_timeout));
                }
                next = self.rx.recv(), if room => match next {
                    None => dispatcher_done = true,
                    Some(mut chunk) => {
                        self.wake.notify_one();
                        let frame = chunk.frame(s.compress, s.require_ack);
                        // a server that stops reading must not stall the sink:
                        // the write gets the same deadline as an ack
                        match tokio::time::timeout(s.ack_timeout, write_frame(&mut wr, &frame)).await {
                            Ok(Ok(())) => {}
                            Ok(Err(e)) => {
                                failed_write = Some(chunk);
                                break ("io", format!("write failed: {e}"));
                            }
                            Err(_) => {
                                failed_write = Some(chunk);
                                break ("write_timeout", format!("the server took no data for {:?}", s.ack_timeout));
                            }
                        }
                        self.metrics.sent(&self.address, &chunk, frame.len());
                        if s.require_ack {
                            sent += 1;
                            in_flight.insert(chunk.id.clone(), (chunk, Instant::now() + s.ack_timeout, sent));
                        } else {
                            self.metrics.delivered(chunk);
                            self.settled_chunks += 1;
                            self.wake.notify_one();
                        }
                    }
                },
            }
        };
        let (kind, reason) = end;
        // Acks the server sent before it closed may still be on their way
        // in (a failed write is often noticed first): settle those chunks,
        // so that the one charged is the one the server stopped at.
        let late_acks = async {
            while let Some(Ok(id)) = acks.recv().await {
                if let Some((chunk, _, _)) = in_flight.remove(&id) {
                    self.metrics.delivered(chunk);
                    self.settled_chunks += 1;
                }
            }
        };
        let _ = tokio::time::timeout(LATE_ACK_WAIT, late_acks).await;
        self.wake.notify_one();
        let mut unsettled: Vec<(u64, Chunk)> = in_flight
            .into_values()
            .map(|(chunk, _, seq)| (seq, chunk))
            .collect();
        unsettled.extend(failed_write.map(|c| (u64::MAX, c)));
        unsettled.sort_by_key(|(seq, _)| *seq);
        let mut blamed = None;
        for (i, (_, mut chunk)) in unsettled.into_iter().enumerate() {
            if i == 0 {
                chunk.attempts += 1;
                blamed = Some(chunk.attempts);
            }
            self.hand_back(chunk);
        }
        End::Failed {
            kind,
            reason,
            blamed,
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The reconnect delay after a failed session. A server that accepts
/// connections but fails every session keeps backing off; one that
/// delivered resets it, unless the session died on a chunk that had failed
/// before (a receiver refusing it): resending that one must not become a
/// tight loop, even while other chunks get through.
fn backoff_after_session(
    current: Duration,
    delivered: bool,
    blamed: Option<u32>,
    s: &Settings,
) -> Duration {
    if delivered && blamed.unwrap_or(0) <= 1 {
        s.reconnect_min
    } else {
        current
    }
}

/// ±25 % around `d`, so reconnecting clients do not arrive in step.
fn jitter(d: Duration) -> Duration {
    let r = handshake::random_bytes(2);
    let unit = f64::from(u16::from_le_bytes([r[0], r[1]])) / f64::from(u16::MAX);
    d.mul_f64(0.75 + unit * 0.5)
}

/// Writes a frame with writev(2): head, payload parts and tail in as few
/// system calls as the socket allows, without copying the payload.
async fn write_frame<W: tokio::io::AsyncWrite + Unpin>(
    wr: &mut W,
    f: &Frame,
) -> std::io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(f.parts.len() + 2);
    slices.push(IoSlice::new(&f.head));
    slices.extend(f.parts.iter().map(|p| IoSlice::new(p)));
    slices.push(IoSlice::new(&f.tail));
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let n = wr.write_vectored(rest).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut rest, n);
    }
    Ok(())
}

/// Reads `{"ack": id}` responses; ends with `Err` on EOF, error or anything
/// that is not an ack.
async fn read_acks<R: AsyncRead + Unpin>(
    mut rd: R,
    acks: mpsc::UnboundedSender<Result<String, String>>,
) {
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        let value = match read_value(&mut rd, &mut buf, MAX_RESPONSE, "an ack").await {
            Ok(v) => v,
            Err(e) => {
                let _ = acks.send(Err(e));
                return;
            }
        };
        let id = parse_ack(&value)
            .ok_or_else(|| "the server sent something that is not an ack".to_string());
        let failed = id.is_err();
        if acks.send(id).is_err() || failed {
            return;
        }
    }
}

/// TCP connect, keepalive, TLS, handshake: a stream ready for chunks, or
/// the kind and reason of the failure.
async fn connect(s: &Settings, address: &str) -> Result<Box<dyn Stream>, (&'static str, String)> {
    let attempt = async {
        let tcp = TcpStream::connect(address)
            .await
            .map_err(|e| ("connect", format!("cannot connect: {e}")))?;
        if crate::net::reached_itself(&tcp) {
            let reason = format!("cannot connect: {}", crate::net::REACHED_ITSELF);
            return Err(("connect", reason));
        }
        let _ = tcp.set_nodelay(true);
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(s.keepalive)
            .with_interval(s.keepalive / 3 + Duration::from_secs(1));
        let _ = socket2::SockRef::from(&tcp).set_tcp_keepalive(&keepalive);
        let mut stream: Box<dyn Stream> = match &s.tls {
            None => Box::new(tcp),
            Some((connector, config)) => {
                let name = config.server_name(address).map_err(|e| ("tls", e))?;
                Box::new(connector.connect(name, tcp).await.map_err(|e| {
                    (
                        "tls",
                        format!("TLS handshake failed: {}", crate::tls::explain_io(&e)),
                    )
                })?)
            }
        };
        if let Some(auth) = &s.auth {
            client_handshake(&mut stream, auth)
                .await
                .map_err(|e| ("auth", e))?;
        }
        Ok(stream)
    };
    tokio::time::timeout(s.connect_timeout, attempt)
        .await
        .unwrap_or_else(|_| {
            Err((
                "connect",
                format!("no connection within {:?}", s.connect_timeout),
            ))
        })
}

/// The client side of the shared-key handshake.
async fn client_handshake(stream: &mut Box<dyn Stream>, auth: &ClientAuth) -> Result<(), String> {
    let mut buf = BytesMut::with_capacity(1024);
    let helo = read_value(stream, &mut buf, MAX_RESPONSE, "HELO").await?;
    let helo = handshake::decode_helo(&helo).map_err(|e| format!("bad HELO: {e}"))?;
    let ping = handshake::encode_ping(auth, &helo);
    stream
        .write_all(&ping)
        .await
        .map_err(|e| format!("sending PING: {e}"))?;
    let pong = read_value(stream, &mut buf, MAX_RESPONSE, "PONG").await?;
    let pong = handshake::decode_pong(&pong).map_err(|e| format!("bad PONG: {e}"))?;
    handshake::verify_pong(auth, &helo, &handshake::ping_salt(&ping), &pong)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_failing_again_keeps_the_backoff_growing() {
        let s = Settings {
            sink: "s".into(),
            compress: Compress::None,
            require_ack: true,
            ack_timeout: Duration::from_secs(1),
            max_in_flight: 1,
            max_attempts: 10,
            connect_timeout: Duration::from_secs(1),
            keepalive: Duration::from_secs(1),
            reconnect_min: Duration::from_millis(100),
            reconnect_max: Duration::from_secs(30),
            auth: None,
            tls: None,
        };
        let grown = Duration::from_secs(8);
        // delivered, failed on a chunk's first failure: a fresh start
        assert_eq!(
            backoff_after_session(grown, true, Some(1), &s),
            s.reconnect_min
        );
        assert_eq!(
            backoff_after_session(grown, true, None, &s),
            s.reconnect_min
        );
        // delivered others, but died on a chunk that failed before
        assert_eq!(backoff_after_session(grown, true, Some(2), &s), grown);
        // delivered nothing
        assert_eq!(backoff_after_session(grown, false, Some(1), &s), grown);
    }

    #[test]
    fn jitter_stays_within_a_quarter() {
        for _ in 0..100 {
            let j = jitter(Duration::from_secs(4));
            assert!(
                j >= Duration::from_secs(3) && j <= Duration::from_secs(5),
                "{j:?}"
            );
        }
    }
}
