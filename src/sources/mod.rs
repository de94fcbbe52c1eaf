//! Sources: where records enter the pipeline.

pub mod durable;
pub mod forward;
pub mod fuse;
pub mod generator;
pub mod http;
pub mod journald;
pub mod kafka;
pub mod kubernetes;
pub mod linger;
pub mod otlp;
pub mod tail;
pub mod tcp;
pub mod udp;

/// What every source counts as it hands records on.
pub struct Received {
    /// `logferry_source_records_total`.
    pub records: crate::metrics::Counter,
    /// `logferry_source_bytes_total`.
    pub bytes: crate::metrics::Counter,
}

impl Received {
    pub fn new(r: &crate::metrics::Registry, source: &str) -> Self {
        let l = &[("component", source)];
        Received {
            records: r.counter(
                "logferry_source_records_total",
                "Records received by a source.",
                l,
            ),
            bytes: r.counter(
                "logferry_source_bytes_total",
                "Bytes of records received by a source.",
                l,
            ),
        }
    }
}

/// What source tests use to look at what a source hands over.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::Arc;

    use crate::buffer::{queue, BufferConfig, QueueReceiver};
    use crate::component::{shutdown_channel, ShutdownTrigger, SourceContext};
    use crate::metrics::Registry;
    use crate::router::{Route, Router, TagPattern};

    /// A context for source `name` whose router sends every tag to two
    /// sinks' memory queues (so each batch is also copied by the router),
    /// the trigger that stops the source, and the two queues.
    pub fn two_sinks(name: &str) -> (SourceContext, ShutdownTrigger, [QueueReceiver; 2]) {
        let metrics = Registry::new();
        let (tx_a, rx_a) = queue("a", BufferConfig::default(), &metrics);
        let (tx_b, rx_b) = queue("b", BufferConfig::default(), &metrics);
        let route = |sink: &str, queue| Route {
            sink: Arc::from(sink),
            pattern: TagPattern::new("**").expect("a valid pattern"),
            queue,
        };
        let router = Router::new(
            vec![route("a", tx_a), route("b", tx_b)],
            metrics.counter("unrouted", "", &[]),
        );
        let (trigger, shutdown) = shutdown_channel();
        let cx = SourceContext {
            name: Arc::from(name),
            router,
            shutdown,
            metrics,
            memory: crate::memory::MemoryBudget::unlimited(),
        };
        (cx, trigger, [rx_a, rx_b])
    }
}
