//! The sink's librdkafka producer, and the ones it replaced.
//!
//! After a fatal error (the idempotent producer lost track of its
//! sequence numbers, say, or the broker fenced it) every produce call on
//! that client fails for good, so the sink builds a new client
//! ([`Producers::replace`]) and produces again, through it, every message
//! the old one did not report delivered (`sink.rs`). A replaced client is
//! kept until each of its messages has its report ([`Producers::retire`]):
//! payloads it was given without a copy are read until then, and the bytes
//! retained for it ([`Producers::retain`]) live as long as it does.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rdkafka::producer::ProducerContext;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::produce::{Producer, Reported};

/// How often a wait for a replacement checks whether to give up, and a
/// retiring client is served.
const POLL: Duration = Duration::from_millis(10);

pub struct Producers<C: ProducerContext<DeliveryOpaque = Reported> + 'static> {
    /// The client new messages go to.
    current: Mutex<Arc<Producer<C>>>,
    /// Replaced clients that may still hold messages.
    retiring: Mutex<Vec<Arc<Producer<C>>>>,
    /// Told when `current` is replaced.
    replaced: Notify,
    /// Told when a produce call failed with a fatal error, so the error is
    /// acted on even before librdkafka's error event is served.
    fatal: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<C: ProducerContext<DeliveryOpaque = Reported> + 'static> Producers<C> {
    pub fn new(producer: Producer<C>) -> Self {
        Producers {
            current: Mutex::new(Arc::new(producer)),
            retiring: Mutex::new(Vec::new()),
            replaced: Notify::new(),
            fatal: Notify::new(),
        }
    }

    /// The client new messages go to now (a [`super::produce::Topic`] of
    /// it must be dropped before this reference).
    pub fn current(&self) -> Arc<Producer<C>> {
        Arc::clone(&lock(&self.current))
    }

    /// The current client once it has no fatal error: waits for its
    /// replacement while that is being built; `None` once `give_up` says
    /// so (the stop's deadline has passed).
    pub async fn healthy(&self, give_up: impl Fn() -> bool) -> Option<Arc<Producer<C>>> {
        loop {
            let replaced = self.replaced.notified();
            let p = self.current();
            if p.fatal_error().is_none() {
                return Some(p);
            }
            self.fatal.notify_one();
            if give_up() {
                return None;
            }
            let _ = tokio::time::timeout(POLL * 5, replaced).await;
        }
    }

    /// Makes `new` the current client; returns the one it replaces, to be
    /// [retired](Producers::retire).
    pub fn replace(&self, new: Producer<C>) -> Arc<Producer<C>> {
        let old = std::mem::replace(&mut *lock(&self.current), Arc::new(new));
        lock(&self.retiring).push(Arc::clone(&old));
        self.replaced.notify_waiters();
        old
    }

    /// Keeps `bytes` until every client that may hold messages pointing
    /// into them is destroyed ([`Producer::retain`]).
    pub fn retain(&self, bytes: bytes::Bytes) {
        for p in lock(&self.retiring).iter() {
            p.retain(bytes.clone());
        }
        self.current().retain(bytes);
    }

    /// A produce call failed with a fatal error.
    pub fn report_fatal(&self) {
        self.fatal.notify_one();
    }

    /// Waits for [`Producers::report_fatal`].
    pub async fn fatal_reported(&self) {
        self.fatal.notified().await;
    }

    /// Serves the reports of a replaced client until it holds no message
    /// (purging what is left after `patience`: requests whose responses
    /// never came), then destroys it, off this thread (that joins its
    /// threads), once nothing else holds it.
    pub async fn retire(&self, old: Arc<Producer<C>>, patience: Duration) {
        let deadline = Instant::now() + patience;
        let mut purged = false;
        loop {
            old.serve_reports();
            if old.outstanding() == 0 {
                break;
            }
            if !purged && Instant::now() >= deadline {
                old.purge();
                purged = true;
            }
            tokio::time::sleep(POLL).await;
        }
        lock(&self.retiring).retain(|p| !Arc::ptr_eq(p, &old));
        // a batch being produced, or a watcher's round, lets go shortly
        while Arc::strong_count(&old) > 1 {
            tokio::time::sleep(POLL).await;
        }
        tokio::task::spawn_blocking(move || drop(old));
    }
}
