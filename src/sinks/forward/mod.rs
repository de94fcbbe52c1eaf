//! `type = "forward"`: sends records to Fluentd-protocol servers.
//!
//! - `config.rs`: settings;
//! - `chunk.rs`: chunks (one PackedForward frame of whole batches);
//! - `balance.rs`: which server gets a chunk;
//! - `conn.rs`: one task per server: connect, send, acks, resend, backoff;
//! - this file: the dispatcher, which groups batches into chunks and hands
//!   them to servers.
//!
//! Records are acknowledged to their source when their chunk is settled:
//! with `require_ack`, when the server acked it; without, when it was
//! written to the socket. A chunk whose connection fails before that goes
//! back to the dispatcher and is sent again, possibly to another server
//! (at least once), until it has failed `max_attempts` times: then it is
//! given up (rejected, logged, counted). Batches that arrived as forward
//! entries are sent as they are: no record is decoded or re-encoded on the
//! way through; a batch over `batch_bytes` or `batch_records` is split at
//! entry boundaries.

mod balance;
mod chunk;
mod config;
mod conn;
pub mod replay;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinSet;

use tokio::time::Instant;

pub use config::{BalanceMode, Compress, ForwardSinkConfig, ServerConfig};

use super::settle::{Settled, Settler};
use super::verdict::{Rejection, Verdict};
use super::SinkMetrics;
use crate::buffer::{Delivery, Gathered, QueueReceiver};
use crate::event::Tag;
use crate::metrics::{Counter, Gauge, Histogram, Registry};
use balance::Balancer;
use chunk::Chunk;
use conn::{Link, ServerTask, Settings};

/// Most chunks waiting for a server before the dispatcher stops taking
/// batches from its queue (the queue's byte limit bounds memory anyway).
const MAX_READY: usize = 64;

/// Most bytes of entries in chunks waiting for a server before the sink
/// stops reading its queue.
const MAX_READY_BYTES: usize = 4 << 20;

/// How often the end of the queue is looked for while it is not read
/// (`MAX_READY` chunks waiting).
const CLOSE_POLL: Duration = Duration::from_millis(100);

/// After every chunk is settled, how long connections may take at least
/// to close gracefully at shutdown (more if `drain_timeout` has not passed).
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Counters of one forward sink.
pub struct ForwardSinkMetrics {
    sink: SinkMetrics,
    chunks: Counter,
    resent_chunks: Counter,
    ack_timeouts: Counter,
    chunks_given_up: Counter,
    /// Servers connected now (what `/ready` reads).
    connected: Gauge,
    /// From writing a chunk to its ack.
    ack_rtt: Histogram,
    /// Accepts, resends, dead-letters or rejects chunks.
    settler: Settler,
    registry: Registry,
    name: Arc<str>,
}

impl ForwardSinkMetrics {
    fn new(registry: &Registry, name: &str, sink: SinkMetrics, settler: Settler) -> Self {
        let l = &[("component", name)];
        ForwardSinkMetrics {
            sink,
            chunks: registry.counter("logferry_forward_sink_chunks_total", "Chunks sent.", l),
            resent_chunks: registry.counter(
                "logferry_forward_sink_resent_chunks_total",
                "Chunks handed back for resending after a connection failed before they were settled.",
                l,
            ),
            ack_timeouts: registry.counter("logferry_forward_sink_ack_timeouts_total", "Acks not received within ack_timeout.", l),
            chunks_given_up: registry.counter(
                "logferry_forward_sink_chunks_given_up_total",
                "Chunks rejected after max_attempts failed attempts (not acknowledged upstream).",
                l,
            ),
            connected: registry.gauge(
                crate::metrics::CONNECTED_METRIC,
                "Servers a sink is connected to now (0: it cannot deliver).",
                l,
            ),
            ack_rtt: registry.histogram(
                "logferry_forward_sink_ack_rtt_seconds",
                "Time from writing a chunk to receiving its ack (require_ack only).",
                l,
            ),
            settler,
            registry: registry.clone(),
            name: name.into(),
        }
    }

    fn sent(&self, server: &str, chunk: &Chunk, wire_bytes: usize) {
        self.chunks.inc();
        self.registry
            .counter(
                "logferry_forward_sink_server_records_total",
                "Records sent to each server (resends included).",
                &[("component", &self.name), ("server", server)],
            )
            .add(chunk.count as u64);
        self.sink.bytes.add(wire_bytes as u64);
    }

    /// The server acknowledged `chunk` (or it was written, without acks).
    fn delivered(&self, chunk: Chunk) {
        self.settler.settle(vec![chunk], 0, Verdict::Delivered);
    }

    fn count_connection_error(&self, server: &str, kind: &'static str) {
        self.registry
            .counter(
                "logferry_forward_sink_connection_errors_total",
                "Connection failures by server and kind (connect, tls, auth, io, ack_timeout).",
                &[
                    ("component", &self.name),
                    ("server", server),
                    ("kind", kind),
                ],
            )
            .inc();
    }

    /// A chunk whose connection failed: handed back for another attempt,
    /// or, once it has failed `max_attempts` times, rejected (dead-lettered
    /// if configured). `None` if it was given up.
    fn failed(&self, chunk: Chunk, max_attempts: u32) -> Option<Chunk> {
        let attempts = chunk.attempts;
        let settled = if max_attempts > 0 && attempts >= max_attempts {
            // a connection failure may pass: given back (or dead-lettered),
            // not set aside for good
            let reason = Rejection {
                kind: "retries_exhausted",
                message: format!(
                    "chunk given up: {attempts} attempts each ended with the connection failing \
                     (a receiver refuses a frame over its max_frame_bytes by closing the connection; \
                     lower batch_bytes below it)"
                ),
            };
            self.settler.give_up(vec![chunk], &reason)
        } else {
            // the wait is the server's reconnect backoff
            let retry = Verdict::Retry {
                after: Duration::ZERO,
            };
            self.settler.settle(vec![chunk], attempts, retry)
        };
        match settled {
            Settled::Retry { mut items, .. } => items.pop(),
            Settled::Rejected { .. } => {
                self.chunks_given_up.inc();
                None
            }
            Settled::Accepted => None,
        }
    }

    /// Logs a connection failure and counts it: the one place they become visible.
    fn connection_error(&self, server: &str, kind: &'static str, reason: &str) {
        self.count_connection_error(server, kind);
        tracing::warn!(sink = %self.name, server, kind, reason, "server connection failed");
    }
}

pub struct ForwardSink {
    name: Arc<str>,
    config: ForwardSinkConfig,
    settings: Arc<Settings>,
    metrics: Arc<ForwardSinkMetrics>,
}

impl ForwardSink {
    /// Checks TLS files now, so a bad certificate fails start-up.
    pub fn new(
        name: &str,
        config: ForwardSinkConfig,
        registry: &Registry,
        settler: Settler,
        sink: SinkMetrics,
    ) -> Result<Self, String> {
        config.validate()?;
        let tls = match &config.tls {
            Some(t) => {
                for s in &config.servers {
                    t.server_name(&s.address)?;
                }
                if t.insecure_skip_verify {
                    crate::telemetry::startup_warning(
                        registry,
                        "insecure_skip_verify",
                        name,
                        "tls.insecure_skip_verify is set: server certificates are not checked",
                    );
                }
                Some((t.connector()?, t.clone()))
            }
            None => None,
        };
        let settings = Arc::new(Settings {
            sink: name.into(),
            compress: config.compress,
            require_ack: config.require_ack,
            ack_timeout: config.ack_timeout,
            max_in_flight: config.max_in_flight,
            max_attempts: config.max_attempts,
            connect_timeout: config.connect_timeout,
            keepalive: config.keepalive,
            reconnect_min: config.reconnect_min,
            reconnect_max: config.reconnect_max,
            auth: config.auth(),
            tls,
        });
        Ok(ForwardSink {
            name: name.into(),
            metrics: Arc::new(ForwardSinkMetrics::new(registry, name, sink, settler)),
            config,
            settings,
        })
    }

    /// Runs until the queue is closed and everything is delivered (or
    /// `drain_timeout` has passed since the queue closed), or until
    /// `stopped` resolves: then every chunk it holds is dropped, unsettled,
    /// before it returns.
    ///
    /// It runs on the runtime of the sources that feed it (see
    /// [`crate::sinks::spawn`]), so a batch a connection task hands over
    /// is sent in the same turn of the same thread, without waking another.
    pub async fn run(self, rx: QueueReceiver, stopped: impl std::future::Future<Output = ()>) {
        let mut tasks = JoinSet::new();
        let ran_out = tokio::select! {
            biased;
            _ = stopped => false,
            _ = self.serve(rx, &mut tasks) => true,
        };
        if !ran_out {
            // the server tasks hold the chunks in flight: gone before we are
            tasks.abort_all();
        }
        while tasks.join_next().await.is_some() {}
    }

    async fn serve(&self, mut rx: QueueReceiver, tasks: &mut JoinSet<()>) {
        let wake = Arc::new(Notify::new());
        let (retry_tx, mut retry_rx) = mpsc::unbounded_channel();
        let mut links = Vec::new();
        for s in &self.config.servers {
            let (tx, srx) = mpsc::channel(1);
            let healthy = Arc::new(AtomicBool::new(false));
            let tried = Arc::new(AtomicBool::new(false));
            tasks.spawn(
                ServerTask {
                    address: s.address.clone(),
                    settings: self.settings.clone(),
                    rx: srx,
                    retry: retry_tx.clone(),
                    healthy: healthy.clone(),
                    tried: tried.clone(),
                    wake: wake.clone(),
                    metrics: self.metrics.clone(),
                    settled_chunks: 0,
                }
                .run(),
            );
            links.push(Link { tx, healthy, tried });
        }
        drop(retry_tx);
        let mut d = Dispatcher {
            balancer: Balancer::new(self.config.mode, &self.config.servers),
            config: &self.config,
            links,
            open: HashMap::new(),
            ready: VecDeque::new(),
            unsettled: Arc::default(),
            flush_interval: self.config.flush_interval(rx.is_disk()),
        };
        let unsettled = d.unsettled.clone();
        // wakes the gathering at a chunk's flush deadline
        let mut timer = crate::timer::Deadline::new_if(!d.flush_interval.is_zero());
        let mut queue_open = true;
        let mut drain_deadline: Option<Instant> = None;
        let mut gave_up = false;
        loop {
            d.assign();
            // every chunk holds a clone of `unsettled`: 1 means none is left
            if !queue_open
                && d.ready.is_empty()
                && d.open.is_empty()
                && Arc::strong_count(&d.unsettled) == 2
            {
                break;
            }
            let flush_at = d.flush_deadline();
            let reading = queue_open && !d.ready_full();
            tokio::select! {
                biased;
                Some(chunk) = retry_rx.recv() => d.ready.push_front(chunk),
                _ = wake.notified() => {}
                // while chunks wait for their flush deadline, batches nobody
                // waits for do not wake the sink: they are taken at the
                // deadline, or once a chunk's worth has come
                next = super::next_batch(&mut rx, &mut timer, flush_at, self.config.batch_records, self.config.batch_bytes), if reading => match next {
                    Gathered::Timeout => d.flush_expired(),
                    Gathered::Batch(delivery) => {
                        d.take(delivery);
                        while !d.ready_full() {
                            match rx.try_recv() {
                                Some(delivery) => d.take(delivery),
                                None => break,
                            }
                        }
                        // stopping: nothing lingers
                        if d.flush_interval.is_zero() || drain_deadline.is_some() {
                            d.flush_all();
                        }
                    }
                    Gathered::Closed => {
                        queue_open = false;
                        d.flush_all();
                        drain_deadline.get_or_insert(Instant::now() + self.config.drain_timeout);
                    }
                },
                // the queue is not read while MAX_READY chunks wait: look
                // for its closing another way, so a stop starts
                // drain_timeout; what is still queued is read as room frees
                _ = tokio::time::sleep(CLOSE_POLL),
                    if queue_open && drain_deadline.is_none() && d.ready_full() =>
                {
                    if rx.is_closed() {
                        d.flush_all();
                        drain_deadline = Some(Instant::now() + self.config.drain_timeout);
                    }
                }
                // while the queue is read, its own wait ends at flush_at
                _ = crate::timer::sleep_until_opt(flush_at), if !reading => d.flush_expired(),
                _ = crate::timer::sleep_until_opt(drain_deadline) => {
                    // chunks waiting for a server or in flight on one, and
                    // batches still queued
                    let chunks = Arc::strong_count(&d.unsettled) - 2;
                    let records = unsettled.records.load(Ordering::Acquire) + rx.reject_queued();
                    self.metrics.sink.rejected_records.add(records as u64);
                    tracing::error!(sink = %self.name, chunks, records,
                        "drain_timeout passed with undelivered chunks; their records are not acknowledged");
                    gave_up = true;
                    break;
                }
            }
        }
        // dropping the links closes the servers' channels: each task then
        // closes its connection once its in-flight chunks are settled
        drop(d);
        drop(retry_rx);
        // A stop is bounded by drain_timeout: past it, connections still
        // waiting for acks (or for a server to close) are cut, and the
        // chunks they hold are dropped, which rejects them.
        let cut_at = match drain_deadline {
            Some(deadline) if !gave_up => deadline.max(Instant::now() + CLOSE_GRACE),
            _ => Instant::now(),
        };
        let all_ended = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout_at(cut_at, all_ended).await.is_err() {
            tasks.abort_all();
        }
    }
}

/// Groups batches into chunks and hands chunks to servers.
struct Dispatcher<'a> {
    balancer: Balancer,
    config: &'a ForwardSinkConfig,
    links: Vec<Link>,
    /// Chunks being filled, one per tag.
    open: HashMap<Tag, Chunk>,
    /// Full chunks waiting for a server, oldest first.
    ready: VecDeque<Chunk>,
    /// Cloned into every chunk; its count tells how many are unsettled.
    unsettled: Arc<chunk::Unsettled>,
    /// How long a chunk that is not full waits for more records.
    flush_interval: Duration,
}

impl Dispatcher<'_> {
    /// Enough chunks wait for a server (by count or bytes): the queue is
    /// not read until one goes. With every server down, this bounds what
    /// the sink holds in memory (a disk buffer keeps the rest on disk).
    fn ready_full(&self) -> bool {
        self.ready.len() >= MAX_READY
            || self.ready.iter().map(|c| c.bytes).sum::<usize>() >= MAX_READY_BYTES
    }

    fn take(&mut self, delivery: Delivery) {
        // a batch larger than a chunk may be, in bytes or records (a big
        // frame from a forward source), goes out in pieces that fit
        let delivery =
            match chunk::split(delivery, self.config.batch_bytes, self.config.batch_records) {
                chunk::Taken::Pieces(tag, pieces) => return self.take_pieces(tag, pieces),
                chunk::Taken::Whole(d) => d,
            };
        let b = delivery.batch();
        let bytes = chunk::entry_bytes(b);
        let count = b.count;
        let tag = b.tag.clone();
        // a client waits for this batch's acknowledgement: its chunk does
        // not wait for `flush_interval`
        let waited_on = b.is_waited_on();
        // a chunk never grows past the limits
        if let Some(open) = self.open.get(&tag) {
            if open.count + count > self.config.batch_records
                || open.bytes + bytes > self.config.batch_bytes
            {
                let full = self.open.remove(&tag).expect("present");
                self.ready.push_back(full);
            }
        }
        let unsettled = self.unsettled.clone();
        let chunk = self
            .open
            .entry(tag.clone())
            .or_insert_with(|| Chunk::new(tag.clone(), unsettled));
        chunk.push(delivery);
        if waited_on
            || chunk.count >= self.config.batch_records
            || chunk.bytes >= self.config.batch_bytes
        {
            let full = self.open.remove(&tag).expect("present");
            self.ready.push_back(full);
        }
    }

    fn take_pieces(&mut self, tag: Tag, pieces: chunk::Pieces) {
        // what came before for this tag goes first
        if let Some(open) = self.open.remove(&tag) {
            self.ready.push_back(open);
        }
        for (entries, count, piece) in pieces {
            let mut c = Chunk::new(tag.clone(), self.unsettled.clone());
            c.push_piece(entries, count, piece);
            self.ready.push_back(c);
        }
    }

    fn flush_all(&mut self) {
        let mut chunks: Vec<Chunk> = self.open.drain().map(|(_, c)| c).collect();
        chunks.sort_by_key(|c| c.started);
        self.ready.extend(chunks);
    }

    fn flush_deadline(&self) -> Option<Instant> {
        if self.flush_interval.is_zero() {
            return None;
        }
        self.open
            .values()
            .map(|c| Instant::from_std(c.started) + self.flush_interval)
            .min()
    }

    fn flush_expired(&mut self) {
        let now = std::time::Instant::now();
        let expired: Vec<Tag> = self
            .open
            .iter()
            .filter(|(_, c)| now.duration_since(c.started) >= self.flush_interval)
            .map(|(t, _)| t.clone())
            .collect();
        for t in expired {
            if let Some(c) = self.open.remove(&t) {
                self.ready.push_back(c);
            }
        }
    }

    /// Hands ready chunks to their servers, in order, until one cannot be
    /// placed (its server is busy, or none is up).
    fn assign(&mut self) {
        // no chunk goes before every server has tried to connect once: the
        // servers' tasks connect at the same time, and the first to connect
        // would take what the balancing gives another (the first primary's
        // chunks in failover, a tag's in hash_tag, anything, for a standby)
        if !self.links.iter().all(|l| l.tried.load(Ordering::Acquire)) {
            return;
        }
        let healthy: Vec<bool> = self
            .links
            .iter()
            .map(|l| l.healthy.load(Ordering::Acquire))
            .collect();
        while let Some(chunk) = self.ready.pop_front() {
            let Some(i) = self.balancer.pick(&chunk.tag, &healthy) else {
                self.ready.push_front(chunk);
                return;
            };
            match self.links[i].tx.try_send(chunk) {
                Ok(()) => self.balancer.commit(),
                Err(mpsc::error::TrySendError::Full(c) | mpsc::error::TrySendError::Closed(c)) => {
                    // wait for that server (a wake-up comes when it has room)
                    self.ready.push_front(c);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ack::AckHandle;
    use crate::event::{Batch, EventTime, Records};

    fn config(flush_interval: &str) -> ForwardSinkConfig {
        let toml = format!(
            "servers = [{{ address = \"127.0.0.1:1\" }}]\nflush_interval = \"{flush_interval}\"\n"
        );
        toml::from_str(&toml).expect("config")
    }

    fn batch(waited_on: bool) -> Delivery {
        let b = Batch::new(
            "app".into(),
            Records::Lines {
                data: bytes::Bytes::from_static(b"one line\n"),
                time: EventTime::new(1, 0),
            },
            1,
        )
        .with_ack(AckHandle::new(|_| {}));
        Delivery::standalone(if waited_on { b.waited_on() } else { b })
    }

    #[test]
    fn with_a_flush_interval_only_a_chunk_nobody_waits_for_waits() {
        let config = config("10s");
        let mut d = Dispatcher {
            balancer: Balancer::new(config.mode, &config.servers),
            config: &config,
            links: Vec::new(),
            open: HashMap::new(),
            ready: VecDeque::new(),
            unsettled: Arc::default(),
            flush_interval: config.flush_interval(false),
        };
        // streaming batches gather in one open chunk
        d.take(batch(false));
        d.take(batch(false));
        assert_eq!((d.open.len(), d.ready.len()), (1, 0));
        assert!(d.flush_deadline().is_some());
        // a batch whose client waits takes them along at once
        d.take(batch(true));
        assert_eq!((d.open.len(), d.ready.len()), (0, 1));
        assert_eq!(d.ready[0].count, 3);
        assert!(d.flush_deadline().is_none());
        // and goes at once on its own too
        d.take(batch(true));
        assert_eq!((d.open.len(), d.ready.len()), (0, 2));
    }
}
