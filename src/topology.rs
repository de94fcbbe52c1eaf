//! Builds a pipeline from its configuration, runs it, and stops it in
//! order: sources stop reading and hand over what they have read, the sink
//! queues close once every source is gone, each sink drains its queue and
//! flushes, and only then does the process exit.

use std::future::Future;
use std::sync::Arc;

use tokio::task::JoinSet;

use crate::buffer::open as open_queue;
use crate::config::Config;
use crate::metrics::Registry;
use crate::router::{Route, Router};
use crate::sinks;
use crate::sources::{self, shutdown_channel, ShutdownTrigger, SourceContext};

/// Why a pipeline stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The stop future resolved (a signal).
    Asked,
    /// Every source finished by itself (a finite run).
    SourcesFinished,
}

/// What one sink holds that is not acknowledged yet.
#[derive(Debug, Clone)]
pub struct Held {
    pub sink: String,
    pub records: usize,
    pub bytes: usize,
}

/// Buffer gauges of one sink, read at each scrape.
fn queue_metrics(
    metrics: &Registry,
    sink: &str,
    queue: crate::buffer::QueueGauge,
    max_bytes: usize,
) {
    let l = &[("component", sink)];
    let q = queue.clone();
    metrics.computed(
        "logferry_buffer_bytes",
        "Bytes a sink's buffer holds (queued or being delivered; on disk for a disk buffer).",
        l,
        move || q.held_bytes() as f64,
    );
    let q = queue.clone();
    metrics.computed(
        "logferry_buffer_records",
        "Records a sink's buffer holds (queued or being delivered).",
        l,
        move || q.held_records() as f64,
    );
    metrics.computed(
        "logferry_buffer_fill_ratio",
        "logferry_buffer_bytes / buffer.max_bytes (1 = full: the sink blocks or drops per when_full).",
        l,
        move || queue.held_bytes() as f64 / max_bytes.max(1) as f64,
    );
}

/// A started pipeline.
pub struct Pipeline {
    pub metrics: Registry,
    trigger: ShutdownTrigger,
    sources: JoinSet<()>,
    sinks: Vec<(String, tokio::sync::oneshot::Receiver<()>)>,
    gauges: Vec<(String, crate::buffer::QueueGauge)>,
}

impl Pipeline {
    /// Starts every sink, then every source (binding their listeners).
    pub async fn start(config: Config) -> Result<Pipeline, String> {
        let metrics = Registry::new();
        crate::limits::check(&config, &metrics);
        let (trigger, shutdown) = shutdown_channel();
        let mut routes = Vec::new();
        let mut sink_handles = Vec::new();
        let mut gauges = Vec::new();
        let mut probes = Vec::new();
        let config_text = crate::api::masked_config(&config.tree);
        for s in &config.sources {
            metrics.register_component(&s.name, s.kind.type_name());
        }
        for s in config.sinks {
            metrics.register_component(&s.name, s.kind.type_name());
            let sink = sinks::build(&s.name, s.kind, &s.settle, &metrics)
                .map_err(|e| format!("sink {}: {e}", s.name))?;
            let (buffer_kind, max_bytes) = (s.buffer.kind, s.buffer.max_bytes);
            let (tx, rx) = open_queue(&s.name, s.buffer, &metrics)
                .map_err(|e| format!("sink {}: buffer: {e}", s.name))?;
            gauges.push((s.name.clone(), tx.gauge()));
            queue_metrics(&metrics, &s.name, tx.gauge(), max_bytes);
            probes.push(crate::api::SinkProbe {
                name: s.name.clone(),
                buffer: buffer_kind,
                max_bytes,
                queue: tx.gauge(),
            });
            let done =
                sinks::spawn(&s.name, sink, rx).map_err(|e| format!("sink {}: {e}", s.name))?;
            routes.push(Route {
                sink: Arc::from(s.name.as_str()),
                pattern: s.pattern,
                queue: tx,
            });
            sink_handles.push((s.name, done));
        }
        let unrouted = metrics.counter(
            "logferry_router_unrouted_records_total",
            "Records whose tag matched no sink (dropped).",
            &[],
        );
        let router = Router::new(routes, unrouted);
        let memory = crate::memory::MemoryBudget::new(config.limits.memory, &metrics);
        let mut tasks = JoinSet::new();
        for s in config.sources {
            let cx = SourceContext {
                name: Arc::from(s.name.as_str()),
                router: router.clone(),
                shutdown: shutdown.clone(),
                metrics: metrics.clone(),
                memory: memory.clone(),
            };
            let task = sources::start(s.kind, cx)
                .await
                .map_err(|e| format!("source {}: {e}", s.name))?;
            tasks.spawn(task);
        }
        if let Some(api) = config.api {
            let state = crate::api::ApiState {
                metrics: metrics.clone(),
                sinks: probes,
                config: config_text,
            };
            let serve = crate::api::start(&api.address, state, shutdown.clone()).await?;
            tokio::spawn(serve);
        }
        // the sources hold the only routers now: when they end, queues close
        drop(router);
        Ok(Pipeline {
            metrics,
            trigger,
            sources: tasks,
            sinks: sink_handles,
            gauges,
        })
    }

    /// Runs until `stop` resolves or every source has finished by itself,
    /// then shuts down in order.
    pub async fn run_until(mut self, stop: impl Future<Output = ()>) -> Stopped {
        tokio::pin!(stop);
        let why = loop {
            tokio::select! {
                _ = &mut stop => {
                    tracing::info!("shutting down: draining in-flight records");
                    break Stopped::Asked;
                }
                joined = self.sources.join_next() => match joined {
                    Some(Ok(())) => continue,
                    Some(Err(e)) => {
                        tracing::error!(error = %e, "a source task failed");
                        continue;
                    }
                    None => {
                        tracing::info!("every source has finished; draining");
                        break Stopped::SourcesFinished;
                    }
                },
            }
        };
        self.trigger.trigger();
        while self.sources.join_next().await.is_some() {}
        for (name, done) in self.sinks {
            if done.await.is_err() {
                tracing::error!(sink = %name, "sink thread ended abnormally");
            }
        }
        tracing::info!(counters = %self.metrics.summary(), "stopped");
        why
    }

    /// Records and bytes each sink holds (queued or being delivered): what
    /// is not acknowledged yet. Usable after `run_until` has taken `self`.
    pub fn held(&self) -> impl Fn() -> Vec<Held> + Send + 'static {
        let gauges = self.gauges.clone();
        move || {
            gauges
                .iter()
                .map(|(n, g)| Held {
                    sink: n.clone(),
                    records: g.held_records(),
                    bytes: g.held_bytes(),
                })
                .collect()
        }
    }
}
