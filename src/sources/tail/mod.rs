//! `type = "tail"`: follows files through rotation and restarts.
//!
//! - `config.rs`: settings;
//! - `file.rs`: one file: block reads, lines, truncation, acknowledged offsets;
//! - `checkpoint.rs`: the checkpoint file and its format;
//! - this file: discovery (globs), change detection (inotify plus
//!   polling), rotation, multiline records, and the loop that sends batches.
//!
//! The source runs on a thread of its own (file reads block). Each file is
//! read in large blocks; complete lines go out as one batch
//! per block (the bytes as read, no per-line allocation). A batch carries an
//! acknowledgement handle: the file's checkpointed offset advances only
//! over batches every sink has accepted, so kill -9 and restart resends at
//! most the unacknowledged window and skips nothing.
//!
//! Rotation by rename: the path now names another file (or none); the old
//! file stays open and is read to its end, for as long as that takes, and
//! is released once it has stopped growing; the new file is read from 0.
//! Rotation by copytruncate: the file became shorter than what was read;
//! reading restarts at 0, and the truncation is logged and counted (lines
//! written between the last read and the truncation are lost: the copy
//! holds them, this file no longer does).

mod checkpoint;
mod config;
pub mod file;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use regex::bytes::Regex;
use tokio::sync::{mpsc, Notify};

pub use config::{LongLine, MultilineConfig, TailSourceConfig};

use super::SourceContext;
use crate::ack::{AckHandle, AckOutcome};
use crate::event::{Batch, EventTime, Records};
use crate::metrics::{Counter, Registry};
use crate::protocol::forward::write_message_entry;
use checkpoint::{Checkpoint, Entry, FileId};
use file::{Lines, TailedFile};

/// How long a renamed-away file that has stopped growing is kept open.
const ROTATE_WAIT: Duration = Duration::from_secs(5);

/// How soon after a change event the globs are expanded again (events
/// come in bursts; one rescan serves them all).
const RESCAN_AFTER_EVENT: Duration = Duration::from_millis(20);

/// How often the checkpoint is written while offsets move.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// Most blocks read from one file before the others get a turn.
const BLOCKS_PER_TURN: usize = 16;

/// How long shutdown waits for the last acknowledgements.
const SHUTDOWN_ACK_WAIT: Duration = Duration::from_secs(10);

struct TailMetrics {
    records: Counter,
    bytes: Counter,
    truncations: Counter,
    rotations: Counter,
    long_lines: Counter,
    skipped_bytes: Counter,
    rejected: Counter,
    missed_bytes: Counter,
}

impl TailMetrics {
    fn new(r: &Registry, source: &str) -> Self {
        let l = &[("component", source)];
        TailMetrics {
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
            truncations: r.counter(
                "logferry_tail_truncations_total",
                "Followed files that became shorter (copytruncate); reading restarted at 0.",
                l,
            ),
            rotations: r.counter(
                "logferry_tail_rotations_total",
                "Followed files renamed or removed away from their path.",
                l,
            ),
            long_lines: r.counter(
                "logferry_tail_long_lines_total",
                "Lines longer than max_line_bytes (split or skipped).",
                l,
            ),
            skipped_bytes: r.counter(
                "logferry_tail_skipped_bytes_total",
                "Bytes of over-long lines skipped.",
                l,
            ),
            missed_bytes: r.counter(
                "logferry_tail_missed_bytes_total",
                "Bytes known to have been lost to truncations (seen but not yet read; a lower bound).",
                l,
            ),
            rejected: r.counter(
                "logferry_tail_rejected_batches_total",
                "Batches a sink did not keep; read again from the last acknowledged offset.",
                l,
            ),
        }
    }
}

/// An acknowledgement coming back: (file key, generation, sequence, outcome).
type AckEvent = (u64, u64, u64, AckOutcome);

pub struct TailSource {
    config: TailSourceConfig,
    cx: SourceContext,
    metrics: TailMetrics,
    files: HashMap<u64, TailedFile>,
    /// Which open, not rotated file follows each path.
    by_path: HashMap<PathBuf, u64>,
    next_key: u64,
    checkpoint: Option<Checkpoint>,
    /// Offsets from the checkpoint file, by identity, until used.
    saved: HashMap<FileId, Entry>,
    acks_tx: mpsc::UnboundedSender<AckEvent>,
    acks: mpsc::UnboundedReceiver<AckEvent>,
    multiline: Option<(Regex, Duration)>,
    joiners: HashMap<u64, Joiner>,
    dirty: bool,
    /// Counters per followed path (a rotated file keeps its path's).
    per_file: HashMap<PathBuf, FileCounters>,
}

/// Counters of one followed path, labelled with it.
struct FileCounters {
    bytes_read: Counter,
    lines: Counter,
    bytes_skipped: Counter,
    truncations: Counter,
    rotations: Counter,
}

impl FileCounters {
    fn new(r: &Registry, source: &str, path: &Path) -> Self {
        let path = path.display().to_string();
        let l = &[("component", source), ("path", path.as_str())];
        FileCounters {
            bytes_read: r.counter(
                "logferry_tail_file_bytes_read_total",
                "Bytes read from each followed path.",
                l,
            ),
            lines: r.counter(
                "logferry_tail_file_lines_total",
                "Lines read from each followed path.",
                l,
            ),
            bytes_skipped: r.counter(
                "logferry_tail_file_skipped_bytes_total",
                "Bytes of over-long lines skipped, per path.",
                l,
            ),
            truncations: r.counter(
                "logferry_tail_file_truncations_total",
                "Truncations (copytruncate), per path.",
                l,
            ),
            rotations: r.counter(
                "logferry_tail_file_rotations_total",
                "Rotations (rename or removal), per path.",
                l,
            ),
        }
    }
}

impl TailSource {
    pub fn new(config: TailSourceConfig, cx: SourceContext) -> Result<Self, String> {
        let checkpoint = config
            .checkpoint_dir
            .as_ref()
            .map(|d| Checkpoint::new(d, &cx.name));
        let saved = match &checkpoint {
            Some(c) => c.load()?,
            None => HashMap::new(),
        };
        let multiline = match &config.multiline {
            Some(m) => Some((
                Regex::new(&m.start_pattern)
                    .map_err(|e| format!("multiline.start_pattern: {e}"))?,
                m.timeout,
            )),
            None => None,
        };
        let (acks_tx, acks) = mpsc::unbounded_channel();
        Ok(TailSource {
            metrics: TailMetrics::new(&cx.metrics, &cx.name),
            config,
            cx,
            files: HashMap::new(),
            by_path: HashMap::new(),
            next_key: 0,
            checkpoint,
            saved,
            acks_tx,
            acks,
            multiline,
            joiners: HashMap::new(),
            dirty: false,
            per_file: HashMap::new(),
        })
    }

    pub async fn run(mut self) {
        let wake = Arc::new(Notify::new());
        let _watcher = self.watch(wake.clone());
        self.discover(true);
        let mut next_refresh = Instant::now() + self.config.refresh_interval;
        let mut next_checkpoint = Instant::now() + CHECKPOINT_EVERY;
        loop {
            self.drain_acks();
            if self.cx.shutdown.is_triggered() {
                break;
            }
            let now = Instant::now();
            if now >= next_refresh {
                self.discover(false);
                next_refresh = now + self.config.refresh_interval;
            }
            let read_any = match self.read_round().await {
                Ok(r) => r,
                Err(()) => break, // a sink has stopped
            };
            if now >= next_checkpoint {
                self.save_checkpoint();
                next_checkpoint = now + CHECKPOINT_EVERY;
            }
            if read_any {
                continue;
            }
            let wait = self
                .config
                .poll_interval
                .min(next_refresh.saturating_duration_since(Instant::now()));
            tokio::select! {
                // a change in a watched directory: look for new files soon
                _ = wake.notified() => next_refresh = next_refresh.min(Instant::now() + RESCAN_AFTER_EVENT),
                _ = tokio::time::sleep(wait) => {}
                _ = self.cx.shutdown.wait() => {}
                Some(ack) = self.acks.recv() => self.on_ack(ack),
            }
        }
        // hand over what is buffered, then wait (bounded) for the last acks
        let deadline = Instant::now() + SHUTDOWN_ACK_WAIT;
        while self.files.values().any(|f| !f.settled()) && Instant::now() < deadline {
            tokio::select! {
                Some(ack) = self.acks.recv() => self.on_ack(ack),
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
        self.save_checkpoint();
        for f in self.files.values() {
            tracing::debug!(source = %self.cx.name, path = %f.path.display(), stats = ?f.stats, "file released at shutdown");
        }
    }

    /// inotify on the directories the globs start in; polling covers the
    /// rest (and filesystems without events).
    fn watch(&self, wake: Arc<Notify>) -> Option<notify::RecommendedWatcher> {
        use notify::{RecursiveMode, Watcher};
        let mut watcher =
            notify::recommended_watcher(move |_event: notify::Result<notify::Event>| {
                wake.notify_one()
            })
            .map_err(
                |e| tracing::warn!(source = %self.cx.name, error = %e, "no inotify; polling only"),
            )
            .ok()?;
        for pattern in &self.config.paths {
            let dir = glob_root(pattern);
            let mode = if pattern.contains("**") {
                RecursiveMode::Recursive
            } else {
                RecursiveMode::NonRecursive
            };
            if let Err(e) = watcher.watch(&dir, mode) {
                tracing::debug!(source = %self.cx.name, dir = %dir.display(), error = %e, "cannot watch; polling it");
            }
        }
        Some(watcher)
    }

    /// Expands the globs: opens new files, notices rotated and removed ones.
    fn discover(&mut self, startup: bool) {
        let exclude: Vec<glob::Pattern> = self
            .config
            .exclude
            .iter()
            .filter_map(|p| glob::Pattern::new(p).ok())
            .collect();
        let mut seen = Vec::new();
        for pattern in &self.config.paths {
            let Ok(paths) = glob::glob(pattern) else {
                continue;
            };
            for path in paths.flatten() {
                if exclude.iter().any(|e| e.matches_path(&path)) || !path.is_file() {
                    continue;
                }
                seen.push(path);
            }
        }
        // a followed path that now names another file, or nothing: rotated
        let now = Instant::now();
        for (path, key) in self.by_path.clone() {
            let current = std::fs::metadata(&path).ok().map(|m| {
                use std::os::unix::fs::MetadataExt;
                FileId {
                    dev: m.dev(),
                    ino: m.ino(),
                }
            });
            let Some(f) = self.files.get_mut(&key) else {
                continue;
            };
            if current != Some(f.id) {
                f.rotated_at = Some(now);
                self.by_path.remove(&path);
                self.metrics.rotations.inc();
                let registry = &self.cx.metrics;
                let source = &self.cx.name;
                self.per_file
                    .entry(path.clone())
                    .or_insert_with(|| FileCounters::new(registry, source, &path))
                    .rotations
                    .inc();
                tracing::info!(source = %self.cx.name, path = %path.display(), "file rotated; reading the old one to its end");
            }
        }
        for path in &seen {
            if self.by_path.contains_key(path) {
                continue;
            }
            self.start_following(path, startup);
        }
        // saved offsets of files no longer among the matches are forgotten,
        // so the checkpoint does not grow across restarts
        let present: std::collections::HashSet<FileId> = seen
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                FileId {
                    dev: m.dev(),
                    ino: m.ino(),
                }
            })
            .collect();
        let before = self.saved.len();
        self.saved.retain(|id, _| present.contains(id));
        if self.saved.len() != before {
            self.dirty = true;
        }
    }

    fn start_following(&mut self, path: &Path, startup: bool) {
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(source = %self.cx.name, path = %path.display(), error = %e, "cannot open");
                return;
            }
        };
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = file.metadata() else { return };
        let id = FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        };
        // the same file under a new name (rotated into a watched path) is
        // already followed
        if self.files.values().any(|f| f.id == id) {
            return;
        }
        let offset = match self.saved.remove(&id) {
            Some(entry) if TailedFile::head_of(&file, entry.head.len as usize) == entry.head => {
                Some(entry.offset)
            }
            Some(_) => {
                tracing::info!(source = %self.cx.name, path = %path.display(), "checkpoint is for a different file with the same inode; reading from the start");
                Some(0)
            }
            None if startup && !self.config.read_from_head => None,
            None => Some(0),
        };
        let key = self.next_key;
        self.next_key += 1;
        match TailedFile::open(path, offset) {
            Ok(f) => {
                tracing::info!(source = %self.cx.name, path = %path.display(), offset = f.read_offset, "following file");
                self.by_path.insert(path.to_path_buf(), key);
                self.files.insert(key, f);
                self.dirty = true;
            }
            Err(e) => {
                tracing::warn!(source = %self.cx.name, path = %path.display(), error = %e, "cannot open")
            }
        }
    }

    /// Reads every file once (up to a few blocks each) and sends what it
    /// got. Returns whether anything was read.
    async fn read_round(&mut self) -> Result<bool, ()> {
        let mut any = false;
        let keys: Vec<u64> = self.files.keys().copied().collect();
        let now = Instant::now();
        for key in keys {
            for _ in 0..BLOCKS_PER_TURN {
                let Some(f) = self.files.get_mut(&key) else {
                    break;
                };
                if f.paused_until.is_some_and(|t| now < t) {
                    break;
                }
                if let Some(missed) = f.check_truncation() {
                    // a record being joined belongs to the old content
                    self.joiners.remove(&key);
                    self.metrics.truncations.inc();
                    tracing::warn!(source = %self.cx.name, path = %f.path.display(), missed_bytes_at_least = missed,
                        "file truncated (copytruncate?); reading again from the start. Lines written between the last read and the truncation are not in this file any more");
                }
                let lines = match f.read_lines(&self.config, now) {
                    Ok(Some(l)) => l,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(source = %self.cx.name, path = %f.path.display(), error = %e, "read failed");
                        break;
                    }
                };
                any = true;
                self.send(key, lines).await?;
            }
            // a partial last line that waited long enough
            if let Some(f) = self.files.get_mut(&key) {
                if let Some(lines) = f.take_partial(&self.config, now) {
                    self.send(key, lines).await?;
                }
            }
            self.flush_multiline(key, now, false).await?;
            self.maybe_release(key);
        }
        Ok(any)
    }

    async fn send(&mut self, key: u64, lines: Lines) -> Result<(), ()> {
        self.report(key);
        let Some(f) = self.files.get_mut(&key) else {
            return Ok(());
        };
        let tag = self.config.tag_for(&f.path);
        let time = EventTime::now();
        let (records, count, end) = if self.multiline.is_some() {
            self.join_lines(key, &lines, time)
        } else if self.config.message_key == "message" {
            (
                Records::Lines {
                    data: lines.data,
                    time,
                },
                lines.count,
                lines.end,
            )
        } else {
            (
                entries(&lines.data, time, &self.config.message_key),
                lines.count,
                lines.end,
            )
        };
        if count == 0 {
            return Ok(());
        }
        let Some(f) = self.files.get_mut(&key) else {
            return Ok(());
        };
        let seq = f.sent(end);
        let generation = f.generation;
        self.metrics.records.add(count as u64);
        self.metrics.bytes.add(records.bytes().len() as u64);
        let acks = self.acks_tx.clone();
        let ack = AckHandle::new(move |outcome| {
            let _ = acks.send((key, generation, seq, outcome));
        });
        let batch = Batch::new(tag.into(), records, count).with_ack(ack);
        route_or_stop(&mut self.cx, batch).await
    }

    /// Moves a file's new counts into the source's and the file's metrics.
    fn report(&mut self, key: u64) {
        let Some(f) = self.files.get_mut(&key) else {
            return;
        };
        let d = f.take_new_counts();
        self.metrics.long_lines.add(d.long_lines);
        self.metrics.skipped_bytes.add(d.bytes_skipped);
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
        self.metrics.missed_bytes.add(d.missed_bytes);
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
            AckOutcome::Accepted => {
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
            && self.joiners.get(&key).is_none_or(|j| j.pending.is_empty())
        {
            tracing::info!(source = %self.cx.name, path = %f.path.display(), stats = ?f.stats, "rotated file read to its end; released");
            // if it still matches the globs under its new name (app.log.1),
            // it is picked up again where it was left, not from 0
            self.saved.insert(
                f.id,
                Entry {
                    id: f.id,
                    head: f.head,
                    offset: f.acked,
                    path: f.path.clone(),
                },
            );
            self.report(key);
            self.files.remove(&key);
            self.joiners.remove(&key);
            self.dirty = true;
        }
    }

    fn save_checkpoint(&mut self) {
        let Some(c) = &self.checkpoint else { return };
        if !self.dirty {
            return;
        }
        let entries: Vec<Entry> = self
            .files
            .values()
            .map(|f| Entry {
                id: f.id,
                head: f.head,
                offset: f.acked,
                path: f.path.clone(),
            })
            .chain(self.saved.values().cloned())
            .collect();
        match c.save(entries.iter()) {
            Ok(()) => self.dirty = false,
            Err(e) => {
                tracing::error!(source = %self.cx.name, file = %c.path().display(), error = %e, "cannot write the checkpoint")
            }
        }
    }

    /// Multiline: joins lines into records; returns the complete records,
    /// their count, and the offset the checkpoint may advance to.
    fn join_lines(&mut self, key: u64, lines: &Lines, time: EventTime) -> (Records, usize, u64) {
        let (re, _) = self.multiline.as_ref().expect("multiline is set");
        let j = self.joiners.entry(key).or_default();
        let block_start = lines.start;
        let mut out = Vec::new();
        let mut count = 0;
        for line in lines.data.split_inclusive(|b| *b == b'\n') {
            let line = &line[..line.len() - 1];
            if re.is_match(line) && !j.pending.is_empty() {
                write_message_entry_key(&mut out, time, &self.config.message_key, &j.pending);
                count += 1;
                j.pending.clear();
            }
            if j.pending.is_empty() {
                j.pending_start = block_start;
            } else {
                j.pending.push(b'\n');
            }
            j.pending.extend_from_slice(line);
            j.updated = Some(Instant::now());
        }
        j.last_end = lines.end;
        let end = if j.pending.is_empty() {
            lines.end
        } else {
            j.pending_start
        };
        (Records::Entries(Bytes::from(out)), count, end)
    }

    async fn flush_multiline(&mut self, key: u64, now: Instant, force: bool) -> Result<(), ()> {
        let Some((_, timeout)) = &self.multiline else {
            return Ok(());
        };
        let timeout = *timeout;
        let Some(j) = self.joiners.get_mut(&key) else {
            return Ok(());
        };
        let fresh = j.updated.is_some_and(|u| now.duration_since(u) < timeout);
        if j.pending.is_empty() || (!force && fresh) {
            return Ok(());
        }
        let Some(f) = self.files.get_mut(&key) else {
            return Ok(());
        };
        let mut out = Vec::new();
        write_message_entry_key(
            &mut out,
            EventTime::now(),
            &self.config.message_key,
            &j.pending,
        );
        j.pending.clear();
        let end = j.last_end;
        let seq = f.sent(end);
        let generation = f.generation;
        let tag = self.config.tag_for(&f.path);
        self.metrics.records.inc();
        let acks = self.acks_tx.clone();
        let ack = AckHandle::new(move |outcome| {
            let _ = acks.send((key, generation, seq, outcome));
        });
        let batch = Batch::new(tag.into(), Records::Entries(Bytes::from(out)), 1).with_ack(ack);
        route_or_stop(&mut self.cx, batch).await
    }
}

/// Routes a batch, unless the stop signal comes while a full queue makes
/// it wait (the batch is then rejected and read again after a restart).
async fn route_or_stop(cx: &mut SourceContext, batch: Batch) -> Result<(), ()> {
    tokio::select! {
        biased;
        routed = cx.router.route(batch) => routed.map_err(|_| ()),
        _ = cx.shutdown.wait() => Err(()),
    }
}

/// A multiline record being assembled.
#[derive(Default)]
struct Joiner {
    pending: Vec<u8>,
    /// Offset of the block where the pending record began (the checkpoint
    /// never passes it).
    pending_start: u64,
    /// End offset of the last block seen.
    last_end: u64,
    updated: Option<Instant>,
}

fn write_message_entry_key(out: &mut Vec<u8>, time: EventTime, key: &str, message: &[u8]) {
    use crate::protocol::msgpack::write;
    if key == "message" {
        return write_message_entry(out, time.secs, time.nanos, message);
    }
    write::array_len(out, 2);
    write::event_time(out, time.secs, time.nanos);
    write::map_len(out, 1);
    write::str(out, key.as_bytes());
    write::str(out, message);
}

/// Lines as `[time, {key: line}]` entries (for a `message_key` other than
/// `message`).
fn entries(data: &[u8], time: EventTime, key: &str) -> Records {
    let mut out = Vec::with_capacity(data.len() + data.len() / 4);
    for line in data.split_inclusive(|b| *b == b'\n') {
        write_message_entry_key(&mut out, time, key, &line[..line.len() - 1]);
    }
    Records::Entries(Bytes::from(out))
}

/// The directory a glob starts in: its longest prefix without wildcards.
fn glob_root(pattern: &str) -> PathBuf {
    let mut root = PathBuf::new();
    for part in Path::new(pattern).components() {
        let s = part.as_os_str().to_string_lossy();
        if s.contains(['*', '?', '[', '{']) {
            break;
        }
        root.push(part);
    }
    if root.as_os_str().is_empty() || root == Path::new(pattern) {
        root = Path::new(pattern)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
    }
    root
}
