//! `type = "journald"`: entries of the systemd journal, read with
//! libsystemd's sd-journal, the journal's own reader (loaded at start, see
//! `sys.rs`; why this reader and not one of the file format: in
//! `docs/configuration.md`).
//!
//! - `config.rs`: the settings;
//! - `sys.rs`: the sd-journal functions;
//! - `entry.rs`: an entry's fields into a record;
//! - `reader.rs`: the thread that reads the journal;
//! - `progress.rs`: acknowledged cursors and the cursor file;
//! - this file: the task that hands reads to the sinks, takes their
//!   verdicts and keeps the cursor file.

mod config;
pub mod entry;
mod progress;
mod reader;
mod sys;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use config::{JournaldSourceConfig, OneOrMany, ReadFrom};
use progress::{CursorFile, Progress, Settled};
use reader::{Read, Reader, ReaderMetrics, Start};

use crate::ack::AckHandle;
use crate::component::SourceContext;
use crate::event::{Batch, Records};
use crate::metrics::Counter;
use crate::telemetry::RateLimitedLog;

/// How long shutdown waits for the last acknowledgements before the cursor
/// file is written a last time.
const SHUTDOWN_ACK_WAIT: Duration = Duration::from_secs(10);

/// At shutdown, how long a read may wait for queue room; past it it is
/// not handed over (and is read again after a restart).
const HANDOVER_TIMEOUT: Duration = Duration::from_secs(10);

/// A journal opened and positioned, its reader thread running.
pub struct JournaldSource {
    config: JournaldSourceConfig,
    cx: SourceContext,
    progress: Arc<Mutex<Progress>>,
    cursor_file: Option<CursorFile>,
    /// Reads from the reader thread.
    reads: tokio::sync::mpsc::Receiver<Read>,
    /// Tells the reader thread to hand over its last read and end.
    stop: Arc<AtomicBool>,
    reader: Option<std::thread::JoinHandle<()>>,
    metrics: Metrics,
}

impl JournaldSource {
    /// Opens the journal on a reader thread and puts it after the saved
    /// cursor (or where `read_from` says); a journal that cannot be opened
    /// fails the start, saying why.
    pub async fn start(config: JournaldSourceConfig, cx: SourceContext) -> Result<Self, String> {
        sys::available()?;
        let cursor_file = config
            .checkpoint_dir
            .as_deref()
            .map(|d| CursorFile::new(d, &cx.name));
        let saved = match &cursor_file {
            Some(f) => f.load()?,
            None => None,
        };
        let start = match &saved {
            Some(c) => Start::After(c.clone()),
            None => Start::From(config.read_from),
        };
        let progress = Arc::new(Mutex::new(Progress::new(saved)));
        let stop = Arc::new(AtomicBool::new(false));
        let metrics = Metrics::new(&cx.metrics, &cx.name);
        let (tx, reads) = tokio::sync::mpsc::channel(1);
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let thread = {
            let (config, progress, stop) = (config.clone(), progress.clone(), stop.clone());
            let reader_metrics = ReaderMetrics {
                read_errors: metrics.read_errors.clone(),
                warnings: RateLimitedLog::default(),
            };
            let name = cx.name.clone();
            let start = start.clone();
            std::thread::Builder::new()
                .name("source-journald".into())
                .spawn(move || {
                    let opened = reader::open(&config).and_then(|journal| {
                        let mut r =
                            Reader::new(journal, &config, progress, stop, tx, reader_metrics, name);
                        r.position(&start).map(|()| r)
                    });
                    match opened {
                        Ok(r) => {
                            let _ = ready_tx.send(Ok(()));
                            r.run();
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                })
                .map_err(|e| format!("cannot start a thread: {e}"))?
        };
        ready_rx
            .await
            .map_err(|_| "the journal reader ended before it opened the journal".to_string())??;
        let journal = match (&config.directory, config.files.as_slice()) {
            (Some(d), _) => d.display().to_string(),
            (None, []) => "the local journal".into(),
            (None, files) => format!("{} files", files.len()),
        };
        tracing::info!(source = %cx.name, journal, start = ?start,
            current_boot_only = config.current_boot_only(), "journald source reading");
        Ok(JournaldSource {
            config,
            cx,
            progress,
            cursor_file,
            reads,
            stop,
            reader: Some(thread),
            metrics,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands reads to the sinks until the stop signal; then the reader's
    /// last read, the last acknowledgements (bounded) and the cursor file.
    pub async fn run(mut self) {
        let mut shutdown = self.cx.shutdown.clone();
        let mut tick = tokio::time::interval(self.config.checkpoint_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut handing_over = true;
        loop {
            tokio::select! {
                biased;
                _ = shutdown.wait() => break,
                read = self.reads.recv() => match read {
                    Some(read) => {
                        if self.hand_over(read).await.is_err() {
                            handing_over = false;
                            break;
                        }
                    }
                    None => break,
                },
                _ = tick.tick() => self.save_cursor(),
            }
        }
        self.finish(handing_over).await;
    }

    /// Routes the batches of one read, each with its verdict tracked. At
    /// the stop signal a read waiting for room waits at most
    /// [`HANDOVER_TIMEOUT`] more.
    async fn hand_over(&mut self, read: Read) -> Result<(), ()> {
        let generation = read.generation;
        let Some(seq) = self
            .lock()
            .begin(generation, read.first, read.last, read.batches.len())
        else {
            // read before a rewind: it is read again
            return Ok(());
        };
        self.metrics.records.add(read.entries as u64);
        self.metrics.bytes.add(read.bytes as u64);
        for (tag, entries, count) in read.batches {
            let progress = self.progress.clone();
            let rewinds = self.metrics.rewinds.clone();
            let cx = &mut self.cx;
            let mut shutdown = cx.shutdown.clone();
            let name = cx.name.clone();
            let result: Result<(), String> = {
                let routed = async {
                    let charge = cx.memory.acquire(0, entries.len(), &name).await;
                    // made only now: a read given up while it waits for memory
                    // has no verdict (a dropped handle would accept it)
                    let ack = AckHandle::new(move |outcome| {
                        let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
                        if let Settled::Rewind(_) = p.settle(generation, seq, &outcome) {
                            rewinds.inc();
                        }
                    });
                    let batch = Batch::new(tag.into(), Records::Entries(entries.into()), count);
                    cx.router
                        .route(batch.with_ack(ack).with_memory(charge))
                        .await
                };
                tokio::pin!(routed);
                tokio::select! {
                    biased;
                    r = &mut routed => r.map_err(|e| e.to_string()),
                    _ = shutdown.wait() => match tokio::time::timeout(HANDOVER_TIMEOUT, &mut routed).await {
                        Ok(r) => r.map_err(|e| e.to_string()),
                        Err(_) => Err(format!(
                            "no queue room within {HANDOVER_TIMEOUT:?} of the stop signal: the read is not handed over (it is read again after a restart)"
                        )),
                    },
                }
            };
            if let Err(reason) = result {
                self.lock().abandon(seq);
                tracing::warn!(source = %name, reason, "journald source stopped: its records cannot be handed on");
                return Err(());
            }
        }
        Ok(())
    }

    /// Writes the acknowledged cursor if it moved.
    fn save_cursor(&self) {
        let Some(file) = &self.cursor_file else {
            return;
        };
        let cursor = {
            let mut p = self.lock();
            if !p.dirty {
                return;
            }
            p.dirty = false;
            p.acked().map(str::to_string)
        };
        let Some(cursor) = cursor else { return };
        if let Err(e) = file.save(&cursor) {
            self.lock().dirty = true;
            self.metrics.checkpoint_errors.inc();
            tracing::warn!(source = %self.cx.name, path = %file.path().display(), error = %e,
                "cannot write the cursor file; a restart may read again what was delivered");
        }
    }

    /// At shutdown: the reader's last read (unless a hand-over already
    /// failed: what follows a read not handed over is read again after a
    /// restart), then the last verdicts (bounded), then the cursor file.
    async fn finish(&mut self, mut handing_over: bool) {
        self.stop.store(true, Ordering::Release);
        while let Some(read) = self.reads.recv().await {
            if handing_over && self.hand_over(read).await.is_err() {
                handing_over = false;
            }
        }
        if let Some(thread) = self.reader.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
        self.cx.router.release();
        let deadline = tokio::time::Instant::now() + SHUTDOWN_ACK_WAIT;
        while self.lock().unsettled() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.save_cursor();
        let unsettled = self.lock().unsettled();
        tracing::info!(source = %self.cx.name, unacknowledged_reads = unsettled, "journald source stopped");
    }
}

/// Counters of one journald source; see `docs/operations.md`.
struct Metrics {
    records: Counter,
    bytes: Counter,
    read_errors: Counter,
    rewinds: Counter,
    checkpoint_errors: Counter,
}

impl Metrics {
    fn new(r: &crate::metrics::Registry, source: &str) -> Self {
        let l = &[("component", source)];
        let received = crate::sources::Received::new(r, source);
        Metrics {
            records: received.records,
            bytes: received.bytes,
            read_errors: r.counter(
                "logferry_journald_read_errors_total",
                "Journal reads that failed (a corrupt entry, a file gone while read); the reader reads on.",
                l,
            ),
            rewinds: r.counter(
                "logferry_journald_rejected_batches_total",
                "Batches a sink did not keep: the source read the journal again from the first entry not acknowledged.",
                l,
            ),
            checkpoint_errors: r.counter(
                "logferry_journald_checkpoint_errors_total",
                "Failed writes of the cursor file.",
                l,
            ),
        }
    }
}
