//! From a FUSE request into the router: a write returns only once its
//! records are in every matching sink's queue (or fails with EIO after
//! `write_timeout`), and each descriptor can wait for its records to be
//! acknowledged (fsync, and close with `ack_on_close`). Every wait here is
//! async, bounded by a deadline and by shutdown: requests that wait run
//! as tasks (see `request`), never holding a request thread.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::encode::Entries;
use super::telemetry::{FuseMetrics, WriteError};
use crate::ack::{AckHandle, AckOutcome};
use crate::component::Shutdown;
use crate::event::{Batch, Records};
use crate::memory::MemoryBudget;
use crate::router::Router;

/// Whether a shipment gives up when logferry starts shutting down (a
/// writer's write: the writer is told EIO) or still tries for a while (the
/// unfinished last lines a writer was already told were written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnShutdown {
    Abort,
    /// Tries for at most [`SHUTDOWN_GRACE`] after shutdown began (and never
    /// past `write_timeout`).
    Finish,
}

/// How long, once shutdown began, unfinished last lines may wait for room
/// in the pipeline.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Why a bounded wait ended without its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The deadline passed.
    Timeout,
    /// logferry is shutting down.
    Closed,
}

impl Ended {
    /// The write error this is, `timeout` being what was waited for.
    pub fn or(self, timeout: WriteError) -> WriteError {
        match self {
            Ended::Timeout => timeout,
            Ended::Closed => WriteError::Closed,
        }
    }
}

/// The source's way into the pipeline, shared by every request thread.
pub struct Pipeline {
    name: Arc<str>,
    /// Idle routers (each keeps its own tag cache); a request thread takes
    /// one for the length of a write. Empty and `None` once closed, so the
    /// sink queues see their input end.
    routers: Mutex<(Vec<Router>, Option<Router>)>,
    runtime: tokio::runtime::Handle,
    shutdown: Shutdown,
    /// Set at shutdown: new writes fail with EIO.
    closing: AtomicBool,
    memory: MemoryBudget,
    write_timeout: Duration,
    pub metrics: Arc<FuseMetrics>,
}

impl Pipeline {
    pub fn new(
        name: Arc<str>,
        router: Router,
        runtime: tokio::runtime::Handle,
        shutdown: Shutdown,
        memory: MemoryBudget,
        write_timeout: Duration,
        metrics: Arc<FuseMetrics>,
    ) -> Self {
        Pipeline {
            name,
            routers: Mutex::new((Vec::new(), Some(router))),
            runtime,
            shutdown,
            closing: AtomicBool::new(false),
            memory,
            write_timeout,
            metrics,
        }
    }

    /// The runtime the source's tasks run on.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }

    /// The longest a request waits.
    pub fn write_timeout(&self) -> Duration {
        self.write_timeout
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// New writes fail from now on.
    pub fn begin_close(&self) {
        self.closing.store(true, Ordering::Release);
    }

    /// Drops every router, so the sinks' queues can end.
    pub fn close(&self) {
        self.begin_close();
        let mut r = self.routers.lock().unwrap_or_else(|e| e.into_inner());
        r.0.clear();
        r.1 = None;
    }

    fn take_router(&self) -> Option<Router> {
        let mut r = self.routers.lock().unwrap_or_else(|e| e.into_inner());
        r.0.pop().or_else(|| r.1.clone())
    }

    fn give_back(&self, router: Router) {
        let mut r = self.routers.lock().unwrap_or_else(|e| e.into_inner());
        if r.1.is_some() {
            r.0.push(router);
        }
    }

    /// Runs `fut` until `deadline`, or until shutdown as `on_shutdown`
    /// says.
    pub async fn bounded<T>(
        &self,
        fut: impl Future<Output = T>,
        deadline: Instant,
        on_shutdown: OnShutdown,
    ) -> Result<T, Ended> {
        tokio::pin!(fut);
        // most waits are over at once: no timer for those
        if let Poll::Ready(r) = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await
        {
            return Ok(r);
        }
        let mut shutdown = self.shutdown.clone();
        let stop = async {
            match on_shutdown {
                OnShutdown::Abort => shutdown.wait().await,
                OnShutdown::Finish => {
                    shutdown.wait().await;
                    tokio::time::sleep(SHUTDOWN_GRACE).await
                }
            }
        };
        tokio::select! {
            r = fut => Ok(r),
            _ = tokio::time::sleep_until(deadline) => Err(Ended::Timeout),
            _ = stop => Err(Ended::Closed),
        }
    }

    /// Queues `entries` (records of `file`, tagged `tag`) into every
    /// matching sink, waiting for the memory budget and then for room in
    /// the queues, until `deadline`. On success the records count towards
    /// `pending` until the sinks settle them.
    pub async fn ship(
        &self,
        tag: &str,
        file: &str,
        entries: Entries,
        pending: &Arc<Pending>,
        on_shutdown: OnShutdown,
        deadline: Instant,
    ) -> Result<(), WriteError> {
        if entries.records == 0 {
            return Ok(());
        }
        let records = entries.records;
        let message_bytes = entries.message_bytes;
        let waited_on = entries.waited_on;
        let payload = entries.bytes;
        let charge = match self.memory.try_acquire(payload.len()) {
            Some(c) => c,
            None => self
                .bounded(
                    self.memory.acquire(0, payload.len(), &self.name),
                    deadline,
                    on_shutdown,
                )
                .await
                .map_err(|e| e.or(WriteError::Memory))?,
        };
        let Some(mut router) = self.take_router() else {
            return Err(WriteError::Closed);
        };
        // set when the writer is told EIO: what a sink still does with a
        // copy of this batch is then no news for fsync
        let abandoned = Arc::new(AtomicBool::new(false));
        pending.add();
        let ack = {
            let pending = pending.clone();
            let abandoned = abandoned.clone();
            let metrics = self.metrics.clone();
            let file = file.to_string();
            AckHandle::new(move |outcome| {
                let rejected =
                    outcome == AckOutcome::Rejected && !abandoned.load(Ordering::Acquire);
                if rejected {
                    metrics.rejected(&file, records);
                }
                pending.done(rejected);
            })
        };
        let mut batch = Batch::new(tag.into(), Records::Entries(payload.into()), records)
            .with_ack(ack)
            .with_memory(charge);
        if waited_on {
            batch = batch.waited_on();
        }
        // the batch, if not yet queued, drops with the route future
        let routed = self
            .bounded(router.route(batch), deadline, on_shutdown)
            .await;
        self.give_back(router);
        match routed {
            Ok(Ok(())) => {
                self.metrics.records.add(records as u64);
                self.metrics.bytes.add(message_bytes as u64);
                Ok(())
            }
            Ok(Err(_)) => {
                abandoned.store(true, Ordering::Release);
                Err(WriteError::Closed)
            }
            Err(e) => {
                abandoned.store(true, Ordering::Release);
                Err(e.or(WriteError::Timeout))
            }
        }
    }
}

/// The records of one descriptor not yet settled by every sink.
#[derive(Default)]
pub struct Pending {
    state: Mutex<PendingState>,
    /// Woken when nothing is outstanding any more.
    settled: Notify,
}

#[derive(Default)]
struct PendingState {
    outstanding: u64,
    rejected: bool,
}

/// Why waiting for acknowledgements failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncError {
    Timeout,
    Rejected,
}

impl SyncError {
    pub fn reason(self) -> &'static str {
        match self {
            SyncError::Timeout => "records not acknowledged within write_timeout",
            SyncError::Rejected => "a sink did not keep some records",
        }
    }
}

impl Pending {
    fn add(&self) {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .outstanding += 1;
    }

    fn done(&self, rejected: bool) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.outstanding = s.outstanding.saturating_sub(1);
        s.rejected |= rejected;
        if s.outstanding == 0 {
            self.settled.notify_waiters();
        }
    }

    /// Waits until every record shipped so far is settled, at most until
    /// `deadline`; reports (once) a rejection since the last report.
    pub async fn wait(&self, deadline: Instant) -> Result<(), SyncError> {
        loop {
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            {
                let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if s.outstanding == 0 {
                    if std::mem::take(&mut s.rejected) {
                        return Err(SyncError::Rejected);
                    }
                    return Ok(());
                }
            }
            if tokio::time::timeout_at(deadline, settled).await.is_err() {
                return Err(SyncError::Timeout);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(d: Duration) -> Instant {
        Instant::now() + d
    }

    #[tokio::test]
    async fn pending_waits_for_every_ack_and_reports_a_rejection_once() {
        let p = Arc::new(Pending::default());
        p.add();
        p.add();
        assert_eq!(
            p.wait(after(Duration::from_millis(20))).await,
            Err(SyncError::Timeout)
        );
        let p2 = p.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            p2.done(false);
            p2.done(true);
        });
        assert_eq!(
            p.wait(after(Duration::from_secs(10))).await,
            Err(SyncError::Rejected)
        );
        t.join().unwrap();
        assert_eq!(
            p.wait(after(Duration::from_secs(1))).await,
            Ok(()),
            "reported once"
        );
    }

    /// Only the entries a writer waits for next (a close with
    /// `ack_on_close`) become a batch that is waited on.
    #[tokio::test]
    async fn shipped_entries_are_waited_on_only_when_the_writer_waits() {
        let (cx, _stop, mut queues) = crate::sources::testing::two_sinks("fuse");
        let metrics = Arc::new(FuseMetrics::new(&cx.metrics, &cx.name));
        let pipeline = Pipeline::new(
            cx.name.clone(),
            cx.router,
            tokio::runtime::Handle::current(),
            cx.shutdown,
            cx.memory,
            Duration::from_secs(10),
            metrics,
        );
        let pending = Arc::new(Pending::default());
        for waited_on in [false, true] {
            let mut entries = Entries {
                waited_on,
                ..Entries::default()
            };
            super::super::encode::EntryWriter::new(
                &mut entries,
                crate::event::EventTime::now(),
                "app.log",
                false,
            )
            .push(b"line");
            let deadline = after(Duration::from_secs(10));
            pipeline
                .ship(
                    "app",
                    "app.log",
                    entries,
                    &pending,
                    OnShutdown::Abort,
                    deadline,
                )
                .await
                .unwrap();
            for q in &mut queues {
                let d = q.recv().await.expect("a batch in each sink's queue");
                assert_eq!(d.batch().is_waited_on(), waited_on);
                d.accept();
            }
        }
    }
}
