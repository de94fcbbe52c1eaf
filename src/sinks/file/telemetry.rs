//! What the file sink logs and counts: each event is logged and counted in
//! one place, so every line a user sees in the log is also a metric.

use std::io;
use std::path::Path;

use super::super::SinkMetrics;
use crate::metrics::{Counter, Registry};

/// What the sink was doing when an error happened (the `op` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    /// Creating directories or opening (creating) a file.
    Open,
    /// Writing records.
    Write,
    /// fsync of a file or of its directory.
    Sync,
    /// Formatting records (never for frames the decoder accepted).
    Format,
    /// Renaming a file away for `rotate_bytes`/`rotate_interval`.
    Rotate,
}

impl Op {
    fn label(self) -> &'static str {
        match self {
            Op::Open => "open",
            Op::Write => "write",
            Op::Sync => "sync",
            Op::Format => "format",
            Op::Rotate => "rotate",
        }
    }
}

/// Why an output file was reopened (the `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reopen {
    /// Nothing is at the path any more (removed, or its directory was).
    Missing,
    /// Another file is at the path (the output was renamed away).
    Replaced,
    /// SIGHUP.
    Signal,
}

impl Reopen {
    fn label(self) -> &'static str {
        match self {
            Reopen::Missing => "missing",
            Reopen::Replaced => "replaced",
            Reopen::Signal => "signal",
        }
    }
}

/// The `kind` label of an I/O error.
pub(super) fn error_kind(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => "permission_denied",
        Some(libc::ENOSPC) => "no_space",
        Some(libc::EDQUOT) => "quota_exceeded",
        Some(libc::EROFS) => "read_only",
        Some(libc::ENOENT) => "not_found",
        // EEXIST: creating a directory where a file is
        Some(libc::ENOTDIR | libc::EEXIST) => "not_a_directory",
        Some(libc::EISDIR) => "is_a_directory",
        Some(libc::EMFILE | libc::ENFILE) => "too_many_open_files",
        Some(libc::EFBIG) => "file_too_large",
        Some(libc::EIO) => "io",
        _ => "other",
    }
}

/// The file sink's counters, beside those every sink keeps.
pub(super) struct FileTelemetry {
    name: String,
    registry: Registry,
    pub sink: SinkMetrics,
    escaped_paths: Counter,
    /// Errors are logged once per kind every few seconds (a full disk
    /// fails every retry); every one is counted.
    errors_log: crate::telemetry::RateLimitedLog,
}

impl FileTelemetry {
    pub fn new(name: &str, registry: &Registry, sink: SinkMetrics) -> Self {
        FileTelemetry {
            name: name.to_string(),
            registry: registry.clone(),
            sink,
            escaped_paths: registry.counter(
                "logferry_file_escaped_paths_total",
                "Batches whose tag was escaped in the output path to keep it inside its directory.",
                &[("component", name)],
            ),
            errors_log: Default::default(),
        }
    }

    /// An error: logged, counted by `op` and `kind`, and the `rejected`
    /// records (not acknowledged) counted.
    pub fn error(&self, op: Op, path: &Path, e: &io::Error, rejected: usize) {
        let kind = error_kind(e);
        self.sink.errors.inc();
        self.sink.rejected_records.add(rejected as u64);
        self.registry
            .counter(
                "logferry_file_errors_total",
                "File sink errors by operation and kind.",
                &[
                    ("component", &self.name),
                    ("op", op.label()),
                    ("kind", kind),
                ],
            )
            .inc();
        let what = match op {
            Op::Open => "cannot open output file",
            Op::Write => "write failed",
            Op::Sync => "fsync failed",
            Op::Format => "cannot format batch",
            Op::Rotate => "rotation failed; still writing to the current file",
        };
        let Some(suppressed) = self.errors_log.allow(kind) else {
            return;
        };
        if rejected > 0 {
            tracing::error!(sink = %self.name, path = %path.display(), op = op.label(), kind,
                error = %e, records = rejected, suppressed, "{what}; records not acknowledged");
        } else {
            tracing::error!(sink = %self.name, path = %path.display(), op = op.label(), kind,
                error = %e, suppressed, "{what}");
        }
    }

    /// `files` outputs were reopened (or closed, to be opened again at the
    /// next record) for `reason`.
    pub fn reopened(&self, reason: Reopen, path: &Path, files: usize) {
        self.registry
            .counter(
                "logferry_file_reopened_total",
                "Output files reopened: gone from their path (removed, renamed) or on SIGHUP or SIGUSR1.",
                &[("component", &self.name), ("reason", reason.label())],
            )
            .add(files as u64);
        match reason {
            Reopen::Signal => {
                let signal = super::reopen::signal();
                tracing::info!(sink = %self.name, files, signal, "output files reopened ({signal})")
            }
            _ => tracing::warn!(sink = %self.name, path = %path.display(), reason = reason.label(),
                "output file was removed or renamed away; reopened at its path"),
        }
    }

    /// A batch's tag had to be escaped in its output path.
    pub fn escaped(&self, tag: &str, path: &Path, first: bool) {
        self.escaped_paths.inc();
        if first {
            tracing::warn!(sink = %self.name, tag, path = %path.display(),
                "tag escaped in the output path to keep it inside its directory");
        }
    }
}
