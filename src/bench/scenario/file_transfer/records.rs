//! The numbered records of the file-transfer scenario, and the check that
//! every one of them is in the unified file exactly once.
//!
//! A record is exactly `size` bytes plus its newline: the sender's number
//! (from 1, decimal), `.`, the record's number within the step (from 0,
//! lowercase hex, zero-padded to a fixed width of at most 16 digits) and
//! `x` up to the size: `2.0000001f` is record 31 of sender 2 in a 10-byte
//! step. So a raw line says where it came from whatever the server did to
//! the order, and a 10-byte record still numbers 4 billion records per
//! sender and step.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::OutputFormat;

/// Fewest hex digits of a record number (16 M records per sender and
/// step).
const MIN_DIGITS: usize = 6;

/// How records of one size are numbered for one sender.
#[derive(Debug, Clone)]
pub struct Numbering {
    /// `N.`: the sender's number and the dot.
    prefix: Vec<u8>,
    /// Hex digits of the record number.
    digits: usize,
    /// Bytes per record, newline excluded.
    size: usize,
}

impl Numbering {
    /// Records of `size` bytes from sender `sender` (from 1).
    pub fn new(sender: usize, size: usize) -> Result<Numbering, String> {
        let prefix = format!("{sender}.").into_bytes();
        let need = prefix.len() + MIN_DIGITS;
        if size < need {
            return Err(format!(
                "--record-sizes: a record of {size} B cannot hold the sender's number and a \
                 record number; with {sender} senders, use at least {need} B"
            ));
        }
        Ok(Numbering {
            digits: (size - prefix.len()).min(16),
            prefix,
            size,
        })
    }

    /// How many records the numbers can tell apart.
    pub fn capacity(&self) -> u64 {
        if self.digits >= 16 {
            u64::MAX
        } else {
            1u64 << (4 * self.digits)
        }
    }

    /// Appends record `n` and its newline to `out`.
    pub fn append(&self, out: &mut Vec<u8>, n: u64) {
        let start = out.len();
        out.extend_from_slice(&self.prefix);
        for i in (0..self.digits).rev() {
            out.push(b"0123456789abcdef"[((n >> (4 * i)) & 0xf) as usize]);
        }
        out.resize(start + self.size, b'x');
        out.push(b'\n');
    }
}

/// What a record in the file says: sender (from 1) and number.
fn parse(record: &[u8], size: usize) -> Option<(usize, u64)> {
    if record.len() != size {
        return None;
    }
    let dot = record.iter().position(|&b| b == b'.')?;
    let sender: usize = std::str::from_utf8(&record[..dot]).ok()?.parse().ok()?;
    let rest = &record[dot + 1..];
    let digits = rest.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 || digits > 16 || rest[digits..].iter().any(|&b| b != b'x') {
        return None;
    }
    let n = u64::from_str_radix(std::str::from_utf8(&rest[..digits]).ok()?, 16).ok()?;
    Some((sender, n))
}

/// The record in a line of the unified file: the whole line (raw), or the
/// `"message":"…"` value of a JSON-like line (template).
fn record_of(line: &[u8], format: OutputFormat) -> Option<&[u8]> {
    match format {
        OutputFormat::Raw => Some(line),
        OutputFormat::Template => {
            const KEY: &[u8] = b"\"message\":\"";
            let at = memchr::memmem::find(line, KEY)? + KEY.len();
            let len = memchr::memchr(b'"', &line[at..])?;
            Some(&line[at..at + len])
        }
    }
}

/// Records found per sender in one step.
#[derive(Debug, Default)]
struct Seen {
    /// Bit `n`: record `n` was found.
    bits: Vec<u64>,
    /// Records the writer wrote.
    expected: u64,
    distinct: u64,
    duplicated: u64,
    /// Numbers past what was written.
    unexpected: u64,
}

/// The check of one step: which records of which sender are in the file.
#[derive(Debug)]
pub struct Tally {
    size: usize,
    format: OutputFormat,
    senders: Vec<Seen>,
    /// Lines that are no record of this step (wrong size, garbage, a
    /// sender that does not exist).
    pub malformed: u64,
    /// The first of them, for the remark.
    pub first_malformed: Option<String>,
    /// Lines and bytes (newlines included) read in this step.
    pub lines: u64,
    pub bytes: u64,
}

impl Tally {
    /// A step of records of `size` bytes in which sender `i` wrote
    /// `written[i]` records.
    pub fn new(size: usize, format: OutputFormat, written: &[u64]) -> Tally {
        Tally {
            size,
            format,
            senders: written
                .iter()
                .map(|&w| Seen {
                    bits: vec![0; w.div_ceil(64) as usize],
                    expected: w,
                    ..Seen::default()
                })
                .collect(),
            malformed: 0,
            first_malformed: None,
            lines: 0,
            bytes: 0,
        }
    }

    /// One line of the file, newline excluded.
    pub fn line(&mut self, line: &[u8]) {
        self.lines += 1;
        self.bytes += line.len() as u64 + 1;
        let found = record_of(line, self.format).and_then(|r| parse(r, self.size));
        let Some(seen) =
            found.and_then(|(s, n)| Some((self.senders.get_mut(s.checked_sub(1)?)?, n)))
        else {
            self.malformed += 1;
            if self.first_malformed.is_none() {
                let shown = &line[..line.len().min(120)];
                self.first_malformed = Some(String::from_utf8_lossy(shown).into_owned());
            }
            return;
        };
        let (seen, n) = seen;
        if n >= seen.expected {
            seen.unexpected += 1;
            return;
        }
        let (word, bit) = ((n / 64) as usize, 1u64 << (n % 64));
        if seen.bits[word] & bit != 0 {
            seen.duplicated += 1;
        } else {
            seen.bits[word] |= bit;
            seen.distinct += 1;
        }
    }

    /// Records written that were found (each counted once).
    pub fn found(&self) -> u64 {
        self.senders.iter().map(|s| s.distinct).sum()
    }

    pub fn written(&self) -> u64 {
        self.senders.iter().map(|s| s.expected).sum()
    }

    /// What went wrong, one remark per kind and sender; empty if every
    /// record is there exactly once and nothing else is.
    pub fn remarks(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, s) in self.senders.iter().enumerate() {
            let name = format!("sender-{}", i + 1);
            if s.distinct < s.expected {
                out.push(format!(
                    "{name}: {} of {} record(s) missing",
                    s.expected - s.distinct,
                    s.expected
                ));
            }
            if s.duplicated > 0 {
                out.push(format!("{name}: {} record(s) duplicated", s.duplicated));
            }
            if s.unexpected > 0 {
                out.push(format!(
                    "{name}: {} record(s) numbered past the {} written",
                    s.unexpected, s.expected
                ));
            }
        }
        if let Some(first) = &self.first_malformed {
            out.push(format!(
                "{} line(s) that are no record of this step, the first: {first:?}",
                self.malformed
            ));
        }
        out
    }

    /// Whether something other than missing records went wrong (those
    /// may still arrive).
    pub fn has_extra(&self) -> bool {
        self.malformed > 0 || self.senders.iter().any(|s| s.duplicated + s.unexpected > 0)
    }
}

/// Reads the unified file as it grows, line by line: complete lines only,
/// a partly written last line waits for its newline.
pub struct Follower {
    file: Option<File>,
    /// Where the next read starts (just after the last complete line).
    offset: u64,
    buf: Vec<u8>,
}

impl Follower {
    /// Follows from `offset` on.
    pub fn new(offset: u64) -> Follower {
        Follower {
            file: None,
            offset,
            buf: Vec::new(),
        }
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads every complete line written since the last call into `tally`.
    pub fn read(&mut self, path: Option<&Path>, tally: &mut Tally) -> Result<(), String> {
        if self.file.is_none() {
            let Some(path) = path else { return Ok(()) };
            match File::open(path) {
                Ok(f) => self.file = Some(f),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        // the bytes of a partly written line are held in `buf` already
        file.seek(SeekFrom::Start(self.offset + self.buf.len() as u64))
            .map_err(|e| format!("unified file: {e}"))?;
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            let n = file
                .read(&mut chunk)
                .map_err(|e| format!("unified file: {e}"))?;
            if n == 0 {
                return Ok(());
            }
            self.buf.extend_from_slice(&chunk[..n]);
            let Some(last) = memchr::memrchr(b'\n', &self.buf) else {
                continue;
            };
            for line in self.buf[..last].split(|&b| b == b'\n') {
                tally.line(line);
            }
            self.offset += last as u64 + 1;
            self.buf.drain(..=last);
        }
    }
}

/// Mean bytes per line near the end of the file (newlines included), from
/// its last 64 KiB; `None` until it holds two lines.
pub fn line_length_near_end(path: &Path) -> Option<f64> {
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(64 << 10);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).ok()?;
    let newlines: Vec<usize> = memchr::memchr_iter(b'\n', &tail).collect();
    match newlines.as_slice() {
        [first, .., last] => Some((last - first) as f64 / (newlines.len() - 1) as f64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(sender: usize, size: usize, n: u64) -> Vec<u8> {
        let mut out = Vec::new();
        Numbering::new(sender, size).unwrap().append(&mut out, n);
        out
    }

    #[test]
    fn records_have_the_exact_size_and_say_sender_and_number() {
        assert_eq!(record(2, 10, 31), b"2.0000001f\n");
        let big = record(3, 4096, 0xabc);
        assert_eq!(big.len(), 4097);
        assert!(big.starts_with(b"3.0000000000000abcxxx"));
        for (sender, size, n) in [(1, 10, 0), (12, 1024, 123_456_789), (3, 4096, u64::MAX)] {
            let r = record(sender, size, n);
            assert_eq!(parse(&r[..r.len() - 1], size), Some((sender, n)));
        }
        assert_eq!(Numbering::new(1, 10).unwrap().capacity(), 1 << 32);
        assert_eq!(Numbering::new(1, 4096).unwrap().capacity(), u64::MAX);
        let e = Numbering::new(10, 8).unwrap_err();
        assert!(e.contains("at least 9 B"), "{e}");
        // a truncated, padded-wrong or resized record is no record
        assert_eq!(parse(b"2.0000001", 10), None);
        assert_eq!(parse(b"2.000000yx", 10), None);
        assert_eq!(parse(b"2.0000001f", 11), None);
        assert_eq!(parse(b"x.0000001f", 10), None);
    }

    #[test]
    fn the_record_is_found_in_raw_and_in_json_like_lines() {
        assert_eq!(
            record_of(b"1.00ab", OutputFormat::Raw),
            Some(&b"1.00ab"[..])
        );
        let line =
            br#"{"time":"2026-11-22T00:00:00Z","host":"h","tag":"transfer.a","message":"1.00ab"}"#;
        assert_eq!(
            record_of(line, OutputFormat::Template),
            Some(&b"1.00ab"[..])
        );
        // fluent-bit's plain JSON and vector's json codec: other orders
        let other = br#"{"message":"1.00ab","host":"h"}"#;
        assert_eq!(
            record_of(other, OutputFormat::Template),
            Some(&b"1.00ab"[..])
        );
        assert_eq!(record_of(b"1.00ab", OutputFormat::Template), None);
    }

    fn tally_of(written: &[u64], lines: &[Vec<u8>]) -> Tally {
        let mut t = Tally::new(10, OutputFormat::Raw, written);
        for l in lines {
            t.line(&l[..l.len() - 1]);
        }
        t
    }

    #[test]
    fn every_record_once_is_clean_and_each_fault_is_named() {
        let all: Vec<Vec<u8>> = (0..3)
            .map(|n| record(1, 10, n))
            .chain((0..2).map(|n| record(2, 10, n)))
            .collect();
        let t = tally_of(&[3, 2], &all);
        assert!(t.remarks().is_empty(), "{:?}", t.remarks());
        assert_eq!((t.found(), t.written(), t.lines, t.bytes), (5, 5, 5, 55));
        assert!(!t.has_extra());

        // one lost, one twice: the counts match, the check does not
        let mut swapped = all.clone();
        swapped[1] = record(1, 10, 0);
        let t = tally_of(&[3, 2], &swapped);
        assert_eq!(t.found(), 4);
        assert_eq!(
            t.remarks(),
            [
                "sender-1: 1 of 3 record(s) missing",
                "sender-1: 1 record(s) duplicated"
            ]
        );
        assert!(t.has_extra());

        // a record of another sender, past the end, a foreign line
        let mut odd = all.clone();
        odd.push(record(3, 10, 0));
        odd.push(record(2, 10, 2));
        odd.push(b"garbage\n".to_vec());
        let t = tally_of(&[3, 2], &odd);
        assert_eq!(t.found(), 5);
        assert_eq!(
            t.remarks(),
            [
                "sender-2: 1 record(s) numbered past the 2 written",
                "2 line(s) that are no record of this step, the first: \"3.00000000\""
            ]
        );
    }

    #[test]
    fn the_follower_reads_complete_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("unified.log");
        let mut t = Tally::new(10, OutputFormat::Raw, &[3]);
        let mut f = Follower::new(0);
        // not there yet
        f.read(Some(&path), &mut t).unwrap();
        let mut bytes = record(1, 10, 0);
        bytes.extend_from_slice(&record(1, 10, 1)[..4]);
        std::fs::write(&path, &bytes).unwrap();
        f.read(Some(&path), &mut t).unwrap();
        assert_eq!((t.lines, f.offset()), (1, 11));
        bytes.extend_from_slice(&record(1, 10, 1)[4..]);
        bytes.extend_from_slice(&record(1, 10, 2));
        std::fs::write(&path, &bytes).unwrap();
        f.read(Some(&path), &mut t).unwrap();
        assert_eq!((t.lines, t.found(), f.offset()), (3, 3, 33));
        assert!(t.remarks().is_empty(), "{:?}", t.remarks());
        assert_eq!(line_length_near_end(&path), Some(11.0));
    }
}
