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
//! The disk buffer (segments + CRC) will sit behind the same interface.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::Deserialize;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::event::Batch;
use crate::metrics::{Counter, Registry};

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

/// The `buffer` table of a sink.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BufferConfig {
    /// Most bytes of records queued for (or being written by) this sink.
    #[serde(
        default = "default_max_bytes",
        deserialize_with = "crate::config::units::bytes"
    )]
    pub max_bytes: usize,
    /// `block` (default) or `drop_newest`.
    #[serde(default)]
    pub when_full: WhenFull,
}

const fn default_max_bytes() -> usize {
    8 * 1024 * 1024
}

impl Default for BufferConfig {
    fn default() -> Self {
        BufferConfig {
            max_bytes: default_max_bytes(),
            when_full: WhenFull::Block,
        }
    }
}

impl BufferConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.max_bytes == 0 {
            return Err("buffer.max_bytes must be greater than 0".into());
        }
        if self.max_bytes > u32::MAX as usize {
            return Err(format!("buffer.max_bytes must be at most {}", u32::MAX));
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
    tx: mpsc::UnboundedSender<Delivery>,
    room: Arc<Semaphore>,
    /// Records queued or being delivered (not settled yet).
    held_records: Arc<AtomicUsize>,
    config: BufferConfig,
    dropped_records: Counter,
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
    rx: mpsc::UnboundedReceiver<Delivery>,
}

/// Creates the queue of sink `sink`.
pub fn queue(sink: &str, config: BufferConfig, metrics: &Registry) -> (QueueSender, QueueReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    let sender = QueueSender {
        sink: sink.into(),
        tx,
        room: Arc::new(Semaphore::new(config.max_bytes)),
        held_records: Arc::default(),
        dropped_records: metrics.counter(
            "logferry_buffer_dropped_records_total",
            "Records dropped because a sink queue was full (when_full = drop_newest).",
            &[("component", sink)],
        ),
        config,
    };
    (sender, QueueReceiver { rx })
}

impl QueueSender {
    /// Queues `batch`, waiting for room if the policy is `block`.
    ///
    /// Cancellation-safe: if this future is dropped before the batch is
    /// queued (a source giving up at shutdown), the batch is rejected, never
    /// acknowledged by accident.
    pub async fn send(&self, batch: Batch) -> Result<(), SendError> {
        let unsent = Unsent(Some(batch));
        let (bytes, count) = unsent
            .batch()
            .map(|b| (b.byte_len(), b.count))
            .unwrap_or_default();
        // A batch larger than the whole queue still passes, alone.
        let want = bytes.min(self.config.max_bytes) as u32;
        let permit = match self.config.when_full {
            WhenFull::Block => match self.room.clone().acquire_many_owned(want).await {
                Ok(p) => p,
                Err(_) => return Err(SendError(self.sink.clone())),
            },
            WhenFull::DropNewest => match self.room.clone().try_acquire_many_owned(want) {
                Ok(p) => p,
                Err(_) => {
                    self.dropped_records.add(count as u64);
                    tracing::warn!(sink = %self.sink, records = count, "queue full; batch dropped");
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
            _room: permit,
            held: Some(self.held_records.clone()),
            settled: false,
        };
        // if the sink is gone, dropping the delivery rejects the batch
        self.tx
            .send(delivery)
            .map_err(|_| SendError(self.sink.clone()))
    }

    /// Bytes currently held by queued or in-progress batches.
    pub fn queued_bytes(&self) -> usize {
        self.config.max_bytes - self.room.available_permits()
    }

    /// Reads `queued_bytes` without keeping the queue open.
    pub fn gauge(&self) -> QueueGauge {
        QueueGauge {
            room: self.room.clone(),
            held_records: self.held_records.clone(),
            max_bytes: self.config.max_bytes,
        }
    }
}

/// Reads how much a queue holds, without being one of its senders.
#[derive(Clone)]
pub struct QueueGauge {
    room: Arc<Semaphore>,
    held_records: Arc<AtomicUsize>,
    max_bytes: usize,
}

impl QueueGauge {
    /// Bytes held by queued or in-progress batches.
    pub fn held_bytes(&self) -> usize {
        self.max_bytes - self.room.available_permits()
    }

    /// Records in queued or in-progress batches.
    pub fn held_records(&self) -> usize {
        self.held_records.load(Ordering::Acquire)
    }
}

impl QueueReceiver {
    /// The next batch; `None` once every sender is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<Delivery> {
        self.rx.recv().await
    }

    /// For sinks that run on their own thread.
    pub fn blocking_recv(&mut self) -> Option<Delivery> {
        self.rx.blocking_recv()
    }

    /// The next batch if one is already waiting.
    pub fn try_recv(&mut self) -> Option<Delivery> {
        self.rx.try_recv().ok()
    }

    /// True once every sender is gone (the pipeline is stopping), even while
    /// batches are still queued: a sink stuck on its destination starts its
    /// `drain_timeout` from here.
    pub fn is_closed(&self) -> bool {
        self.rx.is_closed()
    }
}

/// A batch handed to a sink. The sink must settle it: [`Delivery::accept`]
/// once the records are durably written or delivered, [`Delivery::reject`]
/// if it cannot keep them. Dropping it unsettled rejects it, so a batch lost
/// on an unexpected path is never acknowledged to its sender.
pub struct Delivery {
    batch: Batch,
    /// Holds this batch's share of the queue limit until it is settled.
    _room: OwnedSemaphorePermit,
    /// The queue's count of held records, given back when settled.
    held: Option<Arc<AtomicUsize>>,
    settled: bool,
}

impl Delivery {
    /// A delivery that belongs to no queue, for driving a sink directly
    /// (tests, benchmarks).
    pub fn standalone(batch: Batch) -> Delivery {
        let room = Arc::new(Semaphore::new(0));
        Delivery {
            batch,
            _room: room
                .try_acquire_many_owned(0)
                .expect("zero permits are always available"),
            held: None,
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
}

impl Drop for Delivery {
    fn drop(&mut self) {
        if !self.settled {
            self.batch.ack.reject();
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
