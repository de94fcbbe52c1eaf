//! The loop of the request-based sinks: batches from the queue are
//! gathered into requests, and up to `concurrency` requests run at once,
//! each a task that sends, retries and settles its batches.
//!
//! A request takes what is queued, up to `batch_records` and
//! `batch_bytes`. When nobody waits for its records (a tailed file, TCP
//! lines, a forward chunk without ack) it then waits up to `linger` for
//! more, so a slow flow costs a few requests a second rather than one per
//! batch; as soon as it holds a batch whose client waits for the
//! acknowledgement (an HTTP request, a forward chunk with ack), it goes at
//! once. A request waiting for its retry holds its slot, so a destination
//! that is down stops the sink taking more, and backpressure reaches the
//! sources.
//!
//! At a stop, requests in flight have `drain_timeout` to finish; after it
//! their batches are given back unsettled (not acknowledged to their
//! sources).

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::buffer::{Delivery, Gathered, QueueReceiver};
use crate::event::Batch;
use crate::timer::Deadline;

/// How batches become requests.
#[derive(Debug, Clone, Copy)]
pub struct Gathering {
    pub max_records: usize,
    pub max_bytes: usize,
    pub linger: Duration,
    pub concurrency: usize,
    pub drain_timeout: Duration,
}

/// What a request-based sink does with the batches of one request.
pub trait Deliver: 'static {
    /// Sends, retries and settles `batches` (every one of them).
    fn deliver(self: Rc<Self>, batches: Vec<Delivery>) -> impl std::future::Future<Output = ()>;

    /// Whether `next` may join a request that holds `first`.
    fn joins(&self, _first: &Batch, _next: &Batch) -> bool {
        true
    }

    /// The sink's name, for the log.
    fn name(&self) -> &str;
}

/// Runs `sink` over `rx` until the queue is closed and drained, then lets
/// the requests in flight finish within `drain_timeout`.
pub async fn run<D: Deliver>(sink: Rc<D>, g: Gathering, mut rx: QueueReceiver) {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            let slots = Arc::new(Semaphore::new(g.concurrency.max(1)));
            let mut requests = JoinSet::new();
            let mut carried: Option<Delivery> = None;
            // set once the queue is closed (the stop): when the requests in
            // flight and the batches still queued must be done
            let mut stop_by: Option<Instant> = None;
            // the linger's wake-up, one per request
            let mut timer = Deadline::new();
            loop {
                let Some(slot) = free_slot(&slots, &rx, g.drain_timeout, &mut stop_by).await else {
                    break;
                };
                let first = match carried.take() {
                    Some(d) => d,
                    None => match rx.recv().await {
                        Some(d) => d,
                        None => break,
                    },
                };
                let (batches, next) = gather(&*sink, &g, first, &mut rx, &mut timer).await;
                carried = next;
                let sink = Rc::clone(&sink);
                requests.spawn_local(async move {
                    sink.deliver(batches).await;
                    drop(slot);
                });
                while requests.try_join_next().is_some() {}
            }
            let deadline = stop_by.unwrap_or_else(|| Instant::now() + g.drain_timeout);
            drain(&*sink, g.drain_timeout, deadline, requests).await;
        })
        .await;
}

/// How often a sink whose every request slot is busy (requests hanging,
/// or waiting for their retry) looks whether the queue was closed.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// A free request slot; `None` when the stop's `drain_timeout` passed
/// first. Every slot can stay busy for long (a destination that never
/// answers, retries of one that is down): the stop must not wait for
/// them, so the closing of the queue is watched meanwhile.
async fn free_slot(
    slots: &Arc<Semaphore>,
    rx: &QueueReceiver,
    drain_timeout: Duration,
    stop_by: &mut Option<Instant>,
) -> Option<OwnedSemaphorePermit> {
    loop {
        if stop_by.is_none() && rx.is_closed() {
            *stop_by = Some(Instant::now() + drain_timeout);
        }
        let until = stop_by.unwrap_or_else(|| Instant::now() + STOP_CHECK);
        match tokio::time::timeout_at(until, Arc::clone(slots).acquire_owned()).await {
            Ok(slot) => return slot.ok(),
            Err(_) if stop_by.is_some() => return None,
            Err(_) => {}
        }
    }
}

/// The batches of one request, starting with `first`; also a batch that
/// was taken but belongs to the next request.
async fn gather<D: Deliver>(
    sink: &D,
    g: &Gathering,
    first: Delivery,
    rx: &mut QueueReceiver,
    timer: &mut Deadline,
) -> (Vec<Delivery>, Option<Delivery>) {
    let deadline = tokio::time::Instant::now() + g.linger;
    let mut records = first.batch().count;
    let mut bytes = first.batch().byte_len();
    let mut waited = first.batch().is_waited_on();
    let mut batches = vec![first];
    while records < g.max_records && bytes < g.max_bytes {
        let next = match rx.try_recv() {
            Some(d) => d,
            None if waited || g.linger.is_zero() => break,
            // woken only when the request must go: a batch waited on,
            // one that fills it, a full or closed queue, the deadline
            None => match rx
                .recv_until(
                    timer,
                    deadline,
                    g.max_records - records,
                    g.max_bytes - bytes,
                )
                .await
            {
                Gathered::Batch(d) => d,
                Gathered::Closed | Gathered::Timeout => break,
            },
        };
        let b = next.batch();
        let fits = records + b.count <= g.max_records && bytes + b.byte_len() <= g.max_bytes;
        if !fits || !sink.joins(batches[0].batch(), b) {
            return (batches, Some(next));
        }
        records += b.count;
        bytes += b.byte_len();
        waited |= b.is_waited_on();
        batches.push(next);
    }
    (batches, None)
}

/// Lets the requests in flight finish until `deadline` (the stop's
/// `drain_timeout`, `timeout`, after the queue closed).
async fn drain<D: Deliver>(
    sink: &D,
    timeout: Duration,
    deadline: Instant,
    mut requests: JoinSet<()>,
) {
    while !requests.is_empty() {
        if tokio::time::timeout_at(deadline, requests.join_next())
            .await
            .is_err()
        {
            let left = requests.len();
            // dropping the tasks drops their batches unsettled: not
            // acknowledged, so their sources send them again
            requests.abort_all();
            while requests.join_next().await.is_some() {}
            tracing::error!(sink = %sink.name(), requests = left, drain_timeout = ?timeout,
                "drain_timeout passed with requests unanswered; their records are not acknowledged");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::buffer::{queue, BufferConfig};
    use crate::event::Records;
    use crate::metrics::Registry;
    use bytes::Bytes;

    /// Records the size of each request and accepts it.
    #[derive(Default)]
    struct Sizes(RefCell<Vec<usize>>);

    impl Deliver for Sizes {
        async fn deliver(self: Rc<Self>, batches: Vec<Delivery>) {
            self.0
                .borrow_mut()
                .push(batches.iter().map(|d| d.batch().count).sum());
            batches.into_iter().for_each(Delivery::accept);
        }
        fn name(&self) -> &str {
            "test"
        }
    }

    fn batch(waited: bool) -> Batch {
        let b = Batch::new(
            "t".into(),
            Records::Lines {
                data: Bytes::from_static(b"x\n"),
                time: crate::event::EventTime::new(1, 0),
            },
            1,
        );
        if waited {
            b.with_ack(crate::ack::AckHandle::new(|_| {})).waited_on()
        } else {
            b
        }
    }

    fn gathering(linger: Duration) -> Gathering {
        Gathering {
            max_records: 100,
            max_bytes: 1 << 20,
            linger,
            concurrency: 1,
            drain_timeout: Duration::from_secs(1),
        }
    }

    /// Sends `n` batches 5 ms apart and returns the request sizes.
    fn sizes(n: usize, waited: bool, linger: Duration) -> Vec<usize> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let (tx, rx) = queue("test", BufferConfig::default(), &Registry::new());
            let sink = Rc::new(Sizes::default());
            let run = run(Rc::clone(&sink), gathering(linger), rx);
            let send = async move {
                for _ in 0..n {
                    tx.send(batch(waited)).await.unwrap();
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            };
            tokio::join!(run, send);
            let sizes = sink.0.borrow().clone();
            sizes
        })
    }

    #[test]
    fn a_streaming_batch_waits_for_the_linger_a_waited_one_does_not() {
        // 20 batches over 100 ms gather into one request with a 1 s linger
        assert_eq!(sizes(20, false, Duration::from_secs(1)), vec![20]);
        // a client waits for each: each goes at once
        assert_eq!(sizes(20, true, Duration::from_secs(1)), vec![1; 20]);
        // no linger: each goes when the queue is empty
        assert_eq!(sizes(5, false, Duration::ZERO), vec![1; 5]);
    }

    #[test]
    fn a_full_request_goes_before_the_linger() {
        let sizes = sizes(250, false, Duration::from_secs(60));
        assert_eq!(sizes, vec![100, 100, 50]);
    }
}
