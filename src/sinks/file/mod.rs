//! `type = "file"`: appends formatted records to files.
//!
//! - `config.rs`: settings;
//! - `path.rs`: `${tag}` and strftime placeholders in `path`;
//! - this file: open files, buffered writes, rotation, acknowledgement.
//!
//! Records are formatted into a per-file buffer and written with one
//! `write` per buffer (at `write_buffer_bytes`, or whenever the queue runs
//! empty), never per record. A batch is acknowledged only after the write
//! holding its last byte has returned (and been fsynced, with `fsync`). A
//! failed write (a full disk) is cut back to the last complete write, so the
//! file never holds a partial line, and its batches are rejected: counted,
//! logged, and not acknowledged, so a forward client resends them.

mod config;
mod path;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::Local;

pub use config::FileSinkConfig;
use path::PathTemplate;

use super::{Sink, SinkMetrics};
use crate::buffer::Delivery;
use crate::format::Formatter;

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
    file: File,
    /// Bytes in the file (to cut back a failed write and to rotate by size).
    size: u64,
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
        if f.pending.is_empty() && f.held.is_empty() {
            return;
        }
        if let Some(limit) = self.config.rotate_bytes {
            if f.size > 0 && f.size + f.pending.len() as u64 > limit as u64 {
                self.rotate(path, f);
            }
        }
        let result = f.file.write_all(&f.pending).and_then(|()| {
            if self.config.fsync {
                f.file.sync_data()
            } else {
                Ok(())
            }
        });
        match result {
            Ok(()) => {
                f.size += f.pending.len() as u64;
                self.metrics.bytes.add(f.pending.len() as u64);
                for d in f.held.drain(..) {
                    self.metrics.records.add(d.batch().count as u64);
                    d.accept();
                }
            }
            Err(e) => {
                // cut back to the last complete write: no partial line stays
                let _ = f.file.set_len(f.size);
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
        f.pending.clear();
        if f.pending.capacity() > 4 * self.config.write_buffer_bytes {
            f.pending.shrink_to(self.config.write_buffer_bytes);
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

fn open_append(path: &Path) -> io::Result<OpenFile> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let size = file.metadata()?.len();
    let now = Instant::now();
    Ok(OpenFile {
        file,
        size,
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
        if f.pending.capacity() == 0 {
            f.pending.reserve(threshold.min(1 << 20));
        }
        f.last_used = Instant::now();
        if let Err(e) = self.formatter.write_batch(d.batch(), &mut f.pending) {
            // cannot happen for frames the decoder accepted; never silent
            self.metrics.errors.inc();
            tracing::error!(sink = %self.name, error = %e, "cannot format batch");
        }
        f.held.push(d);
        if f.pending.len() >= threshold {
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
                if now.duration_since(f.opened) >= every && (f.size > 0 || !f.pending.is_empty()) {
                    self.write_out(path, f);
                    self.rotate(path, f);
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
