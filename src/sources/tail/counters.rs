//! The tail source's counters: per source always, per file on request
//! (`per_file_metrics`), so thousands of files do not make thousands of
//! series unless asked for.

use std::path::Path;

use crate::metrics::{Counter, Gauge, Registry};

pub struct TailMetrics {
    pub records: Counter,
    pub bytes: Counter,
    pub truncations: Counter,
    pub rotations: Counter,
    pub long_lines: Counter,
    pub skipped_bytes: Counter,
    pub rejected: Counter,
    pub missed_bytes: Counter,
    pub copied_bytes: Counter,
    pub overflows: Counter,
    pub open_errors: Counter,
    pub read_errors: Counter,
    pub checkpoint_errors: Counter,
    pub checkpoint_malformed_lines: Counter,
    pub lost_files: Counter,
    pub lost_bytes: Counter,
    pub found_renamed: Counter,
    /// Bytes written to the followed files and not read yet.
    pub lag_bytes: Gauge,
}

impl TailMetrics {
    pub fn new(r: &Registry, source: &str) -> Self {
        let l = &[("component", source)];
        let c = |name: &'static str, help: &'static str| r.counter(name, help, l);
        TailMetrics {
            records: c("logferry_source_records_total", "Records received by a source."),
            bytes: c("logferry_source_bytes_total", "Bytes of records received by a source."),
            truncations: c(
                "logferry_tail_truncations_total",
                "Followed files that became shorter (copytruncate); reading restarted at 0.",
            ),
            rotations: c(
                "logferry_tail_rotations_total",
                "Followed files renamed or removed away from their path.",
            ),
            long_lines: c(
                "logferry_tail_long_lines_total",
                "Lines longer than max_line_bytes (split or skipped).",
            ),
            skipped_bytes: c(
                "logferry_tail_skipped_bytes_total",
                "Bytes of over-long lines skipped.",
            ),
            missed_bytes: c(
                "logferry_tail_missed_bytes_total",
                "Bytes known to have been lost to truncations (seen but not yet read; a lower bound).",
            ),
            copied_bytes: c(
                "logferry_tail_copy_read_bytes_total",
                "Bytes of truncated files read from the copy of their old content (copytruncate): written after the last read, before the truncation.",
            ),
            rejected: c(
                "logferry_tail_rejected_batches_total",
                "Batches a sink did not keep; read again from the last acknowledged offset.",
            ),
            overflows: c(
                "logferry_tail_event_overflows_total",
                "Times the kernel's change-event queue overflowed; every glob was expanded again.",
            ),
            open_errors: c(
                "logferry_tail_open_errors_total",
                "Files that could not be opened (permissions, no descriptor left, ...).",
            ),
            read_errors: c(
                "logferry_tail_read_errors_total",
                "Reads of a followed file that failed (I/O error); tried again at the next event or poll.",
            ),
            checkpoint_errors: c(
                "logferry_tail_checkpoint_errors_total",
                "Checkpoint writes that failed (tried again at the next interval).",
            ),
            checkpoint_malformed_lines: c(
                "logferry_tail_checkpoint_malformed_lines_total",
                "Checkpoint lines ignored at start-up (damaged: not UTF-8, bad fields); their files are read from 0.",
            ),
            lost_files: c(
                "logferry_tail_lost_files_total",
                "Followed files that were removed before they were read to their end.",
            ),
            lost_bytes: c(
                "logferry_tail_lost_bytes_total",
                "Bytes such files held unread at the last look (a lower bound).",
            ),
            found_renamed: c(
                "logferry_tail_renamed_files_found_total",
                "Files found under a new name at start-up (rotated while logferry was down) and read to their end.",
            ),
            lag_bytes: r.gauge(
                "logferry_tail_lag_bytes",
                "Bytes written to the followed files and not read yet (updated when the reader looks at files that changed).",
                l,
            ),
        }
    }
}

/// Counters of one followed path, labelled with it.
pub struct FileCounters {
    pub bytes_read: Counter,
    pub lines: Counter,
    pub bytes_skipped: Counter,
    pub truncations: Counter,
    pub rotations: Counter,
    /// Bytes written to this path and not read yet.
    pub lag_bytes: Gauge,
}

impl FileCounters {
    pub fn new(r: &Registry, source: &str, path: &Path) -> Self {
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
            lag_bytes: r.gauge(
                "logferry_tail_file_lag_bytes",
                "Bytes written to each followed path and not read yet.",
                l,
            ),
        }
    }
}
