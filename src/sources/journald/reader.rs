//! The reader: a thread of its own that owns the journal handle (sd-journal
//! blocks, and a handle belongs to one thread), reads entries into records
//! and sends them, a read at a time, to the source's task, which hands them
//! to the sinks. The channel holds one read: a reader ahead of its sinks
//! waits on it, and the journal keeps what is not read yet.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::config::{JournaldSourceConfig, ReadFrom};
use super::entry::{time_of, Fields, Names};
use super::progress::Progress;
use super::sys::{Change, Journal};
use crate::metrics::Counter;
use crate::telemetry::RateLimitedLog;

/// A read is handed over once its records reach this size...
const MAX_READ_BYTES: usize = 1024 * 1024;
/// ...or this many entries.
const MAX_READ_ENTRIES: usize = 8192;

/// Longest single wait for the journal to change: how soon a stop signal
/// or a rewind is noticed by a reader with nothing to read.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// After a read error, or a rewind, how long the reader pauses.
const PAUSE: Duration = Duration::from_secs(1);

/// Entries read together, one batch per tag.
#[derive(Debug, Default)]
pub struct Read {
    /// The generation of the progress it was read under.
    pub generation: u64,
    /// Cursors of its first and last entries.
    pub first: String,
    pub last: String,
    /// Per tag: the tag, its entries (`[time, record]` in msgpack) and
    /// how many.
    pub batches: Vec<(String, Vec<u8>, usize)>,
    /// Entries in all batches.
    pub entries: usize,
    /// Bytes of all batches.
    pub bytes: usize,
    /// Index of each tag's batch.
    index: HashMap<String, usize>,
}

impl Read {
    /// The batch of `tag`.
    fn batch(&mut self, tag: &str) -> &mut (String, Vec<u8>, usize) {
        let i = match self.index.get(tag) {
            Some(&i) => i,
            None => {
                self.batches.push((tag.to_string(), Vec::new(), 0));
                self.index.insert(tag.to_string(), self.batches.len() - 1);
                self.batches.len() - 1
            }
        };
        &mut self.batches[i]
    }

    fn is_full(&self) -> bool {
        self.bytes >= MAX_READ_BYTES || self.entries >= MAX_READ_ENTRIES
    }
}

/// The tag of an entry: the configured one, with `*` replaced by its unit.
#[derive(Debug, Clone)]
pub struct TagTemplate {
    /// The tag before the `*`, and after it when there is one.
    head: String,
    tail: Option<String>,
}

impl TagTemplate {
    pub fn new(tag: &str) -> Self {
        match tag.split_once('*') {
            Some((head, tail)) => TagTemplate {
                head: head.to_string(),
                tail: Some(tail.to_string()),
            },
            None => TagTemplate {
                head: tag.to_string(),
                tail: None,
            },
        }
    }

    /// Into `out`, the tag of an entry of `unit`.
    fn render(&self, unit: Option<&[u8]>, out: &mut String) {
        out.clear();
        out.push_str(&self.head);
        if let Some(tail) = &self.tail {
            match unit {
                Some(u) => out.push_str(&String::from_utf8_lossy(u)),
                None => out.push_str("unknown"),
            }
            out.push_str(tail);
        }
    }
}

/// What the reader counts.
pub struct ReaderMetrics {
    pub read_errors: Counter,
    /// Read errors, logged at most once per interval.
    pub warnings: RateLimitedLog,
}

/// Where the reader starts.
#[derive(Debug, Clone)]
pub enum Start {
    /// After the entry of this (acknowledged) cursor.
    After(String),
    From(ReadFrom),
}

/// The reader thread's state.
pub struct Reader {
    journal: Journal,
    names: Names,
    tag: TagTemplate,
    linger: Duration,
    progress: Arc<Mutex<Progress>>,
    stop: Arc<AtomicBool>,
    tx: tokio::sync::mpsc::Sender<Read>,
    metrics: ReaderMetrics,
    source: Arc<str>,
    fields: Fields,
    tag_buf: String,
    /// The current entry is the first to read (the one after a cursor
    /// that is gone), before the next step.
    replay: bool,
}

/// Opens the journal the configuration names, with its matches.
pub fn open(config: &JournaldSourceConfig) -> Result<Journal, String> {
    let mut journal = match (&config.directory, config.files.is_empty()) {
        (Some(dir), _) => Journal::open_directory(dir)?,
        (None, false) => Journal::open_files(&config.files)?,
        (None, true) => Journal::open_local()?,
    };
    let mut groups = config.match_groups();
    if config.current_boot_only() {
        groups.push(vec![format!("_BOOT_ID={}", super::sys::boot_id()?)]);
    }
    for (i, group) in groups.iter().enumerate() {
        if i > 0 {
            journal.add_conjunction()?;
        }
        for m in group {
            journal.add_match(m.as_bytes())?;
        }
    }
    Ok(journal)
}

impl Reader {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        journal: Journal,
        config: &JournaldSourceConfig,
        progress: Arc<Mutex<Progress>>,
        stop: Arc<AtomicBool>,
        tx: tokio::sync::mpsc::Sender<Read>,
        metrics: ReaderMetrics,
        source: Arc<str>,
    ) -> Self {
        Reader {
            journal,
            names: Names {
                lowercase: config.lowercase,
                strip_underscores: config.strip_underscores,
            },
            tag: TagTemplate::new(&config.tag),
            linger: config.linger,
            progress,
            stop,
            tx,
            metrics,
            source,
            fields: Fields::default(),
            tag_buf: String::new(),
            replay: false,
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Puts the reader where `start` says.
    pub fn position(&mut self, start: &Start) -> Result<(), String> {
        match start {
            Start::From(ReadFrom::Head) => self.journal.seek_head(),
            Start::From(ReadFrom::Tail) => self.journal.seek_tail(),
            Start::After(cursor) => {
                self.journal.seek_cursor(cursor)?;
                // onto the acknowledged entry, to step past it; when it is
                // gone (vacuumed), the entry after it is the first unread
                if self.journal.next()? && !self.journal.test_cursor(cursor)? {
                    self.replay = true;
                }
                Ok(())
            }
        }
    }

    /// Reads until the stop signal, then hands over what it has read.
    pub fn run(mut self) {
        let mut generation = self.lock().generation();
        let mut read = Read {
            generation,
            ..Read::default()
        };
        while !self.stopping() {
            let rewind = self.lock().take_rewind();
            if let Some((cursor, g)) = rewind {
                generation = g;
                read = Read {
                    generation,
                    ..Read::default()
                };
                tracing::warn!(source = %self.source, cursor,
                    "a sink did not keep a batch; reading again from the first entry not acknowledged");
                self.pause(PAUSE);
                if let Err(e) = self.journal.seek_cursor(&cursor) {
                    self.read_error(&e);
                }
                continue;
            }
            let step = if std::mem::take(&mut self.replay) {
                Ok(true)
            } else {
                self.journal.next()
            };
            match step {
                Ok(true) => {
                    if let Err(e) = self.read_entry(&mut read) {
                        self.read_error(&e);
                        continue;
                    }
                    if read.is_full() && self.hand_over(&mut read).is_err() {
                        return;
                    }
                }
                Ok(false) => {
                    if self.hand_over(&mut read).is_err() {
                        return;
                    }
                    if let Err(e) = self.wait_for_change() {
                        self.read_error(&e);
                        self.pause(PAUSE);
                    }
                }
                Err(e) => {
                    if self.hand_over(&mut read).is_err() {
                        return;
                    }
                    self.read_error(&e);
                    self.pause(PAUSE);
                }
            }
        }
        let _ = self.hand_over(&mut read);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current entry into `read`.
    fn read_entry(&mut self, read: &mut Read) -> Result<(), String> {
        let usec = self.journal.realtime_usec()?;
        if read.first.is_empty() {
            read.first = self.journal.cursor()?;
        }
        self.fields.clear();
        let (fields, names) = (&mut self.fields, self.names);
        self.journal.for_each_field(|data| {
            fields.push(data, names);
        })?;
        self.tag.render(self.fields.unit(), &mut self.tag_buf);
        let batch = read.batch(&self.tag_buf);
        let before = batch.1.len();
        self.fields.write(&mut batch.1, time_of(usec));
        batch.2 += 1;
        read.bytes += batch.1.len() - before;
        read.entries += 1;
        Ok(())
    }

    /// Sends `read` to the source's task (waiting while it is busy) and
    /// starts an empty one; `Err` once the task is gone.
    ///
    /// Called only while the journal is still on the read's last entry
    /// (a step past the end, or one that fails, leaves it there): its
    /// cursor is the read's `last`, taken once per read rather than per
    /// entry.
    fn hand_over(&mut self, read: &mut Read) -> Result<(), ()> {
        if read.entries == 0 {
            return Ok(());
        }
        match self.journal.cursor() {
            Ok(c) => read.last = c,
            Err(e) => {
                // without its end the read cannot be acknowledged: it is
                // read again from its first entry
                self.read_error(&e);
                let first = std::mem::take(&mut read.first);
                *read = Read {
                    generation: read.generation,
                    ..Read::default()
                };
                if let Err(e) = self.journal.seek_cursor(&first) {
                    self.read_error(&e);
                }
                return Ok(());
            }
        }
        let full = std::mem::replace(
            read,
            Read {
                generation: read.generation,
                ..Read::default()
            },
        );
        self.tx.blocking_send(full).map_err(drop)
    }

    /// Waits for the journal to change (or the stop signal, or a rewind),
    /// then lets entries gather for the linger.
    fn wait_for_change(&mut self) -> Result<(), String> {
        loop {
            if self.stopping() || self.lock().has_rewind() {
                return Ok(());
            }
            match self.journal.wait(WAIT_SLICE)? {
                Change::None => continue,
                Change::Appended | Change::Files => break,
            }
        }
        if !self.linger.is_zero() {
            self.pause(self.linger);
            self.journal.process()?;
        }
        Ok(())
    }

    /// Sleeps `d`, or until the stop signal.
    fn pause(&self, d: Duration) {
        let until = Instant::now() + d;
        while !self.stopping() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(WAIT_SLICE));
        }
    }

    fn read_error(&self, e: &str) {
        self.metrics.read_errors.inc();
        crate::warn_limited!(self.metrics.warnings, "read", source = %self.source, error = e,
            "journal read failed; reading on");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_in_the_tag_is_the_unit() {
        let mut out = String::new();
        TagTemplate::new("journald.*").render(Some(b"sshd.service"), &mut out);
        assert_eq!(out, "journald.sshd.service");
        TagTemplate::new("journald.*.x").render(None, &mut out);
        assert_eq!(out, "journald.unknown.x");
        TagTemplate::new("system").render(Some(b"a.service"), &mut out);
        assert_eq!(out, "system");
    }

    #[test]
    fn a_read_keeps_one_batch_per_tag() {
        let mut r = Read::default();
        r.batch("a").2 += 1;
        r.batch("b").2 += 1;
        r.batch("a").2 += 1;
        let tags: Vec<_> = r.batches.iter().map(|(t, _, n)| (t.as_str(), *n)).collect();
        assert_eq!(tags, vec![("a", 2), ("b", 1)]);
    }
}
