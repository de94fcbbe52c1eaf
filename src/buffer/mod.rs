//! Per-sink queues between the router and the sinks.
//!
//! Each sink has one queue with a limit in bytes. A batch holds its share of
//! the limit (a semaphore permit per byte) from the moment it is queued until
//! the sink settles it, so the limit covers batches the sink is still writing,
//! not just those waiting. When the queue is full, `when_full` decides:
//! `block` makes the sender wait (backpressure: a forward connection stops
//! reading its socket), `drop_newest` drops the batch, counts it and rejects
//! its acknowledgement so the sender can resend.
//!
//! A sink may instead have a disk buffer (`type = "disk"`, see [`disk`]):
//! segment files behind the same interface, so neither sources nor sinks
//! know which one a sink has.

pub mod disk;
mod gate;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::event::Batch;
use crate::metrics::{Counter, Registry};
use crate::timer::Deadline;
use gate::{Gate, SenderGate};

/// What a full queue does with a new batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum WhenFull {
    /// Wait for room; backpressure propagates to the sources.
    #[default]
    Block,
    /// Drop the new batch, count it, and do not acknowledge it.
    DropNewest,
}

/// Where a sink's queue keeps its batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum BufferKind {
    /// In memory: lost if the process dies, so sources are acknowledged
    /// only once the sink has delivered.
    #[default]
    Memory,
    /// In segment files under `dir`: sources are acknowledged once a batch
    /// is written there, and it survives a restart.
    Disk,
}

/// The `buffer` table of a sink.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BufferConfig {
    /// `memory` (default) or `disk`.
    #[serde(default, rename = "type")]
    pub kind: BufferKind,
    /// Most bytes of records queued for (or being written by) this sink;
    /// for a disk buffer, most bytes of segment files on disk.
    #[serde(
        default = "default_max_bytes",
        deserialize_with = "crate::config::units::bytes"
    )]
    pub max_bytes: usize,
    /// `block` (default) or `drop_newest`.
    #[serde(default)]
    pub when_full: WhenFull,
    /// Disk buffer only: the directory of its segment files (one directory
    /// per sink; created if missing).
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// Disk buffer only: `always`, `interval` (default) or `never`; see
    /// docs/disk-buffer.md for what each can lose on a power failure.
    #[serde(default)]
    pub fsync: disk::Fsync,
    /// Disk buffer only: how often `fsync = "interval"` syncs (default 1s).
    #[serde(
        default = "default_fsync_interval",
        deserialize_with = "crate::config::units::duration"
    )]
    pub fsync_interval: Duration,
    /// Disk buffer only: size at which a new segment file is started
    /// (default 64MiB; at most a quarter of `max_bytes`).
    #[serde(
        default = "default_segment_bytes",
        deserialize_with = "crate::config::units::bytes"
    )]
    pub segment_bytes: usize,
}

const fn default_max_bytes() -> usize {
    8 * 1024 * 1024
}

const fn default_fsync_interval() -> Duration {
    Duration::from_secs(1)
}

const fn default_segment_bytes() -> usize {
    64 * 1024 * 1024
}

impl Default for BufferConfig {
    fn default() -> Self {
        BufferConfig {
            kind: BufferKind::Memory,
            max_bytes: default_max_bytes(),
            when_full: WhenFull::Block,
            dir: None,
            fsync: disk::Fsync::default(),
            fsync_interval: default_fsync_interval(),
            segment_bytes: default_segment_bytes(),
        }
    }
}

/// Most bytes a memory queue standing in for a disk buffer holds.
const STAND_IN_MAX_BYTES: usize = 64 << 20;

impl BufferConfig {
    /// A memory queue that stands in for this one for a while (a reload
    /// starting its sink, a sink that cannot start): the same limit and
    /// policy, a disk buffer's limit capped at 64 MiB since its records
    /// wait in memory.
    pub fn memory_stand_in(&self) -> BufferConfig {
        BufferConfig {
            max_bytes: match self.kind {
                BufferKind::Memory => self.max_bytes,
                BufferKind::Disk => self.max_bytes.min(STAND_IN_MAX_BYTES),
            },
            when_full: self.when_full,
            ..BufferConfig::default()
        }
    }

    /// The directory of a disk buffer.
    pub fn disk_dir(&self) -> Option<&std::path::Path> {
        match self.kind {
            BufferKind::Disk => self.dir.as_deref(),
            BufferKind::Memory => None,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.max_bytes == 0 {
            return Err("buffer.max_bytes must be greater than 0".into());
        }
        match self.kind {
            BufferKind::Memory => {
                if self.max_bytes > u32::MAX as usize {
                    return Err(format!("buffer.max_bytes must be at most {}", u32::MAX));
                }
                if self.dir.is_some() {
                    return Err(
                        "buffer.dir applies to a disk buffer only: add type = \"disk\" or remove dir"
                            .into(),
                    );
                }
            }
            BufferKind::Disk => {
                if self.dir.is_none() {
                    return Err("a disk buffer needs buffer.dir, the directory for its segment files (one per sink)".into());
                }
                if self.fsync == disk::Fsync::Interval && self.fsync_interval.is_zero() {
                    return Err(
                        "buffer.fsync_interval must be greater than 0 (or use fsync = \"always\")"
                            .into(),
                    );
                }
                if self.segment_bytes == 0 {
                    return Err("buffer.segment_bytes must be greater than 0".into());
                }
            }
        }
        Ok(())
    }
}

/// The sink could not take the batch because it has stopped.
#[derive(Debug, thiserror::Error)]
#[error("sink {0} has stopped")]
pub struct SendError(pub Arc<str>);

/// The router's end of a sink queue.
#[derive(Clone)]
pub struct QueueSender {
    sink: Arc<str>,
    kind: SenderKind,
    /// What the router handed to this sink.
    received: Received,
}

/// Records and bytes handed to a sink's queue: counted once per batch, so
/// a sink's input can be read next to what it wrote and dropped.
#[derive(Clone)]
struct Received {
    records: Counter,
    bytes: Counter,
}

impl Received {
    fn new(sink: &str, metrics: &Registry) -> Self {
        let l = &[("component", sink)];
        Received {
            records: metrics.counter(
                "logferry_sink_received_records_total",
                "Records handed to a sink (entering its queue or buffer).",
                l,
            ),
            bytes: metrics.counter(
                "logferry_sink_received_bytes_total",
                "Bytes of records handed to a sink (entering its queue or buffer).",
                l,
            ),
        }
    }
}

#[derive(Clone)]
enum SenderKind {
    Memory(MemorySender),
    Disk {
        shared: Arc<disk::Shared>,
        /// The last clone dropped closes the queue.
        _alive: Arc<disk::SenderAlive>,
        /// Where a send refused once a reload has closed the buffer goes
        /// (a router still routing on the routes the reload replaced):
        /// that batch is not on disk, so the replacement must take it.
        handover: Handover,
    },
}

#[derive(Clone)]
struct MemorySender {
    tx: mpsc::UnboundedSender<Delivery>,
    /// Wakes the receiver while it gathers (see [`gate`]); after `tx`, so
    /// that its ring on drop comes once this end of the channel is gone.
    gate: SenderGate,
    room: Arc<Semaphore>,
    /// Records queued or being delivered (not settled yet).
    held_records: Arc<AtomicUsize>,
    config: BufferConfig,
    dropped_records: Counter,
    /// Where unsettled deliveries go once a reload replaces the sink.
    handover: Handover,
}

/// Hands the batches a replaced sink drops unsettled (still queued, or
/// held and not delivered) to its replacement instead of rejecting them
/// (see `topology::reload`). Off until [`Handover::start`].
#[derive(Clone, Default)]
pub struct Handover(Arc<Mutex<Option<mpsc::UnboundedSender<Batch>>>>);

impl Handover {
    /// From now on, a delivery of this queue dropped unsettled is sent to
    /// the returned receiver, its acknowledgement still pending.
    pub fn start(&self) -> mpsc::UnboundedReceiver<Batch> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        rx
    }

    /// Whether a replacement takes this queue's unsettled deliveries.
    fn is_on(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Takes `batch` if a handover is on; gives it back otherwise.
    fn offer(&self, batch: Batch) -> Option<Batch> {
        let slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some(tx) => tx.send(batch).err().map(|e| e.0),
            None => Some(batch),
        }
    }
}

/// A batch on its way into a queue; rejected if dropped before it got there.
struct Unsent(Option<Batch>);

impl Unsent {
    fn batch(&self) -> Option<&Batch> {
        self.0.as_ref()
    }

    fn take(mut self) -> Option<Batch> {
        self.0.take()
    }
}

impl Drop for Unsent {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            b.ack.reject();
        }
    }
}

/// The sink's end of its queue.
pub struct QueueReceiver {
    kind: ReceiverKind,
    /// A memory queue's `max_bytes`: the sink holding this many bytes of
    /// unsettled batches blocks the senders.
    held_limit: Option<usize>,
}

enum ReceiverKind {
    Memory(mpsc::UnboundedReceiver<Delivery>, Arc<Gate>),
    Disk(Arc<disk::Shared>),
}

fn dropped_counter(sink: &str, metrics: &Registry) -> Counter {
    metrics.counter(
        "logferry_buffer_dropped_records_total",
        "Records dropped because a sink queue was full (when_full = drop_newest).",
        &[("component", sink)],
    )
}

/// Creates the in-memory queue of sink `sink` (whatever `config.kind`).
pub fn queue(sink: &str, config: BufferConfig, metrics: &Registry) -> (QueueSender, QueueReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    let held_limit = Some(config.max_bytes);
    let gate = Arc::new(Gate::default());
    let sender = QueueSender {
        sink: sink.into(),
        received: Received::new(sink, metrics),
        kind: SenderKind::Memory(MemorySender {
            tx,
            gate: SenderGate(gate.clone()),
            room: Arc::new(Semaphore::new(config.max_bytes)),
            held_records: Arc::default(),
            dropped_records: dropped_counter(sink, metrics),
            config,
            handover: Handover::default(),
        }),
    };
    (
        sender,
        QueueReceiver {
            kind: ReceiverKind::Memory(rx, gate),
            held_limit,
        },
    )
}

/// Creates the queue of sink `sink` as its configuration says: in memory,
/// or a disk buffer (opened and recovered now).
pub fn open(
    sink: &str,
    config: BufferConfig,
    metrics: &Registry,
) -> Result<(QueueSender, QueueReceiver), String> {
    match config.kind {
        BufferKind::Memory => Ok(queue(sink, config, metrics)),
        BufferKind::Disk => {
            let (shared, alive) =
                disk::open(sink, &config, metrics, dropped_counter(sink, metrics))?;
            Ok((
                QueueSender {
                    sink: sink.into(),
                    received: Received::new(sink, metrics),
                    kind: SenderKind::Disk {
                        shared: shared.clone(),
                        _alive: alive,
                        handover: Handover::default(),
                    },
                },
                QueueReceiver {
                    kind: ReceiverKind::Disk(shared),
                    held_limit: None,
                },
            ))
        }
    }
}

impl QueueSender {
    /// Queues `batch`, waiting for room if the policy is `block`.
    ///
    /// Cancellation-safe: if this future is dropped before the batch is
    /// queued (a source giving up at shutdown), the batch is rejected, never
    /// acknowledged by accident.
    pub async fn send(&self, batch: Batch) -> Result<(), SendError> {
        self.received.records.add(batch.count as u64);
        self.received.bytes.add(batch.byte_len() as u64);
        match &self.kind {
            SenderKind::Memory(m) => m.send(&self.sink, batch).await,
            SenderKind::Disk {
                shared, handover, ..
            } => match shared.send(batch).await {
                Ok(()) => Ok(()),
                Err(refused) => closed(handover, &self.sink, refused),
            },
        }
    }

    /// Closes the queue for good, even while clones of this sender are
    /// still sending (a router routing on the table it started with): a
    /// send waiting for room ends at once, and so does every later one;
    /// its batch goes to the replacement sink if a [`Handover`] is on, or
    /// is refused. The sink sees the end of its queue once the last clone
    /// is gone and it has taken what was queued.
    pub fn close(&self) {
        match &self.kind {
            SenderKind::Memory(m) => {
                m.room.close();
                m.gate.ring();
            }
            SenderKind::Disk { shared, .. } => shared.close(),
        }
    }

    /// [`QueueSender::close`] for a sink a reload replaces: what its disk
    /// buffer still holds when it finishes is left for the replacement
    /// (logged as such, not counted as kept for the next start).
    pub fn close_replaced(&self) {
        match &self.kind {
            SenderKind::Disk { shared, .. } => shared.close_replaced(),
            SenderKind::Memory(_) => self.close(),
        }
    }

    /// What lets go of this queue's disk buffer directory once its sink
    /// has finished, whoever still has a clone of this sender, so that a
    /// replacement can open it; `None` for a memory queue. It does not
    /// keep the queue open.
    pub fn dir_release(&self) -> Option<DirRelease> {
        match &self.kind {
            SenderKind::Memory(_) => None,
            SenderKind::Disk { shared, .. } => Some(DirRelease(shared.clone())),
        }
    }

    /// Whether a batch sent here is on disk once sent (a disk buffer, not
    /// its memory stand-in).
    pub fn is_disk(&self) -> bool {
        matches!(self.kind, SenderKind::Disk { .. })
    }

    /// Bytes currently held by queued or in-progress batches.
    pub fn queued_bytes(&self) -> usize {
        self.gauge().held_bytes()
    }

    /// What hands this queue's unsettled batches to a replacement, and
    /// the sends that come after [`QueueSender::close`]. A disk buffer
    /// hands over only those sends: what it holds and does not deliver
    /// stays on disk, for whichever sink opens the directory next.
    pub fn handover(&self) -> Option<Handover> {
        match &self.kind {
            SenderKind::Memory(m) => Some(m.handover.clone()),
            SenderKind::Disk { handover, .. } => Some(handover.clone()),
        }
    }

    /// Reads `queued_bytes` without keeping the queue open.
    pub fn gauge(&self) -> QueueGauge {
        match &self.kind {
            SenderKind::Memory(m) => QueueGauge(GaugeKind::Memory {
                room: m.room.clone(),
                held_records: m.held_records.clone(),
                max_bytes: m.config.max_bytes,
            }),
            SenderKind::Disk { shared, .. } => QueueGauge(GaugeKind::Disk(shared.held.clone())),
        }
    }
}

impl MemorySender {
    async fn send(&self, sink: &Arc<str>, batch: Batch) -> Result<(), SendError> {
        let unsent = Unsent(Some(batch));
        let (bytes, count) = unsent
            .batch()
            .map(|b| (b.byte_len(), b.count))
            .unwrap_or_default();
        // A batch larger than the whole queue still passes, alone.
        let want = bytes.min(self.config.max_bytes) as u32;
        let permit = match self.config.when_full {
            WhenFull::Block => match self.room.clone().try_acquire_many_owned(want) {
                Ok(p) => p,
                Err(_) => {
                    // full: a sink gathering a request sends it now
                    self.gate.ring();
                    match self.room.clone().acquire_many_owned(want).await {
                        Ok(p) => p,
                        Err(_) => return closed_unsent(&self.handover, sink, unsent),
                    }
                }
            },
            WhenFull::DropNewest => match self.room.clone().try_acquire_many_owned(want) {
                Ok(p) => p,
                Err(tokio::sync::TryAcquireError::Closed) => {
                    return closed_unsent(&self.handover, sink, unsent)
                }
                Err(tokio::sync::TryAcquireError::NoPermits) => {
                    self.gate.ring();
                    self.dropped_records.add(count as u64);
                    tracing::warn!(sink = %sink, records = count, "queue full; batch dropped");
                    return Ok(());
                }
            },
        };
        let Some(batch) = unsent.take() else {
            return Ok(());
        };
        self.held_records.fetch_add(batch.count, Ordering::AcqRel);
        let delivery = Delivery {
            batch,
            _room: Some(permit),
            held: Some(self.held_records.clone()),
            handover: Some(self.handover.clone()),
            settled: false,
        };
        let waited = delivery.batch.is_waited_on();
        // if the sink is gone, dropping the delivery rejects the batch
        self.tx
            .send(delivery)
            .map_err(|_| SendError(sink.clone()))?;
        // a queue past half full is taken now, before `drop_newest` drops
        // or `block` blocks
        let filling = self.room.available_permits() < self.config.max_bytes / 2;
        self.gate.sent(count, bytes, waited || filling);
        Ok(())
    }
}

/// A send to a closed queue: the batch goes to the replacement sink if
/// there is one, else it is refused.
fn closed(handover: &Handover, sink: &Arc<str>, batch: Batch) -> Result<(), SendError> {
    match handover.offer(batch) {
        None => Ok(()),
        Some(refused) => {
            refused.ack.reject();
            Err(SendError(sink.clone()))
        }
    }
}

/// [`closed`] for a batch still in its [`Unsent`] guard.
fn closed_unsent(handover: &Handover, sink: &Arc<str>, unsent: Unsent) -> Result<(), SendError> {
    match unsent.take() {
        Some(batch) => closed(handover, sink, batch),
        None => Ok(()),
    }
}

/// What [`QueueReceiver::recv_until`] found.
pub enum Gathered {
    Batch(Delivery),
    /// Every sender is gone and the queue is empty.
    Closed,
    /// The deadline passed with nothing queued.
    Timeout,
}

/// See [`QueueReceiver::end`].
pub struct QueueEnd(Option<Arc<disk::Shared>>);

impl QueueEnd {
    /// The sink has finished: a disk buffer is synced, and what it still
    /// holds is counted and logged as kept for the next start now, not
    /// whenever the last clone of a sender goes.
    pub fn sink_done(self) {
        if let Some(d) = self.0 {
            d.finish();
        }
    }
}

/// See [`QueueSender::dir_release`].
pub struct DirRelease(Arc<disk::Shared>);

impl DirRelease {
    /// Closes the buffer to its remaining senders and unlocks its directory.
    pub fn release(self) {
        self.0.release();
    }
}

/// Reads how much a queue holds, without being one of its senders.
#[derive(Clone)]
pub struct QueueGauge(GaugeKind);

#[derive(Clone)]
enum GaugeKind {
    Memory {
        room: Arc<Semaphore>,
        held_records: Arc<AtomicUsize>,
        max_bytes: usize,
    },
    /// Undelivered frames of a disk buffer.
    Disk(Arc<disk::Held>),
}

impl QueueGauge {
    /// Bytes held by queued or in-progress batches (for a disk buffer:
    /// frame bytes on disk not delivered yet).
    pub fn held_bytes(&self) -> usize {
        match &self.0 {
            GaugeKind::Memory {
                room, max_bytes, ..
            } => max_bytes - room.available_permits(),
            GaugeKind::Disk(h) => h.bytes.load(Ordering::Relaxed) as usize,
        }
    }

    /// Records in queued or in-progress batches.
    pub fn held_records(&self) -> usize {
        match &self.0 {
            GaugeKind::Memory { held_records, .. } => held_records.load(Ordering::Acquire),
            GaugeKind::Disk(h) => h.records.load(Ordering::Relaxed),
        }
    }
}

impl QueueReceiver {
    /// Most bytes of batches the sink may hold unsettled before its
    /// senders block (a memory queue's `max_bytes`); `None` for a disk
    /// buffer, whose frames wait on disk. A sink that gathers batches
    /// (the `s3` sink's objects) must let go before it reaches this.
    pub fn held_limit(&self) -> Option<usize> {
        self.held_limit
    }

    /// Whether the queue is a disk buffer.
    pub fn is_disk(&self) -> bool {
        matches!(self.kind, ReceiverKind::Disk(_))
    }

    /// What the sink's runner calls once the sink has finished and let go
    /// of every delivery (see [`QueueEnd::sink_done`]).
    pub fn end(&self) -> QueueEnd {
        match &self.kind {
            ReceiverKind::Memory(..) => QueueEnd(None),
            ReceiverKind::Disk(d) => QueueEnd(Some(d.clone())),
        }
    }

    /// The next batch; `None` once every sender is gone and the queue is
    /// empty (a disk buffer: everything written has been handed out; what
    /// the sink does not accept stays on disk for the next start).
    pub async fn recv(&mut self) -> Option<Delivery> {
        match &mut self.kind {
            ReceiverKind::Memory(rx, _) => rx.recv().await,
            ReceiverKind::Disk(d) => d.recv().await,
        }
    }

    /// For sinks that run on their own thread (outside any runtime).
    pub fn blocking_recv(&mut self) -> Option<Delivery> {
        match &mut self.kind {
            ReceiverKind::Memory(rx, _) => rx.blocking_recv(),
            ReceiverKind::Disk(d) => {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .ok()?;
                rt.block_on(d.recv())
            }
        }
    }

    /// For a sink gathering a request: the next batch, waiting until
    /// `deadline` at most. While it waits, a memory queue wakes the sink
    /// only for a batch whose client waits for the acknowledgement, once
    /// `records` or `bytes` more have come, when it is past half full, or
    /// at its end;
    /// any other batch waits in the queue, taken at `deadline` with no
    /// wake-up of its own. A disk buffer's batches wait alike (no client
    /// waits on its sink: the disk acknowledged them).
    /// `timer` wakes the sink at `deadline`.
    pub async fn recv_until(
        &mut self,
        timer: &mut Deadline,
        deadline: tokio::time::Instant,
        records: usize,
        bytes: usize,
    ) -> Gathered {
        let (rx, gate) = match &mut self.kind {
            ReceiverKind::Memory(rx, gate) => (rx, gate),
            ReceiverKind::Disk(d) => return d.recv_until(timer, deadline, records, bytes).await,
        };
        let taken = |rx: &mut mpsc::UnboundedReceiver<Delivery>| match rx.try_recv() {
            Ok(d) => Some(Gathered::Batch(d)),
            Err(mpsc::error::TryRecvError::Disconnected) => Some(Gathered::Closed),
            Err(mpsc::error::TryRecvError::Empty) => None,
        };
        loop {
            if let Some(found) = taken(rx) {
                return found;
            }
            if tokio::time::Instant::now() >= deadline {
                return Gathered::Timeout;
            }
            gate.arm(records, bytes);
            let rung = gate.rung();
            tokio::pin!(rung);
            rung.as_mut().enable();
            // a batch sent before the gate was armed did not ring
            if let Some(found) = taken(rx) {
                gate.disarm();
                return found;
            }
            tokio::select! {
                _ = rung => {}
                _ = timer.sleep_until(deadline.into_std()) => {}
            }
            gate.disarm();
        }
    }

    /// The next batch if one is already waiting.
    pub fn try_recv(&mut self) -> Option<Delivery> {
        match &mut self.kind {
            ReceiverKind::Memory(rx, _) => rx.try_recv().ok(),
            ReceiverKind::Disk(d) => d.try_recv(),
        }
    }

    /// Gives up on what is still queued (a stop past `drain_timeout`):
    /// a memory queue's batches are rejected, and their records counted;
    /// a disk buffer's stay on disk for the next start (0).
    pub fn reject_queued(&mut self) -> usize {
        let ReceiverKind::Memory(rx, _) = &mut self.kind else {
            return 0;
        };
        let mut records = 0;
        while let Ok(d) = rx.try_recv() {
            records += d.batch().count;
            d.reject();
        }
        records
    }

    /// True once every sender is gone (the pipeline is stopping), even while
    /// batches are still queued: a sink stuck on its destination starts its
    /// `drain_timeout` from here.
    pub fn is_closed(&self) -> bool {
        match &self.kind {
            ReceiverKind::Memory(rx, _) => rx.is_closed(),
            ReceiverKind::Disk(d) => d.is_closed(),
        }
    }
}

/// A batch handed to a sink. The sink must settle it: [`Delivery::accept`]
/// once the records are durably written or delivered, [`Delivery::reject`]
/// if it cannot keep them. Dropping it unsettled rejects it, so a batch lost
/// on an unexpected path is never acknowledged to its sender.
pub struct Delivery {
    batch: Batch,
    /// Holds this batch's share of the queue limit until it is settled
    /// (none for a disk buffer, whose frames stay on disk until accepted).
    _room: Option<OwnedSemaphorePermit>,
    /// The queue's count of held records, given back when settled.
    held: Option<Arc<AtomicUsize>>,
    /// Takes the batch if it is dropped unsettled after its sink was
    /// replaced (memory queues only).
    handover: Option<Handover>,
    settled: bool,
}

impl Delivery {
    /// A delivery that belongs to no queue, for driving a sink directly
    /// (tests, benchmarks).
    pub fn standalone(batch: Batch) -> Delivery {
        Delivery {
            batch,
            _room: None,
            held: None,
            handover: None,
            settled: false,
        }
    }

    pub fn batch(&self) -> &Batch {
        &self.batch
    }

    pub fn accept(mut self) {
        self.settled = true;
    }

    pub fn reject(mut self) {
        self.batch.ack.reject();
        self.settled = true;
    }

    /// Whether dropping this delivery unsettled now hands it, its
    /// acknowledgement pending, to the sink that replaces this one (a
    /// reload is replacing it) rather than rejecting it.
    pub fn goes_to_a_replacement(&self) -> bool {
        self.handover.as_ref().is_some_and(Handover::is_on)
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        if !self.settled {
            // a clone shares the acknowledgement: it stays pending while
            // the replacement sink holds the batch
            let kept = match &self.handover {
                Some(h) => h.offer(self.batch.clone()),
                None => Some(self.batch.clone()),
            };
            if kept.is_some() {
                self.batch.ack.reject();
            }
        }
        if let Some(held) = &self.held {
            held.fetch_sub(self.batch.count, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ack::{AckHandle, AckOutcome};
    use crate::event::{EventTime, Records};
    use bytes::Bytes;
    use std::sync::mpsc as std_mpsc;

    fn batch(len: usize) -> Batch {
        Batch::new(
            "t".into(),
            Records::Lines {
                data: Bytes::from(vec![b'x'; len]),
                time: EventTime::default(),
            },
            1,
        )
    }

    fn config(max_bytes: usize, when_full: WhenFull) -> BufferConfig {
        BufferConfig {
            max_bytes,
            when_full,
            ..BufferConfig::default()
        }
    }

    #[tokio::test]
    async fn block_waits_until_the_sink_settles() {
        tokio::time::pause();
        let (tx, mut rx) = queue("s", config(100, WhenFull::Block), &Registry::new());
        tx.send(batch(60)).await.unwrap();
        let second = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send(batch(60)).await }
        });
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        assert!(!second.is_finished(), "second batch must wait for room");
        let first = rx.recv().await.unwrap();
        first.accept();
        second.await.unwrap().unwrap();
        assert_eq!(tx.queued_bytes(), 60);
    }

    /// A waker that counts its wakes.
    struct Wakes(AtomicUsize);

    impl std::task::Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn a_gathering_sink_is_woken_only_when_its_request_must_go() {
        use std::future::Future;
        let (tx, mut rx) = queue("s", config(1000, WhenFull::Block), &Registry::new());
        let wakes = Arc::new(Wakes(AtomicUsize::new(0)));
        let waker = std::task::Waker::from(wakes.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        let woken = || wakes.0.load(Ordering::SeqCst);
        let far = tokio::time::Instant::now() + Duration::from_secs(60);

        // 3 batches nobody waits for, of a request that takes 4: no wake
        let mut timer = Deadline::new();
        let mut gather = Box::pin(rx.recv_until(&mut timer, far, 4, 10_000));
        assert!(gather.as_mut().poll(&mut cx).is_pending());
        for _ in 0..3 {
            tx.send(batch(10)).await.unwrap();
        }
        assert_eq!(woken(), 0, "batches that do not fill the request");
        // the fourth fills it
        tx.send(batch(10)).await.unwrap();
        assert_eq!(woken(), 1);
        assert!(matches!(
            gather.as_mut().poll(&mut cx),
            std::task::Poll::Ready(Gathered::Batch(_))
        ));
        drop(gather);
        while rx.try_recv().is_some() {}

        // a batch whose client waits goes at once, behind those queued
        let mut timer = Deadline::new();
        let mut gather = Box::pin(rx.recv_until(&mut timer, far, 100, 10_000));
        assert!(gather.as_mut().poll(&mut cx).is_pending());
        tx.send(batch(10)).await.unwrap();
        assert_eq!(woken(), 1);
        let (otx, _orx) = std_mpsc::channel();
        let waited = batch(10)
            .with_ack(AckHandle::new(move |o| otx.send(o).unwrap()))
            .waited_on();
        tx.send(waited).await.unwrap();
        assert_eq!(woken(), 2, "a waited batch");
        assert!(matches!(
            gather.as_mut().poll(&mut cx),
            std::task::Poll::Ready(Gathered::Batch(_))
        ));
        drop(gather);
        while rx.try_recv().is_some() {}

        // bytes fill it too, and the queue's closing wakes it
        let mut timer = Deadline::new();
        let mut gather = Box::pin(rx.recv_until(&mut timer, far, 100, 25));
        assert!(gather.as_mut().poll(&mut cx).is_pending());
        tx.send(batch(10)).await.unwrap();
        tx.send(batch(10)).await.unwrap();
        assert_eq!(woken(), 2);
        tx.send(batch(10)).await.unwrap();
        assert_eq!(woken(), 3, "30 of 25 bytes");
        drop(gather);
        while rx.try_recv().is_some() {}
        let mut timer = Deadline::new();
        let mut gather = Box::pin(rx.recv_until(&mut timer, far, 100, 10_000));
        assert!(gather.as_mut().poll(&mut cx).is_pending());
        tx.close();
        assert_eq!(woken(), 4, "closed");
    }

    #[tokio::test]
    async fn a_gathering_sink_is_woken_by_a_half_full_queue_before_it_drops_and_by_its_end() {
        tokio::time::pause();
        let metrics = Registry::new();
        let (tx, mut rx) = queue("s", config(100, WhenFull::DropNewest), &metrics);
        let far = tokio::time::Instant::now() + Duration::from_secs(60);
        let sender = tokio::spawn({
            let tx = tx.clone();
            async move {
                for _ in 0..6 {
                    tx.send(batch(10)).await.unwrap();
                }
            }
        });
        let start = tokio::time::Instant::now();
        let mut timer = Deadline::new();
        let Gathered::Batch(first) = rx.recv_until(&mut timer, far, 1000, 100_000).await else {
            panic!("a batch")
        };
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "woken past half full"
        );
        first.accept();
        sender.await.unwrap();
        let mut taken = 1;
        while let Some(d) = rx.try_recv() {
            d.accept();
            taken += 1;
        }
        assert_eq!(taken, 6, "none dropped");
        // the last sender gone: the end is seen at once, not at the deadline
        let start = tokio::time::Instant::now();
        let mut timer = Deadline::new();
        let ending =
            tokio::spawn(async move { rx.recv_until(&mut timer, far, 1000, 100_000).await });
        tokio::task::yield_now().await;
        drop(tx);
        assert!(matches!(ending.await.unwrap(), Gathered::Closed));
        assert!(start.elapsed() < Duration::from_secs(1), "closed at once");
    }

    #[tokio::test]
    async fn a_gathering_sink_takes_every_batch_at_its_deadline_and_a_full_queue_wakes_it() {
        tokio::time::pause();
        let (tx, mut rx) = queue("s", config(100, WhenFull::Block), &Registry::new());
        let deadline = tokio::time::Instant::now() + Duration::from_millis(200);
        let sender = tokio::spawn({
            let tx = tx.clone();
            async move {
                for _ in 0..3 {
                    tx.send(batch(10)).await.unwrap();
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                // kept until the sink has gathered: a sender dropped rings
                tx
            }
        });
        let mut timer = Deadline::new();
        let first = rx.recv_until(&mut timer, deadline, 100, 10_000).await;
        assert!(matches!(first, Gathered::Batch(_)));
        assert!(
            tokio::time::Instant::now() >= deadline,
            "no wake before the deadline"
        );
        drop(sender.await.unwrap());
        assert_eq!(
            std::iter::from_fn(|| rx.try_recv()).count(),
            2,
            "the rest are queued, in order"
        );
        // the queue full while the sink gathers: it is woken to make room
        let far = tokio::time::Instant::now() + Duration::from_secs(60);
        let filler = tokio::spawn({
            let tx = tx.clone();
            async move {
                for _ in 0..9 {
                    tx.send(batch(10)).await.unwrap();
                }
                tx.send(batch(60)).await.unwrap();
            }
        });
        let start = tokio::time::Instant::now();
        let mut timer = Deadline::new();
        let Gathered::Batch(first) = rx.recv_until(&mut timer, far, 1000, 100_000).await else {
            panic!("a batch")
        };
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "woken by the full queue"
        );
        first.accept();
        while let Some(d) = rx.try_recv() {
            d.accept();
        }
        filler.await.unwrap();
        assert!(
            rx.try_recv().is_some(),
            "the last batch, queued once there was room"
        );
    }

    #[tokio::test]
    async fn a_gauge_counts_what_is_held_until_settled() {
        let (tx, mut rx) = queue("s", config(1000, WhenFull::Block), &Registry::new());
        let gauge = tx.gauge();
        tx.send(batch(60)).await.unwrap();
        tx.send(batch(40)).await.unwrap();
        assert_eq!((gauge.held_records(), gauge.held_bytes()), (2, 100));
        let first = rx.recv().await.unwrap();
        assert_eq!(gauge.held_records(), 2, "taken by the sink, not settled");
        first.accept();
        assert_eq!((gauge.held_records(), gauge.held_bytes()), (1, 40));
        drop(rx.recv().await.unwrap());
        assert_eq!((gauge.held_records(), gauge.held_bytes()), (0, 0));
        drop(tx);
        assert!(rx.recv().await.is_none(), "a gauge keeps no queue open");
    }

    #[tokio::test]
    async fn a_handover_takes_unsettled_batches_with_their_ack_pending() {
        let (tx, mut rx) = queue("s", config(1000, WhenFull::Block), &Registry::new());
        let acked = |n: usize| {
            let (otx, orx) = std_mpsc::channel();
            (
                batch(n).with_ack(AckHandle::new(move |o| otx.send(o).unwrap())),
                orx,
            )
        };
        let (held, held_ack) = acked(10);
        let (settled, settled_ack) = acked(30);
        let (queued, queued_ack) = acked(20);
        tx.send(held).await.unwrap();
        tx.send(settled).await.unwrap();
        tx.send(queued).await.unwrap();
        let mut handed = tx.handover().expect("a memory queue hands over").start();
        drop(tx);
        let held = rx.recv().await.unwrap();
        rx.recv().await.unwrap().accept();
        assert_eq!(settled_ack.try_recv(), Ok(AckOutcome::Accepted));
        // a stopped sink drops what it holds and what is still queued
        drop(held);
        drop(rx);
        let mut batches = Vec::new();
        while let Ok(b) = handed.try_recv() {
            batches.push(b);
        }
        let sizes: Vec<usize> = batches.iter().map(Batch::byte_len).collect();
        assert_eq!(sizes, [10, 20]);
        // acknowledged once the replacement has delivered them, not before
        assert!(held_ack.try_recv().is_err() && queued_ack.try_recv().is_err());
        drop(batches);
        assert_eq!(held_ack.try_recv(), Ok(AckOutcome::Accepted));
        assert_eq!(queued_ack.try_recv(), Ok(AckOutcome::Accepted));
    }

    #[tokio::test]
    async fn without_a_handover_an_unsettled_batch_is_rejected() {
        let (tx, mut rx) = queue("s", config(1000, WhenFull::Block), &Registry::new());
        let (otx, orx) = std_mpsc::channel();
        tx.send(batch(10).with_ack(AckHandle::new(move |o| otx.send(o).unwrap())))
            .await
            .unwrap();
        drop(rx.recv().await.unwrap());
        assert_eq!(orx.try_recv(), Ok(AckOutcome::Rejected));
    }

    #[tokio::test]
    async fn drop_newest_counts_and_rejects() {
        let metrics = Registry::new();
        let (tx, mut rx) = queue("s", config(100, WhenFull::DropNewest), &metrics);
        tx.send(batch(80)).await.unwrap();
        let (otx, orx) = std_mpsc::channel();
        let dropped = batch(80).with_ack(AckHandle::new(move |o| otx.send(o).unwrap()));
        tx.send(dropped).await.unwrap();
        assert_eq!(orx.try_recv(), Ok(AckOutcome::Rejected));
        assert_eq!(
            metrics.value("logferry_buffer_dropped_records_total", &[]),
            1
        );
        rx.recv().await.unwrap().accept();
        assert!(rx.try_recv().is_none());
    }

    #[tokio::test]
    async fn a_send_given_up_on_rejects_its_batch() {
        let (tx, _rx) = queue("s", config(10, WhenFull::Block), &Registry::new());
        tx.send(batch(10)).await.unwrap();
        let (otx, orx) = std_mpsc::channel();
        let waiting = tx.send(batch(10).with_ack(AckHandle::new(move |o| otx.send(o).unwrap())));
        // the queue is full: give up on the send, as a source does at shutdown
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(50), waiting)
                .await
                .is_err()
        );
        assert_eq!(orx.try_recv(), Ok(AckOutcome::Rejected));
    }

    #[tokio::test]
    async fn oversized_batch_passes_alone() {
        let (tx, mut rx) = queue("s", config(100, WhenFull::Block), &Registry::new());
        tx.send(batch(1000)).await.unwrap();
        assert_eq!(tx.queued_bytes(), 100);
        rx.recv().await.unwrap().accept();
        assert_eq!(tx.queued_bytes(), 0);
    }

    #[tokio::test]
    async fn unsettled_or_unsendable_batches_are_rejected() {
        let (tx, mut rx) = queue("s", config(100, WhenFull::Block), &Registry::new());
        let (otx, orx) = std_mpsc::channel();
        let otx2 = otx.clone();
        tx.send(batch(10).with_ack(AckHandle::new(move |o| otx.send(o).unwrap())))
            .await
            .unwrap();
        drop(rx.recv().await.unwrap());
        assert_eq!(orx.try_recv(), Ok(AckOutcome::Rejected));
        drop(rx);
        let r = tx
            .send(batch(10).with_ack(AckHandle::new(move |o| otx2.send(o).unwrap())))
            .await;
        assert!(r.is_err());
        assert_eq!(orx.try_recv(), Ok(AckOutcome::Rejected));
    }
}
