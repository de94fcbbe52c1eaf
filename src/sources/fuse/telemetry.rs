//! The FUSE source's counters, and the one place that logs and counts each
//! error a writer or operator can see.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::metrics::{Counter, Registry};
use crate::telemetry::RateLimitedLog;

/// Why a write failed with EIO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// The sink queues had no room for `write_timeout`.
    Timeout,
    /// The memory budget (or the room for unfinished lines) had none for
    /// `write_timeout`.
    Memory,
    /// logferry is shutting down.
    Closed,
    /// The mirror file could not be written.
    Mirror,
}

impl WriteError {
    fn label(self) -> &'static str {
        match self {
            WriteError::Timeout => "timeout",
            WriteError::Memory => "memory",
            WriteError::Closed => "shutdown",
            WriteError::Mirror => "mirror",
        }
    }
}

/// A request refused at a limit of the mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `max_open_files` descriptors are open (ENFILE).
    OpenFiles,
    /// `max_inodes` files and directories exist (ENOSPC).
    Inodes,
}

/// What the mount holds now, read by gauges at each scrape.
#[derive(Default)]
pub struct Held {
    /// Descriptors open.
    pub open_files: AtomicUsize,
    /// Files and directories (the root and removed ones still open
    /// included).
    pub inodes: AtomicUsize,
    /// Bytes of unfinished lines (charged to the memory budget).
    pub line_bytes: Arc<AtomicUsize>,
}

pub struct FuseMetrics {
    source: String,
    pub records: Counter,
    pub bytes: Counter,
    pub held: Arc<Held>,
    write_timeout: Counter,
    write_memory: Counter,
    write_closed: Counter,
    write_mirror: Counter,
    refused_open_files: Counter,
    refused_inodes: Counter,
    rejected_records: Counter,
    sync_errors: Counter,
    pub stale_mounts: Counter,
    pub lazy_unmounts: Counter,
    pub unmount_errors: Counter,
    mirror_errors: Counter,
    warnings: RateLimitedLog,
}

impl FuseMetrics {
    pub fn new(r: &Registry, source: &str) -> Self {
        let l = &[("component", source)];
        let c = |name: &'static str, help: &'static str| r.counter(name, help, l);
        let err = |reason: &'static str| {
            r.counter(
                "logferry_fuse_write_errors_total",
                "Writes into the mount that failed with EIO, by reason (nothing of them was shipped).",
                &[("component", source), ("reason", reason)],
            )
        };
        let refused = |limit: &'static str| {
            r.counter(
                "logferry_fuse_refused_total",
                "Opens (limit=\"open_files\", ENFILE) and creations (limit=\"inodes\", ENOSPC) refused at a limit of the mount.",
                &[("component", source), ("limit", limit)],
            )
        };
        let held = Arc::new(Held::default());
        let gauge = |name: &'static str, help: &'static str, read: fn(&Held) -> usize| {
            let held = held.clone();
            r.computed(name, help, l, move || read(&held) as f64);
        };
        gauge(
            "logferry_fuse_open_files",
            "Descriptors open on the mount (at most max_open_files).",
            |h| h.open_files.load(Ordering::Relaxed),
        );
        gauge(
            "logferry_fuse_inodes",
            "Files and directories in the mount (at most max_inodes).",
            |h| h.inodes.load(Ordering::Relaxed),
        );
        gauge(
            "logferry_fuse_unfinished_line_bytes",
            "Bytes of unfinished lines (after a descriptor's last newline) held, charged to the memory budget; at most half of it.",
            |h| h.line_bytes.load(Ordering::Relaxed),
        );
        FuseMetrics {
            source: source.to_string(),
            records: c("logferry_source_records_total", "Records received by a source."),
            bytes: c("logferry_source_bytes_total", "Bytes of records received by a source."),
            held,
            write_timeout: err("timeout"),
            write_memory: err("memory"),
            write_closed: err("shutdown"),
            write_mirror: err("mirror"),
            refused_open_files: refused("open_files"),
            refused_inodes: refused("inodes"),
            rejected_records: c(
                "logferry_fuse_rejected_records_total",
                "Records written into the mount that a sink did not keep (its writer was told only if it called fsync).",
            ),
            sync_errors: c(
                "logferry_fuse_sync_errors_total",
                "fsync() or close() calls that returned EIO: records not acknowledged in time, or rejected.",
            ),
            stale_mounts: c(
                "logferry_fuse_stale_mounts_cleaned_total",
                "Stale mounts (a killed process's) found on the mountpoint at start and unmounted.",
            ),
            lazy_unmounts: c(
                "logferry_fuse_lazy_unmounts_total",
                "Unmounts that had to detach the mount because a process still had a file open in it.",
            ),
            unmount_errors: c(
                "logferry_fuse_unmount_errors_total",
                "Unmounts that failed (the mount is left behind: `umount -l` it).",
            ),
            mirror_errors: c(
                "logferry_fuse_mirror_errors_total",
                "Operations on the mirror_dir copy that failed (the caller got the error).",
            ),
            warnings: RateLimitedLog::default(),
        }
    }

    /// An operation on the `mirror_dir` copy failed.
    pub fn mirror_failed(&self, e: &std::io::Error) {
        self.mirror_errors.inc();
        crate::warn_limited!(self.warnings, "mirror_op", source = %self.source, error = %e,
            "mirror_dir operation failed");
    }

    /// A write failed with EIO.
    pub fn write_failed(&self, why: WriteError, file: &str, bytes: usize) {
        match why {
            WriteError::Timeout => self.write_timeout.inc(),
            WriteError::Memory => self.write_memory.inc(),
            WriteError::Closed => self.write_closed.inc(),
            WriteError::Mirror => self.write_mirror.inc(),
        }
        let hint = match why {
            WriteError::Timeout => "the pipeline stayed full for write_timeout: sinks are slower than the writers (see the sinks' errors, or raise write_timeout)",
            WriteError::Memory => "no memory budget for write_timeout: unfinished lines (bytes after a descriptor's last newline) may take half of [limits] memory and had taken it, or sinks hold the rest (finish lines with a newline or close the files, raise [limits] memory, or see the sinks' errors)",
            WriteError::Closed => "logferry is shutting down; write again after it restarts",
            WriteError::Mirror => "the mirror file could not be written (see mirror_dir: disk full? permissions?)",
        };
        crate::warn_limited!(self.warnings, why.label(), source = %self.source, file, bytes,
            reason = why.label(), "write into the mount failed with EIO: {hint}");
    }

    /// A request refused at a limit of the mount.
    pub fn refused(&self, limit: Refused, file: &str) {
        let (counter, kind, what) = match limit {
            Refused::OpenFiles => (
                &self.refused_open_files,
                "open_files",
                "open refused with ENFILE: max_open_files descriptors are open on the mount (close some, or raise max_open_files)",
            ),
            Refused::Inodes => (
                &self.refused_inodes,
                "inodes",
                "create refused with ENOSPC: the mount holds max_inodes files and directories (remove some, or raise max_inodes)",
            ),
        };
        counter.inc();
        crate::warn_limited!(self.warnings, kind, source = %self.source, file, "{what}");
    }

    /// A sink did not keep records written into the mount.
    pub fn rejected(&self, file: &str, records: usize) {
        self.rejected_records.add(records as u64);
        crate::warn_limited!(self.warnings, "rejected", source = %self.source, file, records,
            "records written into the mount were not kept by a sink (see its errors); a writer that calls fsync is told with EIO");
    }

    /// An fsync or close returned EIO.
    pub fn sync_failed(&self, file: &str, reason: &'static str) {
        self.sync_errors.inc();
        crate::warn_limited!(self.warnings, "sync", source = %self.source, file, reason,
            "fsync/close on the mount returned EIO");
    }
}
