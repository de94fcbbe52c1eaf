//! The disk buffer: a sink queue kept in append-only segment files.
//!
//! A batch sent to the queue is framed (length + CRC32C, see [`format`](mod@format))
//! and appended to the active segment in `dir`; once it is written (with
//! `fsync = "always"`: once synced) the source's acknowledgement is
//! released, so the disk holds it from then on. The sink reads frames back
//! in order as [`Delivery`](crate::buffer::Delivery)s. A frame leaves the buffer only when its
//! delivery is accepted; a rejected (or dropped) delivery stays and is
//! delivered again after a backoff. The delivered cursor (the `ack` file,
//! see [`cursor`]) is rewritten as it advances, and a segment whose frames
//! are all delivered is deleted, so a restart replays exactly what was not
//! delivered yet, in order (at most the in-flight frames twice).
//!
//! At start-up every segment is scanned: a torn tail or a damaged frame is
//! cut out, appended to `dir/quarantine/`, counted and logged once, and the
//! segment is rewritten with its good frames, so the buffer never refuses
//! to start because of its own files.
//!
//! Byte layouts are documented in [`format`](mod@format) and [`cursor`], and for users
//! in docs/disk-buffer.md.

/// The dead-letter file of a disk-buffered sink that names none, in the
/// buffer's directory (segment scans ignore it).
pub const DEAD_LETTER_FILE: &str = "dead-letter.msgpack";

pub mod cursor;
pub mod format;
pub mod inspect;
mod read;
mod recover;
pub mod segment;
mod write;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::Notify;

use super::gate::Gate;
use tokio::time::Instant;

use super::{BufferConfig, WhenFull};
use crate::event::Batch;
use crate::metrics::{Counter, Registry};
use crate::telemetry::{ErrorKinds, RateLimitedLog};
use cursor::Pos;
use format::SEGMENT_HEADER;

/// When written frames are forced to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Fsync {
    /// After every batch, before its source is acknowledged.
    Always,
    /// At most every `fsync_interval`, and at shutdown.
    #[default]
    Interval,
    /// Never; the operating system writes back when it likes.
    Never,
}

/// Smallest segment size, whatever `max_bytes` is.
const MIN_SEGMENT: u64 = 4 << 10;

/// A position past every other (the cursor of an empty buffer before the
/// first write).
fn start_of(id: u64) -> Pos {
    (id, SEGMENT_HEADER as u64)
}

/// Counters of one disk buffer.
#[derive(Clone)]
pub(super) struct DiskMetrics {
    written_records: Counter,
    written_bytes: Counter,
    replayed_records: Counter,
    retried_records: Counter,
    write_errors: Counter,
    dropped_records: Counter,
    quarantined_bytes: Counter,
    quarantined_frames: Counter,
    kept_records: Counter,
    /// Everything a disk buffer logs as an error or warning, by kind.
    errors: ErrorKinds,
}

/// The kinds of `logferry_buffer_disk_errors_total`.
const ERROR_KINDS: &[&str] = &[
    "damaged_cursor",
    "unreadable_segment",
    "damaged_frames",
    "quarantine_write",
    "cursor_rewrite",
    "segment_rewrite",
    "read",
    "segment_delete",
    "sync_thread",
];

impl DiskMetrics {
    fn new(r: &Registry, sink: &str, dropped_records: Counter) -> Self {
        let l = &[("component", sink)];
        DiskMetrics {
            written_records: r.counter(
                "logferry_buffer_disk_written_records_total",
                "Records written to a disk buffer.",
                l,
            ),
            written_bytes: r.counter(
                "logferry_buffer_disk_written_bytes_total",
                "Frame bytes written to a disk buffer.",
                l,
            ),
            replayed_records: r.counter(
                "logferry_buffer_disk_replayed_records_total",
                "Undelivered records found in a disk buffer at start-up, delivered again.",
                l,
            ),
            retried_records: r.counter(
                "logferry_buffer_disk_retried_records_total",
                "Records the sink rejected, kept in the disk buffer and delivered again after a backoff.",
                l,
            ),
            write_errors: r.counter(
                "logferry_buffer_disk_write_errors_total",
                "Failed writes or syncs of a disk buffer (a full disk: ENOSPC, EDQUOT); the send waits and retries.",
                l,
            ),
            dropped_records,
            quarantined_bytes: r.counter(
                "logferry_buffer_quarantined_bytes_total",
                "Damaged disk buffer bytes (torn tail, bad CRC) moved to the quarantine directory.",
                l,
            ),
            quarantined_frames: r.counter(
                "logferry_buffer_quarantined_frames_total",
                "Damaged stretches of a disk buffer (one or more frames each) moved to the quarantine directory.",
                l,
            ),
            kept_records: r.counter(
                "logferry_buffer_disk_kept_records_total",
                "Records left undelivered in a disk buffer at shutdown, delivered after the next start.",
                l,
            ),
            errors: ErrorKinds::new(
                r,
                "logferry_buffer_disk_errors_total",
                "Errors a disk buffer logged, by kind (recovery at start-up, reading, deleting segments).",
                sink,
                ERROR_KINDS,
            ),
        }
    }
}

/// What a disk buffer holds undelivered; read by gauges.
#[derive(Default)]
pub(super) struct Held {
    pub bytes: AtomicU64,
    pub records: AtomicUsize,
}

/// One segment file on disk.
#[derive(Debug)]
struct Segment {
    /// Bytes in the file (header + complete frames).
    len: u64,
    /// Bytes of its frames that are not delivered yet (bytes, not frames:
    /// damage skipped while reading is subtracted by its length).
    outstanding: u64,
}

/// A rejected delivery waiting for its next attempt.
struct Retry {
    pos: Pos,
    len: usize,
    batch: Batch,
    attempt: u32,
    due: Instant,
}

struct State {
    segments: BTreeMap<u64, Segment>,
    /// The segment being appended to, if one is open.
    active: Option<(u64, Arc<File>)>,
    next_id: u64,
    /// The next frame the sink has not been handed yet.
    read: Pos,
    /// The segment file the reader has open.
    reader: Option<(u64, File)>,
    /// Frames handed out (or waiting for a retry) and not accepted yet.
    unacked: BTreeSet<Pos>,
    retries: VecDeque<Retry>,
    /// Bytes of deliveries not settled (and of retries waiting).
    in_flight: usize,
    /// Total bytes of every segment file.
    disk_bytes: u64,
    /// The cursor as last stored.
    stored: Pos,
    cursor_file: File,
    /// Every sender is gone.
    closed: bool,
    /// Written since the last sync.
    dirty: bool,
    /// Segments rolled over since the last sync, for the syncer to sync
    /// (with `fsync = "interval"`).
    unsynced: Vec<Arc<File>>,
    /// With `fsync = "always"`: a segment was created or removed since the
    /// directory was last synced. A new segment's frames are not durable
    /// until its name is, so the next acknowledgement syncs the directory
    /// first.
    dir_unsynced: bool,
    /// The latest frames as batches, kept (up to `FRESH_BYTES`) so a sink
    /// that keeps up takes them from memory instead of reading its own
    /// writes back; the disk copy is what survives a crash.
    fresh: VecDeque<Fresh>,
    fresh_bytes: usize,
    #[cfg(test)]
    /// Makes appends fail as a full disk does, after writing part of the frame.
    full: bool,
}

/// A frame just written, as the batch it was made from (without its
/// source's acknowledgement, and without its memory charge: it is on disk,
/// and this copy is only a cache bounded by `FRESH_BYTES`, so the source's
/// budget is not held while the sink cannot deliver).
struct Fresh {
    pos: Pos,
    len: usize,
    batch: Batch,
}

/// Most bytes of [`State::fresh`] frames.
const FRESH_BYTES: usize = 4 << 20;

pub(super) struct Shared {
    sink: Arc<str>,
    dir: PathBuf,
    max_bytes: u64,
    segment_bytes: u64,
    when_full: WhenFull,
    fsync: Fsync,
    state: Mutex<State>,
    /// Held by the one sender appending: the write itself happens outside
    /// `state`, so the sink is not held up by it.
    appending: Mutex<()>,
    /// Held while taking `State::dir_unsynced` and syncing the directory,
    /// so a sender that finds the flag taken knows the sync is done.
    syncing_dir: Mutex<()>,
    /// A frame was written, a retry queued, a delivery settled, or the
    /// senders are gone.
    readable: Notify,
    /// Wakes a sink gathering a request only when it must go (see
    /// [`Shared::recv_until`]).
    gate: Gate,
    /// Bytes were freed on disk.
    room: Notify,
    pub held: Arc<Held>,
    metrics: DiskMetrics,
    log: RateLimitedLog,
    /// Directory syncs done (tests check `fsync = "always"` makes them).
    #[cfg(test)]
    dir_syncs: AtomicU64,
    /// What is left was synced and counted as kept (see [`Shared::finish`]).
    finished: AtomicBool,
    /// A reload replaced the sink: what is left is for its replacement,
    /// not for the next start (see [`Shared::close_replaced`]).
    replaced: AtomicBool,
    /// Holds the directory's lock for as long as the buffer is open.
    _lock: File,
}

/// Sender half; the last one dropped closes the queue.
pub(super) struct SenderAlive(Arc<Shared>);

impl Shared {
    /// Closes the buffer to every sender, even those still holding a
    /// clone (see `QueueSender::close`): a send waiting for room gives up
    /// (its batch is refused: it is not on disk), the reader ends once it
    /// has handed out what is written.
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.readable.notify_one();
        self.gate.ring();
        self.room.notify_waiters();
    }

    /// [`Shared::close`] for a sink a reload replaces: what the buffer
    /// still holds when the sink finishes is left for the sink that opens
    /// the directory next (its replacement), so it is not counted as kept
    /// at shutdown.
    pub(super) fn close_replaced(&self) {
        self.replaced.store(true, Ordering::Release);
        self.close();
    }

    /// Closes the buffer and lets go of its directory now, though clones
    /// of its senders may live on a little (routers still routing on the
    /// table a reload replaced): an append under way finishes first, later
    /// ones are refused, so the sink that replaces this one can open the
    /// directory. Its sink must have finished.
    pub(super) fn release(&self) {
        let _appending = self.appending.lock().unwrap_or_else(|e| e.into_inner());
        self.close();
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own.
        unsafe { libc::flock(self._lock.as_raw_fd(), libc::LOCK_UN) };
    }
}

impl Drop for SenderAlive {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.readable.notify_one();
        self.0.gate.ring();
    }
}

/// Why a batch could not be appended.
enum AppendError {
    /// `max_bytes` is reached.
    NoRoom,
    /// The buffer was closed (`Shared::close`) while senders remain.
    Closed,
    /// The write failed (ENOSPC, EDQUOT, EIO); nothing of it counts.
    Io(io::Error),
}

/// Opens (and recovers) the disk buffer of sink `sink`.
pub(super) fn open(
    sink: &str,
    config: &BufferConfig,
    metrics: &Registry,
    dropped_records: Counter,
) -> Result<(Arc<Shared>, Arc<SenderAlive>), String> {
    let dir = config
        .dir
        .clone()
        .ok_or("a disk buffer needs `dir`, the directory for its segment files")?;
    fs::create_dir_all(&dir).map_err(|e| {
        format!(
            "cannot create the disk buffer directory {}: {e}",
            dir.display()
        )
    })?;
    let lock = lock_dir(&dir)?;
    let m = DiskMetrics::new(metrics, sink, dropped_records);
    let found = recover::recover(sink, &dir, &m)
        .map_err(|e| format!("cannot read the disk buffer {}: {e}", dir.display()))?;
    let held = Arc::new(Held::default());
    let mut segments = BTreeMap::new();
    let mut disk_bytes = 0;
    let mut undelivered = 0u64;
    for s in &found.segments {
        disk_bytes += s.len;
        held.bytes.fetch_add(s.undelivered_bytes, Ordering::Relaxed);
        held.records
            .fetch_add(s.undelivered_records, Ordering::Relaxed);
        undelivered += s.undelivered_records as u64;
        segments.insert(
            s.id,
            Segment {
                len: s.len,
                outstanding: s.undelivered_bytes,
            },
        );
    }
    m.replayed_records.add(undelivered);
    if undelivered > 0 {
        tracing::info!(sink, dir = %dir.display(), records = undelivered,
            "disk buffer holds undelivered records from before; delivering them first");
    }
    let cursor_file = cursor::open(&dir)
        .map_err(|e| format!("cannot open {}: {e}", dir.join("ack").display()))?;
    let read = found.read;
    let _ = cursor::store(&cursor_file, read);
    let max_bytes = config.max_bytes as u64;
    let segment_bytes = (config.segment_bytes as u64)
        .min(max_bytes / 4)
        .max(MIN_SEGMENT);
    let shared = Arc::new(Shared {
        sink: sink.into(),
        dir,
        max_bytes,
        segment_bytes,
        when_full: config.when_full,
        fsync: config.fsync,
        state: Mutex::new(State {
            segments,
            active: None,
            next_id: found.next_id,
            read,
            reader: None,
            unacked: BTreeSet::new(),
            retries: VecDeque::new(),
            in_flight: 0,
            disk_bytes,
            stored: read,
            cursor_file,
            closed: false,
            dirty: false,
            unsynced: Vec::new(),
            dir_unsynced: false,
            fresh: VecDeque::new(),
            fresh_bytes: 0,
            #[cfg(test)]
            full: false,
        }),
        appending: Mutex::new(()),
        syncing_dir: Mutex::new(()),
        readable: Notify::new(),
        gate: Gate::default(),
        room: Notify::new(),
        held,
        metrics: m,
        log: RateLimitedLog::default(),
        #[cfg(test)]
        dir_syncs: AtomicU64::new(0),
        finished: AtomicBool::new(false),
        replaced: AtomicBool::new(false),
        _lock: lock,
    });
    if config.fsync == Fsync::Always {
        // what recovery removed or rewrote, and the cursor file, for good
        shared.sync_dir();
    }
    if config.fsync == Fsync::Interval {
        spawn_syncer(
            Arc::downgrade(&shared),
            config.fsync_interval,
            &shared.metrics.errors,
        );
    }
    let alive = Arc::new(SenderAlive(shared.clone()));
    Ok((shared, alive))
}

/// Takes `dir/lock` (an exclusive `flock`), so that two sinks or two
/// processes never share one buffer directory. The kernel releases it when
/// the process ends, however it ends.
fn lock_dir(dir: &std::path::Path) -> Result<File, String> {
    use std::os::fd::AsRawFd;
    let path = dir.join("lock");
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor we own; no memory is involved.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(format!(
            "the disk buffer directory {} is in use by another sink or logferry process: give every sink its own dir",
            dir.display()
        ));
    }
    Ok(f)
}

/// Syncs the active segment every `every` while there is something to
/// sync; ends when the buffer is gone.
fn spawn_syncer(shared: Weak<Shared>, every: Duration, errors: &ErrorKinds) {
    let spawned = std::thread::Builder::new()
        .name("disk-buffer-sync".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            let Some(s) = shared.upgrade() else { return };
            s.sync();
        });
    if let Err(e) = spawned {
        crate::error_counted!(errors, "sync_thread", error = %e,
            "cannot start the disk buffer sync thread; syncing at shutdown only");
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// With `fsync = "always"`: syncs the directory if a segment was
    /// created or removed since it was last synced; false if that failed
    /// (counted and logged; the next one tries again).
    fn sync_dir_if_changed(&self) -> bool {
        let _syncing = self.syncing_dir.lock().unwrap_or_else(|e| e.into_inner());
        if !std::mem::take(&mut self.lock().dir_unsynced) {
            return true;
        }
        let synced = self.sync_dir();
        if !synced {
            self.lock().dir_unsynced = true;
        }
        synced
    }

    /// Syncs the directory (its segment names); false if that failed
    /// (counted and logged).
    fn sync_dir(&self) -> bool {
        #[cfg(test)]
        self.dir_syncs.fetch_add(1, Ordering::Relaxed);
        match segment::sync_dir(&self.dir) {
            Ok(()) => true,
            Err(e) => {
                self.write_failed("directory sync", &e);
                false
            }
        }
    }

    /// Deletes a segment whose frames are all delivered.
    fn remove_segment(&self, st: &mut State, id: u64) {
        if let Some(s) = st.segments.remove(&id) {
            st.dir_unsynced |= self.fsync == Fsync::Always;
            st.disk_bytes -= s.len;
            if let Err(e) = fs::remove_file(self.dir.join(segment::file_name(id))) {
                crate::warn_counted!(self.metrics.errors, "segment_delete", sink = %self.sink,
                    segment = id, error = %e, "cannot delete a delivered disk buffer segment");
            }
            if st.reader.as_ref().is_some_and(|(r, _)| *r == id) {
                st.reader = None;
            }
            self.room.notify_waiters();
        }
    }
}

impl Shared {
    /// Its sink has finished and let go of every delivery: closes the
    /// buffer, syncs what is written (unless `fsync = "never"`) and counts
    /// and logs what stays on disk for the next start. Done once, here or
    /// when the buffer is dropped, so the final counters include it
    /// whoever still holds a sender.
    pub(super) fn finish(&self) {
        if self.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        let _appending = self.appending.lock().unwrap_or_else(|e| e.into_inner());
        self.close();
        let st = self.lock();
        if st.dir_unsynced {
            let _ = segment::sync_dir(&self.dir);
        }
        if self.fsync != Fsync::Never {
            for f in st.unsynced.iter().chain(st.active.as_ref().map(|(_, f)| f)) {
                let _ = f.sync_data();
            }
            let _ = st.cursor_file.sync_data();
        }
        drop(st);
        let records = self.held.records.load(Ordering::Relaxed);
        if records == 0 {
            return;
        }
        let bytes = self.held.bytes.load(Ordering::Relaxed);
        if self.replaced.load(Ordering::Acquire) {
            tracing::info!(sink = %self.sink, dir = %self.dir.display(), records, bytes,
                "undelivered records stay in the disk buffer for the sink that replaces this one (a sink that opens this directory delivers them)");
        } else {
            self.metrics.kept_records.add(records as u64);
            tracing::warn!(sink = %self.sink, dir = %self.dir.display(), records, bytes,
                "undelivered records stay in the disk buffer; they are delivered after the next start");
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Test hooks.
#[cfg(test)]
impl Shared {
    pub(super) fn set_full(&self, full: bool) {
        self.lock().full = full;
    }

    pub(super) fn disk_bytes(&self) -> u64 {
        self.lock().disk_bytes
    }

    pub(super) fn dir_syncs(&self) -> u64 {
        self.dir_syncs.load(Ordering::Relaxed)
    }

    /// Forgets the frames kept in memory, so the reader reads the disk.
    pub(super) fn forget_fresh(&self) {
        let mut st = self.lock();
        st.fresh.clear();
        st.fresh_bytes = 0;
    }

    /// Lets go of the directory as a killed process does.
    pub(super) fn unlock_dir(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own.
        unsafe { libc::flock(self._lock.as_raw_fd(), libc::LOCK_UN) };
    }
}

#[cfg(test)]
mod tests;
