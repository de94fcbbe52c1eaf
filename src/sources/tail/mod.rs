//! `type = "tail"`: follows files through rotation and restarts.
//!
//! - `config.rs`: settings;
//! - `file.rs`: one file: block reads, lines, truncation, acknowledged offsets;
//! - `copy.rs`: the copy a copytruncate leaves beside a file, plain or
//!   compressed;
//! - `checkpoint.rs`: the checkpoint file and its format;
//! - `watch.rs`: the kernel's change events (inotify);
//! - `discover.rs`: which files to follow: globs, events, renames, restarts;
//! - `fds.rs`: the descriptor budget;
//! - `multiline.rs`, `counters.rs`: multiline records, counters;
//! - `shape.rs`: what a source built on this reader (`kubernetes`) makes
//!   of each file: its tag, its rules, its records;
//! - this file: the loop that reads files in turn, sends batches, and
//!   saves acknowledged offsets.
//!
//! The source runs on a thread of its own (file reads block). Each file is
//! read in large blocks; complete lines go out as one batch per block (the
//! bytes as read, no per-line allocation). A batch carries an
//! acknowledgement handle: the file's checkpointed offset advances only
//! over batches every sink has accepted, so kill -9 and restart resends at
//! most about one `checkpoint_interval` of acknowledged lines plus the
//! unacknowledged window, and skips nothing.
//!
//! Files are found from the kernel's events as they happen: a file created
//! under a followed name is opened at once, so it is held by descriptor
//! before it can be renamed away; a rename of a followed (or just created)
//! file is followed to its new name. Globs are expanded again on a timer and
//! after an event-queue overflow, as a safety net.
//!
//! Rotation by rename: the old file stays open and is read to its end, and
//! is released once it has stopped growing and every line is acknowledged;
//! the new file is read from 0. Rotation by copytruncate: the file became
//! shorter than what was read; the lines written between the last read and
//! the truncation are in the copy only, so they are read from the copy
//! (a rotated sibling with the same first bytes, inflated if it was
//! compressed already), then the file from 0. No copy found (removed
//! already, or compressed in a way logferry does not read): those lines are
//! lost, logged and counted.
//!
//! While the reader lets lines gather (its `linger`), nothing a followed
//! directory receives may be lost for it: a new name beside a followed
//! file (a copy being made, a rename) ends the linger and every file is
//! read to its end at once, before the copy can be truncated or removed;
//! a file that gave its descriptor back is watched by itself, and a write
//! to it opens it again at once, so its removal cannot take its lines.

#[doc(hidden)]
pub mod checkpoint;
mod config;
mod copy;
mod counters;
mod discover;
mod fds;
pub mod file;
mod multiline;
mod shape;
mod watch;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

pub use crate::format::multiline::MultilineConfig;
pub use config::{LongLine, TailSourceConfig};
pub use multiline::Multiline;
pub use shape::Shape;

use crate::ack::{AckHandle, AckOutcome};
use crate::component::SourceContext;
use crate::event::{Batch, EventTime, Records};
use checkpoint::{Checkpoint, Entry, Saved};
use counters::{FileCounters, TailMetrics};
use file::{Change, Lines, Reopen, TailedFile};
use multiline::{FileJoiner, Ready};

/// How long a renamed-away file that has stopped growing is kept open.
const ROTATE_WAIT: Duration = Duration::from_secs(5);

/// How soon after a change event that may bring new names the globs are
/// expanded again (a new directory, an overflow).
const RESCAN_AFTER_EVENT: Duration = Duration::from_millis(20);

/// How soon the checkpoint is written after a new file is followed (so a
/// kill -9 right after finds it there).
const CHECKPOINT_NEW_FILE: Duration = Duration::from_millis(100);

/// Most blocks read from one file before the others get a turn.
const BLOCKS_PER_TURN: usize = 16;

/// Every this many lag reports, every open file is looked at (see
/// `TailSource::report_lag`): about every 5 s with the default
/// `poll_interval`.
const LAG_SWEEP: u32 = 20;

/// How long shutdown waits for the last acknowledgements.
const SHUTDOWN_ACK_WAIT: Duration = Duration::from_secs(10);

/// How long shutdown waits to hand over a last partial line or multiline
/// record when a queue is full.
const SHUTDOWN_ROUTE_WAIT: Duration = Duration::from_secs(2);

/// How long released files are remembered, so a later rename that brings
/// one back into view does not read it again.
const RELEASED_MEMORY: Duration = Duration::from_secs(600);

/// An acknowledgement coming back: (file key, generation, sequence, outcome).
type AckEvent = (u64, u64, u64, AckOutcome);

pub struct TailSource {
    config: TailSourceConfig,
    cx: SourceContext,
    metrics: TailMetrics,
    files: HashMap<u64, TailedFile>,
    /// Each followed file's last known name.
    names: HashMap<PathBuf, u64>,
    /// Followed files by place (device, inode).
    places: HashMap<(u64, u64), u64>,
    next_key: u64,
    checkpoint: Option<Checkpoint>,
    /// Offsets from the checkpoint of files not followed (yet), by place.
    saved: Saved,
    /// Released rotated files (offset = their end), by place, with when.
    released: HashMap<(u64, u64), (Entry, Instant)>,
    /// No checkpoint existed at start: files found at start-up follow
    /// `read_from_head`. Otherwise every file not in it is new: from 0.
    first_start: bool,
    acks_tx: mpsc::UnboundedSender<AckEvent>,
    acks: mpsc::UnboundedReceiver<AckEvent>,
    /// The `multiline` rules, if set.
    multiline: Option<std::sync::Arc<Multiline>>,
    /// What a source built on this reader makes of each file, instead of
    /// the `tag`, `multiline` and `message_key` settings.
    shape: Option<Box<dyn Shape>>,
    /// Each file's records being joined (with `multiline` only).
    joiners: HashMap<u64, FileJoiner>,
    /// Records held for files no longer followed (removed while closed),
    /// to be sent at the next read: their file is gone, so nothing
    /// waits for their acknowledgement.
    orphans: Vec<crate::event::Batch>,
    /// Offsets moved since the checkpoint was written.
    dirty: bool,
    next_checkpoint: Instant,
    per_file: HashMap<PathBuf, FileCounters>,
    watcher: Option<watch::Watcher>,
    /// Files that may have something to read, in turn.
    ready: VecDeque<u64>,
    queued: HashSet<u64>,
    /// Files with a change since their lag was last measured: only these,
    /// and files behind, are looked at (fstat) by the next lag report.
    lag_stale: HashSet<u64>,
    /// Lag reports since every file was last looked at.
    lag_reports: u32,
    /// Rescans so far (every [`discover::RESCAN_SWEEP`]th looks at every
    /// file).
    rescans: u32,
    /// The kernel's event queue overflowed since the last rescan: the next
    /// one looks at every file.
    overflowed: bool,
    /// Followed files that gave their descriptor back, by the id of the
    /// watch on each: a write to one opens it again at once, even while
    /// lines gather, so that its removal cannot take what was written.
    closed_watches: HashMap<i32, u64>,
    /// Descriptors the followed files may hold, and how many they hold.
    budget: usize,
    open: usize,
    /// Expand the globs again at this instant (sooner than the timer).
    rescan_soon: Option<Instant>,
    reserve: fds::Reserve,
    warned: crate::telemetry::RateLimitedLog,
    /// `paths` and `exclude`, compiled.
    globs: Vec<glob::Pattern>,
    excludes: Vec<glob::Pattern>,
    /// The router, taken out while a batch is being routed (so
    /// acknowledgements can be handled meanwhile).
    router: Option<crate::router::Router>,
}

impl TailSource {
    pub fn new(config: TailSourceConfig, cx: SourceContext) -> Result<Self, String> {
        let checkpoint = config
            .checkpoint_dir
            .as_ref()
            .map(|d| Checkpoint::new(d, &cx.name));
        let multiline = match &config.multiline {
            Some(m) => {
                let (rules, limits) = m.compile().map_err(|e| format!("multiline: {e}"))?;
                Some(std::sync::Arc::new(Multiline {
                    rules,
                    limits,
                    counters: crate::format::multiline::Counters::new(&cx.metrics, &cx.name),
                }))
            }
            None => None,
        };
        let compile = |globs: &[String]| -> Result<Vec<glob::Pattern>, String> {
            globs
                .iter()
                .map(|p| glob::Pattern::new(p).map_err(|e| format!("glob {p:?}: {e}")))
                .collect()
        };
        let (acks_tx, acks) = mpsc::unbounded_channel();
        let router = cx.router.clone();
        let globs = compile(&config.paths)?;
        let excludes = compile(&config.exclude)?;
        let budget = config.max_open_files.unwrap_or_else(fds::default_budget);
        Ok(TailSource {
            metrics: TailMetrics::new(&cx.metrics, &cx.name),
            next_checkpoint: Instant::now() + config.checkpoint_interval,
            config,
            cx,
            files: HashMap::new(),
            names: HashMap::new(),
            places: HashMap::new(),
            next_key: 0,
            checkpoint,
            saved: HashMap::new(),
            released: HashMap::new(),
            first_start: true,
            acks_tx,
            acks,
            multiline,
            shape: None,
            joiners: HashMap::new(),
            orphans: Vec::new(),
            dirty: false,
            per_file: HashMap::new(),
            watcher: None,
            ready: VecDeque::new(),
            queued: HashSet::new(),
            lag_stale: HashSet::new(),
            lag_reports: 0,
            rescans: 0,
            overflowed: false,
            closed_watches: HashMap::new(),
            budget,
            open: 0,
            rescan_soon: None,
            reserve: fds::Reserve::new(2),
            warned: crate::telemetry::RateLimitedLog::default(),
            globs,
            excludes,
            router: Some(router),
        })
    }

    /// A reader whose files are made into records by `shape`.
    pub fn with_shape(
        config: TailSourceConfig,
        cx: SourceContext,
        shape: Box<dyn Shape>,
    ) -> Result<Self, String> {
        let mut source = TailSource::new(config, cx)?;
        source.shape = Some(shape);
        Ok(source)
    }

    /// The tag of the records of the file at `path`.
    fn tag_for(&mut self, path: &std::path::Path) -> String {
        match &mut self.shape {
            Some(shape) => shape.tag(path),
            None => self.config.tag_for(path),
        }
    }

    /// The `path_key` field of the records of the file whose path is `text`.
    fn path_field<'a>(&'a self, text: &'a str) -> Option<(&'a str, &'a [u8])> {
        self.config
            .path_key
            .as_deref()
            .map(|k| (k, text.as_bytes()))
    }

    /// Joined records of file `path` as a batch's records, and how many.
    fn encode(
        &mut self,
        path: &std::path::Path,
        joined: &[crate::format::multiline::Joined],
    ) -> (Records, usize) {
        match &mut self.shape {
            Some(shape) => {
                let mut out =
                    Vec::with_capacity(joined.iter().map(|j| j.message.len() + 256).sum());
                let count = shape.write(path, joined, &mut out);
                (Records::Entries(bytes::Bytes::from(out)), count)
            }
            None => {
                let path_text = path.to_string_lossy();
                let records = multiline::joined_entries(
                    joined,
                    &self.config.message_key,
                    self.path_field(&path_text),
                );
                (records, joined.len())
            }
        }
    }

    /// Until when the shape holds file `key` unread (open, so that a
    /// rotation cannot take it away meanwhile).
    fn held(&mut self, key: u64) -> Option<Instant> {
        let shape = self.shape.as_mut()?;
        let f = self.files.get(&key)?;
        shape.hold(&f.path)
    }

    /// Whether file `key`'s lines are joined; its joiner is made at its
    /// first lines (`first`: the first of them).
    fn has_joiner(&mut self, key: u64, first: &[u8]) -> bool {
        if self.joiners.contains_key(&key) {
            return true;
        }
        let rules = match (&mut self.shape, self.files.get(&key)) {
            (Some(shape), Some(f)) => shape.multiline(&f.path, first),
            (Some(_), None) => None,
            (None, _) => self.multiline.clone(),
        };
        let Some(rules) = rules else { return false };
        self.joiners.insert(key, FileJoiner::new(rules));
        true
    }

    pub async fn run(mut self) {
        let (soft, hard) = crate::limits::nofile().unwrap_or((0, 0));
        tracing::info!(source = %self.cx.name, max_open_files = self.budget, nofile_soft = soft, nofile_hard = hard, "tail descriptor budget");
        self.watcher = match watch::Watcher::new() {
            Ok(w) => Some(w),
            Err(e) => {
                crate::telemetry::startup_warning(
                    &self.cx.metrics,
                    "no_inotify",
                    &self.cx.name,
                    &format!("no inotify ({e}): files are polled every poll_interval"),
                );
                None
            }
        };
        if let Err(e) = self.start_up() {
            crate::telemetry::component_failed(
                &self.cx.metrics,
                &self.cx.name,
                &format!("cannot read the checkpoint ({e}); the source does not start"),
            );
            return;
        }
        self.save_checkpoint();
        let mut next_rescan = Instant::now() + self.config.refresh_interval;
        let mut last_poll = Instant::now();
        // caught up with its files, it lets lines gather
        let mut linger = crate::sources::linger::Linger::new(self.config.linger);
        // one wake-up per linger, not two (see `deadline`)
        let mut deadline = crate::timer::Deadline::new();
        loop {
            self.drain_acks();
            self.checkpoint_if_due();
            if self.cx.shutdown.is_triggered() {
                break;
            }
            let now = Instant::now();
            let mut quiet = linger.is_quiet();
            if let Some(w) = self.watcher.as_mut() {
                // every event of the burst at once; while lines gather,
                // only new names (a file created there is opened now, before
                // it can be removed, and read at the linger's end)
                let mut changes = if quiet { w.read_names() } else { w.read() };
                if quiet && self.near_rotation(&changes) {
                    // a copy being made, a file renamed or removed: every
                    // file is read to its end now, before a copytruncate
                    // can truncate it and compress the copy away
                    linger.stop();
                    quiet = false;
                    if let Some(w) = self.watcher.as_mut() {
                        changes.extend(w.read());
                    }
                }
                if !changes.is_empty() {
                    self.on_changes(changes);
                }
            }
            if now >= next_rescan || self.rescan_soon.is_some_and(|t| now >= t) {
                self.rescan(false);
                self.rescan_soon = None;
                next_rescan = now + self.config.refresh_interval;
            }
            // a turn that runs anyway also does a poll due within the
            // linger, so that polls do not wake the reader on their own
            let early = now + self.early(self.config.poll_interval);
            if early >= last_poll + self.config.poll_interval
                && self.poll_due(last_poll).is_some_and(|t| early >= t)
            {
                self.poll(now);
                self.report_lag();
                last_poll = now;
            }
            if !quiet {
                match self.read_ready().await {
                    Err(()) => break, // a sink has stopped
                    Ok(true) => {
                        // caught up (no file left mid-backlog): let the
                        // next lines gather
                        if self.ready.is_empty() {
                            linger.caught_up();
                        }
                        continue;
                    }
                    Ok(false) => {}
                }
            }
            // while lines gather, a poll falling due waits for the turn at
            // the linger's end: what it finds is read only then anyway
            let lingering = linger.until().map(|t| t.into_std());
            let mut until = next_rescan;
            if let Some(t) = self.poll_due(last_poll) {
                until = until.min(lingering.map_or(t, |l| t.max(l)));
            }
            if let Some(t) = lingering {
                until = until.min(t);
            }
            if let Some(t) = self.rescan_soon {
                until = until.min(t);
            }
            if self.dirty {
                // so does a checkpoint falling due just before it (written
                // in that turn, see `checkpoint_if_due`)
                let at = self.next_checkpoint;
                let early = self.early(self.config.checkpoint_interval);
                until = until.min(match lingering {
                    Some(l) if at + early >= l => at.max(l),
                    _ => at,
                });
            }
            let watcher = self.watcher.as_mut();
            // acknowledgements do not wake the reader: they only move the
            // checkpoint, and are taken at the top of the loop, which runs
            // at least every `poll_interval`
            tokio::select! {
                _ = async {
                    match watcher {
                        Some(w) if quiet => w.names_ready().await,
                        Some(w) => w.ready().await,
                        None => std::future::pending().await,
                    }
                } => {}
                _ = deadline.sleep_until(until) => {}
                _ = self.cx.shutdown.wait() => {}
            }
        }
        self.finish().await;
    }

    /// At shutdown: hands over partial last lines and pending multiline
    /// records, waits (bounded) for the last acknowledgements, and saves
    /// the checkpoint.
    async fn finish(&mut self) {
        let keys: Vec<u64> = self.files.keys().copied().collect();
        for key in keys {
            let lines = self
                .files
                .get_mut(&key)
                .and_then(|f| f.take_partial_now(&self.config));
            if let Some(lines) = lines {
                if self.send(key, lines, true).await.is_err() {
                    break;
                }
            }
            if self.flush_multiline(key, Flush::Shutdown).await.is_err() {
                break;
            }
        }
        // nothing more to route: the queues may close and drain while the
        // last acknowledgements come back
        self.router = None;
        self.cx.router.release();
        let deadline = Instant::now() + SHUTDOWN_ACK_WAIT;
        while self.files.values().any(|f| !f.settled()) && Instant::now() < deadline {
            tokio::select! {
                Some(ack) = self.acks.recv() => self.on_ack(ack),
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
        self.save_checkpoint();
        let unsettled = self.files.values().filter(|f| !f.settled()).count();
        tracing::info!(source = %self.cx.name, files = self.files.len(), unacknowledged_files = unsettled, "tail stopped");
    }

    /// Marks a file as having something to read.
    fn wake(&mut self, key: u64) {
        self.lag_stale.insert(key);
        if self.queued.insert(key) {
            self.ready.push_back(key);
        }
    }

    /// Whether `f` must be looked at every `poll_interval`: rotated (read
    /// to its end), or in a directory without change events.
    fn needs_looks(&self, f: &file::TailedFile) -> bool {
        let watched = self
            .watcher
            .as_ref()
            .zip(f.path.parent())
            .is_some_and(|(w, dir)| w.is_watched(dir));
        f.rotated_at.is_some() || !watched
    }

    /// When file `key` is to be woken without a change event: a pause
    /// ending, a partial last line going stale, or a multiline record's
    /// flush timeout (with no new line, the poll wakes the file and its
    /// turn sends what is due).
    fn wake_at(&self, key: u64, f: &file::TailedFile) -> Option<Instant> {
        let stale_partial = f
            .has_partial()
            .then(|| f.last_growth + self.config.partial_line_timeout);
        let record = self.joiners.get(&key).and_then(FileJoiner::deadline);
        [f.paused_until, stale_partial, record]
            .into_iter()
            .flatten()
            .min()
    }

    /// When an open file gives its descriptor back (once settled).
    fn idle_at(&self, f: &file::TailedFile) -> Option<Instant> {
        (f.is_open() && !f.keep_open).then(|| f.last_growth + self.config.close_idle_after)
    }

    /// When the next [`TailSource::poll`] has something to do, given the
    /// last one at `last`: a `poll_interval` after it while a file needs
    /// looks, is behind, or has a lag to report, otherwise at the first
    /// of the files' timers ([`TailSource::wake_at`],
    /// [`TailSource::idle_at`]), and never sooner than a `poll_interval`
    /// after the last; `None`: nothing to do. An idle reader whose files
    /// all have change events thus sleeps until its next rescan.
    fn poll_due(&self, last: Instant) -> Option<Instant> {
        let soonest = last + self.config.poll_interval;
        if !self.lag_stale.is_empty() {
            return Some(soonest);
        }
        let mut due: Option<Instant> = None;
        for (&key, f) in &self.files {
            if self.needs_looks(f) || f.read_offset < f.seen_size() {
                return Some(soonest);
            }
            // an unsettled idle file is looked at again every period
            due = [self.wake_at(key, f), self.idle_at(f), due]
                .into_iter()
                .flatten()
                .min();
        }
        due.map(|t| t.max(soonest))
    }

    /// Timers: rotated and unwatched files are polled, stale partial lines
    /// and multiline records are sent, idle files give their descriptor
    /// back. Cheap when nothing happens: no system call per idle file.
    fn poll(&mut self, now: Instant) {
        let mut wake = Vec::new();
        let mut idle = Vec::new();
        for (&key, f) in &self.files {
            let due = |t: Option<Instant>| t.is_some_and(|t| now >= t);
            if self.needs_looks(f) || due(self.wake_at(key, f)) {
                wake.push(key);
            } else if f.settled() && !self.queued.contains(&key) && due(self.idle_at(f)) {
                // (one waiting for its turn, opened again for a write to
                // it, keeps its descriptor for that turn)
                idle.push(key);
            }
        }
        for key in wake {
            self.wake(key);
        }
        for key in idle {
            self.give_back(key, true);
        }
    }

    /// Sets the lag gauges: for each file, its size minus the next byte
    /// to read. An open file is looked at (one fstat) when it changed since
    /// the last report or was behind then, and every file once per
    /// `LAG_SWEEP` reports (a write whose event was missed); otherwise, and
    /// for a closed file, its size at the last look counts. A thousand idle
    /// files then cost no system call per `poll_interval`.
    fn report_lag(&mut self) {
        self.lag_reports += 1;
        let sweep = self.lag_reports >= LAG_SWEEP;
        if sweep {
            self.lag_reports = 0;
        }
        let mut total = 0;
        for (key, f) in &self.files {
            let look = f.is_open()
                && (sweep || self.lag_stale.contains(key) || f.read_offset < f.seen_size());
            let size = if look { f.size() } else { f.seen_size() };
            let lag = size.saturating_sub(f.read_offset);
            total += lag;
            if self.config.per_file_metrics {
                let registry = &self.cx.metrics;
                let source = &self.cx.name;
                self.per_file
                    .entry(f.path.clone())
                    .or_insert_with(|| FileCounters::new(registry, source, &f.path))
                    .lag_bytes
                    .set(lag);
            }
        }
        self.metrics.lag_bytes.set(total);
        self.lag_stale.clear();
        if self.config.per_file_metrics && self.per_file.len() > self.files.len() {
            // paths no longer followed owe nothing
            let followed: std::collections::HashSet<&PathBuf> =
                self.files.values().map(|f| &f.path).collect();
            for (path, c) in &self.per_file {
                if !followed.contains(path) {
                    c.lag_bytes.set(0);
                }
            }
        }
    }

    fn close_file(&mut self, key: u64) {
        if let Some(f) = self.files.get_mut(&key) {
            if f.is_open() {
                f.close();
                self.open -= 1;
            }
        }
    }

    /// A followed file gives its descriptor back (idle, or for others
    /// under the descriptor budget). It is watched by itself first, so a
    /// write to it opens it again at once ([`TailSource::reopen_written`]).
    /// An `idle` file that cannot be watched so keeps its descriptor: a
    /// write and a removal within one linger would take those lines.
    pub(super) fn give_back(&mut self, key: u64, idle: bool) {
        let Some(f) = self.files.get_mut(&key) else {
            return;
        };
        let watched = match (self.watcher.as_mut(), f.descriptor()) {
            (Some(w), Some(file)) => w.watch_file(file),
            _ => Err(std::io::Error::from(std::io::ErrorKind::Unsupported)),
        };
        match watched {
            Ok(wd) => {
                f.watch = Some(wd);
                f.written_while_closed = false;
                self.closed_watches.insert(wd, key);
            }
            Err(e) if idle => {
                if let Some(held) = self.warned.allow("watch_file") {
                    tracing::debug!(source = %self.cx.name, path = %f.path.display(), error = %e, suppressed = held,
                        "an idle file cannot be watched by itself; it keeps its descriptor");
                }
                f.keep_open = true;
                return;
            }
            Err(_) => {}
        }
        self.close_file(key);
    }

    /// The watch on a file that gave its descriptor back ends: it is open
    /// again, or no longer followed.
    fn unwatch_closed(&mut self, key: u64) {
        let Some(wd) = self.files.get_mut(&key).and_then(|f| f.watch.take()) else {
            return;
        };
        self.closed_watches.remove(&wd);
        if let Some(w) = self.watcher.as_mut() {
            w.unwatch_file(wd);
        }
    }

    /// A file that gave its descriptor back was written to: it is opened
    /// again now, even while lines gather, and read in its turn; if it is
    /// removed meanwhile, its descriptor still holds what was written.
    pub(super) fn reopen_written(&mut self, wd: i32) {
        let Some(&key) = self.closed_watches.get(&wd) else {
            return;
        };
        if let Some(f) = self.files.get_mut(&key) {
            f.written_while_closed = true;
        }
        self.ensure_open(key);
        self.wake(key);
    }

    /// Gives `key` a descriptor if it has none, within the budget (closing
    /// an idle followed file if need be). False if it must wait.
    fn ensure_open(&mut self, key: u64) -> bool {
        let Some(f) = self.files.get(&key) else {
            return false;
        };
        if f.is_open() {
            return true;
        }
        if self.open >= self.budget && !self.make_room(key) {
            return false;
        }
        let f = self.files.get_mut(&key).expect("checked above");
        match f.reopen() {
            Ok(Reopen::Same) => {
                self.open += 1;
                self.unwatch_closed(key);
                true
            }
            Ok(Reopen::Moved) => {
                self.find_moved(key);
                let open = self.files.get(&key).is_some_and(TailedFile::is_open);
                if open {
                    self.unwatch_closed(key);
                }
                open
            }
            Err(e) => {
                let path = f.path.clone();
                self.open_failed(&path, &e);
                false
            }
        }
    }

    /// Closes one open, live, settled file that has nothing waiting, so
    /// `for_key` can open. Rotated files keep theirs: they could vanish.
    fn make_room(&mut self, for_key: u64) -> bool {
        let victim = self
            .files
            .iter()
            .filter(|(k, f)| {
                **k != for_key
                    && f.is_open()
                    && f.rotated_at.is_none()
                    && f.settled()
                    && !self.queued.contains(k)
            })
            .min_by_key(|(_, f)| f.last_growth)
            .map(|(k, _)| *k);
        match victim {
            Some(k) => {
                self.give_back(k, false);
                true
            }
            None => false,
        }
    }

    /// Reads the files that have something to read, each up to a few
    /// blocks, in turn. Returns whether anything was read.
    async fn read_ready(&mut self) -> Result<bool, ()> {
        self.send_orphans().await?;
        let mut any = false;
        let now = Instant::now();
        for _ in 0..self.ready.len() {
            let Some(key) = self.ready.pop_front() else {
                break;
            };
            self.queued.remove(&key);
            if !self.files.contains_key(&key) {
                continue;
            }
            if self.files[&key].paused_until.is_some_and(|t| now < t) {
                continue; // `poll` wakes it when the pause is over
            }
            if !self.ensure_open(key) {
                if self.files.contains_key(&key) {
                    // waits for a descriptor, behind the others
                    self.wake(key);
                }
                continue;
            }
            if let Some(until) = self.held(key) {
                if let Some(f) = self.files.get_mut(&key) {
                    f.paused_until = Some(until); // `poll` wakes it then
                }
                continue;
            }
            let mut more = false;
            for turn in 0..BLOCKS_PER_TURN {
                let Some(f) = self.files.get_mut(&key) else {
                    break;
                };
                match f.check_truncation() {
                    Change::Copied {
                        copy,
                        bytes,
                        dropped,
                    } => {
                        self.metrics.truncations.inc();
                        self.metrics.copied_bytes.add(bytes);
                        tracing::info!(source = %self.cx.name, path = %f.path.display(), copy = %copy.display(), bytes,
                            "file truncated (copytruncate); reading the end of its old content from the copy, then the file from the start");
                        if dropped > 0 {
                            tracing::warn!(source = %self.cx.name, path = %f.path.display(), copy = %copy.display(), missed_bytes = dropped,
                                "the compressed copy holds more unread lines than are inflated into memory; the rest of them are lost");
                        }
                    }
                    Change::Truncated { missed, after_copy } => {
                        if !after_copy {
                            self.metrics.truncations.inc();
                            tracing::warn!(source = %self.cx.name, path = %f.path.display(), missed_bytes_at_least = missed,
                                "file truncated (copytruncate?); reading again from the start. No copy of its old content was found beside it (compressed or removed already?): lines written between the last read and the truncation are lost");
                        }
                        // a record being joined ends with the old content;
                        // its offsets mean nothing in the new one
                        self.flush_multiline(key, Flush::Truncated).await?;
                    }
                    Change::Nothing => break,
                    Change::Grown => {}
                }
                let Some(f) = self.files.get_mut(&key) else {
                    break;
                };
                let lines = match f.read_lines(&self.config, now) {
                    Ok(Some(l)) => l,
                    Ok(None) => break,
                    Err(e) => {
                        self.metrics.read_errors.inc();
                        tracing::warn!(source = %self.cx.name, path = %f.path.display(), error = %e, "read failed");
                        break;
                    }
                };
                any = true;
                // the lag changed: reported at the next poll
                self.lag_stale.insert(key);
                more = turn + 1 == BLOCKS_PER_TURN;
                // read up to the size just looked at: what was written since
                // raises a new event (or shows at the next poll), so no
                // second look is needed to find the end (of the file: at
                // the end of a copy, the file itself is read next)
                let caught_up = f.read_what_was_seen() && !f.reading_copy();
                self.send(key, lines, false).await?;
                if caught_up {
                    more = false;
                    break;
                }
            }
            if more {
                self.wake(key);
                continue;
            }
            // at the end: a partial last line that waited long enough
            let partial = self
                .files
                .get_mut(&key)
                .and_then(|f| f.take_partial(&self.config, now));
            if let Some(lines) = partial {
                self.send(key, lines, false).await?;
            }
            // a rotated file read to its end gets no more lines
            let ended = self
                .files
                .get(&key)
                .is_some_and(|f| f.rotated_at.is_some() && f.at_end());
            let flush = if ended { Flush::Ended } else { Flush::Due(now) };
            self.flush_multiline(key, flush).await?;
            self.maybe_release(key);
            // others wait for a descriptor: give this one back
            if self.open >= self.budget && self.ready.iter().any(|k| self.is_closed(*k)) {
                if let Some(f) = self.files.get(&key) {
                    if f.rotated_at.is_none() && f.settled() {
                        self.give_back(key, false);
                    }
                }
            }
        }
        Ok(any)
    }

    fn is_closed(&self, key: u64) -> bool {
        self.files.get(&key).is_some_and(|f| !f.is_open())
    }

    /// Sends `lines` of file `key` as one batch.
    async fn send(&mut self, key: u64, lines: Lines, final_: bool) -> Result<(), ()> {
        self.report(key);
        let Some(path) = self.files.get(&key).map(|f| f.path.clone()) else {
            return Ok(());
        };
        let tag = self.tag_for(&path);
        let time = EventTime::now();
        let first = lines.data.split(|b| *b == b'\n').next().unwrap_or_default();
        let joined = self
            .has_joiner(key, first)
            .then(|| self.joiners.get_mut(&key))
            .flatten()
            .map(|j| j.join(&lines, Instant::now()));
        let (records, count, end) = match joined {
            Some(Ready { joined, end }) => {
                let (records, count) = self.encode(&path, &joined);
                (records, count, end)
            }
            None if self.config.message_key == "message" && self.config.path_key.is_none() => (
                Records::Lines {
                    data: lines.data,
                    time,
                },
                lines.count,
                lines.end,
            ),
            None => {
                let path_text = path.to_string_lossy();
                let records = multiline::entries(
                    &lines.data,
                    time,
                    &self.config.message_key,
                    self.path_field(&path_text),
                );
                (records, lines.count, lines.end)
            }
        };
        self.dispatch(key, tag, records, count, end, final_).await
    }

    /// Registers a batch ending at offset `end` of file `key` and routes it.
    async fn dispatch(
        &mut self,
        key: u64,
        tag: String,
        records: Records,
        count: usize,
        end: u64,
        final_: bool,
    ) -> Result<(), ()> {
        let Some(f) = self.files.get_mut(&key) else {
            return Ok(());
        };
        let seq = f.sent(end);
        if count == 0 {
            // nothing to send (every line held, or left out by the shape):
            // the lines read are done with
            if f.acknowledged(seq) {
                self.dirty = true;
            }
            return Ok(());
        }
        let generation = f.generation;
        self.metrics.records.add(count as u64);
        self.metrics.bytes.add(records.bytes().len() as u64);
        let acks = self.acks_tx.clone();
        let ack = AckHandle::new(move |outcome| {
            let _ = acks.send((key, generation, seq, outcome));
        });
        let batch = Batch::new(tag.into(), records, count).with_ack(ack);
        self.route(batch, final_).await
    }

    /// Routes a batch. While a full queue makes it wait, acknowledgements
    /// are taken in and the checkpoint is written on time; the stop signal
    /// gives the batch up (it is read again after a restart). A `final_`
    /// batch (at shutdown) waits a little while instead.
    async fn route(&mut self, batch: Batch, final_: bool) -> Result<(), ()> {
        let Some(mut router) = self.router.take() else {
            return Err(());
        };
        let mut shutdown = self.cx.shutdown.clone();
        let result = {
            let routed = router.route(batch);
            tokio::pin!(routed);
            let give_up = tokio::time::sleep(if final_ {
                SHUTDOWN_ROUTE_WAIT
            } else {
                Duration::from_secs(365 * 86_400)
            });
            tokio::pin!(give_up);
            // the lag grows while the queue is full: keep reporting it
            let every = self.config.poll_interval;
            let mut lag_tick = tokio::time::interval_at((Instant::now() + every).into(), every);
            loop {
                let checkpoint_at = self.next_checkpoint;
                tokio::select! {
                    biased;
                    routed = &mut routed => break routed.map_err(|_| ()),
                    _ = shutdown.wait(), if !final_ => break Err(()),
                    _ = &mut give_up => break Err(()),
                    Some(ack) = self.acks.recv() => {
                        self.on_ack(ack);
                        self.checkpoint_if_due();
                    }
                    _ = tokio::time::sleep_until(checkpoint_at.into()), if self.dirty => self.checkpoint_if_due(),
                    _ = lag_tick.tick() => self.report_lag(),
                }
            }
        };
        self.router = Some(router);
        result
    }

    /// Moves a file's new counts into the source's (and, if asked for, the
    /// file's) counters.
    fn report(&mut self, key: u64) {
        let Some(f) = self.files.get_mut(&key) else {
            return;
        };
        let d = f.take_new_counts();
        self.metrics.long_lines.add(d.long_lines);
        self.metrics.skipped_bytes.add(d.bytes_skipped);
        self.metrics.missed_bytes.add(d.missed_bytes);
        if self.config.per_file_metrics {
            let registry = &self.cx.metrics;
            let source = &self.cx.name;
            let c = self
                .per_file
                .entry(f.path.clone())
                .or_insert_with(|| FileCounters::new(registry, source, &f.path));
            c.bytes_read.add(d.bytes_read);
            c.lines.add(d.lines);
            c.bytes_skipped.add(d.bytes_skipped);
            c.truncations.add(d.truncations);
        }
    }

    fn drain_acks(&mut self) {
        while let Ok(ack) = self.acks.try_recv() {
            self.on_ack(ack);
        }
    }

    fn on_ack(&mut self, (key, generation, seq, outcome): AckEvent) {
        let Some(f) = self.files.get_mut(&key) else {
            return;
        };
        if f.generation != generation {
            return;
        }
        match outcome {
            // records set aside for good are logged and counted by their
            // sink: reading them again could only repeat that
            AckOutcome::Accepted | AckOutcome::Refused(_) => {
                if f.acknowledged(seq) {
                    self.dirty = true;
                }
            }
            AckOutcome::Rejected => {
                self.metrics.rejected.inc();
                tracing::warn!(source = %self.cx.name, path = %f.path.display(), offset = f.acked,
                    "a sink did not keep a batch; reading again from the last acknowledged offset");
                f.rejected();
                self.joiners.remove(&key);
            }
        }
    }

    /// Releases a rotated file that was read to its end, has stopped
    /// growing and has every batch acknowledged.
    fn maybe_release(&mut self, key: u64) {
        let Some(f) = self.files.get(&key) else {
            return;
        };
        let Some(at) = f.rotated_at else { return };
        let quiet = f.last_growth.max(at).elapsed() >= ROTATE_WAIT;
        if quiet
            && f.at_end()
            && f.settled()
            && self.joiners.get(&key).is_none_or(FileJoiner::is_empty)
        {
            tracing::info!(source = %self.cx.name, path = %f.path.display(), stats = ?f.stats, "rotated file read to its end; released");
            // if it comes back into view under another name (app.log.1
            // matching the glob, or renamed again), it goes on from here
            self.released
                .insert(f.id.place(), (entry_of(f), Instant::now()));
            self.report(key);
            self.forget(key);
            self.dirty = true;
        }
    }

    /// Stops following `key`.
    fn forget(&mut self, key: u64) {
        self.close_file(key);
        self.unwatch_closed(key);
        let mut gone = None;
        if let Some(f) = self.files.remove(&key) {
            gone = Some(f.path.clone());
            if self.names.get(&f.path) == Some(&key) {
                self.names.remove(&f.path);
            }
            if self.places.get(&f.id.place()) == Some(&key) {
                self.places.remove(&f.id.place());
            }
        }
        // a file gone before it was read to its end: what it held is sent
        // as it is, with nothing left to acknowledge it to
        let held = self.joiners.remove(&key).and_then(|mut j| j.take_all());
        if let (Some(r), Some(path)) = (held, &gone) {
            let tag = self.tag_for(path);
            let (records, count) = self.encode(path, &r.joined);
            if count > 0 {
                self.orphans
                    .push(crate::event::Batch::new(tag.into(), records, count));
            }
        }
        if let (Some(shape), Some(path)) = (&mut self.shape, &gone) {
            if !self.names.contains_key(path) {
                shape.forget(path);
            }
        }
    }

    /// How early a periodic task (a poll, a checkpoint) runs in a turn the
    /// reader takes anyway: up to its linger, and at most half the task's
    /// period. A reader letting lines gather then wakes once per linger,
    /// not also for each task.
    fn early(&self, period: Duration) -> Duration {
        self.config.linger.min(period / 2)
    }

    fn checkpoint_if_due(&mut self) {
        let early = self.early(self.config.checkpoint_interval);
        if self.dirty && Instant::now() + early >= self.next_checkpoint {
            self.save_checkpoint();
        }
    }

    fn save_checkpoint(&mut self) {
        self.next_checkpoint = Instant::now() + self.config.checkpoint_interval;
        let Some(c) = &self.checkpoint else {
            // nothing to write: no turn needs to wake for it
            self.dirty = false;
            return;
        };
        let entries: Vec<Entry> = self
            .files
            .values()
            .map(entry_of)
            .chain(self.saved.values().cloned())
            .collect();
        match self.reserve.with(|| c.save(entries.iter())) {
            Ok(()) => self.dirty = false,
            Err(e) => {
                self.metrics.checkpoint_errors.inc();
                tracing::error!(source = %self.cx.name, file = %c.path().display(), error = %e, "cannot write the checkpoint; trying again in checkpoint_interval")
            }
        }
        let cutoff = Instant::now().checked_sub(RELEASED_MEMORY);
        if let Some(cutoff) = cutoff {
            self.released.retain(|_, (_, at)| *at >= cutoff);
        }
    }

    /// Sends file `key`'s held multiline records that `flush` says are due.
    async fn flush_multiline(&mut self, key: u64, flush: Flush) -> Result<(), ()> {
        let Some(j) = self.joiners.get_mut(&key) else {
            return Ok(());
        };
        let ready = match flush {
            Flush::Due(now) => j.take_idle(now),
            Flush::Ended | Flush::Shutdown | Flush::Truncated => j.take_all(),
        };
        let Some(Ready { joined, mut end }) = ready else {
            return Ok(());
        };
        let Some(path) = self.files.get(&key).map(|f| f.path.clone()) else {
            return Ok(());
        };
        if flush == Flush::Truncated {
            // the file starts again at 0, and so does its checkpoint
            end = 0;
        }
        let tag = self.tag_for(&path);
        let (records, count) = self.encode(&path, &joined);
        let final_ = flush == Flush::Shutdown;
        self.dispatch(key, tag, records, count, end, final_).await
    }

    /// Routes the records held for files no longer followed.
    async fn send_orphans(&mut self) -> Result<(), ()> {
        for batch in std::mem::take(&mut self.orphans) {
            self.route(batch, false).await?;
        }
        Ok(())
    }
}

/// Which held multiline records to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flush {
    /// Those due at this instant (the flush timeout).
    Due(Instant),
    /// All: the file was rotated and is read to its end.
    Ended,
    /// All: logferry is stopping.
    Shutdown,
    /// All: the file was truncated; their lines are no longer in it.
    Truncated,
}

/// A followed file as a checkpoint line.
fn entry_of(f: &TailedFile) -> Entry {
    Entry {
        id: f.id,
        head: f.head,
        offset: f.acked,
        size: f.seen_size(),
        path: f.path.clone(),
    }
}
