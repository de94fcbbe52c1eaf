//! `logferry buffer inspect|check DIR`: read-only views of a disk buffer.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use bytes::Bytes;

use super::cursor;
use super::format::{self, SEGMENT_HEADER};
use super::segment::{self, Damage};
use crate::event::EventTime;

/// Damage found by [`check`], named by segment file and offset.
#[derive(Debug)]
pub struct Found {
    pub segment: String,
    pub damage: Damage,
}

/// Verifies every frame of every segment in `dir` (delivered or not) and
/// the cursor file. Read-only.
pub fn check(dir: &Path) -> io::Result<Vec<Found>> {
    let mut out = Vec::new();
    if dir.join("ack").exists() && cursor::load(dir).is_none() {
        out.push(Found {
            segment: "ack".into(),
            damage: Damage {
                range: 0..cursor::LEN,
                reason: "delivered cursor is damaged",
            },
        });
    }
    for id in segment::list(dir)? {
        let buf = segment::read(&dir.join(segment::file_name(id)))?;
        for damage in segment::scan(&buf, 0).damage {
            out.push(Found {
                segment: segment::file_name(id),
                damage,
            });
        }
    }
    Ok(out)
}

/// A summary of what `dir` holds, for people.
pub fn inspect(dir: &Path) -> io::Result<String> {
    let mut s = String::new();
    let cursor = cursor::load(dir);
    let _ = writeln!(s, "disk buffer {}", dir.display());
    match cursor {
        Some((seg, off)) => {
            let _ = writeln!(
                s,
                "delivered cursor: segment {} offset {off}",
                segment::file_name(seg)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "delivered cursor: none (everything on disk is undelivered)"
            );
        }
    }
    let (mut frames, mut records, mut bytes, mut damaged) = (0usize, 0u64, 0u64, 0usize);
    let mut oldest: Option<(String, EventTime)> = None;
    for id in segment::list(dir)? {
        let buf = segment::read(&dir.join(segment::file_name(id)))?;
        let from = match cursor {
            Some((c, _)) if id < c => buf.len(),
            Some((c, off)) if id == c => (off as usize).max(SEGMENT_HEADER),
            _ => SEGMENT_HEADER,
        };
        let scan = segment::scan(&buf, 0);
        let undelivered: Vec<_> = scan.frames.iter().filter(|f| f.offset >= from).collect();
        let recs: u64 = undelivered.iter().map(|f| u64::from(f.count)).sum();
        let _ = writeln!(
            s,
            "segment {}: {} bytes, {} frames ({} undelivered, {recs} records), {} damaged",
            segment::file_name(id),
            buf.len(),
            scan.frames.len(),
            undelivered.len(),
            scan.damage.len()
        );
        frames += undelivered.len();
        records += recs;
        bytes += undelivered.iter().map(|f| f.len as u64).sum::<u64>();
        damaged += scan.damage.len();
        if oldest.is_none() {
            if let Some(f) = undelivered.first() {
                oldest =
                    first_record_time(&buf.slice(f.offset..)).map(|t| (segment::file_name(id), t));
            }
        }
    }
    let _ = writeln!(
        s,
        "undelivered: {frames} frames, {records} records, {bytes} bytes; damaged stretches: {damaged}"
    );
    match oldest {
        Some((seg, t)) => {
            let _ = writeln!(
                s,
                "oldest undelivered record time: {} (in {seg})",
                rfc3339(t)
            );
        }
        None => {
            let _ = writeln!(s, "oldest undelivered record time: none");
        }
    }
    Ok(s)
}

fn first_record_time(frame: &Bytes) -> Option<EventTime> {
    let (f, _) = format::decode(frame).ok()?;
    let mut first = None;
    let _ = f.into_batch().for_each_record(|t, _| {
        first.get_or_insert(t);
    });
    first
}

fn rfc3339(t: EventTime) -> String {
    chrono::DateTime::from_timestamp(i64::from(t.secs), t.nanos)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true))
        .unwrap_or_else(|| t.secs.to_string())
}
