//! Builds a pipeline from its configuration, runs it, and stops it in
//! order: sources stop reading and hand over what they have read, the sink
//! queues close once every source is gone, each sink drains its queue and
//! flushes, and only then does the process exit. A reload
//! ([`reload`]) replaces the components whose configuration changed, in
//! the same order, while the others keep running.

pub mod config;
pub mod examples;
pub mod kinds;
pub mod limits;
pub mod reload;
pub mod unit_test;
pub mod validate;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::buffer::open as open_queue;
use crate::component::{shutdown_channel, Shutdown, ShutdownTrigger, SourceContext};
use crate::metrics::Registry;
use crate::router::{Route, RouteSwitch, Router};
use crate::sinks;
use config::{Config, FilterConfig, SinkConfig, SourceConfig};

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

/// At a stop, how long sources have to hand over what they have read
/// (queue room, with a destination down, may never come).
const SOURCE_HANDOVER: Duration = Duration::from_secs(5);

/// Runs `f` for at most `bound`, less if `stopping` resolves first;
/// true if it finished.
async fn bounded<F: Future>(bound: Duration, stopping: &mut Shutdown, f: F) -> bool {
    tokio::select! {
        _ = f => true,
        _ = tokio::time::sleep(bound) => false,
        _ = stopping.wait() => false,
    }
}

/// The running filters of `filters`, in their order: what `run` puts in
/// every router, and what `logferry test` feeds.
pub fn build_filters(
    filters: &[FilterConfig],
    metrics: &Registry,
) -> Result<Vec<Arc<dyn crate::router::Filter>>, String> {
    filters
        .iter()
        .map(|f| {
            kinds::build_filter(&f.name, f.pattern.clone(), &f.kind, metrics)
                .map_err(|e| format!("[filters.{}]: {e}", f.name))
        })
        .collect()
}

/// How often the filter timer looks while a filter that holds records
/// (multiline) is configured: a held record goes out at most this long
/// after its flush timeout.
const FILTER_TICK: Duration = Duration::from_millis(250);

/// Runs for the pipeline's life: hands on held filter records that are
/// due (multiline's flush timeout) when no batch comes to carry them,
/// through the filters after the one that held them and on to the sinks.
/// It never waits for a sink: each sink is fed apart
/// ([`crate::router::SinkFeeds`]), so a sink whose queue is full holds up
/// only the records bound for it. A feed's send that fails (a reload
/// closed the sink's queue) rejects its batch, and its sources send its
/// lines again.
async fn filter_timer(mut router: Router) {
    let mut feeds = crate::router::SinkFeeds::default();
    loop {
        let now = std::time::Instant::now();
        let next = router.flush_filters_to(now, false, &mut feeds);
        let until = next.map_or(now + FILTER_TICK, |n| n.min(now + FILTER_TICK));
        tokio::time::sleep_until(until.into()).await;
    }
}

/// Least time the stop gives filters to hand on what they hold, however
/// long the sources took.
const FILTER_HANDOVER_MIN: Duration = Duration::from_secs(1);

/// A started pipeline.
pub struct Pipeline {
    pub metrics: Registry,
    /// What runs now: the start's configuration, changed by each reload.
    config: Config,
    switch: RouteSwitch,
    /// The router every new source clones.
    router: Router,
    /// Hands on what filters hold past their deadline (multiline's flush
    /// timeout) when no batch comes; see [`filter_timer`]. Runs only while
    /// such a filter is configured: a pipeline without one has no timer.
    filter_timer: Option<tokio::task::JoinHandle<()>>,
    memory: crate::memory::MemoryBudget,
    sources: HashMap<String, RunningSource>,
    next_source_id: u64,
    /// Ids of sources whose task has ended.
    finished_tx: mpsc::UnboundedSender<u64>,
    finished_rx: mpsc::UnboundedReceiver<u64>,
    /// Stopped sources still finishing (forward connections sending their
    /// last acks).
    stopping: Vec<tokio::task::JoinHandle<()>>,
    sinks: HashMap<String, RunningSink>,
    /// Sink queue gauges, kept current across reloads.
    gauges: Arc<Mutex<Vec<(String, crate::buffer::QueueGauge)>>>,
    /// What `/ready` reads, per running sink.
    probes: Arc<Mutex<Vec<crate::api::SinkProbe>>>,
    /// What `GET /config` shows (masked), replaced by each reload.
    config_text: Arc<Mutex<String>>,
    /// Stops the `[api]` endpoint.
    api_trigger: ShutdownTrigger,
    reload_rx: mpsc::Receiver<crate::api::reload::Request>,
    reload_handle: crate::api::reload::ReloadHandle,
    /// Where a reload reads the new configuration from.
    reload_from: reload::ReloadFrom,
    /// Lets go of start-up code after each reload too (see
    /// [`Pipeline::release_start_up_code`]).
    release_code: bool,
    /// Where forward sinks start: set from the sources of the start's
    /// configuration, and of each reload's.
    forward_placement: sinks::Placement,
}

/// Where the forward sinks of a pipeline with `sources` run: on a thread
/// of their own when every source reads on one, else on the runtime the
/// network sources share.
fn forward_placement(sources: &[SourceConfig]) -> sinks::Placement {
    if sources.iter().all(|s| s.kind.reads_on_own_thread()) {
        sinks::Placement::OwnThread
    } else {
        sinks::Placement::Runtime
    }
}

/// A running source: its stop signal and the task watching it.
struct RunningSource {
    id: u64,
    trigger: ShutdownTrigger,
    watcher: tokio::task::JoinHandle<()>,
    /// Resolves once the source routes nothing more.
    released: crate::router::Released,
}

/// A running sink: resolves once it has drained its queue and flushed.
struct RunningSink {
    name: String,
    /// For the failure counter of a sink thread that ended abnormally.
    metrics: Registry,
    done: tokio::sync::oneshot::Receiver<()>,
    /// Stops it before it has drained (a reload past its bound).
    stop: sinks::StopSink,
}

impl RunningSink {
    /// Waits for the sink to drain and flush (its queue must be closed).
    /// Past `bound`, or once `stopping` resolves, stops it where it is;
    /// returns false then.
    async fn finish(mut self, bound: Duration, stopping: &mut Shutdown) -> bool {
        let drained = tokio::select! {
            ended = &mut self.done => return self.ended(ended),
            _ = tokio::time::sleep(bound) => false,
            _ = stopping.wait() => false,
        };
        let RunningSink {
            name,
            metrics,
            done,
            stop,
        } = self;
        stop.stop();
        let ended = done.await;
        Self::report(&metrics, &name, ended) && drained
    }

    fn ended(&self, ended: Result<(), tokio::sync::oneshot::error::RecvError>) -> bool {
        Self::report(&self.metrics, &self.name, ended)
    }

    fn report(
        metrics: &Registry,
        name: &str,
        ended: Result<(), tokio::sync::oneshot::error::RecvError>,
    ) -> bool {
        if ended.is_err() {
            crate::telemetry::component_failed(metrics, name, "sink thread ended abnormally");
        }
        true
    }
}

impl Pipeline {
    /// Starts every sink, then every source (binding their listeners).
    pub async fn start(config: Config) -> Result<Pipeline, String> {
        let metrics = Registry::new();
        limits::check(&config, &metrics);
        // both series from the start, so that a rate or an alert sees 0
        reload::reloads(&metrics, "ok");
        reload::reloads(&metrics, "rejected");
        let config_text = Arc::new(Mutex::new(config.shown.clone()));
        let unrouted = metrics.counter(
            "logferry_router_unrouted_records_total",
            "Records whose tag matched no sink (dropped).",
            &[],
        );
        let router = Router::new(Vec::new(), unrouted);
        let memory = crate::memory::MemoryBudget::new(config.limits.memory, &metrics);
        let (finished_tx, finished_rx) = mpsc::unbounded_channel();
        let (reload_handle, reload_rx) = crate::api::reload::channel();
        let (api_trigger, api_shutdown) = shutdown_channel();
        let mut pipeline = Pipeline {
            metrics,
            config: Config {
                sources: Vec::new(),
                filters: Vec::new(),
                sinks: Vec::new(),
                api: config.api.clone(),
                limits: config.limits.clone(),
                tree: toml::Table::new(),
                shown: String::new(),
            },
            probes: Arc::default(),
            config_text: config_text.clone(),
            switch: router.switch(),
            filter_timer: None,
            router,
            memory,
            sources: HashMap::new(),
            stopping: Vec::new(),
            next_source_id: 0,
            finished_tx,
            finished_rx,
            sinks: HashMap::new(),
            gauges: Arc::default(),
            api_trigger,
            reload_rx,
            reload_handle,
            reload_from: reload::ReloadFrom::Nothing,
            release_code: false,
            forward_placement: forward_placement(&config.sources),
        };
        let mut routes = Vec::new();
        for s in config.sinks {
            routes.push(pipeline.start_sink(&s)?);
            pipeline.config.sinks.push(s);
        }
        drop(pipeline.switch.replace(routes));
        pipeline.set_filters(config.filters)?;
        for s in config.sources {
            pipeline.start_source(&s).await?;
            pipeline.config.sources.push(s);
        }
        if let Some(api) = &config.api {
            let state = crate::api::ApiState {
                metrics: pipeline.metrics.clone(),
                sinks: pipeline.probes.clone(),
                config: config_text.clone(),
                reload: Some(pipeline.reload_handle.clone()),
                taps: Some(pipeline.router.taps()),
                memory: pipeline.memory.clone(),
            };
            let serve = crate::api::start(api, state, api_shutdown).await?;
            tokio::spawn(serve);
        }
        Ok(pipeline)
    }

    /// Opens the queue of sink `s` and starts it on its thread; returns
    /// its route.
    /// Builds `filters` and puts them in place for every router at once.
    fn set_filters(&mut self, filters: Vec<FilterConfig>) -> Result<(), String> {
        let built = build_filters(&filters, &self.metrics)?;
        let holding = built.iter().any(|f| f.holds());
        let replaced = self.switch.set_filters(built);
        // what replaced filters hold (multiline records) goes on through
        // the new ones: a line answered once held must not be lost
        if replaced.iter().any(|f| f.holds()) {
            let mut feeds = crate::router::SinkFeeds::default();
            self.router.clone().flush_replaced(&replaced, &mut feeds);
        }
        self.config.filters = filters;
        match (holding, self.filter_timer.take()) {
            (true, Some(t)) => self.filter_timer = Some(t),
            (true, None) => {
                self.filter_timer = Some(tokio::spawn(filter_timer(self.router.clone())))
            }
            (false, Some(t)) => t.abort(),
            (false, None) => {}
        }
        Ok(())
    }

    fn start_sink(&mut self, s: &SinkConfig) -> Result<Route, String> {
        self.metrics.register_component(&s.name, s.kind.type_name());
        let sink = kinds::build_sink(&s.name, s.kind.clone(), &s.settle, &self.metrics)
            .map_err(|e| format!("sink {}: {e}", s.name))?;
        let (tx, rx) = open_queue(&s.name, s.buffer.clone(), &self.metrics)
            .map_err(|e| format!("sink {}: buffer: {e}", s.name))?;
        let (done, stop) = sinks::spawn_stoppable(&s.name, sink, rx, self.forward_placement)
            .map_err(|e| format!("sink {}: {e}", s.name))?;
        Ok(self.running(s, &s.buffer, tx, done, stop))
    }

    /// Puts a [`sinks::hold`] stand-in in place of sink `s`, which cannot
    /// start: its records wait in a memory queue, not acknowledged (and
    /// `/ready` turns 503 once it is full).
    fn start_holding(&mut self, s: &SinkConfig) -> Route {
        let buffer = s.buffer.memory_stand_in();
        let (tx, rx) = crate::buffer::queue(&s.name, buffer.clone(), &self.metrics);
        let (done, stop) = sinks::hold::spawn_holding(rx);
        self.running(s, &buffer, tx, done, stop)
    }

    /// Enters a started sink in the pipeline's books (its gauges, its
    /// `/ready` probe, the running sinks); returns its route.
    fn running(
        &mut self,
        s: &SinkConfig,
        buffer: &crate::buffer::BufferConfig,
        tx: crate::buffer::QueueSender,
        done: tokio::sync::oneshot::Receiver<()>,
        stop: sinks::StopSink,
    ) -> Route {
        queue_metrics(&self.metrics, &s.name, tx.gauge(), buffer.max_bytes);
        let mut probes = self.probes.lock().unwrap_or_else(|e| e.into_inner());
        probes.retain(|p| p.name != s.name);
        probes.push(crate::api::SinkProbe {
            name: s.name.clone(),
            buffer: buffer.kind,
            max_bytes: buffer.max_bytes,
            queue: tx.gauge(),
        });
        drop(probes);
        let mut gauges = self.gauges.lock().unwrap_or_else(|e| e.into_inner());
        gauges.retain(|(n, _)| *n != s.name);
        gauges.push((s.name.clone(), tx.gauge()));
        drop(gauges);
        self.sinks.insert(
            s.name.clone(),
            RunningSink {
                name: s.name.clone(),
                metrics: self.metrics.clone(),
                done,
                stop,
            },
        );
        Route {
            sink: Arc::from(s.name.as_str()),
            pattern: s.pattern.clone(),
            queue: tx,
        }
    }

    /// Takes sink `name` out of the pipeline's books (its probes and
    /// gauges), to be finished by the caller.
    fn forget_sink(&mut self, name: &str) -> Option<RunningSink> {
        self.probes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p| p.name != name);
        self.gauges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(n, _)| n != name);
        self.sinks.remove(name)
    }

    /// Starts source `s` (binding its listener) with its own stop signal.
    async fn start_source(&mut self, s: &SourceConfig) -> Result<(), String> {
        self.metrics.register_component(&s.name, s.kind.type_name());
        let (trigger, shutdown) = shutdown_channel();
        let (router, released) = self.router.for_source(&s.name);
        let cx = SourceContext {
            name: Arc::from(s.name.as_str()),
            router,
            shutdown,
            metrics: self.metrics.clone(),
            memory: self.memory.clone(),
        };
        let task = kinds::start_source(s.kind.clone(), cx)
            .await
            .map_err(|e| format!("source {}: {e}", s.name))?;
        let id = self.next_source_id;
        self.next_source_id += 1;
        let finished = self.finished_tx.clone();
        let task = tokio::spawn(task);
        let (metrics, name) = (self.metrics.clone(), s.name.clone());
        let watcher = tokio::spawn(async move {
            if let Err(e) = task.await {
                crate::telemetry::component_failed(
                    &metrics,
                    &name,
                    &format!("a source task failed: {e}"),
                );
            }
            let _ = finished.send(id);
        });
        self.sources.insert(
            s.name.clone(),
            RunningSource {
                id,
                trigger,
                watcher,
                released,
            },
        );
        Ok(())
    }

    /// Where [`ReloadHandle::reload`](crate::api::reload::ReloadHandle::reload) reads
    /// the new configuration (nothing, by default: reloads are refused).
    pub fn reload_from(&mut self, from: reload::ReloadFrom) {
        self.reload_from = from;
    }

    /// Lets go of the code only the start ran, shortly after it and after
    /// each reload (see [`crate::memory::code`]): for a long-lived process,
    /// whose resident memory is then mostly the code it runs for records.
    pub fn release_start_up_code(&mut self) {
        self.release_code = true;
        crate::memory::code::release_soon();
    }

    /// Asks this pipeline to reload, from a signal handler or the API.
    pub fn reload_handle(&self) -> crate::api::reload::ReloadHandle {
        self.reload_handle.clone()
    }

    /// Runs until `stop` resolves or every source has finished by itself,
    /// serving reload requests meanwhile, then shuts down in order.
    pub async fn run_until(mut self, stop: impl Future<Output = ()>) -> Stopped {
        tokio::pin!(stop);
        let why = loop {
            tokio::select! {
                _ = &mut stop => {
                    tracing::info!("shutting down: draining in-flight records");
                    break Stopped::Asked;
                }
                Some(id) = self.finished_rx.recv() => {
                    self.sources.retain(|_, s| s.id != id);
                    if self.sources.is_empty() {
                        tracing::info!("every source has finished; draining");
                        break Stopped::SourcesFinished;
                    }
                }
                Some(request) = self.reload_rx.recv() => {
                    // a stop signal during the reload cuts its waits short,
                    // and the stop follows at once
                    let (cut, stopping) = shutdown_channel();
                    let reload = self.reload(stopping);
                    tokio::pin!(reload);
                    let mut asked = false;
                    let outcome = loop {
                        tokio::select! {
                            outcome = &mut reload => break outcome,
                            _ = &mut stop, if !asked => {
                                asked = true;
                                cut.trigger();
                            }
                        }
                    };
                    let _ = request.reply.send(outcome);
                    if asked {
                        tracing::info!("shutting down: draining in-flight records");
                        break Stopped::Asked;
                    }
                }
            }
        };
        for s in self.sources.values() {
            s.trigger.trigger();
        }
        // every source hands over what it has read, for a bounded time: a
        // full queue (a dead destination) must not hold the stop up
        let (_never, mut no_stop) = shutdown_channel();
        let handover_until = tokio::time::Instant::now() + SOURCE_HANDOVER;
        for (name, mut s) in std::mem::take(&mut self.sources) {
            let left = handover_until.saturating_duration_since(tokio::time::Instant::now());
            if !bounded(left, &mut no_stop, s.released.wait()).await {
                tracing::warn!(source = %name, bound = ?SOURCE_HANDOVER,
                    "source still handing over at the stop; what it has not queued is not acknowledged");
            }
            self.stopping.push(s.watcher);
        }
        // what filters still hold (multiline records) goes on now, before
        // the queues close, within what is left of the handover bound (at
        // least a moment, so that slow sources do not cost the records)
        if let Some(t) = self.filter_timer.take() {
            t.abort();
            let left = handover_until
                .saturating_duration_since(tokio::time::Instant::now())
                .max(FILTER_HANDOVER_MIN);
            // each sink fed apart: a dead one costs only its own records
            let mut router = self.router.clone();
            let mut feeds = crate::router::SinkFeeds::default();
            router.flush_filters_to(std::time::Instant::now(), true, &mut feeds);
            if !feeds.finish(left).await {
                self.metrics
                    .counter(
                        "logferry_filter_handover_timeouts_total",
                        "Stops at which filters could not hand on the records they held (multiline) in time; their sources send them again.",
                        &[],
                    )
                    .inc();
                tracing::warn!(bound = ?left,
                    "filters still handing over held records at the stop; their sources send them again");
            }
        }
        // close the queues (a handover still waiting gives up), let every
        // sink drain within its drain_timeout while the sources' last
        // acknowledgements come back
        for r in self.switch.close() {
            r.queue.close();
        }
        let mut sinks = tokio::task::JoinSet::new();
        for (_, sink) in std::mem::take(&mut self.sinks) {
            let mut no_stop = no_stop.clone();
            sinks.spawn(async move { sink.finish(Duration::MAX, &mut no_stop).await });
        }
        for watcher in std::mem::take(&mut self.stopping) {
            let _ = watcher.await;
        }
        while sinks.join_next().await.is_some() {}
        self.api_trigger.trigger();
        tracing::info!(counters = %self.metrics.summary(), "stopped");
        why
    }

    /// Records and bytes each sink holds (queued or being delivered): what
    /// is not acknowledged yet. Usable after `run_until` has taken `self`.
    pub fn held(&self) -> impl Fn() -> Vec<Held> + Send + 'static {
        let gauges = self.gauges.clone();
        move || {
            gauges
                .lock()
                .unwrap_or_else(|e| e.into_inner())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn placement_of(sources: &str) -> sinks::Placement {
        let text = format!("{sources}\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"127.0.0.1:24224\" }}]\n");
        let config = Config::parse(&text, "test.toml").unwrap();
        forward_placement(&config.sources)
    }

    #[test]
    fn forward_sinks_run_on_a_thread_of_their_own_only_where_every_source_does() {
        let tail = "[sources.app]\ntype = \"tail\"\npaths = [\"/var/log/*.log\"]\ntag = \"app\"\n";
        let forward = "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n";
        assert_eq!(placement_of(tail), sinks::Placement::OwnThread);
        assert_eq!(placement_of(forward), sinks::Placement::Runtime);
        assert_eq!(
            placement_of(&format!("{tail}{forward}")),
            sinks::Placement::Runtime
        );
    }
}
