//! Segment files: naming, scanning for frames and damage, quarantine.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::format::{self, FrameError, SEGMENT_HEADER};
use crate::event::EventTime;

/// The file name of segment `id`.
pub fn file_name(id: u64) -> String {
    format!("{id:020}.seg")
}

/// The id of a segment file name, if it is one.
pub fn parse_name(name: &str) -> Option<u64> {
    let id = name.strip_suffix(".seg")?;
    (id.len() == 20 && id.bytes().all(|b| b.is_ascii_digit()))
        .then(|| id.parse().ok())
        .flatten()
}

/// The ids of the segment files in `dir`, oldest first.
pub fn list(dir: &Path) -> io::Result<Vec<u64>> {
    let mut ids = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        if let Some(id) = e.file_name().to_str().and_then(parse_name) {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// One good frame found in a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameAt {
    pub offset: usize,
    pub len: usize,
    pub count: u32,
    pub written: EventTime,
}

/// Damaged bytes found in a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub range: Range<usize>,
    pub reason: &'static str,
}

/// What a segment holds from some offset on.
#[derive(Debug, Default)]
pub struct Scan {
    pub frames: Vec<FrameAt>,
    pub damage: Vec<Damage>,
}

/// Walks the frames of segment bytes `buf` from `from` (at least past the
/// header). Damage (a bad header, a bad CRC, an impossible length, a torn
/// tail) is recorded and skipped: the scan resyncs at the next offset where
/// a whole, valid frame starts. Never panics, whatever the bytes.
pub fn scan(buf: &Bytes, from: usize) -> Scan {
    let mut out = Scan::default();
    if let Err(e) = format::check_segment_header(buf) {
        let end = SEGMENT_HEADER.min(buf.len());
        out.damage.push(Damage {
            range: 0..end,
            reason: reason(&e, "segment header is cut short"),
        });
    }
    let mut pos = from.max(SEGMENT_HEADER);
    while pos < buf.len() {
        match format::decode(&buf.slice(pos..)) {
            Ok((frame, len)) => {
                out.frames.push(FrameAt {
                    offset: pos,
                    len,
                    count: frame.count,
                    written: frame.written,
                });
                pos += len;
            }
            Err(e) => {
                let next = resync(buf, pos + 1);
                out.damage.push(Damage {
                    range: pos..next,
                    reason: reason(&e, "torn frame (cut short)"),
                });
                pos = next;
            }
        }
    }
    out
}

fn reason(e: &FrameError, incomplete: &'static str) -> &'static str {
    match e {
        FrameError::Incomplete { .. } => incomplete,
        FrameError::Damaged(r) => r,
    }
}

/// The next offset at or after `from` where a valid frame starts, or the
/// end of `buf`.
fn resync(buf: &Bytes, mut from: usize) -> usize {
    while let Some(at) = format::next_magic(buf, from) {
        if format::decode(&buf.slice(at..)).is_ok() {
            return at;
        }
        from = at + 1;
    }
    buf.len()
}

/// Reads a whole segment file.
pub fn read(path: &Path) -> io::Result<Bytes> {
    fs::read(path).map(Bytes::from)
}

/// Syncs directory `dir`, so that files created, renamed or removed in it
/// stay so after a power loss (syncing a file does not sync its name).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Rewrites segment `id` in `dir` to hold only `frames` of `buf`, through a
/// temporary file and a rename, so a crash leaves the old or the new one.
pub fn rewrite(dir: &Path, id: u64, buf: &Bytes, frames: &[FrameAt]) -> io::Result<u64> {
    let tmp = dir.join(format!("{}.tmp", file_name(id)));
    let mut f = File::create(&tmp)?;
    let mut len = SEGMENT_HEADER as u64;
    f.write_all(&format::segment_header(id))?;
    for fr in frames {
        f.write_all(&buf[fr.offset..fr.offset + fr.len])?;
        len += fr.len as u64;
    }
    f.sync_all()?;
    fs::rename(&tmp, dir.join(file_name(id)))?;
    Ok(len)
}

/// Appends damaged bytes of segment `id` to `dir/quarantine/<segment>.damaged`
/// and returns that path.
pub fn quarantine(dir: &Path, id: u64, bytes: &[u8]) -> io::Result<PathBuf> {
    let qdir = dir.join("quarantine");
    fs::create_dir_all(&qdir)?;
    let path = qdir.join(format!("{}.damaged", file_name(id)));
    let mut f = OpenOptions::new().create(true).append(true).open(&path)?;
    f.write_all(bytes)?;
    f.sync_data()?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Batch, Records};

    fn frame(n: usize) -> Vec<u8> {
        let b = Batch::new(
            "t".into(),
            Records::Lines {
                data: Bytes::from(format!("{n}\n")),
                time: EventTime::default(),
            },
            1,
        );
        format::encode(&b, EventTime::new(n as u32, 0)).unwrap()
    }

    fn segment(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut s = format::segment_header(1).to_vec();
        for f in frames {
            s.extend_from_slice(f);
        }
        s
    }

    #[test]
    fn names_roundtrip() {
        assert_eq!(file_name(1), "00000000000000000001.seg");
        assert_eq!(parse_name(&file_name(42)), Some(42));
        assert_eq!(parse_name("1.seg"), None);
        assert_eq!(parse_name("00000000000000000001.seg.tmp"), None);
    }

    #[test]
    fn a_corrupt_frame_in_the_middle_is_skipped() {
        let frames: Vec<_> = (0..3).map(frame).collect();
        let mut s = segment(&frames);
        let second = SEGMENT_HEADER + frames[0].len();
        s[second + format::FRAME_HEADER + 3] ^= 0xff;
        let scan = scan(&Bytes::from(s), 0);
        let at: Vec<_> = scan.frames.iter().map(|f| f.written.secs).collect();
        assert_eq!(at, [0, 2]);
        assert_eq!(scan.damage.len(), 1);
        assert_eq!(scan.damage[0].range, second..second + frames[1].len());
        assert_eq!(scan.damage[0].reason, "CRC32C mismatch");
    }

    #[test]
    fn a_torn_tail_is_damage_to_the_end() {
        let frames: Vec<_> = (0..2).map(frame).collect();
        let mut s = segment(&frames);
        let full = s.len();
        s.truncate(full - 3);
        let scan = scan(&Bytes::from(s), 0);
        assert_eq!(scan.frames.len(), 1);
        let torn = SEGMENT_HEADER + frames[0].len();
        assert_eq!(scan.damage[0].range, torn..full - 3);
    }

    /// What fuzz/fuzz_targets/disk_segment.rs checks, over a few thousand
    /// deterministic mutations of a valid segment (cargo-fuzz finds more).
    fn check_partition(buf: &Bytes) {
        let scan = scan(buf, 0);
        let mut spans: Vec<(usize, usize)> = scan
            .frames
            .iter()
            .map(|f| (f.offset, f.offset + f.len))
            .chain(
                scan.damage
                    .iter()
                    .filter(|d| d.range.start >= SEGMENT_HEADER)
                    .map(|d| (d.range.start, d.range.end)),
            )
            .collect();
        spans.sort_unstable();
        let mut at = SEGMENT_HEADER;
        for &(start, end) in &spans {
            assert_eq!(start, at, "gap or overlap: {spans:?}");
            assert!(end > start && end <= buf.len());
            at = end;
        }
        if buf.len() > SEGMENT_HEADER {
            assert_eq!(at, buf.len());
        }
        if let Some(mid) = scan.frames.get(scan.frames.len() / 2) {
            let from = super::scan(buf, mid.offset);
            assert_eq!(from.frames[..], scan.frames[scan.frames.len() / 2..]);
        }
    }

    #[test]
    fn mutated_segments_split_into_frames_and_damage() {
        let seed = segment(&(0..6).map(frame).collect::<Vec<_>>());
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..3000 {
            let mut s = seed.clone();
            for _ in 0..(next() % 4 + 1) {
                let at = (next() as usize) % s.len();
                match next() % 3 {
                    0 => s[at] ^= 1 << (next() % 8),
                    1 => s.truncate(at.max(1)),
                    _ => s.insert(at, next() as u8),
                }
            }
            check_partition(&Bytes::from(s));
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut s = segment(&[frame(1)]);
        for cut in 0..s.len() {
            let _ = scan(&Bytes::copy_from_slice(&s[..cut]), 0);
        }
        s.extend_from_slice(format::FRAME_MAGIC);
        s.extend_from_slice(&[0xff; 9]);
        assert_eq!(scan(&Bytes::from(s), 0).frames.len(), 1);
    }
}
