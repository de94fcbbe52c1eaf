//! From a FUSE request thread into the router: a write returns only once
//! its records are in every matching sink's queue (or fails with EIO after
//! `write_timeout`), and each descriptor can wait for its records to be
//! acknowledged (fsync, and close with `ack_on_close`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::encode::Entries;
use super::telemetry::{FuseMetrics, WriteError};
use crate::ack::{AckHandle, AckOutcome};
use crate::event::{Batch, Records};
use crate::memory::MemoryBudget;
use crate::router::Router;
use crate::sources::Shutdown;

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

    /// Queues `entries` (records of `file`, tagged `tag`) into every
    /// matching sink, blocking this thread while the pipeline is full, at
    /// most `write_timeout`. On success the records count towards
    /// `pending` until the sinks settle them. Must not be called from a
    /// runtime worker thread.
    pub fn ship(
        &self,
        tag: &str,
        file: &str,
        entries: Entries,
        pending: &Arc<Pending>,
        on_shutdown: OnShutdown,
    ) -> Result<(), WriteError> {
        if entries.records == 0 {
            return Ok(());
        }
        let Some(mut router) = self.take_router() else {
            return Err(WriteError::Closed);
        };
        let records = entries.records;
        let message_bytes = entries.message_bytes;
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
        let payload = entries.bytes;
        let deadline = tokio::time::Instant::now() + self.write_timeout;
        let mut shutdown = self.shutdown.clone();
        let result = self.runtime.block_on(async {
            let route = async {
                let charge = self.memory.acquire(0, payload.len(), &self.name).await;
                let batch = Batch::new(tag.into(), Records::Entries(payload.into()), records)
                    .with_ack(ack)
                    .with_memory(charge);
                router.route(batch).await
            };
            tokio::pin!(route);
            let stop = async {
                match on_shutdown {
                    OnShutdown::Abort => shutdown.wait().await,
                    OnShutdown::Finish => {
                        shutdown.wait().await;
                        tokio::time::sleep(SHUTDOWN_GRACE).await
                    }
                }
            };
            let outcome = tokio::select! {
                r = &mut route => r.map_err(|_| WriteError::Closed),
                _ = tokio::time::sleep_until(deadline) => Err(WriteError::Timeout),
                _ = stop => Err(WriteError::Closed),
            };
            if outcome.is_err() {
                abandoned.store(true, Ordering::Release);
            }
            outcome
            // `route` (and the batch in it, if not yet queued) drops here
        });
        self.give_back(router);
        match result {
            Ok(()) => {
                self.metrics.records.add(records as u64);
                self.metrics.bytes.add(message_bytes as u64);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// The records of one descriptor not yet settled by every sink.
#[derive(Default)]
pub struct Pending {
    state: Mutex<PendingState>,
    settled: Condvar,
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
            self.settled.notify_all();
        }
    }

    /// Waits until every record shipped so far is settled; reports (once)
    /// a rejection since the last report.
    pub fn wait(&self, timeout: Duration) -> Result<(), SyncError> {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while s.outstanding > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(SyncError::Timeout);
            }
            s = self
                .settled
                .wait_timeout(s, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if std::mem::take(&mut s.rejected) {
            return Err(SyncError::Rejected);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_waits_for_every_ack_and_reports_a_rejection_once() {
        let p = Arc::new(Pending::default());
        p.add();
        p.add();
        assert_eq!(p.wait(Duration::from_millis(20)), Err(SyncError::Timeout));
        let p2 = p.clone();
        let t = std::thread::spawn(move || {
            p2.done(false);
            p2.done(true);
        });
        assert_eq!(p.wait(Duration::from_secs(10)), Err(SyncError::Rejected));
        t.join().unwrap();
        assert_eq!(p.wait(Duration::from_secs(1)), Ok(()), "reported once");
    }
}
