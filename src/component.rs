//! What every kind of component shares, and nothing kind-specific: the
//! context a source is started with, the stop signal, and the shape of a
//! started source. Sources and sinks import this module; it imports none
//! of them, so a new kind (filters) plugs in without touching the others.

use std::sync::Arc;

use tokio::sync::watch;

use crate::metrics::Registry;
use crate::router::Router;

/// Everything a running source needs from the pipeline.
pub struct SourceContext {
    /// The source's name in the configuration, for logs and metric labels.
    pub name: Arc<str>,
    /// Where its batches go: the sink queues whose `match` takes their tag.
    pub router: Router,
    /// Given when the source must stop reading and hand over what it has.
    pub shutdown: Shutdown,
    /// The registry its counters and gauges live in.
    pub metrics: Registry,
    /// The process-wide memory budget that read buffers and batches draw on.
    pub memory: crate::memory::MemoryBudget,
}

/// A started source: its task ends when the source is done (at shutdown,
/// or by itself for a finite source such as a generator with a `count`).
pub type SourceTask = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// The stop signal every source watches.
#[derive(Clone)]
pub struct Shutdown(watch::Receiver<bool>);

/// Sends the stop signal.
pub struct ShutdownTrigger(watch::Sender<bool>);

pub fn shutdown_channel() -> (ShutdownTrigger, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (ShutdownTrigger(tx), Shutdown(rx))
}

impl ShutdownTrigger {
    pub fn trigger(&self) {
        let _ = self.0.send(true);
    }
}

impl Shutdown {
    /// Resolves once the stop signal is given (at once if it already was).
    pub async fn wait(&mut self) {
        // an error means the trigger was dropped, which also means stop
        let _ = self.0.wait_for(|stop| *stop).await;
    }

    pub fn is_triggered(&self) -> bool {
        *self.0.borrow()
    }
}
