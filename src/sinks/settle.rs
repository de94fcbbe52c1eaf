//! What happens to the records of one delivery attempt once its
//! [`Verdict`] is known, for every sink: the one place that accepts,
//! schedules a retry, gives up, dead-letters, rejects, logs and counts.
//!
//! - `Delivered`: the records are accepted (acknowledged to their source).
//! - `Retry { after }`: they go back to the sink, to be tried again after
//!   `after`; once `retry.max_attempts` attempts have failed, the verdict
//!   becomes `Rejected` (kind `retries_exhausted`). When a client waits
//!   for some of them (an HTTP request, a forward chunk with an ack), the
//!   wait is at most [`WAITED_RETRY_MAX`], well below the clients'
//!   `request_timeout`, so the destination's return reaches them before
//!   they give up and send the records again. The first delivery after
//!   failed attempts is logged with how long the outage lasted.
//! - `Rejected { reason }`: the destination can never take these records;
//!   never retried, never sent again by their source. With a `dead_letter`
//!   file, they are appended to it (fsynced) as Forward-protocol frames,
//!   and `logferry replay` can send them on; without one they are dropped,
//!   logged with their first bytes and counted. Either way the source is
//!   told they were set aside ([`crate::ack::AckOutcome::Refused`]): a tail
//!   source moves past them, a forward client gets its ack, an HTTP client
//!   a 4xx naming them. Only a failed dead-letter write rejects them to the
//!   source (sent again later).
//! - Retries used up (`retry.max_attempts`): the destination may take the
//!   records later, so without a `dead_letter` file they are rejected to
//!   their source (not acknowledged: a forward client resends, a tail
//!   source reads them again after its backoff).
//! - Some records of a batch refused, the others delivered
//!   ([`Settler::settle_partly`], a Kafka message over its size limit): the
//!   refused ones alone are set aside as above; the rest count as
//!   delivered once.
//!
//! ## Dead-letter file format
//!
//! A plain concatenation of msgpack Forward-protocol frames, one per
//! rejected batch (or forward chunk, or run of records set aside for one
//! reason), each a PackedForward frame `[tag, bin(entries), {"size":
//! count, "kind": kind, "reason": text}]` where `entries` are `[time,
//! record]` msgpack arrays back to back; a tailed line becomes `[time,
//! {"message": line}]`. `kind` and `reason` say why the records were set
//! aside (`http_4xx` and `HTTP 400 Bad Request: {"error"…`, or an
//! OpenSearch item's `mapper_parsing_exception: failed to parse field…`);
//! Forward servers, `logferry replay` among them, skip options they do
//! not know. Every append is fsynced before the records
//! are acknowledged. A failed append is cut back, so the file never ends in
//! a partial frame.

pub mod given_back;

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::verdict::{Rejection, RetryConfig, Verdict};
use super::SinkMetrics;
use crate::ack::Refusal;
use crate::buffer::Delivery;
use crate::event::{Batch, EventTime, Records};
use crate::metrics::{Counter, Registry};
use crate::protocol::forward::write_message_entry;
use crate::protocol::msgpack::write;
use crate::telemetry::{RateLimitedLog, WARN_INTERVAL};
use crate::warn_limited;

/// The sink-level settings every sink type shares, from the sink's table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettleConfig {
    /// `dead_letter`: where rejected records are kept.
    pub dead_letter: Option<PathBuf>,
    /// `retry`: backoff and give-up; `None` when the table is absent.
    pub retry: Option<RetryConfig>,
}

impl SettleConfig {
    pub fn validate(&self) -> Result<(), String> {
        if let Some(r) = &self.retry {
            r.validate()?;
        }
        if let Some(p) = &self.dead_letter {
            if p.as_os_str().is_empty() || p.to_string_lossy().ends_with('/') || p.is_dir() {
                return Err(format!(
                    "dead_letter {:?} must name a file, e.g. \"/var/lib/logferry/dead-letter.msgpack\"",
                    p.display().to_string()
                ));
            }
        }
        Ok(())
    }
}

/// Something settled as a whole: a sink's delivery, or a forward chunk.
pub trait Settle {
    fn tag(&self) -> &str;
    fn records(&self) -> usize;
    /// The records as concatenated `[time, record]` entries.
    fn entries(&self) -> Vec<Bytes>;
    /// Delivered (or kept in the dead-letter file): acknowledged.
    fn accept(self);
    /// Not kept: not acknowledged to the source.
    fn reject(self);
    /// Set aside for good: settled, the source told why.
    fn refuse(self, refusal: Refusal);
    /// Whether a client waits for the acknowledgement now.
    fn is_waited_on(&self) -> bool {
        false
    }
}

/// The longest wait before a retry of records a client waits for: well
/// below the sources' `request_timeout` (30 s by default), so that a
/// destination that comes back is used while the client still waits.
pub const WAITED_RETRY_MAX: Duration = Duration::from_secs(1);

/// Bytes a line takes in a `[time, {"message": line}]` entry beyond the
/// bytes it has in [`Records::Lines`] data (its `\n` included): an upper
/// bound for lines shorter than 4 GiB (array, time extension, map, key,
/// string header).
pub const LINE_ENTRY_OVERHEAD: usize = 24;

/// The entries of `b`: forward entries as they are, lines encoded as
/// `[time, {"message": line}]`.
pub fn batch_entries(b: &Batch) -> Bytes {
    match &b.records {
        Records::Entries(e) => e.clone(),
        Records::Lines { data, time } => {
            // exact room: growing would copy it all once more
            let mut out = Vec::with_capacity(data.len() + b.count * LINE_ENTRY_OVERHEAD);
            for line in data.split(|c| *c == b'\n').take(b.count) {
                write_message_entry(&mut out, time.secs, time.nanos, line);
            }
            Bytes::from(out)
        }
    }
}

/// The `i`th `[time, record]` entry of `batch`, for the dead-letter file
/// of a record set aside alone.
pub fn entry_at(batch: &Batch, i: usize) -> Option<Bytes> {
    let entries = batch_entries(batch);
    let mut start = 0;
    for _ in 0..i {
        start = crate::protocol::msgpack::skip(&entries, start).ok()?;
    }
    let end = crate::protocol::msgpack::skip(&entries, start).ok()?;
    Some(entries.slice(start..end))
}

impl Settle for Delivery {
    fn tag(&self) -> &str {
        &self.batch().tag
    }
    fn records(&self) -> usize {
        self.batch().count
    }
    fn entries(&self) -> Vec<Bytes> {
        vec![batch_entries(self.batch())]
    }
    fn accept(self) {
        Delivery::accept(self)
    }
    fn reject(self) {
        Delivery::reject(self)
    }
    fn refuse(self, refusal: Refusal) {
        self.batch().ack.refuse(refusal);
        Delivery::accept(self)
    }
    fn is_waited_on(&self) -> bool {
        self.batch().is_waited_on()
    }
}

/// A record one attempt could not deliver for good while the others of its
/// batch went through, as the destination would have taken it.
pub struct SetAside {
    /// Why the destination will never take it.
    pub reason: Rejection,
    /// The record's event time.
    pub time: EventTime,
    /// The record as the sink encoded it for the destination.
    pub payload: Bytes,
    /// The record as it arrived (a `[time, record]` entry), when known: the
    /// dead-letter file keeps that, else `{"message": payload}`.
    pub entry: Option<Bytes>,
}

/// Longest start of a record shown in a log line or an HTTP answer.
const FIRST_BYTES: usize = 96;

/// The first record of `entries` (`[time, record]` msgpack arrays), as
/// JSON (or text for a plain string), cut at [`FIRST_BYTES`].
pub fn first_record(entries: &[u8]) -> String {
    use crate::protocol::msgpack::Reader;
    let mut r = Reader::new(entries);
    let mut out = Vec::new();
    let read = r
        .read_array_len()
        .and_then(|_| r.skip())
        .and_then(|()| crate::format::json::write_value(&mut out, &mut r));
    if read.is_err() {
        out = entries[..entries.len().min(FIRST_BYTES)].to_vec();
    }
    shown(&out)
}

/// `bytes` as text, cut at [`FIRST_BYTES`] (with `…`).
fn shown(bytes: &[u8]) -> String {
    let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(FIRST_BYTES)]).into_owned();
    if bytes.len() > FIRST_BYTES {
        text.push('…');
    }
    text
}

/// Appends one dead-letter frame: `[tag, bin(entries), {"size": count,
/// "kind": …, "reason": …}]`.
fn write_frame(out: &mut Vec<u8>, tag: &str, entries: &[u8], count: usize, why: &Rejection) {
    write::array_len(out, 3);
    write::str(out, tag.as_bytes());
    write::bin_header(out, entries.len());
    out.extend_from_slice(entries);
    write::map_len(out, 3);
    write::str(out, b"size");
    write::uint(out, count as u64);
    write::str(out, b"kind");
    write::str(out, why.kind.as_bytes());
    write::str(out, b"reason");
    write::str(out, why.message.as_bytes());
}

/// The dead-letter file of one sink.
pub struct DeadLetter {
    /// For the log.
    path: PathBuf,
    /// Opened for append; shared by a sink's tasks (forward servers).
    file: Mutex<File>,
}

impl DeadLetter {
    /// Opens (creates) `path` for append, with its directory. A file that
    /// ends inside a frame (an append that a crash or kill -9 cut short,
    /// whose records were never acknowledged as dead-lettered) is first cut
    /// back to its last whole frame, so the frames after it stay readable.
    pub fn open(path: &Path) -> io::Result<DeadLetter> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        // a regular file only: /dev/full and the like are read forever
        let torn = if file.metadata()?.is_file() {
            torn_frame_at(&File::open(path)?)?
        } else {
            None
        };
        if let Some(whole) = torn {
            let size = file.metadata()?.len();
            file.set_len(whole)?;
            tracing::warn!(path = %path.display(), bytes = size - whole,
                "the dead-letter file ended inside a frame (an append cut short by a crash or kill -9); cut back to its last whole frame");
        }
        Ok(DeadLetter {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// Appends `frames` and fsyncs; on failure the file is cut back to
    /// where it was, so it never ends in a partial frame.
    fn append(&self, frames: &[u8]) -> io::Result<()> {
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let before = f.metadata()?.len();
        let written = f.write_all(frames).and_then(|()| f.sync_data());
        if written.is_err() {
            let _ = f.set_len(before);
        }
        written
    }
}

/// Bytes of `file` up to the end of its last complete msgpack value, when
/// what follows is an unfinished one; `None` when it ends on a whole value
/// or is not msgpack (not this sink's to cut). Reads it once, scanning
/// each byte once and holding at most one value and a read's worth.
fn torn_frame_at(mut file: &File) -> io::Result<Option<u64>> {
    use crate::protocol::msgpack::{skip_from, Cursor, Error};
    use std::io::Read;
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 256 * 1024];
    // file offset of buf[0]; start of the value being scanned in buf
    let (mut base, mut start) = (0u64, 0usize);
    let mut cursor = Cursor::default();
    loop {
        match skip_from(&buf, &mut cursor) {
            Ok(end) => {
                start = end;
                cursor = Cursor::at(end);
            }
            Err(Error::Invalid { .. }) => return Ok(None),
            Err(Error::Incomplete { .. }) => {
                if start > 0 {
                    // drop the whole values; the unfinished one is scanned
                    // again from its start, once
                    buf.drain(..start);
                    base += start as u64;
                    start = 0;
                    cursor = Cursor::default();
                }
                let n = file.read(&mut chunk)?;
                if n == 0 {
                    return Ok((!buf.is_empty()).then_some(base));
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

/// What became of records offered to the dead-letter file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeadLettered {
    /// Appended (and fsynced).
    Kept,
    /// The sink has no dead-letter file.
    NoFile,
    /// The append failed (counted and logged).
    Failed,
}

/// How an attempt was settled.
pub enum Settled<T> {
    Accepted,
    /// Give `items` another attempt after `after`.
    Retry {
        after: Duration,
        items: Vec<T>,
    },
    /// Given up; `dead_lettered` if kept in the dead-letter file.
    Rejected {
        dead_lettered: bool,
    },
}

impl<T> std::fmt::Debug for Settled<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Settled::Accepted => f.write_str("Accepted"),
            Settled::Retry { after, items } => {
                write!(f, "Retry {{ after: {after:?}, items: {} }}", items.len())
            }
            Settled::Rejected { dead_lettered } => {
                write!(f, "Rejected {{ dead_lettered: {dead_lettered} }}")
            }
        }
    }
}

/// Settles the attempts of one sink; see the module docs.
pub struct Settler {
    /// The sink's name, for the log and the `component` label.
    name: Arc<str>,
    /// For the counters labelled by rejection kind.
    registry: Registry,
    /// The counters every sink keeps.
    metrics: SinkMetrics,
    /// Backoff and give-up.
    retry: RetryConfig,
    /// Where rejected records are kept, if configured.
    dead_letter: Option<DeadLetter>,
    /// Records written to the dead-letter file.
    dead_letter_records: Counter,
    /// Failed dead-letter appends.
    dead_letter_errors: Counter,
    /// Records handed back for another attempt.
    retries: Counter,
    /// Records set aside for good and dropped (no dead-letter file).
    dropped: Counter,
    /// Retry warnings, rate-limited: a destination down for long would
    /// otherwise flood the log.
    log: RateLimitedLog,
    /// Since when attempts fail, and how many did: the recovery is logged
    /// with how long the outage lasted.
    outage: Mutex<Option<Outage>>,
}

/// A run of failed attempts, not yet followed by a delivery.
#[derive(Debug, Clone, Copy)]
struct Outage {
    since: Instant,
    failed: u32,
}

impl Settler {
    pub fn new(
        name: &str,
        registry: &Registry,
        metrics: SinkMetrics,
        retry: RetryConfig,
        dead_letter: Option<DeadLetter>,
    ) -> Settler {
        let l = &[("component", name)];
        Settler {
            name: name.into(),
            registry: registry.clone(),
            metrics,
            retry,
            dead_letter,
            dead_letter_records: registry.counter(
                "logferry_sink_dead_letter_records_total",
                "Rejected records written to the sink's dead-letter file (and acknowledged).",
                l,
            ),
            dead_letter_errors: registry.counter(
                "logferry_sink_dead_letter_errors_total",
                "Failed appends to the dead-letter file (those records were rejected to their source).",
                l,
            ),
            retries: registry.counter(
                "logferry_sink_retried_records_total",
                "Records handed back for another attempt (a failed attempt, or a forward server that went down).",
                l,
            ),
            dropped: registry.counter(
                "logferry_sink_dropped_records_total",
                "Records a destination can never take, dropped because the sink has no dead_letter file (each logged with its first bytes; the source moves on).",
                l,
            ),
            log: RateLimitedLog::new(WARN_INTERVAL),
            outage: Mutex::new(None),
        }
    }

    /// Opens the dead-letter file of `config`, if any, and builds the settler.
    pub fn from_config(
        name: &str,
        registry: &Registry,
        metrics: SinkMetrics,
        retry: RetryConfig,
        config: &SettleConfig,
    ) -> Result<Settler, String> {
        let dead_letter = match &config.dead_letter {
            Some(p) => Some(
                DeadLetter::open(p)
                    .map_err(|e| format!("dead_letter: cannot open {}: {e}", p.display()))?,
            ),
            None => None,
        };
        Ok(Settler::new(name, registry, metrics, retry, dead_letter))
    }

    pub fn metrics(&self) -> &SinkMetrics {
        &self.metrics
    }

    pub fn retry(&self) -> &RetryConfig {
        &self.retry
    }

    /// Whether records given up are kept in a dead-letter file.
    pub fn has_dead_letter(&self) -> bool {
        self.dead_letter.is_some()
    }

    /// The `Retry` verdict after the `attempt`th failure (from 1).
    pub fn retry_verdict(&self, attempt: u32) -> Verdict {
        Verdict::Retry {
            after: self.retry.after(attempt),
        }
    }

    /// Settles `items`, the records of one attempt that was the
    /// `attempt`th (from 1) to fail if the verdict is not `Delivered`.
    pub fn settle<T: Settle>(&self, items: Vec<T>, attempt: u32, verdict: Verdict) -> Settled<T> {
        let records: usize = items.iter().map(Settle::records).sum();
        let reason = match verdict {
            Verdict::Delivered => {
                self.recovered();
                self.metrics.records.add(records as u64);
                items.into_iter().for_each(Settle::accept);
                return Settled::Accepted;
            }
            Verdict::Retry { after } if !self.retry.exhausted(attempt) => {
                self.failed();
                let after = if items.iter().any(Settle::is_waited_on) {
                    after.min(WAITED_RETRY_MAX)
                } else {
                    after
                };
                self.retries.add(records as u64);
                warn_limited!(self.log, "retry", sink = %self.name, records, attempt,
                    retry_in = ?after, "delivery failed; trying again");
                return Settled::Retry { after, items };
            }
            Verdict::Retry { .. } => Rejection {
                kind: "retries_exhausted",
                message: format!(
                    "{attempt} attempts failed (retry.max_attempts = {}); \
                     the destination's errors are logged above",
                    self.retry.max_attempts
                ),
            },
            Verdict::Rejected { reason } => return self.refuse(items, records, &reason),
        };
        self.give_up(items, &reason)
    }

    /// An attempt failed: an outage starts, or goes on (for a sink that
    /// waits for its retries itself).
    pub fn failed(&self) {
        let mut o = self.outage.lock().unwrap_or_else(|e| e.into_inner());
        let o = o.get_or_insert(Outage {
            since: Instant::now(),
            failed: 0,
        });
        o.failed += 1;
    }

    /// Records were delivered: an outage, if there was one, is over.
    fn recovered(&self) {
        let over = self.outage.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(o) = over {
            let lasted = o.since.elapsed();
            tracing::info!(sink = %self.name, outage_secs = format_args!("{:.1}", lasted.as_secs_f64()),
                failed_attempts = o.failed,
                "delivering again after an outage of {:.1} s", lasted.as_secs_f64());
        }
    }

    /// `logferry_sink_rejections_total{kind}` for `records` more.
    fn count_rejections(&self, kind: &'static str, records: usize) {
        self.registry
            .counter(
                "logferry_sink_rejections_total",
                "Records given up by a sink (Rejected verdicts, retries used up), by kind; dead-lettered or not.",
                &[("component", &self.name), ("kind", kind)],
            )
            .add(records as u64);
    }

    /// Appends `frames` to the dead-letter file, if there is one; true if
    /// they are kept there.
    fn dead_letter(&self, frames: &[u8], records: usize) -> bool {
        let Some(dl) = &self.dead_letter else {
            return false;
        };
        match dl.append(frames) {
            Ok(()) => {
                self.dead_letter_records.add(records as u64);
                true
            }
            Err(e) => {
                self.dead_letter_errors.inc();
                tracing::error!(sink = %self.name, dead_letter = %dl.path.display(), error = %e,
                    records, "cannot write the dead-letter file");
                false
            }
        }
    }

    /// Records the destination can never take: dead-lettered, or dropped
    /// and logged; their source is told and moves on.
    fn refuse<T: Settle>(&self, items: Vec<T>, records: usize, reason: &Rejection) -> Settled<T> {
        self.count_rejections(reason.kind, records);
        let (offered, first) = self.dead_letter_items(&items, records, reason);
        if offered == DeadLettered::Failed {
            // the source sends them again
            return self.not_kept(items, records, reason);
        }
        let dead_lettered = offered == DeadLettered::Kept;
        self.set_aside(reason, records, &first, dead_lettered);
        let refusal = Refusal {
            sink: self.name.clone(),
            kind: reason.kind,
            message: reason.message.clone(),
            records,
            first,
            dead_lettered,
        };
        for item in items {
            item.refuse(refusal.clone());
        }
        Settled::Rejected { dead_lettered }
    }

    /// Logs and counts records set aside for good.
    fn set_aside(&self, reason: &Rejection, records: usize, first: &str, dead_lettered: bool) {
        if dead_lettered {
            let dl = self
                .dead_letter
                .as_ref()
                .map(|d| d.path.display().to_string());
            tracing::error!(sink = %self.name, kind = reason.kind, reason = %reason.message,
                records, first = %first, dead_letter = dl.unwrap_or_default(),
                "records the destination can never take; written to the dead-letter file (replay them with `logferry replay`)");
        } else {
            self.dropped.add(records as u64);
            tracing::error!(sink = %self.name, kind = reason.kind, reason = %reason.message,
                records, first = %first,
                "records the destination can never take; dropped (set dead_letter to keep them)");
        }
    }

    /// Settles a delivery some of whose records (`aside`) the destination
    /// refused for good while it took the others: those alone are set
    /// aside (dead-lettered, or dropped and logged), the rest count as
    /// delivered, and the source moves on.
    pub fn settle_partly(&self, d: Delivery, aside: Vec<SetAside>) {
        self.recovered();
        let Some(reason) = aside.first().map(|a| a.reason.clone()) else {
            self.metrics.records.add(d.batch().count as u64);
            return d.accept();
        };
        for a in &aside {
            self.count_rejections(a.reason.kind, 1);
        }
        let delivered = d.batch().count.saturating_sub(aside.len());
        self.metrics.records.add(delivered as u64);
        let mut frames = Vec::new();
        if self.dead_letter.is_some() {
            // one frame per run of records set aside for the same reason
            let mut entries = Vec::new();
            let mut run = 0;
            for (i, a) in aside.iter().enumerate() {
                match &a.entry {
                    Some(e) => entries.extend_from_slice(e),
                    None => {
                        write_message_entry(&mut entries, a.time.secs, a.time.nanos, &a.payload)
                    }
                }
                run += 1;
                if aside.get(i + 1).is_none_or(|next| next.reason != a.reason) {
                    write_frame(&mut frames, &d.batch().tag, &entries, run, &a.reason);
                    entries.clear();
                    run = 0;
                }
            }
        }
        let first = aside.first().map(|a| shown(&a.payload)).unwrap_or_default();
        let dead_lettered = self.dead_letter(&frames, aside.len());
        if !dead_lettered && self.dead_letter.is_some() {
            let _ = self.not_kept(vec![d], aside.len(), &reason);
            return;
        }
        self.set_aside(&reason, aside.len(), &first, dead_lettered);
        d.refuse(Refusal {
            sink: self.name.clone(),
            kind: reason.kind,
            message: reason.message,
            records: aside.len(),
            first,
            dead_lettered,
        });
    }

    /// Retries used up (`reason` says how): dead-lettered if there is a
    /// file, else rejected to the source (the destination may take them
    /// later, so the source may send them again).
    pub fn give_up<T: Settle>(&self, items: Vec<T>, reason: &Rejection) -> Settled<T> {
        let records: usize = items.iter().map(Settle::records).sum();
        self.count_rejections(reason.kind, records);
        if self.dead_letter_items(&items, records, reason).0 == DeadLettered::Kept {
            let dl = self
                .dead_letter
                .as_ref()
                .map(|d| d.path.display().to_string());
            tracing::error!(sink = %self.name, kind = reason.kind, reason = %reason.message,
                records, dead_letter = dl.unwrap_or_default(),
                "records rejected; written to the dead-letter file (replay them with `logferry replay`)");
            items.into_iter().for_each(Settle::accept);
            return Settled::Rejected {
                dead_lettered: true,
            };
        }
        self.not_kept(items, records, reason)
    }

    /// Offers `items` to the dead-letter file, one frame each; also
    /// returns the start of their first record, for the log.
    fn dead_letter_items<T: Settle>(
        &self,
        items: &[T],
        records: usize,
        why: &Rejection,
    ) -> (DeadLettered, String) {
        let mut frames = Vec::new();
        let mut first = None;
        for item in items {
            let entries: Vec<u8> = item.entries().concat();
            first.get_or_insert_with(|| first_record(&entries));
            if self.dead_letter.is_some() {
                write_frame(&mut frames, item.tag(), &entries, item.records(), why);
            }
        }
        let offered = match &self.dead_letter {
            None => DeadLettered::NoFile,
            Some(_) if self.dead_letter(&frames, records) => DeadLettered::Kept,
            Some(_) => DeadLettered::Failed,
        };
        (offered, first.unwrap_or_default())
    }

    /// Rejected to their source, which sends them again.
    fn not_kept<T: Settle>(&self, items: Vec<T>, records: usize, reason: &Rejection) -> Settled<T> {
        self.metrics.rejected_records.add(records as u64);
        tracing::error!(sink = %self.name, kind = reason.kind, reason = %reason.message, records,
            "records rejected; not acknowledged to their source");
        items.into_iter().for_each(Settle::reject);
        Settled::Rejected {
            dead_lettered: false,
        }
    }
}

impl Settler {
    /// The sink is stopping with `items` still failing: they are rejected
    /// to their source (not dead-lettered: the destination may take them
    /// after a restart), logged and counted.
    pub fn stopped<T: Settle>(&self, items: Vec<T>) {
        let records: usize = items.iter().map(Settle::records).sum();
        if items.is_empty() {
            return;
        }
        self.metrics.rejected_records.add(records as u64);
        tracing::error!(sink = %self.name, records,
            "stopping while a retry was pending; records not acknowledged to their source");
        items.into_iter().for_each(Settle::reject);
    }
}

/// Deliveries of a blocking sink waiting for their retry. While any wait,
/// new deliveries wait behind them, so records keep their order.
#[derive(Default)]
pub struct Parked {
    items: Vec<Delivery>,
    /// Failed attempts so far of the oldest parked records.
    pub attempt: u32,
    /// When the retry is due.
    at: Option<Instant>,
}

impl Parked {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn retry_at(&self) -> Option<Instant> {
        self.at
    }

    /// Queues a new delivery behind those waiting; one a client waits for
    /// brings the retry within [`WAITED_RETRY_MAX`].
    pub fn push(&mut self, d: Delivery) {
        if d.batch().is_waited_on() {
            let soon = Instant::now() + WAITED_RETRY_MAX;
            self.at = self.at.map(|at| at.min(soon));
        }
        self.items.push(d);
    }

    /// Parks `items` (the failed attempt's, oldest) ahead of the others.
    pub fn park(&mut self, mut items: Vec<Delivery>, after: Duration) {
        items.append(&mut self.items);
        let after = if items.iter().any(|d| d.batch().is_waited_on()) {
            after.min(WAITED_RETRY_MAX)
        } else {
            after
        };
        self.items = items;
        self.at = Some(Instant::now() + after);
    }

    /// The parked deliveries, in order, if their retry is due (or `now`).
    pub fn take_due(&mut self, force: bool) -> Option<Vec<Delivery>> {
        let due = self.at.is_some_and(|at| force || Instant::now() >= at);
        if !due {
            return None;
        }
        self.at = None;
        Some(std::mem::take(&mut self.items))
    }

    /// Settles the deliveries of one write of a blocking sink by its
    /// verdict: a retry parks them ahead of the others and counts the
    /// attempt; any other verdict ends the streak of failed attempts.
    pub fn settle_write(&mut self, settler: &Settler, held: Vec<Delivery>, verdict: Verdict) {
        let attempt = match verdict {
            Verdict::Delivered => 0,
            _ => self.attempt + 1,
        };
        match settler.settle(held, attempt, verdict) {
            Settled::Retry { after, items } => {
                self.attempt = attempt;
                self.park(items, after);
            }
            _ => self.attempt = 0,
        }
    }

    /// Everything parked, at a stop.
    pub fn take_all(&mut self) -> Vec<Delivery> {
        self.at = None;
        std::mem::take(&mut self.items)
    }
}

#[cfg(test)]
mod tests;
