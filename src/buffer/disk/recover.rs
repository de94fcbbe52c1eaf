//! Start-up: find what a disk buffer holds, cut out damage.

use std::fs;
use std::io;
use std::path::Path;

use super::cursor::{self, Pos};
use super::format::SEGMENT_HEADER;
use super::segment;
use super::DiskMetrics;
use crate::{error_counted, warn_counted};

/// A segment with undelivered frames.
pub struct FoundSegment {
    pub id: u64,
    pub len: u64,
    pub undelivered_bytes: u64,
    pub undelivered_records: usize,
}

/// What a buffer directory holds.
pub struct Found {
    /// Oldest first.
    pub segments: Vec<FoundSegment>,
    /// The first undelivered frame.
    pub read: Pos,
    /// The id for the next new segment.
    pub next_id: u64,
}

/// Scans every segment of `dir` from the delivered cursor on. Delivered
/// segments are deleted; damage is appended to the quarantine directory,
/// counted and logged, and its segment rewritten with the good frames.
/// Every problem logged is also counted in `logferry_buffer_disk_errors_total`.
pub(super) fn recover(sink: &str, dir: &Path, m: &DiskMetrics) -> io::Result<Found> {
    let errors = &m.errors;
    for e in fs::read_dir(dir)?.flatten() {
        if e.file_name().to_string_lossy().ends_with(".seg.tmp") {
            let _ = fs::remove_file(e.path());
        }
    }
    let cursor = cursor::load(dir);
    if cursor.is_none() && dir.join("ack").exists() {
        warn_counted!(errors, "damaged_cursor", sink, dir = %dir.display(),
            "the disk buffer's delivered cursor (ack file) is damaged; replaying every segment (some records may arrive twice)");
    }
    let ids = segment::list(dir)?;
    let next_id = ids
        .last()
        .map_or(1, |l| l + 1)
        .max(cursor.map_or(1, |c| c.0));
    let mut segments = Vec::new();
    for id in ids {
        let path = dir.join(segment::file_name(id));
        if cursor.is_some_and(|c| id < c.0) {
            let _ = fs::remove_file(&path);
            continue;
        }
        let buf = match segment::read(&path) {
            Ok(b) => b,
            Err(e) => {
                error_counted!(errors, "unreadable_segment", sink, segment = %path.display(), error = %e,
                    "cannot read a disk buffer segment; skipping it (it stays on disk)");
                continue;
            }
        };
        let from = match cursor {
            Some((c, off)) if c == id => (off as usize).max(SEGMENT_HEADER),
            _ => SEGMENT_HEADER,
        };
        let scan = segment::scan(&buf, from);
        let mut len = buf.len() as u64;
        let mut frames = scan.frames.clone();
        if !scan.damage.is_empty() {
            let mut bytes = 0;
            let mut qpath = None;
            for d in &scan.damage {
                bytes += d.range.len() as u64;
                match segment::quarantine(dir, id, &buf[d.range.clone()]) {
                    Ok(p) => qpath = Some(p),
                    Err(e) => {
                        error_counted!(errors, "quarantine_write", sink, error = %e,
                            "cannot write to the disk buffer quarantine directory")
                    }
                }
            }
            m.quarantined_bytes.add(bytes);
            m.quarantined_frames.add(scan.damage.len() as u64);
            let first = &scan.damage[0];
            error_counted!(errors, "damaged_frames", sink, segment = %path.display(), offset = first.range.start,
                reason = first.reason, damaged = scan.damage.len(), bytes,
                quarantine = %qpath.map(|p| p.display().to_string()).unwrap_or_default(),
                "damaged disk buffer bytes skipped; the other frames are delivered");
            if cursor.is_some_and(|c| c.0 == id) {
                // the rewrite drops the delivered frames, so offsets move:
                // point the cursor at the segment's start first (a crash in
                // between replays delivered frames, never skips any)
                let reset = cursor::open(dir).and_then(|f| {
                    cursor::store(&f, (id, SEGMENT_HEADER as u64)).and(f.sync_data())
                });
                if let Err(e) = reset {
                    error_counted!(errors, "cursor_rewrite", sink, error = %e,
                        "cannot rewrite the disk buffer's delivered cursor");
                }
            }
            match segment::rewrite(dir, id, &buf, &scan.frames) {
                Ok(l) => {
                    len = l;
                    let mut at = SEGMENT_HEADER;
                    for f in &mut frames {
                        f.offset = at;
                        at += f.len;
                    }
                }
                Err(e) => {
                    error_counted!(errors, "segment_rewrite", sink, segment = %path.display(), error = %e,
                    "cannot rewrite a damaged disk buffer segment; its damage is skipped again on reading")
                }
            }
        }
        if frames.is_empty() {
            let _ = fs::remove_file(&path);
            continue;
        }
        segments.push((
            FoundSegment {
                id,
                len,
                undelivered_bytes: frames.iter().map(|f| f.len as u64).sum(),
                undelivered_records: frames.iter().map(|f| f.count as usize).sum(),
            },
            frames[0].offset as u64,
        ));
    }
    let read = segments
        .first()
        .map_or((next_id, SEGMENT_HEADER as u64), |(s, off)| (s.id, *off));
    Ok(Found {
        segments: segments.into_iter().map(|(s, _)| s).collect(),
        read,
        next_id,
    })
}
