//! Sinks: where records leave the pipeline.
//!
//! Every sink here runs on a thread of its own with a single-threaded
//! runtime: its writes may block (a file, stdout) without stalling the
//! sources' runtime, and it needs no locks. The loop takes every batch that
//! is already queued, then flushes once the queue is momentarily empty, so a
//! busy sink writes large blocks and an idle one writes at once.
//!
//! The forward sink is the exception: it only encodes and writes to
//! sockets, so it runs as tasks of the sources' runtime. A relay's
//! connection task then hands a chunk to it and the chunk is sent in the
//! same turn of the same thread; on its own thread, every chunk would wake
//! that thread too (at 10 chunks a second, most of a relay's CPU).

pub mod counter;
pub mod file;
pub mod forward;
pub mod hold;
pub mod http;
pub mod kafka;
pub mod loki;
pub mod name;
pub mod null;
pub mod opensearch;
pub mod otlp;
pub mod s3;
pub mod settle;
pub mod splunk_hec;
pub mod stdout;
pub mod syslog;
pub mod verdict;

use std::time::{Duration, Instant};

use crate::buffer::{Delivery, Gathered, QueueReceiver};
use crate::metrics::{Counter, Registry};
use forward::ForwardSink;
use http::HttpSink;
use kafka::KafkaSink;
use loki::LokiSink;
use opensearch::OpenSearchSink;
use otlp::OtlpSink;
use s3::S3Sink;
use splunk_hec::SplunkHecSink;

/// Counters every sink keeps.
#[derive(Clone)]
pub struct SinkMetrics {
    pub records: Counter,
    pub bytes: Counter,
    pub errors: Counter,
    pub rejected_records: Counter,
}

impl SinkMetrics {
    pub fn new(r: &Registry, sink: &str) -> Self {
        let l = &[("component", sink)];
        SinkMetrics {
            records: r.counter(
                "logferry_sink_records_total",
                "Records a sink has accepted.",
                l,
            ),
            bytes: r.counter("logferry_sink_bytes_total", "Bytes a sink has written.", l),
            errors: r.counter("logferry_sink_errors_total", "Write errors in a sink.", l),
            rejected_records: r.counter(
                "logferry_sink_rejected_records_total",
                "Records a sink could not keep (not acknowledged to their source).",
                l,
            ),
        }
    }
}

/// The behaviour of a sink; the loop in [`run`] drives it.
pub trait Sink: Send + 'static {
    /// Takes one batch. The sink may keep the delivery until the batch is
    /// written, and must settle it then (accept or reject).
    fn take(&mut self, delivery: Delivery);
    /// Writes out everything taken so far and settles those deliveries.
    fn flush(&mut self);
    /// How often [`Sink::tick`] should run, if at all: once per interval
    /// while the sink is idle (at [`Sink::resting_tick_interval`] while it
    /// rests); a sink being written to ticks in the turns of its writes
    /// instead, at least every one and a half intervals and at most every
    /// half.
    fn tick_interval(&self) -> Option<Duration> {
        None
    }
    /// How often [`Sink::tick`] runs while the sink rests (holds nothing
    /// to write or to settle, so its ticks have less to do), if less often
    /// than [`Sink::tick_interval`]; `None`: it is not resting now.
    fn resting_tick_interval(&self) -> Option<Duration> {
        None
    }
    /// Periodic work (time-based rotation, rate reports).
    fn tick(&mut self) {}
    /// When records held for a retry are due: [`Sink::flush`] runs then.
    fn retry_at(&self) -> Option<Instant> {
        None
    }
    /// Called once after the queue is closed and drained.
    fn finish(&mut self) {
        self.flush();
    }
    /// How long a batch nobody waits for may wait for more before the
    /// sink writes (`disk`: the sink reads a disk buffer). 0: written as
    /// soon as the queue runs empty.
    fn flush_interval(&self, _disk: bool) -> Duration {
        Duration::ZERO
    }
    /// Records or bytes taken that end a [`Sink::flush_interval`] early.
    fn flush_threshold(&self) -> (usize, usize) {
        (usize::MAX, usize::MAX)
    }
}

/// How long a sink that gathers batches waits for more by default when it
/// reads a disk buffer: there the forward and tcp sources read each chunk
/// as it arrives (their linger is 0, so a kill -9 loses nothing), the
/// records are safe on disk, and the path's one linger is the sink's. The
/// forward source's default linger, so the path's latency stays what it
/// is with memory queues.
pub const DISK_FLUSH_INTERVAL: Duration = Duration::from_millis(500);

/// Bytes of batches that end a gathering sink's wait early when it has no
/// measure of its own (a request's or a write buffer's size).
pub const GATHER_BYTES: usize = 1024 * 1024;

/// A sink's `flush_interval`: the setting (`set`), else 0 on a memory
/// queue and [`DISK_FLUSH_INTERVAL`] on a disk buffer (`disk`).
pub fn flush_interval(set: Option<Duration>, disk: bool) -> Duration {
    set.unwrap_or(if disk {
        DISK_FLUSH_INTERVAL
    } else {
        Duration::ZERO
    })
}

/// A built sink, ready to run on its thread.
pub enum SinkRunner {
    /// Driven by [`drive`]: takes batches, flushes when the queue runs dry.
    Blocking(Box<dyn Sink>),
    /// Sends to forward servers; runs its own loop over the queue, as a
    /// task of the sources' runtime rather than on a thread of its own.
    Forward(Box<ForwardSink>),
    /// Produces to Kafka; runs its own loop over the queue.
    Kafka(Box<KafkaSink>),
    /// Sends requests to an HTTP endpoint; runs its own loop over the queue.
    Http(Box<HttpSink>),
    /// Pushes to Grafana Loki's push API; runs its own loop.
    Loki(Box<LokiSink>),
    /// Indexes into OpenSearch or Elasticsearch; runs its own loop.
    OpenSearch(Box<OpenSearchSink>),
    /// Exports OpenTelemetry logs over OTLP/HTTP; runs its own loop.
    Otlp(Box<OtlpSink>),
    /// Stores objects in an S3 bucket; runs its own loop.
    S3(Box<S3Sink>),
    /// Sends events to a Splunk HTTP Event Collector; runs its own loop.
    SplunkHec(Box<SplunkHecSink>),
}

/// Runs `sink` on its own thread until its queue is closed and drained.
/// The returned handle resolves when the sink has finished.
pub fn spawn(
    name: &str,
    sink: SinkRunner,
    rx: QueueReceiver,
) -> std::io::Result<tokio::sync::oneshot::Receiver<()>> {
    spawn_stoppable(name, sink, rx, Placement::Runtime).map(|(done, _)| done)
}

/// Where a forward sink runs; every other sink runs on a thread of its
/// own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// On the runtime of the network sources (forward, HTTP, …): a batch
    /// one of them hands over is sent in the same turn, with no thread
    /// woken for it.
    Runtime,
    /// On a thread of its own, for a pipeline whose sources all read on
    /// threads of their own (tail): a batch handed over from such a thread
    /// wakes this one thread, where on the shared runtime it wakes a
    /// worker, which wakes the other to look for more work.
    OwnThread,
}

/// Stops a sink that is still draining: it is dropped at its next wait,
/// and with it every batch it holds, unsettled (a reload hands those to
/// the replacement). A sink blocked in a system call (a file write) stops
/// only once that returns.
pub struct StopSink(tokio::sync::oneshot::Sender<()>);

impl StopSink {
    pub fn stop(self) {
        let _ = self.0.send(());
    }
}

/// Like [`spawn`], with a way to stop the sink before it has drained.
pub fn spawn_stoppable(
    name: &str,
    sink: SinkRunner,
    rx: QueueReceiver,
    placement: Placement,
) -> std::io::Result<(tokio::sync::oneshot::Receiver<()>, StopSink)> {
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let stopped = async move {
        // a dropped `StopSink` stops nothing
        if stop_rx.await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let end = rx.end();
    // the forward sink runs where its sources do (see [`Placement`])
    let runtime = tokio::runtime::Handle::try_current().ok();
    let sink = match (sink, runtime.filter(|_| placement == Placement::Runtime)) {
        (SinkRunner::Forward(sink), Some(runtime)) => {
            runtime.spawn(async move {
                sink.run(rx, stopped).await;
                end.sink_done();
                let _ = done_tx.send(());
            });
            return Ok((done_rx, StopSink(stop_tx)));
        }
        (sink, _) => sink,
    };
    std::thread::Builder::new()
        .name(format!("sink-{name}"))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a current-thread runtime always builds");
            match sink {
                SinkRunner::Blocking(mut sink) => {
                    if rt.block_on(until_stopped(drive(&mut *sink, rx), stopped)) {
                        sink.finish();
                    }
                }
                SinkRunner::Forward(sink) => rt.block_on(sink.run(rx, stopped)),
                SinkRunner::Kafka(sink) => {
                    rt.block_on(until_stopped(sink.run(rx), stopped));
                }
                SinkRunner::Http(sink) => {
                    rt.block_on(until_stopped(sink.run(rx), stopped));
                }
                SinkRunner::Loki(sink) => {
                    rt.block_on(until_stopped(sink.run(rx), stopped));
                }
                SinkRunner::OpenSearch(sink) => {
                    rt.block_on(until_stopped(sink.run(rx), stopped));
                }
                SinkRunner::Otlp(sink) => {
                    rt.block_on(until_stopped(sink.run(rx), stopped));
                }
                SinkRunner::S3(sink) => {
                    rt.block_on(until_stopped(sink.run(rx), stopped));
                }
                SinkRunner::SplunkHec(sink) => {
                    rt.block_on(until_stopped(sink.run(rx), stopped));
                }
            }
            // tasks the sink spawned may still hold deliveries: they are
            // gone before the queue counts what it keeps
            drop(rt);
            end.sink_done();
            let _ = done_tx.send(());
        })?;
    Ok((done_rx, StopSink(stop_tx)))
}

/// Runs `run` unless `stopped` comes first; true if it ran to its end.
async fn until_stopped(
    run: impl std::future::Future<Output = ()>,
    stopped: impl std::future::Future<Output = ()>,
) -> bool {
    tokio::select! {
        biased;
        _ = stopped => false,
        _ = run => true,
    }
}

async fn drive(sink: &mut dyn Sink, mut rx: QueueReceiver) {
    let every = sink.tick_interval();
    let mut next_tick = every.map(|e| tokio::time::Instant::now() + e);
    let mut ticked_at: Option<tokio::time::Instant> = None;
    let mut took = false;
    // with a flush interval, what was taken is written at its end (or once
    // a client waits for a batch, or enough has come)
    let mut gather = Gather::new(sink.flush_interval(rx.is_disk()), sink.flush_threshold());
    loop {
        while let Some(d) = rx.try_recv() {
            gather.count(&d);
            sink.take(d);
            took = true;
        }
        let flushed = took && gather.is_due();
        if flushed {
            took = false;
            gather.reset();
            sink.flush();
        }
        if let (Some(at), Some(e)) = (next_tick, every) {
            let now = tokio::time::Instant::now();
            if now >= at {
                // a busy sink still ticks on time
                sink.tick();
                ticked_at = Some(now);
                next_tick = Some(at + e);
            } else if flushed {
                // a write's turn also ticks, at most every half period, and
                // the next tick of its own is due a period and a half after
                // the last tick: a sink written to about once a period
                // wakes only for its writes, even when they come just after
                // a tick of its own (a reader upstream lingering a period)
                let t = match ticked_at {
                    Some(t) if now < t + e / 2 => t,
                    _ => {
                        sink.tick();
                        now
                    }
                };
                ticked_at = Some(t);
                next_tick = Some(t + e + e / 2);
            }
        }
        let retry_at = sink.retry_at().map(tokio::time::Instant::from_std);
        let next = tokio::select! {
            d = gather.next(&mut rx) => d,
            _ = crate::timer::sleep_until_opt(next_tick) => {
                sink.tick();
                let now = tokio::time::Instant::now();
                ticked_at = Some(now);
                next_tick = match sink.resting_tick_interval() {
                    // nothing held: each tick of its own wakes its thread
                    // for little, so fewer of them
                    Some(rest) => Some(now + rest),
                    None => every.and_then(|e| next_tick.map(|at| at + e)),
                };
                continue;
            }
            _ = crate::timer::sleep_until_opt(retry_at) => {
                sink.flush();
                continue;
            }
        };
        match next {
            Gathered::Batch(d) => {
                gather.count(&d);
                sink.take(d);
                took = true;
            }
            // the flush interval is over: written at the top of the loop
            Gathered::Timeout => {}
            Gathered::Closed => break,
        }
    }
}

/// What a sink took while it gathers for its `flush_interval`: how much,
/// whether a client waits for any of it, and until when it may wait.
pub(crate) struct Gather {
    /// 0: nothing waits.
    interval: Duration,
    /// Records and bytes taken that end the wait early.
    threshold: (usize, usize),
    taken: (usize, usize),
    waited_on: bool,
    /// The interval's end, from the first batch taken.
    until: Option<tokio::time::Instant>,
    /// Wakes the wait at `until`.
    timer: crate::timer::Deadline,
}

impl Gather {
    pub(crate) fn new(interval: Duration, threshold: (usize, usize)) -> Gather {
        Gather {
            interval,
            threshold,
            taken: (0, 0),
            waited_on: false,
            until: None,
            timer: crate::timer::Deadline::new_if(!interval.is_zero()),
        }
    }

    /// Counts a batch taken; the first starts the interval.
    pub(crate) fn count(&mut self, d: &Delivery) {
        let b = d.batch();
        self.taken.0 += b.count;
        self.taken.1 += b.byte_len();
        self.waited_on |= b.is_waited_on();
        if !self.interval.is_zero() && self.until.is_none() {
            self.until = Some(tokio::time::Instant::now() + self.interval);
        }
    }

    /// Whether what was taken is to be written now: a client waits for a
    /// batch of it, the threshold is reached, or the interval is over (or
    /// 0).
    pub(crate) fn is_due(&self) -> bool {
        self.waited_on
            || self.taken.0 >= self.threshold.0
            || self.taken.1 >= self.threshold.1
            || self
                .until
                .is_none_or(|at| tokio::time::Instant::now() >= at)
    }

    /// What was taken is written: the next batch starts anew.
    pub(crate) fn reset(&mut self) {
        self.taken = (0, 0);
        self.waited_on = false;
        self.until = None;
    }

    /// The next batch: while gathering, woken only for a batch a client
    /// waits for, the threshold, a filling queue, its end or the
    /// interval's end ([`Gathered::Timeout`]).
    pub(crate) async fn next(&mut self, rx: &mut QueueReceiver) -> Gathered {
        next_batch(
            rx,
            &mut self.timer,
            self.until,
            self.threshold.0,
            self.threshold.1,
        )
        .await
    }
}

/// The next batch: while gathering (`flush_at`), woken only for a batch
/// a client waits for, `records` or `bytes` more, a filling queue or its
/// end ([`QueueReceiver::recv_until`]); else as soon as one comes.
pub(crate) async fn next_batch(
    rx: &mut QueueReceiver,
    timer: &mut crate::timer::Deadline,
    flush_at: Option<tokio::time::Instant>,
    records: usize,
    bytes: usize,
) -> Gathered {
    match flush_at {
        Some(at) => rx.recv_until(timer, at, records, bytes).await,
        None => match rx.recv().await {
            Some(d) => Gathered::Batch(d),
            None => Gathered::Closed,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{queue, BufferConfig};
    use crate::event::{Batch, EventTime, Records};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Fails its first flush with a retry due shortly after.
    struct Retrying {
        held: Vec<Delivery>,
        flushes: Arc<AtomicUsize>,
        retry_at: Option<Instant>,
    }

    impl Sink for Retrying {
        fn take(&mut self, d: Delivery) {
            self.held.push(d);
        }
        fn flush(&mut self) {
            let n = self.flushes.fetch_add(1, Ordering::AcqRel);
            if n == 0 {
                self.retry_at = Some(Instant::now() + Duration::from_millis(30));
            } else if self.retry_at.is_some_and(|at| Instant::now() >= at) {
                self.retry_at = None;
                self.held.drain(..).for_each(Delivery::accept);
            }
        }
        fn retry_at(&self) -> Option<Instant> {
            self.retry_at
        }
    }

    #[tokio::test]
    async fn a_pending_retry_is_flushed_when_due_without_new_batches() {
        let registry = Registry::new();
        let (tx, rx) = queue("s", BufferConfig::default(), &registry);
        let flushes = Arc::new(AtomicUsize::new(0));
        let mut sink = Retrying {
            held: Vec::new(),
            flushes: flushes.clone(),
            retry_at: None,
        };
        let gauge = tx.gauge();
        let driver = tokio::spawn(async move {
            drive(&mut sink, rx).await;
            sink.held.len()
        });
        let batch = Batch::new(
            "t".into(),
            Records::Lines {
                data: bytes::Bytes::from_static(b"x\n"),
                time: EventTime::default(),
            },
            1,
        );
        tx.send(batch).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while gauge.held_records() > 0 {
            assert!(Instant::now() < deadline, "the retry never ran");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(flushes.load(Ordering::Acquire) >= 2);
        drop(tx);
        assert_eq!(driver.await.unwrap(), 0);
    }

    /// Ticks every second (`resting`: at this period while it rests);
    /// counts its ticks and those that woke it alone.
    #[derive(Default)]
    struct Ticking {
        flushed_at: Option<tokio::time::Instant>,
        ticks: Arc<AtomicUsize>,
        alone: Arc<AtomicUsize>,
        resting: Option<Duration>,
    }

    impl Sink for Ticking {
        fn take(&mut self, d: Delivery) {
            d.accept();
        }
        fn flush(&mut self) {
            self.flushed_at = Some(tokio::time::Instant::now());
        }
        fn tick_interval(&self) -> Option<Duration> {
            Some(Duration::from_secs(1))
        }
        fn resting_tick_interval(&self) -> Option<Duration> {
            self.resting
        }
        fn tick(&mut self) {
            self.ticks.fetch_add(1, Ordering::AcqRel);
            // the clock stands still within a turn
            if self.flushed_at != Some(tokio::time::Instant::now()) {
                self.alone.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// A [`Ticking`] sink driven from a queue, fed a batch of one line
    /// every second for 20 s from `first` on: its ticks, those that woke
    /// it alone, the queue (to keep it open) and the driver.
    async fn ticking_fed_every_second(
        first: Duration,
    ) -> (
        Arc<AtomicUsize>,
        Arc<AtomicUsize>,
        crate::buffer::QueueSender,
        tokio::task::JoinHandle<()>,
    ) {
        let registry = Registry::new();
        let (tx, rx) = queue("s", BufferConfig::default(), &registry);
        let mut sink = Ticking::default();
        let (ticks, alone) = (sink.ticks.clone(), sink.alone.clone());
        let driver = tokio::spawn(async move { drive(&mut sink, rx).await });
        tokio::time::sleep(first).await;
        for _ in 0..20 {
            let data = bytes::Bytes::from_static(b"x\n");
            let time = EventTime::default();
            let batch = Batch::new("t".into(), Records::Lines { data, time }, 1);
            tx.send(batch).await.unwrap();
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        (ticks, alone, tx, driver)
    }

    #[tokio::test(start_paused = true)]
    async fn a_sink_written_once_a_period_ticks_in_its_writes_turns_only() {
        // out of step with the ticks
        let (ticks, alone, tx, driver) = ticking_fed_every_second(Duration::from_millis(300)).await;
        let written = ticks.load(Ordering::Acquire);
        assert_eq!(
            alone.load(Ordering::Acquire),
            0,
            "a tick woke the sink on its own"
        );
        assert!(written >= 13, "a tick at least every 1.5 s: {written}");
        // idle, it ticks on its own, once a second
        tokio::time::sleep(Duration::from_millis(10_100)).await;
        let idle = ticks.load(Ordering::Acquire) - written;
        assert!((9..=10).contains(&idle), "{idle} ticks in 10 s idle");
        drop(tx);
        driver.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_resting_sink_ticks_on_its_own_at_its_resting_period() {
        let registry = Registry::new();
        let (tx, rx) = queue("s", BufferConfig::default(), &registry);
        let mut sink = Ticking {
            resting: Some(Duration::from_secs(5)),
            ..Ticking::default()
        };
        let ticks = sink.ticks.clone();
        let driver = tokio::spawn(async move { drive(&mut sink, rx).await });
        // the first a period after the start, then every 5 s: 1, 6, 11, 16 s
        tokio::time::sleep(Duration::from_millis(20_500)).await;
        assert_eq!(ticks.load(Ordering::Acquire), 4);
        drop(tx);
        driver.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn writes_just_after_a_tick_of_its_own_take_the_ticks_over() {
        // a reader lingering 1 s upstream: each batch a few milliseconds
        // after the sink's own tick
        let (ticks, alone, tx, driver) =
            ticking_fed_every_second(Duration::from_millis(1_004)).await;
        let alone = alone.load(Ordering::Acquire);
        assert!(alone <= 1, "{alone} ticks woke the sink on their own");
        assert!(
            ticks.load(Ordering::Acquire) >= 13,
            "a tick at least every 1.5 s"
        );
        drop(tx);
        driver.await.unwrap();
    }

    /// Gathers for `interval`; records the batches each flush wrote.
    struct Gathering {
        interval: Duration,
        held: Vec<Delivery>,
        flushes: Arc<std::sync::Mutex<Vec<usize>>>,
    }

    impl Sink for Gathering {
        fn take(&mut self, d: Delivery) {
            self.held.push(d);
        }
        fn flush(&mut self) {
            if !self.held.is_empty() {
                self.flushes.lock().unwrap().push(self.held.len());
                self.held.drain(..).for_each(Delivery::accept);
            }
        }
        fn flush_interval(&self, _disk: bool) -> Duration {
            self.interval
        }
        fn flush_threshold(&self) -> (usize, usize) {
            (10, usize::MAX)
        }
    }

    fn one_line() -> Batch {
        let data = bytes::Bytes::from_static(b"x\n");
        Batch::new(
            "t".into(),
            Records::Lines {
                data,
                time: EventTime::default(),
            },
            1,
        )
    }

    #[tokio::test(start_paused = true)]
    async fn with_a_flush_interval_batches_nobody_waits_for_are_written_together() {
        let registry = Registry::new();
        let (tx, rx) = queue("s", BufferConfig::default(), &registry);
        let flushes = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut sink = Gathering {
            interval: Duration::from_millis(500),
            held: Vec::new(),
            flushes: flushes.clone(),
        };
        // as the sink's thread runs it
        let driver = tokio::spawn(async move {
            drive(&mut sink, rx).await;
            sink.finish();
        });
        let written = || flushes.lock().unwrap().clone();
        // three batches within the interval: one write at its end
        for _ in 0..3 {
            tx.send(one_line()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            written(),
            Vec::<usize>::new(),
            "written before the interval's end"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(written(), vec![3]);
        // a batch a client waits for is written at once, with what came before
        tx.send(one_line()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let waited = one_line()
            .with_ack(crate::ack::AckHandle::new(|_| {}))
            .waited_on();
        tx.send(waited).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(written(), vec![3, 2]);
        // the threshold (10 records) ends the interval early
        for _ in 0..10 {
            tx.send(one_line()).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(written(), vec![3, 2, 10]);
        // a closing queue ends the gathering: what it holds is written
        tx.send(one_line()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        let closed = tokio::time::Instant::now();
        drop(tx);
        driver.await.unwrap();
        assert!(closed.elapsed() < Duration::from_millis(100));
        assert_eq!(written(), vec![3, 2, 10, 1]);
    }
}
