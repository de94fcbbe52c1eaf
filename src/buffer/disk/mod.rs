//! The disk buffer: a sink queue kept in append-only segment files.
//!
//! A batch sent to the queue is framed (length + CRC32C, see [`format`])
//! and appended to the active segment in `dir`; once it is written (with
//! `fsync = "always"`: once synced) the source's acknowledgement is
//! released, so the disk holds it from then on. The sink reads frames back
//! in order as [`Delivery`]s. A frame leaves the buffer only when its
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
//! Byte layouts are documented in [`format`] and [`cursor`], and for users
//! in docs/disk-buffer.md.

pub mod cursor;
pub mod format;
pub mod inspect;
mod recover;
pub mod segment;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use bytes::Bytes;
use serde::Deserialize;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::{BufferConfig, Delivery, SendError, Unsent, WhenFull};
use crate::ack::{AckHandle, AckOutcome};
use crate::event::{Batch, EventTime};
use crate::metrics::{Counter, Registry};
use crate::sinks::verdict::backoff;
use crate::telemetry::RateLimitedLog;
use crate::warn_limited;
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

/// Most bytes handed to the sink and not settled yet: bounds the memory a
/// disk buffer uses for deliveries, whatever the sink does.
const MAX_IN_FLIGHT_BYTES: usize = 16 << 20;
/// Smallest segment size, whatever `max_bytes` is.
const MIN_SEGMENT: u64 = 4 << 10;

/// A position past every other (the cursor of an empty buffer before the
/// first write).
fn start_of(id: u64) -> Pos {
    (id, SEGMENT_HEADER as u64)
}

/// Counters of one disk buffer.
#[derive(Clone)]
struct DiskMetrics {
    written_records: Counter,
    written_bytes: Counter,
    replayed_records: Counter,
    retried_records: Counter,
    write_errors: Counter,
    dropped_records: Counter,
    quarantined_bytes: Counter,
    quarantined_frames: Counter,
    kept_records: Counter,
}

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
    #[cfg(test)]
    /// Makes appends fail as a full disk does, after writing part of the frame.
    full: bool,
}

pub(super) struct Shared {
    sink: Arc<str>,
    dir: PathBuf,
    max_bytes: u64,
    segment_bytes: u64,
    when_full: WhenFull,
    fsync: Fsync,
    state: Mutex<State>,
    /// A frame was written, a retry queued, a delivery settled, or the
    /// senders are gone.
    readable: Notify,
    /// Bytes were freed on disk.
    room: Notify,
    pub held: Arc<Held>,
    metrics: DiskMetrics,
    log: RateLimitedLog,
    /// Holds the directory's lock for as long as the buffer is open.
    _lock: File,
}

/// Sender half; the last one dropped closes the queue.
pub(super) struct SenderAlive(Arc<Shared>);

impl Drop for SenderAlive {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.readable.notify_one();
    }
}

/// Why a batch could not be appended.
enum AppendError {
    /// `max_bytes` is reached.
    NoRoom,
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
    let found = recover::recover(sink, &dir, &m.quarantined_bytes, &m.quarantined_frames)
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
            #[cfg(test)]
            full: false,
        }),
        readable: Notify::new(),
        room: Notify::new(),
        held,
        metrics: m,
        log: RateLimitedLog::default(),
        _lock: lock,
    });
    if config.fsync == Fsync::Interval {
        spawn_syncer(Arc::downgrade(&shared), config.fsync_interval);
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
fn spawn_syncer(shared: Weak<Shared>, every: Duration) {
    let spawned = std::thread::Builder::new()
        .name("disk-buffer-sync".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            let Some(s) = shared.upgrade() else { return };
            s.sync();
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the disk buffer sync thread; syncing at shutdown only");
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `batch`, waiting for room (or dropping it) as `when_full`
    /// says, and retrying a failed write with a backoff until it succeeds.
    pub(super) async fn send(self: &Arc<Self>, batch: Batch) -> Result<(), SendError> {
        let unsent = Unsent(Some(batch));
        let Some(b) = unsent.batch() else {
            return Ok(());
        };
        let count = b.count;
        let Some(frame) = format::encode(b, EventTime::now()) else {
            tracing::error!(sink = %self.sink, records = count,
                "batch cannot be framed for the disk buffer (tag over 65535 bytes or body over 1 GiB); rejected");
            self.metrics.dropped_records.add(count as u64);
            return Ok(());
        };
        let mut failures = 0;
        let file = loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.append(&frame, count) {
                Ok(file) => break file,
                Err(AppendError::NoRoom) => match self.when_full {
                    WhenFull::Block => {
                        // the poll is a safety net; settling wakes us at once
                        let _ = tokio::time::timeout(Duration::from_secs(1), room).await;
                    }
                    WhenFull::DropNewest => {
                        self.metrics.dropped_records.add(count as u64);
                        warn_limited!(self.log, "full", sink = %self.sink, records = count,
                            max_bytes = self.max_bytes, "disk buffer full; batch dropped");
                        return Ok(());
                    }
                },
                Err(AppendError::Io(e)) => {
                    failures += 1;
                    self.write_failed("write", &e);
                    tokio::time::sleep(backoff(
                        Duration::from_millis(50),
                        Duration::from_secs(2),
                        failures,
                    ))
                    .await;
                }
            }
        };
        if self.fsync == Fsync::Always {
            let synced = tokio::task::spawn_blocking(move || file.sync_data()).await;
            match synced {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    // the frame may or may not be durable: the source resends
                    self.write_failed("sync", &e);
                    return Ok(());
                }
                Err(_) => return Ok(()),
            }
        }
        // the disk holds it now: releasing the batch acknowledges it
        drop(unsent.take());
        self.readable.notify_one();
        Ok(())
    }

    fn write_failed(&self, op: &'static str, e: &io::Error) {
        self.metrics.write_errors.inc();
        let full = matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT));
        let hint = if full {
            "the file system is full: free space there (or lower other users of it); sends wait and resume by themselves"
        } else {
            "sends wait and retry; check the directory's file system"
        };
        warn_limited!(self.log, op, sink = %self.sink, dir = %self.dir.display(), error = %e,
            "disk buffer {op} failed: {hint}");
    }

    /// Appends one frame to the active segment (rolling to a new one when
    /// it is full); returns the active file for syncing.
    fn append(&self, frame: &[u8], count: usize) -> Result<Arc<File>, AppendError> {
        let mut st = self.lock();
        let len = frame.len() as u64;
        if !self.has_room(&mut st, len) {
            return Err(AppendError::NoRoom);
        }
        let roll = match &st.active {
            None => true,
            Some((id, _)) => {
                let cur = st.segments[id].len;
                cur > SEGMENT_HEADER as u64 && cur + len > self.segment_bytes
            }
        };
        if roll {
            self.roll(&mut st).map_err(AppendError::Io)?;
        }
        let (id, file) = st.active.clone().expect("rolled");
        let at = st.segments[&id].len;
        #[cfg(test)]
        let written = if st.full {
            // as a full disk does: part of the frame, then ENOSPC
            let _ = file.write_all_at(&frame[..frame.len() / 2], at);
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        } else {
            file.write_all_at(frame, at)
        };
        #[cfg(not(test))]
        let written = file.write_all_at(frame, at);
        if let Err(e) = written {
            // a partial frame must not count: cut it off (if that fails
            // too, a restart finds a torn frame and quarantines it)
            if file.set_len(at).is_err() {
                st.active = None;
            }
            return Err(AppendError::Io(e));
        }
        let seg = st.segments.get_mut(&id).expect("active segment");
        seg.len += len;
        seg.outstanding += len;
        st.disk_bytes += len;
        st.dirty = true;
        self.held.bytes.fetch_add(len, Ordering::Relaxed);
        self.held.records.fetch_add(count, Ordering::Relaxed);
        self.metrics.written_records.add(count as u64);
        self.metrics.written_bytes.add(len);
        Ok(file)
    }

    /// Whether `len` more bytes fit under `max_bytes`. A batch larger than
    /// the whole buffer still passes when nothing else is undelivered.
    fn has_room(&self, st: &mut State, len: u64) -> bool {
        if st.disk_bytes + len <= self.max_bytes {
            return true;
        }
        // the active segment may hold only delivered frames: start anew
        if let Some(id) = st.active.as_ref().map(|(id, _)| *id) {
            if st.segments[&id].outstanding == 0 {
                st.active = None;
                self.remove_segment(st, id);
                if st.disk_bytes + len <= self.max_bytes {
                    return true;
                }
            }
        }
        self.held.bytes.load(Ordering::Relaxed) == 0
    }

    fn roll(&self, st: &mut State) -> io::Result<()> {
        let id = st.next_id;
        let path = self.dir.join(segment::file_name(id));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        if let Err(e) = file.write_all_at(&format::segment_header(id), 0) {
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        st.next_id += 1;
        if let Some((old, f)) = st.active.take() {
            if self.fsync != Fsync::Never {
                let _ = f.sync_data();
            }
            if st.segments.get(&old).is_some_and(|s| s.outstanding == 0) {
                self.remove_segment(st, old);
            }
        }
        let len = SEGMENT_HEADER as u64;
        st.segments.insert(
            id,
            Segment {
                len,
                outstanding: 0,
            },
        );
        st.disk_bytes += len;
        st.active = Some((id, Arc::new(file)));
        Ok(())
    }

    /// Deletes a segment whose frames are all delivered.
    fn remove_segment(&self, st: &mut State, id: u64) {
        if let Some(s) = st.segments.remove(&id) {
            st.disk_bytes -= s.len;
            if let Err(e) = fs::remove_file(self.dir.join(segment::file_name(id))) {
                tracing::warn!(sink = %self.sink, segment = id, error = %e,
                    "cannot delete a delivered disk buffer segment");
            }
            if st.reader.as_ref().is_some_and(|(r, _)| *r == id) {
                st.reader = None;
            }
            self.room.notify_waiters();
        }
    }

    /// Syncs the active segment if anything was written since last time.
    fn sync(&self) {
        let file = {
            let mut st = self.lock();
            if !std::mem::take(&mut st.dirty) {
                return;
            }
            let _ = st.cursor_file.sync_data();
            st.active.as_ref().map(|(_, f)| f.clone())
        };
        if let Some(f) = file {
            if let Err(e) = f.sync_data() {
                self.write_failed("sync", &e);
            }
        }
    }

    /// The next delivery for the sink, if one is ready now.
    fn next(self: &Arc<Self>) -> Next {
        let mut st = self.lock();
        let now = Instant::now();
        if st.retries.front().is_some_and(|r| r.due <= now) {
            let r = st.retries.pop_front().expect("checked");
            return Next::Ready(self.delivery(r.pos, r.len, r.batch, r.attempt));
        }
        let retry_due = st.retries.front().map(|r| r.due);
        if st.in_flight >= MAX_IN_FLIGHT_BYTES {
            return Next::Wait(retry_due);
        }
        loop {
            let (seg, off) = st.read;
            let end = match st.segments.get(&seg) {
                Some(s) => s.len,
                None => 0,
            };
            if off < end {
                match self.read_frame(&mut st, seg, off, end) {
                    Ok(Some((batch, len))) => {
                        st.read = (seg, off + len as u64);
                        st.unacked.insert((seg, off));
                        st.in_flight += len;
                        drop(st);
                        return Next::Ready(self.delivery((seg, off), len, batch, 0));
                    }
                    Ok(None) => continue,
                    Err(e) => {
                        warn_limited!(self.log, "read", sink = %self.sink, segment = seg, offset = off,
                            error = %e, "cannot read the disk buffer; retrying");
                        return Next::Wait(Some(now + Duration::from_secs(1)));
                    }
                }
            }
            // past the end of this segment: on to the next, if it exists
            let is_active = st.active.as_ref().is_some_and(|(id, _)| *id == seg);
            match st.segments.range(seg + 1..).next() {
                Some((&next, _)) => {
                    st.read = start_of(next);
                    if !is_active && st.segments.get(&seg).is_some_and(|s| s.outstanding == 0) {
                        self.remove_segment(&mut st, seg);
                    }
                }
                None => break,
            }
        }
        // at a stop, what is not accepted (waiting for a retry, or still
        // with the sink) stays on disk for the next start
        if st.closed {
            return Next::End;
        }
        Next::Wait(retry_due)
    }

    /// Reads the frame at `off` of segment `seg`. `Ok(None)`: it was
    /// damaged, quarantined and skipped (the read position moved on).
    fn read_frame(
        &self,
        st: &mut State,
        seg: u64,
        off: u64,
        end: u64,
    ) -> io::Result<Option<(Batch, usize)>> {
        if st.reader.as_ref().is_none_or(|(id, _)| *id != seg) {
            let f = File::open(self.dir.join(segment::file_name(seg)))?;
            st.reader = Some((seg, f));
        }
        let (_, file) = st.reader.as_ref().expect("opened");
        let mut header = [0u8; format::FRAME_HEADER];
        let avail = (end - off) as usize;
        let len = if avail >= header.len() {
            file.read_exact_at(&mut header, off)?;
            format::frame_len(&header).ok().filter(|l| *l <= avail)
        } else {
            None
        };
        if let Some(len) = len {
            let mut buf = vec![0u8; len];
            file.read_exact_at(&mut buf, off)?;
            if let Ok((frame, _)) = format::decode(&Bytes::from(buf)) {
                return Ok(Some((frame.into_batch(), len)));
            }
        }
        // damaged under us: resync in what is left of the segment
        let mut rest = vec![0u8; avail];
        file.read_exact_at(&mut rest, off)?;
        let mut with_header = format::segment_header(seg).to_vec();
        with_header.extend_from_slice(&rest);
        let scan = segment::scan(&Bytes::from(with_header), 0);
        let skip = scan
            .frames
            .first()
            .map(|f| f.offset - SEGMENT_HEADER)
            .unwrap_or(avail);
        let path = segment::quarantine(&self.dir, seg, &rest[..skip]);
        self.quarantined(seg, off, skip as u64, path);
        st.read = (seg, off + skip as u64);
        // those bytes will never be delivered (their record count is
        // unknown: the records gauge keeps them until the next start)
        if let Some(s) = st.segments.get_mut(&seg) {
            s.outstanding = s.outstanding.saturating_sub(skip as u64);
        }
        let _ = self
            .held
            .bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_sub(skip as u64))
            });
        Ok(None)
    }

    fn quarantined(&self, seg: u64, off: u64, bytes: u64, path: io::Result<PathBuf>) {
        self.metrics.quarantined_bytes.add(bytes);
        self.metrics.quarantined_frames.inc();
        match path {
            Ok(p) => tracing::error!(sink = %self.sink, segment = seg, offset = off, bytes,
                quarantine = %p.display(), "damaged disk buffer frame skipped; its bytes are in the quarantine file"),
            Err(e) => {
                tracing::error!(sink = %self.sink, segment = seg, offset = off, bytes, error = %e,
                "damaged disk buffer frame skipped; cannot write it to the quarantine directory")
            }
        }
    }

    /// Wraps a frame's batch in a delivery whose acknowledgement settles
    /// the frame in this buffer.
    fn delivery(self: &Arc<Self>, pos: Pos, len: usize, batch: Batch, attempt: u32) -> Delivery {
        let shared = self.clone();
        let kept = batch.clone();
        let ack = AckHandle::new(move |outcome| shared.settle(pos, len, kept, attempt, outcome));
        Delivery::standalone(batch.with_ack(ack))
    }

    fn settle(&self, pos: Pos, len: usize, batch: Batch, attempt: u32, outcome: AckOutcome) {
        let mut st = self.lock();
        match outcome {
            AckOutcome::Accepted => {
                st.in_flight -= len;
                st.unacked.remove(&pos);
                self.held.bytes.fetch_sub(len as u64, Ordering::Relaxed);
                self.held.records.fetch_sub(batch.count, Ordering::Relaxed);
                let (seg, _) = pos;
                let active = st.active.as_ref().map(|(id, _)| *id);
                let done = match st.segments.get_mut(&seg) {
                    Some(s) => {
                        s.outstanding = s.outstanding.saturating_sub(len as u64);
                        s.outstanding == 0
                    }
                    None => false,
                };
                if done && active != Some(seg) && st.read.0 > seg {
                    self.remove_segment(&mut st, seg);
                }
                self.store_cursor(&mut st);
            }
            AckOutcome::Rejected => {
                self.metrics.retried_records.add(batch.count as u64);
                let attempt = attempt + 1;
                let due = Instant::now()
                    + backoff(Duration::from_millis(200), Duration::from_secs(30), attempt);
                // in position order, so retries go out oldest first
                let at = st.retries.partition_point(|r| r.due <= due);
                st.retries.insert(
                    at,
                    Retry {
                        pos,
                        len,
                        batch,
                        attempt,
                        due,
                    },
                );
            }
        }
        drop(st);
        self.readable.notify_one();
    }

    /// Rewrites the `ack` file if the first undelivered frame moved.
    fn store_cursor(&self, st: &mut State) {
        let cursor = st.unacked.first().copied().unwrap_or(st.read);
        if cursor != st.stored {
            if let Err(e) = cursor::store(&st.cursor_file, cursor) {
                self.write_failed("cursor", &e);
            }
            st.stored = cursor;
        }
    }

    /// The next delivery; `None` once the senders are gone and everything
    /// written has been handed out (what is not accepted stays on disk).
    pub(super) async fn recv(self: &Arc<Self>) -> Option<Delivery> {
        loop {
            let readable = self.readable.notified();
            tokio::pin!(readable);
            readable.as_mut().enable();
            match self.next() {
                Next::Ready(d) => return Some(d),
                Next::End => return None,
                Next::Wait(until) => {
                    let until = until.unwrap_or_else(|| Instant::now() + Duration::from_secs(1));
                    let _ = tokio::time::timeout_at(until, readable).await;
                }
            }
        }
    }

    pub(super) fn try_recv(self: &Arc<Self>) -> Option<Delivery> {
        match self.next() {
            Next::Ready(d) => Some(d),
            _ => None,
        }
    }

    pub(super) fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

enum Next {
    Ready(Delivery),
    /// Nothing now; look again by then (or when woken).
    Wait(Option<Instant>),
    End,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let sink = self.sink.clone();
        let st = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if self.fsync != Fsync::Never {
            if let Some((_, f)) = &st.active {
                let _ = f.sync_data();
            }
            let _ = st.cursor_file.sync_data();
        }
        let records = self.held.records.load(Ordering::Relaxed);
        if records > 0 {
            self.metrics.kept_records.add(records as u64);
            tracing::warn!(sink = %sink, dir = %self.dir.display(), records,
                bytes = self.held.bytes.load(Ordering::Relaxed),
                "undelivered records stay in the disk buffer; they are delivered after the next start");
        }
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

    /// Lets go of the directory as a killed process does.
    pub(super) fn unlock_dir(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own.
        unsafe { libc::flock(self._lock.as_raw_fd(), libc::LOCK_UN) };
    }
}

#[cfg(test)]
mod tests;
