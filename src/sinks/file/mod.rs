//! `type = "file"`: appends formatted records to files.
//!
//! - `config.rs`: settings;
//! - `path.rs`: `${tag}` and strftime placeholders in `path`;
//! - this file: open files, buffered writes, rotation, acknowledgement.
//!
//! Records are formatted into a per-file buffer and written with one
//! `write` per `write_buffer_bytes` (also whenever the queue runs empty),
//! never per record; large batches are written slice by slice while they
//! are formatted, so the bytes are still in the CPU cache when the kernel
//! copies them. A batch is acknowledged only once every byte of it has been
//! written (and fsynced, with `fsync`) and the queue has run dry or the
//! buffer filled. If any write fails (a full disk), the file is cut back to
//! the end of the last acknowledged data, so it never holds a partial line,
//! and the unacknowledged batches are rejected: counted, logged, and not
//! acknowledged, so a forward client resends them.

mod config;
pub(crate) mod path;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::Local;

pub use config::FileSinkConfig;
use path::PathTemplate;

use super::{Sink, SinkMetrics};
use crate::buffer::Delivery;
use crate::event::{next_record, RecordRef, Records};
use crate::format::{self, FormatKind, Formatter};
use crate::protocol::msgpack::{self, Reader};

/// Bytes formatted before they are written: small enough to still be in
/// the CPU cache when the kernel copies them.
const WRITE_SLICE: usize = 256 * 1024;

/// Average record size from which raw records are written straight from
/// the received frame with writev(2) instead of being copied first.
const ZERO_COPY_MIN_RECORD: usize = 1024;

/// Most iovecs per writev(2) (Linux's IOV_MAX).
const MAX_IOVECS: usize = 1024;

pub struct FileSink {
    name: String,
    config: FileSinkConfig,
    template: PathTemplate,
    formatter: Formatter,
    files: HashMap<PathBuf, OpenFile>,
    metrics: SinkMetrics,
    /// The single path of a static template, rendered once.
    static_path: Option<PathBuf>,
}

/// One open output file and what is waiting to be written to it.
struct OpenFile {
    out: Output,
    /// Bytes in the file up to the end of the last settled delivery: where a
    /// failed write is cut back to.
    settled: u64,
    opened: Instant,
    last_used: Instant,
    /// Formatted records not yet written.
    pending: Vec<u8>,
    /// Deliveries whose records are in `pending`.
    held: Vec<Delivery>,
}

impl FileSink {
    pub fn new(name: &str, config: FileSinkConfig, metrics: SinkMetrics) -> Result<Self, String> {
        config.validate()?;
        let template = PathTemplate::parse(&config.path)?;
        let static_path = template
            .is_static()
            .then(|| PathBuf::from(template.render("", &Local::now())));
        let mut sink = FileSink {
            name: name.to_string(),
            formatter: Formatter::new(&config.format)?,
            template,
            config,
            files: HashMap::new(),
            metrics,
            static_path,
        };
        // a unified file that cannot be opened is a start-up error, not a
        // surprise at the first record
        if let Some(p) = sink.static_path.clone() {
            sink.open(&p)
                .map_err(|e| format!("cannot open {}: {e}", p.display()))?;
        }
        Ok(sink)
    }

    fn open(&mut self, path: &Path) -> io::Result<&mut OpenFile> {
        if !self.files.contains_key(path) {
            if self.files.len() >= self.config.max_open_files {
                self.close_least_recently_used();
            }
            let f = open_append(path)?;
            self.files.insert(path.to_path_buf(), f);
        }
        Ok(self.files.get_mut(path).expect("inserted above"))
    }

    fn close_least_recently_used(&mut self) {
        let Some(oldest) = self
            .files
            .iter()
            .min_by_key(|(_, f)| f.last_used)
            .map(|(p, _)| p.clone())
        else {
            return;
        };
        if let Some(mut f) = self.files.remove(&oldest) {
            self.write_out(&oldest, &mut f);
        }
    }

    /// Writes a file's pending bytes and settles its deliveries.
    fn write_out(&self, path: &Path, f: &mut OpenFile) {
        f.out.write(&mut f.pending);
        if f.out.error.is_none() && self.config.fsync {
            if let Err(e) = f.out.file.sync_data() {
                f.out.error = Some(e);
            }
        }
        match f.out.error.take() {
            None => {
                self.metrics.bytes.add(f.out.size - f.settled);
                f.settled = f.out.size;
                for d in f.held.drain(..) {
                    self.metrics.records.add(d.batch().count as u64);
                    d.accept();
                }
            }
            Some(e) => {
                // cut back to the last settled write: no partial line stays
                let _ = f.out.file.set_len(f.settled);
                f.out.size = f.settled;
                let records: usize = f.held.iter().map(|d| d.batch().count).sum();
                self.metrics.errors.inc();
                self.metrics.rejected_records.add(records as u64);
                tracing::error!(sink = %self.name, path = %path.display(), error = %e, records,
                    "write failed; records not acknowledged");
                for d in f.held.drain(..) {
                    d.reject();
                }
            }
        }
        if f.pending.capacity() > 4 * WRITE_SLICE.max(self.config.write_buffer_bytes) {
            f.pending = Vec::new();
        }
        if let Some(limit) = self.config.rotate_bytes {
            if f.out.size >= limit as u64 {
                self.rotate(path, f);
            }
        }
    }

    /// Renames the file to `path.YYYYmmdd-HHMMSS[.N]` and starts a new one.
    fn rotate(&self, path: &Path, f: &mut OpenFile) {
        let stamp = Local::now().format("%Y%m%d-%H%M%S").to_string();
        let mut target = PathBuf::from(format!("{}.{stamp}", path.display()));
        let mut n = 1;
        while target.exists() {
            target = PathBuf::from(format!("{}.{stamp}.{n}", path.display()));
            n += 1;
        }
        let renamed = std::fs::rename(path, &target).and_then(|()| open_append(path));
        match renamed {
            Ok(new) => {
                let pending = std::mem::take(&mut f.pending);
                let held = std::mem::take(&mut f.held);
                *f = OpenFile {
                    pending,
                    held,
                    ..new
                };
                tracing::info!(sink = %self.name, path = %path.display(), rotated_to = %target.display(), "file rotated");
            }
            Err(e) => {
                self.metrics.errors.inc();
                tracing::error!(sink = %self.name, path = %path.display(), error = %e,
                    "rotation failed; still writing to the current file");
            }
        }
    }

    fn path_for(&self, tag: &str) -> PathBuf {
        match &self.static_path {
            Some(p) => p.clone(),
            None => PathBuf::from(self.template.render(tag, &Local::now())),
        }
    }
}

/// The file itself, and what the writes since the last settlement did.
struct Output {
    file: File,
    /// Bytes in the file, including writes not yet settled.
    size: u64,
    /// The first write error since the last settlement.
    error: Option<io::Error>,
}

impl Output {
    /// Writes the slices with writev(2) and clears them (unless an earlier
    /// write of this round failed).
    fn write_slices(&mut self, slices: &mut Vec<IoSlice<'_>>) {
        let mut rest = &mut slices[..];
        while self.error.is_none() && !rest.is_empty() {
            match self.file.write_vectored(rest) {
                Ok(0) => self.error = Some(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.size += n as u64;
                    IoSlice::advance_slices(&mut rest, n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => self.error = Some(e),
            }
        }
        slices.clear();
    }

    /// Writes and clears `buf` (unless an earlier write of this round failed).
    fn write(&mut self, buf: &mut Vec<u8>) {
        if self.error.is_none() && !buf.is_empty() {
            match self.file.write_all(buf) {
                Ok(()) => self.size += buf.len() as u64,
                Err(e) => self.error = Some(e),
            }
        }
        buf.clear();
    }
}

/// Raw format for large records: each message is written from the frame
/// it arrived in, with its newline, in writev(2) calls of up to
/// [`MAX_IOVECS`] slices. Records that are not a plain string go through
/// the formatter, in order.
fn write_raw_vectored(out: &mut Output, entries: &[u8]) -> msgpack::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(MAX_IOVECS);
    let mut scratch = Vec::new();
    let mut r = Reader::new(entries);
    while !r.is_empty() {
        let rec = RecordRef::Map(next_record(&mut r)?);
        match format::raw_text(rec) {
            Some(text) => {
                slices.push(IoSlice::new(text));
                slices.push(IoSlice::new(b"\n"));
                if slices.len() + 2 > MAX_IOVECS {
                    out.write_slices(&mut slices);
                }
            }
            None => {
                out.write_slices(&mut slices);
                format::write_raw_record(rec, &mut scratch);
                out.write(&mut scratch);
            }
        }
    }
    out.write_slices(&mut slices);
    Ok(())
}

fn open_append(path: &Path) -> io::Result<OpenFile> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let size = file.metadata()?.len();
    let now = Instant::now();
    Ok(OpenFile {
        out: Output {
            file,
            size,
            error: None,
        },
        settled: size,
        opened: now,
        last_used: now,
        pending: Vec::new(),
        held: Vec::new(),
    })
}

impl Sink for FileSink {
    fn take(&mut self, d: Delivery) {
        let path = self.path_for(&d.batch().tag);
        let threshold = self.config.write_buffer_bytes;
        if let Err(e) = self.open(&path) {
            self.metrics.errors.inc();
            self.metrics.rejected_records.add(d.batch().count as u64);
            tracing::error!(sink = %self.name, path = %path.display(), error = %e,
                "cannot open output file; records not acknowledged");
            d.reject();
            return;
        }
        let f = self.files.get_mut(&path).expect("opened above");
        f.last_used = Instant::now();
        if f.pending.capacity() == 0 {
            f.pending.reserve(WRITE_SLICE + 64 * 1024);
        }
        let out = &mut f.out;
        let result = match &d.batch().records {
            Records::Entries(entries)
                if self.formatter.kind() == FormatKind::Raw
                    && entries.len() >= ZERO_COPY_MIN_RECORD * d.batch().count =>
            {
                // keep the order: what is buffered goes first
                out.write(&mut f.pending);
                write_raw_vectored(out, entries)
            }
            _ => self.formatter.write_batch_spilling(
                d.batch(),
                &mut f.pending,
                WRITE_SLICE,
                &mut |buf| out.write(buf),
            ),
        };
        if let Err(e) = result {
            // cannot happen for frames the decoder accepted; never silent,
            // and never acknowledged: the round is cut back and rejected
            self.metrics.errors.inc();
            tracing::error!(sink = %self.name, error = %e, "cannot format batch");
            f.out
                .error
                .get_or_insert_with(|| io::Error::other(format!("cannot format batch: {e}")));
        }
        f.held.push(d);
        if f.out.size - f.settled + f.pending.len() as u64 >= threshold as u64 {
            let mut f = self.files.remove(&path).expect("present");
            self.write_out(&path, &mut f);
            self.files.insert(path, f);
        }
    }

    fn flush(&mut self) {
        let mut files = std::mem::take(&mut self.files);
        for (path, f) in files.iter_mut() {
            self.write_out(path, f);
        }
        self.files = files;
    }

    fn tick_interval(&self) -> Option<Duration> {
        // also closes files of paths no longer written (old dates, old tags)
        Some(Duration::from_secs(1))
    }

    fn tick(&mut self) {
        let now = Instant::now();
        let mut files = std::mem::take(&mut self.files);
        files.retain(|path, f| {
            if let Some(every) = self.config.rotate_interval {
                if now.duration_since(f.opened) >= every
                    && (f.out.size > 0 || !f.pending.is_empty())
                {
                    self.write_out(path, f);
                    // write_out may have rotated it already (rotate_bytes)
                    if f.out.size > 0 {
                        self.rotate(path, f);
                    }
                }
            }
            let idle = now.duration_since(f.last_used) > Duration::from_secs(60);
            let keep = Some(path) == self.static_path.as_ref() || !idle || !f.held.is_empty();
            keep
        });
        self.files = files;
    }
}

#[cfg(test)]
mod tests;
